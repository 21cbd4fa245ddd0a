"""The baseline selectors: known answers, scikit-learn conformance, grid sharing, determinism, errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.neighbors import KDTree
from sklearn.utils.estimator_checks import parametrize_with_checks

import oodfs
from oodfs_plugins.baselines import (
    OLS,
    SELECTORS,
    STG,
    Correlation,
    GradientBoosting,
    LassoSelector,
    MutualInfo,
    RandomForest,
    XGBoost,
)
from oodfs_plugins.baselines.mi import count_within

NAMES = ["correlation", "ols", "mi", "gb", "xgb", "rf", "lasso", "stg"]
TRUE = [1, 4, 6]


def linear_problem(n=2000, d=8, seed=0):
    """y linear in 3 of d independent features plus noise; answer: features 1, 4, 6."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 1.0 * X[:, 1] - 0.7 * X[:, 4] + 0.5 * X[:, 6] + 0.3 * rng.normal(size=n)
    return X, y


def nonlinear_problem(n=300, d=5, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.3 * rng.normal(size=n)
    w = rng.uniform(0.2, 2.0, size=n)
    return X, y, w


# small, fast settings for the checks that fit many times
FAST = {
    "correlation": {},
    "ols": {},
    "mi": {},
    "gb": dict(n_estimators=5, max_depth=3),
    "xgb": dict(n_estimators=5, max_depth=3),
    "rf": dict(n_estimators=5, max_depth=3),
    "lasso": {},
    "stg": dict(max_epochs=2),
}
BY_NAME = {cls.name: cls for cls in SELECTORS}


# -- registration and class contract ----------------------------------------------------
def test_all_eight_registered_through_the_plugin_hook():
    assert sorted(BY_NAME) == sorted(NAMES)
    for name in NAMES:
        assert oodfs.get_selector(name) is BY_NAME[name]


@pytest.mark.parametrize("cls", SELECTORS, ids=lambda c: c.name)
def test_class_contract(cls):
    assert oodfs.contract.api.describe(cls), "docstring first line is the one-line description"
    sig = inspect.signature(cls.__init__)
    assert sig.parameters["k"].default == 5 and sig.parameters["random_state"].default is None
    for param, values in cls.grid.items():
        assert sig.parameters[param].default in values, f"default {param} must be a grid value"
    assert cls.supports_sample_weight is (cls.name != "mi")


# -- known answer ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", SELECTORS, ids=lambda c: c.name)
def test_ranks_the_true_features_first(cls):
    X, y = linear_problem()
    sel = cls(random_state=0).fit(X, y)
    assert sorted(sel.ranking_[:3]) == TRUE, sel.scores_
    assert sel.scores_.shape == (X.shape[1],) and np.all(np.isfinite(sel.scores_))
    # the top 5, except a feature scored 0 (LASSO sets the noise features to 0) when no score is
    # negative (STG's gate means may be)
    floor = (sel.scores_ >= 0).all()
    expected = {j for j in sel.ranking_[:5] if sel.scores_[j] > 0 or not floor}
    assert set(np.nonzero(sel.get_support())[0]) == expected


# -- scikit-learn conformance -----------------------------------------------------------------
# mutual_info_regression has no sample weights: mi refuses non-uniform ones (supports_sample_weight
# = False), so scikit-learn's sample-weight checks cannot pass for it.
MI_REJECTS_WEIGHTS = "mi rejects non-uniform sample weights (supports_sample_weight = False)"
MI_XFAILS = {
    "check_sample_weights_not_overwritten": MI_REJECTS_WEIGHTS,
    "check_sample_weight_equivalence_on_dense_data": MI_REJECTS_WEIGHTS,
}


def expected_failed_checks(estimator):
    return MI_XFAILS if estimator.name == "mi" else {}


@parametrize_with_checks(
    # k=1: the checks use data with as few as 1 feature; random_state pinned for reproducibility
    [BY_NAME[name](**FAST[name], k=1, random_state=0) for name in NAMES],
    expected_failed_checks=expected_failed_checks,
    xfail_strict=True,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- grid sharing: equal to separate fits ---------------------------------------------------------
def separate(cls, X, y, points, seed, sample_weight=None):
    return [cls(**p, random_state=seed).fit(X, y, sample_weight=sample_weight).scores_ for p in points]


class SklearnForest(RandomForest):
    grid_engine = "sklearn"


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("cls", [RandomForest, SklearnForest], ids=["oodfs", "sklearn"])
def test_rf_grid_cut_trees_match_separate_fits(cls, weighted):
    """RF reads shallower depths off the deepest forest (see RandomForest.fit_grid): the
    prefix axis is exact; the depth axis is exact with the oodfs engine and agrees to float
    noise with the same ranking with scikit-learn's."""
    X, y, w = nonlinear_problem(n=2000)
    w = w if weighted else None
    points = cls.grid_points()[::-1]
    grid = cls.fit_grid(X, y, points, random_state=7, sample_weight=w)
    assert len(grid) == len(points) == 9
    want_all = [
        cls(**p, random_state=7, engine=cls.grid_engine).fit(X, y, sample_weight=w).scores_ for p in points
    ]
    for p, got, want in zip(points, grid, want_all):
        if cls.grid_engine == "oodfs" or p["max_depth"] == 10:
            np.testing.assert_array_equal(got, want)
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-3)
        assert np.argsort(-got).tolist()[:5] == np.argsort(-want).tolist()[:5]


@pytest.mark.parametrize("cls", [GradientBoosting, XGBoost], ids=lambda c: c.name)
@pytest.mark.parametrize("weighted", [False, True])
def test_tree_grids_equal_separate_fits_exactly(cls, weighted):
    X, y, w = nonlinear_problem()
    w = w if weighted else None
    points = cls.grid_points()[::-1]  # any order; results aligned with the points
    grid = cls.fit_grid(X, y, points, random_state=7, sample_weight=w)
    assert len(grid) == len(points) == 9
    for got, want in zip(grid, separate(cls, X, y, points, 7, w)):
        np.testing.assert_array_equal(got, want)
    # the n_estimators axis really is read off one ensemble: the scores differ along it
    assert not np.array_equal(grid[0], grid[2])


@pytest.mark.parametrize("cls", [GradientBoosting, RandomForest, XGBoost], ids=lambda c: c.name)
@pytest.mark.parametrize("weighted", [False, True])
def test_tree_scores_are_the_library_importances(cls, weighted):
    """Scores are the fitted library model's own feature_importances_ (computed by oodfs so that
    the grid can read them off prefixes and cut trees); gb and rf with the scikit-learn engine
    (the oodfs engine is compared with scikit-learn in test_cart.py)."""
    X, y, w = nonlinear_problem()
    w = w if weighted else None
    sel = cls(
        n_estimators=20, max_depth=4, random_state=3, **({} if cls is XGBoost else {"engine": "sklearn"})
    )
    model = sel._model().fit(X, y, sample_weight=w)
    np.testing.assert_allclose(
        sel.fit(X, y, sample_weight=w).scores_, model.feature_importances_, rtol=1e-6, atol=1e-12
    )


@pytest.mark.parametrize("cls", [GradientBoosting, RandomForest], ids=lambda c: c.name)
def test_tree_scores_finite_with_a_negligible_sample_weight(cls):
    """scikit-learn stores NaN impurity for a leaf of weight ~1e-16 and its feature_importances_
    turn NaN; the leaf's contribution is 0 to machine precision, and so it is here."""
    X, y = np.array([[2.0], [1.0], [0.0]]), np.array([-34.0, -6.5, -5.8])
    sel = cls(n_estimators=5, max_depth=3, random_state=0).fit(
        X, y, sample_weight=np.array([1e-16, 1.0, 1.0])
    )
    assert sel.scores_.tolist() == [1.0]


def test_tree_grid_default_uses_base_contract_and_subsets():
    X, y, _ = nonlinear_problem()
    points = [{"max_depth": 8}, {"n_estimators": 50, "max_depth": 6}]  # partial points take defaults
    grid = GradientBoosting.fit_grid(X, y, points, random_state=0)
    want = separate(GradientBoosting, X, y, [{"n_estimators": 100, "max_depth": 8}, points[1]], 0)
    for got, exp in zip(grid, want):
        np.testing.assert_array_equal(got, exp)


@pytest.mark.parametrize("weighted", [False, True])
def test_lasso_path_equals_separate_fits(weighted):
    X, y, w = nonlinear_problem(n=500)
    w = w if weighted else None
    points = LassoSelector.grid_points()[::-1]
    grid = LassoSelector.fit_grid(X, y, points, sample_weight=w)
    assert len(grid) == 4
    for got, want in zip(grid, separate(LassoSelector, X, y, points, None, w)):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)
    assert np.count_nonzero(grid[0]) < np.count_nonzero(grid[-1])  # alpha = 0.1 is sparser


