"""The batched downstream regressor: shapes, determinism, batch independence, learning, errors."""

from __future__ import annotations

import os

import numpy as np
import pytest

from oodfs.run.downstream import DownstreamModels, fit_downstream
from oodfs.validation import OodfsError

FAST = dict(max_epochs=15)  # enough to exercise the code paths; the learning test uses defaults


def _linear_data(n, seed, d=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X[:, 0] - 2 * X[:, 1] + rng.normal(0, 0.3, n)
    return X, y


@pytest.fixture(scope="module")
def data():
    return _linear_data(1500, 0, d=6)


def test_shapes_and_rmse_is_root_of_mse(data):
    X, y = data
    subsets = [(0,), (0, 1), (5, 1, 2), tuple(range(6))]
    models = fit_downstream(X, y, subsets, 0, **FAST)
    assert isinstance(models, DownstreamModels) and len(models) == 4
    assert models.subsets == [(0,), (0, 1), (1, 2, 5), tuple(range(6))]
    Xt, yt = _linear_data(300, 1, d=6)
    pred = models.predict(Xt)
    assert pred.shape == (4, 300) and pred.dtype == np.float64 and np.isfinite(pred).all()
    rmse = models.rmse(Xt, yt)
    assert rmse.shape == (4,)
    np.testing.assert_allclose(rmse, np.sqrt(np.mean((pred - yt) ** 2, axis=1)))
    assert models.epochs.shape == (4,) and (models.epochs >= 1).all()


@pytest.mark.parametrize("engine", ["numba", "torch"])
def test_deterministic_per_seed(data, engine):
    X, y = data
    subsets = [(0, 1), (2, 3, 4)]
    a = fit_downstream(X, y, subsets, 3, engine=engine, **FAST).predict(X[:200])
    b = fit_downstream(X, y, subsets, 3, engine=engine, **FAST).predict(X[:200])
    c = fit_downstream(X, y, subsets, 4, engine=engine, **FAST).predict(X[:200])
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


TORCH_UNDER_PINNED_MKL = pytest.mark.xfail(
    os.environ.get("MKL_CBWR", "").upper() == "COMPATIBLE",
    strict=True,
    reason="torch's MKL in its cross-vendor reproducibility mode (MKL_CBWR=COMPATIBLE, pinned by oodfs) adds "
    "in an order that depends on a block's memory alignment, so the torch engine's packed batches are not "
    "batch independent (1e-7 relative); a STRICT mode is, but exists only for MKL's Intel-only AVX2 and "
    "AVX-512 branches: docs/PROTOCOL.md section 6",
)


@pytest.mark.parametrize("engine", ["numba", pytest.param("torch", marks=TORCH_UNDER_PINNED_MKL)])
def test_batch_independent(data, engine):
    """A subset gets the same network alone, batched, at another position, in another block."""
    X, y = data
    target = (0, 1, 4)
    alone_models = fit_downstream(X, y, [target], 7, engine=engine, **FAST)
    alone, alone_rmse = alone_models.predict(X[:300])[0], alone_models.rmse(X[:300], y[:300])[0]
    others = [(j,) for j in range(6)] + [(0, 2), (1, 3, 5), tuple(range(6)), (2, 3)]
    for subsets, pos in (
        (others[:3] + [target], 3),
        ([(4, 1, 0)] + others, 0),  # same set, other column order
        (others + [target], len(others)),  # third block (block_size 4)
    ):
        models = fit_downstream(X, y, subsets, 7, engine=engine, **FAST)
        np.testing.assert_array_equal(models.predict(X[:300])[pos], alone)
        assert models.rmse(X[:300], y[:300])[pos] == alone_rmse  # bit for bit: resume and --jobs rely on it


@pytest.mark.parametrize("engine", ["numba", "torch"])
def test_learns_linear_function_and_needs_the_signal(engine):
    X, y = _linear_data(4000, 10)
    Xt, yt = _linear_data(4000, 11)
    models = fit_downstream(X, y, [(0, 1), (0, 1, 2, 3), (2, 3), (0,)], 0, engine=engine)
    rmse = models.rmse(Xt, yt)
    assert rmse[0] < 0.33 and rmse[1] < 0.33  # noise sd 0.3
    assert rmse[2] > 2.0  # sd of x0 - 2 x1 is sqrt(5) = 2.24: nothing to learn from x2, x3
    assert 1.8 < rmse[3] < 2.2  # x0 alone leaves 2 x1 unexplained


def test_single_constant_column_and_tiny_data():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(40), rng.standard_normal(40)])
    y = 3 + 0.1 * rng.standard_normal(40)
    m = fit_downstream(X, y, [(0,), (1,)], 0, **FAST)
    assert np.isfinite(m.predict(X)).all()


