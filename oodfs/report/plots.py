"""The paper's figures and the feature-ranking table, from a report (file names end in the
model-selection rule, e.g. ``figure1-val.png``, so that the rules' figures sit side by side).

* Figure 1: per setting, each headline metric against r_train with the 95 % interval over runs:
  a row of panels per method family (at most MAX_SERIES lines a panel), one colour and marker
  per family, one line style per method and its name at the line's end; a dot plot with a row
  per method when there is one r_train (docs/PROTOCOL.md section 18).
* Figure "ood-S": RMSE mean and sd against the number k of top features of a curve method's
  ranking (SRDO in the paper's suite), one line per r_train.
* Summary: each method's rank among the methods, per setting and over all settings.
* Feature-ranking table: that method's ranking per r_train and setting."""

from __future__ import annotations

import contextlib
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

#: per family (oodfs.report.analysis.METHOD_FAMILIES): one colour, from Okabe and Ito's palette
#: (told apart by colour-blind readers), and one marker shape (which tells the family in black
#: and white); docs/PROTOCOL.md section 18
FAMILY_STYLES = {
    "independence weighting": ("#D55E00", "o"),
    "other selectors": ("#0072B2", "s"),
    "invariance (environment labels)": ("#009E73", "^"),
    "robust (DRO)": ("#CC79A7", "D"),
    "Markov boundary": ("#E69F00", "v"),
    "yardsticks": ("#000000", "X"),
}
#: families a plugin declares beyond those, in the order of their names: the rest of the palette,
#: then colours of matplotlib's tab10 that no family above has
MORE_FAMILY_STYLES = (
    ("#56B4E9", "P"),
    ("#999999", "h"),
    ("#8C564B", "*"),
    ("#17BECF", "<"),
    ("#BCBD22", ">"),
    ("#9467BD", "p"),
)
#: within a family, each member has a line style of its own (and a filled or open marker), and its
#: name is written at the end of its line
LINE_STYLES = ("-", "--", ":", "-.", (0, (6, 2)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 2, 1, 2)))
#: the markers of series that are not methods: the settings of the rank summary (in grey shades,
#: "all settings" a black diamond), the r_train of Figure ood-S
SERIES_MARKERS = ("o", "s", "^", "v", "<", ">", "P")
#: at most this many series share a panel: more cannot be told apart, so a larger family is split
MAX_SERIES = 8
#: the yardsticks are drawn in every family's panel (a common reference) when there are at most
#: this many of them, else in panels of their own
SHARED_YARDSTICKS = 3


def family_styles(families) -> dict:
    """Each family's (colour, marker): the built-in families' fixed ones, other families' in the
    order of their names (the same family gets the same style in every figure of a report)."""
    import colorsys

    out = {f: FAMILY_STYLES[f] for f in families if f in FAMILY_STYLES}
    for i, family in enumerate(sorted({f for f in families if f not in FAMILY_STYLES})):
        if i < len(MORE_FAMILY_STYLES):
            out[family] = MORE_FAMILY_STYLES[i]
        else:  # more families than any palette holds: distinct hues by the golden angle
            r, g, b = colorsys.hsv_to_rgb((i * 0.618034) % 1, 0.75, 0.65)
            out[family] = ("#%02X%02X%02X" % (round(255 * r), round(255 * g), round(255 * b)), "o")
    return out


def text_colour(colour: str) -> str:
    """A family's colour darkened for text on white (the palette's orange is too light to read)."""
    from matplotlib.colors import to_hex, to_rgb

    return to_hex([0.65 * c for c in to_rgb(colour)])


def _styles(report: Report, methods: list[str]) -> dict:
    """Per method: its family's colour and marker, a line style of its own within the family
    (LINE_STYLES in order), a filled or open marker (alternately), and the family's name. Methods
    are returned grouped by family, in the order of METHOD_FAMILIES, each family in the report's
    method order (the suite's), so that every figure lists them alike."""
    from oodfs.report.analysis import family_order, method_family

    every = list(dict.fromkeys([*report.points["method"], *methods]))
    families = {m: method_family(m, report.kind(m)) for m in every}
    styles = family_styles(set(families.values()))
    ordered = sorted(methods, key=lambda m: (family_order(families[m]), families[m], every.index(m)))
    out = {}
    for family in dict.fromkeys(families[m] for m in ordered):
        colour, marker = styles[family]
        members = [m for m in ordered if families[m] == family]
        for j, method in enumerate(members):
            out[method] = dict(
                color=colour,
                marker=marker,
                ls=LINE_STYLES[j % len(LINE_STYLES)],
                mfc=colour if j % 2 == 0 else "white",
                family=family,
            )
    return out


