"""What produced a result: package versions and the invocation's circumstances.

:func:`package_versions` (a few key packages) goes into every result row; :func:`environment`
(every installed distribution, the git state of the oodfs checkout, CPUs and thread pools, the
hash of each method's code) into each invocation's record in the store.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from functools import cache
from importlib.metadata import PackageNotFoundError, distributions, version
from pathlib import Path

_VERSION_PACKAGES = ("oodfs", "numpy", "scipy", "scikit-learn", "torch", "xgboost", "pandas", "pluggy")

#: environment variables that set thread counts of numerical libraries
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


@cache
def _versions() -> dict:
    versions = {"python": platform.python_version()}
    for name in _VERSION_PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            continue
    return versions


def package_versions() -> dict:
    """The versions of Python and a few key packages, read once per process: each job's rows carry
    them, and the packages a process has imported do not change while it runs."""
    return dict(_versions())


def installed_packages() -> dict[str, str]:
    """Every installed distribution and its version, by name (sorted, case-insensitively)."""
    found = {}
    for dist in distributions():
        name = dist.metadata["Name"]
        if name and name not in found:
            found[name] = dist.version
    return dict(sorted(found.items(), key=lambda kv: kv[0].lower()))


def git_state(path: str | Path) -> dict | None:
    """``{"commit", "dirty"}`` of the git checkout that tracks ``path`` (a folder), or None when
    none does (an installed copy, even inside some repository's ignored venv) or git is not
    installed. Dirty: a tracked file differs from the commit."""

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()

    try:
        if not git("ls-files", "--", "."):  # untracked here: not a checkout of this code
            return None
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}


def cpu_and_threads() -> dict:
    """CPUs of the machine and of this process, thread-count variables, the thread pools
    loaded (threadpoolctl: BLAS, OpenMP) and torch's thread count if torch is loaded."""
    from threadpoolctl import threadpool_info

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count()
    pools = [
        {k: p.get(k) for k in ("user_api", "internal_api", "prefix", "version", "num_threads")}
        for p in threadpool_info()
    ]
    out = {
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "machine": platform.machine(),
        "processor": platform.processor(),
        "thread_variables": {v: os.environ[v] for v in THREAD_VARIABLES if v in os.environ},
        "threadpools": pools,
    }
    if "torch" in sys.modules:
        out["torch_threads"] = sys.modules["torch"].get_num_threads()
    return out


def environment(method_code: dict | None = None) -> dict:
    """Everything about this process that can change a number: Python, platform, every
    installed package, the git commit of the oodfs checkout (when run from one), CPUs and
    thread settings, and ``method_code``: the code hash of each method run."""
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "packages": installed_packages(),
        "oodfs_git": git_state(Path(__file__).resolve().parent),
        **cpu_and_threads(),
        "method_code": dict(method_code or {}),
    }
