"""`correlation` under another name, as a new method for benchmarks/whole_benchmark/whole_benchmark.py
new-method: its feature subsets are the reference's `correlation`'s, the case where every subset is taken
from the reference (benchmarks/whole_benchmark/WHOLE_BENCHMARK.md, last section)."""

import oodfs
from oodfs_plugins.baselines.linear import Correlation


class RenamedCorrelation(Correlation):
    """|corr(X_j, y)|, as `correlation`, under another name (a method the references do not hold)."""

    name = "correlation_renamed"


@oodfs.hookimpl
def oodfs_selectors():
    return [RenamedCorrelation]
