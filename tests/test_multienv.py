"""Several labelled training environments: the groups contract, r_train sets in suites, the data a
task sees, the environment-aware selection rules and the one-line refusals of bad input."""

import json

import numpy as np
import pandas as pd
import pytest

import oodfs
from oodfs.cli import main
from oodfs.contract.api import check_groups
from oodfs.contract.selection import get_rule
from oodfs.contract.task import DataKey
from oodfs.report.report import Report
from oodfs.run.dataset import make_dataset
from oodfs.run.suite import load_suite, suite_from_dict
from oodfs_plugins.baselines import OLS
from oodfs_plugins.invariance import ICP

from .conftest import assert_one_line
from .conftest import run_cli as run

MULTI = """
environment = "synthetic"
r_train = [[1.5, 3.0]{extra_set}]
r_test = [-2.0, 2.0]
runs = {runs}
n_train = 300
n_val = 100
n_test = 300
k = 5
methods = {methods}
[settings.poly]
params = {{ setting = "poly" }}
run_params = {{ layout_seed = "seed" }}
"""


def write_suite(tmp_path, methods=("icp", "anchor", "ols"), runs=1, extra_set=", [2.0, 2.5, 3.0]", **replace):
    text = MULTI.format(methods=json.dumps(list(methods)), runs=runs, extra_set=extra_set)
    for key, value in replace.items():
        text = "\n".join(
            f"{key} = {value}" if line.startswith(f"{key} =") else line for line in text.splitlines()
        )
    path = tmp_path / "multi.toml"
    path.write_text(text)
    return str(path)


# -- the contract ----------------------------------------------------------------------------------
def test_check_groups_codes_labels_in_sorted_order_and_refuses_bad_labels():
    codes = check_groups(np.array(["b", "a", "b", "c", "a", "c"]), 6, "selector 'x'")
    assert codes.tolist() == [1, 0, 1, 2, 0, 2]
    cases = [
        (None, "pass groups"),
        (np.zeros(5), "5 labels for 6 training rows"),
        (np.zeros(6), "at least 2 training environments, got 1"),
        (np.array([0, 0, 0, 1, 1, np.nan]), "1 missing labels"),
        (np.array([0, 0, 0, 0, 0, 1]), "environment 1 has 1"),
    ]
    for groups, needle in cases:
        with pytest.raises(oodfs.OodfsError, match=needle) as exc:
            check_groups(groups, 6, "selector 'x'", min_rows=2)
        assert "\n" not in str(exc.value)


def test_label_free_methods_ignore_labels_and_label_using_ones_require_them():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((90, 4)), rng.standard_normal(90)
    g = np.repeat([0, 1, 2], 30)
    assert np.array_equal(OLS().fit(X, y, groups=g).scores_, OLS().fit(X, y).scores_)
    assert np.array_equal(OLS.fit_grid(X, y, [{}], groups=g)[0], OLS.fit_grid(X, y, [{}])[0])
    with pytest.raises(oodfs.OodfsError, match="selector 'icp' uses environment labels"):
        ICP().fit(X, y)
    with pytest.raises(oodfs.OodfsError, match="selector 'icp' uses environment labels"):
        ICP.fit_grid(X, y, [{}])
    with pytest.raises(oodfs.OodfsError, match="89 labels for 90 training rows"):
        ICP().fit(X, y, groups=g[:-1])


# -- suites and data sets -----------------------------------------------------------------------------
def test_r_train_sets_are_parsed_normalised_and_checked(tmp_path):
    suite = load_suite(write_suite(tmp_path))
    assert suite.r_train == ((1.5, 3.0), (2.0, 2.5, 3.0))
    raw = {
        "environment": "synthetic",
        "r_test": [2.0],
        "n_train": 10,
        "n_test": 10,
        "methods": ["ols"],
        "settings": {"poly": {"params": {"setting": "poly"}}},
    }
    assert suite_from_dict("s", {**raw, "r_train": [[2, 3]]}).r_train == ((2.0, 3.0),)
    for bad, needle in (
        ([[2.0]], "at least two distinct"),
        ([[2.0, 2.0]], "at least two distinct"),
        ([[2.0, [3.0]]], "must hold numbers or names"),
    ):
        with pytest.raises(oodfs.OodfsError, match=needle):
            suite_from_dict("s", {**raw, "r_train": bad})


