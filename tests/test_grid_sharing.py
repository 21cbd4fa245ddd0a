"""Work shared across a method's grid gives every point exactly its separate fit's numbers: RSW's
alphas train on one set of weightings; and SVI's rounds fit STG without its loss curve, which
leaves the gates as they are (benchmarks/grid_sharing/GRID_SHARING.md)."""

from __future__ import annotations

import numpy as np
import pytest

from oodfs_plugins.baselines.stg import STG
from oodfs_plugins.environments.synthetic import Synthetic, SyntheticBinary
from oodfs_plugins.independence.rsw import RSW

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_rsw_grid_equals_separate_fits_bit_for_bit():
    X, y = Synthetic("poly").sample(2.5, 400, 0)
    short = dict(epochs=150, pretrain_epochs=30)
    points = [{"alpha": a, "n_envs": e, **short} for a in (1e2, 1e4, 1e8) for e in (2, 3)]
    fits = RSW._fit_grid(X, y, points, sample_weight=None, random_state=5)
    for p, fit in zip(points, fits):
        alone = RSW(**p, random_state=5)
        assert np.array_equal(fit.values, alone._fit_detailed(X, y).values), p
    # the points do differ: a shared loop that mixed the alphas' states would show here
    assert not np.array_equal(fits[0].values, fits[2].values)


def test_rsw_grid_checks_every_point():
    X, y = Synthetic("poly").sample(2.5, 100, 0)
    with pytest.raises(Exception, match="rsw alpha must be a positive number, got -1"):
        RSW._fit_grid(X, y, [{"alpha": 1.0}, {"alpha": -1}], sample_weight=None, random_state=0)


@pytest.mark.parametrize("engine", ["numba", "torch"])
@pytest.mark.parametrize("binary", [False, True])
def test_stg_without_its_loss_curve_learns_the_same_gates(binary, engine):
    env = SyntheticBinary("poly") if binary else Synthetic("poly")
    X, y = env.sample(2.5, 300, 2)
    params = dict(hidden_layer_sizes=(), batch_size=300, max_epochs=40, random_state=4, engine=engine)
    task = "binary" if binary else "regression"
    tracked = STG(**params).fit(X, y, task=task)
    silent = STG(**params, track_loss=False).fit(X, y, task=task)
    assert np.array_equal(tracked.scores_, silent.scores_)
    assert np.isfinite(tracked.losses_).all() and np.isnan(silent.losses_).all()
    assert silent.diagnostics_["converged"] is None and tracked.diagnostics_["converged"] is not None
