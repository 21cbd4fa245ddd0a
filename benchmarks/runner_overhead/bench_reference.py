"""Comparing a new method with reference results: the time of that method alone.

Makes reference results from ``oodfs bench --suite synthetic --quick`` (every method of the suite,
or ``--methods``; timed once: what a comparison costs without a reference), writes them with
:func:`oodfs.run.reference.write_reference` (file sizes reported), then times side by side, one fresh
process per run, interleaved over repeats, medians of wall time:

* ``--methods mine --reference FILE``: a cheap new method (a ``--plugin`` file) next to every
  reference method;
* ``--methods mine``: the new method alone, no reference (the floor).

The reference methods' rows of the first must equal the reference run's rows (checked).

    python benchmarks/runner_overhead/bench_reference.py  # quick suite, all methods, 3 repeats
    python benchmarks/runner_overhead/bench_reference.py --methods ols,correlation,lasso --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

from oodfs.results.store import load_results
from oodfs.run.reference import write_reference

MINE = '''
import numpy as np
import oodfs

class Mine(oodfs.Selector):
    """Squared correlation with the target (a cheap new method)."""
    name = "mine"
    def _fit_scores(self, X, y, sw):
        return np.corrcoef(X.T, y)[-1, :-1] ** 2

@oodfs.hookimpl
def oodfs_selectors():
    return [Mine]
'''
KEY = ["setting", "r_train", "run", "method", "point", "metric", "env", "k"]


def bench(out: Path, args, *extra: str) -> float:
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
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--methods", help="comma-separated methods of the reference (default: the suite's)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plugin = tmp / "mine.py"
        plugin.write_text(MINE)
        methods = ["--methods", args.methods] if args.methods else []
        full = bench(tmp / "all", args, *methods)
        parquet, meta = write_reference(tmp / "all", tmp / "ref" / "synthetic-default.parquet")
        stored = (tmp / "all" / "results.sqlite").stat().st_size
        times = {"mine + reference": [], "mine alone": []}
        for i in range(args.repeats):
            times["mine + reference"].append(
                bench(
                    tmp / f"ref{i}",
                    args,
                    "--methods",
                    "mine",
                    "--plugin",
                    str(plugin),
                    "--reference",
                    str(parquet),
                )
            )
            times["mine alone"].append(
                bench(tmp / f"alone{i}", args, "--methods", "mine", "--plugin", str(plugin))
            )
        a = load_results(tmp / "ref0")
        a = a[a["method"] != "mine"].sort_values(KEY).reset_index(drop=True)
        b = load_results(tmp / "all").sort_values(KEY).reset_index(drop=True)
        same = a[KEY + ["value", "scores"]].equals(b[KEY + ["value", "scores"]])
        med = {k: statistics.median(v) for k, v in times.items()}
        rows = [["every method, run (the reference)", f"{full:.1f}", "1 run"]]
        rows += [[k, f"{m:.1f}", f"median of {args.repeats}"] for k, m in med.items()]
        print(tabulate(rows, headers=["oodfs bench --suite synthetic --quick ...", "wall s", ""]))
        print(
            f"\nmine + reference / mine alone: {med['mine + reference'] / med['mine alone']:.2f}; "
            f"mine + reference / every method: {med['mine + reference'] / full:.3f}"
        )
        print(f"reference rows equal the reference run's: {same}")
        print(
            f"reference files: {parquet.stat().st_size / 1e3:.1f} kB parquet + "
            f"{meta.stat().st_size / 1e3:.1f} kB json "
            f"({len(b)} rows; the run's results.sqlite: {stored / 1e3:.0f} kB)"
        )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
