"""Tested verdicts on SVI's claims from a run of the `svi` suite.

    oodfs bench --suite svi --out results/svi --jobs 1
    python benchmarks/svi_report.py results/svi [--out benchmarks/SVI.md]

SVI's paper claims that under strong collinearity among the stable variables SVI predicts better
across test environments than DWR and SRDO, and that iterating (SVI) beats the one-shot variant
(SVI^d). Each claim is a paired comparison over the runs of the chosen grid points (the suite's
model-selection rule): paired Wilcoxon signed-rank tests, Holm-corrected over the pairs tested
per metric, with the mean difference and its 95 % t interval (oodfs.report.stats).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

CLAIMS = [("svi", "dwr"), ("svi", "srdo"), ("svi", "svi_d"), ("svi_d", "dwr")]
#: (metric, lower is better, what it is)
METRICS = [
    ("rmse_mean", True, "RMSE mean over test r"),
    ("rmse_max", True, "RMSE max over test r"),
    ("mse_mean", True, "MSE mean over test r (the SVI code's 'RMSE average')"),
    ("mse_max", True, "MSE max over test r (the SVI code's 'RMSE max')"),
    ("f1", False, "F1 of the top 5"),
    ("rank_avg", True, "rank average of S1..S5"),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    from oodfs.report.report import Report
    from oodfs.report.stats import adjust_pvalues, cell_summary, pairwise_tests

    report = Report.from_path(args.results)
    chosen = report.chosen
    methods = [m for m in dict.fromkeys(chosen["method"])]
    runs = chosen.groupby("method")["run"].nunique()
    lines = [
        "# SVI's claims, tested",
        "",
        f"Results: `{args.results}` (suite `{report.suite}`, profile `{report.profile}`, rule "
        f"`{report.rule.name}`); runs per method: "
        + ", ".join(f"{m} {runs.get(m, 0)}" for m in methods)
        + ".",
        "",
        "Means over runs with 95 % t intervals.",
        "",
        "| method | " + " | ".join(m for m, _, _ in METRICS) + " | selected (SVI) |",
        "| --- | " + " | ".join("---" for _ in METRICS) + " | --- |",
    ]
    for m in methods:
        sub = chosen[chosen["method"] == m]
        cells = []
        for metric, _, _ in METRICS:
            if metric not in sub or sub[metric].isna().all():
                cells.append("—")
                continue
            cs = cell_summary(sub[metric].dropna().to_numpy())
            cells.append(f"{cs.mean:.3f} [{cs.low:.3f}, {cs.high:.3f}]")
        nsel = sub["n_selected"].mean() if "n_selected" in sub and sub["n_selected"].notna().any() else np.nan
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {'' if np.isnan(nsel) else f'{nsel:.1f}'} |")
    lines += [
        "",
        "## Paired tests (Wilcoxon signed-rank over runs, Holm over the claims of each metric)",
        "",
        "| metric | a | b | pairs | mean a − b [95 % CI] | p | p (Holm) | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for metric, lower, _ in METRICS:
        if metric not in chosen:
            continue
        rows = []
        for a, b in CLAIMS:
            if a not in methods or b not in methods:
                continue
            df = chosen[chosen["method"].isin([a, b])]
            t = pairwise_tests(df, metric, lower, correction="none")
            if len(t):
                rows.append(t.iloc[0])
        padj = adjust_pvalues([r["p"] for r in rows], "holm") if rows else []
        for r, pa in zip(rows, padj):
            better = r["method_b"] if (r["mean_diff"] > 0) == lower else r["method_a"]
            verdict = f"{better} better" if pa < 0.05 else "not distinguishable"
            lines.append(
                f"| {metric} | {r['method_a']} | {r['method_b']} | {r['n_pairs']} | {r['mean_diff']:+.3f} "
                f"[{r['diff_low']:+.3f}, {r['diff_high']:+.3f}] | {r['p']:.3g} | {pa:.3g} | {verdict} |"
            )
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
