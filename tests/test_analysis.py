"""The one analysis every output reads (oodfs.report.analysis): the same verdict for the same pair
in the leaderboard, `oodfs compare` and the results page; its family, unit and downstream model
printed; intervals inside each metric's range; nothing bolded where no test can decide."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.report import stats
from oodfs.report.analysis import UNIT_TEXT, Analysis
from oodfs.report.compare import comparison_markdown
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report

from .conftest import assert_one_line, run_cli


@pytest.fixture(scope="module")
def auto_run(tmp_path_factory):
    """The auto suite (a table: unit resplit), 8 runs of three methods and both yardsticks, ridge."""
    pytest.importorskip("ISLP")
    from oodfs.contract.registry import reset_registry

    reset_registry()
    out = tmp_path_factory.mktemp("auto") / "out"
    code = main(["bench", "--suite", "auto", "--runs", "8", "--methods", "ols,lasso,correlation", "--jobs",
                 "1", "--quiet", "--no-figures", "--out", str(out), "--downstream", "ridge"])  # fmt: skip
    # (no figures: this suite's are drawn in test_realdata's tiny_run)
    assert code == 0
    reset_registry()
    return out


def _md_verdicts(text: str, first_cols: int) -> dict:
    """{(A, B): verdict} from the rows of markdown tables whose last column is a verdict."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not re.search(r"better|distinguishable|too few|not tested", cells[-1]):
            continue
        a = re.sub(r" \(yardstick.*\)$", "", cells[0]).strip("*")
        b = cells[1] if first_cols == 2 else "all_features"
        out[(a, b)] = cells[-1]
    return out


def test_every_output_gives_the_same_verdict_for_the_same_pair(auto_run, tmp_path, capsys):
    report = Report.from_path(auto_run)
    analysis = Analysis(report)
    f = analysis.family
    assert f.reference == "all_features" and f.unit == "resplit" and f.downstream == "ridge"
    assert "mean" in f.yardsticks and "mean" not in f.methods
    tests = analysis.tests("auto", "rmse_mean")
    truth = {(r.method_a, r.method_b): r.verdict for r in tests.itertuples()}
    # the methods' family holds the three methods against all_features; mean is in a family of its own
    assert set(tests.loc[tests["family"] == "methods", "method_a"]) == {"ols", "lasso", "correlation"}
    assert set(tests.loc[tests["family"] == "yardsticks", "method_a"]) == {"mean"}
    assert len(set(truth.values()) - {"not distinguishable"}) >= 1  # something is decided

    board = Leaderboard(report).to_markdown()
    section = board.split("each method against all_features (paired")[1].split("##")[0]
    assert _md_verdicts(section, 1) == truth

    text, _ = comparison_markdown(report, tmp_path / "figures")
    part = text.split("RMSE mean")[1].split("###")[0]
    assert _md_verdicts(part, 2) == truth

    assert main(["report", str(auto_run), "--out", str(tmp_path / "site")]) == 0
    html = (tmp_path / "site" / "index.html").read_text()
    view = "".join(c for c in html.split('data-rule-view="') if c.startswith('val"'))  # the val rule's
    row = r"<tr><td>([^<]+?)(?: \(yardstick\))?</td><td>(all_features)</td>.*?<td>([^<]+)</td></tr>"
    cmp = next(c for c in view.split('<details class="cmp"') if "RMSE mean ↓ — Friedman" in c)
    rows = re.findall(row, cmp.split("</details>")[0], re.S)
    page = {(a, b): v for a, b, v in rows}
    assert {k: v for k, v in page.items() if k in truth} == truth and set(truth) <= set(page)

    # the family, its unit and the downstream model are printed in every output
    for out in (board, text, view):
        assert "Tested family: each of the 3 methods against all_features" in out
        assert "resplit of one table" in out and "Downstream model: ridge" in out


def test_yardsticks_do_not_enter_the_methods_family(auto_run):
    # Holm over the 3 methods only: mean's comparison does not make theirs harder to pass
    report = Report.from_path(auto_run)
    t = Analysis(report).tests("auto", "rmse_mean")
    methods = t[t["family"] == "methods"]
    assert np.allclose(methods["p_adjusted"], stats.adjust_pvalues(methods["p"].to_numpy(), "holm"))


def _table(values: dict, r_trains=("a",), runs=10) -> pd.DataFrame:
    blocks = [(r, run) for r in r_trains for run in range(runs)]
    return pd.DataFrame(
        [
            dict(setting="s", r_train=r, run=run, method=m, rmse_mean=v)
            for m, vals in values.items()
            for (r, run), v in zip(blocks, vals)
        ]  # fmt: skip
    )


def test_too_few_units_say_so_and_decide_nothing():
    b = np.random.default_rng(0).normal(1, 0.1, 5)
    df = _table({"ols": b - 0.3, "lasso": b + 0.3, "all_features": b}, runs=5)
    t = stats.versus_reference(df, "rmse_mean", True, "all_features")
    # five units, every one of one sign: p = 0.0625, which no correction brings below 0.05
    assert (t["verdict"] == "too few pairs to decide").all() and not t["decidable"].any()


