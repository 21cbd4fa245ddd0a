"""What one data set of a suite is: its training, validation and test draws."""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from oodfs.contract.registry import registry
from oodfs.contract.task import DataKey
from oodfs.run.suite import Suite, train_envs
from oodfs.tables import TableWarning
from oodfs.validation import OodfsError


def _read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view: a plugin that edits its input fails instead of corrupting the data
    every later method sees (docs/PROTOCOL.md, "Isolation")."""
    a = np.asarray(a)
    a.setflags(write=False)
    return a


class LazyTests(Sequence):
    """A data set's test environments, ``((env id, X, y), ...)``, drawn when first read: a task
    whose feature subsets were all trained before on the same data set (a shipped reference's, with
    ``--reference``) never reads them. Each environment's draw has its own seed, so when it is drawn
    changes no number. ``envs``: the ids, known without drawing; ``seconds``: what the draws took
    (0 until then)."""

    def __init__(self, envs, draw):
        self.envs = tuple(envs)
        self._draw = draw
        self._drawn: tuple | None = None
        self.seconds = 0.0

    @property
    def drawn(self) -> bool:
        return self._drawn is not None

    def draw(self) -> tuple:
        if self._drawn is None:
            t0 = time.perf_counter()
            self._drawn = tuple(self._draw(r) for r in self.envs)
            self.seconds = time.perf_counter() - t0
        return self._drawn

    def __getitem__(self, i):
        return self.draw()[i]

    def __len__(self) -> int:
        return len(self.envs)

    def __iter__(self):
        return iter(self.draw())


@dataclass(frozen=True)
class DataSet:
    """The data of one :class:`DataKey`: training, validation and the test environments.

    Every array is read-only. ``stable_set`` holds the true stable feature indices (None when
    unknown, as for real data); ``feature_names`` names the columns of this data set.
    With several training environments (an r_train set) the training and validation rows are
    pooled and ``groups_train`` / ``groups_val`` give each row's environment (its position in
    ``train_envs``); with one, both are None. ``true_coef``: the environment's coefficient of each
    column in the outcome's linear part (None when it declares none).
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray | None
    y_val: np.ndarray | None
    tests: Sequence  # ((env id, X, y), ...): a tuple, or LazyTests (drawn when first read)
    stable_set: tuple[int, ...] | None
    feature_names: tuple[str, ...]
    groups_train: np.ndarray | None = None
    groups_val: np.ndarray | None = None
    train_envs: tuple = ()
    true_coef: np.ndarray | None = None
    #: with a feature shift (oodfs.run.feature_shift): the test environments' rows shifted,
    #: ``((env id, X, y), ...)`` in the order of ``tests``, and the columns a ``refit`` leaves out
    #: (docs/PROTOCOL.md, "Feature shift"); None: no shift
    shifted: tuple | None = None
    shift_removed: tuple[int, ...] = ()
    shift_impute: str | None = None

    @property
    def test_envs(self) -> tuple:
        """The test environments' ids, in the order of ``tests`` (without drawing them)."""
        if isinstance(self.tests, LazyTests):
            return self.tests.envs
        return tuple(r for r, _, _ in self.tests)

    def draw_tests(self) -> float:
        """Draw the test environments now if they are not drawn yet: the seconds that took (0 if
        nothing was left to draw)."""
        if not isinstance(self.tests, LazyTests) or self.tests.drawn:
            return 0.0
        self.tests.draw()
        return self.tests.seconds

    def environment_rows(self, e: int):
        """(X, y) of every row (training and validation) of training environment ``e``."""
        Xs, ys = [self.X_train[self.groups_train == e]], [self.y_train[self.groups_train == e]]
        if self.X_val is not None:
            Xs.append(self.X_val[self.groups_val == e])
            ys.append(self.y_val[self.groups_val == e])
        return np.concatenate(Xs), np.concatenate(ys)


def _draw_training(env, suite: Suite, key: DataKey, r, n_train: int):
    """One training environment's draw, its tail held out for the `val` rule: i.i.d. extra data
    for a synthetic environment, a random held-out part of a finite table. The seed does not
    depend on the other members of a set: environment r's rows are the same alone or pooled."""
    seed = DataKey(key.setting, r, key.run).seed(suite.seed, "train")
    X, y = env.sample(r, n_train + suite.n_val, seed)
    n_val = round(len(y) * suite.n_val / (n_train + suite.n_val))
    if n_val:
        return X[:-n_val], y[:-n_val], X[-n_val:], y[-n_val:]
    return X, y, None, None


def make_dataset(suite: Suite, key: DataKey) -> DataSet:
    with warnings.catch_warnings():
        # a table's notes were given once, when the suite was checked (suite.check_suite_plugins)
        warnings.simplefilter("ignore", TableWarning)
        return _make_dataset(suite, key)


