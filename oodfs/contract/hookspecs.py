"""The whole plugin contract of oodfs.

A plugin is a module (or object) with one or more of the hook implementations below, made
known through the ``oodfs`` entry-point group::

    # pyproject.toml of a third-party package
    [project.entry-points.oodfs]
    my_plugin = "my_package.plugin"

    # my_package/plugin.py
    from oodfs.plugin import Selector, hookimpl

    class Variance(Selector):
        '''Feature variance (a toy filter).'''
        name = "variance"
        ...

    @hookimpl
    def oodfs_selectors():
        return [Variance]

Each hook returns a list of classes (metrics, task types, selection rules, leaderboard formats and
commands: a list of declarations, objects). The hook of each kind is named in the table of kinds
(:mod:`oodfs.contract.kinds`, exported as ``oodfs.plugin.KINDS``). Names must be unique within a
kind across all plugins; a clash is an error naming both providers. The built-in methods and
environments are plugins registered in exactly this way (see ``plugins/`` in the source tree).
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("oodfs")
hookimpl = pluggy.HookimplMarker("oodfs")


@hookspec
def oodfs_selectors() -> list[type]:
    """Return a list of :class:`oodfs.Selector` subclasses (feature selectors)."""


@hookspec
def oodfs_weighters() -> list[type]:
    """Return a list of :class:`oodfs.Weighter` subclasses (sample weighters).

    Every weighter also becomes a selector of the same name (weighted least squares on its
    weights, scores = |coefficients|) unless a selector of that name is registered.
    """


@hookspec
def oodfs_environments() -> list[type]:
    """Return a list of :class:`oodfs.Environment` subclasses (data sources for benchmarks)."""


@hookspec
def oodfs_metrics() -> list:
    """Return a list of :class:`oodfs.contract.metrics.Metric` declarations (objects, not classes).

    The runner computes every registered metric for every grid point and stores its values
    (with the test environment in column ``env`` and the number of kept features in ``k``);
    the leaderboard shows those with ``role="headline"``. The built-in metrics are declared
    the same way, in :mod:`oodfs.contract.metrics`.
    """


@hookspec
def oodfs_task_types() -> list:
    """Return a list of :class:`oodfs.contract.task_types.TaskType` declarations (objects, not classes).

    A task type owns its target check, the per-environment scores of a downstream model, its
    validation loss and its headline metrics; the built-ins (``regression``, ``binary``) are
    declared the same way, in :mod:`oodfs.contract.task_types`.
    """


@hookspec
def oodfs_downstream_models() -> list[type]:
    """Return a list of :class:`oodfs.contract.downstream.DownstreamModel` subclasses: the models
    trained on each selected feature subset (``downstream = [...]`` in a suite)."""


# -- the extension points around the methods (oodfs.contract.selection, oodfs.contract.extensions) --
@hookspec
def oodfs_selection_rules() -> list:
    """Return a list of :class:`oodfs.contract.selection.SelectionRule` declarations (objects).

    A rule picks one grid point per task from the table of evaluated points
    (:meth:`~oodfs.contract.selection.SelectionRule.choose`); ``--selection NAME`` and a suite's
    ``selection`` name it. The built-in rules (val, oracle, default, train-domain, loeo) are
    declared the same way.
    """


@hookspec
def oodfs_backends() -> list[type]:
    """Return a list of :class:`oodfs.contract.extensions.Backend` subclasses (where jobs run:
    ``oodfs bench --backend NAME``, with ``--backend-option KEY=VALUE`` for the options each declares)."""


@hookspec
def oodfs_leaderboard_formats() -> list:
    """Return a list of :class:`oodfs.contract.extensions.LeaderboardFormat` declarations
    (``oodfs leaderboard --format NAME``)."""


@hookspec
def oodfs_commands() -> list:
    """Return a list of :class:`oodfs.contract.extensions.Command` declarations (``oodfs NAME``).

    Commands are read when the ``oodfs`` program starts, from installed plugins only (a
    ``--plugin`` module comes too late to add one).
    """
