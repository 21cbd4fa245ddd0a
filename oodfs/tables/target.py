"""Which task a table's target makes: regression or binary, and a binary target's positive class
(docs/PROTOCOL.md, "Own tables": task).

A target with exactly two distinct values (0/1, true/false, two text levels) is binary unless
regression is asked for; a numeric target with more values is regression; a text target with
three or more levels is refused (multiclass is not supported yet). The positive class (1.0) is
``True`` for booleans, the larger value for numbers and the last level in sorted order for text,
or the level named by ``positive``; a note says which and why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from oodfs.contract.task_types import binary_levels
from oodfs.tables.prepare import _is_nested
from oodfs.validation import OodfsError

#: the task types a table's target can be (``oodfs select --task``); None: decided from the target
TASKS = ("regression", "binary")
#: how a note spells the options that change the decision: ``oodfs select``'s, and a suite file's
#: (``positive = ...`` in a setting's params, ``task = "regression"``)
SELECT_OPTIONS = {"positive": "--positive {}", "task": "--task regression", "quote": False}
SUITE_OPTIONS = {
    "positive": "positive = {} in the setting's params",
    "task": 'task = "regression" in the suite file',
    "quote": True,  # a text level as TOML writes it
}


@dataclass(frozen=True)
class TargetTask:
    """``task`` ("regression" or "binary"); for a binary target its two ``levels`` in sorted order
    and the ``positive`` one (else ``()`` and None); ``note``: the sentence for the user or None."""

    task: str
    levels: tuple = ()
    positive: object = None
    note: str | None = None

    def label(self, value: float) -> object:
        """The target's own level for 1.0 (the positive class) or 0.0."""
        other = next(v for v in self.levels if v != self.positive)
        return self.positive if value == 1.0 else other


def level_text(value) -> str:
    """A level as the user wrote it: 1.0 -> "1", True -> "True", "yes" -> "yes"."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, float, np.integer, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s)


def target_task(values: pd.Series, target, task=None, positive=None, options=SELECT_OPTIONS) -> TargetTask:
    """The task of the target column ``values`` (missing values ignored): ``task`` None decides it
    (two levels: binary), "regression" or "binary" checks that it can be; ``positive`` names the
    positive level (compared as text, so ``"1"`` names 1.0). One OodfsError for a target that
    cannot be the task. ``options``: how the note spells the options (SELECT_OPTIONS, SUITE_OPTIONS)."""
    if task not in (None, *TASKS):
        raise OodfsError(f"task (--task) must be one of {', '.join(TASKS)}, got {task!r}")
    if _is_nested(values):  # lists or records: prepare_table names the column
        return TargetTask(task or "regression")
    s = values.dropna()
    levels, default_positive = binary_levels(s) if len(s) else ([], None)
    n = len(levels)
    numeric = _is_numeric(values)
    if task is None:
        if n == 2:
            task = "binary"
        elif numeric or n <= 1:  # an empty or constant target: the regression checks say so
            task = "regression"
        else:
            raise OodfsError(
                f"target column {target!r} has {n} levels (text); multiclass is not supported yet: "
                "oodfs ranks features for a numeric target or a two-level one"
            )
    if task == "regression":
        if positive is not None:
            raise OodfsError(
                "positive (--positive) names the positive class of a binary target; the task is regression"
            )
        if n == 2 and numeric:
            shown = ", ".join(level_text(v) for v in levels)
            return TargetTask(
                "regression",
                note=f"target {target!r} has two values ({shown}): regressed as a number, as asked "
                "(task regression; the default for two values is binary)",
            )
        return TargetTask("regression")
    if n != 2:
        more = "; multiclass is not supported yet" if n > 2 else ""
        raise OodfsError(
            f"target column {target!r} has {n} level{'s' if n != 1 else ''}; "
            f"a binary task needs exactly 2{more}"
        )
    if positive is None:
        chosen = default_positive
        why = (
            "the true value"
            if isinstance(chosen, (bool, np.bool_))
            else "the larger value"
            if numeric
            else "the last level in sorted order"
        )
    else:
        matches = [v for v in levels if level_text(v) == level_text(positive)]
        if not matches:
            raise OodfsError(
                f"positive class {positive!r} (--positive) is not a level of target {target!r}; "
                f"its levels: {', '.join(level_text(v) for v in levels)}"
            )
        chosen, why = matches[0], "as asked"
    other = next(v for v in levels if v is not chosen and level_text(v) != level_text(chosen))
    instead = f", {options['task']} to regress it as a number" if numeric else ""
    shown = f'"{other}"' if options["quote"] and isinstance(other, str) else level_text(other)
    swap = options["positive"].format(shown)
    note = (
        f"target {target!r} has two levels: binary task, positive class {level_text(chosen)!r} (1.0, {why}), "
        f"{level_text(other)!r} 0.0 ({swap} to swap them{instead})"
    )
    return TargetTask("binary", tuple(levels), chosen, note)


def binary_column(values: pd.Series, choice: TargetTask) -> pd.Series:
    """The target as 1.0 (the positive level) and 0.0; a missing value stays missing."""
    hit = values.map(lambda v: level_text(v) == level_text(choice.positive) if pd.notna(v) else np.nan)
    return hit.astype(float)
