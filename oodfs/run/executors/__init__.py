"""Where jobs run: backends registered by name, each in its own module.

A backend is a module with ``run(fn, calls, *, jobs, scheduler) -> iterator of results`` (in
completion order) and ``COMMITS_IN_WORKER``: True when its workers share this machine's
results folder and commit their own tasks; False when results come back to this process to be
committed (a remote cluster). Every call is independent (seeded by its coordinates), so the
backend never changes a number. The command line offers the names in :data:`BACKENDS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence

BACKENDS = {
    "local": "joblib worker processes on this machine (one process per job; in this process with --jobs 1)",
    "dask": "a dask.distributed cluster: a LocalCluster of --jobs workers, or --scheduler ADDRESS "
    "(pip install 'oodfs[dask]')",
}


def backend(name: str):
    from oodfs.validation import OodfsError  # not at import: lifeline, imported first by oodfs, is here

    if name not in BACKENDS:
        raise OodfsError(f"unknown backend {name!r}; valid: {', '.join(BACKENDS)}")
    return importlib.import_module(f"{__name__}.{name}")


def run_calls(
    fn: Callable,
    calls: Sequence[tuple],
    *,
    backend_name: str = "local",
    jobs: int = 1,
    scheduler: str | None = None,
) -> Iterator:
    yield from backend(backend_name).run(fn, calls, jobs=jobs, scheduler=scheduler)
