"""Does weighting the test environments by their rows change a shipped leaderboard or its verdicts?

For each shipped suite named (default: arrests and lending-states, whose test environments differ
most in size), read its shipped reference, count the rows of every test environment of every data
set (oodfs.run.dataset.test_env_rows: the draws a task makes), and analyse the same stored rows
three ways: ``equal`` (every test environment once: the default and the paper's), ``rows`` (the mean
and sd weighted by test rows) and, with ``--min-env-rows N``, ``equal`` with the environments of
fewer than N rows left out. No method is fitted again: the statistics over test environments are
computed from the stored per-environment values (docs/PROTOCOL.md section 3, "Weighting the test
environments"). Prints markdown: per suite, the test environments' rows, the headline mean of
every method under each weighting with its rank, and the tested verdicts under each.

    python benchmarks/env_weighting/env_weighting.py [--suites arrests,lending-states] [--min-env-rows 300]

Needs the data sets (pip install 'oodfs[real]'). Takes about a minute.
"""

from __future__ import annotations

import argparse
import warnings

import pandas as pd

from oodfs.contract.env_weights import EnvWeighting
from oodfs.contract.registry import registry
from oodfs.report.analysis import Analysis
from oodfs.report.report import Report
from oodfs.run.dataset import test_env_rows
from oodfs.run.reference import load_reference
from oodfs.run.reference.replay import replay_suite


def study(name: str, min_rows: int | None) -> list[str]:
    registry()
    ref = load_reference(name, "default")
    suite = replay_suite(ref)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = pd.DataFrame(test_env_rows(suite))
    sizes = rows.groupby("env", sort=False)["rows"].agg(["min", "max"])
    size_text = ", ".join(f"{e} {lo}" if lo == hi else f"{e} {lo}-{hi}" for e, (lo, hi) in sizes.iterrows())
    ways = {"equal": EnvWeighting(), "rows": EnvWeighting("rows")}
    if min_rows:
        ways[f"equal, min {min_rows} rows"] = EnvWeighting("equal", min_rows)
    metrics = ref.meta.get("metrics")
    order = list(ref.meta["methods"])
    out = [f"## {name} ({len(ref.results):,} stored rows)", "", f"Test environments' rows: {size_text}.", ""]
    tables, verdicts, notes = {}, {}, {}
    for label, weighting in ways.items():
        report = Report(
            ref.results,
            suite.selection,
            metrics,
            order,
            unit=suite.unit,
            task=suite.task,
            env_weighting=weighting,
            env_rows=rows,
        )
        headline = report.headline[0]
        cells = report.cells()
        cells = cells[(cells["r_train"] == "all") & (cells["metric"] == headline)]
        tables[label] = cells.set_index(["setting", "method"])["mean"]
        verdicts[label] = Analysis(report).verdict_sentences()
        notes[label] = report.env_notes()
        title = report.metrics[headline].title
    lower = report.metrics[headline].lower_is_better
    out += [f"Headline `{headline}` ({title}), mean over units, rank in brackets:", ""]
    frame = pd.DataFrame(tables)
    head = "| setting | method | " + " | ".join(ways) + " |"
    out += [head, "|" + " --- |" * (2 + len(ways))]
    ranks = frame.groupby(level="setting").rank(ascending=lower, method="min")
    for (setting, method), row in frame.iterrows():
        cells = [f"{row[w]:.4f} ({int(ranks.loc[(setting, method), w])})" for w in ways]
        out.append(f"| {setting} | {method} | " + " | ".join(cells) + " |")
    changed = [
        w
        for w in ways
        if w != "equal" and not (ranks[w].sort_values().index.equals(ranks["equal"].sort_values().index))
    ]
    out += ["", "Rank order changed under: " + (", ".join(changed) if changed else "none"), ""]
    for label in ways:
        said = f" ({'; '.join(notes[label])})" if notes[label] else ""
        out.append(f"Verdicts under {label}{said}:")
        out.append("")
        for v in verdicts[label]:
            out.append(f"- {v['setting']}, {v['metric']}: {v['text']}")
        out.append("")
    same = all(
        [(v["setting"], v["metric"], v["text"]) for v in verdicts[w]]
        == [(v["setting"], v["metric"], v["text"]) for v in verdicts["equal"]]
        for w in ways
    )
    out += [f"Every verdict the same under every weighting: {'yes' if same else 'no'}.", ""]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suites", default="arrests,lending-states")
    p.add_argument("--min-env-rows", type=int, default=300)
    args = p.parse_args()
    lines = ["# Weighting the test environments: equal against rows, on shipped references", ""]
    for name in args.suites.split(","):
        lines += study(name.strip(), args.min_env_rows or None)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
