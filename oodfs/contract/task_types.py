"""Task types: what kind of target a suite predicts, and how a downstream model is scored on it.

A task type owns its target check (:meth:`TaskType.check_target`), the scores of a downstream
model in one environment (:meth:`TaskType.score`), its validation loss (the first score: the
one a model-selection rule asks for) and its headline metrics. Task types are registered like
the other plugin kinds (hook ``oodfs_task_types``); the built-ins are ``"regression"`` (RMSE)
and ``"binary"`` (log-loss, Brier score, accuracy, AUC; docs/PROTOCOL.md, "Task types").

A binary target reaches every method and every downstream model as a float array of 0.0 / 1.0
(the positive class is 1.0), so a method's code never sees the target's own labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from oodfs.contract.hookspecs import hookimpl
from oodfs.validation import OodfsError

#: the quantities a selection rule can ask a task for, and the metric-name suffix of each
#: (the regression names are the ones oodfs stored before task types existed)
RULE_QUANTITIES = {
    "val": "_val",  # the validation loss on held-out rows of the training environment(s)
    "mean": "_mean",  # the mean over test environments (the oracle's upper bound)
    "train_domain": "_train_domain",  # mean over training environments of each one's validation loss
    "loeo": "_loeo",  # leave-one-environment-out loss
    "val_env": "_val_env",  # one validation loss per training environment (column env)
}


@dataclass(frozen=True)
class TaskType:
    """One kind of target. ``scores``: the per-environment scores of a downstream model, the
    validation loss first (``lower_is_better`` and ``titles`` per score); ``headline``: the
    metric names a leaderboard shows for it; ``check``: ``(y, who) -> (float y, note or None)``;
    ``scorer``: ``(y, P) -> {score: array}`` for predictions ``P`` of shape (models, rows)
    (regression: predicted values; binary: predicted probabilities of the positive class)."""

    name: str
    description: str
    scores: tuple[str, ...]
    titles: dict
    lower_is_better: dict
    headline: tuple[str, ...]
    check: Callable
    scorer: Callable

    @property
    def validation_loss(self) -> str:
        """The score every selection rule minimises (regression: ``rmse``, binary: ``log_loss``)."""
        return self.scores[0]

    def metric(self, quantity: str) -> str:
        """The stored metric name of a selection quantity (:data:`RULE_QUANTITIES`):
        ``metric("val")`` is ``rmse_val`` for regression, ``log_loss_val`` for binary."""
        if quantity not in RULE_QUANTITIES:
            raise OodfsError(f"unknown selection quantity {quantity!r}; valid: {', '.join(RULE_QUANTITIES)}")
        return self.validation_loss + RULE_QUANTITIES[quantity]

    def check_target(self, y, who: str = "the target") -> tuple[np.ndarray, str | None]:
        """The target as the methods receive it (floats) and a note for the user (or None); one
        clear OodfsError for a target this task cannot take."""
        return self.check(y, who)

    def score(self, y, predictions) -> dict[str, np.ndarray]:
        """Every score of every model: ``{score: array (models,)}`` for predictions of shape
        (models, rows) (a 1-d prediction is one model)."""
        P = np.asarray(predictions, dtype=float)
        return self.scorer(np.asarray(y, dtype=float), P[None, :] if P.ndim == 1 else P)


# -- regression ----------------------------------------------------------------------------
def _regression_check(y, who: str):
    values = pd.Series(np.asarray(y).ravel())
    if not (pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)):
        try:
            values = pd.to_numeric(values)
        except (TypeError, ValueError):
            raise OodfsError(
                f"{who} is not numeric: a regression target needs numbers (a two-level target is "
                "binary: --task binary)"
            ) from None
    return values.to_numpy(dtype=float), None


def _rmse(y: np.ndarray, P: np.ndarray) -> dict[str, np.ndarray]:
    # the computation oodfs has always used: rows C-contiguous, each reduced on its own
    P = np.ascontiguousarray(P)
    return {"rmse": np.sqrt(np.mean((P - y[None, :]) ** 2, axis=1))}


REGRESSION = TaskType(
    name="regression",
    description="a numeric target; downstream RMSE in every test environment",
    scores=("rmse",),
    titles={"rmse": "RMSE"},
    lower_is_better={"rmse": True},
    headline=("rank_avg", "f1", "rmse_mean", "rmse_std"),
    check=_regression_check,
    scorer=_rmse,
)


# -- binary --------------------------------------------------------------------------------
def binary_levels(y) -> tuple[list, object]:
    """The distinct non-missing levels of ``y`` in sorted order and the positive one: ``True``
    for booleans, the larger number, and for text the last level in sorted order (named in the
    target check's note; docs/PROTOCOL.md, "Task types")."""
    values = pd.Series(np.asarray(y, dtype=object).ravel()).dropna()
    try:
        levels = sorted(values.unique().tolist())
    except TypeError:  # mixed types: compare as text
        levels = sorted(values.astype(str).unique().tolist())
    return levels, (levels[-1] if levels else None)


def _binary_check(y, who: str):
    raw = np.asarray(y, dtype=object).ravel()
    missing = pd.isna(raw)
    if missing.any():
        raise OodfsError(
            f"{who} has {int(missing.sum())} missing values; a binary target needs a class per row"
        )
    levels, positive = binary_levels(raw)
    if len(levels) != 2:
        more = " (multiclass targets are not supported yet)" if len(levels) > 2 else ""
        plural = "s" if len(levels) != 1 else ""
        raise OodfsError(f"{who} has {len(levels)} level{plural}; a binary target has exactly 2{more}")
    as_text = [str(v) for v in raw] if isinstance(positive, str) else raw
    y01 = (np.asarray(as_text, dtype=object) == positive).astype(float)
    numeric = all(isinstance(v, (bool, np.bool_, int, float, np.integer, np.floating)) for v in levels)
    note = None
    if not (numeric and {float(v) for v in levels} == {0.0, 1.0}):
        note = f"{who}: positive class {positive!r} (1.0), the other class {levels[0]!r} (0.0)"
    return y01, note


#: predicted probabilities are clipped to [EPS, 1 - EPS] before the log-loss (scikit-learn's
#: log_loss clips at the float64 machine epsilon: an infinite loss would poison every mean)
EPS = float(np.finfo(float).eps)


def _binary_scores(y: np.ndarray, P: np.ndarray) -> dict[str, np.ndarray]:
    from sklearn.metrics import accuracy_score, brier_score_loss, log_loss, roc_auc_score

    P = np.clip(P, EPS, 1 - EPS)
    both = np.unique(y).size == 2
    out = {name: np.empty(P.shape[0]) for name in ("log_loss", "brier", "accuracy", "auc")}
    for i, p in enumerate(P):
        out["log_loss"][i] = log_loss(y, p, labels=[0.0, 1.0])
        out["brier"][i] = brier_score_loss(y, p, pos_label=1.0) if both else np.mean((p - y) ** 2)
        out["accuracy"][i] = accuracy_score(y, (p >= 0.5).astype(float))
        # AUC needs both classes in the environment: NaN otherwise (no row is stored)
        out["auc"][i] = roc_auc_score(y, p) if both else np.nan
    return out


BINARY = TaskType(
    name="binary",
    description="a two-level target (positive class 1.0); downstream log-loss, Brier score, accuracy "
    "and AUC in every test environment",
    scores=("log_loss", "brier", "accuracy", "auc"),
    titles={"log_loss": "log-loss", "brier": "Brier", "accuracy": "accuracy", "auc": "AUC"},
    lower_is_better={"log_loss": True, "brier": True, "accuracy": False, "auc": False},
    headline=("rank_avg", "f1", "log_loss_mean", "auc_mean", "accuracy_mean", "brier_mean"),
    check=_binary_check,
    scorer=_binary_scores,
)

BUILTIN_TASKS = (REGRESSION, BINARY)


@hookimpl
def oodfs_task_types():
    return list(BUILTIN_TASKS)


def builtin_task(task) -> TaskType:
    """``task`` as a TaskType: a TaskType as it is, a built-in one by name. Another task type's
    name is looked up in the registry (:func:`oodfs.contract.registry.get_task`), which this
    module does not import (no import circle in oodfs.contract: tests/test_layout.py)."""
    if isinstance(task, TaskType):
        return task
    for known in BUILTIN_TASKS:
        if known.name == task:
            return known
    raise OodfsError(
        f"task type {task!r} is not a built-in one ({', '.join(t.name for t in BUILTIN_TASKS)}); "
        "pass its TaskType (oodfs.plugin.get_task(name))"
    )


def infer_task(y) -> str:
    """``"binary"`` for a target with exactly two distinct (non-missing) values, else ``"regression"``."""
    values = pd.Series(np.asarray(y, dtype=object).ravel()).dropna()
    try:
        n = values.nunique()
    except TypeError:
        n = values.astype(str).nunique()
    return "binary" if n == 2 else "regression"
