"""Methods that learn from several labelled training environments: invariant causal prediction
(``icp``), anchor regression (``anchor``) and linear invariant risk minimisation (``irm``).

Each declares ``uses_groups = True``: it receives one environment label per training row and
refuses to fit without them (docs/PROTOCOL.md, "Several training environments").
"""

import oodfs
from oodfs import diagnostic

from .anchor import Anchor
from .icp import ICP
from .irm import IRM

SELECTORS = [ICP, Anchor, IRM]

__all__ = ["ICP", "Anchor", "IRM", "SELECTORS", "oodfs_selectors"]


@oodfs.hookimpl
def oodfs_selectors():
    return list(SELECTORS)


@oodfs.hookimpl
def oodfs_metrics():
    """What ICP reports about its subset search."""
    return [
        diagnostic("accepted_sets", "accepted sets", None, "sets accepted as invariant at level alpha (ICP)"),
        diagnostic(
            "intersection_size",
            "intersection size",
            None,
            "features in the accepted sets' intersection, ICP's selection at level alpha",
        ),
        diagnostic("max_log10_p", "best log10 p", None, "log10 of the largest p-value of any set (ICP)"),
    ]
