"""The dask backend: a dask.distributed cluster (a LocalCluster by default, or ``scheduler``)."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from ..validation import OodfsError

COMMITS_IN_WORKER = False  # a remote worker returns its rows; this process commits them


def run(fn: Callable, calls: Sequence[tuple], *, jobs: int = 1, scheduler: str | None = None) -> Iterator:
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
