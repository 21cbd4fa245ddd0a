"""Run one call in a forked child process: a time limit, and a crash that stays in the child.

``os.fork`` is used directly (not multiprocessing), so this also works inside daemonic worker
processes such as dask's. The child shares the parent's data copy-on-write and sends back its
result pickled through a pipe; a child that dies (a segfault, ``os._exit``, ``sys.exit``, a
kill) or exceeds the limit is reported as an OodfsError, and the parent goes on. Whatever the
child does to its memory (a plugin that edits its input arrays) never reaches the parent.
Each fit leads a process group, and a reaper process per worker kills the groups of the fits
still running when the worker ends, however it ends (:class:`_Reaper`).

A forked child must not inherit a busy OpenMP thread pool (GNU libgomp cannot continue one
after ``fork``): the processes that fork here run their own numerical work single-threaded
(``torch.set_num_threads(1)`` in :func:`oodfs.run.jobs.run_job`) and leave multi-threaded fits to
the children.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import re
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import warnings

from oodfs.contract import progress
from oodfs.run.executors.lifeline import _prctl, die_with_parent
from oodfs.validation import OodfsError, error_message

# Python 3.12+ warns on every fork of a process that has threads (a dask worker, torch's pool).
# The risk it names (a lock another thread held at the fork) is the one every fork-based pool
# takes; here a child that hangs on one is ended by --task-timeout, so one warning per fit is noise
warnings.filterwarnings(
    "ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning
)

# each frame on the pipe: its length and kind, then the pickled payload; a complete result needs no
# end of the pipe. Progress messages (oodfs.contract.progress.send) may come before the result.
_HEADER = struct.Struct("<QB")
_RESULT, _MESSAGE = 0, 1


#: the reaper's program (standard library only: it starts in a few ms and holds none of the worker's
#: memory or files). It reads process groups from stdin, positive when a fit starts and negative
#: when it has ended, and at the end of stdin (every writer, the worker, is gone) kills the groups
#: left. It ignores the signals a run's process group may get (Ctrl-C): it ends after the worker.
_REAPER = """
import os, signal, struct
os.setpgid(0, 0)
for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(number, signal.SIG_IGN)
groups, buf = set(), b""
while chunk := os.read(0, 4096):
    buf += chunk
    while len(buf) >= 8:
        (group,), buf = struct.unpack_from("<q", buf), buf[8:]
        groups.add(group) if group > 0 else groups.discard(-group)
