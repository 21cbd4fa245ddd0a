"""Feature selection on the user's own table: ``oodfs select data.csv --target y --method dwr``.

Three steps, each usable from Python:

* :func:`read_table` -- a CSV (``.csv``, ``.csv.gz``, ``.tsv``) or parquet (``.parquet``,
  ``.pq``) file into a DataFrame; every problem (missing, empty, unparseable, unknown suffix)
  is one clear :class:`~oodfs.validation.OodfsError` line.
* :func:`prepare` -- a DataFrame into ``(X, y, feature_names, env_labels)``, the numbers a
  selector takes. The rules, chosen to never guess silently:

  - the **target** must be numeric (booleans count as 0/1). Rows whose target is missing are
    dropped, with a :class:`TableWarning` saying how many (they carry no information for a
    supervised score); an infinite target is an error.
  - **numeric** and **boolean** columns are features as they are (booleans as 0/1).
  - **categorical** columns (text, pandas ``category``) are one-hot encoded with
    ``pandas.get_dummies(drop_first=True)``: a column with L levels becomes L - 1 0/1 columns
    named ``column=level``; the first level (sorted order) is the reference, implied when all
    of them are 0. Dropping it keeps the design full rank, so the least-squares scores that
    rank features for ``ols``, ``dwr`` and ``srdo`` are identifiable (the L dummies of a column
    always sum to 1, collinear with the intercept). A column with more than ``max_levels``
    levels (an id, a date read as text, a number with a stray ``?``) is an error naming it.
    ``categorical="error"`` refuses categorical columns instead, naming them.
  - **missing feature values** are an error naming every affected column and how many values
    are missing: no imputation is done, because any imputation is a modelling choice that
    changes what the selectors see. Impute beforehand or drop the column (``drop=``).
  - date/time columns are an error (convert them to numbers or drop them).
  - the **environment column** (if any) is never a feature; its values become string labels.
* :func:`rank_features` -- run any registered selector and return its ranking as a DataFrame
  ``(rank, feature, score, selected)``. Features are standardised (mean 0, sd 1 over the rows
  used) before fitting unless ``standardize=False``: the coefficient-based scores (ols, lasso,
  dwr, srdo) are on the raw feature scale, so without this a feature measured in square feet
  would outrank one counted in bathrooms for its units alone. With ``env_column`` and
  ``train_envs`` only the rows of those environments are used to fit (e.g. select on a
  training period, then check the selection on later periods yourself).

:func:`add_select_parser` and :func:`cmd_select` are the ``oodfs select`` command.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .validation import OodfsError

CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz", ".tsv", ".tsv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
CATEGORICAL_MODES = ("onehot", "error")
#: a categorical column with more levels than this is refused (an id, a date read as text, ...)
MAX_LEVELS = 50
#: one-hot column name: ``column=level``
LEVEL_SEP = "="


class TableWarning(UserWarning):
    """Something was done to the user's table that they should know about (rows dropped)."""


# -- reading -------------------------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def table_format(path) -> str:
    """``"csv"``, ``"tsv"`` or ``"parquet"`` from the file name, or an OodfsError."""
    name = Path(path).name.lower()
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith((".tsv", ".tsv.gz")):
        return "tsv"
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    raise OodfsError(
        f"{path}: unknown table format {''.join(Path(path).suffixes) or '(no suffix)'!r}; "
        f"expected one of {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)}"
    )


