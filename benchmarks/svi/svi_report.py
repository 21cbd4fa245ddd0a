"""Tested verdicts on SVI's claims from runs of the `svi` suite and of the paper's `synthetic` suite.

    oodfs bench --suite svi --out results/svi --jobs 2
    oodfs bench --suite svi --profile paper --out results/svi-paper --jobs 2
    oodfs bench --suite synthetic --out results/synthetic --jobs 2
    oodfs bench --suite synthetic --profile paper --methods svi,svi_d --out results/svi-synthetic-paper
    python benchmarks/svi/svi_report.py results/svi results/svi-paper results/synthetic \
        results/paper+results/svi-synthetic-paper [--out benchmarks/svi/SVI.md]

(``A+B`` reads two folders of one suite and profile as one: SVI's paper-profile run beside the
reproduction's paper-profile run of the other methods.)

SVI's paper claims that under strong collinearity among the stable variables SVI predicts better
across test environments than DWR and SRDO, and that iterating (SVI) beats the one-shot variant
(SVI^d); SVI^d is DWR weights followed by a weighted STG, so SVI^d against STG measures what the
weights add to the gates. Each claim is a paired comparison of the chosen grid points (the
suite's model-selection rule) within a setting, over (r_train, run): paired Wilcoxon signed-rank
tests, Holm-corrected over the claims of each (setting, metric), with the mean difference and its
95 % t interval (oodfs.report.stats). One section per results folder; the hand-written verdicts
at the end of an existing report (from "## Verdicts (written by hand") are kept.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))  # report_tables.py
from report_tables import claim_line, claim_rows, means_table, write_keeping_verdicts

CLAIMS = [("svi", "dwr"), ("svi", "srdo"), ("svi", "svi_d"), ("svi_d", "dwr"), ("svi_d", "stg")]
#: (metric, lower is better, what it is)
METRICS = [
    ("rmse_mean", True, "RMSE mean over test r"),
    ("rmse_max", True, "RMSE max over test r"),
    ("mse_mean", True, "MSE mean over test r (the SVI code's 'RMSE average')"),
    ("mse_max", True, "MSE max over test r (the SVI code's 'RMSE max')"),
    ("beta_l1", True, "β L1 error of OLS on the top 5"),
    ("beta_l2", True, "β L2 error (Euclidean norm) of OLS on the top 5"),
    ("f1", False, "F1 of the top 5"),
    ("rank_avg", True, "rank average of S1..S5"),
]


def _report(path: str):
    """The report of a results folder, or of ``A+B``: two folders of one suite and profile read as
    one (a run of SVI beside an earlier run of the other methods; paired on (setting, r_train, run))."""
    import pandas as pd

    from oodfs.report.report import Report
    from oodfs.results.store import ResultStore, load_results

    if "+" not in path:
        return Report.from_path(path)
    folders = path.split("+")
    declared = {}
    for folder in folders:
        declared.update({m["name"]: m for m in ResultStore(folder).get_meta("metrics") or []})
    results = pd.concat([load_results(folder) for folder in folders], ignore_index=True)
    return Report(results, "val", list(declared.values()))


def section(path: str) -> list[str]:
    report = _report(path)
    chosen = report.chosen
    methods = list(dict.fromkeys(chosen["method"]))
    runs = chosen.groupby("method")["run"].nunique()
    metrics = [(m, lower, what) for m, lower, what in METRICS if m in chosen and chosen[m].notna().any()]
    lines = [
        f"## Suite `{report.suite}`, profile `{report.profile}`",
        "",
        f"Results: `{path}` (rule `{report.rule.name}`); runs per method: "
        + ", ".join(f"{m} {runs.get(m, 0)}" for m in methods)
        + ". Means over (r_train, run) with 95 % t intervals; metrics: "
        + "; ".join(f"`{m}` {what}" for m, _, what in metrics)
        + ".",
    ]
    columns = [m for m, _, _ in metrics]
    selected = (
        "selected (SVI)",
        lambda _, sub: f"{sub['n_selected'].mean():.1f}" if _has(sub, "n_selected") else "",
    )
    for setting, by_setting in chosen.groupby("setting", sort=False):
        lines += ["", f"### Setting `{setting}`", ""]
        lines += means_table(by_setting, methods, columns, interval="t", extra=selected)
        lines += [
            "",
            "| metric | a | b | pairs | mean a − b [95 % CI] | p | p (Holm) | verdict |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for metric, lower, _ in metrics:
            lines += [claim_line(r) for r in claim_rows(by_setting, CLAIMS, metric, lower, interval="t")]
    return lines


def _has(rows, column: str) -> bool:
    return column in rows and rows[column].notna().any()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+", help="results folders, one section each")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    lines = ["# SVI's claims, tested", ""]
    for path in args.results:
        lines += section(path) + [""]
    text = "\n".join(lines)
    if args.out:
        write_keeping_verdicts(text, args.out)  # the hand-written verdicts of an earlier report are kept
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
