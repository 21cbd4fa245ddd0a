"""The `oodfs select` use case: rank the features of the user's own table with any selector.

:func:`rank_features` reads and prepares the table (:mod:`oodfs.tables`), fits the selector (in a
forked child, as ``oodfs bench`` fits a method), ranks and selects the features, optionally ranks
the original variables (:func:`rank_variables`) and evaluates the selection downstream on held-out
environments (:func:`evaluate_selection`), and returns a :class:`FeatureRanking`: the ranking and
what was done, with its own JSON form. Its options are one frozen :class:`RankOptions`.
The target decides the task (:func:`oodfs.tables.target_task`: two levels make it binary, and the
method then runs its classification form); the rows it is fitted on are checked for leaks
(:mod:`oodfs.tables.leaks`); docs/PROTOCOL.md section 17.
Features are standardised (mean 0, sd 1 over the rows used) before fitting unless
``standardize_features=False``: the coefficient-based scores (ols, lasso, dwr, srdo) are on the
raw feature scale, so without this a feature measured in square feet would outrank one counted in
bathrooms for its units alone. With ``env_column`` and ``train_envs`` only the rows of those
environments are used to fit.
"""

from __future__ import annotations

import inspect
import os
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from oodfs.contract.api import WeightCollapseWarning, check_scores, ranking_from_scores, support_mask
from oodfs.contract.env_weights import EnvWeighting, check_env_weighting, check_min_env_rows
from oodfs.contract.task import env_sort_key
from oodfs.numeric import constant_columns, sample_probabilities
from oodfs.tables.names import named_columns, short_list
from oodfs.tables.prepare import MAX_LEVELS, MIN_LEVEL_ROWS, fitted_features, make_scaler, prepare_table
from oodfs.tables.read import TableWarning, _as_frame, _one_line
from oodfs.tables.target import TASKS, TargetTask, binary_column, level_text, target_task
from oodfs.validation import OodfsError, RunAborted, check_param

#: how ``group_levels`` turns the scores of a variable's levels into the variable's score
GROUP_AGGREGATES = ("max", "sum")
#: the built-in downstream models of ``evaluate`` (the downstream registry's; any registered model
#: that predicts the task is valid): mlp, ridge and gbm for regression, mlp, logistic and gbm for binary
DOWNSTREAM_MODELS = ("mlp", "ridge", "gbm", "logistic")
#: the yardstick with no feature in ``evaluate``, per task: the training mean, the training base rate
NO_FEATURE_YARDSTICK = {"regression": "mean", "binary": "prior"}
#: the largest |value| a selector is handed (features as fitted, and the target): the float32
#: limit, since tree ensembles (rf, gb, xgb) and torch models compute in 32-bit floats and turn
#: larger values into inf; standardised features are always far below it
MAX_ABS_VALUE = float(np.finfo(np.float32).max)
#: valid random seeds: what numpy and scikit-learn accept as an integer ``random_state``
MAX_SEED = 2**32 - 1


# -- ranking -------------------------------------------------------------------------------
def _selector_params(cls, params: dict | None) -> dict:
    params = dict(params or {})
    valid = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "k", "random_state")]
    for reserved, flag in (("k", "top_k (--top-k)"), ("random_state", "random_state (--seed)")):
        if reserved in params:
            raise OodfsError(f"set {reserved!r} through {flag}, not as a selector parameter")
    unknown = [p for p in params if p not in valid]
    if unknown:
        raise OodfsError(
            f"selector {cls.name!r} has no parameter {unknown[0]!r}; "
            f"valid: {', '.join(valid) if valid else '(none)'}"
        )
    for name, value in params.items():  # alpha=true is not a number
        check_param(f"selector {cls.name!r}", name, value, _init_default(cls, name, None))
    return params


def _init_default(cls, name: str, fallback):
    p = inspect.signature(cls.__init__).parameters.get(name)
    return fallback if p is None or p.default is inspect.Parameter.empty else p.default


def _check_seed(random_state) -> int:
    if (
        isinstance(random_state, (bool, np.bool_))
        or not isinstance(random_state, (int, np.integer))
        or not 0 <= random_state <= MAX_SEED
    ):
        raise OodfsError(
            f"random_state (--seed) must be an integer from 0 to {MAX_SEED}, got {random_state!r}"
        )
    return int(random_state)


def _check_magnitude(X: np.ndarray, y: np.ndarray, names: list[str], target) -> None:
    big = [names[j] for j in np.nonzero(np.abs(X).max(axis=0) > MAX_ABS_VALUE)[0]]
    if big:
        raise OodfsError(
            f"feature column(s) {short_list(big)} have values beyond +-{MAX_ABS_VALUE:.3g}, "
            "which selectors computing in 32-bit floats (trees, xgb, neural nets) turn into inf; "
            "standardise them (drop --no-standardize) or rescale them"
        )
    if np.abs(y).max() > MAX_ABS_VALUE:
        raise OodfsError(
            f"target column {target!r} has values beyond +-{MAX_ABS_VALUE:.3g}, which selectors "
            "computing in 32-bit floats turn into inf; rescale it (e.g. to other units or its log)"
        )


