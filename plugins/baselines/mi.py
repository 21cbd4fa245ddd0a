"""Mutual-information baseline (scikit-learn ``mutual_info_regression``, KSG estimator; on a binary
target ``mutual_info_classif``)."""
from __future__ import annotations

from numbers import Integral
from typing import ClassVar

import numpy as np
from scipy.special import digamma
from sklearn.feature_selection import mutual_info_classif, mutual_info_regression
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import scale
from sklearn.utils import check_random_state

import oodfs



class MutualInfo(oodfs.Selector):
    """Mutual information I(X_j; y) per feature (scikit-learn mutual_info_regression, k-NN estimator).

    Scores are scikit-learn's ``mutual_info_regression(X, y, n_neighbors=n_neighbors,
    random_state=random_state)`` (Kraskov et al.'s estimator; features treated as continuous;
    ``random_state`` seeds the 1e-10 jitter scikit-learn adds to break ties).

    Default ``n_neighbors = 3``: scikit-learn's default and Kraskov et al.'s recommendation
    (small k = low bias), and the first value of the paper's grid.

    **Sample weights are not supported** (the estimator counts neighbours; it has no weighted
    form): ``supports_sample_weight = False`` and ``fit`` raises :class:`oodfs.OodfsError` for
    non-uniform ``sample_weight`` rather than silently returning unweighted scores (uniform
    weights are the unweighted problem and are accepted).

    ``fit_grid`` shares work across ``n_neighbors``: per feature one k-NN query in the joint
    (x_j, y) space with the largest k gives the k-th neighbour distance for every smaller k
    too, and the marginal neighbour counts (k-d tree radius queries in scikit-learn) are
    binary searches in the sorted feature / target, which give the same counts. The jitter is
    drawn exactly as scikit-learn draws it, so the results are identical to separate
    ``mutual_info_regression`` calls with the same ``random_state`` (tested).

    On a binary target: ``mutual_info_classif(X, y, discrete_features=False, n_neighbors=...)``
    (Ross's k-NN estimator for a continuous feature and a discrete target), the same grid; one
    call per point.
    """

    name = "mi"
    grid: ClassVar[dict] = {"n_neighbors": [3, 5, 10, 20]}
    supports_sample_weight: ClassVar[bool] = False
    task_types: ClassVar[tuple[str, ...]] = ("regression", "binary")

    def __init__(self, n_neighbors: int = 3, k: int = 5, random_state=None):
        self.n_neighbors = n_neighbors
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight):
        _check_weights(sample_weight)
        _check_neighbors(self.n_neighbors, X.shape[0])
        if self.task_ == "binary":
            return _mi_classif(X, y, int(self.n_neighbors), self.random_state)
        return mutual_info_regression(
            X, y, discrete_features=False, n_neighbors=int(self.n_neighbors), random_state=self.random_state
        )

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, task="regression"):
        """Scores for every ``n_neighbors`` in ``points``, sharing the neighbour searches."""
        _check_weights(sample_weight)
        ks = sorted({int(p["n_neighbors"]) for p in points})
        for k in ks:
            _check_neighbors(k, X.shape[0])
        if task == "binary":
            by_k = {k: _mi_classif(X, y, k, random_state) for k in ks}
            return [by_k[int(p["n_neighbors"])] for p in points]
        by_k = mutual_info_many_k(X, y, ks, random_state)
        return [by_k[int(p["n_neighbors"])] for p in points]


