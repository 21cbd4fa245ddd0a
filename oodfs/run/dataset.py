"""What one data set of a suite is: its training, validation and test draws, and the downstream
regressor's RMSEs on feature subsets of it (each subset trained once per data set)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oodfs.contract.registry import registry
from oodfs.contract.seeds import derive_seed
from oodfs.run.suite import Suite


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view: a plugin that edits its input fails instead of corrupting the data
    every later method sees (docs/PROTOCOL.md, "Isolation")."""
    a = np.asarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class DataSet:
    """The data of one (setting, r_train, run): training, validation and the test environments.

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


def make_dataset(suite: Suite, setting, r_train, run: int) -> DataSet:
    env_cls = registry().get("environment", suite.environment)
    env = env_cls(**setting.environment_params(run, suite.seed))
    s = suite.seed
    n_train = setting.n_train or suite.n_train  # a setting may override the suite's training size
    # one draw from the training environment, its tail held out for the `val` rule: i.i.d.
    # extra data for a synthetic environment, a random held-out part of a finite table
    X, y = env.sample(r_train, n_train + suite.n_val, derive_seed(s, setting.name, r_train, run, "train"))
    n_val = round(len(y) * suite.n_val / (n_train + suite.n_val))
    X_val = y_val = None
    if n_val:
        X, X_val, y, y_val = X[:-n_val], X[-n_val:], y[:-n_val], y[-n_val:]
        X_val, y_val = _read_only(X_val), _read_only(y_val)
    # test environments depend on the run, not on r_train: every r_train is tested on the same data
    tests = tuple(
        (r_te, *map(_read_only, env.sample(r_te, suite.n_test, derive_seed(s, setting.name, run, r_te, "test"))))
        for r_te in suite.r_test
    )
    stable = env.stable_set
    return DataSet(_read_only(X), _read_only(y), X_val, y_val, tests, None if stable is None else tuple(stable),
                   tuple(env.feature_names))


class DownstreamCache:
    """Downstream regressor RMSEs per feature subset, trained once per subset per data set.

    Many grid points (and many methods) pick the same top-k features; the regressor for a
    subset is seeded from (data set, subset), and batching does not change a subset's result,
    so sharing it changes no number.
    """

    def __init__(self, data: DataSet, seed: int, **regressor_options):
        self.data = data
        self.seed = seed
        self.options = regressor_options  # fit_downstream's settings of the run's profile
        self.results: dict[tuple[int, ...], dict] = {}

    def evaluate(self, subsets) -> dict[tuple[int, ...], dict]:
        """``{subset: {"val": float (NaN without validation data), "test": array per env}}``."""
        from oodfs.run.downstream import fit_downstream

        wanted = list(dict.fromkeys(tuple(sorted(int(j) for j in s)) for s in subsets))
        missing = [s for s in wanted if s not in self.results]
        if missing:
            d = self.data
            models = fit_downstream(d.X_train, d.y_train, missing, self.seed, **self.options)
            val = models.rmse(d.X_val, d.y_val) if d.X_val is not None else np.full(len(missing), np.nan)
            tests = np.column_stack([models.rmse(X, y) for _, X, y in d.tests])
            for i, s in enumerate(missing):
                self.results[s] = {"val": float(val[i]), "test": tests[i]}
        return {s: self.results[s] for s in wanted}
