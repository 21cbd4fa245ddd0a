"""Worker processes end with their run, from the moment they start (standard library only).

A run that starts worker processes (a dask LocalCluster, joblib's loky pool) puts its process id
in the environment they inherit (:func:`mark_run`). :func:`arm` runs when this module is imported,
at the very start of ``import oodfs`` (a spawned worker imports oodfs first, as part of the main
module it re-imports, before its seconds of other imports): it gives such a worker the kernel's
parent-death signal, or ends it at once if the run has ended already; it leaves Ctrl-C to the
run, which stops its workers itself. Without it, a worker still
importing when the run was killed went on for as long as its imports took (dask's own check of
its parent comes after them).
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

#: the run's process id, in the environment of the processes it starts; a worker removes it from
#: its own environment, so that only the run's direct children ever see it
ENV = "OODFS_RUN_PID"

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


def mark_run() -> str | None:
    """Before a run starts worker processes: they inherit its id. Returns the value it replaced
    (for :func:`unmark_run`)."""
    before = os.environ.get(ENV)
    os.environ[ENV] = str(os.getpid())
    return before


def unmark_run(before: str | None) -> None:
    if before is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = before


def arm() -> None:
    """In a process a run started directly (its id in the environment): end with the run from
    now on, or now if the run has ended already (this process was orphaned while starting)."""
    run = os.environ.get(ENV, "")
    if not run.isdigit() or int(run) == os.getpid():
        return
    del os.environ[ENV]  # not for the processes this one starts
    # Ctrl-C reaches the whole process group: the run answers it (it stops its workers and says so
    # in one line); a worker that also raised KeyboardInterrupt would print a traceback of its own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    run = int(run)
    if os.getppid() == run:
        die_with_parent(run)
    elif not _alive(run):
        os.kill(os.getpid(), signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:  # a killed run not yet waited for is a zombie
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True


arm()