def _fit_scores(
    cls,
    kwargs: dict,
    X: np.ndarray,
    y: np.ndarray,
    names: list[str],
    method: str,
    isolate: bool,
    labels: dict | None = None,
):
    """(scores, the parameters used): the selector fitted in a forked child (as ``bench`` fits
    a method: a plugin that exits or crashes gives one line), or here with ``isolate=False``.
    ``labels``: ``{"groups": environment per row}`` for a method that learns from them."""

    def fit():
        selector = cls(**kwargs)
        try:
            # a DataFrame, so that a selector that keeps feature names (feature_names_in_) has them
            selector.fit(pd.DataFrame(X, columns=names), y, **(labels or {}))
        except OodfsError as exc:
            return "refused", str(exc)
        except (ValueError, ArithmeticError) as exc:  # numbers the selector's library refused
            return "failed", _one_line(exc)
        except MemoryError as exc:  # numpy's "Unable to allocate ..." names what it asked for
            return "out of memory", _one_line(exc)
        used = {p: v for p, v in selector.get_params(deep=False).items() if p not in ("k", "random_state")}
        if getattr(selector, "scores_", None) is None:
            return "refused", f"selector {method!r} set no scores_ in fit"
        try:  # a plugin that overrides fit() sets scores_ itself: one per feature, finite
            scores = check_scores(selector.scores_, len(names), f"selector {method!r}")
            return "ok", (scores, used, _fit_diagnostics(selector), _flat_under_weights(selector, X, scores))
        except (OodfsError, TypeError) as exc:
            return "refused", str(exc)

    def quiet_fit():
        # a collapse is one note with what to try (:func:`collapse_note`, from the fit's diagnostics),
        # not the weighter's warning besides it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", WeightCollapseWarning)
            return fit()

    if isolate and hasattr(os, "fork"):
        from oodfs.run.executors.isolation import call_isolated

        try:
            status, result = call_isolated(quiet_fit)
        except OodfsError as exc:  # the child died, exited or raised something else
            raise RunAborted(f"selector {method!r} failed: {exc}") from None
    else:
        status, result = quiet_fit()
    if status == "refused":
        raise OodfsError(named_columns(result, names))
    if status == "failed":
        raise OodfsError(f"selector {method!r} cannot rank this table: {named_columns(result, names)}")
    if status == "out of memory":
        n, d = X.shape
        raise OodfsError(
            f"selector {method!r} ran out of memory fitting n = {n:,} rows x d = {d} features ({result}); "
            "use fewer rows or features (--train-envs, --drop) or a method that needs less memory "
            "(`oodfs plugins` lists each method's largest measured size)"
        )
    return result


def _flat_under_weights(selector, X: np.ndarray, scores: np.ndarray) -> list[int]:
    """The features scored exactly 0 that are constant among the rows the selector's learned
    weights keep (``weights_``: DWR, SRDO and every weighter-made selector), as indices: a
    collapsed weighting puts no mass on the rows where a rare 0/1 column differs."""
    w = getattr(selector, "weights_", None)
    zero = np.flatnonzero(scores == 0)
    if w is None or not zero.size:
        return []
    w = np.asarray(w, dtype=float)
    if w.shape != (X.shape[0],) or not np.isfinite(w).all() or w.sum() <= 0:
        return []
    Xz = np.asarray(X, dtype=float)[:, zero]
    p = sample_probabilities(w, X.shape[0])
    return [int(j) for j in zero[constant_columns(Xz - p @ Xz, Xz, p)]]


#: why a built-in selector scores a fitted feature exactly 0 (docs/PROTOCOL.md section 8, "get_support")
ZERO_SCORE_WHY = {
    "lasso": "its L1 penalty set their coefficients to 0",
    "mi": "no dependence on the target was found (mutual information is clipped at 0)",
    "rf": "no tree split on them",
    "gb": "no tree split on them",
    "xgb": "no tree split on them",
}


def zero_score_notes(method: str, names: list[str], scores: np.ndarray, flat: list[int]) -> list[str]:
    """A note naming every fitted feature ``method`` scored exactly 0 (never selected) and why:
    constant among the rows its learned weights keep (``flat``), or the method's own reason."""
    zero = [j for j in np.flatnonzero(np.asarray(scores) == 0)]
    if not zero:
        return []
    weighted = [names[j] for j in zero if j in set(flat)]
    other = [names[j] for j in zero if j not in set(flat)]
    notes = []
    if weighted:
        notes.append(
            f"{method} scored {_features(weighted)} exactly 0, never selected: constant among the rows its "
            "learned weights keep (the weights put no mass on the rows where they differ)"
        )
    if other:
        why = ZERO_SCORE_WHY.get(method, "the method gave them no importance")
        notes.append(f"{method} scored {_features(other)} exactly 0, never selected: {why}")
    return notes


def _features(names: list[str]) -> str:
    """``3 features ('a', 'b', 'c')``: the count, then the names (the first few of many)."""
    return f"{len(names)} feature{'s' * (len(names) != 1)} ({short_list(names)})"


def collapse_note(cls, method: str, diagnostics: dict, n: int) -> str | None:
    """One line when the fit's learned weights collapsed (effective sample size below the
    weighter's ``collapse_ess_fraction`` of the rows): the size, and what to try."""
    ess, fraction = diagnostics.get("ess"), diagnostics.get("ess_fraction")
    weighter = getattr(cls, "weighter_class", None)
    bar = getattr(weighter, "collapse_ess_fraction", None)
    if ess is None or fraction is None or bar is None or fraction >= bar:
        return None
    other = "srdo (its weights are clipped)" if method != "srdo" else "dwr"
    return (
        f"{method}'s weights collapsed: effective sample size {ess:.1f} of {n} rows ({100 * fraction:.1f} %, "
        f"below {100 * bar:g} %), so the ranking rests on a few rows; try {other}, fewer features "
        "(--drop rare 0/1 columns and one-hot levels, which drive the collapse), or more rows (more "
        "--train-envs)"
    )


def _fit_diagnostics(selector) -> dict:
    """What the fit reports about itself, as plain numbers: a weighter's diagnostics behind a
    weighted selector (``weight_diagnostics_``), else the selector's own (``diagnostics_``)."""
    found = getattr(selector, "weight_diagnostics_", None) or getattr(selector, "diagnostics_", None)
    plain = {}
    for name, value in (found if isinstance(found, dict) else {}).items():
        if isinstance(value, (bool, np.bool_)):
            plain[str(name)] = bool(value)
        elif isinstance(value, (int, float, np.integer, np.floating)) and np.isfinite(value):
            plain[str(name)] = float(value)
    return plain


