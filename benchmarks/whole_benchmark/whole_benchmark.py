"""The whole benchmark: every shipped suite, its cost by suite, method and part, and its wall time.

    python benchmarks/whole_benchmark/whole_benchmark.py estimate [--recorded synthetic@paper=DIR ...] \
        [--jobs 2]
    python benchmarks/whole_benchmark/whole_benchmark.py run --root ROOT [--jobs 2] [--only a,b@paper] \
        [--no-reuse]
    python benchmarks/whole_benchmark/whole_benchmark.py check --root ROOT  # estimate vs measured, run suites
    python benchmarks/whole_benchmark/whole_benchmark.py new-method --root ROOT --methods NAME \
        [--plugin MODULE] [--lanes 2] [--per-suite-process] [--figures] [--no-reference-subsets]

The whole benchmark is every suite shipped in ``oodfs/suites`` under the ``default`` profile, plus
``synthetic`` and ``svi`` under ``paper`` (``synthetic`` with the paper's ten methods, as
benchmarks/reproduction/REPRODUCTION.md runs it). See benchmarks/whole_benchmark/WHOLE_BENCHMARK.md for
what the figures say.

``estimate`` reads what each suite's recorded run stored, per task: ``fit_seconds`` (the whole grid
of one method on one data set) and ``downstream_seconds`` (the task's share of its data set's
downstream batch, per model). The record is a results folder given with ``--recorded`` (which also
stores ``data_seconds``), else the shipped reference (oodfs/run/reference). A reference does not
store the data draw's seconds: they are measured here by drawing one data set per setting. A
downstream model the suite declares but the record lacks is estimated by a ratio to a recorded
model (``--model-ratio mlp/logistic=DIR``: the ratio of their seconds on a folder holding both).
A record holding fewer data sets than the suite is extrapolated by the mean of the ones it holds.
The wall time at ``--jobs J`` is simulated as the runner schedules it: one job per data set (its
draw, every method's fit, the downstream batch), handed in order to whichever of J workers frees
first; plus a fixed overhead per suite (start, report), measured by ``check``.

``run`` runs every suite of the whole benchmark in one command into ROOT/<suite>-<profile> with
``oodfs bench --resume --jobs J`` (a suite already timed in ROOT/timings.json is skipped, so a
stopped run continues), timing each. With reuse (the default), ``synthetic`` under ``paper`` replays
the fits of the methods whose settings are the same under both profiles from the ``default`` run
instead of fitting them again (:func:`replaying`; same numbers, tests/test_whole_benchmark.py).
"""

from __future__ import annotations

import argparse
import heapq
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from tabulate import tabulate

from oodfs.run.reference import shipped_dir
from oodfs.run.suite import PAPER_METHODS, customise, load_suite, whole_benchmark

HERE = Path(__file__).resolve().parent
#: a suite's fixed cost beyond its jobs (start, leaderboard, figures): the synthetic grid's whole
#: command took 8:47 by /usr/bin/time, its store's clock (first job to last task) 8.6 min
#: (docs/guide/results.md)
OVERHEAD_S = 11.0
FACTS = HERE / "whole_benchmark.json"
DATA_KEY = ["setting", "r_train", "run"]
TASK_KEY = [*DATA_KEY, "method"]


def whole() -> list[tuple[str, str]]:
    """(suite, profile) of every run of the whole benchmark (oodfs.run.suite.whole_benchmark, the
    list `oodfs bench --suite all` runs)."""
    return [(r.suite, r.profile) for r in whole_benchmark()]


def suite_of(name: str, profile: str):
    methods = next(r.methods for r in whole_benchmark() if (r.suite, r.profile) == (name, profile))
    return customise(load_suite(name), methods=methods, profile=profile)


def label(name: str, profile: str) -> str:
    return f"{name}@{profile}"


# -- what a recorded run stored ----------------------------------------------------------------------
@dataclass
class Record:
    """The seconds one recorded run of a suite stored, per data set (``jobs``) and per task."""

    label: str
    source: str
    tasks: pd.DataFrame  # TASK_KEY + fit_s
    downstream: pd.DataFrame  # DATA_KEY + model + downstream_s
    data: pd.DataFrame  # DATA_KEY + data_s
    notes: list[str] = field(default_factory=list)


