"""Everything a plugin author imports, from one module (CONTRIBUTING.md, "Writing a plugin").

::

    from oodfs.plugin import Selector, hookimpl

    class Variance(Selector):
        '''Feature variance (a toy filter).'''
        name = "variance"

        def _fit_scores(self, X, y, sample_weight):
            return X.var(axis=0)

    @hookimpl
    def oodfs_selectors():
        return [Variance]

Every plugin kind has one row in :data:`KINDS`: its name, the hook that registers it and its base
class, in one naming scheme (kind ``selection_rule``, hook ``oodfs_selection_rules``, class
:class:`SelectionRule`). The registry, ``oodfs plugins``, the conformance kit
(:mod:`oodfs.testing`) and the table in CONTRIBUTING.md read that table. A *declared* kind's hook
returns objects (``TaskType(...)``), the others' return classes.

The names stay importable where they were defined (``oodfs.contract.selection.SelectionRule``,
``oodfs.contract.extensions.OutputFormat``, the earlier name of :class:`LeaderboardFormat`), so a
plugin written against them keeps working.
"""

from oodfs.contract.api import (
    Environment,
    GridFit,
    Selector,
    WeightCollapseWarning,
    Weighter,
    ranking_from_scores,
    weight_diagnostics,
)
from oodfs.contract.downstream import DownstreamModel, NoSettings
from oodfs.contract.extensions import FORMAT_LANGUAGES, Backend, BackendOption, Command, LeaderboardFormat
from oodfs.contract.hookspecs import hookimpl
from oodfs.contract.kinds import KINDS, Kind, kind_named
from oodfs.contract.metrics import Evaluation, Metric, SuspectRule, diagnostic, task_metrics
from oodfs.contract.progress import point_done
from oodfs.contract.registry import get_rule, get_task, registry
from oodfs.contract.selection import SelectionRule
from oodfs.contract.task_types import RULE_QUANTITIES, TaskType
from oodfs.contract.wls import WLSSelector, selector_for_weighter
from oodfs.validation import OodfsError

__all__ = [
    # the table of kinds
    "KINDS",
    "Kind",
    "kind_named",
    "hookimpl",
    # the base class (or declaration type) of each kind, in the table's order
    "Selector",
    "Weighter",
    "Environment",
    "Metric",
    "TaskType",
    "DownstreamModel",
    "SelectionRule",
    "Backend",
    "LeaderboardFormat",
    "Command",
    # what a plugin of a kind uses
    "BackendOption",
    "Evaluation",
    "FORMAT_LANGUAGES",
    "GridFit",
    "NoSettings",
    "OodfsError",
    "RULE_QUANTITIES",
    "SuspectRule",
    "WLSSelector",
    "WeightCollapseWarning",
    "diagnostic",
    "point_done",
    "ranking_from_scores",
    "selector_for_weighter",
    "task_metrics",
    "weight_diagnostics",
    # lookups of the registered plugins
    "get_rule",
    "get_task",
    "registry",
]
