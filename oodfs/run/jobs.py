"""Jobs: one data set and the methods still to run on it, planned, then executed by a worker.

A job draws its data once, fits every pending method (each a *task*), trains all the feature
subsets those methods need in one downstream call, and commits each task's rows. A task that
fails is recorded with its message and the job goes on: a failing plugin never stops a run.
By default each method is fitted in a forked child process (:func:`call_isolated`), so a
plugin that crashes its process, calls ``sys.exit`` or edits its input is a failed task too.
A storage error (disk full, I/O error) is not a method's failure: it stops the run
(:class:`~oodfs.results.store.StorageError`).
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass, field, replace

from oodfs.contract import progress
from oodfs.contract.registry import registry
from oodfs.contract.task import DataKey, TaskKey, env_key
from oodfs.results.provenance import package_versions
from oodfs.results.store import ResultStore
from oodfs.run.dataset import make_dataset
from oodfs.run.downstream_models import DownstreamCache
from oodfs.run.evaluate import curve_ks, fit_method, leave_one_out_loss, method_rows, point_ks, subsets_needed
from oodfs.run.executors.isolation import call_isolated
from oodfs.run.progress import PointCounter
from oodfs.run.suite import Suite, grid_ks
from oodfs.tables import named_columns as named  # "column 3" -> "column 'hr=3'", as `oodfs select` says it
from oodfs.validation import error_message


@dataclass(frozen=True)
class Job:
    """One data set and the methods to run on it."""

    data: DataKey
    methods: tuple[str, ...]
    # its place in the run's plan: how its progress messages name it (not part of what the job is)
    index: int = field(default=0, compare=False)
    #: ``{model: {subset: scores}}`` of subsets trained before on this data set (reference results,
    #: :func:`oodfs.run.reference.trained_subsets`): taken, not trained again (same numbers)
    trained: dict | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class TaskResult:
    """A finished task; ``rows`` is None when the worker committed them itself."""

    key: TaskKey
    status: str  # "ok" or "failed"
    error: str | None
    rows: list | None
    identity: object = None  # the task's oodfs.run.identity.TaskIdentity (None: not tracked)
    #: the warnings its fit raised, ``((category, first message, times), ...)``: given as one
    #: counted note per method and category once the run ends (:func:`warning_notes`), not a line each
    warnings: tuple = ()


#: warnings a fit raises that are not counted: those Python and oodfs's command line hide anyway
HIDDEN_WARNINGS = (
    DeprecationWarning,
    PendingDeprecationWarning,
    ImportWarning,
    ResourceWarning,
    FutureWarning,
)
#: how much of a warning's first message its note quotes
WARNING_QUOTE = 160


def _counted(caught) -> tuple:
    """``((category, first message, times), ...)`` of the recorded warnings, in first-seen order."""
    out: dict = {}
    for w in caught:
        if issubclass(w.category, HIDDEN_WARNINGS):
            continue
        name = w.category.__name__
        first, times = out.get(name, (" ".join(str(w.message).split()), 0))
        out[name] = (first, times + 1)
    return tuple((name, first, times) for name, (first, times) in out.items())


def warning_notes(tasks) -> list[str]:
    """One line per (method, warning category) over finished tasks (:class:`TaskResult`): how often
    the fits raised it, in how many of the method's tasks, and its first message (docs/PROTOCOL.md
    section 6, "Warnings of a fit"). A scikit-learn solver's warning on near-singular data comes once
    per fit and grid point: printed as it came, one run printed 96 lines of it."""
    per_method: dict = {}
    counts: dict = {}  # (method, category) -> [times, tasks, first message]
    for task in tasks:
        method = task.key[3]
        per_method[method] = per_method.get(method, 0) + 1
        for category, first, times in task.warnings:
            c = counts.setdefault((method, category), [0, 0, first])
            c[0] += times
            c[1] += 1
    lines = []
    for (method, category), (times, n, first) in counts.items():
        quote = first if len(first) <= WARNING_QUOTE else first[: WARNING_QUOTE - 3] + "..."
        lines.append(
            f"{method}: {category} {times} time{'s' * (times != 1)} in the fits of {n} of its "
            f"{per_method[method]} task{'s' * (per_method[method] != 1)} (the fits went on; their "
            f"results are stored as they came), first: {quote}"
        )
    return lines


def plan(suite: Suite, finished: set, workers: int = 1) -> list[Job]:
    """Pending jobs, one per data set with its unfinished methods.

    With fewer data sets than workers each method becomes a job of its own so that every
    worker has work; the numbers are the same either way (seeds come from the task's
    coordinates), only some data draws and downstream fits are repeated.
    """
    jobs = []
    for key in suite.data_keys():
        pending = tuple(m for m in suite.methods if key.task(m) not in finished)
        if pending:
            jobs.append(Job(key, pending))
    if len(jobs) < workers:
        jobs = one_method_each(jobs)
    return [Job(j.data, j.methods, i) for i, j in enumerate(jobs)]


def one_method_each(jobs: list[Job]) -> list[Job]:
    """``jobs`` with each method a job of its own (so that every worker has work; :func:`plan`)."""
    return [replace(j, methods=(m,)) for j in jobs for m in j.methods]


def with_trained(jobs: list[Job], trained: dict) -> list[Job]:
    """``jobs``, each with the subsets trained before on its data set (``{(setting, r_train text,
    run): {model: {subset: scores}}}``, :func:`oodfs.run.reference.trained_subsets`)."""
    out = []
    for job in jobs:
        k = job.data
        out.append(replace(job, trained=trained.get((k.setting, env_key(k.r_train), k.run))))
    return out


@dataclass(frozen=True)
class WorkerContext:
    """What every job of a run shares. ``out_dir``: the store a worker commits to (None: a remote
    worker returns its rows); ``identities``: ``{(setting, method): TaskIdentity}``, stored with
    each task (computed once by the runner, where the resume decision is made); ``isolate``: fit
    each method in a forked child process (needed for ``task_timeout`` and ``task_memory``, the
    memory a fit may allocate, e.g. ``"2G"``)."""

    suite: Suite
    out_dir: str | None
    plugin_modules: tuple[str, ...] = ()
    task_timeout: float | None = None
    identities: dict | None = None
    isolate: bool = True
    task_memory: str | None = None


def run_job(context: WorkerContext, job: Job) -> list[TaskResult]:
    """Run one job (the worker's entry point): commit each task to ``context.out_dir``'s store, or
    with no folder (a remote worker) return the rows. Every library computes on one thread (workers
    are the parallelism): a sum split over threads adds in another order, so a method's numbers
    would depend on the machine's cores and on --jobs (kernel HRM's clustering did: docs/PROTOCOL.md
    section 6, "One result on every machine")."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        return _run_job(context, job)


