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

import os
import platform
import sys
from collections import defaultdict
from dataclasses import dataclass, field, replace

from oodfs.contract.registry import registry
from oodfs.contract.task import TASK_KEY
from oodfs.results.identity import combined_identity, explain, identity_conflicts
from oodfs.results.provenance import environment, package_versions
from oodfs.results.store import ResultStore
from oodfs.run.executors import backend, run_calls
from oodfs.run.identity import method_code_hashes, suite_identity, task_identities
from oodfs.run.jobs import plan, run_job
from oodfs.run.progress import Progress
from oodfs.run.suite import Suite, check_training_rows
from oodfs.validation import OodfsError


def check_suite_plugins(suite: Suite) -> None:
    """Fail early, with the list of valid names, on unknown methods/environments/settings."""
    reg = registry()
    env_cls = reg.get("environment", suite.environment)
    for method in suite.methods:
        reg.info("selector", method)
    valid_settings = getattr(env_cls, "settings", ())
    for s in suite.settings:
        name = s.params.get("setting")
        if valid_settings and name is not None and name not in valid_settings:
            raise OodfsError(
                f"unknown setting {name!r} for environment {suite.environment!r}; valid: {', '.join(valid_settings)}"
            )
        env = env_cls(**s.environment_params(0, suite.seed))
        for e in suite.r_train + suite.r_test:
            env.check_env(e)
        check_training_rows(suite, s, env)


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
    does not include, kept as they are.
    """

    keep: set = field(default_factory=set)
    rerun: dict = field(default_factory=lambda: defaultdict(list))
    remove: dict = field(default_factory=lambda: defaultdict(list))
    stale_kept: dict = field(default_factory=lambda: defaultdict(list))

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
    out = ResumePlan()
    selection = set(suite.task_keys())
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


def run_suite(
    suite: Suite,
    out_dir,
    *,
    jobs: int = 1,
    resume: bool = False,
    plugin_modules: tuple[str, ...] = (),
    progress: bool = True,
    argv=None,
    backend_name: str = "local",
    scheduler: str | None = None,
    task_timeout: float | None = None,
    force=(),
    retry_failed: bool = False,
    reference=None,
    reference_methods=None,
    notes=_print_note,
    isolate: bool = True,
) -> ResultStore:
    """Run every pending task of ``suite`` into ``out_dir`` and return the store.

    ``force``: methods rerun whatever is stored (implies ``resume`` of an existing store);
    ``retry_failed``: failed tasks are run again.
    ``reference``: an :class:`oodfs.run.reference.Reference`; the tasks of ``reference_methods``
    (default: the reference's) that are not in ``suite.methods`` are copied from it instead of
    run; a method the reference lacks, or holds under another identity, is run. ``notes``: called with each one-line note (what is rerun and
    why, what came from the reference). ``isolate``: fit each method in a forked child
    process, so that a plugin that crashes or exits is recorded as a failed task
    (``task_timeout`` needs it). One run writes a folder at a time (a second one is refused);
    a storage error stops the run (:class:`~oodfs.results.store.StorageError`).
    """
    if task_timeout is not None and not isolate:
        raise OodfsError("--task-timeout needs each method fitted in its own process; drop --no-isolation")
    resume = resume or retry_failed
    registry(plugin_modules)
    force = tuple(dict.fromkeys(force))
    unknown = [m for m in force if m not in suite.methods]
    if unknown:
        raise OodfsError(
            f"--force names {unknown[0]!r}, which this run does not include; its methods: "
            f"{', '.join(suite.methods)}"
        )
    check_suite_plugins(suite)
    executor = backend(backend_name)
    store = ResultStore(out_dir)
    store.check_output_folder()
    with store.lock():
        return _run_locked(
            suite,
            store,
            out_dir,
            executor,
            jobs=jobs,
            resume=resume,
            plugin_modules=plugin_modules,
            progress=progress,
            argv=argv,
            backend_name=backend_name,
            scheduler=scheduler,
            task_timeout=task_timeout,
            force=force,
            retry_failed=retry_failed,
            reference=reference,
            reference_methods=reference_methods,
            notes=notes,
            isolate=isolate,
        )


def _run_locked(
    suite: Suite,
    store: ResultStore,
    out_dir,
    executor,
    *,
    jobs,
    resume,
    plugin_modules,
    progress,
    argv,
    backend_name,
    scheduler,
    task_timeout,
    force,
    retry_failed,
    reference,
    reference_methods,
    notes,
    isolate,
) -> ResultStore:
    identity = suite_identity(suite)
    if store.exists():
        if not (resume or force):
            raise OodfsError(
                f"{out_dir} already holds results; pass --resume to continue them or choose another --out"
            )
        previous = store.get_meta("suite_identity")
        if previous is not None:
            conflicts = identity_conflicts(previous, identity)
            if conflicts:
                raise OodfsError(f"cannot resume {out_dir}: it was run with different {', '.join(conflicts)}")
            identity = combined_identity(previous, identity)  # settings added or left out are kept

    ref_tasks = ref_results = None
    ref_notes: list[str] = []
    if reference is not None:
        from oodfs.run.reference import take

        wanted = reference.methods if reference_methods is None else reference_methods
        ref_methods = [m for m in dict.fromkeys(wanted) if m not in suite.methods]
        ident = task_identities(suite, ref_methods)  # (an unknown method: one line naming the valid ones)
        ref_tasks, ref_results, refused = take(reference, suite, ref_methods, ident)
        for method, why in refused.items():
            ref_notes.append(f"{method}: not taken from the reference ({why}); running it")
        suite = replace(suite, methods=tuple(suite.methods) + tuple(refused))
        taken = [m for m in ref_methods if m not in refused]
        if taken:
            ref_notes.append(
                f"from the reference results {reference.label}: {', '.join(taken)} "
                f"({_count(len(ref_tasks), 'task')}, {_count(len(ref_results), 'row')}; "
                "column origin = 'reference')"
            )

    records = store.task_records()
    stored_methods = {key[3] for key in records}
    known = registry().entries("selector")
    judged = list(dict.fromkeys(list(suite.methods) + sorted(m for m in stored_methods if m in known)))
    identities = task_identities(suite, judged)
    decided = resume_plan(suite, records, identities, force, retry_failed)

    store.set_meta("suite_identity", identity)
    store.set_meta("metrics", [info.cls.as_dict() for info in registry().entries("metric").values()])
    if ref_tasks is not None and len(ref_tasks):
        # a reference task replaces a stored one only if that one is not current
        fresh = {
            k
            for k, rec in records.items()
            if identities.get((k[0], k[3])) is not None and rec["identity"] == identities[k[0], k[3]].digest
        }
        keys = list(ref_tasks[TASK_KEY].itertuples(index=False, name=None))
        new = [k not in fresh for k in keys]
        if any(new):
            wanted = ref_tasks[new]
            rows = ref_results.merge(wanted[TASK_KEY])
            store.insert_tasks(wanted, rows)
        decided.keep |= set(keys)
    if decided.remove:
        store.remove_tasks([k for keys in decided.remove.values() for k in keys])
    for line in ref_notes + decided.notes():
        notes(line)
    store.add_invocation(
        {
            "argv": list(argv if argv is not None else sys.argv),
            "suite": suite.to_dict(),
            "backend": backend_name,
            "jobs": jobs,
            "task_timeout": task_timeout,
            "force": list(force),
            "versions": package_versions(),
            "environment": environment(method_code_hashes(judged)),
            "plugins": [i.as_dict() for i in registry().all()],
            "identities": {f"{s}/{m}": i.digest for (s, m), i in identities.items()},
            "resume": decided.summary(),
            "reference": None if reference is None else {"label": reference.label, "notes": ref_notes},
            "host": platform.node(),
            "pid": os.getpid(),
        }
    )
    todo = plan(suite, decided.keep, workers=jobs)
    bar = Progress(sum(len(job.methods) for job in todo), enabled=progress)
    target = str(out_dir) if executor.COMMITS_IN_WORKER else None
    run_identities = {k: v for k, v in identities.items() if k[1] in suite.methods}
    calls = [
        (suite, job, target, tuple(plugin_modules), task_timeout, run_identities, isolate) for job in todo
    ]
    for finished in run_calls(run_job, calls, backend_name=backend_name, jobs=jobs, scheduler=scheduler):
        for task in finished:
            if task.rows is not None:
                ident = task.identity
                store.commit_task(
                    task.key,
                    task.status,
                    task.error,
                    task.rows,
                    None if ident is None else ident.digest,
                    None if ident is None else ident.parts,
                )
        bar.update(finished)
    bar.close()
    return store
