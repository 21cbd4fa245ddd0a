"""The downstream regressor's engines: the numba kernel runs the torch engine's algorithm."""

from __future__ import annotations

import numpy as np
import pytest

from oodfs.run.downstream import ENGINES, PROFILES, fit_downstream
from oodfs.validation import OodfsError


def _data(n=1200, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.sin(X[:, 0]) - 2 * X[:, 1] * X[:, 2] + rng.normal(0, 0.3, n)
    return X, y


SUBSETS = [(0,), (0, 1, 2), (5, 3, 1), tuple(range(6))]


def test_default_engine_is_numba_and_declared_by_both_profiles():
    assert ENGINES == ("numba", "torch")
    assert PROFILES["default"]["engine"] == PROFILES["paper"]["engine"] == "numba"
    assert fit_downstream(*_data(200), [(0,)], 0, max_epochs=1).engine == "numba"


@pytest.mark.parametrize("kwargs", [{}, {"hidden": (7,)}, {"hidden": (4, 3, 2)}, {"batch_size": 100}])
def test_engines_compute_the_same_steps(kwargs):
    """A few epochs of each engine: the same initial weights, minibatches and Adam updates, so the
    networks differ by float rounding only (a different init, order or update is off by >1e-2)."""
    X, y = _data()
    a = fit_downstream(X, y, SUBSETS, 4, max_epochs=3, engine="numba", **kwargs)
    b = fit_downstream(X, y, SUBSETS, 4, max_epochs=3, engine="torch", **kwargs)
    pa, pb = a.predict(X[:300]), b.predict(X[:300])
    np.testing.assert_allclose(pa, pb, rtol=0, atol=1e-4 * np.abs(pb).max())
    np.testing.assert_allclose(a.val_rmse, b.val_rmse, rtol=1e-4)
    np.testing.assert_array_equal(a.epochs, [3] * 4)


def test_engines_share_the_schedule_and_stopping_rule():
    """Plateaus, learning-rate decay and the stop, per model: with a large min_delta the decisions
    do not hinge on rounding, so both engines stop every model at the same epoch."""
    X, y = _data()
    kw = dict(patience=3, min_delta=0.05, max_epochs=300)
    a = fit_downstream(X, y, SUBSETS, 2, engine="numba", **kw)
    b = fit_downstream(X, y, SUBSETS, 2, engine="torch", **kw)
    np.testing.assert_array_equal(a.epochs, b.epochs)
    np.testing.assert_array_equal(a.best_epoch, b.best_epoch)
    assert (a.epochs < 300).all() and len(set(a.epochs.tolist())) > 1  # each model stopped on its own
    np.testing.assert_allclose(a.rmse(X, y), b.rmse(X, y), rtol=1e-3)


def test_engines_keep_the_best_snapshot_alike():
    X, y = _data()
    kw = dict(patience=3, min_delta=0.05, max_epochs=300, restore_best=True)
    a = fit_downstream(X, y, SUBSETS, 2, engine="numba", **kw)
    b = fit_downstream(X, y, SUBSETS, 2, engine="torch", **kw)
    np.testing.assert_allclose(a.rmse(X, y), b.rmse(X, y), rtol=1e-3)
    # the snapshot is the best-validation network, so its validation RMSE is the recorded minimum
    np.testing.assert_array_equal(a.best_epoch, b.best_epoch)


def test_numba_engine_is_batch_independent_bit_for_bit():
    X, y = _data()
    target = (1, 4)
    alone = fit_downstream(X, y, [target], 9, max_epochs=20)
    for subsets, pos in (([(0,), (2, 3), target], 2), ([(4, 1)] + SUBSETS, 0)):
        models = fit_downstream(X, y, subsets, 9, max_epochs=20)
        np.testing.assert_array_equal(models.predict(X[:300])[pos], alone.predict(X[:300])[0])
        assert models.val_rmse[pos] == alone.val_rmse[0] and models.epochs[pos] == alone.epochs[0]


def test_numba_engine_learns():
    X, y = _data(3000)
    models = fit_downstream(X, y, [(0, 1, 2), (3, 4, 5)], 0)
    signal, noise = models.rmse(*_data(2000, seed=1))
    assert signal < 0.4 * noise  # the informative columns fit (sd of y ~2.1), the others cannot


def test_bad_engine_names_the_choices():
    X, y = _data(200)
    with pytest.raises(OodfsError, match="engine must be one of 'numba', 'torch', got 'jax'"):
        fit_downstream(X, y, [(0,)], 0, engine="jax")
