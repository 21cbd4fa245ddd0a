"""The three plugin kinds: Selector, Weighter, Environment.

A plugin is a subclass of one of these, returned from a hook in :mod:`oodfs.hookspecs`.
Each class declares

* ``name``  -- the registry name (``oodfs bench --methods NAME``);
* ``grid``  -- the hyperparameter grid, ``{param: [values]}`` (the paper's search ranges);
  the default grid point is the ``__init__`` default of each parameter;
* a docstring whose first line is the one-line description shown by ``oodfs plugins``.
"""
from __future__ import annotations

import inspect
import itertools
import warnings
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin

from .validation import OodfsError, check_X, check_X_y


def describe(cls) -> str:
    """First line of a class docstring: the plugin's one-line description."""
    doc = inspect.getdoc(cls) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def ranking_from_scores(scores: np.ndarray) -> np.ndarray:
    """Feature indices ordered best first (higher score = better); ties keep column order."""
    return np.argsort(-np.asarray(scores, dtype=float), kind="stable")


class _GridMixin:
    name: ClassVar[str] = ""
    grid: ClassVar[dict[str, list]] = {}

    @classmethod
    def default_params(cls) -> dict:
        """The default grid point: the ``__init__`` defaults of the grid's parameters."""
        sig = inspect.signature(cls.__init__)
        return {p: sig.parameters[p].default for p in cls.grid}

    @classmethod
    def grid_points(cls) -> list[dict]:
        """Every point of the grid, in a fixed order (the default point if there is no grid)."""
        if not cls.grid:
            return [{}]
        keys = list(cls.grid)
        return [dict(zip(keys, values)) for values in itertools.product(*(cls.grid[k] for k in keys))]


