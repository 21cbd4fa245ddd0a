"""What stabilized, vrex, eills and drig cost per data set, beside irm (and icp, anchor), measured
side by side in one process.

    python benchmarks/invariance_methods/bench_invariance2_cost.py \
        --out benchmarks/invariance_methods/INVARIANCE2_COST.md

Per data set, a method's cost is one ``fit_grid`` over its whole grid (what a task of a suite
runs once, plus once per left-out environment under the ``loeo`` rule). Data: the suites' own
draws (``irm-sem`` FOU run 0, ``synthetic-multienv`` poly {1.5, 2, 3} run 0: 3 x 1000 rows,
d = 10). Times are medians of ``--repeats`` runs taken in rotation (each repeat runs every method
once), so a change in the machine's load hits all methods alike; the ratio to irm is what carries
over to another machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

METHODS = ("irm", "icp", "anchor", "stabilized", "vrex", "eills", "drig")
SETS = (("irm-sem", "FOU", (0.2, 2.0, 5.0)), ("synthetic-multienv", "poly", (1.5, 2.0, 3.0)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args(argv)

    from oodfs.contract.registry import registry
    from oodfs.contract.task import DataKey
    from oodfs.run.dataset import make_dataset
    from oodfs.run.suite import load_suite

    lines = [
        "# Cost per data set of the new invariance methods, beside IRM",
        "",
        f"`python benchmarks/invariance_methods/bench_invariance2_cost.py` (median of {args.repeats} "
        "rotations; one "
        "`fit_grid` over the method's whole grid on 3 x 1000 rows, d = 10).",
        "",
        "| data set | " + " | ".join(METHODS) + " |",
        "| --- | " + " | ".join("---" for _ in METHODS) + " |",
    ]
    for suite_name, setting, envs in SETS:
        ds = make_dataset(load_suite(suite_name), DataKey(setting, envs, 0))
        X, y, g = np.asarray(ds.X_train), np.asarray(ds.y_train), np.asarray(ds.groups_train)
        times = {m: [] for m in METHODS}
        for _ in range(args.repeats):
            for m in METHODS:
                cls = registry().get("selector", m)
                t0 = time.perf_counter()
                cls.fit_grid(X, y, cls.grid_points(), random_state=0, groups=g)
                times[m].append(time.perf_counter() - t0)
        med = {m: statistics.median(t) for m, t in times.items()}
        lines.append(
            f"| {suite_name} {setting}: seconds | " + " | ".join(f"{med[m]:.2f}" for m in METHODS) + " |"
        )
        lines.append(
            f"| {suite_name} {setting}: ratio to irm | "
            + " | ".join(f"{med[m] / med['irm']:.2f}" for m in METHODS)
            + " |"
        )
    grid = {m: len(registry().get("selector", m).grid_points()) for m in METHODS}
    lines += ["", "Grid points: " + ", ".join(f"{m} {k}" for m, k in grid.items()) + "."]
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
