"""Warnings for degenerate weights, raised by ``fit_grid`` as well as ``fit``.

:class:`oodfs.Weighter` warns about a collapsed effective sample size in ``fit`` only; the
runner calls ``fit_grid``, so the weighters here check every grid point themselves. A weighted
fit on collapsed or all-clipped weights is not a failure the code can detect otherwise: it
silently becomes a fit on a handful of rows, or (all clipped at one end) plain least squares.
"""

from __future__ import annotations

import json
import warnings

import numpy as np

from oodfs import WeightCollapseWarning


class WeightClippingWarning(WeightCollapseWarning):
    """(Almost) every weight sits at a clip bound: the weights carry little or no information
    (all at one bound: uniform weights, i.e. an unweighted fit). A subclass of
    :class:`oodfs.WeightCollapseWarning`, so one filter silences both."""


def _label(cls, params: dict) -> str:
    point = {k: params[k] for k in cls.grid if k in params}  # the grid point, not every setting
    return f"weighter {cls.name!r} at {json.dumps(point, sort_keys=True, default=str)}"


def warn_if_collapsed(cls, params: dict, weights: np.ndarray, stacklevel: int = 3) -> None:
    """Warn when the effective sample size of ``weights`` is below ``cls.collapse_ess_fraction``
    of n (the check :class:`oodfs.Weighter` makes in ``fit``)."""
    w = np.asarray(weights, dtype=float)
    if not w.size or w.sum() <= 0:
        return  # invalid weights: the base class raises
    ess = float(w.sum() ** 2 / np.sum(w * w))
    if ess / w.size < cls.collapse_ess_fraction:
        warnings.warn(
            f"{_label(cls, params)}: weights collapsed (ess_fraction {ess / w.size:.4f} < "
            f"{cls.collapse_ess_fraction}; effective sample size {ess:.1f} of {w.size})",
            WeightCollapseWarning,
            stacklevel=stacklevel,
        )


def warn_if_clipped(cls, params: dict, diagnostics: dict, stacklevel: int = 3) -> None:
    """Warn when ``frac_clipped_low + frac_clipped_high`` reaches ``cls.clip_warn_fraction``."""
    low, high = diagnostics["frac_clipped_low"], diagnostics["frac_clipped_high"]
    threshold = cls.clip_warn_fraction
    if low + high >= threshold:
        what = "uniform (an unweighted fit)" if max(low, high) >= threshold else "two-valued"
        warnings.warn(
            f"{_label(cls, params)}: weights almost all clipped (frac_clipped_low {low:.3f} + "
            f"frac_clipped_high {high:.3f} >= {threshold}); the weights are close to {what}",
            WeightClippingWarning,
            stacklevel=stacklevel,
        )
