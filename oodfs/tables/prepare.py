"""Preparing the user's table: column roles, checks, encoding, the target (docs/PROTOCOL.md,
"Own tables"), and which features a method is fitted on."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from sklearn.utils.validation import check_is_fitted, validate_data

from oodfs.tables.names import LEVEL_SEP, short_list
from oodfs.tables.read import TableWarning, _repeated, _to_numeric
from oodfs.validation import OodfsError

CATEGORICAL_MODES = ("onehot", "error")
DATE_MODES = ("refuse", "convert")
DROPNA_MODES = (None, "rows")
TARGET_TRANSFORMS = (None, "log", "log1p")
#: a categorical column with more levels than this is refused (an id, a date read as text, ...)
MAX_LEVELS = 50
#: a feature needs this many of the fitting rows off its most common value to be fitted
#: (docs/PROTOCOL.md, "Own tables": DWR's weights fail on a 0/1 column with a few ones)
MIN_LEVEL_ROWS = 10


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
    day = t.dt.day_of_year - 1 + (t - t.dt.normalize()).dt.total_seconds() / 86400
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
    _check_modes(df, categorical, dates, dropna, target_transform)
    columns, keep, declared, features = _columns(
        df, target, env_column, drop, keep, categorical_columns, features
    )
    notes: list[str] = []
    excluded: dict[str, str] = {}

    def note(text: str) -> None:  # called by the steps below: a warning where prepare_table was called
        notes.append(text)
        warnings.warn(text, TableWarning, stacklevel=4)

    y, keep_rows = _rows(df, target, env_column, columns, dropna, note)
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
    _convert_dates(sub, declared, dates, df.loc[keep_rows], note)
    sub = _leave_out_identifiers(sub, explicit, excluded, note)
    _refuse_copies(sub, keep, [y_raw] if y is y_raw else [y_raw, y], target)
    _note_identical(sub, note)
    X, names, variables = _encode(sub, categorical, max_levels, standardize)
    return PreparedTable(X, y, names, variables, env_labels, len(df), notes, excluded)


def _check_modes(df, categorical, dates, dropna, target_transform) -> None:
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


def _columns(df, target, env_column, drop, keep, categorical_columns, features):
    """(the feature columns, keep, the declared categorical columns, features), every name checked."""
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
    return columns, keep, declared, features


def _rows(df, target, env_column, columns, dropna, note):
    """(the target, the mask of the rows kept): rows without a target go, with a note; missing values
    are an error naming the columns, or (``dropna="rows"``) the incomplete rows go, with a note."""
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
                    f"fill them in or drop those rows ({DROPNA_ROWS})"
                )
            raise OodfsError(
                f"column(s) with missing values: {listed}; oodfs does not impute -- fill them in, "
                f"drop the column(s) (--drop), or drop the incomplete rows ({DROPNA_ROWS})"
            )
        incomplete = np.zeros(len(y), dtype=bool)
        incomplete[np.flatnonzero(keep_rows)[missing.any(axis=1).to_numpy()]] = True
        note(
            f"dropped {int(incomplete.sum())} of {int(keep_rows.sum())} rows with a missing value in {listed}"
        )
        keep_rows &= ~incomplete
        if not keep_rows.any():
            raise OodfsError("no rows left after dropping the rows with a missing value")
    return y, keep_rows


#: how a message names an option: the command line's flag and a suite file's parameter, never a
#: Python call (docs/PROTOCOL.md section 8)
DROPNA_ROWS = '--dropna rows, or dropna = "rows" in a suite\'s params'


def _keep_option(columns: list) -> str:
    """``--keep a,b, or keep = ["a", "b"] in a suite's params`` for these columns."""
    names = [str(c) for c in columns]
    toml = ", ".join(f'"{n}"' for n in names)
    return f"--keep {','.join(names)}, or keep = [{toml}] in a suite's params"


def _convert_dates(sub, declared, dates, kept, note) -> None:
    """Date and time columns of ``sub`` (``kept``: the table's rows kept) refused, or converted in place."""
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
                f"(e.g. {str(kept[first].iloc[0])!r}); "
                'drop them (--drop), or use them as numbers (--dates convert, or dates = "convert" in a '
                "suite's params: decimal years, 2020-07-02 -> 2020.5; durations in days)"
            )
        for c, t in dated.items():
            sub[c] = (
                t.dt.total_seconds() / 86400 if pd.api.types.is_timedelta64_dtype(t) else decimal_years(t)
            )
        note(
            f"converted date/time column(s) {short_list(list(dated))} to numbers "
            "(decimal years; durations in days)"
        )


def _leave_out_identifiers(sub, explicit, excluded, note):
    """``sub`` without the columns that look like identifiers (unless named), each with a note."""
    # identifiers: left out with a note unless kept
    ids = {c: r for c in sub.columns if c not in explicit for r in [_id_reason(sub[c])] if r}
    if ids:
        excluded.update({c: f"looks like an identifier: {r}" for c, r in ids.items()})
        note(
            "left out column(s) that look like identifiers: "
            f"{short_list([f'{c!r} ({r})' for c, r in ids.items()], 4)}; "
            f"use one as a feature with {_keep_option(list(ids)[:1])}"
        )
        sub = sub.drop(columns=list(ids))
        if sub.shape[1] == 0:
            raise OodfsError(
                "no feature columns left: every column looks like an identifier; "
                f"keep the ones that are features ({_keep_option(list(ids))})"
            )
    return sub


def _refuse_copies(sub, keep, targets, target) -> None:
    """An error naming the numeric columns that are near-copies of the target (unless kept)."""
    # near-copies of the target: refused unless kept
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
            f"else; drop them (--drop {','.join(copies)}) or keep them on purpose "
            f"({_keep_option(list(copies))})"
        )


def _note_identical(sub, note) -> None:
    same = _identical_groups(sub)
    if same:
        groups = [
            "=".join(map(repr, g[:3])) + (f"=... ({len(g)} columns)" if len(g) > 3 else "") for g in same
        ]
        note(
            f"columns with identical values: {short_list(groups, 4)}; both are features and get the same "
            "score (drop one with --drop)"
        )


def _encode(sub, categorical, max_levels, standardize):
    """(X, feature names, the variable of each feature) of the feature columns."""
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
    return X, names, variables


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
