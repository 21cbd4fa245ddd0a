"""DWR and SRDO weighters (plugins/independence): objective, solvers, weights, quality, bad input.

The quality tests fit on n = 10000 rows of the synthetic data and take ~30 s together (SRDO
~3 s per fit); they are marked ``slow`` and stay in the default run.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import approx_fprime

import oodfs
from oodfs import OodfsError, weighted_least_squares
from oodfs.contract.metrics import f1_at_k, rank_average
from oodfs.run.kernels import avx2_cpu
from oodfs_plugins.independence import DWRWeighter, SRDOWeighter, dwr_objective
from oodfs_plugins.independence.srdo import _MLP, clip_ratio, density_ratio_logits

DWR = oodfs.selector_for_weighter(DWRWeighter)
SRDO = oodfs.selector_for_weighter(SRDOWeighter)
S = tuple(range(5))

#: cheap SRDO settings for the tests that are not about quality
FAST_SRDO = dict(epochs=20, batch_size=256)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


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
    fd = np.array(
        [
            (
                dwr_objective(w + h * e, X, 0.1, 0.05, return_grad=False)
                - dwr_objective(w - h * e, X, 0.1, 0.05, return_grad=False)
            )
            / (2 * h)
            for e in np.eye(30)
        ]
    )
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


def test_dwr_converged_means_the_tolerance_is_met_not_that_the_solver_stopped():
    """converged_ is checked at the returned point: a run scipy ends on its relative-reduction
    rule (a stall) before the tolerance is met reports False; the default run meets it."""
    X = correlated(n=300, seed=2)
    n = X.shape[0]

    def projected_gradient_max(u):
        _, g = dwr_objective(u / n, X, 0.05, 0.05)
        g = g / n
        return np.abs(np.where(u > 0, g, np.minimum(g, 0.0))).max()

    start = projected_gradient_max(np.ones(n))
    default = DWRWeighter().fit(X)
    assert default.converged_ and default.diagnostics_["converged"]
    assert projected_gradient_max(default.weights_ * default.sum_w_) <= 5e-3 * start
    stalled = DWRWeighter(tol=1e-12, max_iter=100000).fit(X)
    assert stalled.n_iter_ < 100000  # scipy's own stop, not the budget
    assert not stalled.converged_


def test_dwr_corr_kept_flags_a_fit_that_leaves_the_features_correlated():
    """d = 10: DWR lowers V4-V5's correlation by a third (corr_kept 0.65, not suspect); d = 200 at
    n = 2000: the objective's minimum is near uniform and corr_kept > 0.9, which the declared
    suspect rule flags (docs/PROTOCOL.md, "DWR's stop and its decorrelation check")."""
    import pandas as pd

    from oodfs.contract.registry import registry
    from oodfs_plugins.environments.synthetic import Synthetic

    rule = registry().entries("metric")["corr_kept"].cls.suspect
    kept = {}
    for d in (10, 200):
        X, _ = Synthetic(d_v=d - 5).sample(2.5, 2000, 0)
        est = DWRWeighter().fit(X)
        kept[d] = est.diagnostics_["corr_kept"]
        assert kept[d] == pytest.approx(est.diagnostics_["max_abs_corr"] / weighted_corr(X, np.ones(2000)))
    assert kept[10] < 0.8 and kept[200] > 0.9
    assert list(rule.flags(pd.Series([kept[10], kept[200]]))) == [False, True]


def test_dwr_corr_kept_is_not_reported_without_a_correlation_to_remove():
    X = np.random.default_rng(0).standard_normal((500, 4))  # largest |corr| ~0.1
    assert DWRWeighter().fit(X).diagnostics_["corr_kept"] is None


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


@pytest.mark.parametrize(
    "params, match",
    [
        ({"solver": "sgd"}, "dwr: solver must be one of 'lbfgs', 'adam'; got 'sgd'"),
        ({"adam_scale": "sum"}, "dwr: adam_scale must be one of 'mean1', 'sum1'; got 'sum'"),
        ({"lambda1": -1}, "dwr: lambda1 must be a finite number >= 0"),
        ({"tol": float("nan")}, "dwr: tol must be a finite number >= 0"),
        ({"tol": -1e-3}, "dwr: tol must be a finite number >= 0"),
        ({"adam_lr": 0.0}, "dwr: adam_lr must be a finite number > 0"),
        ({"max_iter": 0}, "dwr: max_iter must be a positive integer"),
        ({"adam_steps": 0}, "dwr: adam_steps must be a positive integer"),
        ({"adam_steps": 1.5}, "dwr: adam_steps must be a positive integer"),
    ],
)
def test_dwr_bad_parameters(params, match):
    X = correlated()
    with pytest.raises(OodfsError, match=match):
        DWRWeighter(**params).fit(X)
    with pytest.raises(OodfsError, match=match):
        DWRWeighter.fit_grid(X, [params])


def test_dwr_adam_is_torch_adam_projected():
    """The numpy Adam is torch.optim.Adam's update, then the projection onto w >= 0; on w
    (adam_scale "sum1") the learning rate applies to w itself."""
    import torch

    X = correlated(n=60, seed=11)
    n = X.shape[0]
    for scale, factor in (("mean1", 1.0), ("sum1", float(n))):
        v = torch.tensor(np.ones(n) / factor, requires_grad=True)
        opt = torch.optim.Adam([v], lr=2e-3)
        for _ in range(40):
            _, g = dwr_objective(v.detach().numpy() / (n / factor), X, 0.05, 0.02)
            v.grad = torch.from_numpy(g)  # dF/dw: for "mean1" scaled by 1/n, which Adam ignores up to eps
            if scale == "mean1":
                v.grad = v.grad / n
            opt.step()
            with torch.no_grad():
                v.clamp_(min=0.0)
        est = DWRWeighter(
            lambda1=0.05, lambda2=0.02, solver="adam", adam_lr=2e-3, adam_steps=40, adam_scale=scale
        ).fit(X)
        want = v.detach().numpy() * factor  # the mean-1 scale
        np.testing.assert_allclose(est.weights_, want / want.mean(), rtol=1e-9, atol=1e-12)
        assert est.n_iter_ == 40


def test_dwr_adam_scale_and_lr_change_the_solution():
    """lr 0.001 on w (sum 1) is lr 0.001 * n on the mean-1 weights: a few steps already
    concentrate the weights, where the same steps on mean-1 weights barely move them."""
    X, _ = synthetic(n=2000)
    on_u = DWRWeighter(solver="adam", adam_steps=100).fit(X)
    on_w = DWRWeighter(solver="adam", adam_steps=100, adam_scale="sum1").fit(X)
    same_as_w = DWRWeighter(solver="adam", adam_steps=100, adam_lr=1e-3 * 2000).fit(X)
    assert on_u.diagnostics_["ess_fraction"] > 0.9
    assert on_w.diagnostics_["ess_fraction"] < 0.5 and on_w.objective_ < 0.5 * on_u.objective_
    # Adam's step is invariant to the gradient's scale up to its eps (1e-8, which weighs n times
    # more on the mean-1 scale): the two readings are one lr apart
    np.testing.assert_allclose(same_as_w.weights_, on_w.weights_, rtol=2e-2, atol=1e-6)
    assert same_as_w.objective_ == pytest.approx(on_w.objective_, rel=1e-3)


def test_dwr_adam_converged_reports_the_lbfgs_rule():
    """Adam has a fixed budget; converged_ says whether its last point meets L-BFGS-B's rule."""
    X = correlated(n=300, seed=12)
    few = DWRWeighter(solver="adam", adam_steps=2).fit(X)
    assert not few.converged_
    loose = DWRWeighter(solver="adam", adam_steps=2, tol=1.0).fit(X)  # the starting gradient meets tol 1
    assert loose.converged_ and loose.diagnostics_["converged"] is True


