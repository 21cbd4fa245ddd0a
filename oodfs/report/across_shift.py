"""When does selection help under shift? Each method family's gain over ``all_features`` per suite
against the kind of shift the suite holds, with the suite as the unit (docs/PROTOCOL.md section 10,
"Selection against the kind of shift").

- The gain of a family in a suite, under one downstream model, is the negative of the analysis
  object's effect (:func:`oodfs.report.analysis.across_suites`, ``family_effects``): the mean over
  the family's members of (loss of ``all_features`` - loss of the method) / loss of
  ``all_features``, each averaged over the suite's units. Positive: selecting helped; the loss is
  the task's mean test loss (RMSE mean; log-loss mean for a binary target).
- The kind of shift is the share of the drop from training to test environments due to the change
  in Y | X (:func:`oodfs.shift.diagnose_suite`, ``y_share``); for a synthetic suite the known one
  (covariate shift only: share 0 by construction).
- The relation, per (downstream model, family): Spearman's rank correlation over the suites
  (scipy.stats.spearmanr), its 95 % interval by the Fisher z transform with Fieller, Hartley and
  Pearson's variance 1.06 / (n - 3), its p, Holm over the tests of the family; "not
  distinguishable" when the adjusted p is at or above alpha.

The report package does not import the runner: the caller passes the analyses and the shares.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from oodfs.report import stats
from oodfs.report.analysis import REFERENCE, across_suites

#: the variance of atanh(Spearman's rho) (Fieller, Hartley and Pearson, Biometrika 1957)
FISHER_VARIANCE = 1.06
#: the fewest suites a relation is tested on (the Fisher interval needs n > 3)
MIN_SUITES = 4
#: a drop "mostly X" / "mostly Y | X" (the diagnosis's own words, oodfs.shift.drop_kind)
MOSTLY_X, MOSTLY_Y = 1 / 3, 2 / 3

GAIN_TEXT = (
    f"gain = ({REFERENCE}'s loss - the method's loss) / {REFERENCE}'s loss, averaged over the suite's units "
    "and over the family's methods (the negative of the analysis's relative effect): positive when selecting "
    "helped"
)


def family_gains(analyses: dict, metric: str) -> pd.DataFrame:
    """suites x families: each family's gain over ``all_features`` (:data:`GAIN_TEXT`) from the
    analyses ({suite: :class:`~oodfs.report.analysis.Analysis`}, each holding ``all_features``)."""
    res = across_suites(analyses, metric=metric)
    return -res["family_effects"]


def spearman(x, y, alpha: float = stats.ALPHA) -> dict:
    """Spearman's rank correlation of ``x`` and ``y`` (pairs with a missing value left out): rho, its
    (1 - alpha) Fisher-z interval, the two-sided p (scipy.stats.spearmanr) and n. rho, the interval
    and p are NaN below :data:`MIN_SUITES` pairs or when either side is constant."""
    both = pd.DataFrame({"x": np.asarray(x, float), "y": np.asarray(y, float)}).dropna()
    n = len(both)
    out = dict(n=n, rho=np.nan, low=np.nan, high=np.nan, p=np.nan)
    if n < MIN_SUITES or both["x"].nunique() < 2 or both["y"].nunique() < 2:
        return out
    res = sps.spearmanr(both["x"], both["y"])
    rho = float(res.statistic)
    half = sps.norm.ppf(1 - alpha / 2) * np.sqrt(FISHER_VARIANCE / (n - 3))
    z = np.arctanh(np.clip(rho, -1 + 1e-12, 1 - 1e-12))
    return dict(
        n=n, rho=rho, low=float(np.tanh(z - half)), high=float(np.tanh(z + half)), p=float(res.pvalue)
    )


def relation_verdict(rho: float, p_holm: float, alpha: float = stats.ALPHA) -> str:
    """The tested relation in words (a larger share due to Y | X against a larger gain)."""
    if not np.isfinite(p_holm):
        return "not tested"
    if p_holm >= alpha:
        return "not distinguishable"
    return (
        "gains more where more of the drop is Y | X" if rho > 0 else "gains more where more of the drop is X"
    )


def selection_vs_shift(
    groups: dict,
    shares: dict,
    known: dict | None = None,
    kinds: dict | None = None,
    check: dict | None = None,
    alpha: float = stats.ALPHA,
) -> dict:
    """The gain of each family against the share of the drop due to Y | X, across suites.

    ``groups``: {label (a downstream model, e.g. "ridge"): suites x families of gains
    (:func:`family_gains`)}; ``shares``: {suite: diagnosed share of the drop due to Y | X, NaN where
    the suite has no drop}; ``known``: {suite: known share} of synthetic suites (their gains are
    shown, and kept out of the test of the diagnosed suites: a known share is not a diagnosis);
    ``kinds``: {suite: the diagnosis in words (oodfs.shift.drop_kind)}, else read off the share;
    ``check``: {suite of a known share: the share the diagnosis computes on its data}, said beside
    the known one (how far the diagnosis is from a truth it should find).

    Returns dict(points: a row per (model, family, suite) with gain, share, source ("diagnosed" or
    "known"); tests: a row per (model, family) with n, rho, low, high, p, p_holm, verdict, mean gain,
    suites with a gain above 0 (``helped`` of ``cells``); left_out: {model: suites of no share (no
    drop)}; alpha)."""
    known = known or {}
    points, tests, left_out = [], [], {}
    for label, gains in groups.items():
        diagnosed = [s for s in gains.index if s not in known]
        left_out[label] = sorted(s for s in diagnosed if not np.isfinite(shares.get(s, np.nan)))
        for fam in gains.columns:
            for suite, g in gains[fam].items():
                if not np.isfinite(g):
                    continue
                src = "known" if suite in known else "diagnosed"
                share = known[suite] if suite in known else shares.get(suite, np.nan)
                kind = "known" if src == "known" else (kinds or {}).get(suite) or _kind(share)
                points.append(
                    dict(
                        model=label,
                        family=fam,
                        suite=suite,
                        gain=float(g),
                        share=float(share),
                        source=src,
                        kind=kind,
                    )
                )
            g = gains.loc[diagnosed, fam]
            r = spearman([shares.get(s, np.nan) for s in diagnosed], g.to_numpy(), alpha)
            tests.append(
                dict(
                    model=label,
                    family=fam,
                    **r,
                    mean_gain=float(g.mean()),
                    helped=int((g > 0).sum()),
                    cells=int(g.notna().sum()),
                )
            )
    tests = pd.DataFrame(tests)
    if len(tests):
        p = tests["p"].to_numpy()
        adj = np.full(len(p), np.nan)
        ok = np.isfinite(p)
        if ok.any():
            adj[ok] = stats.adjust_pvalues(p[ok], "holm")
        tests["p_holm"] = adj
        tests["verdict"] = [relation_verdict(r.rho, r.p_holm, alpha) for r in tests.itertuples()]
    return dict(
        points=pd.DataFrame(points),
        tests=tests,
        left_out=left_out,
        alpha=alpha,
        check=check or {},
        known=known,
    )


def _kind(share: float) -> str:
    """The diagnosis's words (oodfs.shift.drop_kind) from the share alone."""
    if not np.isfinite(share):
        return "no drop"
    return "mostly X" if share < MOSTLY_X else "mostly Y∣X" if share > MOSTLY_Y else "both"


