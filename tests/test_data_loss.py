"""Nothing a user keeps is lost at the edges: `oodfs report` replaces only a site it wrote, and
in one step; a set of training environments is stored as a set and read back by every command."""

import fcntl
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.report.site_folder import MARKER, STAGING_PREFIX

from .conftest import TINY_SUITE_TOML, assert_one_line, run_cli

SUITE = TINY_SUITE_TOML.format(runs=1).replace('methods = ["ols", "correlation"]', 'methods = ["ols"]')


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory):
    """One tiny results folder with a store (what `report` must never delete)."""
    root = tmp_path_factory.mktemp("results")
    (root / "tiny.toml").write_text(SUITE)
    out = root / "res"
    # in this process: the run is what the tests read, not what they test
    args = ["--suite", str(root / "tiny.toml"), "--out", str(out), "--quiet", "--no-figures"]
    assert main(["bench", *args]) == 0
    return out


def _stages(parent: Path) -> list[Path]:
    return sorted(parent.glob(STAGING_PREFIX + "*"))


def test_report_never_deletes_a_results_folder_written_into_its_site(results_dir, tmp_path, capsys):
    # the sequence: a site, then results written inside it, then the site rewritten from them
    site = tmp_path / "site"
    assert run_cli(capsys, "report", str(results_dir), "--out", str(site))[0] == 0
    inner = site / "res"
    inner.mkdir()
    for f in results_dir.iterdir():
        if f.is_file():
            (inner / f.name).write_bytes(f.read_bytes())
    before = (inner / "results.sqlite").read_bytes()
    assert_one_line(run_cli(capsys, "report", str(inner), "--out", str(site)), "holds the results folder")
    assert_one_line(run_cli(capsys, "report", str(results_dir), "--out", str(site)), "holds results")
    assert (inner / "results.sqlite").read_bytes() == before
    assert (site / "index.html").exists() and (site / MARKER).exists()


def test_a_site_inside_a_results_folder_is_refused(results_dir, capsys):
    assert_one_line(
        run_cli(capsys, "report", str(results_dir), "--out", str(results_dir / "site")),
        "inside the results folder",
    )
    assert not (results_dir / "site").exists() and not _stages(results_dir)


def test_a_site_with_a_file_it_did_not_write_is_refused_and_left_whole(results_dir, tmp_path, capsys):
    site = tmp_path / "site"
    assert run_cli(capsys, "report", str(results_dir), "--out", str(site))[0] == 0
    page = (site / "index.html").read_bytes()
    (site / "figures" / "notes.txt").write_text("mine")
    assert_one_line(run_cli(capsys, "report", str(results_dir), "--out", str(site)), "figures/notes.txt")
    assert (site / "figures" / "notes.txt").read_text() == "mine"
    assert (site / "index.html").read_bytes() == page
    (site / "figures" / "notes.txt").unlink()  # the site alone is replaced again
    assert run_cli(capsys, "report", str(results_dir), "--out", str(site))[0] == 0


@pytest.mark.parametrize(
    "case", ["symlink", "dangling symlink", "parent is a file", "/proc", "/sys", "NUL", "a file"]
)
def test_an_out_path_that_cannot_be_a_site_is_one_line(results_dir, tmp_path, capsys, case):
    target = tmp_path / "real"
    target.mkdir()
    out = {
        "symlink": tmp_path / "link",
        "dangling symlink": tmp_path / "dangling",
        "parent is a file": tmp_path / "file.txt" / "site",
        "/proc": Path("/proc/oodfs-site"),
        "/sys": Path("/sys/oodfs-site"),
        "NUL": tmp_path / "a\0b",
        "a file": tmp_path / "file.txt",
    }[case]
    (tmp_path / "file.txt").write_text("keep")
    (tmp_path / "link").symlink_to(target)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert_one_line(run_cli(capsys, "report", str(results_dir), "--out", str(out)))
    assert (tmp_path / "file.txt").read_text() == "keep" and not any(target.iterdir())
    assert not _stages(tmp_path)


