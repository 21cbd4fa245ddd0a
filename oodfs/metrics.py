"""Evaluation metrics of the paper -- pure functions.

Ties in the scores are handled without favouring any column: a tied feature gets the average
of the ranks its group spans (rank average), and F1@k is the expectation over the orders of
the tied group that straddles the top-k boundary.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from .validation import OodfsError


def _finite_vector(values, what: str) -> np.ndarray:
    values = np.asarray(values, dtype=float).ravel()
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise OodfsError(f"{what} must be a non-empty vector of finite numbers")
    return values


def _check_scores(scores, true_set) -> tuple[np.ndarray, np.ndarray]:
    scores = _finite_vector(scores, "scores")
    true = np.asarray(sorted(set(int(j) for j in true_set)), dtype=int)
    if true.size == 0:
        raise OodfsError("the true set is empty")
    if true.min() < 0 or true.max() >= scores.size:
        raise OodfsError(f"true set {true.tolist()} has an index outside 0..{scores.size - 1}")
    return scores, true


def feature_ranks(scores) -> np.ndarray:
    """1-based rank of each feature (1 = highest score); ties get their average rank."""
    return rankdata(-_finite_vector(scores, "scores"), method="average")


def rank_average(scores, true_set) -> float:
    """Mean rank of the true features (best = (|S| + 1) / 2 ... paper: 3.0 for |S| = 5 of 10)."""
    scores, true = _check_scores(scores, true_set)
    return float(feature_ranks(scores)[true].mean())


def f1_at_k(scores, true_set, k: int) -> float:
    """F1 of the top-k features against the true set; expected value over tied orders."""
    scores, true = _check_scores(scores, true_set)
    if not 1 <= k <= scores.size:
        raise OodfsError(f"k must be between 1 and {scores.size}, got {k}")
    # probability that each feature is in the top k, with ties filled at random
    above = np.array([(scores > s).sum() for s in scores])
    tied = np.array([(scores == s).sum() for s in scores])
    p_in = np.clip((k - above) / tied, 0.0, 1.0)
    expected_tp = p_in[true].sum()
    return float(2 * expected_tp / (k + true.size))  # precision = TP/k, recall = TP/|S|


def rmse(y_true, y_pred) -> float:
    """Root mean squared error (the square root of the MSE)."""
    y_true = np.asarray(y_true, dtype=float)
    y_pred = np.asarray(y_pred, dtype=float)
    if y_true.shape != y_pred.shape:
        raise OodfsError(f"y_true and y_pred have different shapes {y_true.shape} vs {y_pred.shape}")
    err = _finite_vector(y_true, "y_true") - _finite_vector(y_pred, "y_pred")
    return float(np.sqrt(np.mean(err**2)))


def rmse_summary(rmses) -> tuple[float, float]:
    """Mean and standard deviation (population, ddof = 0) of the RMSEs over test environments."""
    rmses = np.asarray(rmses, dtype=float)
    if rmses.size == 0:
        raise OodfsError("no test environments to summarise")
    rmses = _finite_vector(rmses, "RMSEs")
    return float(rmses.mean()), float(rmses.std(ddof=0))
