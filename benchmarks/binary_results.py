"""Run the binary suites and write their verdicts (benchmarks/BINARY_RESULTS.md).

    python benchmarks/binary_results.py --root results --jobs 2        # run what is missing, then report
    python benchmarks/binary_results.py --root results --report-only

Each binary suite (the 11 real ones on the `binary_table` environment and `synthetic-binary`) runs
its full grid into ROOT/<suite> with the default downstream model (the suite's first: `logistic`
for the real suites, `mlp` for the synthetic one); a suite not run there is read from its shipped
reference results. The verdicts come from the one analysis every output reads
(oodfs.report.analysis), as in benchmarks/realdata.py, whose helpers this script imports:

* per real suite, each method against `all_features` on the mean test log-loss (the validation
  loss of the selection rules), with AUC and accuracy beside: two-sided Wilcoxon signed-rank over
  the suite's units (its training environments), Holm over the methods;
* across the real suites, the suite as the unit (Demšar 2006): each method's mean relative
  difference to `all_features`, Wilcoxon over the suites, Holm over the methods, a Friedman test
  with average ranks, and the family of independence weighting against the other selectors;
* synthetic-binary: rank average and F1 against the known stable set, with the log-loss.

Writes benchmarks/BINARY_RESULTS.md and benchmarks/figures/binary-*.png. With ``--ship``, each suite
whose full grid is in ROOT first becomes shipped reference results (oodfs/run/reference/<suite>-default.*,
oodfs.run.reference.write_reference); the report then reads the same numbers whether ROOT is there or not.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from realdata import _ci, failures, selection_table
from tabulate import tabulate

from oodfs.report.analysis import Analysis, across_suites
from oodfs.report.features import versus_yardstick
from oodfs.report.report import Report
from oodfs.run.reference import shipped_dir
from oodfs.run.suite import available_suites, load_suite
from oodfs.validation import OodfsError

HERE = Path(__file__).resolve().parent
#: the hand-written reading of the numbers, kept across runs and printed after the verdict
NOTES = HERE / "binary_notes.md"
SYNTHETIC = "synthetic-binary"
#: the verdict's metric (the validation loss of the selection rules) and the two shown beside it
PRIMARY = "log_loss_mean"
BESIDE = ("auc_mean", "accuracy_mean")
TITLES = {"log_loss_mean": "log-loss", "auc_mean": "AUC", "accuracy_mean": "accuracy", "brier_mean": "Brier"}


def real_binary_suites() -> list[str]:
    return [s for s in available_suites() if load_suite(s).environment == "binary_table"]


def default_downstream(name: str) -> str:
    return load_suite(name).downstream[0]


def run_missing(root: Path, suites, jobs: int) -> dict:
    """Run (or resume) each suite with its default downstream model; the wall seconds of each."""
    seconds = {}
    for name in suites:
        t0 = time.perf_counter()
        model = default_downstream(name)
        cmd = ["oodfs", "bench", "--suite", name, "--jobs", str(jobs), "--downstream", model,
               "--out", str(root / name), "--quiet", "--resume"]  # fmt: skip
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        seconds[name] = time.perf_counter() - t0
    return seconds


def source(root: Path, name: str) -> Path | None:
    """ROOT/<suite> when it was run there, else the shipped reference results, else None."""
    folder = root / name
    if (folder / "results.sqlite").exists() or (folder / "results.parquet").exists():
        return folder
    shipped = shipped_dir() / f"{name}-default.parquet"
    return shipped if shipped.is_file() else None


def complete(report: Report, name: str) -> bool:
    """Has every (r_train, run) block of the suite a row for every method?"""
    s = load_suite(name)
    blocks = report.tasks.groupby(["r_train", "run"]).ngroups
    return blocks == len(s.r_train) * s.runs * len(s.settings)


def ship(root: Path, suites) -> list[str]:
    """Write the reference results of every suite whose full grid is in ROOT; their names."""
    from oodfs.run.reference import write_reference

    shipped = []
    for name in suites:
        folder = root / name
        if not (folder / "results.sqlite").exists():
            continue
        report = Report.from_path(folder, downstream=default_downstream(name), unit=load_suite(name).unit)
        if complete(report, name) and (report.tasks["status"] == "ok").any():
            write_reference(folder, shipped_dir() / f"{name}-default.parquet")
            shipped.append(name)
    return shipped


def load_report(path: Path, name: str) -> Report:
    """The suite's report from a results folder, or from a shipped reference (its provenance
    file holds the metric declarations, the methods' order and the task, which a bare .parquet
    file does not)."""
    model, unit = default_downstream(name), load_suite(name).unit
    if path.suffix != ".parquet":
        return Report.from_path(path, downstream=model, unit=unit)
    from oodfs.results.store import load_results

    meta = json.loads(path.with_suffix(".json").read_text())
    task = meta["suite_identity"].get("task")
    return Report(
        load_results(path), "val", meta["metrics"], meta["methods"], model, None, unit=unit, task=task
    )


def suite_numbers(path: Path, name: str) -> dict:
    model = default_downstream(name)
    report = load_report(path, name)
    analysis = Analysis(report)
    cells = report.cells()
    cells = cells[cells["r_train"] == "all"]
    vs = {m: versus_yardstick(report, m) for m in (PRIMARY, *BESIDE) if m in report.headline}
    units = int(vs[PRIMARY]["n_pairs"].max()) if len(vs.get(PRIMARY, [])) else 0
    return dict(report=report, analysis=analysis, cells=cells, vs=vs, units=units, model=model)


def _cell(cells: pd.DataFrame, method: str, metric: str) -> str:
    c = cells[(cells["method"] == method) & (cells["metric"] == metric)]
    return "" if c.empty else _ci(*c[["mean", "low", "high"]].iloc[0])


# -- across suites -----------------------------------------------------------------------------------
def _verdict(effect: float, p: float, lower_is_better: bool) -> str:
    if not np.isfinite(p):
        return "not tested"
    if p >= 0.05:
        return "not distinguishable"
    return "better than all_features" if (effect < 0) == lower_is_better else "worse than all_features"


def across(numbers: dict, suites, metric: str) -> dict:
    """oodfs.report.analysis.across_suites on ``metric``; for a metric where higher is better the
    verdict and the count of suites where the method is better are read the other way round
    (across_suites states them for a loss)."""
    res = across_suites({n: numbers[n]["analysis"] for n in suites}, metric=metric)
    lower = numbers[suites[0]]["report"].metrics[metric].lower_is_better
    for key in ("methods", "families"):
        t = res[key]
        if len(t):
            if not lower:
                t["better"] = t["suites"] - t["better"]
            t["verdict"] = [_verdict(r.effect, r.p_holm, lower) for r in t.itertuples()]
    res["lower_is_better"] = lower
    return res


def across_section(numbers: dict, suites) -> tuple[list[str], dict]:
    res = {m: across(numbers, suites, m) for m in (PRIMARY, *BESIDE)}
    main = res[PRIMARY]
    m = main["methods"]
    better = list(m.loc[m["verdict"].str.startswith("better"), "method"])
    worse = list(m.loc[m["verdict"].str.startswith("worse"), "method"])
    lines = [
        "## Verdict across suites",
        "",
        f"**Log-loss** ({main['n_suites']} real suites, each one unit): "
        + (f"{', '.join(better)} beat `all_features`" if better else "no method beats `all_features`")
        + (f"; {', '.join(worse)} are worse" if worse else "")
        + " (two-sided Wilcoxon over the suites of each method's mean relative difference in test log-loss, "
        "Holm over the methods; AUC and accuracy beside, tested the same way).",
    ]
    floor = 2.0 ** (1 - main["n_suites"])  # the exact two-sided Wilcoxon p when every suite agrees
    if floor >= 0.05:
        lines[-1] += (
            f" With {main['n_suites']} suites the smallest p a two-sided Wilcoxon test can give is "
            f"{floor:.3g} "
            "(every suite agreeing in sign): no verdict across suites can be reached yet; the table gives "
            "the effects and their spread."
        )
    if main["friedman"] is not None:
        stat, p, ranks = main["friedman"]
        lines.append(
            f"Friedman test of the methods and `all_features` over the suites (log-loss): χ² = {stat:.2f}, "
            f"p = {p:.3g}; average rank (1 = best): "
            + ", ".join(f"{k} {v:.1f}" for k, v in ranks.items())
            + "."
        )
    pair = main["family_pair"]
    if pair is not None:
        lines.append(
            f"Families: {pair['a']} − {pair['b']} = "
            f"{_pct(pair['diff'], pair['low'], pair['high'])} relative log-loss "
            f"({pair['a']} lower on {pair['a_better']} of {pair['suites']} suites; "
            f"Wilcoxon p = {pair['p']:.3g})."
        )  # fmt: skip
    rows = []
    for r in m.itertuples():
        row = [r.method, r.family, r.suites]
        for metric in (PRIMARY, *BESIDE):
            t = res[metric]["methods"].set_index("method")
            if r.method not in t.index:
                row += ["", ""]
                continue
            x = t.loc[r.method]
            row += [
                _pct(x.effect, x.low, x.high) + f" ({x.better}/{x.suites})",
                f"{x.p_holm:.3g} {_short(x.verdict)}",
            ]
        rows.append(row)
    for r in main["families"].itertuples():
        row = [f"*{r.family}*", f"({r.members})", r.suites]
        for metric in (PRIMARY, *BESIDE):
            t = res[metric]["families"].set_index("family")
            x = t.loc[r.family]
            row += [
                _pct(x.effect, x.low, x.high) + f" ({x.better}/{x.suites})",
                f"{x.p_holm:.3g} {_short(x.verdict)}",
            ]
        rows.append(row)
    headers = ["method", "family", "suites"]
    for metric in (PRIMARY, *BESIDE):
        headers += [f"{TITLES[metric]} vs all_features [95 % bootstrap] (better on)", "p (Holm)"]
    lines += [
        "",
        "Each cell: the mean over suites of (method − all_features) / all_features, in %, its 95 % "
        "percentile-bootstrap interval over the suites, and on how many suites the method is better "
        "(lower log-loss, higher AUC or accuracy); then the Holm-adjusted Wilcoxon p and the verdict "
        "(+ better, − worse, = not distinguishable).",
        "",
        tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True),
        "",
    ]
    return lines, res


def _pct(effect, low, high) -> str:
    """A relative effect and its interval, in %, one decimal."""
    if not np.isfinite(low):
        return f"{100 * effect:+.1f} %"
    return f"{100 * effect:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] %"


def _short(verdict: str) -> str:
    return "+" if verdict.startswith("better") else "−" if verdict.startswith("worse") else "="


# -- per suite ---------------------------------------------------------------------------------------
def verdict_row(name: str, n: dict) -> list:
    vs, cells = n["vs"][PRIMARY], n["cells"]
    best = vs.sort_values("mean_diff").iloc[0]
    better = list(vs.loc[vs["verdict"].str.startswith("better"), "method"])
    worse = vs["verdict"].str.startswith("worse").sum()
    undecided = (vs["verdict"] == "too few pairs to decide").all()
    return [
        f"`{name}`",
        n["units"],
        _cell(cells, "all_features", PRIMARY),
        _cell(cells, "prior", PRIMARY),
        f"{best['method']} {_ci(best['mean_diff'], best['low'], best['high'], signed=True)}",
        _cell(cells, "all_features", "auc_mean"),
        _cell(cells, "all_features", "accuracy_mean"),
        "no test can reach 0.05" if undecided else (", ".join(better) or "none") + f"; {worse} worse",
    ]


def comparison_table(n: dict) -> str:
    tables = {m: v.set_index("method") for m, v in n["vs"].items()}
    rows = []
    for method in tables[PRIMARY].index:
        row = [method, int(tables[PRIMARY].loc[method, "n_pairs"])]
        for metric in (PRIMARY, *BESIDE):
            r = tables[metric].loc[method]
            row += [_ci(r.mean_diff, r.low, r.high, signed=True), f"{r.p_holm:.3g}"]
        rows.append(row)
    headers = ["method", "units"]
    for metric in (PRIMARY, *BESIDE):
        headers += [f"{TITLES[metric]} − all_features [95 % t]", "p (Holm)"]
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def forest_figure(res: dict, out: Path) -> Path:
    """Per method: each suite's relative log-loss difference to all_features (dots) and the mean
    over suites with its 95 % bootstrap interval (bar)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [PRIMARY, *BESIDE]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 4.6), sharey=True)
    methods = list(res[PRIMARY]["methods"]["method"])
    y = {m: len(methods) - 1 - i for i, m in enumerate(methods)}
    for ax, metric in zip(axes, metrics):
        eff, summary = res[metric]["effects"], res[metric]["methods"].set_index("method")
        for m in methods:
            if m not in eff:
                continue
            vals = 100 * eff[m].dropna()
            ax.scatter(vals, np.full(len(vals), y[m]) + np.linspace(-0.2, 0.2, len(vals)), s=9, color="grey",
                       alpha=0.7, zorder=2)  # fmt: skip
            s = summary.loc[m]
            colour = {"+": "tab:green", "−": "tab:red"}.get(_short(s.verdict), "black")
            ax.errorbar(100 * s.effect, y[m], xerr=[[100 * (s.effect - s.low)], [100 * (s.high - s.effect)]],
                        fmt="o", color=colour, ms=5, lw=1.6, zorder=3)  # fmt: skip
        ax.axvline(0, color="black", lw=0.8)
        ax.set_yticks(list(y.values()), list(y))
        ax.set_xlabel(f"{TITLES[metric]}: (method − all_features) / all_features, %", fontsize=8)
        better = "left" if res[metric]["lower_is_better"] else "right"
        ax.set_title(f"{TITLES[metric]} ({better} of 0: better than all features)", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(
        "Real binary suites: grey dots one suite each; bar the mean over suites and its 95 % bootstrap "
        "interval; green/red: Holm-adjusted Wilcoxon p < 0.05 over the suites",
        fontsize=9,
    )
    fig.tight_layout()
    path = out / "binary-vs-all-features.png"
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return path


# -- synthetic-binary --------------------------------------------------------------------------------
def synthetic_section(path: Path | None) -> list[str]:
    lines = [f"## `{SYNTHETIC}`: the paper's process with a logistic link", ""]
    if path is None:
        return lines + ["Not run (no results folder and no shipped reference).", ""]
    model = default_downstream(SYNTHETIC)
    report = load_report(path, SYNTHETIC)
    analysis = Analysis(report)
    cells = report.cells()
    cells = cells[cells["r_train"] == "all"]
    metrics = [m for m in ("rank_avg", "f1", PRIMARY, "auc_mean", "accuracy_mean") if m in report.headline]
    n_units = report.per_run().query("r_train != 'all'").groupby(["setting", "r_train", "run"]).ngroups
    lines += [
        f"Downstream model: {model}. Unit: each (r_train, run) block, a fresh draw of the process "
        f"({n_units} blocks in all). Mean over blocks [95 % percentile bootstrap]; rank average: the mean "
        "rank of the 5 stable variables S1..S5 in the method's ranking (3.0 the best possible), F1 of its "
        "top 5 against them. **Bold**: the tested best set of the column (the best mean and every method "
        "the pairwise Wilcoxon tests, Holm over the methods' pairs, could not show worse).",
        "",
    ]
    best = analysis.best_sets()
    for setting in dict.fromkeys(cells["setting"]):
        c = cells[cells["setting"] == setting]
        order = c[c["metric"] == metrics[0]].sort_values("mean")["method"]
        rows = []
        for method in order:
            row = [method]
            for m in metrics:
                text = _cell(c, method, m)
                if method in best.get((setting, "all", m), set()):
                    text = f"**{text}**"
                row.append(text)
            rows.append(row)
        headers = ["method"] + [TITLES.get(m, m) for m in metrics]
        lines += [
            f"**{setting}**",
            "",
            tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True),
            "",
        ]
    notes = analysis.best_notes()
    if notes:
        lines += [" ".join(notes), ""]
    return lines