for group in groups:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
"""


class _Reaper:
    """A process per worker that kills the process groups of its running fits when the worker
    ends, however it ends (a run killed with SIGKILL): what a fit started (a plugin's ``Popen``,
    its joblib pool, a fork) would otherwise outlive the run. Each fit writes its group to the
    reaper's pipe before it runs anything, so the reaper learns it even when the worker is gone
    by then; the worker takes it back once the fit has ended and its group is killed. The reaper
    acts on the end of the pipe: nothing in the fit has to react, however busy it is in compiled
    code, and nothing depends on which thread of the worker started it. One small process per
    worker, not one per fit (a supervisor forked per fit cost 10-15 ms a fit, twice the fork:
    benchmarks/fit_isolation/FIT_CLEANUP.md)."""

    _MESSAGE = struct.Struct("<q")
    _lock = threading.Lock()
    _owner: int | None = None  # the process that started the reaper (a forked fit has none)
    _process: subprocess.Popen | None = None
    _fd: int | None = None  # the pipe's write end

    @classmethod
    def fd(cls) -> int | None:
        """The pipe to this process's reaper, started at the first fit (again if it has died);
        None if it cannot be started (the fits run, without it)."""
        with cls._lock:
            if cls._owner != os.getpid() or cls._process.poll() is not None:
                if cls._owner == os.getpid():
                    os.close(cls._fd)
                cls._owner = cls._process = cls._fd = None
                read_fd, write_fd = os.pipe()  # not inherited by a program a fit executes
                group = {"process_group": 0} if sys.version_info >= (3, 11) else {}
                try:
                    cls._process = subprocess.Popen(
                        [sys.executable, "-I", "-S", "-c", _REAPER],
                        stdin=read_fd,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        **group,
                    )
                except OSError:
                    os.close(write_fd)
                    return None
                finally:
                    os.close(read_fd)
                cls._owner, cls._fd = os.getpid(), write_fd
            return cls._fd

    @classmethod
    def forget(cls) -> None:
        """In a fit: close the pipe, so that only the worker holds it open."""
        if cls._owner is not None:
            os.close(cls._fd)
        cls._owner = cls._process = cls._fd = None

    @classmethod
    def tell(cls, fd: int | None, group: int) -> None:
        if fd is not None:
            try:
                os.write(fd, cls._MESSAGE.pack(group))  # one write below PIPE_BUF: never interleaved
            except OSError:  # the reaper was killed: the next fit starts another
                pass


#: whether a worker becomes a child subreaper (Linux 3.4+), so that what a fit starts in a new
#: session (``Popen(..., start_new_session=True)``, a daemon's double fork) is reparented to the
#: worker instead of init and killed when the fit ends (:func:`_end_escaped`)
SUBREAPER = True
_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
_subreaper_of: int | None = None  # the process that has made itself a subreaper


def _become_subreaper() -> bool:
    """Make this process a child subreaper, once (a forked fit does not inherit it)."""
    global _subreaper_of
    if not SUBREAPER:
        return False
    if _subreaper_of == os.getpid():
        return True
    if _prctl is None or _prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return False
    _subreaper_of = os.getpid()
    return True


def _children() -> set[int] | None:
    """This process's children (every thread's), from /proc; None where /proc cannot say."""
    found = set()
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as text:
                found.update(int(pid) for pid in text.read().split())
    except (OSError, ValueError):
        return None
    return found


def _end_escaped(before: set[int]) -> None:
    """Kill, and wait for, the children this subreaper gained during a fit (descendants of the fit
    that left its process group and were orphaned), and theirs as they are reparented here in
    turn; ``before``: the children it had before the fit (the reaper), which are left alone."""
    for _ in range(100):  # each round reaches one more generation; a fork bomb outpaces no bound
        escaped = (_children() or set()) - before
        if not escaped:
            return
        for pid in escaped:
            try:
                group = os.getpgid(pid)
                if group != os.getpgrp():  # its own group (a new session): all of it
                    os.killpg(group, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in escaped:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


_SIZE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([KMGT]?)", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """``--task-memory``'s SIZE in bytes: a number with K, M, G or T (powers of 1024), e.g. ``2G``,
    ``500M``, ``1.5G``; an OodfsError naming the option otherwise."""
    match = _SIZE.fullmatch(text.strip())
    value = float(match[1]) * _UNITS[match[2].upper()] if match else 0
    if not 1 << 20 <= value <= 1000 << 40:
        raise OodfsError(
            f"--task-memory: expected a size from 1M to 1000T such as 500M or 2G (K, M, G, T: powers "
            f"of 1024), got {text!r}"
        )
    return int(value)


def memory_limit_supported() -> bool:
    """Linux counts every private writable mapping against RLIMIT_DATA since 4.7; elsewhere (or
    before) the limit would miss allocations made with mmap, as numpy's and torch's large ones are."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (4, 7) and _data_size() is not None


