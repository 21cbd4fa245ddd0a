"""The multi-environment report: do label-using methods beat DWR/SRDO when labels exist?

    oodfs bench --suite synthetic-multienv --out results/synthetic-multienv --jobs 1
    oodfs bench --suite irm-sem --out results/irm-sem --jobs 1
    python benchmarks/multienv/multienv_report.py results/synthetic-multienv results/irm-sem \
        --out benchmarks/multienv/MULTIENV_RESULTS.md

For each suite and each model-selection rule (val, train-domain, loeo, oracle): the averaged
leaderboard cells (mean over runs of each run's average over r_train, 95 % percentile-bootstrap
interval over the runs, inside the metric's range), and the
tested comparison of every label-using method (icp, anchor, irm) with each label-free IW method
(dwr, srdo) and the pooled baselines (ols, lasso): paired two-sided Wilcoxon signed-rank, Holm-
corrected, with the mean difference and its 95 % percentile-bootstrap interval -- over every
(setting, r_train, run) block of the suite (one family per metric), and per setting over (r_train,
run) blocks.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from tabulate import tabulate

from oodfs.report import stats
from oodfs.report.report import Report

LABELLED = ("icp", "anchor", "irm")
LABEL_FREE = ("dwr", "srdo", "ols", "lasso")
RULES = ("val", "train-domain", "loeo", "oracle")
ALPHA = 0.05


def fmt_p(p: float) -> str:
    return "—" if pd.isna(p) else f"{p:.3f}" if p >= 0.001 else f"{p:.0e}"


def cells_table(report: Report) -> str:
    cells = report.cells()
    cells = cells[cells["r_train"] == "all"]
    rows = []
    for (setting, method), g in cells.groupby(["setting", "method"], sort=False):
        row = [setting, method]
        for m in report.headline:
            c = g[g["metric"] == m]
            row.append(
                ""
                if c.empty
                else f"{c['mean'].iloc[0]:.3f} [{c['low'].iloc[0]:.3f}, {c['high'].iloc[0]:.3f}]"
            )
        rows.append(row)
    heads = ["setting", "method"] + [
        f"{report.metrics[m].title} {report.metrics[m].arrow}" for m in report.headline
    ]
    return tabulate(rows, headers=heads, tablefmt="github", disable_numparse=True)


def by_training_set(report: Report, metric: str) -> str:
    """One metric per (setting, method) and training set: where a family fails."""
    cells = report.cells()
    cells = cells[(cells["metric"] == metric) & (cells["r_train"] != "all")]
    wide = cells.pivot_table(index=["setting", "method"], columns="r_train", values="mean", sort=False)
    return tabulate(wide.round(3).reset_index(), headers="keys", tablefmt="github", showindex=False)


def comparisons(report: Report, pooled: bool = False) -> tuple[str, dict]:
    """Per setting, or ``pooled``: one family per metric over every (setting, r_train, run) block."""
    values = report.per_run()
    values = values[values["r_train"] != "all"]
    if pooled:
        values = values.assign(
            block=values["setting"].astype(str) + " " + values["r_train"].astype(str), setting="all settings"
        )
    rows, tally = [], {"label-using better": 0, "label-free better": 0, "not distinguishable": 0}
    pair_on = ("block", "run") if pooled else ("r_train", "run")
    for setting in dict.fromkeys(values["setting"]):
        for metric in report.headline:
            info = report.metrics[metric]
            # only the methods of the two lists: the bootstrap of every other pair would be thrown away
            g = values[(values["setting"] == setting) & values["method"].isin(LABELLED + LABEL_FREE)]
            pw = stats.pairwise_tests(
                g,
                metric,
                info.lower_is_better,
                within=("setting",),
                pair_on=pair_on,
                correction="none",
                interval="bootstrap",
            )
            # a label-using method against a label-free one (a method in neither list is not compared)
            a_lab, b_lab = pw["method_a"].isin(LABELLED), pw["method_b"].isin(LABELLED)
            a_free, b_free = pw["method_a"].isin(LABEL_FREE), pw["method_b"].isin(LABEL_FREE)
            pw = pw[(a_lab & b_free) | (a_free & b_lab)]
            if pw.empty:
                continue
            pw = pw.assign(p_adjusted=stats.adjust_pvalues(pw["p"], "holm"))
            for _, r in pw.iterrows():
                lab, free = (r.method_a, r.method_b) if r.method_a in LABELLED else (r.method_b, r.method_a)
                sign = 1 if r.method_a == lab else -1
                diff = sign * r.mean_diff
                lo, hi = sorted([sign * r.diff_low, sign * r.diff_high])
                if r.p_adjusted < ALPHA and diff != 0:
                    verdict = (
                        "label-using better" if (diff < 0) == info.lower_is_better else "label-free better"
                    )
                else:
                    verdict = "not distinguishable"
                tally[verdict] += 1
                rows.append(
                    [
                        setting,
                        info.title,
                        lab,
                        free,
                        r.n_pairs,
                        f"{diff:+.3f}",
                        f"[{lo:+.3f}, {hi:+.3f}]",
                        fmt_p(r.p_adjusted),
                        verdict,
                    ]
                )
    heads = [
        "setting",
        "metric",
        "label-using",
        "label-free",
        "pairs",
        "difference",
        "95 % bootstrap interval",
        "p (Holm)",
        "verdict",
    ]
    return tabulate(rows, headers=heads, tablefmt="github", disable_numparse=True), tally


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="+", type=Path, help="results folders or results tables (.parquet)")
    p.add_argument("--out", type=Path)
    p.add_argument("--labelled", help="comma-separated label-using methods (default: icp,anchor,irm)")
    args = p.parse_args(argv)
    if args.labelled:
        global LABELLED
        LABELLED = tuple(args.labelled.split(","))
    out = []
    for folder in args.folders:
        for rule in RULES:
            table = folder / "results.parquet" if folder.is_dir() else folder  # a folder or a shipped table
            report = Report(pd.read_parquet(table), rule)
            out += [
                f"### Suite `{report.suite}`, model selection `{report.rule.label}`",
                "",
                "Averaged over r_train (mean over runs, 95 % percentile-bootstrap interval):",
                "",
                cells_table(report),
                "",
            ]
            if rule == "val":
                for metric in [m for m in ("f1", "rmse_mean") if m in report.headline]:
                    out += [
                        f"{report.metrics[metric].title} by training set (mean over runs):",
                        "",
                        by_training_set(report, metric),
                        "",
                    ]
            table, tally = comparisons(report, pooled=True)
            n = sum(tally.values())
            out += [
                "Label-using against label-free over every (setting, r_train, run) block of the suite, "
                "paired Wilcoxon, Holm per metric: label-using significantly better in "
                f"**{tally['label-using better']} of {n}**, label-free better in "
                f"**{tally['label-free better']}**, not distinguishable in "
                f"**{tally['not distinguishable']}**.",
                "",
                "<details><summary>Pooled comparisons (difference = label-using − label-free)</summary>",
                "",
                table,
                "",
                "</details>",
                "",
            ]
            table, tally = comparisons(report)
            n = sum(tally.values())
            out += [
                "Label-using against label-free, paired Wilcoxon over (r_train, run), Holm per (setting, "
                f"metric): label-using significantly better in **{tally['label-using better']} of {n}**, "
                f"label-free better in **{tally['label-free better']}**, not distinguishable in "
                f"**{tally['not distinguishable']}**.",
                "",
                "<details><summary>All comparisons (difference = label-using − label-free)</summary>",
                "",
                table,
                "",
                "</details>",
                "",
            ]
    text = "\n".join(out) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
