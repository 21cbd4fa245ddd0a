"""Run one call in a forked child process: a time limit, and a crash that stays in the child.

``os.fork`` is used directly (not multiprocessing), so this also works inside daemonic worker
processes such as dask's. The child shares the parent's data copy-on-write and sends back its
result pickled through a pipe; a child that dies (a segfault, ``os._exit``, ``sys.exit``, a
kill) or exceeds the limit is reported as an OodfsError, and the parent goes on. Whatever the
child does to its memory (a plugin that edits its input arrays) never reaches the parent.
Between the two sits a supervisor process that only waits, so that the processes a fit starts
end with it, and with the run however the run ends (:func:`call_isolated`).

A forked child must not inherit a busy OpenMP thread pool (GNU libgomp cannot continue one
after ``fork``): the processes that fork here run their own numerical work single-threaded
(``torch.set_num_threads(1)`` in :func:`oodfs.run.jobs.run_job`) and leave multi-threaded fits to
the children.
"""

from __future__ import annotations

import ctypes
import faulthandler
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
import warnings

from oodfs.validation import OodfsError, error_message

# Python 3.12+ warns on every fork of a process that has threads (a dask worker, torch's pool).
# The risk it names (a lock another thread held at the fork) is the one every fork-based pool
# takes; here a child that hangs on one is ended by --task-timeout, so one warning per fit is noise
warnings.filterwarnings(
    "ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning
)

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
try:  # looked up once here: a forked child of a threaded process should not load libraries
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _prctl = None


def die_with_parent(parent: int | None = None) -> None:
    """End this process when its parent process ends (a killed ``oodfs bench`` leaves no
    worker computing on). Linux: the kernel's parent-death signal; elsewhere a thread that
    watches the parent's id. ``parent``: the parent's id as the parent recorded it before
    starting this process; if the parent is gone already (killed while this process was still
    starting), this process ends at once."""
    parent = os.getppid() if parent is None else parent
    if _prctl is None or _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:

        def watch():
            while os.getppid() == parent:
                time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch, name="oodfs-die-with-parent", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was armed
        os.kill(os.getpid(), signal.SIGKILL)


_HEADER = struct.Struct("<Q")  # the result's length: a complete result needs no end of the pipe
_STATUS = struct.Struct("<i")  # the fit's wait status, sent by its supervisor
#: what the supervisor waits for: its fit's end, or its parent's (the parent-death signal) or a request
_ENDS = (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def call_isolated(fn, timeout: float | None = None):
    """``fn()`` in a forked child; its return value, or OodfsError on error, crash or timeout.

    The fit runs under a supervisor, a second forked process that leads a process group of its
    own and waits: whatever the fit starts (a plugin's ``Popen``, its joblib workers, a forked
    helper) is in that group, and the supervisor kills the group when the fit ends or when its
    own parent dies (a run killed with SIGKILL), however the fit is busy at that moment. The
    result is read by its length, not to the end of the pipe, so a process left holding the pipe
    never keeps the run waiting, and a fit whose result arrived is never recorded as timed out."""
    read_fd, write_fd = os.pipe()
    status_read, status_write = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # else the child would print the parent's buffer again
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the supervisor: never returns
        os.close(read_fd)
        os.close(status_read)
        _supervise(parent, fn, write_fd, status_write)
    os.close(write_fd)
    os.close(status_write)
    try:
        os.setpgid(pid, pid)  # here too: the group exists before either process goes on
    except OSError:  # the child has set it already, or has ended
        pass
    data, status = None, None
    try:
        data, status = _receive(read_fd, status_read, timeout)
    finally:
        os.close(read_fd)
        os.close(status_read)
        _end_group(pid)
        _, supervisor = os.waitpid(pid, 0)
        status = supervisor if status is None else status  # the supervisor died without telling
    if data is None:
        if status == "timeout":
            raise OodfsError(f"timed out after {timeout:g} s (--task-timeout)")
        raise OodfsError(f"the method's process died ({_describe(status)})")
    try:
        kind, result = pickle.loads(data)
    except Exception:  # noqa: BLE001 -- a child killed while sending
        raise OodfsError(
            f"the method's process died while sending its result ({_describe(status)})"
        ) from None
    if kind == "error":
        raise OodfsError(result)
    return result


def _supervise(parent: int, fn, write_fd: int, status_fd: int):
    """The supervisor (the forked child of :func:`call_isolated`): lead a process group, fork the
    fit into it, wait, send the fit's wait status, and kill the group. It only waits, so it acts
    at once, even while the fit is busy in compiled code that would delay a signal handler."""
    me = os.getpid()
    try:
        os.setpgid(0, 0)
        # blocked, and taken by sigtimedwait below; the fit unblocks them
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _ENDS)
        armed = _prctl is not None and _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0
        if os.getppid() == parent:  # else the parent died before the signal was armed
            fit = os.fork()
            if fit == 0:
                _fit(fn, write_fd, mask, me)
            os.close(write_fd)
            status = _wait_for(fit, parent, armed)
            if status is not None:
                os.write(status_fd, _STATUS.pack(status))
    finally:  # the fit and everything it started that stayed in the group (this process too)
        try:
            os.killpg(me, signal.SIGKILL)
        finally:
            os._exit(1)


