"""Replaying stored fits: a suite run again with every method's fit (scores at every grid point)
read from stored results instead of refitted, so that only the downstream models are trained
(docs/PROTOCOL.md section 10, "The k grid"). A new downstream model, or a k grid, costs the
downstream step alone. benchmarks/real_data/realdata.py, benchmarks/binary/binary_results.py and
benchmarks/real_data/kgrid_cost.py use it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd


def fixed_k_block(results: pd.DataFrame) -> pd.DataFrame:
    """The rows of a k-grid run at the suite's fixed k: each method's first block of points
    (points 0..G-1, G its grid points), every yardstick row and every failed task's row (it has no
    point); what a run without the grid stores."""
    from oodfs.contract.registry import registry

    sizes = {m: len(registry().get("selector", m).grid_points()) for m in dict.fromkeys(results["method"])}
    return results[
        (results["method_kind"] == "yardstick")
        | (results["point"] < results["method"].map(sizes))
        | results["point"].isna()
    ]


def replayed_fit_method(stored: pd.DataFrame):
    """A stand-in for the runner's ``fit_method`` that returns each method's fit as ``stored`` holds
    it (a results table of the same suite: every grid point's scores, seed, diagnostics, and the
    error of a failed task) instead of fitting it again. Scores are stored at full precision, so
    the rankings and every downstream number are those a refit gives (checked on the ames quick
    run, REALDATA.md "The k grid"); the selectors are deterministic given their seeds."""
    from oodfs.contract.api import GridFit, task_ranking
    from oodfs.contract.registry import registry
    from oodfs.contract.task import env_key
    from oodfs.run.evaluate import MethodFit, method_kind, own_supports
    from oodfs.tables import fitted_features
    from oodfs.validation import OodfsError

    diagnostics = {n for n, info in registry().entries("metric").items() if info.cls.role == "diagnostic"}
    stored = stored[
        stored["downstream"].isna() | (stored["downstream"] == stored["downstream"].dropna().iloc[0])
    ]
    # a store gives a numeric r_train as read (2.5), the runner's keys as text ("2.5")
    stored = stored.assign(r_train=[r if isinstance(r, str) else env_key(r) for r in stored["r_train"]])
    tasks = {key: g for key, g in stored.groupby(["setting", "r_train", "run", "method"], sort=False)}

    def fit_method(suite, key, method, data):
        g = tasks.get((key.setting, env_key(key.r_train), key.run, method))
        if g is None:
            raise OodfsError(f"no stored fit of {method} on {key}")
        if (g["status"] != "ok").any():
            raise OodfsError(str(g["error"].dropna().iloc[0]))
        cls = registry().get("selector", method)
        points = cls.grid_points()
        first = g[g["point"] < len(points)].groupby("point", sort=True).first()
        if [json.loads(p) for p in first["params"]] != [
            json.loads(json.dumps(p, sort_keys=True)) for p in points
        ]:
            raise OodfsError(f"the stored grid of {method} is not its grid today")
        diag = g[g["metric"].isin(diagnostics) & (g["point"] < len(points))]
        fits = [
            GridFit(
                np.asarray(json.loads(first.loc[i, "scores"]), dtype=float),
                {r.metric: r.value for r in diag[diag["point"] == i].itertuples()},
            )
            for i in range(len(points))
        ]
        seed = key.seed(suite.seed, method)  # the runner's (shipped references do not store it)
        if "seed" in first and first["seed"].notna().any() and int(first["seed"].iloc[0]) != seed:
            raise OodfsError(f"the stored fit of {method} on {key} has another seed")
        fitted = fitted_features(data.X_train)
        rankings = [task_ranking(f.values, seed, i, fitted) for i, f in enumerate(fits)]
        defaults = {**cls().get_params(deep=False), **cls.profiles.get(suite.profile, {})}
        params = [{**defaults, **p} for p in points]
        return MethodFit(
            method,
            method_kind(cls),
            points,
            [bool(v) for v in first["is_default"]],
            fits,
            rankings,
            seed,
            float(first["fit_seconds"].iloc[0]),
            [],
            own_supports(cls, fits, rankings, fitted, params),
        )

    return fit_method


def replay_run(
    name: str, stored: Path, out: Path, changes: dict | None = None, suite: str | None = None
) -> float:
    """Run suite ``name`` into ``out`` as ``oodfs bench`` does (:func:`oodfs.run.bench.run_bench`),
    every method's fit replayed from the results ``stored`` (:func:`replayed_fit_method`): only
    the downstream models are trained (every model the suite declares, or those ``changes`` name as
    ``downstream``, at every size of its k grid). ``changes``: other fields of
    :class:`oodfs.run.bench.BenchOptions` (e.g. ``methods``); ``suite``: a suite file to run
    instead of the shipped suite ``name``. One process (``jobs = 1``): the stand-in lives in this
    interpreter. Returns the wall seconds."""
    import oodfs.run.jobs
    from oodfs.results.store import load_results
    from oodfs.run.bench import run_bench
    from oodfs.validation import OodfsError

    before = oodfs.run.jobs.fit_method
    oodfs.run.jobs.fit_method = replayed_fit_method(load_results(stored))
    t0 = time.perf_counter()
    quiet = dict(progress=False, notes=lambda line: None, inform=lambda line: None, show=print)
    try:
        done = run_bench(suite=suite or name, jobs=1, out=str(out), resume=True, **quiet, **(changes or {}))
        if done.status != 0:
            raise SystemExit(f"the replayed run of {name} failed")
    except OodfsError as exc:
        raise SystemExit(f"the replayed run of {name} failed: {exc}") from None
    finally:
        oodfs.run.jobs.fit_method = before
    return time.perf_counter() - t0
