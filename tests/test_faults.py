"""Fault injection: plugins that crash, exit, edit their input or kill their worker; a full disk;
damaged and read-only stores; a second run on a folder; killed runs. Each fault ends either as
a recorded failed task with the run going on, or as one line and a non-zero exit status, and
never loses, duplicates or changes another task's numbers."""

import contextlib
import io
import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.results.store import ResultStore, StorageError, load_results
from oodfs.run.runner import run_suite

from .conftest import TINY_SUITE_TOML, tiny
from .hostile import run_limited

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
    "sleep_long": sleep_long, "hog": lambda X, y: np.ones((1 << 31) // 8) + corr(X, y).sum(),
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


def as_in_a_terminal() -> None:
    """Start a child as a terminal starts its foreground job (``preexec_fn``): Ctrl-C (SIGINT), a
    closed terminal (SIGHUP) and SIGQUIT at their defaults. A test process started in the
    background of a script or under nohup (as a CI job can be) ignores them, a child inherits the
    ignoring, and Python then never turns SIGINT into KeyboardInterrupt: the run would rightly
    go on, and a test of what Ctrl-C does would wait for nothing."""
    for number in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(number, signal.SIG_DFL)


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
        "--no-figures",
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
        "--no-figures",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (out / "leaderboard.md").read_text() + "\n"
    assert "PLUGIN-NOISE" in proc.stderr and "FD-NOISE" in proc.stderr


@pytest.mark.alone
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
        "--no-figures",
    ]
    proc = cli(*args)
    assert_one_line(proc, 1, "a worker process died", "--resume")
    resumed = cli(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert len(tasks(out)) == 6 and all(s == "ok" for s, _ in tasks(out).values())
    pd.testing.assert_series_equal(values(out), clean, check_exact=True)


def test_a_fit_over_task_memory_fails_alone_naming_the_limit(tmp_path, faults, clean):
    """--task-memory 200M: a fit that allocates 2 GB is a failed task whose message names the
    limit; the other methods' numbers are those of a run without it."""
    out = tmp_path / "out"
    args = [
        "bench",
        "--suite",
        tiny_file(tmp_path),
        "--plugin",
        faults,
        "--out",
        str(out),
        "--quiet",
        "--no-figures",
    ]
    proc = run_main(*args, "--methods", "hog,ols,correlation", "--task-memory", "200M")
    assert proc.returncode == 0, proc.stderr
    status = {m: s for (_, m), s in tasks(out).items()}
    assert {m: s for m, (s, _) in status.items()} == {"hog": "failed", "ols": "ok", "correlation": "ok"}
    assert "--task-memory 200M" in status["hog"][1] and "2.00 GiB" in status["hog"][1]
    pd.testing.assert_series_equal(values(out), clean, check_exact=True)


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--task-memory", "1G", "--no-isolation"], "drop --no-isolation"),
        (["--task-memory", "100"], "got '100'"),
        (["--task-memory", "2GB"], "got '2GB'"),
        (["--task-memory", "lots"], "got 'lots'"),
    ],
)
def test_bad_task_memory_is_one_line(tmp_path, extra, needle):
    out = tmp_path / "out"
    assert_one_line(run_main("bench", "--suite", tiny_file(tmp_path), "--out", str(out), *extra), 2, needle)
    assert not out.exists()


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
        "--no-figures",
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
    proc = run_main("bench", "--suite", tiny_file(tmp_path), "--out", str(out), "--quiet", "--no-figures")
    assert_one_line(proc, 2, "results.parquet", "no results.sqlite")
    assert (out / "results.parquet").read_bytes() == before and sorted(os.listdir(out)) == ["results.parquet"]
    other = tmp_path / "photos"
    other.mkdir()
    (other / "holiday.jpg").write_bytes(b"\xff\xd8")
    assert_one_line(
        run_main("bench", "--suite", tiny_file(tmp_path), "--out", str(other), "--quiet", "--no-figures"),
        2,
        "holiday.jpg",
    )
    assert sorted(os.listdir(other)) == ["holiday.jpg"]


