"""Parallel backends behind one function: the runner hands over calls, results come back.

``local`` runs in this process (``jobs=1``) or in joblib worker processes; ``dask`` runs on a
dask.distributed cluster (a LocalCluster by default, or ``scheduler`` = an address).
Results arrive in completion order; every call is independent (seeded by its coordinates).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from .validation import OodfsError

BACKENDS = ("local", "dask")


def run_calls(fn: Callable, calls: Sequence[tuple], *, backend: str = "local", jobs: int = 1,
              scheduler: str | None = None) -> Iterator:
    if backend not in BACKENDS:
        raise OodfsError(f"unknown backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if backend == "dask":
        yield from _dask(fn, calls, jobs, scheduler)
    elif jobs == 1:
        for args in calls:
            yield fn(*args)
    else:
        from joblib import Parallel, delayed

        yield from Parallel(n_jobs=jobs, return_as="generator_unordered")(delayed(fn)(*args) for args in calls)


def _dask(fn, calls, jobs, scheduler) -> Iterator:
    try:
        import dask
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise OodfsError("the dask backend needs dask.distributed: pip install 'oodfs[dask]'") from None
    cluster = None
    if scheduler is None:
        # the workers' sampling profiler (every 10 ms) costs CPU that the tasks need; no one reads it
        with dask.config.set({"distributed.worker.profile.enabled": False}):
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        client = Client(scheduler or cluster, timeout="30s")
    except OSError as exc:
        raise OodfsError(f"cannot reach the dask scheduler {scheduler!r}: {exc}") from None
    try:
        futures = [client.submit(fn, *args, pure=False) for args in calls]
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
