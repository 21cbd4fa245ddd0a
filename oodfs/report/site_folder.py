"""The folder a site is written to: checked before any work, staged beside it, swapped in at once.

``oodfs report`` replaces a folder only when every file in it is one the site itself wrote (the
manifest in its marker file), so nothing else -- results, a thesis, another tool's output -- is
ever deleted. The new site is built in a temporary folder next to ``--out`` and exchanged with the
old one in one step (``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere two renames, never leaving
a half-written site at ``--out``). A temporary folder left by a killed report is removed by the
next one; one that a live report still holds (its lock) is left alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from oodfs.results.outputs import check_output
from oodfs.validation import OodfsError, RunAborted

#: the file that marks a folder as a site oodfs wrote; it lists the files the site wrote
MARKER = ".oodfs-site"
#: temporary folders beside ``--out``: a site being written, or an old one being removed
STAGING_PREFIX = ".oodfs-site-"
_LOCK = ".lock"
#: a staging folder without a lock younger than this may be one another report has just made
_FRESH_SECONDS = 600
#: the layout of a site written before markers listed their files
_OLD_SITE_SUFFIXES = (".svg", ".png", ".pdf")


def check_out(out: Path, inputs) -> None:
    """Refuse, in one line, an ``--out`` that is not a folder a site may be written to or replace."""
    text = str(out)
    if "\0" in text:
        raise OodfsError("--out contains a NUL character")
    if out.is_symlink():
        raise OodfsError(f"--out {out} is a symbolic link; give the folder itself")
    check_output(out, "--out", inputs=inputs)
    for parent in out.absolute().parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise OodfsError(f"--out {out}: {parent} is a file, not a folder")
            break
    if out.exists() and not out.is_dir():
        raise OodfsError(f"--out {out} is a file, not a folder")
    resolved = out.resolve()
    for folder in [resolved, *resolved.parents]:
        if (folder / "results.sqlite").exists():
            raise OodfsError(f"--out {out} is inside the results folder {folder}; write the site elsewhere")
    for path in inputs:
        source = Path(path).resolve()
        if source == resolved or resolved in source.parents:
            raise OodfsError(f"--out {out} holds the results folder {path}; write the site elsewhere")
    if out.is_dir() and any(out.iterdir()):
        store = next(out.rglob("results.sqlite"), None)
        if store is not None:
            raise OodfsError(f"--out {out} holds results ({store}); write the site elsewhere")
        if not (out / MARKER).is_file():
            raise OodfsError(
                f"--out {out} is a folder with other files in it; give a new or empty folder, or a site "
                "`oodfs report` wrote before"
            )
        foreign = _foreign_files(out)
        if foreign:
            shown = ", ".join(repr(str(p)) for p in foreign[:3]) + (" ..." if len(foreign) > 3 else "")
            raise OodfsError(
                f"--out {out} is a site, but holds {len(foreign)} file{'s' * (len(foreign) != 1)} "
                f"`oodfs report` did not write ({shown}); move {'them' if len(foreign) > 1 else 'it'} "
                "or write the site elsewhere"
            )


def _foreign_files(site: Path) -> list[Path]:
    """Files in ``site`` that its manifest does not list (symbolic links always count)."""
    own = _manifest(site)
    foreign = []
    for path in sorted(site.rglob("*")):
        rel = path.relative_to(site)
        if path.is_symlink() or (not path.is_dir() and not _owned(rel, own)):
            foreign.append(rel)
    return foreign


def _manifest(site: Path) -> set[str] | None:
    """The files the site wrote; None for a marker from before markers listed them."""
    try:
        record = json.loads((site / MARKER).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    files = record.get("files") if isinstance(record, dict) else None
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else None


def _owned(rel: Path, own: set[str] | None) -> bool:
    if rel.as_posix() == MARKER:
        return True
    if own is not None:
        return rel.as_posix() in own
    # an old marker: the page and the figure files are the site's
    return rel.as_posix() == "index.html" or (rel.parts[0] == "figures" and rel.suffix in _OLD_SITE_SUFFIXES)


@contextlib.contextmanager
def staged(out: Path):
    """A private folder beside ``out`` to build the site in; on success it replaces ``out``.

    Any exception leaves ``out`` as it was and removes the staging folder. A write that fails
    for the machine's reasons (disk full, a file-size limit, no permission) is one line."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        remove_stale(out.parent)
        tmp = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out.parent))
    except OSError as exc:
        raise OodfsError(f"--out {out}: cannot create a folder there ({_reason(exc)})") from None
    lock = None
    try:
        lock = open(tmp / _LOCK, "w")
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield tmp
        _write_marker(tmp)
        (tmp / _LOCK).unlink()
        tmp.chmod(0o755)  # mkdtemp makes it private; a site is for reading
        _swap_in(tmp, out)
    except OSError as exc:
        raise RunAborted(f"cannot write the site {out} ({_reason(exc)}); the folder is unchanged") from None
    finally:
        if lock is not None:
            lock.close()
        shutil.rmtree(tmp, ignore_errors=True)  # the new site's stage, or the old site after the swap


def _write_marker(tmp: Path) -> None:
    files = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
    record = {
        "written_by": "oodfs report; the folder is replaced when the report is written again, "
        "if it holds only these files",
        "files": [f for f in files if f != _LOCK],
    }
    (tmp / MARKER).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def _swap_in(tmp: Path, out: Path) -> None:
    """Put ``tmp`` at ``out``; the old site (if any) ends up at ``tmp``, to be removed."""
    if not out.exists():
        os.rename(tmp, out)
        return
    if _exchange(tmp, out):
        return
    old = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out.parent))
    os.rename(out, old / "site")
    os.rename(tmp, out)
    os.rename(old, tmp)


def _exchange(a: Path, b: Path) -> bool:
    """Exchange two paths atomically (Linux renameat2); False where the system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def remove_stale(parent: Path) -> None:
    """Remove staging folders of reports that ended without cleaning up (killed, power lost)."""
    for path in parent.glob(STAGING_PREFIX + "*"):
        if path.is_symlink() or not path.is_dir():
            continue
        lock_file = path / _LOCK
        if lock_file.exists():
            if _held(lock_file):
                continue
        elif time.time() - path.stat().st_mtime < _FRESH_SECONDS:
            continue  # perhaps made a moment ago by a report that has not locked it yet
        shutil.rmtree(path, ignore_errors=True)


def _held(lock_file: Path) -> bool:
    try:
        with open(lock_file) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
    except OSError:
        return True  # unreadable: not ours to judge
    return False


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)
