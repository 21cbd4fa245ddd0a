"""``oodfs theory``: the paper's theorems on weighted least squares checked numerically
(:mod:`oodfs.theory`)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from oodfs.commands.options import add_jobs, check_jobs, positive_int, seed
from oodfs.theory.experiment import CONDITIONS, METHODS, TheoryConfig, quick_config
from oodfs.theory.run import run_theory
from oodfs.validation import OodfsError, check_limit, limit


def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``theory`` subcommand to an argparse subparsers object."""
    p = subparsers.add_parser(
        "theory",
        help="check the paper's WLS theorems numerically (coefficient error against n)",
        description="For each condition (synthetic environment, bias rate), n on a log grid and many "
        "replicates: WLS with no weights, the oracle weights, DWR and SRDO; ||beta_hat(V)||, ||beta_hat(S) "
        "- beta*(S)||, ESS and the independence residual; log-log slopes with 95% intervals. Writes "
        "OUT/theory_results.csv, theory_slopes.csv, theory_summary.md and theory_*.png.",
    )
    p.add_argument("--out", default="results/theory", help="output folder (default results/theory)")
    p.add_argument(
        "--quick", action="store_true", help="3 sizes, 5 replicates, smaller DWR/SRDO caps (a few minutes)"
    )
    add_jobs(p, 1)
    p.add_argument("--seed", type=seed, default=0, help="base seed, 0 to 2**32-1 (default 0)")
    p.add_argument(
        "--replicates",
        type=positive_int,
        help=f"replicates of the cheap methods (default {TheoryConfig.replicates}; at most "
        f"{limit('replicates')}, the limit replicates of OODFS_LIMITS)",
    )
    p.add_argument(
        "--conditions",
        type=_names,
        help="comma-separated condition names (default: all: " + ", ".join(c.name for c in CONDITIONS) + ")",
    )
    p.add_argument(
        "--methods",
        type=_names,
        help="comma-separated method names (default: all: " + ", ".join(m.name for m in METHODS) + ")",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    return p


def config_from_args(args) -> TheoryConfig:
    config = TheoryConfig(seed=args.seed)
    if args.quick:
        config = quick_config(config)
    check_jobs(args)
    if args.replicates is not None:
        check_limit("replicates", args.replicates, "--replicates")
        config = replace(config, replicates=args.replicates)
    for what, known in (("conditions", config.conditions), ("methods", config.methods)):
        wanted = getattr(args, what)
        if wanted is None:
            continue
        by_name = {x.name: x for x in known}
        unknown = [w for w in wanted if w not in by_name]
        if unknown or not wanted:
            raise OodfsError(
                f"unknown {what[:-1]} {unknown[0] if unknown else ''!r}; valid: {', '.join(by_name)}"
            )
        config = replace(config, **{what: tuple(by_name[w] for w in wanted)})
    return config


def run(args) -> int:
    """Run ``oodfs theory`` from parsed arguments; 0 on success (OodfsError for bad input)."""
    from oodfs.results.outputs import check_output

    config = config_from_args(args)
    check_output(args.out, "--out")
    paths = run_theory(config, args.out, jobs=args.jobs, progress=not args.quiet)
    if not args.quiet:
        print(Path(paths["summary"]).read_text())
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def main(argv=None) -> int:
    """``python -m oodfs.commands.theory [options]``: the same as ``oodfs theory`` (errors as one
    line, exit 2)."""
    import sys

    parser = argparse.ArgumentParser(prog="python -m oodfs")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    args = parser.parse_args(["theory", *(sys.argv[1:] if argv is None else argv)])
    try:
        return run(args)
    except OodfsError as exc:
        print(f"oodfs theory: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
