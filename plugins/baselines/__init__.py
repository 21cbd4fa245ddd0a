"""Baseline feature selectors of the paper (appendix "More Experimental Details"):
correlation, OLS, LASSO, mutual information, gradient boosting, XGBoost, random forest, STG.

Each is an :class:`oodfs.Selector`; the grids are the paper's hyperparameter search ranges.
"""

import oodfs

from .linear import OLS, Correlation, LassoSelector
from .mi import MutualInfo
from .stg import STG
from .trees import GradientBoosting, RandomForest, XGBoost

SELECTORS = [Correlation, OLS, MutualInfo, GradientBoosting, XGBoost, RandomForest, LassoSelector, STG]

__all__ = [cls.__name__ for cls in SELECTORS] + ["SELECTORS", "oodfs_selectors"]


@oodfs.hookimpl
def oodfs_selectors():
    return list(SELECTORS)
