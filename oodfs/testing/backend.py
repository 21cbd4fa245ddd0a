"""The checks of a backend (oodfs.testing.check_backend)."""

from __future__ import annotations

import numpy as np

from oodfs.testing._core import _declared, _ensure, _expect_oodfs_error, _kind_check


def backend_probe(i: int, seed: int) -> tuple[int, float, int]:
    """The job :func:`check_backend` runs: its inputs, a seeded draw and the worker's process id."""
    import os

    return i, float(np.random.default_rng(seed).normal()), os.getpid()


def check_backend(backend, jobs: int = 2, **options) -> None:
    """Check a :class:`oodfs.contract.extensions.Backend` subclass (``options``: the values of its
    declared options to run it with): it runs every call exactly once with ``jobs`` workers and
    returns what the same calls return in this process, runs no call for no calls, and its declared
    options parse (an unknown one is refused with one line naming the valid ones)."""
    from oodfs.contract.extensions import Backend

    calls = [(i, 1000 + i) for i in range(6)]
    expected = sorted(backend_probe(*c)[:2] for c in calls)

    def metadata():
        _declared(backend)
        _ensure(isinstance(backend, type) and issubclass(backend, Backend), "not a Backend subclass")
        _ensure(isinstance(backend.commits_in_worker, bool), "commits_in_worker is not a bool")
        names = [o.name for o in backend.options]
        _ensure(len(set(names)) == len(names), f"an option is declared twice: {names}")
        _expect_oodfs_error(
            "parse_options with an unknown option", lambda: backend.parse_options({"no-such": "1"})
        )

    def same_results():
        got = list(backend().run(backend_probe, calls, jobs=jobs, **options))
        _ensure(len(got) == len(calls), f"{len(got)} results for {len(calls)} calls")
        _ensure(sorted(g[:2] for g in got) == expected, "the results differ from the same calls run here")

    def no_calls():
        _ensure(list(backend().run(backend_probe, [], jobs=jobs, **options)) == [], "results for no calls")

    _kind_check(
        f"backend {getattr(backend, 'name', backend)!r}",
        {
            "check_backend_metadata": metadata,
            "check_backend_results": same_results,
            "check_backend_no_calls": no_calls,
        },
    )
