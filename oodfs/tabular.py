"""Feature selection on the user's own table: reading, encoding and ranking (a library: no
argument parsing, no printing; the ``oodfs select`` command is :mod:`oodfs.commands.select`).

* :func:`read_table` -- a CSV (``.csv``, ``.csv.gz``, ``.tsv``) or parquet (``.parquet``,
  ``.pq``) file into a DataFrame; every problem (missing, empty, unparseable, unknown suffix,
  a column name used twice) is one clear :class:`~oodfs.validation.OodfsError` line.
* :func:`make_encoder` -- a scikit-learn transformer (a ``ColumnTransformer``, followed by
  :func:`make_scaler` when standardising) that turns the feature columns of a DataFrame into
  numbers; its ``get_feature_names_out()`` gives the feature names.
* :func:`prepare` -- a DataFrame into ``(X, y, feature_names, env_labels)``, the numbers a
  selector takes. The rules, chosen to never guess silently:

  - the **target** must be numeric (booleans count as 0/1). Rows whose target is missing are
    dropped, with a :class:`TableWarning` saying how many (they carry no information for a
    supervised score); an infinite target is an error.
  - **numeric** and **boolean** columns are features as they are (booleans as 0/1).
  - **categorical** columns (text, pandas ``category``) are one-hot encoded by scikit-learn's
    ``OneHotEncoder(drop="first")``: a column with L levels becomes L - 1 0/1 columns named
    ``column=level``; the first level (sorted text order; a pandas category's declared order)
    is the reference, implied when all of them are 0. Dropping it keeps the design full rank,
    so the least-squares scores that rank features for ``ols``, ``dwr`` and ``srdo`` are
    identifiable (the L dummies of a column always sum to 1, collinear with the intercept).
    A column with a single level becomes one constant column of 1s, ``column=level``.
    A column with more than ``max_levels`` levels (an id, a date read as text, a number with a
    stray ``?``) is an error naming it. ``categorical="error"`` refuses categorical columns
    instead, naming them.
  - **missing feature values** are an error naming every affected column and how many values
    are missing: no imputation is done, because any imputation is a modelling choice that
    changes what the selectors see. Impute beforehand or drop the column (``drop=``).
  - date/time columns and nested values (lists, records: parquet can hold them) are errors.
  - the **environment column** (if any) is never a feature; its values become string labels.
* :func:`rank_features` -- run any registered selector and return its ranking as a DataFrame
  ``(rank, feature, score, selected)``. Features are standardised (mean 0, sd 1 over the rows
  used) before fitting unless ``standardize_features=False``: the coefficient-based scores
  (ols, lasso, dwr, srdo) are on the raw feature scale, so without this a feature measured in
  square feet would outrank one counted in bathrooms for its units alone. With ``env_column``
  and ``train_envs`` only the rows of those environments are used to fit (e.g. select on a
  training period, then check the selection on later periods yourself).
"""

from __future__ import annotations

import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from sklearn.utils.validation import check_is_fitted, validate_data

from oodfs.validation import OodfsError, check_param

CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz", ".tsv", ".tsv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
CATEGORICAL_MODES = ("onehot", "error")
#: a categorical column with more levels than this is refused (an id, a date read as text, ...)
MAX_LEVELS = 50
#: one-hot column name: ``column=level``
LEVEL_SEP = "="
#: the largest |value| a selector is handed (features as fitted, and the target): the float32
#: limit, since tree ensembles (rf, gb, xgb) and torch models compute in 32-bit floats and turn
#: larger values into inf; standardised features are always far below it
MAX_ABS_VALUE = float(np.finfo(np.float32).max)
#: valid random seeds: what numpy and scikit-learn accept as an integer ``random_state``
MAX_SEED = 2**32 - 1


class TableWarning(UserWarning):
    """Something was done to the user's table, or is odd about it, that they should know about."""


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


