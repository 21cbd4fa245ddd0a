"""Argument types and options shared by several commands (one copy of each)."""

from __future__ import annotations

import argparse
import math
import os


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


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite positive number of seconds, got {text!r}")
    return value


def available_cpus() -> int:
    """CPUs this process may run on (the default number of workers)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


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