def read_record(name: str, profile: str, recorded: dict[str, Path]) -> Record | None:
    columns = [*TASK_KEY, "downstream", "fit_seconds", "downstream_seconds"]
    key = label(name, profile)
    if key in recorded:
        from oodfs.results.store import load_results

        df = load_results(recorded[key])
        source = str(recorded[key])
        columns.append("data_seconds")
        df = df[columns]
    else:
        path = shipped_dir() / f"{name}-{profile}.parquet"
        if not path.is_file():
            return None
        df = pd.read_parquet(path, columns=columns)
        source = f"reference {path.name}"
    df = df.astype({c: str for c in DATA_KEY + ["method"]})
    df["downstream"] = df["downstream"].astype(object)
    tasks = df.drop_duplicates(TASK_KEY)[[*TASK_KEY, "fit_seconds"]].rename(columns={"fit_seconds": "fit_s"})
    tasks["fit_s"] = tasks["fit_s"].fillna(0.0)  # a failed task stores no time
    ds = df.dropna(subset=["downstream"]).drop_duplicates([*TASK_KEY, "downstream"])
    downstream = (
        ds.groupby([*DATA_KEY, "downstream"])["downstream_seconds"]
        .sum()
        .reset_index()
        .rename(columns={"downstream": "model", "downstream_seconds": "downstream_s"})
    )
    if "data_seconds" in df:
        data = (
            df.groupby(DATA_KEY)["data_seconds"]
            .max()  # tasks committed before the test draws record the training draw alone
            .reset_index()
            .rename(columns={"data_seconds": "data_s"})
        )
    else:
        data = tasks[DATA_KEY].drop_duplicates().assign(data_s=float("nan"))
    return Record(key, source, tasks, downstream, data)


def measured_draw_seconds(suite) -> dict[str, float]:
    """CPU seconds of this process to draw one data set of each setting (the first r_train, run 0),
    measured now: CPU time, not wall time, so that other processes on the machine do not count."""
    from oodfs.contract.registry import registry
    from oodfs.contract.task import DataKey
    from oodfs.run.dataset import make_dataset

    registry()
    out = {}
    for setting in suite.settings:
        key = DataKey(setting.name, suite.r_train[0], 0)
        make_dataset(suite, key)  # the table read and cached once, as a worker does
        t0 = time.process_time()
        make_dataset(suite, key).draw_tests()  # the test environments too (drawn when first read)
        out[setting.name] = time.process_time() - t0
    return out


def model_ratio(folder: Path, model: str, to: str) -> float:
    """Seconds of downstream ``model`` over those of ``to`` on the same data sets of a results folder."""
    rec = read_record("?", "?", {"?@?": folder})
    by = rec.downstream.groupby("model")["downstream_s"].sum()
    return float(by[model] / by[to])


# -- the cost of one suite ---------------------------------------------------------------------------
@dataclass
class Cost:
    label: str
    source: str
    data_sets: int
    tasks: int
    recorded_tasks: int
    data_s: float
    fit_s: dict  # method -> CPU s
    downstream_s: dict  # model -> CPU s
    job_s: list  # per data set, in the runner's order
    notes: list

    @property
    def cpu_s(self) -> float:
        return self.data_s + sum(self.fit_s.values()) + sum(self.downstream_s.values())


