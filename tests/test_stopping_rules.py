"""The declared stopping rules of the iterative methods (docs/PROTOCOL.md, "Iterative methods'
stopping rules"): ``converged`` means the declared tolerance was met, and a fit that ended before
it is marked by the diagnostics' suspect rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from oodfs.contract.registry import registry
from oodfs_plugins.baselines.stg import STG, loss_settled
from oodfs_plugins.independence import DWRWeighter, SRDOWeighter
from oodfs_plugins.independence.svi import SVI, SVID, MaskedDWR

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def correlated(n=400, d=5, rho=0.8, seed=0):
    rng = np.random.default_rng(seed)
    cov = np.full((d, d), rho) + (1 - rho) * np.eye(d)
    X = rng.multivariate_normal(np.zeros(d), cov, size=n)
    y = X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y


def test_loss_settled_reads_the_last_two_windows():
    flat = np.r_[np.linspace(1.0, 0.5, 20), np.full(20, 0.5)]
    falling = np.linspace(1.0, 0.2, 40)  # 2 % per epoch to the end
    assert loss_settled(flat, window=4, tol=0.01)
    assert not loss_settled(falling, window=4, tol=0.01)
    assert loss_settled(falling, window=4, tol=0.5)  # a looser tolerance is met
    assert not loss_settled(flat[:7], window=4, tol=0.01)  # shorter than two windows: not shown
    assert not loss_settled(np.r_[flat, np.nan], window=4, tol=0.01)
    assert loss_settled(np.r_[flat, 0.52], window=4, tol=0.01)  # a rising loss has stopped falling


def test_srdo_reports_its_stop_its_loss_and_what_the_weights_kept():
    X, _ = correlated()
    fixed = SRDOWeighter(epochs=30, batch_size=256, random_state=0).fit(X)
    g = fixed.diagnostics_
    assert g["n_iter"] == 30 and len(fixed.losses_) == 30
    assert g["train_loss"] == fixed.losses_[-1]
    assert g["converged"] == loss_settled(fixed.losses_, 3, SRDOWeighter.converge_tol)
    assert 0 < g["corr_kept"] < 1  # the density-ratio weights lower the largest correlation
    # the loss-plateau stop (the paper profile's rule): converged iff it ended training early
    plateau = SRDOWeighter(epochs=400, batch_size=256, stop_tol=1e-2, stop_patience=2, random_state=0).fit(X)
    assert plateau.n_epochs_ < 400 and plateau.diagnostics_["converged"]
    capped = SRDOWeighter(epochs=3, batch_size=256, stop_tol=0.0, stop_patience=10, random_state=0).fit(X)
    assert capped.n_epochs_ == 3 and not capped.diagnostics_["converged"]


def test_srdo_grid_diagnostics_match_separate_fits():
    X, _ = correlated()
    grid = SRDOWeighter.fit_grid_detailed(X, [{"gamma": 5, "epochs": 20}, {"gamma": 20, "epochs": 20}], 0)
    for fit, gamma in zip(grid, (5, 20)):
        alone = SRDOWeighter(gamma=gamma, epochs=20, random_state=0).fit(X).diagnostics_
        for key in ("converged", "train_loss", "corr_kept", "n_iter"):
            assert fit.diagnostics[key] == alone[key]


@pytest.mark.parametrize("engine", ["numba", "torch"])
def test_stg_reports_whether_its_training_loss_settled(engine):
    X, y = correlated(n=300)
    short = STG(max_epochs=10, batch_size=32, engine=engine, random_state=0).fit(X, y)
    assert len(short.losses_) == 10 and np.all(np.isfinite(short.losses_))
    # lr 1e-3 from a random start: the loss is still falling after 10 epochs of 10 steps
    assert short.losses_[-1] < short.losses_[0]
    assert short.diagnostics_ == {"converged": False, "train_loss": short.losses_[-1], "n_iter": 10}
    long = STG(max_epochs=1500, batch_size=300, engine=engine, random_state=0).fit(X, y)
    assert long.diagnostics_["converged"]  # 1500 full-batch steps: settled
    fits = STG.fit_grid_detailed(
        X, y, [{"lam": 0.1, "max_epochs": 10, "batch_size": 32, "engine": engine}], random_state=0
    )
    assert fits[0].diagnostics == short.diagnostics_


def test_stg_engines_report_the_same_losses():
    X, y = correlated(n=300)
    a = STG(max_epochs=5, engine="numba", random_state=0).fit(X, y).losses_
    b = STG(max_epochs=5, engine="torch", random_state=0).fit(X, y).losses_
    np.testing.assert_allclose(a, b, rtol=1e-4)


def test_masked_dwr_converged_means_dwrs_tolerance_not_scipys_status():
    """SVI's masked DWR applies DWR's rule: with every pair in the mask it reports what DWR
    reports, also on a run scipy ends with status 0 on its relative-reduction stop (a stall)."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 5))
    X[:, 1] = 0.8 * X[:, 0] + 0.6 * X[:, 1]
    ones = np.ones((5, 5))
    assert MaskedDWR(mask=ones).fit(X).converged_ and DWRWeighter().fit(X).converged_
    stalled = MaskedDWR(mask=ones, tol=1e-12, max_iter=100000).fit(X)
    assert stalled.n_iter_ < 100000  # scipy's own stop, not the budget
    assert not stalled.converged_


