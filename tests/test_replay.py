"""Replaying stored fits (benchmarks/shared/replay.py; docs/PROTOCOL.md section 10, "The k grid"): a suite
run again with every method's fit read from stored results trains only the downstream models, and
gives the numbers a refit gives. The binary suites' MLP and k-grid results rest on it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.results.store import load_results

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "shared"))
from replay import fixed_k_block, replay_run  # noqa: E402

SUITE = """
environment = "binary_table"
task = "binary"
r_train = ["A"]
r_test = ["B"]
runs = 1
n_train = 160
n_val = 40
n_test = 300
k = 2
{grid}
methods = ["ols", "correlation"]
yardsticks = ["all_features", "prior"]
downstream = ["logistic"]
selection = "val"
[settings.t.params]
path = "t.csv"
target = "y"
threshold = 0.5
env_column = "period"
"""

#: the columns a replay must reproduce: what the method selected and every number measured
SAME = [
    "setting",
    "r_train",
    "run",
    "method",
    "point",
    "k",
    "metric",
    "env",
    "value",
    "scores",
    "feature_names",
]


def _suite(folder: Path, name: str, grid: str = "") -> str:
    path = folder / f"{name}.toml"
    path.write_text(SUITE.format(grid=grid))
    return str(path)


def _rows(out: Path) -> pd.DataFrame:
    rows = load_results(out)
    rows = rows[rows["status"] == "ok"][SAME]
    return rows.sort_values(SAME[:8], kind="stable").reset_index(drop=True)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("replay")
    rng = np.random.default_rng(0)
    n = 500
    t = pd.DataFrame({"period": np.where(np.arange(n) < 250, "A", "B")})
    for j, name in enumerate("abcd"):
        t[name] = rng.normal(size=n) + (t["period"] == "B") * (j < 2)
    t["y"] = (t["a"] + 0.8 * t["b"] + rng.normal(size=n) > 0).astype(float)
    t.to_csv(folder / "t.csv", index=False)
    argv = ["bench", "--suite", _suite(folder, "s"), "--out", str(folder / "fit"), "--jobs", "1", "--quiet"]
    assert main(argv) == 0
    return folder


def test_a_replayed_run_gives_the_rows_of_the_refit(fitted):
    folder = fitted
    replay_run("s", folder / "fit", folder / "again", suite=_suite(folder, "s"))
    pd.testing.assert_frame_equal(_rows(folder / "again"), _rows(folder / "fit"))


def test_a_replayed_k_grid_holds_the_fixed_k_run_as_its_first_block(fitted):
    """Adding a k grid changes only the downstream step: its first block of points is the run
    without the grid, and the other sizes are there too."""
    folder = fitted
    replay_run("s", folder / "fit", folder / "grid", suite=_suite(folder, "s", 'k_grid = [1, 2, "all"]'))
    grid = load_results(folder / "grid")
    assert set(grid.loc[grid["method_kind"] != "yardstick", "k"]) == {1, 2, 4}
    first = _rows(folder / "grid").pipe(lambda r: r.merge(fixed_k_block(load_results(folder / "grid"))[SAME]))
    pd.testing.assert_frame_equal(first.reset_index(drop=True), _rows(folder / "fit"))


def test_the_fixed_k_view_keeps_a_failed_task(fitted):
    """A failed task has no grid point; the fixed-k view of a k-grid run must still count it, or a
    report at the fixed k under-counts failures."""
    rows = load_results(fitted / "fit")
    failed = rows.iloc[[0]].assign(status="failed", error="boom", point=np.nan, value=np.nan)
    with_failure = pd.concat([rows, failed], ignore_index=True)
    kept = fixed_k_block(with_failure)
    assert (kept["status"] == "failed").sum() == 1
    assert len(kept) == len(fixed_k_block(rows)) + 1
