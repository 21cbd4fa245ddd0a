"""How far one method's rows moved between two sets of references (README.md, section 6): for each
reference both hold, the method's rows matched on the replay's row key, the share of its trained
subsets that are the same feature set, and its values' largest relative difference.

    python benchmarks/references/method_drift.py OLD_DIR NEW_DIR --method srdo

OLD_DIR, e.g. the references of an earlier commit: ``git archive COMMIT oodfs/run/reference | tar -x
-C /tmp/old`` gives /tmp/old/oodfs/run/reference. Prints one Markdown row per reference and a total.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from oodfs.run.reference.replay import ABS_FLOOR, ROW_KEY


def drift(old: pd.DataFrame, new: pd.DataFrame, method: str) -> dict:
    """The method's rows of both, matched: how many, how many trained subsets (one per data set,
    grid point, k and downstream model) are the same set of features, how many values differ and
    the largest relative difference of one, as the replay measures it (below ABS_FLOOR: equal)."""
    key = [c for c in ROW_KEY if c in old.columns and c in new.columns]
    both = old[old["method"] == method].merge(new[new["method"] == method], on=key, suffixes=("_old", "_new"))
    subsets = both.drop_duplicates([c for c in key if c not in ("metric", "env")])
    same = sum(
        set(_features(a)) == set(_features(b)) for a, b in zip(subsets["subset_old"], subsets["subset_new"])
    )
    a, b = both["value_old"].to_numpy(float), both["value_new"].to_numpy(float)
    equal = (a == b) | (np.isnan(a) & np.isnan(b))
    diff = np.abs(a - b)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where(equal | (diff <= ABS_FLOOR), 0.0, diff / np.maximum(np.abs(a), np.abs(b)))
    return {
        "rows": len(both),
        "values differing": int((~equal).sum()),
        "subsets": len(subsets),
        "same subset": same,
        "largest relative difference": float(np.nanmax(rel, initial=0.0)),
    }


def _features(subset) -> list:
    """A trained subset as stored (a JSON list, a list or an array; None for none)."""
    if subset is None or (isinstance(subset, float) and np.isnan(subset)):
        return []
    if isinstance(subset, str):
        return json.loads(subset)
    return list(subset)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--method", required=True)
    args = p.parse_args()
    rows = []
    for path in sorted(args.new.glob("*.parquet")):
        if not (args.old / path.name).is_file():
            continue
        d = drift(pd.read_parquet(args.old / path.name), pd.read_parquet(path), args.method)
        if d["rows"]:
            rows.append({"reference": path.stem, **d})
    total = {
        "reference": "all",
        "rows": sum(r["rows"] for r in rows),
        "values differing": sum(r["values differing"] for r in rows),
        "subsets": sum(r["subsets"] for r in rows),
        "same subset": sum(r["same subset"] for r in rows),
        "largest relative difference": max((r["largest relative difference"] for r in rows), default=0.0),
    }
    table = pd.DataFrame([*rows, total])
    same = zip(table["same subset"], table["subsets"])
    table["same subset"] = [f"{s} ({s / n:.0%})" if n else "-" for s, n in same]
    print(tabulate(table, headers="keys", tablefmt="github", showindex=False, floatfmt=".3g"))


if __name__ == "__main__":
    main()
