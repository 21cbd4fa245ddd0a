"""Evaluation metrics: the paper's pure functions, and the declarations every consumer reads.

Ties in the scores are handled without favouring any column: a tied feature gets the average
of the ranks its group spans (rank average), and F1@k is the expectation over the orders of
the tied group that straddles the top-k boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.stats import rankdata

from oodfs.contract.hookspecs import hookimpl
from oodfs.contract.task_types import BINARY
from oodfs.validation import OodfsError


def _finite_vector(values, what: str) -> np.ndarray:
    values = np.asarray(values, dtype=float).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise OodfsError(f"{what} must be a non-empty vector of finite numbers")
    return values


def _check_scores(scores, true_set) -> tuple[np.ndarray, np.ndarray]:
    scores = _finite_vector(scores, "scores")
    true = np.asarray(sorted(set(int(j) for j in true_set)), dtype=int)
    if true.size == 0:
        raise OodfsError("the true set is empty")
    if true.min() < 0 or true.max() >= scores.size:
        raise OodfsError(f"true set {true.tolist()} has an index outside 0..{scores.size - 1}")
    return scores, true


def feature_ranks(scores) -> np.ndarray:
    """1-based rank of each feature (1 = highest score); ties get their average rank."""
    return rankdata(-_finite_vector(scores, "scores"), method="average")


def rank_average(scores, true_set) -> float:
    """Mean rank of the true features (best = (|S| + 1) / 2 ... paper: 3.0 for |S| = 5 of 10)."""
    scores, true = _check_scores(scores, true_set)
    return float(feature_ranks(scores)[true].mean())


def f1_at_k(scores, true_set, k: int) -> float:
    """F1 of the top-k features against the true set; expected value over tied orders."""
    scores, true = _check_scores(scores, true_set)
    if not 1 <= k <= scores.size:
        raise OodfsError(f"k must be between 1 and {scores.size}, got {k}")
    # probability that each feature is in the top k, with ties filled at random
    above = np.array([(scores > s).sum() for s in scores])
    tied = np.array([(scores == s).sum() for s in scores])
    p_in = np.clip((k - above) / tied, 0.0, 1.0)
    expected_tp = p_in[true].sum()
    return float(2 * expected_tp / (k + true.size))  # precision = TP/k, recall = TP/|S|


def rmse(y_true, y_pred) -> float:
    """Root mean squared error (the square root of the MSE)."""
    y_true = np.asarray(y_true, dtype=float)
    y_pred = np.asarray(y_pred, dtype=float)
    if y_true.shape != y_pred.shape:
        raise OodfsError(f"y_true and y_pred have different shapes {y_true.shape} vs {y_pred.shape}")
    err = _finite_vector(y_true, "y_true") - _finite_vector(y_pred, "y_pred")
    return float(np.sqrt(np.mean(err**2)))


def coefficient_error(coef, true_coef, norm: int) -> float:
    """``norm`` 1: Σ|β̂ − β|; 2: the Euclidean norm ‖β̂ − β‖ (the SVI code's "L2 error" is its square)."""
    coef = _finite_vector(coef, "coefficients")
    true_coef = _finite_vector(true_coef, "true coefficients")
    if coef.shape != true_coef.shape:
        raise OodfsError(f"{coef.size} coefficients for {true_coef.size} true coefficients")
    return float(np.linalg.norm(coef - true_coef, ord=norm))


def rmse_summary(rmses) -> tuple[float, float]:
    """Mean and standard deviation (population, ddof = 0) of the RMSEs over test environments."""
    rmses = np.asarray(rmses, dtype=float)
    if rmses.size == 0:
        raise OodfsError("no test environments to summarise")
    rmses = _finite_vector(rmses, "RMSEs")
    return float(rmses.mean()), float(rmses.std(ddof=0))


# -- declarations: every consumer (runner, selection rules, leaderboard, statistics, figures)
# -- reads these; nothing else names a metric's title or direction -------------------------
@dataclass(frozen=True)
class Evaluation:
    """What one grid point of one method produced on one data set, with ``k`` features kept.

    ``ranking`` is best first with ties already broken by the task's seed. ``validation`` holds
    the downstream model's scores on validation data of the training environment(s) (``{score:
    value}``, empty without it) and ``tests`` its scores in each test environment (``{env:
    {score: value}}``), the scores of the task type ``task`` (:mod:`oodfs.contract.task_types`:
    regression ``rmse``; binary ``log_loss``, ``brier``, ``accuracy``, ``auc``). A plain number
    in their place is a regression RMSE (the form before task types). ``diagnostics`` are what
    the method reported about its fit (e.g. a weighter's ESS); ``coef`` the OLS coefficients on
    the ``k`` top features (0 for the others) and ``true_coef`` the environment's, where it
    declares them (docs/PROTOCOL.md, "Metrics").
    """

    scores: np.ndarray
    ranking: np.ndarray
    k: int
    stable_set: tuple[int, ...] | None
    validation: dict
    tests: dict
    diagnostics: dict
    #: with several training environments: the environment-aware selection values of this point,
    #: by metric name (``rmse_train_domain``, ``rmse_loeo``; docs/PROTOCOL.md, "Several training
    #: environments")
    environments: dict = field(default_factory=dict)
    coef: np.ndarray | None = None
    true_coef: np.ndarray | None = None
    task: str = "regression"
    #: with several training environments: the scores on each one's validation rows ({env: {score: value}})
    validation_envs: dict = field(default_factory=dict)
    #: with a feature shift: the scores on each test environment's shifted rows ({env: {score:
    #: value}}, docs/PROTOCOL.md, "Feature shift"); empty without one
    shifted: dict = field(default_factory=dict)

    def __post_init__(self):
        def scores(v):
            return dict(v) if isinstance(v, dict) else {"rmse": float(v)}

        validation = scores(self.validation) if self.validation is not None else {}
        object.__setattr__(self, "validation", validation)
        object.__setattr__(self, "tests", {env: scores(v) for env, v in self.tests.items()})

    @property
    def test_rmse(self) -> dict:
        """``{test env: RMSE}`` (regression; empty for another task)."""
        return {env: v["rmse"] for env, v in self.tests.items() if "rmse" in v}

    @property
    def val_rmse(self) -> float:
        return float(self.validation.get("rmse", float("nan")))


@dataclass(frozen=True)
class SuspectRule:
    """When a diagnostic's value makes a chosen fit suspect (listed under the leaderboard's
    "Weight diagnostics"): below ``below`` or above ``above``, after adding the diagnostics
    named in ``plus`` (missing values count as 0 there). ``note`` says what it means."""

    note: str
    below: float | None = None
    above: float | None = None
    plus: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"note": self.note, "below": self.below, "above": self.above, "plus": list(self.plus)}

    def values(self, frame, name: str):
        """The value the rule reads from ``frame`` (a DataFrame of fits): the diagnostic ``name``
        plus those in ``plus``; None when a column it needs is missing."""
        if not {name, *self.plus} <= set(frame.columns):
            return None
        values = frame[name]
        if self.plus:
            values = values.fillna(0) + sum(frame[c].fillna(0) for c in self.plus)
        return values

    def flags(self, values):
        """A boolean mask over ``values`` (a pandas Series; NaN is never suspect)."""
        bad = values.notna()
        if self.below is not None:
            bad &= values.fillna(0) < self.below
        if self.above is not None:
            bad &= values.fillna(0) > self.above
        return bad


