"""The stable line (IAMB, HITON-MB, HRM, RSW) against DWR and SRDO on the paper's synthetic grid.

    oodfs bench --suite synthetic --methods iamb,hiton_mb,hrm,rsw --jobs 2 --out RUN   # (optional)
    python benchmarks/stable_line/stable_line_synth.py [RUN ...] \
        [--out benchmarks/stable_line/STABLE_LINE_SYNTH.md]

Reads the shipped `synthetic-default` reference (every method of the suite's list, the paper's
grid: settings mlp and poly, seven training bias rates x five runs) and, if given, results
folders RUN whose rows replace the reference's for the methods they hold. The `val` rule picks
each task's grid point (the suite's rule).

Per method and setting: means over the 35 (r_train, run) blocks with 95 % percentile-bootstrap
intervals (inside each metric's range) of rank average (mean rank of S1..S5), F1 of the top 5
against S1..S5, and test RMSE mean and sd over the ten test bias rates; the share of blocks whose
top 5 is exactly S1..S5 (``all S``) and whose top 5 holds V4 or V5, the variables the data's
selection bias ties to Y in training (``V4/V5``); the median seconds of a task's fit (the grid).

Claims: each of the four against DWR and against SRDO (8 per setting and metric), paired over
the 35 blocks: two-sided Wilcoxon signed-rank (oodfs.report.stats.pairwise_tests), Holm over the
8 claims of each (setting, metric), mean difference a − b with its 95 % percentile-bootstrap
interval; KerHRM's two claims (added later) the same, Holm over those two. The hand-written
verdicts at the end of an existing report (from
"## Verdicts (written by hand") are kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from oodfs.report.report import Report
from oodfs.results.store import ResultStore, load_results
from oodfs.run.reference import load_reference

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))  # report_tables.py
from report_tables import claim_line, claim_rows, means_table, write_keeping_verdicts

NEW = ["iamb", "hiton_mb", "hrm", "rsw"]
#: added after the four's verdicts were written: its claims are a Holm family of their own, so
#: adding it moves none of theirs
LATER = ["kerhrm"]
BASES = ["dwr", "srdo"]
CLAIM_FAMILIES = [[(a, b) for a in NEW for b in BASES], [(a, b) for a in LATER for b in BASES]]
#: (metric, lower is better, what it is)
METRICS = [
    ("rank_avg", True, "mean rank of S1..S5 in the ranking (3 is perfect)"),
    ("f1", False, "F1 of the top 5 against S1..S5"),
    ("rmse_mean", True, "test RMSE, mean over the ten test bias rates"),
    ("rmse_std", True, "test RMSE, sd over the ten test bias rates"),
]
STABLE = {"S1", "S2", "S3", "S4", "S5"}
SPURIOUS = {"V4", "V5"}


def load(runs: list[str]) -> tuple[pd.DataFrame, list, list[str]]:
    """The reference's rows with each RUN's methods replacing the reference's, the metric
    declarations and the method order (the suite's, then the runs')."""
    ref = load_reference("synthetic", "default")
    frames, methods = [ref.results], list(ref.methods)
    for path in runs:
        rows = load_results(path)
        rows = rows[rows["setting"].isin(["mlp", "poly"])]
        frames[0] = frames[0][~frames[0]["method"].isin(set(rows["method"]))]
        frames.append(rows[[c for c in frames[0].columns if c in rows]])
        methods += [m for m in dict.fromkeys(rows["method"]) if m not in methods]
        for c in ("setting", "method", "r_train"):
            frames[-1][c] = frames[-1][c].astype(str)
    results = pd.concat(frames, ignore_index=True)
    results["r_train"] = results["r_train"].astype(str)
    metrics = ref.meta.get("metrics") or (ResultStore(runs[0]).get_meta("metrics") if runs else None)
    return results, metrics, methods


def add_set_columns(chosen: pd.DataFrame) -> pd.DataFrame:
    """``all_S`` and ``has_V45`` of each chosen fit, from its stored scores."""
    chosen = chosen.copy()
    all_s, v45 = [], []
    for names, scores, k in zip(chosen["feature_names"], chosen["scores"], chosen["k"]):
        names = json.loads(names)
        order = [names[j] for j in np.argsort(-np.asarray(json.loads(scores), dtype=float), kind="stable")]
        top = set(order[: int(k)])
        all_s.append(float(top == STABLE))
        v45.append(float(bool(top & SPURIOUS)))
    chosen["all_S"], chosen["has_V45"] = all_s, v45
    return chosen


def section(results: pd.DataFrame, metrics, methods: list[str]) -> list[str]:
    report = Report(results, "val", metrics, methods)
    chosen = add_set_columns(report.chosen)
    fit = report.points.groupby(["setting", "method"])["fit_seconds"].median()
    blocks = chosen.groupby(["setting", "method"]).size()
    shown = [m for m in methods if m in set(chosen["method"])]
    lines = [
        "Blocks per setting and method: "
        + ", ".join(f"{m} {int(blocks.get(('mlp', m), 0))}/{int(blocks.get(('poly', m), 0))}" for m in shown)
        + " (mlp/poly). Means over blocks with 95 % percentile-bootstrap intervals.",
    ]
    cols = [m for m, _, _ in METRICS] + ["all_S", "has_V45"]
    for setting, by_setting in chosen.groupby("setting", sort=False):
        fit_s = ("fit s", lambda m, _, s=setting: f"{fit.get((s, m), np.nan):.2f}")
        lines += ["", f"### Setting `{setting}`", "", *means_table(by_setting, shown, cols, extra=fit_s)]
        lines += [
            "",
            "| metric | a | b | pairs | mean a − b [95 % bootstrap] | p | Holm family | p (Holm) | verdict |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for (metric, lower, _), claims in ((m, c) for m in METRICS for c in CLAIM_FAMILIES):
            rows = claim_rows(by_setting, claims, metric, lower, orient=True)
            lines += [claim_line(r, with_family=True) for r in rows]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", help="results folders whose methods replace the reference's")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    results, metrics, methods = load(args.runs)
    source = "the shipped reference `synthetic-default`" + (
        " and " + ", ".join(f"`{r}`" for r in args.runs) if args.runs else ""
    )
    lines = [
        "# The stable line on the paper's synthetic grid: IAMB, HITON-MB, HRM, RSW, KerHRM against DWR"
        " and SRDO",
        "",
        "Written by `python benchmarks/stable_line/stable_line_synth.py` (its docstring says what is "
        "compared and how).",
        f"Results: {source}; rule `val`; the unit of replication the (r_train, run) block (35 per setting).",
        "",
        "Columns: " + "; ".join(f"`{m}` {what}" for m, _, what in METRICS) + "; `all_S` share of blocks "
        "whose top 5 is exactly S1..S5; `has_V45` share whose top 5 holds V4 or V5; fit s: median seconds "
        "of a task's fit, the method's whole grid on one data set (the four from one run with `--jobs 2`, "
        "the others from the reference's run, under another load: compare within a group).",
        "",
        *section(results, metrics, methods),
        "",
    ]
    text = "\n".join(lines)
    if args.out:
        text = write_keeping_verdicts(text, args.out)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
