"""The numbers behind `oodfs select`'s leak notes (docs/PROTOCOL.md, section 17).

On ISLP's Bikeshare (``pip install --no-deps ISLP``; 8,645 hours, prepared as ``oodfs select``
prepares it: ``hr`` one-hot, standardised), side by side in one run:

1. the one-feature check of :mod:`oodfs.tables.leaks` (a step function on 32 quantile bins, out of
   fold) against a 32-leaf scikit-learn regression tree per feature (5 shuffled folds): the
   out-of-fold R² of each numeric feature for the riders count, and the time of each, medians of
   ``--repeats`` runs;
2. the whole check (:func:`oodfs.tables.find_leaks`, both rules, every feature) on the table: its
   time (median) and its notes, with and without ``registered`` and ``casual``.

    python benchmarks/own_tables/bench_select_leaks.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from tabulate import tabulate

from oodfs.tables import find_leaks, prepare_table
from oodfs.tables.leaks import BINS, FOLDS, _out_of_fold

NUMERIC = ["registered", "casual", "temp", "atemp", "hum", "windspeed"]


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from ISLP import load_data
    from sklearn.model_selection import KFold, cross_val_predict
    from sklearn.tree import DecisionTreeRegressor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = prepare_table(
            load_data("Bikeshare"), "bikers", categorical_columns=["hr"], standardize=True, dates="convert"
        )
    X, y, names = table.X, table.y, table.names
    fold = np.random.default_rng(0).permutation(len(y)) % FOLDS

    def r2(p):
        return 1 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2)

    rows = []
    for name in NUMERIC:
        x = X[:, names.index(name)]
        t_bins, p_bins = median_time(lambda x=x: _out_of_fold(x, y, fold), args.repeats)
        tree = DecisionTreeRegressor(max_leaf_nodes=BINS, min_samples_leaf=5)
        folds = KFold(FOLDS, shuffle=True, random_state=0)
        t_tree, p_tree = median_time(
            lambda x=x: cross_val_predict(tree, x[:, None], y, cv=folds), args.repeats
        )
        scores = [f"{r2(p_bins):.3f}", f"{r2(p_tree):.3f}"]
        times = [f"{t_bins * 1e3:.1f}", f"{t_tree * 1e3:.1f}", f"{t_tree / t_bins:.0f}"]
        rows.append([name, *scores, *times])
    print(f"Bikeshare, {X.shape[0]} rows: one feature alone, out-of-fold R² for the riders count\n")
    print(
        tabulate(
            rows,
            headers=["feature", "step function R²", "tree R²", "step ms", "tree ms", "tree / step"],
            disable_numparse=True,
        )
    )
    print()
    for label, keep in (("every feature", names), ("without registered, casual", None)):
        cols = [j for j, n in enumerate(names) if keep is not None or n not in ("registered", "casual")]
        seconds, leaks = median_time(
            lambda cols=cols: find_leaks(X[:, cols], y, [names[j] for j in cols], "regression"), args.repeats
        )
        print(f"find_leaks, {label} ({len(cols)} features): {seconds:.2f} s (median of {args.repeats})")
        for note in leaks.notes() or ["(no note)"]:
            print(f"  {note}")


if __name__ == "__main__":
    main()
