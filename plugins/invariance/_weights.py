"""The invariance methods fit unweighted models: non-uniform sample weights are refused."""

import numpy as np

import oodfs


def refuse_weights(sample_weight, who: str) -> None:
    if sample_weight is not None and not np.all(sample_weight == sample_weight[0]):
        raise oodfs.OodfsError(
            f"{who} does not support non-uniform sample_weight (supports_sample_weight is False)"
        )