def test_svi_rounds_converge_when_the_averaged_ratios_settle():
    t = SVI.converge_tol
    before = np.array([0.9, 0.1, 0.5])
    assert SVI._settled(before, before + t / 2, 0.2)
    assert not SVI._settled(before, before + 2 * t, 0.2)
    assert not SVI._settled(np.array([0.9, 0.19, 0.5]), np.array([0.9, 0.21, 0.5]), 0.2)  # the set changed
    assert SVI._settled(None, before, 0.2) is None  # one round (SVI^d): nothing iterates
    X, y = correlated(n=300)
    g = SVI(rounds=3, stg_epochs=200, random_state=0).fit(X, y).diagnostics_
    assert isinstance(g["converged"], bool) and 0 <= g["dwr_converged"] <= 1
    assert SVID(stg_epochs=200, random_state=0).fit(X, y).diagnostics_["converged"] is None
    assert (
        SVI(rounds=2, stg_epochs=100, dwr="community", dwr_steps=50).fit(X, y).diagnostics_["dwr_converged"]
        is None
    )


def test_a_fit_that_ended_before_its_tolerance_is_suspect():
    rule = registry().entries("metric")["converged"].cls.suspect
    assert list(rule.flags(pd.Series([0.0, 1.0, np.nan]))) == [True, False, False]
    # what the runner stores for a fixed-budget STG fit that is still descending: flagged
    X, y = correlated(n=300)
    fit = STG.fit_grid_detailed(X, y, [{"max_epochs": 10, "batch_size": 32}], random_state=0)[0]
    assert rule.flags(pd.Series([float(fit.diagnostics["converged"])]))[0]


@pytest.mark.parametrize("engine_rows", [30, 300 * 3, 300 * 7])
def test_stg_draws_in_chunks_give_the_same_gates(monkeypatch, engine_rows):
    """The numba engine draws permutations a chunk of epochs at a time (memory bounded in
    epochs x n): any chunk size gives the same gates and losses, bit for bit, for every lambda."""
    import oodfs_plugins.baselines.stg as stg

    X, y = correlated(n=300)
    points = [
        {"lam": 0.01, "max_epochs": 10, "batch_size": 64},
        {"lam": 1.0, "max_epochs": 10, "batch_size": 64},
    ]
    whole = STG.fit_grid_detailed(X, y, points, random_state=0)
    monkeypatch.setattr(stg, "DRAW_CHUNK_ROWS", engine_rows)
    chunked = STG.fit_grid_detailed(X, y, points, random_state=0)
    for a, b in zip(whole, chunked):
        np.testing.assert_array_equal(a.values, b.values)
        assert a.diagnostics == b.diagnostics
