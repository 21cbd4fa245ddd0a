"""The stable line (IAMB, HITON-MB, HRM, RSW) against DWR and SRDO on the real regression suites.

    oodfs bench --suite SUITE --methods iamb,hiton_mb,hrm,rsw --reference --jobs 1 \\
        --out results/stable-real/SUITE                   # for each suite below
    python benchmarks/stable_line/stable_line_real.py [--root results/stable-real] \
        [--out benchmarks/stable_line/STABLE_LINE_REAL.md]

Suites: the real single-training-environment regression suites of benchmarks/real_data/REALDATA.md (the
`table` suites whose r_train are single environments), those with a results folder under
ROOT. ``--reference`` takes DWR, SRDO and the rest from the shipped reference (their fits are
not redone) and runs the four new methods on the same tasks; the report reads each folder as
benchmarks/real_data/realdata.py does: the `val` rule (grid point and k chosen together on held-out rows
of the training environment), both downstream models, test RMSE (``rmse_mean``).

Claims: each new method against DWR and against SRDO (8 claims per downstream model).
* Across suites, the suite the unit (Demšar 2006): per suite the method's RMSE relative to
  `all_features` (the same model on every feature), averaged over the suite's units, as
  REALDATA's across-suite verdicts; the claim's difference is new − base of that effect; two-sided
  Wilcoxon signed-rank over the suites, Holm over the 8 claims, 95 % percentile-bootstrap interval
  of the mean difference.
* Per suite, the suite's declared unit (resplits, conditional on the table; or environments):
  paired Wilcoxon of the RMSE differences, Holm over the suite's 8 claims; counted over suites.
The hand-written reading at the end of an existing report (from "## Reading") is kept.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

# the real-data study's report code (benchmarks/real_data/realdata.py) and what it imports
sys.path[:0] = [str(Path(__file__).resolve().parents[1] / d) for d in ("shared", "real_data")]
import realdata  # noqa: E402

from oodfs.report import stats  # noqa: E402
from oodfs.run.suite import load_suite  # noqa: E402

NEW = ["iamb", "hiton_mb", "hrm", "rsw"]
#: added after the four's reading was written: its claims are a Holm family of their own, so adding
#: it moves none of theirs
LATER = ["kerhrm"]
BASES = ["dwr", "srdo"]
MODELS = ["ridge", "mlp"]
READING = "## Reading"


def suites_of(root: Path) -> list[str]:
    single = [
        s for s in realdata.real_suites() if not any(isinstance(r, list) for r in load_suite(s).r_train)
    ]
    return [s for s in single if (root / s / "results.parquet").exists()]


def wide(numbers: dict) -> pd.DataFrame:
    """Units x methods: the test RMSE at each method's validated (point, k)."""
    a = numbers["analysis"]
    return a.values.pivot_table(index=list(a.family.blocks), columns="method", values="rmse_mean")


def interval(low: float, high: float) -> str:
    """A bootstrap interval in points of %, or "(no interval)" below two suites."""
    return "(no interval)" if np.isnan(low) else f"[{100 * low:+.2f}, {100 * high:+.2f}]"


def verdict(diff: float, p_holm: float, a: str, b: str) -> str:
    if not p_holm < 0.05:
        return "not distinguishable"
    return f"{a} better" if diff < 0 else f"{b} better"


