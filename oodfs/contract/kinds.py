"""The plugin kinds: one row per kind, naming its hook and its base class (CONTRIBUTING.md,
"Writing a plugin").

One naming scheme: a kind is a snake_case noun, its hook is ``oodfs_`` + the kind + ``s``, its
base class the kind in CamelCase (``selection_rule``, ``oodfs_selection_rules``,
:class:`SelectionRule`). The registry (:mod:`oodfs.contract.registry`), the conformance kit
(:mod:`oodfs.testing`), ``oodfs plugins`` and the plugin-author docs read this table; a plugin
author reads it as :data:`oodfs.plugin.KINDS`.

The kinds' earlier names (``task``, ``downstream``, ``rule``, ``format``) stay accepted as
aliases wherever a kind is named (``registry().entries("rule")``), and the hooks are those
plugins have always implemented.
"""

from __future__ import annotations

from dataclasses import dataclass

from oodfs.contract.api import Environment, Selector, Weighter
from oodfs.contract.downstream import DownstreamModel
from oodfs.contract.extensions import Backend, Command, LeaderboardFormat
from oodfs.contract.metrics import Metric
from oodfs.contract.selection import SelectionRule
from oodfs.contract.task_types import TaskType


@dataclass(frozen=True)
class Kind:
    """One plugin kind. ``declared``: its hook returns declarations (instances of ``base`` with a
    ``name`` and a ``description``), not subclasses of ``base``; ``aliases``: earlier names of the
    kind, still accepted; ``checks``: the conformance kit's function for one plugin of the kind
    (its name in :mod:`oodfs.testing`)."""

    name: str
    hook: str
    base: type
    declared: bool
    description: str
    checks: str
    aliases: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The kind in words (``selection rule``), as messages name it."""
        return self.name.replace("_", " ")


KINDS: tuple[Kind, ...] = (
    Kind("selector", "oodfs_selectors", Selector, False, "a feature selector", "check_selector"),
    Kind(
        "weighter",
        "oodfs_weighters",
        Weighter,
        False,
        "a sample weighter (also a selector: weighted least squares on its weights)",
        "check_weighter",
    ),
    Kind("environment", "oodfs_environments", Environment, False, "a data source", "check_environment"),
    Kind("metric", "oodfs_metrics", Metric, True, "a stored and reported number", "check_metric"),
    Kind(
        "task_type",
        "oodfs_task_types",
        TaskType,
        True,
        "a kind of target and how a model is scored on it",
        "check_task_type",
        aliases=("task",),
    ),
    Kind(
        "downstream_model",
        "oodfs_downstream_models",
        DownstreamModel,
        False,
        "the model trained on each selected subset",
        "check_downstream_model",
        aliases=("downstream",),
    ),
    Kind(
        "selection_rule",
        "oodfs_selection_rules",
        SelectionRule,
        True,
        "which grid point of a method a report shows",
        "check_selection_rule",
        aliases=("rule",),
    ),
    Kind("backend", "oodfs_backends", Backend, False, "where a run's jobs execute", "check_backend"),
    Kind(
        "leaderboard_format",
        "oodfs_leaderboard_formats",
        LeaderboardFormat,
        True,
        "a text form of the leaderboard",
        "check_leaderboard_format",
        aliases=("format",),
    ),
    Kind("command", "oodfs_commands", Command, True, "a command of the oodfs program", "check_command"),
)

#: kind name (and every alias) -> its row
BY_NAME: dict[str, Kind] = {name: k for k in KINDS for name in (k.name, *k.aliases)}


def kind_named(name: str) -> Kind | None:
    """The kind called ``name`` or one of its earlier names, or None."""
    return BY_NAME.get(name)


def unknown_plugin(kind: str, name, table) -> str:
    """The one line that says ``name`` is no registered plugin of ``kind`` (its name in
    :data:`KINDS`) and names the valid ones (the names of ``table``)."""
    valid = ", ".join(sorted(table)) or "(none registered)"
    return f"unknown {BY_NAME[kind].label} {name!r}; valid: {valid}"
