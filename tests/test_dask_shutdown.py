"""The end of a dask run: exit status 0 and no traceback from distributed's own connections being
closed (a worker's heartbeat meeting the closed scheduler printed a ``CommClosedError``
traceback after a finished ``bench --backend dask --jobs 8 --force-jobs``), and a shutdown with
a bound on every step, so that a Ctrl-C'd run on a loaded machine ends in seconds."""

import subprocess
import sys
import time

import pytest

from oodfs.results.store import ResultStore
from oodfs.run.executors import dask as dask_backend

from .test_faults import tiny_file

#: runs after the parallel tests, with the machine to itself (see pyproject's marker)
pytestmark = pytest.mark.alone

#: a method whose fit logs what a worker's failed heartbeat logs at shutdown, in the worker
CHATTY = """
import logging
import numpy as np
import oodfs

class Chatty(oodfs.Selector):
    "logs like a worker whose heartbeat met the closed scheduler"
    name = "chatty"

    def _fit_scores(self, X, y, sw):
        try:
            raise OSError("in <TLS (closed) ConnectionPool.heartbeat_worker>: Stream is closed")
        except OSError:
            logging.getLogger("distributed.worker").exception(
                "Failed to communicate with scheduler during heartbeat."
            )
        return np.abs(np.corrcoef(X.T, y)[-1, :-1])

@oodfs.hookimpl
def oodfs_selectors():
    return [Chatty]
"""


@pytest.mark.slow
def test_a_finished_dask_run_exits_0_with_no_traceback_from_distributed(tmp_path):
    pytest.importorskip("distributed")
    plugin = tmp_path / "chatty.py"
    plugin.write_text(CHATTY)
    out = tmp_path / "out"
    args = ["bench", "--suite", tiny_file(tmp_path, runs=3), "--plugin", str(plugin), "--out", str(out)]
    args += ["--methods", "ols,chatty", "--backend", "dask", "--jobs", "3", "--force-jobs", "--quiet"]
    proc = subprocess.run(
        [sys.executable, "-m", "oodfs.cli", *args, "--no-figures"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    for noise in ("Traceback", "CommClosedError", "Failed to communicate", "distributed."):
        assert noise not in proc.stderr, proc.stderr
    tasks, _ = ResultStore(out).tables()
    assert len(tasks) == 6 and set(tasks["status"]) == {"ok"}


class _Nanny:
    def __init__(self, pid):
        self.pid, self.told = pid, False

    def close_gracefully(self, reason=""):
        self.told = True


class _Cluster:
    """A LocalCluster whose close never ends in time (a nanny waiting on a busy worker)."""

    def __init__(self, pids):
        self.workers = {i: _Nanny(pid) for i, pid in enumerate(pids)}
        self.timeouts = []

    def close(self, timeout=None):
        self.timeouts.append(timeout)
        raise TimeoutError("the cluster did not close in time")


class _Client:
    def __init__(self):
        self.timeouts, self.unsubscribed = [], []

    def close(self, timeout=None):
        self.timeouts.append(timeout)
        raise TimeoutError("the client did not close in time")

    def unsubscribe_topic(self, topic):
        self.unsubscribed.append(topic)


def _sleepers(n):
    return [subprocess.Popen(["sleep", "60"]) for _ in range(n)]


@pytest.mark.parametrize("finished", [True, False])
def test_closing_is_bounded_and_kills_workers_that_outlast_it(finished):
    """Every close has an explicit bound; a cluster that does not close within it has its worker
    processes killed (a finished run loses nothing: every result has arrived), and an unfinished
    run (Ctrl-C) kills them first. Progress events stop before the client closes."""
    workers = _sleepers(2)
    try:
        cluster, client = _Cluster([w.pid for w in workers]), _Client()
        fn = dask_backend.reporting(_Subscriber(), len, progress=print)
        start = time.perf_counter()
        dask_backend._shut_down(client, cluster, fn, finished)
        assert time.perf_counter() - start < 5
        assert client.timeouts == [dask_backend.CLIENT_CLOSE_SECONDS]
        assert cluster.timeouts == [dask_backend.CLUSTER_CLOSE_SECONDS]
        assert client.unsubscribed == [fn.args[0]]
        assert [w.wait(timeout=10) for w in workers] == [-9, -9]  # SIGKILL
        assert all(n.told for n in cluster.workers.values())  # not started again by their nannies
    finally:
        for w in workers:
            w.kill()
            w.wait()


def test_a_cluster_that_closes_in_time_keeps_its_workers_to_close_them_itself():
    workers = _sleepers(1)
    try:
        cluster = _Cluster([workers[0].pid])
        cluster.close = lambda timeout=None: cluster.timeouts.append(timeout)
        dask_backend._shut_down(None, cluster, len, finished=True)
        assert cluster.timeouts == [dask_backend.CLUSTER_CLOSE_SECONDS]
        assert workers[0].poll() is None
    finally:
        workers[0].kill()
        workers[0].wait()


class _Subscriber:
    def subscribe_topic(self, topic, handler):
        pass