#: what a metric is for (:attr:`Metric.role`)
ROLES = ("headline", "selection", "detail", "diagnostic")


@dataclass(frozen=True)
class Metric:
    """A declared metric. ``compute(evaluation)`` returns a number, ``None`` (not applicable:
    no row is stored) or, when ``per_env``, a dict {test environment: number}.

    ``role``: ``"headline"`` (a leaderboard column, in declaration order), ``"selection"``
    (used by a model-selection rule, not shown), ``"detail"`` (stored, drawn or tested but not a
    column) or ``"diagnostic"`` (what a method reports about its own fit). ``curve``: also
    computed for every k = 1..d on the suite's curve methods (the ood-S figure). ``suspect``: for a
    diagnostic, when its value makes a fit suspect (:class:`SuspectRule`). ``bounds``: (lowest,
    highest) value it can take (None: unbounded on that side); a stored value outside them is damage
    (oodfs.results.store.check_store). Not part of the stored declaration.
    """

    name: str
    title: str
    lower_is_better: bool | None
    compute: Callable[[Evaluation], object]
    needs_stable_set: bool = False
    role: str = "headline"
    curve: bool = False
    per_env: bool = False
    description: str = ""
    suspect: SuspectRule | None = None
    #: the task types it is computed for (None: every task); a metric declared before task types
    #: existed is regression's
    task_types: tuple[str, ...] | None = ("regression",)
    bounds: tuple[float | None, float | None] | None = None

    def __post_init__(self):
        if isinstance(self.task_types, list):  # read back from a stored declaration
            object.__setattr__(self, "task_types", tuple(self.task_types))
        if isinstance(self.suspect, dict):  # read back from a stored declaration
            object.__setattr__(
                self, "suspect", SuspectRule(**{**self.suspect, "plus": tuple(self.suspect["plus"])})
            )

    def as_dict(self) -> dict:
        """The declaration without its code (stored with results, so reports need no plugin)."""
        d = {
            "name": self.name,
            "title": self.title,
            "lower_is_better": self.lower_is_better,
            "needs_stable_set": self.needs_stable_set,
            "role": self.role,
            "curve": self.curve,
            "per_env": self.per_env,
            "description": self.description,
            "task_types": None if self.task_types is None else list(self.task_types),
        }
        if self.suspect is not None:
            d["suspect"] = self.suspect.as_dict()
        return d

    def applies_to(self, task: str) -> bool:
        return self.task_types is None or task in self.task_types

    @property
    def comparable(self) -> bool:
        """One value per task with a direction: a table column and a paired test can show it."""
        return not self.per_env and self.lower_is_better is not None

    @property
    def arrow(self) -> str:
        return "" if self.lower_is_better is None else "↓" if self.lower_is_better else "↑"


