"""The logistic downstream model scores its folds with its own ``neg_log_loss`` (no re-validation
per call): the same float as scikit-learn's scorer, so the same C is chosen and every prediction
is the same, bit for bit (the binary references' replay checks it on every shipped suite)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import get_scorer

from oodfs_plugins.downstream import Logistic, _SklearnModel, neg_log_loss_binary


def _binary(rng, n, d, scale=1.0, strength=1.0):
    X = rng.normal(size=(n, d)) * scale
    logit = np.clip(X @ rng.normal(size=d) * strength, -500, 500)
    return X, (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(float)


@pytest.mark.parametrize("one_d", [False, True], ids=["coef-2d", "coef-1d"])
def test_the_scorer_is_scikit_learns_neg_log_loss_bit_for_bit(one_d):
    """Over tables of any scale and separation (probabilities clipped at machine epsilon
    included) and both coefficient shapes (LogisticRegressionCV's folds set a 1-D one)."""
    sklearn_scorer = get_scorer("neg_log_loss")
    rng = np.random.default_rng(7)
    compared = 0
    for scale, strength in [(0.01, 1), (1, 0.1), (1, 1), (30, 1), (1, 50), (30, 50)] * 8:
        X, y = _binary(rng, int(rng.integers(20, 300)), int(rng.integers(1, 8)), scale, strength)
        if y.min() == y.max():
            continue
        model = LogisticRegression(C=float(rng.choice([1e-3, 1.0, 1e3]))).fit(X, y)
        if one_d:
            model.coef_, model.intercept_ = model.coef_[0], model.intercept_[0]
        ours, theirs = neg_log_loss_binary(model, X, y), sklearn_scorer(model, X, y)
        assert ours == theirs, (scale, strength, ours, theirs)
        compared += 1
    assert compared >= 40


def test_every_prediction_is_the_one_scikit_learns_scorer_gives():
    """The whole model: 12 subsets of a 600 x 8 table, predictions on two targets equal bit for
    bit to the model scored by scikit-learn's scorer (the way before), and the declared identity
    is unchanged ("neg_log_loss")."""

    class SklearnScorer(Logistic):
        def estimator(self, seed):
            return _SklearnModel.estimator(self, seed)

    rng = np.random.default_rng(11)
    X, y = _binary(rng, 600, 8)
    T = rng.normal(size=(200, 8))
    subsets = [tuple(sorted(rng.choice(8, size=k, replace=False))) for k in rng.integers(1, 9, size=12)]
    ours = Logistic(task="binary").predict_subsets(X, y, subsets, 5, [T, X])
    theirs = SklearnScorer(task="binary").predict_subsets(X, y, subsets, 5, [T, X])
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    assert Logistic(task="binary").identity()["arguments"]["scoring"] == "neg_log_loss"