def _data_size() -> int | None:
    """This process's private writable memory, mapped or not (VmData: what RLIMIT_DATA counts)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _limit_memory(size: int) -> None:
    """Let this process allocate ``size`` bytes more than it holds now (RLIMIT_DATA: private
    writable memory, which is what malloc, numpy, torch, xgboost and numba's compiled code
    allocate; not RLIMIT_AS, which counts the address space libraries reserve without using it)."""
    limit = _data_size() + size
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _out_of_memory(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or "alloc" in text or "out of memory" in text


def call_isolated(fn, timeout: float | None = None, memory: str | None = None):
    """``fn()`` in a forked child; its return value, or OodfsError on error, crash or timeout.
    ``memory`` (``--task-memory``'s SIZE, e.g. ``2G``): what the child may allocate beyond what it
    holds when it starts; a fit over it fails with a message naming the limit.

    The child leads a process group of its own: whatever it starts (a plugin's ``Popen``, its
    joblib workers, a forked helper) is in that group and is killed with it when the fit ends,
    however it ends, and by the worker's reaper when the worker ends first. The result is read
    by its length, not to the end of the pipe, so a process left holding the pipe never keeps
    the run waiting, and a fit whose result arrived is never recorded as timed out."""
    reaper = _Reaper.fd()
    before = _children() if _become_subreaper() else None
    read_fd, write_fd = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # else the child would print the parent's buffer again
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_fd)
            os.setpgid(0, 0)
            # before anything else runs here: the reaper reads this even if the worker is gone already
            _Reaper.tell(reaper, os.getpid())
            _Reaper.forget()
            die_with_parent(parent)
            faulthandler.disable()  # a crash is reported by its signal, not a dump of the worker's modules
            if memory is not None:
                _limit_memory(parse_size(memory))
            try:
                with progress.outlet(lambda message: _send_message(write_fd, message)):
                    result = fn()
                payload = pickle.dumps(("ok", result))
            except BaseException as exc:  # noqa: BLE001 -- everything goes back to the parent
                message = error_message(exc)
                if memory is not None and _out_of_memory(exc):
                    message = f"out of memory: the fit needs more than --task-memory {memory} ({message})"
                payload = pickle.dumps(("error", message))
            for stream in (sys.stdout, sys.stderr):  # the method's own output, before the parent stops us
                stream.flush()
            with os.fdopen(write_fd, "wb") as out:
                out.write(_HEADER.pack(len(payload), _RESULT) + payload)
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    os.close(write_fd)
    try:
        os.setpgid(pid, pid)  # here too: the group exists before either process goes on
    except OSError:  # the child has set it already, or has ended
        pass
    data, status = None, None
    try:
        data, status = _receive(read_fd, pid, timeout)
    finally:
        os.close(read_fd)
        _end_group(pid)
        if not isinstance(status, int):
            _, waited = os.waitpid(pid, 0)
            status = waited if status is None else status
        _Reaper.tell(reaper, -pid)  # its group is gone (killed, and the fit waited for)
        if before is not None:
            _end_escaped(before)
    if data is None:
        if status == "timeout":
            raise OodfsError(f"timed out after {timeout:g} s (--task-timeout)")
        under = f"; it may have run out of --task-memory {memory}" if memory is not None else ""
        raise OodfsError(f"the method's process died ({_describe(status)}{under})")
    try:
        kind, result = pickle.loads(data)
    except Exception:  # noqa: BLE001 -- a child killed while sending
        raise OodfsError(
            f"the method's process died while sending its result ({_describe(status)})"
        ) from None
    if kind == "error":
        raise OodfsError(result)
    return result


def _send_message(fd: int, message) -> None:
    """In the child: one progress message to the parent (one write below PIPE_BUF: never split)."""
    data = pickle.dumps(message)
    os.write(fd, _HEADER.pack(len(data), _MESSAGE) + data)


def _receive(fd: int, pid: int, timeout: float | None) -> tuple[bytes | None, int | str | None]:
    """The child's complete result (or None) and its wait status: None while it still runs,
    "timeout" when the limit passed before a complete result. The progress messages that come
    before the result are passed on to this process's outlet (:func:`oodfs.contract.progress.send`)."""
    buf, status = bytearray(), None
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if len(buf) >= _HEADER.size:
            size, kind = _HEADER.unpack_from(buf)
            end = _HEADER.size + size
            if len(buf) >= end:
                if kind == _RESULT:
                    return bytes(buf[_HEADER.size : end]), status
                try:
                    message = pickle.loads(bytes(buf[_HEADER.size : end]))
                except Exception:  # noqa: BLE001 -- a damaged progress message is dropped
                    message = None
                del buf[:end]
                if message is not None:
                    progress.send(message)
                continue
        left = None if deadline is None else deadline - time.monotonic()
        wait = 0.2 if left is None else max(0.0, min(left, 0.2))
        if select.select([fd], [], [], wait)[0]:
            chunk = os.read(fd, 1 << 20)
            if chunk:
                buf += chunk
                continue
            if status is None:  # the end of the pipe: the child has ended
                status = os.waitpid(pid, 0)[1]
            return None, status
        if status is not None:  # the child ended, and nothing more came
            return None, status
        done, waited = os.waitpid(pid, os.WNOHANG)
        if done:  # ended: one more look for what it sent (a process it left may hold the pipe open)
            status = waited
            continue
        if left is not None and left <= 0:
            return None, "timeout"


def _end_group(pid: int) -> None:
    """Kill the fit's process group: the fit and everything it started that stayed in the group."""
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
