"""A suite's leaderboards, written by oodfs before and after the lookup cuts, side by side.

    python benchmarks/leaderboard_time/bench_leaderboard.py FOLDER [FOLDER ...] [--old-commit 20d0a03] \
        [--repeats 3] [--out FILE.md]

Each FOLDER is a results folder of ``oodfs bench``. For each, one fresh process reads its report
(untimed) and builds the leaderboard of every downstream model and its Markdown, as ``bench``
writes them after a run; the CPU seconds of that step are timed. The old code is the ``oodfs/``
tree of ``--old-commit`` put first on the path; old and new alternate. Seconds are medians of
``--repeats``; "same" says whether every Markdown, CSV, LaTeX and HTML text is equal byte for byte.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))
from paired import alternated, finish, old_tree  # noqa: E402 -- benchmarks/shared/paired.py

CHILD = r"""
import hashlib, json, sys, time, warnings
warnings.filterwarnings("ignore")
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report
report = Report.from_path(sys.argv[1], "val", None, None)
reports = report.model_reports()
for r in reports:  # what the leaderboards read, computed once by the report either way
    r.wide_summary()
t0 = time.process_time()
boards = [Leaderboard(r) for r in reports]
texts = [b.to_markdown() for b in boards]
seconds = time.process_time() - t0
texts += [f(b) for b in boards for f in (Leaderboard.to_csv, Leaderboard.to_latex, Leaderboard.to_html)]
digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()
print(json.dumps({"seconds": seconds, "digest": digest, "models": len(reports)}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--old-commit", default="20d0a03")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write the table to this markdown file (replaced)")
    args = ap.parse_args(argv)
    old = old_tree(args.old_commit, "oodfs")
    lines = [
        f"Old: oodfs/ at {args.old_commit}; new: the working tree. CPU seconds of building every "
        f"downstream model's leaderboard and its Markdown, medians of {args.repeats}, alternated, "
        "one fresh process each.",
        "",
        "| folder | models | old CPU s | new CPU s | new / old | same texts |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for folder in args.folders:
        o, n, old_run, new_run = alternated(CHILD, [str(folder)], old, args.repeats)
        same = "yes, byte for byte" if old_run["digest"] == new_run["digest"] else "NO"
        lines.append(f"| {folder.name} | {new_run['models']} | {o:.1f} | {n:.1f} | {n / o:.2f} | {same} |")
        print(lines[-1], flush=True)
    finish(lines, args.out)


if __name__ == "__main__":
    main()
