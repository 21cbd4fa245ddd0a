"""Time the synthetic environment's samplers on one paper-sized data draw.

One draw = the training set (n = 10000, r = 2.5) plus the 10 test environments of the paper
(n = 10000 each). Samplers: ``exact`` (the default), ``pool`` (the authors' generator) and plain
``rejection`` (for reference). Repeats are interleaved across samplers so that load on the
machine affects all of them alike; the table shows medians.

    python benchmarks/fit_time/bench_sampler.py [--repeats 5] [--n 10000]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from tabulate import tabulate

from oodfs_plugins.environments.synthetic import Synthetic

R_TRAIN = 2.5
R_TEST = (-3.0, -2.5, -2.0, -1.5, -1.3, 1.3, 1.5, 2.0, 2.5, 3.0)
SAMPLERS = ("exact", "pool", "rejection")


def one_draw(env: Synthetic, n: int, seed: int) -> float:
    """Seconds to make the training set and the 10 test environments."""
    start = time.perf_counter()
    for i, r in enumerate((R_TRAIN, *R_TEST)):
        env.sample(r, n, seed * 100 + i)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n", type=int, default=10_000)
    args = parser.parse_args()

    rows = []
    for setting in Synthetic.settings:
        envs = {s: Synthetic(setting=setting, sampler=s) for s in SAMPLERS}
        for env in envs.values():  # warm-up (imports, caches)
            env.sample(R_TRAIN, 100, 0)
        times = {s: [] for s in SAMPLERS}
        for rep in range(args.repeats):
            for s in SAMPLERS:
                times[s].append(one_draw(envs[s], args.n, rep))
        med = {s: statistics.median(t) for s, t in times.items()}
        rows.append(
            [
                setting,
                *(f"{med[s]:.3f}" for s in SAMPLERS),
                f"{med['pool'] / med['exact']:.1f}x",
                f"{med['rejection'] / med['exact']:.1f}x",
            ]
        )

    print(
        f"train (r={R_TRAIN}) + {len(R_TEST)} test environments, n={args.n} each; "
        f"median of {args.repeats} repeats, seconds; {platform.processor() or platform.machine()}"
    )
    print(
        tabulate(
            rows,
            headers=["setting", *SAMPLERS, "pool / exact", "rejection / exact"],
            tablefmt="github",
            colalign=("left",) + ("right",) * 5,
        )
    )


if __name__ == "__main__":
    main()
