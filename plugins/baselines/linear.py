"""Linear baselines: Pearson correlation, OLS and LASSO (scores = absolute values).

On a binary target (0.0 / 1.0) each takes its classification form (docs/PROTOCOL.md, "Binary
targets"): correlation is the point-biserial correlation (Pearson on 0/1, the same formula),
OLS unpenalised logistic regression, LASSO L1-penalised logistic regression.
"""
from __future__ import annotations

import warnings
from typing import ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LogisticRegression, lasso_path

import oodfs

from oodfs.contract.wls import weighted_logistic_regression
from oodfs.numeric import constant_columns, sample_probabilities, weighted_center, weighted_least_squares


class Correlation(oodfs.Selector):
    """Absolute Pearson correlation |corr(X_j, y)| of each feature with the target.

    With ``sample_weight`` the weighted Pearson correlation is used (weighted means,
    variances and covariance; integer weights give the same result as repeating rows).
    A constant feature (or a constant target) has no correlation and scores 0. No grid.
    On a binary target this is the point-biserial correlation (Pearson's formula on 0/1).
    """

    name = "correlation"
    grid: ClassVar[dict] = {}
    task_types: ClassVar[tuple[str, ...]] = ("regression", "binary")

    def __init__(self, k: int = 5, random_state=None):
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight):
        p = sample_probabilities(sample_weight, X.shape[0])
        Xc, yc = weighted_center(X, y, p)
        sx = np.sqrt(p @ (Xc * Xc))
        sy = np.sqrt(p @ (yc * yc))
        flat = constant_columns(Xc, X, p)
        if constant_columns(yc[:, None], y[:, None], p)[0]:
            return np.zeros(X.shape[1])
        cov = (p * yc) @ Xc
        with np.errstate(divide="ignore", invalid="ignore"):
            corr = np.abs(cov) / (sx * sy)
        corr[flat] = 0.0
        return np.minimum(corr, 1.0)  # rounding can push |corr| a hair above 1


class OLS(oodfs.Selector):
    """Absolute ordinary least-squares coefficients |beta_j| (with intercept, raw feature scale).

    With ``sample_weight`` this is weighted least squares, the same estimator that scores the
    independence-driven weighters (DWR, SRDO) -- ``ols`` is their unweighted baseline.
    Coefficients are on the raw feature scale (as in the paper; the benchmark's features share
    one scale). Constant features score 0; rank-deficient designs use the minimum-norm
    solution. No grid.

    On a binary target: unpenalised logistic regression with intercept (the fit DWR and SRDO
    make on their weights, :func:`oodfs.contract.wls.weighted_logistic_regression`), scores =
    |coefficients| on standardised features.
    """

    name = "ols"
    grid: ClassVar[dict] = {}
    task_types: ClassVar[tuple[str, ...]] = ("regression", "binary")

    def __init__(self, k: int = 5, random_state=None):
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight):
        if self.task_ == "binary":
            return np.abs(weighted_logistic_regression(X, y, sample_weight))
        return np.abs(weighted_least_squares(X, y, sample_weight, strict=False))


