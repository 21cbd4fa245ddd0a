"""``oodfs select``: rank the features of the user's own table (argument parsing and printing
only; the work is :func:`oodfs.run.rank.rank_features`, whose result has its own JSON form)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings

from oodfs.commands.options import add_env_weighting, csv_list, positive_int, seed
from oodfs.report.escape import terminal
from oodfs.run.rank import GROUP_AGGREGATES, RankOptions, evaluated, rank_features
from oodfs.tables import CATEGORICAL_MODES, DATE_MODES, MAX_LEVELS, MIN_LEVEL_ROWS, TASKS, TableWarning
from oodfs.tables.leaks import BINARY_LEAK_AUC
from oodfs.validation import OodfsError, check_nesting, one_line_warning

#: what a column or a variable's levels are listed as in the terminal table, at most
SHOWN_LEVELS = 4


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
    except RecursionError:  # thousands of [ in a row: the parser recurses on each
        raise OodfsError(f"--param {key}: the value nests lists too deeply to read") from None
    check_nesting(parsed, f"--param {key}")
    if isinstance(parsed, float) and not math.isfinite(parsed):
        return key, value
    return key, tuple(parsed) if isinstance(parsed, list) else parsed


class _Categorical(argparse.Action):
    """``--categorical onehot|error`` (what to do with text columns) or ``--categorical a,b``
    (columns to treat as categorical although they hold numbers; also ``--categorical-columns``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if values in CATEGORICAL_MODES:
            namespace.categorical = values
        else:
            namespace.categorical_columns = list(namespace.categorical_columns or []) + csv_list(values)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``oodfs select`` on the CLI's subparsers; returns the new parser."""
    p = subparsers.add_parser(
        "select",
        help="rank the features of your own table (CSV or parquet) with any selector",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Rank every feature of a table for predicting --target with one selector (DWR, SRDO or a\n"
            "baseline; `oodfs plugins` lists them) and print the ranking, best first.\n\n"
            "A target with two levels (0/1, true/false, two text values) is binary: the method runs its\n"
            "classification form and a note names the positive class (--positive to choose it);\n"
            "--task regression regresses a numeric one instead. A numeric target with more values is\n"
            "regression; text with three or more levels is refused (multiclass is not supported yet).\n"
            "A feature that alone predicts the target almost perfectly, or a target that is a sum of a\n"
            "few features, is named in a note (a leak?). For a binary target, a feature whose AUC alone\n"
            f"on the training rows is {BINARY_LEAK_AUC} or more is refused unless kept (--keep it).\n\n"
            "Every column except the target, the --env-column and --drop columns is a feature.\n"
            "Numeric and true/false columns are numbers; text columns and --categorical-columns are\n"
            "one-hot encoded (one 0/1 column `col=level` per level except the first, the reference).\n"
            "Nothing is done silently: a column that looks like an identifier is left out with a note\n"
            "(--keep it), dates written as text and near-copies of the target are refused, identical\n"
            "columns are noted. Missing values are an error (oodfs does not impute) unless --dropna rows;\n"
            "rows with a missing target are dropped, with a note. Features are standardised (mean 0,\n"
            "sd 1 over the rows used; --no-standardize: off). A feature with fewer than\n"
            f"--min-level-rows ({MIN_LEVEL_ROWS}) rows off its most common value is left out of the fit\n"
            "(score 0). A feature scored 0 is never marked selected."
        ),
        epilog=(
            "examples:\n"
            "  oodfs select houses.csv --target price --method dwr --top-k 5\n"
            "  oodfs select sales.parquet --target y --method lasso --param alpha=0.1 --json\n"
            "  oodfs select houses.csv --target price --method srdo --target-transform log \\\n"
            "      --env-column period --train-envs 1990s,2000s --evaluate  # fit on those, test the rest\n"
            "  oodfs select bikes.csv --target riders --method lasso --categorical hour,day --group-levels\n"
            "  oodfs select churn.csv --target churn --positive yes --method dwr \\\n"
            "      --env-column state --train-envs CA,NY --evaluate --downstream logistic"
        ),
    )
    p.add_argument("file", help="the table: .csv, .csv.gz, .tsv or .parquet (first row = column names)")
    p.add_argument(
        "--target",
        required=True,
        metavar="COL",
        help="the column to predict: numeric (regression) or with two levels (binary)",
    )
    p.add_argument(
        "--task",
        choices=TASKS,
        help="binary or regression (default: binary for a target with two levels, else regression)",
    )
    p.add_argument(
        "--positive",
        metavar="LEVEL",
        help="the positive class (1.0) of a binary target (default: True, the larger number, or the "
        "last text level in sorted order; a note says which)",
    )
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
        help="how many features (variables with --group-levels) are marked selected "
        "(default: the selector's k, usually 5; at most the number of features)",
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
        "--evaluate",
        action="store_true",
        help="with --env-column and --train-envs: the downstream scores on every other environment "
        "(RMSE; binary: log-loss, Brier, accuracy, AUC) with the selected features, all features and "
        "no feature (the training mean; binary: the prior), and their mean, sd and worst",
    )
    p.add_argument(
        "--downstream",
        default="mlp",
        metavar="MODEL",
        help="the downstream model of --evaluate: mlp (the benchmark's MLP, default; a logistic output "
        "for binary), ridge (regression), logistic (binary: L2 LogisticRegressionCV) or gbm "
        "(scikit-learn histogram gradient boosting)",
    )
    add_env_weighting(p, "equal")
    p.add_argument(
        "--target-transform",
        choices=("none", "log", "log1p"),
        default="none",
        help="transform the target before ranking (log: prices; log1p: counts)",
    )
    p.add_argument(
        "--categorical",
        action=_Categorical,
        metavar="onehot|error|A,B",
        default="onehot",
        help="onehot (default): one-hot encode text columns; error: stop with an error naming them; "
        "A,B: also one-hot encode these number columns (integer-coded categories)",
    )
    p.add_argument(
        "--categorical-columns",
        type=csv_list,
        action="extend",
        default=[],
        metavar="A,B",
        help="columns to one-hot encode although they hold numbers (the same as --categorical A,B)",
    )
    p.add_argument(
        "--group-levels",
        nargs="?",
        const="max",
        choices=GROUP_AGGREGATES,
        metavar="max|sum",
        help="rank the original variables, a variable's score being the max (default) or sum of "
        "its levels' scores, and select whole variables",
    )
    p.add_argument(
        "--drop",
        type=csv_list,
        default=[],
        metavar="A,B",
        help="comma-separated columns to leave out (ids, leaks, columns with missing values)",
    )
    p.add_argument(
        "--keep",
        type=csv_list,
        default=[],
        metavar="A,B",
        help="use these columns as features although they look like an identifier or a copy of the target "
        f"(a near-copy, or a binary target's feature with AUC alone >= {BINARY_LEAK_AUC})",
    )
    p.add_argument(
        "--dates",
        choices=DATE_MODES,
        default="refuse",
        help="columns of dates: refuse them (default) or convert them to decimal years",
    )
    p.add_argument(
        "--dropna",
        choices=("rows",),
        help="rows: drop the rows with a missing value in a feature or --env-column (default: an error)",
    )
    p.add_argument(
        "--max-levels",
        type=positive_int,
        default=MAX_LEVELS,
        metavar="N",
        help=f"refuse a text column with more than N distinct values (default {MAX_LEVELS})",
    )
    p.add_argument(
        "--min-level-rows",
        type=positive_int,
        default=MIN_LEVEL_ROWS,
        metavar="N",
        help="leave out of the fit a feature with fewer than N of the rows used off its most common "
        f"value: a rare level, a constant (default {MIN_LEVEL_ROWS})",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a selector parameter, e.g. --param alpha=0.1 (JSON values); repeatable",
    )
    p.add_argument(
        "--seed", type=seed, default=0, help="random seed of the selector, 0 to 2**32-1 (default 0)"
    )
    p.add_argument("--no-standardize", action="store_true", help="use the features on their own scale")
    p.add_argument(
        "--no-isolation",
        action="store_true",
        help="fit the selector in this process, not in a forked child (a crash then ends oodfs)",
    )
    p.add_argument(
        "--ignore-memory-estimate",
        action="store_true",
        help="fit even when the estimated peak memory of the fit (from n, d and the method's measured "
        'memory curve) exceeds the memory this machine has available (docs/PROTOCOL.md, "Measured sizes '
        'and the memory estimate")',
    )
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="register an unpackaged plugin module (dotted name or .py file); repeatable",
    )
    return p


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Notes and warnings as one line on stderr, never a source line (the CLI's format)."""
    (file or sys.stderr).write(terminal(one_line_warning(message, category), newlines=True))


def _options(args, params: dict, declared: list) -> RankOptions:
    """The command's arguments as :class:`~oodfs.run.rank.RankOptions`."""
    return RankOptions(
        top_k=args.top_k,
        env_column=args.env_column,
        train_envs=args.train_envs,
        params=params,
        random_state=args.seed,
        categorical=args.categorical,
        drop=args.drop,
        standardize_features=not args.no_standardize,
        max_levels=args.max_levels,
        categorical_columns=declared,
        keep=args.keep,
        dates=args.dates,
        dropna=args.dropna,
        target_transform=None if args.target_transform == "none" else args.target_transform,
        min_level_rows=args.min_level_rows,
        group_levels=args.group_levels,
        evaluate=args.evaluate,
        downstream=args.downstream,
        isolate=not args.no_isolation,
        task=args.task,
        positive=args.positive,
        check_memory=not args.ignore_memory_estimate,
        env_weighting=args.env_weighting,
        min_env_rows=args.min_env_rows,
    )


def _levels(features: list[str]) -> str:
    shown = ", ".join(terminal(f) for f in features[:SHOWN_LEVELS])
    return shown + (f", ... ({len(features)})" if len(features) > SHOWN_LEVELS else "")


def run(args) -> int:
    """Print the ranking as a table (or JSON) on standard output; notes go to standard error."""
    from tabulate import tabulate

    from oodfs.contract.registry import registry

    registry(tuple(getattr(args, "plugin", []) or ()))
    params = dict(parse_param(t) for t in (args.param or []))
    declared = list(dict.fromkeys(list(getattr(args, "categorical_columns", None) or [])))
    with warnings.catch_warnings():
        warnings.simplefilter("always", TableWarning)
        warnings.showwarning = _show_warning  # also in the forked child that fits the selector
        result = rank_features(args.file, args.target, args.method, _options(args, params, declared))
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
        return 0
    a = result
    ranking, variables, evaluation = result.ranking, result.variables, result.evaluation
    # names from the table (columns, environment labels) are printed with control characters and
    # bidirectional overrides escaped: a name must not move the cursor or read as another name
    envs = ", ".join(terminal(e) for e in a.train_envs or ())
    used = f"{a.rows} of {a.rows_in_table} rows (environments {envs})" if a.train_envs else f"{a.rows} rows"
    unit = "variables" if variables is not None else "features"
    name = terminal(a.target)
    target = (
        f"log({name})"
        if a.target_transform == "log"
        else f"log1p({name})"
        if a.target_transform == "log1p"
        else name
    )
    task = a.task + (f", positive class {terminal(a.positive)!r}" if a.positive is not None else "")
    print(
        f"{terminal(a.method)} on {terminal(a.source)}: target '{target}' ({task}), {a.features} features, "
        f"{used}; "
        + (f"top {a.top_k} {unit} marked *" if a.selection else f"no selection (top {a.top_k} is every one)"),
        file=sys.stderr,
    )
    if variables is not None:
        rows = [
            [r.rank, terminal(r.variable), f"{r.score:.6g}", "*" if r.selected else "", _levels(r.features)]
            for r in variables.itertuples()
        ]
        print(
            tabulate(
                rows,
                headers=["rank", "variable", f"score ({a.group_levels})", "selected", "features"],
                disable_numparse=True,
            )
        )
    else:
        rows = [
            [r.rank, terminal(r.feature), f"{r.score:.6g}", "*" if r.selected else ""]
            for r in ranking.itertuples()
        ]
        print(tabulate(rows, headers=["rank", "feature", "score", "selected"], disable_numparse=True))
    if evaluation is not None:
        _print_evaluation(result, envs, target)
    return 0


def _print_evaluation(result, envs: str, target: str) -> None:
    """The downstream scores per held-out environment, their summary, and the worse-than-mean note."""
    from tabulate import tabulate

    from oodfs.contract.registry import get_task

    a, evaluation = result, result.evaluation
    task = get_task(a.task)
    loss = task.validation_loss
    yard = a.yardstick
    no_feature = {"mean": "training mean", "prior": "prior (base rate)"}.get(yard, yard)
    whos = evaluated(evaluation, a.task)
    names = {
        "selected": f"selected ({int(a.ranking['selected'].sum())})",
        "all": f"all_features ({a.features})",
    }
    columns = [names.get(w, no_feature) for w in whos]
    binary = a.task == "binary"
    title = task.titles[loss]
    print(
        f"\ndownstream {a.downstream} trained on {envs} ({a.rows} rows); {title} of {target} on each "
        "other environment:"
    )
    rows = [
        [terminal(r["env"]), r["rows"]]
        + ([r["positives"]] if binary else [])
        + [_cell(r[f"{loss}_{w}"]) for w in whos]
        + ([_cell(r[f"auc_{w}"]) for w in whos[:-1]] if binary else [])
        for r in evaluation.to_dict("records")
    ]
    headers = ["env", "rows"] + (["positives"] if binary else []) + columns
    headers += [f"AUC {'all_features' if w == 'all' else w}" for w in whos[:-1]] if binary else []
    print(tabulate(rows, headers=headers, disable_numparse=True))
    summary = a.summary().set_index(["score", "statistic"])
    n = len(evaluation)
    kept = n - len(a.env_left_out())
    over = f"the {n} environment{'s' if n != 1 else ''}" if kept == n else f"{kept} of the {n} environments"
    weighted = ", weighted by their rows" if a.weighting.weighting == "rows" else ""
    print(
        f"\nmean ± sd and worst over {over}{weighted} (no best is marked: "
        f"compare the means of {title}, the validation loss):"
    )
    rows = [
        [task.titles[score]]
        + [
            f"{_cell(summary.loc[(score, 'mean'), w])} ± {_cell(summary.loc[(score, 'sd'), w], 2)}, "
            f"worst {_cell(summary.loc[(score, 'worst'), w])}"
            for w in whos
        ]
        for score in task.scores
    ]
    print(tabulate(rows, headers=["score", *columns], disable_numparse=True))
    for line in a.env_notes():  # how the environments count (docs/PROTOCOL.md section 3)
        print(f"\nnote: {terminal(line)}")
    note = result.worse_than_mean_note()
    if note:
        print(f"\nnote: {note}")
    if a.shift is not None:
        _print_shift(a.shift)


def _print_shift(shift: dict) -> None:
    """The shift diagnosis of the held-out environments: a sentence, then a row per environment."""
    from tabulate import tabulate

    from oodfs.shift import HELD_OUT_SHARE, shift_sentence

    print(
        f'\nshift diagnosis (docs/PROTOCOL.md section 10, "Diagnosis"; {shift["model"]} on every feature '
        f"fitted on the training rows but {100 * HELD_OUT_SHARE:.0f} % held out): "
        + shift_sentence(shift, "the other environments")
        + "."
    )
    rows = [
        [terminal(r["env"]), _cell(r["p"]), _cell(r["q"]), f"{r['x_shift']:+.4g}", f"{r['y_shift']:+.4g}",
         f"{r['overlap']:.2f}"]
        for r in shift["pairs"].to_dict("records")
    ]  # fmt: skip
    loss = shift["loss"]
    headers = ["env", f"{loss} training", f"{loss} there", "change of X", "change of Y∣X", "overlap"]
    print(tabulate(rows, headers=headers, disable_numparse=True))


def _cell(value, digits: int = 4) -> str:
    """A score as printed (``digits`` significant digits); an undefined one (AUC with one class) as n/a."""
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}g}"
