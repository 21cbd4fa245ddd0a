"""Several suites in one ``oodfs bench`` (docs/PROTOCOL.md, "The whole benchmark in one command"):
one pool, longest first, each suite into its own folder as a run of it alone stores it, resumable,
one summary; bad input one line before any work."""

import sqlite3

import pandas as pd
import pytest

from oodfs.contract.task import DataKey
from oodfs.results.store import ResultStore, load_results
from oodfs.run.jobs import Job
from oodfs.run.progress import Weights, job_work, longest_first, pool_weights
from oodfs.run.suite import PAPER_METHODS, customise, load_suite, whole_benchmark

from .conftest import assert_one_line, run_cli

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: two cheap suites: the synthetic grid's quick form and a small real table's
MANY = ["--suite", "synthetic,auto", "--quick", "--methods", "lasso,correlation", "--downstream", "ridge"]
COMMON = ["--jobs", "1", "--no-figures", "--quiet"]
FOLDERS = ("synthetic-ridge-quick", "auto-ridge-quick")


def bench(capsys, *args):
    return run_cli(capsys, "bench", *args)


def task_keys(folder) -> set:
    with sqlite3.connect(folder / "results.sqlite") as con:
        return set(con.execute("SELECT setting, r_train, run, method FROM tasks"))


def values(folder) -> pd.Series:
    df = load_results(folder)
    keys = ["setting", "r_train", "run", "method", "point", "metric", "env", "k", "downstream"]
    return df.set_index(keys)["value"].sort_index()


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """The two suites in one run, and each alone."""
    root = tmp_path_factory.mktemp("many")
    from oodfs.cli import main

    assert main(["bench", *MANY, *COMMON, "--out", str(root / "pool")]) == 0
    for name in ("synthetic", "auto"):
        alone = [a if a != "synthetic,auto" else name for a in MANY]
        assert main(["bench", *alone, *COMMON, "--out", str(root / name)]) == 0
    return root


def test_each_suite_is_stored_as_a_run_of_it_alone(many, capsys):
    for folder, alone in zip(FOLDERS, ("synthetic", "auto")):
        pooled = many / "pool" / folder
        assert (pooled / "leaderboard.md").is_file() and (pooled / "results.parquet").is_file()
        assert task_keys(pooled) == task_keys(many / alone) and task_keys(pooled)
        pd.testing.assert_series_equal(values(pooled), values(many / alone), check_exact=True)
        code, out, err = run_cli(capsys, "leaderboard", str(pooled))
        assert code == 0 and "| lasso" in out, err


def test_the_summary_names_every_suite_its_time_and_verdicts(many):
    text = (many / "pool" / "summary.md").read_text()
    for folder in FOLDERS:
        assert f"| {folder} |" in text and f"### {folder}" in text
    assert "fit s" in text and "downstream s" in text
    assert "Tested: paired Wilcoxon" in text  # each suite's family, in the analysis's words
    assert "**" not in text  # nothing bold: one run's verdicts
    assert "## Across suites" in text and "1 of these 2 suites hold all_features" in text
    synthetic = next(line for line in text.splitlines() if line.startswith("| synthetic-ridge-quick"))
    assert "| 4 | 4 | 0 | 0 |" in synthetic  # 4 tasks, all run now, none taken, none failed
    # the pool's last task is its suites' latest, not the command's wall time (that adds the reports)
    pool = text.split("## What the folders hold")[0].splitlines()
    rows = [line.split("|") for line in pool if line.startswith(("| all |", *(f"| {f} |" for f in FOLDERS)))]
    seconds = {cells[1].strip(): cells[7].strip() for cells in rows}
    assert all(c.endswith(" s") and "min" not in c for c in seconds.values()), seconds  # a quick pool
    assert seconds["all"] == max((seconds[f] for f in FOLDERS), key=lambda c: int(c.split()[0])), seconds


