"""The cost of fitting every method in a forked child (the default) instead of in the worker.

Two measurements, side by side and interleaved so that load on the machine hits both alike:

1. Per fit, in one process: ``fit_method`` on one data set of the synthetic suite (n = 10,000)
   called directly and through :func:`oodfs.run.executors.isolation.call_isolated`, for fast
   methods whose fit is short enough for the fork to show; medians over repeats. Both give the
   same scores (checked).
2. A whole run: ``oodfs bench --suite synthetic --quick --jobs 2`` with and without
   ``--no-isolation``, one fresh process each (``--runs-of-bench`` repeats, 0 to skip).

    python benchmarks/fit_isolation/bench_isolation.py  # 15 repeats of ols, correlation, lasso
    python benchmarks/fit_isolation/bench_isolation.py --methods ols,rf --repeats 9 --runs-of-bench 3
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tabulate import tabulate

from oodfs.contract.registry import registry
from oodfs.contract.task import DataKey
from oodfs.run.dataset import make_dataset
from oodfs.run.evaluate import fit_method
from oodfs.run.executors.isolation import call_isolated
from oodfs.run.suite import customise, load_suite


def per_fit(methods: list[str], repeats: int) -> list[list]:
    import torch

    torch.set_num_threads(1)  # as in a worker
    registry()
    suite = customise(load_suite("synthetic"), quick=True)
    setting = next(s for s in suite.settings if s.name == "poly")
    data = make_dataset(suite, DataKey(setting.name, 2.5, 0))
    rows = []
    for method in methods:

        def fit(method=method):
            return fit_method(suite, DataKey(setting.name, 2.5, 0), method, data)

        direct, isolated = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            a = fit()
            direct.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            b = call_isolated(fit)
            isolated.append(time.perf_counter() - t0)
        assert all(np.array_equal(x.values, y.values) for x, y in zip(a.fits, b.fits)), method
        d, i = statistics.median(direct), statistics.median(isolated)
        rows.append([method, f"{d * 1000:.1f}", f"{i * 1000:.1f}", f"{(i - d) * 1000:.1f}", f"{i / d:.2f}"])
    return rows


def whole_runs(repeats: int, jobs: int) -> list[list]:
    times = {"isolated (default)": [], "--no-isolation": []}
    tmp = Path(tempfile.mkdtemp(prefix="oodfs-bench-isolation-"))
    try:
        for r in range(repeats):
            for label, extra in (("isolated (default)", []), ("--no-isolation", ["--no-isolation"])):
                out = tmp / f"{r}-{bool(extra)}"
                t0 = time.perf_counter()
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "oodfs.cli",
                        "bench",
                        "--suite",
                        "synthetic",
                        "--quick",
                        "--jobs",
                        str(jobs),
                        "--out",
                        str(out),
                        "--quiet",
                        *extra,
                    ],
                    check=True,
                    stdout=subprocess.DEVNULL,
                )
                times[label].append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(times["--no-isolation"])
    return [
        [
            label,
            " ".join(f"{t:.0f}" for t in ts),
            f"{statistics.median(ts):.0f}",
            f"{statistics.median(ts) / base:.2f}",
        ]
        for label, ts in times.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--methods", default="ols,correlation,lasso")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--runs-of-bench", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    print(
        tabulate(
            per_fit(args.methods.split(","), args.repeats),
            headers=["method", "direct ms", "forked child ms", "fork cost ms", "ratio"],
        )
    )
    if args.runs_of_bench:
        print()
        print(
            tabulate(
                whole_runs(args.runs_of_bench, args.jobs),
                headers=["fits", "wall s (each run)", "median s", "ratio"],
            )
        )


if __name__ == "__main__":
    main()
