"""Oracle weighters of the synthetic environment: known answers, independence in the weighted law,
column layouts, and bad parameters."""

from __future__ import annotations

import numpy as np
import pytest

import oodfs
from oodfs import OodfsError, weight_diagnostics, weighted_least_squares
from oodfs_plugins.environments.oracle import OracleConditional, OracleIPW
from oodfs_plugins.environments.synthetic import Synthetic

ORACLES = (OracleIPW, OracleConditional)
# strong selection on small samples collapses the oracle weights: expected here, not a failure
pytestmark = pytest.mark.filterwarnings("ignore::oodfs.WeightCollapseWarning")
MILD = dict(exponent=2.0)  # lam = 2 ln 1.5 = 0.81: ESS about 30% (ipw), 50% (cond) of n


def weighted_corr(X, w):
    p = w / w.sum()
    Xc = X - p @ X
    cov = (Xc * p[:, None]).T @ Xc
    sd = np.sqrt(np.diag(cov))
    return cov / np.outer(sd, sd)


def raw_weights(env, X, r):
    """The unnormalised oracle weights: 1 / Pr(select | x) and c^k / Pr(select | x)."""
    log_p = env.log_select_prob(X, r)
    return np.exp(-log_p), np.exp(env.log_mean_select_prob(X, r) - log_p)


@pytest.mark.parametrize("cls", ORACLES)
def test_no_selection_gives_constant_weights(cls):
    """No spurious feature: Pr(select | x) = 1 for every x, so both oracles are constant."""
    env = Synthetic(spurious=(), layout_seed=2)
    X, _ = env.sample(3.0, 500, 0)
    est = cls.for_environment(env, 3.0).fit(X)
    np.testing.assert_array_equal(est.weights_, np.ones(500))
    assert est.diagnostics_["ess"] == pytest.approx(500) and est.diagnostics_["log10_weight_span"] == 0


def test_ipw_weights_are_the_inverse_selection_probability():
    """Known answer: w_i / w_j = |r|^(exponent (D_i - D_j)), D = sum_j |f(S) - sgn(r) V_j| over V4, V5."""
    env = Synthetic(layout_seed=9)
    X, _ = env.sample(-2.5, 300, 1)
    w = OracleIPW.for_environment(env, -2.5).fit(X).weights_
    f = env.f(X)
    D = sum(np.abs(f + X[:, env.column_of(v)]) for v in ("V4", "V5"))
    expected = np.exp(10 * np.log(2.5) * (D - D.max()))
    np.testing.assert_allclose(w / w.max(), expected / expected.max(), rtol=1e-9)


def test_raw_weights_have_their_population_means():
    """E_r[c^k / Pr(select | X)] = 1 and E_r[1 / Pr(select | X)] = 1 / Z_r, Z_r = E_p[c(f(S))^k]
    (the acceptance rate of plain rejection), on a large sample with mild selection."""
    env, r = Synthetic(**MILD), 1.5
    X, _ = env.sample(r, 400_000, 0)
    w_ipw, w_cond = raw_weights(env, X, r)
    Xu, _ = env.sample_unselected(400_000, 1)
    Z = np.mean(np.exp(env.log_mean_select_prob(Xu, r)))
    for w, target in ((w_cond, 1.0), (w_ipw, 1 / Z)):
        se = w.std() / np.sqrt(w.size)
        assert abs(w.mean() - target) < 5 * se + 1e-3 * target, (w.mean(), target, se)


