"""Writing figures: every figure oodfs draws is saved here, in the formats asked for, with no
creation date (a figure drawn again from the same results is the same file).

Each file is drawn in memory and then written in one step (:mod:`oodfs.results.atomic`): a full
disk gives an OSError naming the file, with no partial file left, where matplotlib's own writers,
failing half-way, left half a file and (the PDF writer) raised an AttributeError from their
clean-up instead."""

from __future__ import annotations

import contextlib
import contextvars
import io
from pathlib import Path

from oodfs.results.atomic import write_atomically


def pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


#: the formats every figure is written in: PNG for a quick look, PDF for a paper, SVG for a web page
FIGURE_FORMATS = ("png", "pdf", "svg")
_formats: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "figure_formats", default=FIGURE_FORMATS
)
#: no creation date in the files: a figure drawn again from the same results is the same file
_NO_DATE = {"png": None, "pdf": {"CreationDate": None}, "svg": {"Date": None}}


@contextlib.contextmanager
def figure_formats(formats):
    """Within the block, figures are written in these of FIGURE_FORMATS only (a site that keeps
    only SVG files does not draw PNG and PDF)."""
    token = _formats.set(tuple(f for f in FIGURE_FORMATS if f in set(formats)))
    try:
        yield
    finally:
        _formats.reset(token)


def save_figure(fig, out_dir: Path, stem: str) -> list[Path]:
    """Write ``fig`` as ``out_dir/stem.png`` (150 dpi), ``.pdf`` and ``.svg`` (or the formats of
    :func:`figure_formats`), cropped to what is drawn (with a small margin); return the paths
    written, in that order."""
    plt = pyplot()
    paths = []
    # svg.hashsalt: element ids from the name, not a random salt; fonttype none: text as text
    # (small, crisp, searchable in the page)
    with plt.rc_context({"svg.hashsalt": stem, "svg.fonttype": "none"}):
        for ext in _formats.get():
            path = Path(out_dir) / f"{stem}.{ext}"
            drawn = io.BytesIO()
            fig.savefig(
                drawn,
                format=ext,
                bbox_inches="tight",
                dpi=150 if ext == "png" else None,
                metadata=_NO_DATE[ext],
            )
            paths.append(write_atomically(path, drawn.getbuffer()))
    return paths