# -- 5. reading damaged and read-only stores -------------------------------------------------------------
@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    out = tmp_path_factory.mktemp("stored") / "out"
    proc = run_main(
        "bench", "--suite", tiny_file(out.parent, runs=1), "--out", str(out), "--quiet", "--no-figures"
    )
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
    proc = run_main("leaderboard", str(stored), "--format", "csv")  # what it touches, not the process
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
        "bench",
        "--suite",
        tiny_file(tmp_path, runs=1),
        "--out",
        str(copy),
        "--resume",
        "--quiet",
        "--no-figures",
    )
    assert proc.returncode in (1, 2) and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert str(db) in proc.stderr and "Traceback" not in proc.stderr


#: the result rows of method ols (the store keeps each row's metric, env and value in result_rows,
#: the columns its task's rows share once in result_groups: oodfs/results/store.py)
OLS_ROWS = "group_id IN (SELECT id FROM result_groups WHERE method = 'ols')"
#: the first such row with a value (with a metric)
FIRST_OLS_VALUE = f"rowid = (SELECT MIN(rowid) FROM result_rows WHERE {OLS_ROWS} AND value IS NOT NULL)"
FIRST_OLS_METRIC = f"rowid = (SELECT MIN(rowid) FROM result_rows WHERE {OLS_ROWS} AND metric IS NOT NULL)"

#: damage to a store's contents (the file itself is sound): the SQL that makes it, and what the
#: one line names
CONTENT_DAMAGE = {
    "text in value": (
        f"UPDATE result_rows SET value = 'abc' WHERE {FIRST_OLS_VALUE}",
        "method 'ols': value is not a number",
    ),
    "text in run": ("UPDATE result_groups SET run = 'x' WHERE method = 'ols'", "run holds something other"),
    "scores not JSON": (
        "UPDATE result_groups SET scores = '[1, 2' WHERE method = 'ols' AND scores IS NOT NULL",
        "method 'ols': scores is not valid JSON",
    ),
    "parts not JSON": ("UPDATE tasks SET parts = '{x' WHERE method = 'ols'", "parts is not valid JSON"),
    "metrics not JSON": ("UPDATE meta SET value = '{x' WHERE key = 'metrics'", "'metrics' is not valid JSON"),
    "invocation not JSON": ("UPDATE invocations SET provenance = 'x'", "invocation record"),
    "invocation without its suite": (
        "UPDATE invocations SET provenance = json_remove(provenance, '$.suite')",
        "1 invocation record not valid JSON or without the suite",
    ),
    "invocation with methods not a list": (
        "UPDATE invocations SET provenance = json_set(provenance, '$.suite.methods', 7)",
        "invocation record not valid JSON or without the suite",
    ),
    "NULL value": (
        f"UPDATE result_rows SET value = NULL WHERE {FIRST_OLS_METRIC}",
        "method 'ols': a metric row without a value",
    ),
    "1e301 value": (
        f"UPDATE result_rows SET value = 1e301 WHERE rowid = "
        f"(SELECT MIN(rowid) FROM result_rows WHERE {OLS_ROWS} AND metric = 'f1')",
        "method 'ols': a results.value beyond 1e+150 or infinite",
    ),
    "1e300 value": (  # within no bound a metric declares, and its square overflows
        f"UPDATE result_rows SET value = 1e300 WHERE {OLS_ROWS} AND metric = 'rmse_mean'",
        "method 'ols': a results.value beyond 1e+150 or infinite",
    ),
    "inf value": (
        f"UPDATE result_rows SET value = -9e999 WHERE {OLS_ROWS} AND metric = 'rmse'",
        "method 'ols': a results.value beyond 1e+150 or infinite",
    ),
    "value outside its metric's range": (
        f"UPDATE result_rows SET value = 5 WHERE {OLS_ROWS} AND metric = 'f1'",
        "method 'ols': results.value of metric 'f1' is 5, outside its range [0, 1]",
    ),
    "negative RMSE": (
        f"UPDATE result_rows SET value = -0.5 WHERE {OLS_ROWS} AND metric = 'rmse_mean'",
        "results.value of metric 'rmse_mean' is -0.5, outside its range [0, inf]",
    ),
    "scores of the wrong length": (
        "UPDATE result_groups SET scores = '[1.0, 2.0]' WHERE method = 'ols'",
        "method 'ols': results.scores holds 2 values for 10 results.feature_names",
    ),
    "a score of 1e300": (
        "UPDATE result_groups SET scores = json_set(scores, '$[0]', 1e300) WHERE method = 'ols'",
        "method 'ols': results.scores holds a value that is not a number, beyond 1e+150 or infinite",
    ),
    "an infinite score": (
        "UPDATE result_groups SET scores = '[Infinity' || substr(scores, instr(scores, ',')) "
        "WHERE method = 'ols'",
        "method 'ols': results.scores holds a value that is not a number, beyond 1e+150 or infinite",
    ),
    "result_rows table dropped": ("DROP TABLE result_rows", "table result_rows is missing"),
    "result_groups table dropped": ("DROP TABLE result_groups", "table result_groups is missing"),
    "provenance oodfs_git a list": (
        "UPDATE invocations SET provenance = json_set(provenance, '$.environment.oodfs_git', json('[1, 2]'))",
        "invocations.provenance, row 1: environment.oodfs_git is not an object",
    ),
    "r_train relabelled": (
        "UPDATE tasks SET r_train = '3.5' WHERE method = 'ols'; "
        "UPDATE result_groups SET r_train = '3.5' WHERE method = 'ols'",
        "method 'ols': tasks.r_train '3.5' is not an r_train of the run's suite",
    ),
    "run relabelled": (
        "UPDATE tasks SET run = 7 WHERE method = 'ols'; "
        "UPDATE result_groups SET run = 7 WHERE method = 'ols'",
        "run 7, method 'ols': results.seed is not the seed of its setting, r_train, run and method",
    ),
    "rows relabelled to another downstream model": (
        "UPDATE result_groups SET downstream = 'ridge' WHERE method = 'ols'",
        "rows of downstream model 'ridge', which the run did not train",
    ),
    "task without rows": (f"DELETE FROM result_rows WHERE {OLS_ROWS}", "method 'ols': no result rows"),
    "rows of no group": (
        f"UPDATE result_rows SET group_id = group_id + 1000000 WHERE {OLS_ROWS}",
        "result rows of no stored task",
    ),
    "rows without task": ("DELETE FROM tasks WHERE method = 'ols'", "result rows of no stored task"),
    "text r_train": (
        "UPDATE result_groups SET r_train = 'abc' WHERE method = 'ols'",
        "result rows of no stored task",
    ),
}


