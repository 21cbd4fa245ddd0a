"""What produced a result: package versions and the invocation's circumstances."""
from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

_VERSION_PACKAGES = ("oodfs", "numpy", "scipy", "scikit-learn", "torch", "xgboost", "pandas", "pluggy")


def package_versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in _VERSION_PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            continue
    return versions