class LassoSelector(oodfs.Selector):
    """Absolute LASSO coefficients |beta_j| (scikit-learn Lasso, with intercept, raw feature scale).

    Objective (scikit-learn's): ``1/(2n) * sum_i w_i (y_i - b0 - x_i.beta)^2 + alpha * ||beta||_1``
    with the sample weights rescaled to sum n.

    *No standardisation*: the features are used on their own scale, as the paper does (it
    calls scikit-learn's ``Lasso`` with its defaults) and as every other coefficient-based
    score here (OLS, DWR, SRDO) does; the benchmark's features all have about unit variance,
    so the penalty treats them alike. Standardise beforehand for data with mixed units.

    Default ``alpha = 0.01``: scikit-learn's default (1.0) is not in the paper's grid. On
    unit-variance features LASSO shrinks each coefficient by about alpha: 0.0003 and 0.001 are
    practically OLS, 0.1 takes 30% off the smallest true effect of the benchmark (1/3); 0.01
    is the middle ground (zeroes pure-noise coefficients of a few hundredths, barely biases
    the true ones).

    The solver runs to a tight tolerance (``tol = 1e-8`` relative to ||y||^2, coordinate
    descent on the Gram matrix, cheap for d ~ 10) so that scores do not depend on solver
    noise. ``fit_grid`` computes all alphas in one regularisation path (``lasso_path``, warm
    starts from the largest alpha down), the same objective and data preprocessing as
    separate ``Lasso`` fits; the two differ only within the solver tolerance (tested).

    On a binary target: L1-penalised logistic regression with an unpenalised intercept,
    objective ``1/n * sum_i w_i logloss_i + alpha * ||beta||_1`` (weights rescaled to sum n),
    i.e. scikit-learn's ``LogisticRegression(l1_ratio=1, C=1 / (alpha * n))``: the same alpha
    grid, the mean log-loss taking the place of half the mean squared error; raw feature scale
    as above; SAGA solver to ``tol = 1e-8`` (seeded; the optimum does not depend on the seed).
    """

    name = "lasso"
    grid: ClassVar[dict] = {"alpha": [0.0003, 0.001, 0.01, 0.1]}
    task_types: ClassVar[tuple[str, ...]] = ("regression", "binary")

    cd_tol: ClassVar[float] = 1e-8
    cd_max_iter: ClassVar[int] = 100_000

    def __init__(self, alpha: float = 0.01, k: int = 5, random_state=None):
        self.alpha = alpha
        self.k = k
        self.random_state = random_state

    @classmethod
    def own_support(cls, scores, diagnostics, params):
        """The nonzero coefficients at the point's alpha (docs/PROTOCOL.md section 10, "The k grid")."""
        return np.asarray(scores) > 0

    def _fit_scores(self, X, y, sample_weight):
        _check_alpha(self.alpha)
        if self.task_ == "binary":
            return _l1_logistic(X, y, sample_weight, self.alpha, self.cd_tol)
        model = Lasso(alpha=self.alpha, precompute=True, tol=self.cd_tol, max_iter=self.cd_max_iter)
        with warnings.catch_warnings():
            # a constant target makes the Gram-based solver warn; the scores (0) are still right
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, y, sample_weight=sample_weight)
        return np.abs(model.coef_)

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, task="regression"):
        """Scores for every alpha in ``points`` from one regularisation path (binary: one fit each)."""
        alphas = [float(p["alpha"]) for p in points]
        for a in alphas:
            _check_alpha(a)
        if task == "binary":
            return [_l1_logistic(X, y, sample_weight, a, cls.cd_tol) for a in alphas]
        n = X.shape[0]
        # the preprocessing Lasso.fit applies: weights rescaled to sum n, weighted centring,
        # rows multiplied by sqrt(weight)
        p = sample_probabilities(sample_weight, n)
        Xc, yc = weighted_center(X, y, p)
        if sample_weight is not None:
            sw = np.sqrt(p * n)
            Xc, yc = Xc * sw[:, None], yc * sw
        unique = np.unique(alphas)[::-1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            path_alphas, coefs, _ = lasso_path(
                np.asfortranarray(Xc), yc, alphas=unique, precompute=True, tol=cls.cd_tol, max_iter=cls.cd_max_iter
            )
        by_alpha = {float(a): np.abs(coefs[:, i]) for i, a in enumerate(path_alphas)}
        return [by_alpha[a] for a in alphas]


def _l1_logistic(X, y, sample_weight, alpha: float, tol: float) -> np.ndarray:
    """|coefficients| of L1 logistic regression: mean weighted log-loss + alpha * ||beta||_1."""
    n = X.shape[0]
    model = LogisticRegression(C=1.0 / (alpha * n), l1_ratio=1.0, solver="saga", tol=tol, max_iter=100_000,
                               random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y, sample_weight=sample_probabilities(sample_weight, n) * n)
    return np.abs(model.coef_[0])


def _check_alpha(alpha) -> None:
    if not (isinstance(alpha, (int, float, np.floating, np.integer)) and np.isfinite(alpha) and alpha > 0):
        raise oodfs.OodfsError(f"lasso alpha must be a positive number, got {alpha!r}")
