"""What the claim reports share (stable_line_synth.py, markov_report.py, svi_report.py,
stable_line_report.py): the per-setting table of means over the chosen fits, the tested claims
beneath it, and keeping the hand-written verdicts at the end of an earlier report.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from oodfs.report.stats import adjust_pvalues, cell_summary, pairwise_tests

#: where a report's hand-written part begins; what follows it is kept when the report is rewritten
VERDICTS = "## Verdicts (written by hand"


def interval_cell(values, interval: str = "bootstrap") -> str:
    """``mean [low, high]`` of ``values`` (NaNs dropped) with the 95 % interval ``interval`` ("t", or
    "bootstrap": percentile, so it stays inside the metric's range); one value: the value alone;
    none: a dash."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if not len(values):
        return "—"
    cs = cell_summary(values, method=interval)
    return f"{cs.mean:.3f} [{cs.low:.3f}, {cs.high:.3f}]" if len(values) > 1 else f"{cs.mean:.3f}"


def means_table(
    by_setting: pd.DataFrame,
    methods: list[str],
    columns: list[str],
    interval: str = "bootstrap",
    extra: tuple[str, Callable[[str, pd.DataFrame], str]] | None = None,
) -> list[str]:
    """One setting's table: a row per method, a column per metric, each cell the mean of the chosen
    fits (``by_setting``: one row per (r_train, run, method)) with its interval (:func:`interval_cell`);
    ``extra``: (header, function of the method and its rows) for one last column."""
    head = columns + ([extra[0]] if extra else [])
    lines = ["| method | " + " | ".join(head) + " |", "| --- | " + " | ".join("---" for _ in head) + " |"]
    for m in methods:
        sub = by_setting[by_setting["method"] == m]
        cells = [interval_cell(sub[c], interval) for c in columns] + ([extra[1](m, sub)] if extra else [])
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return lines


def claim_rows(
    by_setting: pd.DataFrame, claims, metric: str, lower: bool, interval: str = "bootstrap", orient=False
) -> list[dict]:
    """The claims (a, b) of one setting and metric with both methods present, each a paired two-sided
    Wilcoxon test over the blocks (oodfs.report.stats.pairwise_tests) with the mean difference and
    its 95 % ``interval``, Holm over these claims (``p_holm``, ``family``: their number) and the
    verdict ("<method> better" or "not distinguishable"). ``orient``: the difference is always
    a − b (else in the test's column order)."""
    present = set(by_setting["method"])
    rows = []
    for a, b in claims:
        if a not in present or b not in present:
            continue
        df = by_setting[by_setting["method"].isin([a, b])]
        t = pairwise_tests(df, metric, lower, correction="none", interval=interval)
        if not len(t) or t.iloc[0]["n_pairs"] == 0:  # (a folder without this metric: no pairs)
            continue
        r = {**t.iloc[0].to_dict(), "metric": metric}
        if orient and r["method_a"] != a:
            r.update(method_a=a, method_b=b, mean_diff=-r["mean_diff"], diff_low=-r["diff_high"],
                     diff_high=-r["diff_low"])  # fmt: skip
        rows.append(r)
    padj = adjust_pvalues([r["p"] for r in rows], "holm") if rows else []
    for r, pa in zip(rows, padj):
        better = r["method_b"] if (r["mean_diff"] > 0) == lower else r["method_a"]
        significant = pa < 0.05 and r["mean_diff"] != 0
        r.update(
            p_holm=pa, family=len(rows), verdict=f"{better} better" if significant else "not distinguishable"
        )
    return rows


def claim_line(r: dict, with_family: bool = False) -> str:
    """A claims table's row: metric, a, b, pairs, mean a − b [interval], p, (the Holm family's size,)
    p (Holm), verdict."""
    family = f"{r['family']} | " if with_family else ""
    return (
        f"| {r['metric']} | {r['method_a']} | {r['method_b']} | {r['n_pairs']} | "
        f"{r['mean_diff']:+.3f} [{r['diff_low']:+.3f}, {r['diff_high']:+.3f}] | "
        f"{r['p']:.3g} | {family}{r['p_holm']:.3g} | {r['verdict']} |"
    )


def write_keeping_verdicts(text: str, out: str | Path) -> str:
    """Write ``text`` to ``out`` followed by the hand-written verdicts of the report already there
    (from :data:`VERDICTS` on), and return what was written."""
    out = Path(out)
    earlier = out.read_text() if out.exists() else ""
    if VERDICTS in earlier:
        text += earlier[earlier.index(VERDICTS) :]
    out.write_text(text)
    return text