def test_the_command_line_names_a_set_of_training_environments_with_plus():
    from oodfs.commands.options import r_train_list
    from oodfs.run.suite import customise

    assert r_train_list("1.5+2.0+3,2.5") == [[1.5, 2.0, 3.0], 2.5]
    suite = customise(load_suite("synthetic-multienv"), r_train=r_train_list("1.5+3.0,2.0+2.5"))
    assert suite.r_train == ((1.5, 3.0), (2.0, 2.5))
    with pytest.raises(oodfs.OodfsError, match="at least two distinct"):
        customise(load_suite("synthetic-multienv"), r_train=r_train_list("2.0+2.0"))


def test_a_set_pools_each_environment_as_drawn_alone_with_labels(tmp_path):
    suite = load_suite(write_suite(tmp_path))
    pooled = make_dataset(suite, DataKey("poly", (1.5, 3.0), 0))
    alone = [make_dataset(suite, DataKey("poly", r, 0)) for r in (1.5, 3.0)]
    assert pooled.train_envs == (1.5, 3.0)
    assert np.array_equal(pooled.X_train, np.vstack([a.X_train for a in alone]))
    assert np.array_equal(pooled.X_val, np.vstack([a.X_val for a in alone]))
    assert pooled.groups_train.tolist() == [0] * 300 + [1] * 300
    assert pooled.groups_val.tolist() == [0] * 100 + [1] * 100
    assert alone[0].groups_train is None  # one environment: no labels
    X_e, y_e = pooled.environment_rows(1)
    assert np.array_equal(X_e, np.vstack([alone[1].X_train, alone[1].X_val]))


# -- a run --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def multi_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("multi")
    path = write_suite(tmp, methods=("icp", "anchor", "ols"), runs=2)
    out = tmp / "out"
    assert (
        main(["bench", "--suite", path, "--out", str(out), "--jobs", "1", "--quiet", "--no-isolation"]) == 0
    )
    return out


def test_a_multi_environment_run_stores_the_environment_aware_selection_metrics(multi_run):
    results = pd.read_parquet(multi_run / "results.parquet")
    assert set(results["r_train"]) == {"(1.5, 3.0)", "(2.0, 2.5, 3.0)"}
    per_point = results.groupby(["r_train", "run", "method", "point"])["metric"].agg(set)
    assert all({"rmse_train_domain", "rmse_val"} <= m for m in per_point)
    # leave one out: every method on three environments; on two, a label-using method is left with
    # one environment when one is held out, so only the label-free ols has the value
    loeo = results[results["metric"] == "rmse_loeo"].groupby("r_train")["method"].agg(set)
    assert loeo.to_dict() == {"(1.5, 3.0)": {"ols"}, "(2.0, 2.5, 3.0)": {"icp", "anchor", "ols"}}
    # train-domain: the mean of per-environment RMSEs, close to (not equal to) the pooled val RMSE
    wide = results[results["env"].isna()].pivot_table(
        index=["r_train", "run", "method", "point"], columns="metric", values="value"
    )
    assert np.allclose(wide["rmse_train_domain"], wide["rmse_val"], rtol=0.1)


@pytest.mark.parametrize("rule", ["train-domain", "loeo"])
def test_the_environment_aware_rules_choose_a_point_per_task(multi_run, rule):
    report = Report.from_path(str(multi_run), rule)
    assert report.rule.name == rule
    metric = get_rule(rule).metric(report.task)
    for _, task in report.points.groupby(["r_train", "run", "method"]):
        chosen = report.chosen.merge(task[["r_train", "run", "method", "point"]])
        values = task[metric].dropna()
        if len(values):
            assert chosen[metric].iloc[0] == values.min()


def test_each_training_environments_validation_rmse_is_stored_and_worst_env_reads_it(multi_run):
    """One validation RMSE per training environment (column env), whose mean is train-domain's value,
    and the worst-env rule picks per task the point whose largest one is smallest: a rule computed
    after the run from what the run stored."""
    results = pd.read_parquet(multi_run / "results.parquet")
    keys = ["r_train", "run", "method", "point"]
    per_env = results[results["metric"] == "rmse_val_env"]
    assert per_env.groupby("r_train")["env"].agg(lambda e: sorted(set(e))).to_dict() == {
        "(1.5, 3.0)": ["1.5", "3.0"],
        "(2.0, 2.5, 3.0)": ["2.0", "2.5", "3.0"],
    }
    mean = per_env.groupby(keys)["value"].mean()
    domain = results[results["metric"] == "rmse_train_domain"].set_index(keys)["value"]
    assert np.allclose(mean.sort_index(), domain.loc[mean.sort_index().index], rtol=1e-12)
    report = Report.from_path(str(multi_run), "worst-env")
    worst = per_env.groupby(["setting", *keys])["value"].max().rename("worst").reset_index()
    for (r, run_, method), g in worst.groupby(["r_train", "run", "method"]):
        chosen = report.chosen[
            (report.chosen["r_train"] == r)
            & (report.chosen["run"] == run_)
            & (report.chosen["method"] == method)
        ]
        best = g.sort_values(["worst", "point"], kind="stable").iloc[0]["point"]
        assert int(chosen["point"].iloc[0]) == int(best)


