"""The built-in leaderboard formats, registered through the ``oodfs_leaderboard_formats`` hook as
a plugin's are (each escapes method and setting names for its language: oodfs/report/escape.py)."""

from __future__ import annotations

from oodfs.contract.extensions import OutputFormat
from oodfs.contract.hookspecs import hookimpl

FORMATS = (
    OutputFormat(
        "markdown",
        "GitHub markdown tables (what `oodfs bench` prints)",
        "markdown",
        lambda b: b.to_markdown(),
        ".md",
    ),
    OutputFormat(
        "csv",
        "one row per cell: mean, interval, runs, best-set membership (no cell is a spreadsheet formula)",
        "csv",
        lambda b: b.to_csv(),
        ".csv",
    ),
    OutputFormat(
        "latex", "LaTeX tabular environments, notes as comments", "latex", lambda b: b.to_latex(), ".tex"
    ),
    OutputFormat(
        "html", "a page of its own, from the results site's template", "html", lambda b: b.to_html(), ".html"
    ),
)


@hookimpl
def oodfs_leaderboard_formats() -> list[OutputFormat]:
    return list(FORMATS)
