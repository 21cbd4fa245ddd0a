"""STG's engines: the numba kernel trains the lambda grid in one call, each lambda exactly as a
separate fit, and computes the torch engine's steps up to float rounding."""

from __future__ import annotations

import numpy as np
import pytest

import oodfs
from oodfs_plugins.baselines.stg import ENGINES, STG


def _problem(n=400, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X[:, 0] + np.tanh(2 * X[:, 1]) + 0.3 * rng.standard_normal(n)
    w = rng.uniform(0.2, 3.0, n)
    return X, y, w


@pytest.mark.parametrize("weighted", [False, True])
def test_numba_grid_is_identical_to_separate_fits(weighted):
    X, y, w = _problem()
    w = w if weighted else None
    points = STG.grid_points()[::-1]
    grid = STG.fit_grid(X, y, points, random_state=5, sample_weight=w)
    for p, got in zip(points, grid):
        alone = STG(**p, random_state=5).fit(X, y, sample_weight=w).scores_
        np.testing.assert_array_equal(got, alone)  # bit for bit
    assert grid[0].mean() < grid[-1].mean() - 0.02  # lambda = 10 closes gates more than 0.001


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"penalty_reduction": "sum", "lam": 0.5},
        {"hidden_layer_sizes": (8,)},
        {"hidden_layer_sizes": (7, 5, 3)},
        {"sigma": 0.25, "batch_size": 64},
    ],
)
def test_engines_compute_the_same_steps(params):
    """Two epochs of each engine on the same draws: gates equal up to float rounding (a wrong
    gradient, update or draw is off by far more)."""
    X, y, w = _problem()
    kw = dict(max_epochs=2, random_state=3, **params)
    a = STG(engine="numba", **kw).fit(X, y, sample_weight=w).scores_
    b = STG(engine="torch", **kw).fit(X, y, sample_weight=w).scores_
    np.testing.assert_allclose(a, b, rtol=0, atol=2e-5)
    assert (
        np.abs(a - STG(engine="numba", **{**kw, "random_state": 4}).fit(X, y, sample_weight=w).scores_).max()
        > 1e-3
    )


def test_bad_engine_names_the_choices():
    X, y, _ = _problem(50)
    assert ENGINES == ("numba", "torch")
    with pytest.raises(oodfs.OodfsError, match="stg engine must be one of 'numba', 'torch'; got 'gpu'"):
        STG(engine="gpu").fit(X, y)