def _make_dataset(suite: Suite, key: DataKey) -> DataSet:
    setting = suite.setting(key.setting)
    env_cls = registry().get("environment", suite.environment)
    env = env_cls(**setting.environment_params(key.run, suite.seed))
    n_train = setting.n_train or suite.n_train  # a setting may override the suite's training size
    envs = train_envs(key.r_train)
    draws = [_draw_training(env, suite, key, r, n_train) for r in envs]  # n_train rows per environment
    if suite.task == "binary":
        for r, d in zip(envs, draws):
            _check_binary(d[1], f"training environment {r!r} of setting {key.setting!r}", both=True)
    X = np.concatenate([d[0] for d in draws])
    y = np.concatenate([d[1] for d in draws])
    X_val = y_val = g_train = g_val = None
    if draws[0][2] is not None:
        X_val = _read_only(np.concatenate([d[2] for d in draws]))
        y_val = _read_only(np.concatenate([d[3] for d in draws]))
    if len(envs) > 1:
        g_train = _read_only(np.repeat(np.arange(len(envs)), [len(d[1]) for d in draws]))
        if X_val is not None:
            g_val = _read_only(np.repeat(np.arange(len(envs)), [len(d[3]) for d in draws]))
    tests = LazyTests(suite.r_test, partial(_draw_test, env, suite, key))
    shifted, removed, impute = None, (), None
    shift = suite.shift
    if shift is not None:  # the test rows alone, after the draws: training rows are read, never changed
        from oodfs.run.feature_shift import missing_seed, shifted_tests

        seeds = [missing_seed(key.test_seed(suite.seed, r_te)) for r_te, _, _ in tests]
        shifted, removed = shifted_tests(shift, X, y, tests, seeds)
        shifted = tuple((r_te, _read_only(X_te), y_te) for r_te, X_te, y_te in shifted)
        impute = shift.impute
    stable = env.stable_set
    return DataSet(
        _read_only(X),
        _read_only(y),
        X_val,
        y_val,
        tests,
        None if stable is None else tuple(stable),
        tuple(env.feature_names),
        g_train,
        g_val,
        envs if len(envs) > 1 else (),
        _true_coef(env, X.shape[1]),
        shifted,
        removed,
        impute,
    )


def _draw_test(env, suite: Suite, key: DataKey, r_te) -> tuple:
    """One test environment's draw. Test environments depend on the run, not on r_train: every
    r_train is tested on the same data."""
    with warnings.catch_warnings():  # as make_dataset: a table's notes were given once
        warnings.simplefilter("ignore", TableWarning)
        X, y = map(_read_only, env.sample(r_te, suite.n_test, key.test_seed(suite.seed, r_te)))
    if suite.task == "binary":  # a test environment may hold one class (its AUC is then undefined)
        _check_binary(y, f"test environment {r_te!r} of setting {key.setting!r}", both=False)
    return r_te, X, y


def _check_binary(y: np.ndarray, where: str, both: bool) -> None:
    """A binary target reaches every method as 0.0 / 1.0 (docs/PROTOCOL.md, "Task types"); a
    classifier cannot be trained on one class."""
    values = np.unique(y)
    if not np.isin(values, (0.0, 1.0)).all():
        raise OodfsError(f"the binary target of {where} must be 0.0 / 1.0; it holds {values[:5].tolist()}")
    if both and values.size < 2:
        raise OodfsError(f"{where} holds one class of the binary target only ({values[0]}); it needs both")


def _true_coef(env, d: int) -> np.ndarray | None:
    coef = getattr(env, "true_coef", None)
    if coef is None:
        return None
    coef = np.asarray(coef, dtype=float)
    if coef.shape != (d,) or not np.all(np.isfinite(coef)):
        raise OodfsError(
            f"environment {type(env).__name__}: true_coef must be {d} finite numbers (one per column), "
            f"got shape {coef.shape}"
        )
    return _read_only(coef)


def test_env_rows(suite: Suite) -> list[dict]:
    """The number of rows of every test environment of every data set of ``suite`` (one
    ``{"setting", "run", "env", "rows"}`` per setting x run x test environment): what the weighting
    of the test environments reads (docs/PROTOCOL.md section 3, "Weighting the test environments").
    The test draws are the ones a task makes (they depend on the run, not on r_train)."""
    from oodfs.contract.task import env_key

    env_cls = registry().get("environment", suite.environment)
    out = []
    with warnings.catch_warnings():  # a table's notes were given once, when the suite was checked
        warnings.simplefilter("ignore", TableWarning)
        for setting in suite.settings:
            for run in range(suite.runs):
                env = env_cls(**setting.environment_params(run, suite.seed))
                key = DataKey(setting.name, suite.r_train[0], run)
                for r_te in suite.r_test:
                    _, y = env.sample(r_te, suite.n_test, key.test_seed(suite.seed, r_te))
                    out.append({"setting": setting.name, "run": run, "env": env_key(r_te), "rows": len(y)})
    return out
