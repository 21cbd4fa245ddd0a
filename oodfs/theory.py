"""``oodfs theory``: the paper's theorems on weighted least squares, checked numerically.

Xu et al. (ICML 2022) prove that WLS with a weighting function under which a non-stable feature
is independent of the others gives that feature a zero population coefficient (Theorem 5.1), and
bound the finite-sample error (Theorem 5.3)::

    ||beta_hat_w_hat - beta_w||^2 <= O(W sigma^2 d / (n lambda)) + O(W B^2 C^2 / (n lambda^2))
                                     + O(eps^2 M_w / lambda^2) + o(1/n),

W a bound on the weights, eps^2 = E[(w - w_hat)^2] the error of learned weights; the same bound
holds for ||beta_hat(V)|| and ||beta_hat(S) - beta_w(S)|| separately. With exact weights (eps = 0)
both norms shrink like n^(-1/2); with learned weights they level off at the eps term.

What is run. For each *condition* (synthetic environment parameters and a training bias rate r),
each n of a log grid and each replicate: one training sample (X, y) from the environment (all
methods fit the same sample: paired comparisons), a column layout drawn per sample, and WLS with
the weights of each *method*:

* ``ols`` (no weights); target law: the training law itself (its V coefficients are not zero);
* ``oracle_ipw``, ``oracle_cond``: the environment's oracle weighters (registered plugins), built
  with ``for_environment(env, r)``; target laws: the law before selection, and the selected law
  of S with V drawn independently of it;
* ``dwr``, ``srdo`` (default parameters), ``dwr_converged`` (L-BFGS-B run to convergence:
  ``tol=0``, at most 5000 iterations, instead of the default early stop) and ``srdo_unclipped`` (the same classifier, ratio
  clipped at 1e12 instead of 10: one fit, read twice through ``fit_grid``); target law: the
  product of the training marginals (the law SRDO's density ratio points to; DWR's
  decorrelation has no unique population target, it is compared with the same law).

Per fit: ``beta_v`` = ||beta_hat(V)||_2, ``err_s`` = ||beta_hat(S) - beta*(S)||_2 with beta* of the
method's target law, ``err`` = ||beta_hat - beta*||_2, the weights' effective sample size
``ess`` (and ``ess_fraction``), ``max_abs_corr`` (largest weighted |correlation| over all pairs of
features), ``max_corr_v`` (over pairs with a V feature) and ``max_corr_vr`` (largest weighted
|corr(V_j, a)|, a = f(S) minus its weighted least-squares fit on S: the misspecification that
WLS cannot explain with S. By Frisch-Waugh-Lovell, beta_hat(V) is the weighted regression of
y on V residualised on S, whose population part is driven by cov_w(V, a) -- the dependence
that Theorem 5.1 removes by making V independent of S; V may stay correlated with S itself
without biasing beta(V) when f is linear in S).
beta* of each target law is estimated once per condition on ``n_target`` draws of that law
(sampled directly, without weights: the law before selection by the environment's
``sample_unselected``, the others by recombining columns of selected draws), as the least-squares
coefficients of the noiseless f(S) on X.

Slopes: per (condition, method, metric) the least-squares slope of log10(metric) on log10(n)
over every replicate (``scipy.stats.linregress``; 95% interval from its standard error and
Student's t), the Theil-Sen slope of the per-n medians (``scipy.stats.theilslopes``, its 95%
interval), the same slope restricted to n >= ``tail_n``, and the slope against log10(ESS).

Cost. WLS and the oracle weights are cheap; DWR and SRDO are the cost, so they run on fewer
replicates and only up to ``max_n`` (see ``METHODS``). Tasks (condition, n, replicate) run in
``jobs`` worker processes, largest n first.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from .seeds import derive_seed
from .validation import OodfsError


@dataclass(frozen=True)
class Condition:
    """A synthetic environment (its parameters, ``layout_seed`` excluded) and the training bias rate r."""

    name: str
    env_params: dict
    r: float


@dataclass(frozen=True)
class Method:
    """WLS with the weights of ``weighter`` (None: OLS) at ``params``; ``gamma_read`` lists extra
    SRDO clip levels read from the same classifier; at most ``replicates`` replicates, n <= ``max_n``."""

    name: str
    weighter: str | None
    target: str
    params: dict = field(default_factory=dict)
    max_n: int | None = None
    replicates: int | None = None


#: the target laws of beta* (see the module docstring)
TARGETS = ("selected", "unselected", "selected_s", "product")

#: lam = exponent * ln r sets how far the selection reaches: 0.81, 1.62, 4.05 at r = 1.5 (the
#: paper's exponent 10 is the last), and the paper's r_train = 2.5 (lam = 9.16)
CONDITIONS = (
    Condition("exp2-r1.5", {"setting": "poly", "exponent": 2.0}, 1.5),
    Condition("exp4-r1.5", {"setting": "poly", "exponent": 4.0}, 1.5),
    Condition("exp10-r1.5", {"setting": "poly", "exponent": 10.0}, 1.5),
    Condition("exp10-r2.5", {"setting": "poly", "exponent": 10.0}, 2.5),
)

METHODS = (
    Method("ols", None, "selected"),
    Method("oracle_ipw", "oracle_ipw", "unselected"),
    Method("oracle_cond", "oracle_cond", "selected_s"),
    # DWR: ~1-2 s per fit at n = 5e4 (L-BFGS, 15-70 iterations); capped there, 6 replicates
    Method("dwr", "dwr", "product", max_n=50_000, replicates=6),
    # DWR run to convergence (tol 0): hundreds to thousands of iterations, ~2 s at n = 5000
    Method("dwr_converged", "dwr", "product", {"tol": 0.0, "max_iter": 5000}, max_n=5_000, replicates=4),
    # SRDO: 200 epochs over 2n rows (~7 s at n = 5000); capped there, 4 replicates; the
    # unclipped ratio is read from the same classifier
    Method("srdo", "srdo", "product", {"gamma": 10}, max_n=5_000, replicates=4),
    Method("srdo_unclipped", "srdo", "product", {"gamma": 1e12}, max_n=5_000, replicates=4),
)

N_GRID = (500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000)


@dataclass(frozen=True)
class TheoryConfig:
    conditions: tuple[Condition, ...] = CONDITIONS
    methods: tuple[Method, ...] = METHODS
    n_grid: tuple[int, ...] = N_GRID
    replicates: int = 30
    n_target: int = 1_000_000
    tail_n: int = 10_000
    seed: int = 0
    environment: str = "synthetic"

    def to_dict(self) -> dict:
        return json.loads(json.dumps(asdict(self)))


def quick_config(config: TheoryConfig | None = None) -> TheoryConfig:
    """A small version: 3 sizes, 5 replicates, smaller DWR/SRDO caps (158 s with 2 jobs on a 2-core
    machine under a load average of 9)."""
    config = config or TheoryConfig()
    methods = tuple(
        replace(m, max_n=min(m.max_n, 2000), replicates=min(m.replicates, 2)) if m.max_n else m for m in config.methods
    )
    return replace(config, n_grid=(500, 2000, 10_000), replicates=5, n_target=200_000, methods=methods)


# -- one task ---------------------------------------------------------------------------------------
def _env(config: TheoryConfig, cond: Condition, layout_seed=None):
    from .plugins import registry

    cls = registry().get("environment", config.environment)
    return cls(**cond.env_params, layout_seed=layout_seed)


def _weighted_corr(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    p = w / w.sum()
    Xc = X - p @ X
    cov = (Xc * p[:, None]).T @ Xc
    sd = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
    corr = cov / np.outer(sd, sd)
    np.fill_diagonal(corr, 0.0)
    return corr


def _method_weights(methods, X, env, cond, seed) -> dict[str, tuple[np.ndarray, dict, float]]:
    """Weights (mean 1), extra diagnostics and fit seconds per method; methods on the same
    weighter and parameters but gamma share one SRDO classifier (``fit_grid``)."""
    from .plugins import registry

    out = {}
    groups: dict[tuple, list[Method]] = {}
    for m in methods:
        key = (m.weighter, tuple(sorted((k, repr(v)) for k, v in m.params.items() if k != "gamma")))
        groups.setdefault(key, []).append(m)
    for (weighter, _), ms in groups.items():
        t0 = time.perf_counter()
        if weighter is None:
            for m in ms:
                out[m.name] = (np.ones(X.shape[0]), {}, 0.0)
            continue
        cls = registry().get("weighter", weighter)
        if hasattr(cls, "for_environment"):  # an oracle: it knows the environment and r
            for m in ms:
                t0 = time.perf_counter()
                est = cls.for_environment(env, cond.r, **m.params).fit(X)
                out[m.name] = (est.weights_, dict(est.diagnostics_), time.perf_counter() - t0)
            continue
        if len(ms) == 1:
            est = cls(**ms[0].params, random_state=seed).fit(X)
            extra = {k: v for k, v in est.diagnostics_.items() if k not in ("ess", "ess_fraction", "max_weight", "max_abs_corr")}
            for attr in ("n_iter_", "converged_"):
                if hasattr(est, attr):
                    extra[attr.rstrip("_")] = float(getattr(est, attr))
            out[ms[0].name] = (est.weights_, extra, time.perf_counter() - t0)
        else:
            weights = cls.fit_grid(X, [dict(m.params) for m in ms], random_state=seed)
            seconds = (time.perf_counter() - t0) / len(ms)
            for m, w in zip(ms, weights):
                out[m.name] = (w, {}, seconds)
    return out


def run_task(config: TheoryConfig, cond: Condition, n: int, rep: int, targets: dict) -> list[dict]:
    """Every method that applies at (n, rep) on one training sample of ``cond``; rows of the results."""
    import warnings

    from threadpoolctl import threadpool_limits

    from .api import WeightCollapseWarning, weight_diagnostics
    from .wls import weighted_least_squares

    methods = [m for m in config.methods if (m.max_n is None or n <= m.max_n)
               and rep < (m.replicates if m.replicates is not None else config.replicates)]
    if not methods:
        return []
    env = _env(config, cond, layout_seed=derive_seed(config.seed, cond.name, n, rep, "layout"))
    X, y = env.sample(cond.r, n, derive_seed(config.seed, cond.name, n, rep, "sample"))
    canonical = targets["names"]
    order = [env.feature_names.index(name) for name in canonical]  # layout column of each canonical feature
    Xc = X[:, order]
    d_s = len(targets["stable"])
    f = env.f(X)
    rows = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", WeightCollapseWarning)  # low ESS is measured, not an error here
        weights = _method_weights(methods, X, env, cond, derive_seed(config.seed, cond.name, n, rep, "fit"))
        for m in methods:
            w, extra, seconds = weights[m.name]
            if m.weighter is not None:  # rows tied at the extremes: SRDO's clipped weights
                for what, v in (("frac_at_min", w.min()), ("frac_at_max", w.max())):
                    tied = np.mean(w == v)
                    extra[what] = float(tied) if tied * n > 1 else 0.0
            beta = weighted_least_squares(Xc, y, w)
            star = np.asarray(targets[m.target])
            diag = weight_diagnostics(Xc, w)
            corr = np.abs(_weighted_corr(Xc, w))
            # the part of f(S) = E[Y | X] that is not linear in S under the weights: WLS gives V a
            # non-zero coefficient through its weighted covariance with it (module docstring)
            p = w / w.sum()
            S_c = Xc[:, :d_s] - p @ Xc[:, :d_s]
            resid = f - p @ f - S_c @ weighted_least_squares(Xc[:, :d_s], f, w)
            corr_r = np.abs(_weighted_corr(np.column_stack([Xc[:, d_s:], resid]), w)[-1, :-1])
            rows.append({
                "condition": cond.name, "r": cond.r, "n": n, "replicate": rep, "method": m.name, "target": m.target,
                "beta_v": float(np.linalg.norm(beta[d_s:])),
                "err_s": float(np.linalg.norm(beta[:d_s] - star[:d_s])),
                "err": float(np.linalg.norm(beta - star)),
                "ess": diag["ess"], "ess_fraction": diag["ess_fraction"], "max_weight": diag["max_weight"],
                "max_abs_corr": diag["max_abs_corr"], "max_corr_v": float(corr[d_s:, :].max()),
                "max_corr_vr": float(corr_r.max()),
                "fit_seconds": seconds,
                **{f"beta_{name}": float(b) for name, b in zip(canonical, beta)},
                **{f"diag_{k}": float(v) for k, v in extra.items()},
            })
    return rows


def target_coefficients(config: TheoryConfig, cond: Condition) -> dict:
    """beta* of every target law, on ``n_target`` direct draws of that law (module docstring)."""
    from .wls import weighted_least_squares

    env = _env(config, cond)
    names, stable = list(env.feature_names), list(env.stable_set)
    n = config.n_target
    Xs, _ = env.sample(cond.r, n, derive_seed(config.seed, cond.name, "target", "selected"))
    Xu, _ = env.sample_unselected(n, derive_seed(config.seed, cond.name, "target", "unselected"))
    rng = np.random.default_rng(derive_seed(config.seed, cond.name, "target", "product"))
    s_cols = np.isin(np.arange(len(names)), stable)
    laws = {
        "selected": Xs,
        "unselected": Xu,
        "selected_s": np.where(s_cols, Xs, Xu),  # selected S, V from the law before selection
        "product": rng.permuted(Xs, axis=0),  # each column shuffled on its own
    }
    out = {"condition": cond.name, "names": names, "stable": stable}
    for law, X in laws.items():
        out[law] = weighted_least_squares(X, env.f(X)).tolist()
    return out


# -- analysis ---------------------------------------------------------------------------------------
METRICS = {"beta_v": "||beta_hat(V)||", "err_s": "||beta_hat(S) - beta*(S)||"}


def _slope(x, y):
    from scipy import stats

    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if np.unique(x).size < 3:
        return np.nan, np.nan, np.nan
    fit = stats.linregress(x, y)
    half = stats.t.ppf(0.975, x.size - 2) * fit.stderr
    return fit.slope, fit.slope - half, fit.slope + half


def slopes(results) -> "pd.DataFrame":
    """Log-log slopes with 95% intervals per (condition, method, metric) (module docstring)."""
    import pandas as pd
    from scipy import stats

    rows = []
    tail_n = results.attrs.get("tail_n", 10_000)
    for (cond, method), g in results.groupby(["condition", "method"], sort=False):
        for metric in METRICS:
            v = g[g[metric] > 0]
            if v.empty:
                continue
            x, y = np.log10(v["n"].to_numpy(float)), np.log10(v[metric].to_numpy(float))
            s, lo, hi = _slope(x, y)
            med = v.groupby("n")[metric].median()
            if med.size >= 3:
                ts = stats.theilslopes(np.log10(med.to_numpy()), np.log10(med.index.to_numpy(float)), alpha=0.95)
                ts_s, ts_lo, ts_hi = ts.slope, ts.low_slope, ts.high_slope
            else:
                ts_s = ts_lo = ts_hi = np.nan
            tail = v["n"].to_numpy() >= tail_n
            t_s, t_lo, t_hi = _slope(x[tail], y[tail])
            e_s, e_lo, e_hi = _slope(np.log10(v["ess"].to_numpy(float)), y)
            rows.append({
                "condition": cond, "method": method, "metric": metric,
                "n_min": int(v["n"].min()), "n_max": int(v["n"].max()), "fits": len(v),
                "slope": s, "slope_lo": lo, "slope_hi": hi,
                "theil_slope": ts_s, "theil_lo": ts_lo, "theil_hi": ts_hi,
                "tail_slope": t_s, "tail_lo": t_lo, "tail_hi": t_hi,
                "ess_slope": e_s, "ess_lo": e_lo, "ess_hi": e_hi,
            })
    return pd.DataFrame(rows)


def _fmt_ci(s, lo, hi) -> str:
    return "" if not np.isfinite(s) else f"{s:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def summary_markdown(results, slope_table, targets: dict, config: TheoryConfig, seconds: float) -> str:
    from tabulate import tabulate

    lines = ["# oodfs theory", "",
             f"{len(results)} WLS fits, {seconds:.0f} s. Slopes of log10(metric) on log10(n) over every replicate "
             "(least squares, 95% t interval); Theil-Sen on per-n medians; tail = n >= "
             f"{config.tail_n}; vs ESS = slope on log10(ESS). Prediction with exact weights: -0.5.", ""]
    for cond in config.conditions:
        lines += [f"## {cond.name}: {cond.env_params}, r = {cond.r}", ""]
        t = slope_table[slope_table["condition"] == cond.name]
        rows = [[r.method, r.metric, f"{r.n_min}-{r.n_max}", r.fits, _fmt_ci(r.slope, r.slope_lo, r.slope_hi),
                 _fmt_ci(r.theil_slope, r.theil_lo, r.theil_hi), _fmt_ci(r.tail_slope, r.tail_lo, r.tail_hi),
                 _fmt_ci(r.ess_slope, r.ess_lo, r.ess_hi)] for r in t.itertuples()]
        lines += [tabulate(rows, headers=["method", "metric", "n", "fits", "slope vs n", "Theil-Sen", "tail slope",
                                          "slope vs ESS"], tablefmt="github"), ""]
        g = results[results["condition"] == cond.name]
        cols = ["beta_v", "err_s", "ess_fraction", "max_corr_v", "max_corr_vr"]
        med = g.groupby(["method", "n"], sort=False)[cols].median()
        counts = g.groupby(["method", "n"], sort=False).size()
        rows = [[m, n, counts[(m, n)], f"{r.beta_v:.4f}", f"{r.err_s:.4f}", f"{r.ess_fraction:.3f}", f"{r.max_corr_v:.3f}",
                 f"{r.max_corr_vr:.3f}"] for (m, n), r in med.iterrows()]
        lines += ["Medians over replicates:", "",
                  tabulate(rows, headers=["method", "n", "fits", "beta_v", "err_s", "ESS / n", "max corr(V, X)",
                                          "max corr(V, a)"], tablefmt="github"), ""]
        tg = targets[cond.name]
        lines += ["beta* per target law (" + ", ".join(tg["names"]) + "):", ""]
        lines += [f"- {law}: " + ", ".join(f"{b:+.3f}" for b in tg[law]) for law in TARGETS] + [""]
    return "\n".join(lines)


# -- figures ----------------------------------------------------------------------------------------
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
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}" if 1e-3 <= v < 1e4 else f"{v:.0e}".replace("e+0", "e")))
        axis.set_minor_formatter(ticker.NullFormatter())


def _curves(results, targets, config, metric: str, path: Path, ylabel: str) -> None:
    from .plots import _pyplot

    plt = _pyplot()
    conds = [c for c in config.conditions if c.name in set(results["condition"])]
    ncols = min(2, len(conds))
    nrows = -(-len(conds) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.0 * ncols, 4.6 * nrows), squeeze=False)
    for ax in axes.flat[len(conds):]:
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
            ols_v = float(np.linalg.norm(np.asarray(tg["selected"])[len(tg["stable"]):]))
            ax.axhline(ols_v, color="tab:gray", lw=0.8, ls="-", alpha=0.6)
            ax.annotate("OLS population value", (g["n"].max(), ols_v), fontsize=7, color="tab:gray", ha="right",
                        va="bottom", xytext=(0, 4), textcoords="offset points")
        ns = np.array(sorted(set(g["n"])), dtype=float)
        anchor = g[(g["method"] == "oracle_cond") & (g["n"] == ns[0])][metric].median()
        if np.isfinite(anchor) and anchor > 0:
            ax.plot(ns, anchor * (ns / ns[0]) ** -0.5, color="black", lw=0.8, ls=(0, (1, 3)), label="slope -1/2")
        lam = cond.env_params.get("exponent", 10.0) * np.log(abs(cond.r))
        _log_axes(ax)
        ax.set(xlabel="n", ylabel=ylabel, title=f"{cond.name} (lam = exponent ln r = {lam:.2f})")
        ax.grid(True, which="major", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=max(1, len(labels)), bbox_to_anchor=(0.5, 0.0), frameon=False)
    fig.suptitle(f"{ylabel}: median over replicates, band = interquartile range", y=1.03)
    fig.savefig(path, bbox_inches="tight", dpi=130)
    plt.close(fig)


def _ess_figure(results, config, path: Path) -> None:
    from .plots import _pyplot

    plt = _pyplot()
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
    fig.legend(handles + h2, labels + l2, loc="upper center", ncol=len(labels) + len(l2), bbox_to_anchor=(0.5, 0.0),
               frameon=False)
    fig.savefig(path, bbox_inches="tight", dpi=130)
    plt.close(fig)


def _independence_figure(results, config, path: Path) -> None:
    from .plots import _pyplot

    plt = _pyplot()
    conds = [c for c in config.conditions if c.name in set(results["condition"])]
    fig, axes = plt.subplots(2, len(conds), figsize=(4.4 * len(conds), 7.6), squeeze=False)
    methods = list(dict.fromkeys(results["method"]))
    for j, cond in enumerate(conds):
        g = results[results["condition"] == cond.name]
        for row, (col, label) in enumerate((("max_corr_v", "max weighted |corr(V_j, X_k)|"),
                                            ("max_corr_vr", "max weighted |corr(V_j, a)|, a = f - linear fit on S"))):
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
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), bbox_to_anchor=(0.5, 0.0), frameon=False,
               markerscale=2.5)
    fig.suptitle("Independence residual of the weights against the V coefficients (every fit)", y=1.01)
    fig.savefig(path, bbox_inches="tight", dpi=130)
    plt.close(fig)


def load_run(out_dir) -> tuple:
    """(results, targets, config) of a finished run in ``out_dir``."""
    import pandas as pd

    out = Path(out_dir)
    meta = json.loads((out / "theory_config.json").read_text())
    c = meta["config"]
    config = TheoryConfig(**{**c, "conditions": tuple(Condition(**x) for x in c["conditions"]),
                             "methods": tuple(Method(**x) for x in c["methods"]), "n_grid": tuple(c["n_grid"])})
    results = pd.read_csv(out / "theory_results.csv")
    results.attrs["tail_n"] = config.tail_n
    return results, meta["targets"], config


def make_figures(results, targets, config, out_dir: Path) -> list[Path]:
    paths = [out_dir / f"theory_{stem}.png" for stem in ("beta_v", "err_s", "ess", "independence")]
    _curves(results, targets, config, "beta_v", paths[0], "||beta_hat(V)||")
    _curves(results, targets, config, "err_s", paths[1], "||beta_hat(S) - beta*(S)||")
    _ess_figure(results, config, paths[2])
    _independence_figure(results, config, paths[3])
    return paths


# -- the whole run ----------------------------------------------------------------------------------
def check_config(config: TheoryConfig) -> None:
    from .plugins import registry
    from .validation import check_positive_int

    reg = registry()
    reg.get("environment", config.environment)
    for m in config.methods:
        if m.weighter is not None:
            reg.get("weighter", m.weighter)
        if m.target not in TARGETS:
            raise OodfsError(f"method {m.name!r}: unknown target law {m.target!r}; valid: {', '.join(TARGETS)}")
    if not config.conditions or not config.methods:
        raise OodfsError("the theory run needs at least one condition and one method")
    if not config.n_grid:
        raise OodfsError("n_grid is empty")
    for n in config.n_grid:
        check_positive_int(n, "every n of n_grid")
        if n < 20:
            raise OodfsError(f"every n of n_grid must be >= 20 (WLS on up to 15 features), got {n}")
    check_positive_int(config.replicates, "replicates")
    check_positive_int(config.n_target, "n_target")
    for cond in config.conditions:
        _env(config, cond).check_env(cond.r)


def run_theory(config: TheoryConfig, out_dir, jobs: int = 1, progress: bool = True) -> dict:
    """Run every (condition, n, replicate) task, write the results, slopes, summary and figures to
    ``out_dir``; return the paths written."""
    import pandas as pd

    from .executors import run_calls

    check_config(config)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    # results arrive in completion order: each carries its condition's name
    targets = {t["condition"]: t for t in run_calls(target_coefficients, [(config, c) for c in config.conditions], jobs=jobs)}
    reps = max([config.replicates] + [m.replicates or 0 for m in config.methods])
    calls = [(config, cond, n, rep, targets[cond.name])
             for n in sorted(config.n_grid, reverse=True) for cond in config.conditions for rep in range(reps)]
    rows, done = [], 0
    for task_rows in run_calls(run_task, calls, backend_name="local", jobs=jobs):
        rows += task_rows
        done += 1
        if progress and (done % max(1, len(calls) // 20) == 0 or done == len(calls)):
            print(f"oodfs theory: {done}/{len(calls)} samples, {time.perf_counter() - start:.0f} s", flush=True)
    results = pd.DataFrame(rows).sort_values(["condition", "method", "n", "replicate"], kind="stable")
    results = results.reset_index(drop=True)
    results.attrs["tail_n"] = config.tail_n
    slope_table = slopes(results)
    seconds = time.perf_counter() - start
    paths = {"results": out / "theory_results.csv", "slopes": out / "theory_slopes.csv",
             "summary": out / "theory_summary.md", "config": out / "theory_config.json"}
    results.to_csv(paths["results"], index=False)
    slope_table.to_csv(paths["slopes"], index=False)
    paths["summary"].write_text(summary_markdown(results, slope_table, targets, config, seconds))
    paths["config"].write_text(json.dumps({"config": config.to_dict(), "targets": targets, "jobs": jobs,
                                           "seconds": seconds}, indent=1))
    for p in make_figures(results, targets, config, out):
        paths[p.stem] = p
    return paths


# -- command line (wired as `oodfs theory`) -----------------------------------------------------------
def _names(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``theory`` subcommand to an argparse subparsers object."""
    p = subparsers.add_parser(
        "theory", help="check the paper's WLS theorems numerically (coefficient error against n)",
        description="For each condition (synthetic environment, bias rate), n on a log grid and many replicates: "
        "WLS with no weights, the oracle weights, DWR and SRDO; ||beta_hat(V)||, ||beta_hat(S) - beta*(S)||, ESS and "
        "the independence residual; log-log slopes with 95% intervals. Writes OUT/theory_results.csv, "
        "theory_slopes.csv, theory_summary.md and theory_*.png.",
    )
    p.add_argument("--out", default="results/theory", help="output folder (default results/theory)")
    p.add_argument("--quick", action="store_true", help="3 sizes, 5 replicates, smaller DWR/SRDO caps (a few minutes)")
    p.add_argument("--jobs", type=int, default=1, help="parallel worker processes (default 1)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--replicates", type=int, help=f"replicates of the cheap methods (default {TheoryConfig.replicates})")
    p.add_argument("--conditions", type=_names, help="comma-separated condition names (default: all: "
                   + ", ".join(c.name for c in CONDITIONS) + ")")
    p.add_argument("--methods", type=_names, help="comma-separated method names (default: all: "
                   + ", ".join(m.name for m in METHODS) + ")")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    return p


