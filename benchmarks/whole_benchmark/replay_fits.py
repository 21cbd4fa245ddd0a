"""A plugin module for ``oodfs bench --plugin benchmarks/whole_benchmark/replay_fits.py``: every process of
the run (the starting one and each worker, which imports the run's plugin modules) replays the fits of some
methods from another results folder instead of fitting them again; every other method is fitted, and every
downstream model trained, as usual.

The environment variable ``OODFS_REPLAY_FITS`` says what: ``{"folder": DIR, "methods": [...]}`` (JSON).
benchmarks/whole_benchmark/whole_benchmark.py sets it to replay, in a ``paper``-profile run, the methods
whose settings are the same under both profiles from the ``default``-profile run of the same suite: the data
draw does not depend on the profile, so those fits are the same (benchmarks/shared/replay.py,
``replayed_fit_method``: scores at full precision, the runner's seed). Without the variable the module does
nothing.
"""

import json
import os
import sys
from pathlib import Path

import oodfs

VARIABLE = "OODFS_REPLAY_FITS"


def _install(spec: dict) -> None:
    import oodfs.run.evaluate
    import oodfs.run.jobs
    from oodfs.results.store import load_results

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))
    from replay import replayed_fit_method

    methods = set(spec["methods"])
    stored = load_results(spec["folder"])
    replay = replayed_fit_method(stored[stored["method"].isin(methods)])

    def fit_method(suite, key, method, data):
        if method in methods:
            return replay(suite, key, method, data)
        return oodfs.run.evaluate.fit_method(suite, key, method, data)

    oodfs.run.jobs.fit_method = fit_method


if os.environ.get(VARIABLE):
    _install(json.loads(os.environ[VARIABLE]))


@oodfs.hookimpl
def oodfs_selectors():
    """No selector: the module changes how fits are made, not what is registered. The hook marks
    it as an oodfs plugin module (``--plugin`` refuses a module that implements none)."""
    return []
