"""Writing an output file in one step: the whole new file or the old one, never half of either.

The bytes go to a temporary file beside the target (same folder, so the same file system) that
is renamed over it once complete. A full disk or a file-size limit then leaves the target as it
was and no partial file behind, and the error names the target (docs/PROTOCOL.md section 6,
"Temporary files and full disks").
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

#: a new file of a name of its own (never through a link planted there), with the permissions an
#: ordinary write would give it (0666 less the umask; mkstemp would make it private)
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def write_atomically(path, content: bytes | Callable[[BinaryIO], object]) -> Path:
    """Write ``content`` (bytes, or a function that writes to a binary file object) to ``path``
    through a temporary file in the same folder, renamed over ``path`` when complete. A target
    that exists and is not a plain file (``/dev/stdout``, a FIFO) is written in place: renaming
    over a device would replace the device's name. On an error the temporary file is removed and
    an OSError naming ``path`` is raised (with the original's errno)."""
    path = Path(path)
    try:
        in_place = not stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        in_place = False
    if in_place:
        try:
            with open(path, "wb") as out:
                _write(out, content)
        except OSError as exc:
            raise _naming(exc, path) from None
        return path
    try:
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
        fd = os.open(tmp, _FLAGS, 0o666)
    except OSError as exc:
        raise _naming(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as out:
            _write(out, content)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _naming(exc, path) from None
        raise
    return path


def _write(out: BinaryIO, content) -> None:
    if isinstance(content, bytes | bytearray | memoryview):
        out.write(content)
    else:
        content(out)


def _naming(exc: OSError, path: Path) -> OSError:
    """The error with the target's name (a write to the temporary file has none, or the temporary
    name, which the user never sees)."""
    if exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))