def _header(path: Path, fmt: str) -> list:
    """The column names as written in the file (pandas renames a repeated CSV name ``a.1``)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    row = pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", header=None, nrows=1, dtype=str)
    return [v for v in row.iloc[0].tolist() if isinstance(v, str)]  # blank names become "Unnamed: i"


def _repeated(names) -> list:
    return list(dict.fromkeys(n for n in names if list(names).count(n) > 1))


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
        repeated = _repeated(_header(path, fmt))
        if not repeated:
            if fmt == "parquet":
                df = pd.read_parquet(path)
            else:
                df = pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", low_memory=False)
    except pd.errors.EmptyDataError:
        raise OodfsError(f"{path} is empty (no columns)") from None
    except UnicodeDecodeError:
        raise OodfsError(
            f"cannot parse {path} as {fmt.upper()}: it is not UTF-8 text (a binary file?)"
        ) from None
    except Exception as exc:  # parser errors, pyarrow errors, bad compression, ...
        raise OodfsError(f"cannot parse {path} as {fmt.upper()}: {_one_line(exc)}") from None
    if repeated:
        raise OodfsError(
            f"{path}: column name(s) {', '.join(map(repr, repeated))} appear more than once in the "
            "header; give every column its own name"
        )
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


# -- checking columns ----------------------------------------------------------------------
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


def _is_datetime(s: pd.Series) -> bool:
    return pd.api.types.is_datetime64_any_dtype(s) or pd.api.types.is_timedelta64_dtype(s)


def _is_categorical(s: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s)) and not _is_datetime(s)


def _is_nested(s: pd.Series) -> bool:
    """Whether a column holds lists, arrays or records (parquet list/struct columns)."""
    if s.dtype != object:
        return False
    return bool(s.map(lambda v: isinstance(v, (list, tuple, dict, set, np.ndarray))).any())


def _check_not_nested(df: pd.DataFrame, columns) -> None:
    nested = [c for c in columns if _is_nested(df[c])]
    if nested:
        raise OodfsError(
            f"column(s) {', '.join(map(repr, nested))} hold nested values (lists or records); "
            "flatten them into plain columns or drop them"
        )


def _mostly_numeric(s: pd.Series) -> str:
    """A note when most values of a text column are numbers (a stray '?' or 'n/a'), else ''."""
    first = _first_non_numeric(s)
    if first is None or pd.to_numeric(s, errors="coerce").notna().mean() < 0.5:
        return ""
    return f"it is numeric except values like {first[1]!r} (row {first[0]})"


def _check_features(frame: pd.DataFrame, categorical: str, max_levels: int) -> list:
    """The categorical columns of ``frame`` (to one-hot encode), after refusing what cannot be
    a feature: dates, nested values, missing or infinite values, too many levels."""
    if categorical not in CATEGORICAL_MODES:
        raise OodfsError(f"categorical must be one of {', '.join(CATEGORICAL_MODES)}, got {categorical!r}")
    dates = [c for c in frame.columns if _is_datetime(frame[c])]
    if dates:
        raise OodfsError(
            f"date/time column(s) {', '.join(map(repr, dates))} cannot be features; "
            "convert them to numbers (e.g. year, day of year) or drop them"
        )
    _check_not_nested(frame, frame.columns)
    missing = {c: int(n) for c, n in frame.isna().sum().items() if n}
    if missing:
        listed = ", ".join(f"{c!r} ({n} missing)" for c, n in missing.items())
        raise OodfsError(
            f"feature column(s) with missing values: {listed}; oodfs does not impute -- "
            "fill them in or drop the column(s)"
        )
    cats = [c for c in frame.columns if _is_categorical(frame[c])]
    infinite = [
        c
        for c in frame.columns
        if c not in cats and np.isinf(frame[c].to_numpy(dtype=float, na_value=np.nan)).any()
    ]
    if infinite:
        raise OodfsError(
            f"feature column(s) {', '.join(map(repr, infinite))} have infinite values; fix or drop them"
        )
    if cats and categorical == "error":
        raise OodfsError(
            f"categorical (non-numeric) column(s) {', '.join(map(repr, cats))}; encode them as numbers, "
            "drop them, or use categorical='onehot' (--categorical onehot)"
        )
    for c in cats:
        n_levels = frame[c].nunique()
        looks = _mostly_numeric(frame[c])
        if n_levels > max_levels:
            raise OodfsError(
                f"categorical column {c!r} has {n_levels} distinct values (more than {max_levels})"
                f"{'; ' + looks if looks else ''}; drop it or encode it as numbers"
            )
        if looks:
            warnings.warn(
                f"column {c!r} is one-hot encoded as text, but {looks}; clean it if it should be a number",
                TableWarning,
                stacklevel=4,
            )
    return cats


# -- encoding ------------------------------------------------------------------------------
def _as_text(X):
    """Categorical values as text, so that a column mixing numbers and strings encodes too."""
    return np.asarray(X, dtype=object).astype(str)


def _level_name(column: str, level) -> str:
    return f"{column}{LEVEL_SEP}{level}"


def _levels(s: pd.Series) -> list[str]:
    """The levels of a categorical column in encoding order: a pandas category's declared order
    (unused levels left out), otherwise sorted text. The first is the reference."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return list(dict.fromkeys(str(c) for c in s.cat.remove_unused_categories().cat.categories))
    return sorted(set(np.asarray(s, dtype=object).astype(str).ravel()))


