"""Your own binary table end to end (docs/PROTOCOL.md sections 8 and 16): the task is decided
from the target in a suite as in ``oodfs select``, and every output of a binary folder comes from
the one analysis, for every downstream model the suite declares."""

import warnings

import numpy as np
import pandas as pd
import pytest

from oodfs.contract.registry import registry
from oodfs.run.suite import load_suite, with_task
from oodfs.tables import TableWarning
from tests.conftest import assert_one_line, run_cli

SUITE = """
environment = "{environment}"
{task}
r_train = ["p1", "p2"]
r_test = ["p3", "p4"]
runs = {runs}
n_train = 150
n_val = 50
n_test = 300
k = 2
methods = {methods}
yardsticks = ["all_features"]
downstream = {downstream}
[settings.own]
params = {{ path = "{path}", target = "{target}", env_column = "period", drop = {drop} }}
"""


def _table(path):
    """Four periods; a and b drive a logistic outcome, c's effect shifts with the period."""
    rng = np.random.default_rng(0)
    n = 1200
    df = pd.DataFrame({"period": rng.choice(["p1", "p2", "p3", "p4"], n)})
    for c in "abcde":
        df[c] = rng.normal(size=n)
    shift = df["period"].map({"p1": -1, "p2": 0, "p3": 1, "p4": 2})
    logit = 1.5 * df["a"] - df["b"] + 0.5 * shift * df["c"]
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    df["answer"] = np.where(df["y"] == 1, "yes", "no")
    df["amount"] = df["a"] * 10 + rng.normal(size=n)
    df.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def table_source(tmp_path_factory):
    return _table(tmp_path_factory.mktemp("own") / "own.csv")


@pytest.fixture
def table_path(tmp_path, table_source):
    """The table beside the test's suite file (a suite reads tables in its own folder)."""
    (tmp_path / "own.csv").write_bytes(table_source.read_bytes())
    return tmp_path / "own.csv"


def suite_file(tmp_path, table_path, **given) -> str:
    """A suite file on the table; ``given`` overrides the defaults below."""
    fields = dict(
        environment="table",
        task="",
        runs=2,
        methods='["lasso"]',
        downstream='["logistic"]',
        path=table_path,
        target="y",
        drop='["answer", "amount"]',
    )
    fields.update(given)
    path = tmp_path / "suite.toml"
    path.write_text(SUITE.format(**fields))
    return str(path)