# -- the report --------------------------------------------------------------------------------------
def write_report(root: Path, suites, timings: dict, jobs: int) -> str:
    have = {n: source(root, n) for n in suites}
    numbers, partial = {}, {}
    for n in suites:
        if have[n] is None:
            continue
        try:
            numbers[n] = suite_numbers(have[n], n)
        except OodfsError:  # a run that stored nothing yet
            partial[n] = 0
    # only a suite's full grid is reported: a partial run is named in the run table, nothing more
    partial |= {n: x["report"].tasks.groupby(["r_train", "run"]).ngroups for n, x in numbers.items()
                if not complete(x["report"], n)}  # fmt: skip
    numbers = {n: x for n, x in numbers.items() if n not in partial}
    ran = whole = [n for n in suites if n in numbers and n != SYNTHETIC]
    lines = [
        "# Binary outcomes: does feature selection help a classifier under a real shift?",
        "",
        "Generated by `python benchmarks/binary_results.py` (docs/PROTOCOL.md sections 14-16). Every "
        "method's grid point is chosen by the `val` rule (the log-loss on held-out rows of the training "
        "environment; no test data). Every verdict comes from the one analysis the leaderboard, `oodfs "
        "compare` and the results page read (`oodfs.report.analysis`): per suite, each method against "
        "`all_features` (the same downstream model on every feature), two-sided Wilcoxon signed-rank over "
        "the suite's units, Holm over the 10 methods, α = 0.05; across suites, the suite as the unit "
        "(Demšar 2006). A real binary suite's unit is its training environment (2 to 4 of them, each "
        "its runs' mean): with so few, no test inside one suite can reach 0.05 after correction, so the "
        "per-suite tables give effects and intervals and the verdict is the one across suites.",
        "",
    ]
    if len(whole) >= 2:
        text, res = across_section(numbers, whole)
        lines += text
        fig_dir = HERE / "figures"
        fig_dir.mkdir(exist_ok=True)
        fig = forest_figure(res, fig_dir)
        lines += [f"![each method against all_features across suites]({fig.relative_to(HERE)})", ""]
    else:
        lines += ["## Verdict across suites", "", f"Not enough complete suites ({len(whole)}) to test.", ""]
    lines += [
        "## Per suite",
        "",
        "Per suite (default downstream model): its units, `all_features` and `prior` mean test log-loss "
        "[95 % bootstrap over the units], the method closest to or below `all_features` (difference "
        "[95 % t]), "
        "`all_features`' AUC and accuracy, and the per-suite verdicts.",
        "",
        tabulate(
            [verdict_row(n, numbers[n]) for n in ran],
            headers=[
                "suite",
                "units",
                "all_features log-loss",
                "prior log-loss",
                "lowest method − all_features",
                "all_features AUC",
                "all_features accuracy",
                "verdicts (Holm, α 0.05)",
            ],  # fmt: skip
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
    ]
    if NOTES.is_file():
        lines += [NOTES.read_text().strip(), ""]
    lines += synthetic_section(have.get(SYNTHETIC) if SYNTHETIC in numbers else None)
    lines += ["## What was run", ""]
    run_rows = []
    for name in suites:
        s = load_suite(name)
        total = len(s.r_train) * s.runs * len(s.settings)
        status = "not run"
        if name in numbers:
            status = f"full grid ({total} blocks)"
        elif name in partial:
            status = f"{partial[name]} of {total} blocks (not reported)"
        run_rows.append([f"`{name}`", s.unit, len(s.r_train), s.runs, f"{s.n_train} / {s.n_val}", s.k,
                         default_downstream(name), status,
                         f"{timings[name] / 60:.0f} min" if name in timings else ""])  # fmt: skip
    lines += [
        tabulate(
            run_rows,
            headers=[
                "suite",
                "unit",
                "training envs",
                "runs",
                "n_train / n_val",
                "k",
                "downstream",
                "ran",
                f"wall (--jobs {jobs})",
            ],  # fmt: skip
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
    ]
    for name in ran:
        n = numbers[name]
        s = load_suite(name)
        lines += [f"### `{name}`", "", f"{s.description}. Shift: {s.card.get('shift', '')}.", ""]
        lines += [comparison_table(n), ""]
        report = n["report"]
        methods = [m for m in report.chosen["method"].unique() if report.kind(m) != "yardstick"]
        lines += [
            "What the methods selected (the chosen grid points):",
            "",
            selection_table(report, methods),
            "",
        ]
        for m, bad, total, why in failures(report):
            lines.append(f"- failed: `{m}` {bad} of {total} tasks — {why}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default="results/binary", help="folder holding one results folder per suite")
    p.add_argument("--jobs", type=int, default=1, help="worker processes of each run")
    p.add_argument("--report-only", action="store_true", help="report on the existing runs")
    p.add_argument("--timings", help="JSON {suite: wall seconds} of runs made elsewhere, for the table")
    p.add_argument("--suites", help="comma-separated suites (default: every binary suite)")
    p.add_argument("--ship", action="store_true", help="write the complete suites' reference results first")
    p.add_argument("--out", default=str(HERE / "BINARY_RESULTS.md"))
    args = p.parse_args(argv)
    root = Path(args.root)
    suites = args.suites.split(",") if args.suites else [*real_binary_suites(), SYNTHETIC]
    timings = json.loads(Path(args.timings).read_text()) if args.timings else {}
    if not args.report_only:
        timings.update(run_missing(root, suites, args.jobs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if args.ship:
            print(f"shipped: {', '.join(ship(root, suites)) or 'none'}", file=sys.stderr)
        text = write_report(root, suites, timings, args.jobs)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
