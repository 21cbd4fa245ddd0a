"""Guards against a leak: a feature that predicts the target almost perfectly (docs/PROTOCOL.md,
"Own tables": leaks).

Three cheap checks on the rows a method is fitted on. The first two are notes, never refusals (a
column may be a leak or a legitimately strong predictor; only the user knows when its value is
known); the third, for a binary target, refuses unless the column is kept:

* **one feature alone**: a one-feature step function -- the feature cut at its quantiles into at
  most :data:`BINS` bins (a feature with fewer distinct values: one bin per value), each bin
  predicting the mean target of its rows in the other folds (:data:`FOLDS` seeded folds; a bin
  empty there predicts their overall mean). An out-of-fold R² of at least :data:`LEAK_R2`
  (regression), or an AUC of the out-of-fold predictions of at least :data:`LEAK_AUC` (binary),
  names the feature. The day's return when the target is "the day went up" has AUC 1. On
  bikeshare's six numeric features a 32-leaf regression tree per feature (scikit-learn, 5
  shuffled folds) gives R² within 0.022 of the step function's (``registered``: 0.947 and
  0.944) at 5 to 63 times the time (``benchmarks/own_tables/bench_select_leaks.py``); binning a feature is
  what histogram gradient boosting does too.
* **an identity** (regression): the target is a linear function of a few features, R² of at least
  :data:`IDENTITY_R2` with at most :data:`IDENTITY_FEATURES` of them (orthogonal matching pursuit,
  the smallest such set): bikeshare's ``registered`` + ``casual`` = its count of riders, where
  neither alone passes the first check (``registered``: R² 0.944).
* **a strong copy** (binary): a feature whose AUC alone (scikit-learn's ``roc_auc_score`` on its
  values, the larger of AUC and 1 - AUC) is at least :data:`BINARY_LEAK_AUC`. A copy of the
  target with 5 % of its values flipped has AUC 0.95; no feature of the shipped binary suites'
  training environments reaches 0.92 (``benchmarks/leak_check/``). The note and the refusal give
  the AUC the other features reach together (a logistic regression, :data:`FOLDS`-fold
  cross-validated) for scale: it is not part of the rule, since a real predictor can stand far
  above the rest (OJ's brand loyalty: 0.919 against 0.521) and a copy need not (the vote table's
  other features reach 0.94 against a copy's 0.95).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from oodfs.validation import OodfsError

#: a feature alone explaining this share of the target's variance out of fold is named
LEAK_R2 = 0.95
#: a feature alone whose out-of-fold predictions separate the classes with this AUC is named
LEAK_AUC = 0.99
#: the target explained to this share by a linear function of at most IDENTITY_FEATURES features
#: (an accounting identity, exact up to rounding; y = 2a + b + noise with noise sd 3 % of y's is 0.999)
IDENTITY_R2 = 0.9999
IDENTITY_FEATURES = 5
#: binary target: a feature alone separating the classes with this AUC (max of AUC and 1 - AUC) on
#: the rows used is refused unless kept: between the largest single-feature AUC of the shipped binary
#: suites' training environments (0.919) and a copy of the target with 5 % of values flipped (0.95)
#: (docs/PROTOCOL.md section 17, "Leaks"); a copy with a share q flipped has AUC 1 - q, so one with
#: more than about 7 % flipped (20 %: AUC 0.80, as strong as real predictors) passes
BINARY_LEAK_AUC = 0.93
#: the one-feature step function: quantile bins, folds; rows sampled at most (seeded)
BINS = 32
FOLDS = 5
MAX_ROWS = 20_000
#: fewer rows than this: no check (a cross-validated score on a handful of rows means nothing)
MIN_ROWS = 50


@dataclass(frozen=True)
class Leaks:
    """``alone``: ``{feature: score}`` of the features that pass the one-feature check, best first
    (score: R² or AUC, named by ``score``); ``identity``: the features the target is a linear
    function of, and its R² (``()`` and None when none)."""

    alone: dict
    score: str
    identity: tuple = ()
    identity_r2: float | None = None
    #: binary: ``{feature: (its AUC alone, the other features' AUC together)}`` of the features at or
    #: above BINARY_LEAK_AUC, best first (the other features: every feature not in this dict)
    strong: dict = field(default_factory=dict)
    #: how many features the other features' AUC was fitted on
    strong_others: int = 0

    def strong_text(self, feature: str) -> str:
        """``'f' alone separates ... (AUC 0.952; the other 6 features together: AUC 0.804)``."""
        auc, rest = self.strong[feature]
        others = self.strong_others
        if others == 0:
            together = "no other feature"
        else:
            fold = f"a {FOLDS}-fold cross-validated logistic regression"
            value = "n/a, too few rows of a class" if rest is None else f"{rest:.3f}"
            together = f"the other {others} feature{'s' if others > 1 else ''} together: AUC {value}, {fold}"
        return (
            f"{feature!r} alone separates the target's classes with AUC {auc:.3f} (>= {BINARY_LEAK_AUC}) "
            f"on the training rows ({together})"
        )

    def notes(self) -> list[str]:
        """One sentence per finding (a strong copy's once it is kept: :func:`refuse_strong`)."""
        out = [
            f"possible leak: {self.strong_text(f)}; kept (--keep): rank it only if its value is known "
            "before the target is"
            for f in self.strong
        ]
        if self.alone:
            bound = LEAK_AUC if self.score == "AUC" else LEAK_R2
            listed = ", ".join(f"{f!r} ({self.score} {v:.3f})" for f, v in self.alone.items())
            one = len(self.alone) == 1
            out.append(
                f"possible leak: {listed} alone predict{'s' if one else ''} the target almost perfectly "
                f"on the training rows (a one-feature step function on {BINS} quantile bins, {FOLDS}-fold "
                f"cross-validated {self.score} >= {bound}); drop {'it' if one else 'them'} (--drop) "
                "unless the value is known before the target is"
            )
        if self.identity:
            listed = ", ".join(map(repr, self.identity))
            out.append(
                f"possible leak: the target is a linear function of {listed} on the training rows "
                f"(R² {self.identity_r2:.4f} >= {IDENTITY_R2}): a sum or difference of columns? drop "
                "them (--drop) unless their values are known before the target is"
            )
        return out

    def to_json(self) -> dict:
        return {
            "alone": {f: float(v) for f, v in self.alone.items()},
            "score": self.score,
            "identity": list(self.identity),
            "identity_r2": self.identity_r2,
            "strong": {f: {"auc": a, "rest_auc": r} for f, (a, r) in self.strong.items()},
        }


def find_leaks(X: np.ndarray, y: np.ndarray, names: list[str], task: str, seed: int = 0) -> Leaks:
    """The leak checks of the module docstring on ``(X, y)`` (the rows a method is fitted on;
    ``task`` "regression" or "binary", a binary y as 0.0 / 1.0)."""
    score = "AUC" if task == "binary" else "R²"
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    if X.shape[0] < MIN_ROWS or y.min() == y.max():
        return Leaks({}, score)
    rng = np.random.default_rng(seed)
    if X.shape[0] > MAX_ROWS:
        rows = np.sort(rng.choice(X.shape[0], MAX_ROWS, replace=False))
        X, y = X[rows], y[rows]
    fold = rng.permutation(X.shape[0]) % FOLDS
    strong = _strong(X, y, names) if task == "binary" else {}
    alone = {}
    # values near the float limit (--no-standardize) overflow in squares: such a check is skipped
    with np.errstate(all="ignore"):
        for j, name in enumerate(names):
            x = X[:, j]
            if x.min() == x.max() or name in strong:  # a strong copy has its own sentence
                continue
            p = _out_of_fold(x, y, fold)
            value = _auc(y, p) if task == "binary" else 1 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2)
            if np.isfinite(value) and value >= (LEAK_AUC if task == "binary" else LEAK_R2):
                alone[name] = float(value)
        identity, r2 = ((), None) if task == "binary" else _identity(X, y, names)
    alone = dict(sorted(alone.items(), key=lambda kv: -kv[1]))
    if not strong:
        return Leaks(alone, score, identity, r2)
    others = [j for j, name in enumerate(names) if name not in strong and np.ptp(X[:, j]) > 0]
    rest = _rest_auc(X[:, others], y, seed)
    strong = {name: (auc, rest) for name, auc in sorted(strong.items(), key=lambda kv: -kv[1])}
    return Leaks(alone, score, identity, r2, strong, len(others))