def test_an_interrupted_pool_resumes_every_suite_without_repeating_a_task(tmp_path, monkeypatch, capsys):
    from oodfs.run import runner

    real, folder_of = runner.run_job, dict(zip(("synthetic", "auto"), FOLDERS))
    ran, jobs = [], []  # (folder, task key) of each task a job ran; the jobs run

    def recording(stop_after=None):
        def run_job(context, job):
            if len(jobs) == stop_after:  # as if Ctrl-C came as this job starts
                raise KeyboardInterrupt
            jobs.append(job)
            ran.extend((folder_of[context.suite.name], job.data.task(m)) for m in job.methods)
            return real(context, job)

        return run_job

    out = tmp_path / "pool"
    # stopped at its third job: the first two jobs' tasks are stored, the others not
    monkeypatch.setattr(runner, "run_job", recording(stop_after=2))
    code, _, _ = bench(capsys, *MANY, *COMMON, "--out", str(out))
    assert code == 130
    before = {(f, k) for f in FOLDERS if (out / f / "results.sqlite").exists() for k in task_keys(out / f)}
    assert before == set(ran) and 0 < len(before) < 8
    code, _, err = bench(capsys, *MANY, *COMMON, "--out", str(out))
    assert code == 2 and "--resume" in err  # a stopped pool is continued, not overwritten
    ran.clear()
    monkeypatch.setattr(runner, "run_job", recording())
    code, _, err = bench(capsys, *MANY, *COMMON, "--out", str(out), "--resume")
    assert code == 0, err
    assert not set(ran) & before  # no finished task run again
    after = {(f, k) for f in FOLDERS for k in task_keys(out / f)}
    assert after == before | set(ran) and len(after) == 8
    text = (out / "summary.md").read_text()
    total = next(line for line in text.splitlines() if line.startswith("| all |"))
    assert f"| 8 | {8 - len(before)} | {len(before)} | 0 |" in total  # tasks, run now, taken, failed
    # what the folders hold counts the tasks of both sittings, each once, with their stored seconds
    held = text.split("## What the folders hold, over every invocation")[1].split("## Each suite")[0]
    assert "(8 tasks," in held
    by_suite = {line.split("|")[1].strip(): line for line in held.splitlines() if line.startswith("| ")}
    for folder in FOLDERS:
        fit = ResultStore(out / folder).tables()[1].drop_duplicates(["setting", "r_train", "run", "method"])
        cells = by_suite[folder].split("|")
        assert int(cells[2]) == 4 and float(cells[3]) == pytest.approx(fit["fit_seconds"].sum(), abs=0.06)
    methods = pd.Series([k[3] for f in FOLDERS for k in task_keys(out / f)]).value_counts()
    for method, n in methods.items():
        assert f"| {method} | {n} |" in held
    assert "| (data draws) | 0 |" in held
    assert "| ridge |" in held


def test_longest_first_orders_by_work_and_keeps_ties_in_order():
    w = Weights({"slow": 8.0, "fast": 1.0}, {"slow": 1.0, "fast": 1.0}, "s", "test")
    jobs = [
        Job(DataKey("a", 2.5, 0), ("fast",), 0),
        Job(DataKey("a", 2.5, 1), ("fast", "slow"), 1),
        Job(DataKey("b", 2.5, 0), ("slow",), 2),
        Job(DataKey("b", 2.5, 1), ("fast",), 3),
    ]
    assert [job_work(j, w) for j in jobs] == [2.0, 11.0, 9.0, 2.0]
    ordered = longest_first(jobs, lambda j: job_work(j, w))
    assert [j.index for j in ordered] == [1, 2, 0, 3]


def test_a_suite_without_reference_results_is_weighed_in_seconds_beside_one_with():
    with_ref = customise(load_suite("auto"), quick=True)  # ships a reference
    without = customise(load_suite("markov"), quick=True)  # ships none
    timed, points = pool_weights([(with_ref, ["lasso"]), (without, ["lasso"])])
    assert timed.unit == points.unit == "s" and "median seconds per grid point" in points.basis
    alone = pool_weights([(without, ["lasso"])])[0]
    assert alone.unit == "grid points"  # alone, its own unit


