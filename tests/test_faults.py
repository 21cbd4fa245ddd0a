"""Fault injection: plugins that crash, exit, edit their input or kill their worker; a full disk;
damaged and read-only stores; a second run on a folder; killed runs. Each fault ends either as
a recorded failed task with the run going on, or as one line and a non-zero exit status, and
never loses, duplicates or changes another task's numbers."""

import contextlib
import io
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.results.store import ResultStore, StorageError, load_results
from oodfs.run.runner import run_suite

from .conftest import TINY_SUITE_TOML, tiny

FAULTS = """
import ctypes, os, signal, sys, time
from pathlib import Path
import numpy as np
import oodfs

def corr(X, y):
    return np.abs(np.corrcoef(X.T, y)[-1, :-1])

def selector(name, fit):
    scores = lambda self, X, y, sw: fit(X, y)
    cls = type(name, (oodfs.Selector,), {"name": name, "__doc__": name, "_fit_scores": scores})
    cls.__module__ = __name__
    return cls

def zero_input(X, y):
    X[:] = 0
    y[:] = 0
    return corr(X, y)

def zero_input_anyway(X, y):  # gets round the read-only flag: only process isolation stops it
    for a in (X, y):
        a.setflags(write=True)
        a[...] = 0
    return np.ones(X.shape[1])

def noisy(X, y):
    print("PLUGIN-NOISE " * 2000)
    os.write(1, b"FD-NOISE\\n")
    return corr(X, y)

def kill_worker_once(X, y):  # as the out-of-memory killer would: the worker, not the method's process
    marker = Path(os.environ["OODFS_TEST_MARKER"])
    if not marker.exists():
        marker.write_text("killed")
        os.kill(os.getppid(), signal.SIGKILL)
        time.sleep(30)
    return corr(X, y)

def fail_once(X, y):
    marker = Path(os.environ["OODFS_TEST_MARKER"])
    if not marker.exists():
        marker.write_text("failed")
        raise RuntimeError("transient failure")
    return corr(X, y)

def sleep_long(X, y):
    Path(os.environ["OODFS_TEST_MARKER"]).with_suffix(f".{os.getpid()}").write_text("fitting")
    time.sleep(120)
    return corr(X, y)

FITS = {
    "zeroer": zero_input, "zeroer_anyway": zero_input_anyway, "noisy": noisy,
    "exit0": lambda X, y: sys.exit(0), "osexit": lambda X, y: os._exit(3),
    "segfault": lambda X, y: ctypes.string_at(0), "suicide": lambda X, y: os.kill(os.getpid(),
    signal.SIGKILL),
    "raises": lambda X, y: 1 / 0, "kill_worker_once": kill_worker_once, "fail_once": fail_once,
    "sleep_long": sleep_long,
}
SELECTORS = [selector(name, fit) for name, fit in FITS.items()]

@oodfs.hookimpl
def oodfs_selectors():
    return SELECTORS
"""


@pytest.fixture
def faults(tmp_path, monkeypatch):
    path = tmp_path / "faults.py"
    path.write_text(FAULTS)
    monkeypatch.setenv("OODFS_TEST_MARKER", str(tmp_path / "marker"))
    return str(path)


def tiny_file(tmp_path, runs=2) -> str:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SUITE_TOML.format(runs=runs))
    return str(path)


def cli(*args, **kw):
    """The command in a new process (for what must be seen at the file-descriptor level)."""
    return subprocess.run([sys.executable, "-m", "oodfs.cli", *args], capture_output=True, text=True, **kw)


