"""oodfs: a plugin-based benchmark for out-of-distribution (covariate-shift) feature selection."""

from importlib.metadata import PackageNotFoundError, version

# first of all: a worker process of a run ends with the run from here on, not after its other imports
import oodfs.run.executors.lifeline  # noqa: F401 -- arms at import

# before numpy loads: the same numeric kernels on every machine (docs/PROTOCOL.md section 6)
import oodfs.run.kernels  # noqa: F401,I001 -- pins at import
from oodfs.contract.api import (
    Environment,
    GridFit,
    Selector,
    WeightCollapseWarning,
    Weighter,
    ranking_from_scores,
    weight_diagnostics,
)
from oodfs.contract.hookspecs import hookimpl
from oodfs.contract.metrics import Evaluation, Metric, SuspectRule, diagnostic
from oodfs.contract.progress import point_done
from oodfs.contract.wls import WLSSelector, selector_for_weighter
from oodfs.numeric import weighted_least_squares
from oodfs.validation import OodfsError

try:
    __version__ = version("oodfs")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0"

__all__ = [
    "Environment",
    "Evaluation",
    "Metric",
    "SuspectRule",
    "diagnostic",
    "GridFit",
    "OodfsError",
    "Selector",
    "WLSSelector",
    "WeightCollapseWarning",
    "Weighter",
    "hookimpl",
    "point_done",
    "ranking_from_scores",
    "selector_for_weighter",
    "weight_diagnostics",
    "weighted_least_squares",
    "get_selector",
    "get_weighter",
    "get_environment",
]


def get_selector(name: str):
    """The registered Selector class called ``name`` (built-in or from a plugin)."""
    from oodfs.contract.registry import registry

    return registry().get("selector", name)


def get_weighter(name: str):
    """The registered Weighter class called ``name``."""
    from oodfs.contract.registry import registry

    return registry().get("weighter", name)


def get_environment(name: str):
    """The registered Environment class called ``name``."""
    from oodfs.contract.registry import registry

    return registry().get("environment", name)
