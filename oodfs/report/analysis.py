"""The one analysis of a report: its family of tests and their verdicts.

The leaderboard, ``oodfs compare``, the results page and the real-data report all read their
verdicts from :class:`Analysis`, so the same folder gives the same verdict for the same pair in
every output. The family (docs/PROTOCOL.md section 10):

- which comparisons: on real data (results holding the ``all_features`` yardstick) every method
  against ``all_features``; elsewhere every pair of methods. Other yardsticks (``mean``) are
  compared with the reference in a family of their own, never in the methods' Holm family,
  where they would only make every test harder to pass;
- which test and correction: two-sided Wilcoxon signed-rank, Holm over the family of a setting
  and metric, alpha 0.05;
- which unit of replication: the suite's ``unit`` (``run``, ``resplit`` or ``environment``);
  with ``environment`` the runs of a training environment are averaged first, and each
  environment is one unit;
- which downstream model the RMSEs come from.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from oodfs.report import stats

#: the yardstick real-data methods are compared with (docs/PROTOCOL.md, "Real data")
REFERENCE = "all_features"

UNIT_TEXT = {
    "run": "each (r_train, run) block, a fresh draw from the data process",
    "resplit": (
        "each (r_train, run) block, a resplit of one table: the blocks share most of their rows, so a "
        "p-value says the result holds across resplits of this table (conditional on it), not that "
        "it generalises to other data"
    ),
    "environment": (
        "each training environment, or each disjoint set of environments an r_train entry trains on "
        "(its runs averaged first; the test environments are shared)"
    ),
}


@dataclass(frozen=True)
class Family:
    """What is tested: the comparisons, the unit, the test and correction, the downstream model."""

    reference: str | None  # None: every pair of methods
    methods: tuple
    yardsticks: tuple
    unit: str
    blocks: tuple  # the columns that name one unit
    downstream: str
    test: str = "wilcoxon"
    correction: str = "holm"
    alpha: float = stats.ALPHA

    @property
    def comparisons(self) -> str:
        if self.reference:
            return f"each of the {len(self.methods)} methods against {self.reference}"
        k = len(self.methods)
        return f"every pair of the {k} methods ({k * (k - 1) // 2} pairs)"

    def describe(self) -> str:
        """One paragraph naming the family, its unit and the downstream model."""
        others = [y for y in self.yardsticks if y != self.reference]
        text = (
            f"Tested family: {self.comparisons}, per setting and metric; two-sided Wilcoxon signed-rank "
            f"test, Holm-corrected over the family, alpha {self.alpha:g}. Unit of replication: "
            f"{UNIT_TEXT[self.unit]}. Downstream model: {self.downstream}."
        )
        if others:
            against = self.reference or "every method"
            text += (
                f" Yardsticks ({', '.join(others)}) are compared with {against} in a family of their own, "
                "not counted in the methods' correction."
            )
        return text

    @property
    def conditional(self) -> bool:
        """Are the verdicts conditional on one table (resplits, not independent replicates)?"""
        return self.unit == "resplit"


class Analysis:
    """Per setting and headline metric of a :class:`~oodfs.report.report.Report`: the tests of
    the family (:meth:`tests`), each pair's verdict (:meth:`verdict`) and the tested best sets
    (:meth:`best_sets`)."""

    def __init__(self, report):
        self.report = report
        methods = list(dict.fromkeys(report.chosen["method"])) if len(report.chosen) else []
        yardsticks = tuple(m for m in methods if report.kind(m) == "yardstick")
        unit = report.unit
        self.family = Family(
            reference=REFERENCE if REFERENCE in methods else None,
            methods=tuple(m for m in methods if m not in yardsticks),
            yardsticks=yardsticks,
            unit=unit,
            blocks=("r_train",) if unit == "environment" else ("r_train", "run"),
            downstream=report.downstream,
        )

    @cached_property
    def values(self) -> pd.DataFrame:
        """One row per (setting, unit, method): the chosen points' headline metrics. With the
        ``environment`` unit, a training environment's runs are averaged first."""
        per_run = self.report.per_run()
        per_run = per_run[per_run["r_train"] != "all"]
        if self.family.unit != "environment":
            return per_run.reset_index(drop=True)
        keys = ["setting", "r_train", "method"]
        return per_run.groupby(keys, sort=False)[self.report.headline].mean().reset_index().assign(run=0)

    @cached_property
    def _tests(self) -> dict:
        out = {}
        f = self.family
        for metric in [m for m in self.report.headline if m in self.values]:
            info = self.report.metrics[metric]
            data = self.values.dropna(subset=[metric])
            if data.empty:
                continue
            kw = dict(within=("setting",), pair_on=f.blocks, test=f.test, correction=f.correction)
            methods = data[data["method"].isin(f.methods)]
            if f.reference:
                ref = data["method"] == f.reference
                lower = info.lower_is_better
                main = stats.versus_reference(
                    data[ref | data["method"].isin(f.methods)], metric, lower, f.reference, **kw
                )
                extra = stats.versus_reference(
                    data[ref | data["method"].isin(f.yardsticks)], metric, info.lower_is_better, f.reference,
                    **kw,
                )  # fmt: skip
            else:
                main = stats.pairwise_tests(methods, metric, info.lower_is_better, **kw)
                extra = pd.DataFrame(columns=main.columns)
                for y in f.yardsticks:  # each yardstick against every method, a family per yardstick
                    both = data[(data["method"] == y) | data["method"].isin(f.methods)]
                    extra = pd.concat(
                        [extra, stats.versus_reference(both, metric, info.lower_is_better, y, **kw)],
                        ignore_index=True,
                    )
            main = main.assign(family="methods")
            extra = extra.assign(family="yardsticks")
            for setting in dict.fromkeys(data["setting"]):
                parts = [t[t["setting"] == setting] for t in (main, extra) if len(t)]
                if parts:
                    out[(setting, metric)] = pd.concat(parts, ignore_index=True)
        return out

    def tests(self, setting, metric: str) -> pd.DataFrame:
        """The family's comparisons of one setting and metric (stats.PAIRWISE_COLUMNS, decidable,
        family = "methods" or "yardsticks"); empty when there is nothing to compare."""
        return self._tests.get((setting, metric), pd.DataFrame(columns=[*stats.PAIRWISE_COLUMNS, "family"]))

    def all_tests(self) -> pd.DataFrame:
        frames = [t.assign(metric=m) for (_, m), t in self._tests.items() if len(t)]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def verdict(self, setting, metric: str, a: str, b: str) -> str | None:
        """The verdict on the pair (a, b) in either order, or None when the family does not test it."""
        t = self.tests(setting, metric)
        hit = t[((t["method_a"] == a) & (t["method_b"] == b)) | ((t["method_a"] == b) & (t["method_b"] == a))]
        return None if hit.empty else str(hit["verdict"].iloc[0])

    def decidable(self, setting, metric: str) -> bool:
        """Can any test of the methods' family reach alpha? (Too few units: say so, bold nothing.)"""
        t = self.tests(setting, metric)
        t = t[t["family"] == "methods"]
        return bool(len(t) and t["decidable"].any())

    def undecidable_settings(self) -> list[str]:
        """The settings where no test of the methods' family can reach alpha."""
        return list(dict.fromkeys(str(s) for (s, m) in self._tests if not self.decidable(s, m)))

    def max_units(self) -> int:
        """The most units any comparison of the methods' family has."""
        t = self.all_tests()
        t = t[t["family"] == "methods"] if len(t) else t
        return int(t["n_pairs"].max()) if len(t) and t["n_pairs"].notna().any() else 0

    def undecidable_note(self) -> str:
        """A sentence naming the settings where no test of the family can reach alpha, or ''."""
        f = self.family
        bad = self.undecidable_settings()
        if not bad:
            return ""
        n = self.max_units()
        units = f"{n} unit" if n == 1 else f"at most {n} units"
        return (
            f"With {units} per comparison, the smallest p a {f.test} test can give is "
            f"{stats._p_floor(n, f.test):.3g}: no test of the family can reach alpha {f.alpha:g} after "
            f"correction in {', '.join(bad)}, so there is no verdict there and nothing is marked best."
        )

    def test_text(self) -> str:
        """The family in a parenthesis: test, units, correction, e.g. "paired Wilcoxon over 35
        (r_train, run) blocks, Holm over 66 pairs"."""
        f = self.family
        k = len(f.methods)
        size = f"{k} comparisons with {f.reference}" if f.reference else f"{k * (k - 1) // 2} pairs"
        blocks = "training environments" if f.unit == "environment" else f"({', '.join(f.blocks)}) blocks"
        test = "paired Wilcoxon" if f.test == "wilcoxon" else f"paired {f.test}"
        return f"{test} over {self.max_units()} {blocks}, {f.correction.capitalize()} over {size}"

    def verdict_sentences(self) -> list[dict]:
        """The tested verdicts in words, per setting and headline metric: dict(setting, metric,
        text, decided; ``spread``: a measure of spread, where no method is called best). With every
        pair tested: the tested best set and which methods each of its members beats; against a
        reference: which methods are better or worse than it."""
        out = []
        f = self.family
        best = self.best_sets()
        for (setting, metric), t in self._tests.items():
            info = self.report.metrics[metric]
            t = t[t["family"] == "methods"]
            if not len(t):
                continue
            what = f"{info.title} {info.arrow}"
            if not self.decidable(setting, metric):
                out.append(dict(setting=setting, metric=what, decided=False, text="too few units to test"))
                continue
            wins = t[t["better"].notna()]
            if f.reference:
                better = [m for m in f.methods if ((wins["better"] == m) & (wins["method_a"] == m)).any()]
                worse = [
                    r.method_a
                    for r in wins.itertuples()
                    if r.better == f.reference and r.method_a in f.methods
                ]
                parts = []
                if better:
                    parts.append(f"{_names(better)} significantly better than {f.reference}")
                if worse:
                    parts.append(f"{_names(worse)} significantly worse than {f.reference}")
                rest = len(f.methods) - len(better) - len(worse)
                if rest:
                    parts.append(f"{rest} not distinguishable from it")
                text = "; ".join(parts)
            else:
                top = [m for m in f.methods if m in best.get((setting, "all", metric), set())]
                others = [m for m in f.methods if m not in top]
                beaten = {
                    m: set(wins.loc[wins["better"] == m, ["method_a", "method_b"]].stack()) - {m} for m in top
                }
                if not top:
                    text = "no tested best set (a measure of spread, or no test decided)"
                    if not _can_be_best(info):
                        text = "a measure of spread alone: no method is called best on it"
                elif others and all(set(others) <= beaten[m] for m in top):
                    text = (
                        f"{_names(top)} {'is' if len(top) == 1 else 'are'} significantly better than every "
                        f"other method ({len(others)})"
                    )
                else:
                    bits = []
                    for m in top:
                        missed = [o for o in others if o not in beaten[m]]
                        bits.append(
                            f"{m} better than {len(others) - len(missed)} of {len(others)}"
                            + (f", not distinguishable from {_names(missed)}" if missed else "")
                        )
                    text = f"best: {_names(top)} ({'; '.join(bits)})"
            spread = not _can_be_best(info)
            out.append(dict(setting=setting, metric=what, decided=True, text=text, spread=spread))
        return out

    # -- best sets --------------------------------------------------------------------------
    def bold_text(self) -> str:
        """What a bold cell means: the family's own verdict (docs/PROTOCOL.md section 10)."""
        if self.family.reference:
            return f"significantly better than {self.family.reference} by the tested family's test"
        return "in the best set"

    def _better_than_reference(self) -> tuple[dict, list[str]]:
        """Against a reference, bold is the family's verdict itself: a method significantly better
        than the reference by the test every output reports; nothing else is marked (the tables
        by r_train are not tested against the reference)."""
        f = self.family
        best: dict = {}
        for (setting, metric), t in self._tests.items():
            if not _can_be_best(self.report.metrics[metric]):
                continue
            t = t[t["family"] == "methods"]
            better = set(t.loc[t["better"] == t["method_a"], "method_a"])
            if better:
                best[(setting, "all", metric)] = better
        note = (
            f"Bold: a method significantly better than {f.reference} on that metric ({self.test_text()}, "
            f"alpha {f.alpha:g}): the family's own tests, which oodfs compare and the results page "
            f"report; a method not bold is not distinguishable from {f.reference} or worse. The tables "
            f"by r_train are not tested against {f.reference}: nothing is bold there."
        )
        return best, [note]

    @cached_property
    def _best(self) -> tuple[dict, list[str]]:
        f = self.family
        best: dict = {}
        notes = []
        values = self.values[self.values["method"].isin(f.methods)]  # yardsticks: never in a best set
        if f.reference:  # the family's own verdicts; no other test marks a cell
            best, notes = self._better_than_reference()
            scopes = []
        else:
            scopes = [("all", ["setting"], list(f.blocks))]
            if f.unit != "environment" and values.groupby("setting")["r_train"].nunique().max() > 1:
                scopes.append(("by r_train", ["setting", "r_train"], ["run"]))
        for scope, within, pair_on in scopes:
            for i, m in enumerate([m for m in self.report.headline if m in values]):
                info = self.report.metrics[m]
                data = values.dropna(subset=[m])
                if data.empty:
                    continue
                result = stats.best_set(
                    data, m, info.lower_is_better, within=within, pair_on=pair_on, test=f.test,
                    correction=f.correction, alpha=f.alpha,
                )  # fmt: skip
                for _, row in result.iterrows():
                    r_train = "all" if scope == "all" else row["r_train"]
                    if row["in_best_set"] and row["decidable"] and _can_be_best(info):
                        best.setdefault((row["setting"], r_train, m), set()).add(row["method"])
                if i == 0:  # the rule is the same for every metric
                    notes.append(
                        f"{'Averaged tables' if scope == 'all' else 'Tables by r_train'}: "
                        + stats.describe_best_rule(result)
                    )
        declared = [self.report.metrics[m] for m in self.report.headline]
        spread = [m.title for m in declared if not _can_be_best(m)]
        if spread:
            notes.append(
                f"{', '.join(spread)}: a measure of spread alone, never marked best (a method can have a "
                "small spread by being uniformly bad)."
            )
        return best, notes

    def best_sets(self) -> dict:
        """{(setting, r_train or "all", metric): methods in the tested best set}."""
        return self._best[0]

    def best_notes(self) -> list[str]:
        return self._best[1]