@pytest.mark.parametrize("seed", [0, 3])
def test_mi_grid_equals_sklearn_exactly(seed):
    X, y, _ = nonlinear_problem(n=400)
    points = MutualInfo.grid_points()[::-1]
    grid = MutualInfo.fit_grid(X, y, points, random_state=seed)
    for got, want in zip(grid, separate(MutualInfo, X, y, points, seed)):
        np.testing.assert_array_equal(got, want)


def test_count_within_equals_kdtree_counts_with_ties():
    rng = np.random.default_rng(0)
    for v in (
        rng.normal(size=500),
        rng.integers(0, 7, size=500).astype(float),
        np.round(rng.normal(size=500), 1),
    ):
        radius = np.nextafter(np.abs(rng.normal(size=v.size)) * 0.3, 0)
        radius[:50] = 0.0
        radius[50:100] = np.abs(v[50:100] - v[100:150])  # radii exactly equal to a distance
        tree = KDTree(v[:, None], metric="chebyshev")
        want = tree.query_radius(v[:, None], radius, count_only=True)
        np.testing.assert_array_equal(count_within(np.sort(v), v, radius), want)


@pytest.mark.parametrize("weighted", [False, True])
def test_stg_batched_lambdas_equal_separate_fits(weighted):
    X, y, w = nonlinear_problem(n=400)
    w = w if weighted else None
    points = STG.grid_points()[::-1]
    # the batched run uses the class defaults; compare with separate default fits
    grid = STG.fit_grid(X, y, points, random_state=5, sample_weight=w)
    assert len(grid) == 5
    want = separate(STG, X, y, points, 5, w)
    for got, exp in zip(grid, want):
        np.testing.assert_allclose(got, exp, rtol=0, atol=1e-4)  # float32 rounding in batched products
    assert grid[0].mean() < grid[-1].mean() - 0.02  # lambda = 10 closes gates more than 0.001


