"""The user's own table: reading, preparing, naming features (a library that imports nothing of
the runner: no argument parsing, no printing, no fitting). Ranking the features of a table is the
use case :func:`oodfs.run.rank.rank_features` (``oodfs select``); the ``table`` environment of
``oodfs bench`` prepares its table with the same code.

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
* :func:`target_task` -- which task the target makes (two levels: binary, with its positive
  class named in a note; a numeric target otherwise: regression; text with three or more levels:
  refused) and :func:`binary_column` the target as 0.0 / 1.0 (:mod:`oodfs.tables.target`).
* :func:`find_leaks` -- the leak guards: a feature that alone predicts the target almost
  perfectly, a target that is a linear function of a few features (:mod:`oodfs.tables.leaks`).
* :func:`fitted_features` -- the rule shared by ``oodfs select`` and ``oodfs bench``: a feature
  with fewer than ``min_level_rows`` (10) of the fitting rows off its most common value (an
  absent or rare one-hot level, a constant column) is left out of a method's fit and scores 0.
"""

from oodfs.tables.leaks import Leaks, find_leaks
from oodfs.tables.names import LEVEL_SEP, named_columns, short_list
from oodfs.tables.prepare import (
    CATEGORICAL_MODES,
    DATE_MODES,
    DROPNA_MODES,
    MAX_LEVELS,
    MIN_LEVEL_ROWS,
    NEAR_COPY_CORR,
    TARGET_TRANSFORMS,
    PowerOfTwoScaler,
    PreparedTable,
    decimal_years,
    fitted_features,
    make_encoder,
    make_scaler,
    prepare,
    prepare_table,
    transform_target,
)
from oodfs.tables.read import CSV_SUFFIXES, PARQUET_SUFFIXES, TableWarning, read_table, table_format
from oodfs.tables.target import TASKS, TargetTask, binary_column, target_task

__all__ = [
    "CATEGORICAL_MODES",
    "CSV_SUFFIXES",
    "DATE_MODES",
    "DROPNA_MODES",
    "LEVEL_SEP",
    "Leaks",
    "MAX_LEVELS",
    "MIN_LEVEL_ROWS",
    "NEAR_COPY_CORR",
    "PARQUET_SUFFIXES",
    "PowerOfTwoScaler",
    "PreparedTable",
    "TARGET_TRANSFORMS",
    "TASKS",
    "TableWarning",
    "TargetTask",
    "binary_column",
    "decimal_years",
    "find_leaks",
    "fitted_features",
    "make_encoder",
    "make_scaler",
    "named_columns",
    "prepare",
    "prepare_table",
    "read_table",
    "short_list",
    "table_format",
    "target_task",
    "transform_target",
]
