"""Statistics for result tables: intervals over runs, paired tests, best sets, Friedman ranks,
trend tests and critical-difference diagrams.

Every function takes a tidy frame of *selected* results -- one row per (setting, r_train, run,
method), one numeric column per metric -- and ``lower_is_better``, a ``{metric: bool}`` dict (or
one bool). Methods are compared *paired*: two methods are matched on the blocks named by
``pair_on`` (by default (r_train, run): the same training and test data, see the runner), and only
blocks where both have a value count. Missing values (NaN, failed runs) are never imputed; counts
of values, pairs and dropped blocks are returned next to every number so unequal run counts show.

The tests and intervals come from scipy.stats, the Bonferroni and Benjamini-Hochberg corrections
from statsmodels (Holm's step-down is four lines here, see adjust_pvalues), the
critical-difference diagram from scikit-posthocs. Each public function's docstring names the
test, correction and interval it uses; reports may quote them.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from oodfs.report.escape import mpl_text, short_names
from oodfs.validation import OodfsError

LEVEL = 0.95
ALPHA = 0.05
INTERVALS = ("t", "bootstrap")
TESTS = ("wilcoxon", "ttest")
CORRECTIONS = ("holm", "bonferroni", "fdr_bh", "none")
TREND_TESTS = ("kendall", "spearman", "page")
POSTHOCS = ("wilcoxon", "nemenyi")
# bootstrap resamples (scipy's default number). The bootstrap is the percentile one, not scipy's
# default BCa: BCa is unstable on the 2-10 values a cell has and undefined for constant data.
N_RESAMPLES = 9999

_TEST_NAMES = {"wilcoxon": "two-sided Wilcoxon signed-rank test", "ttest": "two-sided paired t-test"}
_CORRECTION_NAMES = {
    "holm": "Holm-corrected",
    "bonferroni": "Bonferroni-corrected",
    "fdr_bh": "Benjamini-Hochberg FDR-corrected",
    "none": "uncorrected",
}


def _choice(value, valid, what: str):
    if value not in valid:
        raise OodfsError(f"unknown {what} {value!r}; valid: {', '.join(valid)}")
    return value


# -- one cell ------------------------------------------------------------------------------


class CellSummary(NamedTuple):
    """Mean of the non-missing values, interval (NaN when n < 2) and their count."""

    mean: float
    low: float
    high: float
    n: int


def describe_interval(method: str = "t", level: float = LEVEL) -> str:
    """One sentence naming the interval ``cell_summary(method=...)`` computes."""
    _choice(method, INTERVALS, "interval method")
    pct = f"{100 * level:g} %"
    if method == "t":
        return (
            f"{pct} t interval of the mean over runs (Student t with n - 1 degrees of freedom); no "
            "interval when n < 2"
        )
    return (
        f"{pct} percentile bootstrap interval of the mean over runs ({N_RESAMPLES} resamples, seeded; it "
        "stays inside the range of the values, hence of the metric); no interval when n < 2"
    )


def cell_summary(values, *, level: float = LEVEL, method: str = "t", random_state: int = 0) -> CellSummary:
    """Mean, ``level`` interval and count of ``values`` (NaNs dropped first).

    ``method="t"``: mean ± t_{(1+level)/2, n-1} · sd/√n (scipy.stats.t.interval).
    ``method="bootstrap"``: percentile bootstrap of the mean, scipy.stats.bootstrap with
    N_RESAMPLES resamples seeded by ``random_state``. n < 2 -> low = high = NaN (no interval);
    constant values -> low = high = mean.
    """
    _choice(method, INTERVALS, "interval method")
    if not 0 < level < 1:
        raise OodfsError(f"level must be between 0 and 1, got {level!r}")
    x = np.asarray(values, dtype=float).ravel()
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        return CellSummary(np.nan, np.nan, np.nan, 0)
    mean = float(x.mean())
    if n < 2:
        return CellSummary(mean, np.nan, np.nan, 1)
    if np.all(x == x[0]):  # both formulas degenerate (0/0); the interval of a constant is the point
        return CellSummary(float(x[0]), float(x[0]), float(x[0]), n)
    if method == "t":
        low, high = stats.t.interval(level, n - 1, loc=mean, scale=stats.sem(x))
    else:
        ci = stats.bootstrap(
            (x,),
            np.mean,
            confidence_level=level,
            n_resamples=N_RESAMPLES,
            method="percentile",
            rng=np.random.default_rng(random_state),
        ).confidence_interval
        low, high = ci.low, ci.high
    return CellSummary(mean, float(low), float(high), n)


# -- shared plumbing -----------------------------------------------------------------------


def _lower(lower_is_better, metric: str) -> bool:
    if isinstance(lower_is_better, (bool, np.bool_)):
        return bool(lower_is_better)
    if isinstance(lower_is_better, Mapping):
        if metric not in lower_is_better:
            raise OodfsError(
                f"lower_is_better has no entry for metric {metric!r}; it has: "
                f"{', '.join(map(str, lower_is_better)) or 'nothing'}"
            )
        return bool(lower_is_better[metric])
    raise OodfsError(
        f"lower_is_better must be a dict {{metric: bool}} or a bool, got {type(lower_is_better).__name__}"
    )


def _check(df: pd.DataFrame, metric: str, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(df, pd.DataFrame):
        raise OodfsError(f"expected a pandas DataFrame of results, got {type(df).__name__}")
    missing = [c for c in [metric, *columns] if c not in df.columns]
    if missing:
        raise OodfsError(
            f"results have no column {', '.join(map(repr, missing))}; "
            f"columns: {', '.join(map(str, df.columns))}"
        )
    try:
        values = pd.to_numeric(df[metric], errors="raise").astype(float)
    except (ValueError, TypeError):
        raise OodfsError(f"metric column {metric!r} must be numeric") from None
    return df.assign(**{metric: values})


def _groups(df: pd.DataFrame, within: Sequence[str]):
    """(key tuple, sub-frame) per group of ``within``, in order of first appearance."""
    within = list(within)
    if not within:
        yield (), df
        return
    for key, g in df.groupby(within, sort=False, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), g


def _wide_groups(df: pd.DataFrame, metric: str, within: Sequence[str], block: Sequence[str]):
    """(key tuple, blocks x methods table of ``metric``) per group of ``within``; every table has a
    column for every method of ``df``, in order of first appearance."""
    df = _check(df, metric, [*within, *block, "method"])
    methods = list(dict.fromkeys(df["method"]))
    for key, g in _groups(df, within):
        yield key, _wide(g, metric, block, methods=methods)


def _wide(
    g: pd.DataFrame,
    metric: str,
    block: Sequence[str],
    method: str = "method",
    methods: Sequence | None = None,
) -> pd.DataFrame:
    """Blocks x methods table of ``metric`` (NaN where a method has no value in a block).

    ``methods``: the columns, in this order (every method of the whole frame, so that a method
    missing from one group still shows, with no values); default: those in ``g``."""
    keys = [*block, method]
    dup = g.duplicated(keys, keep=False)
    if dup.any():
        row = g.loc[dup, keys].iloc[0]
        where = ", ".join(f"{k}={_fmt(row[k])}" for k in keys)
        raise OodfsError(f"more than one row for {where}: pass one selected grid point per task")
    wide = (
        g.pivot(index=list(block), columns=method, values=metric)
        if block
        else g.set_index(method)[[metric]].T
    )
    return wide.reindex(columns=list(methods) if methods is not None else list(dict.fromkeys(g[method])))


def _pairs(wide: pd.DataFrame, a, b) -> tuple[np.ndarray, np.ndarray]:
    """Values of methods a and b on the blocks where both have one (numpy: this runs per pair)."""
    x, y = wide[a].to_numpy(dtype=float), wide[b].to_numpy(dtype=float)
    both = ~np.isnan(x) & ~np.isnan(y)
    return x[both], y[both]


def _fmt(v) -> str:
    return repr(v) if isinstance(v, str) else str(v.item() if isinstance(v, np.generic) else v)


def adjust_pvalues(pvalues, correction: str = "holm") -> np.ndarray:
    """p-values adjusted for multiple comparisons: "holm" (Holm's step-down, the default),
    "bonferroni", "fdr_bh" (Benjamini-Hochberg) or "none". NaNs stay NaN and are not counted in
    the family. Bonferroni and BH come from statsmodels' ``multipletests``; Holm is computed here
    (same numbers, checked in the tests) because statsmodels' Holm runs a full garbage
    collection on every call, ~0.2 s each."""
    _choice(correction, CORRECTIONS, "correction")
    p = np.asarray(pvalues, dtype=float)
    out = p.copy()
    ok = ~np.isnan(p)
    if correction == "none" or not ok.any():
        return out
    if correction == "holm":
        # the i-th smallest of m p-values times (m - i + 1), made monotone, capped at 1
        order = np.argsort(p[ok], kind="stable")
        m = len(order)
        adjusted = np.minimum(1.0, np.maximum.accumulate(p[ok][order] * np.arange(m, 0, -1)))
        out[np.flatnonzero(ok)[order]] = adjusted
        return out
    from statsmodels.stats.multitest import multipletests

    out[ok] = multipletests(p[ok], method=correction)[1]
    return out


def _paired(d: np.ndarray, test: str) -> tuple[float, float, int]:
    """(statistic, two-sided p, direction) of the paired differences d; direction +1 when the
    first method tends to be larger (by signed-rank sums for Wilcoxon, by the mean for t), -1
    smaller, 0 none. All-zero differences: p = 1 (not distinguishable)."""
    if len(d) == 0:
        return np.nan, np.nan, 0
    if np.all(d == 0):
        return 0.0, 1.0, 0
    if test == "wilcoxon":
        nz = d[d != 0]
        ranks = stats.rankdata(np.abs(nz))
        r_plus, r_minus = ranks[nz > 0].sum(), ranks[nz < 0].sum()
        direction = int(np.sign(r_plus - r_minus))
        ties_or_zeros = len(nz) < len(d) or len(np.unique(ranks)) < len(ranks)
        if len(d) <= PERMUTATION_MAX_N and ties_or_zeros and not np.isnan(d).any():
            return float(min(r_plus, r_minus)), _signed_rank_permutation_p(ranks, r_plus), direction
        res = stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided")
        return float(res.statistic), float(res.pvalue), direction
    if len(d) < 2:
        return np.nan, np.nan, 0
    if np.all(d == d[0]):  # zero variance: t is infinite; every pair moved the same way
        return np.inf * np.sign(d[0]), 0.0, int(np.sign(d[0]))
    res = stats.ttest_rel(d, np.zeros_like(d))
    return float(res.statistic), float(res.pvalue), int(np.sign(d.mean()))


#: scipy.stats.wilcoxon's exact test for ties or zero differences: every sign pattern (2^n) when
#: n <= 13, else the normal approximation
PERMUTATION_MAX_N = 13


def _signed_rank_permutation_p(ranks: np.ndarray, r_plus: float) -> float:
    """The two-sided p that scipy.stats.wilcoxon gives (method "auto", zeros dropped) for differences
    with ties or zeros and n <= 13: the permutation test over every sign pattern, counted the way
    scipy.stats.permutation_test counts (its tolerance for equal statistics, twice the smaller
    tail, clipped to 1). scipy evaluates the statistic once per pattern in Python, about a second a
    test; all 2^m sums of the m non-zero ranks are one matrix product here (zero differences flip
    to themselves, so leaving them out scales both counts alike). Equal to scipy's p
    (tests/test_stats.py; benchmarks/whole_benchmark/bench_wilcoxon.py measures the speed)."""
    m = len(ranks)
    signs = (np.arange(2**m)[:, None] >> np.arange(m)) & 1
    null = signs @ ranks
    gamma = abs(np.finfo(float).eps * 100 * r_plus)
    less = np.count_nonzero(null <= r_plus + gamma) / 2**m
    greater = np.count_nonzero(null >= r_plus - gamma) / 2**m
    return float(min(1.0, 2 * min(less, greater)))


def _p_floor(n_nonzero: int, test: str) -> float:
    """The smallest two-sided p the test can give on n non-zero differences: 2 / 2^n for the
    exact Wilcoxon test (every difference of one sign), 0 for the t-test (n >= 2)."""
    if test == "wilcoxon":
        return min(1.0, 2.0 * 0.5**n_nonzero) if n_nonzero else 1.0
    return 0.0 if n_nonzero >= 2 else 1.0


def _reachable(floors: Sequence[float], correction: str, alpha: float) -> bool:
    """Can any adjusted p in this family fall below alpha? Holm and Bonferroni multiply the
    smallest p by the family size m; BH and no correction leave it as is."""
    if not len(floors):
        return False
    factor = len(floors) if correction in ("holm", "bonferroni") else 1
    return factor * min(floors) < alpha


def _key_columns(within: Sequence[str], key: tuple) -> dict:
    return dict(zip(within, key))


def _keyname(within: Sequence[str], key: tuple) -> str:
    return ", ".join(f"{k}={_fmt(v).strip(chr(39))}" for k, v in zip(within, key)) or "all results"


# -- best set ------------------------------------------------------------------------------

BEST_COLUMNS = [
    "method",
    "mean",
    "n",
    "n_pairs",
    "p_raw",
    "p_vs_best",
    "is_best",
    "in_best_set",
    "decidable",
    "note",
]


def best_set(
    df: pd.DataFrame,
    metric: str,
    lower_is_better,
    *,
    within: Sequence[str] = ("setting",),
    pair_on: Sequence[str] = ("r_train", "run"),
    alpha: float = ALPHA,
    test: str = "wilcoxon",
    correction: str = "holm",
) -> pd.DataFrame:
    """The best method of each ``within`` group and every method not significantly worse.

    Best = the best mean over all of a method's values in the group, among methods with at least
    two values (one run is no evidence: with one run per method nothing is best). Every other
    method is compared with it by a two-sided paired test over the ``pair_on`` blocks both have
    (``test="wilcoxon"``: scipy.stats.wilcoxon, zero differences dropped, exact p for small
    samples; ``"ttest"``: scipy.stats.ttest_rel); all-zero differences give p = 1. The k - 1
    p-values of a group are adjusted together (Holm step-down by default, statsmodels). A method
    is in the best set when it is the best or its adjusted p >= alpha; a method with fewer than
    two values or no block shared with the best is not tested and not in the set. Two-sided,
    because the best is picked from the same data.

    Returns one row per (group, method): the ``within`` columns, then method, mean, n (values),
    n_pairs (blocks shared with the best), p_raw, p_vs_best (adjusted), is_best, in_best_set,
    decidable (False when no adjusted p of the group can fall below alpha, e.g. Wilcoxon with
    fewer than 6 pairs), note. Settings are kept in ``result.attrs`` for describe_best_rule.
    """
    _choice(test, TESTS, "test")
    _choice(correction, CORRECTIONS, "correction")
    low = _lower(lower_is_better, metric)
    within, pair_on = list(within), list(pair_on)
    rows = []
    for key, wide in _wide_groups(df, metric, within, pair_on):
        n = wide.notna().sum()
        means = wide.mean()
        candidates = means[n >= 2].dropna()
        out = {
            m: dict(
                _key_columns(within, key),
                method=m,
                mean=means[m],
                n=int(n[m]),
                n_pairs=0,
                p_raw=np.nan,
                p_vs_best=np.nan,
                is_best=False,
                in_best_set=False,
                decidable=False,
                note="",
            )
            for m in wide.columns
        }
        if candidates.empty:
            for m in out:
                out[m]["note"] = "fewer than 2 runs: no best" if n[m] else "no value"
            rows += out.values()
            continue
        best = candidates.idxmin() if low else candidates.idxmax()
        out[best].update(is_best=True, in_best_set=True, n_pairs=int(n[best]), note="best")
        tested, floors = [], []
        for m in wide.columns:
            if m == best:
                continue
            xm, xb = _pairs(wide, m, best)
            out[m]["n_pairs"] = len(xm)
            if n[m] < 2:
                out[m]["note"] = "fewer than 2 runs: not tested" if n[m] else "no value"
                continue
            if not len(xm):
                out[m]["note"] = "no block shared with the best: not tested"
                continue
            d = xm - xb
            out[m]["p_raw"] = _paired(d, test)[1]
            tested.append(m)
            floors.append(_p_floor(int(np.count_nonzero(d)), test))
        adjusted = adjust_pvalues([out[m]["p_raw"] for m in tested], correction)
        decidable = _reachable(floors, correction, alpha)
        for m, p in zip(tested, adjusted):
            floor = _p_floor(out[m]["n_pairs"], test)  # on its pairs: a tie on every one is no weakness
            # a method whose own test could never reach alpha (e.g. 5 pairs: Wilcoxon p >= 0.0625)
            # was not shown to be as good as the best: it stays out of the set, and says why
            # (Holm's last step multiplies by 1, Bonferroni always by the family size)
            own = floor * (len(floors) if correction == "bonferroni" else 1) < alpha
            out[m].update(p_vs_best=p, in_best_set=bool(p >= alpha and own))
            notes = []
            if not decidable:
                notes.append("too few pairs to reach alpha")
            elif not own:
                pairs = out[m]["n_pairs"]
                notes.append(f"too few pairs ({pairs}) for its test to reach alpha: not in the set")
            if out[m]["n_pairs"] < max(n[m], n[best]):
                notes.append(f"{max(n[m], n[best]) - out[m]['n_pairs']} unpaired values dropped")
            out[m]["note"] = "; ".join(notes)
        for m in [best, *tested]:
            out[m]["decidable"] = decidable
        rows += out.values()
    result = pd.DataFrame(rows, columns=[*within, *BEST_COLUMNS])
    result.attrs["best_rule"] = dict(
        metric=metric,
        lower=low,
        within=within,
        pair_on=pair_on,
        alpha=alpha,
        test=test,
        correction=correction,
    )
    return result


def describe_best_rule(
    result: pd.DataFrame | None = None,
    *,
    pair_on: Sequence[str] = ("r_train", "run"),
    within: Sequence[str] = ("setting",),
    alpha: float = ALPHA,
    test: str = "wilcoxon",
    correction: str = "holm",
) -> str:
    """The sentence to print under a table whose best cells come from best_set.

    With ``result`` (a best_set output) its own settings are used and caveats are appended:
    groups where the test cannot reach alpha, and unequal run counts.
    """
    if result is not None and "best_rule" in result.attrs:
        cfg = result.attrs["best_rule"]
        pair_on, within, alpha, test, correction = (
            cfg["pair_on"],
            cfg["within"],
            cfg["alpha"],
            cfg["test"],
            cfg["correction"],
        )
    _choice(test, TESTS, "test")
    _choice(correction, CORRECTIONS, "correction")
    family = f"within each {', '.join(within)}" if within else "over all results"
    text = (
        f"Best = the best mean (methods with at least 2 runs) and every method not significantly different "
        f"from it: {_TEST_NAMES[test]} paired over ({', '.join(pair_on)}), {_CORRECTION_NAMES[correction]} "
        f"{family}, alpha {alpha:g}."
    )
    if result is None or result.empty:
        return text
    within = [c for c in within if c in result.columns]
    notes = []
    undecided, unequal, none = [], [], []
    for key, g in _groups(result, within):
        name = _keyname(within, key)
        if not g["is_best"].any():
            none.append(name)
        elif not g.loc[g["is_best"] | g["p_raw"].notna(), "decidable"].all():
            undecided.append(f"{name} (at most {int(g['n_pairs'].max())} pairs)")
        counts = g.set_index("method")["n"]
        if counts.nunique() > 1:
            unequal.append(f"{name}: " + ", ".join(f"{m} {c}" for m, c in counts.items()))
    n_groups = result.groupby(within, sort=False).ngroups if within else 1
    if none:
        notes.append(f"No best where no method has 2 runs: {_listing(none, n_groups)}.")
    if undecided:
        notes.append(
            f"Too few pairs for the test to reach alpha, so no method can be shown worse: "
            f"{_listing(undecided, n_groups)}."
        )
    if unequal:  # listed in full: unequal counts are never summarised away
        notes.append(f"Unequal run counts: {'; '.join(unequal)}.")
    return " ".join([text, *notes])


def _listing(items: list[str], total: int, limit: int = 4) -> str:
    """The items, or their count out of ``total`` and the first few when there are many."""
    if len(items) <= limit:
        return "; ".join(items)
    return f"{len(items)} of {total} groups, e.g. {'; '.join(items[:2])}"


# -- all pairs -----------------------------------------------------------------------------

PAIRWISE_COLUMNS = [
    "method_a",
    "method_b",
    "n_a",
    "n_b",
    "n_pairs",
    "n_dropped",
    "mean_a",
    "mean_b",
    "mean_diff",
    "diff_low",
    "diff_high",
    "statistic",
    "p",
    "p_adjusted",
    "better",
    "verdict",
]


def _comparison_row(keys: dict, a, b, n, xa, xb, cs, stat, p, direction) -> dict:
    """One row of a table of paired comparisons: method a against b over their paired units."""
    paired = len(xa)
    return dict(
        keys,
        method_a=a,
        method_b=b,
        n_a=int(n[a]),
        n_b=int(n[b]),
        n_pairs=paired,
        n_dropped=int(n[a] + n[b] - 2 * paired),
        mean_a=xa.mean() if paired else np.nan,
        mean_b=xb.mean() if paired else np.nan,
        mean_diff=cs.mean,
        diff_low=cs.low,
        diff_high=cs.high,
        statistic=stat,
        p=p,
        _dir=direction,
    )


def pairwise_tests(
    df: pd.DataFrame,
    metric: str,
    lower_is_better,
    *,
    within: Sequence[str] = ("setting",),
    pair_on: Sequence[str] = ("r_train", "run"),
    alpha: float = ALPHA,
    test: str = "wilcoxon",
    correction: str = "holm",
    interval: str = "t",
    level: float = LEVEL,
    random_state: int = 0,
) -> pd.DataFrame:
    """Every pair of methods in each ``within`` group, paired over the ``pair_on`` blocks both have.

    Per pair (a, b): n_a, n_b (values), n_pairs (shared blocks), n_dropped (values of a or b
    without a partner), mean_a, mean_b (over the shared blocks), mean_diff = mean of a - b (the
    effect size, in the metric's units), diff_low/diff_high (its ``level`` interval, cell_summary's
    ``interval`` method on the differences), statistic and p of the two-sided paired test
    (``"wilcoxon"``: scipy.stats.wilcoxon, zeros dropped; ``"ttest"``: scipy.stats.ttest_rel;
    all-zero differences: p = 1), p_adjusted over all pairs of the group (Holm by default,
    statsmodels), better (the better method or None) and verdict ("<method> better" when
    p_adjusted < alpha, else "not distinguishable"; "not tested" with fewer than 2 pairs for the
    t-test or none for Wilcoxon). The direction follows the test: signed-rank sums for Wilcoxon,
    the mean for t.
    """
    _choice(test, TESTS, "test")
    _choice(correction, CORRECTIONS, "correction")
    _choice(interval, INTERVALS, "interval method")
    low = _lower(lower_is_better, metric)
    within, pair_on = list(within), list(pair_on)
    rows = []
    for key, wide in _wide_groups(df, metric, within, pair_on):
        n = wide.notna().sum()
        group = []
        for a, b in itertools.combinations(wide.columns, 2):
            xa, xb = _pairs(wide, a, b)
            d = xa - xb
            stat, p, direction = _paired(d, test)
            cs = cell_summary(d, level=level, method=interval, random_state=random_state)
            group.append(_comparison_row(_key_columns(within, key), a, b, n, xa, xb, cs, stat, p, direction))
        floors = [_p_floor(r["n_pairs"], test) for r in group if np.isfinite(r["p"])]
        decidable = _reachable(floors, correction, alpha)  # can any pair of the family reach alpha?
        for row, padj in zip(group, adjust_pvalues([r["p"] for r in group], correction)):
            direction = row.pop("_dir")
            row["p_adjusted"] = padj
            row["decidable"] = bool(decidable and np.isfinite(padj))
            _verdict(row, padj, direction, low, alpha)
        rows += group
    return pd.DataFrame(rows, columns=[*within, *PAIRWISE_COLUMNS, "decidable"])


def versus_reference(
    df: pd.DataFrame,
    metric: str,
    lower_is_better,
    reference: str,
    *,
    within: Sequence[str] = ("setting",),
    pair_on: Sequence[str] = ("r_train", "run"),
    alpha: float = ALPHA,
    test: str = "wilcoxon",
    correction: str = "holm",
    level: float = LEVEL,
) -> pd.DataFrame:
    """Every other method against ``reference`` in each ``within`` group: the rows of
    :func:`pairwise_tests` (method_a = the method, method_b = the reference), adjusted over the
    methods of the group only, and ``decidable``: could this adjusted p fall below alpha at all
    (the test's smallest p on the pairs, times the family size for Bonferroni)? A comparison
    that cannot reach alpha reads "too few pairs to decide", never "not distinguishable"."""
    _choice(test, TESTS, "test")
    _choice(correction, CORRECTIONS, "correction")
    low = _lower(lower_is_better, metric)
    within, pair_on = list(within), list(pair_on)
    rows = []
    for key, wide in _wide_groups(df, metric, within, pair_on):
        if reference not in wide or wide[reference].isna().all():
            continue
        n = wide.notna().sum()
        group = []
        for a in [m for m in wide.columns if m != reference]:
            xa, xb = _pairs(wide, a, reference)
            d = xa - xb
            stat, p, direction = _paired(d, test)
            cs = cell_summary(d, level=level)
            group.append(
                _comparison_row(_key_columns(within, key), a, reference, n, xa, xb, cs, stat, p, direction)
            )
        floors = [_p_floor(r["n_pairs"], test) for r in group if np.isfinite(r["p"])]
        family_ok = _reachable(floors, correction, alpha)  # can the family's smallest p pass at all?
        for row, padj in zip(group, adjust_pvalues([r["p"] for r in group], correction)):
            direction = row.pop("_dir")
            floor = _p_floor(row["n_pairs"], test) * (len(floors) if correction == "bonferroni" else 1)
            row["p_adjusted"] = padj
            row["decidable"] = bool(np.isfinite(padj) and family_ok and floor < alpha)
            _verdict(row, padj, direction, low, alpha)
        rows += group
    return pd.DataFrame(rows, columns=[*within, *PAIRWISE_COLUMNS, "decidable"])


def _verdict(row: dict, padj: float, direction: int, low: bool, alpha: float) -> None:
    """better and verdict of a comparison row (method_a against method_b)."""
    if np.isnan(padj):
        row.update(better=None, verdict="not tested")
    elif padj < alpha and direction:
        a_larger = direction > 0
        row["better"] = row["method_b"] if a_larger == low else row["method_a"]
        row["verdict"] = f"{row['better']} better"
    elif not row.get("decidable", True):
        row.update(better=None, verdict="too few pairs to decide")
    else:
        row.update(better=None, verdict="not distinguishable")


# -- Friedman ------------------------------------------------------------------------------

FRIEDMAN_COLUMNS = ["method", "avg_rank", "statistic", "p", "n_blocks", "n_dropped", "k", "note"]


def _complete(wide: pd.DataFrame) -> tuple[pd.DataFrame, list]:
    """Methods with at least one value, restricted to the blocks where all of them have one."""
    present = [m for m in wide.columns if wide[m].notna().any()]
    absent = [m for m in wide.columns if m not in present]
    return wide[present].dropna(), absent


def _ranks(complete: pd.DataFrame, lower: bool) -> pd.DataFrame:
    """Rank of each method within each block, 1 = best, ties get their average rank."""
    values = complete.to_numpy(dtype=float)
    return pd.DataFrame(
        stats.rankdata(values if lower else -values, axis=1, method="average"),
        index=complete.index,
        columns=complete.columns,
    )


def friedman(
    df: pd.DataFrame,
    metric: str,
    lower_is_better,
    *,
    within: Sequence[str] = ("setting",),
    block: Sequence[str] = ("r_train", "run"),
) -> pd.DataFrame:
    """Friedman test across methods over the complete blocks of each ``within`` group.

    Blocks (``block`` columns) where any method lacks a value are dropped and counted
    (n_dropped); a method with no value at all in the group is left out with a note. Statistic
    and p: scipy.stats.friedmanchisquare (chi-square approximation, tie-corrected; needs k >= 3
    methods and 2 blocks, else NaN). avg_rank: mean over blocks of each method's rank within the
    block, 1 = best, ties averaged (scipy.stats.rankdata).

    Returns one row per (group, method): the ``within`` columns, method, avg_rank, and the group's
    statistic, p, n_blocks, n_dropped, k, note repeated on each of its rows.
    """
    low = _lower(lower_is_better, metric)
    within, block = list(within), list(block)
    rows = []
    for key, wide in _wide_groups(df, metric, within, block):
        complete, absent = _complete(wide)
        k, nb = complete.shape[1], len(complete)
        notes = [f"no value: {', '.join(map(str, absent))}"] if absent else []
        stat = p = np.nan
        if k >= 3 and nb >= 2:
            if np.ptp(_ranks(complete, low).to_numpy(), axis=1).any():
                res = stats.friedmanchisquare(*[complete[m].to_numpy() for m in complete.columns])
                stat, p = float(res.statistic), float(res.pvalue)
            else:  # every block a full tie: scipy divides by zero; no evidence of any difference
                stat, p = 0.0, 1.0
                notes.append("all methods tied in every block")
        else:
            notes.append(f"needs 3 methods and 2 complete blocks, has {k} and {nb}")
        avg = _ranks(complete, low).mean() if nb else pd.Series(np.nan, index=complete.columns)
        note = "; ".join(notes)
        for m in wide.columns:
            rows.append(
                dict(
                    _key_columns(within, key),
                    method=m,
                    avg_rank=avg.get(m, np.nan),
                    statistic=stat,
                    p=p,
                    n_blocks=nb,
                    n_dropped=len(wide) - nb,
                    k=k,
                    note=note,
                )
            )
    return pd.DataFrame(rows, columns=[*within, *FRIEDMAN_COLUMNS])


# -- trend ---------------------------------------------------------------------------------

TREND_COLUMNS = ["n", "n_x", "statistic", "p", "slope", "slope_low", "slope_high", "direction", "verdict"]


def trend_test(
    df: pd.DataFrame,
    metric: str,
    *,
    x: str = "r_train",
    within: Sequence[str] = ("setting", "method"),
    lower_is_better=None,
    test: str = "kendall",
    block: str = "run",
    alpha: float = ALPHA,
    level: float = LEVEL,
) -> pd.DataFrame:
    """Does ``metric`` rise or fall with ``x`` (numeric) in each ``within`` group?

    ``test="kendall"``: Kendall's tau-b over all (x, value) points with its two-sided p
    (scipy.stats.kendalltau); ``"spearman"``: Spearman's rho (scipy.stats.spearmanr). Both treat
    the points as independent; runs that share data across x values (same ``block``) make their p
    optimistic. ``"page"``: Page's L test for an ordered alternative with ``block`` as blocks
    (scipy.stats.page_trend_test, complete blocks only, two-sided p = twice the smaller of the two
    one-sided p, statistic = L for an increase). slope, slope_low, slope_high: Theil-Sen slope per
    unit of x and its ``level`` interval (scipy.stats.theilslopes).

    direction: "increases" / "decreases" when p < alpha, "no significant trend" otherwise, "no
    variation" when the metric is constant (never a pass), "one x value" when x is. With
    ``lower_is_better`` (dict or bool), verdict: "gets worse" / "gets better" / "not
    distinguishable" / "no variation"; else None. A claim that *every* method gets worse holds
    when each one does: an intersection-union test needs no multiplicity correction.

    Returns one row per group: the ``within`` columns, n, n_x (distinct x), statistic, p, slope,
    slope_low, slope_high, direction, verdict.
    """
    _choice(test, TREND_TESTS, "trend test")
    within = list(within)
    extra = [block] if test == "page" else []
    df = _check(df, metric, [x, *within, *extra])
    try:
        xs = pd.to_numeric(df[x], errors="raise").astype(float)
    except (ValueError, TypeError):
        bad = next(v for v in df[x] if pd.isna(pd.to_numeric(v, errors="coerce")))
        raise OodfsError(f"trend_test needs a numeric {x!r} column; it has {bad!r}") from None
    df = df.assign(_x=xs)
    low = None if lower_is_better is None else _lower(lower_is_better, metric)
    rows = []
    for key, g in _groups(df, within):
        g = g.dropna(subset=[metric, "_x"])
        xv, yv = g["_x"].to_numpy(), g[metric].to_numpy()
        row = dict(
            _key_columns(within, key),
            n=len(g),
            n_x=int(len(np.unique(xv))),
            statistic=np.nan,
            p=np.nan,
            slope=np.nan,
            slope_low=np.nan,
            slope_high=np.nan,
            direction="",
            verdict=None,
        )
        if row["n_x"] < 2:
            row["direction"] = "one x value"
        elif np.all(yv == yv[0]):
            row.update(direction="no variation", slope=0.0)
        else:
            row["statistic"], row["p"] = _trend(g, metric, test, block)
            ts = stats.theilslopes(yv, xv, alpha=level)
            row.update(slope=float(ts.slope), slope_low=float(ts.low_slope), slope_high=float(ts.high_slope))
            sign = np.sign(row["statistic"])
            significant = not np.isnan(row["p"]) and row["p"] < alpha
            row["direction"] = (
                ("increases" if sign > 0 else "decreases") if significant and sign else "no significant trend"
            )
        if low is not None:
            row["verdict"] = {
                "increases": "gets better" if not low else "gets worse",
                "decreases": "gets worse" if not low else "gets better",
                "no variation": "no variation",
            }.get(row["direction"], "not distinguishable")
        rows.append(row)
    return pd.DataFrame(rows, columns=[*within, *TREND_COLUMNS])


def _trend(g: pd.DataFrame, metric: str, test: str, block: str) -> tuple[float, float]:
    if test == "kendall":
        res = stats.kendalltau(g["_x"], g[metric])
        return float(res.statistic), float(res.pvalue)
    if test == "spearman":
        res = stats.spearmanr(g["_x"], g[metric])
        return float(res.statistic), float(res.pvalue)
    wide = _wide(g, metric, [block], method="_x").sort_index(axis=1).dropna()
    if wide.shape[1] < 3 or len(wide) < 2:  # Page's test needs 3 ordered levels and 2 blocks
        return np.nan, np.nan
    up = stats.page_trend_test(wide.to_numpy())
    down = stats.page_trend_test(wide.to_numpy()[:, ::-1])
    p = min(1.0, 2 * min(up.pvalue, down.pvalue))
    # L itself is always positive: report it signed by the favoured direction
    return float(up.statistic) * (1 if up.pvalue <= down.pvalue else -1), float(p)


# -- critical-difference diagram -----------------------------------------------------------


def posthoc_matrix(
    complete: pd.DataFrame, lower: bool, *, posthoc: str = "wilcoxon", correction: str = "holm"
) -> pd.DataFrame:
    """Methods x methods p-values over complete blocks (rows = blocks, columns = methods).

    ``"wilcoxon"``: two-sided Wilcoxon signed-rank test per pair (all-zero differences: p = 1),
    adjusted over all pairs (Holm by default) -- the pairwise comparison Benavoli et al. (JMLR
    2016) recommend over mean-rank tests. ``"nemenyi"``: Nemenyi's test on the Friedman ranks
    (scikit_posthocs.posthoc_nemenyi_friedman; its own family-wise control, ``correction`` unused).
    """
    _choice(posthoc, POSTHOCS, "post-hoc test")
    methods = list(complete.columns)
    if posthoc == "nemenyi":
        import scikit_posthocs as sp

        values = complete.to_numpy(dtype=float)
        mat = sp.posthoc_nemenyi_friedman(values if lower else -values)
        mat.index = mat.columns = methods
        return mat
    pairs = list(itertools.combinations(methods, 2))
    raw = [_paired((complete[a] - complete[b]).to_numpy(), "wilcoxon")[1] for a, b in pairs]
    mat = pd.DataFrame(1.0, index=methods, columns=methods)
    for (a, b), p in zip(pairs, adjust_pvalues(raw, correction)):
        mat.loc[a, b] = mat.loc[b, a] = p
    return mat


def cd_diagram(
    df: pd.DataFrame,
    metric: str,
    lower_is_better,
    out_path,
    *,
    within: Sequence[str] = ("setting",),
    within_value=None,
    block: Sequence[str] = ("r_train", "run"),
    posthoc: str = "wilcoxon",
    correction: str = "holm",
    alpha: float = ALPHA,
    title: str | None = None,
) -> tuple[Path, Path]:
    """Critical-difference diagram of one ``within`` group, written as ``out_path`` .png and .pdf
    (and .svg; see :func:`oodfs.report.figure_files.save_figure`).

    Methods sit at their average rank over the complete blocks (1 = best; see friedman); methods
    joined by a bar are not significantly different by ``posthoc`` (posthoc_matrix: pairwise
    Wilcoxon, Holm-corrected, by default; or Nemenyi, whose critical difference is then given).
    Drawn by scikit_posthocs.critical_difference_diagram; the Friedman p, the number of blocks
    and the test are written under it. ``within_value``: the group to draw (a value, or a tuple
    for several ``within`` columns); may be omitted when there is one group. Returns
    (png path, pdf path).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import scikit_posthocs as sp

    _choice(posthoc, POSTHOCS, "post-hoc test")
    _choice(correction, CORRECTIONS, "correction")
    low = _lower(lower_is_better, metric)
    within, block = list(within), list(block)
    df = _check(df, metric, [*within, *block, "method"])
    groups = dict(_groups(df, within))
    if within_value is None and len(groups) == 1:
        key = next(iter(groups))
    else:
        key = within_value if isinstance(within_value, tuple) else (within_value,)
        if key not in groups:
            raise OodfsError(
                f"within_value {within_value!r} is not a group of {', '.join(within)}; valid: "
                f"{', '.join(str(k[0] if len(k) == 1 else k) for k in groups)}"
            )
    wide = _wide(groups[key], metric, block, methods=list(dict.fromkeys(df["method"])))
    complete, absent = _complete(wide)
    if complete.shape[1] < 2 or len(complete) < 2:
        raise OodfsError(
            f"a critical-difference diagram of {metric!r} ({_keyname(within, key)}) needs 2 methods and "
            f"2 complete blocks; it has {complete.shape[1]} and {len(complete)}"
        )
    ranks = _ranks(complete, low).mean()
    mat = posthoc_matrix(complete, low, posthoc=posthoc, correction=correction)
    fr = friedman(groups[key], metric, low, within=(), block=block).iloc[0]
    k, nb = complete.shape[1], len(complete)
    cd = None
    if posthoc == "nemenyi":  # Demsar (2006): CD = q_alpha sqrt(k(k+1) / (6N)), q from the studentized range
        cd = stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2) * np.sqrt(k * (k + 1) / (6 * nb))

    # labels cut to a fixed width: the figure's size must not grow with a name (a 20 000-character
    # method name made a figure of gigabytes)
    shown = dict(zip(ranks.index, (mpl_text(n) for n in short_names(ranks.index))))
    ranks, mat = ranks.rename(index=shown), mat.rename(index=shown, columns=shown)
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.32 * k), layout="constrained")
    # the CD value goes in the caption: drawn by the package it overlaps the rank tick labels
    sp.critical_difference_diagram(
        ranks,
        mat,
        ax=ax,
        alpha=alpha,
        label_fmt_left="{label} ({rank:.2f})",
        label_fmt_right="({rank:.2f}) {label}",
        label_props={"fontsize": 10},
        crossbar_props={"color": "black", "linewidth": 2.5},
        elbow_props={"color": "0.35"},
        marker_props={"color": "black"},
    )
    ax.set_title(
        title or f"{metric} ({'lower' if low else 'higher'} is better), {_keyname(within, key)}",
        fontsize=11,
        pad=8,
    )
    test_name = (
        f"Wilcoxon signed-rank, {_CORRECTION_NAMES[correction]}"
        if posthoc == "wilcoxon"
        else f"Nemenyi, critical difference {cd:.2f}"
    )
    friedman_p = "n/a" if np.isnan(fr["p"]) else f"{fr['p']:.2g}"
    caption = (
        f"average method rank over {nb} complete ({', '.join(block)}) blocks, 1 = best; bars join methods "
        f"not significantly different ({test_name}, alpha {alpha:g}); Friedman p = {friedman_p}"
    )
    if len(wide) > nb:
        caption += f"; {len(wide) - nb} incomplete blocks dropped"
    if absent:
        caption += f"; no value: {', '.join(map(str, absent))}"
    # supxlabel: constrained layout keeps room for it under the lowest label
    fig.supxlabel("\n".join(textwrap.wrap(caption, 110)), fontsize=7.5, color="0.25")
    out = Path(out_path)
    out = out.with_suffix("") if out.suffix.lower() in (".png", ".pdf") else out
    out.parent.mkdir(parents=True, exist_ok=True)
    png, pdf = out.with_name(out.name + ".png"), out.with_name(out.name + ".pdf")
    from oodfs.report.figure_files import save_figure  # the one helper that writes every figure

    save_figure(fig, out.parent, out.name)
    plt.close(fig)
    return png, pdf