def test_all_is_the_whole_benchmark_listed_once():
    from oodfs.run.bench import BenchOptions, suite_entries

    runs = suite_entries(BenchOptions(suite="all"))
    assert runs == whole_benchmark() and len(runs) == 32
    assert [(r.suite, r.profile) for r in runs[-2:]] == [("synthetic", "paper"), ("svi", "paper")]
    assert runs[-2].methods == PAPER_METHODS
    assert len({(r.suite, r.profile) for r in runs}) == 32


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--suite", "synthetic,nosuch"], ["unknown suite 'nosuch'", "valid:", "synthetic", "all (the"]),
        (["--suite", "auto,wage,auto"], ["'auto' twice"]),
        (["--suite", "auto,all"], ["give it alone"]),
        (["--suite", "synthetic,auto", "--settings", "mlp"], ["--settings", "several suites"]),
        (["--suite", "synthetic,auto", "--r-train", "2.5"], ["--r-train", "several suites"]),
        (["--suite", "all", "--profile", "paper"], ["--profile cannot go with --suite all"]),
        (["--suite", "synthetic,auto", "--force", "nosuch"], ["--force names 'nosuch'"]),
    ],
)
def test_bad_suite_lists_are_one_line_before_any_work(args, needles, tmp_path, capsys):
    out = tmp_path / "root"
    assert_one_line(bench(capsys, *args, "--quick", *COMMON, "--out", str(out)), *needles)
    assert not out.exists() or not any(out.rglob("results.sqlite"))


def test_a_pool_too_big_for_the_memory_is_one_line(tmp_path, capsys, monkeypatch):
    from oodfs.results import scale

    monkeypatch.setattr(scale, "available_mb", lambda: 1.0)
    out = tmp_path / "root"
    result = bench(capsys, *MANY, *COMMON, "--out", str(out))
    assert_one_line(result, "estimated to need", "suite ", "--ignore-memory-estimate")
    assert not out.exists()


def test_a_pool_stopped_before_its_first_task_leaves_no_store(tmp_path, capsys, monkeypatch):
    """An unreachable scheduler stops the pool before any task: no suite's folder keeps a store."""
    from oodfs.run import runner

    def unreachable(*args, **kwargs):
        raise runner.OodfsError("cannot reach the dask scheduler 'tcp://nowhere:1'")

    monkeypatch.setattr(runner, "_dispatch", unreachable)
    out = tmp_path / "root"
    code, out_text, err = bench(capsys, *MANY, *COMMON, "--out", str(out))
    # the suites were let through, so auto's table note (the run's to give) may precede the error
    err = "\n".join(line for line in err.splitlines() if not line.startswith("oodfs: note: feature(s)"))
    assert_one_line((code, out_text, err), "cannot reach")
    for folder in FOLDERS:
        assert not ResultStore(out / folder).exists()


def test_tasks_taken_from_the_references_are_counted_in_the_summary(tmp_path, capsys):
    out = tmp_path / "root"
    args = ["--suite", "auto,wage", "--quick", "--methods", "correlation", "--reference"]
    code, _, err = bench(capsys, *args, *COMMON, "--out", str(out))
    assert code == 0, err
    rows = [line for line in (out / "summary.md").read_text().splitlines() if line.startswith("| auto-quick")]
    tasks, ran, taken, failed = (int(c) for c in rows[0].split("|")[3:7])
    assert ran == 3 and taken == tasks - 3 > 0 and failed == 0  # correlation and the yardsticks run
    assert len(task_keys(out / "auto-quick")) == tasks
    across = (out / "summary.md").read_text().split("## Across suites")[1]
    assert "| correlation | 2 |" in across  # both hold all_features: the verdict across them


def test_the_use_case_runs_a_suite_as_the_command_does_and_prints_nothing(tmp_path, capfd):
    """``run_bench`` (what scripts call instead of the command): the same folder as ``oodfs bench``,
    what it says through the options' callbacks, nothing on stdout; bad input one OodfsError."""
    from oodfs.run.bench import run_bench
    from oodfs.validation import OodfsError

    from .conftest import TINY_SUITE_TOML

    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY_SUITE_TOML.format(runs=1))
    shown, notes = [], []
    done = run_bench(
        suite=str(suite), out=str(tmp_path / "out"), progress=False, figures=False, show=shown.append,
        notes=notes.append,
    )  # fmt: skip
    assert done.status == 0 and done.root is None and done.summary is None
    [one] = done.suites
    assert shown == [one.outputs.leaderboard] == [(tmp_path / "out" / "leaderboard.md").read_text()]
    assert (tmp_path / "out" / "results.parquet").is_file() and one.outputs.figures == []
    assert set(load_results(tmp_path / "out")["method"]) == {"ols", "correlation"}
    assert one.run.planned == len(one.run.ran) == 2
    assert capfd.readouterr().out == ""
    with pytest.raises(OodfsError, match="already holds results; pass --resume"):
        run_bench(suite=str(suite), out=str(tmp_path / "out"), progress=False)
