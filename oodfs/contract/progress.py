"""Progress messages from inside a job: how a fit says it has finished a grid point, and how a
backend carries what a job reports back to the run (docs/PROTOCOL.md, "Progress").

* A method calls :func:`point_done` after each grid point it finishes. The default
  ``_fit_grid`` does; a plugin that overrides ``_fit_grid`` to share work between points may
  call it as its points finish (without it, its points count as done together when the fit
  returns). Outside a run it does nothing.
* A job sends small messages (lists of strings and numbers) with :func:`send`; they go to the
  *outlet* of the current context, which a backend sets in its worker with :func:`outlet` (a
  dask event, a line in a file, the run's own function when the job runs in the run's
  process). With no outlet a message goes nowhere: progress never changes or stops a run.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

_outlet: contextvars.ContextVar[Callable[[list], None] | None] = contextvars.ContextVar(
    "oodfs_progress_outlet", default=None
)
_points: contextvars.ContextVar[Callable[[int], None] | None] = contextvars.ContextVar(
    "oodfs_progress_points", default=None
)


def point_done(n: int = 1) -> None:
    """``n`` more grid points of the method being fitted are finished."""
    listener = _points.get()
    if listener is not None and n > 0:
        try:
            listener(int(n))
        except Exception:  # noqa: BLE001 -- a progress line is never worth a failed fit
            pass


def send(message: list) -> None:
    """Send ``message`` to the current outlet, if there is one."""
    deliver = _outlet.get()
    if deliver is not None:
        try:
            deliver(message)
        except Exception:  # noqa: BLE001 -- nor a failed job
            pass


def has_outlet() -> bool:
    return _outlet.get() is not None


@contextlib.contextmanager
def outlet(deliver: Callable[[list], None] | None) -> Iterator[None]:
    """Within the block, :func:`send` calls ``deliver(message)`` (a backend's worker side)."""
    token = _outlet.set(deliver)
    try:
        yield
    finally:
        _outlet.reset(token)


@contextlib.contextmanager
def counting_points(listener: Callable[[int], None] | None) -> Iterator[None]:
    """Within the block, :func:`point_done` calls ``listener(n)`` (the run's side of a fit)."""
    token = _points.set(listener)
    try:
        yield
    finally:
        _points.reset(token)