def suite_cost(name: str, profile: str, recorded: dict, ratios: dict) -> Cost:
    from oodfs.contract.task import env_key

    suite = suite_of(name, profile)
    keys = [(k.setting, env_key(k.r_train), str(k.run)) for k in suite.data_keys()]
    tasks_in_suite = len(keys) * len(suite.methods)
    rec = read_record(name, profile, recorded)
    if rec is None:
        return Cost(label(name, profile), "no record", len(keys), tasks_in_suite, 0, 0.0, {}, {}, [], [])
    notes = []
    tasks = rec.tasks[rec.tasks["method"].isin(suite.methods)]
    missing = [m for m in suite.methods if m not in set(tasks["method"])]
    if missing:
        notes.append(f"not recorded, not counted: {', '.join(missing)}")
    data = rec.data.set_index(DATA_KEY)["data_s"]
    if data.isna().all():
        draw = measured_draw_seconds(suite)
        data = pd.Series({k: draw[k[0]] for k in keys})
        notes.append("data draws: CPU s timed now")
    # per data set and model: the recorded downstream seconds, a missing model by its ratio to another
    per_model = rec.downstream.pivot_table(
        index=DATA_KEY, columns="model", values="downstream_s", aggfunc="sum"
    )
    for model in suite.downstream:
        if model in per_model:
            continue
        ratio = next(((to, r) for (m, to), r in ratios.items() if m == model and to in per_model), None)
        if ratio is None:
            notes.append(f"{model} downstream not recorded, not counted")
            continue
        per_model[model] = ratio[1] * per_model[ratio[0]]
        notes.append(f"{model} downstream not recorded: {ratio[1]:.2f} x {ratio[0]}'s (measured ratio)")
    per_model = per_model[[m for m in suite.downstream if m in per_model]].fillna(0.0)
    fit = tasks.groupby(DATA_KEY)["fit_s"].sum()
    done = [k for k in keys if k in fit.index]
    per_model = per_model.reindex(done).fillna(0.0)  # a data set whose tasks all failed trained none
    job = [float(data.get(k, data.mean()) + fit[k] + per_model.loc[k].sum()) for k in done]
    scale = len(keys) / max(len(done), 1)
    if len(done) < len(keys):
        notes.append(f"{len(done)} of {len(keys)} data sets recorded: the others at their mean")
        job += [sum(job) / max(len(job), 1)] * (len(keys) - len(done))
    return Cost(
        label(name, profile),
        rec.source,
        len(keys),
        tasks_in_suite,
        len(tasks),
        float(data.reindex(keys).fillna(data.mean()).sum()),
        (tasks.groupby("method")["fit_s"].sum() * scale).to_dict(),
        (per_model.sum() * scale).to_dict(),
        job,
        notes,
    )


def makespan(job_s: list, workers: int) -> float:
    """The runner's schedule: each job, in order, to the first worker that is free."""
    free = [0.0] * workers
    for s in job_s:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free)


def lanes(suite_s: list, workers: int) -> float:
    """Whole suites on ``workers`` lanes of one job each, longest first: the longest lane."""
    return makespan(sorted(suite_s, reverse=True), workers)


# -- running it ----------------------------------------------------------------------------------------
def reusable_methods(methods, profile: str, base: str = "default") -> list[str]:
    """Methods whose settings under ``profile`` are those under ``base``: on the same data (the
    data draw does not depend on the profile) their fits are the same, so a run under ``profile``
    may replay them from a run under ``base``."""
    from oodfs.contract.registry import registry

    out = []
    for m in methods:
        cls = registry().get("selector", m)
        defaults = cls().get_params(deep=False)
        if {**defaults, **cls.profiles.get(profile, {})} == {**defaults, **cls.profiles.get(base, {})}:
            out.append(m)
    return out


