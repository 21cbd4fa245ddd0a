"""Methods that learn from several labelled training environments: invariant causal prediction
(``icp``), anchor regression (``anchor``) and linear invariant risk minimisation (``irm``);
stabilized regression (``stabilized``), V-REx (``vrex``), EILLS (``eills``) and DRIG (``drig``).

Each declares ``uses_groups = True``: it receives one environment label per training row and
refuses to fit without them (docs/PROTOCOL.md, "Several training environments").
"""

import importlib.util

import oodfs
from oodfs import diagnostic

from .anchor import Anchor
from .drig import DRIG
from .eills import EILLS
from .icp import ICP
from .irm import IRM
from .robust import ROBUST_SELECTORS
from .stabilized import Stabilized
from .vrex import VREx

SELECTORS = [ICP, Anchor, IRM]
SELECTORS += [Stabilized, VREx, EILLS, DRIG]
# the DRO selectors only where the optional `dro` package is installed (docs/PROTOCOL.md, section 13)
if importlib.util.find_spec("dro") is not None:
    SELECTORS += ROBUST_SELECTORS

__all__ = ["ICP", "Anchor", "IRM", "SELECTORS", "oodfs_selectors"]
__all__ += ["Stabilized", "VREx", "EILLS", "DRIG"]


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
    ] + [
        diagnostic(
            "stable_sets", "stable sets", None, "sets accepted as stable at level alpha_stab (stabilized)"
        ),
        diagnostic("blanket_sets", "blanket sets", None, "sets both stable and predictive (stabilized)"),
        diagnostic(
            "blanket_size", "blanket size", None, "features in the estimated stable blanket (stabilized)"
        ),
        diagnostic("reference_env", "reference env", None, "the reference environment's code (drig)"),
    ]
