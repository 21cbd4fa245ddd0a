"""Input checks shared by every entry point: one clear line per problem, never a deep traceback."""

from __future__ import annotations

import errno
import traceback
from pathlib import Path

import numpy as np


class OodfsError(ValueError):
    """A problem with what the user asked for or handed in; the CLI prints it as one line."""


class OodfsTypeError(OodfsError, TypeError):
    """Input of the wrong type (e.g. text in X): an OodfsError that is also a TypeError, as
    scikit-learn and numpy raise for it."""


def _as_float(v, what: str) -> np.ndarray:
    """``v`` as a float array; sparse, complex and non-numeric input get an error naming it."""
    if hasattr(v, "toarray") and hasattr(v, "nnz"):  # scipy.sparse matrix or array
        raise OodfsTypeError(
            f"{what} is a sparse matrix; sparse input is not supported, pass {what}.toarray()"
        )
    try:
        arr = np.asarray(v)
        if np.iscomplexobj(arr):
            raise OodfsError(f"Complex data not supported: {what} has complex values")
        return arr.astype(float, copy=False)
    except OodfsError:
        raise
    except TypeError as exc:  # stays a TypeError (e.g. a dict in X), as scikit-learn's checks expect
        raise OodfsTypeError(f"{what} must be numeric: {exc}") from None
    except ValueError as exc:
        raise OodfsError(f"{what} must be numeric: {exc}") from None