def read_table(path) -> pd.DataFrame:
    """A CSV/TSV or parquet file (chosen by suffix) as a DataFrame, or one clear OodfsError."""
    path = Path(path)
    fmt = table_format(path)
    if not path.exists():
        raise OodfsError(f"{path} does not exist")
    if path.is_dir():
        raise OodfsError(f"{path} is a folder, not a table file")
    if path.stat().st_size == 0:
        raise OodfsError(f"{path} is empty (0 bytes)")
    try:
        if fmt == "parquet":
            df = pd.read_parquet(path)
        else:
            df = pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", low_memory=False)
    except pd.errors.EmptyDataError:
        raise OodfsError(f"{path} is empty (no columns)") from None
    except UnicodeDecodeError:
        raise OodfsError(f"cannot parse {path} as {fmt.upper()}: it is not UTF-8 text (a binary file?)") from None
    except Exception as exc:  # parser errors, pyarrow errors, bad compression, ...
        raise OodfsError(f"cannot parse {path} as {fmt.upper()}: {_one_line(exc)}") from None
    if df.shape[1] == 0:
        raise OodfsError(f"{path} has no columns")
    if df.shape[0] == 0:
        raise OodfsError(f"{path} has a header but no data rows")
    return df


def _as_frame(data) -> tuple[pd.DataFrame, str]:
    """(DataFrame, a name for messages) from a DataFrame or a path."""
    if isinstance(data, pd.DataFrame):
        return data, "the table"
    if isinstance(data, (str, Path)):
        return read_table(data), str(data)
    raise OodfsError(f"expected a pandas DataFrame or a path to a table file, got {type(data).__name__}")


# -- preparing -----------------------------------------------------------------------------
def _columns_hint(df: pd.DataFrame, limit: int = 40) -> str:
    cols = [str(c) for c in df.columns]
    shown = ", ".join(cols[:limit]) + (f", ... ({len(cols)} columns)" if len(cols) > limit else "")
    hint = f"available columns: {shown}"
    if len(cols) == 1 and any(s in cols[0] for s in (";", "\t", "|")):
        hint += " (one column only: is the file separated by something other than commas?)"
    return hint


def _require_column(df: pd.DataFrame, column, role: str) -> None:
    if column not in df.columns:
        raise OodfsError(f"{role} column {column!r} not found; {_columns_hint(df)}")


def _first_non_numeric(s: pd.Series) -> tuple[object, object] | None:
    """(row label, value) of the first non-missing value that is not a number, if any."""
    coerced = pd.to_numeric(s, errors="coerce")
    bad = coerced.isna() & s.notna()
    if not bad.any():
        return None
    i = bad.to_numpy().nonzero()[0][0]
    return s.index[i], s.iloc[i]


def _is_categorical(s: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s)) and not _is_datetime(s)


def _is_datetime(s: pd.Series) -> bool:
    return pd.api.types.is_datetime64_any_dtype(s) or pd.api.types.is_timedelta64_dtype(s)


def _target_vector(df: pd.DataFrame, target) -> np.ndarray:
    s = df[target]
    if pd.api.types.is_bool_dtype(s):
        return s.astype(float).to_numpy()
    if not pd.api.types.is_numeric_dtype(s):
        first = _first_non_numeric(s)
        where = f" (e.g. {first[1]!r} in row {first[0]})" if first else ""
        raise OodfsError(
            f"target column {target!r} is not numeric{where}; oodfs ranks features for a numeric "
            "(regression) target"
        )
    return s.to_numpy(dtype=float, na_value=np.nan)


