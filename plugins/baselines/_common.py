"""Small helpers shared by the baseline selectors (weights, seeds, thread control)."""
from __future__ import annotations

import contextlib

import numpy as np
from sklearn.utils import check_random_state

#: a column whose (weighted) standard deviation is below this fraction of its largest
#: absolute value is treated as constant: it carries no information and scores 0
CONSTANT_RTOL = 1e-12


def probabilities(sample_weight: np.ndarray | None, n: int) -> np.ndarray:
    """Sample weights rescaled to sum 1 (uniform when ``sample_weight`` is None)."""
    if sample_weight is None:
        return np.full(n, 1.0 / n)
    return sample_weight / sample_weight.sum()


def weighted_center(X: np.ndarray, y: np.ndarray, p: np.ndarray):
    """``X`` and ``y`` centred on their ``p``-weighted means."""
    return X - p @ X, y - p @ y


def constant_columns(Xc: np.ndarray, X: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Mask of columns with (numerically) zero weighted spread; ``Xc`` is ``X`` centred."""
    sd = np.sqrt(p @ (Xc * Xc))
    scale = np.maximum(np.abs(X).max(axis=0), np.finfo(float).tiny)
    return sd <= CONSTANT_RTOL * scale


def int_seed(random_state) -> int:
    """A 31-bit integer seed from an int / RandomState / None (sklearn convention:
    an int gives the same seed every time; None draws one from numpy's global RNG)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state) % (2**31 - 1)
    return int(check_random_state(random_state).randint(2**31 - 1))


@contextlib.contextmanager
def torch_threads(n: int = 1):
    """Run torch with ``n`` intra-op threads, restoring the previous setting afterwards.

    The baselines are small (d ~ 10) models; one thread is fastest and keeps results
    reproducible, and the benchmark parallelises over tasks instead.
    """
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def group_by(points: list[dict], key: str) -> dict:
    """``{value of key: [indices of points with that value]}`` in first-seen order."""
    groups: dict = {}
    for i, p in enumerate(points):
        groups.setdefault(p[key], []).append(i)
    return groups


def full_points(cls, points: list[dict]) -> list[dict]:
    """Grid points completed with the class defaults (a point may name only some parameters)."""
    defaults = cls.default_params()
    unknown = {key for p in points for key in p} - set(defaults)
    if unknown:
        from oodfs import OodfsError

        raise OodfsError(f"selector {cls.name!r} has no grid parameter(s) {sorted(unknown)}; grid: {sorted(defaults)}")
    return [{**defaults, **p} for p in points]


def check_grid_input(cls, X, y, sample_weight=None):
    """The same input checks ``Selector.fit`` makes, for ``fit_grid`` overrides."""
    from oodfs.validation import check_X_y

    return check_X_y(X, y, sample_weight, min_samples=2, who=f"selector {cls.name!r}")


def check_scores(cls, scores, n_features: int) -> np.ndarray:
    """One finite float score per feature, as ``Selector._set_scores`` demands."""
    from oodfs import OodfsError

    scores = np.asarray(scores, dtype=float).ravel()
    if scores.shape != (n_features,) or not np.all(np.isfinite(scores)):
        raise OodfsError(f"selector {cls.name!r} produced invalid scores {scores!r}")
    return scores
