"""Markov-boundary selectors (iamb, hiton_mb and their kernel-test variants) and the
markov_boundary environment: the boundaries they find on known graphs, their scores, their
tests against causal-learn's, bad input."""

import numpy as np
import pytest

import oodfs
from oodfs_plugins.environments.markov import MarkovBoundaryEnv
from oodfs_plugins.markov import HITONMB, IAMB
from oodfs_plugins.markov.ci_tests import CITest


def linear_dag(n=4000, seed=0):
    """A linear Gaussian DAG with a known Markov boundary of y: parents X0, X1; child X2, whose
    other parent X3 is a spouse; X4 a parent of X0 (an ancestor, outside the boundary); X5
    independent of everything; X6 a child of X2 (a grandchild, outside)."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((n, 8))
    x4 = e[:, 4]
    x0 = 0.8 * x4 + e[:, 0]
    x1 = e[:, 1]
    y = 0.7 * x0 - 0.6 * x1 + e[:, 7]
    x3 = e[:, 3]
    x2 = 0.8 * y + 0.8 * x3 + e[:, 2]
    x5 = e[:, 5]
    x6 = 0.9 * x2 + e[:, 6]
    return np.column_stack([x0, x1, x2, x3, x4, x5, x6]), y


@pytest.mark.parametrize("cls", [IAMB, HITONMB], ids=["iamb", "hiton_mb"])
def test_the_searches_find_the_markov_boundary_of_a_linear_gaussian_dag(cls):
    X, y = linear_dag()
    sel = cls(alpha=0.01).fit(X, y)
    assert sel.boundary_ == [0, 1, 2, 3]
    order = np.argsort(-sel.feature_importances_)
    assert set(order[:4]) == {0, 1, 2, 3}  # the boundary first ...
    assert sel.feature_importances_[:4].min() > sel.feature_importances_[4:].max()


def test_scores_order_the_rest_by_their_dependence_given_the_boundary():
    X, y = linear_dag()
    sel = IAMB(alpha=0.01).fit(X, y)
    test = CITest(np.column_stack([y, X]), "fisherz")
    expected = [-test.log_p(0, c, [1, 2, 3, 4]) / np.log(10) for c in (5, 6, 7)]
    np.testing.assert_allclose(sel.feature_importances_[4:], expected, rtol=1e-10)


def test_fisherz_agrees_with_causal_learn():
    from causallearn.utils.cit import CIT

    rng = np.random.default_rng(3)
    data = rng.standard_normal((300, 5))
    data[:, 1] += 0.15 * data[:, 0] + 0.3 * data[:, 2]
    ours = CITest(data, "fisherz")
    theirs = CIT(data, "fisherz")
    for a, b, cond in [(0, 1, ()), (0, 1, (2,)), (1, 3, (0, 2)), (2, 4, (0, 1, 3))]:
        assert np.exp(ours.log_p(a, b, cond)) == pytest.approx(theirs(a, b, list(cond)), rel=1e-6, abs=1e-12)


def test_a_variance_only_parent_is_seen_by_the_kernel_test_and_not_by_fisherz():
    rng = np.random.default_rng(0)
    n = 600
    h, s = rng.standard_normal(n), rng.standard_normal(n)
    y = s + (0.2 + np.abs(h)) * rng.standard_normal(n)
    data = np.column_stack([y, h, s])
    assert CITest(data, "fisherz").log_p(0, 1, [2]) > np.log(0.05)
    kernel = CITest(data, "rcit", random_state=1)
    assert kernel.log_p(0, 1, [2]) < np.log(0.01)
    again = CITest(data, "rcit", random_state=1)
    assert again.log_p(0, 1, [2]) == kernel.log_p(0, 1, [2])  # reproducible per seed
    state = np.random.get_state()[1].copy()
    CITest(data, "rcit", random_state=2).log_p(0, 1, [2])
    np.testing.assert_array_equal(np.random.get_state()[1], state)  # the global generator is left alone


def test_grid_points_share_one_test_cache_and_report_the_boundary_and_tests():
    X, y = linear_dag(n=1000)
    fits = HITONMB.fit_grid_detailed(X, y, [{"alpha": 0.01, "max_k": 1}, {"alpha": 0.05, "max_k": 3}])
    assert [f.diagnostics["boundary_size"] for f in fits] == [4.0, 4.0]
    assert fits[0].diagnostics["ci_tests"] > 0
    single = HITONMB(alpha=0.05, max_k=3).fit(X, y).feature_importances_
    np.testing.assert_allclose(fits[1].values, single)


def test_bad_input_is_one_line():
    X, y = linear_dag(n=200)
    with pytest.raises(oodfs.OodfsError, match="unknown conditional-independence test 'gsq'; valid: fisherz"):
        IAMB(test="gsq").fit(X, y)
    with pytest.raises(
        oodfs.OodfsError, match="limited to max_features=5 features, got 7; pass screen='marginal'"
    ):
        IAMB(max_features=5).fit(X, y)
    with pytest.raises(oodfs.OodfsError, match="alpha must be in"):
        HITONMB(alpha=1.5).fit(X, y)
    with pytest.raises(oodfs.OodfsError, match="non-uniform sample_weight"):
        IAMB().fit(X, y, sample_weight=np.arange(200.0) + 1)


def test_marginal_screening_keeps_the_most_associated_features():
    X, y = linear_dag()
    sel = IAMB(alpha=0.01, max_features=5, screen="marginal", screen_size=4).fit(X, y)
    kept = {0, 1, 2, 6}  # the four largest marginal associations with y (X3, the spouse, has none)
    scores = sel.feature_importances_
    assert set(np.argsort(-scores)[:4]) == kept
    assert scores[[3, 4, 5]].max() < scores[list(kept)].min()


def test_the_environment_declares_both_sets_and_the_child_flips_with_the_bias_sign():
    env = MarkovBoundaryEnv(layout_seed=3)
    names = env.feature_names
    assert sorted(names[j] for j in env.stable_set) == ["S1", "S2", "S3", "S4", "S5"]
    assert sorted(names[j] for j in env.markov_boundary) == ["C", "H", "S1", "S2", "S3", "S4", "S5", "W"]
    c = names.index("C")
    for r, sign in ((2.5, 1), (-2.5, -1)):
        X, y = env.sample(r, 3000, 1)
        assert sign * np.corrcoef(X[:, c], y)[0, 1] > 0.5
    X, y = env.sample(2.5, 3000, 1)
    h = X[:, names.index("H")]
    base = env._base()  # the paper's generator, in its canonical column order
    resid = y - base.f(X[:, [names.index(n) for n in base.feature_names]])
    assert abs(np.corrcoef(h, resid)[0, 1]) < 0.05  # H moves only the spread of y ...
    assert np.corrcoef(np.abs(h), np.abs(resid))[0, 1] > 0.2  # ... which it does
