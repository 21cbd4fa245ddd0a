"""Stabilized regression, V-REx, EILLS and DRIG: each computed here a second way from first
principles (raw residuals, explicit matrices), their selections on the IRM paper's SEM, the
conformance kit and the one-line refusals of bad input."""

import itertools
import json

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import approx_fprime
from sklearn.linear_model import LinearRegression

import oodfs
from oodfs.testing import check_selector
from oodfs_plugins.environments.irm_sem import IRMChain
from oodfs_plugins.invariance import DRIG, EILLS, Stabilized, VREx
from oodfs_plugins.invariance.drig import choose_reference, drig_coefficients
from oodfs_plugins.invariance.eills import eills_path
from oodfs_plugins.invariance.irm import environment_moments
from oodfs_plugins.invariance.stabilized import subset_scores
from oodfs_plugins.invariance.vrex import _objective, vrex_solutions

from .conftest import assert_one_line
from .conftest import run_cli as run


def sem_data(seed=0, n=500, **flags):
    """The IRM paper's training environments (noise scale 0.2, 2, 5), pooled with labels."""
    env = IRMChain(sem_seed=seed, **flags)
    draws = [env.sample(e, n, seed * 10 + i) for i, e in enumerate((0.2, 2.0, 5.0))]
    X = np.vstack([d[0] for d in draws])
    y = np.concatenate([d[1] for d in draws])
    return env, X, y, np.repeat(np.arange(3), n)


# -- stabilized regression --------------------------------------------------------------------------
def chow_pvalue(X, y, g, subset):
    """The R package's "exact" test (getpval), written out with the explicit n_e x n_e matrix."""
    Z = np.column_stack([np.ones(len(y)), X[:, list(subset)]])
    n, p, ps = len(y), Z.shape[1], []
    for e in np.unique(g):
        i, o = g == e, g != e
        beta = np.linalg.lstsq(Z[o], y[o], rcond=None)[0]
        diff = y[i] - Z[i] @ beta
        cov = np.eye(i.sum()) + Z[i] @ np.linalg.solve(Z[o].T @ Z[o], Z[i].T)
        nk, nko = i.sum(), o.sum()
        stat = diff @ np.linalg.solve(cov, diff) / (nk * np.var(y[o] - Z[o] @ beta, ddof=1) * nko / (nko - p))
        ps.append(stats.f.sf(stat, nk, n - nk - p))
    return min(1.0, len(ps) * min(ps))


def test_stabilized_chow_pvalues_and_mse_match_the_residual_computation():
    _, X, y, g = sem_data(seed=1, n=60)
    subsets = [(), (0, 1, 2, 3, 4), (5, 6), (0, 7), tuple(range(10))]
    log_p, mse, coefs, _, _ = subset_scores(X, y, g, 3, subsets)
    for s, lp, m, b in zip(subsets, log_p, mse, coefs):
        ref = chow_pvalue(X, y, g, s)
        assert np.exp(lp) == pytest.approx(ref, rel=1e-6, abs=1e-12)
        fit = LinearRegression().fit(X[:, list(s)], y) if s else None
        resid = y - (fit.predict(X[:, list(s)]) if s else y.mean())
        assert m == pytest.approx(np.mean(resid**2), rel=1e-9)
        if s:
            assert np.allclose(b, fit.coef_, atol=1e-9)


def test_stabilized_finds_the_stable_blanket_and_ranks_every_feature():
    env, X, y, g = sem_data(seed=2, n=1000)
    sel = Stabilized(random_state=0).fit(X, y, groups=g)
    assert sel.blanket_ == sorted(env.stable_set)
    inside = sel.scores_[list(env.stable_set)]
    outside = np.delete(sel.scores_, list(env.stable_set))
    assert inside.min() > 0 > outside.max()  # every feature ranked, the blanket first
    assert len(np.unique(outside)) == len(outside)  # outside ordered by SR(pred), no ties


def test_stabilized_grid_shares_the_search_and_reports_its_sets():
    _, X, y, g = sem_data(seed=3, n=300)
    fits = Stabilized.fit_grid_detailed(X, y, Stabilized.grid_points(), random_state=1, groups=g)
    assert len(fits) == 9
    # a stricter stability level never accepts more sets
    by = {(p["alpha_stab"], p["alpha_pred"]): f for p, f in zip(Stabilized.grid_points(), fits)}
    assert by[(0.1, 0.05)].diagnostics["stable_sets"] <= by[(0.01, 0.05)].diagnostics["stable_sets"]
    single = Stabilized(alpha_stab=0.1, alpha_pred=0.05, random_state=1).fit(X, y, groups=g)
    assert np.array_equal(single.scores_, by[(0.1, 0.05)].values)


