"""The runner end to end on a tiny suite: numbers, determinism across backends, resume, failures."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.contract.task import DataKey
from oodfs.report.leaderboard import Leaderboard
from oodfs.results.store import ResultStore, load_results
from oodfs.run.runner import run_suite
from oodfs.validation import OodfsError

from .conftest import tiny as tiny_suite

BROKEN_PLUGIN = '''
import time
import numpy as np
import oodfs


class Broken(oodfs.Selector):
    """Always raises."""
    name = "broken"
    def _fit_scores(self, X, y, sw):
        raise RuntimeError("deliberately broken")

class Sleepy(oodfs.Selector):
    """Sleeps, then scores like correlation."""
    name = "sleepy"
    seconds = 60.0
    def _fit_scores(self, X, y, sw):
        time.sleep(self.seconds)
        return np.abs(np.corrcoef(X.T, y)[-1, :-1])

@oodfs.hookimpl
def oodfs_selectors():
    return [Broken, Sleepy]
'''


def tiny(**changes):
    """This module's tiny suite: the shared one with n_train, n_val, n_test, curve changed."""
    return tiny_suite(
        **{
            **{"n_train": 600, "n_val": 200, "n_test": 400, "curve": {"methods": ["ols"], "r_train": [2.5]}},
            **changes,
        }
    )


def values(out) -> pd.Series:
    df = load_results(out)
    df = df[df["status"] == "ok"]
    df = df.assign(env=df["env"].fillna(""))
    return df.set_index(["setting", "r_train", "run", "method", "point", "metric", "env", "k"])[
        "value"
    ].sort_index()


def test_numbers_are_real_and_in_range(tmp_path):
    run_suite(tiny(), tmp_path / "out", progress=False)
    df = load_results(tmp_path / "out")
    assert set(df["method"]) == {"ols", "correlation"} and (df["status"] == "ok").all()
    all_values = values(tmp_path / "out")
    v = all_values.xs(("", 5), level=["env", "k"]).unstack("metric")
    assert v["rank_avg"].between(3.0, 8.0).all() and v["f1"].between(0, 1).all()
    assert (v["rmse_mean"] > 0.25).all() and (v["rmse_std"] >= 0).all()  # noise sd is 0.3
    envs = all_values.xs("rmse", level="metric").unstack("env")[["-2.0", "2.0"]].droplevel("k").to_numpy()
    np.testing.assert_allclose(v["rmse_mean"], envs.mean(axis=1))
    np.testing.assert_allclose(v["rmse_std"], envs.std(axis=1))
    curve = all_values.xs(("ols", "rmse_mean"), level=["method", "metric"])
    assert set(curve.index.get_level_values("k")) == set(range(1, 11))  # the ood-S curve for ols
    # provenance: seeds, versions, timings
    assert df["seed"].notna().all() and df["fit_seconds"].notna().all()
    assert "numpy" in json.loads(df["versions"].iloc[0])
    inv = ResultStore(tmp_path / "out").invocations()[0]
    assert inv["suite"]["name"] == "tiny" and inv["versions"]["oodfs"]


def test_beta_errors_are_those_of_ols_on_the_top_k(tmp_path):
    """β L1 / L2 errors: OLS with intercept on the task's top-k features against the
    environment's true coefficients, one row per grid point at the task's k."""
    from oodfs.run.dataset import make_dataset

    suite = tiny(runs=1, methods=["correlation"], curve={})
    run_suite(suite, tmp_path / "out", progress=False)
    df = load_results(tmp_path / "out")
    data = make_dataset(suite, DataKey(suite.settings[0].name, 2.5, 0))
    row = df[df["metric"] == "beta_l1"]
    assert len(row) == 1 and row["k"].iloc[0] == suite.k
    scores = np.array(json.loads(row["scores"].iloc[0]))
    top = np.argsort(-scores, kind="stable")[: suite.k]
    A = np.column_stack([np.ones(len(data.y_train)), data.X_train[:, top]])
    beta_hat = np.zeros(data.X_train.shape[1])
    beta_hat[top] = np.linalg.lstsq(A, data.y_train, rcond=None)[0][1:]
    error = beta_hat - data.true_coef
    assert row["value"].iloc[0] == pytest.approx(np.abs(error).sum(), rel=1e-9)
    l2 = df[df["metric"] == "beta_l2"]["value"].iloc[0]
    assert l2 == pytest.approx(np.linalg.norm(error), rel=1e-9)


