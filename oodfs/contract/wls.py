"""Weighted least squares, and the generic selector that turns any weighter into a selector.

Independence-driven importance weighting (paper, Algorithm 1) = learn sample weights that make
the features independent, then fit weighted least squares (with intercept); feature scores are
the absolute WLS coefficients. On a binary target (0.0 / 1.0) the weights are learnt from X as
always, and the selection step is a weighted logistic regression without penalty on features
standardised under the weights, scores = |coefficients| (``binary_fit="logistic"``, the
default), or least squares on the 0/1 target as for regression (``binary_fit="wls"``, the
declared alternative; docs/PROTOCOL.md, "Task types").
"""

from __future__ import annotations

import inspect
import warnings
from typing import ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from oodfs.contract.api import GridFit, Selector, Weighter, describe
from oodfs.numeric import sample_probabilities, standardize, weighted_least_squares
from oodfs.validation import OodfsError

#: how a weighter's selector fits a binary target: weighted logistic regression, or least squares on 0/1
BINARY_FITS = ("logistic", "wls")
#: the start of the error of a logistic step whose weighted rows hold one class only; stored with a
#: failed task (and replayed bit for bit), so it stays as it is: the leaderboard adds why
#: (:data:`FAILURE_CAUSES`)
ONE_CLASS = "logistic regression needs both classes among the weighted rows"
#: why a weighted fit fails, by the start of its error: the one line a leaderboard adds to it
FAILURE_CAUSES = {
    ONE_CLASS: (
        "the learned sample weights left rows of one class only (they collapsed onto a few rows; the "
        "weight diagnostics' effective sample size says how few): try srdo, fewer features (rare 0/1 "
        "columns and one-hot levels drive the collapse) or more training rows"
    ),
}


def weighted_logistic_regression(X: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Coefficients (without the intercept) of unpenalised logistic regression with intercept and
    sample weights, on the columns standardised under the weights (a constant column gets 0).

    scikit-learn's ``LogisticRegression(C=inf)`` with the Newton-Cholesky solver (exact Newton
    steps, cheap for a few dozen features) to a tight tolerance. On separable data the
    unpenalised optimum is at infinity: the coefficients then grow until ``max_iter`` and are
    finite but large (a ConvergenceWarning is silenced; the ranking still follows them).
    """
    n, d = X.shape
    p = sample_probabilities(w, n)
    levels = np.unique(y[p > 0])
    if levels.size != 2:
        raise OodfsError(f"{ONE_CLASS}, got {levels.tolist()}")
    std = standardize(X, p)
    keep = ~std.constant
    coef = np.zeros(d)
    if keep.any():
        model = LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-10, max_iter=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(std.Z[:, keep], y, sample_weight=p * n)
        coef[keep] = model.coef_[0]
    return coef


def weighted_logistic_scores(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """|coefficients| of :func:`weighted_logistic_regression`: the scores of the logistic step."""
    return np.abs(weighted_logistic_regression(X, y, w))


def selection_scores(X, y, w, task: str, binary_fit: str) -> np.ndarray:
    """The scores of a weighter's selection step on weights ``w`` (see the module docstring)."""
    if task == "binary":
        if binary_fit not in BINARY_FITS:
            raise OodfsError(f"binary_fit must be one of {', '.join(BINARY_FITS)}, got {binary_fit!r}")
        if binary_fit == "logistic":
            return weighted_logistic_scores(X, y, w)
    return np.abs(weighted_least_squares(X, y, w))


class WLSSelector(Selector):
    """Weighted least squares on a weighter's sample weights; scores = |coefficients|.

    ``WLSSelector(weighter=SRDOWeighter(gamma=10))`` wraps a weighter instance;
    :func:`selector_for_weighter` makes a named selector class whose parameters are the
    weighter's, so that ``dwr`` and ``srdo`` are grid-searchable selectors.
    """

    name = "wls"
    weighter_class: ClassVar[type[Weighter] | None] = None
    task_types: ClassVar[tuple[str, ...]] = ("regression", "binary")

    def __init__(
        self, weighter: Weighter | None = None, binary_fit: str = "logistic", k: int = 5, random_state=None
    ):
        self.weighter = weighter
        self.binary_fit = binary_fit
        self.k = k
        self.random_state = random_state

    def _make_weighter(self) -> Weighter | None:
        return self.weighter

    def _fit_scores(self, X, y, sample_weight, groups=None):
        weighter = self._make_weighter()
        labels = {} if groups is None else {"groups": groups}  # a label-free weighter's fit takes none
        w = np.ones(X.shape[0]) if weighter is None else weighter.fit(X, **labels).weights_
        self.weights_ = w
        self.weight_diagnostics_ = getattr(weighter, "diagnostics_", None)
        if sample_weight is not None:  # a caller's weights compose with the learned ones
            w = w * sample_weight
        return selection_scores(X, y, w, getattr(self, "task_", "regression"), self.binary_fit)


def selector_for_weighter(weighter_cls: type[Weighter]) -> type[Selector]:
    """A Selector class named like the weighter, with the weighter's parameters and grid."""
    wsig = inspect.signature(weighter_cls.__init__)
    wparams = [p for name, p in wsig.parameters.items() if name not in ("self", "random_state")]
    params = (
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in wparams]
        + [
            inspect.Parameter("binary_fit", inspect.Parameter.KEYWORD_ONLY, default="logistic"),
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
        return weighter_cls(
            **{p: getattr(self, p) for p in weighter_param_names}, random_state=self.random_state
        )

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, groups=None, task="regression"):
        # one weighter fit_grid call lets a weighter share work across its grid points
        wpoints = [{k: v for k, v in p.items() if k != "binary_fit"} for p in points]
        fits = weighter_cls.fit_grid_detailed(X, wpoints, random_state=random_state, groups=groups)
        out = []
        for p, f in zip(points, fits):
            w = (
                f.values if sample_weight is None else f.values * sample_weight
            )  # the caller's weights compose
            out.append(
                GridFit(selection_scores(X, y, w, task, p.get("binary_fit", "logistic")), f.diagnostics)
            )
        return out

    doc = inspect.getdoc(weighter_cls) or weighter_cls.__name__
    first, rest = describe(weighter_cls) or weighter_cls.__name__, doc.partition("\n\n")[2]
    namespace = {
        "__init__": __init__,
        "_make_weighter": _make_weighter,
        "_fit_grid": _fit_grid,
        "name": weighter_cls.name,
        "grid": dict(weighter_cls.grid),
        "profiles": dict(weighter_cls.profiles),
        "weighter_class": weighter_cls,
        # a label-using weighter makes a label-using selector (the labels pass through)
        "uses_groups": weighter_cls.uses_groups,
        "min_group_rows": weighter_cls.min_group_rows,
        # a weighter whose fit depends on column order makes a selector that does too
        "permutation_invariant": weighter_cls.permutation_invariant,
        "__doc__": f"{first.rstrip('.')} + weighted least squares; scores = |coefficients|.\n\n{rest}",
        "__module__": weighter_cls.__module__,
    }
    return type(f"{weighter_cls.__name__}WLS", (WLSSelector,), namespace)