def refuse_strong(leaks: Leaks, variable_of: dict, keep) -> None:
    """An OodfsError naming every strong copy (:class:`Leaks`) whose column is not in ``keep``
    (``variable_of``: the column of each feature, a one-hot level's variable), as a near-copy of the
    target is refused (docs/PROTOCOL.md section 17, "Leaks")."""
    from oodfs.tables.prepare import _keep_option

    kept = {str(c) for c in keep}
    refused = [f for f in leaks.strong if str(variable_of.get(f, f)) not in kept]
    if not refused:
        return
    columns = list(dict.fromkeys(str(variable_of.get(f, f)) for f in refused))
    it = "it" if len(columns) == 1 else "them"
    raise OodfsError(
        f"possible leak: {_listed([leaks.strong_text(f) for f in refused])}: a selector would rank {it} "
        f"first; drop {it} (--drop {','.join(columns)}) or keep {it} on purpose if the value is known "
        f"before the target is ({_keep_option(columns)})"
    )


def _listed(texts: list[str], limit: int = 3) -> str:
    return "; ".join(texts[:limit]) + (f"; and {len(texts) - limit} more" if len(texts) > limit else "")


def _strong(X: np.ndarray, y: np.ndarray, names: list[str]) -> dict:
    """``{feature: AUC}`` of the features whose AUC alone (max of AUC and 1 - AUC, the feature's values
    as scores) reaches BINARY_LEAK_AUC."""
    from sklearn.metrics import roc_auc_score

    out = {}
    for j, name in enumerate(names):
        x = X[:, j]
        if not np.isfinite(x).all() or x.min() == x.max():
            continue
        auc = float(roc_auc_score(y, x))
        auc = max(auc, 1 - auc)
        if auc >= BINARY_LEAK_AUC:
            out[name] = auc
    return out


