"""Invariant causal prediction (Peters, Bühlmann and Meinshausen, JRSS-B 2016), linear, with the
paper's approximate test (its method II, the test the IRM reference code also runs).

For every candidate set S the pooled least-squares fit of y on X_S is tested for invariance:
in each environment e the residuals of e are compared with the residuals of all other rows by a
two-sided Welch t-test (means) and a two-sided F-test (variances); the set's p-value is
``E * min_e 2 * min(p_mean, p_var)`` (Bonferroni over the two tests and the E environments).
S is accepted at level alpha when that p-value exceeds alpha; the selection is the intersection
of the accepted sets.

Scores (docs/PROTOCOL.md, "Multi-environment methods"): feature k is in the intersection at
level alpha iff every set without k is rejected, i.e. iff p_k = max_{S not containing k} p(S)
<= alpha. ``score_k = -log10 p_k`` therefore ranks every feature, and the features scoring at
least -log10 alpha are exactly the intersection at alpha. Everything is computed from per-
environment sufficient statistics (X'X, X'y, y'y, sums), so the 2^d - 1 regressions cost
O(2^d E d^3), independent of n, and in log space so that p-values far below 1e-300 still rank.

A binary target (0/1) takes the form of the authors' R package (InvariantCausalPrediction 0.8,
its classification path; docs/PROTOCOL.md section 15): the pooled logistic regression of y on
X_S with an intercept (the package's IRLS: at most 10 steps, relative deviance change 1e-6), its
response residuals y - p_hat compared in each environment with all other rows by a two-sided
Welch t-test only, and the set's p-value ``(E - 1) * min_e p_e``. These fits need the rows, so the
binary search costs O(2^d n d^2).
"""

from __future__ import annotations

import itertools
from typing import ClassVar

import numpy as np
from scipy import stats
from sklearn.linear_model import lars_path

import oodfs

from ._weights import refuse_weights

#: the exact search fits 2^d - 1 subsets; beyond this d a screening step is required
MAX_EXACT = 12
#: floor of log p-values (natural log): keeps scores finite when a test statistic is enormous
LOG_P_FLOOR = -1e6
SCREENS = ("none", "lasso")


def _env_statistics(X, y, groups, n_envs, center):
    """Per environment: n, sum x, sum y, X'X, X'y, y'y (centred on pooled means when the model
    has an intercept, which absorbs the shift; it keeps the sums of squares well conditioned)."""
    if center:
        X = X - X.mean(axis=0)
        y = y - y.mean()
    stats_ = []
    for e in range(n_envs):
        m = groups == e
        Xe, ye = X[m], y[m]
        stats_.append((m.sum(), Xe.sum(0), ye.sum(), Xe.T @ Xe, Xe.T @ ye, ye @ ye))
    return stats_


def _log_pvalue_mean_var(n1, m1, v1, n2, m2, v2):
    """log of 2 * min(p of the two-sided Welch t-test, p of the two-sided F-test) for residuals
    in one environment (1) against all other rows (2); arrays, vectorised."""
    with np.errstate(divide="ignore", invalid="ignore"):
        se2 = v1 / n1 + v2 / n2
        t = np.where(se2 > 0, np.abs(m1 - m2) / np.sqrt(se2), np.where(m1 == m2, 0.0, np.inf))
        df = np.where(se2 > 0, se2**2 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1)), 1.0)
        log_p_mean = np.log(2.0) + stats.t.logsf(t, df)
        ok = (v1 > 0) & (v2 > 0)
        ratio = np.where(ok, v1 / np.where(v2 > 0, v2, 1.0), 1.0)
        one_sided = np.minimum(stats.f.logsf(ratio, n1 - 1, n2 - 1), stats.f.logcdf(ratio, n1 - 1, n2 - 1))
        log_p_var = np.where(ok, np.log(2.0) + one_sided, np.where(v1 == v2, 0.0, -np.inf))
    return np.log(2.0) + np.minimum(log_p_mean, log_p_var)


