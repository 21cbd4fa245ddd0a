"""``oodfs bench``: run a suite, store its results, print the leaderboard, draw the figures."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from oodfs.commands.options import (
    MAX_SECONDS,
    add_jobs,
    add_selection,
    available_cpus,
    check_jobs,
    csv_list,
    folder,
    positive_int,
    positive_seconds,
    r_train_list,
    seed,
)
from oodfs.results.outputs import check_output
from oodfs.run.progress import DEFAULT_INTERVAL
from oodfs.validation import OodfsError, RunAborted, limit


def add_parser(sub) -> None:
    from oodfs.contract.registry import registry

    p = sub.add_parser(
        "bench",
        help="run a benchmark suite and print its leaderboard",
        description="Run every (setting, r_train, run, method, grid point) task of a suite, store the "
        "results in OUT/results.sqlite (+ results.parquet), write OUT/leaderboard.md and draw OUT/figures/. "
        "Several suites (--suite a,b or --suite all) run in one pool, each into OUT/SUITE as one suite "
        "would, and OUT/summary.md sums them up.",
    )
    p.add_argument(
        "--suite",
        required=True,
        help="suite name (e.g. synthetic) or path to a suite .toml; or several, comma-separated (e.g. "
        "auto,wage,synthetic), or all: the whole benchmark (every shipped suite under the default "
        "profile, plus synthetic and svi under paper). Several suites run as one pool of jobs, longest "
        "first, each into its own folder OUT/SUITE[-PROFILE][-quick], with OUT/summary.md across them; "
        "the other options apply to every suite (not --settings, --r-train or --reference FILE)",
    )
    p.add_argument("--quick", action="store_true", help="the suite's small version (fewer r_train and runs)")
    p.add_argument(
        "--tables-anywhere",
        action="store_true",
        help="let a suite file read tables outside its own folder (../, absolute paths, links out)",
    )
    p.add_argument(
        "--out",
        type=folder,
        default=None,
        help="output folder (default: results/SUITE[-PROFILE][-quick]); with several suites, the folder "
        "that holds theirs and summary.md (default: results)",
    )
    add_jobs(p, available_cpus())  # (one per CPU; a cluster elsewhere is not bound by the CPUs here)
    p.add_argument("--methods", type=csv_list, help="comma-separated selector names (default: the suite's)")
    p.add_argument("--settings", type=csv_list, help="comma-separated settings, e.g. mlp,poly")
    p.add_argument(
        "--r-train",
        type=r_train_list,
        help="comma-separated training bias rates, e.g. 1.5,2.5; join rates with '+' for one training set "
        "of several labelled environments, e.g. 1.5+2.0+3.0,2.5",
    )
    p.add_argument(
        "--runs",
        type=positive_int,
        help=f"runs per (setting, r_train) (at most {limit('runs')}, the limit runs of OODFS_LIMITS)",
    )
    p.add_argument(
        "--seed", type=seed, help="base seed of the whole suite, 0 to 2**32-1 (default: the suite's, 0)"
    )
    add_selection(p)
    from oodfs.contract.profiles import PROFILES

    p.add_argument(
        "--profile",
        choices=list(PROFILES),
        help="settings outside the grids: "
        + "; ".join(f"{k}: {v}" for k, v in PROFILES.items())
        + " (default: the suite's, usually default; see docs/PROTOCOL.md)",
    )
    p.add_argument(
        "--downstream",
        type=csv_list,
        metavar="MODEL[,MODEL]",
        help="the models trained on each selected subset, each on the same fits (registered downstream "
        "models: `oodfs plugins`; built in: mlp, ridge, gbm, and logistic for a binary target; default: "
        "the suite's, mlp for the synthetic suites). The leaderboard printed and leaderboard.md show the "
        "first model; each other model has its leaderboard-MODEL.md, and `oodfs leaderboard DIR "
        "--downstream MODEL` prints it",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in OUT: skip tasks stored with the current identity (method code, version, "
        "grid, profile, data); rerun the others, replacing their rows, and say why",
    )
    p.add_argument(
        "--force",
        type=csv_list,
        default=[],
        metavar="METHOD[,METHOD]",
        help="rerun every task of these methods, replacing their stored rows (implies --resume)",
    )
    p.add_argument(
        "--reference",
        nargs="?",
        const="",
        default=None,
        metavar="FILE",
        help="run only --methods and take every other method of the suite from the reference results "
        "shipped with oodfs (or from FILE, a reference .parquet); a method whose code, version, grid, "
        "profile or data differ from the reference's is run instead",
    )
    p.add_argument(
        "--no-reference-subsets",
        action="store_true",
        help="with --reference: train every feature subset the run needs, also those the reference "
        "already trained on the same data set with the same downstream models (by default their stored "
        "scores are taken: the same numbers, docs/PROTOCOL.md section 6)",
    )
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="as --resume, and run the stored failed tasks again (each replaces its failure once it ends)",
    )
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="register an unpackaged plugin module (dotted name or .py file) for this run; repeatable",
    )
    backends = registry().entries("backend")
    p.add_argument(
        "--backend",
        default="local",
        metavar="NAME",
        help="where the jobs run: "
        + "; ".join(f"{name}: {info.description}" for name, info in backends.items())
        + " (`oodfs plugins` lists the backends and their options)",
    )
    p.add_argument(
        "--backend-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an option of the backend, repeatable: "
        + "; ".join(
            f"{name}: " + ", ".join(o.name for o in info.cls.options)
            for name, info in backends.items()
            if info.cls.options
        ),
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --backend dask: address of an existing scheduler, the same as --backend-option "
        "scheduler=ADDRESS (default: start a LocalCluster of --jobs workers)",
    )
    p.add_argument(
        "--task-timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="record a method whose fit runs longer than this on one data set as failed and go on "
        f"(at most {MAX_SECONDS}, 30 days)",
    )
    p.add_argument(
        "--task-memory",
        type=memory_size,
        metavar="SIZE",
        help="memory each fit may allocate (e.g. 500M, 2G; K, M, G, T are powers of 1024); a fit that "
        "needs more is recorded as failed, naming the limit, and the run goes on (Linux 4.7 or later)",
    )
    p.add_argument(
        "--ignore-memory-estimate",
        action="store_true",
        help="run even when the estimated peak memory of the run (from n, d, the methods' measured memory "
        'curves and --jobs) exceeds the memory this machine has available (docs/PROTOCOL.md, "Measured '
        'sizes and the memory estimate")',
    )
    p.add_argument(
        "--no-isolation",
        action="store_true",
        help="fit each method in its worker process instead of a forked child of it (a little faster; "
        "a plugin that crashes or exits then ends the run; no --task-timeout or --task-memory)",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="print only the leaderboard (no progress, no file list); with several suites nothing (the "
        "leaderboards are in their folders, the summary in OUT/summary.md)",
    )
    p.add_argument(
        "--no-figures",
        action="store_true",
        help="do not draw OUT/figures/ (a few seconds per run; the leaderboard, results and store are "
        "written as usual, and `oodfs plot OUT` draws the figures later)",
    )
    p.add_argument(
        "--progress-interval",
        type=positive_seconds,
        default=DEFAULT_INTERVAL,
        metavar="SECONDS",
        help=f"when standard error is not a terminal (a log file): one progress line every SECONDS "
        f"(default {DEFAULT_INTERVAL:g}, at most {MAX_SECONDS}); a terminal shows a bar redrawn in place",
    )


def bench_inputs(args) -> list:
    """The files ``bench`` reads that its outputs must never replace: the suite files, a given
    reference (with its .json) and plugin files."""
    files = [name for name in csv_list(args.suite) if name.endswith(".toml")]
    if args.reference:
        files += [args.reference, str(Path(args.reference).with_suffix(".json"))]
    return files + [p for p in args.plugin if p.endswith(".py")]


def check_reference_file(path: str) -> None:
    """``--reference FILE``: a regular .parquet file with its .json provenance beside it, in one
    line that says what a reference is (a run's results.parquet is not one)."""
    file = Path(path)
    if file.exists() and not file.is_file():
        raise OodfsError(f"--reference {path} is not a regular file (a folder, a device or a pipe)")
    if file.is_file() and not file.with_suffix(".json").is_file():
        raise OodfsError(
            f"--reference {path}: {file.with_suffix('.json')} is missing; a reference is a .parquet file "
            "with its .json provenance beside it, as shipped with oodfs (a run's results.parquet is not "
            "one: `oodfs merge` combines results folders)"
        )


def bench_writes(suite) -> list[str]:
    """The files ``bench`` writes into its output folder."""
    from oodfs.results.store import WRITTEN

    return [*WRITTEN, *(f"leaderboard-{model}.md" for model in suite.downstream)]


def memory_size(text: str) -> str:
    """--task-memory's SIZE, checked here (a usage error) and kept as written (it names the limit in
    a failed task's message)."""
    import argparse

    from oodfs.run.executors.isolation import parse_size

    try:
        parse_size(text)
    except OodfsError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--task-memory: ")) from None
    return text.strip()


#: options that name one suite's parts and so cannot apply to several suites at once
ONE_SUITE_OPTIONS = {"settings": "--settings", "r_train": "--r-train"}


@dataclass
class Planned:
    """One suite of a ``bench`` command, checked and ready to run: its folder, what it takes from
    a reference, the methods it skips (they cannot handle its target)."""

    suite: object
    out: Path
    skipped: dict
    reference: object = None
    reference_methods: tuple | None = None
    force: tuple = ()


def suite_entries(args) -> list:
    """``--suite``'s suites as :class:`oodfs.run.suite.BenchmarkRun` entries (a name or .toml path
    each, profile None: the suite's own or --profile): one name or path, a comma list of them, or
    ``all``, the whole benchmark (:func:`oodfs.run.suite.whole_benchmark`). A repeated suite,
    ``all`` beside others, an option that names one suite's parts given with several: one line."""
    from oodfs.run.suite import BenchmarkRun, available_suites, whole_benchmark

    names = [t.strip() for t in args.suite.split(",")]
    names = [n for n in names if n] if len(names) > 1 else names
    if args.suite.endswith(".toml") and Path(args.suite).is_file():  # a suite file with a comma in its path
        names = [args.suite]
    if not names or names == [""]:
        raise OodfsError("--suite is empty: name a suite, a comma list of suites or all")
    if "all" in names:
        if len(names) > 1:
            raise OodfsError("--suite all is the whole benchmark: give it alone, not in a list")
        if args.profile is not None:
            raise OodfsError(
                "--profile cannot go with --suite all: the whole benchmark runs each suite under its own "
                'profiles (docs/PROTOCOL.md, "The whole benchmark in one command")'
            )
        entries = whole_benchmark()
    else:
        repeated = [n for i, n in enumerate(names) if n in names[:i]]
        if repeated:
            raise OodfsError(f"--suite names {repeated[0]!r} twice; give each suite once")
        unknown = [n for n in names if not n.endswith(".toml") and n not in available_suites()]
        if unknown:
            raise OodfsError(
                f"unknown suite {unknown[0]!r}; valid: {', '.join(available_suites())}, all (the whole "
                "benchmark), or a .toml path"
            )
        entries = [BenchmarkRun(n, None) for n in names]
    if len(entries) > 1:
        for key, option in ONE_SUITE_OPTIONS.items():
            if getattr(args, key) is not None:
                raise OodfsError(
                    f"{option} names the parts of one suite; it cannot go with several suites (run that "
                    "suite on its own)"
                )
        if args.reference:
            raise OodfsError(
                f"--reference {args.reference} is one suite's reference; with several suites give "
                "--reference alone (each suite's shipped reference)"
            )
    return entries


def folder_name(suite, args) -> str:
    """A suite's results folder: ``SUITE[-PROFILE][-MODEL...][-quick]`` (the profile when not
    ``default``; the models of --downstream)."""
    profile = "" if suite.profile == "default" else f"-{suite.profile}"
    profile += f"-{'-'.join(args.downstream)}" if args.downstream else ""
    return f"{suite.name}{profile}{'-quick' if args.quick else ''}"


def plan_suites(args) -> list[Planned]:
    """Every suite of the command loaded, customised by the options, given its folder and checked,
    before anything is written: one suite's folder is ``--out`` (default results/NAME); several
    suites' folders are ``--out``/NAME (default results/NAME)."""
    from oodfs.contract.registry import registry
    from oodfs.run.suite import customise, load_suite, with_task

    entries = suite_entries(args)
    many = len(entries) > 1
    planned = []
    for entry in entries:
        options = dict(
            quick=args.quick,
            settings=args.settings,
            r_train=args.r_train,
            runs=args.runs,
            seed=args.seed,
            selection=args.selection,
            profile=args.profile or entry.profile,
            downstream=args.downstream,
        )
        methods = args.methods if args.methods is not None else entry.methods
        suite = customise(load_suite(entry.suite, args.tables_anywhere), methods=methods, **options)
        name = folder_name(suite, args)
        out = Path(args.out or "results") / name if many else Path(args.out or f"results/{name}")
        taken = [p for p in planned if p.out == out]
        if taken:
            raise OodfsError(
                f"--suite names suite {suite.name!r} twice (both would write {out}); give each suite once"
            )
        check_output(out, "--out", inputs=bench_inputs(args), writes=bench_writes(suite))
        reference = reference_methods = None
        if args.reference is not None:  # read and checked before anything is written
            from oodfs.run.reference import load_reference

            if args.reference:
                check_reference_file(args.reference)
            elif not suite.shipped:  # a suite file named like a shipped suite is not that suite
                raise OodfsError(
                    f"--reference without a file reads the reference shipped for a suite of oodfs, and "
                    f"suite file {entry.suite!r} is not one; give its reference file (--reference FILE)"
                )
            reference = load_reference(suite.name, suite.profile, args.reference or None)
            reference_methods = customise(
                load_suite(entry.suite, args.tables_anywhere), methods=entry.methods, **options
            ).methods  # the suite's, before --methods
            if args.methods is None:
                suite = customise(suite, methods=[])
        suite, skipped = with_task(suite, registry())
        unable = [m for m in args.methods or () if m in skipped]
        if unable:  # asked for by name: refused; a suite's own list: skipped with the reason shown
            able = [
                n
                for n, i in registry().entries("selector").items()
                if i.cls.handles(suite.task) and not i.cls.yardstick
            ]
            where = f"suite {suite.name}'s" if many else "this suite's"
            raise OodfsError(
                f"--methods names methods that cannot handle {where} {suite.task} target "
                f"({', '.join(unable)}); methods that can: {', '.join(able)}"
            )
        force = tuple(m for m in args.force if m in suite.methods) if many else tuple(args.force)
        planned.append(Planned(suite, out, skipped, reference, reference_methods, force))
    if many:
        named = {m for p in planned for m in p.suite.methods}
        unknown = [m for m in args.force if m not in named]
        if unknown:
            raise OodfsError(f"--force names {unknown[0]!r}, which none of these suites includes")
    return planned


def run(args) -> int:
    from oodfs.contract.extensions import parse_backend_options
    from oodfs.contract.registry import registry
    from oodfs.run.executors import backend
    from oodfs.run.runner import RunOptions, run_suites

    with plugin_output_to_stderr():  # what a plugin prints at import never reaches the leaderboard's stdout
        registry(tuple(args.plugin))  # a plugin may bring the rule, the backend or the methods named
    planned = plan_suites(args)
    many = len(planned) > 1
    root = Path(args.out or "results") if many else None
    if root is not None:
        check_output(root, "--out", inputs=bench_inputs(args), writes=["summary.md"])
    start = time.perf_counter()
    if args.methods == [] and args.reference is None:
        raise OodfsError("--methods is empty: give at least one selector (`oodfs plugins` lists them)")
    if args.no_reference_subsets and args.reference is None:
        raise OodfsError("--no-reference-subsets needs --reference (it concerns the reference's subsets)")
    if args.scheduler and args.backend != "dask":
        raise OodfsError("--scheduler needs --backend dask")
    given = parse_backend_options(
        args.backend_option + ([f"scheduler={args.scheduler}"] if args.scheduler else [])
    )
    executor = backend(args.backend)
    check_jobs(args, local=executor.uses_local_cpus(**executor.parse_options(given)))
    if not args.ignore_memory_estimate and executor.uses_local_cpus(**executor.parse_options(given)):
        check_memory([p.suite for p in planned], args.jobs)
    options = RunOptions(
        jobs=args.jobs,
        resume=args.resume or (many and bool(args.force)),
        plugin_modules=tuple(args.plugin),
        progress=not args.quiet,
        progress_interval=args.progress_interval,
        argv=tuple(["oodfs"] + sys.argv[1:]),
        backend_name=args.backend,
        backend_options=tuple(given.items()),
        task_timeout=args.task_timeout,
        task_memory=args.task_memory,
        reference_subsets=not args.no_reference_subsets,
        notes=(lambda line: None) if args.quiet else _note,
        isolate=not args.no_isolation,
        retry_failed=args.retry_failed,
    )
    from oodfs.report.analysis import undecidable_before_run

    def undecidable(p) -> tuple[str, ...]:
        """Said before any work (docs/PROTOCOL.md section 10): a run whose tests cannot reach alpha."""
        compared = tuple(dict.fromkeys((*(p.reference_methods or ()), *p.suite.methods)))
        said = undecidable_before_run(replace(p.suite, methods=compared))
        return (said,) if said else ()

    runs = [
        (
            p.suite,
            p.out,
            replace(
                options,
                force=p.force,
                reference=p.reference,
                reference_methods=p.reference_methods,
                before_work=undecidable(p),
            ),
        )
        for p in planned
    ]
    with plugin_output_to_stderr():  # what methods print never mixes into the leaderboard on stdout
        done = run_suites(runs)
    reports, figures = [], []
    for p, d in zip(planned, done):
        try:
            report, paths = write_outputs(args, p, d.store, print_board=not many)
        except OodfsError as exc:
            if not many:
                raise
            print(f"oodfs: {p.out}: {exc}", file=sys.stderr)
            report, paths = exc, []
        reports.append(report)
        figures += paths
    if not args.quiet and not many and figures:
        print(
            f"wrote {planned[0].out / 'leaderboard.md'} and {planned[0].out / 'results.parquet'} in "
            f"{time.perf_counter() - start:.1f} s",
            file=sys.stderr,
        )
    if many:
        from oodfs.report.escape import write_text
        from oodfs.report.summary import summary_markdown

        text = summary_markdown(done, reports, time.perf_counter() - start)
        try:
            write_text(root / "summary.md", text)
        except OSError as exc:
            raise RunAborted(f"cannot write {root / 'summary.md'}: {exc.strerror or exc}") from None
        if not args.quiet:
            print(text)
    return 0 if all(not isinstance(r, Exception) for r in reports) else 1


def write_outputs(args, planned: Planned, store, print_board: bool = True):
    """One suite's outputs, as ``bench`` writes them after its run: results.parquet,
    leaderboard.md (and leaderboard-MODEL.md for each other downstream model), the figures unless
    --no-figures; the leaderboard printed when ``print_board``. Returns the suite's Report and the
    figures' paths."""
    from oodfs.contract.selection import get_rule
    from oodfs.report.escape import write_text
    from oodfs.report.leaderboard import Leaderboard
    from oodfs.report.plots import make_figures
    from oodfs.report.report import Report
    from oodfs.results.store import export

    suite, out, skipped = planned.suite, planned.out, planned.skipped
    rule = get_rule(suite.selection).name
    results = store.frame()
    columns = list(suite.metrics) or None  # the suite's table metrics
    try:
        report = Report(
            results,
            rule,
            store.get_meta("metrics"),
            list(suite.methods),
            columns=columns,
            unit=suite.unit,
            task=suite.task,
        )
    except OodfsError as exc:  # e.g. a β error where the data declare no true coefficients
        print(
            f"oodfs: the suite's metrics cannot be shown ({exc}); showing the headline metrics",
            file=sys.stderr,
        )
        columns = None
        report = Report(
            results, rule, store.get_meta("metrics"), list(suite.methods), unit=suite.unit, task=suite.task
        )
    text = Leaderboard(report).to_markdown() + skipped_note(skipped, suite.task)
    try:
        export(results, out)
        write_text(out / "leaderboard.md", text)
        for other in report.model_reports()[1:]:  # the other downstream models, same fits
            write_text(
                out / f"leaderboard-{other.downstream}.md",
                Leaderboard(other).to_markdown() + skipped_note(skipped, suite.task),
            )
        if print_board:
            print(text)
        paths = [] if args.no_figures else make_figures(report, out)
    except OSError as exc:
        raise RunAborted(
            f"cannot write to {exc.filename or out}: {exc.strerror or exc} (the results are stored in "
            f"{store.path}; `oodfs leaderboard {out}` prints them)"
        ) from None
    if not args.quiet and paths:
        print(f"figures: {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return report, paths


def run_memory_estimate(suites, jobs: int) -> dict | None:
    """The estimated memory that running ``suites`` (one suite, or the list of a pool) with
    ``jobs`` local workers adds to this process, at the largest setting of any of them
    (docs/PROTOCOL.md, "Measured sizes and the memory estimate"): per setting, its n and d, the
    methods' measured memory curves, one copy of a job's data per worker, a worker's own memory;
    as many workers as the pool has data sets, at most ``jobs``, each assumed to hold a job of
    that setting. :func:`oodfs.results.scale.estimate_peak_mb`'s fields plus ``suite``,
    ``setting``, ``n``, ``d`` and ``workers``; None when no setting names its columns before it
    is drawn."""
    import warnings

    from oodfs.contract.registry import registry
    from oodfs.results.scale import estimate_peak_mb
    from oodfs.run.suite import train_envs

    suites = [suites] if not isinstance(suites, list | tuple) else list(suites)
    data_sets = sum(len(s.settings) * len(s.r_train) * s.runs for s in suites)
    workers = min(jobs, data_sets)
    worst = None
    for suite in suites:
        env_cls = registry().get("environment", suite.environment)
        members = max(len(train_envs(r)) for r in suite.r_train)
        for setting in suite.settings:
            try:
                with warnings.catch_warnings():  # a table's notes are the run's to give, once
                    warnings.simplefilter("ignore")
                    d = len(env_cls(**setting.environment_params(0, suite.seed)).feature_names)
            except Exception:  # names no columns, or a bad setting: the run's own checks name it
                continue
            n_train = setting.n_train or suite.n_train
            rows = (n_train + suite.n_val) * members + suite.n_test * len(suite.r_test)
            est = estimate_peak_mb(suite.methods, n_train * members, d, rows, workers)
            if worst is None or est["total_mb"] > worst["total_mb"]:
                n = n_train * members
                worst = dict(est, suite=suite.name, setting=setting.name, n=n, d=d, workers=workers)
    return worst


def check_memory(suites, jobs: int) -> None:
    """Refuse, in one line, a run (one suite or a pool of them) whose estimated peak memory
    exceeds what this machine has available (:func:`run_memory_estimate`)."""
    from oodfs.results.scale import available_mb, size_text

    have = available_mb()
    if have is None:  # neither /proc/meminfo nor psutil: nothing to compare with
        return
    several = isinstance(suites, list | tuple) and len(suites) > 1
    est = run_memory_estimate(suites, jobs)
    if est is None or est["total_mb"] <= have:
        return
    workers = est["workers"]
    need = (
        f"{est['method']}'s fit needs most ({size_text(est['fit_mb'])})"
        if est["method"]
        else "no method of the run has a measured memory curve"
    )
    where = f"suite {est['suite']}, setting {est['setting']!r}" if several else f"setting {est['setting']!r}"
    raise OodfsError(
        f"this run is estimated to need {size_text(est['total_mb'])} of memory at its peak ({where}: "
        f"n = {est['n']:,}, d = {est['d']}, {workers} job{'s' * (workers != 1)} at once, "
        f"each holding {size_text(est['data_mb'])} of data; {need}), more than the {size_text(have)} this "
        "machine has available; lower n_train, --jobs or --methods, or pass --ignore-memory-estimate to run "
        "anyway"
    )


def skipped_note(skipped: dict, task: str) -> str:
    """The leaderboard's line on the methods a suite skipped (they cannot handle its task type)."""
    if not skipped:
        return ""
    lines = [f"- {method}: {why}" for method, why in skipped.items()]
    return (
        f'\n\nSkipped, not failed (the target is {task}; docs/PROTOCOL.md, "Task types"):\n'
        + "\n".join(lines)
        + "\n"
    )


def _note(line: str) -> None:
    print(f"oodfs: {line}", file=sys.stderr)


@contextlib.contextmanager
def plugin_output_to_stderr():
    """Send this process's standard output, and that of the worker processes it starts, to
    standard error (at the file-descriptor level, so output of C code and of children too)."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):  # no real descriptors (an embedding host): leave them
        yield
        return
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        # what plugins print from their exit handlers goes to stderr too: registered after theirs,
        # this handler runs before them (atexit runs the last registered first)
        atexit.unregister(_stdout_to_stderr)
        atexit.register(_stdout_to_stderr)


def _stdout_to_stderr() -> None:
    try:
        sys.stdout.flush()
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):
        pass
