"""A run's progress: it advances while grid points are fitted (before any task finishes), in every
backend, with an ETA once there is a basis; one bar on a terminal, spaced lines otherwise; nothing
under --quiet; never on standard output."""

import io
import os
import sys
import threading
import time

import pytest

from oodfs.cli import main
from oodfs.contract import progress as messages
from oodfs.contract.task import DataKey
from oodfs.run.executors.isolation import call_isolated
from oodfs.run.jobs import Job
from oodfs.run.progress import FileInbox, FileOutlet, Progress, Weights, work_weights
from oodfs.run.runner import run_suite
from oodfs.run.suite import load_suite

from .conftest import TINY_SUITE_TOML, assert_one_line, run_cli, tiny

#: a selector whose grid points after the first wait until the test has seen the first one reported
#: on standard error: its task can only succeed if the progress got there while it was fitting
STEPPED = '''
import time
from pathlib import Path
import numpy as np
import oodfs


class Stepped(oodfs.Selector):
    """Waits at its second grid point for the run to show the first."""

    name = "stepped"
    grid = {"step": [0, 1, 2]}

    def __init__(self, step=0, k=5, random_state=None):
        self.step, self.k, self.random_state = step, k, random_state

    def _fit_scores(self, X, y, sample_weight):
        # beside this module, not from the environment: a worker process kept from an earlier test
        # (joblib reuses its executor) has that test's environment
        marker = Path(__file__).with_name("shown")
        deadline = time.monotonic() + 60
        while self.step > 0 and not marker.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the run never showed the first grid point")
            time.sleep(0.05)
        return np.abs(np.corrcoef(X.T, y)[-1, :-1])


@oodfs.hookimpl
def oodfs_selectors():
    return [Stepped]
'''


class Watched(io.StringIO):
    """A standard error that is no terminal and creates ``marker`` once it has shown ``needle``."""

    def __init__(self, needle: str, marker):
        super().__init__()
        self.needle, self.marker, self.lock = needle, marker, threading.Lock()

    def write(self, text):
        with self.lock:
            n = super().write(text)
            if self.needle in self.getvalue():
                self.marker.touch()
            return n

    def isatty(self):
        return False


@pytest.fixture
def stepped(tmp_path):
    plugin = tmp_path / "stepped.py"
    plugin.write_text(STEPPED)
    return str(plugin), tmp_path / "shown"  # where the plugin looks: beside its module


@pytest.mark.parametrize(
    "backend, isolate",
    [("local", True), ("local", False), pytest.param("dask", True, marks=pytest.mark.slow)],
)
def test_progress_reaches_the_run_before_the_task_finishes(tmp_path, monkeypatch, stepped, backend, isolate):
    if backend == "dask":
        pytest.importorskip("distributed")
    plugin, marker = stepped
    err = Watched("stepped 1/3 points", marker)
    monkeypatch.setattr(sys, "stderr", err)
    store = run_suite(
        tiny(methods=["stepped"], runs=1),
        tmp_path / "out",
        plugin_modules=(plugin,),
        backend_name=backend,
        isolate=isolate,
        progress_interval=0.1,
    )
    tasks = store.task_records()
    assert [r["status"] for r in tasks.values()] == ["ok"], tasks
    text = err.getvalue()
    lines = [line for line in text.splitlines() if "of the work" in line]
    shown = next(i for i, line in enumerate(lines) if "stepped 1/3 points" in line)
    assert "0/1 tasks" in lines[shown]  # the point was shown while its task still ran
    assert any("ETA" in line and "estimating" not in line for line in lines[: shown + 1])
    assert text.rstrip().splitlines()[-1].startswith("oodfs: 1/1 tasks done in")


def test_two_workers_report_through_their_folder(tmp_path, monkeypatch, stepped):
    plugin, marker = stepped
    err = Watched("stepped 1/3 points", marker)
    monkeypatch.setattr(sys, "stderr", err)
    store = run_suite(
        tiny(methods=["stepped", "ols"], runs=2),
        tmp_path / "out",
        jobs=2,
        plugin_modules=(plugin,),
        progress_interval=0.1,
    )
    assert {r["status"] for r in store.task_records().values()} == {"ok"}
    assert "oodfs: 4/4 tasks done in" in err.getvalue()