def _onehot(s: pd.Series) -> Pipeline:
    levels = _levels(s)
    return Pipeline(
        [
            ("text", FunctionTransformer(_as_text, feature_names_out="one-to-one")),
            (
                "onehot",
                OneHotEncoder(
                    categories=[levels],
                    drop="first" if len(levels) > 1 else None,
                    sparse_output=False,
                    dtype=float,
                    feature_name_combiner=_level_name,
                ),
            ),
        ]
    )


class PowerOfTwoScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Divides each column by the power of two just above its largest |value| (into [-1, 1)).

    Dividing by a power of two is exact in floating point, so a ``StandardScaler`` after it
    gives bit for bit the values it gives on the raw column, except that the squares in the
    variance cannot overflow (a column in units of 1e300) or underflow (1e-300). The output is
    column-major (Fortran order): numpy sums a contiguous column in a fixed pairwise order, so
    the means and variances after it do not depend on the memory layout of the input.
    """

    def fit(self, X, y=None):
        X = validate_data(self, X, dtype=float, order="F")
        _, exponent = np.frexp(np.abs(X).max(axis=0))  # max = f * 2**exponent, 0.5 <= f < 1
        self.scale_ = np.ldexp(1.0, exponent)  # 1 for an all-zero column
        return self

    def transform(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=float, reset=False, order="F")
        return np.asfortranarray(X / self.scale_)


def make_scaler() -> Pipeline:
    """Columns to mean 0, sd 1 (a constant column is only centred), for any finite magnitude:
    :class:`PowerOfTwoScaler` then scikit-learn's ``StandardScaler``."""
    return Pipeline([("power_of_two", PowerOfTwoScaler()), ("standard", StandardScaler())])


def make_encoder(
    frame: pd.DataFrame, categorical: str = "onehot", max_levels: int = MAX_LEVELS, standardize: bool = False
):
    """An unfitted scikit-learn transformer from the feature columns of ``frame`` to numbers.

    Checks the columns first (the rules of :func:`prepare`; an OodfsError naming the column).
    One transformer per column, in the frame's order: categorical columns one-hot encoded
    (``column=level``, first level dropped), numeric and boolean columns passed through. With
    ``standardize`` every output column is then scaled to mean 0, sd 1 (:func:`make_scaler`).
    Fit it on ``frame`` (or a frame with the same columns); ``get_feature_names_out()`` names
    the output columns. Column names must be text.
    """
    if not isinstance(frame, pd.DataFrame):
        raise OodfsError(f"expected a pandas DataFrame, got {type(frame).__name__}")
    not_text = [c for c in frame.columns if not isinstance(c, str)]
    if not_text:
        raise OodfsError(f"column names must be text; rename {', '.join(map(repr, not_text))}")
    cats = set(_check_features(frame, categorical, max_levels))
    # one one-hot encoder per categorical column, one passthrough per run of other columns, so
    # the output keeps the frame's column order
    parts = []
    for c in frame.columns:
        if c in cats:
            parts.append((_onehot(frame[c]), [c]))
        elif parts and parts[-1][0] == "passthrough":
            parts[-1][1].append(c)
        else:
            parts.append(("passthrough", [c]))
    # transformer names c0, c1, ...: column names may contain "__", which scikit-learn reserves
    encoder = ColumnTransformer(
        [(f"c{i}", trans, cols) for i, (trans, cols) in enumerate(parts)], verbose_feature_names_out=False
    )
    return Pipeline([("encode", encoder), ("scale", make_scaler())]) if standardize else encoder


