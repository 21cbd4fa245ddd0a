"""oodfs: a plugin-based benchmark for out-of-distribution (covariate-shift) feature selection."""

from importlib.metadata import PackageNotFoundError, version

# first of all: a worker process of a run ends with the run from here on, not after its other imports
import oodfs.run.executors.lifeline  # noqa: F401 -- arms at import

# before numpy loads: the same numeric kernels on every machine (docs/PROTOCOL.md section 6)
import oodfs.run.kernels  # noqa: F401,I001 -- pins at import

# The public names below are imported when first used (PEP 562): `oodfs bench` says its first line
# before the seconds that scikit-learn and the plugins take to import (docs/PROTOCOL.md section 20).
_PUBLIC = {
    "Environment": "oodfs.contract.api",
    "GridFit": "oodfs.contract.api",
    "Selector": "oodfs.contract.api",
    "WeightCollapseWarning": "oodfs.contract.api",
    "Weighter": "oodfs.contract.api",
    "ranking_from_scores": "oodfs.contract.api",
    "weight_diagnostics": "oodfs.contract.api",
    "hookimpl": "oodfs.contract.hookspecs",
    "Evaluation": "oodfs.contract.metrics",
    "Metric": "oodfs.contract.metrics",
    "SuspectRule": "oodfs.contract.metrics",
    "diagnostic": "oodfs.contract.metrics",
    "point_done": "oodfs.contract.progress",
    "WLSSelector": "oodfs.contract.wls",
    "selector_for_weighter": "oodfs.contract.wls",
    "weighted_least_squares": "oodfs.numeric",
    "OodfsError": "oodfs.validation",
}


def __getattr__(name: str):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'oodfs' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later uses are plain attribute reads
    return value


def __dir__():
    return sorted({*globals(), *_PUBLIC})


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
