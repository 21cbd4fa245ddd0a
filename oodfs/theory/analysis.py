"""The theory run's analysis: log-log slopes of the coefficient errors against n, and the summary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from oodfs.theory.experiment import TARGETS, Condition, Method, TheoryConfig

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


def slopes(results):
    """Log-log slopes with 95% intervals per (condition, method, metric) (package docstring, oodfs.theory)."""
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
                ts = stats.theilslopes(
                    np.log10(med.to_numpy()), np.log10(med.index.to_numpy(float)), alpha=0.95
                )
                ts_s, ts_lo, ts_hi = ts.slope, ts.low_slope, ts.high_slope
            else:
                ts_s = ts_lo = ts_hi = np.nan
            tail = v["n"].to_numpy() >= tail_n
            t_s, t_lo, t_hi = _slope(x[tail], y[tail])
            e_s, e_lo, e_hi = _slope(np.log10(v["ess"].to_numpy(float)), y)
            rows.append(
                {
                    "condition": cond,
                    "method": method,
                    "metric": metric,
                    "n_min": int(v["n"].min()),
                    "n_max": int(v["n"].max()),
                    "fits": len(v),
                    "slope": s,
                    "slope_lo": lo,
                    "slope_hi": hi,
                    "theil_slope": ts_s,
                    "theil_lo": ts_lo,
                    "theil_hi": ts_hi,
                    "tail_slope": t_s,
                    "tail_lo": t_lo,
                    "tail_hi": t_hi,
                    "ess_slope": e_s,
                    "ess_lo": e_lo,
                    "ess_hi": e_hi,
                }
            )
    return pd.DataFrame(rows)


def _fmt_ci(s, lo, hi) -> str:
    return "" if not np.isfinite(s) else f"{s:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def summary_markdown(results, slope_table, targets: dict, config: TheoryConfig, seconds: float) -> str:
    from tabulate import tabulate

    lines = [
        "# oodfs theory",
        "",
        f"{len(results)} WLS fits, {seconds:.0f} s. Slopes of log10(metric) on log10(n) over every replicate "
        "(least squares, 95% t interval); Theil-Sen on per-n medians; tail = n >= "
        f"{config.tail_n}; vs ESS = slope on log10(ESS). Prediction with exact weights: -0.5.",
        "",
    ]
    for cond in config.conditions:
        lines += [f"## {cond.name}: {cond.env_params}, r = {cond.r}", ""]
        t = slope_table[slope_table["condition"] == cond.name]
        rows = [
            [
                r.method,
                r.metric,
                f"{r.n_min}-{r.n_max}",
                r.fits,
                _fmt_ci(r.slope, r.slope_lo, r.slope_hi),
                _fmt_ci(r.theil_slope, r.theil_lo, r.theil_hi),
                _fmt_ci(r.tail_slope, r.tail_lo, r.tail_hi),
                _fmt_ci(r.ess_slope, r.ess_lo, r.ess_hi),
            ]
            for r in t.itertuples()
        ]
        lines += [
            tabulate(
                rows,
                headers=[
                    "method",
                    "metric",
                    "n",
                    "fits",
                    "slope vs n",
                    "Theil-Sen",
                    "tail slope",
                    "slope vs ESS",
                ],
                tablefmt="github",
            ),
            "",
        ]
        g = results[results["condition"] == cond.name]
        cols = ["beta_v", "err_s", "ess_fraction", "max_corr_v", "max_corr_vr"]
        med = g.groupby(["method", "n"], sort=False)[cols].median()
        counts = g.groupby(["method", "n"], sort=False).size()
        rows = [
            [
                m,
                n,
                counts[(m, n)],
                f"{r.beta_v:.4f}",
                f"{r.err_s:.4f}",
                f"{r.ess_fraction:.3f}",
                f"{r.max_corr_v:.3f}",
                f"{r.max_corr_vr:.3f}",
            ]
            for (m, n), r in med.iterrows()
        ]
        lines += [
            "Medians over replicates:",
            "",
            tabulate(
                rows,
                headers=[
                    "method",
                    "n",
                    "fits",
                    "beta_v",
                    "err_s",
                    "ESS / n",
                    "max corr(V, X)",
                    "max corr(V, a)",
                ],
                tablefmt="github",
            ),
            "",
        ]
        tg = targets[cond.name]
        lines += ["beta* per target law (" + ", ".join(tg["names"]) + "):", ""]
        lines += [f"- {law}: " + ", ".join(f"{b:+.3f}" for b in tg[law]) for law in TARGETS] + [""]
    return "\n".join(lines)


def load_run(out_dir) -> tuple:
    """(results, targets, config) of a finished run in ``out_dir``."""
    import pandas as pd

    out = Path(out_dir)
    meta = json.loads((out / "theory_config.json").read_text())
    c = meta["config"]
    config = TheoryConfig(
        **{
            **c,
            "conditions": tuple(Condition(**x) for x in c["conditions"]),
            "methods": tuple(Method(**x) for x in c["methods"]),
            "n_grid": tuple(c["n_grid"]),
        }
    )
    results = pd.read_csv(out / "theory_results.csv")
    results.attrs["tail_n"] = config.tail_n
    return results, meta["targets"], config
