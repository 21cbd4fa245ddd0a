"""The whole benchmark's schedule on W workers from the seconds one whole run stored, every task of it.

    python benchmarks/scale_out/from_run.py ROOT [--workers 2,8,32,128]

ROOT is the folder of ``oodfs bench --suite all --out ROOT``. Each task's seconds are what its store
records over every invocation (``oodfs.report.summary.held_seconds``: its fit, its downstream models,
its data set's draw once). The runner's order (longest first, each job to the first worker that
frees) is replayed twice: one job per data set, and one job per task (a method alone on its data
set, the finest split; it leaves out the extra data draw and the downstream subsets a split job
trains again, so it is a lower bound). The total divided by W bounds both from below.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from oodfs.report.summary import computed_rows, held_seconds, stored_results
from oodfs.results.store import ResultStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "whole_benchmark"))
from whole_benchmark import lanes as makespan  # noqa: E402 -- longest first, each to the first free worker


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", type=Path)
    p.add_argument("--workers", default="2,8,32,128")
    args = p.parse_args()
    data_sets, tasks = {}, {}
    for folder in sorted(args.root.iterdir()):
        if not (folder / "results.sqlite").exists():
            continue
        held = held_seconds(computed_rows(stored_results(ResultStore(folder)))).sum(axis=1)
        for key, seconds in held.items():
            tasks[(folder.name, *key)] = seconds
            data_sets[(folder.name, *key[:3])] = data_sets.get((folder.name, *key[:3]), 0.0) + seconds
    total = sum(tasks.values())
    print(f"{total:.0f} worker-seconds, {len(data_sets)} data sets, {len(tasks)} tasks")
    print(f"longest data set: {max(data_sets, key=data_sets.get)} {max(data_sets.values()):.0f} s")
    print(f"longest task: {max(tasks, key=tasks.get)} {max(tasks.values()):.0f} s")
    print("| workers | one job per data set | one job per task | total / workers |")
    print("| ---: | ---: | ---: | ---: |")
    for w in (int(x) for x in args.workers.split(",")):
        a, b = makespan(list(data_sets.values()), w), makespan(list(tasks.values()), w)
        print(f"| {w} | {a:.0f} s ({a / 60:.1f} min) | {b:.0f} s ({b / 60:.1f} min) | {total / w:.0f} s |")


if __name__ == "__main__":
    main()
