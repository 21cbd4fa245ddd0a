"""The whole benchmark's cut (benchmarks/whole_benchmark/whole_benchmark.py,
benchmarks/whole_benchmark/WHOLE_BENCHMARK.md): a ``paper``-profile run that replays, from the
``default``-profile run of the same suite, the fits of the methods whose settings are the same under both
profiles stores the numbers a run that fits them again stores."""

import importlib.util
import json
import os
import sys
from pathlib import Path

import pandas as pd

from oodfs.results.store import load_results

from .conftest import TINY_SUITE_TOML

ROOT = Path(__file__).resolve().parents[1]
#: columns that are timings or run bookkeeping, not results
NOT_RESULTS = {"fit_seconds", "downstream_seconds", "data_seconds", "versions", "oodfs_version", "origin"}


def whole_benchmark():
    spec = importlib.util.spec_from_file_location(
        "whole_benchmark", ROOT / "benchmarks" / "whole_benchmark" / "whole_benchmark.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def bench(suite: Path, out: Path, profile: str, jobs: int, replay: dict | None = None) -> pd.DataFrame:
    from oodfs.cli import main

    argv = ["bench", "--suite", str(suite), "--profile", profile, "--jobs", str(jobs), "--out", str(out)]
    argv += ["--quiet"]
    if replay is not None:
        argv += ["--plugin", str(ROOT / "benchmarks" / "whole_benchmark" / "replay_fits.py")]
    before = os.environ.get("OODFS_REPLAY_FITS")
    try:
        if replay is not None:
            os.environ["OODFS_REPLAY_FITS"] = json.dumps(replay)
        assert main(argv) == 0
    finally:
        import oodfs.run.evaluate
        import oodfs.run.jobs

        oodfs.run.jobs.fit_method = oodfs.run.evaluate.fit_method  # the plugin patched this process too
        if before is None:
            os.environ.pop("OODFS_REPLAY_FITS", None)
        else:
            os.environ["OODFS_REPLAY_FITS"] = before
    df = load_results(out)
    keep = [c for c in df.columns if c not in NOT_RESULTS]
    return (
        df[keep]
        .sort_values(["method", "setting", "r_train", "run", "point", "metric", "env", "k"])
        .reset_index(drop=True)
    )


def test_replaying_the_fits_a_profile_shares_stores_the_same_numbers(tmp_path):
    suite = tmp_path / "tiny.toml"
    text = TINY_SUITE_TOML.format(runs=2).replace(
        'methods = ["ols", "correlation"]', 'methods = ["ols", "mi", "dwr"]'
    )
    suite.write_text(text)
    reusable = whole_benchmark().reusable_methods(["ols", "mi", "dwr"], "paper")
    assert reusable == ["ols", "mi"]  # dwr has its own settings under the paper profile
    bench(suite, tmp_path / "default", "default", 1)
    uncut = bench(suite, tmp_path / "paper", "paper", 1)
    replay = {"folder": str(tmp_path / "default"), "methods": reusable}
    # the plugin patches the process that runs the jobs (each worker imports it too)
    cut = bench(suite, tmp_path / "paper-cut", "paper", 1, replay)
    pd.testing.assert_frame_equal(cut, uncut)
    # the replay did happen: a replayed fit keeps the default run's fit_seconds
    seconds = {
        name: load_results(tmp_path / name)
        .query("method == 'mi'")
        .groupby(["r_train", "run"])["fit_seconds"]
        .first()
        for name in ("default", "paper", "paper-cut")
    }
    pd.testing.assert_series_equal(seconds["paper-cut"], seconds["default"])
    assert not seconds["paper"].equals(seconds["default"])


def test_the_wall_time_is_simulated_as_the_runner_hands_out_jobs():
    wb = whole_benchmark()
    # in order, each job to the first free worker: 3 | 1, 1, 1 -> both end at 3
    assert wb.makespan([3, 1, 1, 1], 2) == 3
    # a long job last waits for a free worker: 1, 1 then 4 on one of them -> 5
    assert wb.makespan([1, 1, 4], 2) == 5
    assert wb.makespan([2, 2, 2], 1) == 6


def test_new_method_in_lanes_keeps_each_reference_and_adds_the_method_on_every_task(tmp_path, monkeypatch):
    """``new-method`` with two lanes (two processes side by side, each running suites in-process):
    every suite's folder holds the reference's rows unchanged and the new method on each of the
    reference's tasks, and each suite's timing says how it ran."""
    from oodfs.run.reference import load_reference

    # a lane process imports the script's function
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks" / "whole_benchmark"))
    plugin = str(ROOT / "benchmarks" / "whole_benchmark" / "renamed_correlation.py")
    suites = {"irm-sem", "synthetic-multienv"}
    timings = whole_benchmark().against_references(
        tmp_path, "correlation_renamed", [plugin], jobs=2, only=suites, lanes=2
    )
    assert set(timings) == {f"{s}@default" for s in suites}
    assert all(t["lanes"] == 2 and t["jobs"] == 1 and t["cpu_s"] > 0 for t in timings.values())
    assert json.loads((tmp_path / "new-method.json").read_text()) == timings
    key = ["setting", "r_train", "run", "method", "point", "metric", "env", "k", "downstream"]
    for name in suites:
        stored = load_results(tmp_path / f"{name}-default")
        reference = load_reference(name, "default").results
        columns = [c for c in reference.columns if c not in NOT_RESULTS and c in stored.columns]
        copied = stored[stored["method"].isin(reference["method"].unique())][columns]
        expected = reference[columns].astype(copied.dtypes.to_dict())
        pd.testing.assert_frame_equal(
            copied.sort_values(key).reset_index(drop=True), expected.sort_values(key).reset_index(drop=True)
        )
        new = stored[stored["method"] == "correlation_renamed"]
        assert data_sets(new) == data_sets(reference)
        assert (new["status"] == "ok").all()


def data_sets(rows: pd.DataFrame) -> set:
    return {tuple(t) for t in rows[["setting", "r_train", "run"]].astype(str).drop_duplicates().values}