def _rank_avg(e: Evaluation):
    return None if e.stable_set is None else rank_average(e.scores, e.stable_set)


def _f1(e: Evaluation):
    return None if e.stable_set is None else f1_at_k(e.scores, e.stable_set, e.k)


def _rmse_mean(e: Evaluation):
    return rmse_summary(list(e.test_rmse.values()))[0]


def _rmse_std(e: Evaluation):
    return rmse_summary(list(e.test_rmse.values()))[1]


def _rmse_val(e: Evaluation):
    return None if not np.isfinite(e.val_rmse) else float(e.val_rmse)


def _rmse_env(e: Evaluation):
    return {env: float(v) for env, v in e.test_rmse.items()}


def _finite(values) -> np.ndarray:
    values = np.asarray([v for v in values], dtype=float)
    return values[np.isfinite(values)]


def _summary(score: str, stat: str, lower_is_better: bool = True):
    """A summary over test environments of one score: its mean, sd (ddof 0) or worst value (the
    largest loss, the smallest accuracy or AUC); environments where it is undefined (the AUC of
    an environment with one class) are left out, and without any the metric is not stored."""

    def compute(e: Evaluation):
        values = _finite(t[score] for t in e.tests.values() if score in t)
        if not values.size:
            return None
        if stat == "mean":
            return float(values.mean())
        if stat == "std":
            return float(values.std(ddof=0))
        return float(values.max() if lower_is_better else values.min())

    return compute


def _shifted(score: str, stat: str, lower_is_better: bool = True):
    """A feature shift's summary of one score over the test environments where both the shifted
    and the unshifted value are defined: the shifted mean or worst, or ``increase``: the shifted
    mean minus the unshifted mean (docs/PROTOCOL.md, "Feature shift"). None without a shift."""

    def compute(e: Evaluation):
        if stat == "env":
            return {env: float(t[score]) for env, t in e.shifted.items() if np.isfinite(t.get(score, np.nan))}
        pairs = [
            (float(e.tests[env][score]), float(t[score]))
            for env, t in e.shifted.items()
            if score in t and score in e.tests.get(env, {})
        ]
        pairs = [(a, b) for a, b in pairs if np.isfinite(a) and np.isfinite(b)]
        if not pairs:
            return None
        before, after = np.array(pairs).T
        if stat == "mean":
            return float(after.mean())
        if stat == "increase":
            return float(after.mean() - before.mean())
        return float(after.max() if lower_is_better else after.min())

    return compute


def shift_metrics(score: str, title: str, task_types: tuple, bounds) -> tuple:
    """The feature-shift metrics of a task's loss ``score`` (docs/PROTOCOL.md, "Feature shift"):
    stored only when a suite declares a shift, so a run without one has none of them."""
    name = f"{score}_fshift"
    return (
        Metric(
            f"{name}_mean",
            f"{title} mean, features shifted",
            True,
            _shifted(score, "mean"),
            description=f"mean over test environments of the downstream {title} on the top-k features, "
            "on test rows with the suite's feature shift",
            task_types=task_types,
            bounds=bounds,
        ),
        Metric(
            f"{name}_increase",
            f"{title} increase under the feature shift",
            True,
            _shifted(score, "increase"),
            description=f"{name}_mean minus the unshifted mean {title} of the same subset and model",
            task_types=task_types,
        ),
        Metric(
            f"{name}_worst",
            f"{title} worst, features shifted",
            True,
            _shifted(score, "worst"),
            role="detail",
            description=f"largest over test environments of the {title} on the shifted test rows",
            task_types=task_types,
            bounds=bounds,
        ),
        Metric(
            name,
            f"test {title}, features shifted",
            True,
            _shifted(score, "env"),
            role="detail",
            per_env=True,
            description=f"downstream {title} on one test environment's shifted rows (column env)",
            task_types=task_types,
            bounds=bounds,
        ),
    )