def _run_job(context: WorkerContext, job: Job) -> list[TaskResult]:
    suite, identities = context.suite, context.identities
    registry(context.plugin_modules)
    metrics = [info.cls for info in registry().entries("metric").values()]
    key = job.data
    store = ResultStore(context.out_dir) if context.out_dir is not None else None
    versions = package_versions()
    common = {
        "suite": suite.name,
        "profile": suite.profile,
        "setting": key.setting,
        "r_train": env_key(key.r_train),
        "run": key.run,
        "oodfs_version": versions.get("oodfs", ""),
        "versions": json.dumps(versions, sort_keys=True),
    }
    finished: list[TaskResult] = []

    fit_warnings: dict = {}  # method -> what its fit warned (TaskResult.warnings)

    def finish(method, status, error, rows):
        task = key.task(method)
        ident = (identities or {}).get((key.setting, method))
        digest = ident.digest if ident is not None else None
        rows = [
            {
                **common,
                **r,
                "method": method,
                "status": status,
                "error": error,
                "identity": digest,
                "origin": "run",
            }
            for r in rows
        ]
        if store is not None:
            store.commit_task(task, status, error, rows, digest, ident.parts if ident is not None else None)
        finished.append(
            TaskResult(
                task, status, error, None if store is not None else rows, ident, fit_warnings.get(method, ())
            )
        )

    progress.send(["start", job.index])
    try:
        t0 = time.perf_counter()
        data = make_dataset(suite, key)
        common["data_seconds"] = time.perf_counter() - t0  # once per data set, shared by its tasks
        progress.send(["drawn", job.index])
    except (Exception, SystemExit) as exc:  # the data set itself failed: every task on it fails, recorded
        for method in job.methods:
            finish(method, "failed", error_message(exc), [{}])
        return finished

    fits = {}
    refits = len(data.train_envs) if data.groups_train is not None else 0  # leave one environment out
    for method in job.methods:
        try:

            def fit(method=method):
                points = len(registry().get("selector", method).grid_points()) * (1 + refits)
                # recorded, not printed: one counted note per method and category ends the run
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    with progress.counting_points(PointCounter(job.index, method, points)):
                        fitted = fit_method(suite, key, method, data)
                return fitted, _counted(caught)

            isolate = context.isolate or context.task_timeout or context.task_memory
            fits[method], fit_warnings[method] = (
                call_isolated(fit, context.task_timeout, context.task_memory) if isolate else fit()
            )
        except (Exception, SystemExit) as exc:  # a failing plugin is recorded; the benchmark goes on
            finish(method, "failed", named(error_message(exc), data.feature_names), [{}])
        progress.send(["fitted", job.index, method])

    # every subset of every method in one downstream call (batching changes no result)
    d = data.X_train.shape[1]
    # each method at every size of the suite's k grid (docs/PROTOCOL.md section 10, "The k grid")
    ks = {m: point_ks(suite, f, d) for m, f in fits.items()}
    curves = {m: curve_ks(suite, f, key, d) for m, f in fits.items()}
    wanted = {m: subsets_needed(f, ks[m] + [c for c in curves[m] if c not in ks[m]]) for m, f in fits.items()}
    subsets = [s for subsets in wanted.values() for s in subsets]
    results, seconds = {}, {}
    try:
        for model in suite.downstream:  # every model on the same fits (docs/PROTOCOL.md, "Real data")
            t0 = time.perf_counter()
            seed = key.seed(suite.seed, "downstream")
            cache = DownstreamCache.for_profile(data, seed, suite.profile, model, suite.task or "regression")
            cache.add_stored((job.trained or {}).get(model, {}))
            results[model] = cache.evaluate(subsets)
            seconds[model] = time.perf_counter() - t0
            progress.send(["downstream", job.index, len(results) / len(suite.downstream)])
    except Exception as exc:
        for method in fits:
            finish(method, "failed", f"downstream regressor: {error_message(exc)}", [{}])
        return finished
    loeo, sizes = {}, grid_ks(suite, d)
    if data.groups_train is not None and fits:  # several training environments: leave one out
        try:
            loeo = {
                kk: leave_one_out_loss(
                    fits, data, kk, key.seed(suite.seed, "downstream"), suite.profile, suite.task
                )
                for kk in sizes
            }
        except Exception as exc:
            for method in fits:
                finish(
                    method,
                    "failed",
                    f"downstream regressor (leave one environment out): {error_message(exc)}",
                    [{}],
                )
            return finished
    total = sum(len(s) for s in wanted.values()) or 1
    for method, f in fits.items():
        try:
            rows = []
            for model in suite.downstream:
                # a method's share of the batch, by the number of subsets it asked for
                share = seconds[model] * len(wanted[method]) / total
                rows += [
                    {**r, "downstream": model}
                    for r in method_rows(
                        f,
                        data,
                        results[model],
                        ks[method],
                        metrics,
                        share,
                        # a yardstick's one size reads the loss at the suite's k, as before the k grid
                        [
                            loeo[kk].get(method) if kk in loeo else None  # not at a support: refits differ
                            for kk in (ks[method] if f.kind != "yardstick" else sizes[:1])
                        ]
                        if loeo
                        else None,
                        suite.task,
                        curves[method],
                    )
                ]
        except Exception as exc:
            finish(method, "failed", named(error_message(exc), data.feature_names), [{}])
            continue
        finish(method, "ok", None, rows)  # outside the try: a storage error stops the run
    return finished
