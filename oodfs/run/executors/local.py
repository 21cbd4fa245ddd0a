"""The local backend: this process (``jobs=1``) or joblib (loky) worker processes."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence

from oodfs.run.executors.isolation import die_with_parent
from oodfs.validation import RunAborted, format_warning

COMMITS_IN_WORKER = True


def _in_worker(fn: Callable, args: tuple):
    # a worker ends with the run that started it: after a SIGKILL of `oodfs bench` nothing
    # keeps computing and committing into the folder a new run may be resuming
    die_with_parent()
    # warnings as one line, as the command line prints them in its own process
    warnings.formatwarning = format_warning
    return fn(*args)


def run(fn: Callable, calls: Sequence[tuple], *, jobs: int = 1, scheduler: str | None = None) -> Iterator:
    if jobs == 1:
        for args in calls:
            yield fn(*args)
        return
    from joblib import Parallel, delayed
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    try:
        yield from Parallel(n_jobs=jobs, return_as="generator_unordered")(
            delayed(_in_worker)(fn, args) for args in calls
        )
    except TerminatedWorkerError as exc:  # killed from outside (out of memory, a kill): the run stops
        codes = " ".join(
            str(exc).rpartition("exit codes of the workers are")[2].split("Detailed")[0].split()
        ).strip(" .")
        raise RunAborted(
            f"a worker process died (exit codes {codes or 'unknown'}); finished tasks are saved, continue "
            "with --resume"
        ) from None
