"""The exact CART builder (oodfs_plugins.baselines.cart) against scikit-learn.

gb and rf fit scikit-learn's algorithms with this builder by default. What must hold: the same
trees as scikit-learn whenever no two features give equally good splits (node for node:
feature, threshold, sizes, weights, impurities), and otherwise the same training predictions
and the same impurity decrease per tree -- ties only change which feature gets the credit.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor

import oodfs
from oodfs_plugins.baselines import GradientBoosting, RandomForest, cart
from oodfs_plugins.baselines.trees import _impurity_decrease, _mean_normalised, _normalised


def benchmark_data(n=2000, seed=0, setting="poly"):
    return oodfs.get_environment("synthetic")(setting=setting).sample(2.5, n, seed)


def tie_free_data(n=1500, seed=0):
    """Continuous features with distinct values and a smooth target without outliers: no two
    features split a node equally well in the shallow trees fitted on it (each test asserts
    that the builder found no tie)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, 6))
    y = 2 * X[:, 0] + np.sin(6 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, size=n)
    return X, y, w


def node_table(tree):
    """A tree's nodes in an order that does not depend on the numbering (scikit-learn numbers
    depth first, cart breadth first): (depth, feature, threshold, n_samples) and the weights and
    impurities in that order."""
    depth = tree.compute_node_depths()
    order = np.lexsort((tree.n_node_samples, tree.threshold, tree.feature, depth))
    keys = np.c_[depth, tree.feature, tree.threshold, tree.n_node_samples][order]
    return keys, tree.weighted_n_node_samples[order], tree.impurity[order]


def assert_same_tree(ours: cart.Tree, theirs):
    a, b = node_table(ours), node_table(theirs)
    np.testing.assert_array_equal(a[0], b[0])  # structure, features, thresholds: exactly
    np.testing.assert_allclose(a[1], b[1], rtol=1e-12)
    np.testing.assert_allclose(a[2], b[2], rtol=1e-9, atol=1e-12 * abs(b[2][0]))


# -- single trees --------------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    "params",
    [
        {"max_depth": 5},
        {"max_depth": 6, "min_samples_leaf": 3, "min_samples_split": 10},
        {"max_depth": 6, "min_weight_fraction_leaf": 0.02},
        {"max_depth": 8, "min_impurity_decrease": 1e-3},
    ],
)
def test_tree_equals_sklearn_node_for_node_without_ties(params, weighted):
    X, y, w = tie_free_data()
    w = w if weighted else None
    ours = cart.grow_tree(cart.Presorted(X), y, w, seed=0, **params)
    theirs = DecisionTreeRegressor(random_state=0, **params).fit(X, y, sample_weight=w).tree_
    assert ours.n_tied == 0
    assert_same_tree(ours, theirs)


def test_rows_of_weight_zero_take_no_part():
    X, y, w = tie_free_data()
    w[::3] = 0.0
    ours = cart.grow_tree(cart.Presorted(X), y, w, max_depth=5, seed=0)
    theirs = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y, sample_weight=w)
    assert ours.n_node_samples[0] == np.count_nonzero(w)
    assert_same_tree(ours, theirs.tree_)
    X32 = X.astype(np.float32)
    np.testing.assert_allclose(ours.train_predict(X32), theirs.predict(X), rtol=0, atol=1e-12)


def test_values_within_feature_threshold_are_not_split_apart():
    """scikit-learn does not split between sorted values whose float32 difference is not above
    FEATURE_THRESHOLD = 1e-7 (float32 arithmetic: one ulp near 1.5): neither does cart."""
    a = np.float32(1.5)
    close = [a, np.nextafter(a, np.float32(2)), np.nextafter(np.nextafter(a, np.float32(2)), np.float32(2))]
    X = np.array([[0.5], [1.0], *[[float(v)] for v in close], [3.0]])
    y = np.array([0.0, 0.0, 0.0, 10.0, 10.0, 10.0])  # the best cut would be inside the near-ties
    ours = cart.grow_tree(cart.Presorted(X), y, max_depth=3, seed=0)
    theirs = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y).tree_
    assert_same_tree(ours, theirs)
    assert not np.isin(ours.threshold, [float(close[0]) / 2 + float(close[1]) / 2]).any()


