"""The paper's figures and the feature-ranking table, from a report (file names end in the
model-selection rule, e.g. ``figure1-val.png``, so that the rules' figures sit side by side).

* Figure 1: per setting, each headline metric against r_train, one line per method with its
  95 % interval over runs; independence-driven IW methods (weighter + WLS) solid, baselines in
  dashed styles, a distinct marker each; a dot plot when there is one r_train.
* Figure "ood-S": RMSE mean and sd against the number k of top features of a curve method's
  ranking (SRDO in the paper's suite), one line per r_train.
* Feature-ranking table: that method's ranking per r_train and setting.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from oodfs.contract.downstream import DEFAULT_MODEL
from oodfs.contract.task import TASK_KEY, env_sort_key
from oodfs.report.escape import inside, md_text, mpl_text, write_text
from oodfs.report.figure_files import pyplot, save_figure
from oodfs.report.report import Report

MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p")
#: per family (oodfs.report.analysis.METHOD_FAMILIES): the colour map its members' shades come
#: from, its line style and width; a method of another family is drawn in grey-browns
FAMILY_STYLES = {
    "independence weighting": ("Reds", "-", 2.2),
    "other selectors": ("Blues", "--", 1.3),
    "invariance (environment labels)": ("Greens", "-.", 1.5),
    "robust (DRO)": ("Purples", (0, (5, 1, 1, 1)), 1.5),
    "Markov boundary": ("YlOrBr", (0, (1, 1)), 1.5),
    "yardsticks": ("Greys", ":", 1.3),
}
_OTHER_FAMILY = ("copper", (0, (3, 1, 1, 1, 1, 1)), 1.3)
#: the family whose intervals are always drawn as bands (the methods the paper is about); the
#: others' bands are drawn only when few methods share a panel, so that no band hides a line
HIGHLIGHTED = "independence weighting"
FEW_METHODS = 6


def _styles(report: Report, methods: list[str]) -> dict:
    """Per method: colour and marker by family (a shade of the family's colour, a marker of its
    own within the family), the family's line style and width, and the family's name. Methods
    are returned grouped by family, in the order of METHOD_FAMILIES (a legend's order)."""
    from oodfs.report.analysis import family_order, method_family

    plt = pyplot()
    families = {m: method_family(m, report.kind(m)) for m in methods}
    ordered = sorted(methods, key=lambda m: (family_order(families[m]), methods.index(m)))
    out = {}
    for family in dict.fromkeys(families[m] for m in ordered):
        members = [m for m in ordered if families[m] == family]
        cmap, ls, lw = FAMILY_STYLES.get(family, _OTHER_FAMILY)
        # dark to light shades, never so light that a line fades into the white background
        shades = np.linspace(0.9, 0.45, len(members)) if len(members) > 1 else [0.75]
        if family == "yardsticks":
            shades = np.linspace(1.0, 0.55, len(members)) if len(members) > 1 else [1.0]
        for j, (method, shade) in enumerate(zip(members, shades)):
            out[method] = dict(
                color=plt.get_cmap(cmap)(float(shade)),
                marker=MARKERS[j % len(MARKERS)],
                ls=ls,
                lw=lw,
                family=family,
            )
    return out


def _family_legend(fig, axes, styles: dict, **kw):
    """One legend beside the panels (never over the data): every method that has a line
    somewhere, under a bold heading per family."""
    from matplotlib.lines import Line2D

    drawn = {}
    for ax in np.ravel(axes):
        for h, label in zip(*ax.get_legend_handles_labels()):
            drawn.setdefault(label, h)
    handles, labels, headings = [], [], []
    family = None
    for method, st in styles.items():
        label = mpl_text(method)
        if label not in drawn:
            continue
        if st["family"] != family:
            family = st["family"]
            headings.append(len(labels))
            handles.append(Line2D([], [], ls="none"))
            labels.append(family)
        handles.append(drawn[label])
        labels.append(label)
    if not labels:
        return None
    rows = max(int(fig.get_figheight() / 0.2), 8)  # entries a column holds beside the panels
    legend = fig.legend(
        handles,
        labels,
        loc="center left",
        bbox_to_anchor=(1.0, 0.5),
        ncol=-(-len(labels) // rows),
        frameon=False,
        fontsize=9,
        handlelength=2.6,
        **kw,
    )
    for i in headings:
        legend.get_texts()[i].set_fontweight("bold")
    return legend


def figure1(report: Report, out_dir: Path, stem: str = "figure1") -> list[Path]:
    """Each headline metric against r_train, one line per method, coloured and marked by its
    family (:func:`_styles`), with one legend beside the panels. The 95 % interval over runs is a
    band for the highlighted family (independence weighting) and, when few methods share a
    panel, for every method; methods are dodged sideways a little so that equal values stay
    visible. With one r_train (or environment labels) the panels are dot plots with error bars."""
    plt = pyplot()
    metrics = {m: report.metrics[m] for m in report.headline}
    cells = report.cells()
    cells = cells[cells["r_train"] != "all"]
    if cells.empty or not metrics:
        return []
    settings = list(dict.fromkeys(cells["setting"]))
    styles = _styles(report, list(dict.fromkeys(cells["method"])))
    methods = list(styles)  # grouped by family
    all_bands = len(methods) <= FEW_METHODS
    numeric = pd.to_numeric(cells["r_train"], errors="coerce")
    # environment labels of a real table ("1980", "<2003") are names, not an axis
    labels = not any(report.metrics[m].needs_stable_set for m in report.headline)
    dot_plot = labels or numeric.isna().any() or numeric.nunique() < 2
    fig, axes = plt.subplots(
        len(settings), len(metrics), figsize=(4.4 * len(metrics), 3.5 * len(settings)), squeeze=False
    )
    for i, setting in enumerate(settings):
        for j, (metric, m) in enumerate(metrics.items()):
            ax = axes[i, j]
            c = cells[(cells["setting"] == setting) & (cells["metric"] == metric)]
            if dot_plot:
                _dot_panel(ax, c, methods, styles)
            else:
                xs = np.sort(pd.to_numeric(c["r_train"]).unique())
                gap = np.diff(xs).min() if len(xs) > 1 else 1.0
                width = 0.3 * gap / max(len(methods), 1)  # all methods within 30 % of the gap
                for k, method in enumerate(methods):
                    g = (
                        c[c["method"] == method]
                        .assign(x=lambda d: pd.to_numeric(d["r_train"]))
                        .sort_values("x")
                    )
                    if g["mean"].isna().all():
                        continue
                    x = g["x"] + (k - (len(methods) - 1) / 2) * width
                    st = styles[method]
                    ax.plot(
                        x,
                        g["mean"],
                        ls=st["ls"],
                        lw=st["lw"],
                        marker=st["marker"],
                        ms=4,
                        color=st["color"],
                        label=mpl_text(method),
                        zorder=3 if st["family"] == HIGHLIGHTED else 2,
                    )
                    if g["low"].notna().any() and (all_bands or st["family"] == HIGHLIGHTED):
                        ax.fill_between(x, g["low"], g["high"], color=st["color"], alpha=0.10, lw=0)
                ax.set_xlabel("r_train")
            ax.set_title(mpl_text(f"{setting}: {m.title} {m.arrow}"))
            ax.grid(alpha=0.3)
    fig.tight_layout()
    _family_legend(fig, axes, styles)
    n_runs = int(cells["n"].max())
    if dot_plot:
        band = "bars: 95 % percentile-bootstrap interval over runs"
    elif all_bands:
        band = "bands: 95 % percentile-bootstrap interval over runs"
    else:
        band = (
            f"bands (for {HIGHLIGHTED} only, so that no band hides a line): 95 % percentile-bootstrap "
            "interval over runs"
        )
    caption = (
        f"profile: {report.profile}; downstream model: {report.downstream}; model selection: "
        f"{report.rule.label}; mean of up to {n_runs} runs; {band} (none with one run)"
    )
    fig.text(0.5, 0, "\n".join(textwrap.wrap(caption, 150)), ha="center", va="top", fontsize=9)
    paths = save_figure(fig, out_dir, stem)
    plt.close(fig)
    return paths


def _dot_panel(ax, c: pd.DataFrame, methods: list[str], styles: dict) -> None:
    """One point per method (and environment label) with its interval as an error bar."""
    envs = list(dict.fromkeys(c["r_train"]))
    for k, method in enumerate(methods):
        g = c[c["method"] == method].set_index("r_train").reindex(envs)
        if g["mean"].isna().all():
            continue
        x = np.arange(len(envs)) + (k - (len(methods) - 1) / 2) * (0.7 / max(len(methods), 1))
        st = styles[method]
        low = g["low"].clip(lower=0) if (g["mean"].dropna() >= 0).all() else g["low"]  # RMSEs: not below 0
        err = np.vstack([g["mean"] - low, g["high"] - g["mean"]])
        ax.errorbar(
            x,
            g["mean"],
            yerr=np.where(np.isfinite(err), err, 0),
            fmt=st["marker"],
            color=st["color"],
            ms=5,
            capsize=2,
            lw=1,
            label=mpl_text(method),
            ls="none",
        )
    ax.set_xticks(
        range(len(envs)), [mpl_text(f"r_train = {e}" if not isinstance(e, str) else e) for e in envs]
    )
    ax.set_xlim(-0.6, len(envs) - 0.4)


def ood_s_figure(report: Report, out_dir: Path, stem: str = "ood_s") -> list[Path]:
    """RMSE mean and sd against the number k of a curve method's top features, one line per
    r_train: the mean over runs with its 95 % percentile-bootstrap interval as a band (an interval
    of a mean of RMSEs, so never below 0; none with one run), and a dotted line at the k the
    suite's tables use (with a k grid, the median k the rule chose)."""
    from matplotlib.ticker import MaxNLocator

    from oodfs.report.stats import cell_summary

    curves = report.curves
    if curves.empty:
        return []
    plt = pyplot()
    ks = sorted(set(curves["k"]))
    task_k = report.chosen.set_index(TASK_KEY)["k"] if "k" in report.chosen else None
    panels = list(curves.groupby(["setting", "method"], sort=False))
    fig, axes = plt.subplots(len(panels), 2, figsize=(9, 3.2 * len(panels)), squeeze=False)
    n_runs = 0
    for i, ((setting, method), g) in enumerate(panels):
        for r_train, gr in g.groupby("r_train"):
            for j, stat in enumerate(("rmse_mean", "rmse_std")):
                by_k = gr[gr["metric"] == stat].groupby("k")
                x = [k for k, _ in by_k]
                cells = [cell_summary(v["value"], method="bootstrap") for _, v in by_k]
                mean = np.array([c.mean for c in cells])
                low = np.array([c.low for c in cells])
                high = np.array([c.high for c in cells])
                n_runs = max([n_runs] + [c.n for c in cells])
                (line,) = axes[i, j].plot(x, mean, marker="o", ms=3, label=mpl_text(f"r_train={r_train}"))
                if np.isfinite(low).any():
                    axes[i, j].fill_between(x, low, high, color=line.get_color(), alpha=0.15, lw=0)
        keys = g[TASK_KEY].drop_duplicates()
        suite_k, k_label = None, ""
        if task_k is not None:
            found = task_k.reindex(pd.MultiIndex.from_frame(keys)).dropna()
            if len(found):  # with a k grid the rule chose k per task: its median, and the range
                suite_k = float(found.median())
                k_label = (
                    f"k = {suite_k:g} (the tables' k)"
                    if found.nunique() == 1
                    else f"k = {suite_k:g} (median k chosen, {int(found.min())}-{int(found.max())})"
                )
        for j, stat in enumerate(("rmse_mean", "rmse_std")):
            ax = axes[i, j]
            if suite_k is not None:
                ax.axvline(suite_k, color="grey", lw=0.8, ls=":", label=k_label)
            ax.set_title(mpl_text(f"{setting}: {report.metrics[stat].title} vs k ({method} ranking)"))
            ax.set_xlabel("number of top features k")
            if len(ks) <= 12:
                ax.set_xticks(ks)
            else:  # one tick per k would collide
                ax.xaxis.set_major_locator(MaxNLocator(nbins=10, integer=True))
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        axes[i, 0].legend(fontsize=8)
    downstream = getattr(report, "downstream", DEFAULT_MODEL)
    band = "bands: 95 % percentile-bootstrap interval over runs" if n_runs > 1 else "one run: no interval"
    title = f"downstream model: {downstream}; model selection: {report.rule.label}"
    fig.suptitle(f"{title}; mean of up to {n_runs} runs; {band}", y=-0.01, fontsize=9)
    fig.tight_layout()
    paths = save_figure(fig, out_dir, stem)
    plt.close(fig)
    return paths


def feature_rankings(report: Report) -> list[dict]:
    """Per curve method: its ranking per r_train (rows) and setting (columns), aggregated over
    runs by the mean rank of each feature (by name, so runs with different column layouts
    agree). Each item: ``method``, ``header`` (["r_train", settings...]) and ``rows``."""
    curve_tasks = report.curves[TASK_KEY].drop_duplicates()
    if curve_tasks.empty:
        return []
    chosen = report.chosen.merge(curve_tasks, on=TASK_KEY)
    out = []
    for method, gm in chosen.groupby("method", sort=False):
        settings = list(dict.fromkeys(gm["setting"]))
        rows = []
        for r_train in sorted(set(gm["r_train"]), key=env_sort_key):
            row = [r_train]
            for setting in settings:
                g = gm[(gm["setting"] == setting) & (gm["r_train"] == r_train)]
                if g.empty:
                    row.append("")
                    continue
                ranks: dict[str, list[float]] = {}
                for scores, names in zip(g["scores"], g["feature_names"]):
                    scores = np.array(json.loads(scores))
                    names = (
                        json.loads(names)
                        if isinstance(names, str)
                        else [f"X{j + 1}" for j in range(scores.size)]
                    )
                    order = np.argsort(np.argsort(-scores, kind="stable"), kind="stable")
                    for name, rank in zip(names, order):
                        ranks.setdefault(name, []).append(rank)
                mean_rank = {name: np.mean(r) for name, r in ranks.items()}
                row.append(", ".join(sorted(mean_rank, key=lambda nm: (mean_rank[nm], nm))))
            rows.append(row)
        out.append({"method": method, "header": ["r_train"] + settings, "rows": rows})
    return out


def feature_ranking_table(report: Report) -> str:
    """The rankings of :func:`feature_rankings` as markdown."""
    rankings = feature_rankings(report)
    if not rankings:
        return ""
    lines = [
        "# Feature rankings",
        "",
        f"Ranking of each curve method per setting and r_train (features ordered by their mean rank over "
        f"runs; model selection: {report.rule.label}). "
        "In the paper's synthetic experiment S1..S5 come first.",
        "",
    ]
    for t in rankings:
        rows = [[md_text(cell) for cell in row] for row in t["rows"]]  # names are data (escape.py)
        headers = [md_text(h) for h in t["header"]]
        lines += [f"## {md_text(t['method'])}", "", tabulate(rows, headers=headers, tablefmt="github"), ""]
    return "\n".join(lines)


def failures_figure(report: Report, out_dir: Path, stem: str = "failures") -> list[Path]:
    """Failed tasks per method and setting, with each method's first error: the figure of a run in
    which no task succeeded (a figure of metrics would be empty)."""
    plt = pyplot()
    counts = report.tasks.groupby(["method", "setting"], sort=False).size()
    errors = report.tasks.groupby("method", sort=False)["error"].first()
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(counts) + 1.5))
    labels = [mpl_text(f"{m} ({s})") for m, s in counts.index]
    ax.barh(range(len(counts)), counts.to_numpy(), color="#b33")
    ax.set_yticks(range(len(counts)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("failed tasks")
    ax.set_title("every task failed (first error of each method below)", fontsize=10)
    ax.xaxis.get_major_locator().set_params(integer=True)
    text = "\n".join(mpl_text(f"{m}: {str(e)[:90]}") for m, e in errors.items())
    fig.text(0.01, -0.02, text, va="top", fontsize=8, family="monospace")
    fig.tight_layout()
    paths = save_figure(fig, out_dir, stem)
    plt.close(fig)
    return paths


def make_figures(report: Report, out_dir) -> list[Path]:
    """Write every figure and the ranking table to ``out_dir/figures``; return the paths."""
    fig_dir = inside(out_dir, "figures")  # (a link to elsewhere is refused)
    fig_dir.mkdir(parents=True, exist_ok=True)
    rule = report.rule.name  # every rule's figures side by side, never over each other
    paths = (
        figure1(report, fig_dir, f"figure1-{rule}")
        + ood_s_figure(report, fig_dir, f"ood_s-{rule}")
        + summary_figure(report, fig_dir, f"summary-{rule}")
    )
    if (report.tasks["status"] != "ok").all():  # every task failed: that is the result
        paths += failures_figure(report, fig_dir, f"failures-{rule}")
    table = feature_ranking_table(report)
    if table:
        paths.append(write_text(inside(fig_dir, f"feature_ranking-{rule}.md"), table))
    return paths


def rank_summary(report: Report) -> pd.DataFrame:
    """Each method's mean rank (1 = best, ties averaged) per setting and headline metric, and over
    all settings at once, with a 95 % percentile-bootstrap interval over the blocks.

    A block is one (setting, r_train, run): the methods ranked on the same training and test data.
    Only complete blocks count (every method of the group has a value, as in the Friedman test);
    "all settings" pools the complete blocks of every setting. Blocks of one run share their test
    data across r_train, so the interval describes the spread of the ranks, not independent draws.
    Columns: setting ("all settings" for the pooled rows), metric, method, mean, low, high, n.
    """
    from scipy.stats import rankdata

    from oodfs.report.stats import cell_summary

    per_run = report.per_run()
    per_run = per_run[per_run["r_train"] != "all"]
    present = set(per_run["method"])
    methods = [m for m in dict.fromkeys(report.tasks["method"]) if m in present]  # the suite's order
    settings = list(dict.fromkeys(per_run["setting"]))
    rows = []
    for metric in report.headline:
        lower = bool(report.metrics[metric].lower_is_better)
        wide = (
            per_run.groupby(["setting", "r_train", "run", "method"], sort=False)[metric]
            .first()
            .unstack("method")
        )
        wide = wide.reindex(columns=methods)
        ranks_of = {}
        for setting in settings:
            block = wide.xs(setting, level="setting").dropna(axis=1, how="all").dropna()
            if block.shape[1] < 2 or block.empty:
                continue
            values = block.to_numpy(dtype=float)
            ranks_of[setting] = pd.DataFrame(
                rankdata(values if lower else -values, axis=1), columns=block.columns
            )
        pooled = [r for r in ranks_of.values() if list(r.columns) == methods]
        if len(settings) > 1 and len(pooled) > 1:
            ranks_of["all settings"] = pd.concat(pooled, ignore_index=True)
        for setting, ranks in ranks_of.items():
            for method in ranks.columns:
                c = cell_summary(ranks[method], method="bootstrap")  # stays within the possible ranks
                rows.append(
                    dict(
                        setting=setting,
                        metric=metric,
                        method=method,
                        mean=c.mean,
                        low=c.low,
                        high=c.high,
                        n=c.n,
                    )
                )
    return pd.DataFrame(rows, columns=["setting", "metric", "method", "mean", "low", "high", "n"])


def summary_figure(report: Report, out_dir: Path, stem: str = "summary") -> list[Path]:
    """All settings at once: one panel per headline metric, one row per method, its mean rank in
    each setting (coloured) and over all settings (black diamond) with 95 % bootstrap intervals over the
    (r_train, run) blocks (see :func:`rank_summary`)."""
    summary = rank_summary(report)
    if summary.empty:
        return []
    plt = pyplot()
    metrics = [m for m in report.headline if (summary["metric"] == m).any()]
    methods = list(dict.fromkeys(summary["method"]))
    groups = list(dict.fromkeys(summary["setting"]))
    colours = {g: ("black" if g == "all settings" else plt.cm.Dark2(i % 8)) for i, g in enumerate(groups)}
    step = 0.7 / max(len(groups), 1)
    fig, axes = plt.subplots(
        1,
        len(metrics),
        figsize=(max(3.3, 0.2 * len(methods)) * len(metrics) + 1.2, 0.9 + 0.42 * len(methods)),
        sharey=True,
        squeeze=False,
    )
    for ax, metric in zip(axes[0], metrics):
        s = summary[summary["metric"] == metric]
        for j, group in enumerate(groups):
            g = s[s["setting"] == group].set_index("method").reindex(methods)
            y = np.arange(len(methods)) + (j - (len(groups) - 1) / 2) * step
            err = np.vstack([g["mean"] - g["low"], g["high"] - g["mean"]])
            pooled = group == "all settings"
            ax.errorbar(
                g["mean"],
                y,
                xerr=np.where(np.isfinite(err), err, 0),
                fmt="D" if pooled else "o",
                color=colours[group],
                ms=5 if pooled else 4,
                capsize=2,
                lw=1.4 if pooled else 1,
                ls="none",
                label=mpl_text(group),
            )
        ax.set_xlim(0.5, len(methods) + 0.5)
        every = 1 if len(methods) <= 12 else 2 if len(methods) <= 24 else 5
        ax.set_xticks(range(1, len(methods) + 1, every))
        ax.set_title(mpl_text(f"method rank by {report.metrics[metric].title}"), fontsize=10)
        ax.set_xlabel("method rank among the methods (1 = best)")
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_yticks(range(len(methods)), [mpl_text(m) for m in methods])
    styles = _styles(report, methods)  # method names in their family's colour, as in Figure 1
    for label, method in zip(axes[0, 0].get_yticklabels(), methods):
        label.set_color(styles[method]["color"])
    axes[0, 0].invert_yaxis()  # the suite's first method on top
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncol=min(len(labels), 8),
        bbox_to_anchor=(0.5, 1.0 + 0.35 / len(methods)),
        frameon=False,
    )
    n_blocks = int(summary["n"].max())
    caption = (
        f"profile: {report.profile}; model selection: {report.rule.label}; methods ranked against each other "
        f"within each (setting, r_train, run) block, up to {n_blocks} blocks per point; bars: 95 % "
        "percentile-bootstrap interval over blocks; names coloured by family"
    )
    fig.suptitle("\n".join(textwrap.wrap(caption, 40 + 25 * len(metrics))), y=-0.02, fontsize=8.5)
    fig.tight_layout()
    paths = save_figure(fig, out_dir, stem)
    plt.close(fig)
    return paths