def test_dwr_diagnostics_per_grid_point():
    X = correlated(seed=13)
    points = [{"lambda1": 0.02, "lambda2": 0.1}, {"tol": 0.0}, {"solver": "adam", "adam_steps": 30}]
    fits = DWRWeighter.fit_grid_detailed(X, points)
    for p, f in zip(points, fits):
        est = DWRWeighter(**p).fit(X)
        for key in ("ess", "ess_fraction", "max_weight", "max_abs_corr", "objective", "n_iter", "converged"):
            assert f.diagnostics[key] == pytest.approx(est.diagnostics_[key], rel=1e-9), key
    assert fits[1].diagnostics["n_iter"] > fits[0].diagnostics["n_iter"]
    assert fits[2].diagnostics["n_iter"] == 30


def test_dwr_collapse_warns_from_fit_grid_naming_the_point():
    """Run to convergence on a small poly sample, DWR's weights collapse (ESS ~2 % of n)."""
    X, _ = synthetic(n=500)
    with pytest.warns(
        oodfs.WeightCollapseWarning,
        match=r"weighter 'dwr' at \{\"lambda1\": 0.05, \"lambda2\": 0.05\}: weights collapsed "
        r"\(ess_fraction 0\.0",
    ):
        fits = DWRWeighter.fit_grid_detailed(X, [{"tol": 0.0}])
    assert fits[0].diagnostics["ess_fraction"] < DWRWeighter.collapse_ess_fraction
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DWRWeighter.fit_grid(correlated(seed=14), [{}])  # healthy weights: silent


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
        for key in (
            "ess",
            "ess_fraction",
            "max_weight",
            "max_abs_corr",
            "frac_clipped_low",
            "frac_clipped_high",
        ):
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
    SRDOWeighter.fit_grid(
        X, [dict(gamma=5, **FAST_SRDO), dict(gamma=5, epochs=21, batch_size=256)], random_state=7
    )
    assert len(calls) == 1 + 3 + 2  # the grid, the three separate fits, then two classifiers


