"""Where jobs run: backends are a plugin kind (hook ``oodfs_backends``), one module each.

A backend is an :class:`oodfs.contract.extensions.Backend` subclass: ``run(fn, calls, *, jobs,
**options)`` yields results in completion order, ``commits_in_worker`` says whether its workers
share this machine's results folder and commit their own tasks (True) or return the results to
this process to be committed (False: a remote cluster), and ``options`` declares what
``--backend-option KEY=VALUE`` it takes. Every call is independent (seeded by its coordinates), so
the backend never changes a number. The built-in backends (:mod:`.local`, :mod:`.dask`,
:mod:`.jobqueue`) are registered through the same hook (:mod:`.builtin`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence


def backend(name: str):
    """An instance of the registered backend called ``name`` (an OodfsError names the valid ones)."""
    from oodfs.contract.registry import registry  # not at import: lifeline, imported first by oodfs, is here

    return registry().get("backend", name)()


def run_calls(
    fn: Callable,
    calls: Sequence[tuple],
    *,
    backend_name: str = "local",
    jobs: int = 1,
    options: dict | None = None,
) -> Iterator:
    """``fn(*args)`` for each ``args`` of ``calls`` on the backend, with its parsed ``options``."""
    yield from backend(backend_name).run(fn, calls, jobs=jobs, **(options or {}))
