"""``oodfs plot``: the paper's figures and the feature-ranking table of a results folder."""

from __future__ import annotations

import sys

from oodfs.commands.options import add_selection
from oodfs.validation import OodfsError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "plot",
        help="draw the paper's figures and the feature-ranking table for a results folder",
        description="Write DIR/figures/figure1-RULE.{png,pdf,svg} (metrics vs r_train), ood_s-RULE.* "
        "(RMSE vs number of selected features), summary-RULE.* (mean ranks over all settings) and "
        "feature_ranking-RULE.md.",
    )
    p.add_argument("path", help="results folder written by `oodfs bench`")
    p.add_argument(
        "--downstream",
        metavar="MODEL",
        help="the downstream model whose RMSEs to show, when the run trained several (default: its first)",
    )
    add_selection(p)


def run(args) -> int:
    from oodfs.report.plots import make_figures
    from oodfs.report.report import Report

    report = Report.from_path(args.path, args.selection, args.downstream)
    try:
        paths = make_figures(report, args.path)
    except OSError as exc:
        raise OodfsError(f"cannot write the figures into {args.path}: {exc.strerror or exc}") from None
    print(f"figures: {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0
