"""Model-selection rules: which grid point of each method a table reports.

Every grid point is evaluated by the runner; a rule picks one per (setting, r_train, run,
method) afterwards, the same way for every method (DWR and SRDO included).
"""
from __future__ import annotations

import pandas as pd

from .validation import OodfsError

RULES = {
    "val": "grid point with the lowest downstream RMSE on held-out data of the training environment (no test data)",
    "oracle": "grid point with the lowest mean test RMSE -- an UPPER BOUND that peeks at the test environments",
    "default": "each method's default grid point, no search",
}

TASK = ["setting", "r_train", "run", "method"]


def check_rule(rule: str) -> str:
    if rule not in RULES:
        raise OodfsError(f"unknown model-selection rule {rule!r}; valid: {', '.join(RULES)}")
    return rule


def rule_label(rule: str) -> str:
    return "oracle (upper bound)" if rule == "oracle" else rule


def grid_points(results: pd.DataFrame) -> pd.DataFrame:
    """One row per evaluated grid point, metrics as columns (from the long results table)."""
    ok = results[results["status"] == "ok"]
    keys = TASK + ["point"]
    wide = ok.pivot_table(index=keys, columns="metric", values="value", aggfunc="first")
    wide.columns.name = None
    info = ok.groupby(keys, sort=False)[["params", "is_default", "scores", "fit_seconds", "downstream_seconds"]].first()
    return wide.join(info).reset_index()


def select(points: pd.DataFrame, rule: str) -> pd.DataFrame:
    """The chosen grid point per task under ``rule`` (ties: the earlier grid point)."""
    check_rule(rule)
    points = points.sort_values(TASK + ["point"])
    if rule == "default":
        chosen = points[points["is_default"] == 1].groupby(TASK, sort=False).head(1)
    else:
        column = "rmse_val" if rule == "val" else "rmse_mean"
        if column == "rmse_val" and points[column].isna().all():
            raise OodfsError("the `val` rule needs validation data; this run has none (n_val = 0): use --selection default or oracle")
        ranked = points.assign(_key=points[column].fillna(float("inf")))
        chosen = points.loc[ranked.groupby(TASK, sort=False)["_key"].idxmin()]
    return chosen.reset_index(drop=True)
