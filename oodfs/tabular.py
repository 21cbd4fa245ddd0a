"""Feature selection on the user's own table: reading, preparing and ranking (a library: no
argument parsing, no printing; the ``oodfs select`` command is :mod:`oodfs.commands.select`,
and the ``table`` environment of ``oodfs bench`` prepares its table with the same code).

* :func:`read_table` -- a CSV (``.csv``, ``.csv.gz``, ``.tsv``) or parquet (``.parquet``,
  ``.pq``) file into a DataFrame; every problem (missing, empty, unparseable, unknown suffix,
  a column name used twice) is one clear :class:`~oodfs.validation.OodfsError` line.
* :func:`make_encoder` -- a scikit-learn transformer (a ``ColumnTransformer``, followed by
  :func:`make_scaler` when standardising) that turns the feature columns of a DataFrame into
  numbers; its ``get_feature_names_out()`` gives the feature names.
* :func:`prepare_table` -- a DataFrame into a :class:`PreparedTable` (``X``, ``y``, feature
  names, the variable each feature comes from, environment labels, the notes); :func:`prepare`
  is the same as a tuple ``(X, y, feature_names, env_labels)``. The rules (docs/PROTOCOL.md,
  "Own tables"), chosen to never guess silently -- everything done to the table is a
  :class:`TableWarning` note, everything refused an OodfsError naming the column:

  - the **target** must be numeric (booleans count as 0/1). Rows whose target is missing are
    dropped, with a note; an infinite target is an error. ``target_transform`` ``"log"`` /
    ``"log1p"`` transforms it (prices, counts).
  - **column roles**: numeric and boolean columns are numbers; text and pandas ``category``
    columns are categorical, and so is every column named in ``categorical_columns`` (an
    integer-coded category: its levels are ordered by value). A column that looks like an
    **identifier** -- text with a different value in every row; whole numbers with a
    different value in every row that span at most 2n consecutive values; whole numbers that
    never decrease (or never increase) down the table taking more than n/10 values -- is left
    out with a note unless named in ``keep`` or ``features``. Text that reads as **dates** is
    refused (``dates="convert"``: decimal years, as are datetime columns). A numeric column
    whose correlation or rank correlation with the target exceeds 0.99 in absolute value (a
    **near-copy** of the target, or a monotone transform of it) is refused unless named in
    ``keep``. Columns holding **identical values** are noted.
  - **categorical** columns are one-hot encoded by scikit-learn's ``OneHotEncoder(drop="first")``:
    a column with L levels becomes L - 1 0/1 columns named ``column=level``; the first level
    (sorted text order; a pandas category's declared order; declared integer codes by value)
    is the reference, implied when all of them are 0. Dropping it keeps the design full rank,
    so the least-squares scores that rank features for ``ols``, ``dwr`` and ``srdo`` are
    identifiable. A column with a single level becomes one constant column of 1s. A column
    with more than ``max_levels`` levels is an error naming it. ``categorical="error"``
    refuses categorical columns instead, naming them.
  - **missing values** in a feature or the environment column are an error naming every
    affected column and how many values are missing, unless ``dropna="rows"``, which drops
    those rows with a note saying how many. No imputation is ever done: any imputation is a
    modelling choice that changes what the selectors see.
  - nested values (lists, records: parquet can hold them) are errors.
  - the **environment column** (if any) is never a feature; its values become string labels.
* :func:`fitted_features` -- the rule shared by ``oodfs select`` and ``oodfs bench``: a feature
  with fewer than ``min_level_rows`` (10) of the fitting rows off its most common value (an
  absent or rare one-hot level, a constant column) is left out of a method's fit and scores 0.
* :func:`rank_features` -- run any registered selector and return its ranking as a DataFrame
  ``(rank, feature, score, selected)``; ``group_levels`` adds the ranking of the original
  variables (:func:`group_levels`), ``evaluate`` the downstream RMSE on each held-out
  environment (:func:`evaluate_selection`). Features are standardised (mean 0, sd 1 over the
  rows used) before fitting unless ``standardize_features=False``: the coefficient-based scores
  (ols, lasso, dwr, srdo) are on the raw feature scale, so without this a feature measured in
  square feet would outrank one counted in bathrooms for its units alone. With ``env_column``
  and ``train_envs`` only the rows of those environments are used to fit.
"""

from __future__ import annotations

import inspect
import os
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from sklearn.utils.validation import check_is_fitted, validate_data

from oodfs.contract.api import check_scores, ranking_from_scores, support_mask
from oodfs.validation import OodfsError, RunAborted, check_limit, check_param

CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz", ".tsv", ".tsv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
CATEGORICAL_MODES = ("onehot", "error")
DATE_MODES = ("refuse", "convert")
DROPNA_MODES = (None, "rows")
TARGET_TRANSFORMS = (None, "log", "log1p")
#: how ``group_levels`` turns the scores of a variable's levels into the variable's score
GROUP_AGGREGATES = ("max", "sum")
#: downstream models of ``evaluate``: oodfs's downstream MLP, scikit-learn's RidgeCV
DOWNSTREAM_MODELS = ("mlp", "ridge")
#: RidgeCV's penalties (efficient leave-one-out choice among them)
RIDGE_ALPHAS = tuple(float(a) for a in np.logspace(-3, 3, 13))
#: a categorical column with more levels than this is refused (an id, a date read as text, ...)
MAX_LEVELS = 50
#: a feature needs this many of the fitting rows off its most common value to be fitted
#: (docs/PROTOCOL.md, "Own tables": DWR's weights fail on a 0/1 column with a few ones)
MIN_LEVEL_ROWS = 10
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

    oodfs_label = "note"  # printed as `oodfs: note: ...` (oodfs.validation.one_line_warning)


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
    """The column names as written in the file (pandas renames a repeated CSV name ``a.1``),
    read with the standard library: pandas takes minutes and gigabytes for a header of 10**6
    names, this reads it in about a second."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    import csv

    with _open_text(path) as text:
        row = next(csv.reader(text, delimiter="\t" if fmt == "tsv" else ","), [])
    return [name for name in row if name]  # blank names become "Unnamed: i"


def _open_text(path: Path):
    """A CSV/TSV file as text, decompressed by its suffix as pandas does."""
    import bz2
    import gzip
    import io
    import lzma
    import zipfile

    name = path.name.lower()
    if name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    if name.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8", newline="")
    if name.endswith(".xz"):
        return lzma.open(path, "rt", encoding="utf-8", newline="")
    if name.endswith(".zip"):
        archive = zipfile.ZipFile(path)
        members = archive.namelist()
        if len(members) != 1:
            raise OodfsError(f"{path}: a zip file must hold exactly one table, it holds {len(members)} files")
        return io.TextIOWrapper(archive.open(members[0]), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _repeated(names) -> list:
    """The names that appear more than once, in order (counted once: linear in the header)."""
    counts = Counter(names)
    return [n for n in counts if counts[n] > 1]


def read_table(path) -> pd.DataFrame:
    """A CSV/TSV or parquet file (chosen by suffix) as a DataFrame, or one clear OodfsError."""
    if "\0" in str(path):  # the system cannot open it: Path.exists would raise ValueError
        raise OodfsError(f"{str(path)!r}: a file name cannot hold a NUL character")
    path = Path(path)
    fmt = table_format(path)
    if not path.exists():
        raise OodfsError(f"{path} does not exist")
    if path.is_dir():
        raise OodfsError(f"{path} is a folder, not a table file")
    if path.stat().st_size == 0:
        raise OodfsError(f"{path} is empty (0 bytes)")
    try:
        header = _header(path, fmt)
        check_limit("columns", len(header), f"the number of columns of {path}")
        repeated = _repeated(header)
        if not repeated:
            if fmt == "parquet":
                df = pd.read_parquet(path)
            else:
                df = pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", low_memory=False)
    except OodfsError:
        raise
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
    for column in [c for c in df.columns if pd.api.types.is_object_dtype(df[c])]:
        # pandas leaves an integer beyond float's range (a cell of 10**400) as a Python int in a
        # text column: it is a number too large, +-inf, which the checks of infinite values name
        if any(isinstance(v, int) and not isinstance(v, bool) for v in df[column]):
            numbers = _to_numeric(df[column])
            if numbers.notna().sum() == df[column].notna().sum():  # numbers only (not a text column)
                df[column] = numbers
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


def _beyond_float(v):
    """An integer too large for a float (a CSV cell of 10**400) as +-inf, which the checks of
    infinite values then name; anything else as it is."""
    if isinstance(v, int) and not isinstance(v, bool):
        try:
            return float(v)
        except OverflowError:
            return float("inf") if v > 0 else float("-inf")
    return v


def _to_numeric(s: pd.Series) -> pd.Series:
    """``pd.to_numeric(s, errors="coerce")``, also for a column holding an integer beyond float's
    range (pandas raises OverflowError there)."""
    try:
        return pd.to_numeric(s, errors="coerce")
    except OverflowError:
        return pd.to_numeric(s.map(_beyond_float), errors="coerce")


def _first_non_numeric(s: pd.Series) -> tuple[object, object] | None:
    """(row label, value) of the first non-missing value that is not a number, if any."""
    coerced = _to_numeric(s)
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
    if first is None or _to_numeric(s).notna().mean() < 0.5:
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


# -- column roles ----------------------------------------------------------------------------
#: a numeric column whose |correlation| or |rank correlation| with the target exceeds this is a
#: near-copy of the target (the target in other units, or a monotone transform of it)
NEAR_COPY_CORR = 0.99
#: dates written as text: ISO (2020-01-31, 2020-01, with a time), 2020/01/31, 01/31/2020
_DATE_PATTERNS = (
    (
        r"\d{4}-\d{1,2}(?:-\d{1,2})?(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?",
        "ISO8601",
    ),
    (r"\d{4}/\d{1,2}/\d{1,2}", "%Y/%m/%d"),
    (r"\d{1,2}/\d{1,2}/\d{4}", "%m/%d/%Y"),
    (r"\d{1,2}/\d{1,2}/\d{4}", "%d/%m/%Y"),
)


def short_list(items, limit: int = 8) -> str:
    """``'a', 'b', 'c'``; a long list is cut after ``limit`` items: ``..., and 102 more``."""
    items = [i if isinstance(i, str) and i.startswith("'") else repr(i) for i in items]
    if len(items) <= limit:
        return ", ".join(items)
    return f"{', '.join(items[:limit])}, ... and {len(items) - limit} more"


def _text_dates(s: pd.Series) -> pd.Series | None:
    """A text column as datetimes when every value is a date written as text, else None."""
    if not (_is_categorical(s) or pd.api.types.is_string_dtype(s)) or _is_nested(s):
        return None
    text = s.dropna().astype(str).str.strip()
    if text.empty:
        return None
    for pattern, fmt in _DATE_PATTERNS:
        if not text.str.fullmatch(pattern).all():
            continue
        parsed = pd.to_datetime(text, errors="coerce", format=fmt)
        if parsed.notna().all():
            if getattr(parsed.dt, "tz", None) is not None:
                parsed = parsed.dt.tz_convert(None)
            return parsed.reindex(s.index)
    return None


def decimal_years(t: pd.Series) -> pd.Series:
    """Datetimes as decimal years (2020-07-02 12:00 -> 2020.5): a number that keeps the unit
    people read dates in."""
    t = pd.Series(pd.to_datetime(t))
    if t.dt.tz is not None:
        t = t.dt.tz_convert(None)
    day = t.dt.dayofyear - 1 + (t - t.dt.normalize()).dt.total_seconds() / 86400
    return (t.dt.year + day / (365 + t.dt.is_leap_year.astype(int))).astype(float)


def _id_reason(s: pd.Series) -> str:
    """Why a column looks like an identifier (row numbers, record or group ids, names), or ''."""
    n = len(s)
    if n < 3 or s.isna().any() or pd.api.types.is_bool_dtype(s):
        return ""
    if _is_categorical(s):  # (a number column with a stray "?" is reported as such, later)
        return (
            "a different text value in every row"
            if s.astype(str).nunique() == n and not _mostly_numeric(s)
            else ""
        )
    if not pd.api.types.is_numeric_dtype(s):
        return ""
    x = s.to_numpy(dtype=float)
    if not np.isfinite(x).all() or not np.array_equal(x, np.round(x)):
        return ""
    distinct = np.unique(x).size
    with np.errstate(over="ignore"):  # values near 1.8e308: a span of inf is no row numbering
        span = x.max() - x.min() + 1
    if distinct == n and span <= 2 * n:
        return "whole numbers, a different one in every row"
    rising, falling = (x[1:] >= x[:-1]).all(), (x[1:] <= x[:-1]).all()  # compared, not subtracted
    if distinct > max(2, n / 10) and (rising or falling):
        return f"whole numbers that only ever {'increase' if rising else 'decrease'} down the table"
    return ""


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    if (a == a[0]).all() or (b == b[0]).all():  # constant (np.ptp overflows near 1.8e308)
        return 0.0
    with np.errstate(all="ignore"):  # an infinite value: no correlation here, the checks name it
        # scaled into [-1, 1] first: squares of values near 1e+-300 would overflow or underflow
        a, b = a / np.abs(a).max(), b / np.abs(b).max()
        r = np.corrcoef(a, b)[0, 1]
    return float(r) if np.isfinite(r) else 0.0


def _copy_strength(x: np.ndarray, targets: list[np.ndarray]) -> float:
    """The largest |correlation| of ``x`` with any of ``targets`` (the target before and after
    its transform) and |rank correlation| with the first: a monotone transform of the target
    has rank correlation 1 whatever the transform."""
    ranks = pd.Series(x).rank().to_numpy()
    values = [abs(_correlation(x, t)) for t in targets]
    values.append(abs(_correlation(ranks, pd.Series(targets[0]).rank().to_numpy())))
    return max(values)


def _identical_groups(frame: pd.DataFrame) -> list[list[str]]:
    """Groups of columns holding the same values in every row (numbers compared as numbers)."""
    groups: dict[tuple, list[str]] = {}
    for c in frame.columns:
        s = frame[c]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            key = ("number", s.to_numpy(dtype=float).tobytes())
        else:
            key = ("text", tuple(s.astype(str)))
        groups.setdefault(key, []).append(c)
    return [g for g in groups.values() if len(g) > 1]


def _declared_categorical(s: pd.Series) -> pd.Series:
    """A column declared categorical as a pandas category: integer codes ordered by value, so
    that the lowest code is the reference level (text keeps its sorted order)."""
    if isinstance(s.dtype, pd.CategoricalDtype) or _is_categorical(s):
        return s
    values = pd.unique(s.dropna())
    try:
        values = sorted(values)
    except TypeError:
        pass
    labels = {v: _number_text(v) for v in values}
    return pd.Series(
        pd.Categorical(s.map(labels), categories=list(dict.fromkeys(labels.values()))), index=s.index
    )


def _number_text(v) -> str:
    """1 and 1.0 -> "1"; 2.5 -> "2.5"; True -> "True"."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, float, np.integer, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


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
        with np.errstate(over="ignore", invalid="ignore"):  # scikit-learn's finiteness check sums X
            X = validate_data(self, X, dtype=float, order="F")
        _, exponent = np.frexp(np.abs(X).max(axis=0))  # max = f * 2**exponent, 0.5 <= f < 1
        self.exponent_ = exponent  # 0 for an all-zero column
        with np.errstate(over="ignore"):  # 2**1024 (a column near 1.8e308) is inf as a float
            self.scale_ = np.ldexp(1.0, exponent)
        return self

    def transform(self, X):
        check_is_fitted(self)
        with np.errstate(over="ignore", invalid="ignore"):
            X = validate_data(self, X, dtype=float, reset=False, order="F")
        # X * 2**-exponent, computed without 2**exponent itself (which overflows for 1e308)
        return np.asfortranarray(np.ldexp(X, -self.exponent_))


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