# -- preparing -----------------------------------------------------------------------------
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


def prepare(
    df: pd.DataFrame,
    target,
    env_column=None,
    categorical: str = "onehot",
    drop=(),
    features=None,
    max_levels: int = MAX_LEVELS,
    standardize: bool = False,
):
    """``(X, y, feature_names, env_labels)`` from a DataFrame (rules in the module docstring).

    ``X`` is a float array (n, d) made by :func:`make_encoder`, ``y`` a float array (n,),
    ``feature_names`` its ``get_feature_names_out()`` as a list of d strings, ``env_labels`` a
    string array (n,) of the environment column's values or None. ``drop`` lists columns to
    leave out; ``features`` (if given) lists the only columns to use (before one-hot
    encoding). Neither may name the target or the environment column. ``standardize`` scales
    every column of ``X`` to mean 0, sd 1 over the rows kept.
    """
    if not isinstance(df, pd.DataFrame):
        raise OodfsError(f"expected a pandas DataFrame, got {type(df).__name__}")
    if categorical not in CATEGORICAL_MODES:
        raise OodfsError(f"categorical must be one of {', '.join(CATEGORICAL_MODES)}, got {categorical!r}")
    repeated = _repeated(list(df.columns))
    if repeated:
        raise OodfsError(f"column name(s) {', '.join(map(repr, repeated))} appear more than once")
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
        raise OodfsError(
            "no feature columns left (every column is the target, the environment column or dropped)"
        )

    _check_not_nested(df, [target] + ([env_column] if env_column is not None else []))
    y = _target_vector(df, target)
    if np.isinf(y).any():
        raise OodfsError(
            f"target column {target!r} has infinite values (row {df.index[np.isinf(y).nonzero()[0][0]]})"
        )
    keep = ~np.isnan(y)
    if not keep.any():
        raise OodfsError(f"target column {target!r} has no values (all missing)")
    if not keep.all():
        warnings.warn(
            f"dropped {int((~keep).sum())} of {len(y)} rows whose target {target!r} is missing",
            TableWarning,
            stacklevel=2,
        )
    sub = df.loc[keep, columns]
    sub.columns = [str(c) for c in sub.columns]
    repeated = _repeated(list(sub.columns))
    if repeated:  # e.g. the column 1 and the column "1"
        raise OodfsError(f"two columns are both named {repeated[0]!r} as text; rename one")
    y = y[keep]

    env_labels = None
    if env_column is not None:
        env = df.loc[keep, env_column]
        if env.isna().any():
            raise OodfsError(
                f"environment column {env_column!r} has {int(env.isna().sum())} missing values; "
                "fill or drop those rows first"
            )
        env_labels = env.astype(str).to_numpy(dtype=object)

    encoder = make_encoder(sub, categorical, max_levels, standardize)
    X = np.asarray(encoder.fit_transform(sub), dtype=float)
    try:
        names = [str(n) for n in encoder.get_feature_names_out()]
    except ValueError:  # scikit-learn refuses two output columns with one name
        raise OodfsError(
            f"two features would both be named {_repeated(_encoded_names(encoder))[0]!r} after "
            "one-hot encoding; rename a column"
        ) from None
    return X, y, names, env_labels


def _encoded_names(encoder) -> list[str]:
    """The output names of a fitted encoder even when two clash (scikit-learn then refuses)."""
    ct = encoder.named_steps["encode"] if isinstance(encoder, Pipeline) else encoder
    names = []
    for _, trans, cols in ct.transformers_:
        if trans == "drop":
            continue
        names += list(cols) if trans == "passthrough" else list(trans.get_feature_names_out(cols))
    return names


