"""Small numerical pieces shared by the core and the plugins (one copy of each).

Sample weights are handled as probabilities p (non-negative, summing to 1); ``None`` means
uniform. A column counts as constant when its (weighted) standard deviation is below
``CONSTANT_RTOL`` times its largest absolute value.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from oodfs.validation import OodfsError

#: relative spread below which a column is treated as constant
CONSTANT_RTOL = 1e-12


def sample_probabilities(sample_weight, n: int) -> np.ndarray:
    """Sample weights rescaled to sum 1 (uniform when ``sample_weight`` is None)."""
    if sample_weight is None:
        return np.full(n, 1.0 / n)
    w = np.asarray(sample_weight, dtype=float)
    return w / w.sum()


def weighted_center(X: np.ndarray, y: np.ndarray, p: np.ndarray):
    """``X`` and ``y`` centred on their ``p``-weighted means."""
    return X - p @ X, y - p @ y


def constant_columns(Xc: np.ndarray, X: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Mask of columns with (numerically) zero weighted spread; ``Xc`` is ``X`` centred."""
    sd = np.sqrt(p @ (Xc * Xc))
    scale = np.maximum(np.abs(X).max(axis=0), np.finfo(float).tiny)
    return sd <= CONSTANT_RTOL * scale


class Standardized(NamedTuple):
    Z: np.ndarray  # the standardised columns
    mean: np.ndarray
    sd: np.ndarray  # 1 for a constant column
    constant: np.ndarray  # mask of the constant columns (only centred)


def standardize(X: np.ndarray, p: np.ndarray | None = None) -> Standardized:
    """Columns shifted and scaled to mean 0 and sd 1 (``p``-weighted when ``p`` is given, else
    numpy's ``mean`` and ``std``), applied as ``(X - mean) / sd``.

    Constant columns are only centred. A column with values beyond 1e150 is first divided by
    its largest absolute value, so that its squares do not overflow; other columns are computed
    directly, without that extra rounding step.
    """
    X = np.asarray(X, dtype=float)
    magnitude = np.abs(X).max(axis=0)
    prescale = np.where(magnitude > 1e150, magnitude, 1.0)
    Xs = X / prescale
    if p is None:
        mean, sd = Xs.mean(axis=0), Xs.std(axis=0)
    else:
        mean = p @ Xs
        sd = np.sqrt(p @ ((Xs - mean) * (Xs - mean)))
    flat = sd <= CONSTANT_RTOL * np.maximum(magnitude / prescale, np.finfo(float).tiny)
    sd = np.where(flat, 1.0, sd)
    return Standardized((Xs - mean) / sd, mean * prescale, sd * prescale, flat)


def weighted_corr(X: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Weighted Pearson correlation matrix of the columns of ``X`` (constant columns: 0)."""
    X = np.asarray(X, dtype=float)
    p = sample_probabilities(w, X.shape[0])
    Z = standardize(X, p).Z
    corr = (Z * p[:, None]).T @ Z
    flat = constant_columns(X - p @ X, X, p)
    corr[flat, :] = 0.0
    corr[:, flat] = 0.0
    return np.clip(corr, -1.0, 1.0)


def max_abs_offdiag_corr(X: np.ndarray, w: np.ndarray | None = None) -> float:
    """The largest |weighted correlation| between two different features (0 for one feature)."""
    if X.shape[1] < 2:
        return 0.0
    corr = weighted_corr(X, w)
    np.fill_diagonal(corr, 0.0)
    return float(np.abs(corr).max())


def weighted_least_squares(
    X: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, *, strict: bool = True
) -> np.ndarray:
    """Coefficients (without the intercept) of least squares with intercept and sample weights.

    ``strict=True`` (what scores the independence-driven weighters) refuses n < d + 1 and a
    column that is constant under the weights, which cannot be scored; ``strict=False`` gives a
    constant column coefficient 0 and a rank-deficient design the minimum-norm solution, so the
    result is always finite.
    """
    n, d = X.shape
    if strict and n < d + 1:
        raise OodfsError(f"weighted least squares needs n >= d + 1 samples, got n = {n}, d = {d}")
    p = sample_probabilities(w, n)
    Xc, yc = weighted_center(X, y, p)  # centring on the weighted means absorbs the intercept
    flat = constant_columns(Xc, X, p)
    if flat.any() and strict:
        raise OodfsError(
            f"column {int(np.nonzero(flat)[0][0])} is constant under the sample weights; weighted least "
            "squares cannot score it (drop it first)"
        )
    coef = np.zeros(d)
    keep = ~flat
    if keep.any():
        sw = np.sqrt(p)
        coef[keep], *_ = np.linalg.lstsq(Xc[:, keep] * sw[:, None], yc * sw, rcond=None)
    return coef


def int_seed(random_state) -> int:
    """A 31-bit integer seed from an int / RandomState / None (scikit-learn's convention: an
    int gives the same seed every time; None draws one from numpy's global generator)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state) % (2**31 - 1)
    return int(check_random_state(random_state).randint(2**31 - 1))


@contextlib.contextmanager
def one_torch_thread():
    """Run torch on one intra-op thread, restoring the caller's setting afterwards.

    The models here are tiny (d ~ 10): more threads only add synchronisation, and on a busy
    machine they make every step many times slower. The benchmark parallelises over tasks.
    """
    import torch

    before = torch.get_num_threads()
    if before != 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before != 1:
            torch.set_num_threads(before)


def clock(seconds: float | None) -> str:
    """A duration as people read it: ``42 s``, ``3 min 05 s``, ``2 h 07 min`` (``-`` for None)."""
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
