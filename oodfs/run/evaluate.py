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

from oodfs.contract.api import GridFit, WeightCollapseWarning, ranking_from_scores, task_ranking
from oodfs.contract.metrics import Evaluation, Metric
from oodfs.contract.registry import get_task, registry
from oodfs.contract.seeds import derive_seed
from oodfs.contract.selection import SUPPORT_PARAM
from oodfs.contract.task import DataKey, env_key
from oodfs.contract.wls import WLSSelector
from oodfs.numeric import weighted_least_squares
from oodfs.run.dataset import DataSet, _read_only
from oodfs.run.suite import SUPPORT, Suite, grid_ks, wants_support
from oodfs.tables import fitted_features
from oodfs.tables import named_columns as _named
from oodfs.validation import OodfsError, error_message


class UndeclaredDiagnosticWarning(UserWarning):
    """A method returned fit diagnostics that no plugin declares, so they are not stored."""


@dataclass
class MethodFit:
    """Every grid point of one method fitted on one data set."""

    method: str
    # "weighter" (a weighter followed by weighted least squares), "selector" or "yardstick" (a
    # reference row evaluated on every feature or none, never on the suite's k)
    kind: str
    points: list[dict]
    is_default: list[bool]
    fits: list[GridFit]
    rankings: list[np.ndarray]  # best first, ties broken by the task's seed
    seed: int
    fit_seconds: float
    #: with several training environments: per held-out environment, the rankings of every
    #: point refitted without it (None where the method cannot be refitted: a label-using
    #: method left with one environment); empty with one training environment
    loeo_rankings: list = None
    #: per grid point, the method's own selected set (the top of its ranking, best first; None
    #: where it is empty), or None for a method that yields no set (:func:`own_supports`)
    supports: list | None = None


def method_kind(cls) -> str:
    if cls.yardstick is not None:
        return "yardstick"
    return "weighter" if issubclass(cls, WLSSelector) else "selector"


def yardstick_k(method: str, n_features: int) -> int | None:
    """The number of features a yardstick is evaluated on ("all": every one); None for a method."""
    kind = registry().get("selector", method).yardstick
    if kind is None:
        return None
    return n_features if kind == "all" else int(kind)


def fit_method(suite: Suite, key: DataKey, method: str, data: DataSet) -> MethodFit:
    cls = registry().get("selector", method)
    points = cls.grid_points()
    default = cls.default_params()
    overrides = cls.profiles.get(suite.profile, {})  # the profile's non-grid settings
    seed = key.seed(suite.seed, method)
    full = [{**overrides, **p} for p in points]
    task = suite.task or "regression"
    uses_groups = cls.uses_groups
    if uses_groups and data.groups_train is None:
        raise OodfsError(
            f"method {method!r} learns from environment labels, but r_train {key.r_train!r} is one "
            "environment"
        )
    # label-free methods never receive the labels (docs/PROTOCOL.md, "Several training environments")
    labels = {"groups": data.groups_train} if uses_groups else {}
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
        try:
            fits = cls.fit_grid_detailed(X_fit, data.y_train, full, random_state=seed, task=task, **labels)
        except Exception as exc:
            if fitted.all():
                raise
            # the method saw the fitted columns only: its "column 3" is the 4th of those
            names = [name for name, keep in zip(data.feature_names, fitted) if keep]
            raise OodfsError(_named(error_message(exc), names)) from exc
        fits = _padded(fits, fitted)
        fit_seconds = time.perf_counter() - t0
        if data.groups_train is not None:
            loeo = _leave_one_out_rankings(cls, data, X_fit, fitted, full, seed, task)
        else:
            loeo = []
    rankings = [task_ranking(f.values, seed, i, fitted) for i, f in enumerate(fits)]
    return MethodFit(
        method,
        method_kind(cls),
        points,
        [p == default or not cls.grid for p in points],
        fits,
        rankings,
        seed,
        fit_seconds,
        loeo,
        own_supports(cls, fits, rankings, fitted, [{**cls().get_params(deep=False), **p} for p in full]),
    )


def own_supports(cls, fits: list, rankings: list, fitted: np.ndarray, params: list[dict]) -> list | None:
    """Per grid point, the set the method itself selects (:meth:`oodfs.Selector.own_support`) among
    the fitted features, as the top of the point's ranking (best first), None where it is empty
    (an empty set is the `mean` yardstick, not a selection); None for a method that declares no
    support (docs/PROTOCOL.md section 10, "The k grid")."""
    if not cls.has_support():
        return None
    out = []
    for f, ranking, p in zip(fits, rankings, params):
        mask = np.asarray(cls.own_support(f.values, f.diagnostics, p), dtype=bool) & fitted
        size = int(mask.sum())
        top = ranking[:size]
        if not mask[top].all():
            raise OodfsError(
                f"{cls.name}: its own support is not the top {size} of its scores; own_support must "
                "return features that score above every other"
            )
        out.append(tuple(int(c) for c in top) if size else None)
    return out


