"""What one fit of each new method costs against n and d, beside DWR and SRDO, in one process.

    python benchmarks/markov_boundary/bench_markov_cost.py [--repeats 3] \
        [--out benchmarks/markov_boundary/MARKOV_COST.md]

Data: the markov_boundary environment (poly, r = 2.5; d = 13: S1..S5, V1..V5, H, C, W), and for
larger d the same rows with independent N(0, 1) columns appended. One fit = the method's whole
grid through ``fit_grid`` (what a benchmark task runs; the Markov searches share one test cache
across their grid points); hrm is timed at its default point only (its grid has five points of
45 000 Adam steps each: multiply by 5). Times are medians of ``--repeats`` runs, measured side
by side; the ratio to DWR's time on the same data is what carries over to another machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from oodfs.contract.registry import registry
from oodfs_plugins.environments.markov import MarkovBoundaryEnv

METHODS = ["dwr", "srdo", "iamb", "hiton_mb", "iamb_rcit", "hiton_mb_rcit", "hrm"]
CONFIGS = [(1000, 13), (1000, 23)]


def data(n, d, seed=0):
    X, y = MarkovBoundaryEnv().sample(2.5, n, seed)
    extra = np.random.default_rng(seed + 1).standard_normal((n, d - X.shape[1]))
    return np.hstack([X, extra]), y


def fit_once(method, X, y):
    cls = registry().get("selector", method)
    if method == "hrm":
        cls().fit(X, y)
        return
    cls.fit_grid(X, y, cls.grid_points(), random_state=0)


def median_seconds(call, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    methods = args.methods.split(",")
    rows = {}
    for n, d in CONFIGS:
        X, y = data(n, d)
        rows[(n, d)] = {m: median_seconds(lambda m=m: fit_once(m, X, y), args.repeats) for m in methods}
        print(n, d, {m: round(t, 2) for m, t in rows[(n, d)].items()}, flush=True)
    lines = [
        "# Cost of the Markov-boundary searches and HRM beside DWR and SRDO",
        "",
        f"`python benchmarks/markov_boundary/bench_markov_cost.py --repeats {args.repeats}` (its docstring "
        "says what is "
        "timed).",
        "Seconds per fit (median), and in brackets the ratio to DWR on the same data.",
        "",
        "| n | d | " + " | ".join(methods) + " |",
        "| --- | --- | " + " | ".join("---" for _ in methods) + " |",
    ]
    for (n, d), r in rows.items():
        base = r.get("dwr")
        cells = [f"{r[m]:.2f}" + (f" ({r[m] / base:.1f}x)" if base else "") for m in methods]
        lines.append(f"| {n} | {d} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