def run_main(*args):
    """The command in this process (``oodfs.cli.main``, what the ``oodfs`` script calls): faster."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def values(out, methods=("ols", "correlation")) -> pd.Series:
    df = load_results(out)
    df = df[(df["status"] == "ok") & df["method"].isin(methods)]
    df = df.assign(env=df["env"].fillna("")).astype(
        {"point": int, "k": int, "run": int}
    )  # failed rows hold NULLs
    return df.set_index(["setting", "r_train", "run", "method", "point", "metric", "env", "k"])[
        "value"
    ].sort_index()


def tasks(out) -> dict:
    with sqlite3.connect(Path(out) / "results.sqlite") as con:
        return {
            (run, m): (status, error)
            for run, m, status, error in con.execute("SELECT run, method, status, error FROM tasks")
        }


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """ols and correlation on the tiny suite, with no faulty plugin anywhere."""
    out = tmp_path_factory.mktemp("clean") / "out"
    run_suite(tiny(), out, progress=False)
    return values(out)


def assert_one_line(proc, code, *needles):
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


# -- 1. a plugin that edits its input --------------------------------------------------------------
@pytest.mark.parametrize(
    "jobs, isolate, method",
    [
        (1, True, "zeroer"),
        (2, True, "zeroer"),
        (1, False, "zeroer"),
        (1, True, "zeroer_anyway"),
    ],
)
def test_a_plugin_editing_its_input_changes_no_other_number(tmp_path, faults, clean, jobs, isolate, method):
    out = tmp_path / "out"
    run_suite(
        tiny(methods=[method, "ols", "correlation"]),
        out,
        jobs=jobs,
        isolate=isolate,
        plugin_modules=(faults,),
        progress=False,
    )
    pd.testing.assert_series_equal(values(out), clean, check_exact=True)
    status = {m: s for (_, m), (s, _) in tasks(out).items()}
    if method == "zeroer":  # the arrays are read-only: the edit fails and the task with it
        assert status["zeroer"] == "failed" and "read-only" in tasks(out)[(0, "zeroer")][1]


# -- 2. plugins that crash their process -------------------------------------------------------------
@pytest.mark.parametrize("jobs", [1, 2])
def test_crashing_plugins_are_failed_tasks_and_the_run_goes_on(tmp_path, faults, clean, jobs):
    out = tmp_path / "out"
    proc = run_main(
        "bench",
        "--suite",
        tiny_file(tmp_path),
        "--plugin",
        faults,
        "--out",
        str(out),
        "--jobs",
        str(jobs),
        "--methods",
        "exit0,osexit,segfault,suicide,raises,ols,correlation",
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # --quiet: nothing but the leaderboard
    assert proc.stdout == (out / "leaderboard.md").read_text() + "\n"
    found = tasks(out)
    assert len(found) == 14
    expected = {
        "exit0": "called sys.exit(0)",
        "osexit": "died (exit code 3)",
        "segfault": "SIGSEGV",
        "suicide": "SIGKILL",
        "raises": "ZeroDivisionError",
    }
    for run in (0, 1):
        for method, needle in expected.items():
            status, error = found[(run, method)]
            assert status == "failed" and needle in error, (method, error)
    pd.testing.assert_series_equal(values(out), clean, check_exact=True)


def test_plugin_output_goes_to_stderr_never_into_the_leaderboard(tmp_path, faults):
    out = tmp_path / "out"
    proc = cli(
        "bench",
        "--suite",
        tiny_file(tmp_path, runs=1),
        "--plugin",
        faults,
        "--out",
        str(out),
        "--jobs",
        "1",
        "--methods",
        "noisy,ols",
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (out / "leaderboard.md").read_text() + "\n"
    assert "PLUGIN-NOISE" in proc.stderr and "FD-NOISE" in proc.stderr


def test_a_worker_killed_from_outside_stops_the_run_in_one_line_and_resume_finishes_it(
    tmp_path, faults, clean
):
    out = tmp_path / "out"
    args = [
        "bench",
        "--suite",
        tiny_file(tmp_path),
        "--plugin",
        faults,
        "--out",
        str(out),
        "--jobs",
        "2",
        "--methods",
        "kill_worker_once,ols,correlation",
        "--quiet",
    ]
    proc = cli(*args)
    assert_one_line(proc, 1, "a worker process died", "--resume")
    resumed = cli(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert len(tasks(out)) == 6 and all(s == "ok" for s, _ in tasks(out).values())
    pd.testing.assert_series_equal(values(out), clean, check_exact=True)


# -- 3. dask with --task-timeout ---------------------------------------------------------------------
@pytest.mark.slow
def test_dask_with_task_timeout_records_the_slow_and_keeps_the_healthy(tmp_path, faults, clean):
    pytest.importorskip("distributed")
    out = tmp_path / "out"
    run_suite(
        tiny(methods=["sleep_long", "segfault", "ols", "correlation"]),
        out,
        jobs=2,
        backend_name="dask",
        task_timeout=10,
        plugin_modules=(faults,),
        progress=False,
    )
    found = tasks(out)
    assert found[(0, "sleep_long")][0] == "failed" and "timed out after 10 s" in found[(0, "sleep_long")][1]
    assert found[(1, "segfault")][0] == "failed" and "SIGSEGV" in found[(1, "segfault")][1]
    pd.testing.assert_series_equal(values(out), clean, check_exact=True)


@pytest.mark.slow
def test_local_dask_cluster_serves_no_dashboard_and_uses_tls():
    pytest.importorskip("distributed")
    pytest.importorskip("cryptography")
    import psutil

    from oodfs.run.executors import dask as dask_backend

    results = dask_backend.run(_scheduler_address, [()], jobs=1)
    address = next(results)  # the cluster is up while the generator is open
    me = psutil.Process()
    connections = (
        me.net_connections(kind="tcp") if hasattr(me, "net_connections") else me.connections(kind="tcp")
    )
    listening = [c.laddr for c in connections if c.status == psutil.CONN_LISTEN]
    results.close()
    assert address.startswith("tls://127.0.0.1:")
    assert listening and all(ip == "127.0.0.1" for ip, _ in listening)
    assert 8787 not in {port for _, port in listening}


def _scheduler_address():
    from distributed import get_worker

    return get_worker().scheduler.address


# -- 4. storage ------------------------------------------------------------------------------------
def _limit_pages(monkeypatch, extra_pages: int):
    """Every connection may grow the file by only a few pages: SQLite's own 'database or disk
    is full', as on a full disk."""
    connect = ResultStore.connect

    def limited(self):
        con = connect(self)
        pages = con.execute("PRAGMA page_count").fetchone()[0]
        con.execute(f"PRAGMA max_page_count = {pages + extra_pages}")
        return con

    monkeypatch.setattr(ResultStore, "connect", limited)


