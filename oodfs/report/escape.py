"""Escaping per output format, in one place: a name in a results folder (a method, a setting, an
environment label, a metric's title) is data, never markup, a formula, a terminal command or a
path.

Every report format takes names through the function for its format: :func:`md_text` and
:func:`md_code` (markdown, including code spans and image alt text), :func:`latex` and
:func:`latex_comment`, :func:`csv_frame` (spreadsheet formulas), :func:`terminal` (control
characters), :func:`mpl_text` (matplotlib captions) and :func:`file_stem` / :func:`inside`
(file names made from names, kept inside their folder). HTML is escaped by its templates.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import unicodedata
from pathlib import Path

from oodfs.validation import OodfsError

#: characters that reorder the text shown around them (bidirectional overrides and isolates)
_BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")


def _visible(char: str) -> str:
    """A control character as its escape (``\\x1b``, ``\\u202e``), anything else as it is."""
    if unicodedata.category(char) == "Cc" or char in _BIDI:
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return char


def terminal(text, *, newlines: bool = False) -> str:
    """Text safe to print: control characters (ESC sequences, carriage returns, bidi overrides)
    shown as escapes; ``newlines``: keep line breaks (and tabs)."""
    keep = "\n\t" if newlines else ""
    return "".join(c if c in keep else _visible(c) for c in str(text))


def one_line(text) -> str:
    """One line of text: whitespace runs (line breaks too) as one space, control characters escaped."""
    return terminal(" ".join(str(text).split()))


#: the most characters a name takes where room is fixed (a figure's labels): longer names are
#: cut with an ellipsis, so that a figure's size never depends on how long a name is
DISPLAY_WIDTH = 28


def short_names(names, width: int = DISPLAY_WIDTH) -> list[str]:
    """Names as a figure shows them: one line, control characters escaped, at most ``width``
    characters (cut with an ellipsis), and still distinct: a cut name that meets another one
    ends in a short hash of the whole name."""
    out, seen = [], set()
    for name in names:
        text = one_line(name)
        if len(text) > width:
            text = text[: width - 1] + "\u2026"
            if text in seen:
                digest = hashlib.sha256(str(name).encode()).hexdigest()[:6]
                text = text[: width - 8] + "\u2026" + digest
        seen.add(text)
        out.append(text)
    return out


# -- markdown -----------------------------------------------------------------------------------
#: only what could open an HTML tag or start an entity is escaped ("<1950" reads as itself)
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")
_ENTITY_START = re.compile(r"&(?=#?\w+;)")
_MD_SPECIAL = re.compile(r"([\\`*\[\]~|#!])")


def md_text(text) -> str:
    """Text inside a markdown line or table cell: no markup, link, image, HTML or table pipe
    can start in it. What could open a tag or an entity becomes one; markdown's characters are
    escaped."""
    text = _HTML_START.sub("&lt;", _ENTITY_START.sub("&amp;", one_line(text)))
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # an underscore inside a word never emphasises (CommonMark); at a word's edge it may
    return re.sub(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])", r"\\_", text)


def md_code(text) -> str:
    """A code span showing ``text`` literally, whatever backticks it holds (CommonMark: a fence
    longer than any backtick run inside, padded when the text starts or ends with one). Table
    pipes are escaped (GitHub tables split on them even inside a code span)."""
    if _HTML_START.search(str(text)) or _ENTITY_START.search(str(text)):  # escaped text instead: no raw tag
        return md_text(text)
    text = one_line(text).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_alt(text) -> str:
    """Image alt text: ``md_text`` (brackets are escaped, so the text cannot end the image)."""
    return md_text(text)


# -- LaTeX ---------------------------------------------------------------------------------------
_LATEX = {
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "%": r"\%",
    "&": r"\&",
    "#": r"\#",
    "$": r"\$",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "±": r"$\pm$",
    "↓": r"$\downarrow$",
    "↑": r"$\uparrow$",
    "`": "",
    "∈": r"$\in$",
}
_LATEX_RE = re.compile("|".join(map(re.escape, _LATEX)))


def latex(text) -> str:
    """Text for a LaTeX document: one line, every special character as its command."""
    return _LATEX_RE.sub(lambda m: _LATEX[m.group()], one_line(text))


def latex_comment(text) -> str:
    """Text for a LaTeX comment: one line (a line break would end the comment and run the rest)."""
    return latex(text)


# -- CSV -----------------------------------------------------------------------------------------
#: what a spreadsheet reads as the start of a formula (OWASP: CSV injection)
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """A text cell a spreadsheet shows as text: a leading formula character gets a ``'`` before
    it; control characters are escaped. Numbers and missing values pass as they are."""
    if not isinstance(value, str):
        return value
    value = terminal(value.replace("\t", " ").replace("\r", " ").replace("\n", " ")) if value else value
    return "'" + value if value.startswith(_FORMULA) else value


def csv_frame(df):
    """``df`` with every text cell through :func:`csv_cell` (column names too)."""
    import pandas as pd

    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object or pd.api.types.is_string_dtype(out[col]):
            out[col] = out[col].map(csv_cell)
    out.columns = [csv_cell(str(c)) for c in out.columns]
    return out


# -- matplotlib ---------------------------------------------------------------------------------
#: the longest name a figure draws whole: a longer one is cut and given a short hash of the whole
#: (a 20 000-character method name made matplotlib's layout take gigabytes)
MAX_LABEL = 120


def mpl_text(text) -> str:
    """A caption or label matplotlib draws as it reads (no mathtext from a ``$``; a legend
    label starting with ``_`` would be left out of the legend), at most MAX_LABEL characters: a
    longer one keeps its start and a hash of the whole, so two long names stay apart."""
    text = one_line(text)
    if len(text) > MAX_LABEL:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:6]
        text = f"{text[: MAX_LABEL - 8]}…#{digest}"
    text = text.replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


# -- file names ----------------------------------------------------------------------------------
_STEM_OK = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_STEM = 100


def file_stem(*parts) -> str:
    """A file name stem made from names: letters, digits, ``.``, ``_`` and ``-`` only, never
    starting with a dot, at most 100 characters. A name that had to change gets a short hash of
    the original, so that two names never share a file."""
    raw = "_".join(str(p) for p in parts)
    stem = _STEM_OK.sub("_", raw).lstrip(".") or "_"
    if stem != raw or len(stem) > _MAX_STEM:
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stem = f"{stem[: _MAX_STEM - 9]}-{digest}"
    return stem


def inside(folder, name: str) -> Path:
    """``folder / name``, refused (one line) unless it stays inside ``folder``."""
    folder = Path(folder)
    target = folder / name
    base = folder.resolve()
    resolved = target.resolve()
    if resolved.parent != base and base not in resolved.parents:
        raise OodfsError(f"refusing to write {terminal(str(target))!s}: the name leads outside {folder}")
    return target


def write_text(path, text: str) -> Path:
    """Write a report file in one step (:func:`oodfs.results.atomic.write_atomically`: a full disk
    leaves the old file, or none, never half of one), refusing a symbolic link planted where it
    goes, and a second hard link to some other file or a device (what a report replaces is its
    own file)."""
    from oodfs.results.atomic import write_atomically

    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise OodfsError(f"refusing to write {path}: it is a symbolic link")
    if info is not None and (not stat.S_ISREG(info.st_mode) or info.st_nlink > 1):
        raise OodfsError(f"refusing to write {path}: it is not a plain file of its own (a link or a device)")
    return write_atomically(path, text.encode("utf-8"))