def suspect_notes(method: str, diagnostics: dict, skip=()) -> list[str]:
    """A sentence per declared suspect rule (:class:`oodfs.contract.metrics.SuspectRule`) the fit's
    diagnostics meet: the same rules that mark a method in the leaderboard, compare and the page.
    ``skip``: names of diagnostics already said in another note."""
    from oodfs.contract.registry import registry

    frame = pd.DataFrame([diagnostics], dtype=float)
    notes = []
    for entry in registry().entries("metric").values():
        metric = entry.cls
        if metric.name in skip:
            continue
        values = None if metric.suspect is None else metric.suspect.values(frame, metric.name)
        if values is not None and bool(metric.suspect.flags(values).iloc[0]):
            notes.append(
                f"{method}'s fit is suspect: {metric.suspect.note} ({metric.name} {values.iloc[0]:.3g}); "
                "the ranking is what the fit gives, but read it with care"
            )
    return notes


def rank_variables(
    ranking: pd.DataFrame, variables: dict, k: int, aggregate: str = "max", random_state: int = 0
) -> pd.DataFrame:
    """Rank the original variables of a feature ranking and select whole variables.

    ``ranking`` has columns ``feature``, ``score`` and ``fitted`` (False: left out of the fit);
    ``variables`` maps each feature to its variable (``kind=house`` -> ``kind``). A variable's
    score is the largest score of its levels (``aggregate="max"``: a variable matters as much
    as its most important level, whatever its number of levels) or their sum (``"sum"``, as
    tree importances add up; it favours variables with many levels). The top ``k`` variables
    with a score above 0 are selected (ties in a seeded order). Returns ``(rank, variable,
    score, selected, features)``, best first.
    """
    if aggregate not in GROUP_AGGREGATES:
        raise OodfsError(f"group_levels must be one of {', '.join(GROUP_AGGREGATES)}, got {aggregate!r}")
    by_var: dict[str, list] = {}
    for r in ranking.itertuples():
        by_var.setdefault(variables[r.feature], []).append(r)
    names = list(by_var)
    scores = np.array([getattr(np, aggregate)([r.score for r in by_var[v]]) for v in names], dtype=float)
    fitted = np.array([any(r.fitted for r in by_var[v]) for v in names])
    if not 1 <= k <= len(names):
        raise OodfsError(f"top_k must be between 1 and the number of variables ({len(names)}), got {k}")
    order = _order(scores, fitted, random_state)
    selected = support_mask(np.where(fitted, scores, 0.0), order[fitted[order]], k) & fitted
    return pd.DataFrame(
        {
            "rank": np.arange(1, len(names) + 1),
            "variable": [names[j] for j in order],
            "score": scores[order],
            "selected": selected[order],
            "features": [[r.feature for r in by_var[names[j]]] for j in order],
        }
    )


def _order(scores: np.ndarray, fitted: np.ndarray, random_state: int) -> np.ndarray:
    """Best first, ties in a seeded order (as :func:`oodfs.ranking_from_scores`), every feature
    left out of the fit after every fitted one."""
    ranking = ranking_from_scores(scores, random_state)
    return ranking[np.argsort(~fitted[ranking], kind="stable")]


def evaluate_selection(
    X: np.ndarray,
    y: np.ndarray,
    env: np.ndarray,
    train_envs,
    selected,
    downstream: str = "mlp",
    random_state: int = 0,
    task: str = "regression",
) -> pd.DataFrame:
    """The downstream scores on each held-out environment of a model trained on the rows of
    ``train_envs`` with the ``selected`` columns (a mask or indices), of one with every column
    (the ``all_features`` yardstick), and of the training mean (regression's ``mean``; a binary
    target's base rate, the ``prior`` yardstick). ``downstream``: a registered downstream model
    that predicts ``task`` (:mod:`oodfs.run.downstream_models`: mlp, ridge, gbm for regression;
    mlp, logistic, gbm for binary), with its default settings. ``X`` is used as given (standardise
    it as the selector saw it). Returns one row per held-out environment in natural order:
    ``env``, ``rows`` (and ``positives`` for binary), then ``<score>_selected``, ``<score>_all``
    and ``<score>_<yardstick>`` for every score of the task type (regression: ``rmse_selected``,
    ``rmse_all``, ``rmse_mean``; binary: log_loss, brier, accuracy, auc with ``_prior``)."""
    from oodfs.contract.registry import get_task
    from oodfs.run.downstream_models import get_model, score_subsets

    task_type = get_task(task)
    model = get_model(downstream, task_type.name)
    env = np.asarray(env).astype(str)
    train = np.isin(env, [str(e) for e in train_envs])
    # in their natural order (docs/PROTOCOL.md section 8: numbers by value, bins by their first number)
    held_out = sorted((e for e in dict.fromkeys(env) if e not in set(env[train])), key=env_sort_key)
    if not held_out:
        raise OodfsError("nothing to evaluate on: every environment is a training environment (--train-envs)")
    subsets = [tuple(range(X.shape[1])), ()]
    whos = ["all", NO_FEATURE_YARDSTICK.get(task_type.name, "mean")]
    if selected is not None:  # None: every feature kept, no selection to score (docs/PROTOCOL.md section 8)
        selected = np.asarray(selected)
        cols = np.flatnonzero(selected) if selected.dtype == bool else np.asarray(selected, dtype=int)
        if cols.size == 0:
            raise OodfsError("no feature is selected (every score is 0), so there is nothing to evaluate")
        subsets.insert(0, tuple(sorted(int(j) for j in cols)))
        whos.insert(0, "selected")
    tests = [(X[env == e], y[env == e]) for e in held_out]
    scored = score_subsets(model, X[train], y[train], subsets, random_state, tests, task_type.name)
    out = {"env": held_out, "rows": [len(t[1]) for t in tests]}
    if task_type.name == "binary":
        out["positives"] = [int(t[1].sum()) for t in tests]
    for score in task_type.scores:
        for i, who in enumerate(whos):
            out[f"{score}_{who}"] = [float(s[score][i]) for s in scored]
    return pd.DataFrame(out)