def prepare(df: pd.DataFrame, target, env_column=None, categorical: str = "onehot", drop=(),
            features=None, max_levels: int = MAX_LEVELS):
    """``(X, y, feature_names, env_labels)`` from a DataFrame (rules in the module docstring).

    ``X`` is a float array (n, d), ``y`` a float array (n,), ``feature_names`` a list of d
    strings, ``env_labels`` a string array (n,) of the environment column's values or None.
    ``drop`` lists columns to leave out; ``features`` (if given) lists the only columns to use
    (before one-hot encoding). Neither may name the target or the environment column.
    """
    if not isinstance(df, pd.DataFrame):
        raise OodfsError(f"expected a pandas DataFrame, got {type(df).__name__}")
    if categorical not in CATEGORICAL_MODES:
        raise OodfsError(f"categorical must be one of {', '.join(CATEGORICAL_MODES)}, got {categorical!r}")
    if df.columns.duplicated().any():
        dup = df.columns[df.columns.duplicated()][0]
        raise OodfsError(f"column name {dup!r} appears more than once")
    if df.shape[0] == 0:
        raise OodfsError("the table has no rows")
    _require_column(df, target, "target")
    if env_column is not None:
        _require_column(df, env_column, "environment")
        if env_column == target:
            raise OodfsError(f"the environment column and the target are the same column ({target!r})")
    drop = [drop] if isinstance(drop, str) else list(drop or ())
    for col in drop:
        _require_column(df, col, "dropped")
    reserved = {target} | ({env_column} if env_column is not None else set())
    if features is not None:
        features = [features] if isinstance(features, str) else list(features)
        for col in features:
            _require_column(df, col, "feature")
        clash = [c for c in features if c in reserved]
        if clash:
            raise OodfsError(f"{clash[0]!r} is the target or environment column and cannot also be a feature")
        columns = [c for c in features if c not in drop]
    else:
        columns = [c for c in df.columns if c not in reserved and c not in drop]
    if not columns:
        raise OodfsError("no feature columns left (every column is the target, the environment column or dropped)")

    y = _target_vector(df, target)
    if np.isinf(y).any():
        raise OodfsError(f"target column {target!r} has infinite values (row {df.index[np.isinf(y).nonzero()[0][0]]})")
    keep = ~np.isnan(y)
    if not keep.any():
        raise OodfsError(f"target column {target!r} has no values (all missing)")
    if not keep.all():
        warnings.warn(f"dropped {int((~keep).sum())} of {len(y)} rows whose target {target!r} is missing",
                      TableWarning, stacklevel=2)
    sub = df.loc[keep, columns]
    y = y[keep]

    env_labels = None
    if env_column is not None:
        env = df.loc[keep, env_column]
        if env.isna().any():
            raise OodfsError(f"environment column {env_column!r} has {int(env.isna().sum())} missing values; "
                             "fill or drop those rows first")
        env_labels = env.astype(str).to_numpy()

    X, names = _encode(sub, categorical, max_levels)
    return X, y, names, env_labels


def _encode(sub: pd.DataFrame, categorical: str, max_levels: int) -> tuple[np.ndarray, list[str]]:
    dates = [c for c in sub.columns if _is_datetime(sub[c])]
    if dates:
        raise OodfsError(f"date/time column(s) {', '.join(map(repr, dates))} cannot be features; "
                         "convert them to numbers (e.g. year, day of year) or drop them")
    missing = {c: int(n) for c, n in sub.isna().sum().items() if n}
    if missing:
        listed = ", ".join(f"{c!r} ({n} missing)" for c, n in missing.items())
        raise OodfsError(f"feature column(s) with missing values: {listed}; oodfs does not impute -- "
                         "fill them in or drop the column(s)")
    cats = [c for c in sub.columns if _is_categorical(sub[c])]
    if cats and categorical == "error":
        raise OodfsError(f"categorical (non-numeric) column(s) {', '.join(map(repr, cats))}; encode them as numbers, "
                         "drop them, or use categorical='onehot' (--categorical onehot)")
    for c in cats:
        n_levels = sub[c].nunique()
        looks = _mostly_numeric(sub[c])
        if n_levels > max_levels:
            raise OodfsError(f"categorical column {c!r} has {n_levels} distinct values (more than {max_levels})"
                             f"{'; ' + looks if looks else ''}; drop it or encode it as numbers")
        if looks:
            warnings.warn(f"column {c!r} is one-hot encoded as text, but {looks}; clean it if it should be a number",
                          TableWarning, stacklevel=3)
    parts, names = [], []
    for c in sub.columns:
        s = sub[c]
        if c in cats:
            # text: levels in sorted order; a pandas category: its declared order (unused levels dropped)
            levels = s.cat.remove_unused_categories() if isinstance(s.dtype, pd.CategoricalDtype) else s.astype(str)
            dummies = pd.get_dummies(levels, prefix=str(c), prefix_sep=LEVEL_SEP, drop_first=True, dtype=float)
            if dummies.shape[1] == 0:  # a single level: a constant, kept as one all-zero column
                dummies = pd.DataFrame({f"{c}{LEVEL_SEP}{s.iloc[0]}": np.zeros(len(s))}, index=s.index)
            parts.append(dummies.to_numpy(dtype=float))
            names += [str(n) for n in dummies.columns]
        else:
            parts.append(s.to_numpy(dtype=float, na_value=np.nan)[:, None])
            names.append(str(c))
    X = np.hstack(parts) if parts else np.empty((len(sub), 0))
    if np.isinf(X).any():
        col = names[int(np.isinf(X).any(axis=0).nonzero()[0][0])]
        raise OodfsError(f"feature column {col!r} has infinite values; fix or drop it")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise OodfsError(f"two features would both be named {dup!r} after one-hot encoding; rename a column")
    return X, names


