"""A suite's k grid (docs/PROTOCOL.md section 10, "The k grid"): every grid point is evaluated at
each set size, and the `val` rule chooses (grid point, k) jointly on validation rows only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report
from oodfs.run.identity import suite_identity
from oodfs.run.suite import grid_ks, load_suite

from .conftest import assert_one_line, run_cli

#: y depends on a, b and c; d, e and f are noise: a size of 1 leaves out two causes
SUITE = """
environment = "table"
r_train = ["A"]
r_test = ["B"]
runs = 2
n_train = 160
n_val = 40
n_test = 1000
k = 1
{grid}
methods = ["ols", "correlation"]
yardsticks = ["all_features"]
downstream = "ridge"
[settings.t.params]
path = "t.csv"
target = "y"
env_column = "period"
"""


def _table(folder, test_target=None, seed=0):
    rng = np.random.default_rng(seed)
    n = 500
    env = np.where(np.arange(n) < 250, "A", "B")
    t = pd.DataFrame({"period": env})
    for j, name in enumerate("abcdef"):
        t[name] = rng.normal(size=n) + ((env == "B") & (j < 3))  # the causes shift in B
    t["y"] = t["a"] + 0.8 * t["b"] + 0.6 * t["c"] + 0.3 * rng.normal(size=n)
    if test_target is not None:  # the test environment's target replaced: nothing the rule may read
        t.loc[t["period"] == "B", "y"] = test_target(rng, int((env == "B").sum()))
    t.to_csv(folder / "t.csv", index=False)


def _run(folder, grid='k_grid = [1, 3, "all"]', name="out") -> Report:
    (folder / "s.toml").write_text(SUITE.format(grid=grid))
    out = folder / name
    argv = ["bench", "--suite", str(folder / "s.toml"), "--out", str(out), "--jobs", "1", "--quiet"]
    assert main(argv) == 0
    return Report.from_path(out)


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kgrid")
    _table(folder)
    return folder, _run(folder)


def test_the_val_rule_picks_the_point_and_k_with_the_lowest_validation_loss(grid_run):
    _, report = grid_run
    methods = report.points[report.points["method_kind"] != "yardstick"]
    assert set(methods["k"]) == {1, 3, 6}  # every grid point at every size
    for key, g in methods.groupby(["r_train", "run", "method"]):
        chosen = report.chosen.set_index(["r_train", "run", "method"]).loc[key]
        best = g.loc[g["rmse_val"].idxmin()]
        assert chosen["point"] == best["point"] and chosen["k"] == best["k"]
        # one feature leaves out two of the three causes: the rule never keeps that size
        assert chosen["k"] != 1 and chosen["rmse_val"] < g.loc[g["k"] == 1, "rmse_val"].min()


def test_the_default_rule_keeps_the_suites_fixed_k(grid_run):
    folder, _ = grid_run
    default = Report.from_path(folder / "out", rule="default")
    methods = default.chosen[default.chosen["method_kind"] != "yardstick"]
    assert set(methods["k"]) == {1}


def test_the_rule_reads_no_test_row(tmp_path):
    """The test environment's target redrawn at random: the same (grid point, k) is chosen with the
    same validation loss, while the test RMSE changes."""
    _table(tmp_path)
    first = _run(tmp_path, name="first")
    _table(tmp_path, test_target=lambda rng, n: rng.normal(scale=5.0, size=n))
    second = _run(tmp_path, name="second")
    keys = ["r_train", "run", "method"]
    a = first.chosen.sort_values(keys).reset_index(drop=True)
    b = second.chosen.sort_values(keys).reset_index(drop=True)
    assert a["point"].tolist() == b["point"].tolist() and a["k"].tolist() == b["k"].tolist()
    assert np.allclose(a["rmse_val"], b["rmse_val"])
    assert not np.allclose(a["rmse_mean"], b["rmse_mean"])


def test_the_fixed_k_results_are_the_first_block_of_the_grid_run(grid_run, tmp_path):
    """Without a grid the same suite stores exactly the grid run's points at its k: the fixed-k
    verdicts are read off the grid run, and a suite without a grid is unchanged."""
    folder, grid = grid_run
    _table(tmp_path)
    fixed = _run(tmp_path, grid="", name="fixed")
    cols = ["r_train", "run", "method", "point", "rmse_val", "rmse_mean", "k"]
    at_k = grid.points[grid.points["k"].eq(1) | (grid.points["method_kind"] == "yardstick")]
    a = at_k[cols].sort_values(cols[:4]).reset_index(drop=True)
    b = fixed.points[cols].sort_values(cols[:4]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


def test_the_leaderboard_shows_the_chosen_k(grid_run):
    _, report = grid_run
    text = Leaderboard(report).to_markdown()
    assert "the set size k the val rule chose with each grid point (k grid 1, 3, 6)" in text
    assert "| ols " in text.split("k grid 1, 3, 6")[1]


def test_suites_without_a_grid_are_evaluated_at_their_k_alone():
    """The synthetic suites keep their fixed k (a stable set of known size) and their identity, so
    their shipped references still hold."""
    for name in ("synthetic", "synthetic-multienv", "svi", "irm-sem"):
        suite = load_suite(name)
        assert suite.k_grid is None and grid_ks(suite, 10) == [min(suite.k, 10)]
        assert "k_grid" not in suite_identity(suite)
    ames = load_suite("ames")
    assert grid_ks(ames, 24) == [5, 1, 2, 3, 8, 13, 21, 24]


@pytest.mark.parametrize(
    "grid, needles",
    [
        ("k_grid = [0, 1]", ('k_grid entries must be positive integers, "all" (every feature)', "got 0")),
        ('k_grid = [1, "most"]', ("got 'most'",)),
        ("k_grid = [1, 3, 3]", ("k_grid names a size twice",)),
        ("k_grid = [2, 3]", ("must hold the suite's k (1)",)),
        ('k_grid = "all"', ("k_grid must be a non-empty list",)),
        ("k_grid = [1, 9]", ("k_grid entry 9 is more than the 6 features", 'use "all"')),
    ],
)
def test_a_bad_k_grid_is_one_line_and_exit_2(grid, needles, tmp_path, capsys):
    _table(tmp_path)
    (tmp_path / "s.toml").write_text(SUITE.format(grid=grid))
    result = run_cli(capsys, "bench", "--suite", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"))
    assert_one_line(result, *needles)