def transform_target(y: np.ndarray, transform, target) -> np.ndarray:
    """``y`` under ``transform`` (None/"none", "log", "log1p"), or an OodfsError naming the
    values it cannot take."""
    if transform in (None, "none"):
        return y
    if transform not in TARGET_TRANSFORMS:
        raise OodfsError(
            f"target_transform must be one of {', '.join(map(str, TARGET_TRANSFORMS))}, got {transform!r}"
        )
    if transform == "log":
        if (y <= 0).any():
            raise OodfsError(
                f"target_transform 'log' needs a positive target; {target!r} has "
                f"{int((y <= 0).sum())} values <= 0 (use 'log1p' for counts)"
            )
        return np.log(y)
    if (y <= -1).any():
        raise OodfsError(
            f"target_transform 'log1p' needs a target > -1; {target!r} has "
            f"{int((y <= -1).sum())} values <= -1"
        )
    return np.log1p(y)


def _column_list(value, what: str) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise OodfsError(f"{what} must be a list of column names, got {value!r}") from None


@dataclass
class PreparedTable:
    """A table made ready for a selector (:func:`prepare_table`).

    ``X`` (n, d) floats and ``y`` (n,) (transformed if asked); ``names`` the d feature names;
    ``variables`` the column each feature comes from (``kind`` for ``kind=house``);
    ``env`` the environment label of each row (strings) or None; ``rows_in_table`` the rows
    read; ``notes`` what was done or noticed, one line each (also issued as
    :class:`TableWarning`); ``excluded`` ``{column: why}`` for columns that are not features.
    """

    X: np.ndarray
    y: np.ndarray
    names: list[str]
    variables: list[str]
    env: np.ndarray | None
    rows_in_table: int
    notes: list[str] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)


