"""Task types (regression, binary): the target check, the scores, the selector contract, the
downstream registry, and a binary suite end to end (docs/PROTOCOL.md, "Task types")."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, brier_score_loss, log_loss, roc_auc_score

import oodfs
from oodfs.contract.tasks import get_task, infer_task
from oodfs.validation import OodfsError
from tests.conftest import assert_one_line, run_cli

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- the task types ----------------------------------------------------------------------------
def test_infer_task_counts_distinct_values():
    assert infer_task([0, 1, 1, 0]) == "binary"
    assert infer_task(["no", "yes", None]) == "binary"
    assert infer_task([True, False]) == "binary"
    assert infer_task([0.5, 1.0, 2.0]) == "regression"
    assert infer_task([3.0, 3.0]) == "regression"


def test_binary_target_check_names_the_positive_class_and_refuses_other_level_counts():
    binary = get_task("binary")
    y, note = binary.check_target(np.array(["no", "yes", "yes"]), "column 'churn'")
    assert y.tolist() == [0.0, 1.0, 1.0] and y.dtype == float
    assert note == "column 'churn': positive class 'yes' (1.0), the other class 'no' (0.0)"
    y, note = binary.check_target([1, 0, 1])
    assert y.tolist() == [1.0, 0.0, 1.0] and note is None  # 0/1 already: nothing to say
    assert binary.check_target([True, False])[0].tolist() == [1.0, 0.0]
    with pytest.raises(OodfsError, match=r"has 3 levels; a binary target has exactly 2 \(multiclass"):
        binary.check_target(["a", "b", "c"], "y")
    with pytest.raises(OodfsError, match="has 1 level;"):
        binary.check_target([1, 1], "y")
    with pytest.raises(OodfsError, match="1 missing values"):
        binary.check_target(np.array([1.0, np.nan, 0.0]), "y")


def test_binary_scores_are_scikit_learns():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200).astype(float)
    P = rng.random((3, 200))
    scores = get_task("binary").score(y, P)
    for i, p in enumerate(P):
        assert scores["log_loss"][i] == pytest.approx(log_loss(y, p))
        assert scores["brier"][i] == pytest.approx(brier_score_loss(y, p))
        assert scores["accuracy"][i] == accuracy_score(y, p >= 0.5)
        assert scores["auc"][i] == pytest.approx(roc_auc_score(y, p))
    one_class = get_task("binary").score(np.ones(5), np.full(5, 0.9))
    assert np.isnan(one_class["auc"][0]) and one_class["accuracy"][0] == 1.0
    assert get_task("regression").score([1.0, 3.0], [[1.0, 1.0]])["rmse"][0] == pytest.approx(2**0.5)
    assert (
        get_task("binary").metric("val") == "log_loss_val"
        and get_task("regression").metric("val") == "rmse_val"
    )


# -- the selector contract --------------------------------------------------------------------------
class Seen(oodfs.Selector):
    """Records the task and target it was fitted on (a test double)."""

    name = "seen"
    task_types = ("regression", "binary")
    calls: list = []

    def _fit_scores(self, X, y, sample_weight):
        Seen.calls.append((self.task_, sorted(set(y.tolist()))))
        return np.arange(X.shape[1], dtype=float)


class RegressionOnly(oodfs.Selector):
    """A selector that declares nothing (regression only)."""

    name = "regression_only"

    def _fit_scores(self, X, y, sample_weight):
        return np.ones(X.shape[1])

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state):  # an override without `task`
        return [np.ones(X.shape[1]) for _ in points]


def test_fit_sets_the_task_and_gives_a_binary_target_as_0_and_1():
    X = np.random.default_rng(0).normal(size=(20, 3))
    Seen.calls = []
    Seen().fit(X, np.repeat([2.0, 5.0], 10))  # inferred: two values
    Seen().fit(X, np.repeat([2.0, 5.0], 10), task="regression")
    Seen.fit_grid(X, np.repeat([0.0, 1.0], 10), [{}], task="binary")
    assert Seen.calls == [("binary", [0.0, 1.0]), ("regression", [2.0, 5.0]), ("binary", [0.0, 1.0])]


def test_a_selector_refuses_a_task_it_does_not_declare_in_one_line():
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.repeat([0.0, 1.0], 10)
    with pytest.raises(
        OodfsError, match=r"^selector 'regression_only' handles regression targets, not binary$"
    ):
        RegressionOnly().fit(X, y, task="binary")
    with pytest.raises(OodfsError, match="handles regression targets, not binary"):
        RegressionOnly.fit_grid(X, y, [{}], task="binary")
    # inferred, not named: a two-valued y stays a regression target for a regression method
    assert RegressionOnly().fit(X, y).task_ == "regression"
    # an override of _fit_grid that predates task types is called without the keyword
    assert len(RegressionOnly.fit_grid(X, y, [{}, {}])) == 2


def test_a_weighters_selector_fits_weighted_logistic_regression_on_a_binary_target():
    from sklearn.linear_model import LogisticRegression

    from oodfs.contract.wls import WLSSelector

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 4)) * [1.0, 3.0, 0.5, 1.0]
    y = (X[:, 0] - X[:, 1] / 3 + rng.logistic(size=400) > 0).astype(float)
    sel = WLSSelector().fit(X, y, task="binary")
    Xs = (X - X.mean(0)) / X.std(0)
    exact = LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-10, max_iter=1000)
    expected = np.abs(exact.fit(Xs, y).coef_.ravel())
    np.testing.assert_allclose(sel.scores_, expected, rtol=1e-6)
    wls = WLSSelector(binary_fit="wls").fit(X, y, task="binary")
    np.testing.assert_allclose(wls.scores_, np.abs(oodfs.weighted_least_squares(X, y, np.ones(400))))
    with pytest.raises(OodfsError, match="binary_fit must be one of logistic, wls"):
        WLSSelector(binary_fit="probit").fit(X, y, task="binary")
    dwr = oodfs.get_selector("dwr")
    assert "binary" in dwr.task_types and dwr().get_params()["binary_fit"] == "logistic"


# -- downstream models --------------------------------------------------------------------------
def test_the_downstream_registry_is_the_one_list_of_models():
    from oodfs.contract.profiles import DOWNSTREAM_MODELS
    from oodfs.run.downstream_models import check_model, models

    assert set(models("regression")) == {"mlp", "ridge", "gbm"}
    assert set(models("binary")) == {"mlp", "gbm", "logistic"}
    assert set(DOWNSTREAM_MODELS) == set(models())
    with pytest.raises(OodfsError, match="unknown downstream model 'svm'; valid: "):
        check_model("svm")
    with pytest.raises(OodfsError, match="'ridge' does not predict a binary target; valid for binary: "):
        check_model("ridge", "binary")


def _binary_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (1.5 * X[:, 0] - X[:, 1] + rng.logistic(size=n) > 0).astype(float)
    return X, y


@pytest.mark.parametrize("name", ["mlp", "logistic", "gbm"])
def test_downstream_classifiers_predict_probabilities_that_beat_the_prior(name):
    from oodfs.run.downstream_models import get_model, score_subsets

    X, y = _binary_data()
    model = get_model(name, "binary")
    tests = [(X[400:], y[400:])]
    scored = score_subsets(model, X[:400], y[:400], [(0, 1), (2, 3), ()], 5, tests, "binary")[0]
    P = model.predict_subsets(X[:400], y[:400], [(0, 1)], 5, [X[400:]])[0]
    assert ((P >= 0) & (P <= 1)).all()
    # the stable pair beats the noise pair, which is no better than the base rate (the empty subset)
    assert scored["log_loss"][0] < scored["log_loss"][1] - 0.1
    assert scored["auc"][0] > 0.75 > scored["auc"][1]
    assert scored["log_loss"][2] == pytest.approx(log_loss(y[400:], np.full(200, y[:400].mean())))
    # a subset's predictions do not depend on its batch
    again = model.predict_subsets(X[:400], y[:400], [(2, 3), (0, 1)], 5, [X[400:]])[0][1]
    np.testing.assert_array_equal(P[0], again)


def test_the_logistic_mlp_engines_agree():
    """The numba kernel's logistic output trains the torch engine's algorithm (measured in
    benchmarks/downstream_engines/bench_downstream_engines.py --task binary): after a few epochs the two
    agree up to float order."""
    from oodfs.run.downstream import fit_downstream

    X, y = _binary_data(800, 2)
    subsets = [(0,), (0, 1), (1, 2, 3)]
    a = fit_downstream(X, y, subsets, 4, max_epochs=3, engine="numba", task="binary")
    b = fit_downstream(X, y, subsets, 4, max_epochs=3, engine="torch", task="binary")
    np.testing.assert_allclose(a.predict(X[:50]), b.predict(X[:50]), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(a.val_loss, b.val_loss, rtol=1e-4)
    with pytest.raises(OodfsError, match="a binary target must hold 0.0 and 1.0 only"):
        fit_downstream(X, y + 1, subsets, 4, task="binary")


# -- a binary suite end to end ------------------------------------------------------------------------
PLUGIN = '''
import numpy as np
import oodfs


class TinyBinary(oodfs.Environment):
    """Two stable features drive a logistic outcome; a third follows the outcome with a sign set by env."""

    name = "tinybinary"
    task = "binary"
    example_envs = (2.0, -2.0)

    @property
    def feature_names(self):
        return ["s1", "s2", "spurious", "noise"]

    @property
    def stable_set(self):
        return (0, 1)

    def check_env(self, env):
        return float(env)

    def sample(self, env, n, seed):
        rng = np.random.default_rng(seed)
        S = rng.normal(size=(n, 2))
        y = (rng.random(n) < 1 / (1 + np.exp(-(2 * S[:, 0] - 1.5 * S[:, 1])))).astype(float)
        spurious = float(env) * (2 * y - 1) / 2 + rng.normal(size=n)
        if float(env) == 9.0:  # an environment of one class (bad input)
            y[:] = 1.0
        return np.column_stack([S, spurious, rng.normal(size=n)]), y


class AbsCorr(oodfs.Selector):
    """|correlation| of each feature with the target (regression or binary)."""

    name = "abscorr"
    task_types = ("regression", "binary")

    def _fit_scores(self, X, y, sample_weight):
        return np.abs(np.corrcoef(X.T, y)[-1, :-1])


class AbsCov(oodfs.Selector):
    """|covariance| of each feature with the target (declares regression only)."""

    name = "abscov"

    def _fit_scores(self, X, y, sample_weight):
        return np.abs((X - X.mean(0)).T @ (y - y.mean())) / len(y)


@oodfs.hookimpl
def oodfs_environments():
    return [TinyBinary]


@oodfs.hookimpl
def oodfs_selectors():
    return [AbsCorr, AbsCov]
'''

SUITE = """
environment = "tinybinary"
task = "binary"
r_train = [1.5]
r_test = [-1.5, 1.5]
runs = 2
n_train = 300
n_val = 100
n_test = 300
k = 2
methods = {methods}
yardsticks = ["all_features", "prior"]
downstream = ["logistic", "mlp"]
[settings.base]
params = {{}}
"""


@pytest.fixture(scope="module")
def binary_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("binary")
    (tmp / "tinybinary.py").write_text(PLUGIN)
    (tmp / "suite.toml").write_text(SUITE.format(methods='["abscorr", "dwr", "abscov"]'))
    return tmp


@pytest.fixture(scope="module")
def binary_run(binary_files, tmp_path_factory):
    from oodfs.cli import main
    from oodfs.contract.registry import reset_registry

    out = tmp_path_factory.mktemp("binary-out") / "out"
    args = [
        "bench",
        "--suite",
        str(binary_files / "suite.toml"),
        "--plugin",
        str(binary_files / "tinybinary.py"),
    ]
    reset_registry()
    assert main([*args, "--out", str(out), "--jobs", "1", "--quiet", "--no-isolation"]) == 0
    reset_registry()
    return out


def test_a_binary_suite_stores_classification_metrics_and_skips_regression_only_methods(binary_run):
    from oodfs.results.store import ResultStore

    results = pd.read_parquet(binary_run / "results.parquet")
    assert set(results["method"]) == {"abscorr", "dwr", "all_features", "prior"}  # abscov skipped, not failed
    assert (results["status"] == "ok").all()
    metrics = set(results["metric"])
    for name in (
        "log_loss_mean",
        "log_loss_std",
        "log_loss_worst",
        "auc_mean",
        "accuracy_mean",
        "brier_mean",
    ):
        assert name in metrics
    assert {"log_loss_val", "log_loss", "rank_avg", "f1"} <= metrics
    assert not {"rmse_mean", "rmse_val", "mse_mean", "beta_l1"} & metrics  # regression's metrics: none
    assert set(results["downstream"]) == {"logistic", "mlp"}
    # the prior yardstick: the training base rate, trained on no feature
    prior = results[(results["method"] == "prior") & (results["metric"] == "accuracy_mean")]
    assert (prior["k"] == 0).all() and (prior["subset"] == "[]").all()
    # the task type is recorded with the run
    identity = ResultStore(binary_run).get_meta("suite_identity")
    assert identity["task"] == "binary"
    leaderboard = (binary_run / "leaderboard.md").read_text()
    for title in ("log-loss mean", "AUC mean", "accuracy mean", "Brier mean"):
        assert title in leaderboard
    assert "abscov: handles regression targets only, not binary" in leaderboard
    assert "Skipped, not failed" in leaderboard


def test_a_binary_leaderboard_selects_by_validation_log_loss(binary_run):
    from oodfs.report.report import Report

    report = Report.from_path(str(binary_run))
    assert report.task == "binary" and report.rule.name == "val"
    assert report.rule.metric(report.task) == "log_loss_val"
    for _, task in report.points.groupby(["setting", "r_train", "run", "method"]):
        chosen = report.chosen.merge(task[["setting", "r_train", "run", "method", "point"]])
        assert chosen["log_loss_val"].iloc[0] == task["log_loss_val"].min()
    # the stored subset is what the report names as selected
    from oodfs.report.features import selected_features

    row = report.chosen[report.chosen["method"] == "abscorr"].iloc[0]
    names = json.loads(row["feature_names"])
    assert selected_features(row) == [names[j] for j in json.loads(row["subset"])]


def test_naming_only_methods_that_cannot_classify_is_one_line(binary_files, capsys, tmp_path):
    result = run_cli(
        capsys,
        "bench",
        "--suite",
        str(binary_files / "suite.toml"),
        "--plugin",
        str(binary_files / "tinybinary.py"),
        "--methods",
        "abscov",
        "--out",
        str(tmp_path / "x"),
    )
    assert_one_line(result, "abscov", "binary target", "methods that can: ", "abscorr", "dwr")


def test_a_suite_that_contradicts_its_environments_task_is_one_line(binary_files, capsys, tmp_path):
    (tmp_path / "s.toml").write_text(
        SUITE.format(methods='["abscorr"]')
        .replace('task = "binary"', 'task = "regression"')
        .replace('["logistic", "mlp"]', '["mlp"]')
    )
    result = run_cli(
        capsys,
        "bench",
        "--suite",
        str(tmp_path / "s.toml"),
        "--plugin",
        str(binary_files / "tinybinary.py"),
        "--out",
        str(tmp_path / "x"),
    )
    assert_one_line(result, "task = 'regression'", "gives a binary target")


def test_a_binary_environment_sets_the_task_of_a_suite_that_does_not_name_it(binary_files, capsys, tmp_path):
    from oodfs.contract.registry import registry
    from oodfs.run.suite import load_suite, with_task

    (tmp_path / "s.toml").write_text(
        SUITE.format(methods='["abscorr", "abscov"]').replace('task = "binary"', "")
    )
    registry((str(binary_files / "tinybinary.py"),))
    suite, skipped = with_task(load_suite(str(tmp_path / "s.toml")), registry())
    assert suite.task == "binary" and "abscov" not in suite.methods and set(skipped) == {"abscov"}


def test_a_regression_model_on_a_binary_suite_is_one_line(binary_files, capsys, tmp_path):
    result = run_cli(
        capsys,
        "bench",
        "--suite",
        str(binary_files / "suite.toml"),
        "--plugin",
        str(binary_files / "tinybinary.py"),
        "--downstream",
        "ridge",
        "--out",
        str(tmp_path / "x"),
    )
    assert_one_line(result, "'ridge' does not predict a binary target")


def test_a_training_environment_of_one_class_fails_its_tasks_with_one_line(binary_files, tmp_path):
    from oodfs.contract.registry import registry
    from oodfs.results.store import ResultStore
    from oodfs.run.runner import run_suite
    from oodfs.run.suite import load_suite

    (tmp_path / "s.toml").write_text(
        SUITE.format(methods='["abscorr"]')
        .replace("r_train = [1.5]", "r_train = [9.0]")
        .replace("runs = 2", "runs = 1")
    )
    registry((str(binary_files / "tinybinary.py"),))
    run_suite(
        load_suite(str(tmp_path / "s.toml")),
        tmp_path / "out",
        jobs=1,
        progress=False,
        isolate=False,
        plugin_modules=(str(binary_files / "tinybinary.py"),),
    )
    tasks, _ = ResultStore(tmp_path / "out").tables()
    assert (tasks["status"] == "failed").all()
    assert set(tasks["error"]) == {
        "training environment 9.0 of setting 'base' holds one class of the binary target only (1.0); "
        "it needs both"
    }
