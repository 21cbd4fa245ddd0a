"""A run's progress, counted in units of work rather than finished tasks (docs/PROTOCOL.md, "Progress").

A job runs its methods one after another (each fitted, its downstream models trained, its task
committed), and a task can take minutes: counted in tasks alone, a run looks stalled. Here the
jobs report as they go, through :mod:`oodfs.contract.progress` (the grid points a fit has
finished, each method fitted, each downstream model trained for it, each task finished, counted
at once rather than when its job returns), and every step weighs what it
is expected to cost: the median seconds of that method's fits (and its share of the downstream
training) in the suite's shipped reference results, or, with no reference, its number of grid
points (:func:`work_weights`). The time left is the work left at the rate the run has done work
since its first fit, a step under way credited with its running time (:meth:`Progress.estimate`);
"estimating" until some work is done.

On a terminal the run draws one bar updated in place (tqdm); otherwise (a log file, a pipe) it
prints its plan within a second and then one line every ``interval`` seconds. Everything goes to
standard error; ``--quiet`` draws nothing. :class:`Steps` says the steps after the tasks (the
leaderboard, each figure, the summary), each as it begins and again while it lasts.

Worker side: :class:`PointCounter` (one fit's grid points) and :class:`FileOutlet` /
:class:`FileInbox` (worker processes of this machine report through a folder of files, one per
process; the dask backends use dask's events instead).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace

from oodfs.contract import progress as messages
from oodfs.numeric import clock

#: seconds between two lines when standard error is not a terminal (``RunOptions.progress_interval``)
DEFAULT_INTERVAL = 10.0
#: seconds between two redraws of the bar on a terminal
REDRAW = 0.5
#: seconds before the plan's line off a terminal (a run stopped at once says only why)
FIRST_LINE = 1.0


# -- the worker side -----------------------------------------------------------------------------
class PointCounter:
    """Counts one fit's grid points (:func:`oodfs.contract.progress.point_done`) and sends the
    count, at most every ``every`` seconds (a method may report many small steps)."""

    def __init__(self, job: int, method: str, expected: int, every: float = 0.25):
        self.job, self.method, self.expected, self.every = job, method, max(int(expected), 1), every
        self.done, self.sent = 0, -math.inf

    def __call__(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.sent >= self.every:
            self.sent = now
            messages.send(["points", self.job, self.method, min(self.done, self.expected), self.expected])


class FileOutlet:
    """A worker process's outlet: each message one JSON line appended to ``folder/<pid>.jsonl``."""

    def __init__(self, folder: str):
        self.folder = folder

    def __call__(self, message: list) -> None:
        line = (json.dumps(message) + "\n").encode()
        path = os.path.join(self.folder, f"{os.getpid()}.jsonl")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)