def config_from_args(args) -> TheoryConfig:
    config = TheoryConfig(seed=args.seed)
    if args.quick:
        config = quick_config(config)
    if args.replicates is not None:
        if args.replicates < 1:
            raise OodfsError(f"--replicates must be a positive integer, got {args.replicates}")
        config = replace(config, replicates=args.replicates)
    for what, known in (("conditions", config.conditions), ("methods", config.methods)):
        wanted = getattr(args, what)
        if wanted is None:
            continue
        by_name = {x.name: x for x in known}
        unknown = [w for w in wanted if w not in by_name]
        if unknown or not wanted:
            raise OodfsError(f"unknown {what[:-1]} {unknown[0] if unknown else ''!r}; valid: {', '.join(by_name)}")
        config = replace(config, **{what: tuple(by_name[w] for w in wanted)})
    if args.jobs < 1:
        raise OodfsError(f"--jobs must be a positive integer, got {args.jobs}")
    return config


def run(args) -> int:
    """Run ``oodfs theory`` from parsed arguments; 0 on success (OodfsError for bad input)."""
    config = config_from_args(args)
    paths = run_theory(config, args.out, jobs=args.jobs, progress=not args.quiet)
    if not args.quiet:
        print(Path(paths["summary"]).read_text())
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def main(argv=None) -> int:
    """``python -m oodfs.theory [options]``: the same as ``oodfs theory`` (errors as one line, exit 2)."""
    import sys

    parser = argparse.ArgumentParser(prog="python -m oodfs")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    args = parser.parse_args(["theory", *(sys.argv[1:] if argv is None else argv)])
    try:
        return run(args)
    except OodfsError as exc:
        print(f"oodfs theory: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