def subset_log_pvalues(X, y, groups, n_envs, subsets, fit_intercept=True):
    """Natural-log p-value of the invariance test of every subset (a tuple of column indices;
    the empty tuple tests y's own distribution), capped at 0 (p <= 1)."""
    env = _env_statistics(X, y, groups, n_envs, fit_intercept)
    tot = tuple(sum(s[i] for s in env) for i in range(6))
    offset = 0
    if fit_intercept:  # a constant column: augment every statistic with it

        def aug(ne, sx, sy, xx, xy, yy):
            xx2 = np.block([[np.array([[ne]]), sx[None, :]], [sx[:, None], xx]])
            return ne, np.concatenate([[ne], sx]), sy, xx2, np.concatenate([[sy], xy]), yy

        env = [aug(*s) for s in env]
        tot = aug(*tot)
        offset = 1
    n = tot[0]
    ne = np.array([s[0] for s in env], dtype=float)
    # per subset and environment: residual sum and sum of squares, in and out of the environment
    rsum = np.empty((len(subsets), n_envs))
    rss = np.empty((len(subsets), n_envs))
    for i, subset in enumerate(subsets):
        cols = ([0] if fit_intercept else []) + [c + offset for c in subset]
        if not cols:
            rsum[i] = [s[2] for s in env]
            rss[i] = [s[5] for s in env]
            continue
        beta = np.linalg.lstsq(tot[3][np.ix_(cols, cols)], tot[4][cols], rcond=None)[0]
        for e, (_, sx, sy, xx, xy, yy) in enumerate(env):
            rsum[i, e] = sy - sx[cols] @ beta
            rss[i, e] = yy - 2 * beta @ xy[cols] + beta @ xx[np.ix_(cols, cols)] @ beta
    no = n - ne
    osum = rsum.sum(axis=1, keepdims=True) - rsum
    oss = rss.sum(axis=1, keepdims=True) - rss
    m1, m2 = rsum / ne, osum / no
    v1 = np.maximum(rss - ne * m1**2, 0.0) / (ne - 1)
    v2 = np.maximum(oss - no * m2**2, 0.0) / (no - 1)
    log_p = _log_pvalue_mean_var(ne, m1, v1, no, m2, v2).min(axis=1) + np.log(n_envs)
    return np.maximum(np.minimum(log_p, 0.0), LOG_P_FLOOR)


#: R's glm.control of the package's binary fits, and the bounds of R's logistic link (family.c)
GLM_MAXIT, GLM_EPSILON, ETA_BOUND = 10, 1e-6, 30.0
EPS = np.finfo(float).eps


def _binomial_deviance(y, mu):
    with np.errstate(divide="ignore", invalid="ignore"):
        return 2.0 * np.sum(
            np.where(y > 0, y * np.log(y / mu), 0.0)
            + np.where(y < 1, (1 - y) * np.log((1 - y) / (1 - mu)), 0.0)
        )


def _logistic_mu(eta):
    """R's binomial()$linkinv and mu.eta: the link clamped at |eta| = 30 as R's C code does."""
    e = np.exp(np.clip(eta, -ETA_BOUND, ETA_BOUND))
    mu = np.where(eta < -ETA_BOUND, EPS / (1 + EPS), np.where(eta > ETA_BOUND, 1 / (1 + EPS), e / (1 + e)))
    dmu = np.where(np.abs(eta) > ETA_BOUND, EPS, e / (1 + e) ** 2)
    return mu, dmu


def glm_logistic(Z, y):
    """Fitted probabilities of R's ``glm(y ~ Z - 1, family = "binomial", control = glm.control(maxit
    = 10, epsilon = 1e-6))``: glm.fit's IRLS from mu = (y + 0.5) / 2, stopped when the deviance
    changes by less than epsilon * (|deviance| + 0.1) or after 10 steps (as the package, which
    uses the probabilities whether or not the fit converged; separable data stop at 10 steps)."""
    mu = (y + 0.5) / 2
    eta = np.log(mu / (1 - mu))
    dev_old = _binomial_deviance(y, mu)
    for _ in range(GLM_MAXIT):
        _, dmu = _logistic_mu(eta)
        var = mu * (1 - mu)
        z = eta + (y - mu) / dmu
        w = np.sqrt(dmu**2 / var)
        beta = np.linalg.lstsq(Z * w[:, None], z * w, rcond=None)[0]
        eta = Z @ beta
        mu, _ = _logistic_mu(eta)
        dev = _binomial_deviance(y, mu)
        if abs(dev - dev_old) / (abs(dev) + 0.1) < GLM_EPSILON:
            break
        dev_old = dev
    return mu