@pytest.mark.parametrize(
    "params,needle",
    [
        ({"alpha_stab": 0.0}, "stabilized alpha_stab must be a level in (0, 1), got 0.0"),
        ({"alpha_pred": 1.5}, "stabilized alpha_pred must be a level in (0, 1), got 1.5"),
        ({"screen": "lasso"}, "stabilized screen must be one of none, correlation"),
    ],
)
def test_stabilized_refuses_bad_levels_in_one_line(params, needle):
    _, X, y, g = sem_data(seed=0, n=50)
    with pytest.raises(oodfs.OodfsError) as exc:
        Stabilized(**params).fit(X, y, groups=g)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_stabilized_beyond_12_features_needs_the_screen():
    rng = np.random.default_rng(0)
    X, g = rng.standard_normal((300, 14)), np.repeat(np.arange(3), 100)
    y = X[:, 2] + 0.1 * rng.standard_normal(300)
    with pytest.raises(oodfs.OodfsError, match="limited to 12 features, got 14"):
        Stabilized().fit(X, y, groups=g)
    sel = Stabilized(screen="correlation", screen_size=6, random_state=0).fit(X, y, groups=g)
    assert sel.ranking_[0] == 2 and np.sum(sel.scores_ == -2.0) == 8


# -- EILLS ---------------------------------------------------------------------------------------------
def eills_objective(X, y, g, beta, gamma):
    """EILLS's objective from the raw residuals: mean over environments of the risk plus gamma x the
    squared residual-covariate moments of the variables in the support."""
    support = np.flatnonzero(beta != 0)
    total = 0.0
    for e in np.unique(g):
        r = y[g == e] - X[g == e] @ beta
        total += np.mean(r**2) + gamma * np.sum((X[g == e][:, support].T @ r / r.size) ** 2)
    return total / len(np.unique(g))


def test_eills_is_the_minimum_of_its_objective_over_all_supports():
    _, X, y, g = sem_data(seed=4, n=300, hetero=True)
    X = X[:, [0, 1, 5, 6, 7, 8]]
    S, c = environment_moments(X, y, g, 3, fit_intercept=False)
    gamma = 20.0
    beta = eills_path(S, c, [gamma])[0]
    best = eills_objective(X, y, g, beta, gamma)
    for r in range(1, 7):
        for sub in itertools.combinations(range(6), r):
            cols = list(sub)
            Sb = sum(
                S[e][np.ix_(cols, cols)] + gamma * S[e][np.ix_(cols, cols)] @ S[e][np.ix_(cols, cols)]
                for e in range(3)
            )
            cb = sum(c[e][cols] + gamma * S[e][np.ix_(cols, cols)] @ c[e][cols] for e in range(3))
            cand = np.zeros(6)
            cand[cols] = np.linalg.solve(Sb, cb)
            assert eills_objective(X, y, g, cand, gamma) >= best - 1e-9
    assert eills_path(S, c, [0.0])[0] == pytest.approx(np.linalg.lstsq(S.mean(0), c.mean(0), rcond=None)[0])


@pytest.mark.parametrize("seed", [5, 6])
def test_eills_selects_exactly_the_causal_parents_in_the_homoskedastic_sem(seed):
    env, X, y, g = sem_data(seed=seed, n=1000)
    scores = EILLS().fit(X, y, groups=g).scores_
    assert sorted(np.flatnonzero(scores > 0).tolist()) == sorted(env.stable_set)
    assert np.all(np.abs(LinearRegression().fit(X, y).coef_) > 0)  # pooled OLS: no selection


# -- DRIG -----------------------------------------------------------------------------------------------
def test_drig_gamma_0_is_the_reference_least_squares_and_gamma_1_the_pooled_one():
    _, X, y, g = sem_data(seed=6, n=400)
    G, Z = environment_moments(X, y, g, 3, fit_intercept=False)
    w = np.bincount(g) / len(g)
    ref = choose_reference(G, w)
    assert ref == 0  # noise scale 0.2: the least-perturbed environment
    b0, b1 = drig_coefficients(G, Z, w, [0.0, 1.0], ref)
    assert np.allclose(b0, LinearRegression(fit_intercept=False).fit(X[g == 0], y[g == 0]).coef_, atol=1e-8)
    assert np.allclose(b1, LinearRegression(fit_intercept=False).fit(X, y).coef_, atol=1e-8)
    # the reference follows the rows, not the labels' names
    renamed = np.array([2, 0, 1])[g]
    sel = DRIG(gamma=5.0).fit(X, y, groups=renamed)
    assert np.allclose(sel.scores_, DRIG(gamma=5.0).fit(X, y, groups=g).scores_)


