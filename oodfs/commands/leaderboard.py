"""``oodfs leaderboard``: the leaderboard of a results folder, in several formats."""

from __future__ import annotations

import sys

from oodfs.commands.options import add_downstream, add_metrics, add_selection
from oodfs.validation import write_failed


def add_parser(sub) -> None:
    from oodfs.contract.registry import registry

    p = sub.add_parser(
        "leaderboard",
        help="print the leaderboard of a results folder",
        description="Aggregate a results folder (or results.parquet/.csv file) into a leaderboard.",
    )
    p.add_argument("path", help="results folder written by `oodfs bench`, or a results file")
    formats = registry().entries("format")
    p.add_argument(
        "--format",
        default="markdown",
        choices=list(formats),
        help="output format (default markdown): "
        + "; ".join(f"{n}: {f.description}" for n, f in formats.items()),
    )
    add_selection(p)
    add_metrics(p)
    p.add_argument("--output", "-o", help="write to this file instead of standard output")
    add_downstream(p)


def run(args) -> int:
    from oodfs.report.leaderboard import Leaderboard
    from oodfs.report.report import Report
    from oodfs.results.atomic import write_atomically
    from oodfs.results.outputs import check_output

    if args.output:
        check_output(args.output, "--output", inputs=[args.path])
    report = Report.from_path(args.path, args.selection, args.downstream, args.metrics)
    text = Leaderboard(report).render(args.format)
    if args.output:
        try:
            write_atomically(args.output, text.encode())  # a full disk leaves no half a file
        except OSError as exc:
            raise write_failed(exc, f"--output {args.output}") from None
    else:
        sys.stdout.write(text)
    return 0