def evaluated(evaluation: pd.DataFrame, task: str = "regression") -> tuple[str, ...]:
    """Who an evaluation scored, in its order: ``selected`` (absent when nothing was selected
    away), ``all`` and the yardstick with no feature."""
    from oodfs.contract.registry import get_task

    yardstick = NO_FEATURE_YARDSTICK.get(get_task(task).name, "mean")
    score = get_task(task).validation_loss
    return tuple(w for w in ("selected", "all", yardstick) if f"{score}_{w}" in evaluation)


def summarize_evaluation(
    evaluation: pd.DataFrame, task: str = "regression", weighting: EnvWeighting | None = None
) -> pd.DataFrame:
    """Each score of :func:`evaluate_selection` over the held-out environments: rows ``(score,
    statistic)`` with statistic mean, sd (ddof 0) and worst (the largest loss, the smallest
    accuracy or AUC), columns ``selected``, ``all`` and the yardstick; an environment where a score
    is undefined (AUC with one class) is left out of that score's statistics. No column is marked
    best: a spread (sd) ranks nothing, and the mean of the validation loss is what to read.
    ``weighting``: how the environments count (:class:`oodfs.contract.env_weights.EnvWeighting`;
    default: each once, none left out), by their ``rows``."""
    from oodfs.contract.registry import get_task

    task_type = get_task(task)
    whos = evaluated(evaluation, task)
    rows = []
    if weighting is not None and not weighting.is_default:
        n = evaluation["rows"].to_numpy(dtype=float)
        for score in task_type.scores:
            lower = task_type.lower_is_better[score]
            by_who = {w: weighting.summarize(evaluation[f"{score}_{w}"], n, lower) for w in whos}
            for stat, name in (("mean", "mean"), ("std", "sd"), ("worst", "worst")):
                rows.append({"score": score, "statistic": name, **{w: by_who[w][stat] for w in whos}})
        return pd.DataFrame(rows)
    for score in task_type.scores:
        values = evaluation[[f"{score}_{w}" for w in whos]].to_numpy(dtype=float)
        worst = np.nanmax if task_type.lower_is_better[score] else np.nanmin
        defined = ~np.isnan(values).all(axis=1)
        v = values[defined]
        none = np.full(len(whos), np.nan)
        for stat, row in (
            ("mean", v.mean(axis=0) if len(v) else none),
            ("sd", v.std(axis=0) if len(v) else none),
            ("worst", worst(v, axis=0) if len(v) else none),
        ):
            rows.append({"score": score, "statistic": stat, **dict(zip(whos, row))})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class RankOptions:
    """How :func:`rank_features` prepares the table, fits the selector and checks the selection
    (``oodfs select``'s options).

    Preparing (:func:`oodfs.tables.prepare_table`): ``categorical``, ``categorical_columns``,
    ``drop``, ``keep``, ``dates``, ``dropna``, ``max_levels``, ``target_transform``.
    ``env_column``: a column of environment labels, never used as a feature. ``train_envs``:
    labels (compared as text) whose rows alone are used to fit; needs ``env_column``.
    ``params``: the selector's parameters (``oodfs plugins`` lists selectors; see their
    docstrings). ``random_state``: an integer from 0 to 2**32 - 1. Features are standardised over
    the rows used unless ``standardize_features=False``. A feature with fewer than
    ``min_level_rows`` of the rows used off its most common value is left out of the fit, scored 0
    and ranked last (:func:`oodfs.tables.fitted_features`). ``top_k``: how many to select
    (default: the selector's own default ``k``, usually 5, at most the number of features).
    ``group_levels`` (``"max"`` or ``"sum"``): rank the original variables too
    (:func:`rank_variables`; ``top_k`` then counts variables, and a feature is selected when its
    variable is). ``evaluate``: the downstream scores on every environment not in ``train_envs``
    (:func:`evaluate_selection`, model ``downstream``). ``isolate``: fit the selector in a forked
    child process. ``task``: None (a target with two levels is binary, else regression),
    ``"regression"`` or ``"binary"``; ``positive``: a binary target's positive level
    (:func:`oodfs.tables.target_task`). ``check_leaks``: the leak notes, and for a binary target the
    refusal of a feature that alone separates the classes unless its column is in ``keep``
    (:mod:`oodfs.tables.leaks`).
    ``check_memory``: refuse, before fitting, a fit whose estimated peak memory exceeds what the
    machine has available (:func:`check_fit_memory`).
    """

    top_k: int | None = None
    env_column: object = None
    train_envs: object = None
    params: dict | None = None
    random_state: int = 0
    categorical: str = "onehot"
    drop: tuple = ()
    standardize_features: bool = True
    max_levels: int = MAX_LEVELS
    categorical_columns: tuple = ()
    keep: tuple = ()
    dates: str = "refuse"
    dropna: object = None
    target_transform: object = None
    min_level_rows: int = MIN_LEVEL_ROWS
    group_levels: str | None = None
    evaluate: bool = False
    downstream: str = "mlp"
    isolate: bool = True
    task: str | None = None
    positive: object = None
    check_leaks: bool = True
    check_memory: bool = True
    #: with ``evaluate``: how the held-out environments count in the mean, sd and worst over them
    #: (:class:`oodfs.contract.env_weights.EnvWeighting`; docs/PROTOCOL.md section 3, "Weighting the
    #: test environments")
    env_weighting: str = "equal"
    min_env_rows: int | None = None

    @property
    def weighting(self) -> EnvWeighting:
        return EnvWeighting(
            check_env_weighting(self.env_weighting, "env_weighting (--env-weighting)"),
            check_min_env_rows(self.min_env_rows, "min_env_rows (--min-env-rows)"),
        )

    def checked(self) -> RankOptions:
        """These options with the seed checked, or an OodfsError naming the option (and its flag)."""
        random_state = _check_seed(self.random_state)
        m = self.min_level_rows
        if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer)) or m < 1:
            raise OodfsError(f"min_level_rows (--min-level-rows) must be a positive integer, got {m!r}")
        if self.task not in (None, *TASKS):
            raise OodfsError(f"task (--task) must be one of {', '.join(TASKS)}, got {self.task!r}")
        if self.task is not None:  # else checked once the target has said which task it is
            _check_downstream(self.downstream, self.task)
        if self.group_levels is not None and self.group_levels not in GROUP_AGGREGATES:
            raise OodfsError(
                f"group_levels (--group-levels) must be one of {', '.join(GROUP_AGGREGATES)}, "
                f"got {self.group_levels!r}"
            )
        self.weighting  # noqa: B018 (checks both options)
        return replace(self, random_state=random_state)

    def check_environments(self) -> None:
        if self.train_envs is not None and self.env_column is None:
            raise OodfsError("train_envs (--train-envs) needs env_column (--env-column)")
        if self.evaluate and (self.env_column is None or self.train_envs is None):
            raise OodfsError(
                "evaluate (--evaluate) needs env_column (--env-column) and train_envs (--train-envs): "
                "the selection is checked on the other environments"
            )