def _damaged_copy(stored: Path, tmp_path: Path, sql: str) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(stored, copy)
    with contextlib.closing(sqlite3.connect(copy / "results.sqlite")) as con, con:
        con.executescript(sql)
    return copy


@pytest.mark.parametrize("damage", list(CONTENT_DAMAGE))
def test_damaged_contents_are_one_line_naming_them_and_resume_repairs_them(stored, tmp_path, damage):
    """Reading names the damage in one line; merge refuses the folder by name; --resume says
    what is damaged, runs those tasks again, and the leaderboard is the undamaged one's."""
    sql, needle = CONTENT_DAMAGE[damage]
    copy = _damaged_copy(stored, tmp_path, sql)
    for command in ("leaderboard", "plot"):
        assert_one_line(run_main(command, str(copy)), 2, str(copy / "results.sqlite"), needle, "--resume")
    site = tmp_path / "site"
    assert_one_line(
        run_main("report", str(copy), "--out", str(site)), 2, str(copy / "results.sqlite"), needle
    )
    assert not site.exists()
    assert_one_line(
        run_main("merge", str(copy), "--out", str(tmp_path / "m")), 2, f"cannot merge {copy}", needle
    )
    assert not (tmp_path / "m").exists()
    suite = tiny_file(tmp_path, runs=1)
    proc = run_main("bench", "--suite", suite, "--out", str(copy), "--resume", "--jobs", "1", "--no-figures")
    assert proc.returncode == 0, proc.stderr
    assert "is damaged" in proc.stderr and needle in proc.stderr and "Traceback" not in proc.stderr
    repaired = run_main("leaderboard", str(copy), "--format", "csv")
    assert repaired.returncode == 0, repaired.stderr
    assert repaired.stdout == run_main("leaderboard", str(stored), "--format", "csv").stdout
    pd.testing.assert_series_equal(values(copy), values(stored), check_exact=True)


