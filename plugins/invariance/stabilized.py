"""Stabilized regression (Pfister, Williams, Peters, Aebersold and Bühlmann, AoAS 2021), linear,
as in the authors' R package ``StabilizedRegression`` (its defaults: the "exact" stability test,
the "mse" prediction score, "scaled_coefficient" importance).

Every subset S of the features (the empty set included) gets a pooled least-squares fit with an
intercept and two scores:

* stability: Chow's test of the regression fitted on all environments but e, applied to e's
  rows, for every e; the set's p-value is ``E * min_e p_e`` (Bonferroni, capped at 1);
* predictiveness: the pooled mean squared residual.

The stable sets are those with p-value >= ``alpha_stab`` (the top 10 % by p-value if none is).
Among them the set with the smallest MSE is bootstrapped (500 resamples of the pooled rows, refit,
MSE on all rows); the predictive sets are those whose MSE is at most the bootstrap's
``1 - alpha_pred`` quantile. Stabilized regression averages the coefficients of the sets that are
both stable and predictive with equal weights; a feature's importance is |average coefficient| x
its standard deviation, and the features with importance > 0 are the estimated stable blanket.
SR(pred), the same average over all predictive sets (stable or not), is computed too.

Everything is computed from sufficient statistics (X'X, X'y, y'y per environment; the Chow
statistic through the Woodbury identity), so the 2^d fits cost O(2^d E d^3), independent of n.
Scores and the departures from the R package: docs/PROTOCOL.md, section 13.
"""

from __future__ import annotations

import itertools
from typing import ClassVar

import numpy as np
from scipy import stats

import oodfs

from ._weights import refuse_weights

#: the exact search fits 2^d subsets; beyond this d the screen is required
MAX_EXACT = 12
#: bootstrap resamples of the prediction cutoff (the R package's numB)
N_BOOTSTRAP = 500
SCREENS = ("none", "correlation")


def _moments(X, y, groups, n_envs):
    """Per environment (n_e, X'X, X'y, y'y) with a constant column first; X and y centred on their
    pooled means (the intercept absorbs the shift; it keeps the sums of squares well conditioned)."""
    Xc = np.column_stack([np.ones(len(y)), X - X.mean(axis=0)])
    yc = y - y.mean()
    out = []
    for e in range(n_envs):
        m = groups == e
        out.append((int(m.sum()), Xc[m].T @ Xc[m], Xc[m].T @ yc[m], float(yc[m] @ yc[m])))
    return out, Xc, yc


def _solve(A, b):
    """Least squares through the normal equations; a singular system (collinear columns) by lstsq."""
    try:
        return np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(A, b, rcond=None)[0]


def subset_scores(X, y, groups, n_envs, subsets):
    """For each subset (column indices): (log p-value of the stability test, pooled MSE, the
    pooled coefficients without the intercept)."""
    env, Xc, yc = _moments(X, y, groups, n_envs)
    n = len(y)
    XX = sum(s[1] for s in env)
    Xy = sum(s[2] for s in env)
    yy = sum(s[3] for s in env)
    mse = np.empty(len(subsets))
    chow = np.empty((len(subsets), n_envs, 3))  # statistic, numerator df, denominator df
    coefs = []
    for i, subset in enumerate(subsets):
        cols = [0] + [c + 1 for c in subset]
        p = len(cols)
        A, b = XX[np.ix_(cols, cols)], Xy[cols]
        beta = _solve(A, b)
        mse[i] = max(yy - 2 * beta @ b + beta @ A @ beta, 0.0) / n
        coefs.append(beta[1:])
        for e, (ne, XXe, Xye, yye) in enumerate(env):
            no = n - ne
            M, mb, my = A - XXe[np.ix_(cols, cols)], b - Xye[cols], yy - yye
            beta_o = _solve(M, mb)
            rss_o = max(my - 2 * beta_o @ mb + beta_o @ M @ beta_o, 0.0)
            # Chow's statistic: diff' (I + X_e M^-1 X_e')^-1 diff, diff = y_e - X_e beta_o, by Woodbury
            XXs = XXe[np.ix_(cols, cols)]
            dd = yye - 2 * beta_o @ Xye[cols] + beta_o @ XXs @ beta_o
            u = Xye[cols] - XXs @ beta_o
            q = max(dd - u @ _solve(A, u), 0.0)
            # R's var(residuals) of the out-of-environment fit (their mean is 0: intercept)
            var_o = rss_o / (no - 1)
            denom = ne * var_o * no / (no - p)
            stat = q / denom if denom > 0 else (0.0 if q == 0 else np.inf)
            chow[i, e] = stat, ne, n - ne - p
    log_pe = stats.f.logsf(chow[..., 0], chow[..., 1], chow[..., 2])
    log_p = np.minimum(0.0, log_pe.min(axis=1) + np.log(n_envs))
    return log_p, mse, np.array(coefs, dtype=object), Xc, yc