def test_drig_with_a_large_gamma_discounts_the_children():
    env, X, y, g = sem_data(seed=7, n=1000)
    pooled = DRIG(gamma=1.0).fit(X, y, groups=g).scores_
    robust = DRIG(gamma=20.0).fit(X, y, groups=g).scores_
    children = [j for j in range(10) if j not in env.stable_set]
    assert robust[children].max() < pooled[children].max()


# -- V-REx --------------------------------------------------------------------------------------------
def test_vrex_gradient_is_exact_and_its_solution_a_stationary_point():
    _, X, y, g = sem_data(seed=8, n=200)
    S, c = environment_moments(X, y, g, 3, fit_intercept=True)
    yy = np.array([np.mean(y[g == e] ** 2) for e in range(3)])
    b = np.random.default_rng(0).standard_normal(S.shape[1])
    for lam in (0.1, 100.0):
        value, grad = _objective(b, S, c, yy, lam)
        Xc = np.column_stack([np.ones(len(y)), X])
        risks = np.array([np.mean((y[g == e] - Xc[g == e] @ b) ** 2) for e in range(3)])
        assert value == pytest.approx((risks.mean() + lam * risks.var()) / (1 + lam), rel=1e-10)
        num = approx_fprime(b, lambda v: _objective(v, S, c, yy, lam)[0], 1e-7)
        assert np.allclose(grad, num, rtol=1e-4, atol=1e-5)
    sol = vrex_solutions(S, c, yy, [10.0, 1e4])
    for lam, row in zip((10.0, 1e4), sol):
        assert np.abs(_objective(row, S, c, yy, lam)[1]).max() < 1e-5


def test_vrex_penalty_equalises_the_environments_risks():
    _, X, y, g = sem_data(seed=9, n=1000)
    S, c = environment_moments(X, y, g, 3, fit_intercept=True)
    yy = np.array([np.mean(y[g == e] ** 2) for e in range(3)])
    Xc = np.column_stack([np.ones(len(y)), X])
    spread = []
    for b in vrex_solutions(S, c, yy, [0.1, 1e4]):
        spread.append(np.var([np.mean((y[g == e] - Xc[g == e] @ b) ** 2) for e in range(3)]))
    assert spread[1] < 0.1 * spread[0]


@pytest.mark.parametrize(
    "cls,params,needle",
    [
        (VREx, {"penalty": -1.0}, "vrex penalty must be a number >= 0, got -1.0"),
        (EILLS, {"gamma": float("nan")}, "eills gamma must be a number >= 0"),
        (DRIG, {"gamma": -0.5}, "drig gamma must be a number >= 0, got -0.5"),
        (DRIG, {"reference": "first"}, "drig reference must be one of least-perturbed, largest"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(cls, params, needle):
    _, X, y, g = sem_data(seed=0, n=50)
    with pytest.raises(oodfs.OodfsError) as exc:
        cls(**params).fit(X, y, groups=g)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


# -- the conformance kit and the suites ---------------------------------------------------------------
@pytest.mark.parametrize(
    "plugin", [Stabilized, VREx, EILLS, DRIG], ids=["stabilized", "vrex", "eills", "drig"]
)
def test_new_invariance_methods_pass_the_conformance_kit(plugin):
    results = check_selector(plugin)
    assert results["check_selector_refuses_bad_labels"] == "passed"
    assert results["check_selector_label_names"] == "passed"


SUITE = """
environment = "synthetic"
r_train = [2.5]
r_test = [-2.0, 2.0]
runs = 1
n_train = 300
n_val = 100
n_test = 300
k = 5
methods = {methods}
[settings.poly]
params = {{ setting = "poly" }}
run_params = {{ layout_seed = "seed" }}
"""


@pytest.mark.parametrize("method", ["stabilized", "vrex", "eills", "drig"])
def test_a_suite_with_one_environment_is_refused_in_one_line(tmp_path, capsys, method):
    path = tmp_path / "one.toml"
    path.write_text(SUITE.format(methods=json.dumps([method, "ols"])))
    assert_one_line(
        run(capsys, "bench", "--suite", str(path), "--out", str(tmp_path / "o")),
        f"method '{method}' learns from environment labels",
        "r_train entry 2.5 is one environment",
    )
