"""Method comparisons of a report: per setting and headline metric, a Friedman test across
methods, the paired tests of the analysis's family and a critical-difference diagram.

The tests are the analysis's (:mod:`oodfs.report.analysis`: its family, unit, test and
correction, printed with the numbers), so every output gives the same verdict for the same pair.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from oodfs.report import stats
from oodfs.report.analysis import Analysis
from oodfs.report.escape import file_stem, inside, md_alt, md_code, md_text, mpl_text
from oodfs.report.report import Report
from oodfs.validation import OodfsError


def selected_values(report: Report) -> pd.DataFrame:
    """The chosen point's headline metrics per (setting, r_train, run, method)."""
    per_run = report.per_run()
    return per_run[per_run["r_train"] != "all"].reset_index(drop=True)


def comparisons(report: Report, analysis: Analysis | None = None) -> list[dict]:
    """Per setting and headline metric with two or more methods: ``setting``, ``metric`` (its
    declaration), ``values`` (the methods' values per unit), ``friedman`` (the group's Friedman
    row, over the family's methods and units), ``ranks`` ([(method, average rank)], best first)
    and ``pairs`` (the analysis's tests: the family and the yardsticks' own). The markdown and
    the results site both show these."""
    analysis = analysis or Analysis(report)
    f = analysis.family
    values = analysis.values
    out = []
    for setting in dict.fromkeys(values["setting"]):
        for metric in report.headline:
            info = report.metrics[metric]
            g = values[(values["setting"] == setting) & values["method"].isin(f.methods)]
            g = g.dropna(subset=[metric])
            pairs = analysis.tests(setting, metric)
            if g["method"].nunique() < 2 and not len(pairs):
                continue
            fr = stats.friedman(g, metric, info.lower_is_better, within=("setting",), block=f.blocks)
            ranks = fr.sort_values("avg_rank")
            out.append(
                {
                    "setting": setting,
                    "metric": info,
                    "values": g,
                    "friedman": fr.iloc[0] if len(fr) else None,
                    "ranks": [(m, r) for m, r in zip(ranks["method"], ranks["avg_rank"]) if np.isfinite(r)],
                    "pairs": pairs,
                    "decidable": analysis.decidable(setting, metric),
                }
            )
    return out


def cd_diagram(
    report: Report, c: dict, out_path, analysis: Analysis | None = None
) -> tuple[Path, Path] | str:
    """The critical-difference diagram of a comparison ``c`` (png and pdf paths; an svg is
    beside them), or why there is none. Drawn only where the family tests every pair: its bars
    are verdicts on pairs, which a family against a reference does not test."""
    analysis = analysis or Analysis(report)
    first, info = c["friedman"], c["metric"]
    if analysis.family.reference:
        return f"the tested family compares each method with {analysis.family.reference}, not every pair"
    if first is None or int(first["n_blocks"]) < 2 or int(first["k"]) < 2:
        nb, k = (0, 0) if first is None else (int(first["n_blocks"]), int(first["k"]))
        return f"needs 2 complete blocks and 2 methods, has {nb} and {k}"
    try:
        return stats.cd_diagram(
            c["values"].assign(method=c["values"]["method"].map(mpl_text)),  # labels drawn as they read
            info.name,
            info.lower_is_better,
            out_path,
            within=("setting",),
            block=analysis.family.blocks,
            title=mpl_text(
                f"{c['setting']}: {info.title} {info.arrow} (model selection {report.rule.label})"
            ),
        )
    except OodfsError as exc:  # e.g. too few complete blocks: say so in the text
        return str(exc)


def _model_tag(report: Report) -> str:
    """What a figure's file name adds for a downstream model other than the run's first ("")."""
    first = report.downstream == report.downstream_models[0]
    return "" if first else f"-{file_stem(report.downstream)}"


def comparison_markdown(report: Report, fig_dir: Path | None = None) -> tuple[str, list[Path]]:
    """Markdown sections (## per setting and metric) and the CD diagrams written to ``fig_dir``."""
    analysis = Analysis(report)
    units = ", ".join(analysis.family.blocks)
    lines, paths = [], []
    suspect = report.suspect_fits()
    flagged = set(zip(suspect["setting"], suspect["method"]))

    def name(method: str, setting: str) -> str:
        return md_text(method) + (" (suspect)" if (setting, method) in flagged else "")

    for c in comparisons(report, analysis):
        setting, info, first = c["setting"], c["metric"], c["friedman"]
        lines += [f"### {md_code(setting)}: {md_text(info.title)} {info.arrow}", ""]
        if first is not None:
            p = "n/a" if np.isnan(first["p"]) else f"{first['p']:.3g}"
            stat = "n/a" if np.isnan(first["statistic"]) else f"{first['statistic']:.2f}"
            lines.append(
                f"Friedman test across {int(first['k'])} methods over {int(first['n_blocks'])} complete "
                f"({units}) units: χ² = {stat}, p = {p}"
                + (f" ({md_text(first['note'])})" if first["note"] else "")
                + "."
            )
            lines += [
                "",
                "Average rank (1 = best): " + ", ".join(f"{md_text(m)} {r:.2f}" for m, r in c["ranks"]),
                "",
            ]
        if not c["decidable"]:
            note = analysis.undecidable_note() or "No test of the family can reach alpha."
            lines += [f"*{md_text(note)}*", ""]
        rows = [
            [
                name(r.method_a, setting) + (" (yardstick)" if r.family == "yardsticks" else ""),
                name(r.method_b, setting),
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
        if fig_dir is not None:
            # a file name made from names: sanitised, and kept inside fig_dir
            stem = file_stem("cd", setting, info.name) + f"-{report.rule.name}" + _model_tag(report)
            drawn = cd_diagram(report, c, inside(fig_dir, stem), analysis)
            if isinstance(drawn, str):
                lines += [f"(no critical-difference diagram: {md_text(drawn)})", ""]
            else:
                paths += list(drawn)
                lines += [
                    f"![{md_alt(f'critical-difference diagram, {setting}, {info.title}')}]"
                    f"({Path(drawn[0]).name})",
                    "",
                ]
    if not lines:
        return "No comparison possible: fewer than two methods with results.\n", paths
    head = [
        f"Model selection: {report.rule.label}; profile: {md_text(report.profile)}.",
        "",
        md_text(analysis.family.describe()),
        "",
        "Effect = mean paired difference A − B over the units with its 95 % t interval. Critical-difference "
        "diagrams (every-pair families only): average ranks over complete units; bars join methods not "
        "significantly different by the same paired tests.",
        "",
    ]
    if len(suspect):
        head += [
            "Methods marked (suspect) have chosen fits whose diagnostics meet a declared suspect rule: "
            "their comparisons stand as computed, but read them with care.",
            "",
            *report.suspect_lines(md_code, md_text),
            "",
        ]
    return "\n".join(head + lines), paths
