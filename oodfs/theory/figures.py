"""The theory run's figures: coefficient errors, ESS and the independence residual against n."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from oodfs.results.atomic import write_atomically


def _save(fig, path: Path) -> None:
    """Drawn in memory, written in one step: a full disk leaves no half a figure."""
    drawn = io.BytesIO()
    fig.savefig(drawn, format=path.suffix[1:], bbox_inches="tight", dpi=130)
    write_atomically(path, drawn.getbuffer())


STYLES = {  # a distinct colour, marker and line style per method, so that no line hides another
    "ols": ("tab:gray", "s", ":"),
    "oracle_ipw": ("tab:blue", "o", "-"),
    "oracle_cond": ("tab:cyan", "D", "--"),
    "dwr": ("tab:red", "^", "-."),
    "srdo": ("tab:green", "v", "-"),
    "srdo_unclipped": ("tab:olive", "P", "--"),
    "dwr_converged": ("tab:purple", "X", ":"),
}


def _style(method: str, i: int):
    import matplotlib.pyplot as plt

    return STYLES.get(method, (plt.cm.tab10(i % 10), "x", "-"))


def _log_axes(ax) -> None:
    """Log-log axes labelled at 1, 2, 5 x 10^k in plain numbers (no crowded minor labels)."""
    from matplotlib import ticker

    ax.set(xscale="log", yscale="log")
    for axis in (ax.xaxis, ax.yaxis):
        lo, hi = axis.get_view_interval()
        decades = np.log10(max(hi, 1e-300) / max(lo, 1e-300))
        # 1-2-5 ticks over a short range; over many decades 1 and 3 (x) or 1 only, so labels do not collide
        subs = (1.0, 2.0, 5.0) if decades < 2.2 else ((1.0, 3.0) if decades < 3.5 else (1.0,))
        axis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
        axis.set_major_formatter(
            ticker.FuncFormatter(lambda v, _: f"{v:g}" if 1e-3 <= v < 1e4 else f"{v:.0e}".replace("e+0", "e"))
        )
        axis.set_minor_formatter(ticker.NullFormatter())


def _curves(results, targets, config, metric: str, path: Path, ylabel: str) -> None:
    from oodfs.report.figure_files import pyplot

    plt = pyplot()
    conds = [c for c in config.conditions if c.name in set(results["condition"])]
    ncols = min(2, len(conds))
    nrows = -(-len(conds) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.0 * ncols, 4.6 * nrows), squeeze=False)
    for ax in axes.flat[len(conds) :]:
        ax.set_visible(False)
    methods = list(dict.fromkeys(results["method"]))
    for ax, cond in zip(axes.flat, conds):
        g = results[results["condition"] == cond.name]
        for i, m in enumerate(methods):
            q = g[g["method"] == m].groupby("n")[metric].quantile([0.25, 0.5, 0.75]).unstack()
            if q.empty:
                continue
            color, marker, ls = _style(m, i)
            ax.plot(q.index, q[0.5], ls, marker=marker, color=color, label=m, lw=1.6, ms=5)
            ax.fill_between(q.index, q[0.25], q[0.75], color=color, alpha=0.15, lw=0)
        if metric == "beta_v":
            tg = targets[cond.name]
            ols_v = float(np.linalg.norm(np.asarray(tg["selected"])[len(tg["stable"]) :]))
            ax.axhline(ols_v, color="tab:gray", lw=0.8, ls="-", alpha=0.6)
            ax.annotate(
                "OLS population value",
                (g["n"].max(), ols_v),
                fontsize=7,
                color="tab:gray",
                ha="right",
                va="bottom",
                xytext=(0, 4),
                textcoords="offset points",
            )
        ns = np.array(sorted(set(g["n"])), dtype=float)
        anchor = g[(g["method"] == "oracle_cond") & (g["n"] == ns[0])][metric].median()
        if np.isfinite(anchor) and anchor > 0:
            ax.plot(
                ns, anchor * (ns / ns[0]) ** -0.5, color="black", lw=0.8, ls=(0, (1, 3)), label="slope -1/2"
            )
        lam = cond.env_params.get("exponent", 10.0) * np.log(abs(cond.r))
        _log_axes(ax)
        ax.set(xlabel="n", ylabel=ylabel, title=f"{cond.name} (lam = exponent ln r = {lam:.2f})")
        ax.grid(True, which="major", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncol=max(1, len(labels)),
        bbox_to_anchor=(0.5, 0.0),
        frameon=False,
    )
    fig.suptitle(f"{ylabel}: median over replicates, band = interquartile range", y=1.03)
    _save(fig, path)
    plt.close(fig)


def _ess_figure(results, config, path: Path) -> None:
    from oodfs.report.figure_files import pyplot

    plt = pyplot()
    conds = [c for c in config.conditions if c.name in set(results["condition"])]
    fig, axes = plt.subplots(2, len(conds), figsize=(4.4 * len(conds), 7.4), squeeze=False)
    methods = [m for m in dict.fromkeys(results["method"]) if m != "ols"]
    for j, cond in enumerate(conds):
        g = results[results["condition"] == cond.name]
        for i, m in enumerate(methods):
            gm = g[g["method"] == m]
            if gm.empty:
                continue
            color, marker, ls = _style(m, i)
            med = gm.groupby("n")[["ess_fraction", "ess", "beta_v"]].median()
            axes[0, j].plot(med.index, med["ess_fraction"], ls, marker=marker, color=color, label=m, ms=5)
            axes[1, j].scatter(gm["ess"], gm["beta_v"], s=6, color=color, marker=marker, alpha=0.35, lw=0)
            axes[1, j].plot(med["ess"], med["beta_v"], ls, color=color, lw=1.2)
        e = np.geomspace(max(1.0, g["ess"].min()), g["ess"].max(), 20)
        ref = g[g["method"] == "oracle_cond"]
        if not ref.empty:
            c = np.median(ref["beta_v"] * np.sqrt(ref["ess"]))
            axes[1, j].plot(e, c / np.sqrt(e), color="black", lw=0.8, ls=(0, (1, 3)), label="∝ ESS^(-1/2)")
        axes[0, j].set(xlabel="n", title=cond.name)
        axes[1, j].set(xlabel="effective sample size of the weights")
        for ax in axes[:, j]:
            ax.autoscale_view()
            _log_axes(ax)
            ax.grid(True, alpha=0.3)
    axes[0, 0].set_ylabel("ESS / n (median)")
    axes[1, 0].set_ylabel("||beta_hat(V)|| (dots: fits, line: per-n medians)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    h2, l2 = axes[1, 0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(
        handles + h2,
        labels + l2,
        loc="upper center",
        ncol=len(labels) + len(l2),
        bbox_to_anchor=(0.5, 0.0),
        frameon=False,
    )
    _save(fig, path)
    plt.close(fig)


def _independence_figure(results, config, path: Path) -> None:
    from oodfs.report.figure_files import pyplot

    plt = pyplot()
    conds = [c for c in config.conditions if c.name in set(results["condition"])]
    fig, axes = plt.subplots(2, len(conds), figsize=(4.4 * len(conds), 7.6), squeeze=False)
    methods = list(dict.fromkeys(results["method"]))
    for j, cond in enumerate(conds):
        g = results[results["condition"] == cond.name]
        for row, (col, label) in enumerate(
            (
                ("max_corr_v", "max weighted |corr(V_j, X_k)|"),
                ("max_corr_vr", "max weighted |corr(V_j, a)|, a = f - linear fit on S"),
            )
        ):
            ax = axes[row, j]
            for i, m in enumerate(methods):
                gm = g[g["method"] == m]
                color, marker, _ = _style(m, i)
                ax.scatter(gm[col], gm["beta_v"], s=8, color=color, marker=marker, alpha=0.4, lw=0, label=m)
            ax.autoscale_view()
            _log_axes(ax)
            ax.set(xlabel=label)
            ax.grid(True, alpha=0.3)
        axes[0, j].set_title(cond.name)
    for row in range(2):
        axes[row, 0].set_ylabel("||beta_hat(V)||")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(
        handles,
        labels,
        loc="upper center",
        ncol=len(labels),
        bbox_to_anchor=(0.5, 0.0),
        frameon=False,
        markerscale=2.5,
    )
    fig.suptitle("Independence residual of the weights against the V coefficients (every fit)", y=1.01)
    _save(fig, path)
    plt.close(fig)


def make_figures(results, targets, config, out_dir: Path) -> list[Path]:
    paths = [out_dir / f"theory_{stem}.png" for stem in ("beta_v", "err_s", "ess", "independence")]
    _curves(results, targets, config, "beta_v", paths[0], "||beta_hat(V)||")
    _curves(results, targets, config, "err_s", paths[1], "||beta_hat(S) - beta*(S)||")
    _ess_figure(results, config, paths[2])
    _independence_figure(results, config, paths[3])
    return paths
