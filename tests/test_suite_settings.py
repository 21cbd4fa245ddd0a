"""Per-setting options of a suite: per-run environment parameters (run index or derived seed),
the per-setting training size, and the shipped synthetic suites that use them."""

from __future__ import annotations

import numpy as np
import pytest

from oodfs import OodfsError
from oodfs.contract.seeds import derive_seed
from oodfs.contract.task import DataKey
from oodfs.run.dataset import make_dataset
from oodfs.run.suite import customise, load_suite, suite_from_dict

BASE = {
    "environment": "synthetic",
    "r_train": [2.5, 3.0],
    "r_test": [-2.0, 2.0],
    "runs": 3,
    "n_train": 400,
    "n_val": 100,
    "n_test": 300,
    "methods": ["ols"],
    "settings": {
        "poly": {"params": {"setting": "poly"}, "run_params": {"layout_seed": "seed"}},
        "small": {"params": {"setting": "poly"}, "run_params": {"layout_seed": "seed"}, "n_train": 150},
        "mlp": {"params": {"setting": "mlp"}, "run_param": "mlp_seed"},
    },
}


def suite(**changes):
    return suite_from_dict("t", {**BASE, **changes})


def test_run_params_run_index_and_derived_seed():
    s = suite(seed=7)
    poly, _, mlp = s.settings
    assert poly.environment_params(2, s.seed) == {
        "setting": "poly",
        "layout_seed": derive_seed(7, "poly", 2, "layout_seed"),
    }
    assert mlp.environment_params(2, s.seed) == {
        "setting": "mlp",
        "mlp_seed": 2,
    }  # the older run_param spelling


def test_layout_is_fixed_within_a_run_and_changes_between_runs_and_seeds():
    s = suite()
    poly = s.settings[0]
    a, b = make_dataset(s, DataKey(poly.name, 2.5, 0)), make_dataset(s, DataKey(poly.name, 3.0, 0))
    # the same run: the same layout and the same test data for every r_train
    assert a.stable_set == b.stable_set
    for (ra, Xa, ya), (rb, Xb, yb) in zip(a.tests, b.tests):
        assert ra == rb
        np.testing.assert_array_equal(Xa, Xb)
    layouts = {make_dataset(s, DataKey(poly.name, 2.5, run)).stable_set for run in range(3)}
    assert len(layouts) == 3
    assert make_dataset(customise(s, seed=1), DataKey(poly.name, 2.5, 0)).stable_set != a.stable_set


def test_train_val_and_test_share_the_layout():
    """V4's column carries the spurious correlation in every part of the data set, with the sign of r."""
    s = suite()
    poly = s.settings[0]
    from oodfs_plugins.environments.synthetic import Synthetic

    env = Synthetic(**poly.environment_params(1, s.seed))
    j = env.column_of("V4")
    data = make_dataset(s, DataKey(poly.name, 2.5, 1))
    assert data.stable_set == env.stable_set
    for X, y, sign in [(data.X_train, data.y_train, 1), (data.X_val, data.y_val, 1)] + [
        (X, y, np.sign(r)) for r, X, y in data.tests
    ]:
        assert sign * np.corrcoef(X[:, j], y)[0, 1] > 0.7


def test_setting_overrides_n_train():
    s = suite()
    assert make_dataset(s, DataKey(s.settings[1].name, 2.5, 0)).X_train.shape == (150, 10)
    data = make_dataset(s, DataKey(s.settings[0].name, 2.5, 0))
    assert data.X_train.shape == (400, 10) and data.X_val.shape == (100, 10)


@pytest.mark.parametrize(
    "settings, match",
    [
        (
            {"a": {"run_params": {"layout_seed": "random"}}},
            r"run_params.layout_seed must be one of 'run', 'seed', got 'random'",
        ),
        ({"a": {"params": {}, "ntrain": 10}}, r"setting 'a' has the unknown key 'ntrain'"),
        ({"a": {"n_train": 0}}, r"n_train of setting 'a' must be a positive integer, got 0"),
        ({"a": "poly"}, r"setting 'a' must be a table"),
    ],
)
def test_bad_setting_tables(settings, match):
    with pytest.raises(OodfsError, match=match):
        suite(settings=settings)


def test_shipped_synthetic_suite_uses_random_layouts():
    s = load_suite("synthetic")
    assert {st.name: st.run_params for st in s.settings} == {
        "mlp": {"mlp_seed": "run", "layout_seed": "seed"},
        "poly": {"layout_seed": "seed"},
    }


def test_variants_suite():
    s = load_suite("synthetic-variants")
    from oodfs_plugins.environments.synthetic import Synthetic

    by_name = {st.name: st for st in s.settings}
    envs = {name: Synthetic(**st.environment_params(0, s.seed)) for name, st in by_name.items()}
    assert {e.exponent for e in envs.values()} >= {5.0, 10.0, 20.0}
    assert {tuple(e.spurious) for e in envs.values()} >= {("V1", "V2"), ("V3", "V4", "V5"), ("V4", "V5")}
    assert any(e.d_v == 10 for e in envs.values())
    assert any(st.n_train == 2000 for st in s.settings)
    # every setting draws its layout per run, except the one that keeps the paper's column order
    assert [n for n, e in envs.items() if e.layout_seed is None] == ["poly-fixed-layout"]
    assert [n for n, e in envs.items() if e.sampler == "pool"] == ["poly-pool"]
    assert len(s.methods) == 10 and s.quick
    for e in envs.values():  # every setting samples
        X, y = e.sample(s.r_train[-1], 50, 0)
        assert X.shape == (50, e.d_s + e.d_v)