def test_srdo_constant_training_data_gives_uniform_weights():
    X = np.ones((20, 3))
    logits, _, _ = density_ratio_logits(X, 0)  # logits, loss per epoch, epochs run
    np.testing.assert_array_equal(logits, 0.0)
    np.testing.assert_array_equal(SRDOWeighter(random_state=0).fit(X).weights_, 1.0)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"gamma": 0.5}, "srdo: gamma must be a finite number >= 1"),
        ({"epochs": 0}, "srdo: epochs must be a positive integer"),
        ({"batch_size": True}, "srdo: batch_size must be a positive integer"),
        ({"stop_patience": 0}, "srdo: stop_patience must be a positive integer"),
        ({"lr_start": 0}, "srdo: lr_start must be a finite number > 0"),
        ({"lr": -1e-3}, "srdo: lr must be a finite number > 0"),
        ({"lr_schedule": "cosine"}, "srdo: lr_schedule must be one of 'warm', 'constant'; got 'cosine'"),
        ({"warm_fraction": 1.5}, r"srdo: warm_fraction must be a number in \[0, 1\]"),
        ({"fresh_q": "yes"}, "srdo: fresh_q must be True or False"),
        ({"stop_tol": -1.0}, "srdo: stop_tol must be None"),
        ({"hidden_layer_sizes": (30, 0)}, "srdo: hidden_layer_sizes must be positive"),
        ({"hidden_layer_sizes": 3}, "srdo: hidden_layer_sizes must be a sequence"),
    ],
)
def test_srdo_bad_parameters(params, match):
    X = correlated()
    with pytest.raises(OodfsError, match=match):
        SRDOWeighter(**params).fit(X)
    with pytest.raises(OodfsError, match=match):
        SRDOWeighter.fit_grid(X, [{"gamma": 5, **params}])


def test_srdo_schedules():
    """ "constant" trains at lr throughout: the same run as "warm" with no warm phase, or with
    lr_start = lr; the default warm schedule is a different run."""
    X = correlated(seed=15)
    kw = dict(random_state=2, **FAST_SRDO)
    constant = SRDOWeighter(lr_schedule="constant", **kw).fit(X).log_ratio_
    np.testing.assert_array_equal(constant, SRDOWeighter(warm_fraction=0.0, **kw).fit(X).log_ratio_)
    np.testing.assert_array_equal(constant, SRDOWeighter(lr_start=1e-3, **kw).fit(X).log_ratio_)
    np.testing.assert_array_equal(
        constant, SRDOWeighter(lr_schedule="constant", lr_start=0.5, **kw).fit(X).log_ratio_
    )
    warm = SRDOWeighter(**kw).fit(X).log_ratio_
    assert not np.allclose(warm, constant)
    faster = SRDOWeighter(lr_schedule="constant", lr=1e-2, **kw).fit(X).log_ratio_
    assert not np.allclose(faster, constant)


def test_srdo_one_q_is_memorised():
    """fresh_q=False draws Q once: a classifier with room to spare learns that one draw (low
    training loss), which a fresh Q every epoch does not allow."""
    X = correlated(n=200, seed=16)
    kw = dict(epochs=150, batch_size=64, hidden_layer_sizes=(64, 64), random_state=0)
    fresh = SRDOWeighter(**kw).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", oodfs.WeightCollapseWarning)
        once = SRDOWeighter(fresh_q=False, **kw).fit(X)
    assert once.train_loss_ < 0.25 * fresh.train_loss_
    # it tells P's rows from that one Q: nearly every training row gets the lowest weight
    assert once.diagnostics_["frac_clipped_low"] > 0.9 > fresh.diagnostics_["frac_clipped_low"]