def _panel_groups(styles: dict) -> list[tuple[str, list[str]]]:
    """The methods of each row of panels: one family each, split into parts when it has more
    than MAX_SERIES members, with the yardsticks (when there are few) in every one."""
    by_family: dict[str, list[str]] = {}
    for method, st in styles.items():
        by_family.setdefault(st["family"], []).append(method)
    yardsticks = by_family.pop("yardsticks", [])
    shared = yardsticks if by_family and len(yardsticks) <= SHARED_YARDSTICKS else []
    if yardsticks and not shared:
        by_family["yardsticks"] = yardsticks
    room = MAX_SERIES - len(shared)
    groups = []
    for family, members in by_family.items():
        size = -(-len(members) // -(-len(members) // room))  # parts of about equal size
        parts = [members[i : i + size] for i in range(0, len(members), size)]
        for p, part in enumerate(parts):
            name = family if len(parts) == 1 else f"{family} ({p + 1} of {len(parts)})"
            groups.append((name, part + shared))
    return groups


def _family_key(fig, styles: dict, above: float = 0.0):
    """One legend above the panels (``above`` inches higher): each family's colour and marker
    (the methods themselves are named in the panels)."""
    from matplotlib.lines import Line2D

    seen = {}
    for st in styles.values():
        seen.setdefault(st["family"], st)
    handles = [
        Line2D([], [], color=st["color"], marker=st["marker"], ls="none", ms=7, label=mpl_text(family))
        for family, st in seen.items()
    ]
    return fig.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0 + above / fig.get_figheight()),
        ncol=min(len(handles), 6),
        frameon=False,
        fontsize=10,
    )


def figure1(report: Report, out_dir: Path, stem: str = "figure1") -> list[Path]:
    """Each headline metric against r_train, the 95 % interval over runs as a bar
    (docs/PROTOCOL.md section 18).

    With several r_train (or environment labels) in a setting: one row of panels per family (at
    most MAX_SERIES methods a panel; the yardsticks in each as a reference), one line per method
    in its family's colour and marker with a line style of its own and its name at the line's
    end; the panels of a setting and metric share their y axis, so that families compare by
    position. With one r_train: one dot plot per setting and metric, a row per method (named),
    grouped by family."""
    metrics = {m: report.metrics[m] for m in report.headline}
    cells = report.cells()
    cells = cells[cells["r_train"] != "all"]
    if cells.empty or not metrics:
        return []
    styles = _styles(report, list(dict.fromkeys(cells["method"])))
    numeric = pd.to_numeric(cells["r_train"], errors="coerce")
    # environment labels of a real table ("1980", "<2003") are names, not an axis
    labels = not any(report.metrics[m].needs_stable_set for m in report.headline)
    categorical = labels or numeric.isna().any()
    one_env = cells.groupby("setting", sort=False)["r_train"].nunique().max() < 2
    if one_env:
        fig = _dot_figure(cells, metrics, styles)
        band = "bars: 95 % percentile-bootstrap interval over runs"
        look = "one colour and marker per family, one row per method"
    else:
        fig = _line_figure(cells, metrics, styles, categorical)
        band = "bars: 95 % percentile-bootstrap interval over runs"
        look = (
            "one colour and marker per family, one line style per method with its name at the line's end, "
            "a row of panels per family"
        )
        if any(st["family"] == "yardsticks" for st in styles.values()):
            look += " (the yardsticks in each, as a reference, when there are at most "
            look += f"{SHARED_YARDSTICKS})"
    n_runs = int(cells["n"].max())
    caption = (
        f"profile: {report.profile}; downstream model: {report.downstream}; model selection: "
        f"{report.rule.label}; mean of up to {n_runs} runs; {band} (none with one run); {look}"
    )
    fig.text(0.5, 0, "\n".join(textwrap.wrap(caption, 150)), ha="center", va="top", fontsize=9)
    paths = save_figure(fig, out_dir, stem)
    pyplot().close(fig)
    return paths


