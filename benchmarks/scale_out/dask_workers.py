"""One and two dask workers on this machine, paired: the speed-up of a second worker (issue 48, item 3).

    python benchmarks/scale_out/dask_workers.py [--repeats 3] [--workers 1,2] [-- BENCH ARGS...]

Runs ``oodfs bench ... --backend dask --jobs W`` as a user does (a fresh process, a LocalCluster of
W workers, no figures), for each W in turn, ``--repeats`` rounds (W1 W2 W1 W2 ...), so that a change
of the machine's load hits every W alike. Each run's wall seconds and the CPU seconds of the
command and every process it waited for (``resource.RUSAGE_CHILDREN``); then per W the medians,
and per round the wall ratio of each W to the first, with their median. Every run must store the
same numbers as the first (checked: a backend decides where jobs run, never a number).

The default workload is the synthetic suite's ``poly`` setting, every r_train, 2 runs, three
methods (14 data sets): enough independent jobs for the pool to matter, small enough to repeat.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

DEFAULT = ["--suite", "synthetic", "--settings", "poly", "--runs", "2", "--methods", "dwr,ols,correlation"]


def values(folder: Path):
    from oodfs.results.store import load_results

    df = load_results(folder)
    keys = ["setting", "r_train", "run", "method", "point", "metric", "env", "k", "downstream"]
    return df.set_index([c for c in keys if c in df])["value"].sort_index()


def run(args: list[str], workers: int, out: Path) -> dict:
    cmd = ["oodfs", "bench", *args, "--backend", "dask", "--jobs", str(workers)]
    cmd += ["--no-figures", "--quiet", "--out", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"workers": workers, "wall_s": wall, "cpu_s": cpu}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workers", default="1,2")
    p.add_argument("bench", nargs="*", help="oodfs bench arguments (after --); default: " + " ".join(DEFAULT))
    a = p.parse_args(argv)
    args, counts = a.bench or DEFAULT, [int(w) for w in a.workers.split(",")]
    runs, first = [], None
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.repeats):
            for w in counts:
                out = Path(tmp) / f"w{w}-r{r}"
                runs.append({"round": r, **run(args, w, out)})
                print(f"round {r}, {w} worker(s): {runs[-1]['wall_s']:.1f} s wall", file=sys.stderr)
                got = values(out)
                if first is None:
                    first = got
                elif not got.equals(first):
                    raise SystemExit(f"{w} workers stored other numbers than the first run")
    rows = []
    for w in counts:
        mine = [x for x in runs if x["workers"] == w]
        base = {y["round"]: y["wall_s"] for y in runs if y["workers"] == counts[0]}
        ratios = [x["wall_s"] / base[x["round"]] for x in mine]
        rows.append(
            [
                w,
                f"{statistics.median(x['wall_s'] for x in mine):.1f}",
                " ".join(f"{x['wall_s']:.1f}" for x in mine),
                f"{statistics.median(x['cpu_s'] for x in mine):.1f}",
                f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
            ]
        )
    headers = ["workers", "wall s (median)", "wall s (each round)", "CPU s (median)"]
    headers.append(f"wall / {counts[0]} worker(s)")
    print(f"oodfs bench {' '.join(args)} --backend dask --no-figures --quiet; every run: the same numbers")
    print(tabulate(rows, headers, tablefmt="github"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
