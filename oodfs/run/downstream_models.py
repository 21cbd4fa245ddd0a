"""Downstream models besides the paper's MLP, and the model of an empty subset.

The downstream model turns a selected feature subset into the RMSEs a leaderboard reports
(docs/PROTOCOL.md, "Downstream model"). ``mlp`` is the paper's (:mod:`oodfs.run.downstream`);
the two here are scikit-learn estimators with settings fixed below, one fitted per subset:

* ``ridge`` -- ``StandardScaler`` then ``RidgeCV`` over :data:`RIDGE_ALPHAS`, the penalty chosen
  by leave-one-out on the training rows (no validation or test data);
* ``gbm`` -- ``HistGradientBoostingRegressor`` with scikit-learn's defaults (100 iterations,
  learning rate 0.1, 31 leaves; no early stopping below 10 000 rows).

An empty subset (the ``mean`` yardstick) predicts the training mean, whatever the model.
A model's seed comes from ``(seed, subset)`` only, so a subset's RMSEs do not depend on which
other subsets are evaluated with it (the downstream cache relies on that).
"""

from __future__ import annotations

import numpy as np

from oodfs.contract.profiles import DOWNSTREAM_MODELS
from oodfs.contract.seeds import derive_seed
from oodfs.validation import OodfsError

#: the downstream models a suite (``downstream = [...]``) or ``--downstream`` may name
MODELS = DOWNSTREAM_MODELS
#: the penalties RidgeCV chooses from: 13 values, 10^-3 .. 10^3
RIDGE_ALPHAS = tuple(float(a) for a in np.logspace(-3, 3, 13))


def check_model(name) -> str:
    if name not in MODELS:
        raise OodfsError(f"unknown downstream model {name!r}; valid: {', '.join(MODELS)}")
    return name


def make_model(name: str, seed: int):
    """A fresh scikit-learn regressor for one subset (``ridge`` or ``gbm``)."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if name == "ridge":
        return make_pipeline(StandardScaler(), RidgeCV(alphas=RIDGE_ALPHAS))
    if name == "gbm":
        return HistGradientBoostingRegressor(random_state=seed)
    raise OodfsError(f"{name!r} is not a scikit-learn downstream model; valid: ridge, gbm")


def _rmse(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(pred, dtype=float) - y) ** 2)))


def evaluate_subsets(name: str, data, subsets, seed: int) -> dict[tuple[int, ...], dict]:
    """``{subset: {"val": float (NaN without validation data), "test": array per test env}}``
    for ``ridge`` / ``gbm`` subsets and for the empty subset (any model) of ``data`` (a
    :class:`~oodfs.run.dataset.DataSet`)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):  # one thread per worker, as the MLP: workers are the parallelism
        return _evaluate(name, data, subsets, seed)


def _evaluate(name: str, data, subsets, seed: int) -> dict[tuple[int, ...], dict]:
    out = {}
    for subset in subsets:
        cols = list(subset)
        if not cols:  # no feature: the training mean
            mean = float(np.mean(data.y_train))

            def predict(X, mean=mean):
                return np.full(X.shape[0], mean)
        else:
            model = make_model(name, derive_seed(seed, "downstream-" + name, *subset))
            model.fit(data.X_train[:, cols], data.y_train)

            def predict(X, model=model, cols=cols):
                return model.predict(X[:, cols])

        val = _rmse(predict(data.X_val), data.y_val) if data.X_val is not None else float("nan")
        out[tuple(subset)] = {"val": val, "test": np.array([_rmse(predict(X), y) for _, X, y in data.tests])}
    return out