def _interval(g: pd.DataFrame) -> np.ndarray:
    """Error-bar lengths below and above each mean (a mean of non-negative values, an RMSE, is
    never drawn with an interval below 0; none where there is no interval)."""
    low = g["low"].clip(lower=0) if (g["mean"].dropna() >= 0).all() else g["low"]
    err = np.vstack([g["mean"] - low, g["high"] - g["mean"]])
    return np.where(np.isfinite(err), err, 0)


def _line_figure(cells: pd.DataFrame, metrics: dict, styles: dict, categorical: bool):
    plt = pyplot()
    settings = list(dict.fromkeys(cells["setting"]))
    envs = sorted(set(cells["r_train"]), key=env_sort_key)
    groups = _panel_groups(styles)
    rows = [(setting, group) for setting in settings for group in groups]
    longest = max(len(mpl_text(m)) for m in styles)
    # room for every environment's name, and for the methods' names at the lines' ends
    width = (max(3.6, 0.3 * len(envs) + 1.0) if categorical else 3.6) + min(longest, 30) * 0.075
    height = 2.9 + (0.9 if categorical and len(envs) > 4 else 0)
    fig, axes = plt.subplots(
        len(rows), len(metrics), figsize=(width * len(metrics), height * len(rows)), squeeze=False
    )
    ends = {}
    for i, (setting, (group, members)) in enumerate(rows):
        for j, (metric, m) in enumerate(metrics.items()):
            ax = axes[i, j]
            c = cells[(cells["setting"] == setting) & (cells["metric"] == metric)]
            ends[i, j] = _line_panel(ax, c, members, styles, envs if categorical else None)
            ax.set_title(mpl_text(f"{setting}: {m.title} {m.arrow}"), fontsize=10)
            ax.grid(alpha=0.3)
            if i == len(rows) - 1 or rows[i + 1][0] != setting:
                ax.set_xlabel("training environment" if categorical else "r_train")
        axes[i, 0].set_ylabel("\n".join(textwrap.wrap(mpl_text(group), 24)), fontweight="bold")
    # the panels of one setting and metric share a y range: the families compare by position
    for setting in settings:
        same = [i for i, (s, _) in enumerate(rows) if s == setting]
        for j in range(len(metrics)):
            lims = np.array([axes[i, j].get_ylim() for i in same])
            for i in same:
                axes[i, j].set_ylim(lims[:, 0].min(), lims[:, 1].max())
    # names placed before the layout: a panel is shorter then than after it, so names spaced for
    # that height never overlap (and the layout, which is slow, runs once)
    for (i, j), panel_ends in ends.items():
        _name_line_ends(axes[i, j], panel_ends)
    fig.tight_layout()
    _family_key(fig, styles)
    return fig


def _line_panel(ax, c: pd.DataFrame, members: list[str], styles: dict, envs: list | None) -> list:
    """One line per method with its interval as bars; methods are dodged sideways a little so
    that equal values stay visible. ``envs``: the categories of the x axis (environment labels),
    or None for a numeric r_train. Returns each line's last point and style, for its name."""
    if envs is not None:
        position = {e: k for k, e in enumerate(envs)}
        xs = np.arange(len(envs), dtype=float)
    else:
        xs = np.sort(pd.to_numeric(c["r_train"]).unique())
    gap = np.diff(xs).min() if len(xs) > 1 else 1.0
    width = 0.3 * gap / max(len(members), 1)  # all methods within 30 % of the gap
    ends = []
    for k, method in enumerate(members):
        g = c[c["method"] == method]
        x = g["r_train"].map(position) if envs is not None else pd.to_numeric(g["r_train"])
        g = g.assign(x=x.to_numpy(dtype=float)).sort_values("x")
        g = g[g["mean"].notna()]
        if g.empty:
            continue
        x = g["x"] + (k - (len(members) - 1) / 2) * width
        st = styles[method]
        yardstick = st["family"] == "yardsticks"
        ax.errorbar(
            x, g["mean"], yerr=_interval(g), fmt="none", ecolor=st["color"], elinewidth=0.8, alpha=0.6
        )
        ax.plot(
            x,
            g["mean"],
            ls=st["ls"],
            lw=1.1 if yardstick else 1.6,
            marker=st["marker"],
            ms=5,
            mfc=st["mfc"],
            mec=st["color"],
            color=st["color"],
            label=mpl_text(method),
            zorder=2 if yardstick else 3,
        )
        ends.append((float(x.iloc[-1]), float(g["mean"].iloc[-1]), method, st))
    if envs is not None:
        ax.set_xticks(
            xs,
            [mpl_text(e) for e in envs],
            rotation=45 if len(envs) > 4 else 0,
            ha="right" if len(envs) > 4 else "center",
        )
    else:
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
    return ends


