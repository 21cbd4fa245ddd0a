"""The built-in backends, registered through the ``oodfs_backends`` hook as a plugin's are."""

from __future__ import annotations

from oodfs.contract.hookspecs import hookimpl
from oodfs.run.executors.dask import DaskBackend
from oodfs.run.executors.jobqueue import JobQueueBackend
from oodfs.run.executors.local import LocalBackend


@hookimpl
def oodfs_backends() -> list[type]:
    return [LocalBackend, DaskBackend, JobQueueBackend]
