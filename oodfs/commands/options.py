"""Argument types and options shared by several commands (one copy of each)."""

from __future__ import annotations

import argparse
import math

from oodfs.validation import available_cpus


def csv_list(text: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [t.strip() for t in text.split(",") if t.strip()]


def float_list(text: str) -> list[float]:
    try:
        values = [float(t) for t in csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated finite numbers, got {text!r}")
    return values


def r_train_list(text: str) -> list:
    """``"1.5,2.5"`` -> ``[1.5, 2.5]``; an entry ``"1.5+2.0+3.0"`` is a set of training environments
    pooled with their labels (a suite file's ``[1.5, 2.0, 3.0]``)."""
    entries = []
    for entry in csv_list(text):
        try:
            members = [float(m) for m in entry.split("+")]
        except ValueError:
            members = []
        if not members or not all(math.isfinite(m) for m in members):
            raise argparse.ArgumentTypeError(
                f"expected a finite number or numbers joined by '+', got {entry!r}"
            )
        entries.append(members[0] if len(members) == 1 else members)
    if not entries:
        raise argparse.ArgumentTypeError(f"expected comma-separated training bias rates, got {text!r}")
    return entries


def folder(text: str) -> str:
    """An output folder's name: not empty (an empty ``--out`` would silently mean the default)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty name")
    return text


def out_option(args) -> str:
    """How a refused output folder is named: ``--out``, or (``plot`` and ``compare`` without it,
    which write into the results path they read) the default with the way out."""
    return "--out" if args.out is not None else "the output folder (the path read: no --out DIR given)"


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


#: the most seconds an option takes (30 days): a wait beyond it is a mistake, and far beyond it
#: overflows the system's timers
MAX_SECONDS = 30 * 24 * 3600
#: the seeds numpy takes: 0 to 2**32-1
MAX_SEED = 2**32 - 1


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(
            f"expected a finite positive number of seconds, at most {MAX_SECONDS} (30 days), got {text!r}"
        )
    return value


def seed(text: str) -> int:
    """A seed: a whole number from 0 to 2**32-1."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to 2**32-1, got {text!r}")
    return value


def add_jobs(parser, default: int) -> None:
    """``--jobs N`` and ``--force-jobs``, checked by :func:`check_jobs` before any work."""
    from oodfs.validation import limit

    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=default,
        help=f"parallel worker processes (default {default}; at most the {available_cpus()} CPUs this "
        f"process may use unless --force-jobs, and never more than {limit('jobs')}, the limit jobs of "
        "OODFS_LIMITS)",
    )
    parser.add_argument(
        "--force-jobs",
        action="store_true",
        help="allow --jobs above the number of CPUs (each worker is a process holding its own data)",
    )


def check_jobs(args, local: bool = True) -> None:
    """Refuse, before any work, ``--jobs`` above the CPUs this process may use (``local``: the
    workers run here) unless ``--force-jobs``, and above the limit ``jobs`` in any case
    (:func:`oodfs.validation.check_jobs`)."""
    from oodfs.validation import check_jobs as check

    check(args.jobs, args.force_jobs, local=local)


def add_selection(parser, default=None) -> None:
    """``--selection RULE``: any registered rule (a plugin's too, so the name is checked when the
    command runs, by :func:`oodfs.contract.selection.get_rule`, not by argparse's choices)."""
    from oodfs.contract.selection import rules

    listed = "; ".join(f"{r.name}: {r.description}" for r in rules().values())
    parser.add_argument(
        "--selection", default=default, metavar="RULE", help=f"model-selection rule ({listed})"
    )


def add_metrics(parser) -> None:
    parser.add_argument(
        "--metrics",
        type=csv_list,
        metavar="NAMES",
        help="comma-separated metrics to show and test, in this order (default: the headline metrics, "
        "rank_avg, f1, rmse_mean, rmse_std); e.g. rmse_max,beta_l1,beta_l2 for details a run stores "
        "(docs/PROTOCOL.md, section 3)",
    )


def add_downstream(parser) -> None:
    """``--downstream MODEL``: which of a run's downstream models to show and test (default its first)."""
    parser.add_argument(
        "--downstream",
        metavar="MODEL",
        help="the downstream model whose scores to show and test, when the run trained several (default: "
        "its first; each model's tests are its own)",
    )


def add_env_weighting(p, default: str | None) -> None:
    """``--env-weighting`` and ``--min-env-rows``: how the test environments count in the mean, sd
    and worst over them (docs/PROTOCOL.md section 3, "Weighting the test environments").
    ``default``: the command's (None: the suite's own)."""
    from oodfs.contract.env_weights import ENV_WEIGHTINGS

    said = f"default {default}" if default else "default: the suite's, equal unless it says env_weighting"
    p.add_argument(
        "--env-weighting",
        choices=ENV_WEIGHTINGS,
        default=default,
        help="how the test environments count in the mean and sd over them: equal (each once, as in the "
        f"paper) or rows (weighted by each environment's test rows); the worst is never weighted ({said})",
    )
    p.add_argument(
        "--min-env-rows",
        type=positive_int,
        metavar="N",
        help="leave test environments with fewer than N test rows out of the mean, sd and worst over "
        "environments (named in a note; their own rows are still shown; default: none left out)",
    )