def run_whole(root: Path, jobs: int, only=None, reuse: bool = True) -> dict:
    """Run every suite of the whole benchmark (or ``only`` those named) into ROOT, one after the
    other, each with ``oodfs bench --jobs JOBS --resume``; returns (and keeps in ROOT/timings.json)
    each suite's wall seconds. A suite already timed there is not run again."""
    import os

    root.mkdir(parents=True, exist_ok=True)
    timings_path = root / "timings.json"
    timings = json.loads(timings_path.read_text()) if timings_path.exists() else {}
    for name, profile in whole():
        key = label(name, profile)
        if (only and key not in only and name not in only) or key in timings:
            continue
        suite = suite_of(name, profile)
        out = root / f"{name}-{profile}"
        cmd = ["oodfs", "bench", "--suite", name, "--profile", profile, "--jobs", str(jobs)]
        cmd += ["--out", str(out), "--quiet", "--resume"]
        if (name, profile) == ("synthetic", "paper"):  # the paper's ten methods (REPRODUCTION.md)
            cmd += ["--methods", ",".join(PAPER_METHODS)]
        env, note = dict(os.environ), ""
        base = root / f"{name}-default"
        if reuse and profile != "default" and (base / "results.sqlite").exists():
            methods = reusable_methods(suite.methods, profile)
            env["OODFS_REPLAY_FITS"] = json.dumps({"folder": str(base), "methods": methods})
            cmd += ["--plugin", str(HERE / "replay_fits.py")]
            note = f"fits of {', '.join(methods)} replayed from {base.name}"
        print(f"{key}: running{' (' + note + ')' if note else ''}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - t0
        timings[key] = {"wall_s": seconds, "jobs": jobs, "note": note}
        timings_path.write_text(json.dumps(timings, indent=1))
        print(f"{key}: {seconds:.0f} s", file=sys.stderr, flush=True)
    return timings


def against_references(
    root: Path,
    methods: str,
    plugins,
    jobs: int,
    only=None,
    one_process: bool = True,
    figures: bool = False,
    reference_subsets: bool = True,
    lanes: int = 1,
) -> dict:
    """A new method against every suite's shipped reference, in one command: for each shipped
    reference, ``oodfs bench --suite S --profile P --methods METHODS --reference`` (the other methods'
    rows copied from the reference, only METHODS fitted; a subset the reference already trained on
    the same data set is taken from it, not trained again), timed; each suite's wall and CPU seconds
    go to ROOT/new-method.json.

    ``one_process`` (the default): every suite runs inside a long-lived process (the use case
    :func:`oodfs.run.bench.run_bench`), so oodfs, torch and the plugins are imported once; each folder
    is what the command alone writes (its invocation records that command). ``lanes``: that many
    such processes side by side, each taking the next suite (largest reference first) and running it with
    ``--jobs max(1, jobs // lanes)``: a suite's own serial work (copying the reference into its store,
    reading it back, its leaderboards) then overlaps another suite's, where one process with
    ``--jobs 2`` leaves a core idle. Without ``one_process``, one ``oodfs bench`` process per suite,
    one after the other (the path before). ``figures``: draw each suite's figures (`oodfs plot DIR`
    draws them later)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "new-method.json"
    timings = json.loads(path.read_text()) if path.exists() else {}
    per_suite_jobs = max(1, jobs // lanes) if one_process else jobs
    commands = []
    for ref in available_references():
        name, profile = ref.rsplit("-", 1)
        key = label(name, profile)
        if (only and key not in only and name not in only) or key in timings:
            continue
        unable = unable_methods(name, profile, methods, plugins)
        if unable:  # e.g. a regression-only method and a binary suite: nothing to run there
            print(f"{key}: skipped ({unable})", file=sys.stderr, flush=True)
            continue
        argv = ["bench", "--suite", name, "--profile", profile, "--methods", methods, "--reference"]
        argv += ["--jobs", str(per_suite_jobs), "--out", str(root / ref), "--quiet", "--resume"]
        options = dict(suite=name, profile=profile, methods=methods_of(methods), reference="")
        options |= dict(jobs=per_suite_jobs, out=str(root / ref), resume=True)
        models = reference_models(ref)
        if models != list(suite_of(name, profile).downstream):  # else every method would be rerun
            argv += ["--downstream", ",".join(models)]
            options["downstream"] = tuple(models)
        argv += [] if figures else ["--no-figures"]
        argv += [] if reference_subsets else ["--no-reference-subsets"]
        options |= dict(figures=figures, reference_subsets=reference_subsets, plugins=tuple(plugins or ()))
        for plugin in plugins or ():
            argv += ["--plugin", plugin]
        # the command line (what a separate process runs, and what the folder's invocation records)
        # and the same run as the use case's options (what a process that runs it in-process takes)
        commands.append((key, argv, options))

    def done(key: str, timing: dict) -> None:
        timings[key] = {**timing, "jobs": per_suite_jobs, "one_process": one_process, "lanes": lanes}
        path.write_text(json.dumps(timings, indent=1))
        print(f"{key}: {timing['wall_s']:.0f} s", file=sys.stderr, flush=True)

    if not one_process:
        for key, argv, _ in commands:
            done(key, _timed_subprocess(argv))
    elif lanes == 1:
        for key, argv, options in commands:
            done(key, run_in_process(argv, options))
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # spawn: a fresh interpreter per lane (no forked copy of this process's threads or pools)
        with ProcessPoolExecutor(lanes, mp_context=multiprocessing.get_context("spawn")) as pool:
            running = {pool.submit(run_in_process, argv, options): key for key, argv, options in commands}
            try:
                for future in as_completed(running):
                    done(running[future], future.result())
            except BaseException:  # a suite failed (or Ctrl-C): start no other; timed ones are kept
                pool.shutdown(cancel_futures=True)
                raise
    return timings


def available_references() -> list[str]:
    """The shipped references, largest first (by the size of their stored rows: a suite's serial
    work grows with it), so that lanes end together rather than on one long suite."""
    from oodfs.run.reference import available

    return sorted(available(), key=lambda ref: -(shipped_dir() / f"{ref}.parquet").stat().st_size)


def run_in_process(argv: list[str], options: dict) -> dict:
    """One ``oodfs bench`` run inside this process, timed: ``options`` (fields of
    :class:`oodfs.run.bench.BenchOptions`) given to the use case :func:`oodfs.run.bench.run_bench`,
    ``argv`` the same run's command line, which its folder's invocation records. Wall seconds and
    CPU seconds (this process's, its workers' and their children's). Its leaderboard is in its
    folder."""
    from oodfs.run.bench import run_bench
    from oodfs.validation import OodfsError

    quiet = dict(progress=False, notes=lambda line: None, inform=lambda line: None, show=None)
    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    try:
        status = run_bench(**options, **quiet, argv=("oodfs", *argv)).status
    except OodfsError as exc:
        raise SystemExit(f"oodfs {' '.join(argv)}: {exc}") from None
    if status != 0:
        raise SystemExit(f"oodfs {' '.join(argv)}: exited with status {status}")
    return {"wall_s": time.perf_counter() - t0, "cpu_s": _cpu_seconds() - cpu0}


def methods_of(text: str) -> tuple[str, ...]:
    """``--methods``' comma list as the use case takes it (as the command reads it: blanks dropped)."""
    return tuple(m.strip() for m in text.split(",") if m.strip())


def _timed_subprocess(argv: list[str]) -> dict:
    import os

    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    subprocess.run(["oodfs", *argv], check=True, stdout=subprocess.DEVNULL, env=dict(os.environ))
    return {"wall_s": time.perf_counter() - t0, "cpu_s": _cpu_seconds() - cpu0}


def unable_methods(name: str, profile: str, methods: str, plugins) -> str:
    """Which of ``methods`` cannot handle the suite's task type (its environment's), as one phrase,
    or "" when all can."""
    from oodfs.contract.registry import registry
    from oodfs.run.suite import with_task

    registry(tuple(plugins or ()))
    suite, _ = with_task(suite_of(name, profile), registry())
    cannot = [m for m in methods.split(",") if not registry().get("selector", m).handles(suite.task)]
    return f"{', '.join(cannot)} cannot handle its {suite.task} target" if cannot else ""


def reference_models(ref: str) -> list[str]:
    """The downstream models a shipped reference was made with (``<suite>-<profile>``): a suite
    declaring others (the real binary suites declare `logistic` and `mlp`, their references hold
    `logistic`) is run with the reference's, as docs/PROTOCOL.md section 16 says, or `--reference`
    takes none of its methods."""
    from oodfs.contract.downstream import DEFAULT_MODEL

    meta = json.loads((shipped_dir() / f"{ref}.json").read_text())
    return list(meta["suite_identity"].get("downstream", [DEFAULT_MODEL]))


def _cpu_seconds() -> float:
    """CPU seconds (user + system) of this process, of its children that ended, and of every process
    still alive under it (the one-process path's workers live until it exits) with their own
    ended children (psutil)."""
    import resource

    import psutil

    me, ended = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + ended.ru_utime + ended.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:  # ended meanwhile: counted with its parent's ended children
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


# -- estimate, check, report ------------------------------------------------------------------------
def estimate(recorded: dict, ratios: dict, jobs: int) -> list[dict]:
    out = []
    for name, profile in whole():
        c = suite_cost(name, profile, recorded, ratios)
        out.append(
            {
                "suite": c.label,
                "source": c.source,
                "data_sets": c.data_sets,
                "tasks": c.tasks,
                "recorded_tasks": c.recorded_tasks,
                "data_s": c.data_s,
                "fit_s": c.fit_s,
                "downstream_s": c.downstream_s,
                "cpu_s": c.cpu_s,
                "makespan_s": makespan(c.job_s, jobs),
                "job_s": c.job_s,
                "notes": c.notes,
            }
        )
        print(
            f"{c.label}: {c.cpu_s:.0f} CPU s, {out[-1]['makespan_s']:.0f} s at --jobs {jobs}", file=sys.stderr
        )
    return out


def check(root: Path, jobs: int) -> list[dict]:
    """For each suite run in ROOT: its measured wall time, the wall time estimated from its shipped
    reference, and the one simulated from the seconds the run itself stored (which isolates the
    schedule model and the fixed overhead from the difference in machine load)."""
    timings = json.loads((root / "timings.json").read_text())
    out = []
    for key, t in timings.items():
        name, profile = key.split("@")
        own = suite_cost(name, profile, {key: root / f"{name}-{profile}"}, {})
        ref = suite_cost(name, profile, {}, {})
        out.append(
            {
                "suite": key,
                "jobs": t["jobs"],
                "measured_wall_s": t["wall_s"],
                "own_cpu_s": own.cpu_s,
                "own_makespan_s": makespan(own.job_s, t["jobs"]),
                "reference_cpu_s": ref.cpu_s,
                "reference_makespan_s": makespan(ref.job_s, t["jobs"]),
                "note": t.get("note", ""),
            }
        )
    return out


def cuts(facts: dict) -> list[str]:
    """What the cuts that change no number would save, projected from the estimate."""
    est, jobs = facts["estimate"], facts["jobs"]
    overhead = OVERHEAD_S
    counted = [e for e in est if e["cpu_s"]]
    sequential = sum(e["makespan_s"] + overhead for e in counted)
    reuse = 0.0
    for e in counted:
        name, profile = e["suite"].split("@")
        if profile != "default":
            reuse += sum(e["fit_s"].get(m, 0.0) for m in reusable_methods(list(e["fit_s"]), profile))
    pooled_jobs = [s for e in counted for s in e.get("job_s", [])]
    pooled = makespan(sorted(pooled_jobs, reverse=True), jobs) + overhead * len(counted) / jobs
    total = sum(e["cpu_s"] for e in counted)
    rows = [
        ["as today: suite after suite, each with --jobs 2", f"{total:.0f}", _min(sequential), ""],
        [
            "reuse: the paper profile replays the fits of the methods whose settings both profiles share",
            f"{total - reuse:.0f}",
            _min(sequential - reuse / jobs),
            f"-{reuse:.0f} CPU s",
        ],
        [
            "one pool: every data set of every suite on the same workers, longest first",
            f"{total:.0f}",
            _min(pooled),
            "",
        ],
        [
            "both",
            f"{total - reuse:.0f}",
            _min(pooled - reuse / jobs),
            "",
        ],
    ]
    headers = ["schedule", "CPU s", f"wall min (--jobs {jobs})", "saves"]
    return [
        "### Cuts that change no number, projected",
        "",
        tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True),
        "",
    ]


def check_walls(walls: dict, jobs: int) -> list[dict]:
    """The estimate against wall times recorded when the shipped references were made (``walls``:
    suite -> wall seconds of its ``oodfs bench --jobs JOBS`` run): the same run's stored seconds,
    scheduled as :func:`makespan` does, only the downstream models it trained."""
    out = []
    for name, wall in walls.items():
        c = suite_cost(name, "default", {}, {})
        out.append(
            {
                "suite": label(name, "default"),
                "measured_wall_s": wall,
                "estimated_s": makespan(c.job_s, jobs) + OVERHEAD_S,
            }
        )
    return out


def _min(s: float) -> str:
    return f"{s / 60:.1f}"


def report(facts: dict) -> str:
    est, jobs = facts["estimate"], facts["jobs"]
    checks = facts.get("checks", [])
    overhead = OVERHEAD_S
    lines = []
    rows, total_cpu, total_wall = [], 0.0, 0.0
    for e in sorted(est, key=lambda e: -e["cpu_s"]):
        wall = e["makespan_s"] + overhead if e["cpu_s"] else 0.0
        total_cpu += e["cpu_s"]
        total_wall += wall
        rows.append(
            [
                e["suite"],
                e["source"].replace("reference ", "ref. "),
                e["data_sets"],
                e["tasks"],
                f"{e['data_s']:.0f}",
                f"{sum(e['fit_s'].values()):.0f}",
                f"{sum(e['downstream_s'].values()):.0f}",
                f"{e['cpu_s']:.0f}",
                _min(wall),
                "; ".join(e["notes"]),
            ]
        )
    rows.append(
        [
            "**total**",
            "",
            sum(e["data_sets"] for e in est),
            sum(e["tasks"] for e in est),
            "",
            "",
            "",
            f"**{total_cpu:.0f}**",
            f"**{_min(total_wall)}**",
            "",
        ]
    )
    headers = [
        "suite@profile",
        "record",
        "data sets",
        "tasks",
        "data s",
        "fit s",
        "downstream s",
        "CPU s",
        f"wall min (--jobs {jobs})",
        "notes",
    ]
    lines += [
        "### By suite",
        "",
        tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True),
        "",
    ]
    # by method and part
    fit, ds = {}, {}
    for e in est:
        for m, v in e["fit_s"].items():
            fit[m] = fit.get(m, 0.0) + v
        for m, v in e["downstream_s"].items():
            ds[m] = ds.get(m, 0.0) + v
    data = sum(e["data_s"] for e in est)
    parts = [("data draws", data), ("fits (every method, whole grids)", sum(fit.values()))]
    parts += [(f"downstream {m}", v) for m, v in sorted(ds.items(), key=lambda x: -x[1])]
    rows = [[p, f"{v:.0f}", f"{100 * v / total_cpu:.1f} %"] for p, v in parts]
    lines += [
        "### By part",
        "",
        tabulate(rows, headers=["part", "CPU s", "share"], tablefmt="github", disable_numparse=True),
        "",
    ]
    rows = []
    for m, v in sorted(fit.items(), key=lambda x: -x[1]):
        where = sorted(((e["fit_s"].get(m, 0.0), e["suite"]) for e in est), reverse=True)[:3]
        rows.append(
            [
                m,
                f"{v:.0f}",
                f"{100 * v / total_cpu:.1f} %",
                ", ".join(f"{s} {x:.0f}" for x, s in where if x >= 0.5),
            ]
        )
    lines += [
        "### Fits by method",
        "",
        tabulate(
            rows,
            headers=["method", "fit CPU s", "share of all", "largest suites (s)"],
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
    ]
    lines += cuts(facts)
    if checks:
        rows = []
        for c in checks:
            ref = c["reference_makespan_s"] + overhead
            rows.append(
                [
                    c["suite"],
                    c["jobs"],
                    f"{c['measured_wall_s']:.0f}",
                    f"{c['own_makespan_s'] + overhead:.0f}",
                    f"{ref:.0f}",
                    f"{c['measured_wall_s'] / ref:.1f}",
                    f"{c['own_cpu_s'] / c['reference_cpu_s']:.1f}",
                    c["note"],
                ]
            )
        headers = [
            "suite",
            "--jobs",
            "measured wall s",
            "simulated from the run's own stored s",
            "estimated from the reference",
            "measured / estimated",
            "worker s: run / reference",
            "note",
        ]
        lines += [
            "### The estimate against runs made now",
            "",
            tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True),
            "",
        ]
    if facts.get("wall_checks"):
        rows = [
            [
                c["suite"],
                f"{c['measured_wall_s']:.0f}",
                f"{c['estimated_s']:.0f}",
                f"{c['measured_wall_s'] / c['estimated_s']:.2f}",
            ]
            for c in facts["wall_checks"]
        ]
        ratios = sorted(c["measured_wall_s"] / c["estimated_s"] for c in facts["wall_checks"])
        lines += [
            "### The estimate against the runs that made the references",
            "",
            tabulate(
                rows,
                headers=["suite", "measured wall s", "estimated s", "measured / estimated"],
                tablefmt="github",
                disable_numparse=True,
            ),
            "",
            f"Median ratio {ratios[len(ratios) // 2]:.2f} (range {ratios[0]:.2f}-{ratios[-1]:.2f}).",
            "",
        ]
    return "\n".join(lines)


