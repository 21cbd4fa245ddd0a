"""Independence-driven importance weighting: the DWR and SRDO weighters (paper, Section 4.2).

Each weighter also becomes a selector of the same name (weighted least squares on its weights,
scores = |coefficients|) through the core's plugin manager.
"""
import oodfs

from .dwr import DWRWeighter, dwr_objective
from ._warnings import WeightClippingWarning
from .srdo import SRDOWeighter

__all__ = ["DWRWeighter", "SRDOWeighter", "WeightClippingWarning", "dwr_objective"]


@oodfs.hookimpl
def oodfs_weighters():
    return [DWRWeighter, SRDOWeighter]
