"""Method comparisons of a report: per setting and headline metric, a Friedman test across
methods, paired tests between every two methods and a critical-difference diagram.

All tests pair the methods over (r_train, run) blocks (the same training and test data) and
come from :mod:`oodfs.report.stats`; the text names each test and correction next to its numbers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from oodfs.report import stats
from oodfs.report.report import Report
from oodfs.validation import OodfsError


def selected_values(report: Report) -> pd.DataFrame:
    """The chosen point's headline metrics per (setting, r_train, run, method)."""
    per_run = report.per_run()
    return per_run[per_run["r_train"] != "all"].reset_index(drop=True)


def comparisons(report: Report) -> list[dict]:
    """Per setting and headline metric with two or more methods: ``setting``, ``metric`` (its
    declaration), ``values`` (the paired values), ``friedman`` (the group's Friedman row),
    ``ranks`` ([(method, average rank)], best first) and ``pairs`` (all pairwise tests). The
    markdown and the results site both show these."""
    values = selected_values(report)
    out = []
    for setting in dict.fromkeys(values["setting"]):
        for metric in report.headline:
            info = report.metrics[metric]
            g = values[(values["setting"] == setting)].dropna(subset=[metric])
            if g["method"].nunique() < 2:
                continue
            fr = stats.friedman(g, metric, info.lower_is_better, within=("setting",))
            ranks = fr.sort_values("avg_rank")
            out.append(
                {
                    "setting": setting,
                    "metric": info,
                    "values": g,
                    "friedman": fr.iloc[0],
                    "ranks": [(m, r) for m, r in zip(ranks["method"], ranks["avg_rank"]) if np.isfinite(r)],
                    "pairs": stats.pairwise_tests(g, metric, info.lower_is_better, within=("setting",)),
                }
            )
    return out


def cd_diagram(report: Report, c: dict, out_path) -> tuple[Path, Path] | str:
    """The critical-difference diagram of a comparison ``c`` (png and pdf paths; an svg is
    beside them), or why there is none."""
    first, info = c["friedman"], c["metric"]
    if int(first["n_blocks"]) < 2 or int(first["k"]) < 2:
        return f"needs 2 complete blocks and 2 methods, has {int(first['n_blocks'])} and {int(first['k'])}"
    try:
        return stats.cd_diagram(
            c["values"],
            info.name,
            info.lower_is_better,
            out_path,
            within=("setting",),
            title=f"{c['setting']}: {info.title} {info.arrow} (model selection {report.rule.label})",
        )
    except OodfsError as exc:  # e.g. too few complete blocks: say so in the text
        return str(exc)


def comparison_markdown(report: Report, fig_dir: Path | None = None) -> tuple[str, list[Path]]:
    """Markdown sections (## per setting and metric) and the CD diagrams written to ``fig_dir``."""
    lines, paths = [], []
    for c in comparisons(report):
        setting, info, first = c["setting"], c["metric"], c["friedman"]
        lines += [f"### `{setting}`: {info.title} {info.arrow}", ""]
        p = "n/a" if np.isnan(first["p"]) else f"{first['p']:.3g}"
        lines.append(
            f"Friedman test across {int(first['k'])} methods over {int(first['n_blocks'])} complete "
            f"(r_train, run) blocks: χ² = {first['statistic']:.2f}, p = {p}"
            + (f" ({first['note']})" if first["note"] else "")
            + "."
        )
        lines += ["", "Average rank (1 = best): " + ", ".join(f"{m} {r:.2f}" for m, r in c["ranks"]), ""]
        rows = [
            [
                r.method_a,
                r.method_b,
                r.n_pairs,
                f"{r.mean_diff:+.4f}",
                "" if np.isnan(r.diff_low) else f"[{r.diff_low:+.4f}, {r.diff_high:+.4f}]",
                "" if np.isnan(r.p) else f"{r.p:.3g}",
                "" if np.isnan(r.p_adjusted) else f"{r.p_adjusted:.3g}",
                r.verdict,
            ]
            for r in c["pairs"].itertuples()
        ]
        lines += [
            tabulate(
                rows,
                headers=["A", "B", "pairs", "mean A − B", "95 % t interval", "p", "p (Holm)", "verdict"],
                tablefmt="github",
                disable_numparse=True,
            ),
            "",
        ]
        if fig_dir is not None and int(first["n_blocks"]) >= 2 and int(first["k"]) >= 2:
            drawn = cd_diagram(report, c, Path(fig_dir) / f"cd_{setting}_{info.name}-{report.rule.name}")
            if isinstance(drawn, str):
                lines += [f"(no critical-difference diagram: {drawn})", ""]
            else:
                paths += list(drawn)
                lines += [
                    f"![critical-difference diagram, {setting}, {info.title}]({Path(drawn[0]).name})",
                    "",
                ]
    if not lines:
        return "No comparison possible: fewer than two methods with results.\n", paths
    head = [
        f"Model selection: {report.rule.label}; profile: {report.profile}. Paired tests over (r_train, run): "
        "two-sided Wilcoxon signed-rank (scipy.stats.wilcoxon), Holm-corrected over all pairs of a setting "
        "and metric, alpha 0.05; effect = mean paired difference A − B with its 95 % t interval. "
        "Critical-difference diagrams: average ranks over complete blocks; bars join methods not "
        "significantly different by the same paired tests.",
        "",
    ]
    return "\n".join(head + lines), paths