def _bootstrap_mse(Xc, yc, cols, rng, n_boot=N_BOOTSTRAP):
    """MSE on all rows of the pooled least-squares fit (with intercept) on each bootstrap resample."""
    Z = Xc[:, [0] + [c + 1 for c in cols]]
    n = len(yc)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot)
    out = np.empty(n_boot)
    for i, w in enumerate(counts):
        Zw = Z * w[:, None]
        beta = _solve(Zw.T @ Z, Zw.T @ yc)
        out[i] = np.mean((yc - Z @ beta) ** 2)
    return out


def correlation_screen(X, y, size):
    """The ``size`` features with the largest |correlation| with y (the R package's default
    pre-screen orders by the correlation test's p-value, which is the same order)."""
    Xc, yc = X - X.mean(0), y - y.mean()
    sd = np.sqrt((Xc**2).sum(0) * (yc @ yc))
    corr = np.abs(Xc.T @ yc) / np.where(sd > 0, sd, 1.0)
    return sorted(np.argsort(-corr, kind="stable")[:size].tolist())


def _check(p, d):
    for name in ("alpha_stab", "alpha_pred"):
        a = p[name]
        if isinstance(a, bool) or not isinstance(a, (int, float, np.number)) or not 0 < a < 1:
            raise oodfs.OodfsError(f"stabilized {name} must be a level in (0, 1), got {a!r}")
    if p["screen"] not in SCREENS:
        raise oodfs.OodfsError(f"stabilized screen must be one of {', '.join(SCREENS)}, got {p['screen']!r}")
    size = p["screen_size"]
    if p["screen"] == "correlation" and not (
        isinstance(size, (int, np.integer)) and not isinstance(size, bool) and 1 <= size <= MAX_EXACT
    ):
        raise oodfs.OodfsError(
            f"stabilized screen_size must be an integer from 1 to {MAX_EXACT}, got {size!r}"
        )
    if p["screen"] == "none" and d > MAX_EXACT:
        raise oodfs.OodfsError(
            f"stabilized: the exact subset search is limited to {MAX_EXACT} features, got {d}; "
            "pass screen='correlation' (with screen_size <= 12) or select fewer columns"
        )


