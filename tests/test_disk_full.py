"""A full disk while a command writes its outputs: one line naming the file and "No space left on
device", exit status 1 (the run was aborted, the input was fine), and no half-written file: what
was there before stays as it was, what was new is either complete or absent.

The disk is made full by the one function through which every output file is written
(:mod:`oodfs.results.atomic`): after a given number of files it writes half of the next and
raises ENOSPC, as a nearly full file system does. Before, matplotlib's PDF writer, hit by the
ENOSPC half-way, raised ``AttributeError: 'Stream' object has no attribute 'pos'`` from its
clean-up (a 73-line traceback) and left half a PDF file.
"""

import errno
import io
import os
import shutil
import sqlite3

import pytest

from oodfs.results import atomic, store
from oodfs.validation import RunAborted

from .conftest import assert_one_line, run_cli
from .test_faults import run_main, tiny_file


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    out = tmp_path_factory.mktemp("stored") / "out"
    proc = run_main(
        "bench", "--suite", tiny_file(out.parent, runs=1), "--out", str(out), "--quiet", "--no-figures"
    )
    assert proc.returncode == 0, proc.stderr
    return out


def disk_full_after(monkeypatch, files: int) -> None:
    """The disk fills up after ``files`` more output files: the next one gets half its bytes
    written, then ENOSPC."""
    real, written = atomic._write, [0]

    def write(out, content):
        if written[0] >= files:
            whole = io.BytesIO()
            real(whole, content)
            out.write(whole.getvalue()[: len(whole.getvalue()) // 2])
            out.flush()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written[0] += 1
        real(out, content)

    monkeypatch.setattr(atomic, "_write", write)


def files(folder) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def no_temporary_files(folder) -> bool:
    return not [p for p in folder.rglob("*") if p.name.endswith(".tmp")]


def test_plot_on_a_full_disk_is_one_line_naming_the_file_and_leaves_no_half_a_figure(
    stored, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "figs"
    disk_full_after(monkeypatch, 1)  # figure1's PNG is written, its PDF is not
    result = run_cli(capsys, "plot", str(stored), "--out", str(out))
    assert_one_line(result, "figure1-val.pdf", "No space left on device", code=1)
    written = files(out)
    assert sorted(written) == ["figures/figure1-val.png"]
    assert written["figures/figure1-val.png"].startswith(b"\x89PNG") and written[
        "figures/figure1-val.png"
    ].endswith(b"IEND\xaeB`\x82")  # the whole PNG, up to its end chunk
    assert no_temporary_files(out)


def test_a_full_disk_leaves_the_figures_of_an_earlier_plot_as_they_were(
    stored, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "figs"
    assert run_cli(capsys, "plot", str(stored), "--out", str(out))[0] == 0
    before = files(out)
    assert len(before) >= 6
    disk_full_after(monkeypatch, 0)
    assert_one_line(
        run_cli(capsys, "plot", str(stored), "--out", str(out)), "No space left on device", code=1
    )
    assert files(out) == before


def test_bench_outputs_on_a_full_disk_keep_the_exported_table_and_the_store(
    stored, tmp_path, capsys, monkeypatch
):
    run = tmp_path / "run"
    shutil.copytree(stored, run)
    before = files(run)
    disk_full_after(monkeypatch, 0)  # the first output of the run: results.parquet
    suite = tiny_file(tmp_path, runs=1)
    result = run_cli(capsys, "bench", "--suite", suite, "--out", str(run), "--resume", "--quiet")
    assert_one_line(result, f"{run / 'results.parquet'}", "No space left on device", code=1)
    after = files(run)
    assert after["results.parquet"] == before["results.parquet"]
    assert after["leaderboard.md"] == before["leaderboard.md"]
    assert no_temporary_files(run)
    with sqlite3.connect(run / "results.sqlite") as con:  # the store holds every task still
        assert con.execute("SELECT COUNT(*) FROM tasks WHERE status = 'ok'").fetchone()[0] == 2


def test_leaderboard_output_on_a_full_disk_keeps_the_earlier_file(stored, tmp_path, capsys, monkeypatch):
    target = tmp_path / "board.md"
    target.write_text("the earlier leaderboard\n")
    disk_full_after(monkeypatch, 0)
    result = run_cli(capsys, "leaderboard", str(stored), "--output", str(target))
    assert_one_line(result, f"--output {target}", "No space left on device", code=1)
    assert target.read_text() == "the earlier leaderboard\n"
    assert no_temporary_files(tmp_path)


def test_compare_on_a_full_disk_is_one_line(stored, tmp_path, capsys, monkeypatch):
    disk_full_after(monkeypatch, 0)
    result = run_cli(capsys, "compare", str(stored), "--out", str(tmp_path / "cmp"))
    assert_one_line(result, "No space left on device", code=1)
    assert files(tmp_path / "cmp") == {}


def test_write_atomically_names_the_target_and_writes_a_device_in_place(tmp_path, monkeypatch):
    target = tmp_path / "x.bin"
    assert atomic.write_atomically(target, b"12345") == target and target.read_bytes() == b"12345"
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # as an ordinary write makes it
    disk_full_after(monkeypatch, 0)
    with pytest.raises(OSError) as info:
        atomic.write_atomically(target, b"67890")
    assert (info.value.errno, info.value.filename) == (errno.ENOSPC, str(target))
    assert target.read_bytes() == b"12345" and sorted(p.name for p in tmp_path.iterdir()) == ["x.bin"]
    monkeypatch.undo()
    atomic.write_atomically("/dev/null", b"kept a device")  # never renamed over
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_sqlites_disk_io_error_on_a_full_disk_says_no_space_left(tmp_path, monkeypatch):
    """SQLite says only "disk I/O error" when it cannot grow its -shm file on a full tmpfs: the
    message adds what the device says."""
    target = store.ResultStore(tmp_path)
    full = os.statvfs_result((4096, 4096, 100, 0, 0, 10, 0, 0, 0, 255))
    monkeypatch.setattr(store.os, "statvfs", lambda path: full)
    monkeypatch.setattr(store.sqlite3, "connect", _failing_connect)
    with pytest.raises(
        RunAborted, match=r"results\.sqlite: disk I/O error: No space left on device \(0 KiB free"
    ):
        target.connect()


def _failing_connect(*args, **kwargs):
    raise sqlite3.OperationalError("disk I/O error")
