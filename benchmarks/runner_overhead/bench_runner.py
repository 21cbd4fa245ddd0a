"""Runner overheads: the dask backend against local processes, and the cost of ``--resume``.

Runs ``oodfs bench --suite synthetic --quick`` (or ``--methods`` of it) as a user does, one fresh
process per run, side by side with ``--backend local`` and ``--backend dask`` (a LocalCluster of
the same number of worker processes), interleaved over repeats so that load on the machine hits
both alike; the table shows medians of wall time. Both backends must give identical results
(checked). Then the cost of resume: ``--resume`` on a finished run (every task found finished
and skipped; the command's wall time and, in-process, the runner's own time) and on a run that
lost half of its tasks, whose results must equal the uninterrupted run's.

    python benchmarks/runner_overhead/bench_runner.py                       # quick suite, 3 repeats, --jobs 2
    python benchmarks/runner_overhead/bench_runner.py --methods ols,correlation,dwr --repeats 5
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from oodfs.results.store import ResultStore, load_results
from oodfs.run.runner import run_suite
from oodfs.run.suite import customise, load_suite

KEY = ["setting", "r_train", "run", "method", "point", "metric"]


def bench(out: Path, args, *extra: str) -> float:
    """Wall seconds of one ``oodfs bench`` command in a fresh process."""
    cmd = [
        sys.executable,
        "-m",
        "oodfs.cli",
        "bench",
        "--suite",
        "synthetic",
        "--quick",
        "--jobs",
        str(args.jobs),
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]
    if args.methods:
        cmd += ["--methods", args.methods]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def same_results(a: Path, b: Path) -> bool:
    ra, rb = (load_results(p).sort_values(KEY).reset_index(drop=True) for p in (a, b))
    return ra[KEY + ["value", "scores"]].equals(rb[KEY + ["value", "scores"]])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--methods", help="comma-separated subset of the quick suite's methods (default: all)")
    args = ap.parse_args(argv)

    suite = customise(
        load_suite("synthetic"), quick=True, methods=args.methods.split(",") if args.methods else None
    )
    n_tasks = len(suite.task_keys())
    print(
        f"# bench_runner: `oodfs bench --suite synthetic --quick`, {n_tasks} tasks "
        f"({', '.join(suite.methods)}), "
        f"--jobs {args.jobs}; python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )

    work = Path(tempfile.mkdtemp(prefix="oodfs-bench-runner-"))
    walls: dict[str, list[float]] = {"local": [], "dask": []}
    try:
        for r in range(args.repeats):
            for backend in ("local", "dask") if r % 2 == 0 else ("dask", "local"):
                walls[backend].append(bench(work / f"{backend}-{r}", args, "--backend", backend))
                print(f"  repeat {r}: {backend:5s} {walls[backend][-1]:7.2f} s", file=sys.stderr, flush=True)
        identical = all(same_results(work / f"local-{r}", work / f"dask-{r}") for r in range(args.repeats))
        local, dask = statistics.median(walls["local"]), statistics.median(walls["dask"])
        print()
        print(
            tabulate(
                [
                    ["local (joblib processes)", f"{local:.2f}", "1.00"],
                    ["dask (LocalCluster)", f"{dask:.2f}", f"{dask / local:.2f}"],
                ],
                headers=["backend", "median wall s", "ratio to local"],
                tablefmt="github",
            )
        )
        print(
            f"\ndask overhead: {dask - local:+.2f} s per run ({100 * (dask / local - 1):+.1f} %), medians of "
            f"{args.repeats}; results identical across backends: {'yes' if identical else 'NO'}"
        )

        finished = work / "local-0"
        skip_cli = [bench(finished, args, "--resume") for _ in range(3)]
        skip_runner = []
        for _ in range(5):
            start = time.perf_counter()
            run_suite(suite, finished, jobs=args.jobs, resume=True, progress=False)
            skip_runner.append(time.perf_counter() - start)
        # a run that lost half of its tasks (deleted from the store), resumed
        half = work / "half"
        shutil.copytree(finished, half)
        with sqlite3.connect(half / "results.sqlite") as con:
            lost = con.execute("SELECT setting, r_train, run, method FROM tasks ORDER BY rowid").fetchall()[
                ::2
            ]
        ResultStore(half).remove_tasks(lost)  # (its rows are in two tables: the store deletes both)
        resumed = bench(half, args, "--resume")
        complete = same_results(finished, half)
        print()
        print(
            tabulate(
                [
                    [
                        f"`oodfs bench --resume` of a finished run ({n_tasks} tasks skipped)",
                        f"{statistics.median(skip_cli):.2f}",
                        "the whole command: start-up, imports, leaderboard, figures",
                    ],
                    [
                        "the runner's part of it (run_suite, in process)",
                        f"{statistics.median(skip_runner):.3f}",
                        f"{1000 * statistics.median(skip_runner) / n_tasks:.2f} ms per skipped task",
                    ],
                    [
                        f"`oodfs bench --resume` after losing {len(lost)} of {n_tasks} tasks",
                        f"{resumed:.2f}",
                        f"{100 * resumed / local:.0f} % of a full local run; results equal an "
                        f"uninterrupted run's: {'yes' if complete else 'NO'}",
                    ],
                ],
                headers=["resume", "wall s", "note"],
                tablefmt="github",
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