def test_a_suite_names_the_metrics_its_tables_show(tmp_path):
    from oodfs.report.report import Report

    suite = tiny(runs=1, methods=["correlation"], curve={}, metrics=["beta_l2", "f1"])
    run_suite(suite, tmp_path / "out", progress=False)
    assert Report.from_path(tmp_path / "out").headline == ["beta_l2", "f1"]
    assert Report.from_path(tmp_path / "out", columns=["rmse_mean"]).headline == ["rmse_mean"]
    for bad, needle in ((["rmse"], "no metric a table can show"), (["f1", "f1"], "twice"), ("f1", "list")):
        with pytest.raises(OodfsError, match=needle):
            tiny(metrics=bad)


def test_ols_known_scores_reproduced(tmp_path):
    """The stored scores are exactly |OLS coefficients| on the task's training data."""
    from oodfs.contract.registry import registry
    from oodfs.run.dataset import make_dataset

    suite = tiny(runs=1, methods=["ols"])
    run_suite(suite, tmp_path / "out", progress=False)
    df = load_results(tmp_path / "out")
    stored = np.array(json.loads(df["scores"].iloc[0]))
    data = make_dataset(suite, DataKey(suite.settings[0].name, 2.5, 0))
    expected = registry().get("selector", "ols")().fit(data.X_train, data.y_train).scores_
    np.testing.assert_allclose(stored, expected, rtol=1e-8)


def test_same_numbers_with_one_or_two_workers(tmp_path):
    run_suite(tiny(), tmp_path / "a", jobs=1, progress=False)
    run_suite(tiny(), tmp_path / "b", jobs=2, progress=False)
    pd.testing.assert_series_equal(values(tmp_path / "a"), values(tmp_path / "b"), check_exact=True)


def test_fewer_data_sets_than_workers_split_by_method_with_the_same_numbers(tmp_path):
    from oodfs.run.jobs import Job, plan
    from oodfs.run.progress import split_for_workers

    suite = tiny(runs=1)
    one = Job(DataKey("poly", 2.5, 0), ("ols", "correlation"))
    assert plan(suite, set()) == [one]
    assert plan(suite, {("poly", "2.5", 0, "ols")}) == [Job(DataKey("poly", 2.5, 0), ("correlation",))]

    def jobs(workers):
        return [j for _, _, j in split_for_workers([(None, None, one)], workers, lambda item: 1.0)]

    assert jobs(1) == [one]
    assert jobs(2) == [Job(DataKey("poly", 2.5, 0), ("ols",)), Job(DataKey("poly", 2.5, 0), ("correlation",))]
    run_suite(suite, tmp_path / "a", jobs=1, progress=False)
    run_suite(suite, tmp_path / "b", jobs=2, progress=False)
    pd.testing.assert_series_equal(values(tmp_path / "a"), values(tmp_path / "b"), check_exact=True)


def test_a_job_heavier_than_an_even_share_is_split_by_method():
    """A data set whose estimated work exceeds the pool's total over the workers would end the pool
    alone: it becomes one job per method; the others stay whole."""
    from oodfs.run.jobs import Job
    from oodfs.run.progress import split_for_workers

    methods = ("ols", "correlation", "lasso")

    def split(weights, workers):
        pool = [(None, w, Job(DataKey("poly", 2.5, run), methods)) for run, w in enumerate(weights)]
        return [(j.data.run, j.methods) for _, _, j in split_for_workers(pool, workers, lambda item: item[1])]

    whole = [(run, methods) for run in range(4)]
    assert split([10.0, 9.0, 8.0, 7.0], 2) == whole  # none above 34 / 2
    by_method = [[(run, (m,)) for m in methods] for run in range(4)]
    assert split([10.0, 9.0, 8.0, 7.0], 4) == by_method[0] + by_method[1] + whole[2:]  # 10, 9 > 34 / 4
    assert split([30.0, 2.0, 1.0, 1.0], 2) == by_method[0] + whole[1:]  # outweighs the rest together
    assert len(split([10.0, 9.0, 8.0, 7.0], 8)) == 12  # fewer jobs than workers: every job split


@pytest.mark.slow
def test_dask_backend_gives_the_same_numbers(tmp_path):
    pytest.importorskip("distributed")
    run_suite(tiny(), tmp_path / "a", jobs=1, progress=False)
    run_suite(tiny(), tmp_path / "d", jobs=2, backend_name="dask", progress=False)
    pd.testing.assert_series_equal(values(tmp_path / "a"), values(tmp_path / "d"), check_exact=True)


