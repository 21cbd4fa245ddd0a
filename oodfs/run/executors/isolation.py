"""Run one call in a forked child process: a time limit, and a crash that stays in the child.

``os.fork`` is used directly (not multiprocessing), so this also works inside daemonic worker
processes such as dask's. The child shares the parent's data copy-on-write and sends back its
result pickled through a pipe; a child that dies (a segfault, ``os._exit``, ``sys.exit``, a
kill) or exceeds the limit is reported as an OodfsError, and the parent goes on. Whatever the
child does to its memory (a plugin that edits its input arrays) never reaches the parent.

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


def die_with_parent() -> None:
    """End this process when its parent process ends (a killed ``oodfs bench`` leaves no
    worker computing on). Linux: the kernel's parent-death signal; elsewhere a thread that
    watches the parent's id."""
    parent = os.getppid()
    if _prctl is None or _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:

        def watch():
            while os.getppid() == parent:
                time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGKILL)

        threading.Thread(target=watch, name="oodfs-die-with-parent", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was armed
        os.kill(os.getpid(), signal.SIGKILL)


def call_isolated(fn, timeout: float | None = None):
    """``fn()`` in a forked child; its return value, or OodfsError on error, crash or timeout."""
    read_fd, write_fd = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # else the child would print the parent's buffer again
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(read_fd)
            die_with_parent()
            faulthandler.disable()  # a crash is reported by its signal, not a dump of the worker's modules
            try:
                payload = pickle.dumps(("ok", fn()))
            except BaseException as exc:  # noqa: BLE001 -- everything goes back to the parent
                payload = pickle.dumps(("error", error_message(exc)))
            for stream in (sys.stdout, sys.stderr):  # the method's own output, before the parent stops us
                stream.flush()
            with os.fdopen(write_fd, "wb") as out:
                out.write(payload)
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    os.close(write_fd)
    chunks, deadline = [], None if timeout is None else time.monotonic() + timeout
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            while True:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise OodfsError(f"timed out after {timeout:g} s (--task-timeout)")
                ready, _, _ = select.select([pipe], [], [], left)
                if not ready:
                    continue
                chunk = os.read(pipe.fileno(), 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
    if not chunks:
        raise OodfsError(f"the method's process died ({_describe(status)})")
    try:
        kind, result = pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 -- a child killed while sending
        raise OodfsError(
            f"the method's process died while sending its result ({_describe(status)})"
        ) from None
    if kind == "error":
        raise OodfsError(result)
    return result


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "signal"
        return f"killed by {name} ({number})"
    return f"exit code {os.WEXITSTATUS(status)}"
