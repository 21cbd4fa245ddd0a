"""Methods that learn from several labelled training environments: invariant causal prediction
(``icp``), anchor regression (``anchor``) and linear invariant risk minimisation (``irm``).

Each declares ``uses_groups = True``: it receives one environment label per training row and
refuses to fit without them (docs/PROTOCOL.md, "Several training environments").
"""

import oodfs

from .anchor import Anchor
from .icp import ICP
from .irm import IRM

SELECTORS = [ICP, Anchor, IRM]

__all__ = ["ICP", "Anchor", "IRM", "SELECTORS", "oodfs_selectors"]


@oodfs.hookimpl
def oodfs_selectors():
    return list(SELECTORS)