def test_a_depth_d_tree_is_the_first_d_levels_of_a_deeper_one():
    X, y = benchmark_data()
    pre = cart.Presorted(X)
    deep = cart.grow_tree(pre, y, max_depth=10, seed=3)
    assert deep.n_tied > 0  # ties are broken the same way at every depth
    for depth in (4, 7):
        cut = cart.grow_tree(pre, y, max_depth=depth, seed=3)
        keep = deep.depth <= depth
        np.testing.assert_array_equal(cut.feature, np.where(deep.depth[keep] < depth, deep.feature[keep], -2))
        np.testing.assert_array_equal(cut.impurity, deep.impurity[keep])


# -- gradient boosting ---------------------------------------------------------------------------
@pytest.mark.parametrize("depth", [6, 8, 10])
def test_gb_training_predictions_and_tree_decreases_equal_sklearn(depth):
    X, y = benchmark_data(seed=depth)
    ours = cart.GradientBoostingRegressor(n_estimators=25, max_depth=depth, random_state=0).fit(X, y)
    theirs = GradientBoostingRegressor(n_estimators=25, max_depth=depth, random_state=0).fit(X, y)
    want = theirs.predict(X)
    np.testing.assert_allclose(ours.train_raw_prediction_, want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.predict(X), want, rtol=0, atol=1e-12)
    for (a,), (b,) in zip(ours.estimators_, theirs.estimators_):
        assert a.tree_.node_count == b.tree_.node_count
        np.testing.assert_allclose(
            _impurity_decrease(a.tree_, 10).sum(),
            _impurity_decrease(b.tree_, 10).sum(),
            rtol=1e-12,
            atol=1e-15,
        )
    assert sum(a.tree_.n_tied for (a,) in ours.estimators_) > 0  # the benchmark's data do have ties


@pytest.mark.parametrize("weighted", [False, True])
def test_gb_importances_equal_sklearn_without_ties(weighted):
    X, y, w = tie_free_data()
    w = w if weighted else None
    ours = cart.GradientBoostingRegressor(n_estimators=10, max_depth=3, random_state=0).fit(
        X, y, sample_weight=w
    )
    theirs = GradientBoostingRegressor(n_estimators=10, max_depth=3, random_state=0).fit(
        X, y, sample_weight=w
    )
    assert all(a.tree_.n_tied == 0 for (a,) in ours.estimators_)
    for (a,), (b,) in zip(ours.estimators_, theirs.estimators_):
        assert_same_tree(a.tree_, b.tree_)
    got = _mean_normalised([_impurity_decrease(a.tree_, X.shape[1]) for (a,) in ours.estimators_], X.shape[1])
    np.testing.assert_allclose(got, theirs.feature_importances_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-12)


def test_gb_with_sample_weights_equals_sklearn():
    X, y = benchmark_data(seed=5)
    w = np.random.default_rng(0).uniform(0.0, 3.0, size=len(y))
    w[:50] = 0.0  # rows that take no part in the trees
    ours = cart.GradientBoostingRegressor(n_estimators=20, max_depth=8, random_state=1).fit(
        X, y, sample_weight=w
    )
    theirs = GradientBoostingRegressor(n_estimators=20, max_depth=8, random_state=1).fit(
        X, y, sample_weight=w
    )
    # rows of weight 0 go through the thresholds, which differ where tied features split the
    # other rows alike (test_rows_of_weight_zero_take_no_part checks them without ties)
    used = w > 0
    np.testing.assert_allclose(ours.train_raw_prediction_[used], theirs.predict(X)[used], rtol=0, atol=1e-12)
    for (a,), (b,) in zip(ours.estimators_, theirs.estimators_):
        np.testing.assert_allclose(
            _impurity_decrease(a.tree_, 10).sum(),
            _impurity_decrease(b.tree_, 10).sum(),
            rtol=1e-12,
            atol=1e-15,
        )