def _log_pvalue_welch(n1, m1, v1, n2, m2, v2):
    """log p of the two-sided Welch t-test (R's t.test) of two samples' means; arrays."""
    with np.errstate(divide="ignore", invalid="ignore"):
        se2 = v1 / n1 + v2 / n2
        t = np.where(se2 > 0, np.abs(m1 - m2) / np.sqrt(se2), np.where(m1 == m2, 0.0, np.inf))
        df = np.where(se2 > 0, se2**2 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1)), 1.0)
        return np.log(2.0) + stats.t.logsf(t, df)


def subset_log_pvalues_binary(X, y, groups, n_envs, subsets, fit_intercept=True):
    """Natural-log p-value of the package's binary invariance test of every subset (a tuple of
    column indices; the empty tuple with an intercept tests the base rate's invariance): pooled
    logistic fit (:func:`glm_logistic`), per environment a Welch t-test of the residuals y - p_hat
    against the other rows', ``(E - 1) * min_e p_e`` capped at 1 (the package's Bonferroni factor)."""
    onehot = groups[None, :] == np.arange(n_envs)[:, None]
    ne = onehot.sum(axis=1).astype(float)
    n = float(len(y))
    resid = np.empty((len(subsets), len(y)))
    for i, subset in enumerate(subsets):
        cols = [X[:, list(subset)]] + ([np.ones((len(y), 1))] if fit_intercept else [])
        Z = np.hstack(cols)
        resid[i] = y - (glm_logistic(Z, y) if Z.shape[1] else 0.5)
    rsum, rss = resid @ onehot.T, (resid**2) @ onehot.T
    osum, oss = rsum.sum(1, keepdims=True) - rsum, rss.sum(1, keepdims=True) - rss
    no = n - ne
    m1, m2 = rsum / ne, osum / no
    v1 = np.maximum(rss - ne * m1**2, 0.0) / (ne - 1)
    v2 = np.maximum(oss - no * m2**2, 0.0) / (no - 1)
    log_p = _log_pvalue_welch(ne, m1, v1, no, m2, v2).min(axis=1) + np.log(max(n_envs - 1, 1))
    return np.maximum(np.minimum(log_p, 0.0), LOG_P_FLOOR)


def icp_scores(X, y, groups, n_envs, columns, fit_intercept=True, include_empty=True, binary=False):
    """(-log10 p_k for each of ``columns``, the subsets, their log p-values); ``binary``: the
    package's test for a 0/1 target (:func:`subset_log_pvalues_binary`)."""
    subsets = [
        s
        for r in range(0 if include_empty else 1, len(columns) + 1)
        for s in itertools.combinations(columns, r)
    ]
    test = subset_log_pvalues_binary if binary else subset_log_pvalues
    logp = test(X, y, groups, n_envs, subsets, fit_intercept)
    scores = []
    for k in columns:
        without = [lp for s, lp in zip(subsets, logp) if k not in s]
        scores.append(0.0 - max(without) / np.log(10) if without else 0.0)
    return np.array(scores), subsets, logp


#: points of the L1-logistic screening path of a binary target, from the smallest C with a feature
SCREEN_PATH = 50


