"""What the pinned AVX2 kernels cost (docs/PROTOCOL.md section 6, "One result on every machine"):
the same command timed with the kernels oodfs pins and with each library's own choice
(``OODFS_KERNELS=native``), one after the other, pair by pair, so that a drift of the machine's
speed hits both sides of a pair alike.

    python benchmarks/references/kernels_cost.py --runs 5 -- oodfs replay churn-default auto-default
    python benchmarks/references/kernels_cost.py --runs 5 --sides MKL_CBWR=COMPATIBLE MKL_CBWR=AVX2 \
        -- python benchmarks/references/srdo_classifier.py

Prints each run's wall and CPU seconds, the medians, and the median of the per-pair ratios
pinned / native (below 1: the pinned kernels are faster). ``--sides A B``: the two sides are the
pinned kernels with the variable assignment A, and with B, instead.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``argv`` and its children."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: a replay that differs still ran
        raise SystemExit(f"{' '.join(argv)} failed with status {status}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5, help="pairs counted (after one warm-up pair)")
    p.add_argument("--sides", nargs=2, metavar="VAR=VALUE", help="compare two settings of one variable")
    p.add_argument("command", nargs="+", help="the command to time (after --)")
    args = p.parse_args()
    native = {**os.environ, "OODFS_KERNELS": "native"}
    pinned = {k: v for k, v in os.environ.items() if k != "OODFS_KERNELS"}
    names = ("pinned", "native")
    if args.sides:
        names = tuple(args.sides)
        pinned, native = ({**pinned, **dict([side.split("=", 1)])} for side in args.sides)
    rows = []
    for i in range(args.runs + 1):
        a, b = timed(args.command, pinned), timed(args.command, native)
        if i:  # the first pair warms caches (numba's compiled kernels, the files)
            rows.append((a, b))
            print(f"pair {i}: {names[0]} {a[0]:.1f} s wall, {a[1]:.1f} s CPU;", end=" ")
            print(f"{names[1]} {b[0]:.1f} s wall, {b[1]:.1f} s CPU")
    for k, what in ((0, "wall"), (1, "CPU")):
        print(
            f"{what}: {names[0]} median {statistics.median(r[0][k] for r in rows):.1f} s, {names[1]} median "
            f"{statistics.median(r[1][k] for r in rows):.1f} s, {names[0]} / {names[1]} median of pairs "
            f"{statistics.median(r[0][k] / r[1][k] for r in rows):.3f}"
        )


if __name__ == "__main__":
    main()
