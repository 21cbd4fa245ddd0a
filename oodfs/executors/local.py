"""The local backend: this process (``jobs=1``) or joblib worker processes."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

COMMITS_IN_WORKER = True


def run(fn: Callable, calls: Sequence[tuple], *, jobs: int = 1, scheduler: str | None = None) -> Iterator:
    if jobs == 1:
        for args in calls:
            yield fn(*args)
        return
    from joblib import Parallel, delayed

    yield from Parallel(n_jobs=jobs, return_as="generator_unordered")(delayed(fn)(*args) for args in calls)