def test_the_environment_aware_rules_refuse_a_one_environment_run(tmp_path, capsys):
    path = write_suite(tmp_path, methods=("ols",), extra_set="", r_train="[2.5]")
    out = tmp_path / "one"
    assert (
        main(["bench", "--suite", path, "--out", str(out), "--jobs", "1", "--quiet", "--no-isolation"]) == 0
    )
    capsys.readouterr()
    assert_one_line(
        run(capsys, "leaderboard", str(out), "--selection", "loeo"),
        "rmse_loeo",
        "several training environments",
    )


# -- bad input: one line, exit 2 ---------------------------------------------------------------------
def test_a_label_using_method_on_one_environment_is_refused(tmp_path, capsys):
    path = write_suite(tmp_path, methods=("icp", "ols"), extra_set="", r_train="[2.5]")
    assert_one_line(
        run(capsys, "bench", "--suite", path, "--out", str(tmp_path / "o")),
        "method 'icp' learns from environment labels",
        "r_train entry 2.5 is one environment",
    )


def test_too_few_rows_per_environment_is_refused(tmp_path, capsys):
    path = write_suite(tmp_path, methods=("icp",), n_train="2")
    assert_one_line(
        run(capsys, "bench", "--suite", path, "--out", str(tmp_path / "o")),
        "'icp' needs at least 3 training rows per environment",
    )


def test_select_hands_the_environment_column_to_label_using_methods(tmp_path, capsys):
    rng = np.random.default_rng(0)
    period = np.repeat(["p1", "p2", "p3"], 200)
    scale = pd.Series(period).map({"p1": 0.5, "p2": 1.0, "p3": 2.0}).to_numpy()
    df = pd.DataFrame(rng.standard_normal((600, 4)) * scale[:, None], columns=["a", "b", "c", "d"])
    df["y"] = 2 * df["a"] + df["b"] + 0.1 * rng.standard_normal(600)
    df["child"] = df["y"] * scale + rng.standard_normal(
        600
    )  # predictive, but its link changes with the period
    df["period"] = period
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, out, err = run(
        capsys,
        "select",
        str(path),
        "--target",
        "y",
        "--method",
        "icp",
        "--env-column",
        "period",
        "--json",
        "--no-standardize",
    )
    assert code == 0, err
    ranking = json.loads(out)["ranking"]
    assert [r["feature"] for r in ranking[:2]] == ["a", "b"]
    assert_one_line(run(capsys, "select", str(path), "--target", "y", "--method", "icp"), "--env-column")
    assert_one_line(
        run(
            capsys,
            "select",
            str(path),
            "--target",
            "y",
            "--method",
            "icp",
            "--env-column",
            "period",
            "--train-envs",
            "p1",
        ),
        "at least 2 training environments",
    )
    extra = pd.DataFrame(rng.standard_normal((600, 10)), columns=[f"x{i}" for i in range(10)])
    wide = pd.concat([df, extra], axis=1)
    wide.to_csv(path, index=False)
    assert_one_line(
        run(capsys, "select", str(path), "--target", "y", "--method", "icp", "--env-column", "period"),
        "exact subset search is limited to 12 features",
    )


def test_a_jobs_methods_sharing_its_downstream_caches_give_the_numbers_each_gives_alone(tmp_path):
    """A job takes its methods one after another and takes the subsets (and leave-one-environment-
    out subsets) an earlier method trained from its caches: every stored number is the one the
    method gets in a job of its own (docs/PROTOCOL.md section 20)."""
    from oodfs.run.runner import run_suite

    suite = load_suite(write_suite(tmp_path, methods=("anchor", "ols", "correlation"), extra_set=""))
    shared = run_suite(suite, tmp_path / "shared", jobs=1, isolate=False, progress=False)
    alone = run_suite(suite, tmp_path / "alone", jobs=3, isolate=False, progress=False)  # a job each
    timing = ["fit_seconds", "downstream_seconds", "data_seconds", "versions"]
    frames = []
    for store in (shared, alone):
        df = store.frame().drop(columns=timing, errors="ignore")
        frames.append(df.sort_values(list(df.columns[:8])).reset_index(drop=True))
    assert "rmse_loeo" in set(frames[0]["metric"])  # the leave-one-environment-out losses are compared too
    pd.testing.assert_frame_equal(frames[0], frames[1])
