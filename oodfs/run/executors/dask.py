"""The dask backend: a dask.distributed cluster (a LocalCluster by default, or ``scheduler``).

The LocalCluster oodfs starts serves nothing over HTTP and talks TLS:

* distributed's scheduler and workers always open an HTTP port (there is no switch for it;
  ``dashboard_address=None`` only drops the dashboard's pages). oodfs gives those servers no
  routes (no dashboard, no metrics, no JSON of the cluster's state) and lets the scheduler's
  listen on a free port of 127.0.0.1 instead of 8787.
* ``security=True``: a self-signed certificate made in memory for this run
  (``distributed.Security.temporary``, which needs ``cryptography``), so another user of the
  machine cannot connect to the scheduler and run code in the workers (``client.run``).
  Without ``cryptography`` the cluster is started without TLS, and a note says so.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import sys
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence

from oodfs.contract.extensions import Backend, BackendOption
from oodfs.contract.progress import outlet
from oodfs.run.executors.lifeline import die_with_parent, mark_run, unmark_run
from oodfs.validation import OodfsError, RunAborted, format_warning


class DaskBackend(Backend):
    """a dask.distributed cluster: a LocalCluster of --jobs workers, or an existing scheduler
    (--backend-option scheduler=ADDRESS; pip install 'oodfs[dask]')"""

    name = "dask"
    commits_in_worker = False  # a remote worker returns its rows; this process commits them
    reports_progress = True  # through dask's events (:func:`reporting`)
    options = (
        BackendOption(
            "scheduler",
            "address of an existing dask scheduler, e.g. tcp://host:8786 (default: start a LocalCluster "
            "of --jobs workers)",
        ),
    )

    def run(self, fn: Callable, calls: Sequence[tuple], *, jobs: int = 1, scheduler=None, progress=None):
        return run(fn, calls, jobs=jobs, scheduler=scheduler, progress=progress)

    def uses_local_cpus(self, scheduler: str | None = None) -> bool:
        return scheduler is None  # an existing cluster may be larger than this machine


_QUIET_CLUSTER = {
    # the workers' sampling profiler (every 10 ms) costs CPU that the tasks need; no one reads it
    "distributed.worker.profile.enabled": False,
    "distributed.scheduler.http.routes": [],
    "distributed.worker.http.routes": [],
}


def _in_local_worker(fn: Callable, *args):
    die_with_parent()  # a LocalCluster's worker ends with this run (its nanny runs in the run's process)
    warnings.formatwarning = format_warning  # one line, as the command line prints them
    return fn(*args)


def _security():
    try:
        import cryptography  # noqa: F401 -- what Security.temporary needs
    except ImportError:
        print(
            "oodfs: note: the local dask cluster runs without TLS (pip install cryptography to have it)",
            file=sys.stderr,
        )
        return None
    return True


def reporting(client, fn: Callable, progress: Callable | None) -> Callable:
    """``fn`` as a worker runs it: its progress messages (:mod:`oodfs.contract.progress`) become
    events of a topic of this run, which the client hands to ``progress`` in this process."""
    if progress is None:
        return fn
    topic = f"oodfs-progress-{uuid.uuid4().hex}"
    client.subscribe_topic(topic, lambda event: progress(event[1]))  # event: (time, message)
    return functools.partial(_with_events, topic, fn)


def _stop_reporting(client, fn: Callable) -> None:
    """No more events to this client: a worker's late progress message would otherwise reach a
    client whose connection is closing, and the scheduler logs that with a traceback."""
    if isinstance(fn, functools.partial) and fn.func is _with_events:
        with contextlib.suppress(Exception):
            client.unsubscribe_topic(fn.args[0])


def _with_events(topic: str, fn: Callable, *args):
    from distributed import get_worker

    worker = get_worker()
    with outlet(lambda message: worker.log_event(topic, message)):
        return fn(*args)


def run(
    fn: Callable, calls: Sequence[tuple], *, jobs: int = 1, scheduler: str | None = None, progress=None
) -> Iterator:
    try:
        import dask
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise OodfsError("the dask backend needs dask.distributed: pip install 'oodfs[dask]'") from None
    cluster = client = None
    marked = mark_run() if scheduler is None else False  # False: nothing to unmark
    finished = False
    try:
        if scheduler is None:
            # a worker ends with this run from its first import of oodfs on, before its other imports
            # (the nannies, which start the workers, run in this process)
            with dask.config.set(_QUIET_CLUSTER), _ctrl_c_held():
                cluster = LocalCluster(
                    n_workers=min(jobs, max(1, len(calls))),  # no more workers than calls
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                    worker_dashboard_address=None,
                    security=_security(),
                    # distributed's own logs are not this run's messages: its errors at shutdown
                    # (a worker's heartbeat meeting the closed scheduler, with a CommClosedError
                    # traceback) are about connections closed on purpose; what a user needs (a
                    # killed worker, a failed task) comes back through the futures
                    silence_logs=logging.CRITICAL,
                    scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                )
        try:
            client = Client(cluster if cluster is not None else scheduler, timeout="30s")
        except (OSError, ValueError, TypeError) as exc:  # unreachable, or not an address at all
            raise OodfsError(f"cannot reach the dask scheduler {scheduler!r}: {exc}") from None
        fn = reporting(client, fn, progress)
        task = fn if cluster is None else _in_local_worker
        first = () if cluster is None else (fn,)
        yield from completed(client, [(task, *first, *args) for args in calls], as_completed)
        finished = True
    finally:
        try:
            _shut_down(client, cluster, fn, finished)
        finally:
            if marked is not False:
                unmark_run(marked)


#: how long closing the client, then the cluster, may take (seconds) before the workers are
#: killed: distributed's defaults (twice the connect timeout for the client, none for the
#: cluster, 5 s per nanny) add up to minutes on a loaded machine
CLIENT_CLOSE_SECONDS = 10
CLUSTER_CLOSE_SECONDS = 15


def _shut_down(client, cluster, fn: Callable, finished: bool) -> None:
    """Close the client, then the LocalCluster, each within a bound, quietly. A run that did not
    finish (Ctrl-C, an error, a consumer that stopped) kills its local workers first: their tasks
    are abandoned, and a task that ignores SIGINT (the workers do) would keep its nanny waiting."""
    with _quiet():
        if cluster is not None and not finished:
            _kill_workers(cluster)
        if client is not None:
            _stop_reporting(client, fn)
            with contextlib.suppress(Exception):  # a timeout, a connection already gone
                client.close(timeout=CLIENT_CLOSE_SECONDS)
        if cluster is not None:
            try:
                cluster.close(timeout=CLUSTER_CLOSE_SECONDS)
            except Exception:  # noqa: BLE001 -- a timeout: nothing of the run is left to wait for
                _kill_workers(cluster)


def _kill_workers(cluster) -> None:
    """SIGKILL the worker processes of a LocalCluster, their nannies told first not to start
    them again."""
    for nanny in list(getattr(cluster, "workers", {}).values()):
        with contextlib.suppress(Exception):
            nanny.close_gracefully("the oodfs run is ending")
        pid = getattr(nanny, "pid", None)
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def _quiet():
    """distributed's loggers in this process say nothing while the cluster is closed: what they
    log then (the scheduler writing to a client that is closing, at level CRITICAL with a
    traceback) is about connections this run closes on purpose."""
    logger = logging.getLogger("distributed")
    before = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(before)


def completed(client, calls: Sequence[tuple], as_completed) -> Iterator:
    """Submit each ``(function, *args)`` of ``calls`` to ``client`` and yield the results as they
    finish; workers that die again and again stop the run (:class:`~oodfs.validation.RunAborted`)."""
    from distributed import KilledWorker

    futures = [client.submit(*call, pure=False) for call in calls]
    for future in as_completed(futures):
        try:
            result = future.result()
        except KilledWorker as exc:  # workers killed from outside, again and again: the run stops
            raise RunAborted(
                f"dask workers died running a job ({exc}); finished tasks are saved, continue with --resume"
            ) from None
        yield result


@contextlib.contextmanager
def _ctrl_c_held():
    """Ctrl-C (SIGINT) ignored while the LocalCluster starts its worker processes: they inherit
    the ignored signal from their first instant (Python keeps an ignored SIGINT ignored), so a
    Ctrl-C to the terminal's process group cannot interrupt a worker still starting Python (a
    traceback from each, before oodfs could ignore it: :func:`oodfs.run.executors.lifeline.arm`).
    The price: a Ctrl-C while the cluster starts (seconds) is lost, and needs pressing again once
    the workers are up. Blocking the signal instead would keep it, but the workers are started
    by distributed's threads, which do not inherit this thread's signal mask."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