@pytest.mark.parametrize("cls", SELECTORS, ids=lambda c: c.name)
def test_fit_grid_length_order_and_default_point(cls):
    X, y, _ = nonlinear_problem(n=200)
    points = cls.grid_points()
    if cls is STG:
        points = points[:2]
    grid = cls.fit_grid(X, y, points, random_state=1)
    assert len(grid) == len(points)
    assert all(g.shape == (X.shape[1],) and np.all(np.isfinite(g)) for g in grid)
    default = cls.default_params()
    if default in points and cls is not STG:
        i = points.index(default)
        np.testing.assert_allclose(grid[i], cls(random_state=1).fit(X, y).scores_, rtol=0, atol=1e-7)


# -- determinism, weights, degenerate data -------------------------------------------------------
@pytest.mark.parametrize("cls", SELECTORS, ids=lambda c: c.name)
def test_deterministic_for_a_seed(cls):
    X, y, _ = nonlinear_problem()
    a = cls(**FAST[cls.name], random_state=11).fit(X, y).scores_
    b = cls(**FAST[cls.name], random_state=11).fit(X, y).scores_
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cls", [c for c in SELECTORS if c.supports_sample_weight], ids=lambda c: c.name)
def test_sample_weight_is_honoured(cls):
    X, y, w = nonlinear_problem()
    plain = cls(**FAST[cls.name], random_state=0).fit(X, y).scores_
    weighted = cls(**FAST[cls.name], random_state=0).fit(X, y, sample_weight=w).scores_
    assert not np.allclose(plain, weighted)


@pytest.mark.parametrize("cls", [Correlation, OLS, LassoSelector], ids=lambda c: c.name)
def test_integer_weights_equal_repeated_rows(cls):
    X, y, _ = nonlinear_problem(n=200)
    w = np.random.default_rng(0).integers(0, 4, size=len(y)).astype(float)
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    a = cls().fit(X, y, sample_weight=w).scores_
    b = cls().fit(X[rep], y[rep]).scores_
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def test_ols_matches_core_weighted_least_squares_and_correlation_matches_numpy():
    X, y, w = nonlinear_problem()
    np.testing.assert_allclose(
        OLS().fit(X, y, sample_weight=w).scores_, np.abs(oodfs.weighted_least_squares(X, y, w)), rtol=1e-10
    )
    want = [abs(np.corrcoef(X[:, j], y)[0, 1]) for j in range(X.shape[1])]
    np.testing.assert_allclose(Correlation().fit(X, y).scores_, want, rtol=1e-10)


@pytest.mark.parametrize("cls", SELECTORS, ids=lambda c: c.name)
def test_constant_column_gives_finite_scores(cls):
    X, y, _ = nonlinear_problem()
    X[:, 2] = 3.0
    scores = cls(**FAST[cls.name], random_state=0).fit(X, y).scores_
    assert np.all(np.isfinite(scores))
    if cls.name in ("correlation", "ols", "lasso", "gb", "rf", "xgb"):
        assert scores[2] == 0.0


def test_mi_rejects_non_uniform_weights_and_accepts_uniform():
    X, y, w = nonlinear_problem()
    with pytest.raises(oodfs.OodfsError, match="'mi' does not support non-uniform sample_weight"):
        MutualInfo().fit(X, y, sample_weight=w)
    with pytest.raises(oodfs.OodfsError, match="'mi' does not support non-uniform sample_weight"):
        MutualInfo.fit_grid(X, y, MutualInfo.grid_points(), sample_weight=w)
    np.testing.assert_array_equal(
        MutualInfo(random_state=0).fit(X, y, sample_weight=np.full(len(y), 2.0)).scores_,
        MutualInfo(random_state=0).fit(X, y).scores_,
    )