def _name_line_ends(ax, ends: list, fontsize: float = 8) -> None:
    """Each line's method name beside the panel, level with the line's last point, moved apart
    just enough not to overlap, with a thin leader to the point."""
    if not ends:
        return
    y0, y1 = ax.get_ylim()
    height = ax.get_window_extent().height * 72 / ax.figure.dpi  # points
    step = 1.25 * fontsize / max(height, 1)  # one line of text, in axes fractions
    order = sorted(range(len(ends)), key=lambda k: ends[k][1])
    place = [(ends[k][1] - y0) / (y1 - y0) if y1 != y0 else 0.5 for k in order]
    for n in range(1, len(place)):  # upwards, each at least a line above the one below
        place[n] = max(place[n], place[n - 1] + step)
    top = min(1.0, max(place))  # then back down from the top when the stack rose past it
    place[-1] = min(place[-1], top)
    for n in range(len(place) - 2, -1, -1):
        place[n] = min(place[n], place[n + 1] - step)
    for n, k in enumerate(order):
        x, y, method, st = ends[k]
        ax.annotate(
            mpl_text(method),
            xy=(x, y),
            xycoords="data",
            xytext=(1.03, place[n]),
            textcoords="axes fraction",
            va="center",
            fontsize=fontsize,
            color=text_colour(st["color"]),
            annotation_clip=False,
            # patchA None: the leader ends at the text's anchor, not clipped to its box (a costly search)
            arrowprops=dict(
                arrowstyle="-", color=st["color"], lw=0.5, alpha=0.7, shrinkA=2, shrinkB=3, patchA=None
            ),
        )


def family_rows(methods, styles) -> tuple[dict, float]:
    """Each method's row position in a dot plot, its family's methods together with a little
    space between families, and the height they take."""
    rows, y, family = {}, 0.0, None
    for method in methods:
        if family is not None and styles[method]["family"] != family:
            y += 0.6
        family = styles[method]["family"]
        rows[method] = y
        y += 1
    return rows, y