@dataclass(frozen=True)
class FeatureRanking:
    """What :func:`rank_features` found and did.

    ``ranking``: columns ``rank`` (1 = most important), ``feature``, ``score`` (the selector's
    score, higher = more important) and ``selected``, best first; ``selected`` marks the top
    ``top_k`` among the features with a score above 0 (a feature the method gave 0 is never
    selected, so fewer than ``top_k`` may be). ``variables``: the ranking of the original
    variables (``group_levels``), ``evaluation``: the downstream scores per held-out environment
    (``evaluate``; :func:`evaluate_selection`, summarised by :meth:`summary`), each None when not
    asked for. ``task``: "regression" or "binary"; ``positive``: a binary target's positive level
    (as text). ``leaks``: what the leak checks found (:class:`oodfs.tables.leaks.Leaks`, None when
    not run). ``notes``: what was done to the table and what is odd about it (each also a
    :class:`oodfs.tables.TableWarning`). :meth:`to_json` is the JSON form ``oodfs select --json``
    prints.
    """

    ranking: pd.DataFrame
    method: str
    params: dict
    target: str
    source: str
    rows: int
    rows_in_table: int
    features: int
    top_k: int
    env_column: object
    train_envs: list | None
    standardized: bool
    random_state: int
    target_transform: str | None
    left_out: list = field(default_factory=list)
    excluded: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    variables: pd.DataFrame | None = None
    group_levels: str | None = None
    evaluation: pd.DataFrame | None = None
    downstream: str | None = None
    task: str = "regression"
    positive: str | None = None
    leaks: object = None
    #: False when ``top_k`` kept every feature (or variable): nothing was selected away, so no
    #: feature is marked selected and the evaluation has no "selected" column (docs/PROTOCOL.md
    #: section 8, "top_k")
    selection: bool = True
    #: what the fit reports about itself (a weighter's ESS, objective, ``corr_kept``...; empty for a
    #: method with none); a value that meets its declared suspect rule is also a note
    diagnostics: dict = field(default_factory=dict)
    #: with ``evaluate``: how much of the drop from the training rows to the held-out environments
    #: is a change of X and how much of Y | X (:func:`oodfs.shift.diagnose_rows`), or None
    shift: dict | None = None
    #: with ``evaluate``: how the held-out environments count in the mean, sd and worst over them
    weighting: EnvWeighting = field(default_factory=EnvWeighting)

    #: the fields of the JSON form that are plain values, in its order
    _PLAIN = (
        "method",
        "params",
        "target",
        "target_transform",
        "source",
        "rows",
        "rows_in_table",
        "features",
        "top_k",
        "env_column",
        "train_envs",
        "standardized",
        "random_state",
        "group_levels",
        "task",
        "positive",
        "left_out",
        "excluded",
        "notes",
        "selection",
        "diagnostics",
    )

    @property
    def selected(self) -> list[str]:
        return [r.feature for r in self.ranking.itertuples() if r.selected]

    def to_json(self) -> dict:
        """The JSON form (plain values, lists and dicts only)."""
        out = {k: getattr(self, k) for k in self._PLAIN}
        out["params"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.params.items()}
        out["ranking"] = [
            {"rank": int(r.rank), "feature": r.feature, "score": float(r.score), "selected": bool(r.selected)}
            for r in self.ranking.itertuples()
        ]
        if self.variables is not None:
            out["variables"] = [
                {
                    "rank": int(r.rank),
                    "variable": r.variable,
                    "score": float(r.score),
                    "selected": bool(r.selected),
                    "features": list(r.features),
                }
                for r in self.variables.itertuples()
            ]
        out["leaks"] = self.leaks.to_json() if self.leaks is not None else None
        if self.evaluation is not None:

            def plain(v):
                return v if isinstance(v, str) else int(v) if isinstance(v, (np.integer, int)) else _number(v)

            out["evaluation"] = {
                "downstream": self.downstream,
                "task": self.task,
                "yardstick": self.yardstick,
                "train_envs": self.train_envs,
                "selected": self.selected,
                "environments": [
                    {k: plain(v) for k, v in row.items()} for row in self.evaluation.to_dict("records")
                ],
                "summary": [
                    {k: plain(v) for k, v in row.items()} for row in self.summary().to_dict("records")
                ],
                "note": self.worse_than_mean_note() or None,
                "shift": self.shift_json(),
            }
            if not self.weighting.is_default:  # said only when asked for: the default's form is as before
                out["evaluation"]["env_weighting"] = self.weighting.weighting
                out["evaluation"]["min_env_rows"] = self.weighting.min_rows
                out["evaluation"]["left_out_envs"] = [
                    {"env": e, "rows": int(n)} for e, n in self.env_left_out().items()
                ]
        return out

    def shift_json(self) -> dict | None:
        """The shift diagnosis as plain values (NaN as None), its environments as a list."""
        if self.shift is None:
            return None
        out = {
            k: (_number(v) if isinstance(v, (float, np.floating)) else v)
            for k, v in self.shift.items()
            if k not in ("pairs", "small")
        }
        out["left_out"] = list(self.shift["small"])
        out["environments"] = [
            {k: (v if k == "env" else _number(v)) for k, v in row.items()}
            for row in self.shift["pairs"].to_dict("records")
        ]
        return out

    @property
    def yardstick(self) -> str:
        """The yardstick with no feature: ``mean`` (regression) or ``prior`` (binary)."""
        return NO_FEATURE_YARDSTICK.get(self.task, "mean")

    def summary(self) -> pd.DataFrame | None:
        """Mean, sd and worst of every score over the held-out environments
        (:func:`summarize_evaluation`), or None without an evaluation."""
        if self.evaluation is None:
            return None
        return summarize_evaluation(self.evaluation, self.task, self.weighting)

    def env_left_out(self) -> dict:
        """``{environment: test rows}`` of the held-out environments left out of the statistics over
        them (fewer than ``min_env_rows`` rows)."""
        if self.evaluation is None:
            return {}
        return self.weighting.left_out(dict(zip(self.evaluation["env"], self.evaluation["rows"])))

    def env_notes(self) -> list[str]:
        """What the outputs say about how the held-out environments count (none by default)."""
        return self.weighting.notes(self.env_left_out()) if self.evaluation is not None else []

    def worse_than_mean_note(self) -> str:
        """A sentence when every model (selected features and all features) predicts an environment
        worse (by the task's validation loss: RMSE, log-loss) than the training mean or, for a
        binary target, the training base rate (the ``prior``), or ''; docs/PROTOCOL.md section
        10, "Guards"."""
        if self.evaluation is None:
            return ""
        from oodfs.contract.registry import get_task

        loss = get_task(self.task).validation_loss
        e = self.evaluation
        base = e[f"{loss}_{self.yardstick}"]
        worse = np.logical_and.reduce([e[f"{loss}_{w}"] > base for w in evaluated(e, self.task)[:-1]])
        bad = list(e.loc[worse, "env"])
        if not bad:
            return ""
        what = (
            "predicting the training base rate (the prior yardstick; by log-loss)"
            if self.task == "binary"
            else "predicting the training mean"
        )
        return (
            f"in {len(bad)} of {len(e)} environments ({', '.join(map(str, bad))}) every "
            f"model is worse than {what}: the relation of the target to these "
            "features changed there or was never there to learn (a shift in Y | X, no signal, or a "
            "model extrapolating outside its training range), which no choice of features repairs"
        )

    def as_frame(self) -> pd.DataFrame:
        """The ranking with every other field in ``DataFrame.attrs`` (the form
        ``oodfs.tabular.rank_features`` returned; kept for it)."""
        out = self.ranking.copy()
        out.attrs.update(
            {k: getattr(self, k) for k in (*self._PLAIN, "variables", "evaluation", "downstream")}
        )
        return out


