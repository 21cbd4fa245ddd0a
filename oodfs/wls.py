"""Weighted least squares, and the generic selector that turns any weighter into a selector.

Independence-driven importance weighting (paper, Algorithm 1) = learn sample weights that make
the features independent, then fit weighted least squares (with intercept); feature scores are
the absolute WLS coefficients.
"""
from __future__ import annotations

import inspect
from typing import ClassVar

import numpy as np

from .api import Selector, Weighter
from .validation import OodfsError, check_X_y


def weighted_least_squares(X: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Coefficients (without the intercept) of least squares with intercept and sample weights."""
    n, d = X.shape
    if n < d + 1:
        raise OodfsError(f"weighted least squares needs n >= d + 1 samples, got n = {n}, d = {d}")
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    p = w / w.sum()
    Xc = X - p @ X  # centring on the weighted means absorbs the intercept
    yc = y - p @ y
    sw = np.sqrt(p)[:, None]
    A = Xc * sw
    constant = np.nonzero(np.sqrt(np.sum(A**2, axis=0)) <= 1e-12 * max(1.0, np.abs(X).max()))[0]
    if constant.size:
        raise OodfsError(
            f"column {int(constant[0])} is constant under the sample weights; weighted least squares "
            "cannot score it (drop it first)"
        )
    coef, *_ = np.linalg.lstsq(A, yc * sw[:, 0], rcond=None)
    return coef


class WLSSelector(Selector):
    """Weighted least squares on a weighter's sample weights; scores = |coefficients|.

    ``WLSSelector(weighter=SRDOWeighter(gamma=10))`` wraps a weighter instance;
    :func:`selector_for_weighter` makes a named selector class whose parameters are the
    weighter's, so that ``dwr`` and ``srdo`` are grid-searchable selectors.
    """

    name = "wls"
    weighter_class: ClassVar[type[Weighter] | None] = None

    def __init__(self, weighter: Weighter | None = None, k: int = 5, random_state=None):
        self.weighter = weighter
        self.k = k
        self.random_state = random_state

    def _make_weighter(self) -> Weighter | None:
        return self.weighter

    def _fit_scores(self, X, y, sample_weight):
        weighter = self._make_weighter()
        w = np.ones(X.shape[0]) if weighter is None else weighter.fit(X).weights_
        self.weights_ = w
        self.weight_diagnostics_ = getattr(weighter, "diagnostics_", None)
        if sample_weight is not None:  # a caller's weights compose with the learned ones
            w = w * sample_weight
        return np.abs(weighted_least_squares(X, y, w))


def selector_for_weighter(weighter_cls: type[Weighter]) -> type[Selector]:
    """A Selector class named like the weighter, with the weighter's parameters and grid."""
    wsig = inspect.signature(weighter_cls.__init__)
    wparams = [p for name, p in wsig.parameters.items() if name not in ("self", "random_state")]
    params = (
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in wparams]
        + [
            inspect.Parameter("k", inspect.Parameter.KEYWORD_ONLY, default=5),
            inspect.Parameter("random_state", inspect.Parameter.KEYWORD_ONLY, default=None),
        ]
    )
    weighter_param_names = [p.name for p in wparams]

    def __init__(self, **kwargs):
        bound = __init__.__signature__.bind(self, **kwargs)
        bound.apply_defaults()
        for key, value in bound.arguments.items():
            if key != "self":
                setattr(self, key, value)

    __init__.__signature__ = inspect.Signature(params)

    def _make_weighter(self):
        return weighter_cls(**{p: getattr(self, p) for p in weighter_param_names}, random_state=self.random_state)

    @classmethod
    def fit_grid(cls, X, y, points, random_state=None):
        X, y, _ = check_X_y(X, y, min_samples=2, who=f"selector {cls.name!r}")  # y too: the weighter sees only X
        # the weighter's parameters off the grid take this class's defaults (a subclass made by
        # oodfs.testing.with_defaults changes them); one fit_grid call shares work across points
        sig = inspect.signature(cls.__init__).parameters
        points = [{**{p: sig[p].default for p in weighter_param_names}, **point} for point in points]
        weights = weighter_cls.fit_grid(X, points, random_state=random_state)
        return [np.abs(weighted_least_squares(X, y, w)) for w in weights]

    doc = inspect.getdoc(weighter_cls) or weighter_cls.__name__
    first, _, rest = doc.partition("\n")
    namespace = {
        "__init__": __init__,
        "_make_weighter": _make_weighter,
        "fit_grid": fit_grid,
        "name": weighter_cls.name,
        "grid": dict(weighter_cls.grid),
        "weighter_class": weighter_cls,
        # a weighter whose fit depends on column order makes a selector that does too
        "permutation_invariant": getattr(weighter_cls, "permutation_invariant", True),
        "__doc__": f"{first.rstrip('.')} + weighted least squares; scores = |coefficients|.\n{rest}",
        "__module__": weighter_cls.__module__,
    }
    return type(f"{weighter_cls.__name__}WLS", (WLSSelector,), namespace)

