"""The built-in downstream models: the paper's MLP, ridge, gradient boosting and L2 logistic
regression, registered through the ``oodfs_downstream_models`` hook like a third party's.

Each is trained on one feature subset at a time (the MLP: every subset of a data set in one
batched call, :func:`oodfs.run.downstream.fit_downstream`) and predicts; the task type scores
the predictions (docs/PROTOCOL.md, "Downstream model" and "Task types"). A scikit-learn model's
seed comes from ``(seed, model name, subset)`` only, so a subset's predictions do not depend on
the other subsets of its batch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

import oodfs
from oodfs.contract.downstream import DownstreamModel
from oodfs.contract.seeds import derive_seed

#: the penalties RidgeCV chooses from: 13 values, 10^-3 .. 10^3
RIDGE_ALPHAS = tuple(float(a) for a in np.logspace(-3, 3, 13))
#: the inverse penalties LogisticRegressionCV chooses from: the same 13 values
LOGISTIC_CS = RIDGE_ALPHAS


@dataclass(frozen=True)
class MLPSettings:
    """The downstream MLP's settings (:func:`oodfs.run.downstream.fit_downstream`'s keywords)."""

    hidden: tuple[int, ...] = (5, 5)
    lr: float = 1e-3
    lr_start: float = 1e-2
    lr_factor: float = 10**0.5
    batch_size: int = 256
    max_epochs: int = 1000
    patience: int = 40
    min_delta: float = 0.0
    restore_best: bool = False
    val_fraction: float = 0.15
    engine: str = "numba"


class MLP(DownstreamModel):
    """the paper's MLP (hidden layers 5 and 5, ReLU, Adam)

    A linear output for a regression target, a logistic output (trained on the binary
    cross-entropy) for a binary target.
    """

    name = "mlp"
    task_types = ("regression", "binary")
    Settings = MLPSettings

    @classmethod
    def settings_for(cls, profile: str) -> MLPSettings:
        # oodfs.run.downstream.PROFILES holds each profile's settings (read now: a test may change them)
        from oodfs.run.downstream import PROFILES

        return MLPSettings(**PROFILES.get(profile, PROFILES["default"]))

    def predict_subsets(self, X, y, subsets, seed, targets):
        from oodfs.run.downstream import fit_downstream

        models = fit_downstream(X, y, subsets, seed, task=self.task, **dataclasses.asdict(self.settings))
        return [models.predict(T) for T in targets]


class _SklearnModel(DownstreamModel):
    """One scikit-learn estimator per subset, from :meth:`estimator`."""

    def estimator(self, seed: int):
        raise NotImplementedError

    def identity(self):
        # the estimator's parameters, as oodfs recorded them before models were a registry
        return self.estimator(0).get_params(deep=True)

    def predict_subsets(self, X, y, subsets, seed, targets):
        from threadpoolctl import threadpool_limits

        out = [np.empty((len(subsets), T.shape[0])) for T in targets]
        with threadpool_limits(limits=1):  # one thread per worker, as the MLP: workers are the parallelism
            for i, subset in enumerate(subsets):
                cols = list(subset)
                model = self.estimator(derive_seed(seed, "downstream-" + self.name, *subset))
                model.fit(X[:, cols], y)
                for P, T in zip(out, targets):
                    P[i] = (
                        model.predict_proba(T[:, cols])[:, 1]
                        if self.task == "binary"
                        else model.predict(T[:, cols])
                    )
        return out


@dataclass(frozen=True)
class RidgeSettings:
    alphas: tuple[float, ...] = RIDGE_ALPHAS


class Ridge(_SklearnModel):
    """scikit-learn RidgeCV on standardised features (alpha 1e-3 .. 1e3 by leave-one-out)"""

    name = "ridge"
    Settings = RidgeSettings

    def estimator(self, seed):
        from sklearn.linear_model import RidgeCV
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(StandardScaler(), RidgeCV(alphas=self.settings.alphas))


@dataclass(frozen=True)
class LogisticSettings:
    Cs: tuple[float, ...] = LOGISTIC_CS
    cv: int = 5
    max_iter: int = 1000


class Logistic(_SklearnModel):
    """scikit-learn L2 LogisticRegressionCV on standardised features (C 1e-3 .. 1e3, 5-fold log-loss)"""

    name = "logistic"
    task_types = ("binary",)
    Settings = LogisticSettings

    def estimator(self, seed):
        from sklearn.linear_model import LogisticRegressionCV
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        s = self.settings
        return make_pipeline(
            StandardScaler(),
            LogisticRegressionCV(
                Cs=list(s.Cs),
                l1_ratios=(0.0,),  # L2
                cv=s.cv,  # stratified folds in row order: no randomness
                scoring="neg_log_loss",
                max_iter=s.max_iter,
                use_legacy_attributes=False,
            ),
        )


class GBM(_SklearnModel):
    """scikit-learn HistGradientBoostingRegressor with its defaults

    HistGradientBoostingClassifier, with its defaults, for a binary target.
    """

    name = "gbm"
    task_types = ("regression", "binary")

    def estimator(self, seed):
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

        cls = HistGradientBoostingClassifier if self.task == "binary" else HistGradientBoostingRegressor
        return cls(random_state=seed)


DOWNSTREAM_MODELS = [MLP, Ridge, GBM, Logistic]


@oodfs.hookimpl
def oodfs_downstream_models():
    return list(DOWNSTREAM_MODELS)
