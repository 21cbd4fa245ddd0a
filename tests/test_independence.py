"""DWR and SRDO weighters (plugins/independence): objective, solvers, weights, quality, bad input.

The quality tests fit on n = 10000 rows of the synthetic data and take ~30 s together (SRDO
~3 s per fit); they are marked ``slow`` and stay in the default run.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from scipy.optimize import approx_fprime

import oodfs
from oodfs import OodfsError, weighted_least_squares
from oodfs.metrics import f1_at_k, rank_average
from oodfs_plugins.independence import DWRWeighter, SRDOWeighter, dwr_objective
from oodfs_plugins.independence.srdo import _MLP, clip_ratio, density_ratio_logits

DWR = oodfs.selector_for_weighter(DWRWeighter)
SRDO = oodfs.selector_for_weighter(SRDOWeighter)
S = tuple(range(5))

#: cheap SRDO settings for the tests that are not about quality
FAST_SRDO = dict(epochs=20, batch_size=256)


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """One torch thread, as the runner sets per worker (SRDO restores it itself; DWR's Adam too)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def synthetic(setting="poly", r=2.5, n=10000, run=0):
    from oodfs_plugins.environments.synthetic import Synthetic

    return Synthetic(setting=setting, mlp_seed=run).sample(r, n, run)


def correlated(n=400, d=5, rho=0.8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[:, 1] = rho * X[:, 0] + np.sqrt(1 - rho**2) * X[:, 1]
    return X


def weighted_corr(X, w):
    C = np.cov(X.T, aweights=w, bias=True)
    sd = np.sqrt(np.diag(C))
    R = C / np.outer(sd, sd)
    np.fill_diagonal(R, 0.0)
    return np.abs(R).max()


# -- the DWR objective -------------------------------------------------------------------------
def literal_objective(w, X, lam1, lam2):
    """The appendix formula written out: Cov_w = numpy's weighted covariance, a double loop."""
    C = np.cov(X.T, aweights=w, bias=True)
    d = X.shape[1]
    off = sum(C[i, j] ** 2 for i in range(d) for j in range(d) if i != j)
    return off + lam1 * (w.sum() - 1) ** 2 + lam2 * np.sum(w**2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dwr_objective_is_the_appendix_formula(seed):
    rng = np.random.default_rng(seed)
    X = correlated(n=50, d=4, seed=seed) * rng.uniform(0.5, 3, 4) + rng.normal(0, 2, 4)
    w = rng.random(50) / 40  # sum about 1.25, not normalised
    val, _ = dwr_objective(w, X, 0.05, 0.02)
    assert val == pytest.approx(literal_objective(w, X, 0.05, 0.02), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dwr_gradient_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    X = correlated(n=30, d=4, seed=seed) + rng.normal(0, 1, 4)
    w = rng.random(30) / 20
    _, grad = dwr_objective(w, X, 0.1, 0.05)
    h = 1e-6
    fd = np.array([(dwr_objective(w + h * e, X, 0.1, 0.05, return_grad=False)
                    - dwr_objective(w - h * e, X, 0.1, 0.05, return_grad=False)) / (2 * h) for e in np.eye(30)])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8 * np.abs(fd).max())
    # and scipy's forward differences agree too
    fwd = approx_fprime(w, lambda v: dwr_objective(v, X, 0.1, 0.05, return_grad=False), 1e-8)
    np.testing.assert_allclose(grad, fwd, rtol=1e-3, atol=1e-5 * np.abs(fd).max())


def test_dwr_objective_with_all_weights_zero_is_finite():
    val, grad = dwr_objective(np.zeros(5), correlated(n=5), 0.05, 0.05)
    assert val == 0.05 and np.all(grad < 0)  # the mass penalty pushes every weight up


def test_dwr_reported_objective_is_the_objective_of_the_solution():
    X = correlated(n=300, seed=1)
    est = DWRWeighter().fit(X)
    w_raw = est.weights_ * est.sum_w_ / X.shape[0]  # back to the optimiser's scale (sum about 1)
    assert est.objective_ == pytest.approx(literal_objective(w_raw, X, 0.05, 0.05), rel=1e-9)
    assert est.diagnostics_["objective"] == est.objective_
    uniform = np.full(X.shape[0], 1 / X.shape[0])
    assert est.objective_ < literal_objective(uniform, X, 0.05, 0.05)


def test_lbfgs_reaches_at_most_the_adam_objective_much_faster():
    X, _ = synthetic(n=2000)
    lbfgs = DWRWeighter().fit(X)
    adam = DWRWeighter(solver="adam", adam_steps=5000).fit(X)
    assert lbfgs.objective_ <= adam.objective_
    assert lbfgs.n_iter_ < 100 and adam.n_iter_ == 5000
    assert lbfgs.converged_


def test_dwr_tol_zero_goes_further_and_max_iter_caps():
    X = correlated(n=300, seed=2)
    default = DWRWeighter().fit(X)
    deeper = DWRWeighter(tol=0.0, max_iter=500).fit(X)
    assert deeper.objective_ <= default.objective_
    capped = DWRWeighter(tol=0.0, max_iter=3).fit(X)
    assert capped.n_iter_ <= 3 and not capped.converged_


def test_dwr_weights_decorrelate():
    X = correlated(n=500, seed=3)
    est = DWRWeighter().fit(X)
    assert est.diagnostics_["max_abs_corr"] < 0.5 * weighted_corr(X, np.ones(len(X)))
    assert est.diagnostics_["max_abs_corr"] == pytest.approx(weighted_corr(X, est.weights_), rel=1e-9)


def test_dwr_is_deterministic_and_ignores_random_state():
    X = correlated(seed=4)
    a = DWRWeighter(random_state=0).fit(X).weights_
    b = DWRWeighter(random_state=123).fit(X).weights_
    np.testing.assert_array_equal(a, b)


def test_dwr_fit_grid_equals_separate_fits():
    X = correlated(seed=5)
    points = DWRWeighter.grid_points()
    assert len(points) == 9
    grid = DWRWeighter.fit_grid(X, points, random_state=0)
    for p, w in zip(points, grid):
        np.testing.assert_allclose(w, DWRWeighter(**p).fit(X).weights_, rtol=1e-12)


def test_dwr_bad_parameters():
    X = correlated()
    for params in ({"solver": "sgd"}, {"lambda1": -1}, {"tol": float("nan")}, {"max_iter": 0}, {"adam_steps": 1.5}):
        with pytest.raises(OodfsError, match="dwr"):
            DWRWeighter(**params).fit(X)


# -- SRDO --------------------------------------------------------------------------------------
def test_mlp_gradient_matches_autograd():
    import torch

    g = torch.Generator().manual_seed(0)
    net = _MLP(6, (30, 10), g)
    x = torch.randn(64, 6, generator=g)
    y = (torch.rand(64, generator=g) > 0.5).float()
    params = [p.clone().requires_grad_(True) for p in net.params]
    h = x
    for layer in range(3):
        h = h @ params[2 * layer] + params[2 * layer + 1]
        if layer < 2:
            h = torch.relu(h)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(h[:, 0], y)
    loss.backward()
    mine = net.gradient(x, y, with_loss=True)
    assert mine == pytest.approx(loss.item(), rel=1e-6)
    for p, gr in zip(params, net.grads):
        torch.testing.assert_close(gr, p.grad, rtol=1e-5, atol=1e-7)


def test_mlp_adam_step_matches_torch_adam():
    import torch

    g = torch.Generator().manual_seed(1)
    net = _MLP(4, (5, 3), g)
    x = torch.randn(32, 4, generator=g)
    y = (torch.rand(32, generator=g) > 0.5).float()
    theta = net.theta.clone().requires_grad_(True)
    opt = torch.optim.Adam([theta], lr=0.01)
    for _ in range(5):
        net.gradient(x, y)
        theta.grad = net.grad.clone()
        opt.step()
        net.adam_step(0.01)
        with torch.no_grad():  # keep the autograd-free copy on the same point
            torch.testing.assert_close(net.theta, theta.detach(), rtol=1e-5, atol=1e-7)


def test_srdo_weights_mean_one_and_clipped():
    X = correlated(n=400, seed=6)
    for gamma in (5, 10, 20):
        est = SRDOWeighter(gamma=gamma, random_state=0, **FAST_SRDO).fit(X)
        w = est.weights_
        assert w.mean() == pytest.approx(1.0) and np.all(w > 0)
        assert w.max() / w.min() <= gamma**2 * (1 + 1e-9)
        raw = clip_ratio(est.log_ratio_, gamma)
        assert raw.min() >= 1 / gamma * (1 - 1e-12) and raw.max() <= gamma * (1 + 1e-12)
        np.testing.assert_allclose(w, raw / raw.mean())
        for key in ("ess", "ess_fraction", "max_weight", "max_abs_corr", "frac_clipped_low", "frac_clipped_high"):
            assert np.isfinite(est.diagnostics_[key])


def test_srdo_weights_decorrelate():
    X = correlated(n=1000, seed=7)
    est = SRDOWeighter(random_state=0, epochs=60).fit(X)
    assert est.diagnostics_["max_abs_corr"] < 0.8 * weighted_corr(X, np.ones(len(X)))


def test_srdo_deterministic_per_random_state():
    X = correlated(seed=8)
    a = SRDOWeighter(random_state=3, **FAST_SRDO).fit(X).weights_
    b = SRDOWeighter(random_state=3, **FAST_SRDO).fit(X).weights_
    c = SRDOWeighter(random_state=4, **FAST_SRDO).fit(X).weights_
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_srdo_leaves_global_torch_state_alone():
    import torch

    torch.set_num_threads(2)
    try:
        torch.manual_seed(0)
        expected = torch.rand(3)
        torch.manual_seed(0)
        SRDOWeighter(random_state=0, **FAST_SRDO).fit(correlated(seed=9))
        assert torch.equal(torch.rand(3), expected)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(1)


def test_srdo_fit_grid_trains_once_and_equals_separate_fits(monkeypatch):
    import oodfs_plugins.independence.srdo as srdo

    X = correlated(seed=10)
    calls = []
    real = srdo.density_ratio_logits
    monkeypatch.setattr(srdo, "density_ratio_logits", lambda *a, **k: calls.append(1) or real(*a, **k))
    points = [dict(gamma=g, **FAST_SRDO) for g in (5, 10, 20)]
    grid = SRDOWeighter.fit_grid(X, points, random_state=7)
    assert len(calls) == 1
    for p, w in zip(points, grid):
        np.testing.assert_array_equal(w, SRDOWeighter(**p, random_state=7).fit(X).weights_)
    # points that differ in more than gamma get their own classifier
    SRDOWeighter.fit_grid(X, [dict(gamma=5, **FAST_SRDO), dict(gamma=5, epochs=21, batch_size=256)], random_state=7)
    assert len(calls) == 1 + 3 + 2  # the grid, the three separate fits, then two classifiers


def test_srdo_constant_training_data_gives_uniform_weights():
    X = np.ones((20, 3))
    logits, _, _ = density_ratio_logits(X, 0)
    np.testing.assert_array_equal(logits, 0.0)
    np.testing.assert_array_equal(SRDOWeighter(random_state=0).fit(X).weights_, 1.0)


def test_srdo_bad_parameters():
    X = correlated()
    for params in ({"gamma": 0.5}, {"epochs": 0}, {"batch_size": True}, {"lr_start": 0}, {"hidden_layer_sizes": (30, 0)},
                   {"hidden_layer_sizes": 3}):
        with pytest.raises(OodfsError, match="srdo"):
            SRDOWeighter(**params).fit(X)


# -- both, through the selector -----------------------------------------------------------------
WEIGHTERS = [pytest.param(DWRWeighter, {}, id="dwr"), pytest.param(SRDOWeighter, FAST_SRDO, id="srdo")]


def test_registered_through_the_hook():
    from oodfs_plugins import independence

    assert independence.oodfs_weighters() == [DWRWeighter, SRDOWeighter]
    assert oodfs.get_weighter("dwr") is DWRWeighter and oodfs.get_weighter("srdo") is SRDOWeighter
    assert oodfs.get_selector("dwr").weighter_class is DWRWeighter
    for cls in (DWRWeighter, SRDOWeighter):
        assert oodfs.api.describe(cls)
        assert cls.default_params() in cls.grid_points()


@pytest.mark.parametrize("cls, params", WEIGHTERS)
def test_weights_work_as_sklearn_sample_weight(cls, params):
    from sklearn.linear_model import LinearRegression

    X, y = synthetic(n=500, run=1)
    w = cls(random_state=0, **params).fit(X).weights_
    coef = LinearRegression().fit(X, y, sample_weight=w).coef_
    np.testing.assert_allclose(coef, weighted_least_squares(X, y, w), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("cls, params", WEIGHTERS)
def test_nan_is_a_clear_error(cls, params):
    X, y = synthetic(n=200)
    X[3, 2] = np.nan
    with pytest.raises(OodfsError, match="NaN in X, column 2"):
        cls(**params).fit(X)
    with pytest.raises(OodfsError, match="NaN in X"):
        oodfs.selector_for_weighter(cls)(**params).fit(X, y)


@pytest.mark.parametrize("cls, params", WEIGHTERS)
def test_constant_column(cls, params):
    """The weighter handles it (the column is independent of everything); WLS cannot score it."""
    X, y = synthetic(n=300)
    X[:, 6] = 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", oodfs.WeightCollapseWarning)
        w = cls(random_state=0, **params).fit(X).weights_
    assert np.all(np.isfinite(w)) and w.mean() == pytest.approx(1.0)
    with pytest.raises(OodfsError, match="column 6 is constant"):
        oodfs.selector_for_weighter(cls)(random_state=0, **params).fit(X, y)


@pytest.mark.parametrize("cls, params", WEIGHTERS)
def test_fewer_rows_than_features_plus_one(cls, params):
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((8, 10)), rng.standard_normal(8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", oodfs.WeightCollapseWarning)
        w = cls(random_state=0, **params).fit(X).weights_  # weights alone are fine
        assert np.all(np.isfinite(w))
        with pytest.raises(OodfsError, match="n >= d \\+ 1"):
            oodfs.selector_for_weighter(cls)(random_state=0, **params).fit(X, y)


@pytest.mark.parametrize("cls, params", WEIGHTERS)
def test_single_feature_gives_uniform_weights(cls, params):
    X = np.random.default_rng(0).standard_normal((100, 1))
    w = cls(random_state=0, **params).fit(X).weights_
    if cls is DWRWeighter:  # no pair to decorrelate: the penalties keep the weights equal
        np.testing.assert_allclose(w, 1.0, rtol=1e-9)
    else:  # permuting one column changes nothing: the classifier can only learn noise
        assert w.max() / w.min() < 3


# -- quality (SPEC section 4; the paper's feature-ranking table) ----------------------------------
_FITS: dict = {}


def selector_fit(cls, setting, r, run):
    key = (cls, setting, r, run)
    if key not in _FITS:
        X, y = synthetic(setting=setting, r=r, run=run)
        _FITS[key] = cls(random_state=run).fit(X, y)
    return _FITS[key]


@pytest.mark.slow
@pytest.mark.parametrize("cls", [DWR, SRDO], ids=["dwr", "srdo"])
@pytest.mark.parametrize("run", range(5))
def test_quality_poly_r2_5_default_point(cls, run):
    """SPEC section 4: F1 = 1 and rank average = 3 (S1..S5 in the top five), poly, r_tr = 2.5."""
    sel = selector_fit(cls, "poly", 2.5, run)
    assert set(sel.ranking_[:5].tolist()) == set(S), sel.ranking_
    assert f1_at_k(sel.scores_, S, 5) == 1.0
    assert rank_average(sel.scores_, S) == 3.0


#: the paper's table (one run per cell) in the default run: its hardest cells; all cells x runs
#: 0-4 with OODFS_FULL_QUALITY=1 (~2 min)
TABLE_CELLS = [("poly", 3.0), ("mlp", 1.5), ("mlp", 3.0)]
FULL = os.environ.get("OODFS_FULL_QUALITY") == "1"
ALL_CELLS = [(s, r, run) for s in ("poly", "mlp") for r in (1.5, 2.0, 2.5, 3.0) for run in range(5)]


def _table_param(setting, r, run):
    marks = []
    if setting == "mlp" and run == 2:
        # not SRDO's fault: this MLP cancels S1's linear effect. Under the product of the training
        # marginals the least-squares coefficient of S1 on f(S) is 0.005 (others 0.33-1.17), so
        # no |WLS coefficient| score can put S1 in the top five.
        marks.append(pytest.mark.xfail(reason="mlp_seed=2: S1 has no linear effect (ideal |coef| 0.005)", strict=False))
    return pytest.param(setting, r, run, marks=marks, id=f"{setting}-{r}-run{run}")


@pytest.mark.slow
@pytest.mark.parametrize("setting, r, run", [_table_param(s, r, run) for s, r, run in
                                             (ALL_CELLS if FULL else [(s, r, 0) for s, r in TABLE_CELLS])])
def test_srdo_ranking_table(setting, r, run):
    """The paper's feature-ranking table: SRDO puts S1..S5 in the first five places for r_tr in
    {1.5, 2.0, 2.5, 3.0}, in both settings (mlp: run i uses mlp_seed = i)."""
    sel = selector_fit(SRDO, setting, r, run)
    assert set(sel.ranking_[:5].tolist()) == set(S), (setting, r, run, sel.ranking_)