# -- bad input ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", SELECTORS, ids=lambda c: c.name)
def test_bad_input_raises_oodfs_error(cls):
    X, y, _ = nonlinear_problem(n=50)
    Xnan = X.copy()
    Xnan[3, 1] = np.nan
    est = cls(**FAST[cls.name], random_state=0)
    with pytest.raises(oodfs.OodfsError, match="NaN"):
        est.fit(Xnan, y)
    with pytest.raises(oodfs.OodfsError, match="different lengths"):
        est.fit(X, y[:-1])
    with pytest.raises(oodfs.OodfsError, match="NaN"):
        cls.fit_grid(Xnan, y, cls.grid_points()[:1])
    with pytest.raises(oodfs.OodfsError, match="different lengths"):
        cls.fit_grid(X, y[:-1], cls.grid_points()[:1])


@pytest.mark.parametrize(
    "cls, params",
    [
        (MutualInfo, {"n_neighbors": 0}),
        (MutualInfo, {"n_neighbors": 60}),
        (LassoSelector, {"alpha": -1.0}),
        (STG, {"lam": -1.0}),
        (STG, {"max_epochs": 0}),
        (GradientBoosting, {"n_estimators": 0}),
        (RandomForest, {"max_depth": 2.5}),
        (XGBoost, {"n_estimators": -3}),
    ],
)
def test_bad_hyperparameters_raise_oodfs_error(cls, params):
    X, y, _ = nonlinear_problem(n=50)
    with pytest.raises(oodfs.OodfsError):
        cls(**params).fit(X, y)
    grid_params = {k: v for k, v in params.items() if k in cls.grid}
    if grid_params:
        with pytest.raises(oodfs.OodfsError):
            cls.fit_grid(X, y, [grid_params])


def test_fit_grid_rejects_unknown_parameters():
    X, y, _ = nonlinear_problem(n=50)
    with pytest.raises(oodfs.OodfsError, match="has no parameter"):
        LassoSelector.fit_grid(X, y, [{"lam": 1.0}])


# -- STG settings ---------------------------------------------------------------------------------
def test_stg_sum_penalty_is_the_mean_penalty_times_d():
    """penalty_reduction "sum" (the STG paper) = "mean" (the reference code) with lambda x d."""
    X, y, _ = nonlinear_problem(n=300)
    d = X.shape[1]
    kw = dict(max_epochs=10, random_state=4)
    total = STG(lam=2.0, penalty_reduction="sum", **kw).fit(X, y).scores_
    mean = STG(lam=2.0 * d, penalty_reduction="mean", **kw).fit(X, y).scores_
    np.testing.assert_allclose(total, mean, rtol=0, atol=1e-5)
    same_lam = STG(lam=2.0, **kw).fit(X, y).scores_
    assert (total < same_lam).all()  # a d times stronger penalty closes every gate further


def test_stg_fit_grid_honours_every_setting_of_its_points():
    """Points that differ in more than lambda are trained separately, each with its own settings."""
    X, y, _ = nonlinear_problem(n=300)
    points = [
        {"lam": 0.1, "max_epochs": 2},
        {"lam": 1.0, "max_epochs": 2, "penalty_reduction": "sum"},
        {"lam": 0.1, "max_epochs": 2, "sigma": 0.25, "hidden_layer_sizes": (8,)},
        {"lam": 1.0, "max_epochs": 2},
    ]
    grid = STG.fit_grid(X, y, points, random_state=3)
    for p, got in zip(points, grid):
        np.testing.assert_allclose(got, STG(**p, random_state=3).fit(X, y).scores_, rtol=0, atol=1e-5)
    assert not np.allclose(grid[0], grid[2], rtol=0, atol=1e-3)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"penalty_reduction": "median"}, "stg penalty_reduction must be one of 'mean', 'sum'; got 'median'"),
        ({"sigma": 0.0}, "stg sigma must be a finite number > 0"),
        ({"learning_rate": float("inf")}, "stg learning_rate must be a finite number > 0"),
        ({"hidden_layer_sizes": (10, 0)}, "stg hidden_layer_sizes must be positive integers"),
        ({"max_epochs": 0}, "stg max_epochs must be a positive integer"),
    ],
)
def test_stg_bad_settings_name_the_parameter(params, match):
    X, y, _ = nonlinear_problem(n=50)
    with pytest.raises(oodfs.OodfsError, match=match):
        STG(**params).fit(X, y)
    with pytest.raises(oodfs.OodfsError, match=match):
        STG.fit_grid(X, y, [{"lam": 0.1, **params}])