def test_a_damaged_suite_identity_is_refused_on_resume(stored, tmp_path):
    copy = _damaged_copy(stored, tmp_path, "UPDATE meta SET value = '{x' WHERE key = 'suite_identity'")
    assert_one_line(run_main("leaderboard", str(copy)), 2, "'suite_identity' is not valid JSON")
    proc = run_main(
        "bench",
        "--suite",
        tiny_file(tmp_path, runs=1),
        "--out",
        str(copy),
        "--resume",
        "--quiet",
        "--no-figures",
    )
    assert_one_line(proc, 2, "suite identity is damaged", "another --out")


@pytest.mark.parametrize("seed", range(4))
def test_flipped_bytes_are_one_line_or_a_clean_resume(stored, tmp_path, seed):
    """200 flipped bits anywhere past the header: every command answers in one line (or, where
    the damage is in unused pages, works)."""
    import random

    copy = tmp_path / "copy"
    shutil.copytree(stored, copy)
    for side in ("results.sqlite-wal", "results.sqlite-shm"):
        (copy / side).unlink(missing_ok=True)
    db = copy / "results.sqlite"
    data = bytearray(db.read_bytes())
    rng = random.Random(seed)
    for _ in range(200):
        data[rng.randrange(100, len(data))] ^= 1 << rng.randrange(8)
    db.write_bytes(bytes(data))
    suite = tiny_file(tmp_path, runs=1)
    for args in (
        ["leaderboard", str(copy)],
        ["bench", "--suite", suite, "--out", str(copy), "--resume", "--quiet", "--no-figures"],
    ):
        proc = run_main(*args)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == 0 or len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# -- 9. one run per folder; nothing outlives a killed run ------------------------------------------------
def test_a_second_run_on_a_folder_is_refused_while_the_first_holds_it(tmp_path):
    out = tmp_path / "out"
    run_suite(tiny(methods=["ols"]), out, progress=False)
    with ResultStore(out).lock():
        proc = run_main(
            "bench", "--suite", tiny_file(tmp_path), "--out", str(out), "--resume", "--quiet", "--no-figures"
        )
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


@pytest.mark.alone
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
            "--no-figures",
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


def _session(sid: int) -> list[int]:
    """Processes of session ``sid`` still running (a killed run's workers, their fits, and
    anything those started)."""
    import psutil

    running = []
    for p in psutil.process_iter():
        try:
            if os.getsid(p.pid) == sid and p.status() != psutil.STATUS_ZOMBIE:
                running.append(p.pid)
        except (ProcessLookupError, PermissionError, psutil.NoSuchProcess):
            pass
    return running


def _stored(out: Path) -> int:
    try:
        with contextlib.closing(sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)) as con:
            return con.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0


@pytest.mark.alone
@pytest.mark.slow
@pytest.mark.parametrize(
    "backend, starting, then", [("local", 4, 0.0), ("local", 4, 0.4), ("local", 4, 0.8), ("dask", 2, 0.4)]
)
def test_a_run_killed_while_its_workers_start_leaves_none_and_commits_nothing_after(
    tmp_path, backend, starting, then
):
    """SIGKILL ``then`` seconds after the run has ``starting`` processes below it (its workers
    still importing, their first jobs already sent): every process of the run ends, and no task
    is stored after the kill."""
    psutil = pytest.importorskip("psutil")
    if backend == "dask":
        pytest.importorskip("distributed")
    out = tmp_path / "out"
    args = [
        "bench",
        "--suite",
        tiny_file(tmp_path, runs=3),
        "--out",
        str(out),
        "--jobs",
        "2",
        "--quiet",
        "--no-figures",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "oodfs.cli", *args, "--backend", backend],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        try:
            if len(psutil.Process(proc.pid).children(recursive=True)) >= starting:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.01)
    time.sleep(then)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it was killed"
    time.sleep(0.3)
    at_kill = _stored(out)
    # a worker ends with the run from its first import of oodfs on (dask workers commit nothing: they
    # return their rows to the run)
    deadline = time.time() + 10
    while time.time() < deadline and _session(proc.pid):
        time.sleep(0.2)
    assert _session(proc.pid) == [], "processes of the killed run are still running"
    time.sleep(2)
    assert _stored(out) == at_kill, "tasks were stored after the run was killed"


