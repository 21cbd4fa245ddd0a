"""The checks of a weighter (oodfs.testing.check_weighter; CONTRIBUTING.md, "Writing a plugin")."""

from __future__ import annotations

import numpy as np

from oodfs.testing._core import (
    SEED,
    _cheap_points,
    _check,
    _check_grid_declaration,
    _check_metadata,
    _check_points_constructible,
    _close,
    _correlated_data,
    _ensure,
    _expect_oodfs_error,
    _Plugin,
    _run,
)
from oodfs.testing.selector import _check_aligned


# -- weighters ---------------------------------------------------------------------------------------
def _weights(p: _Plugin, X, random_state=SEED, what: str = "fit") -> tuple[np.ndarray, object]:
    est = p.make(random_state=random_state)
    out = est.fit(X)
    _ensure(out is est, f"{what}: fit must return self, returned {type(out).__name__}")
    w = _valid_weights(getattr(est, "weights_", None), X.shape[0], what)
    return w, est


def _valid_weights(w, n: int, what: str) -> np.ndarray:
    _ensure(w is not None, f"{what}: no weights_")
    w = np.asarray(w)
    _ensure(w.shape == (n,), f"{what}: weights have shape {w.shape}, expected ({n},)")
    w = w.astype(float)
    _ensure(np.all(np.isfinite(w)), f"{what}: non-finite weights")
    _ensure(np.all(w >= 0), f"{what}: negative weights (min {w.min():.3g})")
    _ensure(abs(w.mean() - 1.0) <= 1e-9, f"{what}: weights must have mean 1, mean is {w.mean():.12g}")
    return w


@_check("weighter")
def check_weighter_metadata(p: _Plugin) -> None:
    """``name`` (one word), a docstring, ``random_state`` in ``__init__``, ``grid`` as
    ``{param: [values]}`` with the default point in it."""
    _check_metadata(p, ("random_state",))
    _check_grid_declaration(p)


@_check("weighter")
def check_weighter_grid_points(p: _Plugin) -> None:
    """Every grid point is constructible and ``clone`` round-trips its parameters."""
    _check_points_constructible(p)


@_check("weighter")
def check_weighter_weights(p: _Plugin) -> None:
    """``fit(X)`` returns self; ``weights_`` has one non-negative finite weight per row with mean 1;
    ``fit_weights(X)`` returns the same; ``diagnostics_`` reports finite ess, ess_fraction,
    max_weight, max_abs_corr."""
    X = _correlated_data()
    w, est = _weights(p, X)
    w2 = _valid_weights(p.make(random_state=SEED).fit_weights(X), X.shape[0], "fit_weights")
    _ensure(_close(w, w2, 1e-9), "fit_weights(X) differs from fit(X).weights_")
    diag = getattr(est, "diagnostics_", None)
    _ensure(isinstance(diag, dict), f"diagnostics_ must be a dict, got {diag!r}")
    for key in ("ess", "ess_fraction", "max_weight", "max_abs_corr"):
        _ensure(
            key in diag and np.isfinite(diag[key]),
            f"diagnostics_[{key!r}] missing or not finite: {diag.get(key)!r}",
        )
    _ensure(0 < diag["ess"] <= X.shape[0] * (1 + 1e-9), f"diagnostics_['ess'] = {diag['ess']} outside (0, n]")


@_check("weighter")
def check_weighter_decorrelates(p: _Plugin) -> None:
    """The point of a weighter: on data whose features 0 and 1 are correlated (about 0.8, the
    others independent), the weights lower the weighted |correlation| of that pair."""
    X = _correlated_data(seed=7)
    w, _ = _weights(p, X)
    before = _weighted_abs_corr(X, np.ones(X.shape[0]))
    after = _weighted_abs_corr(X, w)
    _ensure(
        after < before,
        f"|corr(X0, X1)| is {before:.3f} unweighted and {after:.3f} under the weights; "
        "a weighter should make the features (more) independent",
    )


def _weighted_abs_corr(X, w) -> float:
    p = w / w.sum()
    Xc = X[:, :2] - p @ X[:, :2]
    cov = (Xc * p[:, None]).T @ Xc
    return float(abs(cov[0, 1]) / np.sqrt(cov[0, 0] * cov[1, 1]))


@_check("weighter")
def check_weighter_deterministic(p: _Plugin) -> None:
    """Two fits with the same ``random_state`` give the same weights; refitting a fitted object on
    other data gives what a fresh object gives."""
    X = _correlated_data(seed=3)
    a, _ = _weights(p, X, what="first fit")
    b, _ = _weights(p, X, what="second fit")
    _ensure(_close(a, b, 1e-9), f"two fits with random_state={SEED} give different weights")
    X2 = _correlated_data(seed=4)
    fresh, _ = _weights(p, X2, what="fit on other data")
    est = p.make(random_state=SEED)
    est.fit(X)
    c = _valid_weights(est.fit(X2).weights_, X2.shape[0], "refit")
    _ensure(
        _close(fresh, c, 1e-9),
        "refitting a fitted object on new data gives other weights than a fresh object "
        "(state carried over from the previous fit)",
    )


@_check("weighter")
def check_weighter_fit_grid(p: _Plugin) -> None:
    """``fit_grid(X, points, random_state)`` returns valid weights (mean 1) for each point, equal to
    separate fits (tolerances as for selectors' ``fit_grid``)."""
    cls = p.cls
    X = _correlated_data(seed=5)
    points = _cheap_points(cls)
    out = cls.fit_grid(X, [dict(q) for q in points], random_state=SEED)
    _ensure(
        isinstance(out, (list, tuple)) and len(out) == len(points),
        f"fit_grid with {len(points)} points returned {len(out) if hasattr(out, '__len__') else out!r} "
        "results",
    )
    for q, w in zip(points, out):
        _valid_weights(w, X.shape[0], f"fit_grid at {q}")
    singles = [cls(**q, random_state=SEED).fit(X).weights_ for q in points]
    other_seed = cls(**points[0], random_state=SEED + 1).fit(X).weights_
    _check_aligned(points, out, singles, not _close(singles[0], other_seed, 1e-9), "weight")


@_check("weighter")
def check_weighter_invalid_input(p: _Plugin) -> None:
    """NaN or inf in X and 1-D X raise OodfsError with a one-line message (``fit``, ``fit_grid``)."""
    X = _correlated_data(n=60, seed=6)
    Xn = X.copy()
    Xn[4, 0] = np.nan  # noqa: E702
    Xi = X.copy()
    Xi[2, 3] = -np.inf  # noqa: E702
    point = _cheap_points(p.cls, limit=1)
    for what, Xc in (("NaN in X", Xn), ("inf in X", Xi), ("1-D X", X[:, 0])):
        _expect_oodfs_error(f"fit with {what}", lambda Xc=Xc: p.make(random_state=SEED).fit(Xc))
        _expect_oodfs_error(
            f"fit_grid with {what}", lambda Xc=Xc: p.cls.fit_grid(Xc, point, random_state=SEED)
        )


def check_weighter(weighter, skip: dict[str, str] | None = None) -> dict[str, str]:
    """Run every weighter check on a Weighter class (or instance); see :func:`check_selector`."""
    return _run("weighter", weighter, skip)
