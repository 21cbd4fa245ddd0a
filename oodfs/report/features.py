"""Names in reports: what each method selected, one-hot levels grouped back to their variable,
each method against a yardstick, and the RMSE per test environment.

Everything here reads a :class:`~oodfs.report.report.Report` (the chosen grid point of every
task) and recomputes nothing: a task's selected features are the subset the runner stored with
each row (column ``subset``, :func:`trained_subset`), exactly the one the downstream model was
trained on.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from oodfs.contract.api import task_ranking
from oodfs.report import stats
from oodfs.tables.names import LEVEL_SEP  # how a one-hot level is named: column=level

#: how a one-hot column is named: ``column=level`` (oodfs.tables)


def variable_of(feature: str) -> str:
    """The table column a feature comes from: ``hr=17`` -> ``hr``; a numeric column is its own."""
    return feature.split(LEVEL_SEP, 1)[0]


def group_levels(names, scores) -> pd.Series:
    """Scores of variables from the scores of their one-hot levels: the **largest** level score
    (a variable matters as much as its most important level; a sum would favour variables with
    many levels, a mean would hide one decisive level). Numeric features keep their score.
    Returns a Series indexed by variable, in order of first appearance. The same rule as
    ``oodfs select --group-levels`` (:func:`oodfs.run.rank.rank_variables`, aggregate ``max``);
    docs/PROTOCOL.md, "Real data"."""
    s = pd.Series(np.asarray(scores, dtype=float), index=[variable_of(n) for n in names])
    return s.groupby(level=0, sort=False).max()


def trained_subset(row) -> list[int]:
    """The column indices (best first) a stored row's downstream model was trained on: the row's
    ``subset``. Rows stored before oodfs kept it are recomputed with the runner's recipe
    (:func:`oodfs.contract.api.task_ranking`) from their scores, seed and point; that recipe can
    no longer put the features a fit left out last (which the runner saw only in the data), so
    for such old rows of a table with one-hot levels absent from training it may differ."""
    stored = row.get("subset") if hasattr(row, "get") else None
    if isinstance(stored, str):
        return [int(j) for j in json.loads(stored)]
    scores = np.asarray(json.loads(row["scores"]), dtype=float)
    return [int(j) for j in task_ranking(scores, int(row["seed"]), int(row["point"]))[: int(row["k"])]]


def selected_features(row) -> list[str]:
    """The names of the features a chosen task trained its downstream model on (best first)."""
    names = json.loads(row["feature_names"])
    return [names[j] for j in trained_subset(row)]


def _yardsticks(report) -> set:
    return {m for m in dict.fromkeys(report.chosen["method"]) if report.kind(m) == "yardstick"}


def selection_frequency(report) -> pd.DataFrame:
    """Per (setting, method, variable): how many chosen fits selected at least one of its
    features (``fits``) out of ``n_fits``, the mean number of its levels selected when it was
    (``levels``; 1 for a numeric column), and its mean rank among the variables by the method's
    scores with levels grouped (:func:`group_levels`; ``rank``, 1 = first). Ordered by ``fits``,
    then ``rank``. Yardsticks are left out (they select all or none)."""
    chosen = report.chosen
    skip = _yardsticks(report)
    rows = []
    for (setting, method), g in chosen.groupby(["setting", "method"], sort=False):
        needed = ["scores", "feature_names", "point", "k"]
        if "subset" not in g or g["subset"].isna().any():  # the subset is recomputed from the seed
            needed.append("seed")
        if method in skip or any(c not in g or g[c].isna().any() for c in needed):  # not stored: no names
            continue
        counts: dict[str, list[int]] = {}
        ranks: dict[str, list[float]] = {}
        for _, row in g.iterrows():
            per_var: dict[str, int] = {}
            for name in selected_features(row):
                per_var[variable_of(name)] = per_var.get(variable_of(name), 0) + 1
            for var, n in per_var.items():
                counts.setdefault(var, []).append(n)
            grouped = group_levels(json.loads(row["feature_names"]), json.loads(row["scores"]))
            for var, r in grouped.rank(ascending=False, method="average").items():
                ranks.setdefault(var, []).append(float(r))
        for var, levels in counts.items():
            rows.append(dict(setting=setting, method=method, variable=var, fits=len(levels), n_fits=len(g),
                             levels=float(np.mean(levels)), rank=float(np.mean(ranks[var]))))  # fmt: skip
    out = pd.DataFrame(rows, columns=["setting", "method", "variable", "fits", "n_fits", "levels", "rank"])
    order = ["setting", "method", "fits", "rank", "variable"]
    return out.sort_values(order, ascending=[True, True, False, True, True], kind="stable")


def versus_yardstick(report, metric: str = "rmse_mean", yardstick: str = "all_features") -> pd.DataFrame:
    """Every method against ``yardstick`` per setting: the analysis's tests of the methods' family
    (:class:`oodfs.report.analysis.Analysis`: two-sided Wilcoxon over the suite's units, Holm over
    the methods of the setting), one row per method with the mean difference (method -
    yardstick) and its 95 % t interval, p, p_holm and the verdict in words ("better than
    all_features", "worse than all_features", "not distinguishable", "too few pairs to decide").
    Empty when the results hold no such yardstick."""
    from oodfs.report.analysis import Analysis

    analysis = Analysis(report)
    if analysis.family.reference != yardstick or metric not in report.headline:
        return pd.DataFrame()
    rows = []
    for setting in dict.fromkeys(analysis.values["setting"]):
        t = analysis.tests(setting, metric)
        for r in t[t["family"] == "methods"].itertuples():
            verdict = r.verdict
            if r.better == r.method_a:
                verdict = f"better than {yardstick}"
            elif r.better == yardstick:
                verdict = f"worse than {yardstick}"
            rows.append(dict(setting=setting, method=r.method_a, n_pairs=r.n_pairs, mean_diff=r.mean_diff,
                             low=r.diff_low, high=r.diff_high, p=r.p, p_holm=r.p_adjusted,
                             verdict=verdict))  # fmt: skip
    return pd.DataFrame(rows)


def per_env_rmse(report, score: str = "rmse") -> pd.DataFrame:
    """Per (setting, method, test environment): the mean RMSE (or another per-environment
    ``score``: a binary task's ``log_loss``) of the chosen points over every (r_train, run), its
    95 % percentile-bootstrap interval over those blocks and their count."""
    pe = report.per_env
    if pe.empty:
        return pd.DataFrame(columns=["setting", "method", "env", "mean", "low", "high", "n"])
    pe = pe[pe["metric"] == score]
    rows = []
    for (setting, method, env), g in pe.groupby(["setting", "method", "env"], sort=False):
        c = stats.cell_summary(g["value"], method="bootstrap")  # an RMSE interval never goes below 0
        rows.append(dict(setting=setting, method=method, env=env, mean=c.mean, low=c.low, high=c.high, n=c.n))
    return pd.DataFrame(rows)
