"""Run a suite: plan the pending jobs, hand them to a backend, record what finishes.

What one job computes lives in :mod:`oodfs.jobs` (data set, fits, downstream, rows); where it
runs in :mod:`oodfs.executors`. All randomness is seeded from each task's own coordinates
(:func:`oodfs.seeds.derive_seed`), so results depend neither on the number of workers nor on
the backend nor on the order of execution. Every grid point of every method is evaluated and
stored; a model-selection rule (:mod:`oodfs.selection`) is applied when a report is made.
"""
from __future__ import annotations

import json
import os
import platform
import sys

from .executors import backend, run_calls
from .jobs import plan, run_job
from .plugins import registry
from .progress import Progress
from .provenance import package_versions
from .store import ResultStore
from .suite import Suite
from .validation import OodfsError

_SUITE_IDENTITY = ("environment", "settings", "r_test", "n_train", "n_val", "n_test", "k", "seed", "profile")


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
            raise OodfsError(f"unknown setting {name!r} for environment {suite.environment!r}; valid: {', '.join(valid_settings)}")
        env = env_cls(**s.environment_params(0))
        for e in suite.r_train + suite.r_test:
            env.check_env(e)


def run_suite(suite: Suite, out_dir, *, jobs: int = 1, resume: bool = False,
              plugin_modules: tuple[str, ...] = (), progress: bool = True, argv=None,
              backend_name: str = "local", scheduler: str | None = None,
              task_timeout: float | None = None, isolate: bool = True,
              retry_failed: bool = False) -> ResultStore:
    """Run every pending task of ``suite`` into ``out_dir`` and return the store.

    ``isolate``: fit each method in a forked child process, so that a plugin that crashes
    or exits is recorded as a failed task (``task_timeout`` needs it). ``retry_failed``:
    run the stored failed tasks again (implies ``resume``). One run writes a folder at a
    time (a second one is refused); a storage error stops the run (StorageError).
    """
    if task_timeout is not None and not isolate:
        raise OodfsError("--task-timeout needs each method fitted in its own process; drop --no-isolation")
    resume = resume or retry_failed
    registry(plugin_modules)
    check_suite_plugins(suite)
    executor = backend(backend_name)
    store = ResultStore(out_dir)
    store.check_output_folder()
    with store.lock():
        return _run_locked(suite, store, out_dir, executor, jobs=jobs, resume=resume, plugin_modules=plugin_modules,
                           progress=progress, argv=argv, backend_name=backend_name, scheduler=scheduler,
                           task_timeout=task_timeout, isolate=isolate, retry_failed=retry_failed)


def _run_locked(suite: Suite, store: ResultStore, out_dir, executor, *, jobs, resume, plugin_modules, progress, argv,
                backend_name, scheduler, task_timeout, isolate, retry_failed) -> ResultStore:
    identity = {k: v for k, v in suite.to_dict().items() if k in _SUITE_IDENTITY}
    identity = json.loads(json.dumps(identity))  # tuples -> lists, as stored
    if store.exists():
        if not resume:
            raise OodfsError(f"{out_dir} already holds results; pass --resume to continue them or choose another --out")
        previous = store.get_meta("suite_identity")
        if previous is not None and previous != identity:
            diff = sorted(k for k in identity if previous.get(k) != identity.get(k))
            raise OodfsError(f"cannot resume {out_dir}: it was run with different {', '.join(diff)}")
    store.set_meta("suite_identity", identity)
    store.set_meta("metrics", [info.cls.as_dict() for info in registry().entries("metric").values()])
    store.add_invocation({
        "argv": list(argv if argv is not None else sys.argv),
        "suite": suite.to_dict(),
        "backend": backend_name, "jobs": jobs, "task_timeout": task_timeout,
        "versions": package_versions(),
        "plugins": [i.as_dict() for i in registry().all()],
        "host": platform.node(),
        "pid": os.getpid(),
    })
    todo = plan(suite, store.finished_tasks(failed=not retry_failed), workers=jobs)
    bar = Progress(sum(len(job.methods) for job in todo), enabled=progress)
    target = str(out_dir) if executor.COMMITS_IN_WORKER else None
    calls = [(suite, job, target, tuple(plugin_modules), task_timeout, isolate) for job in todo]
    for finished in run_calls(run_job, calls, backend_name=backend_name, jobs=jobs, scheduler=scheduler):
        for task in finished:
            if task.rows is not None:
                store.commit_task(task.key, task.status, task.error, task.rows)
        bar.update(finished)
    bar.close()
    return store
