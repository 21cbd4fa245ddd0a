"""The rules for a user's own table (issue "a practitioner's select"): column roles, missing
values, one data path for `oodfs select` and the `table` environment of `oodfs bench`, variables
ranked from their levels, a target transform, held-out evaluation, selectors that never select a
feature they scored 0, one-line warnings, a fit isolated from a crashing plugin, cosmetics."""

from __future__ import annotations

import json
import re
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from oodfs import cli
from oodfs.contract.api import support_mask
from oodfs.contract.registry import registry, reset_registry
from oodfs.tabular import TableWarning, prepare_table, rank_features
from oodfs.validation import OodfsError
from oodfs_plugins.environments.table import Table

TABLE_PLUGIN = ("oodfs_plugins.environments.table",)


def shifted(n_per_env=(150, 120, 110), seed=0) -> pd.DataFrame:
    """Three periods; y = 2 b - e + noise; `kind` has a level `rare` seen only in period C and a
    level `x_few` with 3 rows in period A; `code` is an integer-coded category."""
    rng = np.random.default_rng(seed)
    parts = []
    for label, n in zip("ABC", n_per_env):
        b = rng.normal(loc={"A": 0, "B": 1, "C": 2}[label], size=n)
        e, noise = rng.normal(size=(2, n))
        kind = rng.choice(["p", "q"], size=n).astype(object)
        if label == "A":
            kind[:3] = "x_few"
        if label == "C":
            kind[:8] = "rare"
        parts.append(
            pd.DataFrame(
                {
                    "b": b,
                    "e": e,
                    "a": rng.normal(size=n),
                    "kind": kind,
                    "code": rng.choice([1, 2, 10], size=n),
                    "period": label,
                    "y": 2 * b - e + 0.5 * noise,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def write(df: pd.DataFrame, tmp_path, name="t.csv") -> str:
    path = tmp_path / name
    df.to_csv(path, index=False)
    return str(path)


def select(capsys, *argv):
    """`oodfs select ARGV` through the real command line: (exit status, stdout, stderr lines)."""
    code = cli.main(["select", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def one_line_error(code, err_lines, status=2) -> str:
    assert code == status, err_lines
    errors = [line for line in err_lines if line.startswith("oodfs: error: ")]
    assert len(errors) == 1 and not any("Traceback" in line for line in err_lines), err_lines
    assert all(line.startswith("oodfs: ") for line in err_lines), err_lines  # nothing but one-line messages
    return errors[0][len("oodfs: error: ") :]


def notes(err_lines) -> list[str]:
    assert not any(re.search(r"\.py:\d+", line) for line in err_lines), err_lines  # no source lines
    return [line[len("oodfs: note: ") :] for line in err_lines if line.startswith("oodfs: note: ")]


def table_notes(**params) -> list[str]:
    """The notes the `table` environment gives while preparing its table."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TableWarning)
        Table(**params).labels
    return [str(w.message) for w in caught if issubclass(w.category, TableWarning)]


# -- 1. column roles -------------------------------------------------------------------------
def test_integer_codes_declared_categorical_in_select_and_bench(tmp_path, capsys):
    path = write(shifted(), tmp_path)
    base = (path, "--target", "y", "--method", "ols", "--env-column", "period", "--json")
    numbers = json.loads(select(capsys, *base)[1])
    assert "code" in [r["feature"] for r in numbers["ranking"]]
    for spelling in (("--categorical", "code"), ("--categorical-columns", "code")):
        doc = json.loads(select(capsys, *base, *spelling)[1])
        names = [r["feature"] for r in doc["ranking"]]
        # levels ordered by value: 1 is the reference, then 2 and 10 (not the text order "10" < "2")
        assert "code" not in names and {"code=2", "code=10"} <= set(names)
    # --categorical still takes its mode, and the mode and the columns combine
    code, _, err = select(capsys, *base, "--categorical", "error", "--categorical", "code")
    assert "categorical (non-numeric) column(s) 'kind'" in one_line_error(code, err)
    env = Table(path=path, target="y", env_column="period", categorical_columns=["code"])
    assert env.feature_names == ["b", "e", "a", "kind=q", "kind=rare", "kind=x_few", "code=2", "code=10"]


def test_identifiers_left_out_with_a_note_unless_kept(tmp_path, capsys):
    df = shifted()
    df.insert(0, "row", np.arange(len(df)) + 1)  # a row number
    df.insert(1, "route", np.repeat(np.arange(len(df) // 4 + 1), 4)[: len(df)])  # groups stored together
    df.insert(2, "name", [f"n{i}" for i in range(len(df))])
    path = write(df, tmp_path)
    code, out, err = select(
        capsys, path, "--target", "y", "--method", "ols", "--env-column", "period", "--json"
    )
    assert code == 0
    (note,) = [n for n in notes(err) if "identifiers" in n]
    assert note.startswith(
        "left out column(s) that look like identifiers: 'row' (whole numbers, a different one"
    )
    assert "'route' (whole numbers that only ever increase down the table)" in note
    assert "'name' (a different text value in every row)" in note and "--keep" in note
    doc = json.loads(out)
    assert not {"row", "route", "name"} & {r["feature"] for r in doc["ranking"]}
    assert set(doc["excluded"]) == {"row", "route", "name"}
    doc = json.loads(
        select(
            capsys,
            path,
            "--target",
            "y",
            "--method",
            "ols",
            "--env-column",
            "period",
            "--keep",
            "route",
            "--json",
        )[1]
    )
    assert "route" in {r["feature"] for r in doc["ranking"]}
    # the same note from the table environment; a column listed in `features` is kept
    assert note in table_notes(path=path, target="y", env_column="period")
    env = Table(path=path, target="y", env_column="period", features=["route", "b", "e"])
    assert env.feature_names == ["route", "b", "e"]
    # an ordinary integer column (a count, a year in a panel) is not an identifier
    plain = shifted().assign(count=lambda d: np.random.default_rng(1).poisson(30, len(d)))
    assert "count" in prepare_table(plain, "y", "period").names


def test_dates_refused_or_converted_on_request(tmp_path, capsys):
    df = shifted(n_per_env=(40, 40, 40)).assign(
        when=lambda d: pd.date_range("2001-01-01", periods=len(d), freq="7D").strftime("%Y-%m-%d")
    )
    df.loc[df.index[::3], "when"] = "2001-01-01"  # not unique, so not an identifier either
    path = write(df, tmp_path)
    args = (path, "--target", "y", "--method", "ols", "--env-column", "period")
    msg = one_line_error(*select(capsys, *args)[::2])
    assert (
        msg.startswith("column(s) 'when' hold dates or times (e.g. '2001-01-01')")
        and "--dates convert" in msg
    )
    with pytest.raises(OodfsError, match="column\\(s\\) 'when' hold dates or times"):
        Table(path=path, target="y", env_column="period").labels
    code, out, err = select(capsys, *args, "--dates", "convert", "--json")
    assert code == 0 and any("converted date/time column(s) 'when'" in n for n in notes(err))
    assert "when" in {r["feature"] for r in json.loads(out)["ranking"]}
    env = Table(path=path, target="y", env_column="period", dates="convert", standardize=False)
    X, _ = env.sample("A", 1, 0)
    assert 2001 <= X[0, env.feature_names.index("when")] < 2004  # decimal years


@pytest.mark.filterwarnings("error")  # pandas deprecations included (Series.dt.dayofyear was one)
def test_decimal_years_without_warnings():
    from oodfs.tables.prepare import decimal_years

    t = pd.Series(pd.to_datetime(["2020-07-02 00:00", "2021-01-01 00:00", "2021-12-31 12:00"]))
    np.testing.assert_allclose(decimal_years(t), [2020 + 183 / 366, 2021.0, 2021 + 364.5 / 365])


def test_near_copies_of_the_target_refused_unless_kept(tmp_path, capsys):
    df = shifted().assign(y=lambda d: d["y"] + 10)
    df["y_cents"] = df["y"] * 100  # the target in other units
    df["exp_y"] = np.exp(df["y"] / 3)  # a monotone transform: rank correlation 1, Pearson below 0.99
    assert df["exp_y"].corr(df["y"]) < 0.99
    path = write(df, tmp_path)
    args = (path, "--target", "y", "--method", "ols", "--env-column", "period")
    msg = one_line_error(*select(capsys, *args)[::2])
    assert msg.startswith("column(s) 'y_cents' (1.000), 'exp_y' (1.000) are near-copies of the target 'y'")
    assert "--drop y_cents,exp_y" in msg and "--keep" in msg
    with pytest.raises(OodfsError, match="'y_cents' \\(1.000\\), 'exp_y' \\(1.000\\) are near-copies"):
        Table(path=path, target="y", env_column="period").labels
    code, out, _ = select(capsys, *args, "--keep", "y_cents,exp_y", "--json")
    assert code == 0 and json.loads(out)["ranking"][0]["feature"] in {"y_cents", "exp_y"}
    # the strongest honest predictor (|correlation| 0.95) is not a copy
    assert select(capsys, *args, "--drop", "y_cents,exp_y")[0] == 0


def test_identical_columns_noted_the_same_in_select_and_bench(tmp_path, capsys):
    df = shifted().assign(b2=lambda d: d["b"], kind2=lambda d: d["kind"])
    path = write(df, tmp_path)
    code, _, err = select(capsys, path, "--target", "y", "--method", "ols", "--env-column", "period")
    (note,) = [n for n in notes(err) if "identical" in n]
    assert note.startswith("columns with identical values: 'b'='b2', 'kind'='kind2'")
    assert note in table_notes(path=path, target="y", env_column="period")


def test_a_long_list_in_a_note_is_cut():
    """A country column nested in the environments: training on one, 59 of 60 levels are left
    out of the fit; the note names a few and says how many more (it used to list them all)."""
    df = shifted()
    df["country"] = [f"{p}{i % 20}" for i, p in zip(range(len(df)), df["period"])]
    for i in range(30):
        df[f"copy{i}"] = df["a"]
    with pytest.warns(TableWarning) as caught:
        rank_features(df, "y", "ols", env_column="period", train_envs=["A"], max_levels=100, isolate=False)
    texts = [str(w.message) for w in caught]
    (same,) = [t for t in texts if "identical" in t]
    assert same.startswith("columns with identical values: 'a'='copy0'='copy1'=... (31 columns)")
    (left,) = [t for t in texts if t.startswith("left out of the fit")]
    assert "'country=A" not in left.split(":", 1)[1] or "... and " in left
    assert re.search(r"\.\.\. and \d+ more$", left) and len(left) < 400


# -- 2. missing values -----------------------------------------------------------------------
def test_dropna_rows_reports_how_many_in_select_and_bench(tmp_path, capsys):
    df = shifted()
    df.loc[[3, 7, 200], "kind"] = None
    df.loc[[7, 9], "a"] = np.nan
    path = write(df, tmp_path)
    args = (path, "--target", "y", "--method", "ols", "--env-column", "period")
    msg = one_line_error(*select(capsys, *args)[::2])
    assert msg.startswith("column(s) with missing values: 'a' (2 missing), 'kind' (3 missing)")
    assert "--dropna rows" in msg and "does not impute" in msg
    code, out, err = select(capsys, *args, "--dropna", "rows", "--json")
    assert code == 0 and json.loads(out)["rows"] == len(df) - 4
    (note,) = [n for n in notes(err) if "missing value" in n]
    assert note == f"dropped 4 of {len(df)} rows with a missing value in 'a' (2 missing), 'kind' (3 missing)"
    assert note in table_notes(path=path, target="y", env_column="period", dropna="rows")
    env = Table(path=path, target="y", env_column="period", dropna="rows")
    assert sum(env.sample(e, 10_000, 0)[0].shape[0] for e in env.labels) == len(df) - 4


# -- 3. one data path ------------------------------------------------------------------------
def test_select_and_bench_prepare_the_same_table_the_same_way(tmp_path):
    df = shifted()
    path = write(df, tmp_path)
    env = Table(path=path, target="y", env_column="period", categorical_columns=["code"], standardize=False)
    table = prepare_table(df, "y", "period", categorical_columns=["code"])
    assert env.feature_names == table.names
    X, y = env.sample("B", 10_000, 0)
    order = np.lexsort(X.T[::-1])
    rows = table.env == "B"
    mine = np.lexsort(table.X[rows].T[::-1])
    np.testing.assert_array_equal(X[order], table.X[rows][mine])
    np.testing.assert_array_equal(y[order], table.y[rows][mine])


@pytest.mark.parametrize("method", ["dwr", "srdo", "ols"])
def test_an_absent_or_rare_level_is_left_out_of_the_fit_in_select_and_bench(tmp_path, method):
    """`kind=rare` is absent from period A and `kind=x_few` has 3 rows there: DWR and SRDO failed
    in bench ("column 5 is constant under the sample weights") where select ranked them last.
    Now both leave them out of the fit and score them 0."""
    from oodfs.results.store import load_results
    from oodfs.run.runner import run_suite
    from oodfs.run.suite import suite_from_dict

    path = write(shifted(), tmp_path)
    params = {"epochs": 5} if method == "srdo" else {}
    ranking = rank_features(path, "y", method, env_column="period", train_envs=["A"], top_k=3, params=params)
    assert set(ranking["feature"].tolist()[-2:]) == {"kind=x_few", "kind=rare"}
    assert (ranking["score"].tail(2) == 0).all() and not ranking["selected"].tail(2).any()
    assert set(ranking.attrs["left_out"]) == {"kind=x_few", "kind=rare"}

    suite = suite_from_dict(
        "mine",
        {
            "environment": "table",
            "r_train": ["A"],
            "r_test": ["B", "C"],
            "n_train": 120,
            "n_val": 30,
            "n_test": 1000,
            "k": 3,
            "methods": [method],
            "settings": {"t": {"params": {"path": path, "target": "y", "env_column": "period"}}},
        },
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_suite(suite, tmp_path / "out", plugin_modules=TABLE_PLUGIN, progress=False)
    results = load_results(tmp_path / "out")
    assert (results["status"] == "ok").all(), results["error"].dropna().unique()
    names = json.loads(results["feature_names"].dropna().iloc[0])
    for scores in results["scores"].dropna().unique():
        scores = dict(zip(names, json.loads(scores)))
        assert scores["kind=rare"] == 0 and scores["kind=x_few"] == 0


# -- 4. variables, not levels ----------------------------------------------------------------
def test_group_levels_ranks_and_selects_whole_variables(tmp_path, capsys):
    path = write(shifted(), tmp_path)
    args = (path, "--target", "y", "--method", "ols", "--env-column", "period", "--categorical", "code")
    doc = json.loads(select(capsys, *args, "--group-levels", "--top-k", "2", "--json")[1])
    levels = {r["feature"]: r for r in doc["ranking"]}
    variables = {v["variable"]: v for v in doc["variables"]}
    assert set(variables) == {"b", "e", "a", "kind", "code"}
    assert variables["code"]["features"] == ["code=2", "code=10"] or set(variables["code"]["features"]) == {
        "code=2",
        "code=10",
    }
    for v in variables.values():  # the documented aggregate: the largest score of its levels
        assert v["score"] == max(levels[f]["score"] for f in v["features"])
        assert all(levels[f]["selected"] == v["selected"] for f in v["features"] if levels[f]["score"] > 0)
    assert [v["variable"] for v in doc["variables"] if v["selected"]] == ["b", "e"]
    summed = json.loads(select(capsys, *args, "--group-levels", "sum", "--json")[1])
    kind = next(v for v in summed["variables"] if v["variable"] == "kind")
    assert kind["score"] == pytest.approx(sum(levels[f]["score"] for f in kind["features"]))
    code, out, _ = select(capsys, *args, "--group-levels")
    assert code == 0 and out.splitlines()[0].split()[:4] == ["rank", "variable", "score", "(max)"]
    # a top-k above the number of variables keeps them all: the note, no selection (as top-k 5)
    code, out, err = select(capsys, *args, "--group-levels", "--top-k", "9", "--json")
    assert code == 0 and json.loads(out)["selection"] is False
    note = "top_k (--top-k) 9 keeps all 5 variables: nothing is selected away"
    assert any(note in line for line in err), err


# -- 5. target transform ---------------------------------------------------------------------
def test_target_transform_log(tmp_path, capsys):
    df = shifted().assign(price=lambda d: np.exp(d["y"] / 4))
    path = write(df.drop(columns="y"), tmp_path)
    logged = write(df.assign(log_price=np.log(df["price"])).drop(columns=["y", "price"]), tmp_path, "l.csv")
    a = json.loads(
        select(
            capsys,
            path,
            "--target",
            "price",
            "--method",
            "ols",
            "--target-transform",
            "log",
            "--env-column",
            "period",
            "--json",
        )[1]
    )
    b = json.loads(
        select(
            capsys, logged, "--target", "log_price", "--method", "ols", "--env-column", "period", "--json"
        )[1]
    )
    assert a["target_transform"] == "log"
    assert [(r["feature"], round(r["score"], 10)) for r in a["ranking"]] == [
        (r["feature"], round(r["score"], 10)) for r in b["ranking"]
    ]
    write(df.assign(price=df["price"] - 1), tmp_path, "neg.csv")
    msg = one_line_error(
        *select(
            capsys, tmp_path / "neg.csv", "--target", "price", "--method", "ols", "--target-transform", "log"
        )[::2]
    )
    assert msg.startswith("target_transform 'log' needs a positive target; 'price' has")


# -- 6. held-out evaluation ------------------------------------------------------------------
@pytest.mark.parametrize("downstream", ["ridge", "mlp"])
def test_evaluate_reports_rmse_per_held_out_environment(tmp_path, capsys, downstream):
    path = write(shifted(), tmp_path)
    args = (path, "--target", "y", "--method", "ols", "--env-column", "period", "--train-envs", "A")
    doc = json.loads(
        select(capsys, *args, "--top-k", "2", "--evaluate", "--downstream", downstream, "--json")[1]
    )
    ev = doc["evaluation"]
    assert ev["downstream"] == downstream and ev["selected"] == ["b", "e"]
    assert [e["env"] for e in ev["environments"]] == ["B", "C"]
    assert [e["rows"] for e in ev["environments"]] == [120, 110]
    for e in ev["environments"]:  # b and e explain y: better than the training mean
        assert 0 < e["rmse_selected"] < e["rmse_mean"] and 0 < e["rmse_all"] < e["rmse_mean"]
    code, out, _ = select(capsys, *args, "--evaluate", "--downstream", downstream)
    assert code == 0 and f"downstream {downstream} trained on A (150 rows)" in out
    assert ev["note"] is None and "worse than predicting the training mean" not in out


def test_evaluate_says_when_every_model_is_worse_than_the_training_mean(tmp_path, capsys):
    # the relation turns round in period B (y = x in A, y = -x in B): no feature set can repair it
    rng = np.random.default_rng(0)
    x, z = rng.normal(size=(2, 300))
    period = np.repeat(["A", "B"], 150)
    y = np.where(period == "A", x, -x) + 0.1 * rng.normal(size=300)
    path = write(pd.DataFrame({"x": x, "z": z, "period": period, "y": y}), tmp_path)
    args = (path, "--target", "y", "--method", "ols", "--env-column", "period", "--train-envs", "A")
    code, out, _ = select(capsys, *args, "--top-k", "1", "--evaluate", "--downstream", "ridge")
    assert code == 0 and "note: in 1 of 1 environments (B) every model is worse than predicting the" in out
    doc = json.loads(
        select(capsys, *args, "--top-k", "1", "--evaluate", "--downstream", "ridge", "--json")[1]
    )
    assert "no choice of features repairs" in doc["evaluation"]["note"]


def test_evaluate_needs_training_environments(tmp_path, capsys):
    path = write(shifted(), tmp_path)
    msg = one_line_error(*select(capsys, path, "--target", "y", "--method", "ols", "--evaluate")[::2])
    assert msg.startswith(
        "evaluate (--evaluate) needs env_column (--env-column) and train_envs (--train-envs)"
    )
    msg = one_line_error(
        *select(
            capsys,
            path,
            "--target",
            "y",
            "--method",
            "ols",
            "--env-column",
            "period",
            "--train-envs",
            "A,B,C",
            "--evaluate",
        )[::2]
    )
    assert msg.startswith("nothing to evaluate on: every environment is a training environment")


# -- 7. selection, warnings, isolation, cosmetics --------------------------------------------
def test_get_support_never_marks_a_feature_scored_zero():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = 3 * X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=300)
    lasso = registry().get("selector", "lasso")(alpha=0.3, k=5).fit(X, y)
    assert (lasso.scores_ == 0).sum() >= 3  # fewer non-zero scores than k
    assert lasso.get_support().tolist() == (lasso.scores_ > 0).tolist()
    assert lasso.transform(X).shape == (300, int((lasso.scores_ > 0).sum()))
    # scores that may be negative (STG's gate means) have no floor at 0: the top k
    assert support_mask([-0.2, 0.0, -0.4], [1, 0, 2], 2).tolist() == [True, True, False]
    assert support_mask([0.5, 0.0, 0.2], [0, 2, 1], 3).tolist() == [True, False, True]


def test_select_never_marks_a_feature_scored_zero(tmp_path, capsys):
    path = write(shifted(), tmp_path)
    doc = json.loads(
        select(
            capsys,
            path,
            "--target",
            "y",
            "--method",
            "lasso",
            "--param",
            "alpha=0.5",
            "--top-k",
            "6",
            "--env-column",
            "period",
            "--json",
        )[1]
    )
    assert [r["selected"] for r in doc["ranking"]] == [r["score"] > 0 for r in doc["ranking"]]
    assert 0 < sum(r["selected"] for r in doc["ranking"]) < 6


CRASHING_PLUGIN = '''
import os, sys, ctypes, warnings
import numpy as np
import oodfs


def _make(name, how):
    class Bad(oodfs.Selector):
        """Misbehaves."""

        def _fit_scores(self, X, y, sw):
            if how == "warn":
                warnings.warn("weights clipped\\nat 10", UserWarning)
                return np.abs(X.T @ y)
            if how == "exit":
                sys.exit(0)
            if how == "os_exit":
                os._exit(3)
            if how == "segfault":
                ctypes.string_at(0)
            raise RuntimeError("boom")

    Bad.name = name
    Bad.__name__ = name
    return Bad


@oodfs.hookimpl
def oodfs_selectors():
    return [_make(n, n) for n in ("warn", "exit", "os_exit", "segfault", "raise")]
'''


@pytest.mark.parametrize(
    "how, message",
    [
        ("exit", "selector 'exit' failed: the method called sys.exit(0)"),
        ("os_exit", "selector 'os_exit' failed: the method's process died (exit code 3)"),
        ("segfault", "selector 'segfault' failed: the method's process died (killed by SIGSEGV (11))"),
        ("raise", "selector 'raise' failed: RuntimeError: boom"),
    ],
)
def test_select_fits_in_isolation(tmp_path, capsys, how, message):
    plugin = tmp_path / "bad.py"
    plugin.write_text(CRASHING_PLUGIN)
    path = write(shifted(), tmp_path)
    try:
        msg = one_line_error(
            *select(capsys, path, "--target", "y", "--plugin", plugin, "--method", how)[::2], status=1
        )
        assert msg.startswith(message)
    finally:
        reset_registry()


def test_warnings_are_one_line_without_a_source_line(tmp_path, capfd):
    """A plugin's warning, raised in the forked child that fits it (hence capfd)."""
    plugin = tmp_path / "bad.py"
    plugin.write_text(CRASHING_PLUGIN)
    path = write(shifted(), tmp_path)
    try:
        code, _, err = select(capfd, path, "--target", "y", "--plugin", plugin, "--method", "warn", "--json")
    finally:
        reset_registry()
    assert code == 0
    assert "oodfs: warning: UserWarning: weights clipped at 10" in err
    assert all(line.startswith("oodfs: ") for line in err), err


def test_compare_help_and_terminal_labels(tmp_path, capsys):
    from oodfs.contract.task import env_sort_key
    from oodfs.report.leaderboard import _md

    with pytest.raises(SystemExit):
        cli.main(["compare", "--help"])
    text = capsys.readouterr().out
    assert re.search(r"95 %\s+interval", text) and "%%" not in text
    assert _md("r_train = <1950") == "r_train = <1950" and _md(">=2000") == ">=2000"
    assert _md("<script>x</script> &amp;") == "&lt;script>x&lt;/script> &amp;amp;"
    labels = [">=2000", "1970-1989", "<1950", "1990-1999", "1950-1969"]
    assert sorted(labels, key=env_sort_key) == ["<1950", "1950-1969", "1970-1989", "1990-1999", ">=2000"]
    assert sorted([2.5, -3, 1.5], key=env_sort_key) == [-3, 1.5, 2.5]


def test_bench_on_a_table_notes_once_and_warns_in_one_line_from_its_workers(tmp_path, capfd, monkeypatch):
    """The table's notes are given once per run (not once per task), and a plugin's warning
    from a loky worker (--jobs 2) is one line too."""
    # print warnings as the command line does (pytest would record them instead)
    monkeypatch.setattr(
        warnings,
        "showwarning",
        lambda m, c, f, n, file=None, line=None: sys.stderr.write(warnings.formatwarning(m, c, f, n)),
    )
    from joblib.externals.loky import get_reusable_executor

    # fresh workers: one reused from an earlier test writes to the stderr that test captured
    get_reusable_executor().shutdown(wait=True)
    plugin = tmp_path / "bad.py"
    plugin.write_text(CRASHING_PLUGIN.replace("at 10", f"at 10 in {tmp_path.name}"))
    df = shifted()
    df.loc[[5, 6], "a"] = np.nan
    path = write(df, tmp_path)
    suite = tmp_path / "mine.toml"
    suite.write_text(
        "\n".join(
            [
                'environment = "table"',
                'r_train = ["A"]',
                'r_test = ["C"]',
                "n_train = 80",
                "n_val = 20",
                "n_test = 1000",
                "k = 2",
                'methods = ["warn", "ols"]',
                "[settings.t.params]",
                f'path = "{path}"',
                'target = "y"',
                'env_column = "period"',
                'dropna = "rows"',
            ]
        )
    )
    try:
        out = str(tmp_path / "out")
        code = cli.main(
            ["bench", "--suite", str(suite), "--plugin", str(plugin), "--out", out, "--jobs", "2"]
        )
    finally:
        reset_registry()
    err = capfd.readouterr().err.splitlines()
    assert code == 0, err
    assert err.count(f"oodfs: note: dropped 2 of {len(df)} rows with a missing value in 'a' (2 missing)") == 1
    # a fit's warnings are one counted line once the run ends (docs/PROTOCOL.md section 6)
    assert (
        "oodfs: warn: UserWarning 1 time in the fits of 1 of its 1 task (the fits went on; their results are "
        f"stored as they came), first: weights clipped at 10 in {tmp_path.name}"
    ) in err
    assert not any(re.search(r"\.py:\d+", line) or line.startswith("  ") for line in err), err
