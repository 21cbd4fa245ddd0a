"""The local backend: this process (``jobs=1``) or joblib (loky) worker processes."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Sequence

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
        parallel = Parallel(n_jobs=jobs, return_as="generator_unordered", initializer=exec, initargs=arm)
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