def _names(methods) -> str:
    methods = list(methods)
    if len(methods) <= 2:
        return " and ".join(methods)
    return ", ".join(methods[:-1]) + " and " + methods[-1]


def _can_be_best(metric) -> bool:
    """A metric of spread alone (RMSE sd) never makes a method best: its tables mark nothing."""
    return metric.name not in SPREAD_METRICS


#: metrics that measure spread alone (docs/PROTOCOL.md section 10): shown, tested, never "best"
SPREAD_METRICS = ("rmse_std",)


# -- what a method is, and what it needs --------------------------------------------------------

#: the families figures colour by and pages group by, in the order they are listed
#: (docs/PROTOCOL.md, "The results page")
METHOD_FAMILIES = (
    "independence weighting",
    "other selectors",
    "invariance (environment labels)",
    "robust (DRO)",
    "Markov boundary",
    "yardsticks",
)
#: built-in plugin packages whose selectors belong to a family their kind does not tell (SVI
#: and HRM are selectors built on independence-driven weighting)
_PACKAGE_FAMILIES = {"oodfs_plugins.independence": "independence weighting"}

#: what a method needs besides the training table, from its declared requirements
NEEDS = ("nothing", "environment labels", "a reference environment")
NEEDS_TEXT = {
    "nothing": "the training table only (label-free)",
    "environment labels": "one environment label per training row, two or more environments",
    "a reference environment": (
        "environment labels, and one labelled training environment taken as the reference"
    ),
}


