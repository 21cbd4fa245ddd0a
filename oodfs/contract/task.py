"""What a task is: one method on one data set of a suite.

A data set is named by its coordinates (setting, r_train, run), a task by those and the method.
Every table (results, tasks, the reference, merged stores) is keyed by :data:`TASK_KEY`, and every
random draw of a task is seeded from its coordinates (:meth:`DataKey.seed`), so results depend
neither on the number of workers nor on the order in which tasks run (docs/PROTOCOL.md,
"Reproducibility").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from oodfs.contract.seeds import derive_seed

#: the columns that identify a task in every table
TASK_KEY = ["setting", "r_train", "run", "method"]

#: what one unit of replication of a suite is (``unit = ...``; docs/PROTOCOL.md section 10):
#: ``run``: every (r_train, run) block is a fresh draw from a data process (the synthetic suites);
#: ``resplit``: blocks are resplits of one table (their p-values are conditional on that table);
#: ``environment``: each training environment is one unit (its runs are averaged first)
UNITS = ("run", "resplit", "environment")


def default_unit(environment) -> str:
    """The unit of a suite that declares none: a table's blocks are resplits of it, any other
    environment draws afresh."""
    return "resplit" if environment in ("table", "binary_table") else "run"


def env_key(value) -> str:
    """A stable text key for an environment id (2.5 -> '2.5'), so floats compare exactly."""
    return repr(float(value)) if isinstance(value, (int, float)) else str(value)


_FIRST_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def env_sort_key(value) -> tuple:
    """Environment ids in their natural order: numbers by value, and labels by the first number
    in them, a "<" label before and a ">=" label after the others with that number (the
    table environment's bins: <1950, 1950-1969, ..., >=2000); other text after, as text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), 0, "")
    text = str(value).strip()
    m = _FIRST_NUMBER.search(text)
    if m is None:
        return (1, 0.0, 0, text)
    side = -1 if text.startswith("<") else 1 if text.startswith((">", "≥")) else 0
    return (0, float(m.group()), side, text)


@dataclass(frozen=True)
class DataKey:
    """One data set of a suite. ``r_train`` is the suite's value (a bias rate or a table's
    environment label), not its text key."""

    setting: str
    r_train: object
    run: int

    def seed(self, suite_seed: int, *what) -> int:
        """The seed of one draw of this data set (``"train"``, ``"downstream"``, a method's name)."""
        return derive_seed(suite_seed, self.setting, self.r_train, self.run, *what)

    def test_seed(self, suite_seed: int, r_test) -> int:
        """The seed of a test environment's draw: it does not depend on r_train, so every r_train
        of a run is tested on the same data."""
        return derive_seed(suite_seed, self.setting, self.run, r_test, "test")

    def task(self, method: str) -> TaskKey:
        return TaskKey(self.setting, env_key(self.r_train), self.run, method)


class TaskKey(NamedTuple):
    """A task as stored: ``r_train`` is its text key (:func:`env_key`). A named tuple, so that it
    equals the plain tuple a table row gives and the two can meet in one set or dict."""

    setting: str
    r_train: str
    run: int
    method: str

    def describe(self) -> str:
        return f"(setting {self.setting}, r_train {self.r_train}, run {self.run}, method {self.method})"