def _per_env(score: str):
    def compute(e: Evaluation):
        return {env: float(t[score]) for env, t in e.tests.items() if score in t and np.isfinite(t[score])}

    return compute


def _validation(score: str):
    def compute(e: Evaluation):
        value = e.validation.get(score)
        return None if value is None or not np.isfinite(value) else float(value)

    return compute


def _validation_envs(score: str):
    def compute(e: Evaluation):
        return {
            env: float(v[score]) for env, v in e.validation_envs.items() if np.isfinite(v.get(score, np.nan))
        }

    return compute


def _beta_error(norm: int):
    def compute(e: Evaluation):
        if e.coef is None or e.true_coef is None:
            return None
        return coefficient_error(e.coef, e.true_coef, norm)

    return compute


def _diagnostic(key: str):
    def compute(e: Evaluation):
        value = e.diagnostics.get(key)
        return None if value is None else float(value)

    return compute


def diagnostic(
    name: str,
    title: str,
    lower_is_better: bool | None,
    description: str,
    suspect: SuspectRule | None = None,
    bounds: tuple[float | None, float | None] | None = None,
) -> Metric:
    """The declaration of a fit diagnostic a method reports in ``GridFit.diagnostics[name]``:
    what a plugin returns from ``oodfs_metrics`` for each diagnostic of its own."""
    return Metric(
        name,
        title,
        lower_is_better,
        _diagnostic(name),
        role="diagnostic",
        description=description,
        suspect=suspect,
        task_types=None,
        bounds=bounds,
    )


#: what a downstream score can be: the range of each score of every task type (a mean or worst
#: over environments has its score's range, a standard deviation is at least 0)
SCORE_BOUNDS = {
    "rmse": (0.0, None),
    "log_loss": (0.0, None),
    "brier": (0.0, 1.0),
    "accuracy": (0.0, 1.0),
    "auc": (0.0, 1.0),
}
NON_NEGATIVE = (0.0, None)

BUILTIN_METRICS = (
    Metric(
        "rank_avg",
        "rank avg",
        True,
        _rank_avg,
        needs_stable_set=True,
        task_types=None,
        description="mean rank of the true stable features in the score order (ties: average rank)",
        bounds=(1.0, None),
    ),
    Metric(
        "f1",
        "F1",
        False,
        _f1,
        needs_stable_set=True,
        task_types=None,
        description="F1 of the top-k features against the stable set (expected over tied orders)",
        bounds=(0.0, 1.0),
    ),
    Metric(
        "rmse_mean",
        "RMSE mean",
        True,
        _rmse_mean,
        curve=True,
        description="mean over test environments of the downstream regressor's RMSE on the top-k features",
        bounds=NON_NEGATIVE,
    ),
    Metric(
        "rmse_std",
        "RMSE sd",
        True,
        _rmse_std,
        curve=True,
        description="standard deviation (ddof 0) over test environments of that RMSE",
        bounds=NON_NEGATIVE,
    ),
    Metric(
        "rmse_val",
        "validation RMSE",
        True,
        _rmse_val,
        role="selection",
        curve=True,
        description="downstream RMSE on held-out data of the training environment",
        bounds=NON_NEGATIVE,
    ),
    Metric(
        "rmse_train_domain",
        "training-domain RMSE",
        True,
        lambda e: e.environments.get("rmse_train_domain"),
        role="selection",
        description="mean over training environments of the downstream RMSE on each one's held-out rows",
        bounds=NON_NEGATIVE,
    ),
    Metric(
        "rmse_loeo",
        "leave-one-environment-out RMSE",
        True,
        lambda e: e.environments.get("rmse_loeo"),
        role="selection",
        description="mean over training environments of the RMSE in it after refitting the method without it",
        bounds=NON_NEGATIVE,
    ),
    Metric(
        "rmse_val_env",
        "validation RMSE per training environment",
        True,
        _validation_envs("rmse"),
        role="selection",
        per_env=True,
        description="downstream RMSE on one training environment's held-out rows (column env: that "
        "environment); the worst-env rule takes the largest",
        bounds=NON_NEGATIVE,
    ),
    Metric(
        "rmse",
        "test RMSE",
        True,
        _rmse_env,
        role="detail",
        per_env=True,
        description="downstream RMSE in one test environment (column env)",
        bounds=NON_NEGATIVE,
    ),
    Metric(
        "beta_l1",
        "β L1 error",
        True,
        _beta_error(1),
        role="detail",
        description="Σ|β̂ − β|: β̂ the OLS coefficients on the top-k features (0 elsewhere), β the "
        "environment's linear coefficients",
        bounds=NON_NEGATIVE,
    ),
    Metric(
        "beta_l2",
        "β L2 error",
        True,
        _beta_error(2),
        role="detail",
        description="‖β̂ − β‖ (Euclidean norm) for the same β̂ and β",
        bounds=NON_NEGATIVE,
    ),
    # what the core computes for every weighter's weights (oodfs.contract.api.weight_diagnostics);
    # a method's own diagnostics are declared by its plugin
    diagnostic(
        "ess_fraction",
        "ESS / n",
        False,
        "effective sample size (Σw)²/Σw² of a weighter's weights, over n",
        SuspectRule("effective sample size below 5 % of n", below=0.05),
        (0.0, 1.0),
    ),
    diagnostic(
        "max_abs_corr",
        "max |weighted corr|",
        True,
        "largest |weighted correlation| left between two features",
        bounds=(0.0, 1.0),
    ),
    diagnostic(
        "max_weight", "max weight", None, "largest weight (weights scaled to mean 1)", bounds=NON_NEGATIVE
    ),
    diagnostic(
        "ess", "ESS", False, "effective sample size (Σw)²/Σw² of a weighter's weights", bounds=NON_NEGATIVE
    ),
    *shift_metrics("rmse", "RMSE", ("regression",), NON_NEGATIVE),
)