def test_missing_parents_are_made_and_nothing_goes_to_the_system_temp_folder(results_dir, tmp_path, capsys):
    import tempfile

    before = set(Path(tempfile.gettempdir()).glob(STAGING_PREFIX + "*"))
    out = tmp_path / "a" / "b" / "site"
    assert run_cli(capsys, "report", str(results_dir), "--out", str(out))[0] == 0
    assert (out / "index.html").exists() and not _stages(out.parent)
    assert set(Path(tempfile.gettempdir()).glob(STAGING_PREFIX + "*")) == before


def _report(results_dir, out, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "oodfs.cli", "report", str(results_dir), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_a_full_disk_is_one_line_and_leaves_the_old_site(results_dir, tmp_path, capsys):
    site = tmp_path / "site"
    assert run_cli(capsys, "report", str(results_dir), "--out", str(site))[0] == 0
    page = (site / "index.html").read_bytes()

    def small_files():  # in the child: any file over 20 kB fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    proc = _report(results_dir, site, preexec_fn=small_files)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and err.count("\n") == 1 and "File too large" in err, err
    assert (site / "index.html").read_bytes() == page and not _stages(tmp_path)


@pytest.mark.alone
def test_a_killed_report_leaves_the_old_site_whole_and_the_next_one_cleans_up(results_dir, tmp_path, capsys):
    site = tmp_path / "site"
    assert run_cli(capsys, "report", str(results_dir), "--out", str(site))[0] == 0
    files = sorted(p.relative_to(site) for p in site.rglob("*"))
    proc = _report(results_dir, site)
    deadline = time.monotonic() + 120
    while not any((s / "figures").exists() for s in _stages(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert sorted(p.relative_to(site) for p in site.rglob("*")) == files  # the old site, whole
    assert _stages(tmp_path), "the kill came too late to leave a stage behind"
    # a stage that a live report holds is left alone; the dead one's is removed
    held = tmp_path / (STAGING_PREFIX + "live")
    held.mkdir()
    with open(held / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert run_cli(capsys, "report", str(results_dir), "--out", str(site))[0] == 0
        assert _stages(tmp_path) == [held]


# -- environment sets --------------------------------------------------------------------------


def _bench(capsys, suite: Path, out: Path, *extra):
    return run_cli(
        capsys, "bench", "--suite", str(suite), "--out", str(out), "--quiet", "--no-figures", *extra
    )


def test_a_set_of_training_environments_beside_one_environment_is_read_back(tmp_path, capsys):
    suite = tmp_path / "tiny.toml"
    suite.write_text(SUITE)
    out = tmp_path / "res"
    status, _, err = _bench(capsys, suite, out, "--r-train", "3.0+1.5,2.5")
    assert status == 0, err
    for command in (["leaderboard", str(out)], ["compare", str(out), "--out", str(tmp_path / "c")]):
        status, text, err = run_cli(capsys, *command)
        assert status == 0 and "damaged" not in err, err
    status, text, _ = run_cli(capsys, "leaderboard", str(out))
    assert "(1.5, 3.0)" in text and "2.5" in text  # the set in its natural order
    assert run_cli(capsys, "report", str(out), "--out", str(tmp_path / "site"))[0] == 0
    status, _, err = _bench(capsys, suite, out, "--r-train", "1.5+3.0,2.5", "--resume")
    assert status == 0 and "damaged" not in err, err
    stored = pd.read_parquet(out / "results.parquet")
    assert set(stored["r_train"].astype(str)) == {"(1.5, 3.0)", "2.5"}
    # a folder of the set and one of the single environment merge into one
    other = tmp_path / "single"
    assert _bench(capsys, suite, other)[0] == 0
    merged = tmp_path / "merged"
    status, _, err = run_cli(capsys, "merge", str(out), str(other), "--out", str(merged))
    assert status == 0, err
    assert run_cli(capsys, "leaderboard", str(merged))[0] == 0


def test_the_same_set_in_any_order_is_one_set(tmp_path, capsys):
    suite = tmp_path / "tiny.toml"
    suite.write_text(SUITE)
    a, b = tmp_path / "a", tmp_path / "b"
    assert _bench(capsys, suite, a, "--r-train", "1.5+3.0")[0] == 0
    assert _bench(capsys, suite, b, "--r-train", "3.0+1.5")[0] == 0
    left, right = (pd.read_parquet(d / "results.parquet") for d in (a, b))
    timing = [c for c in left.columns if "seconds" in c]
    pd.testing.assert_frame_equal(left.drop(columns=timing), right.drop(columns=timing))
    assert_one_line(_bench(capsys, suite, tmp_path / "c", "--r-train", "1.5+3.0,3.0+1.5"), "twice")
    suite.write_text(SUITE.replace("r_train = [2.5]", "r_train = [[3.0, 1.5], [1.5, 3.0]]"))
    assert_one_line(_bench(capsys, suite, tmp_path / "d"), "twice")


# -- the results folder's lock file ------------------------------------------------------------------


def test_a_finished_run_leaves_no_lock_file(results_dir):
    assert (results_dir / "results.sqlite").exists()
    assert not (results_dir / "results.lock").exists()


def test_the_lock_file_is_removed_without_ever_letting_two_runs_write(tmp_path, monkeypatch):
    """A run removes its lock file while it still holds the lock. A second run that opened the file
    just before it was removed locks that removed file: it must see that and lock the file now in
    the folder, so a third run cannot hold a different file at the same time."""
    import os

    from oodfs import OodfsError
    from oodfs.results import store as store_module
    from oodfs.results.store import ResultStore

    out = tmp_path / "res"
    out.mkdir()
    with ResultStore(out).lock():
        assert (out / "results.lock").read_text() == str(os.getpid())
        stale = os.open(out / "results.lock", os.O_RDWR)  # the second run's open, before the removal
    assert not (out / "results.lock").exists()

    real_open, opened = os.open, []

    def open_stale_first(path, *args, **kwargs):  # the second run's first os.open returns that descriptor
        if Path(path).name == "results.lock" and not opened:
            opened.append(path)
            return stale
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(store_module.os, "open", open_stale_first)
    with ResultStore(out).lock():
        assert opened and (out / "results.lock").exists()  # it went on to the file in the folder
        monkeypatch.setattr(store_module.os, "open", real_open)
        with pytest.raises(OodfsError, match="another oodfs run"):
            with ResultStore(out).lock():
                pass
    assert not (out / "results.lock").exists()


def test_a_lock_file_that_another_run_made_is_not_removed(tmp_path):
    import os

    from oodfs.results.store import ResultStore

    out = tmp_path / "res"
    out.mkdir()
    with ResultStore(out).lock():
        (out / "results.lock").unlink()  # e.g. removed by hand while the run went on
        (out / "results.lock").write_text("other")
    assert (out / "results.lock").read_text() == "other"
    os.unlink(out / "results.lock")


def _journals(*folders: Path) -> list[Path]:
    ends = ("-wal", "-shm", "-journal")
    return [p for folder in folders for p in folder.iterdir() if p.name.endswith(ends)]


def test_a_run_and_every_reader_after_it_leave_no_sqlite_journal_files(results_dir, tmp_path, capsys):
    """The store is checkpointed and back in rollback mode at the end of a run: no results.sqlite-wal
    or -shm in the folder, and none made by the commands that read it afterwards."""
    assert _journals(results_dir) == []
    assert run_cli(capsys, "leaderboard", str(results_dir))[0] == 0
    assert run_cli(capsys, "report", str(results_dir), "--out", str(tmp_path / "site"))[0] == 0
    merged = tmp_path / "merged"
    assert run_cli(capsys, "merge", str(results_dir), "--out", str(merged))[0] == 0
    assert run_cli(capsys, "leaderboard", str(merged))[0] == 0
    assert _journals(results_dir, merged) == []
    again = ["--suite", str(results_dir.parent / "tiny.toml"), "--out", str(results_dir), "--resume"]
    assert main(["bench", *again, "--quiet", "--no-figures", "--force", "ols"]) == 0
    assert _journals(results_dir) == []