def _as_2d_float(X, what: str = "X") -> np.ndarray:
    if X is None:
        raise OodfsError(f"{what} is None; expected a 2-D array (n_samples, n_features)")
    arr = _as_float(X, what)
    if arr.ndim == 1:
        raise OodfsError(
            f"{what} must be 2-D (n_samples, n_features), got a 1-D array of length {arr.shape[0]}"
        )
    if arr.ndim != 2:
        raise OodfsError(f"{what} must be 2-D (n_samples, n_features), got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise OodfsError(f"{what} has 0 samples (shape={arr.shape}) while a minimum of 1 is required")
    if arr.shape[1] == 0:
        raise OodfsError(f"{what} has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
    _check_finite(arr, what)
    return arr


def _check_finite(arr: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(arr)
    if not bad.any() and arr.size and np.abs(arr).max() > FLOAT32_MAX:
        where = np.unravel_index(int(np.argmax(np.abs(arr))), arr.shape)
        at = f"column {where[1]} (row {where[0]})" if arr.ndim == 2 else f"position {where[0]}"
        raise OodfsError(
            f"{what} holds {arr[where]:g} at {at}, beyond what float32 models (xgboost, torch) can hold "
            f"(|value| <= {FLOAT32_MAX:.3g}); rescale it first"
        )
    if bad.any():
        kind = "NaN" if np.isnan(arr[bad]).any() else "inf"
        if arr.ndim == 2:
            col = int(np.nonzero(bad.any(axis=0))[0][0])
            row = int(np.nonzero(bad[:, col])[0][0])
            raise OodfsError(f"{kind} in {what}, column {col} (row {row}); remove or impute it first")
        row = int(np.nonzero(bad)[0][0])
        raise OodfsError(f"{kind} in {what} at position {row}; remove or impute it first")


#: the largest magnitude a value may have: models that compute in float32 (xgboost, torch) turn
#: anything larger into inf
FLOAT32_MAX = float(np.finfo(np.float32).max)


def _check_column_names(X, what: str) -> None:
    """Column names all text or none of them text (scikit-learn's rule, said in one line)."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return
    kinds = sorted({type(c).__name__ for c in columns})
    if "str" in kinds and len(kinds) > 1:
        raise OodfsTypeError(
            f"{what}'s column names must all be strings: got {', '.join(kinds)} names; rename them, "
            f"e.g. {what}.columns = {what}.columns.astype(str)"
        )


def check_X(X, what: str = "X", *, min_samples: int = 1, who: str = "this method") -> np.ndarray:
    """Return X as a finite 2-D float array with at least ``min_samples`` rows, or raise
    OodfsError naming the problem (``who`` names the caller in the message)."""
    _check_column_names(X, what)
    arr = _as_2d_float(X, what)
    if arr.shape[0] < min_samples:
        raise OodfsError(f"{who} needs at least {min_samples} samples, got {arr.shape[0]} sample(s)")
    return arr


def check_vector(v, n: int, what: str) -> np.ndarray:
    if v is None:
        raise OodfsError(f"{what} is None: this estimator requires y to be passed, but the target y is None")
    arr = _as_float(v, what)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise OodfsError(f"{what} must be 1-D, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise OodfsError(f"X and {what} have different lengths ({n} vs {arr.shape[0]})")
    _check_finite(arr, what)
    return arr


def check_X_y(X, y, sample_weight=None, *, min_samples: int = 1, who: str = "this method"):
    """Validate a (X, y, sample_weight) triple as every selector receives it."""
    X = check_X(X, min_samples=min_samples, who=who)
    y = check_vector(y, X.shape[0], "y")
    if sample_weight is not None:
        sample_weight = check_vector(sample_weight, X.shape[0], "sample_weight")
        if (sample_weight < 0).any():
            raise OodfsError("sample_weight must be non-negative")
        if sample_weight.sum() <= 0:
            raise OodfsError("sample_weight sums to zero")
    return X, y, sample_weight


def check_bias_rate(r) -> float:
    try:
        r = float(r)
    except (TypeError, ValueError):
        raise OodfsError(f"bias rate r must be a number, got {r!r}") from None
    if not np.isfinite(r) or abs(r) <= 1:
        raise OodfsError(f"bias rate r must satisfy |r| > 1, got r = {r}")
    return r


def check_positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise OodfsError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


class RunAborted(OodfsError):
    """A run stopped for a reason that is not the user's input nor a method's failure: its
    results could not be stored (disk full, I/O error, a damaged store), or a worker process
    was killed from outside. Finished tasks stay stored; the CLI exits with status 1."""


#: what an OSError says when the output could not be written for want of room or a working
#: device (not a wrong path): the run is aborted (exit 1), the input was fine
OUTPUT_FAILURES = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EIO, errno.EPIPE})


def write_failed(exc: OSError, what: str) -> OodfsError:
    """An OSError from writing ``what`` as one line: :class:`RunAborted` (exit 1) for a full disk,
    a file-size limit or an I/O error, :class:`OodfsError` (exit 2) for a path that cannot be
    written (missing folder, no permission, a folder in the way)."""
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) not in what else ""
    message = f"cannot write {what}{where}: {exc.strerror or exc}"
    return RunAborted(message) if exc.errno in OUTPUT_FAILURES else OodfsError(message)


#: bounds on what a user hands in, checked before any work starts (docs/guide/cli.md, "Limits"). A user who
#: needs more raises one with the environment variable OODFS_LIMITS, e.g.
#: ``OODFS_LIMITS="r_test=5000,tasks=2000000"``
LIMITS = {
    "suite_bytes": 1 << 20,  # a suite file's size
    "nesting": 8,  # lists and tables inside each other, in a suite file or a --param value
    "settings": 1_000,  # settings of a suite
    "r_train": 1_000,  # r_train entries of a suite
    "r_test": 1_000,  # r_test values of a suite
    "set_members": 64,  # environments in one r_train set
    "runs": 10_000,  # runs per (setting, r_train)
    "tasks": 100_000,  # settings x r_train x runs x methods
    "evaluations": 10_000_000,  # tasks x test environments
    "columns": 50_000,  # columns of a table (select, the table environment)
    "jobs": 1_024,  # worker processes (--jobs, also with --force-jobs)
    "replicates": 10_000,  # replicates of `oodfs theory`
}
LIMITS_VARIABLE = "OODFS_LIMITS"


def limit(name: str) -> int:
    """The bound ``name`` of :data:`LIMITS`, as OODFS_LIMITS may raise it."""
    import os

    for item in os.environ.get(LIMITS_VARIABLE, "").split(","):
        key, _, value = item.partition("=")
        if key.strip() == name:
            if not value.strip().isdigit():
                raise OodfsError(f"{LIMITS_VARIABLE}: {name} must be a whole number, got {value.strip()!r}")
            return int(value)
    return LIMITS[name]


def check_limit(name: str, value: int, what: str, hint: str = "") -> None:
    """One line when ``value`` exceeds the bound ``name``: what, how many, the bound and how to
    raise it."""
    bound = limit(name)
    if value > bound:
        raise OodfsError(
            f"{what} is {value}, more than the limit of {bound}{hint}; if that is meant, raise it with "
            f"{LIMITS_VARIABLE}={name}={value}"
        )


def available_cpus() -> int:
    """CPUs this process may run on (the default number of workers)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def check_jobs(jobs: int, force_jobs: bool = False, local: bool = True) -> None:
    """Refuse, before any work, ``--jobs`` above the CPUs this process may use (``local``: the
    workers run here) unless ``--force-jobs``, and above the limit ``jobs`` in any case."""
    if local and jobs > available_cpus() and not force_jobs:
        raise OodfsError(
            f"--jobs {jobs} is more than the {available_cpus()} CPUs this process may use; "
            "pass --force-jobs to start that many workers anyway"
        )
    check_limit("jobs", jobs, "--jobs")


def nesting_depth(value, stop: int) -> int:
    """How deeply lists, tuples and dicts nest in ``value`` (0 for a scalar), counted without
    recursion and only up to ``stop + 1`` (a hostile 30 000-deep value costs nothing more)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, (list, tuple)):
            depth += 1
            deepest = max(deepest, depth)
            if depth > stop:
                return depth
            stack.extend((v, depth) for v in item)
    return deepest


def check_nesting(value, what: str) -> None:
    bound = limit("nesting")
    if nesting_depth(value, bound) > bound:
        raise OodfsError(
            f"{what} nests lists or tables more than {bound} deep; if that is meant, raise it with "
            f"{LIMITS_VARIABLE}=nesting=N"
        )


def error_message(exc: BaseException) -> str:
    """One line for a failed task: the error and where it was raised."""
    if isinstance(exc, OodfsError):
        return str(exc)
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    if isinstance(exc, SystemExit):
        return f"the method called sys.exit({exc.code!r}){where}"
    return f"{type(exc).__name__}: {exc}{where}"


def check_param(owner: str, name: str, value, default) -> None:
    """A parameter's value has its default's kind: a number where the default is a number (a
    boolean is not one: ``alpha=true`` is refused), a flag where it is a flag, text where text."""
    if default is None or value is None:
        return
    numeric = (int, float, np.integer, np.floating)
    is_bool = isinstance(value, (bool, np.bool_))
    if isinstance(default, (bool, np.bool_)):
        ok = is_bool
        kind = "true or false"
    elif isinstance(default, numeric):
        ok = isinstance(value, numeric) and not is_bool
        kind = "a number"
    elif isinstance(default, str):
        ok = isinstance(value, str)
        kind = "text"
    else:
        return
    if not ok:
        raise OodfsError(f"{owner}: parameter {name!r} expects {kind} (default {default!r}), got {value!r}")


def one_line_warning(message, category) -> str:
    """A warning as one line, never with the source line Python adds: ``oodfs: note: ...`` or
    ``oodfs: warning: ...`` for oodfs's own (a category's ``oodfs_label``), ``oodfs: warning:
    Category: ...`` for a library's or a plugin's."""
    text = " ".join(str(message).split())
    label = getattr(category, "oodfs_label", "")
    if label:
        return f"oodfs: {label}: {text.removeprefix('oodfs: ')}\n"
    return f"oodfs: warning: {category.__name__}: {text}\n"


def format_warning(message, category, filename, lineno, line=None) -> str:
    """:func:`one_line_warning` in the signature of :func:`warnings.formatwarning`, which the
    command line and its worker processes install."""
    return one_line_warning(message, category)
