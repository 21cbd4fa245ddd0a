"""``oodfs select``: rank the features of the user's own table (argument parsing and printing
only; the work is :func:`oodfs.tabular.rank_features`)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings

from oodfs.commands.options import csv_list, positive_int
from oodfs.tabular import CATEGORICAL_MODES, MAX_LEVELS, TableWarning, rank_features
from oodfs.validation import OodfsError


def parse_param(text: str) -> tuple[str, object]:
    """``"alpha=0.1"`` -> ``("alpha", 0.1)``. Values are read as JSON (numbers, true/false,
    null, lists), also Python's True/False/None; anything else stays a string."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise OodfsError(f"--param expects key=value, got {text!r}")
    value = value.strip()
    special = {"True": True, "False": False, "None": None}
    if value in special:
        return key, special[value]
    try:
        parsed = json.loads(value)
    except ValueError:
        return key, value
    if isinstance(parsed, float) and not math.isfinite(parsed):
        return key, value
    return key, tuple(parsed) if isinstance(parsed, list) else parsed


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``oodfs select`` on the CLI's subparsers; returns the new parser."""
    p = subparsers.add_parser(
        "select",
        help="rank the features of your own table (CSV or parquet) with any selector",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Rank every feature of a table for predicting --target with one selector (DWR, SRDO or a\n"
            "baseline; `oodfs plugins` lists them) and print the ranking, best first.\n\n"
            "Every column except the target, the --env-column and --drop columns is a feature.\n"
            "Numeric and true/false columns are used as they are; text columns are one-hot encoded\n"
            "(one 0/1 column `col=level` per level except the first, which is the reference).\n"
            "Missing feature values are an error (oodfs does not impute); rows with a missing\n"
            "target are dropped, with a note. Features are standardised (mean 0, sd 1) before\n"
            "fitting, so coefficient-based scores do not depend on units (--no-standardize: off)."
        ),
        epilog=(
            "examples:\n"
            "  oodfs select houses.csv --target price --method dwr --top-k 5\n"
            "  oodfs select sales.parquet --target y --method lasso --param alpha=0.1 --json\n"
            "  oodfs select houses.csv --target price --method srdo \\\n"
            "      --env-column period --train-envs 1990s,2000s   # fit on those periods only"
        ),
    )
    p.add_argument("file", help="the table: .csv, .csv.gz, .tsv or .parquet (first row = column names)")
    p.add_argument("--target", required=True, metavar="COL", help="the column to predict (numeric)")
    p.add_argument(
        "--method",
        required=True,
        metavar="NAME",
        help="selector name, e.g. dwr, srdo, lasso, rf, correlation (see `oodfs plugins`)",
    )
    p.add_argument(
        "--top-k",
        type=positive_int,
        metavar="K",
        help="how many features are marked selected (default: the selector's k, usually 5)",
    )
    p.add_argument(
        "--json", action="store_true", help="print JSON (the ranking and what was done) instead of a table"
    )
    p.add_argument(
        "--env-column",
        metavar="COL",
        help="a column of environment labels (e.g. period, site); never used as a feature",
    )
    p.add_argument(
        "--train-envs",
        type=csv_list,
        metavar="A,B",
        help="fit only on the rows whose --env-column value is one of these labels",
    )
    p.add_argument(
        "--categorical",
        choices=CATEGORICAL_MODES,
        default="onehot",
        help="text columns: one-hot encode them (default) or stop with an error naming them",
    )
    p.add_argument(
        "--drop",
        type=csv_list,
        default=[],
        metavar="A,B",
        help="comma-separated columns to leave out (ids, leaks, columns with missing values)",
    )
    p.add_argument(
        "--max-levels",
        type=positive_int,
        default=MAX_LEVELS,
        metavar="N",
        help=f"refuse a text column with more than N distinct values (default {MAX_LEVELS})",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a selector parameter, e.g. --param alpha=0.1 (JSON values); repeatable",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="random seed of the selector, 0 to 2**32-1 (default 0)"
    )
    p.add_argument("--no-standardize", action="store_true", help="use the features on their own scale")
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="register an unpackaged plugin module (dotted name or .py file); repeatable",
    )
    return p


def run(args) -> int:
    """Print the ranking as a table (or JSON) on standard output; notes go to standard error."""
    from tabulate import tabulate

    from oodfs.contract.registry import registry

    registry(tuple(getattr(args, "plugin", []) or ()))
    params = dict(parse_param(t) for t in (args.param or []))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TableWarning)
        ranking = rank_features(
            args.file,
            args.target,
            args.method,
            top_k=args.top_k,
            env_column=args.env_column,
            train_envs=args.train_envs,
            params=params,
            random_state=args.seed,
            categorical=args.categorical,
            drop=args.drop,
            standardize_features=not args.no_standardize,
            max_levels=args.max_levels,
        )
    for w in caught:
        if issubclass(w.category, TableWarning):
            print(f"oodfs: note: {w.message}", file=sys.stderr)
        else:  # pass the others on unchanged
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    a = ranking.attrs
    if args.json:
        out = {
            k: a[k]
            for k in (
                "method",
                "params",
                "target",
                "source",
                "rows",
                "rows_in_table",
                "features",
                "top_k",
                "env_column",
                "train_envs",
                "standardized",
                "random_state",
            )
        }
        out["params"] = {k: list(v) if isinstance(v, tuple) else v for k, v in out["params"].items()}
        out["ranking"] = [
            {"rank": int(r.rank), "feature": r.feature, "score": float(r.score), "selected": bool(r.selected)}
            for r in ranking.itertuples()
        ]
        print(json.dumps(out, indent=2, default=str))
        return 0
    used = (
        f"{a['rows']} of {a['rows_in_table']} rows (environments {', '.join(a['train_envs'])})"
        if a["train_envs"]
        else f"{a['rows']} rows"
    )
    print(
        f"{a['method']} on {a['source']}: target {a['target']!r}, {a['features']} features, {used}; "
        f"top {a['top_k']} marked *",
        file=sys.stderr,
    )
    rows = [[r.rank, r.feature, f"{r.score:.6g}", "*" if r.selected else ""] for r in ranking.itertuples()]
    print(tabulate(rows, headers=["rank", "feature", "score", "selected"], disable_numparse=True))
    return 0
