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
from oodfs.report.escape import file_stem, inside, md_alt, md_code, md_text, mpl_text
from oodfs.report.report import Report
from oodfs.validation import OodfsError


def selected_values(report: Report) -> pd.DataFrame:
    """The chosen point's headline metrics per (setting, r_train, run, method)."""
    per_run = report.per_run()
    return per_run[per_run["r_train"] != "all"].reset_index(drop=True)


def comparison_markdown(report: Report, fig_dir: Path | None = None) -> tuple[str, list[Path]]:
    """Markdown sections (## per setting and metric) and the CD diagrams written to ``fig_dir``."""
    values = selected_values(report)
    lines, paths = [], []
    for setting in dict.fromkeys(values["setting"]):
        for metric in report.headline:
            info = report.metrics[metric]
            g = values[(values["setting"] == setting)].dropna(subset=[metric])
            if g["method"].nunique() < 2:
                continue
            lines += [f"### {md_code(setting)}: {md_text(info.title)} {info.arrow}", ""]
            fr = stats.friedman(g, metric, info.lower_is_better, within=("setting",))
            first = fr.iloc[0]
            p = "n/a" if np.isnan(first["p"]) else f"{first['p']:.3g}"
            lines.append(
                f"Friedman test across {int(first['k'])} methods over {int(first['n_blocks'])} complete "
                f"(r_train, run) blocks: χ² = {first['statistic']:.2f}, p = {p}"
                + (f" ({md_text(first['note'])})" if first["note"] else "")
                + "."
            )
            ranks = fr.sort_values("avg_rank")
            lines += [
                "",
                "Average rank (1 = best): "
                + ", ".join(
                    f"{md_text(m)} {r:.2f}"
                    for m, r in zip(ranks["method"], ranks["avg_rank"])
                    if np.isfinite(r)
                ),
                "",
            ]
            pw = stats.pairwise_tests(g, metric, info.lower_is_better, within=("setting",))
            rows = [
                [
                    md_text(r.method_a),
                    md_text(r.method_b),
                    r.n_pairs,
                    f"{r.mean_diff:+.4f}",
                    "" if np.isnan(r.diff_low) else f"[{r.diff_low:+.4f}, {r.diff_high:+.4f}]",
                    "" if np.isnan(r.p) else f"{r.p:.3g}",
                    "" if np.isnan(r.p_adjusted) else f"{r.p_adjusted:.3g}",
                    r.verdict,
                ]
                for r in pw.itertuples()
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
                try:
                    # the file name is made from names: sanitised, and kept inside fig_dir
                    stem = inside(fig_dir, file_stem("cd", setting, metric) + f"-{report.rule.name}")
                    png, pdf = stats.cd_diagram(
                        g.assign(method=g["method"].map(mpl_text)),  # labels drawn as they read
                        metric,
                        info.lower_is_better,
                        stem,
                        within=("setting",),
                        title=mpl_text(
                            f"{setting}: {info.title} {info.arrow} (model selection {report.rule.label})"
                        ),
                    )
                except OodfsError as exc:  # e.g. too few complete blocks: say so in the text
                    lines += [f"(no critical-difference diagram: {md_text(exc)})", ""]
                else:
                    paths += [png, pdf]
                    lines += [
                        f"![{md_alt(f'critical-difference diagram, {setting}, {info.title}')}]"
                        f"({Path(png).name})",
                        "",
                    ]
    if not lines:
        return "No comparison possible: fewer than two methods with results.\n", paths
    head = [
        f"Model selection: {report.rule.label}; profile: {md_text(report.profile)}. Paired tests over "
        "(r_train, run): "
        "two-sided Wilcoxon signed-rank (scipy.stats.wilcoxon), Holm-corrected over all pairs of a setting "
        "and metric, alpha 0.05; effect = mean paired difference A − B with its 95 % t interval. "
        "Critical-difference diagrams: average ranks over complete blocks; bars join methods not "
        "significantly different by the same paired tests.",
        "",
    ]
    return "\n".join(head + lines), paths