def test_every_printed_interval_stays_inside_its_metrics_range():
    # values near a bound, where a t interval leaves the range: F1 near 1, a spread near 0
    rng = np.random.default_rng(1)
    f1 = np.r_[np.ones(8), 0.4, 0.5]
    sd = np.r_[np.zeros(8), 0.3, 0.2]
    ranks = np.r_[np.full(8, 3.0), 6.0, 7.0]  # |S| = 5: the best possible rank average is 3
    for values, lo, hi in ((f1, 0, 1), (sd, 0, np.inf), (ranks, 3.0, np.inf), (rng.random(10), 0, 1)):
        boot = stats.cell_summary(values, method="bootstrap")
        assert lo <= boot.low <= boot.mean <= boot.high <= hi
    assert stats.cell_summary(f1, method="t").high > 1  # the interval oodfs no longer prints


def test_the_leaderboard_cells_stay_inside_the_range(auto_run):
    report = Report.from_path(auto_run)
    cells = Leaderboard(report).cells.dropna(subset=["low"])
    assert len(cells) and (cells["low"] >= 0).all()  # RMSEs
    per_run = report.per_run()
    for r in cells.itertuples():
        values = per_run.loc[(per_run["method"] == r.method) & (per_run["r_train"] == r.r_train), r.metric]
        assert values.min() - 1e-12 <= r.low <= r.high <= values.max() + 1e-12


def test_a_spread_metric_never_makes_a_method_best(auto_run):
    board = Leaderboard(Report.from_path(auto_run))
    assert not any(m == "rmse_std" for (_, _, m) in board.best)
    assert any("RMSE sd: a measure of spread alone, never marked best" in n for n in board.notes)


# -- units of replication --------------------------------------------------------------------


def test_every_shipped_suite_declares_its_unit():
    from importlib import resources

    from oodfs.run.suite import UNITS, available_suites, load_suite

    for name in available_suites():
        text = (resources.files("oodfs.suites") / f"{name}.toml").read_text()
        assert re.search(r"^unit = ", text, re.M), name  # declared, not left to the default
        suite = load_suite(name)
        assert suite.unit in UNITS
        # a table's blocks are resplits or environments, never independent draws of a process
        assert (suite.unit != "run") == (suite.environment in ("table", "binary_table")), name


@pytest.mark.parametrize("name", ["auto", "lending-states", "churn", "synthetic"])
def test_results_stored_without_their_suite_name_the_unit_their_suite_file_declares(name):
    """A reference, a results file, a folder made before suites declared units: the unit is read from
    the shipped suite's file, never assumed to be fresh draws (a real suite's blocks are resplits)."""
    from oodfs.report.report import Report, stored_unit
    from oodfs.run.reference import load_reference
    from oodfs.run.suite import load_suite

    declared = load_suite(name).unit
    ref = load_reference(name, "default")
    report = Report(ref.results, "val", ref.meta.get("metrics"))
    assert report.unit == declared
    assert UNIT_TEXT[declared] in Analysis(report).family.describe()
    old = {"name": name, "environment": load_suite(name).environment}  # stored before units were declared
    assert stored_unit(old) == declared


@pytest.mark.parametrize(
    "edit, needle",
    [
        ('unit = "resplit"', "unit must be one of run, resplit, environment, got 'blocks'"),
        ('unit = "environment"', "unit = 'environment' needs several r_train entries"),
    ],
)
def test_a_bad_unit_is_one_line(tmp_path, capsys, edit, needle):
    from importlib import resources

    text = (resources.files("oodfs.suites") / "auto.toml").read_text()
    value = "blocks" if "resplit" in edit else "environment"
    path = tmp_path / "auto.toml"
    path.write_text(text.replace('unit = "resplit"', f'unit = "{value}"'))
    assert_one_line(run_cli(capsys, "bench", "--suite", str(path), "--out", str(tmp_path / "o")), needle)


def test_the_environment_unit_tests_over_environments():
    # 12 environments x 3 runs: the analysis pairs over the 12 environments, each its runs' mean
    rng = np.random.default_rng(0)
    rows = []
    for e in range(12):
        for run in range(3):
            base = rng.normal(1, 0.1)
            for m, shift in (("a", -0.05), ("b", 0.0), ("all_features", 0.02)):
                rows.append(dict(setting="s", r_train=f"e{e}", run=run, method=m, rmse_mean=base + shift))
    df = pd.DataFrame(rows)
    t = stats.versus_reference(
        df.groupby(["setting", "r_train", "method"], as_index=False)["rmse_mean"].mean(),
        "rmse_mean", True, "all_features", pair_on=("r_train",),
    )  # fmt: skip
    assert (t["n_pairs"] == 12).all() and (t["verdict"] == ["a better", "b better"]).all()