def check_fit_memory(method: str, n: int, d: int) -> None:
    """Refuse, in one line, a fit whose estimated peak memory exceeds what this machine has
    available: the method's fit estimate at n x d (:func:`oodfs.results.scale.fit_memory_mb`) plus
    one copy of the rows it is fitted on (docs/PROTOCOL.md, "Measured sizes and the memory
    estimate"; the table itself is already loaded, so it is not counted again)."""
    from oodfs.results import scale

    have = scale.available_mb()
    if have is None:  # neither /proc/meminfo nor psutil: nothing to compare with
        return
    est = scale.estimate_peak_mb([method], n, d, n, workers=1)
    if est["total_mb"] <= have:
        return
    fit = (
        f"{method}'s fit {scale.size_text(est['fit_mb'])}"
        if est["method"]
        else f"{method} has no measured memory curve"
    )
    raise OodfsError(
        f"fitting {method} on this table is estimated to need {scale.size_text(est['total_mb'])} of memory "
        f"(n = {n:,} rows, d = {d} features: {fit}, the data {scale.size_text(est['data_mb'])}), more than "
        f"the {scale.size_text(have)} this machine has available; use fewer rows or features (--train-envs, "
        "--drop), or pass --ignore-memory-estimate to fit anyway"
    )


def rank_features(data, target, method: str, options: RankOptions | None = None, **changes) -> FeatureRanking:
    """Rank every feature of a table with the selector ``method``.

    ``data`` is a DataFrame or a path (:func:`oodfs.tables.read_table`); ``options`` (or keyword
    arguments naming its fields): :class:`RankOptions`. Returns a :class:`FeatureRanking`.

    Notes (:class:`oodfs.tables.TableWarning`): the task of a two-level target, what
    :func:`oodfs.tables.prepare_table` did, features left out of the fit, a constant target, no
    more rows than features, possible leaks.
    """
    from oodfs.contract.registry import registry

    cls = registry().get("selector", method)
    o = replace(options or RankOptions(), **changes)
    kwargs = _selector_params(cls, o.params)
    o = o.checked()
    df, source = _as_frame(data)
    o.check_environments()
    choice = _target_task(df, target, o)
    if choice.note:
        warnings.warn(choice.note, TableWarning, stacklevel=2)
    if choice.task == "binary":
        _check_classifies(cls, method)
        df = df.assign(**{target: binary_column(df[target], choice)})
    table = prepare_table(
        df,
        target,
        o.env_column,
        categorical=o.categorical,
        categorical_columns=o.categorical_columns,
        drop=o.drop,
        keep=o.keep,
        dates=o.dates,
        dropna=o.dropna,
        max_levels=o.max_levels,
        target_transform=o.target_transform,
    )
    notes = ([choice.note] if choice.note else []) + list(table.notes)

    def note(text: str) -> None:
        notes.append(text)
        warnings.warn(text, TableWarning, stacklevel=4)

    X, y, names, env = table.X, table.y, table.names, table.env
    rows, wanted = _rows_used(env, o.train_envs, o.env_column, len(y))
    if o.evaluate and wanted is not None:  # before the fit: a minimum size that leaves no environment
        labels = np.asarray(env).astype(str)
        held = pd.Series(labels[~np.isin(labels, [str(e) for e in wanted])])
        o.weighting.check_leaves_some(held.value_counts(sort=False).to_dict())
    if choice.task == "binary":
        by_env = env is not None and (wanted is not None or getattr(cls, "uses_groups", False))
        _check_both_classes(y, env if by_env else None, rows, choice, target)
    n, d = int(rows.sum()), X.shape[1]
    if n < 2:
        raise OodfsError(f"need at least 2 rows to rank features, got {n}")
    if o.check_memory:
        check_fit_memory(method, n, d)
    # standardised over the rows used (the ones the selector sees)
    scaler = make_scaler().fit(X[rows]) if o.standardize_features else None
    Xs = scaler.transform(X) if scaler is not None else X
    fitted = _fitted(Xs[rows], names, o.min_level_rows, note)
    fit_names = [names[j] for j in np.flatnonzero(fitted)]
    Xfit, yfit = Xs[rows][:, fitted], y[rows]
    _check_fit_data(Xfit, yfit, fit_names, target, note)
    labels = {**_labels(cls, method, env, rows), **_task_keyword(cls, choice.task, yfit)}
    leaks = None
    if o.check_leaks:
        from oodfs.tables.leaks import find_leaks, refuse_strong

        leaks = find_leaks(Xfit, yfit, fit_names, choice.task, o.random_state)
        # a binary feature that alone separates the classes: refused unless its column is kept
        refuse_strong(leaks, dict(zip(names, table.variables)), o.keep)
        for text in leaks.notes():
            note(text)
    variables = dict(zip(names, table.variables))
    k = _top_k(cls, o, len(dict.fromkeys(table.variables)) if o.group_levels else d)
    fit_scores, used, diagnostics, flat = _fit_scores(
        cls,
        {**kwargs, "k": min(k, Xfit.shape[1]), "random_state": o.random_state},
        Xfit,
        yfit,
        fit_names,
        method,
        o.isolate,
        labels,
    )
    collapsed = collapse_note(cls, method, diagnostics, n)
    if collapsed:
        note(collapsed)
    # the collapse note says what the effective-sample-size rule would, with what to try
    for text in suspect_notes(method, diagnostics, skip=("ess_fraction",) if collapsed else ()):
        note(text)
    for text in zero_score_notes(method, fit_names, fit_scores, flat):
        note(text)
    scores = np.zeros(d)
    scores[fitted] = fit_scores
    order = _order(scores, fitted, o.random_state)
    out = pd.DataFrame(
        {
            "rank": np.arange(1, d + 1),
            "feature": [names[j] for j in order],
            "score": scores[order],
            "fitted": fitted[order],
        }
    )
    grouped = None
    if o.group_levels:
        grouped = rank_variables(out, variables, k, o.group_levels, o.random_state)
        chosen = set(grouped.loc[grouped["selected"], "variable"])
        out["selected"] = [
            variables[f] in chosen and bool(fit) for f, fit in zip(out["feature"], out["fitted"])
        ]
    else:
        mask = support_mask(np.where(fitted, scores, 0.0), order[fitted[order]], k)
        out["selected"] = mask[order]
    # every variable kept (its unfitted levels are never selected) or every feature: no selection
    selection = not (grouped["selected"].all() if grouped is not None else out["selected"].all())
    if not selection:  # the top k is every feature: no selection to report or evaluate
        unit = "variables" if o.group_levels else "features"
        every = len(grouped) if o.group_levels else d
        note(
            f"top_k (--top-k) {o.top_k or k} keeps all {every} {unit}: nothing is "
            f"selected away, so no selection is reported (a top-k below that selects)"
        )
        out["selected"] = False
        if grouped is not None:
            grouped["selected"] = False
    evaluation = shift = None
    if o.evaluate:
        chosen_cols = [names.index(f) for f in out.loc[out["selected"], "feature"]] if selection else None
        evaluation = evaluate_selection(
            Xs, y, env, wanted, chosen_cols, o.downstream, o.random_state, choice.task
        )
        shift = _shift(Xs, y, env, wanted, choice.task, o.random_state, note)
    return FeatureRanking(
        ranking=out[["rank", "feature", "score", "selected"]].reset_index(drop=True),
        method=method,
        params=used,
        target=str(target),
        source=source,
        rows=n,
        rows_in_table=table.rows_in_table,
        features=d,
        top_k=k,
        env_column=o.env_column,
        train_envs=wanted,
        standardized=bool(o.standardize_features),
        random_state=o.random_state,
        target_transform=o.target_transform if o.target_transform != "none" else None,
        left_out=[names[j] for j in np.flatnonzero(~fitted)],
        excluded=dict(table.excluded),
        notes=notes,
        variables=grouped,
        group_levels=o.group_levels,
        evaluation=evaluation,
        downstream=o.downstream if o.evaluate else None,
        task=choice.task,
        positive=None if choice.positive is None else level_text(choice.positive),
        leaks=leaks,
        selection=selection,
        diagnostics=diagnostics,
        shift=shift,
        weighting=o.weighting,
    )