@pytest.mark.alone
@pytest.mark.slow
def test_a_dask_run_outlives_the_shell_that_started_it(tmp_path, faults):
    """`oodfs bench --backend dask ... &` from a shell that then exits (nohup, a script) runs to
    its end: the run is not tied to its own parent, only its workers are tied to it."""
    pytest.importorskip("psutil")
    pytest.importorskip("distributed")
    out = tmp_path / "out"
    bench = [sys.executable, "-m", "oodfs.cli", "bench", "--suite", tiny_file(tmp_path), "--plugin", faults]
    bench += [
        "--out",
        str(out),
        "--jobs",
        "2",
        "--backend",
        "dask",
        "--methods",
        "fail_once,ols",
        "--quiet",
        "--no-figures",
    ]
    # the shell ends once a worker has fitted (the cluster is up), long before the run ends
    wait = 'while [ ! -e "$OODFS_TEST_MARKER" ]; do sleep 0.1; done'
    script = f"{shlex.join(bench)} >/dev/null 2>&1 & echo $!; {wait}"
    shell = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=120)
    run = int(shell.stdout.split()[0])
    deadline = time.time() + 120
    while time.time() < deadline and _alive([run]):
        time.sleep(0.5)
    assert _alive([run]) == []
    assert (out / "leaderboard.md").is_file(), "the run ended with its shell"
    assert len(tasks(out)) == 4


HELPERS = """
import os, subprocess, sys, time
from pathlib import Path
import numpy as np
import oodfs

def corr(X, y):
    return np.abs(np.corrcoef(X.T, y)[-1, :-1])

def selector(name, fit):
    attrs = {"name": name, "__doc__": name, "_fit_scores": lambda self, X, y, sw: fit(X, y)}
    cls = type(name, (oodfs.Selector,), attrs)
    cls.__module__ = __name__
    return cls

def note(*pids):
    with open(os.environ["OODFS_TEST_MARKER"] + ".pids", "a") as out:
        out.write("".join(f"{pid}\\n" for pid in pids))

def hold():  # OODFS_TEST_HOLD: the fit stays running with what it started, for a kill test
    if os.environ.get("OODFS_TEST_HOLD"):
        with open(os.environ["OODFS_TEST_MARKER"] + ".holding", "a") as out:
            out.write(f"{os.getpid()}\\n")
        time.sleep(300)

def popen():  # children that would sleep for five minutes
    note(*(subprocess.Popen(["sleep", "300"]).pid for _ in range(3)))

def pool():  # joblib's worker processes, left running by the pool for reuse
    from joblib import Parallel, delayed
    note(*set(Parallel(n_jobs=2)(delayed(os.getpid)() for _ in range(4))))

def forker():  # a forked child that holds the result pipe and the output for a minute
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    note(pid)

def starts(*starters):
    def fit(X, y):
        for start in starters:
            start()
        hold()
        return corr(X, y)
    return fit

STARTS = {"popen": [popen], "pool": [pool], "forker": [forker], "starter": [popen, pool, forker]}
SELECTORS = [selector(name, starts(*starters)) for name, starters in STARTS.items()]

@oodfs.hookimpl
def oodfs_selectors():
    return SELECTORS
"""


def test_a_fit_ends_with_everything_it_started_and_the_run_waits_for_none(tmp_path, monkeypatch):
    """Processes a plugin starts (Popen, a joblib pool, a fork) end with its fit; the run, read
    through pipes as `oodfs bench ... | cat` would, does not wait for them; a fit that returned
    is a result, even with --task-timeout shorter than those processes' lives."""
    pytest.importorskip("psutil")
    plugin = tmp_path / "helpers.py"
    plugin.write_text(HELPERS)
    monkeypatch.setenv("OODFS_TEST_MARKER", str(tmp_path / "marker"))
    out = tmp_path / "out"
    start = time.monotonic()
    proc = cli(
        "bench",
        "--suite",
        tiny_file(tmp_path, runs=1),
        "--plugin",
        str(plugin),
        "--out",
        str(out),
        "--jobs",
        "1",
        "--methods",
        "popen,pool,forker,ols",
        "--task-timeout",
        "20",
        "--quiet",
        "--no-figures",
        timeout=50,
    )
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    assert took < 50
    assert {m: s for (_, m), (s, _) in tasks(out).items()} == dict.fromkeys(
        ["popen", "pool", "forker", "ols"], "ok"
    )
    started = [int(p) for p in (tmp_path / "marker.pids").read_text().split()]
    assert len(started) >= 5
    deadline = time.time() + 10
    while time.time() < deadline and _alive(started):
        time.sleep(0.2)
    assert _alive(started) == []


