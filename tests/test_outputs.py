"""One rule for every output path (oodfs/results/outputs.py): no command writes over, or inside, a
results store, an exported results table, a reference or one of its inputs; each is refused in one
line with exit status 2, and the results folder is left byte for byte as it was."""

from pathlib import Path

import pytest

from oodfs.cli import build_parser, main
from oodfs.run.reference import shipped_dir

from .conftest import TINY_SUITE_TOML, assert_one_line, run_cli

SUITE = TINY_SUITE_TOML.format(runs=1).replace('methods = ["ols", "correlation"]', 'methods = ["ols"]')


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("outputs")
    (root / "tiny.toml").write_text(SUITE)
    out = root / "run"
    args = ["--suite", str(root / "tiny.toml"), "--out", str(out), "--quiet", "--no-figures"]
    assert main(["bench", *args]) == 0
    (out / "results.csv").write_text("kept\n")  # an exported table by its name
    return out


def _files(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


#: every command and option that writes a file: argv for writing to TARGET, reading RUN
WRITERS = {
    ("bench", "--out"): lambda run, t: [
        "bench", "--suite", str(run.parent / "tiny.toml"), "--out", t, "--quiet", "--no-figures",
    ],
    ("bench", "--out --resume"): lambda run, t: [
        "bench", "--suite", str(run.parent / "tiny.toml"), "--out", t, "--resume", "--quiet", "--no-figures",
    ],
    ("leaderboard", "--output"): lambda run, t: ["leaderboard", str(run), "--output", t],
    ("leaderboard", "-o"): lambda run, t: ["leaderboard", str(run), "--format", "html", "-o", t],
    ("leaderboard", "--output csv"): lambda run, t: ["leaderboard", str(run), "--format", "csv", "--output", t],  # noqa: E501
    ("compare", "--out"): lambda run, t: ["compare", str(run), "--out", t],
    ("plot", "--out"): lambda run, t: ["plot", str(run), "--out", t],
    ("report", "--out"): lambda run, t: ["report", str(run), "--out", t],
    ("merge", "--out"): lambda run, t: ["merge", str(run), "--out", t],
    ("theory", "--out"): lambda run, t: ["theory", "--quick", "--out", t, "--quiet"],
}  # fmt: skip

#: what no output may be: (label, path from RUN, what the refusal says)
PROTECTED = {
    "the store": (lambda run: run / "results.sqlite", "results store"),
    "its -wal": (lambda run: run / "results.sqlite-wal", "results store"),
    "its -shm": (lambda run: run / "results.sqlite-shm", "results store"),
    "the parquet table": (lambda run: run / "results.parquet", "exported results table"),
    "the csv table": (lambda run: run / "results.csv", "exported results table"),
    "inside the store": (lambda run: run / "results.sqlite" / "sub", "inside"),
    "a shipped reference": (lambda run: shipped_dir() / "synthetic-default.parquet", "reference results"),
    "the shipped references' folder": (lambda run: shipped_dir(), "reference results"),
}


def test_every_option_that_writes_is_listed():
    """A new command or option that writes a file (dest out or output) must join WRITERS."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    writing = {
        (name, action.option_strings[0])
        for name, p in sub.choices.items()
        for action in p._actions
        if action.dest in ("out", "output")
    }
    listed = {(command, option.split()[0]) for command, option in WRITERS}
    assert writing == {(c, o) for c, o in listed if o != "-o"}


@pytest.mark.parametrize("protected", PROTECTED)
@pytest.mark.parametrize("writer", WRITERS, ids=" ".join)
def test_no_output_replaces_a_store_a_table_or_a_reference(run_dir, capsys, writer, protected):
    path, says = PROTECTED[protected]
    target = path(run_dir)
    before, shipped = _files(run_dir), _files(shipped_dir())
    assert_one_line(run_cli(capsys, *WRITERS[writer](run_dir, str(target))), str(target), says)
    assert _files(run_dir) == before and _files(shipped_dir()) == shipped


@pytest.mark.parametrize("writer", ["compare", "plot"])
def test_the_default_output_folder_is_checked_too(run_dir, capsys, writer):
    # without --out they write beside what they read: a results file read is not a folder to write
    before = _files(run_dir)
    result = run_cli(capsys, writer, str(run_dir / "results.parquet"))
    assert_one_line(result, "the output folder", "exported results table", "--out DIR")
    assert _files(run_dir) == before


def test_a_database_or_table_by_another_name_is_refused(run_dir, tmp_path, capsys):
    db, table = tmp_path / "keep.db", tmp_path / "keep.pq"
    db.write_bytes((run_dir / "results.sqlite").read_bytes())
    table.write_bytes((run_dir / "results.parquet").read_bytes())
    for target, says in ((db, "SQLite database"), (table, "parquet table")):
        kept = target.read_bytes()
        assert_one_line(run_cli(capsys, "leaderboard", str(run_dir), "-o", str(target)), says)
        assert target.read_bytes() == kept


def test_an_input_of_the_command_is_refused(run_dir, tmp_path, capsys):
    suite = run_dir.parent / "tiny.toml"
    kept = suite.read_text()
    result = run_cli(capsys, "bench", "--suite", str(suite), "--out", str(suite), "--quiet")
    assert_one_line(result, "input of the command")
    assert suite.read_text() == kept
    # a results file read by leaderboard, under any name
    table = tmp_path / "mine.parquet"
    table.write_bytes((run_dir / "results.parquet").read_bytes())
    assert_one_line(run_cli(capsys, "leaderboard", str(table), "-o", str(table)), "input of the command")
    assert table.read_bytes() == (run_dir / "results.parquet").read_bytes()
    # a link to the store is the store
    link = tmp_path / "board.md"
    link.symlink_to(run_dir / "results.sqlite")
    before = _files(run_dir)
    assert_one_line(run_cli(capsys, "leaderboard", str(run_dir), "-o", str(link)), "results store")
    assert _files(run_dir) == before


def test_a_run_never_replaces_the_reference_it_reads(run_dir, tmp_path, capsys):
    # bench writes OUT/results.parquet: with --reference OUT/results.parquet that would be the reference
    out = tmp_path / "run"
    out.mkdir()
    reference = out / "results.parquet"
    reference.write_bytes((run_dir / "results.parquet").read_bytes())
    suite = str(run_dir.parent / "tiny.toml")
    result = run_cli(capsys, "bench", "--suite", suite, "--reference", str(reference), "--out", str(out))
    assert_one_line(result, "would replace", "input of the command")
    assert reference.read_bytes() == (run_dir / "results.parquet").read_bytes()
    # merging into a folder read: its store would be replaced
    before = _files(run_dir)
    assert_one_line(run_cli(capsys, "merge", str(run_dir), "--out", str(run_dir)), "already holds results")
    assert _files(run_dir) == before


def test_outputs_elsewhere_are_written(run_dir, tmp_path, capsys):
    # the rule refuses only what it names: the same commands write beside the store as before
    board = run_dir / "board.md"
    assert run_cli(capsys, "leaderboard", str(run_dir), "-o", str(board))[0] == 0
    assert "ols" in board.read_text()
    board.unlink()
    assert run_cli(capsys, "compare", str(run_dir), "--out", str(tmp_path / "cmp"))[0] == 0
    assert (tmp_path / "cmp" / "compare.md").is_file()


def test_a_results_folder_named_twice_is_refused(run_dir, tmp_path, capsys):
    site = tmp_path / "site"
    result = run_cli(capsys, "report", str(run_dir), str(run_dir.parent / "run"), "--out", str(site))
    assert_one_line(result, "is named twice")
    assert not site.exists()