class StabilizedSearch:
    """The subset search shared by every grid point of one data set: the scores of all subsets and
    the bootstrap of each candidate best stable set, drawn once per set from one seeded stream."""

    def __init__(self, X, y, groups, columns, random_state):
        self.columns = columns
        self.n_envs = int(groups.max()) + 1
        self.subsets = [s for r in range(len(columns) + 1) for s in itertools.combinations(columns, r)]
        self.log_p, self.mse, self.coefs, self.Xc, self.yc = subset_scores(
            X, y, groups, self.n_envs, self.subsets
        )
        self.sd = X.std(axis=0, ddof=1)
        self.random_state = random_state
        self._boot = {}

    def _bootstrap(self, i):
        if i not in self._boot:  # the same draws for a set whichever grid point asks first
            seed = np.random.SeedSequence([0 if self.random_state is None else int(self.random_state), i])
            self._boot[i] = _bootstrap_mse(self.Xc, self.yc, self.subsets[i], np.random.default_rng(seed))
        return self._boot[i]

    def _average(self, mask, d):
        coef = np.zeros(d)
        chosen = np.flatnonzero(mask)
        for i in chosen:
            coef[list(self.subsets[i])] += self.coefs[i] / len(chosen)
        return np.abs(coef) * self.sd

    def fit(self, alpha_stab, alpha_pred, d):
        log_p, mse = self.log_p, self.mse
        stable = log_p >= np.log(alpha_stab)
        if not stable.any():  # the R package: the top 10 % of sets by p-value
            cut = np.sort(log_p)[::-1][int(np.ceil(0.1 * len(log_p))) - 1]
            stable = log_p >= cut
        best_stable = int(np.flatnonzero(stable)[np.argmin(mse[stable])])
        predictive = mse <= np.quantile(self._bootstrap(best_stable), 1 - alpha_pred)
        blanket = stable & predictive
        if not blanket.any():
            blanket = np.zeros_like(stable)
            blanket[best_stable] = True
        best_all = int(np.argmin(mse))
        pred_all = mse <= np.quantile(self._bootstrap(best_all), 1 - alpha_pred)
        if not pred_all.any():
            pred_all[best_all] = True
        importance = self._average(blanket, d)
        importance_pred = self._average(pred_all, d)
        # outside the blanket: ordered by SR(pred)'s importance, below every blanket member
        scores = np.where(importance > 0, importance, -1.0 / (1.0 + importance_pred))
        scores[[j for j in range(d) if j not in self.columns]] = -2.0  # screened out
        return oodfs.GridFit(
            scores,
            {
                "stable_sets": float(stable.sum()),
                "blanket_sets": float(blanket.sum()),
                "blanket_size": float((importance > 0).sum()),
            },
        )


class Stabilized(oodfs.Selector):
    """Stabilized regression: averages the stable and predictive subsets' fits; needs environment labels.

    ``scores_``: the stable blanket's |averaged coefficient| x sd; features outside the blanket
    score below 0, ordered by SR(pred)'s importance (docs/PROTOCOL.md, section 13). ``blanket_``:
    the stable blanket (features with a positive score).
    """

    name = "stabilized"
    uses_groups: ClassVar[bool] = True
    supports_sample_weight: ClassVar[bool] = False
    #: every environment needs rows for Chow's test against the others (n - n_e > p)
    min_group_rows: ClassVar[int] = 2
    grid: ClassVar[dict] = {"alpha_stab": [0.01, 0.05, 0.1], "alpha_pred": [0.01, 0.05, 0.1]}

    def __init__(
        self, alpha_stab=0.05, alpha_pred=0.05, screen="none", screen_size=10, k=5, random_state=None
    ):
        self.alpha_stab = alpha_stab
        self.alpha_pred = alpha_pred
        self.screen = screen
        self.screen_size = screen_size
        self.k = k
        self.random_state = random_state

    @classmethod
    def own_support(cls, scores, diagnostics, params):
        """The stable blanket: the features scoring above 0 (docs/PROTOCOL.md section 10, "The k grid")."""
        return np.asarray(scores) > 0

    def _fit_scores(self, X, y, sample_weight, groups):
        refuse_weights(sample_weight, "stabilized")
        fit = self._fit_grid(
            X, y, [self.get_params()], sample_weight=None, random_state=self.random_state, groups=groups
        )[0]
        self.blanket_ = np.flatnonzero(fit.values > 0).tolist()
        return fit.values

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, groups):
        refuse_weights(sample_weight, "stabilized")
        d = X.shape[1]
        for p in points:
            _check(p, d)
        searches = {}
        out = []
        for p in points:
            key = (p["screen"], int(p["screen_size"]) if p["screen"] != "none" else None)
            if key not in searches:
                columns = (
                    list(range(d)) if key[0] == "none" or d <= key[1] else correlation_screen(X, y, key[1])
                )
                searches[key] = StabilizedSearch(X, y, groups, columns, random_state)
            out.append(searches[key].fit(float(p["alpha_stab"]), float(p["alpha_pred"]), d))
        return out
