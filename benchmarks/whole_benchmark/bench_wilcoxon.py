"""The paired signed-rank tests of a leaderboard: scipy.stats.wilcoxon against oodfs's count of
the same sign patterns (oodfs.report.stats._paired), on differences with ties or zeros as the
real suites give them (10-12 blocks, methods that often choose the same subset).

    python benchmarks/whole_benchmark/bench_wilcoxon.py [--tests 200] [--repeats 3]

Prints the median seconds of each way over the repeats, their ratio, and that every p is equal.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scipy import stats

from oodfs.report.stats import _paired


def cases(count: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        n = int(rng.integers(8, 14))
        d = rng.normal(size=n).round(2) * (rng.random(n) < 0.7)  # ~30 % zero differences
        if np.any(d != 0):
            out.append(d)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tests", type=int, default=200)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    ds = cases(args.tests)
    times = {"scipy": [], "oodfs": []}
    for _ in range(args.repeats):
        t0 = time.process_time()
        ref = [stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue for d in ds]
        times["scipy"].append(time.process_time() - t0)
        t0 = time.process_time()
        ours = [_paired(d, "wilcoxon")[1] for d in ds]
        times["oodfs"].append(time.process_time() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{args.tests} tests, median CPU s of {args.repeats}: scipy {med['scipy']:.2f}, ", end="")
    print(f"oodfs {med['oodfs']:.3f}")
    print(f"ratio scipy / oodfs: {med['scipy'] / med['oodfs']:.0f}; every p equal: {ref == ours}")


if __name__ == "__main__":
    main()
