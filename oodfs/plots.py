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

from .leaderboard import METRICS, summarize
from .selection import grid_points, rule_label, select


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


def _is_iw(method: str) -> bool:
    """Independence-driven IW = a weighter followed by WLS (solid lines in Figure 1)."""
    from .plugins import registry
    from .wls import WLSSelector

    try:
        return issubclass(registry().get("selector", method), WLSSelector)
    except Exception:  # a method whose plugin is not installed here: draw it as a baseline
        return False


def _save(fig, out_dir: Path, stem: str) -> list[Path]:
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf"]
    for p in paths:
        fig.savefig(p, bbox_inches="tight", dpi=150 if p.suffix == ".png" else None)
    return paths


def figure1(results: pd.DataFrame, out_dir: Path, rule: str) -> list[Path]:
    plt = _pyplot()
    summary = summarize(results, rule)
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
    fig, axes = plt.subplots(len(settings), len(METRICS), figsize=(4.2 * len(METRICS), 3.3 * len(settings)),
                             squeeze=False)
    methods = list(dict.fromkeys(summary["method"]))
    colors = {m: plt.cm.tab10(i % 10) for i, m in enumerate(methods)}
    for i, setting in enumerate(settings):
        s = summary[summary["setting"] == setting]
        for j, (metric, (title, low)) in enumerate(METRICS.items()):
            ax = axes[i, j]
            for method in methods:
                g = s[s["method"] == method].sort_values("r_train")
                if g[metric].notna().any():
                    ax.plot(g["r_train"], g[metric], "-" if _is_iw(method) else "--", marker="o", ms=3,
                            color=colors[method], label=method, lw=2 if _is_iw(method) else 1.2)
            ax.set_title(f"{setting}: {title} {'↓' if low else '↑'}")
            ax.set_xlabel("r_train")
            if ticks is not None:
                ax.set_xticks(range(len(ticks)), ticks)
            ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 10), bbox_to_anchor=(0.5, 1.02))
    fig.suptitle(f"model selection: {rule_label(rule)}", y=-0.01, fontsize=9)
    fig.tight_layout()
    paths = _save(fig, out_dir, "figure1")
    plt.close(fig)
    return paths


def _curve_points(results: pd.DataFrame, rule: str) -> pd.DataFrame:
    chosen = select(grid_points(results), rule)
    return chosen[chosen.filter(like="rmse_mean@").notna().any(axis=1)] if len(chosen) else chosen


def ood_s_figure(results: pd.DataFrame, out_dir: Path, rule: str) -> list[Path]:
    chosen = _curve_points(results, rule)
    if chosen.empty or not any(c.startswith("rmse_mean@") for c in chosen):
        return []
    plt = _pyplot()
    ks = sorted(int(c.split("@")[1]) for c in chosen if c.startswith("rmse_mean@"))
    panels = list(chosen.groupby(["setting", "method"], sort=False))
    fig, axes = plt.subplots(len(panels), 2, figsize=(9, 3.2 * len(panels)), squeeze=False)
    for i, ((setting, method), g) in enumerate(panels):
        for r_train, gr in g.groupby("r_train"):
            for j, stat in enumerate(("rmse_mean", "rmse_std")):
                values = gr[[f"{stat}@{k}" for k in ks]].mean()
                axes[i, j].plot(ks, values.to_numpy(), marker="o", ms=3, label=f"r_train={r_train}")
        for j, title in enumerate(("RMSE mean", "RMSE sd")):
            ax = axes[i, j]
            ax.axvline(5, color="grey", lw=0.8, ls=":")
            ax.set_title(f"{setting}: {title} vs k ({method} ranking)")
            ax.set_xlabel("number of top features k")
            ax.set_xticks(ks)
            ax.grid(alpha=0.3)
        axes[i, 0].legend(fontsize=8)
    fig.tight_layout()
    paths = _save(fig, out_dir, "ood_s")
    plt.close(fig)
    return paths


def feature_ranking_table(results: pd.DataFrame, rule: str, feature_names: list[str] | None = None) -> str:
    """Per setting and r_train: the curve method's ranking, aggregated over runs by mean rank."""
    chosen = _curve_points(results, rule)
    if chosen.empty:
        return ""
    lines = ["# Feature rankings", "",
             f"Ranking of each curve method per setting and r_train (features ordered by their mean rank over "
             f"runs; model selection: {rule_label(rule)}). In the paper's synthetic experiment S1..S5 come first.", ""]
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
                scores = np.array([json.loads(s) for s in g["scores"]])
                ranks = np.argsort(np.argsort(-scores, axis=1, kind="stable"), axis=1).mean(axis=0)
                order = np.argsort(ranks, kind="stable")
                names = feature_names or [f"X{j + 1}" for j in range(scores.shape[1])]
                row.append(", ".join(names[j] for j in order))
            rows.append(row)
        lines += [f"## {method}", "", tabulate(rows, headers=["r_train"] + settings, tablefmt="github"), ""]
    return "\n".join(lines)


def make_figures(results: pd.DataFrame, out_dir, rule: str, feature_names: list[str] | None = None) -> list[Path]:
    """Write every figure and the ranking table to ``out_dir/figures``; return the paths."""
    fig_dir = Path(out_dir) / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    paths = figure1(results, fig_dir, rule) + ood_s_figure(results, fig_dir, rule)
    table = feature_ranking_table(results, rule, feature_names)
    if table:
        (fig_dir / "feature_ranking.md").write_text(table)
        paths.append(fig_dir / "feature_ranking.md")
    return paths