def test_srdo_loss_plateau_stop():
    """stop_tol: stop once the epoch loss has not improved by stop_tol for more than
    stop_patience epochs (with a huge tol: epoch 1 sets the best, epochs 2.. never improve)."""
    X = correlated(seed=17)
    est = SRDOWeighter(stop_tol=10.0, stop_patience=3, epochs=50, random_state=0).fit(X)
    assert est.n_epochs_ == 3 + 2 and est.diagnostics_["n_iter"] == 5
    est = SRDOWeighter(stop_tol=None, epochs=7, random_state=0).fit(X)
    assert est.n_epochs_ == 7
    est = SRDOWeighter(stop_tol=0.0, epochs=7, random_state=0).fit(X)
    assert est.n_epochs_ <= 7 and np.isfinite(est.train_loss_)


def test_srdo_diagnostics_per_grid_point():
    X = correlated(seed=18)
    points = [dict(gamma=g, **FAST_SRDO) for g in (1.5, 5, 20)]
    fits = SRDOWeighter.fit_grid_detailed(X, points, random_state=4)
    low = [f.diagnostics["frac_clipped_low"] for f in fits]
    high = [f.diagnostics["frac_clipped_high"] for f in fits]
    assert low[0] >= low[1] >= low[2] and high[0] >= high[1] >= high[2]  # a tighter clip clips more
    assert low[0] + high[0] > low[2] + high[2]
    for p, f in zip(points, fits):
        est = SRDOWeighter(**p, random_state=4).fit(X)
        for key in (
            "ess_fraction",
            "max_weight",
            "max_abs_corr",
            "frac_clipped_low",
            "frac_clipped_high",
            "n_iter",
        ):
            assert f.diagnostics[key] == pytest.approx(est.diagnostics_[key], rel=1e-12), key
        lg = np.log(p["gamma"])
        assert f.diagnostics["frac_clipped_low"] == np.mean(est.log_ratio_ <= -lg)


def test_srdo_all_clipped_warns_from_fit_and_fit_grid():
    """Two copies of one feature: P and Q are trivially told apart, every ratio on the
    training rows is far below 1/gamma, and the clipped weights are uniform (an unweighted fit)."""
    from oodfs_plugins.independence import WeightClippingWarning

    rng = np.random.default_rng(0)
    x = rng.standard_normal(400)
    X = np.column_stack([x, x + 0.01 * rng.standard_normal(400), rng.standard_normal(400)])
    kw = dict(gamma=5, epochs=30, batch_size=128)
    match = (
        r"weighter 'srdo' at \{\"gamma\": 5\}: weights almost all clipped "
        r"\(frac_clipped_low 0\.9\d+ .*uniform"
    )
    with pytest.warns(WeightClippingWarning, match=match):
        est = SRDOWeighter(random_state=0, **kw).fit(X)
    assert est.diagnostics_["frac_clipped_low"] > 0.9 and est.diagnostics_["ess_fraction"] > 0.99
    with pytest.warns(WeightClippingWarning, match=match):
        SRDOWeighter.fit_grid(X, [kw], random_state=0)
    assert issubclass(WeightClippingWarning, oodfs.WeightCollapseWarning)  # one filter silences both
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SRDOWeighter.fit_grid(correlated(seed=19), [dict(gamma=5, **FAST_SRDO)], random_state=0)


# -- profiles ----------------------------------------------------------------------------------
def test_profiles_declare_real_parameters():
    """Each method's paper profile names only constructor parameters with valid values, and a
    grid point under it is a valid point (applied to every point of the grid)."""
    import inspect

    from oodfs_plugins.baselines.stg import STG

    for cls in (DWRWeighter, SRDOWeighter, STG):
        assert set(cls.profiles) == {"paper"}
        params = set(inspect.signature(cls.__init__).parameters) - {"self", "random_state", "k"}
        overrides = cls.profiles["paper"]
        assert overrides and set(overrides) <= params, cls.name
        assert not set(overrides) & set(cls.grid), cls.name  # a profile does not fix a grid parameter
        est = cls(**overrides)
        (est._check_params if hasattr(est, "_check_params") else est._training_params)()
        for point in cls.grid_points():
            cls(**{**point, **overrides})
    assert (
        DWRWeighter.profiles["paper"]["solver"] == "adam"
        and DWRWeighter.profiles["paper"]["adam_scale"] == "sum1"
    )
    assert (
        SRDOWeighter.profiles["paper"]["lr_schedule"] == "constant"
        and SRDOWeighter.profiles["paper"]["lr"] == 1e-3
    )


