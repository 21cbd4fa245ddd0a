"""What ICP's subset search and IRM's training cost per data set, against the number of features d.

    python benchmarks/multienv/bench_invariance_cost.py --out benchmarks/multienv/INVARIANCE_COST.md

Data: three environments of 1000 rows each (features scaled by 0.5, 1 and 2 per environment,
y = x0 - x1 + noise). Times are medians of ``--repeats`` runs, measured side by side in one
process; the ratio to d = 10 (the size of both multi-environment suites) is what carries over to
another machine.

* ICP, exact search: 2^d - 1 subsets (plus the empty set), each a least-squares fit from the
  environments' sufficient statistics and two tests per environment. Beyond d = 12 the exact
  search is refused; ``screen="lasso"`` keeps ``screen_size = 8`` features (cost of d = 8 plus a
  LASSO path).
* IRM: the reference code's 100 000 Adam steps for each of the 6 grid points, batched, on the
  environments' second moments: O(grid x steps x E x d^2), independent of n. Measured over
  ``--irm-steps`` steps and scaled to 100 000.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from oodfs_plugins.invariance.icp import ICP
from oodfs_plugins.invariance.irm import IRM, environment_moments, irm_solutions


def data(d: int, n: int = 1000, seed: int = 0):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(3), n)
    X = rng.standard_normal((3 * n, d)) * np.array([0.5, 1.0, 2.0])[g][:, None]
    y = X[:, 0] - X[:, 1] + 0.5 * rng.standard_normal(3 * n)
    return X, y, g


def median_seconds(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--irm-steps", type=int, default=5000)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    regs = IRM.grid["reg"]
    irm_solutions(*environment_moments(*data(4)[:2], data(4)[2], 3), regs, n_iterations=10)  # compile once

    icp_rows = []
    for d, screen in [
        (4, "none"),
        (6, "none"),
        (8, "none"),
        (10, "none"),
        (12, "none"),
        (20, "lasso"),
        (50, "lasso"),
    ]:
        X, y, g = data(d)
        sel = ICP(screen=screen, screen_size=8)
        icp_rows.append((d, screen, median_seconds(lambda: sel.fit(X, y, groups=g), args.repeats)))
    irm_rows = []
    for d in (5, 10, 20, 40):
        X, y, g = data(d)
        S, c = environment_moments(X, y, g, 3)
        t = median_seconds(lambda: irm_solutions(S, c, regs, n_iterations=args.irm_steps), args.repeats)
        irm_rows.append((d, t * 100_000 / args.irm_steps))

    base_icp = next(t for d, s, t in icp_rows if d == 10)
    base_irm = next(t for d, t in irm_rows if d == 10)
    lines = [
        "# Cost of ICP's subset search and IRM's training against d",
        "",
        "`python benchmarks/multienv/bench_invariance_cost.py` (3 environments x 1000 rows; medians of "
        f"{args.repeats} runs; IRM timed over {args.irm_steps} steps and scaled to the reference's "
        "100 000). Seconds on this machine (loaded: read the ratios), and the ratio to d = 10.",
        "",
        "| ICP: d | search | subsets | seconds | ratio to d = 10 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for d, screen, t in icp_rows:
        k = d if screen == "none" else 8
        lines.append(
            f"| {d} | {'exact' if screen == 'none' else 'LASSO screen to 8'} | {2**k} | {t:.3f} | "
            f"{t / base_icp:.2f} |"
        )
    lines += [
        "",
        "| IRM: d | seconds per data set (6 grid points x 100 000 steps) | ratio to d = 10 |",
        "| --- | --- | --- |",
    ]
    for d, t in irm_rows:
        lines.append(f"| {d} | {t:.2f} | {t / base_irm:.2f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