def _mostly_numeric(s: pd.Series) -> str:
    """A note when most values of a text column are numbers (a stray '?' or 'n/a'), else ''."""
    first = _first_non_numeric(s)
    if first is None or pd.to_numeric(s, errors="coerce").notna().mean() < 0.5:
        return ""
    return f"it is numeric except values like {first[1]!r} (row {first[0]})"


def standardize(X: np.ndarray) -> np.ndarray:
    """Columns scaled to mean 0, sd 1 (a constant column is only centred)."""
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    return (X - mu) / np.where(sd > 0, sd, 1.0)


# -- ranking -------------------------------------------------------------------------------
def _selector_params(cls, params: dict | None) -> dict:
    import inspect

    params = dict(params or {})
    valid = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "k", "random_state")]
    for reserved, flag in (("k", "top_k (--top-k)"), ("random_state", "random_state (--seed)")):
        if reserved in params:
            raise OodfsError(f"set {reserved!r} through {flag}, not as a selector parameter")
    unknown = [p for p in params if p not in valid]
    if unknown:
        raise OodfsError(f"selector {cls.name!r} has no parameter {unknown[0]!r}; "
                         f"valid: {', '.join(valid) if valid else '(none)'}")
    return params


def rank_features(data, target, method: str, top_k: int | None = None, env_column=None, train_envs=None,
                  params: dict | None = None, random_state: int = 0, categorical: str = "onehot", drop=(),
                  standardize_features: bool = True, max_levels: int = MAX_LEVELS) -> pd.DataFrame:
    """Rank every feature of a table with the selector ``method``.

    ``data`` is a DataFrame or a path (:func:`read_table`). Returns a DataFrame with columns
    ``rank`` (1 = most important), ``feature``, ``score`` (the selector's score, higher =
    more important) and ``selected`` (the top ``top_k``; default: the selector's own default
    ``k``, usually 5, at most the number of features), best first. ``df.attrs`` holds what
    was done (method, params, rows used, ...).

    ``env_column``: a column of environment labels, never used as a feature. ``train_envs``:
    labels (compared as text) whose rows alone are used to fit; needs ``env_column``.
    ``params``: the selector's parameters (``oodfs plugins`` lists selectors; see their
    docstrings). Features are standardised first unless ``standardize_features=False``.
    """
    from .plugins import registry

    cls = registry().get("selector", method)
    kwargs = _selector_params(cls, params)
    df, source = _as_frame(data)
    if train_envs is not None and env_column is None:
        raise OodfsError("train_envs (--train-envs) needs env_column (--env-column)")
    X, y, names, env = prepare(df, target, env_column=env_column, categorical=categorical, drop=drop,
                               max_levels=max_levels)
    n_rows = len(y)
    if train_envs is not None:
        wanted = [str(e) for e in ([train_envs] if isinstance(train_envs, (str, int, float)) else train_envs)]
        labels = list(dict.fromkeys(env))
        unknown = [e for e in wanted if e not in labels]
        if unknown:
            raise OodfsError(f"environment {unknown[0]!r} is not in column {env_column!r}; valid: {', '.join(labels)}")
        rows = np.isin(env, wanted)
        X, y = X[rows], y[rows]
    d = X.shape[1]
    if X.shape[0] < 2:
        raise OodfsError(f"need at least 2 rows to rank features, got {X.shape[0]}")
    k = min(int(_init_default(cls, "k", 5)), d) if top_k is None else int(top_k)
    if not 1 <= k <= d:
        raise OodfsError(f"top_k must be between 1 and the number of features ({d}), got {top_k}")
    # a column constant on the rows used carries no information there; least-squares scores
    # (dwr, srdo) cannot even be computed with it, so it is left out and ranked last, score 0
    constant = np.ptp(X, axis=0) == 0
    if constant.all():
        raise OodfsError("every feature is constant on the rows used; nothing to rank")
    if constant.any():
        warnings.warn(f"constant column(s) {', '.join(names[j] for j in constant.nonzero()[0])} carry no "
                      "information on the rows used; ranked last with score 0", TableWarning, stacklevel=2)
    Xfit = X[:, ~constant]
    if standardize_features:
        Xfit = standardize(Xfit)
    selector = cls(**kwargs, k=min(k, Xfit.shape[1]), random_state=random_state)
    selector.fit(Xfit, y)
    scores = np.zeros(d)
    scores[~constant] = np.asarray(selector.scores_, dtype=float)
    # best first; constant columns after every fitted one
    order = np.lexsort((np.arange(d), -scores, constant))
    ranks = np.empty(d, dtype=int)
    ranks[order] = np.arange(1, d + 1)
    out = pd.DataFrame({"rank": ranks[order], "feature": [names[j] for j in order], "score": scores[order],
                        "selected": (ranks[order] <= k) & ~constant[order]}).reset_index(drop=True)
    used = {p: v for p, v in selector.get_params(deep=False).items() if p not in ("k", "random_state")}
    out.attrs.update({
        "method": method, "params": used, "target": str(target), "source": source,
        "rows": int(X.shape[0]), "rows_in_table": int(n_rows), "features": d, "top_k": k,
        "env_column": env_column, "train_envs": None if train_envs is None else wanted,
        "standardized": bool(standardize_features), "random_state": random_state,
    })
    return out