# -- ranking -------------------------------------------------------------------------------
def _selector_params(cls, params: dict | None) -> dict:
    params = dict(params or {})
    valid = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "k", "random_state")]
    for reserved, flag in (("k", "top_k (--top-k)"), ("random_state", "random_state (--seed)")):
        if reserved in params:
            raise OodfsError(f"set {reserved!r} through {flag}, not as a selector parameter")
    unknown = [p for p in params if p not in valid]
    if unknown:
        raise OodfsError(
            f"selector {cls.name!r} has no parameter {unknown[0]!r}; "
            f"valid: {', '.join(valid) if valid else '(none)'}"
        )
    for name, value in params.items():  # alpha=true is not a number
        check_param(f"selector {cls.name!r}", name, value, _init_default(cls, name, None))
    return params


def _init_default(cls, name: str, fallback):
    p = inspect.signature(cls.__init__).parameters.get(name)
    return fallback if p is None or p.default is inspect.Parameter.empty else p.default


def _check_seed(random_state) -> int:
    if (
        isinstance(random_state, (bool, np.bool_))
        or not isinstance(random_state, (int, np.integer))
        or not 0 <= random_state <= MAX_SEED
    ):
        raise OodfsError(
            f"random_state (--seed) must be an integer from 0 to {MAX_SEED}, got {random_state!r}"
        )
    return int(random_state)


def _named(message: str, names: list[str]) -> str:
    """A selector's message with column indices ("column 3") replaced by the feature names."""

    def name(m):
        j = int(m.group(1))
        return f"column {names[j]!r}" if j < len(names) else m.group(0)

    return re.sub(r"\bcolumn (\d+)\b", name, message)


def _check_magnitude(X: np.ndarray, y: np.ndarray, names: list[str], target) -> None:
    big = [names[j] for j in np.nonzero(np.abs(X).max(axis=0) > MAX_ABS_VALUE)[0]]
    if big:
        raise OodfsError(
            f"feature column(s) {', '.join(map(repr, big))} have values beyond +-{MAX_ABS_VALUE:.3g}, "
            "which selectors computing in 32-bit floats (trees, xgb, neural nets) turn into inf; "
            "standardise them (drop --no-standardize) or rescale them"
        )
    if np.abs(y).max() > MAX_ABS_VALUE:
        raise OodfsError(
            f"target column {target!r} has values beyond +-{MAX_ABS_VALUE:.3g}, which selectors "
            "computing in 32-bit floats turn into inf; rescale it (e.g. to other units or its log)"
        )


