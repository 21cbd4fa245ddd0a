"""The downstream model: what turns a selected feature subset into the scores a leaderboard reports.

A downstream model is a plugin kind (hook ``oodfs_downstream_models``), one class per model,
like a selector. A class declares

* ``name`` -- what a suite's ``downstream = [...]`` or ``--downstream`` names;
* ``task_types`` -- the task types it predicts (:mod:`oodfs.contract.task_types`);
* ``Settings`` -- a frozen dataclass of its settings, and ``profiles``: the settings each
  suite profile changes (docs/PROTOCOL.md, "Profiles"); :meth:`identity` (by default the
  settings) enters the identity of every task it evaluates, so results made with other settings
  are never mixed;
* :meth:`predict_subsets` -- train one model per feature subset on the training rows and predict
  the rows of every target matrix (regression: values; binary: the probability of class 1.0).

Scoring is the task type's (:meth:`oodfs.contract.task_types.TaskType.score`), so a model only
predicts. A model's seed must come from ``(seed, subset)`` only: a subset's predictions may not
depend on the other subsets of the batch (the runner's cache relies on it). The built-in models
(the paper's MLP, ridge, gradient boosting, and their classifier forms) are plugins registered in
exactly this way (``plugins/downstream.py`` in the source tree).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from oodfs.validation import OodfsError

#: the model a suite trains when it names none, and the model of results stored before the
#: downstream model was a choice (they read as its rows)
DEFAULT_MODEL = "mlp"


@dataclass(frozen=True)
class NoSettings:
    """The settings of a model that has none."""


class DownstreamModel:
    """Base class of downstream models (see the module docstring). An instance holds one task
    type and one profile's settings: ``Model(task="binary", profile="paper")``."""

    kind: ClassVar[str] = "downstream"
    name: ClassVar[str] = ""
    task_types: ClassVar[tuple[str, ...]] = ("regression",)
    Settings: ClassVar[type] = NoSettings
    #: per suite profile, the settings it changes: {"paper": {"lr_start": 0.001}}
    profiles: ClassVar[dict[str, dict]] = {}

    def __init__(self, task: str = "regression", profile: str = "default", settings=None):
        if task not in self.task_types:
            raise OodfsError(
                f"downstream model {self.name!r} predicts {' and '.join(self.task_types)} targets, not {task}"
            )
        self.task = task
        self.profile = profile
        self.settings = settings if settings is not None else self.settings_for(profile)

    @classmethod
    def settings_for(cls, profile: str):
        """The frozen settings under ``profile`` (a profile the class does not name: defaults)."""
        return cls.Settings(**cls.profiles.get(profile, {}))

    def identity(self):
        """What enters a task's identity (JSON-able): by default the settings."""
        return dataclasses.asdict(self.settings)

    def predict_subsets(self, X: np.ndarray, y: np.ndarray, subsets: list, seed: int, targets: list) -> list:
        """Train one model per subset (a sorted tuple of column indices, never empty) on ``(X, y)``
        and return, for each matrix of ``targets``, its predictions: an array (subsets, rows)."""
        raise NotImplementedError