def prepare_table(
    df: pd.DataFrame,
    target,
    env_column=None,
    *,
    categorical: str = "onehot",
    categorical_columns=(),
    drop=(),
    features=None,
    keep=(),
    dates: str = "refuse",
    dropna=None,
    max_levels: int = MAX_LEVELS,
    standardize: bool = False,
    target_transform=None,
) -> PreparedTable:
    """A DataFrame made ready for a selector, by the rules of the module docstring.

    ``drop`` lists columns to leave out; ``features`` (if given) the only columns to use;
    ``categorical_columns`` columns to one-hot encode although they hold numbers; ``keep``
    columns to use although they look like an identifier or a copy of the target; ``dates``
    ``"refuse"`` (default) or ``"convert"`` (decimal years); ``dropna`` None (missing values
    are an error) or ``"rows"`` (drop incomplete rows, with a note); ``target_transform`` None,
    ``"log"`` or ``"log1p"``; ``standardize`` scales every feature to mean 0, sd 1 over all
    the rows kept. None of these may name the target or the environment column.
    """
    if not isinstance(df, pd.DataFrame):
        raise OodfsError(f"expected a pandas DataFrame, got {type(df).__name__}")
    if categorical not in CATEGORICAL_MODES:
        raise OodfsError(f"categorical must be one of {', '.join(CATEGORICAL_MODES)}, got {categorical!r}")
    if dates not in DATE_MODES:
        raise OodfsError(f"dates must be one of {', '.join(DATE_MODES)}, got {dates!r}")
    if dropna not in DROPNA_MODES:
        raise OodfsError(f"dropna must be None or 'rows', got {dropna!r}")
    if target_transform not in TARGET_TRANSFORMS + ("none",):
        raise OodfsError(
            f"target_transform must be one of {', '.join(map(str, TARGET_TRANSFORMS))}, "
            f"got {target_transform!r}"
        )
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
    drop = _column_list(drop, "drop")
    keep = _column_list(keep, "keep")
    declared = _column_list(categorical_columns, "categorical_columns")
    for cols, role in ((drop, "dropped"), (keep, "kept"), (declared, "categorical")):
        for col in cols:
            _require_column(df, col, role)
    reserved = {target} | ({env_column} if env_column is not None else set())
    for cols, what in ((keep, "kept"), (declared, "declared categorical")):
        clash = [c for c in cols if c in reserved or c in drop]
        if clash:
            role = "dropped" if clash[0] in drop else "the target or environment column"
            raise OodfsError(f"{clash[0]!r} is {role} and cannot also be {what}")
    if features is not None:
        features = _column_list(features, "features")
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
    outside = [c for c in keep + declared if c not in columns]
    if outside:
        raise OodfsError(f"{outside[0]!r} is not among the feature columns (it is not listed in features)")

    notes: list[str] = []
    excluded: dict[str, str] = {}

    def note(text: str) -> None:
        notes.append(text)
        warnings.warn(text, TableWarning, stacklevel=3)

    _check_not_nested(df, [target] + ([env_column] if env_column is not None else []))
    y = _target_vector(df, target)
    if np.isinf(y).any():
        raise OodfsError(
            f"target column {target!r} has infinite values (row {df.index[np.isinf(y).nonzero()[0][0]]})"
        )
    keep_rows = ~np.isnan(y)
    if not keep_rows.any():
        raise OodfsError(f"target column {target!r} has no values (all missing)")
    if not keep_rows.all():
        note(f"dropped {int((~keep_rows).sum())} of {len(y)} rows whose target {target!r} is missing")

    # missing values: an error naming the columns, or (dropna="rows") the rows go
    checked = columns + ([env_column] if env_column is not None else [])
    missing = df.loc[keep_rows, checked].isna()
    counts = {c: int(n) for c, n in missing.sum().items() if n}
    if counts:
        listed = short_list([f"{c!r} ({n} missing)" for c, n in counts.items()])
        if dropna != "rows":
            if env_column in counts and len(counts) == 1:
                raise OodfsError(
                    f"environment column {env_column!r} has {counts[env_column]} missing values; "
                    "fill them in or drop those rows (dropna='rows', --dropna rows)"
                )
            raise OodfsError(
                f"column(s) with missing values: {listed}; oodfs does not impute -- fill them in, "
                "drop the column(s) (--drop), or drop the incomplete rows (dropna='rows', --dropna rows)"
            )
        incomplete = np.zeros(len(y), dtype=bool)
        incomplete[np.flatnonzero(keep_rows)[missing.any(axis=1).to_numpy()]] = True
        note(
            f"dropped {int(incomplete.sum())} of {int(keep_rows.sum())} rows with a missing value in {listed}"
        )
        keep_rows &= ~incomplete
        if not keep_rows.any():
            raise OodfsError("no rows left after dropping the rows with a missing value")

    sub = df.loc[keep_rows, columns].copy()
    sub.columns = [str(c) for c in sub.columns]
    repeated = _repeated(list(sub.columns))
    if repeated:  # e.g. the column 1 and the column "1"
        raise OodfsError(f"two columns are both named {repeated[0]!r} as text; rename one")
    keep, declared = [str(c) for c in keep], [str(c) for c in declared]
    explicit = set(keep) | set(declared) | {str(c) for c in (features or ())}
    y_raw = y[keep_rows]
    y = transform_target(y_raw, target_transform, target)

    env_labels = None
    if env_column is not None:
        env_labels = df.loc[keep_rows, env_column].astype(str).to_numpy(dtype=object)

    _check_not_nested(sub, sub.columns)
    for c in declared:
        sub[c] = _declared_categorical(sub[c])
    # dates: refused, or converted on request (never one-hot encoded as text)
    dated = {
        c: (sub[c] if _is_datetime(sub[c]) else _text_dates(sub[c])) for c in sub.columns if c not in declared
    }
    dated = {c: t for c, t in dated.items() if t is not None}
    if dated:
        if dates != "convert":
            first = next(iter(dated))
            raise OodfsError(
                f"column(s) {short_list(list(dated))} hold dates or times "
                f"(e.g. {str(df.loc[keep_rows, first].iloc[0])!r}); "
                "drop them (--drop), or use them as numbers with dates='convert' (--dates convert: "
                "decimal years, 2020-07-02 -> 2020.5; durations in days)"
            )
        for c, t in dated.items():
            sub[c] = (
                t.dt.total_seconds() / 86400 if pd.api.types.is_timedelta64_dtype(t) else decimal_years(t)
            )
        note(
            f"converted date/time column(s) {short_list(list(dated))} to numbers "
            "(decimal years; durations in days)"
        )

    # identifiers: left out with a note unless kept
    ids = {c: r for c in sub.columns if c not in explicit for r in [_id_reason(sub[c])] if r}
    if ids:
        excluded.update({c: f"looks like an identifier: {r}" for c, r in ids.items()})
        note(
            "left out column(s) that look like identifiers: "
            f"{short_list([f'{c!r} ({r})' for c, r in ids.items()], 4)}; "
            "use one as a feature with keep=[...] (--keep)"
        )
        sub = sub.drop(columns=list(ids))
        if sub.shape[1] == 0:
            raise OodfsError(
                "no feature columns left: every column looks like an identifier; "
                f"keep the ones that are features with keep=[...] (--keep {','.join(ids)})"
            )

    # near-copies of the target: refused unless kept
    targets = [y_raw] if y is y_raw else [y_raw, y]
    copies = {}
    for c in sub.columns:
        s = sub[c]
        if c in keep or _is_categorical(s):
            continue
        strength = _copy_strength(s.to_numpy(dtype=float), targets)
        if strength > NEAR_COPY_CORR:
            copies[c] = strength
    if copies:
        listed = short_list([f"{c!r} ({v:.3f})" for c, v in copies.items()])
        raise OodfsError(
            f"column(s) {listed} are near-copies of the target {target!r} (|correlation| or |rank "
            f"correlation| > {NEAR_COPY_CORR}): a selector would rank them first and say nothing "
            f"else; drop them (--drop {','.join(copies)}) or keep them on purpose (keep=[...], --keep)"
        )

    same = _identical_groups(sub)
    if same:
        groups = [
            "=".join(map(repr, g[:3])) + (f"=... ({len(g)} columns)" if len(g) > 3 else "") for g in same
        ]
        note(
            f"columns with identical values: {short_list(groups, 4)}; both are features and get the same "
            "score (drop one with --drop)"
        )

    encoder = make_encoder(sub, categorical, max_levels, standardize=False)
    X = np.asarray(encoder.fit_transform(sub), dtype=float)
    try:
        names = [str(n) for n in encoder.get_feature_names_out()]
    except ValueError:  # scikit-learn refuses two output columns with one name
        raise OodfsError(
            f"two features would both be named {_repeated(_encoded_names(encoder))[0]!r} after "
            "one-hot encoding; rename a column"
        ) from None
    variables = _encoded_variables(encoder)
    if standardize:
        X = make_scaler().fit_transform(X)
    return PreparedTable(X, y, names, variables, env_labels, len(df), notes, excluded)