@pytest.mark.parametrize(
    "subsets, match",
    [
        ([()], "subset 0 is empty"),
        ([(0,), (6,)], "column index 6 out of range"),
        ([(-1,)], "column index -1 out of range"),
        ([(1, 1)], "repeats a column"),
        ([(0.5,)], "non-integer"),
        ([], "subsets is empty"),
        ("01", "sequence of tuples"),
        ([3], "sequence of column indices"),
        (["01"], "sequence of column indices"),
    ],
)
def test_bad_subsets(data, subsets, match):
    X, y = data
    with pytest.raises(OodfsError, match=match):
        fit_downstream(X, y, subsets, 0)


def test_bad_data(data):
    X, y = data
    Xn = X.copy()
    Xn[5, 2] = np.nan
    with pytest.raises(OodfsError, match="NaN in X, column 2"):
        fit_downstream(Xn, y, [(0,)], 0)
    yn = y.copy()
    yn[3] = np.nan
    with pytest.raises(OodfsError, match="NaN in y"):
        fit_downstream(X, yn, [(0,)], 0)
    with pytest.raises(OodfsError, match="different lengths"):
        fit_downstream(X, y[:-1], [(0,)], 0)
    with pytest.raises(ValueError):  # OodfsError is a ValueError
        fit_downstream(X, y, [(0,)], 0, lr=0)
    with pytest.raises(OodfsError, match="batch_size"):
        fit_downstream(X, y, [(0,)], 0, batch_size=0)
    models = fit_downstream(X, y, [(0,)], 0, max_epochs=1)
    with pytest.raises(OodfsError, match="columns"):
        models.predict(X[:, :3])
    with pytest.raises(OodfsError, match="NaN in X"):
        models.rmse(Xn, y)


def test_seed_type_and_thread_setting_do_not_matter(data):
    import torch

    X, y = data
    a = fit_downstream(X, y, [(0, 1)], 5, **FAST).predict(X[:100])
    b = fit_downstream(X, y, [(0, 1)], np.int64(5), **FAST).predict(X[:100])
    np.testing.assert_array_equal(a, b)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        c = fit_downstream(X, y, [(0, 1)], 5, **FAST).predict(X[:100])
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(a, c)
    with pytest.raises(OodfsError, match="seed"):
        fit_downstream(X, y, [(0, 1)], 1.5)


# -- profiles and settings ----------------------------------------------------------------------
def test_default_profile_is_the_signature_defaults():
    import inspect

    from oodfs.run.downstream import PROFILES

    sig = inspect.signature(fit_downstream)
    defaults = {
        k: p.default
        for k, p in sig.parameters.items()
        if p.kind is p.KEYWORD_ONLY and k not in ("block_size", "task")
    }
    assert PROFILES["default"] == defaults
    # the paper's constant Adam lr 0.001: lr_start = lr; everything else as the default
    paper = PROFILES["paper"]
    assert paper["lr_start"] == paper["lr"] == 1e-3
    assert {k: v for k, v in paper.items() if k != "lr_start"} == {
        k: v for k, v in defaults.items() if k != "lr_start"
    }


def test_paper_profile_trains_at_constant_lr_and_differs(data):
    """lr_start = lr: the schedule never decays, so a plateau at the start rate stops the model;
    with the default's 10x start rate the first steps move the weights further."""
    from oodfs.run.downstream import PROFILES

    X, y = data
    kw = {**FAST, "max_epochs": 3}
    paper = fit_downstream(X, y, [(0, 1)], 0, **{**PROFILES["paper"], **kw})
    default = fit_downstream(X, y, [(0, 1)], 0, **{**PROFILES["default"], **kw})
    start = fit_downstream(X, y, [(0, 1)], 0, **{**PROFILES["paper"], "max_epochs": 1})
    moved = lambda m: np.abs(m.predict(X[:200]) - start.predict(X[:200])).mean()  # noqa: E731
    assert moved(default) > 2 * moved(paper)
    # patience 1 at lr_start = lr: nothing to decay, the first epoch without a new minimum ends
    # training (the default schedule would decay there instead)
    stopped = fit_downstream(X, y, [(0, 1)], 0, **{**PROFILES["paper"], "patience": 1})
    assert stopped.epochs[0] == stopped.best_epoch[0] + 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(lr_start=1e-4), "lr_start must be at least lr"),
        (dict(lr="fast"), "lr must be a finite number"),
        (dict(lr_factor=1.0), "lr_factor must be > 1"),
        (dict(patience=0), "patience must be a positive integer"),
        (dict(max_epochs=0), "max_epochs must be a positive integer"),
        (dict(max_epochs=2.5), "max_epochs must be a positive integer"),
        (dict(val_fraction=0.0), r"val_fraction must be in \(0, 1\)"),
        (dict(min_delta=-0.1), r"min_delta must be in \[0, 1\)"),
        (dict(hidden=("a",)), "hidden must be a non-empty tuple"),
        (dict(hidden=()), "hidden must be a non-empty tuple"),
    ],
)
def test_bad_settings_name_the_argument(data, kwargs, match):
    X, y = data
    with pytest.raises(OodfsError, match=match):
        fit_downstream(X, y, [(0,)], 0, **kwargs)