@pytest.mark.alone
@pytest.mark.slow
@pytest.mark.parametrize("backend, jobs", [("local", 1), ("local", 2), ("dask", 2)])
def test_a_run_killed_mid_fit_leaves_nothing_the_fits_started(tmp_path, monkeypatch, backend, jobs):
    """SIGKILL of the run while its fits run, each having started processes (Popen, a joblib
    pool, a fork): a few seconds later none of those processes, and no process of the run, is
    alive."""
    pytest.importorskip("psutil")
    if backend == "dask":
        pytest.importorskip("distributed")
    plugin = tmp_path / "helpers.py"
    plugin.write_text(HELPERS)
    monkeypatch.setenv("OODFS_TEST_MARKER", str(tmp_path / "marker"))
    monkeypatch.setenv("OODFS_TEST_HOLD", "1")
    args = ["--suite", tiny_file(tmp_path, runs=jobs), "--plugin", str(plugin), "--jobs", str(jobs)]
    args += [
        "--out",
        str(tmp_path / "out"),
        "--backend",
        backend,
        "--methods",
        "starter",
        "--quiet",
        "--no-figures",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "oodfs.cli", "bench", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        holding = tmp_path / "marker.holding"
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            if holding.exists() and len(holding.read_text().split()) == jobs:  # each fit started all three
                break
            time.sleep(0.2)
        assert proc.poll() is None and len(holding.read_text().split()) == jobs, "the fits never started"
        started = [int(p) for p in (tmp_path / "marker.pids").read_text().split()]
        assert len(started) >= 5 * jobs and _alive(started) == started
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.time() + 5
        while time.time() < deadline and (_alive(started) or _session(proc.pid)):
            time.sleep(0.2)
        assert _alive(started) == [], "processes a fit started outlived the killed run"
        assert _session(proc.pid) == [], "processes of the killed run are still running"
    finally:  # a failure leaves nothing running either
        for pid in [proc.pid, *_session(proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_run_where_every_task_fails_has_a_leaderboard_and_figures(tmp_path, faults):
    """Failures are results: the leaderboard lists them, plot draws what failed, compare says
    there is nothing to compare; compare and plot write elsewhere with --out."""
    out = tmp_path / "out"
    proc = run_main(
        "bench",
        "--suite",
        tiny_file(tmp_path),
        "--plugin",
        faults,
        "--out",
        str(out),
        "--methods",
        "raises,exit0",
    )
    assert proc.returncode == 0, proc.stderr
    assert "## Failed tasks" in proc.stdout and "ZeroDivisionError" in proc.stdout
    assert (out / "figures" / "failures-val.png").is_file()
    assert run_main("plot", str(out), "--out", str(tmp_path / "plots")).returncode == 0
    assert (tmp_path / "plots" / "figures" / "failures-val.png").is_file()
    proc = run_main("compare", str(out), "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0 and "No comparison possible" in proc.stdout, proc.stderr


EXIT_NOISE = """
import atexit
import numpy as np
import oodfs

print("IMPORT-NOISE")
atexit.register(lambda: print("EXIT-NOISE"))

class Quiet(oodfs.Selector):
    \"\"\"Scores every feature alike.\"\"\"

    name = "quiet"

    def _fit_scores(self, X, y, sw):
        return np.ones(X.shape[1])

@oodfs.hookimpl
def oodfs_selectors():
    return [Quiet]
"""


def test_what_a_plugin_prints_at_import_and_exit_goes_to_stderr(tmp_path):
    plugin = tmp_path / "exit_noise.py"
    plugin.write_text(EXIT_NOISE)
    out = tmp_path / "out"
    proc = cli(
        "bench",
        "--suite",
        tiny_file(tmp_path, runs=1),
        "--plugin",
        str(plugin),
        "--out",
        str(out),
        "--jobs",
        "1",
        "--methods",
        "quiet,ols",
        "--quiet",
        "--no-figures",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (out / "leaderboard.md").read_text() + "\n"
    assert "IMPORT-NOISE" in proc.stderr and "EXIT-NOISE" in proc.stderr


# -- output failures and interruptions: one line, exit 1 (130 for Ctrl-C) ------------------------------
@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(120, 4)), columns=["a", "b", "c", "d"])
    frame["y"] = frame["a"] + rng.normal(size=120)
    path = tmp_path_factory.mktemp("table") / "t.csv"
    frame.to_csv(path, index=False)
    return str(path)


def assert_output_failure(proc, *needles):
    """One line and status 1 (besides select's summary of what it ranked, printed before)."""
    lines = [line for line in proc.stderr.splitlines() if line.strip() and " features, " not in line]
    proc = subprocess.CompletedProcess(proc.args, proc.returncode, "", "\n".join(lines))
    assert_one_line(proc, 1, *needles)


def _output_command(kind, table, stored):
    return {
        # a top-k below the table's 4 features: a selection (and no note on keeping every feature)
        "select": ["select", table, "--target", "y", "--method", "correlation", "--top-k", "2"],
        "select --json": [
            "select",
            table,
            "--target",
            "y",
            "--method",
            "correlation",
            "--top-k",
            "2",
            "--json",
        ],
        "leaderboard": ["leaderboard", str(stored)],
    }[kind]


@pytest.mark.parametrize("kind", ["select", "select --json", "leaderboard"])
def test_standard_output_on_a_full_device_is_one_line(table, stored, kind):
    with open("/dev/full", "w") as full:
        proc = run_limited(*_output_command(kind, table, stored), stdout=full)
    assert_output_failure(proc, "cannot write the output", "No space left on device")


def test_leaderboard_output_on_a_full_device_is_one_line(stored):
    proc = run_limited("leaderboard", str(stored), "--output", "/dev/full")
    assert_one_line(proc, 1, "cannot write --output /dev/full", "No space left on device")


@pytest.mark.parametrize("kind", ["select", "leaderboard"])
def test_output_past_a_file_size_limit_is_one_line_not_a_silently_cut_file(tmp_path, table, stored, kind):
    """Also under PYTHONUNBUFFERED, where Python itself drops what a short write left over."""
    with open(tmp_path / "out.txt", "w") as out:
        proc = run_limited(
            *_output_command(kind, table, stored),
            file_size=200,
            stdout=out,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    assert_output_failure(proc, "cannot write the output", "File too large")
    proc = run_limited("leaderboard", str(stored), "-o", str(tmp_path / "board.md"), file_size=200)
    assert_one_line(proc, 1, "board.md", "File too large")


LINGERING = """
import os, threading, time
import numpy as np
import oodfs

def linger():  # a library's worker thread that outlives the command by a minute
    while threading.main_thread().is_alive():
        time.sleep(0.05)
    open(os.environ["OODFS_TEST_MARKER"], "w").close()  # Python is joining the threads at exit
    time.sleep(60)

class Lingering(oodfs.Selector):
    "fits, leaving a thread running"
    name = "lingering"

    def _fit_scores(self, X, y, sample_weight):
        threading.Thread(target=linger).start()
        return np.abs(np.corrcoef(X.T, y)[-1, :-1])

@oodfs.hookimpl
def oodfs_selectors():
    return [Lingering]
"""


@pytest.mark.alone
def test_ctrl_c_while_python_exits_is_status_130_and_one_line(tmp_path, table):
    """Ctrl-C after the command has finished, while Python joins a library's threads: status 130
    and one line, not status 0 and a ``threading._shutdown`` traceback."""
    plugin = tmp_path / "lingering.py"
    plugin.write_text(LINGERING)
    marker = tmp_path / "marker"
    args = [
        "select",
        table,
        "--target",
        "y",
        "--method",
        "lingering",
        "--plugin",
        str(plugin),
        "--top-k",
        "2",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "oodfs.cli", *args, "--no-isolation"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OODFS_TEST_MARKER": str(marker)},
        preexec_fn=as_in_a_terminal,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not marker.exists() and proc.poll() is None:
            time.sleep(0.1)
        assert marker.exists(), proc.stderr.read() if proc.poll() is not None else "no exit"
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=30)[1]
    finally:
        proc.kill()
    lines = [line for line in err.splitlines() if line.strip() and " features, " not in line]
    assert proc.returncode == 130, err
    assert "Traceback" not in err and lines == ["oodfs: interrupted while exiting"], err


@pytest.mark.alone
@pytest.mark.slow
@pytest.mark.parametrize("when", ["starting", "fitting"])
def test_ctrl_c_of_a_dask_run_is_one_line_from_the_run_alone(tmp_path, faults, when):
    """Ctrl-C reaches the run and all its workers (the terminal's process group): while the
    workers fit, the run stops with status 130 and one line, and no worker prints a traceback of
    its own. While the cluster starts, a Ctrl-C is ignored (no worker still starting Python
    prints a traceback either); a second one once the workers fit stops the run."""
    psutil = pytest.importorskip("psutil")
    pytest.importorskip("distributed")
    args = ["bench", "--suite", tiny_file(tmp_path), "--plugin", faults, "--out", str(tmp_path / "out")]
    args += ["--jobs", "2", "--backend", "dask", "--methods", "sleep_long", "--quiet", "--no-figures"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "oodfs.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=as_in_a_terminal,
    )
    try:
        if when == "starting":
            deadline = time.time() + 120
            while time.time() < deadline and len(psutil.Process(proc.pid).children()) < 3:
                time.sleep(0.05)  # the resource tracker and two workers, starting Python
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        # the Ctrl-C that must stop the run comes once both workers fit: on a fresh clone under a
        # busy machine their first imports can take minutes, and a Ctrl-C while the cluster still
        # starts is ignored by design (_ctrl_c_held), so waiting less made the test time out
        deadline = time.time() + 400
        while time.time() < deadline and proc.poll() is None and len(list(tmp_path.glob("marker.*"))) < 2:
            time.sleep(0.1)
        assert proc.poll() is None, proc.stderr.read()
        assert len(list(tmp_path.glob("marker.*"))) == 2, "the workers never started fitting"
        os.killpg(proc.pid, signal.SIGINT)
        err = proc.communicate(timeout=90)[1]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert lines == ["oodfs: interrupted; finished tasks are saved (continue with --resume)"], err


def _leave_the_session():
    """A fit's helpers that leave its process group: a ``start_new_session`` child, and a daemon
    (``setsid`` in a shell that exits at once, so it is orphaned during the fit)."""
    helper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    daemon = subprocess.Popen(
        ["sh", "-c", "setsid sleep 301 > /dev/null 2>&1 & echo $!"], stdout=subprocess.PIPE, text=True
    )
    orphan = int(daemon.communicate()[0])
    return [helper.pid, orphan]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper is Linux's")
def test_what_a_fit_starts_in_a_new_session_ends_with_the_fit():
    """The worker is a child subreaper: a process the fit started in a new session (which the
    kill of the fit's process group misses) is reparented to the worker, and killed and waited
    for when the fit ends."""
    from oodfs.run.executors.isolation import call_isolated

    started = call_isolated(_leave_the_session)
    assert len(started) == 2
    deadline = time.time() + 5
    while time.time() < deadline and _alive(started):
        time.sleep(0.1)
    assert _alive(started) == []


@pytest.mark.parametrize(
    "sql",
    [
        CONTENT_DAMAGE["text in value"][0],
        CONTENT_DAMAGE["text in run"][0],
        CONTENT_DAMAGE["scores not JSON"][0],
        CONTENT_DAMAGE["parts not JSON"][0],
        # Python's JSON: not damage (a method's "no score")
        "UPDATE result_groups SET scores = '[NaN' || substr(scores, instr(scores, ',')) WHERE method = 'ols'",
        CONTENT_DAMAGE["an infinite score"][0],
        CONTENT_DAMAGE["a score of 1e300"][0],
        CONTENT_DAMAGE["scores of the wrong length"][0],
        "UPDATE result_groups SET params = x'00' WHERE method = 'ols'",  # bytes where JSON text belongs
    ],
)
def test_store_check_finds_the_same_damage_with_and_without_sqlites_json_check(
    stored, tmp_path, sql, monkeypatch
):
    """The damage check lets SQLite's strict JSON check pick the texts Python's parser decides
    about; an SQLite without one gives every text to Python: both find the same damaged tasks."""
    from oodfs.results import store as store_module

    copy = _damaged_copy(stored, tmp_path, sql)
    with contextlib.closing(sqlite3.connect(copy / "results.sqlite")) as con:
        assert store_module._strict_json(con)  # this SQLite has the strict check
        found = store_module.check_store(con).tasks
        monkeypatch.setattr(store_module, "_strict_json", lambda con: False)
        assert store_module.check_store(con).tasks == found
    assert bool(found) == ("NaN" not in sql)
