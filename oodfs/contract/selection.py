"""Model-selection rules: which grid point of each method a report shows.

Every grid point is evaluated by the runner; a rule picks one per (setting, r_train, run,
method) afterwards, the same way for every method (DWR and SRDO included). A rule is an object
applied to the table of evaluated points (one row per point, metrics as columns).

Rules are a plugin kind (hook ``oodfs_selection_rules``): a third party declares a
:class:`SelectionRule` (the lowest value of a quantity the task type names wins) or a subclass
with its own :meth:`SelectionRule.choose`, without editing oodfs. The built-in rules below are
registered through the same hook.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from oodfs.contract.hookspecs import hookimpl
from oodfs.contract.task import TASK_KEY
from oodfs.contract.task_types import builtin_task
from oodfs.validation import OodfsError

#: a point evaluated at the method's own selected set (a k grid's "support" entry) carries this
#: entry in its stored params, which no method takes as a parameter (docs/PROTOCOL.md section 10,
#: "The k grid"); SUPPORT_MARK is how it reads in the stored JSON (sorted keys)
SUPPORT_PARAM = ("size", "support")
SUPPORT_MARK = '"size": "support"'
#: the quantities of the environment-aware rules: stored only for tasks with several training environments
ENV_QUANTITIES = ("train_domain", "loeo", "val_env")
#: the quantities computed from validation rows (a suite without n_val has none)
VALIDATION_QUANTITIES = ("val", "train_domain", "val_env")


@dataclass(frozen=True)
class SelectionRule:
    """A rule picks the grid point with the lowest value of a quantity the task type names
    (:data:`oodfs.contract.task_types.RULE_QUANTITIES`): ``"val"`` is the validation loss (RMSE for
    regression, log-loss for binary), and so on; the rule never names a metric itself.
    ``worst``: the quantity is per training environment and the rule takes its largest value."""

    name: str
    description: str
    quantity: str | None = None  # lowest value wins; None: each method's default point
    upper_bound: bool = False  # peeks at test data: only an upper bound on what selection can do
    worst: bool = False

    @property
    def label(self) -> str:
        return f"{self.name} (upper bound)" if self.upper_bound else self.name

    def metric(self, task="regression") -> str | None:
        """The stored metric this rule reads for ``task``: a TaskType, or the name of a built-in one
        (the registry's lookup, :func:`oodfs.contract.registry.get_task`, gives any other's)."""
        return None if self.quantity is None else builtin_task(task).metric(self.quantity)

    def choose(
        self, points: pd.DataFrame, rows: pd.DataFrame | None = None, task="regression"
    ) -> pd.DataFrame:
        """The chosen point per task (ties: the earlier grid point).

        ``points``: one row per evaluated grid point, with the task's key columns (setting,
        r_train, run, method), ``point``, ``is_default`` and the stored metrics as columns;
        ``rows``: the long results rows (a per-environment rule reads them); ``task``: the run's
        task type (a TaskType, or a built-in one's name). Returns one of ``points``' rows per
        task. A subclass may override this (the conformance kit's
        :func:`oodfs.testing.check_selection_rule` checks the result)."""
        points = points.sort_values(["setting", "r_train", "run", "point"], kind="stable")
        if self.quantity is None:
            return (
                points[points["is_default"] == 1].groupby(TASK_KEY, sort=False).head(1).reset_index(drop=True)
            )
        metric = self.metric(task)
        values = _worst_per_point(points, rows, metric) if self.worst else points.get(metric)
        if values is None or values.isna().all():
            raise OodfsError(
                f"the `{self.name}` rule needs the metric {metric!r}, which this run lacks"
                + (
                    " (no validation data: n_val = 0); use --selection default or oracle"
                    if self.quantity == "val"
                    else ""
                )
                + (
                    " (it needs several training environments, e.g. r_train = [[1.5, 2.0, 3.0]], "
                    "and validation data for train-domain and worst-env)"
                    if self.quantity in ENV_QUANTITIES
                    else ""
                )
            )
        ranked = points.assign(_key=values.fillna(float("inf")).to_numpy())
        return points.loc[ranked.groupby(TASK_KEY, sort=False)["_key"].idxmin()].reset_index(drop=True)


def _worst_per_point(points: pd.DataFrame, rows: pd.DataFrame | None, metric: str) -> pd.Series | None:
    """Each point's largest per-environment value of ``metric`` (aligned with ``points``)."""
    if rows is None or "metric" not in rows:
        return None
    per_env = rows[rows["metric"] == metric]
    if per_env.empty:
        return None
    keys = TASK_KEY + ["point"]
    worst = per_env.groupby(keys, sort=False)["value"].max().rename("_worst")
    return points.join(worst, on=keys)["_worst"]


RULES = {
    r.name: r
    for r in (
        SelectionRule(
            "val",
            "grid point with the lowest downstream validation loss (RMSE; log-loss for a binary target) "
            "on held-out data of the training environment (no test data)",
            quantity="val",
        ),
        SelectionRule(
            "oracle",
            "grid point with the lowest mean test loss -- an UPPER BOUND that peeks at the test environments",
            quantity="mean",
            upper_bound=True,
        ),
        SelectionRule("default", "each method's default grid point, no search"),
        # DomainBed's two rules (Gulrajani and Lopez-Paz 2021, domainbed/model_selection.py), for
        # suites that train on several environments (docs/PROTOCOL.md, "Several training environments")
        SelectionRule(
            "train-domain",
            "training-domain validation: grid point with the lowest mean over training "
            "environments of the downstream validation loss on each one's held-out rows",
            quantity="train_domain",
        ),
        SelectionRule(
            "loeo",
            "leave-one-environment-out: grid point with the lowest mean over training environments of "
            "the downstream loss in that environment after refitting the method and the model without it",
            quantity="loeo",
        ),
        # computed after the run from the stored per-environment validation losses
        SelectionRule(
            "worst-env",
            "worst training environment: grid point with the lowest largest validation loss over the "
            "training environments' held-out rows",
            quantity="val_env",
            worst=True,
        ),
    )
}


@hookimpl
def oodfs_selection_rules() -> list[SelectionRule]:
    return list(RULES.values())


def __getattr__(name):
    # ``rules`` and ``get_rule`` moved beside the registry (oodfs.contract.registry); their old
    # import path still works. Imported on use only: nothing in oodfs.contract reaches it
    # (tests/test_layout.py)
    if name in ("rules", "get_rule"):
        from oodfs.contract import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