def mutual_info_many_k(X: np.ndarray, y: np.ndarray, ks: list[int], random_state=None) -> dict[int, np.ndarray]:
    """``mutual_info_regression(X, y, n_neighbors=k, random_state=random_state)`` for every k in
    ``ks`` at once (continuous features). Same preprocessing, jitter and estimator as
    scikit-learn's ``_estimate_mi`` / ``_compute_mi_cc``; the joint-space k-NN search runs once
    with max(ks), and the marginal counts come from :func:`count_within`."""
    n, d = X.shape
    rng = check_random_state(random_state)
    X = scale(X.astype(np.float64, copy=True), with_mean=False, copy=False)
    means = np.maximum(1, np.mean(np.abs(X), axis=0))
    X += 1e-10 * means * rng.standard_normal(size=(n, d))
    y = scale(y.astype(np.float64, copy=True), with_mean=False)
    y += 1e-10 * np.maximum(1, np.mean(np.abs(y))) * rng.standard_normal(size=n)

    kmax = max(ks)
    y_sorted = np.sort(y)
    out = {k: np.empty(d) for k in ks}
    for j in range(d):
        x = X[:, j]
        nn = NearestNeighbors(metric="chebyshev", n_neighbors=kmax).fit(np.column_stack((x, y)))
        dist = nn.kneighbors()[0]
        x_sorted = np.sort(x)
        for k in ks:
            radius = np.nextafter(dist[:, k - 1], 0)
            nx = count_within(x_sorted, x, radius) - 1.0
            ny = count_within(y_sorted, y, radius) - 1.0
            mi = digamma(n) + digamma(k) - np.mean(digamma(nx + 1)) - np.mean(digamma(ny + 1))
            out[k][j] = max(0, mi)
    return out


def _mi_classif(X, y, k: int, random_state) -> np.ndarray:
    # a class with k or fewer rows: scikit-learn shrinks k for it (Ross's estimator needs k < n_c)
    return mutual_info_classif(X, y, discrete_features=False, n_neighbors=k, random_state=random_state)


def count_within(v_sorted: np.ndarray, v: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """For every i, #{j : |v_j - v_i| <= radius_i} (``v_sorted`` = sorted ``v``), the point
    itself included -- what scikit-learn's ``KDTree(v, metric="chebyshev").query_radius(v,
    radius, count_only=True)`` returns for 1-D data.

    ``np.searchsorted`` on ``v_i -+ radius_i`` finds each boundary up to rounding; a
    vectorised correction step then moves it to where the tree's own test flips. That test is
    the floating-point difference ``|v_j - v_i| <= radius_i`` (rounding is monotone and
    symmetric, so it is monotone along the sorted values), so the counts are exactly the
    tree's, not an approximation.
    """
    n = v_sorted.size

    def first_true(pred, start):
        # smallest index m in [0, n] where the monotone (False..True) predicate holds
        m = start.astype(np.intp)
        while True:  # step left while the previous index already satisfies it
            back = (m > 0) & pred(np.maximum(m - 1, 0))
            if not back.any():
                break
            m = m - back
        while True:  # step right while the current index does not satisfy it
            fwd = (m < n) & ~pred(np.minimum(m, n - 1))
            if not fwd.any():
                return m
            m = m + fwd

    # lower: first v_j with v_i - v_j <= r_i; upper: first v_j with v_j - v_i > r_i
    lower = first_true(lambda m: v - v_sorted[m] <= radius, np.searchsorted(v_sorted, v - radius, "left"))
    upper = first_true(lambda m: v_sorted[m] - v > radius, np.searchsorted(v_sorted, v + radius, "right"))
    return (upper - lower).astype(np.float64)


def _check_weights(sample_weight) -> None:
    if sample_weight is not None and not np.all(sample_weight == sample_weight[0]):
        raise oodfs.OodfsError(
            "selector 'mi' (mutual_info_regression) cannot use sample weights; fit it without "
            "sample_weight (MI.supports_sample_weight is False)"
        )


def _check_neighbors(k, n: int) -> None:
    if not isinstance(k, Integral) or isinstance(k, bool) or k < 1:
        raise oodfs.OodfsError(f"mi n_neighbors must be a positive integer, got {k!r}")
    if k >= n:
        raise oodfs.OodfsError(f"mi with n_neighbors={k} needs more than {k} samples, got {n}")