#: the kinds of drop in the order the paragraph names them
KIND_ORDER = ("mostly X", "both", "mostly Y∣X", "unclear", "no drop")


def _n(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _p(p: float) -> str:
    """A p-value after "p": "= 0.031", or "< 0.0001"."""
    return "< 0.0001" if p < 1e-4 else f"= {p:.2g}"


def _where(kind: str) -> str:
    return {
        "no drop": "where the loss does not rise",
        "unclear": "where the overlap is too small to split the drop",
    }.get(kind, f"where the drop is {kind}")


def _by_kind(points: pd.DataFrame) -> dict:
    """Cells (model, family, diagnosed suite) with a gain above 0, by the kind of drop:
    {kind: (cells with a gain above 0, cells, suites)}."""
    d = points[points["source"] == "diagnosed"]
    kinds = d["kind"].map(lambda k: "unclear" if str(k).startswith("unclear") else k)
    out = {}
    for name in sorted(dict.fromkeys(kinds), key=lambda k: KIND_ORDER.index(k) if k in KIND_ORDER else 9):
        part = d[kinds == name]
        out[name] = (int((part["gain"] > 0).sum()), len(part), part["suite"].nunique())
    return out


def paragraph(result: dict) -> str:
    """The answer in words, from :func:`selection_vs_shift`'s result: when selection helped and when it
    did not, and the tested relation (test, effect, interval, unit, n), whichever way it comes out."""
    tests, points, alpha = result["tests"], result["points"], result["alpha"]
    tested = tests[np.isfinite(tests["p"])] if len(tests) else tests
    if not len(tested):
        return "Selection against the kind of shift: too few suites with a diagnosed drop to test a relation."
    found = tested[tested["p_holm"] < alpha]
    strongest = tested.loc[tested["p"].idxmin()]
    test = (
        f"Spearman's rank correlation over the suites, each suite one unit, Holm over the {len(tested)} tests"
    )
    if len(found):
        lead = (
            "Does feature selection help more where the shift is in X? Across suites, "
            + "; ".join(
                f"{r.family} under {r.model} {r.verdict} (Spearman "
                f"ρ = {r.rho:+.2f} [{r.low:+.2f}, {r.high:+.2f}], "
                f"Holm p {_p(r.p_holm)}, {r.n} suites)"
                for r in found.itertuples()
            )
            + (
                f"; the other {len(tested) - len(found)} of the {len(tested)} relations are not "
                "distinguishable from none"
                if len(tested) > len(found)
                else ""
            )
            + f" ({test})."
        )
    else:
        lead = (
            "Does feature selection help more where the shift is in X? Not distinguishable: in none of the "
            f"{len(tested)} (downstream model, method family) pairs does the gain over {REFERENCE} follow "
            f"the share of the drop due to Y ∣ X ({test}; strongest: {strongest['family']} under "
            f"{strongest['model']}, ρ = {strongest['rho']:+.2f} [{strongest['low']:+.2f}, "
            f"{strongest['high']:+.2f}], p {_p(strongest['p'])}, Holm p {_p(strongest['p_holm'])}, "
            f"n = {int(strongest['n'])} suites)."
        )
    kinds = _by_kind(points)
    diag = points[points["source"] == "diagnosed"]
    when = (
        f" When did selection help? A family's mean loss was below that of {REFERENCE} in "
        f"{int((diag['gain'] > 0).sum())} of {len(diag)} (downstream model, family, suite) cells: "
        + ", ".join(f"{h} of {c} {_where(k)} ({_n(s, 'suite')})" for k, (h, c, s) in kinds.items() if c)
        + "."
    )
    syn = points[points["source"] == "known"]
    if len(syn):
        parts = []
        for (model, suite), g in syn.groupby(["model", "suite"], sort=False):
            best = g.loc[g["gain"].idxmax()]
            parts.append(
                f"{suite} under {model}: {int((g['gain'] > 0).sum())} of {len(g)} families beat {REFERENCE}, "
                f"the best {best['family']} at {100 * best['gain']:+.1f} %"
            )
        helped = " selection did not help" if not (syn["gain"] > 0).any() else ""
        when += (
            " On the synthetic data, whose shift is in X alone by construction (share due to Y ∣ X = 0),"
            f"{helped}: " + "; ".join(parts) + "."
        )
    check = {s: v for s, v in result.get("check", {}).items() if np.isfinite(v)}
    if check:
        far = max(abs(v - result["known"].get(s, 0.0)) for s, v in check.items())
        when += (
            " A check of the diagnosis: on that data it finds a share due to Y ∣ X of "
            + ", ".join(f"{v:.2f} ({s})" for s, v in check.items())
            + f" where the truth is {result['known'].get(next(iter(check)), 0.0):g}"
            + (
                ": the diagnosed shares are noisy measurements that can overstate Y ∣ X, so a weak "
                "relation could be hidden by them."
                if far > MOSTLY_X / 2
                else "."
            )
        )
    left = sorted({s for v in result["left_out"].values() for s in v})
    method = (
        f" Gain: the relative difference of the mean test loss, ({REFERENCE} − method) / {REFERENCE}, "
        "averaged over a family's methods (> 0: selection helped); share: oodfs's shift diagnosis; "
        "interval: 95 %, Fisher z"
        + (
            f"; left out, as the loss does not rise there (no share): {_n(len(left), 'suite')} "
            f"({', '.join(left)})"
            if left
            else ""
        )
        + "."
    )
    return lead + when + method


def figure(result: dict, out_dir, stem: str = "selection_vs_shift") -> list:
    """One panel per downstream model: each family's gain over ``all_features`` (y, %) against the
    share of the suite's drop due to Y | X (x); one colour and marker per family (FAMILY_STYLES,
    readable in black and white), its test in the legend. Suites of a known share (synthetic) get
    a panel of their own (their gains are on another scale, and their share is not diagnosed).
    Returns the files written (:func:`oodfs.report.figure_files.save_figure`)."""
    from oodfs.report.analysis import family_order
    from oodfs.report.figure_files import pyplot, save_figure
    from oodfs.report.plots import family_styles

    plt = pyplot()
    points, tests = result["points"], result["tests"]
    diagnosed = points[(points["source"] == "diagnosed") & np.isfinite(points["share"])]
    known = points[points["source"] == "known"]
    models = list(dict.fromkeys(diagnosed["model"]))
    fams = sorted(dict.fromkeys(points["family"]), key=family_order)
    styles = family_styles(fams)
    panels = len(models) + (1 if len(known) else 0)
    widths = [4.2] * len(models) + ([2.6] if len(known) else [])
    fig, axes = plt.subplots(
        1, panels, figsize=(sum(widths), 4.3), squeeze=False, gridspec_kw=dict(width_ratios=widths)
    )
    for ax, model in zip(axes[0], models):
        pm = diagnosed[diagnosed["model"] == model]
        for fam in fams:
            colour, marker = styles[fam]
            p = pm[pm["family"] == fam]
            if p.empty:
                continue
            t = tests[(tests["model"] == model) & (tests["family"] == fam)]
            if len(t) and np.isfinite(t["rho"].iloc[0]):
                r = t.iloc[0]
                label = f"{fam}: ρ {r['rho']:+.2f} [{r['low']:+.2f}, {r['high']:+.2f}], n {int(r['n'])}"
            else:
                label = f"{fam}: not tested ({len(p)} suites)"
            ax.scatter(
                p["share"],
                100 * p["gain"],
                marker=marker,
                s=36,
                label=label,
                facecolors=colour,
                edgecolors="black",
                linewidths=0.6,
                zorder=3,
            )
        ax.axhline(0, color="0.3", lw=0.8)
        for x in (0, 1):
            ax.axvline(x, color="0.6", lw=0.7, ls=":")
        ax.set_title(f"{model}: {pm['suite'].nunique()} suites with a drop", fontsize=10)
        ax.set_xlabel("share of the drop due to Y ∣ X\n(0: all from X; 1: all from Y ∣ X)")
        ax.grid(alpha=0.25, lw=0.5)
        ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.24), frameon=False)
    if len(known):
        ax = axes[0][-1]
        names = list(dict.fromkeys(known["suite"]))
        for fam in fams:
            colour, marker = styles[fam]
            p = known[known["family"] == fam]
            if p.empty:
                continue
            x = [names.index(s) for s in p["suite"]]
            ax.scatter(
                x,
                100 * p["gain"],
                marker=marker,
                s=36,
                facecolors="none",
                edgecolors=colour,
                linewidths=1.4,
                zorder=3,
                label=fam,
            )
        ax.axhline(0, color="0.3", lw=0.8)
        ax.set_xticks(range(len(names)), names, fontsize=8)
        ax.set_xlim(-0.6, len(names) - 0.4)
        model = ", ".join(dict.fromkeys(known["model"]))
        ax.set_title(f"synthetic, {model}: share 0 (known)", fontsize=10)
        ax.set_xlabel("covariate shift only,\nby construction")
        ax.grid(alpha=0.25, lw=0.5, axis="y")  # the families' colours and markers: the other panels' keys
    axes[0][0].set_ylabel(f"gain over {REFERENCE} (%)\n(> 0: selection helped)")
    fig.tight_layout()
    paths = save_figure(fig, out_dir, stem)
    plt.close(fig)
    return paths