def prepare(
    df: pd.DataFrame,
    target,
    env_column=None,
    categorical: str = "onehot",
    drop=(),
    features=None,
    max_levels: int = MAX_LEVELS,
    standardize: bool = False,
    **options,
):
    """``(X, y, feature_names, env_labels)``: :func:`prepare_table` as a tuple (the same
    arguments; ``options`` are its other keywords)."""
    t = prepare_table(
        df,
        target,
        env_column,
        categorical=categorical,
        drop=drop,
        features=features,
        max_levels=max_levels,
        standardize=standardize,
        **options,
    )
    return t.X, t.y, t.names, t.env


def _encoded_names(encoder) -> list[str]:
    """The output names of a fitted encoder even when two clash (scikit-learn then refuses)."""
    return [name for name, _ in _encoded_parts(encoder)]


def _encoded_variables(encoder) -> list[str]:
    """The input column of each output column of a fitted encoder."""
    return [variable for _, variable in _encoded_parts(encoder)]


def _encoded_parts(encoder) -> list[tuple[str, str]]:
    """(output name, input column) of every output column of a fitted encoder."""
    ct = encoder.named_steps["encode"] if isinstance(encoder, Pipeline) else encoder
    parts = []
    for _, trans, cols in ct.transformers_:
        if trans == "drop":
            continue
        if isinstance(trans, Pipeline) and "onehot" in trans.named_steps:  # one column, its levels
            parts += [(str(n), str(cols[0])) for n in trans.get_feature_names_out(cols)]
        else:  # passed through (scikit-learn may have replaced "passthrough" by a transformer)
            parts += [(str(c), str(c)) for c in cols]
    return parts


