"""Jobs: one data set and the methods still to run on it, planned, then executed by a worker.

A job draws its data once, then runs its pending methods (each a *task*) one after another: fits
the method, trains the downstream models on the feature subsets it needs (a subset an earlier
method of the job needed is taken from the job's caches, not trained again) and commits the task's
rows, so that its tasks finish one by one. A task that fails is recorded with its message and
the job goes on: a failing plugin never stops a run.
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


def plan(suite: Suite, finished: set) -> list[Job]:
    """Pending jobs, one per data set with its unfinished methods (some are split by method for
    the workers: :func:`oodfs.run.progress.split_for_workers`)."""
    jobs = []
    for key in suite.data_keys():
        pending = tuple(m for m in suite.methods if key.task(m) not in finished)
        if pending:
            jobs.append(Job(key, pending))
    return [Job(j.data, j.methods, i) for i, j in enumerate(jobs)]


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
        # counted by the run's progress as it finishes, not when the whole job returns
        first = (error or "").splitlines()[0] if error else None
        progress.send(["done", job.index, method, status, first])

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

    # method after method, each task ends before the next fit begins: its fit, the downstream
    # models on the subsets it needs, its rows committed, so that a run's tasks finish one by one
    # (docs/PROTOCOL.md section 20). The caches carry over from method to method: a subset an earlier
    # method needed is taken, not trained again (a subset's model is seeded from the data set and
    # the subset alone, so the batching changes no number).
    refits = len(data.train_envs) if data.groups_train is not None else 0  # leave one environment out
    d = data.X_train.shape[1]
    sizes = grid_ks(suite, d)
    seed = key.seed(suite.seed, "downstream")
    caches: dict = {}  # model -> DownstreamCache of this data set
    held_out: dict = {}  # training environment -> the cache of the models trained without it
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
            f, fit_warnings[method] = (
                call_isolated(fit, context.task_timeout, context.task_memory) if isolate else fit()
            )
        except (Exception, SystemExit) as exc:  # a failing plugin is recorded; the benchmark goes on
            progress.send(["fitted", job.index, method])
            finish(method, "failed", named(error_message(exc), data.feature_names), [{}])
            continue
        progress.send(["fitted", job.index, method])
        # the method at every size of the suite's k grid (docs/PROTOCOL.md section 10, "The k grid")
        ks = point_ks(suite, f, d)
        curve = curve_ks(suite, f, key, d)
        wanted = subsets_needed(f, ks + [c for c in curve if c not in ks])
        results, seconds = {}, {}
        try:
            for model in suite.downstream:  # every model on the same fits (docs/PROTOCOL.md, "Real data")
                t0 = time.perf_counter()
                if model not in caches:
                    task_type = suite.task or "regression"
                    caches[model] = DownstreamCache.for_profile(data, seed, suite.profile, model, task_type)
                    caches[model].add_stored((job.trained or {}).get(model, {}))
                seconds[model] = time.perf_counter() - t0
            # the test environments are drawn when a first subset needs them (dataset.LazyTests):
            # the data set's seconds, not this task's downstream training
            if any(caches[model].missing(wanted) for model in suite.downstream):
                common["data_seconds"] += data.draw_tests()
            for model in suite.downstream:
                t0 = time.perf_counter()
                results[model] = caches[model].evaluate(wanted)
                # the training this task's subsets cost (nothing for those an earlier method trained)
                seconds[model] += time.perf_counter() - t0
                progress.send(["downstream", job.index, method, len(results) / len(suite.downstream)])
        except Exception as exc:
            finish(method, "failed", f"downstream regressor: {error_message(exc)}", [{}])
            continue
        loeo = {}
        if data.groups_train is not None:  # several training environments: leave one out
            try:
                loeo = {
                    kk: leave_one_out_loss(
                        {method: f}, data, kk, seed, suite.profile, suite.task, caches=held_out
                    ).get(method)
                    for kk in sizes
                }
            except Exception as exc:
                finish(
                    method,
                    "failed",
                    f"downstream regressor (leave one environment out): {error_message(exc)}",
                    [{}],
                )
                continue
        try:
            rows = []
            for model in suite.downstream:
                rows += [
                    {**r, "downstream": model}
                    for r in method_rows(
                        f,
                        data,
                        results[model],
                        ks,
                        metrics,
                        seconds[model],
                        # a yardstick's one size reads the loss at the suite's k, as before the k grid
                        [
                            loeo.get(kk) if kk in loeo else None  # not at a support: refits differ
                            for kk in (ks if f.kind != "yardstick" else sizes[:1])
                        ]
                        if loeo
                        else None,
                        suite.task,
                        curve,
                    )
                ]
        except Exception as exc:
            finish(method, "failed", named(error_message(exc), data.feature_names), [{}])
            continue
        finish(method, "ok", None, rows)  # outside the try: a storage error stops the run
    return finished
