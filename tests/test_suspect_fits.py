"""A fit whose diagnostics meet a declared suspect rule is marked beside its method in every
output: `oodfs select`, the leaderboard, `compare` and the page (docs/PROTOCOL.md, "DWR's stop and
its decorrelation check")."""

import warnings

import pandas as pd
import pytest

from oodfs.report.compare import comparison_markdown
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report
from oodfs.run.rank import rank_features
from oodfs_plugins.environments.synthetic import Synthetic


def test_select_says_dwr_left_the_features_correlated_at_d_200():
    """The data set of the issue: n = 20 000, d = 200 (poly, r_train 2.5, seed 0). DWR meets its
    tolerance after 18 iterations (objective 0.80) but keeps 0.957 of the largest correlation."""
    X, y = Synthetic(d_v=195).sample(2.5, 20000, 0)
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]).assign(y=y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = rank_features(df, "y", "dwr", isolate=False, standardize_features=False)
    d = r.diagnostics
    assert d["n_iter"] == 18 and d["converged"] is True
    assert d["objective"] == pytest.approx(0.801, abs=1e-3)
    assert d["corr_kept"] == pytest.approx(0.957, abs=1e-3)
    suspect = [n for n in r.notes if "fit is suspect" in n]
    assert suspect == [
        "dwr's fit is suspect: the weights kept over 90 % of the largest feature correlation "
        "(corr_kept 0.957); the ranking is what the fit gives, but read it with care"
    ]
    assert any(suspect[0] == str(w.message) for w in caught)
    assert r.to_json()["diagnostics"]["corr_kept"] == d["corr_kept"]


def test_select_adds_no_suspect_note_at_the_papers_d_10():
    X, y = Synthetic().sample(2.5, 2000, 0)
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])]).assign(y=y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = rank_features(df, "y", "dwr", isolate=False, standardize_features=False)
    assert r.diagnostics["corr_kept"] < 0.9
    assert not [n for n in r.notes if "suspect" in n]


@pytest.fixture(scope="module")
def d200_run(tmp_path_factory):
    """DWR and LASSO at d = 200 (n = 2 000, two runs): every chosen DWR fit is suspect."""
    from oodfs.cli import main

    root = tmp_path_factory.mktemp("d200")
    (root / "suite.toml").write_text(
        'environment = "synthetic"\nunit = "run"\nr_train = [2.5]\nr_test = [-2.5, 2.5]\nruns = 2\n'
        'n_train = 2000\nn_val = 1000\nn_test = 2000\nk = 5\nmethods = ["dwr", "lasso"]\n'
        'downstream = ["ridge"]\n[settings.poly-d200]\nparams = { setting = "poly", d_v = 195 }\n'
    )
    argv = ["bench", "--suite", str(root / "suite.toml"), "--out", str(root / "out")]
    assert main(argv + ["--jobs", "1", "--quiet", "--no-figures"]) == 0
    return Report.from_path(root / "out")


def test_the_leaderboard_and_compare_mark_the_suspect_method_beside_its_name(d200_run):
    flagged = d200_run.suspect_fits()
    assert flagged[["setting", "method", "flagged", "chosen"]].values.tolist() == [["poly-d200", "dwr", 2, 2]]
    board = Leaderboard(d200_run).to_markdown()
    assert "| dwr (suspect: 2 of 2 fits) |" in board.replace("  ", "")
    assert "| lasso (suspect" not in board
    assert "the weights kept over 90 % of the largest feature correlation in 2 of 2 chosen fits" in board
    text, _ = comparison_markdown(d200_run)
    assert "dwr (suspect)" in text and "lasso (suspect)" not in text
    assert "- `dwr` (poly-d200): the weights kept over 90 % of the largest feature correlation" in text
