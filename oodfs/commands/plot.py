"""``oodfs plot``: the paper's figures and the feature-ranking table of a results folder."""

from __future__ import annotations

import sys

from oodfs.commands.options import add_selection, folder, out_option
from oodfs.validation import write_failed


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
    p.add_argument(
        "--out",
        type=folder,
        metavar="DIR",
        help="write DIR/figures/ instead (the results folder may be read-only)",
    )
    add_selection(p)


def run(args) -> int:
    from oodfs.report.plots import make_figures
    from oodfs.report.report import Report
    from oodfs.results.outputs import check_output

    report = Report.from_path(args.path, args.selection, args.downstream)  # (what is read, first)
    out = args.path if args.out is None else args.out
    check_output(out, out_option(args), inputs=[args.path], writes=("figures",))
    try:
        paths = make_figures(report, out)
    except OSError as exc:  # a full disk (exit 1), or a read-only results folder (exit 2)
        error = write_failed(exc, f"the figures into {out}")
        raise type(error)(f"{error}{'' if args.out else ' (--out DIR writes them elsewhere)'}") from None
    print(f"figures: {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0