# -- random forest -------------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_rf_same_bootstrap_and_tree_decreases_at_every_depth_cut(weighted):
    X, y = benchmark_data(seed=7, setting="mlp")
    w = np.random.default_rng(1).uniform(0.2, 2.0, size=len(y)) if weighted else None
    ours = cart.RandomForestRegressor(n_estimators=8, max_depth=10, random_state=4).fit(X, y, sample_weight=w)
    theirs = RandomForestRegressor(n_estimators=8, max_depth=10, random_state=4, n_jobs=1).fit(
        X, y, sample_weight=w
    )
    for a, b in zip(ours.estimators_, theirs.estimators_):
        # the same bootstrap: as many distinct rows, each counted as often
        assert a.tree_.n_node_samples[0] == b.tree_.n_node_samples[0]
        assert a.tree_.weighted_n_node_samples[0] == b.tree_.weighted_n_node_samples[0]
        for depth in (6, 8, 10):
            np.testing.assert_allclose(
                _impurity_decrease(a.tree_, 10, depth).sum(),
                _impurity_decrease(b.tree_, 10, depth).sum(),
                rtol=1e-12,
            )


def test_rf_importances_equal_sklearn_without_ties():
    X, y, _ = tie_free_data(n=3000)
    ours = cart.RandomForestRegressor(n_estimators=10, max_depth=4, random_state=2).fit(X, y)
    theirs = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=2, n_jobs=1).fit(X, y)
    assert all(a.tree_.n_tied == 0 for a in ours.estimators_)
    for a, b in zip(ours.estimators_, theirs.estimators_):
        assert_same_tree(a.tree_, b.tree_)
    got = _mean_normalised(
        [_normalised(_impurity_decrease(a.tree_, X.shape[1])) for a in ours.estimators_], X.shape[1]
    )
    np.testing.assert_allclose(got, theirs.feature_importances_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=0, atol=1e-12)


# -- ties --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [GradientBoosting, RandomForest], ids=lambda c: c.name)
def test_ties_are_broken_at_random_not_by_column_order(cls):
    """Two identical columns split every node equally well: each gets a share of the credit,
    as in scikit-learn (which draws a feature order per node), not all of it the first."""
    X, y, _ = tie_free_data(n=1000)
    X = np.c_[X[:, 0], X]
    scores = cls(n_estimators=20, max_depth=4, random_state=0).fit(X, y).scores_
    assert min(scores[0], scores[1]) > 0.25 * (scores[0] + scores[1])


# -- the engine option ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [GradientBoosting, RandomForest], ids=lambda c: c.name)
def test_engine_option(cls):
    X, y, _ = tie_free_data(n=800)
    assert cls().engine == "oodfs" and "engine" not in cls.grid
    params = dict(n_estimators=5, max_depth=3, random_state=0)
    oodfs_scores = cls(**params).fit(X, y).scores_
    sklearn_scores = cls(**params, engine="sklearn").fit(X, y).scores_
    np.testing.assert_allclose(oodfs_scores, sklearn_scores, rtol=0, atol=1e-12)  # no ties here
    with pytest.raises(oodfs.OodfsError, match=r"engine must be one of 'oodfs', 'sklearn', got 'xgb'"):
        cls(**params, engine="xgb").fit(X, y)
    with pytest.raises(oodfs.OodfsError, match="has no parameter"):
        cls.fit_grid(X, y, [{"bogus": 1}])


def test_bad_input_is_refused():
    X = np.array([[1.0, 2.0], [1e39, 0.0]])  # beyond float32, which scikit-learn also refuses
    with pytest.raises(oodfs.OodfsError, match="float32"):
        cart.Presorted(X)
    pre = cart.Presorted(X[:1].repeat(3, axis=0))
    with pytest.raises(oodfs.OodfsError, match="not all 0"):
        cart.grow_tree(pre, np.ones(3), np.zeros(3))
    with pytest.raises(oodfs.OodfsError, match="one value per row"):
        cart.grow_tree(pre, np.ones(2))
