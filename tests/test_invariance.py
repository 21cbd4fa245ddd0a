"""The label-using methods (icp, anchor, irm) and the IRM paper's SEM: fidelity to their papers
and reference code, computed here from first principles, and the conformance kit on them."""

import itertools

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LinearRegression

import oodfs
from oodfs.testing import check_selector
from oodfs_plugins.environments.irm_sem import IRMChain
from oodfs_plugins.invariance import ICP, IRM, Anchor
from oodfs_plugins.invariance.anchor import anchor_coefficients
from oodfs_plugins.invariance.icp import subset_log_pvalues
from oodfs_plugins.invariance.irm import environment_moments, irm_solutions


def sem_data(seed=0, n=500, **flags):
    """The IRM paper's training environments (noise scale 0.2, 2, 5), pooled with labels."""
    env = IRMChain(sem_seed=seed, **flags)
    draws = [env.sample(e, n, seed * 10 + i) for i, e in enumerate((0.2, 2.0, 5.0))]
    X = np.vstack([d[0] for d in draws])
    y = np.concatenate([d[1] for d in draws])
    return env, X, y, np.repeat(np.arange(3), n)


# -- ICP ---------------------------------------------------------------------------------------
def reference_pvalue(X, y, g, subset, intercept):
    """The IRM reference code's ICP test, written out: pooled least squares on the subset, then per
    environment a Welch t-test and a two-sided F-test of its residuals against the others',
    2 * min of the two, the minimum over environments times their number."""
    Xs = X[:, list(subset)]
    reg = LinearRegression(fit_intercept=intercept).fit(Xs, y) if subset or intercept else None
    resid = y - (reg.predict(Xs) if reg is not None else 0.0)
    ps = []
    for e in np.unique(g):
        a, b = resid[g == e], resid[g != e]
        p_mean = stats.ttest_ind(a, b, equal_var=False).pvalue
        p1 = 1 - stats.f.cdf(np.var(a, ddof=1) / np.var(b, ddof=1), len(a) - 1, len(b) - 1)
        ps.append(2 * min(p_mean, 2 * min(p1, 1 - p1)))
    return min(1.0, min(ps) * len(ps))


@pytest.mark.parametrize("intercept", [False, True])
def test_icp_pvalues_match_the_tests_computed_from_the_residuals(intercept):
    _, X, y, g = sem_data(seed=1, n=300)
    subsets = [(0, 1, 2, 3, 4), (0, 1, 2, 3, 4, 5), (0, 1, 2), (5, 6), tuple(range(10)), (2,)]
    mine = np.exp(subset_log_pvalues(X, y, g, 3, subsets, fit_intercept=intercept))
    ref = np.array([reference_pvalue(X, y, g, s, intercept) for s in subsets])
    big = ref > 1e-12  # below that both are "rejected at any level"; the log values differ in precision
    assert np.allclose(mine[big], ref[big], rtol=1e-6), (mine, ref)
    assert np.all(mine[~big] < 1e-10)
    assert ref[0] > 0.05  # the causal set is accepted


def test_icp_selects_the_causal_parents_and_its_scores_order_the_intersection():
    env, X, y, g = sem_data(seed=2, n=1000)
    sel = ICP(alpha=0.05).fit(X, y, groups=g)
    assert sel.selected_ == sorted(env.stable_set)
    # score_k >= -log10(alpha) exactly for the intersection (the documented reading of the scores)
    assert sorted(np.flatnonzero(sel.scores_ >= -np.log10(0.05)).tolist()) == sel.selected_
    # the intersection of the listed accepted sets
    assert sorted(set.intersection(*map(set, sel.accepted_sets_))) == sel.selected_


def test_icp_scores_are_the_largest_pvalue_without_the_feature():
    _, X, y, g = sem_data(seed=3, n=200)
    X = X[:, :6]
    sel = ICP(include_empty=True).fit(X, y, groups=g)
    subsets = [s for r in range(0, 7) for s in itertools.combinations(range(6), r)]
    logp = subset_log_pvalues(X, y, g, 3, subsets)
    for k in range(6):
        best = max(lp for s, lp in zip(subsets, logp) if k not in s)
        assert sel.scores_[k] == pytest.approx(-best / np.log(10), abs=1e-12)


def test_icp_refuses_more_than_12_features_without_screening_and_screens_with_lasso():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 15))
    g = np.repeat(np.arange(3), 100)
    X *= np.array([0.5, 1.0, 2.0])[g][:, None]
    y = X[:, 3] - X[:, 7] + 0.1 * rng.standard_normal(300)
    with pytest.raises(oodfs.OodfsError, match="limited to 12 features, got 15.*screen='lasso'") as exc:
        ICP().fit(X, y, groups=g)
    assert "\n" not in str(exc.value)
    sel = ICP(screen="lasso", screen_size=6).fit(X, y, groups=g)
    assert set(sel.ranking_[:2]) == {3, 7}
    assert np.sum(sel.scores_ == -1.0) == 9  # the screened-out features rank below every kept one