def test_resume_adds_without_repeating(tmp_path):
    out = tmp_path / "out"
    run_suite(tiny(methods=["ols"]), out, progress=False)
    first = values(out)
    with pytest.raises(Exception, match="--resume"):
        run_suite(tiny(), out, progress=False)
    run_suite(tiny(), out, resume=True, progress=False)
    after = values(out)
    assert not after.index.duplicated().any()
    pd.testing.assert_series_equal(after.loc[first.index], first, check_exact=True)
    run_suite(tiny(), tmp_path / "fresh", progress=False)
    pd.testing.assert_series_equal(after, values(tmp_path / "fresh"), check_exact=True)


def test_resume_refuses_a_different_experiment(tmp_path):
    run_suite(tiny(methods=["ols"]), tmp_path / "out", progress=False)
    with pytest.raises(Exception, match="n_train"):
        run_suite(tiny(n_train=700), tmp_path / "out", resume=True, progress=False)


def test_failing_and_slow_plugins_are_recorded_and_the_rest_runs(tmp_path):
    plugin = tmp_path / "broken_plugin.py"
    plugin.write_text(BROKEN_PLUGIN)
    out = tmp_path / "out"
    run_suite(
        tiny(runs=1, methods=["broken", "sleepy", "ols"]),
        out,
        plugin_modules=(str(plugin),),
        task_timeout=3,
        progress=False,
    )
    df = load_results(out)
    status = df.groupby("method")["status"].first()
    assert status.to_dict() == {"broken": "failed", "ols": "ok", "sleepy": "failed"}
    errors = df.groupby("method")["error"].first()
    assert "deliberately broken" in errors["broken"] and "timed out after 3 s" in errors["sleepy"]
    board = Leaderboard.from_results(df, "val")
    text = board.to_markdown()
    assert "| broken" in text and "failed" in text and "deliberately broken" in text
    csv = pd.read_csv(pd.io.common.StringIO(board.to_csv()))
    assert csv.loc[csv["method"] == "broken", "failed"].iloc[0] == 1


@pytest.mark.alone
@pytest.mark.slow
def test_sigkill_then_resume_loses_and_repeats_nothing(tmp_path):
    plugin = tmp_path / "sleepy_plugin.py"
    plugin.write_text(BROKEN_PLUGIN.replace("seconds = 60.0", "seconds = 0.4"))
    suite_file = tmp_path / "killme.toml"
    suite_file.write_text(
        textwrap.dedent("""
        environment = "synthetic"
        r_train = [2.5, 3.0]
        r_test = [-2.0, 2.0]
        runs = 3
        n_train = 500
        n_val = 100
        n_test = 300
        k = 5
        methods = ["ols", "sleepy", "correlation"]
        [settings.poly]
        params = { setting = "poly" }
    """)
    )
    base = [
        sys.executable,
        "-m",
        "oodfs.cli",
        "bench",
        "--suite",
        str(suite_file),
        "--plugin",
        str(plugin),
        "--quiet",
        "--no-figures",  # the figures of this suite are test_cli's
    ]
    out = tmp_path / "killed"
    proc = subprocess.Popen(base + ["--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    db = out / "results.sqlite"
    deadline = time.time() + 120
    n_done = 0
    while time.time() < deadline and proc.poll() is None:
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=5) as con:
                    n_done = con.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
            except sqlite3.OperationalError:
                n_done = 0
            if n_done >= 4:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as con:
        killed_at = con.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
    assert 4 <= killed_at < 18
    resumed = subprocess.run(base + ["--out", str(out), "--resume"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    # the run never killed, for comparison: in this process (its process is not what is tested)
    assert main(base[3:] + ["--out", str(tmp_path / "clean")]) == 0
    a, b = load_results(out), load_results(tmp_path / "clean")
    assert len(a) == len(b)  # nothing lost, nothing repeated
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM tasks").fetchone()[0] == 18
    pd.testing.assert_series_equal(values(out), values(tmp_path / "clean"), check_exact=True)
    la = Leaderboard.from_results(a, "val").to_csv()
    lb = Leaderboard.from_results(b, "val").to_csv()
    assert la == lb


def test_example_third_party_plugin_in_a_leaderboard(example_installed, tmp_path):
    run_suite(tiny(runs=1, methods=["covfilter", "ols"]), tmp_path / "out", progress=False)
    text = Leaderboard.from_results(load_results(tmp_path / "out"), "val").to_markdown()
    assert "| covfilter" in text and "| ols" in text
