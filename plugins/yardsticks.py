"""Yardsticks: reference rows of a real-data leaderboard, not feature selectors.

A yardstick answers "does selecting help at all?": ``all_features`` is the downstream model
trained on every feature (no selection), ``mean`` predicts the training mean (no feature).
They are registered as selectors so that a run stores, resumes and reports them like any
method, but the runner evaluates them at their own number of features (``yardstick_k``: every
feature, or none) instead of the suite's k, and the leaderboard marks them as references and
never puts them in a best set (docs/PROTOCOL.md, "Real data").

Their scores are all equal (no feature is preferred), so the ranking metrics of a synthetic
suite are not computed for them.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

import oodfs


class _Yardstick(oodfs.Selector):
    grid: ClassVar[dict] = {}
    supports_sample_weight: ClassVar[bool] = False
    #: marks a reference row; "all": evaluated on every feature, 0: on none
    yardstick: ClassVar[object] = None

    def __init__(self, k: int = 5, random_state=None):
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight):
        if sample_weight is not None and not np.all(sample_weight == sample_weight[0]):
            raise oodfs.OodfsError(f"{self.name} is a yardstick: it takes no sample_weight")
        return np.zeros(X.shape[1])


class AllFeatures(_Yardstick):
    """Reference row: the downstream model trained on every feature (no selection)."""

    name = "all_features"
    yardstick = "all"


class TrainingMean(_Yardstick):
    """Reference row: predicts the mean target of the training rows (no feature)."""

    name = "mean"
    yardstick = 0


YARDSTICKS = [AllFeatures, TrainingMean]


def yardstick_k(cls, n_features: int) -> int | None:
    """The number of features a yardstick is evaluated on (None: not a yardstick)."""
    kind = getattr(cls, "yardstick", None)
    if kind is None:
        return None
    return n_features if kind == "all" else int(kind)


@oodfs.hookimpl
def oodfs_selectors():
    return list(YARDSTICKS)
