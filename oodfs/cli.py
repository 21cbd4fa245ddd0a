"""Command line: ``oodfs bench | leaderboard | plot | plugins | select``."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

from .validation import OodfsError

EXIT_USAGE = 2


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _float_list(text: str) -> list[float]:
    try:
        return [float(t) for t in _csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def available_cpus() -> int:
    """CPUs this process may run on (the default number of workers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (no multi-line usage block): what is
    wrong and where to read more. Subcommand parsers inherit the class."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from .leaderboard import FORMATS
    from .selection import RULES

    parser = _Parser(
        prog="oodfs",
        description="Benchmark feature selectors under covariate shift (DWR, SRDO and baselines).",
        epilog="Run `oodfs COMMAND --help` for the options of a command.",
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    rules = "; ".join(f"{k}: {v}" for k, v in RULES.items())
    bench = sub.add_parser(
        "bench", help="run a benchmark suite and print its leaderboard",
        description="Run every (setting, r_train, run, method, grid point) task of a suite, store the results "
        "in OUT/results.sqlite (+ results.parquet), and write OUT/leaderboard.md.",
    )
    bench.add_argument("--suite", required=True, help="suite name (e.g. synthetic) or path to a suite .toml")
    bench.add_argument("--quick", action="store_true", help="the suite's small version (fewer r_train and runs)")
    bench.add_argument("--out", default=None, help="output folder (default: results/SUITE[-quick])")
    bench.add_argument("--jobs", type=_positive_int, default=available_cpus(),
                       help=f"parallel worker processes (default: one per CPU, {available_cpus()} here)")
    bench.add_argument("--methods", type=_csv_list, help="comma-separated selector names (default: the suite's)")
    bench.add_argument("--settings", type=_csv_list, help="comma-separated settings, e.g. mlp,poly")
    bench.add_argument("--r-train", type=_float_list, help="comma-separated training bias rates, e.g. 1.5,2.5")
    bench.add_argument("--runs", type=_positive_int, help="runs per (setting, r_train)")
    bench.add_argument("--seed", type=int, help="base seed of the whole suite (default: the suite's, 0)")
    bench.add_argument("--selection", choices=list(RULES), help=f"model-selection rule for the printed table ({rules})")
    bench.add_argument("--resume", action="store_true", help="continue an interrupted run in OUT, skipping finished tasks")
    bench.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                       help="register an unpackaged plugin module (dotted name or .py file) for this run; repeatable")
    bench.add_argument("--backend", default="local", choices=["local", "dask"],
                       help="local processes (joblib) or a dask.distributed cluster (pip install 'oodfs[dask]')")
    bench.add_argument("--scheduler", metavar="ADDRESS",
                       help="with --backend dask: address of an existing scheduler (default: start a LocalCluster of --jobs workers)")
    bench.add_argument("--task-timeout", type=float, metavar="SECONDS",
                       help="record a method that runs longer than this on one data set as failed and go on")
    bench.add_argument("--quiet", action="store_true", help="no progress output")

    lb = sub.add_parser("leaderboard", help="print the leaderboard of a results folder",
                        description="Aggregate a results folder (or results.parquet/.csv file) into a leaderboard.")
    lb.add_argument("path", help="results folder written by `oodfs bench`, or a results file")
    lb.add_argument("--format", default="markdown", choices=FORMATS, help="output format (default markdown)")
    lb.add_argument("--selection", default=None, choices=list(RULES), help=f"model-selection rule ({rules})")
    lb.add_argument("--output", "-o", help="write to this file instead of standard output")

    pt = sub.add_parser("plot", help="draw the paper's figures and the feature-ranking table for a results folder",
                        description="Write DIR/figures/figure1.{png,pdf} (metrics vs r_train), ood_s.{png,pdf} "
                        "(RMSE vs number of selected features) and feature_ranking.md.")
    pt.add_argument("path", help="results folder written by `oodfs bench`")
    pt.add_argument("--selection", default=None, choices=list(RULES), help=f"model-selection rule ({rules})")

    pl = sub.add_parser("plugins", help="list the registered selectors, weighters and environments")
    pl.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    pl.add_argument("--plugin", action="append", default=[], metavar="MODULE", help="also register this module")

    from .commands import select

    select.add_parser(sub)
    return parser


def cmd_bench(args) -> int:
    from .leaderboard import Leaderboard
    from .runner import run_suite
    from .selection import check_rule
    from .store import export, load_results
    from .suite import customise, load_suite

    suite = customise(
        load_suite(args.suite), quick=args.quick, methods=args.methods, settings=args.settings,
        r_train=args.r_train, runs=args.runs, seed=args.seed, selection=args.selection,
    )
    rule = check_rule(suite.selection)
    out = Path(args.out or f"results/{suite.name}{'-quick' if args.quick else ''}")
    start = time.perf_counter()
    if args.scheduler and args.backend != "dask":
        raise OodfsError("--scheduler needs --backend dask")
    if args.task_timeout is not None and args.task_timeout <= 0:
        raise OodfsError(f"--task-timeout must be positive, got {args.task_timeout}")
    run_suite(suite, out, jobs=args.jobs, resume=args.resume, plugin_modules=tuple(args.plugin),
              progress=not args.quiet, argv=["oodfs"] + sys.argv[1:], backend=args.backend,
              scheduler=args.scheduler, task_timeout=args.task_timeout)
    results = load_results(out)
    export(results, out)
    board = Leaderboard.from_results(results, rule)
    text = board.to_markdown()
    (out / "leaderboard.md").write_text(text)
    print(text)
    _plot(results, out, rule)
    print(f"wrote {out / 'leaderboard.md'} and {out / 'results.parquet'} in {time.perf_counter() - start:.1f} s",
          file=sys.stderr)
    return 0


def cmd_leaderboard(args) -> int:
    from .leaderboard import Leaderboard
    from .store import load_results

    results = load_results(args.path)
    rule = args.selection or _stored_rule(args.path) or "val"
    text = Leaderboard.from_results(results, rule).render(args.format)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def _plot(results, out: Path, rule: str) -> list[Path]:
    from .plots import make_figures
    from .store import ResultStore

    names = ResultStore(out).get_meta("feature_names") if ResultStore(out).exists() else None
    paths = make_figures(results, out, rule, names)
    print(f"figures: {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return paths


def cmd_plot(args) -> int:
    from .store import load_results

    rule = args.selection or _stored_rule(args.path) or "val"
    _plot(load_results(args.path), Path(args.path), rule)
    return 0


def _stored_rule(path) -> str | None:
    from .store import ResultStore

    store = ResultStore(path)
    if Path(path).is_dir() and store.exists():
        runs = store.invocations()
        if runs:
            return runs[-1]["suite"].get("selection")
    return None


def cmd_plugins(args) -> int:
    from .plugins import registry

    infos = registry(tuple(args.plugin)).all()
    if args.json:
        print(json.dumps([i.as_dict() for i in infos], indent=2))
        return 0
    from tabulate import tabulate

    rows = [[i.kind, i.name, i.package, i.version, i.description] for i in infos]
    print(tabulate(rows, headers=["kind", "name", "package", "version", "description"]))
    return 0


def cmd_select(args) -> int:
    from .commands import select

    return select.run(args)


COMMANDS = {"bench": cmd_bench, "leaderboard": cmd_leaderboard, "plot": cmd_plot, "plugins": cmd_plugins,
            "select": cmd_select}


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.debug:
        warnings.filterwarnings("ignore", category=FutureWarning)
    try:
        return COMMANDS[args.command](args)
    except OodfsError as exc:
        if args.debug:
            raise
        print(f"oodfs: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("oodfs: interrupted; finished tasks are saved (continue with --resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
