"""What the grid could have given: per setting and method, the F1 of the top k at the point each rule
chooses (val, oracle) and at the grid point with the best F1 (an upper bound no rule can reach
without knowing the stable set), mean over r_train and runs.

    python benchmarks/invariance_methods/invariance2_grid.py results/synthetic-multienv results/irm-sem \
        --out FILE

It separates two failures: a method none of whose grid points finds the stable set, and a method
some of whose points do but whose model selection picks another.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from tabulate import tabulate

from oodfs.report.report import Report

METHODS = ("icp", "anchor", "irm", "stabilized", "vrex", "eills", "drig", "dwr", "srdo", "ols", "lasso")


def table(folder: Path) -> str:
    results = pd.read_parquet(folder / "results.parquet")
    f1 = results[(results["metric"] == "f1") & (results["status"] == "ok")]
    best = (
        f1.groupby(["setting", "method", "r_train", "run"])["value"]
        .max()
        .groupby(["setting", "method"])
        .mean()
    )
    chosen = {}
    for rule in ("val", "oracle"):
        per_run = Report(results, rule).per_run()
        per_run = per_run[per_run["r_train"] != "all"]
        chosen[rule] = per_run.groupby(["setting", "method"])["f1"].mean()
    rows = []
    for (setting, method), b in best.items():
        if method not in METHODS:
            continue
        rows.append(
            [
                setting,
                method,
                f"{chosen['val'][(setting, method)]:.2f}",
                f"{chosen['oracle'][(setting, method)]:.2f}",
                f"{b:.2f}",
            ]
        )
    rows.sort(key=lambda r: (r[0], METHODS.index(r[1])))
    return tabulate(
        rows,
        headers=["setting", "method", "F1 (val)", "F1 (oracle)", "F1 (best grid point)"],
        tablefmt="github",
        disable_numparse=True,
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", type=Path)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    out = []
    for folder in args.folders:
        out += [f"### `{folder.name}`", "", table(folder), ""]
    text = "\n".join(out) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
