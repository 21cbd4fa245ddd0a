"""Conformance kit: check that a plugin keeps the oodfs contract.

One line per plugin author::

    from oodfs.testing import parametrize_plugin_checks

    @parametrize_plugin_checks([MySelector, MyWeighter, MyEnvironment])
    def test_my_plugins(plugin, check):
        check(plugin)

or, outside pytest, ``check_selector(MySelector)`` / ``check_weighter(...)`` /
``check_environment(...)``, which run every check and raise one :class:`AssertionError` naming
each failed check and why. The other kinds have one function each, named in the table of kinds
(:data:`oodfs.plugin.KINDS`, column ``checks``; :data:`KIND_CHECKS` here): ``check_metric(metric)``,
``check_task_type(task, y=example_target)``, ``check_downstream_model(Model)``,
``check_selection_rule(rule)``, ``check_backend(MyBackend, **options)``,
``check_leaderboard_format(fmt, leaderboard)`` (``check_output_format``, its earlier name; with a
leaderboard of :func:`hostile_results`, names that are markup in one format or another) and
``check_command(command)``. A task type's checks also look up what must come with it -- a
downstream model that predicts it, the metrics its rules read, a method that handles it -- and
name the one that is missing and how to add it.

The kit is a package with one module per kind (``oodfs/testing/selector.py``, ``metric.py``,
``task_type.py``, ...); every name is importable from ``oodfs.testing`` itself.

A check also accepts an *instance* (``MyNet(max_epochs=10)``): its parameters are used instead
of the class defaults (a way to shrink an expensive plugin, as
long as it still learns something from 300 rows; the grid checks use the class's grid and
defaults, as the benchmark does).

Data are small (n = 300 rows, d = 6 features) and seeded, so the checks are deterministic
and fast. Every check returns normally when the plugin conforms and raises ``AssertionError``
("<plugin>: <check> failed: <why>") when it does not; a crash inside the plugin is reported
the same way, with the original exception chained.

Optional class attributes the kit reads (none is required):

* ``Selector.supports_sample_weight`` (in :class:`oodfs.Selector`, default True);
* ``permutation_invariant`` (selectors, default True): reordering the columns of X
  reorders the scores and changes nothing else. Declare ``False`` when a fit depends on the
  column order (e.g. a network whose initial weights are drawn per input column);
* ``task_types`` (selectors, default ``("regression",)``): a selector that declares "binary"
  must rank the two features of an easy logistic model first on a 0/1 target; one that does
  not must refuse a binary task with one line;
* ``example_envs`` / ``invalid_envs`` (environments): a few valid environment ids and a few
  ids that ``check_env`` must reject. The built-in ``synthetic`` environment gets
  ``(2.5, -1.5)`` / ``(0.5, 1.0, -1.0)`` (|r| must exceed 1) when it does not declare them.

What "deterministic" means here: a selector whose scores do not change with
``random_state`` (OLS, correlation, LASSO, XGBoost, ...) must match separate fits in
``fit_grid`` to 1e-6, give the same scores for ``sample_weight`` of ones as for none, and
match row duplication for integer ``sample_weight``; a selector whose scores depend on the
seed (random forest, STG, ...) must be reproducible for a fixed seed, match separate fits in
``fit_grid`` to 1e-2 (ties may be broken differently when fits are shared) with each result
nearest its own point's separate fit, and move with ``sample_weight`` in the right direction.
"""

from oodfs.contract.kinds import KINDS
from oodfs.testing._core import (
    ENVIRONMENT_CHECKS,
    SELECTOR_CHECKS,
    WEIGHTER_CHECKS,
    check_plugin,
    parametrize_plugin_checks,
    plugin_checks,
    with_defaults,
    with_envs,
)
from oodfs.testing.backend import backend_probe, check_backend
from oodfs.testing.command import check_command
from oodfs.testing.downstream_model import check_downstream_model
from oodfs.testing.environment import check_environment
from oodfs.testing.leaderboard_format import (
    HOSTILE_METHODS,
    HOSTILE_SETTINGS,
    check_leaderboard_format,
    check_output_format,
    hostile_results,
)
from oodfs.testing.metric import check_metric
from oodfs.testing.selection_rule import check_selection_rule
from oodfs.testing.selector import check_selector
from oodfs.testing.task_type import check_task_type
from oodfs.testing.weighter import check_weighter

__all__ = [
    "ENVIRONMENT_CHECKS",
    "HOSTILE_METHODS",
    "HOSTILE_SETTINGS",
    "KIND_CHECKS",
    "SELECTOR_CHECKS",
    "WEIGHTER_CHECKS",
    "backend_probe",
    "check_backend",
    "check_command",
    "check_downstream_model",
    "check_environment",
    "check_leaderboard_format",
    "check_metric",
    "check_output_format",
    "check_plugin",
    "check_selection_rule",
    "check_selector",
    "check_task_type",
    "check_weighter",
    "hostile_results",
    "parametrize_plugin_checks",
    "plugin_checks",
    "with_defaults",
    "with_envs",
]

#: kind (oodfs.plugin.KINDS) -> the function that runs every check of a plugin of that kind
KIND_CHECKS = {kind.name: globals()[kind.checks] for kind in KINDS}

_MODULES = (
    "_core",
    "selector",
    "weighter",
    "environment",
    "metric",
    "task_type",
    "downstream_model",
    "selection_rule",
    "backend",
    "leaderboard_format",
    "command",
)


def __getattr__(name):
    # every name the kit's single module had (its single checks, check_selector_fit_grid, and its
    # helpers) is still found here, in the module of its kind
    import importlib

    for module in _MODULES:
        found = importlib.import_module(f"oodfs.testing.{module}")
        if name in vars(found):
            return vars(found)[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
