"""The ``prior`` yardstick: the reference row of a binary leaderboard that uses no feature.

It predicts the training base rate as every row's probability: the empty subset, as the ``mean``
yardstick of a regression suite (:mod:`oodfs_plugins.yardsticks`; docs/PROTOCOL.md, "Task
types"). It lives in a module of its own so that the shipped yardsticks' code, and with it the
identity of every shipped reference's yardstick rows, stays as it was.
"""

from __future__ import annotations

import oodfs
from oodfs_plugins.yardsticks import _Yardstick


class Prior(_Yardstick):
    """Reference row: predicts the training base rate as every row's probability (no feature)."""

    name = "prior"
    yardstick = 0
    task_types = ("binary",)


@oodfs.hookimpl
def oodfs_selectors():
    return [Prior]
