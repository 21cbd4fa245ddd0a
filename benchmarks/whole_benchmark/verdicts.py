"""Do the verdicts of a whole-benchmark run's folders equal those of a set of references (by
default the ones shipped before this run regenerated them)?

    python benchmarks/whole_benchmark/verdicts.py ROOT --references DIR

For each folder of ROOT with a reference ``<suite>-<profile>.parquet`` in DIR: the folder's report
(its stored rule, unit and task) for each downstream model both hold, and the same report of the
reference's rows (same methods, settings and their order, rule, unit, task, metrics, headline
columns); their verdict sentences (:meth:`oodfs.report.analysis.Analysis.verdict_sentences`)
compared one for one; each that differs is printed, the run's then the reference's. Exit status 1
if any differs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from oodfs.report.analysis import Analysis
from oodfs.report.report import Report
from oodfs.run.reference import load_reference


def compare(folder: Path, references: Path) -> list[tuple]:
    ours = Report.from_path(folder)
    suite, profile = str(ours.results["suite"].iloc[0]), str(ours.results["profile"].iloc[0])
    path = references / f"{suite}-{profile}.parquet"
    if not path.is_file():
        return []
    ref = load_reference(suite, profile, path)
    out = []
    for report in ours.model_reports():
        if report.downstream not in set(ref.results["downstream"].dropna().astype(str)):
            continue
        rows = ref.results[ref.results["method"].isin(set(report.results["method"]))]
        theirs = Report(
            rows,
            report.rule,
            report._given["metrics"],
            report._given["method_order"],
            report.downstream,
            unit=report.unit,
            task=report.task,
            setting_order=report._given["setting_order"],
            columns=report._columns,
        )
        a, b = Analysis(report).verdict_sentences(), Analysis(theirs).verdict_sentences()
        ours_said = [(x["setting"], x["metric"], x["text"]) for x in a]
        theirs_said = [(x["setting"], x["metric"], x["text"]) for x in b]
        differing = [(x, y) for x, y in zip(ours_said, theirs_said) if x != y]
        if len(ours_said) != len(theirs_said):
            differing.append((f"{len(ours_said)} verdicts", f"{len(theirs_said)} verdicts"))
        out.append((folder.name, report.downstream, len(a), differing))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", type=Path)
    p.add_argument(
        "--references", type=Path, required=True, help="the folder of the references to compare with"
    )
    args = p.parse_args()
    rows = [
        r
        for f in sorted(args.root.iterdir())
        if (f / "results.sqlite").exists()
        for r in compare(f, args.references)
    ]
    for name, model, n, differing in rows:
        print(f"{'DIFF' if differing else 'same'} {name} ({model}): {n} verdicts")
        for ours, theirs in differing:  # (setting, metric, sentence) of the run, then of the reference
            print(f"  run:       {ours}\n  reference: {theirs}")
    differ = [r for r in rows if r[3]]
    print(
        f"{len(rows)} (folder, model) pairs, {sum(r[2] for r in rows)} verdicts; {len(differ)} pairs differ"
    )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