def task_metrics(task) -> tuple[Metric, ...]:
    """The metrics of a task type's scores (:class:`oodfs.contract.task_types.TaskType`): per score,
    its value in each test environment, its mean, sd and worst over them; for the validation
    loss, its value on validation rows, per training environment, over training domains and
    left one environment out (the quantities of the selection rules). Headline: the names in
    ``task.headline``. Regression's are declared by hand above (its names predate task types)."""
    loss = task.validation_loss
    out = []
    for score in task.scores:
        title, lower = task.titles[score], task.lower_is_better[score]
        for stat, what in (("mean", "mean"), ("std", "sd"), ("worst", "worst")):
            name = f"{score}_{stat}"
            worst = "largest" if lower else "smallest"
            out.append(
                Metric(
                    name,
                    f"{title} {what}",
                    lower,
                    _summary(score, stat, lower),
                    role="headline" if name in task.headline else "detail",
                    curve=score == loss and stat != "worst",
                    description=f"{what if stat != 'worst' else worst} over test environments of the "
                    f"downstream {title} on the top-k features ({task.name})",
                    task_types=(task.name,),
                    bounds=NON_NEGATIVE if stat == "std" else SCORE_BOUNDS.get(score),
                )
            )
        out.append(
            Metric(
                score,
                f"test {title}",
                lower,
                _per_env(score),
                role="detail",
                per_env=True,
                description=f"downstream {title} in one test environment (column env; {task.name})",
                task_types=(task.name,),
                bounds=SCORE_BOUNDS.get(score),
            )
        )
    title = task.titles[loss]
    out += shift_metrics(loss, title, (task.name,), SCORE_BOUNDS.get(loss))
    for quantity, what, compute, extra in (
        ("val", f"validation {title}", _validation(loss), {"curve": True}),
        (
            "train_domain",
            f"training-domain {title}",
            lambda e, n=task.metric("train_domain"): e.environments.get(n),
            {},
        ),
        (
            "loeo",
            f"leave-one-environment-out {title}",
            lambda e, n=task.metric("loeo"): e.environments.get(n),
            {},
        ),
        (
            "val_env",
            f"validation {title} per training environment",
            _validation_envs(loss),
            {"per_env": True},
        ),
    ):
        out.append(
            Metric(
                task.metric(quantity),
                what,
                True,
                compute,
                role="selection",
                description=f"{what} of the downstream model, as the selection rules read it ({task.name})",
                task_types=(task.name,),
                bounds=SCORE_BOUNDS.get(loss),
                **extra,
            )
        )
    return tuple(out)


#: the binary task type's metrics (docs/PROTOCOL.md, "Task types")
BINARY_METRICS = task_metrics(BINARY)


@hookimpl
def oodfs_metrics():
    return list(BUILTIN_METRICS) + list(BINARY_METRICS)
