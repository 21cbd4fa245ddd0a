"""The local backend: this process (``jobs=1``) or joblib (loky) worker processes."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from oodfs.contract.extensions import Backend
from oodfs.contract.progress import outlet
from oodfs.run.executors.lifeline import die_with_parent, mark_run, unmark_run
from oodfs.run.progress import FileInbox, FileOutlet
from oodfs.validation import RunAborted, format_warning


class LocalBackend(Backend):
    """joblib worker processes on this machine (one process per job; in this process with --jobs 1)"""

    name = "local"
    commits_in_worker = True
    reports_progress = True

    def run(self, fn: Callable, calls: Sequence[tuple], *, jobs: int = 1, progress=None) -> Iterator:
        return run(fn, calls, jobs=jobs, progress=progress)


#: the first thing a new worker runs, before it imports oodfs, torch or a job (standard library
#: only: those imports take seconds): it ends with the run from then on, and at once if the run
#: (``{parent}``, recorded by the run before it started the worker) has ended already
_ARM_WORKER = """
import ctypes, os, signal
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):  # not Linux: die_with_parent's watcher, at the first job
    pass
if os.getppid() != {parent}:
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _in_worker(fn: Callable, args: tuple, parent: int, inbox: str | None = None):
    die_with_parent(parent)  # again: a worker reused from an earlier Parallel of this process
    # warnings as one line, as the command line prints them in its own process
    warnings.formatwarning = format_warning
    with outlet(None if inbox is None else FileOutlet(inbox)):  # progress: lines in a folder of the run
        return fn(*args)


def run(fn: Callable, calls: Sequence[tuple], *, jobs: int = 1, progress=None) -> Iterator:
    """``progress``: a function of this process that receives the jobs' progress messages (in
    this process directly; from worker processes through a temporary folder, :class:`FileInbox`).
    No more workers start than there are calls."""
    jobs = min(jobs, max(1, len(calls)))
    if jobs == 1:
        for args in calls:
            with outlet(progress):
                result = fn(*args)
            yield result
        return
    from joblib import Parallel, delayed
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    marked = mark_run()  # a worker ends with this run from its first import of oodfs on
    inbox = None if progress is None else FileInbox(progress)
    try:
        parent = os.getpid()  # recorded here, before any worker exists
        arm = (_ARM_WORKER.format(parent=parent), {})
        parallel = Parallel(
            n_jobs=jobs,
            return_as="generator_unordered",
            initializer=exec,
            initargs=arm,
            temp_folder=str(_temp_root()),
        )
        folder = None if inbox is None else inbox.folder
        yield from parallel(delayed(_in_worker)(fn, args, parent, folder) for args in calls)
    except TerminatedWorkerError as exc:  # killed from outside (out of memory, a kill): the run stops
        codes = " ".join(
            str(exc).rpartition("exit codes of the workers are")[2].split("Detailed")[0].split()
        ).strip(" .")
        raise RunAborted(
            f"a worker process died (exit codes {codes or 'unknown'}); finished tasks are saved, continue "
            "with --resume"
        ) from None
    finally:
        unmark_run(marked)
        if inbox is not None:
            inbox.close()
        _empty(_temp_root())


#: joblib's folder for the arrays it hands to its workers (memory-mapped), one per process: under
#: the system's temporary folder (or JOBLIB_TEMP_FOLDER), never joblib's default /dev/shm, whose
#: folders outlived killed runs (docs/PROTOCOL.md section 6, "Temporary files and full disks").
#: One per process, not per run: joblib reuses its worker pool, and with it the folder it was
#: first given
_root: Path | None = None


def _temp_root() -> Path:
    global _root
    if _root is None or not _root.is_dir():
        from joblib.externals.loky.backend import resource_tracker

        _start_quiet_resource_tracker(resource_tracker)
        parent = os.environ.get("JOBLIB_TEMP_FOLDER") or None  # None: the system's (TMPDIR)
        _root = Path(tempfile.mkdtemp(prefix="oodfs-joblib-", dir=parent))
        # removed at exit; by loky's resource tracker if this process is killed
        resource_tracker.register(str(_root), "folder")
        atexit.register(_remove, _root, os.getpid())
    return _root


#: what loky's resource tracker warns about is what it then cleans, as it should
_TRACKER_WARNINGS = "ignore:resource_tracker:UserWarning"


def _start_quiet_resource_tracker(resource_tracker) -> None:
    """Start loky's resource tracker, the process that removes the pool's semaphores and folders
    when this one dies, without its warnings: after a killed run (SIGKILL, SIGHUP) it printed two
    lines per kind of resource ("There appear to be 8 leaked semlock objects to clean up at
    shutdown: ..."), about what it then removes. Its only way in is its environment
    (PYTHONWARNINGS, a user's own filters kept); a tracker already running keeps its own. It
    starts with SIGHUP ignored (an ignored signal stays ignored in the program it runs; it
    ignores SIGINT and SIGTERM itself): a closed terminal hangs up the whole process group, and a
    tracker that died with the run left the pool's semaphores in /dev/shm and its folder."""
    before = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [before, _TRACKER_WARNINGS]))
    hangup = None
    with contextlib.suppress(ValueError, AttributeError):  # not the main thread; no SIGHUP (Windows)
        hangup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        resource_tracker.ensure_running()
    finally:
        if hangup is not None:
            signal.signal(signal.SIGHUP, hangup)
        if before is None:
            del os.environ["PYTHONWARNINGS"]
        else:
            os.environ["PYTHONWARNINGS"] = before


def _empty(folder: Path) -> None:
    """What a run's pool left in ``folder`` (joblib removes its own subfolder when a pool ends
    normally, not always after an error or Ctrl-C)."""
    with contextlib.suppress(OSError):
        for child in folder.iterdir():
            shutil.rmtree(child, ignore_errors=True)


def _remove(folder: Path, owner: int) -> None:
    if os.getpid() == owner:  # not in a forked child that exits normally: the folder is the run's
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(Exception):  # the tracker may have ended already
            from joblib.externals.loky.backend import resource_tracker

            resource_tracker.unregister(str(folder), "folder")


def stop_idle_workers() -> None:
    """End joblib's worker processes, idle once a run is over: as the program ends (``oodfs
    bench``), waiting for each to wind down its own imports (torch, numba) kept the prompt from
    coming back for 12-35 s after the last line on a loaded machine (docs/PROTOCOL.md section 20).
    Within a process that runs again (tests, a notebook) the pool is kept and reused."""
    import sys

    if "joblib.externals.loky.reusable_executor" not in sys.modules:  # no pool was ever started
        return
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        with contextlib.suppress(Exception):  # the program ends either way
            executor.shutdown(wait=True, kill_workers=True)
