"""`oodfs select` on a binary target (task detection, its override, the classification form of the
method, classification metrics against the yardsticks), its bad input (one line, exit 2), and the
practitioner's guards: leak notes and the worse-than-no-feature note (docs/PROTOCOL.md section 17)."""

import json

import numpy as np
import pandas as pd
import pytest

from oodfs.run.rank import rank_features

from .test_own_tables import one_line_error, select


def churn(n_per_env: int = 300, seed: int = 0, flip: bool = False) -> pd.DataFrame:
    """Three states; churn ("yes"/"no") depends on a and b through a logistic link. ``flip``: in
    TX the relation turns round (a shift in Y | X)."""
    rng = np.random.default_rng(seed)
    state = np.repeat(["CA", "NY", "TX"], n_per_env)
    X = rng.normal(size=(state.size, 4))
    logit = 2.0 * X[:, 0] - 1.5 * X[:, 1]
    if flip:
        logit = np.where(state == "TX", -logit, logit)
    y = rng.random(state.size) < 1 / (1 + np.exp(-logit))
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    df["state"] = state
    df["churn"] = np.where(y, "yes", "no")
    return df


def write(df: pd.DataFrame, tmp_path, name: str = "t.csv"):
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


def notes(err: list[str]) -> list[str]:
    return [line[len("oodfs: note: ") :] for line in err if line.startswith("oodfs: note: ")]


ARGS = ("--target", "churn", "--env-column", "state", "--train-envs", "CA,NY")


