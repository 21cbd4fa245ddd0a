"""The folders of a whole-benchmark run (``oodfs bench --suite all --out ROOT``) against the shipped
references: is every number the run stored the one the reference holds?

    python benchmarks/whole_benchmark/against_references.py ROOT

For each folder of ROOT whose suite and profile ship a reference (oodfs/run/reference), the rows both
hold (same setting, r_train, run, method, grid point, downstream model, metric, environment and k)
are matched and their ``value`` compared: how many are equal bit for bit, the largest relative
difference, and how many differ by more than the relative tolerance CI's replay allows that method
and model (oodfs.run.reference.replay.tolerance: 1e-9 unless declared; below ABS_FLOOR two numbers
are equal). Rows only one side holds are counted (a binary reference holds the ``logistic`` model
only, its suite declares ``mlp`` too). CI replays one data set per reference; this compares every
data set the run holds. Exit status 1 if any matched value is beyond its tolerance.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from oodfs.results.store import load_results
from oodfs.run.reference import shipped_dir
from oodfs.run.reference.replay import ABS_FLOOR, ROW_KEY, tolerance


def _keyed(df: pd.DataFrame) -> pd.Series:
    df = df[[*ROW_KEY, "value"]].copy()
    for c in ROW_KEY:
        df[c] = df[c].astype(str)
    return df.set_index(ROW_KEY)["value"]


def compare(folder: Path) -> dict | None:
    runs = load_results(folder)
    if runs.empty:
        return None
    suite, profile = str(runs["suite"].iloc[0]), str(runs["profile"].iloc[0])
    path = shipped_dir() / f"{suite}-{profile}.parquet"
    if not path.is_file():
        return None
    ours, ref = _keyed(runs), _keyed(pd.read_parquet(path))
    both = ours.index.intersection(ref.index)
    a, b = ours.loc[both].to_numpy(float), ref.loc[both].to_numpy(float)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.where(same, 0.0, np.abs(a - b) / np.abs(b))
    rel = np.where(np.abs(a - b) < ABS_FLOOR, 0.0, raw)  # below the floor: equal, as the replay has it
    methods, models = both.get_level_values("method"), both.get_level_values("downstream")
    allowed = np.array([tolerance(m, None if d in ("None", "nan") else d) for m, d in zip(methods, models)])
    beyond = ~(rel <= allowed)  # NaN against a number is beyond
    return {
        "folder": folder.name,
        "reference": path.name,
        "matched": len(both),
        "bit for bit": int(same.sum()),
        "largest rel. diff.": f"{np.nanmax(raw, initial=0.0):.2g}",
        "beyond tolerance": int(beyond.sum()),
        "run only": len(ours.index.difference(ref.index)),
        "reference only": len(ref.index.difference(ours.index)),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", type=Path)
    a = p.parse_args(argv)
    folders = [f for f in sorted(a.root.iterdir()) if (f / "results.sqlite").is_file()]
    rows = [r for r in map(compare, folders) if r]
    print(tabulate(rows, headers="keys", tablefmt="github"))
    matched, beyond = sum(r["matched"] for r in rows), sum(r["beyond tolerance"] for r in rows)
    exact = sum(r["bit for bit"] for r in rows)
    print(f"\n{len(rows)} folders with a reference: {matched} values matched, {exact} bit for bit,", end=" ")
    print(f"{beyond} beyond tolerance")
    return 1 if beyond else 0


if __name__ == "__main__":
    sys.exit(main())
