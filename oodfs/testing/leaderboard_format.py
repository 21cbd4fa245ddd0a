"""The checks of a leaderboard format (oodfs.testing.check_output_format): a leaderboard of hostile
names (:func:`hostile_results`) must stay text in the format's declared language."""

from __future__ import annotations

from oodfs.testing._core import _declared, _ensure, _Failed, _kind_check

#: method and setting names that are markup, formulas, commands and terminal escapes in one format or
#: another: :func:`hostile_results` runs a small benchmark under these names, and
#: :func:`check_output_format` checks that a format shows them as text
HOSTILE_METHODS = (
    '=HYPERLINK("http://evil.example/x")',
    "<script>alert(1)</script>",
    "a`b![i](javascript:alert(1))`",
    "\x1b[31mred $\\alpha$ \u202eevil",
)
HOSTILE_SETTINGS = (
    "../../escaped",
    "`](javascript:alert(2))<img src=x onerror=alert(3)>",
    "+cmd|' /C calc'!A0",
)


def hostile_results(folder) -> str:
    """Run a small benchmark (2 runs, 200 rows) whose method and setting names are
    :data:`HOSTILE_METHODS` and :data:`HOSTILE_SETTINGS` into ``folder``/out, in this process, and
    return that results folder: the leaderboard :func:`check_output_format` renders."""
    import contextlib
    import io
    import json
    import textwrap
    from pathlib import Path

    from oodfs.cli import main

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    plugin = folder / "hostile_names.py"
    plugin.write_text(_HOSTILE_PLUGIN % list(HOSTILE_METHODS))
    settings = "\n".join(
        f'[settings.{json.dumps(s)}]\nparams = {{ setting = "poly" }}' for s in HOSTILE_SETTINGS
    )
    methods = "[" + ", ".join(json.dumps(m) for m in ("ols", *HOSTILE_METHODS)) + "]"
    suite = folder / "hostile.toml"
    suite.write_text(
        textwrap.dedent(f"""
        environment = "synthetic"
        r_train = [2.5]
        r_test = [-2.0, 2.0]
        runs = 2
        n_train = 200
        n_val = 100
        n_test = 200
        k = 3
        methods = {methods}
        """)
        + settings
        + "\n"
    )
    out = folder / "a" / "b" / "out"
    out.parent.mkdir(parents=True, exist_ok=True)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(
            ["bench", "--suite", str(suite), "--plugin", str(plugin), "--out", str(out), "--jobs", "1"]
        )
    if code != 0:
        raise RuntimeError(f"the hostile benchmark failed: {err.getvalue().strip()}")
    return str(out)


_HOSTILE_PLUGIN = """
import numpy as np
import oodfs

def selector(name):
    def fit(self, X, y, sw):
        return np.abs(np.corrcoef(X.T, y)[-1, :-1])
    cls = type("Hostile", (oodfs.Selector,), {"name": name, "__doc__": "a hostile name", "_fit_scores": fit})
    cls.__module__ = __name__
    return cls

NAMES = %r

@oodfs.hookimpl
def oodfs_selectors():
    return [selector(n) for n in NAMES]
"""


def _inert_markdown(text: str) -> None:
    """Rendered as CommonMark with tables: no tag but a report's, no link, no foreign image."""
    import re
    from html.parser import HTMLParser

    from markdown_it import MarkdownIt

    tags = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append((tag, dict(attrs)))

    Tags().feed(MarkdownIt("commonmark").enable("table").render(text))
    allowed = {
        "h1",
        "h2",
        "h3",
        "p",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "code",
        "strong",
        "ul",
        "li",
    }
    for tag, attrs in tags:
        _ensure(tag in allowed | {"img", "em"}, f"the markdown renders a <{tag}> element: {attrs}")
        if tag == "img":
            _ensure(
                re.fullmatch(r"(figures/)?[A-Za-z0-9_-][A-Za-z0-9._-]*", attrs.get("src", "")),
                f"image {attrs}",
            )
        _ensure(not any(k.startswith("on") or k == "href" for k in attrs), f"a link or handler: {attrs}")


def _inert_html(text: str) -> None:
    """No hostile name as markup: none of their tags, no handler attribute, no javascript: address."""
    from html.parser import HTMLParser

    found = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    Tags().feed(text)
    for tag, attrs in found:
        _ensure(not any(k.startswith("on") for k in attrs), f"a <{tag}> with an event handler: {attrs}")
        _ensure(
            not any("javascript:" in str(v).lower() for v in attrs.values()),
            f"a javascript: address: {attrs}",
        )
    for name in (*HOSTILE_METHODS, *HOSTILE_SETTINGS):
        for piece in ("<script>alert", "<img src=x"):
            _ensure(not (piece in name and piece in text), f"the name {name!r} is markup in the page")


def _inert_csv(text: str) -> None:
    """No cell that a spreadsheet reads as a formula (a number with a sign is a number)."""
    import csv
    import io

    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                try:
                    float(cell)
                except ValueError:
                    raise _Failed(f"the cell {cell!r} is a spreadsheet formula") from None


def _inert_latex(text: str) -> None:
    """No name's backslash, dollar or brace reaches LaTeX as a command or math."""
    _ensure("$\\alpha$" not in text, "a name's $...$ is math in the LaTeX")
    _ensure(
        "\\alpha" not in text.replace("\\textbackslash{}alpha", ""), "a name's \\alpha is a LaTeX command"
    )


_INERT = {"markdown": _inert_markdown, "html": _inert_html, "csv": _inert_csv, "latex": _inert_latex}


def check_output_format(fmt, leaderboard) -> None:
    """Check a :class:`oodfs.plugin.LeaderboardFormat` (earlier name ``OutputFormat``): rendered
    from ``leaderboard`` (a :class:`oodfs.report.leaderboard.Leaderboard`, best one of
    :func:`hostile_results`), the text
    holds every method name, no terminal escape or bidirectional override, and shows the names as
    text in its declared language (markdown renders no link, tag or foreign image; HTML has no
    handler or script from a name; CSV has no formula cell; LaTeX no command or math from a name)."""
    from oodfs.contract.extensions import FORMAT_LANGUAGES, LeaderboardFormat

    def metadata():
        _declared(fmt)
        _ensure(isinstance(fmt, LeaderboardFormat), "not an oodfs.plugin.LeaderboardFormat")
        _ensure(fmt.language in FORMAT_LANGUAGES, f"language {fmt.language!r} is none of {FORMAT_LANGUAGES}")

    def inert():
        text = fmt.render(leaderboard)
        _ensure(isinstance(text, str) and text.strip(), "render() returned no text")
        _ensure(
            "\x1b" not in text and "\u202e" not in text, "a terminal escape or bidi override reached the text"
        )
        _INERT.get(fmt.language, lambda t: None)(text)

    _kind_check(
        f"leaderboard format {getattr(fmt, 'name', fmt)!r}",
        {"check_format_metadata": metadata, "check_format_escaping": inert},
    )


#: the kit's function for the kind ``leaderboard_format`` (oodfs.contract.kinds): the same checks
check_leaderboard_format = check_output_format