def _shift(X, y, env, train_envs, task: str, seed: int, note) -> dict | None:
    """The shift diagnosis of the held-out environments (:func:`oodfs.shift.diagnose_rows`), or a note
    saying why there is none."""
    from oodfs.shift import FOLDS, diagnose_rows

    try:
        shift = diagnose_rows(X, y, env, train_envs, task, seed)
    except ValueError as exc:  # too few rows for the classifier's folds, one class in the fitting rows
        note(f"no shift diagnosis: {_one_line(exc)}")
        return None
    if shift["small"]:
        note(
            f"shift diagnosis: environment(s) {short_list(shift['small'])} left out (fewer than {FOLDS} rows "
            "for the domain classifier's folds)"
        )
    return shift


def _target_task(df: pd.DataFrame, target, o: RankOptions) -> TargetTask:
    """The task of the target (:func:`oodfs.tables.target_task`), its options checked against it."""
    if target not in df.columns:  # prepare_table names the columns there are
        return TargetTask(o.task or "regression")
    choice = target_task(df[target], target, o.task, o.positive)
    if choice.task == "binary" and o.target_transform not in (None, "none"):
        raise OodfsError(
            f"target_transform (--target-transform) {o.target_transform!r} is for a numeric target; "
            f"{target!r} is binary here (--task regression to regress it)"
        )
    _check_downstream(o.downstream, choice.task)
    return choice