def test_a_full_disk_stops_the_run_and_blames_no_method(tmp_path, monkeypatch, clean):
    out = tmp_path / "out"
    run_suite(tiny(methods=["ols"]), out, progress=False)  # a first part fits
    with monkeypatch.context() as m:
        _limit_pages(m, 0)
        with pytest.raises(StorageError, match="database or disk is full"):
            run_suite(tiny(), out, resume=True, progress=False)
    assert all(status == "ok" for status, _ in tasks(out).values())  # nothing recorded as a method's failure
    run_suite(tiny(), out, resume=True, progress=False)  # space again: the rest is computed
    assert len(tasks(out)) == 4
    pd.testing.assert_series_equal(values(out), clean, check_exact=True)


def _unshare_ok() -> bool:
    if not shutil.which("unshare"):
        return False
    return (
        subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True
        ).returncode
        == 0
    )


needs_mounts = pytest.mark.skipif(
    sys.platform != "linux" or not _unshare_ok(),
    reason="needs unshare (user and mount namespaces) for a small or read-only mount",
)


@needs_mounts
def test_a_really_full_file_system_stops_the_run_in_one_line_and_resume_completes(tmp_path, clean):
    """A 128 kB tmpfs: the run fills it (here after about 10 of 12 tasks), stops with one line
    and exit status 1; on a larger file system --resume computes the tasks that were not stored."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    suite = tiny_file(tmp_path, runs=6)
    bench = f"{sys.executable} -m oodfs.cli bench --suite {suite} --out {mnt}/out --jobs 1 --quiet"
    script = textwrap.dedent(f"""
        set -u
        mount -t tmpfs -o size=128k tmpfs {mnt}
        {bench} > {tmp_path}/first.out 2> {tmp_path}/first.err; echo $? > {tmp_path}/first.rc
        cp -r {mnt}/out {tmp_path}/full
        mount -o remount,size=50m {mnt}
        {bench} --resume > /dev/null 2> {tmp_path}/second.err; echo $? > {tmp_path}/second.rc
        cp -r {mnt}/out {tmp_path}/resumed
    """)
    subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script], check=True)
    first_err = (tmp_path / "first.err").read_text()
    assert (tmp_path / "first.rc").read_text().strip() == "1", first_err
    lines = first_err.strip().splitlines()
    assert len(lines) == 1 and ("disk is full" in lines[0] or "No space left" in lines[0]), first_err
    stored = tasks(tmp_path / "full") if (tmp_path / "full" / "results.sqlite").exists() else {}
    assert all(status == "ok" for status, _ in stored.values())
    assert (tmp_path / "second.rc").read_text().strip() == "0", (tmp_path / "second.err").read_text()
    assert len(tasks(tmp_path / "resumed")) == 12
    resumed = values(tmp_path / "resumed")
    pd.testing.assert_series_equal(
        resumed[resumed.index.get_level_values("run") < 2], clean, check_exact=True
    )


def test_failed_tasks_stay_on_resume_and_are_run_again_with_retry_failed(tmp_path, faults):
    out = tmp_path / "out"
    args = [
        "bench",
        "--suite",
        tiny_file(tmp_path, runs=1),
        "--plugin",
        faults,
        "--out",
        str(out),
        "--jobs",
        "1",
        "--methods",
        "fail_once,ols",
        "--quiet",
    ]
    assert run_main(*args).returncode == 0
    status, error = tasks(out)[(0, "fail_once")]
    assert status == "failed" and error.startswith("RuntimeError: transient failure")
    assert run_main(*args, "--resume").returncode == 0
    assert tasks(out)[(0, "fail_once")][0] == "failed"  # --resume keeps what was recorded
    before = load_results(out)
    proc = run_main(*args, "--retry-failed")
    assert proc.returncode == 0, proc.stderr
    assert tasks(out)[(0, "fail_once")] == ("ok", None)
    after = load_results(out)
    assert not (after["status"] == "failed").any()
    assert after.duplicated(["method", "point", "metric", "env", "k"]).sum() == 0
    kept = ["point", "metric", "env", "k", "value", "seed", "scores"]
    ols = lambda df: df.loc[df["method"] == "ols", kept].reset_index(drop=True)  # noqa: E731
    pd.testing.assert_frame_equal(
        ols(after), ols(before), check_dtype=False
    )  # the finished task is untouched


def test_bench_never_replaces_results_of_another_kind(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    pd.DataFrame({"method": ["dwr"] * 810, "value": 1.0}).to_parquet(out / "results.parquet")
    before = (out / "results.parquet").read_bytes()
    proc = run_main("bench", "--suite", tiny_file(tmp_path), "--out", str(out), "--quiet")
    assert_one_line(proc, 2, "results.parquet", "no results.sqlite")
    assert (out / "results.parquet").read_bytes() == before and sorted(os.listdir(out)) == ["results.parquet"]
    other = tmp_path / "photos"
    other.mkdir()
    (other / "holiday.jpg").write_bytes(b"\xff\xd8")
    assert_one_line(
        run_main("bench", "--suite", tiny_file(tmp_path), "--out", str(other), "--quiet"), 2, "holiday.jpg"
    )
    assert sorted(os.listdir(other)) == ["holiday.jpg"]


# -- 5. reading damaged and read-only stores -------------------------------------------------------------
@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    out = tmp_path_factory.mktemp("stored") / "out"
    proc = run_main("bench", "--suite", tiny_file(out.parent, runs=1), "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    return out


def _snapshot(folder: Path) -> dict:
    # results.sqlite-shm is SQLite's shared-memory index of the journal, which every reader
    # updates; it holds no data
    return {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns) if not p.name.endswith("-shm") else None
        for p in folder.rglob("*")
        if p.is_file()
    }


def test_leaderboard_reads_without_writing(stored):
    before = _snapshot(stored)
    proc = cli("leaderboard", str(stored), "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    assert _snapshot(stored) == before  # no schema, no journal, no file touched or added


@needs_mounts
def test_leaderboard_on_a_read_only_mount(stored, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(stored, copy)
    script = textwrap.dedent(f"""
        mount --bind {copy} {copy} && mount -o remount,bind,ro {copy}
        touch {copy}/probe 2> /dev/null && echo writable
        {sys.executable} -m oodfs.cli leaderboard {copy} --format csv \
            > {tmp_path}/board.csv 2> {tmp_path}/board.err
        echo $? > {tmp_path}/board.rc
        {sys.executable} -m oodfs.cli plot {copy} > /dev/null 2> {tmp_path}/plot.err
        echo $? > {tmp_path}/plot.rc
    """)
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
        capture_output=True,
        text=True,
    )
    assert "writable" not in done.stdout
    assert (tmp_path / "board.rc").read_text().strip() == "0", (tmp_path / "board.err").read_text()
    board = pd.read_csv(tmp_path / "board.csv")
    assert set(board["method"]) == {"ols", "correlation"}
    plot_err = (tmp_path / "plot.err").read_text().strip().splitlines()
    assert (tmp_path / "plot.rc").read_text().strip() == "2"
    assert len(plot_err) == 1 and "cannot write" in plot_err[0], plot_err


@pytest.mark.parametrize("damage", ["truncated", "header", "garbage", "empty_next_to_parquet"])
def test_a_damaged_store_is_one_line_naming_the_file(stored, tmp_path, damage):
    copy = tmp_path / "copy"
    shutil.copytree(stored, copy)
    db = copy / "results.sqlite"
    data = db.read_bytes()
    if damage == "truncated":
        db.write_bytes(data[: len(data) // 3])
    elif damage == "header":
        db.write_bytes(b"Not a database!!" + data[16:])
    elif damage == "garbage":
        db.write_bytes(os.urandom(len(data)))
    else:
        db.write_bytes(b"")
    for command in ("leaderboard", "plot"):
        proc = run_main(command, str(copy))
        assert_one_line(proc, 2, str(db))
        if damage == "empty_next_to_parquet":
            assert "results.parquet" in proc.stderr and "0 bytes" in proc.stderr
    proc = run_main(
        "bench", "--suite", tiny_file(tmp_path, runs=1), "--out", str(copy), "--resume", "--quiet"
    )
    assert proc.returncode in (1, 2) and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert str(db) in proc.stderr and "Traceback" not in proc.stderr


# -- 9. one run per folder; nothing outlives a killed run ------------------------------------------------
def test_a_second_run_on_a_folder_is_refused_while_the_first_holds_it(tmp_path):
    out = tmp_path / "out"
    run_suite(tiny(methods=["ols"]), out, progress=False)
    with ResultStore(out).lock():
        proc = run_main("bench", "--suite", tiny_file(tmp_path), "--out", str(out), "--resume", "--quiet")
        assert_one_line(proc, 2, "another oodfs run", f"pid {os.getpid()}", str(out))
    run_suite(tiny(), out, resume=True, progress=False)  # released: the next run goes ahead
    assert len(tasks(out)) == 4


def _descendants(pid: int) -> list[int]:
    import psutil

    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _alive(pids) -> list[int]:
    import psutil

    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_killing_the_run_leaves_no_worker_behind(tmp_path, faults, how):
    pytest.importorskip("psutil")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "oodfs.cli",
            "bench",
            "--suite",
            tiny_file(tmp_path),
            "--plugin",
            faults,
            "--out",
            str(out),
            "--jobs",
            "2",
            "--methods",
            "sleep_long",
            "--quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline and len(list(tmp_path.glob("marker.*"))) < 2:  # both workers are fitting
        time.sleep(0.2)
    assert len(list(tmp_path.glob("marker.*"))) == 2, "the workers never started"
    family = _descendants(proc.pid)
    assert len(family) >= 4  # two workers, each with a forked child fitting
    os.kill(proc.pid, how)
    proc.wait(timeout=60)
    deadline = time.time() + 15
    while time.time() < deadline and _alive(family):
        time.sleep(0.2)
    assert _alive(family) == []
    if how == signal.SIGTERM:
        assert proc.returncode == 143 and "interrupted" in proc.stderr.read()
    # the lock went with the run: the folder can be resumed at once
    with ResultStore(out).lock():
        pass