def _dot_figure(cells: pd.DataFrame, metrics: dict, styles: dict):
    """One panel per setting and metric: a row per method (named on the axis), grouped by family
    and drawn in its colour and marker, the interval as a bar."""
    plt = pyplot()
    settings = list(dict.fromkeys(cells["setting"]))
    methods = list(styles)  # grouped by family
    rows, y = family_rows(methods, styles)
    fig, axes = plt.subplots(
        len(settings),
        len(metrics),
        figsize=(3.4 * len(metrics) + 1.6, (0.9 + 0.24 * y) * len(settings)),
        sharey=True,
        squeeze=False,
    )
    families = list(dict.fromkeys(st["family"] for st in styles.values()))
    for i, setting in enumerate(settings):
        for j, (metric, m) in enumerate(metrics.items()):
            ax = axes[i, j]
            c = cells[(cells["setting"] == setting) & (cells["metric"] == metric)].set_index("method")
            for family in families:
                members = [x for x in methods if styles[x]["family"] == family]
                g = c.reindex(members)
                g = g[g["mean"].notna()]
                if g.empty:
                    continue
                st = styles[members[0]]
                ax.errorbar(
                    g["mean"],
                    [rows[x] for x in g.index],
                    xerr=_interval(g),
                    fmt=st["marker"],
                    color=st["color"],
                    ms=6,
                    capsize=2,
                    lw=1,
                    ls="none",
                    label=mpl_text(family),
                )
            for before, after in zip(methods, methods[1:]):  # a rule between families
                if styles[before]["family"] != styles[after]["family"]:
                    ax.axhline((rows[before] + rows[after]) / 2, color="0.8", lw=0.8)
            envs = list(dict.fromkeys(c["r_train"]))
            where = f" (r_train = {envs[0]})" if len(envs) == 1 else ""
            ax.set_title(mpl_text(f"{setting}{where}: {m.title} {m.arrow}"), fontsize=10)
            ax.set_xlabel(mpl_text(m.title))
            ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_yticks(list(rows.values()), [mpl_text(x) for x in rows])
    for ax in axes[:, 0]:
        for label, method in zip(ax.get_yticklabels(), rows):
            label.set_color(text_colour(styles[method]["color"]))
    axes[0, 0].set_ylim(y - 0.4, -0.6)  # the first family on top
    fig.tight_layout()
    _family_key(fig, styles)
    return fig


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
    # one line per r_train, in order: a colour of viridis (lighter as r_train grows, an order
    # that greyscale keeps), a line style and a marker each; more r_train than MAX_SERIES - 1
    # (with the k line) are split over rows of panels
    size = MAX_SERIES - 1
    panels = []
    for (setting, method), g in curves.groupby(["setting", "method"], sort=False):
        r_trains = sorted(set(g["r_train"]), key=env_sort_key)
        panels += [
            (setting, method, g, r_trains, r_trains[p : p + size]) for p in range(0, len(r_trains), size)
        ]
    fig, axes = plt.subplots(len(panels), 2, figsize=(9, 3.2 * len(panels)), squeeze=False)
    n_runs = 0
    for i, (setting, method, g, r_trains, part) in enumerate(panels):
        for r_train in part:
            gr = g[g["r_train"] == r_train]
            n = r_trains.index(r_train)
            style = dict(
                color=plt.get_cmap("viridis")(0.8 * n / max(len(r_trains) - 1, 1)),
                ls=LINE_STYLES[n % len(LINE_STYLES)],
                marker=SERIES_MARKERS[n % len(SERIES_MARKERS)],
                ms=4,
            )
            for j, stat in enumerate(("rmse_mean", "rmse_std")):
                by_k = gr[gr["metric"] == stat].groupby("k")
                x = [k for k, _ in by_k]
                cells = [cell_summary(v["value"], method="bootstrap") for _, v in by_k]
                mean = np.array([c.mean for c in cells])
                low = np.array([c.low for c in cells])
                high = np.array([c.high for c in cells])
                n_runs = max([n_runs] + [c.n for c in cells])
                axes[i, j].plot(x, mean, label=mpl_text(f"r_train={r_train}"), **style)
                if np.isfinite(low).any():
                    axes[i, j].fill_between(x, low, high, color=style["color"], alpha=0.12, lw=0)
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


def make_figures(report: Report, out_dir, step=None) -> list[Path]:
    """Write every figure and the ranking table to ``out_dir/figures``; return the paths.
    ``step``: a context manager called with what is being drawn ("drawing figure 2 of 3
    (ood_s-val)"), around each figure (``oodfs bench`` says each as it begins)."""
    step = step or _unsaid
    fig_dir = inside(out_dir, "figures")  # (a link to elsewhere is refused)
    fig_dir.mkdir(parents=True, exist_ok=True)
    rule = report.rule.name  # every rule's figures side by side, never over each other
    drawn = [("figure1", figure1), ("ood_s", ood_s_figure), ("summary", summary_figure)]
    if (report.tasks["status"] != "ok").all():  # every task failed: that is the result
        drawn.append(("failures", failures_figure))
    paths = []
    for i, (name, draw) in enumerate(drawn, 1):
        with step(f"drawing figure {i} of {len(drawn)} ({name}-{rule})"):
            paths += draw(report, fig_dir, f"{name}-{rule}")
    with step(f"writing the feature ranking table (feature_ranking-{rule}.md)"):
        table = feature_ranking_table(report)
        if table:
            paths.append(write_text(inside(fig_dir, f"feature_ranking-{rule}.md"), table))
    return paths


