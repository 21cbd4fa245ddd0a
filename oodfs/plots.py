"""The paper's figures and the feature-ranking table, from a results table.

* Figure 1 (``figure1.png/.pdf``): per setting, rank average, F1, RMSE mean and RMSE sd against
  r_train, one line per method; independence-driven IW methods (weighter + WLS) solid,
  baselines dashed.
* Figure "ood-S" (``ood_s.png/.pdf``): RMSE mean and sd against the number k of top features of
  a curve method's ranking (SRDO in the paper's suite), one line per r_train.
* Feature-ranking table (``feature_ranking.md``): that method's ranking per r_train and setting.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from .report import Report


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


def _save(fig, out_dir: Path, stem: str) -> list[Path]:
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf"]
    for p in paths:
        fig.savefig(p, bbox_inches="tight", dpi=150 if p.suffix == ".png" else None)
    return paths


def figure1(report: Report, out_dir: Path) -> list[Path]:
    plt = _pyplot()
    summary = report.wide_summary()
    metrics = {m: report.metrics[m] for m in report.headline}
    summary = summary[summary["r_train"] != "all"].copy()
    numeric = pd.to_numeric(summary["r_train"], errors="coerce")
    if numeric.notna().all():
        summary["r_train"] = numeric
        ticks = None
    else:  # environment labels (real data): evenly spaced, in first-seen order
        labels = list(dict.fromkeys(summary["r_train"]))
        summary["r_train"] = summary["r_train"].map({l: i for i, l in enumerate(labels)})
        ticks = labels
    settings = list(dict.fromkeys(summary["setting"]))
    if not settings:
        return []
    if not metrics:
        return []
    fig, axes = plt.subplots(len(settings), len(metrics), figsize=(4.2 * len(metrics), 3.3 * len(settings)),
                             squeeze=False)
    methods = list(dict.fromkeys(summary["method"]))
    colors = {m: plt.cm.tab10(i % 10) for i, m in enumerate(methods)}
    for i, setting in enumerate(settings):
        s = summary[summary["setting"] == setting]
        for j, (metric, m) in enumerate(metrics.items()):
            ax = axes[i, j]
            for method in methods:
                g = s[s["method"] == method].sort_values("r_train")
                iw = report.kind(method) == "weighter"
                if g[metric].notna().any():
                    ax.plot(g["r_train"], g[metric], "-" if iw else "--", marker="o", ms=3,
                            color=colors[method], label=method, lw=2 if iw else 1.2)
            ax.set_title(f"{setting}: {m.title} {m.arrow}")
            ax.set_xlabel("r_train")
            if ticks is not None:
                ax.set_xticks(range(len(ticks)), ticks)
            ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 10), bbox_to_anchor=(0.5, 1.02))
    fig.suptitle(f"profile: {report.profile}; model selection: {report.rule.label}", y=-0.01, fontsize=9)
    fig.tight_layout()
    paths = _save(fig, out_dir, "figure1")
    plt.close(fig)
    return paths


def ood_s_figure(report: Report, out_dir: Path) -> list[Path]:
    curves = report.curves
    if curves.empty:
        return []
    plt = _pyplot()
    ks = sorted(set(curves["k"]))
    panels = list(curves.groupby(["setting", "method"], sort=False))
    fig, axes = plt.subplots(len(panels), 2, figsize=(9, 3.2 * len(panels)), squeeze=False)
    for i, ((setting, method), g) in enumerate(panels):
        for r_train, gr in g.groupby("r_train"):
            for j, stat in enumerate(("rmse_mean", "rmse_std")):
                values = gr[gr["metric"] == stat].groupby("k")["value"].mean().reindex(ks)
                axes[i, j].plot(ks, values.to_numpy(), marker="o", ms=3, label=f"r_train={r_train}")
        for j, stat in enumerate(("rmse_mean", "rmse_std")):
            ax = axes[i, j]
            ax.axvline(5, color="grey", lw=0.8, ls=":")
            ax.set_title(f"{setting}: {report.metrics[stat].title} vs k ({method} ranking)")
            ax.set_xlabel("number of top features k")
            ax.set_xticks(ks)
            ax.grid(alpha=0.3)
        axes[i, 0].legend(fontsize=8)
    fig.tight_layout()
    paths = _save(fig, out_dir, "ood_s")
    plt.close(fig)
    return paths


def feature_ranking_table(report: Report) -> str:
    """Per setting and r_train: each curve method's ranking, aggregated over runs by the mean
    rank of each feature (by name, so runs with different column layouts agree)."""
    curve_tasks = report.curves[["setting", "r_train", "run", "method"]].drop_duplicates()
    if curve_tasks.empty:
        return ""
    chosen = report.chosen.merge(curve_tasks, on=["setting", "r_train", "run", "method"])
    lines = ["# Feature rankings", "",
             f"Ranking of each curve method per setting and r_train (features ordered by their mean rank over "
             f"runs; model selection: {report.rule.label}). In the paper's synthetic experiment S1..S5 come first.", ""]
    for method, gm in chosen.groupby("method", sort=False):
        settings = list(dict.fromkeys(gm["setting"]))
        rows = []
        for r_train in sorted(set(gm["r_train"])):
            row = [r_train]
            for setting in settings:
                g = gm[(gm["setting"] == setting) & (gm["r_train"] == r_train)]
                if g.empty:
                    row.append("")
                    continue
                ranks: dict[str, list[float]] = {}
                for scores, names in zip(g["scores"], g["feature_names"]):
                    scores = np.array(json.loads(scores))
                    names = json.loads(names) if isinstance(names, str) else [f"X{j + 1}" for j in range(scores.size)]
                    order = np.argsort(np.argsort(-scores, kind="stable"), kind="stable")
                    for name, rank in zip(names, order):
                        ranks.setdefault(name, []).append(rank)
                mean_rank = {name: np.mean(r) for name, r in ranks.items()}
                row.append(", ".join(sorted(mean_rank, key=lambda nm: (mean_rank[nm], nm))))
            rows.append(row)
        lines += [f"## {method}", "", tabulate(rows, headers=["r_train"] + settings, tablefmt="github"), ""]
    return "\n".join(lines)


def make_figures(report: Report, out_dir) -> list[Path]:
    """Write every figure and the ranking table to ``out_dir/figures``; return the paths."""
    fig_dir = Path(out_dir) / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    paths = figure1(report, fig_dir) + ood_s_figure(report, fig_dir)
    table = feature_ranking_table(report)
    if table:
        (fig_dir / "feature_ranking.md").write_text(table)
        paths.append(fig_dir / "feature_ranking.md")
    return paths

