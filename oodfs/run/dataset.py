"""What one data set of a suite is: its training, validation and test draws."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from oodfs.contract.registry import registry
from oodfs.contract.task import DataKey
from oodfs.run.suite import Suite
from oodfs.tabular import TableWarning


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view: a plugin that edits its input fails instead of corrupting the data
    every later method sees (docs/PROTOCOL.md, "Isolation")."""
    a = np.asarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class DataSet:
    """The data of one :class:`DataKey`: training, validation and the test environments.

    Every array is read-only. ``stable_set`` holds the true stable feature indices (None when
    unknown, as for real data); ``feature_names`` names the columns of this data set.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray | None
    y_val: np.ndarray | None
    tests: tuple  # ((env id, X, y), ...)
    stable_set: tuple[int, ...] | None
    feature_names: tuple[str, ...]


def make_dataset(suite: Suite, key: DataKey) -> DataSet:
    with warnings.catch_warnings():
        # a table's notes were given once, when the suite was checked (runner.check_suite_plugins)
        warnings.simplefilter("ignore", TableWarning)
        return _make_dataset(suite, key)


def _make_dataset(suite: Suite, key: DataKey) -> DataSet:
    setting = suite.setting(key.setting)
    env_cls = registry().get("environment", suite.environment)
    env = env_cls(**setting.environment_params(key.run, suite.seed))
    n_train = setting.n_train or suite.n_train  # a setting may override the suite's training size
    # one draw from the training environment, its tail held out for the `val` rule: i.i.d.
    # extra data for a synthetic environment, a random held-out part of a finite table
    X, y = env.sample(key.r_train, n_train + suite.n_val, key.seed(suite.seed, "train"))
    n_val = round(len(y) * suite.n_val / (n_train + suite.n_val))
    X_val = y_val = None
    if n_val:
        X, X_val, y, y_val = X[:-n_val], X[-n_val:], y[:-n_val], y[-n_val:]
        X_val, y_val = _read_only(X_val), _read_only(y_val)
    # test environments depend on the run, not on r_train: every r_train is tested on the same data
    tests = tuple(
        (r_te, *map(_read_only, env.sample(r_te, suite.n_test, key.test_seed(suite.seed, r_te))))
        for r_te in suite.r_test
    )
    stable = env.stable_set
    return DataSet(
        _read_only(X),
        _read_only(y),
        X_val,
        y_val,
        tests,
        None if stable is None else tuple(stable),
        tuple(env.feature_names),
    )
