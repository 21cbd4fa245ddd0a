"""The cost of ending what a fit started when the run is killed: each isolated fit as a forked
child with this checkout's clean-up against other oodfs checkouts (the one from before, or
another design), side by side and interleaved so that load on the machine hits all alike:

0. The mechanism alone, in one process: ``call_isolated`` of a function that returns at once,
   in a process that has imported what a worker imports; medians over ``--empty`` calls.
1. Per fit, in one process: ``fit_method`` on one data set of the quick synthetic suite through
   each checkout's ``call_isolated`` (its ``isolation.py`` loaded from the checkout); medians
   over repeats. All give the same scores (checked).
2. Whole runs: ``oodfs bench --suite synthetic --quick --methods ... --jobs 1``, one fresh process
   each, with each checkout first on ``PYTHONPATH``; medians.

3. Dask workers killed while starting (``--kill-trials``): ``oodfs bench --backend dask --jobs
   2`` on a tiny suite, SIGKILLed 0.4 s after its second process appeared (its workers still
   importing); the seconds until no process of its session is left, per trial.

The first ``--against`` is the baseline of the ratios.

    git archive ba81193 oodfs plugins | tar -x -C /tmp/before     # main before the change
    git archive 6644b2e oodfs plugins | tar -x -C /tmp/supervisor  # a supervisor process per fit
    python benchmarks/fit_isolation/bench_fit_cleanup.py --against before=/tmp/before \\
        --against supervisor=/tmp/supervisor --repeats 21 --runs-of-bench 7
"""

from __future__ import annotations

import argparse
import importlib.util
import os
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

THIS = "this checkout"


def isolated_call(name: str, checkout: Path):
    path = checkout / "oodfs" / "run" / "executors" / "isolation.py"
    spec = importlib.util.spec_from_file_location(f"oodfs_isolation_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.call_isolated


def per_fit(methods: list[str], repeats: int, against: dict[str, Path]) -> list[list]:
    import torch

    torch.set_num_threads(1)  # as in a worker
    registry()
    calls = {name: isolated_call(name, path) for name, path in against.items()}
    calls[THIS] = call_isolated
    suite = customise(load_suite("synthetic"), quick=True)
    key = DataKey("poly", 2.5, 0)
    data = make_dataset(suite, key)
    rows = []
    for method in methods:

        def fit(method=method):
            return fit_method(suite, key, method, data)

        reference = fit()  # compiled and imported before timing
        times = {name: [] for name in calls}
        for _ in range(repeats):
            for name, call in calls.items():
                t0 = time.perf_counter()
                result = call(fit)
                times[name].append(time.perf_counter() - t0)
                assert all(np.array_equal(a.values, b.values) for a, b in zip(reference.fits, result.fits))
        base = statistics.median(next(iter(times.values())))
        for name, ts in times.items():
            m = statistics.median(ts)
            rows.append([method, name, f"{m * 1000:.1f}", f"{(m - base) * 1000:+.1f}", f"{m / base:.3f}"])
    return rows


def empty_fits(repeats: int, against: dict[str, Path]) -> list[list]:
    import torch  # noqa: F401 -- a worker's size: what a fork copies

    registry()
    calls = {name: isolated_call(name, path) for name, path in against.items()}
    calls[THIS] = call_isolated
    times = {name: [] for name in calls}
    for name, call in calls.items():
        call(int)  # the first call of each starts what it keeps (a reaper)
    for _ in range(repeats):
        for name, call in calls.items():
            t0 = time.perf_counter()
            call(int)
            times[name].append(time.perf_counter() - t0)
    base = statistics.median(next(iter(times.values())))
    return [
        [name, f"{statistics.median(ts) * 1000:.2f}", f"{(statistics.median(ts) - base) * 1000:+.2f}"]
        for name, ts in times.items()
    ]


def whole_runs(repeats: int, methods: str, against: dict[str, Path]) -> list[list]:
    checkouts = {**against, THIS: None}
    times = {name: [] for name in checkouts}
    tmp = Path(tempfile.mkdtemp(prefix="oodfs-bench-fit-cleanup-"))
    command = [sys.executable, "-m", "oodfs.cli", "bench", "--suite", "synthetic", "--quick"]
    command += ["--methods", methods, "--jobs", "1", "--quiet"]
    try:
        for r in range(repeats):
            for i, (name, path) in enumerate(checkouts.items()):
                env = dict(os.environ)
                if path is not None:
                    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), env.get("PYTHONPATH")]))
                t0 = time.perf_counter()
                subprocess.run(
                    [*command, "--out", str(tmp / f"{i}-{r}")],
                    check=True,
                    stdout=subprocess.DEVNULL,
                    env=env,
                    cwd=tmp,  # not a checkout: oodfs is the one PYTHONPATH or the installation names
                )
                times[name].append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    base = statistics.median(next(iter(times.values())))
    return [
        [
            name,
            " ".join(f"{t:.1f}" for t in ts),
            f"{statistics.median(ts):.2f}",
            f"{statistics.median(ts) / base:.3f}",
        ]
        for name, ts in times.items()
    ]