def rank_features(
    data,
    target,
    method: str,
    top_k: int | None = None,
    env_column=None,
    train_envs=None,
    params: dict | None = None,
    random_state: int = 0,
    categorical: str = "onehot",
    drop=(),
    standardize_features: bool = True,
    max_levels: int = MAX_LEVELS,
) -> pd.DataFrame:
    """Rank every feature of a table with the selector ``method``.

    ``data`` is a DataFrame or a path (:func:`read_table`). Returns a DataFrame with columns
    ``rank`` (1 = most important), ``feature``, ``score`` (the selector's score, higher =
    more important) and ``selected`` (the top ``top_k``; default: the selector's own default
    ``k``, usually 5, at most the number of features), best first. ``df.attrs`` holds what
    was done (method, params, rows used, ...).

    ``env_column``: a column of environment labels, never used as a feature. ``train_envs``:
    labels (compared as text) whose rows alone are used to fit; needs ``env_column``.
    ``params``: the selector's parameters (``oodfs plugins`` lists selectors; see their
    docstrings). ``random_state``: an integer from 0 to 2**32 - 1. Features are standardised
    first unless ``standardize_features=False``.

    Warnings (:class:`TableWarning`): rows dropped for a missing target, constant feature
    columns (ranked last, score 0), a constant target, no more rows than features.
    """
    from oodfs.contract.registry import registry

    cls = registry().get("selector", method)
    kwargs = _selector_params(cls, params)
    random_state = _check_seed(random_state)
    df, source = _as_frame(data)
    if train_envs is not None and env_column is None:
        raise OodfsError("train_envs (--train-envs) needs env_column (--env-column)")
    X, y, names, env = prepare(
        df, target, env_column=env_column, categorical=categorical, drop=drop, max_levels=max_levels
    )
    n_rows = len(y)
    if train_envs is not None:
        wanted = [str(e) for e in ([train_envs] if isinstance(train_envs, (str, int, float)) else train_envs)]
        labels = list(dict.fromkeys(env))
        unknown = [e for e in wanted if e not in labels]
        if unknown:
            raise OodfsError(
                f"environment {unknown[0]!r} is not in column {env_column!r}; valid: {', '.join(labels)}"
            )
        rows = np.isin(env, wanted)
        X, y = X[rows], y[rows]
    n, d = X.shape
    if n < 2:
        raise OodfsError(f"need at least 2 rows to rank features, got {n}")
    k = min(int(_init_default(cls, "k", 5)), d) if top_k is None else int(top_k)
    if not 1 <= k <= d:
        raise OodfsError(f"top_k must be between 1 and the number of features ({d}), got {top_k}")
    # standardised over the rows used (the ones the selector sees)
    Xs = make_scaler().fit_transform(X) if standardize_features else X
    # a column constant on the rows used carries no information there; least-squares scores
    # (dwr, srdo) cannot even be computed with it, so it is left out and ranked last, score 0
    constant = np.ptp(Xs, axis=0) == 0
    if constant.all():
        raise OodfsError("every feature is constant on the rows used; nothing to rank")
    if constant.any():
        warnings.warn(
            f"constant column(s) {', '.join(names[j] for j in constant.nonzero()[0])} carry no "
            "information on the rows used; ranked last with score 0",
            TableWarning,
            stacklevel=2,
        )
    fit_names = [names[j] for j in np.nonzero(~constant)[0]]
    Xfit = Xs[:, ~constant]
    _check_magnitude(Xfit, y, fit_names, target)
    if np.ptp(y) == 0:
        warnings.warn(
            f"the target {target!r} is constant ({y[0]:g}) on the rows used: no feature can predict it, "
            "so the ranking means nothing",
            TableWarning,
            stacklevel=2,
        )
    if n <= Xfit.shape[1]:
        warnings.warn(
            f"{n} rows for {Xfit.shape[1]} features: with no more rows than features, least-squares "
            "coefficients (the ols, dwr and srdo scores) are not unique and their ranking is arbitrary; "
            "use more rows or fewer features",
            TableWarning,
            stacklevel=2,
        )
    selector = cls(**kwargs, k=min(k, Xfit.shape[1]), random_state=random_state)
    try:
        # a DataFrame, so that a selector that keeps feature names (feature_names_in_) has them
        selector.fit(pd.DataFrame(Xfit, columns=fit_names), y)
    except OodfsError as exc:
        raise OodfsError(_named(str(exc), fit_names)) from exc
    except (ValueError, ArithmeticError) as exc:  # numbers the selector's library refused
        raise OodfsError(
            f"selector {method!r} cannot rank this table: {_named(_one_line(exc), fit_names)}"
        ) from exc
    scores = np.zeros(d)
    scores[~constant] = np.asarray(selector.scores_, dtype=float)
    # best first; constant columns after every fitted one
    order = np.lexsort((np.arange(d), -scores, constant))
    ranks = np.empty(d, dtype=int)
    ranks[order] = np.arange(1, d + 1)
    out = pd.DataFrame(
        {
            "rank": ranks[order],
            "feature": [names[j] for j in order],
            "score": scores[order],
            "selected": (ranks[order] <= k) & ~constant[order],
        }
    ).reset_index(drop=True)
    used = {p: v for p, v in selector.get_params(deep=False).items() if p not in ("k", "random_state")}
    out.attrs.update(
        {
            "method": method,
            "params": used,
            "target": str(target),
            "source": source,
            "rows": int(n),
            "rows_in_table": int(n_rows),
            "features": d,
            "top_k": k,
            "env_column": env_column,
            "train_envs": None if train_envs is None else wanted,
            "standardized": bool(standardize_features),
            "random_state": random_state,
        }
    )
    return out
