"""Old code against new in one run: a tree of the repository at an old commit put first on the
path of a fresh process, alternated with the working tree, medians of several repeats.
benchmarks/grid_sharing/bench_grid_sharing.py and benchmarks/leaderboard_time/bench_leaderboard.py
use it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def old_tree(commit: str, folder: str, package: str | None = None) -> Path:
    """The repository's ``folder`` at ``commit``, extracted into a temporary directory as the
    importable package ``package`` (default: the folder's own name); returns the directory to
    put first on the path."""
    where = Path(tempfile.mkdtemp(prefix=f"oodfs-old-{folder}-"))
    archive = subprocess.run(["git", "archive", commit, folder], cwd=ROOT, check=True, capture_output=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(where, filter="data")
    if package and package != folder:
        (where / folder).rename(where / package)
    return where


def run_child(code: str, args: list[str], path: Path | None) -> dict:
    """``python -c code args`` in a fresh process, ``path`` first on its path (None: the working
    tree); the JSON object its last line of output prints."""
    env = None if path is None else {**os.environ, "PYTHONPATH": str(path)}
    out = subprocess.run(
        [sys.executable, "-c", code, *args], check=True, capture_output=True, text=True, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def alternated(code: str, args: list[str], old: Path, repeats: int) -> tuple[float, float, dict, dict]:
    """Old then new, ``repeats`` times: the median of each one's ``seconds`` and each one's last
    output (to compare what they computed)."""
    seconds: dict[str, list[float]] = {"old": [], "new": []}
    last: dict[str, dict] = {}
    for _ in range(repeats):
        for which, path in (("old", old), ("new", None)):
            last[which] = run_child(code, args, path)
            seconds[which].append(last[which]["seconds"])
    return statistics.median(seconds["old"]), statistics.median(seconds["new"]), last["old"], last["new"]


def finish(lines: list[str], out: Path | None) -> None:
    """Print the table and, with ``out``, write it there (replaced)."""
    text = "\n".join(lines) + "\n"
    if out:
        out.write_text(text)
    print(text)
