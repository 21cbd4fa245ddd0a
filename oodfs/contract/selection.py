"""Model-selection rules: which grid point of each method a report shows.

Every grid point is evaluated by the runner; a rule picks one per (setting, r_train, run,
method) afterwards, the same way for every method (DWR and SRDO included). A rule is an object
applied to the table of evaluated points (one row per point, metrics as columns).

Rules are a plugin kind (hook ``oodfs_selection_rules``): a third party declares a
:class:`SelectionRule` (the lowest value of a stored metric wins) or a subclass with its own
:meth:`SelectionRule.choose`, without editing oodfs. The built-in rules below are registered
through the same hook.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from oodfs.contract.hookspecs import hookimpl
from oodfs.contract.task import TASK_KEY
from oodfs.validation import OodfsError

#: the metrics of the environment-aware rules: stored only for tasks with several training environments
ENV_METRICS = ("rmse_train_domain", "rmse_loeo")


@dataclass(frozen=True)
class SelectionRule:
    name: str
    description: str
    metric: str | None = None  # lowest value wins; None: each method's default point
    upper_bound: bool = False  # peeks at test data: only an upper bound on what selection can do

    @property
    def label(self) -> str:
        return f"{self.name} (upper bound)" if self.upper_bound else self.name

    def choose(self, points: pd.DataFrame) -> pd.DataFrame:
        """The chosen point per task (ties: the earlier grid point).

        ``points``: one row per evaluated grid point, with the task's key columns (setting,
        r_train, run, method), ``point``, ``is_default`` and the stored metrics as columns. Returns
        one of its rows per task. A subclass may override this (the conformance kit's
        :func:`oodfs.testing.check_selection_rule` checks the result)."""
        points = points.sort_values(["setting", "r_train", "run", "point"], kind="stable")
        if self.metric is None:
            return (
                points[points["is_default"] == 1].groupby(TASK_KEY, sort=False).head(1).reset_index(drop=True)
            )
        if self.metric not in points or points[self.metric].isna().all():
            raise OodfsError(
                f"the `{self.name}` rule needs the metric {self.metric!r}, which this run lacks"
                + (
                    " (no validation data: n_val = 0); use --selection default or oracle"
                    if self.metric == "rmse_val"
                    else ""
                )
                + (
                    " (it needs several training environments, e.g. r_train = [[1.5, 2.0, 3.0]], "
                    "and validation data for train-domain)"
                    if self.metric in ENV_METRICS
                    else ""
                )
            )
        ranked = points.assign(_key=points[self.metric].fillna(float("inf")))
        return points.loc[ranked.groupby(TASK_KEY, sort=False)["_key"].idxmin()].reset_index(drop=True)


RULES = {
    r.name: r
    for r in (
        SelectionRule(
            "val",
            "grid point with the lowest downstream RMSE on held-out data of the training environment "
            "(no test data)",
            metric="rmse_val",
        ),
        SelectionRule(
            "oracle",
            "grid point with the lowest mean test RMSE -- an UPPER BOUND that peeks at the test environments",
            metric="rmse_mean",
            upper_bound=True,
        ),
        SelectionRule("default", "each method's default grid point, no search"),
        # DomainBed's two rules (Gulrajani and Lopez-Paz 2021, domainbed/model_selection.py), for
        # suites that train on several environments (docs/PROTOCOL.md, "Several training environments")
        SelectionRule(
            "train-domain",
            "training-domain validation: grid point with the lowest mean over training "
            "environments of the downstream RMSE on each one's held-out rows",
            metric="rmse_train_domain",
        ),
        SelectionRule(
            "loeo",
            "leave-one-environment-out: grid point with the lowest mean over training environments of "
            "the downstream RMSE in that environment after refitting the method and the regressor without it",
            metric="rmse_loeo",
        ),
    )
}


@hookimpl
def oodfs_selection_rules() -> list[SelectionRule]:
    return list(RULES.values())


def rules() -> dict[str, SelectionRule]:
    """Every registered rule by name: the built-in ones first, then those of plugins."""
    from oodfs.contract.registry import registry  # the registry imports this module

    found = {name: info.cls for name, info in registry().entries("rule").items()}
    return {**{n: found[n] for n in RULES if n in found}, **dict(sorted(found.items()))}


def get_rule(name: str) -> SelectionRule:
    """The registered rule called ``name``, or an OodfsError naming the valid ones."""
    known = rules()
    if name not in known:
        raise OodfsError(f"unknown model-selection rule {name!r}; valid: {', '.join(known)}")
    return known[name]
