"""What a run leaves behind outside its results: nothing. joblib's temporary folders go under the
system's temporary folder (TMPDIR), never /dev/shm, and are removed on every exit path; loky's
resource tracker removes the pool's semaphores and that folder after a killed run, silently (it
printed "leaked semlock objects" warnings); the store is closed with no -wal or -shm file after
an interrupted run as after a finished one (docs/PROTOCOL.md section 6, "Temporary files and
full disks")."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_faults import as_in_a_terminal, tiny_file

SHM = Path("/dev/shm")
pytestmark = [
    pytest.mark.alone,
    pytest.mark.skipif(not SHM.is_dir(), reason="no /dev/shm (joblib's default folder on Linux)"),
]

#: a method that records, while it fits, what /dev/shm and the temporary folder hold, then waits
PEEK = """
import json, os, time
from pathlib import Path
import numpy as np
import oodfs

class Peek(oodfs.Selector):
    "records /dev/shm and the temporary folder while it fits"
    name = "peek"

    def _fit_scores(self, X, y, sw):
        seen = {"shm": os.listdir("/dev/shm"), "tmp": os.listdir(os.environ["TMPDIR"])}
        marker = Path(os.environ["OODFS_TEST_PEEK"])
        (marker.parent / f"{marker.name}.{os.getpid()}").write_text(json.dumps(seen))
        time.sleep(float(os.environ["OODFS_TEST_SLEEP"]))
        return np.abs(np.corrcoef(X.T, y)[-1, :-1])

@oodfs.hookimpl
def oodfs_selectors():
    return [Peek]
"""


def start(tmp_path, sleep: float, *extra) -> tuple[subprocess.Popen, Path]:
    """``bench --jobs 2`` of the peeking method in a new session, with its own TMPDIR."""
    (tmp_path / "peek.py").write_text(PEEK)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(
        os.environ, TMPDIR=str(temp), OODFS_TEST_PEEK=str(tmp_path / "seen"), OODFS_TEST_SLEEP=str(sleep)
    )
    env.pop("JOBLIB_TEMP_FOLDER", None)
    args = ["bench", "--suite", tiny_file(tmp_path), "--plugin", str(tmp_path / "peek.py")]
    args += [
        "--out",
        str(tmp_path / "out"),
        "--methods",
        "peek",
        "--jobs",
        "2",
        "--quiet",
        "--no-figures",
        *extra,
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "oodfs.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=as_in_a_terminal,
    )
    return proc, temp


def of_run(names, pid: int) -> list[str]:
    """The joblib and loky entries of /dev/shm a process made (their names hold its id)."""
    return sorted(n for n in names if f"_{pid}_" in n or f"loky-{pid}-" in n)


def peeks(tmp_path) -> list[dict]:
    return [json.loads(p.read_text()) for p in tmp_path.glob("seen.*")]


def wait_for_fits(proc, tmp_path, n=2):
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None and len(peeks(tmp_path)) < n:
        time.sleep(0.1)
    assert proc.poll() is None and len(peeks(tmp_path)) == n


def gone(check, seconds=20) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline and not check():
        time.sleep(0.2)
    return check()


@pytest.mark.slow
def test_a_finished_parallel_run_keeps_its_temporary_files_out_of_dev_shm_and_removes_them(tmp_path):
    proc, temp = start(tmp_path, 0)
    err = proc.communicate(timeout=600)[1]
    assert proc.returncode == 0, err
    seen = peeks(tmp_path)
    assert len(seen) == 2
    for s in seen:  # while it ran: no joblib folder in /dev/shm, its own in TMPDIR
        assert not [n for n in of_run(s["shm"], proc.pid) if n.startswith("joblib")]
        assert [n for n in s["tmp"] if n.startswith("oodfs-joblib-")]
    assert of_run(os.listdir(SHM), proc.pid) == []
    assert sorted(os.listdir(temp)) == []
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["leaderboard.md", "results.parquet", "results.sqlite"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "how",
    [
        "SIGKILL to the run",  # the out-of-memory killer, a kill -9
        "SIGHUP to the process group",  # the terminal closed
    ],
)
def test_a_killed_parallel_run_leaves_nothing_and_prints_no_warnings(tmp_path, how):
    proc, temp = start(tmp_path, 120)
    try:
        wait_for_fits(proc, tmp_path)
        assert of_run(os.listdir(SHM), proc.pid)  # the pool's semaphores, while it runs
        if how.startswith("SIGKILL"):
            os.kill(proc.pid, signal.SIGKILL)
        else:
            os.killpg(proc.pid, signal.SIGHUP)
        err = proc.communicate(timeout=60)[1]  # until the tracker, which shares stderr, has ended
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert err == ""
    assert gone(lambda: of_run(os.listdir(SHM), proc.pid) == []), of_run(os.listdir(SHM), proc.pid)
    assert gone(lambda: os.listdir(temp) == []), os.listdir(temp)


@pytest.mark.slow
def test_an_interrupted_parallel_run_closes_its_store_and_removes_its_temporary_files(tmp_path):
    proc, temp = start(tmp_path, 120)
    try:
        wait_for_fits(proc, tmp_path)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C
        err = proc.communicate(timeout=120)[1]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert err.strip() == "oodfs: interrupted; finished tasks are saved (continue with --resume)", err
    out = tmp_path / "out"
    assert not [p.name for p in out.iterdir() if p.name.startswith("results.sqlite-")]
    assert of_run(os.listdir(SHM), proc.pid) == []
    assert gone(lambda: os.listdir(temp) == []), os.listdir(temp)
