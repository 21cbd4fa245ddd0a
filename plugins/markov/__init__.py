"""Markov-boundary feature selection: IAMB and HITON-MB with Fisher's z or a kernel
conditional-independence test (docs/PROTOCOL.md, section 12)."""

import oodfs
from oodfs import diagnostic

from .selectors import HITONMB, HITONMBRCIT, IAMB, IAMBRCIT

SELECTORS = [IAMB, IAMBRCIT, HITONMB, HITONMBRCIT]

__all__ = ["HITONMB", "HITONMBRCIT", "IAMB", "IAMBRCIT", "SELECTORS"]


@oodfs.hookimpl
def oodfs_selectors():
    return list(SELECTORS)


@oodfs.hookimpl
def oodfs_metrics():
    """What the Markov-boundary searches report about their fit."""
    return [
        diagnostic(
            "boundary_size", "boundary size", None, "features in the Markov boundary found (IAMB, HITON-MB)"
        ),
        diagnostic(
            "ci_tests", "CI tests", None, "conditional-independence tests the search ran (IAMB, HITON-MB)"
        ),
    ]