def _wait_for(fit: int, parent: int, armed: bool) -> int | None:
    """The fit's wait status once it ends; None as soon as the parent dies (the parent-death
    signal; without one, the parent's id is looked at twice a second) or asks the group to end."""
    while True:
        if armed and hasattr(signal, "sigtimedwait"):
            info = signal.sigtimedwait(_ENDS, 0.5)
        else:
            info = None
            time.sleep(0.05)
        if info is not None and info.si_signo != signal.SIGCHLD:
            return None
        done, status = os.waitpid(fit, os.WNOHANG)
        if done:
            return status
        if os.getppid() != parent:
            return None


def _fit(fn, write_fd: int, mask, supervisor: int) -> None:
    """The fit (the supervisor's forked child): ``fn()``, its result pickled into ``write_fd``."""
    code = 0
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        die_with_parent(supervisor)
        faulthandler.disable()  # a crash is reported by its signal, not a dump of the worker's modules
        try:
            payload = pickle.dumps(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 -- everything goes back to the parent
            payload = pickle.dumps(("error", error_message(exc)))
        for stream in (sys.stdout, sys.stderr):  # the method's own output, before the parent stops us
            stream.flush()
        with os.fdopen(write_fd, "wb") as out:
            out.write(_HEADER.pack(len(payload)) + payload)
    except BaseException:  # noqa: BLE001
        code = 1
    os._exit(code)


def _receive(fd: int, status_fd: int, timeout: float | None) -> tuple[bytes | None, int | str | None]:
    """The fit's complete message (or None) and its wait status: None while it still runs (or
    when its supervisor died without sending it), "timeout" when the limit passed before a
    complete message."""
    buf, status = bytearray(), None
    watched = [fd, status_fd]
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if len(buf) >= _HEADER.size:
            end = _HEADER.size + _HEADER.unpack_from(buf)[0]
            if len(buf) >= end:
                return bytes(buf[_HEADER.size : end]), status
        if status_fd not in watched:  # the fit has ended and all it sent is read: incomplete
            return None, status
        left = None if deadline is None else deadline - time.monotonic()
        wait = None if left is None else max(0.0, left)
        ready = select.select(watched, [], [], wait)[0]
        if fd in ready:
            chunk = os.read(fd, 1 << 20)
            if chunk:
                buf += chunk
                continue
            watched.remove(fd)  # every writer closed it: the fit's end is near
        elif status_fd in ready:  # the fit has ended: what it wrote is in the pipe already
            sent = os.read(status_fd, _STATUS.size)
            status = _STATUS.unpack(sent)[0] if len(sent) == _STATUS.size else None
            watched.remove(status_fd)
            if fd in watched:
                watched = [fd]
                while select.select(watched, [], [], 0)[0] and (chunk := os.read(fd, 1 << 20)):
                    buf += chunk
                watched = []
        elif left is not None and left <= 0:
            return None, "timeout"


def _end_group(pid: int) -> None:
    """Kill the fit's process group (its supervisor, the fit, and everything it started that
    stayed in the group); called before the supervisor is waited for, so its id is not reused."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "signal"
        return f"killed by {name} ({number})"
    return f"exit code {os.WEXITSTATUS(status)}"
