"""HTML of the reports: the Jinja2 templates (``templates/``, autoescaped), the inline assets and
their Content-Security-Policy, and one leaderboard's page (``oodfs leaderboard --format html``,
and the results site's leaderboard fragments)."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2
import markupsafe
import numpy as np

from oodfs.report.escape import terminal

TEMPLATES = Path(__file__).with_name("templates")


# -- templates -------------------------------------------------------------------------------


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_visible_controls,
    )
    env.filters["inline"] = inline_markup
    env.filters["number"] = _number
    return env


def _visible_controls(value):
    """Every value a template prints, with control characters and bidirectional overrides
    written as visible escapes (``\x1b``, ``\u202e``; line breaks and tabs kept): a name on the
    page never carries a raw ESC, nor reorders the text around it to read as another name."""
    if isinstance(value, markupsafe.Markup):  # HTML already: those characters are never markup
        return markupsafe.Markup(terminal(value, newlines=True))
    if isinstance(value, str):
        return terminal(value, newlines=True)
    return value


def inline_markup(text) -> markupsafe.Markup:
    """The report's sentences as HTML: escaped first, then their ``code`` and **bold** marks."""
    s = str(markupsafe.escape(text))
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    return markupsafe.Markup(s)


def _number(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return ""
    return f"{value:.{digits}f}"


def assets(env: jinja2.Environment) -> dict:
    """Inline CSS and JavaScript, and a Content-Security-Policy that allows exactly them, images
    beside the page and nothing else (no request can leave the page)."""
    css = (TEMPLATES / "site.css").read_text()
    js = (TEMPLATES / "site.js").read_text()

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    csp = (
        f"default-src 'none'; img-src 'self' file: data:; style-src {digest(css)}; script-src {digest(js)}; "
        "base-uri 'none'; form-action 'none'"
    )
    return dict(css=markupsafe.Markup(css), js=markupsafe.Markup(js), csp=csp)


# -- one leaderboard --------------------------------------------------------------------------


@dataclass
class Cell:
    text: str
    best: bool = False
    sort: float | None = None  # the number a column sorts by (the cell's mean); None: by text
    reference: bool = False  # a method whose rows come from the shipped reference results


_LEADING_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")


def number_cell(text: str, best: bool) -> Cell:
    m = _LEADING_NUMBER.match(text)
    return Cell(text, best, float(m.group(1)) if m else None)


def leaderboard_context(board) -> dict:
    """What the leaderboard template shows: exactly the tables, sentences and flags the markdown
    leaderboard prints (:meth:`Leaderboard.tables` and its notes), with sort keys for the page."""
    res = board.report.results
    reference = (
        set(res.loc[res["origin"] == "reference", "method"])
        if "origin" in res and (res["origin"] == "reference").any()
        else set()
    )
    tables = []
    for title, header, rows in board.tables():
        body = [[number_cell(t, best) for t, best in row] for row in rows]
        for row in body:  # the first column names the method
            row[0].reference = row[0].text in reference
        # the tables of one metric by r_train follow their setting's averaged table (see tables())
        tables.append(dict(title=title, header=header, rows=body, by_r_train=title.endswith(" by r_train")))
    return dict(
        suite=board.suite,
        rule=board.rule,
        preamble=board._preamble(),
        tables=tables,
        notes=board.notes,
        diagnostics=board._diagnostic_flags(),
        failures=[f[2:] for f in board._failures()],
        reference=sorted(reference),
    )


def render_leaderboard(board) -> str:
    """``oodfs leaderboard --format html``: the site's leaderboard fragment on a page of its own."""
    env = environment()
    return env.get_template("leaderboard_page.html.j2").render(
        lb=leaderboard_context(board), assets=assets(env)
    )
