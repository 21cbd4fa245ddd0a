"""Distributionally robust linear regression through the ``dro`` package (Wang, Liu, Lam, Namkoong
and Blanchet, 2025; PyPI ``dro``, MIT): the chi^2-, CVaR-, KL- and Wasserstein-DRO least-squares
models of ``dro.linear_model``, each solved by the package (cvxpy).

These methods need no environment labels: they guard against every distribution within a radius
of the pooled training rows. Each selector fits the package's model (``model_type = "ols"``, with
intercept) on the standardised features and scores |robust coefficient|, i.e. the coefficient on
the original scale times the feature's standard deviation. Whether such a ranking is a fair use
of DRO, against DRO as a downstream model, and why ``dro`` is an optional dependency:
docs/PROTOCOL.md, section 13.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

import oodfs

from ._weights import refuse_weights

INSTALL = (
    "the DRO methods need the `dro` package, which cannot be imported here ({cause}); importing it "
    "imports torchvision, which does not load beside a CPU build of torch (docs/PROTOCOL.md, section 13)"
)


def dro_linear_model():
    """``dro.linear_model``, or a one-line OodfsError saying why it cannot be imported."""
    try:
        import dro.linear_model as linear_model
    except Exception as exc:  # ImportError, or torchvision's RuntimeError on loading its operators
        cause = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        raise oodfs.OodfsError(INSTALL.format(cause=cause)) from exc
    return linear_model


class _RobustLinear(oodfs.Selector):
    """Shared by the DRO selectors: one parameter (``radius_name``) checked against its range."""

    uses_groups: ClassVar[bool] = False
    family: ClassVar[str] = "robust (DRO)"
    supports_sample_weight: ClassVar[bool] = False
    #: the dro class name and the name of its robustness parameter in ``update``
    dro_class: ClassVar[str] = ""
    radius_name: ClassVar[str] = "eps"
    #: (low, high, low_open, high_open)
    radius_range: ClassVar[tuple] = (0.0, np.inf, False, True)

    @classmethod
    def _check(cls, value):
        lo, hi, lo_open, hi_open = cls.radius_range
        ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool) and np.isfinite(value)
        if ok:
            ok = (value > lo if lo_open else value >= lo) and (value < hi if hi_open else value <= hi)
        if not ok:
            left, right = "(" if lo_open else "[", ")" if hi_open else "]"
            high = "inf" if hi == np.inf else f"{hi:g}"
            raise oodfs.OodfsError(
                f"{cls.name} {cls.radius_name} must be a number in {left}{lo:g}, {high}{right}, got {value!r}"
            )

    def _fit_scores(self, X, y, sample_weight):
        return self._fit_grid(X, y, [self.get_params()], sample_weight=sample_weight, random_state=None)[0]

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, groups=None):
        refuse_weights(sample_weight, cls.name)
        for p in points:
            cls._check(p[cls.radius_name])
        linear_model = dro_linear_model()
        sd = X.std(axis=0)
        Xs = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        out = []
        for p in points:
            model = getattr(linear_model, cls.dro_class)(
                input_dim=X.shape[1], model_type="ols", fit_intercept=True
            )
            model.update({cls.radius_name: float(p[cls.radius_name])})
            try:
                params = model.fit(Xs, y)
            except Exception as exc:  # the package's solver errors: one line naming the point
                raise oodfs.OodfsError(
                    f"{cls.name}: the dro solver failed at {cls.radius_name} = {p[cls.radius_name]}: "
                    f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                ) from exc
            out.append(np.abs(np.asarray(params["theta"], dtype=float).ravel()))
        return out


class Chi2DRO(_RobustLinear):
    """chi^2-DRO least squares (the dro package): |robust coefficient| on standardised features."""

    name = "chi2dro"
    dro_class = "Chi2DRO"
    grid: ClassVar[dict] = {"eps": [0.01, 0.1, 0.5, 1.0, 2.0]}

    def __init__(self, eps=0.1, k=5, random_state=None):
        self.eps = eps
        self.k = k
        self.random_state = random_state


class CVaRDRO(_RobustLinear):
    """CVaR-DRO least squares (the dro package): |robust coefficient| on standardised features."""

    name = "cvardro"
    dro_class = "CVaRDRO"
    radius_name = "alpha"
    radius_range = (0.0, 1.0, True, False)
    #: alpha = 1 is least squares; smaller alpha, the mean loss of the worst alpha-fraction of rows
    grid: ClassVar[dict] = {"alpha": [0.1, 0.2, 0.5, 0.8, 1.0]}

    def __init__(self, alpha=0.5, k=5, random_state=None):
        self.alpha = alpha
        self.k = k
        self.random_state = random_state


class KLDRO(_RobustLinear):
    """KL-DRO least squares (the dro package): |robust coefficient| on standardised features."""

    name = "kldro"
    dro_class = "KLDRO"
    grid: ClassVar[dict] = {"eps": [0.01, 0.1, 0.5, 1.0, 2.0]}

    def __init__(self, eps=0.1, k=5, random_state=None):
        self.eps = eps
        self.k = k
        self.random_state = random_state


class WassersteinDRO(_RobustLinear):
    """Wasserstein-DRO least squares (the dro package, 2-norm cost): |robust coefficient|, standardised."""

    name = "wdro"
    dro_class = "WassersteinDRO"
    grid: ClassVar[dict] = {"eps": [0.01, 0.05, 0.1, 0.5, 1.0]}

    def __init__(self, eps=0.1, k=5, random_state=None):
        self.eps = eps
        self.k = k
        self.random_state = random_state


ROBUST_SELECTORS = [Chi2DRO, CVaRDRO, KLDRO, WassersteinDRO]