# -- which features a method is fitted on ---------------------------------------------------
def fitted_features(X: np.ndarray, min_rows: int = MIN_LEVEL_ROWS) -> np.ndarray:
    """Mask of the columns a method is fitted on: those with at least ``min_rows`` rows off
    their most common value (docs/PROTOCOL.md, "Own tables"). The others -- a constant
    column, a one-hot level absent from these rows or present in only a few of them -- carry
    (almost) no information here, and make weighted least squares fail (DWR's weights can put
    no mass on 3 rows of 400); they are left out of the fit and score 0. ``oodfs select``
    applies it to the training rows, ``oodfs bench`` to each training draw. On fewer than
    ``min_rows + 1`` rows the bar is n - 1 rows: a column with a different value in every row
    is always fitted."""
    X = np.asarray(X)
    n = X.shape[0]
    needed = max(1, min(min_rows, n - 1))  # on fewer rows, a column with n distinct values counts
    keep = np.zeros(X.shape[1], dtype=bool)
    for j in range(X.shape[1]):
        _, counts = np.unique(X[:, j], return_counts=True)
        keep[j] = n - counts.max() >= needed
    return keep


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
            f"feature column(s) {short_list(big)} have values beyond +-{MAX_ABS_VALUE:.3g}, "
            "which selectors computing in 32-bit floats (trees, xgb, neural nets) turn into inf; "
            "standardise them (drop --no-standardize) or rescale them"
        )
    if np.abs(y).max() > MAX_ABS_VALUE:
        raise OodfsError(
            f"target column {target!r} has values beyond +-{MAX_ABS_VALUE:.3g}, which selectors "
            "computing in 32-bit floats turn into inf; rescale it (e.g. to other units or its log)"
        )


def _fit_scores(
    cls,
    kwargs: dict,
    X: np.ndarray,
    y: np.ndarray,
    names: list[str],
    method: str,
    isolate: bool,
    labels: dict | None = None,
):
    """(scores, the parameters used): the selector fitted in a forked child (as ``bench`` fits
    a method: a plugin that exits or crashes gives one line), or here with ``isolate=False``.
    ``labels``: ``{"groups": environment per row}`` for a method that learns from them."""

    def fit():
        selector = cls(**kwargs)
        try:
            # a DataFrame, so that a selector that keeps feature names (feature_names_in_) has them
            selector.fit(pd.DataFrame(X, columns=names), y, **(labels or {}))
        except OodfsError as exc:
            return "refused", str(exc)
        except (ValueError, ArithmeticError) as exc:  # numbers the selector's library refused
            return "failed", _one_line(exc)
        used = {p: v for p, v in selector.get_params(deep=False).items() if p not in ("k", "random_state")}
        if getattr(selector, "scores_", None) is None:
            return "refused", f"selector {method!r} set no scores_ in fit"
        try:  # a plugin that overrides fit() sets scores_ itself: one per feature, finite
            return "ok", (check_scores(selector.scores_, len(names), f"selector {method!r}"), used)
        except (OodfsError, TypeError) as exc:
            return "refused", str(exc)

    if isolate and hasattr(os, "fork"):
        from oodfs.run.executors.isolation import call_isolated

        try:
            status, result = call_isolated(fit)
        except OodfsError as exc:  # the child died, exited or raised something else
            raise RunAborted(f"selector {method!r} failed: {exc}") from None
    else:
        status, result = fit()
    if status == "refused":
        raise OodfsError(_named(result, names))
    if status == "failed":
        raise OodfsError(f"selector {method!r} cannot rank this table: {_named(result, names)}")
    return result


def rank_variables(
    ranking: pd.DataFrame, variables: dict, k: int, aggregate: str = "max", random_state: int = 0
) -> pd.DataFrame:
    """Rank the original variables of a feature ranking and select whole variables.

    ``ranking`` has columns ``feature``, ``score`` and ``fitted`` (False: left out of the fit);
    ``variables`` maps each feature to its variable (``kind=house`` -> ``kind``). A variable's
    score is the largest score of its levels (``aggregate="max"``: a variable matters as much
    as its most important level, whatever its number of levels) or their sum (``"sum"``, as
    tree importances add up; it favours variables with many levels). The top ``k`` variables
    with a score above 0 are selected (ties in a seeded order). Returns ``(rank, variable,
    score, selected, features)``, best first.
    """
    if aggregate not in GROUP_AGGREGATES:
        raise OodfsError(f"group_levels must be one of {', '.join(GROUP_AGGREGATES)}, got {aggregate!r}")
    by_var: dict[str, list] = {}
    for r in ranking.itertuples():
        by_var.setdefault(variables[r.feature], []).append(r)
    names = list(by_var)
    scores = np.array([getattr(np, aggregate)([r.score for r in by_var[v]]) for v in names], dtype=float)
    fitted = np.array([any(r.fitted for r in by_var[v]) for v in names])
    if not 1 <= k <= len(names):
        raise OodfsError(f"top_k must be between 1 and the number of variables ({len(names)}), got {k}")
    order = _order(scores, fitted, random_state)
    selected = support_mask(np.where(fitted, scores, 0.0), order[fitted[order]], k) & fitted
    return pd.DataFrame(
        {
            "rank": np.arange(1, len(names) + 1),
            "variable": [names[j] for j in order],
            "score": scores[order],
            "selected": selected[order],
            "features": [[r.feature for r in by_var[names[j]]] for j in order],
        }
    )


def _order(scores: np.ndarray, fitted: np.ndarray, random_state: int) -> np.ndarray:
    """Best first, ties in a seeded order (as :func:`oodfs.ranking_from_scores`), every feature
    left out of the fit after every fitted one."""
    ranking = ranking_from_scores(scores, random_state)
    return ranking[np.argsort(~fitted[ranking], kind="stable")]


