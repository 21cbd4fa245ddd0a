"""Run a suite: plan the pending jobs, hand them to a backend, record what finishes.

What one job computes lives in :mod:`oodfs.run.jobs` (data set, fits, downstream, rows); where it
runs in :mod:`oodfs.run.executors`. All randomness is seeded from each task's own coordinates
(:func:`oodfs.contract.seeds.derive_seed`), so results depend neither on the number of workers nor on
the backend nor on the order of execution. Every grid point of every method is evaluated and
stored; a model-selection rule (:mod:`oodfs.contract.selection`) is applied when a report is made.

Each task is stored with its identity (:mod:`oodfs.run.identity`: the method's code, version and
grid, the profile, the data, the suite). ``resume`` keeps a stored task only if its identity is
the current one; the others are rerun and their old rows replaced (:func:`resume_plan`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from oodfs.contract.registry import SuitePlugins, registry
from oodfs.contract.task import TASK_KEY
from oodfs.results.identity import combined_identity, explain, identity_conflicts
from oodfs.results.provenance import environment, package_versions
from oodfs.results.store import ResultStore
from oodfs.run.executors.isolation import memory_limit_supported, parse_size
from oodfs.run.identity import method_code_hashes, suite_identity, task_identities
from oodfs.run.jobs import WorkerContext, plan, run_job, warning_notes, with_trained
from oodfs.run.kernels import numeric_platform
from oodfs.run.progress import DEFAULT_INTERVAL, Progress, pool_order
from oodfs.run.suite import Suite, check_suite_plugins, resolve_suite
from oodfs.validation import OodfsError


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


@dataclass
class ResumePlan:
    """What a resume keeps, reruns and removes.

    ``keep``: stored tasks of this run's selection whose identity is current (not run again);
    ``rerun``: ``{(method, reason): [task keys]}`` stored tasks of the selection run again;
    ``remove``: ``{(method, reason): [keys]}`` stale tasks of this run's methods outside its
    selection (other r_train, runs or settings), deleted so that a method never mixes two
    identities; ``stale_kept``: ``{(method, reason): [keys]}`` stale tasks of methods this run
    does not include, kept as they are; ``selection``: the task keys of this run's selection (what
    the plan was made against, read once).
    """

    keep: set = field(default_factory=set)
    rerun: dict = field(default_factory=lambda: defaultdict(list))
    remove: dict = field(default_factory=lambda: defaultdict(list))
    stale_kept: dict = field(default_factory=lambda: defaultdict(list))
    selection: frozenset = frozenset()

    def notes(self) -> list[str]:
        lines = [f"{_count(len(k), 'task')} of {m} rerun: {why}" for (m, why), k in self.rerun.items()]
        lines += [
            f"removed {_count(len(k), 'task')} of {m} outside this run's selection: {why}"
            for (m, why), k in self.remove.items()
        ]
        lines += [
            f"kept {_count(len(k), 'task')} of {m}, which this run does not include, although "
            f"{why.replace(' changed', '')} changed since: rerun them with --methods {m} --resume"
            for (m, why), k in self.stale_kept.items()
        ]
        return lines

    def summary(self) -> dict:
        """For the invocation record: counts per (method, reason)."""

        def counts(d):
            return [{"method": m, "reason": why, "tasks": len(k)} for (m, why), k in d.items()]

        return {
            "rerun": counts(self.rerun),
            "removed": counts(self.remove),
            "stale_kept": counts(self.stale_kept),
        }


def resume_plan(
    suite: Suite, records: dict, identities: dict, force=(), retry_failed: bool = False
) -> ResumePlan:
    """Decide, for every stored task (``records``: :meth:`ResultStore.task_records`), whether it
    is kept, rerun, removed or kept although stale. ``identities``: ``{(setting, method):
    TaskIdentity}`` of every registered method on every setting of ``suite``; ``force``: methods
    whose tasks are rerun whatever their identity; ``retry_failed``: rerun failed tasks of the
    selection too."""
    selection = frozenset(suite.task_keys())
    out = ResumePlan(selection=selection)
    for key, rec in records.items():
        setting, _, _, method = key
        current = identities.get((setting, method))
        if key in selection and method in force:
            out.rerun[method, "forced (--force)"].append(key)
            continue
        if key in selection and retry_failed and rec["status"] != "ok":
            out.rerun[method, "failed before"].append(key)
            continue
        if current is None:  # a method or setting this run cannot judge: left as it is
            if key in selection:
                out.keep.add(key)
            continue
        if rec["identity"] == current.digest:
            if key in selection:
                out.keep.add(key)
            continue
        why = explain(rec["parts"], current.parts)
        if key in selection:
            out.rerun[method, why].append(key)
        elif method in suite.methods:
            out.remove[method, why].append(key)
        else:
            out.stale_kept[method, why].append(key)
    return out


def _print_note(text: str) -> None:
    print(f"oodfs: {text}", file=sys.stderr)


@dataclass(frozen=True)
class RunOptions:
    """How a suite is run (``oodfs bench``'s options); none of them changes a number.

    ``force``: methods rerun whatever is stored (implies ``resume`` of an existing store);
    ``retry_failed``: failed tasks are run again (implies ``resume``). ``reference``: an
    :class:`oodfs.run.reference.Reference`; the tasks of ``reference_methods`` (default: the
    reference's) that are not in the suite's methods are copied from it instead of run; a method the
    reference lacks, or holds under another identity, is run. ``notes``: called with each one-line
    note (what is rerun and why, what came from the reference). ``isolate``: fit each method in a
    forked child process, so that a plugin that crashes or exits is a failed task
    (``task_timeout`` and ``task_memory`` need it). ``task_memory``: ``--task-memory``'s SIZE
    (e.g. ``"2G"``), what each fit may allocate. ``backend_options``: ``--backend-option
    NAME=VALUE`` pairs, checked against the options the backend declares.
    """

    jobs: int = 1
    resume: bool = False
    plugin_modules: tuple[str, ...] = ()
    progress: bool = True
    progress_interval: float = DEFAULT_INTERVAL  # seconds between progress lines off a terminal
    argv: tuple[str, ...] | None = None
    backend_name: str = "local"
    backend_options: tuple[tuple[str, str], ...] = ()  # (name, text) of the backend's declared options
    task_timeout: float | None = None
    force: tuple[str, ...] = ()
    retry_failed: bool = False
    reference: object = None
    reference_methods: tuple[str, ...] | None = None
    notes: Callable[[str], None] = _print_note
    isolate: bool = True
    task_memory: str | None = None
    #: with ``reference``: take the downstream scores of subsets the reference trained on the same
    #: data with the same models instead of training them again (same numbers; docs/PROTOCOL.md
    #: section 6); False trains every subset
    reference_subsets: bool = True
    #: notes given once the suite is let through, before its first task (e.g. that its tests can
    #: reach no verdict, which the command works out from the suite): a refused run is one line
    before_work: tuple[str, ...] = ()

    def checked(self, suite: Suite) -> RunOptions:
        """These options with duplicates removed and implied settings made explicit, or an
        OodfsError naming the option that does not fit ``suite``."""
        if self.task_timeout is not None and not self.isolate:
            raise OodfsError(
                "--task-timeout needs each method fitted in its own process; drop --no-isolation"
            )
        if self.task_memory is not None:
            if not self.isolate:
                raise OodfsError(
                    "--task-memory needs each method fitted in its own process; drop --no-isolation"
                )
            parse_size(self.task_memory)
            if not memory_limit_supported():
                raise OodfsError("--task-memory needs Linux 4.7 or later (its data-size limit)")
        force = tuple(dict.fromkeys(self.force))
        unknown = [m for m in force if m not in suite.methods]
        if unknown:
            raise OodfsError(
                f"--force names {unknown[0]!r}, which this run does not include; its methods: "
                f"{', '.join(suite.methods)}"
            )
        return replace(self, force=force, resume=self.resume or self.retry_failed or bool(force))


@dataclass(frozen=True)
class ReferenceTasks:
    """What a run takes from reference results: tasks and rows to insert, and its notes."""

    tasks: object = None  # DataFrame of TASK_COLUMNS, or None
    results: object = None
    notes: tuple[str, ...] = ()


def run_suite(suite: Suite, out_dir, options: RunOptions | None = None, **changes) -> ResultStore:
    """Run every pending task of ``suite`` into ``out_dir`` and return the store. ``options``
    (or keyword arguments naming its fields): :class:`RunOptions`. A pool of one suite
    (:func:`run_suites`).

    One run writes a folder at a time (a second one is refused); a storage error stops the run
    (:class:`~oodfs.results.store.StorageError`).
    """
    options = replace(options or RunOptions(), **changes)
    return run_suites([(suite, out_dir, options)])[0].store


@dataclass
class SuiteRun:
    """One suite of a pool (:func:`run_suites`): its folder and options, then what the pool did.

    ``planned``: the tasks of its selection; ``taken``: those not run now (stored before with the
    current identity, or copied from reference results); ``ran``: the TaskResults finished now;
    ``seconds``: from the pool's start to its last task finished now (None: none ran)."""

    suite: Suite
    out_dir: object
    options: RunOptions
    store: ResultStore | None = None
    fresh: bool = False
    label: str = ""
    identities: dict = field(default_factory=dict)
    todo: list = field(default_factory=list)
    planned: int = 0
    taken: int = 0
    ran: list = field(default_factory=list)
    seconds: float | None = None
    #: the suite's plugins, read once when it was checked (:func:`oodfs.run.suite.resolve_suite`)
    plugins: SuitePlugins | None = None
    # what the checks found, written to the store once every suite of the pool has passed them
    _state: tuple = ()

    @property
    def failed(self) -> int:
        return sum(task.status != "ok" for task in self.ran)


def run_suites(runs, held=()) -> list[SuiteRun]:
    """Run several suites as one pool (docs/PROTOCOL.md, "The whole benchmark in one command"):
    ``runs`` is a list of ``(suite, out_dir, RunOptions)``, each suite into its own folder as
    :func:`run_suite` does, or the pool :func:`check_pool` made of them. Every suite is checked
    (and its folder's resume plan made) before any is written to or run; then the pending jobs of
    all of them go to one backend call, longest first (:func:`oodfs.run.progress.pool_order`),
    under one progress display, and each finished task is committed into its own suite's store.
    The pool's settings (jobs, backend, progress, plugins) are those of the first suite's options.
    ``held``: warnings the caller's own checks caught, given with the pool's once every suite is
    let through (a refused run is one line). Returns one :class:`SuiteRun` per suite, in the
    order given."""
    if not runs:
        return []
    checked = all(isinstance(r, SuiteRun) for r in runs)
    pool = runs[0].options if checked else runs[0][2]
    if not checked:
        registry(pool.plugin_modules)  # first: a plugin may bring the backend
    entries, locked = [], []
    with contextlib.ExitStack() as stack:
        try:
            # what checking the suites notes (a table's notes) is given once every suite is let
            # through: a refused run is one line
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                entries = list(runs) if checked else check_pool(runs)
                executor = entries[0].plugins.backend()  # the pool's backend, read with its first suite
                # the pool's backend options, checked against those the backend declares (once)
                settings = executor.parse_options(dict(pool.backend_options))
                for e in entries:  # each store closed as its folder's lock ends, however the run ends
                    e.store, e.fresh = stack.enter_context(ResultStore.for_run(e.out_dir))
                    locked.append(e)
                for e in entries:  # every check before anything is written
                    _check(e)
            for w in {str(w.message): w for w in [*held, *caught]}.values():
                warnings.warn(w.message, w.category, stacklevel=2)
            for e in entries:
                for line in e.options.before_work:
                    e.options.notes(line)
            for e in entries:
                _record(e)
            _dispatch(entries, executor, settings, pool)
        except BaseException:
            for e in locked:
                if e.fresh:  # stopped before its first task (an unreachable scheduler): a plain rerun works
                    e.store.discard_if_empty()
            raise
    return entries


def check_pool(runs) -> list[SuiteRun]:
    """Each suite of a pool checked before anything is written: its options
    (:meth:`RunOptions.checked`), its task type and the methods that cannot handle it (skipped,
    with a note), the plugins it names (:func:`oodfs.run.suite.check_suite_plugins`); notes
    naming its folder when there are several; two suites writing to one folder are refused.
    ``runs``: ``(suite, out_dir, RunOptions)``, or ``(suite, out_dir, RunOptions, skipped,
    plugins)`` for a suite whose plugins the caller has already read
    (:func:`oodfs.run.suite.resolve_suite`: the suite it returned, its skipped methods and its
    plugins). The pool :func:`run_suites` runs."""
    entries = []
    for suite, out_dir, options, *known in runs:
        label = Path(out_dir).name
        if len(runs) > 1:  # each note names the suite's folder
            options = replace(options, notes=functools.partial(_labelled, options.notes, label))
        options = options.checked(suite)
        # the suite's plugins, read once; the environment's task; methods without it skipped
        if known:
            skipped, plugins = known
        else:
            suite, skipped, plugins = resolve_suite(suite, registry(), options.backend_name)
        for method, why in skipped.items():
            options.notes(f"{method}: skipped: it {why}")
        check_suite_plugins(suite, plugins)
        entries.append(SuiteRun(suite, out_dir, options, label=label, plugins=plugins))
    folders = [Path(e.out_dir).resolve() for e in entries]
    if len(set(folders)) < len(folders):
        twice = next(str(e.out_dir) for e, f in zip(entries, folders) if folders.count(f) > 1)
        raise OodfsError(f"two suites of one run would write to the same folder {twice}")
    return entries


def _labelled(notes, label: str, line: str) -> None:
    notes(f"{label}: {line}")


def _check(e: SuiteRun) -> None:
    """What a suite's folder holds and what its run must do, decided before anything is written."""
    identity = _folder_identity(e.store, e.fresh, e.suite, e.options, e.out_dir, e.plugins)
    e.suite, taken = _from_reference(e.suite, e.options, e.plugins)
    records = e.store.task_records()
    e.identities = _identities(e.suite, records, e.plugins)
    decided = resume_plan(e.suite, records, e.identities, e.options.force, e.options.retry_failed)
    e._state = (identity, records, taken, decided)


def _record(e: SuiteRun) -> None:
    """Write what :func:`_check` decided into the suite's store, and plan its pending jobs."""
    identity, records, taken, decided = e._state
    suite, options = e.suite, e.options
    _prepare_store(e.store, identity, records, e.identities, taken, decided, e.plugins.metrics)
    for line in taken.notes + tuple(decided.notes()):
        options.notes(line)
    e.store.add_invocation(_invocation(suite, options, e.identities, decided, taken, e.plugins))
    todo = plan(suite, decided.keep)
    if todo and options.reference is not None and options.reference_subsets:
        todo = with_trained(todo, _reference_subsets(suite, options, e.identities))
    e.todo = todo
    selection = set(decided.selection)
    if taken.tasks is not None and len(taken.tasks):  # methods copied from a reference: theirs too
        selection |= set(taken.tasks[TASK_KEY].itertuples(index=False, name=None))
    e.planned = len(selection)
    e.taken = len(selection & decided.keep)


def _repair(store: ResultStore, notes) -> None:
    """A resume first checks the store's contents: damaged tasks are deleted (and so run again)
    after a note naming them; a damaged suite identity cannot be compared and is refused."""
    damage = store.check()
    if not damage:
        return
    if any("'suite_identity'" in r for r in damage.records):
        raise OodfsError(
            f"cannot resume {store.out_dir}: its suite identity is damaged, so what it holds cannot be "
            "compared with this run; choose another --out"
        )
    notes(
        f"{store.path} is damaged: {damage.summary()}; removing the damaged parts, running those tasks again"
    )
    store.repair(damage)


def _folder_identity(
    store: ResultStore, fresh: bool, suite: Suite, options: RunOptions, out_dir, plugins: SuitePlugins
) -> dict:
    """The suite identity the folder will hold; a folder of another suite is refused. ``fresh``:
    the folder held no store when the run took it."""
    identity = suite_identity(suite, plugins.downstream)
    if fresh:
        return identity
    if not options.resume:
        raise OodfsError(
            f"{out_dir} already holds results; pass --resume to continue them or choose another --out"
        )
    _repair(store, options.notes)
    previous = store.get_meta("suite_identity")
    if previous is None:
        return identity
    conflicts = identity_conflicts(previous, identity)
    if conflicts:
        raise OodfsError(f"cannot resume {out_dir}: it was run with different {', '.join(conflicts)}")
    if "core" not in previous:
        options.notes(
            f"{out_dir} does not record how its tasks' downstream models were trained (an older oodfs); "
            "resuming assumes this version's settings"
        )
    return combined_identity(previous, identity)  # settings added or left out are kept


def _from_reference(suite: Suite, options: RunOptions, plugins: SuitePlugins) -> tuple[Suite, ReferenceTasks]:
    """The reference tasks this run takes, and the suite with the methods it must run instead."""
    reference = options.reference
    if reference is None:
        return suite, ReferenceTasks()
    from oodfs.run.reference import take

    wanted = reference.methods if options.reference_methods is None else options.reference_methods
    ref_methods = [m for m in dict.fromkeys(wanted) if m not in suite.methods]
    # (an unknown method: one line naming the valid ones)
    ident = task_identities(suite, ref_methods, plugins)
    tasks, results, refused = take(reference, suite, ref_methods, ident)
    notes = [f"{method}: not taken from the reference ({why}); running it" for method, why in refused.items()]
    taken = [m for m in ref_methods if m not in refused]
    if taken:
        notes.append(
            f"from the reference results {reference.label}: {', '.join(taken)} "
            f"({_count(len(tasks), 'task')}, {_count(len(results), 'row')}; column origin = 'reference')"
        )
    suite = replace(suite, methods=tuple(suite.methods) + tuple(refused))
    return suite, ReferenceTasks(tasks, results, tuple(notes))


def _reference_subsets(suite: Suite, options: RunOptions, identities: dict) -> dict:
    """The downstream scores of the subsets the reference trained on this run's data sets (taken,
    not trained again), with a note saying how many or why none."""
    from oodfs.run.reference import trained_subsets

    data = {s: i.parts.get("data") for (s, m), i in identities.items() if m in suite.methods}
    trained, why_not = trained_subsets(options.reference, suite, data)
    if why_not:
        options.notes(
            f"downstream models: every subset is trained (none taken from the reference: {why_not})"
        )
    else:
        n = sum(len(subsets) for models in trained.values() for subsets in models.values())
        options.notes(
            f"downstream models: a subset the reference trained on the same data set ({_count(n, 'subset')} "
            f"on {_count(len(trained), 'data set')}) is taken from it, not trained again (same numbers)"
        )
    return trained


def _identities(suite: Suite, records: dict, plugins: SuitePlugins) -> dict:
    """The current identity of every task this run can judge: its methods' and those stored."""
    stored = sorted({key[3] for key in records if key[3] in plugins.selectors})
    return task_identities(suite, list(dict.fromkeys(list(suite.methods) + stored)), plugins)


def _prepare_store(
    store, identity, records, identities, taken: ReferenceTasks, decided: ResumePlan, metrics: dict
) -> None:
    """Record the suite and the declarations of every registered metric (``metrics``: by name),
    insert reference tasks, remove stale ones."""
    store.set_meta("suite_identity", identity)
    store.set_meta("metrics", [metric.as_dict() for metric in metrics.values()])
    if taken.tasks is not None and len(taken.tasks):
        # a reference task replaces a stored one only if that one is not current
        fresh = {
            k
            for k, rec in records.items()
            if identities.get((k[0], k[3])) is not None and rec["identity"] == identities[k[0], k[3]].digest
        }
        keys = list(taken.tasks[TASK_KEY].itertuples(index=False, name=None))
        new = [k not in fresh for k in keys]
        if any(new):
            wanted = taken.tasks[new]
            store.insert_tasks(wanted, taken.results.merge(wanted[TASK_KEY]))
        decided.keep |= set(keys)
    if decided.remove:
        store.remove_tasks([k for keys in decided.remove.values() for k in keys])


def _invocation(
    suite: Suite, options: RunOptions, identities: dict, decided: ResumePlan, taken, plugins: SuitePlugins
) -> dict:
    """The provenance of this invocation, stored with the results."""
    reference = options.reference
    return {
        "argv": list(options.argv if options.argv is not None else sys.argv),
        "suite": suite.to_dict(),
        "backend": options.backend_name,
        "backend_options": dict(options.backend_options),
        "jobs": options.jobs,
        "task_timeout": options.task_timeout,
        "task_memory": options.task_memory,
        "force": list(options.force),
        "versions": package_versions(),
        "environment": environment(
            method_code_hashes(dict.fromkeys(m for _, m in identities), plugins.selectors)
        ),
        "kernels": numeric_platform(),  # the workers inherit this process's environment
        "plugins": list(plugins.provenance),
        "identities": {f"{s}/{m}": i.digest for (s, m), i in identities.items()},
        "resume": decided.summary(),
        "reference": None if reference is None else {"label": reference.label, "notes": list(taken.notes)},
        "host": platform.node(),
        "pid": os.getpid(),
    }


def _dispatch(entries: list[SuiteRun], executor, settings: dict, options: RunOptions) -> None:
    """Hand every suite's jobs to the backend in one call, longest first, and store what comes
    back into each job's own suite (a worker may commit itself). ``settings``: the backend's
    options, parsed (:meth:`oodfs.contract.extensions.Backend.parse_options`)."""
    pools = ((e.suite, e.todo) for e in entries)
    ordered = [
        (entries[i], w, job) for i, w, job in pool_order(pools, options.jobs, entries[0].plugins.selectors)
    ]
    owner, jobs, job_weights, labels, calls = {}, [], {}, {}, []
    contexts = {
        id(e): WorkerContext(
            e.suite,
            str(e.out_dir) if executor.commits_in_worker else None,
            tuple(options.plugin_modules),
            options.task_timeout,
            {k: v for k, v in e.identities.items() if k[1] in e.suite.methods},
            options.isolate,
            options.task_memory,
        )
        for e in entries
    }
    for index, (e, w, job) in enumerate(ordered):
        job = replace(job, index=index)
        owner[index], job_weights[index] = e, w
        labels[index] = e.label if len(entries) > 1 else ""
        jobs.append(job)
        calls.append((contexts[id(e)], job))
    settings = dict(settings)
    bar = Progress(
        jobs,
        job_weights,
        enabled=options.progress,
        interval=options.progress_interval,
        workers=min(options.jobs, len(jobs)),
        labels=labels,
    )
    if bar.enabled and executor.reports_progress:  # the jobs' messages, as they work (docs/PROTOCOL.md)
        settings["progress"] = bar.receive
    start = time.monotonic()
    try:
        for index, finished in executor.run(run_pool_job, calls, jobs=options.jobs, **settings):
            e = owner[index]
            for task in finished:
                if task.rows is not None:
                    ident = task.identity
                    e.store.commit_task(
                        task.key,
                        task.status,
                        task.error,
                        task.rows,
                        None if ident is None else ident.digest,
                        None if ident is None else ident.parts,
                    )
            e.ran.extend(finished)
            e.seconds = time.monotonic() - start
            bar.update(finished, job=index)
    except BaseException:
        bar.close(completed=False)
        raise
    bar.close()
    for e in entries:  # what the fits warned, one counted line per method and category
        for line in warning_notes(e.ran):
            e.options.notes(line)


def run_pool_job(context: WorkerContext, job) -> tuple[int, list]:
    """A job of a pool as a worker runs it (:func:`oodfs.run.jobs.run_job`), its results named by
    the job's place in the pool (which says whose store they go to)."""
    return job.index, run_job(context, job)
