"""RSW's and SVI's fits, the two costliest of the whole benchmark, before and after two cuts.

    python benchmarks/grid_sharing/bench_grid_sharing.py [--old-commit e694409] [--repeats 3] [--out FILE.md]

What changed (every number the same, bit for bit):

* ``rsw``: the grid's points that differ only in ``alpha`` draw the same weightings, so their
  training runs in one compiled loop that computes each epoch's weightings and weighted moments
  once for every alpha (3 alphas x n_envs 3, 8: 11 weightings an epoch instead of 33);
* ``svi``: its rounds' stochastic-gates fits skip STG's training-loss curve (STG's convergence
  diagnostic, which SVI never reads): the per-row deviance of a binary target was a third of it.

Each case is the method's whole grid (``_fit_grid``, as a benchmark task runs it) on one data set of
the synthetic suites (poly, bias rate 2.5, n = 10 000, ``random_state`` 7; svi on the regression
and the binary outcome), one thread, in a fresh process per fit, old and new alternated, after one
untimed fit on a small data set (numba's compilation). The old code is the ``plugins/`` tree of
``--old-commit`` put first on the path. Seconds are medians of ``--repeats``; "same" says whether
the old and new scores are equal bit for bit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))
from paired import alternated, finish, old_tree  # noqa: E402 -- benchmarks/shared/paired.py

CASES = ("rsw", "svi", "svi-binary")

CHILD = r"""
import json, sys, time, warnings
import numpy as np
from threadpoolctl import threadpool_limits
import torch
torch.set_num_threads(1)
warnings.filterwarnings("ignore")
from oodfs_plugins.environments.synthetic import Synthetic, SyntheticBinary
from oodfs_plugins.independence.rsw import RSW
from oodfs_plugins.independence.svi import SVI
case = sys.argv[1]
cls = {"rsw": RSW, "svi": SVI, "svi-binary": SVI}[case]
env = SyntheticBinary("poly") if case == "svi-binary" else Synthetic("poly")
extra = {"task": "binary"} if case == "svi-binary" else {}
points = cls.grid_points()
with threadpool_limits(1):
    Xw, yw = env.sample(2.5, 300, 1)  # compile the kernels, untimed
    cls._fit_grid(Xw, yw, points[:1], sample_weight=None, random_state=7, **extra)
    X, y = env.sample(2.5, 10000, 123)
    t0 = time.perf_counter()
    fits = cls._fit_grid(X, y, points, sample_weight=None, random_state=7, **extra)
    seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "scores": [list(map(float, f.values)) for f in fits]}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-commit", default="e694409")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--out", type=Path, help="write the table to this markdown file (replaced)")
    args = ap.parse_args(argv)
    old = old_tree(args.old_commit, "plugins", "oodfs_plugins")
    lines = [
        f"Old: plugins/ at {args.old_commit}; new: the working tree. Medians of {args.repeats} fits "
        "each, alternated, one fresh process per fit, one thread.",
        "",
        "| method (grid) | old s | new s | new / old | same scores |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for case in args.cases.split(","):
        o, n, old_fit, new_fit = alternated(CHILD, [case], old, args.repeats)
        same = "yes, bit for bit" if old_fit["scores"] == new_fit["scores"] else "NO"
        lines.append(f"| {case} | {o:.1f} | {n:.1f} | {n / o:.2f} | {same} |")
        print(lines[-1], flush=True)
    finish(lines, args.out)


if __name__ == "__main__":
    main()
