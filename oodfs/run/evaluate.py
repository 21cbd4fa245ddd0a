"""What one task computes: fit every grid point of a method on a data set, then turn each point
into rows of the long results table, one per declared metric (and test environment, and k).

Fitting and evaluating are separate steps so that a job can fit all its methods first and
train every feature subset they need in one downstream call.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass

import numpy as np

from oodfs.contract.api import GridFit, WeightCollapseWarning, ranking_from_scores
from oodfs.contract.metrics import Evaluation, Metric
from oodfs.contract.registry import registry
from oodfs.contract.seeds import derive_seed
from oodfs.contract.task import DataKey, env_key
from oodfs.contract.wls import WLSSelector
from oodfs.run.dataset import DataSet, _read_only
from oodfs.run.suite import Suite
from oodfs.tabular import fitted_features


class UndeclaredDiagnosticWarning(UserWarning):
    """A method returned fit diagnostics that no plugin declares, so they are not stored."""


@dataclass
class MethodFit:
    """Every grid point of one method fitted on one data set."""

    method: str
    kind: str  # "weighter" (a weighter followed by weighted least squares) or "selector"
    points: list[dict]
    is_default: list[bool]
    fits: list[GridFit]
    rankings: list[np.ndarray]  # best first, ties broken by the task's seed
    seed: int
    fit_seconds: float


def method_kind(cls) -> str:
    return "weighter" if issubclass(cls, WLSSelector) else "selector"


def fit_method(suite: Suite, key: DataKey, method: str, data: DataSet) -> MethodFit:
    cls = registry().get("selector", method)
    points = cls.grid_points()
    default = cls.default_params()
    overrides = cls.profiles.get(suite.profile, {})  # the profile's non-grid settings
    seed = key.seed(suite.seed, method)
    t0 = time.perf_counter()
    # a feature that barely varies in the training draw (a one-hot level absent from the training
    # environment) is left out of the fit, scores 0 and ranks last, as in `oodfs select`
    # (docs/PROTOCOL.md, "Own tables"); a continuous feature is never left out
    fitted = fitted_features(data.X_train)
    X_fit = data.X_train if fitted.all() else _read_only(data.X_train[:, fitted])
    with warnings.catch_warnings():
        # a benchmark stores every fit's weight diagnostics and the leaderboard summarises them
        # ("Weight diagnostics"); a warning per grid point would bury the run's output
        warnings.simplefilter("ignore", WeightCollapseWarning)
        fits = cls.fit_grid_detailed(
            X_fit, data.y_train, [{**overrides, **p} for p in points], random_state=seed
        )
    if not fitted.all():
        for f in fits:
            values = np.zeros(fitted.size)
            values[fitted] = f.values
            f.values = values
    fit_seconds = time.perf_counter() - t0
    rankings = [ranking_from_scores(f.values, derive_seed(seed, i, "ties")) for i, f in enumerate(fits)]
    if not fitted.all():  # the left-out features after every fitted one
        rankings = [r[np.argsort(~fitted[r], kind="stable")] for r in rankings]
    return MethodFit(
        method,
        method_kind(cls),
        points,
        [p == default or not cls.grid for p in points],
        fits,
        rankings,
        seed,
        fit_seconds,
    )


def curve_ks(suite: Suite, fit: MethodFit, key: DataKey, n_features: int) -> list[int]:
    """The k of every feature subset a method's rows need: the suite's k, and 1..d on a curve."""
    k = min(suite.k, n_features)
    if fit.method in suite.curve_methods and key.r_train in suite.curve_r_train:
        return [k] + [kk for kk in range(1, n_features + 1) if kk != k]
    return [k]


def subsets_needed(fit: MethodFit, ks: list[int]) -> list[tuple[int, ...]]:
    return [tuple(r[:kk]) for r in fit.rankings for kk in ks]


def method_rows(
    fit: MethodFit,
    data: DataSet,
    downstream: dict,
    ks: list[int],
    metrics: list[Metric],
    downstream_seconds: float,
) -> list[dict]:
    """Rows of the long results table: one per grid point x metric (x test env, x k)."""
    envs = [env_key(r_te) for r_te, _, _ in data.tests]
    undeclared = sorted({key for gf in fit.fits for key in gf.diagnostics} - {m.name for m in metrics})
    if undeclared:
        warnings.warn(
            f"{fit.method}: diagnostics {', '.join(undeclared)} are not stored: no plugin declares them "
            "(declare each with oodfs.diagnostic(...) from an oodfs_metrics hook)",
            UndeclaredDiagnosticWarning,
            stacklevel=2,
        )
    features = json.dumps(list(data.feature_names))
    rows = []
    for i, (point, gf, ranking) in enumerate(zip(fit.points, fit.fits, fit.rankings)):
        base = {
            "point": i,
            "params": json.dumps(point, sort_keys=True),
            "is_default": int(fit.is_default[i]),
            "seed": fit.seed,
            "method_kind": fit.kind,
            "scores": json.dumps([float(v) for v in gf.values]),  # full precision: json round-trips floats
            "feature_names": features,
            "fit_seconds": fit.fit_seconds,
            "downstream_seconds": downstream_seconds,
        }
        for j, k in enumerate(ks):
            res = downstream[tuple(sorted(int(c) for c in ranking[:k]))]
            ev = Evaluation(
                gf.values,
                ranking,
                k,
                data.stable_set,
                res["val"],
                dict(zip(envs, res["test"])),
                gf.diagnostics,
            )
            for m in metrics:
                if j > 0 and not m.curve:  # the extra k of a curve: only curve metrics
                    continue
                value = m.compute(ev)
                if value is None:
                    continue
                items = value.items() if m.per_env else [(None, value)]
                rows += [dict(base, metric=m.name, env=env, k=k, value=float(v)) for env, v in items]
    return rows