def test_quiet_prints_nothing_and_the_leaderboard_is_the_same(tmp_path, capsys):
    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY_SUITE_TOML.format(runs=1))
    common = ["bench", "--suite", str(suite), "--jobs", "1", "--progress-interval", "0.001", "--no-figures"]
    assert main([*common, "--out", str(tmp_path / "a"), "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    assert main([*common, "--out", str(tmp_path / "b")]) == 0
    shown = capsys.readouterr()
    assert shown.out == quiet.out  # the leaderboard, and only it, on standard output
    assert "of the work" in shown.err and "of the work" not in shown.out
    assert "2/2 tasks done in" in shown.err


def test_a_run_stopped_before_any_job_says_only_why(tmp_path, monkeypatch, capsys):
    from oodfs.run.executors.local import LocalBackend
    from oodfs.validation import OodfsError

    def unreachable(self, fn, calls, **kwargs):
        raise OodfsError("cannot reach the scheduler")
        yield

    monkeypatch.setattr(LocalBackend, "run", unreachable)
    suite = tmp_path / "tiny.toml"
    # six runs: a suite whose tests can decide (one that cannot is told so before its first job)
    suite.write_text(TINY_SUITE_TOML.format(runs=6))
    args = ["bench", "--suite", str(suite), "--out", str(tmp_path / "out"), "--progress-interval", "0.1"]
    assert_one_line(run_cli(capsys, *args), "cannot reach the scheduler")


def test_a_log_gets_at_most_one_line_per_interval(tmp_path, monkeypatch):
    err = Watched("never", tmp_path / "unused")
    monkeypatch.setattr(sys, "stderr", err)
    start = time.monotonic()
    interval = 0.2
    suite = tiny(methods=["ols", "correlation", "lasso"], runs=2)
    run_suite(suite, tmp_path / "out", progress_interval=interval)
    elapsed = time.monotonic() - start
    text = err.getvalue()
    lines = [line for line in text.splitlines() if "of the work" in line]
    assert len(lines) <= elapsed / interval + 1, (elapsed, lines)
    if elapsed > 5 * interval:  # a run this long has had time for a line (a fast one may end first)
        assert lines, (elapsed, text)
    # the plan is said once, first, within a second (a run that ends before says only "done")
    plan = "6 tasks in 2 jobs on 1 worker; progress weighs each step by grid points"
    assert text.count(plan) == 1 if lines else text.count(plan) <= 1
    if lines:
        assert text.index(plan) < text.index(lines[0])


# -- the parts -----------------------------------------------------------------------------------------
def _jobs():
    return [
        Job(DataKey("poly", 2.5, 0), ("fast", "slow"), 0),
        Job(DataKey("poly", 2.5, 1), ("fast", "slow"), 1),
    ]


WEIGHTS = Weights({"slow": 8.0, "fast": 1.0}, {"slow": 0.5, "fast": 0.5}, "s", "test")


class FakeClock:
    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


def test_eta_is_the_work_left_at_the_rate_so_far():
    clock = FakeClock()
    p = Progress(_jobs(), WEIGHTS, enabled=False, clock=clock)
    assert p.total == 20.0
    assert p.estimate()[1] is None  # no basis yet
    assert "waiting for the first job to start" in p.text()
    p.receive(["start", 0])
    assert p.work_start is None and "drawing the data of poly r_train=2.5 run=0" in p.text()
    p.receive(["drawn", 0])
    t0 = p.work_start  # the clock starts with the first fit
    assert p.estimate(t0 + 5)[1] is None  # fitting, nothing done: still estimating
    assert "ETA estimating" in p.text(t0 + 5)
    p.receive(["fitted", 0, "fast"])
    assert "fast downstream on poly" in p.text(t0 + 5)
    p.receive(["downstream", 0, "fast", 1.0])
    p.receive(["done", 0, "fast", "ok", None])  # a task counts as soon as its job says it is done
    assert "1/4 tasks" in p.text(t0 + 5)
    p.receive(["points", 0, "slow", 2, 4])  # half of slow's fits: 1.5 + 4 units of 20
    fraction, left = p.estimate(t0 + 10)
    assert fraction == pytest.approx(5.5 / 20)
    # 5.5 units in 10 s; slow, begun at once, is credited its 10 s at that rate: 5.5 units, of
    # which its points account for 4; so 7 done, 13 left at 0.7 units a second
    assert left == pytest.approx(10 * 13 / 7, rel=0.01)
    assert "slow 2/4 points" in p.text(t0 + 10)
    p.receive(["points", 0, "slow", 4, 4])  # every point, but not yet fitted: held below complete
    assert p.estimate(t0 + 10)[0] < 9.5 / 20
    p.receive(["fitted", 0, "slow"])
    p.receive(["downstream", 0, "slow", 1.0])
    assert p.estimate(t0 + 10)[0] == pytest.approx(0.5)
    p.receive(["points", 7, "slow", 1, 1])  # another run's job, a malformed message: ignored
    p.receive(["points"])
    assert p.estimate(t0 + 10)[0] == pytest.approx(0.5)


def test_the_eta_counts_down_through_a_long_step_and_grows_once_it_overruns():
    p = Progress(_jobs()[:1], WEIGHTS, enabled=False)
    # fast's task done, 1.5 units of 10; slow (8 units, no grid points reported) begins
    for message in (["fitted", 0, "fast"], ["downstream", 0, "fast", 1.0], ["done", 0, "fast", "ok"]):
        p.receive(message)
    # as if fast had taken 10 s from the first fit: 0.15 units a second
    p.work_start, p.last_progress, p.step_start[0] = 0.0, 10.0, 10.0
    left = {now: p.estimate(now)[1] for now in (10, 20, 30, 200, 300)}
    assert left[10] == pytest.approx(10 * 8.5 / 1.5)  # 8.5 units at 0.15 a second
    # slow credited as it runs: the time left counts down
    assert left[20] == pytest.approx(left[10] - 10) and left[30] == pytest.approx(left[10] - 20)
    # slow is expected to take 53 s; past 90 % of that its credit stops and the time left grows
    assert left[300] > left[200] > 0


def test_a_failed_task_is_named_at_once(tmp_path):
    from oodfs.run.jobs import TaskResult

    stream = io.StringIO()
    p = Progress(_jobs(), enabled=True, interval=60, stream=stream)
    try:
        p.update([TaskResult(DataKey("poly", 2.5, 1).task("slow"), "failed", "boom: no luck", None)])
        assert "task poly r_train=2.5 run=1 slow failed: boom: no luck" in stream.getvalue()
    finally:
        p.close()
    assert stream.getvalue().splitlines()[-1].startswith("oodfs: 1/4 tasks done, 1 failed in")


def test_a_terminal_gets_one_bar_redrawn_in_place():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    p = Progress(_jobs(), WEIGHTS, enabled=True, stream=stream)
    p.receive(["fitted", 0, "fast"])
    p.receive(["done", 0, "fast", "ok", None])
    p.receive(["points", 0, "slow", 1, 4])
    time.sleep(1.2)  # two redraws
    p.close()
    text = stream.getvalue()
    assert "\r" in text and "1/4 tasks, elapsed" in text and "ETA" in text and "slow 1/4" in text
    assert text.count("\n") <= 1  # the bar is redrawn, not printed again


def test_weights_come_from_the_reference_or_count_grid_points():
    suite = load_suite("synthetic")
    w = work_weights(suite, ["gb", "ols", "lasso"])  # methods the reference holds (it withholds some)
    assert w.unit == "s" and "synthetic-default" in w.basis
    assert w.fit["gb"] > w.fit["lasso"] > w.fit["ols"] > 0
    w = work_weights(tiny(), ["ols", "dwr"])  # no reference for the tiny suite
    assert w.unit == "grid points"
    assert w.fit == {"ols": 1, "dwr": 9}


def test_a_forked_fit_relays_its_messages_in_order():
    got = []

    def fit():
        for i in range(5000):  # more than a pipe holds: the worker reads while the fit writes
            messages.send(["m", i])
        return "result"

    with messages.outlet(got.append):
        assert call_isolated(fit, timeout=60) == "result"
    assert got == [["m", i] for i in range(5000)]


def test_file_outlet_and_inbox(tmp_path):
    got = []
    inbox = FileInbox(got.append, every=0.05)
    outlet = FileOutlet(inbox.folder)
    for i in range(3):
        outlet(["m", i])
    with open(os.path.join(inbox.folder, "partial.jsonl"), "w") as f:
        f.write('["half"')  # a line still being written is not read
    inbox.close()
    assert got == [["m", 0], ["m", 1], ["m", 2]]
    assert not os.path.exists(inbox.folder)


def test_point_done_outside_a_run_does_nothing():
    messages.point_done()
    messages.send(["m"])
    calls = []
    with messages.counting_points(calls.append):
        messages.point_done(2)
        messages.point_done(0)
    assert calls == [2]


def test_a_failed_task_said_done_by_its_job_is_named_once_and_counted_once():
    from oodfs.run.jobs import TaskResult

    stream = io.StringIO()
    p = Progress(_jobs(), enabled=True, interval=60, stream=stream)
    try:
        p.receive(["done", 1, "slow", "failed", "boom: no luck"])
        assert "task poly r_train=2.5 run=1 slow failed: boom: no luck" in stream.getvalue()
        # the job returns later with the same task: not counted or named again
        p.update([TaskResult(DataKey("poly", 2.5, 1).task("slow"), "failed", "boom: no luck", None)], job=1)
        assert stream.getvalue().count("failed: boom") == 1 and p.failed == 1 and len(p.finished) == 1
    finally:
        p.close()
    assert stream.getvalue().splitlines()[-1].startswith("oodfs: 1/4 tasks done, 1 failed in")


def test_a_jobs_tasks_are_counted_one_by_one_as_they_finish(tmp_path, monkeypatch):
    """Each method's task is done (scored, committed, said) before the next method of its job is
    fitted, so the count rises through a job rather than at its end; the count at the end is
    the number of tasks stored."""
    seen = []
    receive = Progress.receive

    def recording(self, message):
        seen.append((list(message), len(self.finished)))
        receive(self, message)

    monkeypatch.setattr(Progress, "receive", recording)
    monkeypatch.setattr(sys, "stderr", Watched("never", tmp_path / "unused"))
    methods = ["ols", "correlation", "lasso"]
    store = run_suite(tiny(methods=methods, runs=1), tmp_path / "out", jobs=1, progress_interval=60)
    kinds = [(m[0], m[2]) for m, _ in seen if m[0] in ("fitted", "done")]
    assert kinds == [(kind, m) for m in methods for kind in ("fitted", "done")]
    # when each method's fit ended, the tasks of the methods before it were already counted
    counted = [n for m, n in seen if m[0] == "fitted"]
    assert counted == [0, 1, 2]
    assert [m[3] for m, _ in seen if m[0] == "done"] == ["ok"] * 3
    assert len(store.task_records()) == 3
    assert "oodfs: 3/3 tasks done in" in sys.stderr.getvalue()


def test_no_step_after_the_tasks_is_silent_longer_than_the_interval():
    """A recorded timeline on a fake clock: steps of 3 s, 25 s and 0.5 s, the clock read every
    second as the watching thread does; every gap between two lines is at most the interval."""
    from oodfs.run.progress import Steps

    clock = FakeClock(0.0)
    timeline = []
    steps = Steps(lambda line: timeline.append((clock.now, line)), 10.0, clock=clock, ticking=False)
    for text, seconds in (
        ("writing the leaderboard", 3),
        ("drawing figure 1 of 3 (figure1-val)", 25),
        ("x", 0.5),
    ):
        with steps.step(text):
            for _ in range(int(seconds)):
                clock.now += 1.0
                steps.beat()
            clock.now += seconds - int(seconds)
    steps.close()
    lines = [line for _, line in timeline]
    assert lines == [
        "writing the leaderboard ...",
        "drawing figure 1 of 3 (figure1-val) ...",
        "still drawing figure 1 of 3 (figure1-val), 10 s",
        "still drawing figure 1 of 3 (figure1-val), 20 s",
        "x ...",
    ]
    stamps = [t for t, _ in timeline] + [clock.now]
    assert max(b - a for a, b in zip(stamps, stamps[1:])) <= 10.0
    quiet = Steps(None, 10.0)
    with quiet.step("drawing"):
        quiet.beat(1e9)
    assert quiet.thread is None


def test_every_step_after_the_tasks_is_said_as_it_begins_and_while_it_lasts(tmp_path, monkeypatch, capsys):
    """`oodfs bench` off a terminal, a figure made slow: the tasks' progress, then a line as each
    step begins (the leaderboard, each figure) and "still ..."
    lines while the slow figure is drawn; nothing of it under --quiet."""
    from oodfs.report import plots

    draw = plots.ood_s_figure

    def slow(*args, **kwargs):
        time.sleep(1.0)  # ten intervals
        return draw(*args, **kwargs)

    monkeypatch.setattr(plots, "ood_s_figure", slow)
    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY_SUITE_TOML.format(runs=1))
    common = ["bench", "--suite", str(suite), "--jobs", "1", "--progress-interval", "0.1"]
    assert main([*common, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("oodfs: ")]
    order = [
        "oodfs: 2/2 tasks done in",
        "oodfs: reading the results of",
        "oodfs: writing",
        "oodfs: testing the comparisons and writing",
        "oodfs: drawing figure 1 of 3 (figure1-",
        "oodfs: drawing figure 2 of 3 (ood_s-",
        "oodfs: still drawing figure 2 of 3 (ood_s-",
        "oodfs: drawing figure 3 of 3 (summary-",
    ]
    at = [next(i for i, line in enumerate(lines) if line.startswith(text)) for text in order]
    assert at == sorted(at), lines
    assert "\r" not in err  # off a terminal: lines, never a bar redrawn
    assert main([*common, "--out", str(tmp_path / "b"), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_bench_on_a_terminal_says_at_once_that_it_is_loading(monkeypatch):
    """The line comes before the parser is built (which loads every plugin); off a terminal, and
    under --quiet or --help, nothing (bad input there stays one line)."""
    import subprocess

    from oodfs.cli import _announce

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, argv, said in (
        (Terminal(), ["bench", "--suite", "synthetic"], True),
        (Terminal(), ["bench", "--suite", "synthetic", "--quiet"], False),
        (Terminal(), ["bench", "--help"], False),
        (Terminal(), ["leaderboard", "x"], False),
        (io.StringIO(), ["bench", "--suite", "synthetic"], False),
    ):
        monkeypatch.setattr(sys, "stderr", stream)
        _announce(argv)
        assert (stream.getvalue() == "oodfs: bench: loading oodfs and its plugins ...\n") == said, argv
    # what comes before it is cheap: the command line's module does not import scikit-learn or torch
    code = "import sys, oodfs.cli; print(sorted({'sklearn', 'torch', 'scipy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_program_ends_its_idle_workers_instead_of_waiting_for_them(tmp_path, monkeypatch):
    """As `oodfs bench` ends, joblib's idle workers are ended, not waited for; the next run in the
    same process starts a pool again."""
    from joblib.externals.loky import reusable_executor

    from oodfs.run.executors.local import stop_idle_workers

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    run_suite(tiny(runs=2), tmp_path / "a", jobs=2, progress=False)
    workers = list(reusable_executor._executor._processes.values())
    assert workers
    stop_idle_workers()
    for process in workers:
        process.join(timeout=30)
        assert not process.is_alive()
    store = run_suite(tiny(runs=2), tmp_path / "b", jobs=2, progress=False)
    assert {r["status"] for r in store.task_records().values()} == {"ok"}
