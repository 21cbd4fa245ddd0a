"""``oodfs report``: a static site (one page, figures beside it) of one or more results folders."""

from __future__ import annotations

import sys

from oodfs.commands.options import add_metrics, add_selection, csv_list
from oodfs.validation import OodfsError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report",
        help="write a static results site (open SITE/index.html; no server, no network)",
        description="Write one page of one or more results folders of a suite: overview and "
        "provenance, the leaderboard per setting with intervals and best sets (sortable), Figure 1, "
        "ood-S, a summary of ranks over all settings, critical-difference diagrams, selected features, "
        "weight diagnostics and the statistical comparisons, for every model-selection rule (a switch "
        "shows one). Several folders are shown side by side; folders of several suites get a page "
        "each and an index page with the verdict across suites. A real-data suite's page shows its shift "
        "diagnosis (change of X against change of Y | X).",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="DIR",
        help="results folders written by `oodfs bench` (of one suite or several)",
    )
    p.add_argument(
        "--out",
        required=True,
        metavar="SITE",
        help="folder to write: a new or empty one, or a site `oodfs report` wrote before, replaced whole "
        "when it holds only files a report wrote (anything else is refused, never deleted)",
    )
    add_selection(p)
    add_metrics(p)
    p.add_argument(
        "--formats",
        type=csv_list,
        default=["svg", "png", "pdf"],
        help="figure files to keep beside the page (comma-separated; svg is always kept: the page shows "
        "it; default svg,png,pdf)",
    )


def run(args) -> int:
    from oodfs.report.site import FIGURE_FILES, build_site
    from oodfs.shift import diagnose_suite

    bad = [f for f in args.formats if f not in FIGURE_FILES]
    if bad:
        raise OodfsError(f"unknown figure format {bad[0]!r} in --formats; valid: {', '.join(FIGURE_FILES)}")
    index = build_site(
        args.paths,
        args.out,
        selection=args.selection,
        formats=args.formats,
        columns=args.metrics,
        diagnose=diagnose_suite,  # the shift diagnosis of a real-data suite, shown on its page
    )
    print(f"wrote {index} (open it in a browser)", file=sys.stderr)
    return 0