def decided(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        suite, _ = with_task(load_suite(path), registry())
    return suite, [str(w.message) for w in caught if issubclass(w.category, TableWarning)]


# -- item 1: one task-type check ----------------------------------------------------------------------
def test_a_table_suite_with_a_0_1_target_runs_as_binary_with_selects_note(tmp_path, table_path):
    suite, notes = decided(suite_file(tmp_path, table_path))
    assert (suite.environment, suite.task) == ("binary_table", "binary")
    assert suite.settings[0].params["positive"] == 1
    (note,) = notes
    assert "target 'y' has two levels: binary task, positive class '1'" in note
    assert 'task = "regression" in the suite file' in note and "positive = 0" in note


def test_a_two_level_text_target_runs_as_binary_positive_the_last_level(tmp_path, table_path):
    path = suite_file(tmp_path, table_path, target="answer", drop='["y", "amount"]')
    suite, notes = decided(path)
    assert (suite.environment, suite.task, suite.settings[0].params["positive"]) == (
        "binary_table",
        "binary",
        "yes",
    )
    assert 'positive = "no" in the setting' in notes[0] and "regress it" not in notes[0]


def test_a_binary_table_without_positive_takes_selects_positive_class(tmp_path, table_path):
    suite, notes = decided(suite_file(tmp_path, table_path, environment="binary_table"))
    assert suite.settings[0].params["positive"] == 1 and "binary task" in notes[0]


def test_task_regression_regresses_a_0_1_target_with_a_note(tmp_path, table_path, capsys):
    path = suite_file(tmp_path, table_path, task='task = "regression"', downstream='["ridge"]', runs=1)
    suite, notes = decided(path)
    assert (suite.environment, suite.task) == ("table", "regression") and not notes
    with pytest.warns(
        TableWarning, match=r"target 'y' has two values \(0, 1\): regressed as a number, as asked"
    ):
        code, out, err = run_cli(
            capsys, "bench", "--suite", path, "--out", str(tmp_path / "r"), "--no-figures"
        )
    assert code == 0, err
    assert "RMSE mean" in out and "log-loss mean" not in out


@pytest.mark.parametrize(
    "given, needles",
    [
        # the suite says binary, the target has many values: positive= / threshold= named
        (
            {"environment": "binary_table", "target": "amount", "drop": '["y", "answer"]'},
            ["positive=", "threshold="],
        ),
        # a binary target cannot take a regression model
        ({"downstream": '["ridge"]'}, ["'ridge'", "binary", "logistic"]),
        ({"target": "nothere"}, ["'nothere'", "not found", "available columns"]),
    ],
)
def test_a_table_suite_that_cannot_run_is_one_line(tmp_path, table_path, capsys, given, needles):
    path = suite_file(tmp_path, table_path, **given)
    result = run_cli(capsys, "bench", "--suite", path, "--out", str(tmp_path / "r"), "--no-figures")
    status, _, err = result
    assert status == 2 and "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("oodfs: error")]
    assert len(errors) == 1 and all(n in errors[0] for n in needles), err


def test_settings_with_different_tasks_are_one_line(tmp_path, table_path, capsys):
    path = suite_file(tmp_path, table_path)
    text = open(path).read() + (
        f'[settings.amount]\nparams = {{ path = "{table_path}", target = "amount", env_column = "period", '
        'drop = ["y", "answer"] }\n'
    )
    open(path, "w").write(text)
    result = run_cli(capsys, "bench", "--suite", path, "--out", str(tmp_path / "r"), "--no-figures")
    assert_one_line(result, "different tasks", "own: binary_table", "amount: table", 'task = "regression"')


# -- a small binary folder with two downstream models ---------------------------------------------------
@pytest.fixture(scope="module")
def binary_folder(tmp_path_factory):
    """A binary table suite (a 0/1 target on `table`) with logistic and mlp, 10 units of replication."""
    from oodfs.cli import main

    folder = tmp_path_factory.mktemp("binary")
    _table(folder / "own.csv")
    suite = suite_file(
        folder, folder / "own.csv", runs=5, methods='["lasso", "mi"]', downstream='["logistic", "mlp"]'
    )
    out = folder / "results"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (
            main(["bench", "--suite", suite, "--out", str(out), "--jobs", "1", "--no-figures", "--quiet"])
            == 0
        )
    return out


def _analysis(folder, model):
    from oodfs.report.analysis import Analysis
    from oodfs.report.report import Report

    return Analysis(Report.from_path(folder, downstream=model))


def _compare_verdicts(text: str, metric_title: str) -> dict:
    """{method: verdict} of compare's table of one metric."""
    section = text.split(f": {metric_title} ")[1].split("### ")[0]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return {r[1].strip(): r[-2].strip() for r in rows[1:]}


@pytest.mark.parametrize("model, name", [("logistic", "compare.md"), ("mlp", "compare-mlp.md")])
def test_compare_tests_every_downstream_model_with_its_own_analysis(binary_folder, capsys, model, name):
    code, out, err = run_cli(capsys, "compare", str(binary_folder), "--downstream", model)
    assert code == 0, err
    assert (binary_folder / name).read_text() == out.replace("](cd_", "](figures/cd_")
    assert f"Downstream model: {model}." in out
    other = "mlp" if model == "logistic" else "logistic"
    assert f"the run also trained {other} (--downstream {other})" in err
    analysis = _analysis(binary_folder, model)
    shown = _compare_verdicts(out, "log-loss mean")
    assert set(shown) == {"lasso", "mi"}
    for method, verdict in shown.items():
        assert verdict == analysis.verdict("own", "log_loss_mean", method, "all_features")


def test_compare_names_the_models_a_folder_holds(binary_folder, capsys):
    result = run_cli(capsys, "compare", str(binary_folder), "--downstream", "ridge")
    assert_one_line(result, "no rows of downstream model 'ridge'", "logistic, mlp")


def test_each_models_leaderboard_file_is_that_models_analysis(binary_folder, capsys):
    for model, name in (("logistic", "leaderboard.md"), ("mlp", "leaderboard-mlp.md")):
        code, out, err = run_cli(capsys, "leaderboard", str(binary_folder), "--downstream", model)
        assert code == 0, err
        assert (binary_folder / name).read_text() == out
        assert f"Downstream model: **{model}**" in out


def test_the_page_has_a_section_per_downstream_model_with_its_verdicts(binary_folder, capsys, tmp_path):
    import html

    code, _, err = run_cli(capsys, "report", str(binary_folder), "--out", str(tmp_path / "site"))
    assert code == 0, err
    page = (tmp_path / "site" / "index.html").read_text()
    # the shift diagnosis of the user's own suite file, read back from what its run stored (#53)
    assert "What kind of shift this suite holds" in page, page[page.find("shift") - 200 :][:600]
    assert "the log-loss of <code>all_features</code> under logistic goes from" in page
    for model in ("logistic", "mlp"):
        assert f"Leaderboard: downstream model {model}" in page
        assert f"Statistical comparisons: downstream model {model}" in page
        analysis = _analysis(binary_folder, model)
        decided = [r for r in analysis.verdict_sentences() if r["decided"]]
        assert decided, model  # ten units: the family can decide
        for row in decided:
            assert html.escape(row["text"], quote=False) in page, (model, row)


# -- item 7: a top-k that keeps every feature is no selection ---------------------------------------------
def test_a_top_k_of_every_feature_is_one_note_and_no_selection(table_source):
    from oodfs.run.rank import rank_features

    shift = dict(env_column="period", train_envs=["p1"], evaluate=True, downstream="logistic")
    with pytest.warns(
        TableWarning, match=r"top_k \(--top-k\) 5 keeps all 5 features: nothing is selected away"
    ):
        whole = rank_features(table_source, "y", "correlation", top_k=5, drop=["answer", "amount"], **shift)
    assert not whole.selection and not whole.ranking["selected"].any() and whole.selected == []
    assert sum("keeps all 5 features" in n for n in whole.notes) == 1
    # scored: every feature and the prior, never a "selection" equal to all_features
    assert not [c for c in whole.evaluation.columns if c.endswith("_selected")]
    assert list(whole.summary().columns) == ["score", "statistic", "all", "prior"]
    part = rank_features(table_source, "y", "correlation", top_k=4, drop=["answer", "amount"], **shift)
    assert part.selection and part.ranking["selected"].sum() == 4
    assert not any("keeps all" in n for n in part.notes)
    # the model on every feature scores the same whether or not a selection was made beside it
    np.testing.assert_allclose(whole.evaluation["log_loss_all"], part.evaluation["log_loss_all"])


def test_select_says_no_selection_when_top_k_keeps_every_feature(table_source, capsys):
    code, out, err = run_cli(
        capsys, "select", str(table_source), "--target", "y", "--method", "correlation",
        "--drop", "answer,amount", "--env-column", "period", "--top-k", "5", "--json",
    )  # fmt: skip
    assert code == 0, err
    import json

    shown = json.loads(out)
    assert shown["selection"] is False and not any(r["selected"] for r in shown["ranking"])
    code, out, err = run_cli(
        capsys, "select", str(table_source), "--target", "y", "--method", "correlation",
        "--drop", "answer,amount", "--env-column", "period", "--top-k", "5",
    )  # fmt: skip
    assert "no selection (top 5 is every one)" in err and "*" not in out


# -- item 2: the binary leaderboard reads the family's tests --------------------------------------------
def _markdown_table(text: str, title_start: str):
    """(header, rows) of the first markdown table under a heading starting with ``title_start``."""
    section = text.split(f"## {title_start}")[1].split("\n## ")[0]
    lines = [line for line in section.splitlines() if line.startswith("|") and "---" not in line]
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    return cells[0], cells[1:]


def test_the_binary_leaderboard_tests_each_method_against_all_features(binary_folder):
    from oodfs.report.leaderboard import Leaderboard
    from oodfs.report.report import Report

    titles = {"log-loss mean ↓": "log_loss_mean", "Brier mean ↓": "brier_mean",
              "accuracy mean ↑": "accuracy_mean", "AUC mean ↑": "auc_mean"}  # fmt: skip
    bold = []
    for model in ("logistic", "mlp"):
        text = Leaderboard(Report.from_path(binary_folder, downstream=model)).to_markdown()
        analysis = _analysis(binary_folder, model)
        header, rows = _markdown_table(text, "Setting `own`: each method against all_features")
        assert header[:3] == ["method", "pairs", "log-loss mean − all_features \\[95 % t\\]"]
        tests = analysis.tests("own", "log_loss_mean")
        truth = {r.method_a: (str(r.n_pairs), r.verdict) for r in tests.itertuples()}
        assert {r[0]: (r[1], r[-1]) for r in rows} == truth and set(truth) == {"lasso", "mi"}
        assert all(n == "10" for n, _ in truth.values())  # 2 training environments x 5 runs
        # bold only from those tests: bold in a column exactly when significantly better than all_features
        header, rows = _markdown_table(text, "Setting `own`, averaged over r_train")
        for row in rows:
            method = row[0].replace(" (yardstick)", "")
            for title, cell in zip(header[2:], row[2:]):
                verdict = analysis.verdict("own", titles[title], method, "all_features")
                assert cell.startswith("**") == (verdict == f"{method} better"), (
                    model,
                    method,
                    title,
                    verdict,
                )
                bold += [(model, method, title)] * cell.startswith("**")
        # the tables by r_train are not tested against all_features: only their "all" column is bold
        for part in text.split("by r_train")[1:]:
            for line in part.split("\n## ")[0].splitlines()[3:]:
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                assert not any(c.startswith("**") for c in cells[1:-1]), line
        assert "Bold: a method significantly better than all_features on that metric" in text
        assert "training mean" not in text  # a binary yardstick is not the mean of a number
    assert bold  # the ten units decide something: the test above compared real marks


def test_the_environment_unit_names_its_count_in_the_column_the_legend_names(tmp_path, table_path, capsys):
    path = suite_file(tmp_path, table_path, runs=2, downstream='["logistic"]')
    text = open(path).read().replace("runs = 2", 'runs = 2\nunit = "environment"')
    text = text.replace('yardsticks = ["all_features"]', 'yardsticks = ["all_features", "mean"]')
    open(path, "w").write(text)
    code, out, err = run_cli(capsys, "bench", "--suite", path, "--out", str(tmp_path / "r"), "--no-figures")
    assert code == 0, err
    header, rows = _markdown_table(out, "Setting `own`, averaged over r_train")
    assert header[1] == "environments (runs)" and "the column environments (runs) counts them" in out
    assert {r[0]: r[1] for r in rows}["lasso"] == "2 (4 runs)"  # 2 training environments, 2 runs each
    header, _ = _markdown_table(out, "Setting `own`: each method against all_features")
    assert header[1] == "environments"
    assert "mean predicts the training base rate" in out and "training mean" not in out


# -- item 10: the smaller items ------------------------------------------------------------------------
def test_evaluate_lists_the_held_out_environments_in_natural_order(tmp_path):
    from oodfs.run.rank import rank_features

    rng = np.random.default_rng(1)
    n = 400
    df = pd.DataFrame(
        {"site": np.repeat([10, 2, 1, 9], n // 4), "a": rng.normal(size=n), "b": rng.normal(size=n)}
    )
    df["y"] = df["a"] + rng.normal(size=n)
    shift = dict(env_column="site", train_envs=["1"], evaluate=True, downstream="ridge")
    ranked = rank_features(df, "y", "correlation", top_k=1, **shift)
    assert list(ranked.evaluation["env"]) == ["2", "9", "10"]  # not file order (10, 2, 9), nor text order


def test_a_suite_without_methods_says_there_is_no_default(tmp_path, table_path, capsys):
    path = suite_file(tmp_path, table_path)
    text = open(path).read().replace('methods = ["lasso"]\n', "")
    open(path, "w").write(text)
    result = run_cli(capsys, "bench", "--suite", path, "--out", str(tmp_path / "r"))
    assert_one_line(result, "lacks the key 'methods'", 'methods = ["lasso", "dwr"]', "no default")


def test_table_errors_name_the_flag_and_the_suite_parameter_not_python(tmp_path, capsys):
    df = pd.DataFrame({"a": [1.0, None, 3.0, 4.0] * 10, "b": np.arange(40.0) % 7, "y": np.arange(40.0) % 5})
    df.to_csv(tmp_path / "gaps.csv", index=False)
    result = run_cli(capsys, "select", str(tmp_path / "gaps.csv"), "--target", "y", "--method", "ols")
    assert_one_line(result, "'a' (10 missing)", "--dropna rows", 'dropna = "rows" in a suite')
    assert "dropna='rows'" not in result[2] and "keep=[" not in result[2]


def test_a_top_k_above_the_number_of_features_is_the_same_note(table_source, capsys):
    code, out, err = run_cli(
        capsys, "select", str(table_source), "--target", "y", "--method", "correlation",
        "--drop", "answer,amount", "--env-column", "period", "--top-k", "6", "--json",
    )  # fmt: skip
    assert code == 0, err
    import json

    shown = json.loads(out)
    assert shown["selection"] is False and not any(r["selected"] for r in shown["ranking"])
    assert [n for n in shown["notes"] if "keeps all" in n] == [
        "top_k (--top-k) 6 keeps all 5 features: nothing is selected away, so no selection is reported "
        "(a top-k below that selects)"
    ]


# -- item 4: the shift diagnosis in select --evaluate and on a suite's card ------------------------------
def test_evaluate_gives_the_shift_diagnosis_of_the_held_out_environments(table_source, capsys):
    import json

    args = ["select", str(table_source), "--target", "y", "--method", "correlation"]
    args += ["--drop", "answer,amount"]
    args += ["--env-column", "period", "--train-envs", "p1,p2", "--top-k", "2", "--evaluate"]
    code, out, err = run_cli(capsys, *args, "--downstream", "logistic", "--json")
    assert code == 0, err
    shift = json.loads(out)["evaluation"]["shift"]
    assert shift["loss"] == "log-loss" and shift["model"] == "logistic" and shift["task"] == "binary"
    assert [e["env"] for e in shift["environments"]] == ["p3", "p4"]
    # the terms add up to the drop per environment, and the means are over the environments
    for e in shift["environments"]:
        assert e["q"] - e["p"] == pytest.approx(e["x_shift"] + e["y_shift"])
    assert shift["drop"] == pytest.approx(np.mean([e["q"] - e["p"] for e in shift["environments"]]))
    code, out, err = run_cli(capsys, *args, "--downstream", "logistic")
    assert code == 0, err
    section = out.split("shift diagnosis")[1]
    assert "the log-loss of all_features under logistic goes from" in section
    assert [line.split()[0] for line in section.splitlines()[3:5]] == ["p3", "p4"]


def test_a_suite_files_card_gives_its_shift_diagnosis(tmp_path, table_path, capsys):
    import json

    path = suite_file(tmp_path, table_path)
    code, out, err = run_cli(capsys, "suites", path, "--json")
    assert code == 0, err
    (card,) = [s["card"] for s in json.loads(out)]
    diagnosis = card["shift_diagnosis"]
    assert diagnosis["loss"] == "log-loss" and diagnosis["kind"]  # decided binary, as bench does
    code, out, err = run_cli(capsys, "suites", path)
    assert "shift diagnosis: the drop is " in out and "under logistic" in out
