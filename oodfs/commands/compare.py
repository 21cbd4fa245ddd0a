"""``oodfs compare``: paired tests between methods, a Friedman test and critical-difference
diagrams, for each setting and headline metric of a results folder."""

from __future__ import annotations

import sys
from pathlib import Path

from oodfs.commands.options import add_selection


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="paired tests between methods, Friedman test and critical-difference diagrams",
        description="For each setting and headline metric of a results folder: a Friedman test across "
        "methods, pairwise two-sided Wilcoxon signed-rank tests paired over (r_train, run) with Holm "
        "correction, the mean paired difference with its 95 % interval, and a critical-difference diagram "
        "(DIR/figures/cd_*.png). Writes DIR/compare.md and prints it.",
    )
    p.add_argument("path", help="results folder written by `oodfs bench`")
    add_selection(p)


def run(args) -> int:
    from oodfs.report.compare import comparison_markdown
    from oodfs.report.report import Report

    report = Report.from_path(args.path, args.selection)
    fig_dir = Path(args.path) / "figures"
    text, paths = comparison_markdown(report, fig_dir)
    text = f"# oodfs comparison{f' — suite `{report.suite}`' if report.suite else ''}\n\n" + text
    out = Path(args.path) / "compare.md"
    out.write_text(text.replace("](cd_", "](figures/cd_"))
    sys.stdout.write(text)
    print(f"wrote {out}" + (f" and {len(paths)} figure files" if paths else ""), file=sys.stderr)
    return 0