def _padded(fits: list, fitted: np.ndarray) -> list:
    """Scores of the fitted columns spread over every feature, 0 for those left out."""
    if not fitted.all():
        for f in fits:
            values = np.zeros(fitted.size)
            values[fitted] = f.values
            f.values = values
    return fits


def _leave_one_out_rankings(
    cls, data: DataSet, X_fit, fitted, points: list[dict], seed: int, task: str = "regression"
) -> list:
    """For each training environment e, every point refitted on the training rows of the other
    environments (DomainBed's leave-one-domain-out; docs/PROTOCOL.md, "Several training environments")."""
    uses_groups = cls.uses_groups
    out = []
    for e in range(len(data.train_envs)):
        keep = data.groups_train != e
        groups = data.groups_train[keep]
        if uses_groups and len(np.unique(groups)) < 2:
            out.append(None)  # one environment left: a label-using method cannot be refitted
            continue
        labels = {"groups": groups} if uses_groups else {}
        fits = cls.fit_grid_detailed(
            X_fit[keep],
            data.y_train[keep],
            points,
            random_state=derive_seed(seed, "loeo", e),
            task=task,
            **labels,
        )
        fits = _padded(fits, fitted)
        out.append(
            [
                ranking_from_scores(f.values, derive_seed(seed, i, "ties", "loeo", e))
                for i, f in enumerate(fits)
            ]
        )
    return out


def point_ks(suite: Suite, fit: MethodFit, n_features: int) -> list:
    """The set sizes a method's grid points are evaluated at, the suite's k first
    (:func:`oodfs.run.suite.grid_ks`), then "support" where the suite asks for the method's own
    support and the method has one; a yardstick's own k (every feature, or none)."""
    if fit.kind == "yardstick":
        return [yardstick_k(fit.method, n_features)]
    own = [SUPPORT] if wants_support(suite) and fit.supports is not None else []
    return grid_ks(suite, n_features) + own


def curve_ks(suite: Suite, fit: MethodFit, key: DataKey, n_features: int) -> list[int]:
    """The extra k of a curve (1..d, for the suite's curve methods and r_train); else none."""
    if fit.kind != "yardstick" and fit.method in suite.curve_methods and key.r_train in suite.curve_r_train:
        return list(range(1, n_features + 1))
    return []


def subsets_needed(fit: MethodFit, ks: list) -> list[tuple[int, ...]]:
    """Every subset the downstream models train for ``fit`` at the sizes ``ks`` ("support": each
    point's own support, where it has one)."""
    sizes = [kk for kk in ks if kk != SUPPORT]
    own = [s for s in fit.supports or () if s is not None] if SUPPORT in ks else []
    return [tuple(r[:kk]) for r in fit.rankings for kk in sizes] + own


def leave_one_out_loss(
    fits: dict,
    data: DataSet,
    k: int,
    seed: int,
    profile: str,
    task: str | None = "regression",
    caches: dict | None = None,
) -> dict:
    """``{method: [value per point]}``: the mean over training environments e of the downstream
    validation loss of the task (RMSE; log-loss for binary) in e (all its rows) of the MLP trained
    on the other environments' training rows, on the top-k features of the point refitted without
    e; None where a refit is missing. Each held-out environment's subsets are trained in one call
    (docs/PROTOCOL.md, "Several training environments"). ``caches``: a dict kept across calls on
    the same data set and seed (``{environment: its cache}``), so that a subset trained for one
    call is taken by the next (the same numbers)."""
    from oodfs.run.downstream_models import DownstreamCache

    task = task or "regression"
    loss = get_task(task).validation_loss
    results = []
    for e in range(len(data.train_envs)):
        wanted = [
            tuple(r[:k])
            for f in fits.values()
            if f.loeo_rankings and f.loeo_rankings[e] is not None
            for r in f.loeo_rankings[e]
        ]
        if not wanted:
            results.append({})
            continue
        cache = (caches or {}).get(e)
        if cache is None:
            keep = data.groups_train != e
            X_e, y_e = data.environment_rows(e)
            held_out = DataSet(
                data.X_train[keep],
                data.y_train[keep],
                None,
                None,
                ((data.train_envs[e], X_e, y_e),),
                data.stable_set,
                data.feature_names,
            )
            cache = DownstreamCache.for_profile(held_out, derive_seed(seed, "loeo", e), profile, task=task)
            if caches is not None:
                caches[e] = cache
        results.append(cache.evaluate(wanted))
    out = {}
    for method, f in fits.items():
        values = []
        for i in range(len(f.points)):
            per_env = []
            for res, rankings in zip(results, f.loeo_rankings or []):
                if rankings is None:
                    break
                per_env.append(float(res[tuple(sorted(int(c) for c in rankings[i][:k]))]["test"][loss][0]))
            values.append(float(np.mean(per_env)) if results and len(per_env) == len(results) else None)
        out[method] = values
    return out


def ols_coefficients(X: np.ndarray, y: np.ndarray, columns) -> np.ndarray:
    """The coefficients of OLS (with intercept) on ``columns`` of the training data, 0 for every
    other column: the β̂ of the β errors (docs/PROTOCOL.md, "Metrics")."""
    coef = np.zeros(X.shape[1])
    columns = np.asarray(columns, dtype=int)
    if columns.size:
        coef[columns] = weighted_least_squares(X[:, columns], y, strict=False)
    return coef