def _downstream_rmse(model: str, Xtr, ytr, tests, subsets, seed: int) -> np.ndarray:
    """RMSE of the downstream ``model`` trained on each subset, per test set: (subsets, tests)."""
    if model == "mlp":
        from oodfs.run.downstream import fit_downstream

        models = fit_downstream(Xtr, ytr, subsets, seed)
        return np.column_stack([models.rmse(X, y) for X, y in tests])
    from sklearn.linear_model import RidgeCV

    out = np.empty((len(subsets), len(tests)))
    for i, cols in enumerate(subsets):
        cols = list(cols)
        fit = RidgeCV(alphas=RIDGE_ALPHAS).fit(Xtr[:, cols], ytr)
        out[i] = [np.sqrt(np.mean((fit.predict(X[:, cols]) - y) ** 2)) for X, y in tests]
    return out


def evaluate_selection(
    X: np.ndarray,
    y: np.ndarray,
    env: np.ndarray,
    train_envs,
    selected,
    downstream: str = "mlp",
    random_state: int = 0,
) -> pd.DataFrame:
    """Downstream RMSE on each held-out environment: a model trained on the rows of
    ``train_envs`` with the ``selected`` columns (a mask or indices), with every column, and the
    training mean as a yardstick. ``downstream``: ``"mlp"`` (oodfs's downstream MLP, the
    benchmark's regressor) or ``"ridge"`` (scikit-learn's RidgeCV over :data:`RIDGE_ALPHAS`).
    ``X`` is used as given (standardise it as the selector saw it). Returns ``(env, rows,
    rmse_selected, rmse_all, rmse_mean)``, one row per held-out environment in label order."""
    if downstream not in DOWNSTREAM_MODELS:
        raise OodfsError(f"downstream must be one of {', '.join(DOWNSTREAM_MODELS)}, got {downstream!r}")
    env = np.asarray(env).astype(str)
    train = np.isin(env, [str(e) for e in train_envs])
    held_out = [e for e in dict.fromkeys(env) if e not in set(env[train])]
    if not held_out:
        raise OodfsError("nothing to evaluate on: every environment is a training environment (--train-envs)")
    selected = np.asarray(selected)
    cols = np.flatnonzero(selected) if selected.dtype == bool else np.asarray(selected, dtype=int)
    if cols.size == 0:
        raise OodfsError("no feature is selected (every score is 0), so there is nothing to evaluate")
    tests = [(X[env == e], y[env == e]) for e in held_out]
    rmse = _downstream_rmse(
        downstream, X[train], y[train], tests, [tuple(cols), tuple(range(X.shape[1]))], random_state
    )
    mean = y[train].mean()
    return pd.DataFrame(
        {
            "env": held_out,
            "rows": [len(t[1]) for t in tests],
            "rmse_selected": rmse[0],
            "rmse_all": rmse[1],
            "rmse_mean": [float(np.sqrt(np.mean((t[1] - mean) ** 2))) for t in tests],
        }
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
    *,
    categorical_columns=(),
    keep=(),
    dates: str = "refuse",
    dropna=None,
    target_transform=None,
    min_level_rows: int = MIN_LEVEL_ROWS,
    group_levels: str | None = None,
    evaluate: bool = False,
    downstream: str = "mlp",
    isolate: bool = True,
) -> pd.DataFrame:
    """Rank every feature of a table with the selector ``method``.

    ``data`` is a DataFrame or a path (:func:`read_table`); it is prepared by
    :func:`prepare_table` (``categorical``, ``categorical_columns``, ``drop``, ``keep``,
    ``dates``, ``dropna``, ``max_levels``, ``target_transform`` are its options). Returns a
    DataFrame with columns ``rank`` (1 = most important), ``feature``, ``score`` (the selector's
    score, higher = more important) and ``selected``, best first. ``selected`` marks the top
    ``top_k`` (default: the selector's own default ``k``, usually 5, at most the number of
    features) among the features with a score above 0: a feature the method gave 0 is never
    selected, so fewer than ``top_k`` may be. ``df.attrs`` holds what was done (method, params,
    rows used, notes, ...).

    ``env_column``: a column of environment labels, never used as a feature. ``train_envs``:
    labels (compared as text) whose rows alone are used to fit; needs ``env_column``.
    ``params``: the selector's parameters (``oodfs plugins`` lists selectors; see their
    docstrings). ``random_state``: an integer from 0 to 2**32 - 1. Features are standardised
    over the rows used unless ``standardize_features=False``. A feature with fewer than
    ``min_level_rows`` of the rows used off its most common value is left out of the fit,
    scored 0 and ranked last (:func:`fitted_features`).

    ``group_levels`` (``"max"`` or ``"sum"``): rank the original variables too
    (:func:`rank_variables`; ``top_k`` then counts variables, and a feature is selected when its
    variable is) -- ``df.attrs["variables"]``. ``evaluate``: the downstream RMSE on every
    environment not in ``train_envs`` (:func:`evaluate_selection`, model ``downstream``) --
    ``df.attrs["evaluation"]``. ``isolate``: fit the selector in a forked child process.

    Notes (:class:`TableWarning`): what :func:`prepare_table` did, features left out of the fit,
    a constant target, no more rows than features.
    """
    from oodfs.contract.registry import registry

    cls = registry().get("selector", method)
    kwargs = _selector_params(cls, params)
    random_state = _check_seed(random_state)
    if (
        isinstance(min_level_rows, (bool, np.bool_))
        or not isinstance(min_level_rows, (int, np.integer))
        or min_level_rows < 1
    ):
        raise OodfsError(
            f"min_level_rows (--min-level-rows) must be a positive integer, got {min_level_rows!r}"
        )
    if downstream not in DOWNSTREAM_MODELS:
        raise OodfsError(
            f"downstream (--downstream) must be one of {', '.join(DOWNSTREAM_MODELS)}, got {downstream!r}"
        )
    if group_levels is not None and group_levels not in GROUP_AGGREGATES:
        raise OodfsError(
            f"group_levels (--group-levels) must be one of {', '.join(GROUP_AGGREGATES)}, "
            f"got {group_levels!r}"
        )
    df, source = _as_frame(data)
    if train_envs is not None and env_column is None:
        raise OodfsError("train_envs (--train-envs) needs env_column (--env-column)")
    if evaluate and (env_column is None or train_envs is None):
        raise OodfsError(
            "evaluate (--evaluate) needs env_column (--env-column) and train_envs (--train-envs): "
            "the selection is checked on the other environments"
        )
    table = prepare_table(
        df,
        target,
        env_column,
        categorical=categorical,
        categorical_columns=categorical_columns,
        drop=drop,
        keep=keep,
        dates=dates,
        dropna=dropna,
        max_levels=max_levels,
        target_transform=target_transform,
    )
    notes = list(table.notes)

    def note(text: str) -> None:
        notes.append(text)
        warnings.warn(text, TableWarning, stacklevel=3)

    X, y, names, env = table.X, table.y, table.names, table.env
    rows = np.ones(len(y), dtype=bool)
    wanted = None
    if train_envs is not None:
        wanted = [str(e) for e in ([train_envs] if isinstance(train_envs, (str, int, float)) else train_envs)]
        labels = list(dict.fromkeys(env))
        unknown = [e for e in wanted if e not in labels]
        if unknown:
            raise OodfsError(
                f"environment {unknown[0]!r} is not in column {env_column!r}; valid: {short_list(labels, 20)}"
            )
        rows = np.isin(env, wanted)
    n, d = int(rows.sum()), X.shape[1]
    if n < 2:
        raise OodfsError(f"need at least 2 rows to rank features, got {n}")
    # standardised over the rows used (the ones the selector sees)
    scaler = make_scaler().fit(X[rows]) if standardize_features else None
    Xs = scaler.transform(X) if scaler is not None else X
    fitted = fitted_features(Xs[rows], min_level_rows)
    if not fitted.any():
        raise OodfsError(
            f"no feature has {min_level_rows} or more of the rows used off its most common value; "
            "nothing to rank (use more rows, or lower min_level_rows / --min-level-rows)"
        )
    if not fitted.all():
        note(
            f"left out of the fit, ranked last with score 0 (fewer than {min_level_rows} of the {n} rows "
            "used differ from its most common value): "
            f"{short_list([names[j] for j in np.flatnonzero(~fitted)])}"
        )
    fit_names = [names[j] for j in np.flatnonzero(fitted)]
    Xfit, yfit = Xs[rows][:, fitted], y[rows]
    _check_magnitude(Xfit, yfit, fit_names, target)
    if np.ptp(yfit) == 0:
        note(
            f"the target {target!r} is constant ({yfit[0]:g}) on the rows used: no feature can predict it, "
            "so the ranking means nothing"
        )
    if n <= Xfit.shape[1]:
        note(
            f"{n} rows for {Xfit.shape[1]} features: with no more rows than features, least-squares "
            "coefficients (the ols, dwr and srdo scores) are not unique and their ranking is arbitrary; "
            "use more rows or fewer features"
        )
    variables = dict(zip(names, table.variables))
    n_units = len(dict.fromkeys(table.variables)) if group_levels else d
    k = min(int(_init_default(cls, "k", 5)), n_units) if top_k is None else int(top_k)
    if not 1 <= k <= n_units:
        what = "variables" if group_levels else "features"
        raise OodfsError(f"top_k must be between 1 and the number of {what} ({n_units}), got {top_k}")
    labels = {}
    if getattr(cls, "uses_groups", False):  # a label-using method gets the rows' environments
        if env is None:
            raise OodfsError(
                f"selector {method!r} learns from environment labels: name their column with --env-column"
            )
        labels = {"groups": np.asarray(env)[rows]}
    fit_scores, used = _fit_scores(
        cls,
        {**kwargs, "k": min(k, Xfit.shape[1]), "random_state": random_state},
        Xfit,
        yfit,
        fit_names,
        method,
        isolate,
        labels,
    )
    scores = np.zeros(d)
    scores[fitted] = fit_scores
    order = _order(scores, fitted, random_state)
    out = pd.DataFrame(
        {
            "rank": np.arange(1, d + 1),
            "feature": [names[j] for j in order],
            "score": scores[order],
            "fitted": fitted[order],
        }
    )
    grouped = None
    if group_levels:
        grouped = rank_variables(out, variables, k, group_levels, random_state)
        chosen = set(grouped.loc[grouped["selected"], "variable"])
        out["selected"] = [
            variables[f] in chosen and bool(fit) for f, fit in zip(out["feature"], out["fitted"])
        ]
    else:
        mask = support_mask(np.where(fitted, scores, 0.0), order[fitted[order]], k)
        out["selected"] = mask[order]
    evaluation = None
    if evaluate:
        chosen_cols = [names.index(f) for f in out.loc[out["selected"], "feature"]]
        evaluation = evaluate_selection(Xs, y, env, wanted, chosen_cols, downstream, random_state)
    out = out[["rank", "feature", "score", "selected"]].reset_index(drop=True)
    out.attrs.update(
        {
            "method": method,
            "params": used,
            "target": str(target),
            "source": source,
            "rows": n,
            "rows_in_table": table.rows_in_table,
            "features": d,
            "top_k": k,
            "env_column": env_column,
            "train_envs": wanted,
            "standardized": bool(standardize_features),
            "random_state": random_state,
            "target_transform": target_transform if target_transform != "none" else None,
            "left_out": [names[j] for j in np.flatnonzero(~fitted)],
            "excluded": dict(table.excluded),
            "notes": notes,
            "variables": grouped,
            "group_levels": group_levels,
            "evaluation": evaluation,
            "downstream": downstream if evaluate else None,
        }
    )
    return out
