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
from typing import ClassVar

import numpy as np

import oodfs
from oodfs.contract.downstream import DownstreamModel
from oodfs.contract.seeds import derive_seed

#: the penalties RidgeCV chooses from: 13 values, 10^-3 .. 10^3 in half decades, each the double
#: nearest 10^(k/2). Written out, not computed: np.logspace(-3, 3, 13) gives 10^2.5 one unit in
#: the last place apart on CPUs with different vector instructions, and a declared value must be
#: the same on every machine (docs/PROTOCOL.md section 6, "Identities")
RIDGE_ALPHAS = (
    0.001,
    0.0031622776601683794,
    0.01,
    0.03162277660168379,
    0.1,
    0.31622776601683794,
    1.0,
    3.1622776601683795,
    10.0,
    31.622776601683793,
    100.0,
    316.22776601683796,
    1000.0,
)
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
    """One scikit-learn estimator per subset, built from :meth:`spec`: the estimator's class and
    the keyword arguments oodfs gives it (every other parameter is scikit-learn's default), after
    a StandardScaler when ``standardize``; ``random_state`` is the subset's seed when ``seeded``."""

    standardize: ClassVar[bool] = True
    seeded: ClassVar[bool] = False

    def spec(self) -> tuple[str, dict]:
        """``("module.Class", {argument: plain value})``."""
        raise NotImplementedError

    def estimator(self, seed: int):
        import importlib

        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        path, arguments = self.spec()
        module, name = path.rsplit(".", 1)
        cls = getattr(importlib.import_module(module), name)
        model = cls(**arguments, **({"random_state": seed} if self.seeded else {}))
        return make_pipeline(StandardScaler(), model) if self.standardize else model

    def identity(self):
        # declared values only, never the estimator's repr (docs/PROTOCOL.md section 6, "Identities")
        path, arguments = self.spec()
        return {
            "standardize": self.standardize,
            "seeded": self.seeded,
            "estimator": path,
            "arguments": arguments,
        }

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

    def spec(self):
        return "sklearn.linear_model.RidgeCV", {"alphas": tuple(self.settings.alphas)}


@dataclass(frozen=True)
class LogisticSettings:
    Cs: tuple[float, ...] = LOGISTIC_CS
    cv: int = 5
    max_iter: int = 1000


def neg_log_loss_binary(estimator, X, y) -> float:
    """scikit-learn's ``neg_log_loss`` scorer for a fitted binary logistic regression, computed by
    the same operations in the same order, so the very same float: ``decision_function``'s
    product and intercept, ``predict_proba``'s two columns from the expit, the positive column the
    scorer takes, ``log_loss``'s two columns again, its clipping, ``x log y`` (numpy's log, as
    scikit-learn's) and mean. What it leaves out is the validation scikit-learn repeats on every
    call (``X``, the labels, the probabilities): LogisticRegressionCV scores 13 C values x 5 folds
    per subset, and that validation was about three quarters of the downstream model's time
    (docs/PROTOCOL.md, "Downstream model"). tests/test_logistic_scorer.py compares it with
    scikit-learn's scorer bit for bit; the binary references' replay checks it on every suite."""
    from scipy.special import expit

    coef_t = estimator.coef_.T if estimator.coef_.ndim == 2 else estimator.coef_
    decision = X @ coef_t + estimator.intercept_
    if decision.ndim > 1 and decision.shape[1] == 1:
        decision = decision.reshape(-1)
    prob = expit(decision, out=decision)
    proba = np.stack([1 - prob, prob], axis=1)[:, 1][:, np.newaxis]  # predict_proba's positive column
    proba = np.concatenate([1 - proba, proba], axis=1)
    eps = np.finfo(proba.dtype).eps
    proba = np.clip(proba, eps, 1 - eps)
    positive = (np.asarray(y) == estimator.classes_[-1]).astype(np.int64)[:, np.newaxis]
    labels = np.concatenate((1 - positive, positive), axis=1).astype(proba.dtype, copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):  # scikit-learn's xlogy: numpy's log, not scipy's
        xlogy = np.where(labels == 0.0, 0.0, labels * np.log(proba))
    return -1 * float(np.average(-np.sum(xlogy, axis=1)))


class Logistic(_SklearnModel):
    """scikit-learn L2 LogisticRegressionCV on standardised features (C 1e-3 .. 1e3, 5-fold log-loss)"""

    name = "logistic"
    task_types = ("binary",)
    Settings = LogisticSettings

    def estimator(self, seed: int):
        model = super().estimator(seed)
        # the declared scoring ("neg_log_loss", in the identity) computed without re-validation
        model[-1].set_params(scoring=neg_log_loss_binary)
        return model

    def spec(self):
        s = self.settings
        return "sklearn.linear_model.LogisticRegressionCV", {
            "Cs": list(s.Cs),
            "l1_ratios": (0.0,),  # L2
            "cv": s.cv,  # stratified folds in row order: no randomness
            "scoring": "neg_log_loss",
            "max_iter": s.max_iter,
            "use_legacy_attributes": False,
        }


class GBM(_SklearnModel):
    """scikit-learn HistGradientBoostingRegressor with its defaults

    HistGradientBoostingClassifier, with its defaults, for a binary target.
    """

    name = "gbm"
    task_types = ("regression", "binary")
    standardize = False  # trees: the scale does not matter
    seeded = True

    def spec(self):
        kind = "Classifier" if self.task == "binary" else "Regressor"
        return f"sklearn.ensemble.HistGradientBoosting{kind}", {}


DOWNSTREAM_MODELS = [MLP, Ridge, GBM, Logistic]


@oodfs.hookimpl
def oodfs_downstream_models():
    return list(DOWNSTREAM_MODELS)