def _l1_logistic_path(Xs, y):
    """Coefficients along the L1-logistic path (features x points), as glmnet's binomial path in
    the package's screen: C from scikit-learn's l1_min_c up 10^4-fold, saga, warm starts."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import l1_min_c

    cs = l1_min_c(Xs, y, loss="log") * np.logspace(0, 4, SCREEN_PATH)
    model = LogisticRegression(l1_ratio=1.0, solver="saga", tol=1e-6, max_iter=2000, warm_start=True)
    path = []
    for c in cs:
        path.append(model.set_params(C=c).fit(Xs, y).coef_[0].copy())
    return np.array(path).T


def lasso_screen(X, y, size, binary=False):
    """The first ``size`` features to enter the pooled LASSO path (standardised columns); for a
    binary target the L1-logistic path."""
    Xs = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    if binary:
        coefs = _l1_logistic_path(Xs, y)
    else:
        _, _, coefs = lars_path(Xs, y - y.mean(), method="lasso")
    order = []
    for step in range(coefs.shape[1]):
        for j in np.flatnonzero(coefs[:, step]):
            if j not in order:
                order.append(int(j))
    order += [j for j in range(X.shape[1]) if j not in order]
    return sorted(order[:size])


class ICP(oodfs.Selector):
    """Invariant causal prediction: exact subset search with the paper's tests; needs environment labels.

    ``scores_``: -log10 of the largest p-value among sets without the feature; ``selected_``: the
    accepted sets' intersection at level ``alpha``; ``accepted_sets_``: those sets. Beyond 12
    features ``screen="lasso"`` keeps the first ``screen_size`` features of the pooled LASSO path.
    """

    name = "icp"
    uses_groups: ClassVar[bool] = True
    #: a binary target: the authors' R package's logistic form (docs/PROTOCOL.md section 15)
    task_types: ClassVar[tuple[str, ...]] = ("regression", "binary")
    supports_sample_weight: ClassVar[bool] = False
    #: every environment needs 3 rows for the variance test of its residuals
    min_group_rows: ClassVar[int] = 3
    # alpha decides the accepted-set intersection only, not the scores: no grid (docs/PROTOCOL.md)
    grid: ClassVar[dict] = {}

    def __init__(
        self,
        alpha=0.05,
        fit_intercept=True,
        include_empty=True,
        screen="none",
        screen_size=8,
        k=5,
        random_state=None,
    ):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.include_empty = include_empty
        self.screen = screen
        self.screen_size = screen_size
        self.k = k
        self.random_state = random_state

    def _check(self, d):
        if self.screen not in SCREENS:
            raise oodfs.OodfsError(f"icp screen must be one of {', '.join(SCREENS)}, got {self.screen!r}")
        if not (0 < float(self.alpha) < 1):
            raise oodfs.OodfsError(f"icp alpha must be in (0, 1), got {self.alpha!r}")
        if self.screen == "none" and d > MAX_EXACT:
            raise oodfs.OodfsError(
                f"icp: exact subset search is limited to {MAX_EXACT} features, got {d}; "
                "pass screen='lasso' (with screen_size <= 12) or select fewer columns"
            )
        if self.screen == "lasso" and not (
            isinstance(self.screen_size, int) and 1 <= self.screen_size <= MAX_EXACT
        ):
            raise oodfs.OodfsError(
                f"icp screen_size must be an integer from 1 to {MAX_EXACT}, got {self.screen_size!r}"
            )

    @classmethod
    def own_support(cls, scores, diagnostics, params):
        """The accepted sets' intersection at ``alpha``: the features scoring at least -log10 alpha
        (module docstring; docs/PROTOCOL.md section 10, "The k grid")."""
        return np.asarray(scores) >= -np.log10(float(params["alpha"]))

    def _fit_scores(self, X, y, sample_weight, groups):
        refuse_weights(sample_weight, "icp")
        return self._fit_detailed(X, y, groups).values

    def _fit_detailed(self, X, y, groups):
        d = X.shape[1]
        self._check(d)
        n_envs = int(groups.max()) + 1
        binary = getattr(self, "task_", "regression") == "binary"
        columns = (
            list(range(d))
            if self.screen == "none" or d <= self.screen_size
            else lasso_screen(X, y, self.screen_size, binary)
        )
        sc, subsets, logp = icp_scores(
            X, y, groups, n_envs, columns, self.fit_intercept, self.include_empty, binary
        )
        scores = np.full(d, -1.0)  # screened out: below every screened feature (scores >= 0)
        scores[columns] = sc
        accepted = [set(s) for s, lp in zip(subsets, logp) if lp > np.log(self.alpha)]
        inter = set.intersection(*accepted) if accepted else set()
        self.accepted_sets_ = [sorted(s) for s in accepted]
        self.selected_ = sorted(inter)
        return oodfs.GridFit(
            scores,
            {
                "accepted_sets": float(len(accepted)),
                "intersection_size": float(len(inter)),
                "max_log10_p": float(logp.max() / np.log(10)),
            },
        )

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, groups, task="regression"):
        refuse_weights(sample_weight, "icp")
        out = []
        for p in points:
            est = cls(**p, random_state=random_state)
            est.task_ = task
            out.append(est._fit_detailed(X, y, groups))
        return out
