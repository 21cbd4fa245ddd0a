"""An oodfs plugin in one class and one hook: score each feature by |cov(X_j, y)| / sd(X_j)."""

import numpy as np

from oodfs.plugin import Selector, hookimpl

__version__ = "0.1.0"


class CovarianceFilter(Selector):
    """|cov(X_j, y)| scaled by sd(X_j) (example third-party plugin)."""

    name = "covfilter"
    grid = {"center": [True, False]}

    def __init__(self, center=True, k=5, random_state=None):
        self.center = center
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight):
        w = np.ones(len(y)) if sample_weight is None else sample_weight
        p = w / w.sum()
        Xc = X - p @ X if self.center else X
        yc = y - p @ y if self.center else y
        sd = np.sqrt(p @ Xc**2)
        return np.abs(p @ (Xc * yc[:, None])) / np.where(sd > 0, sd, 1.0)


@hookimpl
def oodfs_selectors():
    return [CovarianceFilter]