def _plugin(method: str):
    """The installed selector of that name (its declarations), or None (a plugin not installed
    here: the results still say its kind)."""
    from oodfs.contract.registry import registry

    try:
        return registry().info("selector", method)
    except Exception:  # not installed, or a broken plugin: fall back on the stored kind
        return None


def method_family(method: str, kind: str) -> str:
    """The family of a method: a plugin's declared ``family``, else yardsticks (the stored
    kind ``yardstick``), invariance (a method that learns from environment labels),
    independence weighting (a weighter, or a selector of the built-in independence package),
    or "other selectors"."""
    if kind == "yardstick":
        return "yardsticks"
    info = _plugin(method)
    if info is not None:
        if getattr(info.cls, "family", ""):
            return str(info.cls.family)
        if getattr(info.cls, "uses_groups", False):
            return "invariance (environment labels)"
        for package, family in _PACKAGE_FAMILIES.items():
            if info.module.startswith(package + "."):
                return family
    return "independence weighting" if kind == "weighter" else "other selectors"


def method_needs(method: str) -> str:
    """What a method needs besides the training table (one of :data:`NEEDS`), from its
    declarations ``uses_groups`` and ``uses_reference_env``; "nothing" for a method not installed
    here."""
    info = _plugin(method)
    cls = info.cls if info is not None else None
    if cls is not None and getattr(cls, "uses_groups", False):
        return (
            "a reference environment" if getattr(cls, "uses_reference_env", False) else "environment labels"
        )
    return "nothing"