# -- anchor regression ---------------------------------------------------------------------------
def test_anchor_matches_ivmodels_k_class_and_gamma_1_is_pooled_ols():
    ivmodels = pytest.importorskip("ivmodels")  # a dev dependency (pyproject's dev extra)
    rng = np.random.default_rng(0)
    g = rng.integers(0, 3, 600)
    X = rng.standard_normal((600, 4)) + 2 * rng.standard_normal((3, 4))[g]
    y = X @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.standard_normal(600) + 0.7 * g + 3
    Z = np.eye(3)[g][:, 1:]
    for gamma in Anchor.grid["gamma"]:
        ref = ivmodels.KClass(kappa=(gamma - 1) / gamma, fit_intercept=True).fit(X, y, Z=Z).coef_
        assert np.allclose(anchor_coefficients(X, y, g, [gamma])[0], ref, atol=1e-10)
    ols = LinearRegression().fit(X, y).coef_
    assert np.allclose(Anchor(gamma=1.0).fit(X, y, groups=g).scores_, np.abs(ols), atol=1e-10)


# -- IRM -------------------------------------------------------------------------------------------
def torch_irm(Xs, ys, reg, steps, lr=1e-3):
    """The reference code's InvariantRiskMinimization.train, written out in float64 torch."""
    torch = pytest.importorskip("torch")
    d = Xs[0].shape[1]
    phi = torch.nn.Parameter(torch.eye(d, dtype=torch.float64))
    w = torch.ones(d, 1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([phi], lr=lr)
    loss = torch.nn.MSELoss()
    data = [(torch.tensor(X), torch.tensor(y).view(-1, 1)) for X, y in zip(Xs, ys)]
    for _ in range(steps):
        penalty = error = 0
        for x_e, y_e in data:
            error_e = loss(x_e @ phi @ w, y_e)
            penalty += torch.autograd.grad(error_e, w, create_graph=True)[0].pow(2).mean()
            error += error_e
        opt.zero_grad()
        (reg * error + (1 - reg) * penalty).backward()
        opt.step()
    return (phi @ w).view(-1).detach().numpy()


def test_irm_follows_the_reference_adam_trajectory():
    _, X, y, g = sem_data(seed=4, n=200, hidden=True, hetero=True)
    tr = g < 2
    S, c = environment_moments(X[tr], y[tr], g[tr], 2, fit_intercept=False)
    regs = [0.0, 1e-2]
    mine = irm_solutions(S, c, regs, n_iterations=300)
    for reg, row in zip(regs, mine):
        ref = torch_irm([X[g == 0], X[g == 1]], [y[g == 0], y[g == 1]], reg, 300)
        assert np.allclose(row, ref, atol=1e-9), (row, ref)


def test_irm_with_the_full_budget_recovers_the_causal_coefficients():
    env, X, y, g = sem_data(seed=5, n=1000)
    tr = g < 2
    S, c = environment_moments(X[tr], y[tr], g[tr], 2, fit_intercept=False)
    sol = irm_solutions(S, c, [1e-3])[0]
    assert np.abs(sol - env.coefficients).max() < 0.15  # ERM's non-causal error here is ~0.1 per coefficient
    erm = np.linalg.lstsq(X[tr], y[tr], rcond=None)[0]
    assert np.mean((sol - env.coefficients) ** 2) < np.mean((erm - env.coefficients) ** 2)


def test_irm_grid_is_the_reference_code_penalty_grid():
    assert IRM.grid == {"reg": [0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1]}
    assert IRM().lr == 1e-3 and IRM().n_iterations == 100_000


# -- the IRM paper's SEM -------------------------------------------------------------------------
def test_irm_sem_children_are_unstable_and_parents_invariant():
    env = IRMChain(layout_seed=7)
    stable = list(env.stable_set)
    assert [env.feature_names[j] for j in stable] == [n for n in env.feature_names if n.startswith("X")]
    coef_x, coef_all = [], []
    for i, e in enumerate((1.0, 2.0, 5.0)):  # X's variance grows with e: precise fits
        X, y = env.sample(e, 4000, i)
        coef_x.append(np.linalg.lstsq(X[:, stable], y, rcond=None)[0])
        coef_all.append(np.linalg.lstsq(X, y, rcond=None)[0])
    assert np.ptp(coef_x, axis=0).max() < 0.1  # y on X: the same regression in every environment
    assert np.ptp(coef_all, axis=0).max() > 0.3  # with the children: it changes with the noise scale
    assert IRMChain(scramble=True).stable_set is None
    with pytest.raises(oodfs.OodfsError, match="noise scale > 0"):
        env.check_env(0.0)


# -- the conformance kit -----------------------------------------------------------------------------
# irm at 2000 Adam steps (the logistic form needs them to rank a binary target's two features first)
@pytest.mark.parametrize("plugin", [ICP, Anchor, IRM(n_iterations=2000)], ids=["icp", "anchor", "irm"])
def test_invariance_methods_pass_the_conformance_kit(plugin):
    results = check_selector(plugin)
    assert results["check_selector_refuses_bad_labels"] == "passed"
    assert results["check_selector_label_names"] == "passed"


class _LabelValueSelector(oodfs.Selector):
    """Scores that depend on the environments' label values (a broken label-using method)."""

    name = "label_value"
    uses_groups = True

    def _fit_scores(self, X, y, sample_weight, groups):
        w = 1.0 + groups  # rows weighted by their environment's code
        return np.abs((X * w[:, None]).T @ y)


def test_the_kit_catches_a_method_that_depends_on_label_order():
    with pytest.raises(AssertionError, match="check_selector_label_names"):
        check_selector(_LabelValueSelector)