def _rest_auc(X: np.ndarray, y: np.ndarray, seed: int) -> float | None:
    """The AUC of the out-of-fold scores of a logistic regression (scikit-learn, L2 with C = 1) on the
    columns of X (FOLDS stratified seeded folds); 0.5 with no column, None with fewer than FOLDS rows
    of a class."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    if X.shape[1] == 0:
        return 0.5
    if min(int((y == 1.0).sum()), int((y == 0.0).sum())) < FOLDS:
        return None
    folds = StratifiedKFold(FOLDS, shuffle=True, random_state=seed % 2**32)
    with warnings.catch_warnings():  # a fit stopped at max_iter still ranks rows: enough for scale
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = cross_val_predict(
            LogisticRegression(max_iter=1000), X, y, cv=folds, method="decision_function"
        )
    return float(roc_auc_score(y, scores))


def _auc(y: np.ndarray, p: np.ndarray) -> float:
    """The AUC of scores p for 0/1 labels y: the Mann-Whitney U over n1 n0, ties counting half."""
    from scipy.stats import rankdata

    positive = y == 1.0
    n1, n0 = int(positive.sum()), int((~positive).sum())
    return float((rankdata(p)[positive].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _out_of_fold(x: np.ndarray, y: np.ndarray, fold: np.ndarray) -> np.ndarray:
    """The step function's out-of-fold predictions of y from the one feature x."""
    edges = np.unique(np.quantile(x, np.linspace(0, 1, BINS + 1)[1:-1]))
    codes = np.searchsorted(edges, x, side="right")
    p = np.empty_like(y)
    for f in range(FOLDS):
        test = fold == f
        train = ~test
        sums = np.bincount(codes[train], weights=y[train], minlength=edges.size + 1)
        counts = np.bincount(codes[train], minlength=edges.size + 1)
        means = np.where(counts > 0, sums / np.maximum(counts, 1), y[train].mean())
        p[test] = means[codes[test]]
    return p


def _identity(X: np.ndarray, y: np.ndarray, names: list[str]) -> tuple[tuple, float | None]:
    """(the smallest set of at most IDENTITY_FEATURES features whose least-squares fit with an
    intercept explains IDENTITY_R2 of y, its R²), or ((), None): orthogonal matching pursuit's
    path (scikit-learn) on the centred data."""
    from sklearn.linear_model import orthogonal_mp

    Xc, yc = X - X.mean(axis=0), y - y.mean()
    scale = np.sqrt((Xc**2).sum(axis=0))
    usable = np.isfinite(scale) & (scale > 0)
    if not usable.any():
        return (), None
    columns = np.flatnonzero(usable)
    Z = Xc[:, usable] / scale[usable]  # pursuit wants unit-norm columns
    k = min(IDENTITY_FEATURES, Z.shape[1])
    with warnings.catch_warnings():  # an exact fit before k features "ends prematurely": what we look for
        warnings.simplefilter("ignore", RuntimeWarning)
        path = np.asarray(orthogonal_mp(Z, yc, n_nonzero_coefs=k, return_path=True, precompute=False))
    path = path.reshape(Z.shape[1], -1)
    total = float(yc @ yc)
    if not np.isfinite(total) or not np.isfinite(Z).all():
        return (), None
    for step in range(path.shape[1]):
        coef = path[:, step]
        r2 = 1 - float(np.sum((yc - Z @ coef) ** 2)) / total
        if r2 >= IDENTITY_R2:
            return tuple(names[columns[j]] for j in np.flatnonzero(coef)), r2
    return (), None