def family_order(family: str) -> int:
    return METHOD_FAMILIES.index(family) if family in METHOD_FAMILIES else len(METHOD_FAMILIES)


# -- across suites ---------------------------------------------------------------------------

#: the two families the verdict across suites sets against each other
PAIRED_FAMILIES = ("other selectors", "independence weighting")


def across_suites(analyses: dict, metric: str = "rmse_mean") -> dict:
    """The benchmark-level verdict with the suite as the unit (Demšar, JMLR 2006): per suite,
    each method's effect relative to the reference, (method - reference) / reference averaged
    over the suite's units; per method, a two-sided Wilcoxon signed-rank test over the suites,
    Holm over the methods; a Friedman test of the methods and the reference over the suites
    with their average ranks; and per family of methods (:func:`method_family`, the families the
    results page and its figures show) its members' mean relative effect, tested the same way, and
    independence weighting against the other selectors (the seed paper's question; with other
    families present they are left out of that one test). ``analyses``: {suite name: Analysis},
    each with the reference.

    Returns dict(effects: suites x methods relative effects, methods: per-method rows, friedman:
    (statistic, p, average ranks), families: per-family rows, family_pair: the families' test,
    n_suites, family_effects: suites x families, the mean of each family's members' effects)."""
    effects, kinds = {}, {}
    for name, a in analyses.items():
        ref = a.family.reference
        if ref is None or metric not in a.values:
            continue
        wide = a.values.pivot_table(index=list(a.family.blocks), columns="method", values=metric)
        rel = wide[list(a.family.methods)].div(wide[ref], axis=0) - 1
        effects[name] = rel.mean()  # a method's failed units are left out of its mean
        kinds.update({m: a.report.kind(m) for m in a.family.methods})
    effects = pd.DataFrame(effects).T
    # the statistics read the suites (the units) sorted by name: the order the analyses were given
    # in changes no number (docs/PROTOCOL.md section 10, "Intervals"); ``effects`` keeps it for display
    units = effects.sort_index(kind="stable")
    n = len(effects)
    rows = []
    for m in effects.columns:
        d = units[m].dropna().to_numpy()
        _, p, _ = stats._paired(d, "wilcoxon")
        c = stats.cell_summary(d, method="bootstrap")
        rows.append(dict(method=m, family=method_family(m, kinds.get(m)), suites=len(d),
                         effect=c.mean, low=c.low, high=c.high, better=int((d < 0).sum()), p=p))  # fmt: skip
    methods = pd.DataFrame(rows)
    if len(methods):
        methods["p_holm"] = stats.adjust_pvalues(methods["p"].to_numpy(), "holm")
        methods["verdict"] = [_across_verdict(r.effect, r.p_holm) for r in methods.itertuples()]
    # Friedman over suites: the methods and the reference (relative effect 0)
    complete = units.assign(**{"all_features": 0.0}).dropna(axis=1, how="any")
    friedman = None
    if complete.shape[1] >= 3 and len(complete) >= 2:
        res = stats.stats.friedmanchisquare(*[complete[c].to_numpy() for c in complete.columns])
        ranks = stats._ranks(complete, True).mean().sort_values()
        friedman = (float(res.statistic), float(res.pvalue), ranks)
    fam_rows, fam_values = [], {}
    for fam in dict.fromkeys(methods["family"]) if len(methods) else []:
        members = list(methods.loc[methods["family"] == fam, "method"])
        v = units[members].mean(axis=1)
        fam_values[fam] = v
        _, p, _ = stats._paired(v.dropna().to_numpy(), "wilcoxon")
        c = stats.cell_summary(v.dropna(), method="bootstrap")
        fam_rows.append(dict(family=fam, members=", ".join(members), effect=c.mean, low=c.low, high=c.high,
                             better=int((v < 0).sum()), suites=int(v.notna().sum()), p=p))  # fmt: skip
    families = pd.DataFrame(fam_rows)
    if len(families):
        families["p_holm"] = stats.adjust_pvalues(families["p"].to_numpy(), "holm")
        families["verdict"] = [_across_verdict(r.effect, r.p_holm) for r in families.itertuples()]
    pair = None
    compared = PAIRED_FAMILIES if set(PAIRED_FAMILIES) <= set(fam_values) else tuple(fam_values)
    if len(compared) == 2:
        (fa, va), (fb, vb) = ((f, fam_values[f]) for f in compared)
        both = pd.concat([va, vb], axis=1).dropna()
        d = (both.iloc[:, 0] - both.iloc[:, 1]).to_numpy()
        _, p, _ = stats._paired(d, "wilcoxon")
        c = stats.cell_summary(d, method="bootstrap")
        pair = dict(a=fa, b=fb, suites=len(d), diff=c.mean, low=c.low, high=c.high, p=p,
                    a_better=int((d < 0).sum()))  # fmt: skip
    family_effects = pd.DataFrame(fam_values).reindex(effects.index) if fam_values else pd.DataFrame()
    return dict(effects=effects, methods=methods, friedman=friedman, families=families, family_pair=pair,
                n_suites=n, family_effects=family_effects)  # fmt: skip