TINY = """
environment = "synthetic"
r_train = [2.5]
r_test = [-2.0, 2.0]
runs = 3
n_train = 300
n_val = 100
n_test = 300
k = 5
methods = ["ols", "correlation"]
[settings.poly]
params = { setting = "poly" }
"""


def _session(sid: int) -> list[int]:
    import psutil

    left = []
    for p in psutil.process_iter():
        try:
            if os.getsid(p.pid) == sid and p.status() != psutil.STATUS_ZOMBIE:
                left.append(p.pid)
        except (OSError, psutil.Error):
            pass
    return left


def startup_kills(trials: int, against: dict[str, Path]) -> list[list]:
    import psutil

    checkouts = {**against, THIS: None}
    seconds = {name: [] for name in checkouts}
    tmp = Path(tempfile.mkdtemp(prefix="oodfs-bench-fit-cleanup-"))
    (tmp / "tiny.toml").write_text(TINY)
    try:
        for r in range(trials):
            for i, (name, path) in enumerate(checkouts.items()):
                env = dict(os.environ)
                if path is not None:
                    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), env.get("PYTHONPATH")]))
                command = [sys.executable, "-m", "oodfs.cli", "bench", "--suite", str(tmp / "tiny.toml")]
                command += ["--out", str(tmp / f"k{i}-{r}"), "--jobs", "2", "--backend", "dask", "--quiet"]
                proc = subprocess.Popen(
                    command,
                    env=env,
                    cwd=tmp,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
                while proc.poll() is None and len(psutil.Process(proc.pid).children(recursive=True)) < 2:
                    time.sleep(0.01)
                time.sleep(0.4)
                proc.kill()
                proc.wait()
                killed = time.perf_counter()
                while _session(proc.pid) and time.perf_counter() - killed < 120:
                    time.sleep(0.05)
                seconds[name].append(time.perf_counter() - killed)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [[name, " ".join(f"{t:.1f}" for t in ts), f"{max(ts):.1f}"] for name, ts in seconds.items()]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--against", action="append", required=True, metavar="NAME=PATH", help="another oodfs checkout"
    )
    parser.add_argument("--methods", default="ols,correlation,lasso")
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--runs-of-bench", type=int, default=7)
    parser.add_argument("--empty", type=int, default=201, help="calls of an empty fit (0: skip)")
    parser.add_argument("--kill-trials", type=int, default=0, help="dask start-up kills per checkout")
    args = parser.parse_args()
    against = {}
    for item in args.against:
        name, _, path = item.partition("=")
        against[name] = Path(path)
    if args.empty:
        print(tabulate(empty_fits(args.empty, against), headers=["oodfs", "empty fit ms", "difference ms"]))
        print()
    print(
        tabulate(
            per_fit(args.methods.split(","), args.repeats, against),
            headers=["method", "oodfs", "median ms", "difference ms", "ratio"],
        )
    )
    if args.runs_of_bench:
        print()
        print(
            tabulate(
                whole_runs(args.runs_of_bench, args.methods, against),
                headers=["oodfs", "wall s (each run)", "median s", "ratio"],
            )
        )
    if args.kill_trials:
        print()
        print(
            tabulate(
                startup_kills(args.kill_trials, against),
                headers=["oodfs", "s until none is left (each trial)", "longest s"],
            )
        )


if __name__ == "__main__":
    main()