def method_rows(
    fit: MethodFit,
    data: DataSet,
    downstream: dict,
    ks: list,
    metrics: list[Metric],
    downstream_seconds: float,
    loeo: list | None = None,
    task: str | None = "regression",
    curve: list[int] = (),
) -> list[dict]:
    """Rows of the long results table: one per grid point x set size x metric (x test env), each
    with the feature subset it was computed on (``subset``, best first). ``ks``: the set sizes
    (:func:`point_ks`): grid point ``i`` at the ``j``-th size is stored as point ``j * len(points)
    + i`` with ``k`` = that size, default only at the first size (docs/PROTOCOL.md section 10,
    "The k grid"); "support" (the last entry): each grid point at its own support, its params marked
    ``{"size": "support"}``, none for a point whose support is empty. ``curve``: extra sizes at which
    the curve metrics alone are stored.
    ``loeo``: per size, each grid point's leave-one-environment-out loss
    (:func:`leave_one_out_loss`), or None."""
    task_type = get_task(task or "regression")
    loss = task_type.validation_loss
    metrics = [m for m in metrics if m.applies_to(task_type.name)]
    envs = [env_key(r_te) for r_te in data.test_envs]
    train_envs = [env_key(r) for r in data.train_envs]
    undeclared = sorted({key for gf in fit.fits for key in gf.diagnostics} - {m.name for m in metrics})
    if undeclared:
        warnings.warn(
            f"{fit.method}: diagnostics {', '.join(undeclared)} are not stored: no plugin declares them "
            "(declare each with oodfs.diagnostic(...) from an oodfs_metrics hook)",
            UndeclaredDiagnosticWarning,
            stacklevel=2,
        )
    features = json.dumps(list(data.feature_names))
    n_points = len(fit.points)
    rows = []
    for block, block_k in enumerate(ks):
        block_loeo = loeo[block] if loeo is not None and block < len(loeo) else None
        for i, (point, gf, ranking) in enumerate(zip(fit.points, fit.fits, fit.rankings)):
            point_k, block_curve = block_k, curve
            if block_k == SUPPORT:  # the point's own support: its size, no curve (stored once per size)
                if fit.supports is None or fit.supports[i] is None:
                    continue
                point_k, block_curve = len(fit.supports[i]), ()
                point = {**point, SUPPORT_PARAM[0]: SUPPORT_PARAM[1]}
            base = {
                "point": block * n_points + i,
                "params": json.dumps(point, sort_keys=True),
                "is_default": int(fit.is_default[i] and block == 0),
                "seed": fit.seed,
                "method_kind": fit.kind,
                "scores": json.dumps([float(v) for v in gf.values]),  # full precision: json round-trips
                "feature_names": features,
                "fit_seconds": fit.fit_seconds,
                "downstream_seconds": downstream_seconds,
            }
            for j, k in enumerate([point_k] + [kk for kk in block_curve if kk != point_k]):
                res = downstream[tuple(sorted(int(c) for c in ranking[:k]))]
                environments, per_train_env = {}, {}
                if j == 0 and "val_envs" in res:  # environment-aware selection values, at the point's k
                    environments[task_type.metric("train_domain")] = float(np.mean(res["val_envs"][loss]))
                    per_train_env = {
                        env: {score: float(v[e]) for score, v in res["val_envs"].items()}
                        for e, env in enumerate(train_envs)
                    }
                if j == 0 and block_loeo is not None and block_loeo[i] is not None:
                    environments[task_type.metric("loeo")] = block_loeo[i]
                coef = None
                if j == 0 and data.true_coef is not None and task_type.name == "regression":  # β errors, at k
                    coef = ols_coefficients(data.X_train, data.y_train, ranking[:k])
                ev = Evaluation(
                    gf.values,
                    ranking,
                    k,
                    data.stable_set,
                    res["val"],
                    {env: {score: v[e] for score, v in res["test"].items()} for e, env in enumerate(envs)},
                    gf.diagnostics,
                    environments,
                    coef,
                    data.true_coef,
                    task_type.name,
                    per_train_env,
                    # with a feature shift: the scores on the shifted test rows (docs/PROTOCOL.md)
                    {env: {score: v[e] for score, v in res["fshift"].items()} for e, env in enumerate(envs)}
                    if "fshift" in res
                    else {},
                )
                subset = json.dumps([int(c) for c in ranking[:k]])
                for m in metrics:
                    if j > 0 and not m.curve:  # the extra k of a curve: only curve metrics
                        continue
                    if m.needs_stable_set and fit.kind == "yardstick":  # it ranks nothing
                        continue
                    value = m.compute(ev)
                    if value is None:
                        continue
                    items = value.items() if m.per_env else [(None, value)]
                    rows += [
                        dict(base, metric=m.name, env=env, k=k, value=float(v), subset=subset)
                        for env, v in items
                    ]
    return rows