def test_ipw_restores_the_law_before_selection():
    """Under oracle_ipw each V is uncorrelated with every other column, and S keeps the correlations
    of the unselected law; without weights, V4 and V5 are strongly correlated with S3 and each other."""
    env, r = Synthetic(layout_seed=4, **MILD), 1.5
    X, _ = env.sample(r, 300_000, 0)
    w = OracleIPW.for_environment(env, r).fit(X).weights_
    V = [env.column_of(f"V{i}") for i in range(1, 6)]
    S = list(env.stable_set)
    C0, C = weighted_corr(X, np.ones(len(X))), weighted_corr(X, w)
    v4, v5, s3 = env.column_of("V4"), env.column_of("V5"), env.column_of("S3")
    assert C0[v4, v5] > 0.1 and C0[v4, s3] > 0.15  # 0.14 and 0.20 here
    off = C[np.ix_(V, range(X.shape[1]))]
    off[np.arange(5), V] = 0.0
    assert np.abs(off).max() < 0.02
    Xu, _ = env.sample_unselected(300_000, 1)
    np.testing.assert_allclose(C[np.ix_(S, S)], weighted_corr(Xu, np.ones(len(Xu)))[np.ix_(S, S)], atol=0.02)
    # the base class's diagnostic sees the S-S correlation that remains (about 0.24 for neighbours)
    assert weight_diagnostics(X, w)["max_abs_corr"] == pytest.approx(0.24, abs=0.03)


def test_conditional_oracle_keeps_the_selected_law_of_s():
    env, r = Synthetic(**MILD), 1.5
    X, _ = env.sample(r, 300_000, 0)
    w = OracleConditional.for_environment(env, r).fit(X).weights_
    C = weighted_corr(X, w)
    assert np.abs(C[5:, :5]).max() < 0.02 and np.abs(C[8, 9]) < 0.02  # V independent of S and of V
    S = X[:, :5]
    np.testing.assert_allclose((w @ S**2) / w.sum(), (S**2).mean(axis=0), atol=0.02)  # S's selected law
    # less spread than the inverse selection probability
    assert (
        weight_diagnostics(X, w)["ess"] > 1.5 * OracleIPW.for_environment(env, r).fit(X).diagnostics_["ess"]
    )


def test_oracle_wls_zeroes_the_v_coefficients():
    """Theorem 5.1 of the paper on a large sample: V's WLS coefficients vanish, OLS's do not."""
    env, r = Synthetic(layout_seed=1, **MILD), 1.5
    X, y = env.sample(r, 200_000, 0)
    V = [j for j in range(10) if j not in env.stable_set]
    ols = weighted_least_squares(X, y)
    assert np.linalg.norm(ols[V]) > 0.01
    for cls in ORACLES:
        beta = weighted_least_squares(X, y, cls.for_environment(env, r).fit(X).weights_)
        assert np.linalg.norm(beta[V]) < 0.005


@pytest.mark.parametrize("cls", ORACLES)
def test_weights_follow_the_layout(cls):
    fixed, moved = Synthetic(), Synthetic(layout_seed=3)
    Xf, _ = fixed.sample(2.0, 1000, 5)
    Xm, _ = moved.sample(2.0, 1000, 5)
    np.testing.assert_allclose(
        cls.for_environment(moved, 2.0).fit(Xm).weights_,
        cls.for_environment(fixed, 2.0).fit(Xf).weights_,
        rtol=1e-12,
    )


def test_registered_as_weighters_and_selectors():
    for cls in ORACLES:
        assert oodfs.get_weighter(cls.name) is cls
        sel = oodfs.get_selector(cls.name)(r=1.5, exponent=2.0)
        env = Synthetic(exponent=2.0)
        X, y = env.sample(1.5, 2000, 0)
        assert set(np.argsort(-sel.fit(X, y).scores_)[:5]) == {0, 1, 2, 3, 4}


@pytest.mark.parametrize(
    "kwargs, ncol, match",
    [
        ({"r": 1.0}, 10, r"\|r\| > 1"),
        ({"r": "big"}, 10, "bias rate r must be a number"),
        ({"spurious": ("V9",)}, 10, "spurious names 'V9'"),
        ({"d_v": 0}, 10, "d_v must be an integer >= 1"),
        ({"exponent": -2.0}, 10, "exponent must be a finite positive number"),
        ({"setting": "cubic"}, 10, "unknown setting 'cubic'"),
        ({}, 12, "X has 12 columns; this synthetic environment has 10"),
    ],
)
@pytest.mark.parametrize("cls", ORACLES)
def test_bad_parameters_one_line(cls, kwargs, ncol, match):
    X = np.random.default_rng(0).uniform(-2, 2, (50, ncol))
    with pytest.raises(OodfsError, match=match) as info:
        cls(**kwargs).fit(X)
    assert "\n" not in str(info.value)