# -- 1. the task ---------------------------------------------------------------------------------
def test_a_two_level_text_target_is_binary_with_its_positive_class_named(tmp_path, capsys):
    path = write(churn(), tmp_path)
    code, out, err = select(capsys, path, *ARGS, "--method", "lasso", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["task"] == "binary" and doc["positive"] == "yes"
    (note,) = [n for n in notes(err) if "two levels" in n]
    assert note.startswith("target 'churn' has two levels: binary task, positive class 'yes' (1.0, the last")
    assert "--positive no" in note and doc["notes"][0] == note
    # the classification form: L1 logistic ranks a and b first
    assert [r["feature"] for r in doc["ranking"][:2]] == ["a", "b"]
    code, out, err = select(capsys, path, *ARGS, "--method", "lasso")
    assert "target 'churn' (binary, positive class 'yes')" in " ".join(err)


@pytest.mark.parametrize(
    ("values", "positive", "why"),
    [
        ((0, 1), "1", "the larger value"),
        ((False, True), "True", "the true value"),
        ((2.0, 5.0), "5", "the larger value"),
    ],
)
def test_numbers_and_booleans_with_two_values_are_binary(values, positive, why):
    df = churn()
    df["churn"] = np.where(df["churn"] == "yes", values[1], values[0])
    result = rank_features(df, "churn", "correlation", isolate=False, check_leaks=False)
    assert result.task == "binary" and result.positive == positive
    assert f"positive class {positive!r} (1.0, {why})" in result.notes[0]


def test_positive_and_task_override_the_choice(tmp_path, capsys):
    df = churn()
    df["churn"] = (df["churn"] == "yes").astype(int)
    path = write(df, tmp_path)
    code, out, err = select(capsys, path, *ARGS, "--method", "ols", "--positive", "0", "--json")
    swapped = json.loads(out)
    assert code == 0 and swapped["positive"] == "0"
    assert "positive class '0' (1.0, as asked)" in swapped["notes"][0]
    binary = json.loads(select(capsys, path, *ARGS, "--method", "ols", "--json")[1])
    regression = json.loads(
        select(capsys, path, *ARGS, "--method", "ols", "--task", "regression", "--json")[1]
    )
    assert regression["task"] == "regression" and regression["positive"] is None
    assert "regressed as a number, as asked" in regression["notes"][0]
    # ols runs its classification form (logistic) for binary, least squares for regression
    score = {d["task"]: {r["feature"]: r["score"] for r in d["ranking"]} for d in (binary, regression)}
    assert abs(score["binary"]["a"] - score["regression"]["a"]) > 0.1
    # swapping the classes turns the logistic coefficients round: the same |scores|
    assert {r["feature"]: r["score"] for r in swapped["ranking"]} == pytest.approx(score["binary"], rel=1e-4)


# -- 2. evaluation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("downstream", ["logistic", "gbm", "mlp"])
def test_evaluate_reports_classification_scores_against_all_features_and_the_prior(
    tmp_path, capsys, downstream
):
    path = write(churn(), tmp_path)
    argv = (path, *ARGS, "--method", "lasso", "--top-k", "2", "--evaluate", "--downstream", downstream)
    code, out, err = select(capsys, *argv, "--json")
    assert code == 0, err
    ev = json.loads(out)["evaluation"]
    assert ev["downstream"] == downstream and ev["task"] == "binary" and ev["yardstick"] == "prior"
    (tx,) = ev["environments"]
    assert tx["env"] == "TX" and tx["rows"] == 300 and 0 < tx["positives"] < 300
    for score in ("log_loss", "brier", "accuracy", "auc"):
        assert {f"{score}_selected", f"{score}_all", f"{score}_prior"} <= set(tx)
    # a and b carry the signal: both models beat the base rate; the prior ranks nothing (AUC 0.5)
    assert tx["log_loss_selected"] < tx["log_loss_prior"] and tx["auc_selected"] > 0.75
    assert tx["auc_prior"] == 0.5 and tx["log_loss_prior"] == pytest.approx(0.69, abs=0.02)
    stats = {(r["score"], r["statistic"]) for r in ev["summary"]}
    assert stats == {
        (s, t) for s in ("log_loss", "brier", "accuracy", "auc") for t in ("mean", "sd", "worst")
    }
    assert ev["note"] is None
    code, out, err = select(capsys, *argv)
    assert code == 0 and f"downstream {downstream} trained on CA, NY (600 rows); log-loss of churn" in out
    summary = out.split("mean ± sd and worst over the 1 environment")[1]
    for title in ("log-loss", "Brier", "accuracy", "AUC"):
        assert f"\n{title} " in summary
    assert "*" not in summary  # nothing marked: a spread alone (or a mean) never makes a method best here


def test_regression_evaluation_summarises_rmse_without_marking_a_best(tmp_path, capsys):
    df = churn().drop(columns="churn")
    df["y"] = 2 * df["a"] - df["b"] + np.random.default_rng(1).normal(size=len(df))
    path = write(df, tmp_path)
    argv = (path, "--target", "y", "--env-column", "state", "--train-envs", "CA", "--method", "ols")
    code, out, err = select(capsys, *argv, "--evaluate", "--downstream", "ridge", "--top-k", "2", "--json")
    ev = json.loads(out)["evaluation"]
    assert ev["yardstick"] == "mean" and [e["env"] for e in ev["environments"]] == ["NY", "TX"]
    rows = {r["statistic"]: r for r in ev["summary"] if r["score"] == "rmse"}
    rmse = [e["rmse_selected"] for e in ev["environments"]]
    assert rows["mean"]["selected"] == pytest.approx(np.mean(rmse))
    assert rows["sd"]["selected"] == pytest.approx(np.std(rmse)) and rows["worst"]["selected"] == max(rmse)
    out = select(capsys, *argv, "--evaluate", "--downstream", "ridge", "--top-k", "2")[1]
    assert "*" not in out.split("mean ± sd and worst")[1]


def test_evaluate_says_when_every_model_is_worse_than_the_prior(tmp_path, capsys):
    path = write(churn(flip=True), tmp_path)
    argv = (path, *ARGS, "--method", "lasso", "--top-k", "2", "--evaluate", "--downstream", "logistic")
    code, out, _ = select(capsys, *argv)
    assert code == 0
    assert (
        "note: in 1 of 1 environments (TX) every model is worse than predicting the training base rate "
        "(the prior yardstick; by log-loss)"
    ) in out
    assert (
        "no choice of features repairs"
        in json.loads(select(capsys, *argv, "--json")[1])["evaluation"]["note"]
    )


# -- 3. bad input: one line, exit 2 -------------------------------------------------------------
def test_a_target_with_three_levels_is_one_line(tmp_path, capsys):
    df = churn()
    df.loc[:9, "churn"] = "maybe"
    path = write(df, tmp_path)
    msg = one_line_error(*select(capsys, path, *ARGS, "--method", "lasso")[::2])
    assert msg.startswith("target column 'churn' has 3 levels (text); multiclass is not supported yet")
    df = churn().drop(columns="churn").assign(y=np.arange(900) % 4)
    msg = one_line_error(
        *select(capsys, write(df, tmp_path, "n.csv"), "--target", "y", "--method", "ols", "--task", "binary")[
            ::2
        ]
    )
    assert (
        msg
        == "target column 'y' has 4 levels; a binary task needs exactly 2; multiclass is not supported yet"
    )


def test_one_class_in_a_training_environment_is_one_line(tmp_path, capsys):
    df = churn()
    df.loc[df["state"] == "NY", "churn"] = "no"
    path = write(df, tmp_path)
    msg = one_line_error(*select(capsys, path, *ARGS, "--method", "lasso")[::2])
    assert msg.startswith(
        "training environment 'NY' holds only class 'no' of the binary target 'churn' (300 rows)"
    )
    assert msg.endswith("leave it out of --train-envs")


def test_a_method_that_cannot_classify_is_one_line_naming_those_that_can(tmp_path, capsys):
    path = write(churn(), tmp_path)
    msg = one_line_error(*select(capsys, path, *ARGS, "--method", "iamb")[::2])
    assert msg.startswith(
        "selector 'iamb' handles regression targets only, not a binary one; methods that can"
    )
    assert "dwr" in msg and "lasso" in msg and "iamb," not in msg and "all_features" not in msg


@pytest.mark.parametrize(
    ("extra", "start"),
    [
        (
            ("--downstream", "ridge", "--evaluate"),
            "downstream model 'ridge' (--downstream) does not predict a binary",
        ),
        (("--downstream", "nope"), "unknown downstream model 'nope' (--downstream)"),
        (("--positive", "maybe"), "positive class 'maybe' (--positive) is not a level of target 'churn'"),
        (("--task", "regression"), "target column 'churn' is not numeric"),
        (
            ("--target-transform", "log"),
            "target_transform (--target-transform) 'log' is for a numeric target",
        ),
    ],
)
def test_options_that_do_not_fit_a_binary_target_are_one_line(tmp_path, capsys, extra, start):
    path = write(churn(), tmp_path)
    msg = one_line_error(*select(capsys, path, *ARGS, "--method", "lasso", *extra)[::2])
    assert msg.startswith(start), msg


def test_bench_refuses_a_method_named_with_methods_that_cannot_classify(tmp_path, capsys):
    from oodfs.contract.registry import reset_registry

    from .test_tasks import PLUGIN, SUITE

    (tmp_path / "tinybinary.py").write_text(PLUGIN)
    (tmp_path / "suite.toml").write_text(SUITE.format(methods='["abscorr", "dwr", "abscov"]'))
    reset_registry()
    try:
        code, _, err = select_bench(capsys, tmp_path, "abscorr,abscov")
    finally:
        reset_registry()
    msg = one_line_error(code, err)
    assert msg.startswith("--methods names methods that cannot handle this suite's binary target (abscov)")
    assert "methods that can: " in msg and "abscorr" in msg.split("methods that can: ")[1]


def select_bench(capsys, folder, methods):
    from oodfs import cli

    code = cli.main(
        [
            "bench",
            "--suite",
            str(folder / "suite.toml"),
            "--plugin",
            str(folder / "tinybinary.py"),
            "--methods",
            methods,
            "--out",
            str(folder / "out"),
        ]
    )
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


# -- 4. leaks ----------------------------------------------------------------------------------
def bikeshare_like(n: int = 1200, seed: int = 0) -> pd.DataFrame:
    """Riders = registered + casual, as in bikeshare: neither alone predicts the count almost
    perfectly, their sum does exactly."""
    rng = np.random.default_rng(seed)
    temp = rng.uniform(0, 1, n)
    hour = rng.integers(0, 24, n)
    busy = np.isin(hour, [8, 17, 18]).astype(float)
    registered = rng.poisson(50 + 150 * busy + 40 * temp)
    casual = rng.poisson(5 + 150 * temp)
    return pd.DataFrame(
        {
            "temp": temp,
            "hum": rng.uniform(0, 1, n),
            "busy": busy,
            "season": np.repeat(["winter", "summer"], n // 2),
            "casual": casual,
            "registered": registered,
            "riders": registered + casual,
        }
    )


def test_a_target_that_is_a_sum_of_features_is_named_a_possible_leak(tmp_path, capsys):
    path = write(bikeshare_like(), tmp_path)
    argv = (
        path,
        "--target",
        "riders",
        "--method",
        "lasso",
        "--env-column",
        "season",
        "--train-envs",
        "winter",
    )
    code, out, err = select(capsys, *argv, "--json")
    assert code == 0, err
    (note,) = [n for n in notes(err) if n.startswith("possible leak")]
    assert note.startswith("possible leak: the target is a linear function of 'casual', 'registered' on the")
    assert json.loads(out)["leaks"]["identity"] == ["casual", "registered"]
    # without them: no note
    code, out, err = select(capsys, *argv, "--drop", "casual,registered", "--json")
    assert code == 0 and not [n for n in notes(err) if "leak" in n]
    assert json.loads(out)["leaks"] == {
        "alone": {},
        "score": "R²",
        "identity": [],
        "identity_r2": None,
        "strong": {},
    }


def test_a_feature_that_alone_predicts_a_binary_target_is_named(tmp_path, capsys):
    """ "The day went up" next to the day's return: the return alone has AUC 1."""
    rng = np.random.default_rng(0)
    n = 800
    df = pd.DataFrame({"volume": rng.normal(size=n), "lag1": rng.normal(size=n), "ret": rng.normal(size=n)})
    df["up"] = df["ret"] > 0
    df["year"] = np.repeat([2001, 2002], n // 2)
    path = write(df, tmp_path)
    argv = (path, "--target", "up", "--method", "mi", "--env-column", "year", "--json")
    message = one_line_error(*select(capsys, *argv)[::2])
    assert message.startswith("possible leak: 'ret' alone separates the target's classes with AUC 1.000")
    code, out, err = select(capsys, *argv, "--keep", "ret")
    assert code == 0, err
    (note,) = [n for n in notes(err) if n.startswith("possible leak")]
    assert note.startswith("possible leak: 'ret' alone separates the target's classes with AUC 1.000")
    # one note: the step function's sentence does not repeat it
    assert json.loads(out)["leaks"]["alone"] == {} and list(json.loads(out)["leaks"]["strong"]) == ["ret"]


def with_copy(share: float, n: int = 1200, seed: int = 0) -> pd.DataFrame:
    """`churn` (a and b carry the target) and a column `balance` equal to the target with ``share``
    of its rows flipped (seeded), named like an ordinary feature."""
    df = churn(n_per_env=n // 3, seed=seed)
    y = (df["churn"] == "yes").to_numpy()
    flip = np.random.default_rng(seed + 1).random(len(df)) < share
    df.insert(2, "balance", np.where(flip, ~y, y).astype(float) * 120.0 + 35.0)
    return df


def test_a_copy_of_a_binary_target_with_5_percent_flipped_is_refused_unless_kept(tmp_path, capsys):
    """The issue's case: without the check, every selector ranks the 95 % copy first."""
    from sklearn.metrics import roc_auc_score

    df = with_copy(0.05)
    train = df["state"].isin(["CA", "NY"])
    auc = roc_auc_score(df.loc[train, "churn"] == "yes", df.loc[train, "balance"])
    assert 0.93 <= auc <= 0.97  # the copy agrees with the target on about 95 % of the rows
    path = write(df, tmp_path)
    message = one_line_error(*select(capsys, path, *ARGS, "--method", "lasso")[::2])
    assert message.startswith(
        f"possible leak: 'balance' alone separates the target's classes with AUC {auc:.3f} (>= 0.93) on "
        "the training rows (the other 4 features together: AUC 0."
    )
    assert "(--drop balance)" in message and '(--keep balance, or keep = ["balance"]' in message
    # kept on purpose: the ranking goes on, with the finding in one note
    code, out, err = select(capsys, path, *ARGS, "--method", "lasso", "--keep", "balance", "--json")
    assert code == 0, err
    doc = json.loads(out)
    (note,) = [n for n in notes(err) if "possible leak" in n]
    expected = f"possible leak: 'balance' alone separates the target's classes with AUC {auc:.3f} "
    assert note.startswith(expected)
    assert "kept (--keep)" in note and note in doc["notes"]
    strong = doc["leaks"]["strong"]["balance"]
    assert strong["auc"] == pytest.approx(auc)
    # the other features (a and b carry the target through a logistic link) reach far less
    assert 0.75 < strong["rest_auc"] < 0.9 and f"AUC {strong['rest_auc']:.3f}" in note
    assert doc["ranking"][0]["feature"] == "balance"
    # dropped: no refusal, no note
    code, out, err = select(capsys, path, *ARGS, "--method", "lasso", "--drop", "balance")
    assert code == 0 and not [n for n in notes(err) if "leak" in n]


def test_a_copy_in_a_text_column_is_refused_by_its_column_name(tmp_path, capsys):
    """The one-hot level is named in the AUC, the column in --drop and --keep."""
    df = with_copy(0.03)
    df["plan"] = np.where(df.pop("balance") > 100, "gold", "basic")
    path = write(df, tmp_path)
    message = one_line_error(*select(capsys, path, *ARGS, "--method", "correlation")[::2])
    assert message.startswith("possible leak: 'plan=gold' alone separates the target's classes with AUC 0.9")
    assert "(--drop plan)" in message and "(--keep plan," in message
    code, out, err = select(capsys, path, *ARGS, "--method", "correlation", "--keep", "plan")
    assert code == 0, err
    assert len([n for n in notes(err) if n.startswith("possible leak: 'plan=gold'")]) == 1


def test_a_copy_with_20_percent_flipped_is_not_flagged():
    """The declared sensitivity: AUC 0.80, as strong as real predictors (docs/PROTOCOL.md)."""
    result = rank_features(with_copy(0.20), "churn", "lasso", isolate=False)
    assert result.leaks.strong == {} and not [n for n in result.notes if "leak" in n]


def test_an_ordinary_strong_binary_predictor_is_not_flagged():
    """y ~ Bernoulli(sigmoid(3 x0)): x0 alone has AUC about 0.92, below the bound 0.93."""
    from sklearn.metrics import roc_auc_score

    from oodfs.tables.leaks import BINARY_LEAK_AUC

    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(3000, 4)), columns=["x0", "x1", "x2", "x3"])
    df["y"] = (rng.random(len(df)) < 1 / (1 + np.exp(-3 * df["x0"]))).astype(int)
    assert 0.9 < roc_auc_score(df["y"], df["x0"]) < BINARY_LEAK_AUC
    result = rank_features(df, "y", "lasso", isolate=False)
    assert result.leaks.strong == {} and result.leaks.alone == {}
    assert not [n for n in result.notes if "leak" in n]
    assert result.ranking["feature"][0] == "x0"


def test_a_strong_but_noisy_feature_is_not_a_leak():
    df = churn().drop(columns="churn")
    df["y"] = df["a"] + 0.3 * np.random.default_rng(2).normal(size=len(df))  # R² about 0.92
    result = rank_features(df, "y", "ols", isolate=False)
    assert result.leaks.alone == {} and result.leaks.identity == ()
    assert not [n for n in result.notes if "leak" in n]


def test_a_held_out_environment_with_one_class_has_no_auc(tmp_path, capsys):
    df = churn()
    df.loc[df["state"] == "TX", "churn"] = "no"
    path = write(df, tmp_path)
    argv = (path, *ARGS, "--method", "lasso", "--top-k", "2", "--evaluate", "--downstream", "logistic")
    ev = json.loads(select(capsys, *argv, "--json")[1])["evaluation"]
    (tx,) = ev["environments"]
    assert tx["positives"] == 0 and tx["auc_selected"] is None and tx["log_loss_selected"] > 0
    auc = {r["statistic"]: r["selected"] for r in ev["summary"] if r["score"] == "auc"}
    assert auc == {"mean": None, "sd": None, "worst": None}
    code, out, _ = select(capsys, *argv)
    assert code == 0 and "\nAUC       n/a ± n/a, worst n/a" in out
