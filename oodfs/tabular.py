"""Deprecated (kept for one release): the user's table is now the package :mod:`oodfs.tables`
(reading, preparing, naming features), and ranking its features the use case
:func:`oodfs.run.rank.rank_features`, which returns a typed
:class:`~oodfs.run.rank.FeatureRanking`. This module keeps the old names importable;
:func:`rank_features` here returns the old form (a DataFrame with what was done in ``attrs``)
and warns.
"""

from __future__ import annotations

import warnings

import pandas as pd

from oodfs import tables as _tables
from oodfs.run.rank import (
    DOWNSTREAM_MODELS,
    GROUP_AGGREGATES,
    MAX_ABS_VALUE,
    MAX_SEED,
    evaluate_selection,
    rank_variables,
)
from oodfs.run.rank import rank_features as _rank_features
from oodfs.tables import *  # noqa: F403 -- the old names, one release more
from oodfs.tables import MAX_LEVELS

__all__ = [
    *_tables.__all__,
    "DOWNSTREAM_MODELS",
    "GROUP_AGGREGATES",
    "MAX_ABS_VALUE",
    "MAX_SEED",
    "RIDGE_ALPHAS",  # noqa: F405 -- module __getattr__
    "evaluate_selection",
    "rank_features",
    "rank_variables",
]


def __getattr__(name: str):
    if name == "RIDGE_ALPHAS":  # the ridge downstream model's penalties, as the registry declares them
        from oodfs.run.downstream_models import get_model

        return tuple(get_model("ridge").settings.alphas)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def rank_features(
    data,
    target,
    method: str,
    top_k: int | None = None,
    env_column=None,
    train_envs=None,
    params: dict | None = None,
    random_state: int = 0,
    categorical: str = "onehot",
    drop=(),
    standardize_features: bool = True,
    max_levels: int = MAX_LEVELS,
    **options,
) -> pd.DataFrame:
    """Deprecated: :func:`oodfs.run.rank.rank_features` (the same arguments, as
    :class:`~oodfs.run.rank.RankOptions`), whose result's ``as_frame()`` this returns."""
    warnings.warn(
        "oodfs.tabular.rank_features is deprecated: use oodfs.run.rank.rank_features, which returns a "
        "FeatureRanking (its as_frame() is this DataFrame)",
        DeprecationWarning,
        stacklevel=2,
    )
    result = _rank_features(
        data,
        target,
        method,
        top_k=top_k,
        env_column=env_column,
        train_envs=train_envs,
        params=params,
        random_state=random_state,
        categorical=categorical,
        drop=drop,
        standardize_features=standardize_features,
        max_levels=max_levels,
        **options,
    )
    return result.as_frame()