def _task_keyword(cls, task: str, y: np.ndarray) -> dict:
    """``{"task": task}`` where fit's own inference (two values: binary) would choose otherwise and
    the class knows the keyword (it declares binary); else ``{}``, so a plugin's ``fit`` written
    before task types still takes a regression target."""
    inferred = "binary" if np.unique(y).size == 2 else "regression"
    return {"task": task} if task != inferred and "binary" in cls.task_types else {}


def _check_classifies(cls, method: str) -> None:
    """One line naming the methods that can classify, for a method that cannot."""
    if cls.handles("binary"):
        return
    from oodfs.contract.registry import registry

    entries = registry().entries("selector").items()
    able = [n for n, i in entries if i.cls.handles("binary") and not i.cls.yardstick]
    raise OodfsError(
        f"selector {method!r} handles {' and '.join(cls.task_types)} targets only, not a binary one; "
        f"methods that can classify: {', '.join(able)} (or --task regression to regress the 0/1 target)"
    )


def _check_both_classes(y: np.ndarray, env, rows: np.ndarray, choice: TargetTask, target) -> None:
    """One line naming a training environment (``env`` given: each of the rows used; else the rows
    used pooled) that holds one class only."""
    groups = {None: rows} if env is None else {e: rows & (env == e) for e in dict.fromkeys(env[rows])}
    for label, mask in groups.items():
        classes = np.unique(y[mask])
        if classes.size == 1:
            where = "the rows used" if label is None else f"training environment {label!r}"
            raise OodfsError(
                f"{where} hold{'s' if label is not None else ''} only class "
                f"{level_text(choice.label(classes[0]))!r} of the binary target {target!r} "
                f"({int(mask.sum())} rows); a classifier needs both classes in every training environment"
                + ("" if label is None else ": leave it out of --train-envs")
            )


def _check_downstream(name, task: str) -> str:
    """``name`` if it is a registered downstream model predicting ``task``; else one line naming
    the valid ones for it."""
    from oodfs.run.downstream_models import check_model, models, no_model_for

    if name not in models(task):
        valid = ", ".join(models(task)) or no_model_for(task).replace(
            " in the suite's downstream = [...]", ""
        )
        known = "" if name in models() else "unknown "
        raise OodfsError(
            f"{known}downstream model {name!r} (--downstream) does not predict a {task} target; "
            f"valid for {task}: {valid}"
        )
    return check_model(name, task)


def _number(v) -> float | None:
    """A float for JSON; NaN (an AUC with one class in the environment) as None."""
    v = float(v)
    return None if np.isnan(v) else v


def _rows_used(env, train_envs, env_column, n: int) -> tuple[np.ndarray, list | None]:
    """(mask of the rows the selector is fitted on, the training environments as text or None)."""
    if train_envs is None:
        return np.ones(n, dtype=bool), None
    wanted = [str(e) for e in ([train_envs] if isinstance(train_envs, (str, int, float)) else train_envs)]
    labels = list(dict.fromkeys(env))
    unknown = [e for e in wanted if e not in labels]
    if unknown:
        raise OodfsError(
            f"environment {unknown[0]!r} is not in column {env_column!r}; valid: {short_list(labels, 20)}"
        )
    return np.isin(env, wanted), wanted


def _fitted(Xrows: np.ndarray, names: list[str], min_level_rows: int, note) -> np.ndarray:
    """The features a method is fitted on (:func:`oodfs.tables.fitted_features`); a note names the
    others."""
    fitted = fitted_features(Xrows, min_level_rows)
    if not fitted.any():
        raise OodfsError(
            f"no feature has {min_level_rows} or more of the rows used off its most common value; "
            "nothing to rank (use more rows, or lower min_level_rows / --min-level-rows)"
        )
    if not fitted.all():
        note(
            f"left out of the fit, ranked last with score 0 (fewer than {min_level_rows} of the "
            f"{Xrows.shape[0]} rows used differ from its most common value): "
            f"{short_list([names[j] for j in np.flatnonzero(~fitted)])}"
        )
    return fitted


def _check_fit_data(Xfit: np.ndarray, yfit: np.ndarray, fit_names: list[str], target, note) -> None:
    """Refuse values 32-bit selectors turn into inf; note a constant target and too few rows."""
    _check_magnitude(Xfit, yfit, fit_names, target)
    n = len(yfit)
    if np.ptp(yfit) == 0:
        note(
            f"the target {target!r} is constant ({yfit[0]:g}) on the rows used: no feature can predict it, "
            "so the ranking means nothing"
        )
    if n <= Xfit.shape[1]:
        note(
            f"{n} rows for {Xfit.shape[1]} features: with no more rows than features, least-squares "
            "coefficients (the ols, dwr and srdo scores) are not unique and their ranking is arbitrary; "
            "use more rows or fewer features"
        )


def _top_k(cls, o: RankOptions, n_units: int) -> int:
    """How many features (or variables, with ``group_levels``) to select."""
    k = min(int(_init_default(cls, "k", 5)), n_units) if o.top_k is None else int(o.top_k)
    if k < 1:
        raise OodfsError(f"top_k (--top-k) must be a positive integer, got {o.top_k}")
    # a top-k of every feature or more keeps them all: one note and no selection (docs/PROTOCOL.md
    # section 8, "top_k"), the same for k = d and k > d
    return min(k, n_units)


def _labels(cls, method: str, env, rows: np.ndarray) -> dict:
    """``{"groups": environment per row used}`` for a method that learns from them, else ``{}``."""
    if not getattr(cls, "uses_groups", False):
        return {}
    if env is None:
        raise OodfsError(
            f"selector {method!r} learns from environment labels: name their column with --env-column"
        )
    return {"groups": np.asarray(env)[rows]}
