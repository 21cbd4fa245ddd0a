"""Independence-driven importance weighting: the DWR and SRDO weighters (paper, Section 4.2), the
community DWR of the public SVI code, and SVI / SVI^d (Yu et al. 2023), which iterate DWR weights
and sparse variable selection.

Each weighter also becomes a selector of the same name (weighted least squares on its weights,
scores = |coefficients|) through the core's plugin manager.
"""

import oodfs
from oodfs import SuspectRule, diagnostic

from ._warnings import WeightClippingWarning
from .dwr import DWRWeighter, dwr_objective
from .dwr_community import DWRCommunity
from .hrm import HRM, HRM_METRICS
from .kerhrm import KerHRM
from .rsw import RSW
from .srdo import SRDOWeighter
from .svi import SVI, SVI_METRICS, SVID

__all__ = [
    "DWRCommunity",
    "DWRWeighter",
    "SRDOWeighter",
    "SVI",
    "SVID",
    "WeightClippingWarning",
    "dwr_objective",
]


@oodfs.hookimpl
def oodfs_weighters():
    return [DWRWeighter, SRDOWeighter, DWRCommunity]


@oodfs.hookimpl
def oodfs_selectors():
    return [SVI, SVID, HRM, KerHRM, RSW]


@oodfs.hookimpl
def oodfs_metrics():
    """The fit diagnostics DWR, SRDO, SVI (and STG, whose plugin has no diagnostics of its own to
    declare besides these) report beyond the core's weight diagnostics."""
    return [
        diagnostic("objective", "objective", True, "the weighter's objective at its solution (DWR)"),
        diagnostic(
            "n_iter",
            "iterations",
            None,
            "optimiser iterations or Adam steps (DWR); training epochs run (SRDO)",
        ),
        diagnostic(
            "converged",
            "converged",
            None,
            "1 if the fit met its declared tolerance, whatever stopped it: DWR, largest projected "
            "gradient at most tol x the starting one; SRDO and STG, the training loss's mean over the "
            "last tenth of the epochs at most 1 % below the tenth before (SRDO with stop_tol: the "
            "plateau stop ended training); SVI, the last round moved the averaged gate ratios by at "
            "most 0.05 and kept the selected set (docs/PROTOCOL.md, \"Iterative methods' stopping "
            'rules")',
            SuspectRule("the fit ended before its declared tolerance was met", below=0.5),
        ),
        diagnostic(
            "train_loss",
            "training loss",
            True,
            "mean training loss of the last epoch (SRDO: the P-vs-Q classifier's cross-entropy; STG: "
            "squared error or deviance plus the gate penalty)",
        ),
        diagnostic(
            "dwr_converged",
            "DWR rounds converged",
            None,
            "fraction of SVI's rounds whose (masked) DWR met its tolerance (SVI with oodfs's DWR)",
        ),
        diagnostic(
            "corr_kept",
            "corr kept",
            True,
            "largest weighted |corr| between two features / the unweighted one; reported when the "
            "unweighted one is >= 0.2 (DWR, SRDO)",
            SuspectRule("the weights kept over 90 % of the largest feature correlation", above=0.9),
        ),
        diagnostic(
            "frac_clipped_low",
            "clipped low",
            None,
            "fraction of weights at the lower clip 1/gamma (SRDO)",
            SuspectRule("over 90 % of the weights at a clip", above=0.9, plus=("frac_clipped_high",)),
        ),
        diagnostic(
            "frac_clipped_high", "clipped high", None, "fraction of weights at the upper clip gamma (SRDO)"
        ),
        *SVI_METRICS,
        *HRM_METRICS,
    ]