def _init_default(cls, name: str, fallback):
    import inspect

    p = inspect.signature(cls.__init__).parameters.get(name)
    return fallback if p is None or p.default is inspect.Parameter.empty else p.default


# -- command line --------------------------------------------------------------------------
def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def parse_param(text: str) -> tuple[str, object]:
    """``"alpha=0.1"`` -> ``("alpha", 0.1)``. Values are read as JSON (numbers, true/false,
    null, lists), also Python's True/False/None; anything else stays a string."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise OodfsError(f"--param expects key=value, got {text!r}")
    value = value.strip()
    special = {"True": True, "False": False, "None": None}
    if value in special:
        return key, special[value]
    try:
        parsed = json.loads(value)
    except ValueError:
        return key, value
    if isinstance(parsed, float) and not math.isfinite(parsed):
        return key, value
    return key, tuple(parsed) if isinstance(parsed, list) else parsed


def add_select_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``oodfs select`` on the CLI's subparsers; returns the new parser."""
    p = subparsers.add_parser(
        "select", help="rank the features of your own table (CSV or parquet) with any selector",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Rank every feature of a table for predicting --target with one selector (DWR, SRDO or a\n"
            "baseline; `oodfs plugins` lists them) and print the ranking, best first.\n\n"
            "Every column except the target, the --env-column and --drop columns is a feature.\n"
            "Numeric and true/false columns are used as they are; text columns are one-hot encoded\n"
            "(one 0/1 column `col=level` per level except the first, which is the reference).\n"
            "Missing feature values are an error (oodfs does not impute); rows with a missing\n"
            "target are dropped, with a note. Features are standardised (mean 0, sd 1) before\n"
            "fitting, so coefficient-based scores do not depend on units (--no-standardize: off)."
        ),
        epilog=(
            "examples:\n"
            "  oodfs select houses.csv --target price --method dwr --top-k 5\n"
            "  oodfs select sales.parquet --target y --method lasso --param alpha=0.1 --json\n"
            "  oodfs select houses.csv --target price --method srdo \\\n"
            "      --env-column period --train-envs 1990s,2000s   # fit on those periods only"
        ),
    )
    p.add_argument("file", help="the table: .csv, .csv.gz, .tsv or .parquet (first row = column names)")
    p.add_argument("--target", required=True, metavar="COL", help="the column to predict (numeric)")
    p.add_argument("--method", required=True, metavar="NAME",
                   help="selector name, e.g. dwr, srdo, lasso, rf, correlation (see `oodfs plugins`)")
    p.add_argument("--top-k", type=_positive_int, metavar="K",
                   help="how many features are marked selected (default: the selector's k, usually 5)")
    p.add_argument("--json", action="store_true", help="print JSON (the ranking and what was done) instead of a table")
    p.add_argument("--env-column", metavar="COL",
                   help="a column of environment labels (e.g. period, site); never used as a feature")
    p.add_argument("--train-envs", type=_csv_list, metavar="A,B",
                   help="fit only on the rows whose --env-column value is one of these labels")
    p.add_argument("--categorical", choices=CATEGORICAL_MODES, default="onehot",
                   help="text columns: one-hot encode them (default) or stop with an error naming them")
    p.add_argument("--drop", type=_csv_list, default=[], metavar="A,B",
                   help="comma-separated columns to leave out (ids, leaks, columns with missing values)")
    p.add_argument("--max-levels", type=_positive_int, default=MAX_LEVELS, metavar="N",
                   help=f"refuse a text column with more than N distinct values (default {MAX_LEVELS})")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="a selector parameter, e.g. --param alpha=0.1 (JSON values); repeatable")
    p.add_argument("--seed", type=int, default=0, help="random seed of the selector (default 0)")
    p.add_argument("--no-standardize", action="store_true", help="use the features on their own scale")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="register an unpackaged plugin module (dotted name or .py file); repeatable")
    return p