@pytest.mark.parametrize("cls", [DWRWeighter, SRDOWeighter], ids=["dwr", "srdo"])
def test_paper_profile_runs_through_fit_grid(cls):
    X = correlated(n=300, seed=20)
    overrides = {**cls.profiles["paper"], **({"adam_steps": 50} if cls is DWRWeighter else {"epochs": 15})}
    points = [{**p, **overrides} for p in cls.grid_points()[:2]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", oodfs.WeightCollapseWarning)
        fits = cls.fit_grid_detailed(X, points, random_state=0)
    assert len(fits) == 2 and all(np.isfinite(f.values).all() for f in fits)
    assert all(
        f.diagnostics["n_iter"] == (50 if cls is DWRWeighter else f.diagnostics["n_iter"]) for f in fits
    )


# -- both, through the selector -----------------------------------------------------------------
WEIGHTERS = [pytest.param(DWRWeighter, {}, id="dwr"), pytest.param(SRDOWeighter, FAST_SRDO, id="srdo")]


def test_registered_through_the_hook():
    from oodfs_plugins import independence
    from oodfs_plugins.independence.dwr_community import DWRCommunity

    assert independence.oodfs_weighters() == [DWRWeighter, SRDOWeighter, DWRCommunity]
    assert oodfs.get_weighter("dwr") is DWRWeighter and oodfs.get_weighter("srdo") is SRDOWeighter
    assert oodfs.get_selector("dwr").weighter_class is DWRWeighter
    for cls in (DWRWeighter, SRDOWeighter):
        assert oodfs.contract.api.describe(cls)
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


# -- quality (the paper's feature-ranking table: S1..S5 ranked first by SRDO and DWR) ----------
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
    """F1 = 1 and rank average = 3 (S1..S5 in the top five), poly, r_tr = 2.5, default settings."""
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
        marks.append(
            pytest.mark.xfail(reason="mlp_seed=2: S1 has no linear effect (ideal |coef| 0.005)", strict=False)
        )
    return pytest.param(setting, r, run, marks=marks, id=f"{setting}-{r}-run{run}")


@pytest.mark.slow
@pytest.mark.parametrize(
    "setting, r, run",
    [_table_param(s, r, run) for s, r, run in (ALL_CELLS if FULL else [(s, r, 0) for s, r in TABLE_CELLS])],
)
def test_srdo_ranking_table(setting, r, run):
    """The paper's feature-ranking table: SRDO puts S1..S5 in the first five places for r_tr in
    {1.5, 2.0, 2.5, 3.0}, in both settings (mlp: run i uses mlp_seed = i)."""
    sel = selector_fit(SRDO, setting, r, run)
    assert set(sel.ranking_[:5].tolist()) == set(S), (setting, r, run, sel.ranking_)


#: prints "<MKL branch> <epochs> <seconds> s <digest of the logits>" (benchmarks/references/README.md)
SRDO_CLASSIFIER = Path(__file__).resolve().parents[1] / "benchmarks" / "references" / "srdo_classifier.py"


@pytest.mark.skipif(not avx2_cpu(), reason="oodfs pins the kernels on AVX2 CPUs only")
def test_srdo_gives_the_same_bits_whatever_mkl_branch_or_numpy_vector_loops():
    """SRDO's classifier computes its matrix products with OpenBLAS's pinned kernel and the rest with
    torch's pinned vectorised operations: MKL's branch (which differs by CPU vendor) and numpy's own
    vector loops (which differ with AVX-512) change none of its bits (docs/PROTOCOL.md section 6)."""
    import subprocess
    import sys

    def digest(**env):
        base = {k: v for k, v in os.environ.items() if k not in ("MKL_CBWR", "NPY_DISABLE_CPU_FEATURES")}
        out = subprocess.run(
            [sys.executable, str(SRDO_CLASSIFIER), "--n", "2000", "--epochs", "20", "--batch-size", "256"],
            env={**base, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.split()[-1]

    pinned = digest()
    assert digest(MKL_CBWR="AUTO") == pinned
    assert digest(MKL_CBWR="AVX2") == pinned
    assert digest(NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR") == pinned
