"""Copying a reference's rows into a store (``ResultStore.insert_tasks``, what ``--reference`` and
``new-method`` do for every suite): this tree's store module against an earlier commit's, CPU time
side by side in one process, and the two stores compared table by table (README.md beside this
script has the numbers).

    python benchmarks/store_insert/measure.py [--old REV] [--reference NAME] [--repeats 5]

Each repeat writes the reference's tasks and rows into a fresh store once with each version (the
order alternating); the ratio is the median over repeats of (this tree / old) from the same repeat.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import tempfile
import time
import types
from pathlib import Path

import oodfs.results.store as store
from oodfs.run.reference.replay import load_named

ROOT = Path(__file__).resolve().parents[2]


def old_store(rev: str) -> types.ModuleType:
    """``oodfs/results/store.py`` as commit ``rev`` had it, loaded from git."""
    source = subprocess.run(
        ["git", "show", f"{rev}:oodfs/results/store.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType("old_store")
    exec(compile(source, f"{rev}:oodfs/results/store.py", "exec"), module.__dict__)
    return module


def insert(ref, folder: Path, module) -> float:
    """CPU seconds of one ``insert_tasks`` into a fresh store at ``folder`` by ``module``'s store."""
    s = module.ResultStore(folder)
    start = time.process_time()
    s.insert_tasks(ref.tasks, ref.results)
    return time.process_time() - start


def tables(folder: Path) -> list:
    con = sqlite3.connect(folder / store.DB_NAME)
    try:
        return [
            con.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
            for t in ("tasks", "result_groups", "result_rows")
        ]
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="766b5ec", help="the commit whose store is the reference way")
    parser.add_argument("--reference", default="synthetic-binary-default")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    ref = load_named(args.reference)
    ref.tasks  # (built once, outside the timings)
    ways = {"new": store, "old": old_store(args.old)}
    ratios, times = [], {"new": [], "old": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            order = ["new", "old"] if r % 2 else ["old", "new"]
            seconds = {}
            for way in order:
                folder = Path(tmp) / f"{way}{r}"
                seconds[way] = insert(ref, folder, ways[way])
                times[way].append(seconds[way])
            same = tables(Path(tmp) / f"new{r}") == tables(Path(tmp) / f"old{r}")
            ratios.append(seconds["new"] / seconds["old"])
            print(
                f"repeat {r + 1}: new {seconds['new']:.2f} s, old {seconds['old']:.2f} s, "
                f"ratio {ratios[-1]:.3f}; stores equal table by table: {same}"
            )
            assert same, "the two stores differ"
    print(
        f"{args.reference} ({len(ref.results)} rows, {len(ref.tasks)} tasks), median CPU over {args.repeats} "
        f"repeats: new {statistics.median(times['new']):.2f} s, old {statistics.median(times['old']):.2f} s, "
        f"ratio {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})"
    )


if __name__ == "__main__":
    main()
