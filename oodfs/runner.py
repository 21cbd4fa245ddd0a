"""Run a suite: data sets -> selectors (whole grid) -> metrics -> durable store.

A *job* is one training data set (setting, r_train, run): it draws the training, validation
and test data once, then evaluates every pending method on it. Each method is a *task*
committed to the store as soon as it finishes. All randomness is seeded from the task's own
coordinates (:func:`oodfs.seeds.derive_seed`), so results do not depend on the number of
workers, the backend or the order of execution.

Every grid point of every method is evaluated and stored; the model-selection rule
(:mod:`oodfs.selection`) is applied afterwards, so ``val``, ``oracle`` and ``default`` come
from the same fits and can be shown side by side.
"""
from __future__ import annotations

import json
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from .executors import run_calls
from .metrics import f1_at_k, rank_average, rmse_summary
from .plugins import registry
from .seeds import derive_seed
from .store import ResultStore, env_key
from .suite import Suite
from .validation import OodfsError

_VERSION_PACKAGES = ("oodfs", "numpy", "scipy", "scikit-learn", "torch", "xgboost", "pandas", "pluggy")


def package_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in _VERSION_PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            continue
    return versions


@dataclass
class DataSet:
    """The data of one job: training, validation and the test environments."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray | None
    y_val: np.ndarray | None
    tests: list[tuple[object, np.ndarray, np.ndarray]]  # (env id, X, y)
    stable_set: tuple[int, ...] | None


def make_dataset(suite: Suite, setting, r_train, run: int) -> DataSet:
    env_cls = registry().get("environment", suite.environment)
    env = env_cls(**setting.environment_params(run, suite.seed))
    s = suite.seed
    n_train = setting.n_train or suite.n_train  # a setting may override the suite's training size
    # one draw from the training environment, its tail held out for the `val` rule: i.i.d.
    # extra data for a synthetic environment, a random held-out part of a finite table
    X, y = env.sample(r_train, n_train + suite.n_val, derive_seed(s, setting.name, r_train, run, "train"))
    n_val = round(len(y) * suite.n_val / (n_train + suite.n_val))
    X_val = y_val = None
    if n_val:
        X, X_val, y, y_val = X[:-n_val], X[-n_val:], y[:-n_val], y[-n_val:]
    # test environments depend on the run, not on r_train: every r_train is tested on the same data
    tests = [
        (r_te, *env.sample(r_te, suite.n_test, derive_seed(s, setting.name, run, r_te, "test")))
        for r_te in suite.r_test
    ]
    stable = env.stable_set
    return DataSet(X, y, X_val, y_val, tests, None if stable is None else tuple(stable))


class DownstreamEvaluator:
    """Downstream regressor RMSEs per feature subset, trained once per subset per data set.

    Many grid points (and many methods) pick the same top-k features; the regressor for a
    subset is seeded from (data set, subset), so sharing it changes no number.
    """

    def __init__(self, data: DataSet, seed: int):
        self.data = data
        self.seed = seed
        self._cache: dict[tuple[int, ...], dict] = {}

    def evaluate(self, subsets) -> dict[tuple[int, ...], dict]:
        from .regressor import fit_downstream

        wanted = list(dict.fromkeys(tuple(sorted(int(j) for j in s)) for s in subsets))
        missing = [s for s in wanted if s not in self._cache]
        if missing:
            d = self.data
            models = fit_downstream(d.X_train, d.y_train, missing, self.seed)
            val = models.rmse(d.X_val, d.y_val) if d.X_val is not None else np.full(len(missing), np.nan)
            tests = np.column_stack([models.rmse(X, y) for _, X, y in d.tests])
            for i, s in enumerate(missing):
                self._cache[s] = {"val": float(val[i]), "test": tests[i]}
        return {s: self._cache[s] for s in wanted}


def _check_scores(method: str, scores, n_features: int) -> np.ndarray:
    scores = np.asarray(scores, dtype=float).ravel()
    if scores.shape != (n_features,):
        raise OodfsError(f"{method} returned {scores.size} scores for {n_features} features")
    if not np.all(np.isfinite(scores)):
        raise OodfsError(f"{method} produced a non-finite score")
    return scores


def evaluate_method(suite: Suite, setting, r_train, run: int, method: str, data: DataSet,
                    downstream: DownstreamEvaluator) -> list[dict]:
    """Fit every grid point of one method on one data set; rows of the long results table."""
    cls = registry().get("selector", method)
    points = cls.grid_points()
    default = cls.default_params()
    seed = derive_seed(suite.seed, setting.name, r_train, run, method)
    d = data.X_train.shape[1]
    k = min(suite.k, d)

    t0 = time.perf_counter()
    all_scores = cls.fit_grid(data.X_train, data.y_train, points, random_state=seed)
    fit_seconds = time.perf_counter() - t0
    if len(all_scores) != len(points):
        raise OodfsError(f"{method}.fit_grid returned {len(all_scores)} results for {len(points)} grid points")
    all_scores = [_check_scores(method, s, d) for s in all_scores]
    rankings = [np.argsort(-s, kind="stable") for s in all_scores]

    with_curve = method in suite.curve_methods and r_train in suite.curve_r_train
    subsets = [r[:k] for r in rankings]
    if with_curve:
        subsets += [r[:kk] for r in rankings for kk in range(1, d + 1)]
    t0 = time.perf_counter()
    rmses = downstream.evaluate(subsets)
    downstream_seconds = time.perf_counter() - t0

    rows = []
    for i, (point, scores, ranking) in enumerate(zip(points, all_scores, rankings)):
        metrics = {}
        if data.stable_set is not None:
            metrics["rank_avg"] = rank_average(scores, data.stable_set)
            metrics["f1"] = f1_at_k(scores, data.stable_set, k)
        top = rmses[tuple(sorted(ranking[:k]))]
        metrics["rmse_val"] = top["val"]
        metrics["rmse_mean"], metrics["rmse_std"] = rmse_summary(top["test"])
        for (r_te, _, _), value in zip(data.tests, top["test"]):
            metrics[f"rmse_env[{env_key(r_te)}]"] = float(value)
        if with_curve:
            for kk in range(1, d + 1):
                res = rmses[tuple(sorted(ranking[:kk]))]
                metrics[f"rmse_mean@{kk}"], metrics[f"rmse_std@{kk}"] = rmse_summary(res["test"])
                metrics[f"rmse_val@{kk}"] = res["val"]
        base = {
            "point": i,
            "params": json.dumps(point, sort_keys=True),
            "is_default": int(point == default or not cls.grid),
            "seed": seed,
            "scores": json.dumps([float(v) for v in scores]),  # full precision: json round-trips floats
            "fit_seconds": fit_seconds,
            "downstream_seconds": downstream_seconds,
        }
        rows += [dict(base, metric=name, value=float(value)) for name, value in metrics.items()]
    return rows


def run_job(suite: Suite, setting_name: str, r_train, run: int, methods: list[str], out_dir: str | None,
            plugin_modules: tuple[str, ...] = (), task_timeout: float | None = None) -> list[tuple]:
    """Evaluate ``methods`` on one data set (the worker's entry point).

    With ``out_dir`` each task is committed to the store as soon as it finishes and the
    return value is ``[(key, status, error, None)]``; with ``out_dir=None`` (a remote worker)
    the rows come back instead, ``[(key, status, error, rows)]``, for the caller to commit.
    """
    import torch

    torch.set_num_threads(1)  # one thread per worker: workers are the parallelism
    registry(plugin_modules)
    setting = next(s for s in suite.settings if s.name == setting_name)
    store = ResultStore(out_dir) if out_dir is not None else None
    versions = package_versions()
    common = {
        "suite": suite.name, "setting": setting.name, "r_train": env_key(r_train), "run": run,
        "oodfs_version": versions.get("oodfs", ""), "versions": json.dumps(versions, sort_keys=True),
    }
    finished = []

    def finish(method, status, error, rows):
        key = (setting.name, env_key(r_train), run, method)
        rows = [{**common, **r, "method": method, "status": status, "error": error} for r in rows]
        if store is not None:
            store.commit_task(key, status, error, rows)
        finished.append((key, status, error, None if store is not None else rows))

    try:
        t0 = time.perf_counter()
        data = make_dataset(suite, setting, r_train, run)
        common["data_seconds"] = time.perf_counter() - t0  # once per data set, shared by its tasks
    except Exception as exc:  # the data set itself failed: every task on it fails, recorded
        for method in methods:
            finish(method, "failed", _message(exc), [{}])
        return finished
    downstream = DownstreamEvaluator(data, derive_seed(suite.seed, setting.name, r_train, run, "downstream"))
    for method in methods:
        try:
            def evaluate(method=method):
                return evaluate_method(suite, setting, r_train, run, method, data, downstream)

            rows = evaluate() if not task_timeout else _call_with_timeout(evaluate, task_timeout, downstream)
            finish(method, "ok", None, rows)
        except Exception as exc:  # a failing plugin is recorded; the benchmark goes on
            finish(method, "failed", _message(exc), [{}])
    return finished


def _call_with_timeout(fn, timeout: float, downstream: DownstreamEvaluator):
    """Run ``fn`` in a forked child process; kill it past ``timeout`` seconds.

    Forking shares the data set copy-on-write; the child sends back its rows and the
    downstream RMSEs it computed, so later methods still reuse them. A crash of the child
    (e.g. a segfault in a plugin) is reported like an exception.
    """
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)

    def child():
        try:
            result = ("ok", fn(), downstream._cache)
        except BaseException as exc:  # noqa: BLE001 -- everything goes back to the parent
            result = ("error", _message(exc), None)
        sender.send(result)
        sender.close()

    process = ctx.Process(target=child)
    process.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            raise OodfsError(f"timed out after {timeout:g} s (--task-timeout)")
        try:
            kind, payload, cache = receiver.recv()
        except EOFError:
            raise OodfsError(f"the task's process died (exit code {process.exitcode})") from None
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receiver.close()
    if kind == "error":
        raise OodfsError(payload)
    downstream._cache.update(cache)
    return payload


def _message(exc: BaseException) -> str:
    if isinstance(exc, OodfsError):
        return str(exc)
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


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


def plan(suite: Suite, finished: set, workers: int = 1) -> list[tuple]:
    """Pending jobs: (setting name, r_train, run, [methods not yet finished]).

    A job is one data set with all its pending methods (drawn once, downstream fits shared
    between methods). With fewer data sets than workers, each method becomes a job of its own
    so that every worker has work; the numbers are the same either way (seeds come from the
    task's coordinates), only some data draws and downstream fits are repeated.
    """
    jobs = []
    for setting, r, run in suite.task_keys():
        pending = [m for m in suite.methods if (setting.name, env_key(r), run, m) not in finished]
        if pending:
            jobs.append((setting.name, r, run, pending))
    if len(jobs) < workers:
        jobs = [(setting, r, run, [m]) for setting, r, run, methods in jobs for m in methods]
    return jobs


_SUITE_IDENTITY = ("environment", "settings", "r_test", "n_train", "n_val", "n_test", "k", "seed")


def run_suite(suite: Suite, out_dir, *, jobs: int = 1, resume: bool = False,
              plugin_modules: tuple[str, ...] = (), progress: bool = True, argv=None,
              backend: str = "local", scheduler: str | None = None,
              task_timeout: float | None = None) -> ResultStore:
    """Run every pending task of ``suite`` into ``out_dir`` and return the store."""
    registry(plugin_modules)
    check_suite_plugins(suite)
    store = ResultStore(out_dir)
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
    env_cls = registry().get("environment", suite.environment)
    store.set_meta("feature_names", list(env_cls(**suite.settings[0].environment_params(0)).feature_names))
    store.add_invocation({
        "argv": list(argv if argv is not None else sys.argv),
        "suite": suite.to_dict(),
        "backend": backend, "jobs": jobs, "task_timeout": task_timeout,
        "versions": package_versions(),
        "plugins": [i.as_dict() for i in registry().all()],
        "host": platform.node(),
        "pid": os.getpid(),
    })
    todo = plan(suite, store.finished_tasks(), workers=jobs)
    bar = Progress(sum(len(job[3]) for job in todo), enabled=progress)
    # a remote (dask) worker returns its rows and this process commits them
    target = None if backend == "dask" else str(out_dir)
    calls = [(suite, *job, target, tuple(plugin_modules), task_timeout) for job in todo]
    for finished in run_calls(run_job, calls, backend=backend, jobs=jobs, scheduler=scheduler):
        for key, status, error, rows in finished:
            if rows is not None:
                store.commit_task(key, status, error, rows)
        bar.update(finished)
    bar.close()
    return store


class Progress:
    """A tqdm bar on a terminal; plain lines (one per finished data set) otherwise."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.done, self.failed = total, 0, 0
        self.enabled = enabled and total > 0
        self.start = time.perf_counter()
        self.bar = None
        if self.enabled and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit="task", dynamic_ncols=True)

    def update(self, finished) -> None:
        self.done += len(finished)
        self.failed += sum(status == "failed" for _, status, _, _ in finished)
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(len(finished))
            self.bar.set_postfix(failed=self.failed)
            return
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        setting, r_train, run, method = finished[0][0]
        what = method if len(finished) == 1 else f"{len(finished)} methods"
        print(f"[{self.done}/{self.total} tasks, {self.failed} failed] {setting} r_train={r_train} run={run}: "
              f"{what} done; elapsed {elapsed:.0f} s, ETA {eta:.0f} s", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
