"""Task types (provisional, to be replaced by the task branch): only :func:`infer_task`.

A target with exactly two distinct values is a binary task; anything else is regression.
"""

from __future__ import annotations

import numpy as np

#: the task types a selector may declare in ``task_types``
TASK_NAMES = ("regression", "binary")


def infer_task(y) -> str:
    """``"binary"`` when ``y`` has exactly two distinct (non-missing) values, else ``"regression"``."""
    values = np.unique(np.asarray(y, dtype=float)[~np.isnan(np.asarray(y, dtype=float))])
    return "binary" if values.size == 2 else "regression"