def _across_verdict(effect: float, p: float) -> str:
    if not pd.notna(p):
        return "not tested"
    if p < stats.ALPHA:
        return "better than all_features" if effect < 0 else "worse than all_features"
    return "not distinguishable"


#: the units of replication in a few words, and what adds them (:func:`undecidable_before_run`)
UNIT_WORDS = {
    "run": "an (r_train, run) block",
    "resplit": "a resplit of the table",
    "environment": "a training environment",
}
MORE_UNITS = {
    "run": "more runs (--runs) or r_train values",
    "resplit": "more runs (resplits of the table; their verdicts hold for this table only)",
    "environment": "more training environments (r_train)",
}


def undecidable_before_run(suite, alpha: float = stats.ALPHA) -> str:
    """'' when the suite's tested family (every pair of its methods, or each against
    ``all_features`` when that yardstick runs) can reach ``alpha`` after Holm with the units the
    suite declares; else one sentence saying so and what would make a verdict possible (more
    units, or fewer methods). Read before any task runs, from the suite alone: the same family
    and p floor as :meth:`Analysis.undecidable_note` applies to the results."""
    yardsticks = set(suite.yardsticks)
    k = len([m for m in suite.methods if m not in yardsticks])
    against = REFERENCE in yardsticks

    def comparisons(k):
        return k if against else k * (k - 1) // 2

    m = comparisons(k)
    n = len(suite.r_train) * (1 if suite.unit == "environment" else suite.runs)
    floor = stats._p_floor(n, "wilcoxon")
    if m == 0 or m * floor < alpha:
        return ""
    needed = next(u for u in range(n, 64) if m * stats._p_floor(u, "wilcoxon") < alpha)
    fewer = max((j for j in range(1, k) if comparisons(j) * floor < alpha), default=0)
    family = f"{k} methods against {REFERENCE}" if against else f"every pair of {k} methods"
    text = (
        f"this run can give no verdict: with {n} unit{'s' if n != 1 else ''} of replication per "
        f"comparison (each {UNIT_WORDS[suite.unit]}), the smallest p a Wilcoxon test can give is "
        f"{floor:.3g}, and Holm over the {m} comparison{'s' if m != 1 else ''} ({family}) needs one "
        f"below {alpha / m:.3g}; "
        f"a verdict needs at least {needed} units ({MORE_UNITS[suite.unit]})"
    )
    if fewer >= (1 if against else 2):
        text += f" or at most {fewer} methods"
    return text


