"""Tested verdicts on the seed paper's Markov-boundary claim from a run of the `markov` suite.

    oodfs bench --suite markov --out results/markov --jobs 2 [--runs 8]
    python benchmarks/markov_boundary/markov_report.py results/markov \
        [--out benchmarks/markov_boundary/MARKOV.md]

The `markov_boundary` environment declares two sets: the minimal stable set {S1..S5} (what the
suite's rank average and F1 score) and the Markov boundary {S1..S5, H, C, W}. From each chosen
fit's stored scores this script adds, per (setting, run, method):

* ``f1_boundary``: F1 of the top 8 features (the boundary's size) against the boundary;
* ``has_C`` / ``has_H`` / ``has_V45``: 1 if the top 5 (the features the downstream model uses)
  hold the shifting child C / the variance parent H / the spurious V4 or V5;
* for the Markov-boundary searches, the boundary they found (the top ``boundary_size``
  features): ``found_recall_stable`` (share of S1..S5 in it) and ``found_recall_boundary``.

Claims are paired comparisons of chosen grid points within a setting over runs: two-sided
Wilcoxon signed-rank tests, Holm-corrected over the claims of each (setting, metric), with the
mean difference and its 95 % percentile-bootstrap interval (oodfs.report.stats). The hand-written
verdicts at the end of an existing report (from "## Verdicts (written by hand") are kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))  # report_tables.py
from report_tables import claim_line, claim_rows, interval_cell, means_table, write_keeping_verdicts

STABLE = {"S1", "S2", "S3", "S4", "S5"}
BOUNDARY = STABLE | {"H", "C", "W"}
SEARCHES = ("iamb", "hiton_mb", "iamb_rcit", "hiton_mb_rcit")
#: four claims per metric: with 8 runs the smallest Wilcoxon p (2/256) survives Holm over at most 6;
#: iamb's chosen fits equal hiton_mb's in most runs (the tables show both)
CLAIMS = [("hiton_mb", "dwr"), ("hiton_mb_rcit", "dwr"), ("hiton_mb", "srdo"), ("hiton_mb_rcit", "srdo")]
#: (metric, lower is better, what it is)
METRICS = [
    ("f1", False, "F1 of the top 5 against the stable set"),
    ("f1_boundary", False, "F1 of the top 8 against the Markov boundary"),
    ("rmse_mean", True, "RMSE mean over the ten test r"),
    ("rmse_max", True, "RMSE max over the ten test r"),
]
SHOWN = ["rank_avg", "f1", "f1_boundary", "has_C", "has_H", "has_V45", "rmse_mean", "rmse_max"]


def add_boundary_columns(chosen):
    chosen = chosen.copy()
    cols = {
        k: []
        for k in ("f1_boundary", "has_C", "has_H", "has_V45", "found_recall_stable", "found_recall_boundary")
    }
    for _, row in chosen.iterrows():
        names = json.loads(row["feature_names"])
        order = [names[j] for j in np.argsort(-np.asarray(json.loads(row["scores"])), kind="stable")]
        top8, top5 = set(order[: len(BOUNDARY)]), set(order[: int(row["k"])])
        hit = len(top8 & BOUNDARY)
        cols["f1_boundary"].append(2 * hit / (len(top8) + len(BOUNDARY)))
        cols["has_C"].append(float("C" in top5))
        cols["has_H"].append(float("H" in top5))
        cols["has_V45"].append(float(bool({"V4", "V5"} & top5)))
        size = row.get("boundary_size")
        if row["method"] in SEARCHES and size == size:
            found = set(order[: int(size)])
            cols["found_recall_stable"].append(len(found & STABLE) / len(STABLE))
            cols["found_recall_boundary"].append(len(found & BOUNDARY) / len(BOUNDARY))
        else:
            cols["found_recall_stable"].append(np.nan)
            cols["found_recall_boundary"].append(np.nan)
    for k, v in cols.items():
        chosen[k] = v
    return chosen


def section(path: str) -> list[str]:
    from oodfs.report.report import Report

    report = Report.from_path(path)
    chosen = add_boundary_columns(report.chosen)
    methods = list(dict.fromkeys(chosen["method"]))
    runs = chosen.groupby("method")["run"].nunique()
    lines = [
        f"Results: `{path}` (rule `{report.rule.name}`, profile `{report.profile}`); runs per method: "
        + ", ".join(f"{m} {runs.get(m, 0)}" for m in methods)
        + ". Means over runs with 95 % percentile-bootstrap intervals (inside each metric's range).",
    ]
    fit_s = ("fit s", lambda _, sub: f"{sub['fit_seconds'].median():.2f}")
    for setting, by_setting in chosen.groupby("setting", sort=False):
        lines += ["", f"### Setting `{setting}`", "", *means_table(by_setting, methods, SHOWN, extra=fit_s)]
        lines += [
            "",
            "The boundary the searches found (its size; shares of the stable set and of the true boundary"
            " in it):",
            "",
            "| method | boundary size | recall of S1..S5 | recall of the boundary |",
            "| --- | --- | --- | --- |",
        ]
        for m in SEARCHES:
            sub = by_setting[by_setting["method"] == m]
            if len(sub):
                found = ("boundary_size", "found_recall_stable", "found_recall_boundary")
                lines.append(f"| {m} | " + " | ".join(interval_cell(sub[c]) for c in found) + " |")
        lines += [
            "",
            "| metric | a | b | pairs | mean a − b [95 % CI] | p | p (Holm) | verdict |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for metric, lower, _ in METRICS:
            lines += [claim_line(r) for r in claim_rows(by_setting, CLAIMS, metric, lower)]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    lines = [
        "# The Markov boundary against the minimal stable set, tested",
        "",
        "Written by `python benchmarks/markov_boundary/markov_report.py` (its docstring says what every "
        "column is).",
        "",
        "Metrics: "
        + "; ".join(f"`{m}` {what}" for m, _, what in METRICS)
        + "; `rank_avg` the mean rank of S1..S5; `has_C`, `has_H`, `has_V45`: share of runs whose top 5 "
        "holds the child C, the variance parent H, V4 or V5; fit s: median fit seconds of the grid.",
        "",
        *section(args.results),
        "",
    ]
    text = "\n".join(lines)
    if args.out:
        write_keeping_verdicts(text, args.out)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
