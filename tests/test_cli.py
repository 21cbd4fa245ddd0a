"""The command line: the bench/leaderboard/plot/plugins contract and every error path."""

import subprocess
import sys

import pandas as pd
import pytest

from oodfs.cli import main

from .conftest import TINY_SUITE_TOML, run_cli


def cli(*args, **kw):
    """The command in a new process: what the program itself does (its exit status, its one line)."""
    return subprocess.run([sys.executable, "-m", "oodfs.cli", *args], capture_output=True, text=True, **kw)


def here(capsys, *args):
    """The command in this process (``oodfs.cli.main``, what the ``oodfs`` script calls), for what
    it prints; a new process would add seconds of imports and test nothing more."""
    code, out, err = run_cli(capsys, *args)
    return subprocess.CompletedProcess(args, code, out, err)


def assert_clean_error(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1, proc.stderr  # one line, argparse usage errors included
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


#: bad input, each with what its one line names; the first of each kind (an error of oodfs's own, an
#: argparse usage error, another command's error) runs as the program itself in a new process (exit
#: status, stderr as a user sees it), the rest in this process, where the same assertions hold and a
#: new process would add seconds of imports to each
BAD_INPUT = [
    (["bench", "--suite", "nope"], ["unknown suite 'nope'", "synthetic"], "new process"),
    (
        ["bench", "--suite", "synthetic", "--methods", "ols,nope"],
        ["unknown selector 'nope'", "correlation"],
        "this process",
    ),
    (
        ["bench", "--suite", "synthetic", "--settings", "cubic"],
        ["unknown setting 'cubic'", "mlp"],
        "this process",
    ),
    (["bench", "--suite", "synthetic", "--r-train", "0.5"], ["|r| > 1", "0.5"], "this process"),
    (["bench", "--suite", "synthetic", "--runs", "0"], ["positive integer"], "new process"),
    (["bench", "--suite", "synthetic", "--jobs", "-1"], ["positive integer"], "this process"),
    (
        ["bench", "--suite", "synthetic", "--selection", "best"],
        ["unknown model-selection rule 'best'"],
        "this process",
    ),
    (["bench", "--suite", "synthetic", "--scheduler", "tcp://x:1"], ["--backend dask"], "this process"),
    (["bench", "--suite", "synthetic", "--task-timeout", "0"], ["positive"], "this process"),
    (["leaderboard", "/no/such/dir"], ["does not exist"], "new process"),
    (["plugins", "--plugin", "no_such_mod_zz"], ["no_such_mod_zz"], "this process"),
]


@pytest.mark.parametrize("args, needles, where", BAD_INPUT)
def test_bad_input_is_one_line_and_exit_2(args, needles, where, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc = cli(*args, cwd=tmp_path) if where == "new process" else here(capsys, *args)
    assert_clean_error(proc, *needles)


def test_debug_shows_the_traceback(tmp_path):
    proc = cli("--debug", "bench", "--suite", "nope", cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_help_explains_itself(capsys):
    """(The program's own `--help`, in a new process: the torch and matplotlib test below.)"""
    proc = here(capsys, "bench", "--help")
    assert proc.returncode == 0
    for option in ("--quick", "--resume", "--jobs", "--selection", "--backend", "--task-timeout", "--plugin"):
        assert option in proc.stdout


def test_every_option_help_is_whole():
    """No help text of a built-in command stops mid-sentence (``--downstream`` once ended with
    "The leaderboard shows the first") or leaves a parenthesis open."""
    from oodfs.cli import build_parser

    dangling = {"the", "a", "an", "of", "and", "or", "to", "first", "with", "by"}
    commands = build_parser()._subparsers._group_actions[0].choices
    for name, parser in commands.items():
        for action in parser._actions:
            text = action.help or ""
            if not text or text == "==SUPPRESS==":
                continue
            where = f"oodfs {name} {'/'.join(action.option_strings) or action.dest}: {text!r}"
            assert text.count("(") == text.count(")"), where
            assert text.split()[-1].lower() not in dangling and not text.rstrip().endswith((",", ";", ":")), (
                where
            )
    downstream = next(a for a in commands["bench"]._actions if "--downstream" in a.option_strings)
    assert "`oodfs leaderboard DIR --downstream MODEL`" in downstream.help


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "out"
    code = main(
        [
            "bench",
            "--suite",
            "synthetic",
            "--quick",
            "--methods",
            "ols,correlation",
            "--settings",
            "poly",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    return out


def test_bench_writes_leaderboard_results_and_figures(bench_dir):
    assert (bench_dir / "leaderboard.md").read_text().startswith("# oodfs leaderboard")
    df = pd.read_parquet(bench_dir / "results.parquet")
    assert {"setting", "r_train", "run", "method", "metric", "value", "seed", "params", "versions"} <= set(
        df.columns
    )
    assert (bench_dir / "figures" / "figure1-val.png").stat().st_size > 10_000
    assert (bench_dir / "figures" / "figure1-val.pdf").exists()


def test_bench_refuses_to_overwrite_without_resume(bench_dir, capsys):
    before = (bench_dir / "results.sqlite").read_bytes()
    proc = here(
        capsys,
        "bench",
        "--suite",
        "synthetic",
        "--quick",
        "--methods",
        "ols",
        "--settings",
        "poly",
        "--out",
        str(bench_dir),
    )
    assert_clean_error(proc, "--resume")
    assert (bench_dir / "results.sqlite").read_bytes() == before


def test_leaderboard_formats(bench_dir, capsys):
    csv = here(capsys, "leaderboard", str(bench_dir), "--format", "csv")
    assert csv.returncode == 0, csv.stderr
    table = pd.read_csv(pd.io.common.StringIO(csv.stdout))
    assert {
        "setting",
        "r_train",
        "method",
        "metric",
        "mean",
        "low",
        "high",
        "n",
        "runs",
        "failed",
        "in_best_set",
    } <= set(table.columns)
    assert set(table["metric"]) == {"rank_avg", "f1", "rmse_mean", "rmse_std"}
    assert set(table["method"]) == {"ols", "correlation"}
    assert not table["in_best_set"].any() and table["low"].isna().all()  # one run: no interval, no best
    md = here(capsys, "leaderboard", str(bench_dir))
    assert "Model selection: **val**" in md.stdout and "No best where no method has 2 runs" in md.stdout
    oracle = here(capsys, "leaderboard", str(bench_dir), "--selection", "oracle")
    assert "upper bound" in oracle.stdout.lower()
    latex = here(capsys, "leaderboard", str(bench_dir), "--format", "latex")
    assert "\\begin{tabular}" in latex.stdout and "\\textbf" not in latex.stdout
    html = here(capsys, "leaderboard", str(bench_dir), "--format", "html")
    assert html.stdout.startswith("<!doctype html>") and '<table class="sortable board">' in html.stdout
    assert here(capsys, "leaderboard", str(bench_dir), "--format", "yaml").returncode == 2


def test_leaderboard_shows_the_metrics_asked_for_and_names_the_valid_ones(bench_dir, capsys):
    csv = here(capsys, "leaderboard", str(bench_dir), "--format", "csv", "--metrics", "beta_l2,f1")
    assert csv.returncode == 0, csv.stderr
    table = pd.read_csv(pd.io.common.StringIO(csv.stdout))
    assert list(dict.fromkeys(table["metric"])) == ["beta_l2", "f1"]
    stored = pd.read_parquet(bench_dir / "results.parquet")
    l2 = stored[(stored["metric"] == "beta_l2") & (stored["method"] == "ols")]["value"]
    cells = table[(table["metric"] == "beta_l2") & (table["method"] == "ols")]["mean"]
    # one run and one r_train: every cell is the stored value
    assert len(l2) == 1 and len(cells) and cells.to_numpy() == pytest.approx(l2.iloc[0])
    md = here(capsys, "leaderboard", str(bench_dir), "--metrics", "rmse_max")
    assert "RMSE max" in md.stdout and "rank avg" not in md.stdout
    assert_clean_error(
        here(capsys, "leaderboard", str(bench_dir), "--metrics", "f1,bogus"), "'bogus'", "beta_l1"
    )
    assert_clean_error(
        here(capsys, "leaderboard", str(bench_dir), "--metrics", "rmse"), "'rmse'"
    )  # per environment
    assert_clean_error(here(capsys, "leaderboard", str(bench_dir), "--metrics", "f1,f1"), "twice")
    assert_clean_error(here(capsys, "leaderboard", str(bench_dir), "--metrics", ""), "empty")


def test_plot_command(bench_dir, capsys):
    proc = here(capsys, "plot", str(bench_dir), "--selection", "default")
    assert proc.returncode == 0, proc.stderr
    assert (bench_dir / "figures" / "figure1-val.png").exists()


def test_no_figures_writes_the_tables_and_no_figures(tmp_path, capsys):
    """(`oodfs plot` draws them later from the store: test_plot_command.)"""
    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY_SUITE_TOML.format(runs=1))
    out = tmp_path / "out"
    proc = here(capsys, "bench", "--suite", str(suite), "--out", str(out), "--jobs", "1", "--no-figures")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# oodfs leaderboard") and "figures:" not in proc.stderr
    assert (out / "leaderboard.md").is_file() and (out / "results.parquet").is_file()
    assert not (out / "figures").exists()


def test_commands_that_train_nothing_never_import_torch_or_matplotlib(bench_dir):
    """torch (the MLP, STG, SRDO) and matplotlib (the figures) take seconds to import: `oodfs
    --help`, `oodfs bench --help` and `oodfs leaderboard` load neither."""
    code = (
        "import sys\n"
        "from oodfs.cli import main\n"
        "for args in (['--help'], ['bench', '--help'], ['leaderboard', sys.argv[1]]):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted({'torch', 'matplotlib'} & set(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(bench_dir)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout[-500:]
