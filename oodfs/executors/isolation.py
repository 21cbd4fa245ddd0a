"""Run one call in a forked child process: a time limit, and a crash that stays in the child.

``os.fork`` is used directly (not multiprocessing), so this also works inside daemonic worker
processes such as dask's. The child shares the parent's data copy-on-write and sends back its
result pickled through a pipe; a child that dies (a segfault, ``os._exit``, ``sys.exit``) or
exceeds the limit is reported as an OodfsError, and the parent goes on.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import time
import traceback
from pathlib import Path

from ..validation import OodfsError


def error_message(exc: BaseException) -> str:
    """One line for a failed task: the error and where it was raised."""
    if isinstance(exc, OodfsError):
        return str(exc)
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


def call_isolated(fn, timeout: float | None = None):
    """``fn()`` in a forked child; its return value, or OodfsError on error, crash or timeout."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        code = 0
        try:
            payload = pickle.dumps(("ok", fn()))
        except BaseException as exc:  # noqa: BLE001 -- everything goes back to the parent
            payload = pickle.dumps(("error", error_message(exc)))
        try:
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
        raise OodfsError(f"the task's process died ({_describe(status)})")
    kind, result = pickle.loads(b"".join(chunks))
    if kind == "error":
        raise OodfsError(result)
    return result


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.WEXITSTATUS(status)}"