class Selector(_GridMixin, SelectorMixin, BaseEstimator):
    """Base class of feature selectors: a scikit-learn estimator that scores every feature.

    Subclasses implement ``_fit_scores(X, y, sample_weight) -> scores`` (one finite score per
    feature, higher = more important) and take ``k`` (features kept by ``transform``) and
    ``random_state`` in ``__init__``. After ``fit``: ``scores_`` (alias
    ``feature_importances_``), ``ranking_`` (feature indices, best first), ``get_support()``
    (the top ``k``), ``transform``. ``fit_grid`` may be overridden to score many grid points
    from one fit (e.g. one 200-tree forest scored at 50/100/200 trees).
    """

    #: whether fit honours ``sample_weight`` (checked by the conformance kit)
    supports_sample_weight: ClassVar[bool] = True

    def __init__(self, k: int = 5, random_state=None):
        self.k = k
        self.random_state = random_state

    # -- what a plugin implements -------------------------------------------------------
    def _fit_scores(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    # -- the shared machinery ------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        X, y, sample_weight = check_X_y(X, y, sample_weight, min_samples=2, who=self._label())
        scores = self._fit_scores(X, y, sample_weight)
        self._set_scores(scores, X.shape[1])
        return self

    def _set_scores(self, scores, n_features: int) -> None:
        scores = np.asarray(scores, dtype=float).ravel()
        if scores.shape != (n_features,):
            raise OodfsError(f"{self._label()} returned {scores.size} scores for {n_features} features")
        if not np.all(np.isfinite(scores)):
            raise OodfsError(f"{self._label()} produced a non-finite score (features {np.nonzero(~np.isfinite(scores))[0].tolist()})")
        self.scores_ = scores
        self.ranking_ = ranking_from_scores(scores)
        self.n_features_in_ = n_features

    def _label(self) -> str:
        return f"selector {self.name or type(self).__name__!r}"

    @property
    def feature_importances_(self) -> np.ndarray:
        return self.scores_

    def _get_support_mask(self) -> np.ndarray:
        k = int(self.k)
        if not 1 <= k <= self.n_features_in_:
            raise OodfsError(f"k must be between 1 and {self.n_features_in_}, got {self.k}")
        mask = np.zeros(self.n_features_in_, dtype=bool)
        mask[self.ranking_[:k]] = True
        return mask

    @classmethod
    def fit_grid(cls, X, y, points: list[dict], random_state=None) -> list[np.ndarray]:
        """Scores for each grid point (aligned with ``points``). Override to share fits."""
        return [cls(**p, random_state=random_state).fit(X, y).scores_ for p in points]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def weight_diagnostics(X: np.ndarray, w: np.ndarray) -> dict:
    """Effective sample size, max weight (weights scaled to mean 1) and the largest remaining
    |weighted correlation| between two features."""
    w = np.asarray(w, dtype=float)
    n = w.size
    ess = float(w.sum() ** 2 / np.sum(w**2))
    p = w / w.sum()
    mu = p @ X
    Xc = X - mu
    cov = (Xc * p[:, None]).T @ Xc
    sd = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
    corr = cov / np.outer(sd, sd)
    np.fill_diagonal(corr, 0.0)
    return {
        "ess": ess,
        "ess_fraction": ess / n,
        "max_weight": float(w.max() / w.mean()),
        "max_abs_corr": float(np.abs(corr).max()) if X.shape[1] > 1 else 0.0,
    }


class WeightCollapseWarning(UserWarning):
    """The learned weights put almost all mass on a few samples (low effective sample size)."""


class Weighter(_GridMixin, BaseEstimator):
    """Base class of sample weighters: learn w(x) >= 0 (mean 1) that make the features independent.

    Subclasses implement ``_fit_weights(X) -> weights``. After ``fit``: ``weights_`` (mean 1,
    usable as any scikit-learn estimator's ``sample_weight``) and ``diagnostics_`` (see
    :func:`weight_diagnostics`). ``fit_grid`` may be overridden to produce many grid points
    from one fit (e.g. one SRDO classifier, several clipping levels).
    """

    #: warn when the effective sample size falls below this fraction of n
    collapse_ess_fraction: ClassVar[float] = 0.05

    def __init__(self, random_state=None):
        self.random_state = random_state

    def _fit_weights(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X, y=None):
        X = check_X(X, min_samples=2, who=f"weighter {self.name!r}")
        self._set_weights(X, self._fit_weights(X))
        return self

    def _set_weights(self, X: np.ndarray, w) -> None:
        w = np.asarray(w, dtype=float).ravel()
        if w.shape != (X.shape[0],):
            raise OodfsError(f"weighter {self.name!r} returned {w.size} weights for {X.shape[0]} samples")
        if not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
            raise OodfsError(f"weighter {self.name!r} produced invalid weights (negative, non-finite or all zero)")
        w = w / w.mean()
        self.weights_ = w
        self.diagnostics_ = weight_diagnostics(X, w)
        if self.diagnostics_["ess_fraction"] < self.collapse_ess_fraction:
            warnings.warn(
                f"weighter {self.name!r}: weights collapsed (effective sample size "
                f"{self.diagnostics_['ess']:.1f} of {X.shape[0]})",
                WeightCollapseWarning,
                stacklevel=3,
            )

    def fit_weights(self, X) -> np.ndarray:
        return self.fit(X).weights_

    @classmethod
    def fit_grid(cls, X, points: list[dict], random_state=None) -> list[np.ndarray]:
        """Weights (mean 1) for each grid point. Override to share one fit across points."""
        return [cls(**p, random_state=random_state).fit(X).weights_ for p in points]


class Environment(BaseEstimator):
    """Base class of environments: makes (X, y) for an environment id and a seed.

    ``sample(env, n, seed)`` returns ``X`` of shape (n, n_features) and ``y`` of shape (n,).
    ``env`` identifies the environment (a bias rate for synthetic data, a group label for a
    table). A finite source (a table) may return fewer rows than ``n``, in random order; the
    runner holds out the tail of the training draw as validation data. ``check_env(env)``
    rejects an invalid id up front. ``stable_set`` is the tuple of true stable feature indices, or None when unknown;
    ``feature_names`` names the columns. Constructor parameters (e.g. ``setting``) are the
    environment's options; ``settings`` lists the named settings a suite can ask for.
    """

    name: ClassVar[str] = ""
    settings: ClassVar[tuple[str, ...]] = ()

    @property
    def stable_set(self) -> tuple[int, ...] | None:
        return None

    @property
    def feature_names(self) -> list[str]:
        raise NotImplementedError

    def sample(self, env, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def check_env(self, env):
        """Raise OodfsError if ``env`` is not a valid environment id (checked before a run)."""
        return env