BEGIN, END = "<!-- whole_benchmark.py: begin -->", "<!-- whole_benchmark.py: end -->"


def write_report(facts: dict, path: Path = HERE / "WHOLE_BENCHMARK.md") -> None:
    """Replace the generated part of WHOLE_BENCHMARK.md (between the markers) with the tables."""
    text = path.read_text() if path.exists() else f"# The whole benchmark\n\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    path.write_text(f"{head}{BEGIN}\n{report(facts)}\n{END}{tail}")


def parse_pairs(items) -> dict:
    out = {}
    for item in items or ():
        key, _, value = item.partition("=")
        out[key] = Path(value)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=("estimate", "run", "check", "report", "new-method"))
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--root", type=Path, help="run/check: the folder of the whole benchmark's runs")
    p.add_argument(
        "--recorded",
        action="append",
        metavar="SUITE@PROFILE=DIR",
        help="estimate: a results folder recording a suite (instead of its shipped reference)",
    )
    p.add_argument(
        "--model-ratio",
        action="append",
        metavar="MODEL/TO=DIR",
        help="estimate: a downstream model's seconds over another's, from a folder holding both",
    )
    p.add_argument("--only", help="run: these suites only (name or name@profile, comma-separated)")
    p.add_argument("--methods", help="new-method: the method(s) to run against every shipped reference")
    p.add_argument("--plugin", action="append", help="new-method: a plugin module (oodfs bench --plugin)")
    p.add_argument(
        "--walls", type=Path, help="check: JSON of suite -> wall s of the runs that made the references"
    )
    p.add_argument("--no-reuse", action="store_true", help="run: fit every method under every profile")
    p.add_argument(
        "--per-suite-process",
        action="store_true",
        help="new-method: one `oodfs bench` process per suite (the path before), not all in this one",
    )
    p.add_argument("--figures", action="store_true", help="new-method: draw each suite's figures too")
    p.add_argument(
        "--lanes",
        type=int,
        default=2,
        help="new-method: suites run side by side in this many processes, each with --jobs JOBS/LANES",
    )
    p.add_argument(
        "--no-reference-subsets",
        action="store_true",
        help="new-method: train every subset (oodfs bench --no-reference-subsets)",
    )
    args = p.parse_args(argv)
    facts = json.loads(FACTS.read_text()) if FACTS.exists() else {"jobs": args.jobs}
    if args.command == "estimate":
        ratios = {}
        for key, folder in parse_pairs(args.model_ratio).items():
            model, _, to = key.partition("/")
            ratios[(model, to)] = model_ratio(folder, model, to)
        facts.update(
            jobs=args.jobs,
            estimate=estimate(parse_pairs(args.recorded), ratios, args.jobs),
            recorded={k: str(v) for k, v in parse_pairs(args.recorded).items()},
            ratios={f"{m}/{t}": r for (m, t), r in ratios.items()},
        )
    elif args.command == "run":
        run_whole(args.root, args.jobs, set(args.only.split(",")) if args.only else None, not args.no_reuse)
        return 0
    elif args.command == "new-method":
        only = set(args.only.split(",")) if args.only else None
        against_references(
            args.root,
            args.methods,
            args.plugin,
            args.jobs,
            only,
            one_process=not args.per_suite_process,
            figures=args.figures,
            reference_subsets=not args.no_reference_subsets,
            lanes=args.lanes,
        )
        return 0
    elif args.command == "check":
        if args.root is not None:
            facts["checks"] = check(args.root, args.jobs)
        if args.walls is not None:
            facts["wall_checks"] = check_walls(json.loads(args.walls.read_text()), args.jobs)
        if args.root is not None and (args.root / "new-method.json").exists():
            facts["new_method"] = json.loads((args.root / "new-method.json").read_text())
    FACTS.write_text(json.dumps(facts, indent=1, default=float))
    write_report(facts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