def shipped_verdicts(report, reference) -> dict | None:
    """The tested verdicts of a shipped reference (``reference``: its
    :class:`oodfs.run.reference.Reference`) for a run too small to test (the quick job): the
    reference's rows of the run's methods, settings and downstream model, analysed as the run is
    (its rule, its unit), over every data set the reference holds. ``{"name", "units", "test",
    "downstream", "sentences"}`` (``sentences`` as :meth:`Analysis.verdict_sentences` gives them),
    or None when the reference holds fewer than two of the run's methods. The caller says plainly
    that these are the reference's numbers, not the run's (docs/PROTOCOL.md section 10)."""
    from oodfs.report.report import Report

    methods = list(dict.fromkeys(report.results["method"]))
    settings = set(report.results["setting"].astype(str))
    found = reference.results
    rows = found[
        found["method"].isin(methods)
        & found["setting"].astype(str).isin(settings)
        & (found["downstream"] == report.downstream)
    ]
    if rows["method"].nunique() < 2:
        return None
    metrics = report._given["metrics"]  # as the run's report was given them (declared, stored)
    analysis = Analysis(
        Report(rows, report.rule, metrics, methods, report.downstream, unit=report.unit, task=report.task)
    )
    return {
        "name": reference.path.stem,
        "units": analysis.max_units(),
        "test": analysis.test_text(),
        "downstream": report.downstream,
        "sentences": analysis.verdict_sentences(),
    }
