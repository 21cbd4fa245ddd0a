"""Reports on hand-made results tables: intervals, tested best sets, unequal counts, escaping,
figures and the compare command — what a reader of a leaderboard relies on."""

import json

import numpy as np
import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.plots import make_figures
from oodfs.report.report import Report
from oodfs.results.store import export


def results(values: dict, runs=range(10), r_trains=(1.5, 2.5), setting="poly", stable=True) -> pd.DataFrame:
    """A results table: ``values[method](r_train, run) -> (rank_avg, rmse_mean)``."""
    rows = []
    for method, fn in values.items():
        for r in r_trains:
            for run in runs:
                rank_avg, rmse = fn(r, run)
                base = dict(
                    suite="t",
                    profile="default",
                    setting=setting,
                    r_train=r,
                    run=run,
                    method=method,
                    method_kind="selector",
                    point=0,
                    params="{}",
                    is_default=1,
                    env=None,
                    k=5,
                    scores=json.dumps([1.0, 0.5]),
                    feature_names=json.dumps(["a", "b"]),
                    status="ok",
                    error=None,
                )
                metrics = {"rmse_mean": rmse, "rmse_std": 0.1, "rmse_val": rmse}
                if stable:
                    metrics.update(rank_avg=rank_avg, f1=1.0 if rank_avg < 3.5 else 0.6)
                rows += [dict(base, metric=m, value=v) for m, v in metrics.items()]
                rows += [dict(base, metric="rmse", env=e, value=rmse) for e in ("-2.0", "2.0")]
    return pd.DataFrame(rows)


def noisy(mean, sd, seed):
    rng = np.random.default_rng(seed)
    table = {(r, run): mean + sd * rng.standard_normal() for r in (1.5, 2.5, "old") for run in range(10)}
    return lambda r, run: (3.0, table[r, run])


def test_a_clearly_better_method_is_the_only_best_and_cells_carry_intervals():
    df = results({"good": noisy(0.30, 0.01, 0), "bad": noisy(0.50, 0.01, 1), "same": noisy(0.30, 0.01, 0)})
    board = Leaderboard(Report(df, "val"))
    best = board.best[("poly", "all", "rmse_mean")]
    assert best == {"good", "same"}  # identical values are not distinguishable from the best
    text = board.to_markdown()
    good = next(line for line in text.splitlines() if line.startswith("| good"))
    assert "**0.298 [0.296, 0.300]**" in good  # mean, percentile-bootstrap interval, bold
    assert good.split("|")[2].strip() == "10"  # runs
    assert "Wilcoxon signed-rank" in text and "Holm" in text


def test_one_run_shows_no_interval_and_marks_nothing():
    df = results({"a": noisy(0.3, 0.01, 0), "b": noisy(0.5, 0.01, 1)}, runs=[0], r_trains=(2.5,))
    board = Leaderboard(Report(df, "val"))
    assert board.best == {}
    assert "[" not in board.to_markdown().split("## Best sets")[0].split("| method")[1]
    assert "No best where no method has 2 runs" in board.to_markdown()


def test_unequal_run_counts_are_shown():
    df = results({"a": noisy(0.3, 0.01, 0), "b": noisy(0.5, 0.01, 1)})
    df = df[~((df["method"] == "b") & (df["run"] >= 5))]
    text = Leaderboard(Report(df, "val")).to_markdown()
    assert "Unequal run counts" in text
    averaged = text.split("by r_train")[0]
    rows = {
        line.split("|")[1].strip(): line.split("|")[2].strip()
        for line in averaged.splitlines()
        if line.startswith("| a ") or line.startswith("| b ")
    }
    assert rows["a"] == "10" and rows["b"] == "5"


def test_setting_names_cannot_break_out_of_latex_comments_or_inject_html():
    df = results({"a": noisy(0.3, 0.01, 0)}, setting="x\n\\input{/etc/passwd}<b>")
    board = Leaderboard(Report(df, "val"))
    for line in board.to_latex().splitlines():
        assert "\\input" not in line or line.lstrip().startswith("%") or "textbackslash" in line
    md = board.to_markdown()
    assert "<b>" not in md and "&lt;b>" in md  # only what could open a tag is escaped


def test_results_without_a_stable_set_report_and_plot(tmp_path):
    df = results({"a": noisy(0.3, 0.01, 0), "b": noisy(0.5, 0.01, 1)}, r_trains=("old",), stable=False)
    report = Report(df, "val")
    assert report.headline == ["rmse_mean", "rmse_std"]
    paths = make_figures(report, tmp_path)
    assert (tmp_path / "figures" / "figure1-val.png").stat().st_size > 5_000
    assert all(p.exists() for p in paths)


def test_rules_write_their_figures_side_by_side(tmp_path):
    df = results({"a": noisy(0.3, 0.01, 0), "b": noisy(0.5, 0.01, 1)})
    make_figures(Report(df, "val"), tmp_path)
    make_figures(Report(df, "oracle"), tmp_path)
    assert (tmp_path / "figures" / "figure1-val.png").exists() and (
        tmp_path / "figures" / "figure1-oracle.png"
    ).exists()


def test_compare_command(tmp_path, capsys):
    df = results({"good": noisy(0.30, 0.01, 0), "bad": noisy(0.50, 0.01, 1), "mid": noisy(0.40, 0.01, 2)})
    export(df, tmp_path)
    assert main(["compare", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Friedman test across 3 methods over 20 complete" in out
    rmse = out.split("RMSE mean")[1]
    line = next(row for row in rmse.splitlines() if row.startswith("| bad") and "good" in row)
    assert "good better" in line
    assert (tmp_path / "compare.md").exists() and list(
        (tmp_path / "figures").glob("cd_poly_rmse_mean-val.png")
    )


def test_a_report_never_mixes_profiles():
    df = pd.concat(
        [
            results({"a": noisy(0.3, 0.01, 0)}),
            results({"a": noisy(0.3, 0.01, 0)}).assign(profile="paper", method="b"),
        ]
    )
    with pytest.raises(Exception, match="mix profiles"):
        Report(df, "val")


def test_a_failed_task_in_a_reference_with_a_categorical_model_column_is_kept():
    """A shipped reference stores `downstream` as categorical; a failed task's row has no model.
    Choosing the model's rows must keep the failed row, not fail on a missing category."""
    from oodfs.report.report import _one_downstream

    results = pd.DataFrame(
        {
            "method": ["ols", "dwr"],
            "status": ["ok", "failed"],
            "downstream": pd.Categorical(["logistic", None], categories=["logistic"]),
        }
    )
    rows, chosen, models = _one_downstream(results, None)
    assert chosen == "logistic" and models == ["logistic"]
    assert list(rows["method"]) == ["ols", "dwr"]