def cmd_select(args) -> int:
    """``oodfs select``: print the ranking as a table (or JSON); notes go to standard error."""
    from tabulate import tabulate

    from .plugins import registry

    registry(tuple(getattr(args, "plugin", []) or ()))
    params = dict(parse_param(t) for t in (args.param or []))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TableWarning)
        ranking = rank_features(
            args.file, args.target, args.method, top_k=args.top_k, env_column=args.env_column,
            train_envs=args.train_envs, params=params, random_state=args.seed, categorical=args.categorical,
            drop=args.drop, standardize_features=not args.no_standardize, max_levels=args.max_levels,
        )
    for w in caught:
        if issubclass(w.category, TableWarning):
            print(f"oodfs: note: {w.message}", file=sys.stderr)
        else:  # pass the others on unchanged
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    a = ranking.attrs
    if args.json:
        out = {k: a[k] for k in ("method", "params", "target", "source", "rows", "rows_in_table", "features",
                                 "top_k", "env_column", "train_envs", "standardized", "random_state")}
        out["params"] = {k: list(v) if isinstance(v, tuple) else v for k, v in out["params"].items()}
        out["ranking"] = [{"rank": int(r.rank), "feature": r.feature, "score": float(r.score),
                           "selected": bool(r.selected)} for r in ranking.itertuples()]
        print(json.dumps(out, indent=2, default=str))
        return 0
    used = f"{a['rows']} of {a['rows_in_table']} rows (environments {', '.join(a['train_envs'])})" \
        if a["train_envs"] else f"{a['rows']} rows"
    print(f"{a['method']} on {a['source']}: target {a['target']!r}, {a['features']} features, {used}; "
          f"top {a['top_k']} marked *", file=sys.stderr)
    rows = [[r.rank, r.feature, f"{r.score:.6g}", "*" if r.selected else ""] for r in ranking.itertuples()]
    print(tabulate(rows, headers=["rank", "feature", "score", "selected"], disable_numparse=True))
    return 0
