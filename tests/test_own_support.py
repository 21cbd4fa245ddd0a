"""A method's own support as a k candidate (docs/PROTOCOL.md section 10, "The k grid"): a k grid
entry "support" evaluates each grid point of a method that yields a set at that set, the `val`
rule chooses among it and the sizes, and a method without a support skips it, said in the
leaderboard."""

from __future__ import annotations

import json

import numpy as np
import pytest

from oodfs.contract.registry import registry
from oodfs.contract.selection import SUPPORT_MARK
from oodfs.report.leaderboard import Leaderboard

from .conftest import assert_one_line, run_cli
from .test_invariance2 import sem_data
from .test_kgrid import SUITE, _table

SUPPORT_SUITE = SUITE.replace('methods = ["ols", "correlation"]', 'methods = ["lasso", "ols"]')


@pytest.fixture(scope="module")
def support_run(tmp_path_factory):
    from oodfs.cli import main
    from oodfs.report.report import Report

    folder = tmp_path_factory.mktemp("support")
    _table(folder)
    (folder / "s.toml").write_text(SUPPORT_SUITE.format(grid='k_grid = [1, "support"]'))
    out = folder / "out"
    argv = ["bench", "--suite", str(folder / "s.toml"), "--out", str(out), "--jobs", "1", "--quiet"]
    assert main(argv) == 0
    return Report.from_path(out)


def test_the_val_rule_chooses_lassos_own_support_over_a_size_that_drops_causes(support_run):
    """k = 1 leaves out two of the three causes; LASSO's nonzero coefficients keep them: the rule
    picks the support, at its own size, trained on exactly the nonzero-coefficient features."""
    chosen = support_run.chosen[support_run.chosen["method"] == "lasso"]
    assert len(chosen) == 2 and chosen["params"].str.contains(SUPPORT_MARK, regex=False).all()
    for row in chosen.itertuples():
        nonzero = np.flatnonzero(np.asarray(json.loads(row.scores)) > 0)
        assert row.k == len(nonzero) >= 3
        assert sorted(json.loads(row.subset)) == nonzero.tolist()
    points = support_run.points[support_run.points["method"] == "lasso"]
    at_support = points["params"].str.contains(SUPPORT_MARK, regex=False)
    assert at_support.sum() == 2 * 4  # every alpha of both runs, beside its k = 1 point
    assert (chosen["rmse_val"].to_numpy() < points.loc[~at_support].groupby("run")["rmse_val"].min()).all()


def test_a_method_without_a_support_skips_it_and_the_leaderboard_says_so(support_run):
    points = support_run.points
    ols = points[points["method"] == "ols"]
    assert not ols["params"].str.contains(SUPPORT_MARK, regex=False).any() and set(ols["k"]) == {1}
    text = Leaderboard(support_run).to_markdown()
    table = text.split("(k grid 1, support)")[-1] if "(k grid 1, support)" in text else ""
    assert "own support: none (the method yields no set; skipped)" in table
    assert "own support: 2/2" in table


def test_the_fixed_k_block_is_unchanged_by_the_support_entry(support_run, tmp_path):
    """The support points come after every size: the suite's k is still points 0..G-1."""
    from oodfs.cli import main
    from oodfs.report.report import Report

    _table(tmp_path)
    (tmp_path / "s.toml").write_text(SUPPORT_SUITE.format(grid=""))
    out = tmp_path / "o"
    suite = str(tmp_path / "s.toml")
    assert main(["bench", "--suite", suite, "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    fixed = Report.from_path(out).points
    cols = ["r_train", "run", "method", "point", "rmse_val", "rmse_mean", "k"]
    grid = support_run.points
    first = grid[~grid["params"].fillna("").str.contains(SUPPORT_MARK, regex=False)]
    a = first[cols].sort_values(cols[:4]).reset_index(drop=True)
    b = fixed[cols].sort_values(cols[:4]).reset_index(drop=True)
    assert a.equals(b)


@pytest.mark.parametrize(
    "name, attribute",
    [("icp", "selected_"), ("stabilized", "blanket_"), ("iamb", "boundary_"), ("hiton_mb", "boundary_")],
)
def test_a_declared_support_is_the_set_the_algorithm_selects(name, attribute):
    """Read off a grid fit's scores and diagnostics, the support equals the set the fitted
    estimator reports (ICP's intersection, the stable blanket, the Markov boundary)."""
    cls = registry().get("selector", name)
    _, X, y, g = sem_data(seed=2, n=400)
    groups = {"groups": g} if cls.uses_groups else {}
    fit = cls.fit_grid_detailed(X, y, [{}], random_state=0, **groups)[0]
    mask = cls.own_support(fit.values, fit.diagnostics, cls().get_params(deep=False))
    selected = getattr(cls(random_state=0).fit(X, y, **groups), attribute)
    assert np.flatnonzero(mask).tolist() == sorted(selected) and len(selected) > 0


def test_only_methods_whose_algorithm_yields_a_set_declare_one():
    declared = {n for n, info in registry().entries("selector").items() if info.cls.has_support()}
    assert {"lasso", "stg", "icp", "eills", "stabilized", "iamb", "hiton_mb"} <= declared
    assert not declared & {"ols", "dwr", "srdo", "correlation", "mi", "rf", "gb", "xgb", "all_features"}


@pytest.mark.parametrize(
    "grid, needles",
    [
        ('k_grid = [1, "supports"]', ('"all" (every feature) or "support"', "got 'supports'")),
        ('k_grid = [1, "support", "support"]', ("k_grid names a size twice",)),
    ],
)
def test_a_bad_support_entry_is_one_line_and_exit_2(grid, needles, tmp_path, capsys):
    _table(tmp_path)
    (tmp_path / "s.toml").write_text(SUPPORT_SUITE.format(grid=grid))
    result = run_cli(capsys, "bench", "--suite", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"))
    assert_one_line(result, *needles)
