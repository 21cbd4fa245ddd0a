"""A method's own fit diagnostics: stored when its plugin declares them, flagged by the rule it
declares, named in a warning when nobody declares them (the core knows no particular method)."""

import json

import pytest

from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report
from oodfs.results.store import ResultStore, load_results
from oodfs.run.evaluate import UndeclaredDiagnosticWarning
from oodfs.run.runner import run_suite

from .conftest import tiny

PLUGIN = '''
import numpy as np
import oodfs


class Wobbly(oodfs.Weighter):
    """Weights that a test can make look suspect."""
    name = "wobbly"

    def _fit_weights(self, X):
        return np.ones(len(X))

    def _diagnostics(self):
        return {"wobble": WOBBLE, "secret": 1.0}


WOBBLE = 0.95


@oodfs.hookimpl
def oodfs_weighters():
    return [Wobbly]


@oodfs.hookimpl
def oodfs_metrics():
    return [oodfs.diagnostic("wobble", "wobble", None, "how wobbly the weights are",
                             oodfs.SuspectRule("the weights wobble", above=0.9))]
'''


def run(tmp_path, wobble: float):
    plugin = tmp_path / f"wobbly_{str(wobble).replace('.', '_')}.py"
    plugin.write_text(PLUGIN.replace("WOBBLE = 0.95", f"WOBBLE = {wobble}"))
    out = tmp_path / f"out{wobble}"
    with pytest.warns(UndeclaredDiagnosticWarning, match=r"wobbly: diagnostics secret are not stored"):
        run_suite(
            tiny(runs=1, methods=["wobbly", "ols"]),
            out,
            plugin_modules=(str(plugin),),
            progress=False,
            isolate=False,
        )
    return out


def test_a_declared_diagnostic_is_stored_and_flagged_by_its_rule(tmp_path):
    out = run(tmp_path, 0.95)
    rows = load_results(out)
    wobble = rows[(rows["metric"] == "wobble") & (rows["method"] == "wobbly")]["value"]
    assert len(wobble) and (wobble == 0.95).all()
    assert "secret" not in set(rows["metric"])  # undeclared: not stored
    declared = {d["name"]: d for d in ResultStore(out).get_meta("metrics")}
    assert declared["wobble"]["suspect"] == {
        "note": "the weights wobble",
        "below": None,
        "above": 0.9,
        "plus": [],
    }
    board = Leaderboard(Report.from_path(out)).to_markdown()
    assert (
        "## Weight diagnostics" in board
        and "`wobbly` (poly): the weights wobble in 1 of 1 chosen fits" in board
    )


def test_a_diagnostic_within_its_rule_is_not_flagged(tmp_path):
    board = Leaderboard(Report.from_path(run(tmp_path, 0.5))).to_markdown()
    assert "the weights wobble" not in board


def test_dwr_and_srdo_declare_their_own_diagnostics():
    from oodfs.contract.metrics import BUILTIN_METRICS
    from oodfs.contract.registry import registry

    core = {m.name for m in BUILTIN_METRICS}
    assert not {"objective", "n_iter", "converged", "frac_clipped_low", "frac_clipped_high"} & core
    entries = registry().entries("metric")
    clipped = entries["frac_clipped_low"]
    assert clipped.module.startswith("oodfs_plugins.independence")  # from the plugin, not the core
    assert json.loads(json.dumps(clipped.cls.as_dict()))["suspect"]["plus"] == ["frac_clipped_high"]
