"""``oodfs bench``: run a suite, store its results, print the leaderboard, draw the figures.

The arguments and what is printed; the run itself is the use case :func:`oodfs.run.bench.run_bench`."""

from __future__ import annotations

import sys

from oodfs.commands.options import (
    MAX_SECONDS,
    add_env_weighting,
    add_jobs,
    add_selection,
    available_cpus,
    csv_list,
    folder,
    positive_int,
    positive_seconds,
    r_train_list,
    seed,
)
from oodfs.run.bench import BenchOptions, run_bench
from oodfs.run.progress import DEFAULT_INTERVAL
from oodfs.validation import OodfsError, limit


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
    add_env_weighting(p, None)
    p.add_argument(
        "--feature-shift",
        metavar="SHIFT",
        help="remove or corrupt features in the test rows only, after every fit: missing:P (each test "
        "cell missing with probability P), drop-top (the feature most correlated with the target on the "
        "training rows, missing in every test row) or scale:C (that feature's test values times C); "
        "the shifted losses are metrics of their own (rmse_fshift_mean, rmse_fshift_increase, ...; "
        'docs/PROTOCOL.md, "Feature shift"). Default: the suite\'s, none',
    )
    p.add_argument(
        "--feature-shift-impute",
        metavar="HANDLING",
        help="how the downstream model meets a missing value: train-mean (the feature's training mean; "
        "default) or refit (drop-top only: the model refitted without the removed feature)",
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


def bench_options(args) -> BenchOptions:
    """The use case's options (:class:`oodfs.run.bench.BenchOptions`) from the parsed arguments;
    what it says is printed here: the notes (none with --quiet), the leaderboard on stdout, the
    figures (none with --quiet)."""
    return BenchOptions(
        suite=args.suite,
        out=args.out,
        quick=args.quick,
        tables_anywhere=args.tables_anywhere,
        jobs=args.jobs,
        force_jobs=args.force_jobs,
        methods=args.methods,
        settings=args.settings,
        r_train=args.r_train,
        runs=args.runs,
        seed=args.seed,
        selection=args.selection,
        profile=args.profile,
        downstream=args.downstream,
        env_weighting=args.env_weighting,
        min_env_rows=args.min_env_rows,
        feature_shift=args.feature_shift,
        feature_shift_impute=args.feature_shift_impute,
        resume=args.resume,
        force=tuple(args.force),
        reference=args.reference,
        reference_subsets=not args.no_reference_subsets,
        retry_failed=args.retry_failed,
        plugins=tuple(args.plugin),
        backend=args.backend,
        backend_options=tuple(args.backend_option),
        scheduler=args.scheduler,
        task_timeout=args.task_timeout,
        task_memory=args.task_memory,
        check_memory=not args.ignore_memory_estimate,
        isolate=not args.no_isolation,
        progress=not args.quiet,
        progress_interval=args.progress_interval,
        figures=not args.no_figures,
        reference_verdicts=not args.quiet,
        argv=tuple(["oodfs"] + sys.argv[1:]),
        notes=(lambda line: None) if args.quiet else _note,
        say=_note,
        inform=(lambda line: None) if args.quiet else _line,
        show=print,
    )


def run(args) -> int:
    outcome = run_bench(bench_options(args))
    if not args.quiet and outcome.root is None and outcome.suites[0].outputs.figures:
        out = outcome.suites[0].out
        print(
            f"wrote {out / 'leaderboard.md'} and {out / 'results.parquet'} in {outcome.seconds:.1f} s",
            file=sys.stderr,
        )
    if outcome.summary is not None and not args.quiet:
        print(outcome.summary)
    for line in found_lines(outcome, args):
        print(line, file=sys.stderr)
    return outcome.status


def found_lines(outcome, args) -> list[str]:
    """The last lines of a one-suite run: when the run cannot test, what the shipped reference
    found on the same methods and settings (labelled as the reference's, with its units and test),
    and what to run next."""
    if args.quiet or outcome.root is not None:
        return []
    done = outcome.suites[0]
    v = done.reference_verdicts
    lines = []
    if v is not None:
        lines += [
            "",
            f"oodfs: this run has too few units to test. The shipped reference {v['name']} (the same methods "
            f"and settings on its full grid, {v['units']} units per comparison; every value it holds is "
            f"replayed bit for bit in CI) tested them: {v['test']}, downstream model {v['downstream']}. "
            "Its verdicts, not this run's:",
        ]
        said = [s for s in v["sentences"] if s["decided"] and not s.get("spread")]
        lines += [f"  {s['setting']}, {s['metric']}: {s['text']}" for s in said]
    suite = done.planned.suite
    name = suite.name if suite.shipped else str(args.suite)
    lines += [
        "",
        f"next: the results page: oodfs report {done.out} --out {done.out}-site; the tests behind each "
        f"verdict: oodfs compare {done.out}",
    ]
    if v is not None:
        lines.append(
            f"      the full grid from this run's code: oodfs bench --suite {name} (or --reference to take "
            "every task whose identity matches the shipped reference); your own table: oodfs select "
            "TABLE --target COLUMN"
        )
    return lines


def _note(line: str) -> None:
    print(f"oodfs: {line}", file=sys.stderr)


def _line(line: str) -> None:
    print(line, file=sys.stderr)
