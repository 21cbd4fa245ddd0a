"""The job-queue backend: dask workers started as batch jobs of a cluster's scheduler (SLURM, PBS,
SGE, LSF, OAR, HTCondor, Moab) through dask-jobqueue (pip install 'oodfs[jobqueue]').

``oodfs bench`` runs on a login node; the backend submits jobs that each start ``cores``
single-threaded dask workers, ``--jobs`` workers in all, and the results come back to the login
node, which alone writes the results folder (SQLite is not written from several machines). The
nodes need the same Python environment (``python``, ``prologue``) and must reach the login node
on the network (``interface``). Between them, the cluster talks TLS with certificates made for
the run when ``cryptography`` is installed; the workers' copies are written to
``shared_directory`` (default ``~``), which the nodes must see. docs/PROTOCOL.md, "Running on a
cluster", has an example.

``system=local`` is dask-jobqueue's own test cluster: the same job scripts, run as processes of
this machine instead of submitted. The tests use it.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence

from oodfs.contract.extensions import Backend, BackendOption
from oodfs.run.executors.dask import _QUIET_CLUSTER, completed, reporting
from oodfs.validation import OodfsError, format_warning

#: ``system`` -> dask-jobqueue's cluster class
SYSTEMS = {
    "slurm": "SLURMCluster",
    "pbs": "PBSCluster",
    "sge": "SGECluster",
    "lsf": "LSFCluster",
    "oar": "OARCluster",
    "htcondor": "HTCondorCluster",
    "moab": "MoabCluster",
    "local": "local.LocalCluster",  # no queue: the job scripts run here (dask-jobqueue's test cluster)
}


def _system(text: str) -> str:
    if text not in SYSTEMS:
        raise ValueError(f"unknown system; valid: {', '.join(SYSTEMS)}")
    return text


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError("expected a positive integer")
    return int(text)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split(";") if line.strip()]


class JobQueueBackend(Backend):
    """dask workers submitted as batch jobs (SLURM, PBS, SGE, LSF, ...) through dask-jobqueue
    (pip install 'oodfs[jobqueue]')"""

    name = "jobqueue"
    commits_in_worker = False  # the nodes return their rows; the login node commits them
    reports_progress = True  # through dask's events, as the dask backend
    options = (
        BackendOption("system", f"the batch system: {', '.join(SYSTEMS)} (default slurm)", _system),
        BackendOption("cores", "single-threaded workers per job (default 1)", _positive),
        BackendOption("memory", "memory of one job, e.g. 8GB (default 4GB)"),
        BackendOption("walltime", "time limit of one job, e.g. 02:00:00 (default: the system's)"),
        BackendOption("queue", "the queue or partition to submit to"),
        BackendOption("account", "the account or project to charge"),
        BackendOption("python", "the Python of the nodes (default: this one)"),
        BackendOption(
            "directives", "extra scheduler directives, separated by ';' (e.g. --gres=gpu:0)", _lines
        ),
        BackendOption(
            "prologue", "shell lines run before the workers start, separated by ';' (module load ...)", _lines
        ),
        BackendOption("interface", "network interface the nodes reach this machine on (e.g. ib0)"),
        BackendOption("shared_directory", "a folder the nodes see, for the TLS certificates (default ~)"),
    )

    def run(self, fn: Callable, calls: Sequence[tuple], *, jobs=1, progress=None, **options) -> Iterator:
        cluster = _start(jobs, **options)
        try:
            from dask.distributed import Client, as_completed

            with Client(cluster, timeout="60s") as client:
                fn = reporting(client, fn, progress)
                yield from completed(client, [(_in_job, fn, *args) for args in calls], as_completed)
        finally:
            cluster.close()
            _remove_certificates(cluster)

    def uses_local_cpus(self, system: str = "slurm", **options) -> bool:
        return system == "local"


def _start(
    jobs: int,
    system: str = "slurm",
    cores: int = 1,
    memory: str = "4GB",
    walltime: str | None = None,
    queue: str | None = None,
    account: str | None = None,
    python: str | None = None,
    directives: Sequence[str] = (),
    prologue: Sequence[str] = (),
    interface: str | None = None,
    shared_directory: str = "~",
):
    """A started dask-jobqueue cluster asked for ``jobs`` workers in jobs of ``cores`` workers."""
    try:
        import dask
        import dask_jobqueue
        from dask_jobqueue import local as local_jobs
    except ImportError:
        raise OodfsError("the jobqueue backend needs dask-jobqueue: pip install 'oodfs[jobqueue]'") from None
    cls = local_jobs.LocalCluster if system == "local" else getattr(dask_jobqueue, SYSTEMS[system])
    kwargs = dict(
        cores=cores,
        processes=cores,  # one thread per worker: the fits use the cores (docs/PROTOCOL.md, "Threads")
        memory=memory,
        python=python or sys.executable,
        job_script_prologue=list(prologue),
        interface=interface,
        security=_security(),
        # expanded here: a local job's command line is not run by a shell
        shared_temp_directory=os.path.expanduser(shared_directory),
        scheduler_options={"dashboard": False, "dashboard_address": "127.0.0.1:0"}
        | ({"host": "127.0.0.1"} if system == "local" and interface is None else {}),
    )
    if system != "local":
        kwargs |= dict(walltime=walltime, queue=queue, account=account, job_extra_directives=list(directives))
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    with dask.config.set(_QUIET_CLUSTER), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            cluster = cls(**kwargs)
        except (OSError, ValueError, TypeError) as exc:
            raise OodfsError(f"the jobqueue backend ({system}) could not start its cluster: {exc}") from None
    cluster.scale(jobs=math.ceil(jobs / cores))
    return cluster


def _remove_certificates(cluster) -> None:
    """Delete the workers' copies of the run's TLS certificates (dask-jobqueue keeps them open as
    temporary files in the shared directory and leaves them there when the run ends)."""
    for name, value in list(vars(cluster).items()):
        if name.startswith("_job_") and hasattr(value, "close"):
            value.close()  # a NamedTemporaryFile: deleted when closed


def _security():
    try:
        import cryptography  # noqa: F401 -- what distributed.Security.temporary needs
    except ImportError:
        print(
            "oodfs: note: the job-queue cluster runs without TLS (pip install cryptography)", file=sys.stderr
        )
        return None
    return True


def _in_job(fn: Callable, *args):
    warnings.formatwarning = format_warning  # one line, as the command line prints them
    return fn(*args)
