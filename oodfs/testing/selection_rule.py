"""The checks of a selection rule (oodfs.testing.check_selection_rule)."""

from __future__ import annotations

import numpy as np

from oodfs.testing._core import _declared, _ensure, _kind_check


def _points_table(extra_metrics=(), seed: int = 0):
    """An evaluated-points table as a rule sees it: 2 settings x 2 r_train x 2 runs x 2 methods x
    3 grid points, every registered metric (and ``extra_metrics``) drawn at random."""
    import pandas as pd

    from oodfs.contract.registry import registry

    rng = np.random.default_rng(seed)
    rows = [
        {"setting": s, "r_train": r, "run": run, "method": m, "point": p, "is_default": int(p == 1)}
        for s in ("poly", "mlp")
        for r in (1.5, 2.5)
        for run in (0, 1)
        for m in ("ols", "dwr")
        for p in range(3)
    ]
    points = pd.DataFrame(rows)
    for name in sorted({*registry().names("metric"), *extra_metrics}):
        points[name] = rng.random(len(points))
    return points


def check_selection_rule(rule) -> None:
    """Check a :class:`oodfs.contract.selection.SelectionRule` (built-in, declared or a subclass with
    its own ``choose``): on a table of evaluated points it returns one of each task's rows per task,
    leaves the table as it was, and chooses the same points whatever the order of the rows."""
    from oodfs.contract.selection import SelectionRule
    from oodfs.contract.task import TASK_KEY

    metric = rule.metric() if isinstance(rule, SelectionRule) else None  # regression's, for the table
    points = _points_table([metric] if metric else [])
    tasks = points[TASK_KEY].drop_duplicates()

    def chosen(table):
        out = rule.choose(table)
        _ensure(set(points.columns) <= set(out.columns), "choose() dropped columns of the points table")
        return out.sort_values(TASK_KEY, kind="stable").reset_index(drop=True)[list(points.columns)]

    def one_row_per_task():
        out = chosen(points.copy())
        _ensure(len(out) == len(tasks), f"{len(out)} rows chosen for {len(tasks)} tasks (one per task)")
        _ensure(not out[TASK_KEY].duplicated().any(), "a task has two chosen rows")
        merged = out.merge(points, on=list(points.columns), how="left", indicator=True)
        _ensure((merged["_merge"] == "both").all(), "a chosen row is not a row of the points table")

    def leaves_the_input():
        table = points.copy()
        rule.choose(table)
        _ensure(table.equals(points), "choose() changed the table it was given")

    def row_order_free():
        shuffled = points.sample(frac=1, random_state=1)
        _ensure(chosen(shuffled).equals(chosen(points.copy())), "the choice depends on the order of the rows")

    label = f"selection rule {getattr(rule, 'name', rule)!r}"
    _kind_check(
        label,
        {
            "check_rule_metadata": lambda: (
                _declared(rule),
                _ensure(isinstance(rule, SelectionRule), "not an oodfs.contract.selection.SelectionRule"),
            ),
            "check_rule_one_row_per_task": one_row_per_task,
            "check_rule_leaves_the_input": leaves_the_input,
            "check_rule_row_order": row_order_free,
        },
    )
