"""Tested verdicts on the stable-learning line (HRM, KerHRM, RSW) against DWR and SRDO in the `markov` suite.

    oodfs bench --suite markov --methods hrm,rsw,dwr,srdo,ols,kerhrm --settings n500 \\
        --selection default --jobs 1 --out results/markov-stable
    python benchmarks/stable_line/stable_line_report.py results/markov-stable \
        [--out benchmarks/stable_line/STABLE_LINE.md]

The `markov` suite's data (the paper's generator plus a variance-only parent H, a shifting child C and its
other parent W; docs/PROTOCOL.md section 12) are the ones the seed's claims are tested on, so the later
methods of the line are compared there, on the same columns as benchmarks/markov_boundary/MARKOV.md (``f1``,
``f1_boundary``, ``has_C`` / ``has_H`` / ``has_V45``, RMSE mean and max over the ten test bias rates;
benchmarks/markov_boundary/markov_report.py says what each is).

Claims: HRM, KerHRM and RSW each against DWR and SRDO, paired by run within a setting; two-sided
Wilcoxon signed-rank tests, Holm-corrected over the six claims of each (setting, metric), with the mean
difference and its 95 % t interval. The hand-written verdicts at the end of an existing report
(from "## Verdicts (written by hand") are kept.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# the Markov study's columns (benchmarks/markov_boundary/) and the shared report tables
sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("shared", "markov_boundary")]
import markov_report  # noqa: E402
from report_tables import write_keeping_verdicts  # noqa: E402

CLAIMS = [(m, b) for m in ("hrm", "kerhrm", "rsw") for b in ("dwr", "srdo")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    markov_report.CLAIMS = CLAIMS
    markov_report.SEARCHES = ()
    # no boundary searches here: drop their (empty) table
    skip = ("The boundary the searches found", "| method | boundary size")
    body = [
        line
        for line in markov_report.section(args.results)
        if not line.startswith(skip) and line != "| --- | --- | --- | --- |"
    ]
    lines = [
        "# HRM, KerHRM and RSW against DWR and SRDO, tested (the `markov` suite)",
        "",
        "Written by `python benchmarks/stable_line/stable_line_report.py` (its docstring says what is "
        "compared).",
        "",
        "Metrics: "
        + "; ".join(f"`{m}` {what}" for m, _, what in markov_report.METRICS)
        + "; `rank_avg` the mean rank of S1..S5; `has_C`, `has_H`, `has_V45`: share of runs whose top 5 "
        "holds the child C, the variance parent H, V4 or V5; fit s: median fit seconds of the grid.",
        "",
        *body,
        "",
    ]
    text = "\n".join(lines)
    if args.out:
        text = write_keeping_verdicts(text, args.out)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