def across(tables: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(suites x methods relative effects vs all_features, the claims' tests over suites)."""
    effects = pd.DataFrame(
        {s: (w.div(w["all_features"], axis=0) - 1).mean() for s, w in tables.items()}
    ).T  # fmt: skip

    def describe(d):
        c = stats.cell_summary(d, method="bootstrap")
        return dict(suites=len(d), diff=c.mean, low=c.low, high=c.high)

    claims = _claims(effects, describe)
    return effects, claims


def _holm(claims: pd.DataFrame) -> pd.DataFrame:
    """Holm within one family of claims, and each claim's verdict."""
    if len(claims):
        claims["p_holm"] = stats.adjust_pvalues(claims["p"].to_numpy(), "holm")
        claims["verdict"] = [verdict(r.diff, r.p_holm, r.a, r.b) for r in claims.itertuples()]
    return claims


def per_suite(w: pd.DataFrame) -> pd.DataFrame:
    return _claims(w, lambda d: dict(units=len(d), diff=float(d.mean()) if len(d) else np.nan))


def _claims(table: pd.DataFrame, describe) -> pd.DataFrame:
    """Each new method against each base on ``table`` (rows x methods): the paired differences'
    two-sided Wilcoxon p, ``describe(d)``'s summary, Holm within each family (NEW, then LATER)."""
    families = []
    for family in (NEW, LATER):
        rows = []
        for new in family:
            for base in BASES:
                if new not in table or base not in table:
                    continue
                d = (table[new] - table[base]).dropna().to_numpy()
                _, p, _ = stats._paired(d, "wilcoxon")
                rows.append(dict(a=new, b=base, **describe(d), lower=int((d < 0).sum()), p=p))
        families.append(_holm(pd.DataFrame(rows)))
    return pd.concat(families, ignore_index=True)


def _pct(share: float) -> str:
    """A relative difference in %; a method with no result on a suite (its fits failed) says so."""
    return "failed" if np.isnan(share) else f"{100 * share:+.2f}"


def _secs(seconds: float) -> str:
    return "failed" if np.isnan(seconds) else f"{seconds:.2f}"


def fit_seconds(path: Path) -> pd.Series:
    """Median seconds of one grid point's fit per method (the store's ``fit_seconds``, if kept)."""
    from oodfs.results.store import load_results

    rows = load_results(path)
    col = next((c for c in ("fit_seconds", "fit_time", "seconds") if c in rows), None)
    if col is None:
        return pd.Series(dtype=float)
    return rows.groupby("method")[col].median()


def section(model: str, tables: dict, seconds: dict) -> list[str]:
    effects, claims = across(tables)
    suites = list(tables)
    methods = [m for m in [*NEW, *LATER, *BASES] if m in effects]
    lines = [
        f"## Downstream `{model}`",
        "",
        f"### Across suites ({len(suites)} suites, the suite the unit)",
        "",
        # the exact two-sided Wilcoxon test cannot go below 2 / 2^N over N suites
        f"Over {len(suites)} suite(s) the smallest possible two-sided Wilcoxon p is "
        f"{2 / 2 ** len(suites):.3g}.",
        "",
    ]
    lines += [
        "Each method's test RMSE relative to `all_features`, averaged over the suite's units (%; lower is "
        "better):",
        "",
        "| suite | " + " | ".join(methods) + " |",
        "| --- | " + " | ".join("---" for _ in methods) + " |",
    ]
    for s in suites:
        lines.append(f"| {s} | " + " | ".join(_pct(effects.loc[s, m]) for m in methods) + " |")
    lines.append("| mean | " + " | ".join(_pct(effects[m].mean()) for m in methods) + " |")
    lines += [
        "",
        "| a | b | suites | mean a − b [95 % bootstrap] (points of relative RMSE, %) | a lower on | p "
        "| p (Holm, 8) | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in claims.itertuples():
        lines.append(
            f"| {r.a} | {r.b} | {r.suites} | {100 * r.diff:+.2f} {interval(r.low, r.high)} "
            f"| {r.lower} of {r.suites} | {r.p:.3g} | {r.p_holm:.3g} | {r.verdict} |"
        )
    lines += [
        "",
        "### Per suite (the suite's units; Holm over the suite's 8 claims, KerHRM's 2 a family of their own)",
        "",
    ]
    counts = {}
    detail = []
    for s, w in tables.items():
        ps = per_suite(w)
        for r in ps.itertuples():
            counts.setdefault((r.a, r.b), []).append(r.verdict)
            detail.append((s, r))
    lines += [
        "| a | b | suites | a better | b better | not distinguishable |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for (a, b), v in counts.items():
        lines.append(
            f"| {a} | {b} | {len(v)} | {v.count(f'{a} better')} | {v.count(f'{b} better')} "
            f"| {v.count('not distinguishable')} |"
        )
    lines += ["", "| suite | a | b | units | mean a − b (RMSE) | a lower in | p | p (Holm, 8) | verdict |"]
    lines += ["| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s, r in detail:
        lines.append(
            f"| {s} | {r.a} | {r.b} | {r.units} | {r.diff:+.4f} | {r.lower} of {r.units} | {r.p:.3g} "
            f"| {r.p_holm:.3g} | {r.verdict} |"
        )
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="results/stable-real")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    root = Path(args.root)
    realdata.CACHE = root / "cache"
    suites = suites_of(root)
    if not suites:
        raise SystemExit(f"no suite results under {root}")
    tables, seconds = {m: {} for m in MODELS}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in suites:
            unit = load_suite(s).unit
            for m in MODELS:
                tables[m][s] = wide(realdata.suite_numbers(root / s, m, unit))
            seconds[s] = fit_seconds(root / s)
    lines = [
        "# The stable line on the real regression suites: IAMB, HITON-MB, HRM, RSW against DWR and SRDO",
        "",
        "Written by `python benchmarks/stable_line/stable_line_real.py` (its docstring says what is "
        "compared and how).",
        f"Suites run: {', '.join(f'`{s}`' for s in suites)} ({len(suites)}); rule `val` (grid point and k "
        "chosen together on the training environment's held-out rows); DWR's and SRDO's fits are the "
        "shipped references', the four new methods run on the same tasks.",
        "",
    ]
    secs = pd.DataFrame(seconds).T
    if len(secs.columns):
        cols = [m for m in [*NEW, *LATER] if m in secs]
        lines += ["Median seconds of one grid point's fit in these runs (DWR's and SRDO's were stored by "
                  "another run under another load: not comparable, not shown):", ""]  # fmt: skip
        lines += ["| suite | " + " | ".join(cols) + " |", "| --- | " + " | ".join("---" for _ in cols) + " |"]
        lines += [f"| {s} | " + " | ".join(_secs(secs.loc[s, c]) for c in cols) + " |" for s in secs.index]
        lines.append("")
    for m in MODELS:
        lines += section(m, tables[m], seconds) + [""]
    text = "\n".join(lines)
    if args.out:
        out = Path(args.out)
        if out.exists() and READING in out.read_text():
            old = out.read_text()
            text += "\n" + old[old.index(READING) :]
        out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
