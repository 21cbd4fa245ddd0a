"""Run the binary suites and write their verdicts (benchmarks/binary/BINARY_RESULTS.md).

    python benchmarks/binary/binary_results.py --root results/binary \
        --jobs 2  # run what is missing, then report
    python benchmarks/binary/binary_results.py --root results/binary --replay-fits \
        --downstream mlp  # second model
    python benchmarks/binary/binary_results.py --root results/binary --report-only

Each binary suite (the 11 real ones on the `binary_table` environment and `synthetic-binary`) runs
its full grid into ROOT/<suite> with its default downstream model (the suite's first: `logistic`
for the real suites, `mlp` for the synthetic one) and, for a real suite, its k grid. The second
model of a real suite (`mlp`) runs into ROOT/mlp/<suite>; with ``--replay-fits`` a run reads every
method's fit from the suite's shipped reference and trains only the downstream model
(benchmarks/shared/replay.py), so a second model or a k grid refits no selector. A suite not run in ROOT is
read from its shipped reference (the default model), or from benchmarks/binary/runs/<model>/ (the
other model's runs, kept there by ``--ship``). The verdicts come from the one analysis every output
reads (oodfs.report.analysis), as in benchmarks/real_data/realdata.py, whose helpers this script imports:

* per real suite and downstream model, each method against `all_features` on the mean test
  log-loss (the validation loss of the selection rules), with AUC and accuracy beside: two-sided
  Wilcoxon signed-rank over the suite's units (its training environments), Holm over the methods;
  at the suite's fixed k (each method's first block of points) and, where the run has the k grid,
  with k chosen on validation;
* across the real suites, the suite as the unit (Demšar 2006): each method's mean relative
  difference to `all_features`, Wilcoxon over the suites, Holm over the methods, a Friedman test
  with average ranks, and the family of independence weighting against the other selectors;
* synthetic-binary: rank average and F1 against the known stable set, with the log-loss.

Writes benchmarks/binary/BINARY_RESULTS.md and benchmarks/binary/figures/binary-*.png. With ``--ship``, each
suite whose full grid is in ROOT first becomes shipped reference results
(oodfs/run/reference/<suite>-default.*, oodfs.run.reference.write_reference; the default model) and its
other model's complete run benchmarks/binary/runs/<model>/<suite>.*; the report then reads the same numbers
whether ROOT is there or not.
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
from tabulate import tabulate

# the real-data study's tables and the shared replay (benchmarks/real_data/, benchmarks/shared/)
sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("shared", "real_data")]
from realdata import _ci, failures, selection_table
from replay import fixed_k_block, replay_run

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


def run_dir(root: Path, name: str, model: str) -> Path:
    """Where a suite's run with downstream ``model`` lives: ROOT/<suite> for its default model,
    ROOT/<model>/<suite> for another."""
    return root / name if model == default_downstream(name) else root / model / name


def run_missing(root: Path, suites, jobs: int, model: str | None = None, replay: bool = False) -> dict:
    """Run (or resume) each suite with ``model`` (default: the suite's default downstream model);
    ``replay``: every method's fit read from the suite's shipped reference, only the downstream
    model trained (benchmarks/shared/replay.py; one process). The wall seconds of each."""
    seconds = {}
    for name in suites:
        m = model or default_downstream(name)
        out = run_dir(root, name, m)
        if replay:
            stored = shipped_dir() / f"{name}-default.parquet"
            seconds[name] = replay_run(name, stored, out, {"downstream": (m,)})
            continue
        t0 = time.perf_counter()
        cmd = ["oodfs", "bench", "--suite", name, "--jobs", str(jobs), "--downstream", m,
               "--out", str(out), "--quiet", "--resume"]  # fmt: skip
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        seconds[name] = time.perf_counter() - t0
    return seconds


def complete(report: Report, name: str) -> bool:
    """Has every (r_train, run) block of the suite a row for every method?"""
    s = load_suite(name)
    blocks = report.tasks.groupby(["setting", "r_train", "run"]).ngroups
    return blocks == len(s.r_train) * s.runs * len(s.settings)


#: where the complete runs of a real suite's other downstream model are kept (``--ship``), since
#: a shipped reference holds the suite's default model alone: <model>/<suite>.parquet and its provenance
RUNS = HERE / "runs"


def ship(root: Path, suites) -> list[str]:
    """Write the reference results of every suite whose full grid is in ROOT, and the complete runs
    of its other downstream models into RUNS; their names."""
    from oodfs.run.reference import write_reference

    shipped = []
    for name in suites:
        for model in load_suite(name).downstream:
            folder = run_dir(root, name, model)
            if not (folder / "results.sqlite").exists():
                continue
            try:
                report = Report.from_path(folder, downstream=model, unit=load_suite(name).unit)
            except OodfsError:  # a run that stored nothing yet
                continue
            if not (complete(report, name) and (report.tasks["status"] == "ok").any()):
                continue
            default = model == default_downstream(name)
            out = shipped_dir() / f"{name}-default.parquet" if default else RUNS / model / f"{name}.parquet"
            write_reference(folder, out)
            shipped.append(name if default else f"{name} ({model})")
    return shipped


def source(root: Path, name: str, model: str | None = None) -> Path | None:
    """The suite's run with ``model`` (default: its default one) in ROOT, else its shipped results
    (the reference for the default model, RUNS for another), else None."""
    model = model or default_downstream(name)
    folder = run_dir(root, name, model)
    if (folder / "results.sqlite").exists() or (folder / "results.parquet").exists():
        return folder
    default = model == default_downstream(name)
    shipped = shipped_dir() / f"{name}-default.parquet" if default else RUNS / model / f"{name}.parquet"
    return shipped if shipped.is_file() else None


def read_rows(path: Path) -> tuple[pd.DataFrame, list, list, str | None]:
    """A run's result rows and (metric declarations, method order, task), from a results folder or
    a written reference (its provenance file holds what a bare .parquet file does not)."""
    from oodfs.results.store import ResultStore, load_results

    if path.suffix != ".parquet":
        store = ResultStore(path)
        suite = store.invocations()[-1]["suite"]
        return load_results(path), store.get_meta("metrics"), list(suite["methods"]), suite.get("task")
    meta = json.loads(path.with_suffix(".json").read_text())
    return load_results(path), meta["metrics"], meta["methods"], meta["suite_identity"].get("task")


def has_k_grid(rows: pd.DataFrame) -> bool:
    """Was the run made with a k grid (rows beyond each method's first block of points)?"""
    return len(fixed_k_block(rows)) < len(rows)


def load_report(path: Path, name: str, model: str | None = None, fixed: bool = False) -> tuple[Report, bool]:
    """The suite's report under ``model`` (default: its default one) with the `val` rule, and whether
    the run has the suite's k grid; ``fixed``: at the suite's fixed k alone (each method's first block
    of points, benchmarks/shared/replay.py)."""
    rows, metrics, order, task = read_rows(Path(path))
    grid = has_k_grid(rows)
    if fixed:
        rows = fixed_k_block(rows)
    model = model or default_downstream(name)
    return Report(rows, "val", metrics, order, model, None, unit=load_suite(name).unit, task=task), grid


def suite_numbers(path: Path, name: str, model: str | None = None, fixed: bool = False) -> dict:
    """A suite's report and verdicts under ``model`` with the `val` rule; ``fixed``: at the suite's
    fixed k alone (each method's first block of points, benchmarks/shared/replay.py), else with k chosen on
    validation where the run has the suite's k grid."""
    report, grid = load_report(path, name, model, fixed)
    analysis = Analysis(report)
    cells = report.cells()
    cells = cells[cells["r_train"] == "all"]
    vs = {m: versus_yardstick(report, m) for m in (PRIMARY, *BESIDE) if m in report.headline}
    units = int(vs[PRIMARY]["n_pairs"].max()) if len(vs.get(PRIMARY, [])) else 0
    return dict(report=report, analysis=analysis, cells=cells, vs=vs, units=units, model=report.downstream,
                k_grid=grid and not fixed)  # fmt: skip


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


def across_section(numbers: dict, suites, title: str) -> tuple[list[str], dict]:
    res = {m: across(numbers, suites, m) for m in (PRIMARY, *BESIDE)}
    main = res[PRIMARY]
    m = main["methods"]
    better = list(m.loc[m["verdict"].str.startswith("better"), "method"])
    worse = list(m.loc[m["verdict"].str.startswith("worse"), "method"])
    lines = [
        f"### {title}",
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


def forest_figure(res: dict, out: Path, name: str, title: str) -> Path:
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
        f"Real binary suites, {title}: grey dots one suite each; bar the mean over suites and its 95 % "
        "bootstrap interval; green/red: Holm-adjusted Wilcoxon p < 0.05 over the suites",
        fontsize=9,
    )
    fig.tight_layout()
    path = out / f"binary-vs-all-features-{name}.png"
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return path


# -- synthetic-binary --------------------------------------------------------------------------------
def synthetic_section(path: Path | None) -> list[str]:
    lines = [f"## `{SYNTHETIC}`: the paper's process with a logistic link", ""]
    if path is None:
        return lines + ["Not run (no results folder and no shipped reference).", ""]
    model = default_downstream(SYNTHETIC)
    report, _ = load_report(path, SYNTHETIC)
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
#: the downstream models of the real binary suites, the default one first
MODELS = ("logistic", "mlp")
#: how each variant is named in the report: (model, k chosen on validation?)
VARIANT_TITLES = {
    ("logistic", True): "logistic regression, k chosen on validation",
    ("logistic", False): "logistic regression, the suite's fixed k",
    ("mlp", True): "MLP, k chosen on validation",
    ("mlp", False): "MLP, the suite's fixed k",
}


def all_numbers(root: Path, suites) -> tuple[dict, dict, dict]:
    """Per (model, validated k?) variant, each complete suite's numbers; the partial runs
    ({(suite, model): blocks}) and the runs' sources."""
    numbers, partial, sources = {v: {} for v in VARIANT_TITLES}, {}, {}
    for n in suites:
        for model in [default_downstream(n)] if n == SYNTHETIC else MODELS:
            path = source(root, n, model)
            if path is None:
                continue
            sources[(n, model)] = path
            try:
                fixed = suite_numbers(path, n, model, fixed=True)
            except OodfsError:  # a run that stored nothing yet
                partial[(n, model)] = 0
                continue
            # only a suite's full grid is reported: a partial run is named in the run table, nothing more
            if not complete(fixed["report"], n):
                partial[(n, model)] = fixed["report"].tasks.groupby(["setting", "r_train", "run"]).ngroups
                continue
            numbers[(model, False)][n] = fixed
            if n != SYNTHETIC and has_k_grid(read_rows(Path(path))[0]):
                numbers[(model, True)][n] = suite_numbers(path, n, model)
    return numbers, partial, sources


def per_suite_table(numbers: dict, suites) -> str:
    return tabulate(
        [verdict_row(n, numbers[n]) for n in suites],
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
    )


def k_grid_section(numbers: dict, suites) -> list[str]:
    """For each model run with the k grid: the k the rule chose, and how each verdict moves
    between the fixed k and k chosen on validation."""
    from realdata import chosen_k

    lines = [
        "## The k grid",
        "",
        "A real binary suite with a k grid takes the regression suites' rule (its fixed k, 1, 2, 3, 5, 8, "
        "13 and 21 below its number of features, and every feature; docs/PROTOCOL.md sections 10 and 16); "
        "the suites below declare it, their k-grid runs complete. "
        "Every grid point of every method is evaluated at every size and the `val` rule chooses (grid "
        "point, k) jointly on the held-out rows of the training environment, never on a test environment. "
        "The fixed-k numbers are the same runs' first block of points, exactly what a run without the grid "
        "stores. At k = every feature a method trains the same model as `all_features`.",
        "",
    ]
    for model in MODELS:
        validated, fixed = numbers[(model, True)], numbers[(model, False)]
        have = [n for n in suites if n in validated and n in fixed]
        if not have:
            lines += [f"**{model}**: not run with the k grid.", ""]
            continue
        methods = list(dict.fromkeys(m for n in have for m in validated[n]["vs"][PRIMARY]["method"]))
        rows, moved, total = [], 0, 0
        for n in have:
            a = fixed[n]["vs"][PRIMARY].set_index("method")
            b = validated[n]["vs"][PRIMARY].set_index("method")
            cells = []
            for m in methods:
                if m not in a.index or m not in b.index:
                    cells.append("")
                    continue
                da, db = a.loc[m, "mean_diff"], b.loc[m, "mean_diff"]
                moved, total = moved + (np.sign(da) != np.sign(db)), total + 1
                cells.append(f"{da:+.3f} → {db:+.3f}")
            rows.append([f"`{n}`"] + cells)
        lines += [
            f"**{model}**: mean test log-loss of each method minus `all_features`'s, at the fixed k → with "
            f"k chosen on validation (mean over the suite's units; negative: the method beats every feature; "
            f"{moved} of {total} differences change sign)",
            "",
            tabulate(rows, headers=["suite"] + methods, tablefmt="github", disable_numparse=True),
            "",
        ]
        rows = []
        for n in have:
            ck = chosen_k(validated[n]["report"])
            rows.append(
                [f"`{n}`", load_suite(n).k]
                + [f"{ck.loc[m, 'median']:g} ({100 * ck.loc[m, 'all']:.0f} %)" if m in ck.index else ""
                   for m in methods]
                + [f"{100 * (ck['all'] * ck['n']).sum() / ck['n'].sum():.0f} %"]
            )  # fmt: skip
        lines += [
            f"**{model}**: chosen k per suite and method, the median over the suite's fits (in brackets: "
            "the share of fits where the rule chose every feature); last column: that share over all "
            "methods.",
            "",
            tabulate(rows, headers=["suite", "fixed k"] + methods + ["every feature"], tablefmt="github",
                     disable_numparse=True),
            "",
        ]  # fmt: skip
    return lines


def write_report(root: Path, suites, timings: dict, jobs: int) -> str:
    """``timings``: {suite: wall seconds} of the default model's runs, {"<model>/<suite>": ...} of
    another model's."""
    numbers, partial, sources = all_numbers(root, suites)
    real = [n for n in suites if n != SYNTHETIC]
    lines = [
        "# Binary outcomes: does feature selection help a classifier under a real shift?",
        "",
        "Generated by `python benchmarks/binary/binary_results.py` (docs/PROTOCOL.md sections 14-16). Every "
        "method's grid point (and, with the k grid, its set size) is chosen by the `val` rule (the log-loss "
        "on held-out rows of the training environment; no test data). Two downstream models, each on the "
        "same fits of every method: L2 logistic regression (`logistic`, the suites' default) and the "
        "paper's MLP with a logistic output (`mlp`; its runs replayed the stored fits, "
        "benchmarks/shared/replay.py, and trained only the MLP). Every verdict comes from the one analysis "
        "the "
        "leaderboard, `oodfs compare` and the results page read (`oodfs.report.analysis`): per suite, "
        "each method against `all_features` (the same downstream model on every feature), two-sided "
        "Wilcoxon signed-rank over the suite's units, Holm over the 10 methods, α = 0.05; across suites, "
        "the suite as the unit (Demšar 2006). A real binary suite's unit is its training environment "
        "(2 to 4 of them, each its runs' mean): with so few, no test inside one suite can reach 0.05 after "
        "correction, so the per-suite tables give effects and intervals and the verdict is the one across "
        "suites.",
        "",
        "## Verdict across suites",
        "",
    ]
    reported = {}
    for variant, title in VARIANT_TITLES.items():
        whole = [n for n in real if n in numbers[variant]]
        if variant[1] and not whole:
            continue  # this model was not run with the k grid: the k grid section says so
        if len(whole) < 2:
            lines += [f"### {title}", "", f"Not enough complete suites ({len(whole)}) to test.", ""]
            continue
        reported[variant] = whole
        text, res = across_section(numbers[variant], whole, f"{title} ({len(whole)} suites)")
        lines += text
        fig_dir = HERE / "figures"
        fig_dir.mkdir(exist_ok=True)
        name = f"{variant[0]}-{'validated' if variant[1] else 'fixed'}-k"
        fig = forest_figure(res, fig_dir, name, title)
        lines += [f"![each method against all_features across suites, {title}]({fig.relative_to(HERE)})", ""]
    lines += [
        "## Per suite",
        "",
        "Per suite: its units, `all_features` and `prior` mean test log-loss [95 % bootstrap over the "
        "units], the method closest to or below `all_features` (difference [95 % t]), `all_features`' "
        "AUC and accuracy, and the per-suite verdicts.",
        "",
    ]
    for variant, whole in reported.items():
        lines += [f"**{VARIANT_TITLES[variant]}**", "", per_suite_table(numbers[variant], whole), ""]
    if NOTES.is_file():
        lines += [NOTES.read_text().strip(), ""]
    lines += k_grid_section(numbers, real)
    synthetic = (SYNTHETIC, default_downstream(SYNTHETIC))
    done = SYNTHETIC in numbers[(synthetic[1], False)]
    lines += synthetic_section(sources[synthetic] if done else None)
    lines += [
        "## What was run",
        "",
        "Wall: the run that made the results: a full grid (every method fitted) or a replay of the "
        "shipped fits (only the downstream model trained; benchmarks/shared/replay.py, one process), on a "
        "machine shared with other agents' work, so the times compare only runs made under the same load "
        "(docs/PROTOCOL.md section 16 gives the loads).",
        "",
    ]
    run_rows = []
    for name in suites:
        s = load_suite(name)
        total = len(s.r_train) * s.runs * len(s.settings)
        for model in [default_downstream(name)] if name == SYNTHETIC else MODELS:
            status = "not run"
            if name in numbers[(model, False)]:
                grid = "k grid" if name in numbers[(model, True)] else "fixed k"
                status = f"full grid ({total} blocks), {grid}"
            elif (name, model) in partial:
                status = f"{partial[(name, model)]} of {total} blocks (not reported)"
            key = name if model == default_downstream(name) else f"{model}/{name}"
            run_rows.append([f"`{name}`", s.unit, len(s.r_train), s.runs, f"{s.n_train} / {s.n_val}", s.k,
                             ", ".join(map(str, s.k_grid)) if s.k_grid else "", model, status,
                             f"{timings[key] / 60:.1f} min" if key in timings else ""])  # fmt: skip
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
                "k grid",
                "downstream",
                "ran",
                "wall",
            ],  # fmt: skip
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
    ]
    for name in real:
        s = load_suite(name)
        lines += [f"### `{name}`", "", f"{s.description}. Shift: {s.card.get('shift', '')}.", ""]
        for variant, whole in reported.items():
            if name not in whole:
                continue
            n = numbers[variant][name]
            lines += [f"**{VARIANT_TITLES[variant]}**", "", comparison_table(n), ""]
        main = next((numbers[v][name] for v in reported if name in numbers[v]), None)
        if main is None:
            continue
        report = main["report"]
        methods = [m for m in report.chosen["method"].unique() if report.kind(m) != "yardstick"]
        lines += [
            f"What the methods selected under {main['model']} (the chosen grid points):",
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
    p.add_argument(
        "--timings",
        help="JSON {suite or <model>/<suite>: wall seconds} of runs made elsewhere, for the run table",
    )
    p.add_argument("--suites", help="comma-separated suites (default: every binary suite)")
    p.add_argument("--downstream", help="the downstream model to run (default: each suite's default)")
    p.add_argument(
        "--replay-fits",
        action="store_true",
        help="replay every method's fit from the suite's shipped reference and train only the "
        "downstream model (into ROOT/<suite>, or ROOT/<model>/<suite> for a non-default model)",
    )
    p.add_argument("--ship", action="store_true", help="write the complete suites' reference results first")
    p.add_argument("--out", default=str(HERE / "BINARY_RESULTS.md"))
    args = p.parse_args(argv)
    root = Path(args.root)
    every = [*real_binary_suites(), SYNTHETIC]
    suites = args.suites.split(",") if args.suites else every
    unknown = [s for s in suites if s not in every]
    if unknown:
        print(f"binary_results.py: unknown suite {unknown[0]!r} in --suites; valid: {', '.join(every)}",
              file=sys.stderr)  # fmt: skip
        return 2
    timings = json.loads(Path(args.timings).read_text()) if args.timings else {}
    if not args.report_only:
        timings.update(run_missing(root, suites, args.jobs, args.downstream, args.replay_fits))
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