@contextlib.contextmanager
def _unsaid(text: str):
    yield


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
    """All settings at once: one panel per headline metric, one row per method (grouped by
    family, its name in the family's colour), its mean rank in each setting (grey, a marker per
    setting) and over all settings (black diamond) with 95 % bootstrap intervals over the
    (r_train, run) blocks (see :func:`rank_summary`). More than MAX_SERIES - 1 settings are
    split over rows of panels, each with "all settings"."""
    summary = rank_summary(report)
    if summary.empty:
        return []
    plt = pyplot()
    metrics = [m for m in report.headline if (summary["metric"] == m).any()]
    styles = _styles(report, list(dict.fromkeys(summary["method"])))
    methods = list(styles)  # grouped by family, as in Figure 1
    settings = [s for s in dict.fromkeys(summary["setting"]) if s != "all settings"]
    pooled = "all settings" in set(summary["setting"])
    size = MAX_SERIES - 1
    parts = [settings[i : i + size] for i in range(0, len(settings), size)] or [[]]
    rows, y = family_rows(methods, styles)
    fig, axes = plt.subplots(
        len(parts),
        len(metrics),
        figsize=(max(3.3, 0.2 * len(methods)) * len(metrics) + 1.2, (0.9 + 0.42 * y) * len(parts)),
        sharey=True,
        squeeze=False,
    )
    greys = {s: str(round(0.25 + 0.4 * i / max(len(settings) - 1, 1), 2)) for i, s in enumerate(settings)}
    for r, part in enumerate(parts):
        groups = part + (["all settings"] if pooled else [])
        step = 0.7 / max(len(groups), 1)
        for ax, metric in zip(axes[r], metrics):
            s = summary[summary["metric"] == metric]
            for j, group in enumerate(groups):
                g = s[s["setting"] == group].set_index("method").reindex(methods)
                ys = np.array([rows[m] for m in methods]) + (j - (len(groups) - 1) / 2) * step
                err = np.vstack([g["mean"] - g["low"], g["high"] - g["mean"]])
                everything = group == "all settings"
                ax.errorbar(
                    g["mean"],
                    ys,
                    xerr=np.where(np.isfinite(err), err, 0),
                    fmt="D" if everything else SERIES_MARKERS[settings.index(group) % size],
                    color="black" if everything else greys[group],
                    mfc="black" if everything else "white",
                    ms=5 if everything else 4.5,
                    capsize=2,
                    lw=1.4 if everything else 1,
                    ls="none",
                    label=mpl_text(group),
                )
            for before, after in zip(methods, methods[1:]):  # a rule between families
                if styles[before]["family"] != styles[after]["family"]:
                    ax.axhline((rows[before] + rows[after]) / 2, color="0.8", lw=0.8)
            ax.set_xlim(0.5, len(methods) + 0.5)
            every = 1 if len(methods) <= 12 else 2 if len(methods) <= 24 else 5
            ax.set_xticks(range(1, len(methods) + 1, every))
            ax.set_title(mpl_text(f"method rank by {report.metrics[metric].title}"), fontsize=10)
            ax.set_xlabel("method rank among the methods (1 = best)")
            ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_yticks(list(rows.values()), [mpl_text(m) for m in rows])
    for ax in axes[:, 0]:  # method names in their family's colour, as in Figure 1
        for label, method in zip(ax.get_yticklabels(), rows):
            label.set_color(text_colour(styles[method]["color"]))
    axes[0, 0].set_ylim(y - 0.4, -0.6)  # the first family on top
    fig.tight_layout()
    handles, labels = [], []
    for ax in axes[:, 0]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=min(len(labels), 8),
        bbox_to_anchor=(0.5, 1.0),
        frameon=False,
    )
    _family_key(fig, styles, above=0.3)
    n_blocks = int(summary["n"].max())
    caption = (
        f"profile: {report.profile}; model selection: {report.rule.label}; methods ranked against each other "
        f"within each (setting, r_train, run) block, up to {n_blocks} blocks per point; bars: 95 % "
        "percentile-bootstrap interval over blocks; names coloured by family (key on top)"
    )
    fig.suptitle("\n".join(textwrap.wrap(caption, 40 + 25 * len(metrics))), y=-0.02, fontsize=8.5)
    paths = save_figure(fig, out_dir, stem)
    plt.close(fig)
    return paths