class FileInbox:
    """This process's end of :class:`FileOutlet`: a temporary folder, read every ``every`` seconds
    by a thread that hands each new complete line to ``receive``; :meth:`close` reads what is
    left and removes the folder."""

    def __init__(self, receive, every: float = 0.2):
        self.receive, self.every = receive, every
        self.folder = tempfile.mkdtemp(prefix="oodfs-progress-")
        self.offsets: dict[str, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="oodfs-progress-inbox", daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.stop.wait(self.every):
            self._read()

    def _read(self) -> None:
        try:
            names = os.listdir(self.folder)
        except OSError:
            return
        for name in names:
            path = os.path.join(self.folder, name)
            start = self.offsets.get(name, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(start)
                    data = f.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1  # a line still being written waits for the next look
            self.offsets[name] = start + end
            for line in data[:end].splitlines():
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                try:
                    self.receive(message)
                except Exception:  # noqa: BLE001 -- a progress line is never worth a stopped run
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self._read()
        shutil.rmtree(self.folder, ignore_errors=True)


# -- what the work weighs ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Weights:
    """What one task of each method weighs: ``fit`` (its fits) and ``downstream`` (its share of
    its job's downstream training), in ``unit``; ``basis`` says where the numbers come from."""

    fit: dict
    downstream: dict
    unit: str
    basis: str


def _selectors(selectors: dict | None) -> dict:
    """The registered selectors: those already read (:attr:`SuitePlugins.selectors`), else the registry's."""
    if selectors is not None:
        return selectors
    from oodfs.contract.registry import registry

    return registry().entries("selector")


def work_weights(suite, methods, selectors: dict | None = None) -> Weights:
    """The weights of ``methods`` (names) on ``suite``: medians over the tasks of the suite's
    shipped reference results (seconds; a method the reference lacks: its grid points times the
    reference's median seconds per grid point), or, with no reference, one unit per grid point
    for its fits and one per grid point for its downstream share. ``selectors``: the registered
    selectors already read (:attr:`oodfs.contract.registry.SuitePlugins.selectors`; None: the
    registry's)."""
    selectors = _selectors(selectors)
    points = {m: len(selectors[m].cls.grid_points()) for m in methods}
    ref = _reference_seconds(suite)
    if ref is None:
        return Weights(dict(points), dict(points), "grid points", "grid points (no reference results)")
    fit, down, label = ref
    per_point_fit = _median([fit[m] / points[m] for m in fit if m in points] or list(fit.values()))
    per_point_down = _median([down[m] / points[m] for m in down if m in points] or list(down.values()))
    return Weights(
        {m: fit.get(m, per_point_fit * points[m]) for m in methods},
        {m: down.get(m, per_point_down * points[m]) for m in methods},
        "s",
        f"the fit times of the reference results {label}",
    )


def _median(values) -> float:
    values = sorted(values)
    if not values:
        return 1.0
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def pool_weights(runs, selectors: dict | None = None) -> list[Weights]:
    """:func:`work_weights` of each ``(suite, methods)`` of a pool of suites, all in one unit: with
    some suites weighed in seconds (their reference results) and others in grid points (none),
    a grid point of the latter weighs the median seconds per grid point of the former, the rule
    :func:`work_weights` applies to a method a suite's reference lacks. ``selectors``: as
    :func:`work_weights`'."""
    selectors = _selectors(selectors)
    weights = [work_weights(suite, methods, selectors) for suite, methods in runs]
    timed = [w for w in weights if w.unit == "s"]
    if not timed or len(timed) == len(weights):
        return weights

    def per_point(part):
        return _median(
            [
                getattr(w, part)[m] / len(selectors[m].cls.grid_points())
                for w in timed
                for m in getattr(w, part)
            ]
        )

    fit, down = per_point("fit"), per_point("downstream")
    return [
        w
        if w.unit == "s"
        else Weights(
            {m: v * fit for m, v in w.fit.items()},
            {m: v * down for m, v in w.downstream.items()},
            "s",
            f"{w.basis}, at the median seconds per grid point of the other suites' reference results",
        )
        for w in weights
    ]


def job_work(job, weights: Weights) -> float:
    """A job's estimated work: each of its methods' fit and downstream weight."""
    return sum(weights.fit.get(m, 1.0) + weights.downstream.get(m, 0.0) for m in job.methods)


def longest_first(items, work) -> list:
    """``items`` ordered by ``work(item)``, largest first; equal ones keep their order (so a run
    of equal jobs goes in the plan's order). Handing the longest jobs out first keeps one long
    job from starting last and running alone at the end of a pool."""
    return sorted(items, key=work, reverse=True)


def pool_order(pools, workers: int = 1, selectors: dict | None = None) -> list[tuple[int, Weights, object]]:
    """The jobs of a pool of suites in the order they are handed out to ``workers``: ``pools`` is
    ``(suite, jobs)`` per suite; each job comes as ``(its suite's index, that suite's weights,
    job)``, split by method where whole data sets would leave workers idle
    (:func:`split_for_workers`), longest first (:func:`longest_first` by :func:`job_work`, weights
    from :func:`pool_weights`; ``selectors``: as :func:`work_weights`')."""
    pools = list(pools)
    weights = pool_weights(
        [(suite, dict.fromkeys(m for j in jobs for m in j.methods)) for suite, jobs in pools], selectors
    )
    pending = [(i, w, job) for i, ((_, jobs), w) in enumerate(zip(pools, weights)) for job in jobs]

    def work(item):
        return job_work(item[2], item[1])

    return longest_first(split_for_workers(pending, workers, work), work)


#: a job is split by method when its estimated work is more than this many times an even share of
#: the pool's (total / workers): alone it would end the pool after the other workers have stopped.
#: On 2 workers that is a job that outweighs all the others together (a job weighs its methods'
#: reference seconds, so the data sets of one suite weigh the same: a single suite is not split
#: there); on 128, the longest data sets of the whole benchmark (benchmarks/scale_out/SCALE_OUT.md)
SPLIT_ABOVE_SHARE = 1.0


def split_for_workers(pending: list, workers: int, work) -> list:
    """The pool's items ``(suite, weights, job)``, with a job split into one job per method (the
    same data set, one of its methods) where whole data sets would leave workers idle: every
    job when the pool has fewer jobs than workers, and a job whose estimated ``work`` is more than
    :data:`SPLIT_ABOVE_SHARE` times an even share of the pool's work. The numbers are the same
    either way (seeds come from the task's coordinates, a subset's downstream model from (data
    set, subset)); a split job draws its data again and trains again the subsets its methods share
    (docs/PROTOCOL.md, "Long data sets split by method")."""
    share = sum(work(item) for item in pending) / max(workers, 1)
    few = len(pending) < workers
    out = []
    for item in pending:
        suite, w, job = item
        if len(job.methods) > 1 and (few or work(item) > SPLIT_ABOVE_SHARE * share):
            out += [(suite, w, replace(job, methods=(m,))) for m in job.methods]
        else:
            out.append(item)
    return out


def _reference_seconds(suite):
    """``({method: fit s}, {method: downstream s}, label)`` per task from the shipped reference of
    ``suite`` (same name and profile), or None."""
    from oodfs.run.reference import shipped_dir

    label = f"{suite.name}-{suite.profile}"
    path = shipped_dir() / f"{label}.parquet"
    if not suite.shipped or not path.is_file():  # a suite file named like a shipped suite is not it
        return None
    import pandas as pd

    try:
        columns = ["setting", "r_train", "run", "method", "downstream", "fit_seconds", "downstream_seconds"]
        rows = pd.read_parquet(path, columns=columns).drop_duplicates(columns[:5])
    except (OSError, ValueError, KeyError):
        return None
    models = [m for m in suite.downstream if m in set(rows["downstream"])]
    rows = rows[rows["downstream"].isin(models)] if models else rows
    per_task = rows.groupby(columns[:4]).agg(
        fit_seconds=("fit_seconds", "first"), downstream_seconds=("downstream_seconds", "sum")
    )
    per_task = per_task.dropna()
    if per_task.empty:
        return None
    by_method = per_task.groupby(level="method").median()
    if not models:  # none of the suite's downstream models in the reference: one model's share each
        by_method["downstream_seconds"] *= len(suite.downstream) / max(rows["downstream"].nunique(), 1)
    return (
        {m: max(float(v), 1e-3) for m, v in by_method["fit_seconds"].items()},
        {m: max(float(v), 1e-3) for m, v in by_method["downstream_seconds"].items()},
        label,
    )


# -- the run's side ----------------------------------------------------------------------------------
def _terminal_width(stream) -> int:
    """The columns of the terminal ``stream`` writes to; 0 when it is none, or one that says it has
    no width (a pseudo-terminal no one sized: a bar there would be cut to nothing)."""
    try:
        if not stream.isatty():
            return 0
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 80 if getattr(stream, "isatty", lambda: False)() else 0  # a terminal without a descriptor


class Progress:
    """What a run's jobs have done, in units of work, and its display on standard error.

    ``jobs``: the plan (:class:`oodfs.run.jobs.Job`, each with its ``index``); ``weights``:
    :class:`Weights`. :meth:`receive` takes a job's messages (from any thread); :meth:`update`
    the tasks that finished; :meth:`close` ends the display with a last line.
    """

    def __init__(
        self,
        jobs,
        weights=None,
        *,
        enabled: bool = True,
        interval: float = DEFAULT_INTERVAL,
        stream=None,
        workers: int = 1,
        labels: dict | None = None,
        clock=time.monotonic,
    ):
        self.clock = clock  # (a test's fake clock)
        self.jobs = {job.index: job for job in jobs}
        self.job_of = {job.data.task(m): job.index for job in jobs for m in job.methods}
        if isinstance(weights, dict):  # a pool of suites: {job index: its suite's Weights}
            self.job_weights = weights
            bases = list(dict.fromkeys(w.basis for w in weights.values()))
            basis = bases[0] if len(bases) == 1 else "each suite's reference results (or grid points)"
            self.weights = Weights({}, {}, "s", basis)
        else:
            self.weights = weights or Weights({}, {}, "tasks", "tasks")
            self.job_weights = {}
        #: {job index: its suite's name}, shown before a job's data set (a pool of several suites)
        self.labels = {i: f"{text} " for i, text in (labels or {}).items() if text}
        self.stream = stream if stream is not None else sys.stderr
        self.tasks = sum(len(job.methods) for job in jobs)
        self.enabled = enabled and self.tasks > 0
        self.interval = interval
        self.lock = threading.RLock()
        self.start = self.clock()
        self.work_start: float | None = None  # when the first job had drawn its data
        self.last_progress: float | None = None  # when work was last reported done
        self.fit: dict = {}  # (job, method) -> fraction of its fit done
        self.points: dict = {}  # (job, method) -> (points done, expected)
        self.fitted: dict = {}  # job -> methods fitted (in order)
        self.downstream: dict = {}  # (job, method) -> fraction of its downstream training done
        self.finished: set = set()  # (job, method) of finished tasks
        self.failed = 0
        self.started: set = set()  # jobs that have begun (drawing their data)
        self.drawn: set = set()  # jobs that have drawn their data (fitting)
        self.step_start: dict = {}  # job -> when its current step (a method's fit, its downstream) began
        self.total = sum(self._weight(job, m) for job in jobs for m in job.methods) or 1.0
        self.bar = None
        self.header = None
        self.closed = threading.Event()
        self.thread = None
        if not self.enabled:
            return
        if _terminal_width(self.stream):
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=1000,
                file=self.stream,
                bar_format="{percentage:3.0f}%|{bar:16}| {desc}",
                dynamic_ncols=True,
                leave=True,
            )
        else:  # shown with the first line: a run that stops at once (no scheduler) says only why
            self.header = (
                f"{self.tasks} task{'s' * (self.tasks != 1)} in {len(jobs)} job{'s' * (len(jobs) != 1)} "
                f"on {workers} worker{'s' * (workers != 1)}; progress weighs each step by "
                f"{self.weights.basis}, a line every {interval:g} s"
            )
        self.thread = threading.Thread(target=self._tick, name="oodfs-progress", daemon=True)
        self.thread.start()

    # -- bookkeeping ----------------------------------------------------------------------------
    def _w(self, index) -> Weights:
        return self.job_weights.get(index, self.weights)

    def _weight(self, job, method) -> float:
        w = self._w(job.index)
        return w.fit.get(method, 1.0) + w.downstream.get(method, 0.0)

    def receive(self, message) -> None:
        """One message of a job (see :mod:`oodfs.run.jobs`): ``["start", job]`` (drawing its data),
        ``["drawn", job]``, ``["points", job, method, done, expected]``, ``["fitted", job,
        method]``, ``["downstream", job, method, fraction]`` (of its downstream models trained),
        ``["done", job, method, status, error's first line or None]`` (its task finished and, from
        a worker that commits, stored). Unknown or malformed messages are ignored."""
        try:
            kind, job = message[0], int(message[1])
        except (TypeError, ValueError, IndexError, KeyError):
            return
        note = None
        with self.lock:
            if job not in self.jobs:
                return
            now = self.clock()
            self.started.add(job)
            if kind == "start":  # drawing its data, which weighs nothing: the clock waits
                return
            if self.work_start is None:  # the rate is taken from the first fit on
                self.work_start = now
            if job not in self.drawn or kind in ("fitted", "done"):  # the job's next step begins
                self.step_start[job] = now
            if kind in ("points", "fitted", "downstream", "done"):
                self.last_progress = now
            self.drawn.add(job)
            if kind == "points":
                method, done, expected = message[2], int(message[3]), max(int(message[4]), 1)
                key = (job, method)
                # not complete until the method says it is fitted: the points may not be all the work
                self.fit[key] = max(self.fit.get(key, 0.0), min(done / expected, 0.95))
                self.points[key] = (done, expected)
            elif kind == "fitted":
                method = message[2]
                self.fit[job, method] = 1.0
                if method not in self.fitted.setdefault(job, []):
                    self.fitted[job].append(method)
            elif kind == "downstream":
                key = (job, message[2])
                self.downstream[key] = max(self.downstream.get(key, 0.0), min(float(message[3]), 1.0))
            elif kind == "done":
                method, status = message[2], message[3]
                error = message[4] if len(message) > 4 else None
                note = self._finish(job, method, status, error)
        if kind == "done" and note and self.enabled:
            self._line(note)

    def _finish(self, index, method, status, error) -> str | None:
        """Count the task of ``method`` in job ``index`` finished (once); its note if it failed."""
        if (index, method) in self.finished:
            return None
        self.finished.add((index, method))
        if status == "ok":
            return None
        self.failed += 1
        error = (error or "").splitlines()[0] if error else ""
        error = error if len(error) <= 200 else error[:197] + "..."
        data = self.jobs[index].data
        where = f"{self.labels.get(index, '')}{data.setting} r_train={data.task('').r_train} run={data.run}"
        return f"task {where} {method} failed: {error}"

    def update(self, finished, job: int | None = None) -> None:
        """Count finished tasks (TaskResult objects) of job ``job`` (default: the job that holds
        each task's key); a failed one is named at once. A task its job already said was done
        (``["done", ...]``) is not counted again."""
        notes = []
        with self.lock:
            if self.work_start is None:  # a backend that sends no messages: time from the first result
                self.work_start = self.start
            self.last_progress = self.clock()
            for task in finished:
                index = self.job_of.get(task.key) if job is None else job
                if index not in self.jobs:
                    continue
                note = self._finish(index, task.key[3], task.status, task.error)
                if note:
                    notes.append(note)
        if self.enabled:
            for note in notes:
                self._line(note)

    def done(self) -> float:
        """Units of work done."""
        total = 0.0
        for index, job in self.jobs.items():
            for m in job.methods:
                if (index, m) in self.finished:
                    total += self._weight(job, m)
                else:
                    w = self._w(index)
                    total += w.fit.get(m, 1.0) * self.fit.get((index, m), 0.0)
                    total += w.downstream.get(m, 0.0) * self.downstream.get((index, m), 0.0)
        return total

    def _current_step(self, index) -> tuple[float, float] | None:
        """(weight, units of it done) of the step job ``index`` is on; None once it has finished."""
        job = self.jobs[index]
        open_ = [m for m in job.methods if (index, m) not in self.finished]
        if not open_:
            return None
        method, w = open_[0], self._w(index)  # a job's methods run in order, each to its end
        if method not in self.fitted.get(index, []):
            weight = w.fit.get(method, 1.0)
            return weight, weight * self.fit.get((index, method), 0.0)
        weight = w.downstream.get(method, 0.0)
        return weight, weight * self.downstream.get((index, method), 0.0)

    def estimate(self, now: float | None = None) -> tuple[float, float | None]:
        """(fraction done, seconds left or None while there is no basis).

        The rate is the work done over the time it took (from the first fit to the last report of
        work done). A step under way (a fit that reports no grid points) is credited with the
        time it has run at that rate (each running job at its share of it), up to 90 % of its
        weight; the time left is the work left after that credit at the rate over the whole
        time since the first fit. So it counts down while a long step runs as expected and grows
        once the step overruns."""
        now = self.clock() if now is None else now
        with self.lock:
            done = min(self.done(), self.total)
            start = self.work_start
            fraction = done / self.total
            if start is None or done <= 0 or now <= start:
                return fraction, None
            steps = {i: self._current_step(i) for i in self.drawn}
            steps = {i: s for i, s in steps.items() if s is not None}
            span = (self.last_progress or start) - start
            if span < 1.0:  # a rate over less than a second is no rate: take the whole time
                span = now - start
            per_job = done / span / max(len(steps), 1)
            credit = 0.0
            for index, (weight, partial) in steps.items():
                ran = now - self.step_start.get(index, now)
                credit += max(0.0, min(0.9 * weight, ran * per_job) - partial)
        done = min(done + credit, self.total)
        return fraction, (now - start) * (self.total - done) / done

    def _activity(self) -> str:
        """What the running jobs are doing now (at most two named)."""
        doing = []
        for index in sorted(self.started):
            job = self.jobs[index]
            if all((index, m) in self.finished for m in job.methods):
                continue
            open_ = [m for m in job.methods if (index, m) not in self.finished]
            data = job.data
            where = f"{data.setting} r_train={data.task('').r_train} run={data.run}"
            where = self.labels.get(index, "") + where
            if index not in self.drawn:
                doing.append(f"drawing the data of {where}")
                continue
            method = open_[0]
            if method in self.fitted.get(index, []):
                doing.append(f"{method} downstream on {where}")
                continue
            done, expected = self.points.get((index, method), (0, 1))
            count = f" {done}/{expected} points" if 0 < done < expected else ""
            doing.append(f"{method}{count} on {where}")
        if len(doing) > 2:
            doing = doing[:2] + [f"{len(doing) - 2} more"]
        if not self.started and not self.finished:
            doing = ["waiting for the first job to start"]
        return "; ".join(doing)

    def text(self, now: float | None = None) -> str:
        now = self.clock() if now is None else now
        fraction, left = self.estimate(now)
        with self.lock:
            tasks = len(self.finished)
            failed = f", {self.failed} failed" if self.failed else ""
            doing = self._activity()
        eta = "ETA estimating" if left is None else f"ETA {clock(left)}"
        head = f"{tasks}/{self.tasks} tasks{failed}, elapsed {clock(now - self.start)}, {eta}"
        if self.bar is None:  # a bar shows the percentage itself
            head = f"{100 * fraction:.0f}% of the work, {head}"
        return head + (f"; now: {doing}" if doing else "")

    # -- display -------------------------------------------------------------------------------
    def _line(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(f"oodfs: {text}", file=self.stream)
        else:
            print(f"oodfs: {text}", file=self.stream, flush=True)

    def _draw(self) -> None:
        if self.bar is not None:
            fraction, _ = self.estimate()
            self.bar.n = int(1000 * fraction)
            self.bar.set_description_str(self.text(), refresh=False)
            self.bar.refresh()
        elif self.header is not None:  # the first line: the plan
            self._line(self.header)
            self.header = None
        else:
            self._line(self.text())

    def _tick(self) -> None:
        # off a terminal: the plan within a second, then a line every interval, on a fixed
        # schedule (the time a line takes to make does not add up into gaps longer than the interval)
        every = REDRAW if self.bar is not None else self.interval
        due = time.monotonic() + (REDRAW if self.bar is not None else min(FIRST_LINE, self.interval))
        while not self.closed.wait(max(0.0, due - time.monotonic())):
            try:
                self._draw()
            except Exception:  # noqa: BLE001 -- a closed stream, a terminal gone: the run goes on
                pass
            now = time.monotonic()
            due = due + every if due + every > now else now + every  # after a stall: one line, not a burst

    def close(self, completed: bool = True) -> None:
        """End the display with a last line; a run stopped before any job began (``completed``
        False: an unreachable scheduler, Ctrl-C while workers start) leaves nothing of it."""
        if not self.enabled or self.closed.is_set():
            return
        self.closed.set()
        if self.thread is not None:
            self.thread.join()
        if not completed and not self.started and not self.finished:
            if self.bar is not None:
                self.bar.leave = False
                self.bar.close()
            return
        elapsed = clock(self.clock() - self.start)
        tasks = len(self.finished)
        failed = f", {self.failed} failed" if self.failed else ""
        if self.bar is not None:
            self.bar.n = int(1000 * self.estimate()[0])
            self.bar.set_description_str(f"{tasks}/{self.tasks} tasks{failed} in {elapsed}", refresh=False)
            self.bar.close()
        else:
            self._line(f"{tasks}/{self.tasks} tasks done{failed} in {elapsed}")


class Steps:
    """The steps that follow a run's tasks (the analysis, the leaderboard, each figure, the summary;
    docs/PROTOCOL.md section 20), said through ``say`` as each begins ("drawing figure 2 of 3
    (ood_s)") and again every ``interval`` seconds while it lasts ("still drawing figure 2 of 3
    (ood_s), 20 s"), so that none is a silence longer than ``interval``. ``say`` None (``--quiet``):
    nothing is said and no thread runs. Plain lines, on a terminal too: no bar is left to redraw.

    Use as a context manager (the thread that says "still" ends with it); :meth:`step` is a
    context manager around one step. ``clock`` and ``ticking`` let a test drive :meth:`beat`."""

    def __init__(self, say=None, interval: float = DEFAULT_INTERVAL, *, clock=time.monotonic, ticking=True):
        self.say, self.interval, self.clock = say, interval, clock
        self.current: str | None = None
        self.began = self.last = 0.0
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = None
        if say is not None and ticking:
            self.thread = threading.Thread(target=self._watch, name="oodfs-steps", daemon=True)
            self.thread.start()

    def __enter__(self) -> Steps:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()

    def _watch(self) -> None:
        while True:
            with self.lock:  # wake when the step under way is due to say "still", or look again soon
                due = self.last + self.interval if self.current is not None else None
            wait = min(1.0, self.interval) if due is None else max(0.0, due - self.clock())
            if self.stopped.wait(wait):
                return
            try:
                self.beat()
            except Exception:  # noqa: BLE001 -- a closed stream: the outputs are written all the same
                pass

    def begin(self, text: str) -> None:
        """Step ``text`` begins (the one before it, if any, has ended)."""
        if self.say is None:
            return
        with self.lock:
            self.current, self.began = text, self.clock()
            self.last = self.began
        self.say(f"{text} ...")

    def end(self) -> None:
        with self.lock:
            self.current = None

    @contextlib.contextmanager
    def step(self, text: str):
        self.begin(text)
        try:
            yield
        finally:
            self.end()

    def beat(self, now: float | None = None) -> None:
        """Say "still ..." when the step under way has said nothing for ``interval`` seconds."""
        with self.lock:
            now = self.clock() if now is None else now
            if self.current is None or now - self.last < self.interval:
                return
            self.last = now
            text = f"still {self.current}, {clock(now - self.began)}"
        self.say(text)
