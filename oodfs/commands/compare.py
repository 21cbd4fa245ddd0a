"""``oodfs compare``: paired tests between methods, a Friedman test and critical-difference
diagrams, for each setting and headline metric of a results folder."""

from __future__ import annotations

import sys
from pathlib import Path

from oodfs.commands.options import add_downstream, add_metrics, add_selection, folder, out_option
from oodfs.validation import write_failed


def add_parser(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="paired tests between methods, Friedman test and critical-difference diagrams",
        description="For each setting and headline metric of a results folder: a Friedman test across "
        "methods and the tests of the analysis the leaderboard and the results page read (on real data each "
        "method against all_features, else every pair; two-sided Wilcoxon signed-rank over the suite's units "
        "of replication, Holm over the family), the mean paired difference with its 95 % interval, and a "
        "critical-difference diagram for every-pair families (DIR/figures/cd_*.png). Writes DIR/compare.md "
        "(DIR/compare-MODEL.md for --downstream MODEL, when it is not the run's first model) and prints it.",
    )
    p.add_argument("path", help="results folder written by `oodfs bench`")
    p.add_argument(
        "--out",
        type=folder,
        metavar="DIR",
        help="write DIR/compare.md and DIR/figures/ instead (the results folder may be read-only)",
    )
    add_selection(p)
    add_metrics(p)
    add_downstream(p)


def run(args) -> int:
    from oodfs.report.compare import comparison_markdown
    from oodfs.report.escape import file_stem, inside, md_code, write_text
    from oodfs.report.report import Report
    from oodfs.results.outputs import check_output

    report = Report.from_path(args.path, args.selection, args.downstream, args.metrics)  # what is read, first
    first = report.downstream == report.downstream_models[0]
    name = "compare.md" if first else f"compare-{file_stem(report.downstream)}.md"
    out_dir = Path(args.out if args.out is not None else args.path)
    check_output(out_dir, out_option(args), inputs=[args.path], writes=(name, "figures"))
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        text, paths = comparison_markdown(report, inside(out_dir, "figures"))
        text = f"# oodfs comparison{f' — suite {md_code(report.suite)}' if report.suite else ''}\n\n" + text
        out = write_text(out_dir / name, text.replace("](cd_", "](figures/cd_"))
    except OSError as exc:  # a full disk (exit 1), or a read-only results folder (exit 2)
        error = write_failed(exc, f"the comparison into {out_dir}")
        raise type(error)(f"{error}{'' if args.out else ' (--out DIR writes them elsewhere)'}") from None
    sys.stdout.write(text)
    print(f"wrote {out}" + (f" and {len(paths)} figure files" if paths else ""), file=sys.stderr)
    others = [m for m in report.downstream_models if m != report.downstream]
    if others:
        print(
            f"oodfs: note: these are the tests of downstream model {report.downstream}; the run also trained "
            + ", ".join(others)
            + f" (--downstream {others[0]})",
            file=sys.stderr,
        )
    return 0
