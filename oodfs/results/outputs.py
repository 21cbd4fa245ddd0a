"""Where a command may write: one rule for every output path of every command (docs/guide/cli.md, "One rule
for every output path").

An output path is refused, in one line and before any work, when it is or lies inside

- a results store (``results.sqlite`` and its ``-wal``/``-shm``/``-journal`` files, or any SQLite
  database),
- an exported results table (``results.parquet``, ``results.csv``, or any parquet file),
- the reference results shipped with oodfs (their folder) or a reference file given to the command,
- any input file of the command,

and when a file the command writes into an output folder is an input of the command (``bench
--reference RUN/results.parquet --out RUN`` would replace the reference with the new results).
"""

from __future__ import annotations

from pathlib import Path

from oodfs.validation import OodfsError

#: the names of a results store's files
STORE_NAMES = ("results.sqlite", "results.sqlite-wal", "results.sqlite-shm", "results.sqlite-journal")
#: the names of an exported results table
TABLE_NAMES = ("results.parquet", "results.csv")
#: the first bytes of what is refused by content as well as by name
_MAGIC = {b"SQLite format 3\x00": "a SQLite database (a results store?)", b"PAR1": "a parquet table"}


def _resolved(path) -> Path:
    return Path(path).expanduser().resolve()


def _is(path: Path, kind: str) -> bool:
    """``path.is_file()`` or ``is_dir()``, False where the system cannot say (a name too long:
    the write then fails with its own one line)."""
    try:
        return getattr(path, f"is_{kind}")()
    except OSError:
        return False


def _content(path: Path) -> str | None:
    """What ``path`` holds when it is a database or a parquet table, by its first bytes."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return None
    return next((kind for magic, kind in _MAGIC.items() if head.startswith(magic)), None)


def _shipped_references() -> Path:
    from importlib import resources

    # the package's folder by name: the results package reads files, it does not import the runner
    return _resolved(Path(str(resources.files("oodfs.run.reference"))))


def _what(candidate: Path, inputs: set[Path], shipped: Path) -> str | None:
    """What ``candidate`` is that no output may replace or go inside, or None."""
    if candidate == shipped or shipped in candidate.parents:
        return "the reference results shipped with oodfs"
    if candidate.name in STORE_NAMES:
        return "a results store"
    if candidate.name in TABLE_NAMES:
        return "an exported results table"
    if candidate in inputs:
        return "an input of the command"
    if _is(candidate, "file"):
        return _content(candidate)
    return None


def check_output(path, option: str, *, inputs=(), writes=()) -> None:
    """Refuse, in one line (:class:`OodfsError`, exit status 2), the output ``path`` given as
    ``option`` (e.g. ``"--output"``) when it is, or lies inside, a results store, an exported
    results table, a reference or an input file (``inputs``: the command's input paths; folders
    among them are not protected as such, their stores and tables are); ``writes``: the names of
    the files the command writes into the folder ``path``, refused when one of them is an input."""
    target = _resolved(path)
    given = [_resolved(p) for p in inputs if p is not None and str(p)]
    files = {p for p in given if not _is(p, "dir")}
    shipped = _shipped_references()
    what = _what(target, files, shipped)
    if what is not None:
        raise OodfsError(f"{option} {path} is {what}; oodfs never writes over it: choose another path")
    for parent in target.parents:
        if _is(parent, "file") or parent in files or parent == shipped:
            what = _what(parent, files, shipped) or "a file"
            raise OodfsError(f"{option} {path} is inside {what} ({parent}); choose another path")
    for name in writes:
        written = _resolved(target / name)
        if written in files:
            raise OodfsError(
                f"{option} {path} would replace {written}, an input of the command; choose another path"
            )
