"""The checks of a selector (oodfs.testing.check_selector; CONTRIBUTING.md, "Writing a plugin")."""

from __future__ import annotations

import numpy as np

from oodfs.contract.api import ranking_from_scores
from oodfs.testing._core import (
    SEED,
    TIGHT,
    D,
    _binary_data,
    _cheap_points,
    _check,
    _check_grid_declaration,
    _check_metadata,
    _check_points_constructible,
    _close,
    _ensure,
    _expect_oodfs_error,
    _Failed,
    _fit,
    _fmt,
    _groups,
    _labelled,
    _labels,
    _no_sample_weight,
    _not_permutation_invariant,
    _Plugin,
    _regression_data,
    _run,
    _scores,
    _seed_dependent,
    _two_regime_data,
    _with_sample_weight,
)


@_check("selector")
def check_selector_metadata(p: _Plugin) -> None:
    """``name`` (one word), a docstring (description), ``k`` and ``random_state`` in ``__init__``,
    ``grid`` as ``{param: [values]}`` over ``__init__`` parameters, the default point in the grid."""
    _check_metadata(p, ("k", "random_state"))
    _ensure(
        isinstance(getattr(p.cls, "supports_sample_weight", True), bool),
        "supports_sample_weight must be a bool",
    )
    _ensure(
        isinstance(getattr(p.cls, "permutation_invariant", True), bool),
        "permutation_invariant must be a bool",
    )
    _check_grid_declaration(p)


@_check("selector")
def check_selector_grid_points(p: _Plugin) -> None:
    """Every grid point (and the no-argument default) is constructible, ``get_params`` returns the
    point's values and ``sklearn.base.clone`` round-trips the parameters."""
    _check_points_constructible(p)


@_check("selector")
def check_selector_known_answer(p: _Plugin) -> None:
    """On y = 2 x0 + 0.5 x1 + noise: ``fit`` returns self, ``scores_`` has one finite number per feature
    (``feature_importances_`` the same, ``n_features_in_`` = d), and feature 0 ranks first."""
    X, y = _regression_data(envs=_labelled(p))
    est = _fit(p, X, y)
    scores = _scores(est, D)
    _ensure(
        np.array_equal(np.asarray(est.feature_importances_, dtype=float), scores),
        "feature_importances_ differs from scores_",
    )
    _ensure(
        getattr(est, "n_features_in_", None) == D,
        f"n_features_in_ is {getattr(est, 'n_features_in_', None)!r}, expected {D}",
    )
    _ensure(
        int(np.argmax(scores)) == 0,
        f"on y = 2 x0 + 0.5 x1 + 0.1 noise (independent standard normal features) feature 0 should score "
        f"highest; scores {_fmt(scores)}",
    )


def _classifies(p: _Plugin):
    if getattr(p.cls, "yardstick", None) is not None:
        return "a yardstick (every feature or none, whatever the target): it ranks nothing"
    return None if "binary" in getattr(p.cls, "task_types", ("regression",)) else "does not declare 'binary'"


def _regression_only(p: _Plugin):
    if getattr(p.cls, "yardstick", None) is not None:
        return "a yardstick: it takes a target of any task"
    return "declares 'binary'" if _classifies(p) is None else None


@_check("selector", applies=_classifies)
def check_selector_binary_known_answer(p: _Plugin) -> None:
    """On a 0/1 target y ~ Bernoulli(sigmoid(4 x0 - 3 x1)): ``fit`` infers the binary task
    (``task_`` is "binary"), ``fit(..., task="binary")`` gives the same scores, and features 0
    and 1 rank first; ``fit_grid(..., task="binary")`` at the default point agrees."""
    X, y = _binary_data(envs=_labelled(p))
    est = _fit(p, X, y)
    scores = _scores(est, D, "binary fit")
    _ensure(
        getattr(est, "task_", None) == "binary", f"task_ is {getattr(est, 'task_', None)!r} on a 0/1 target"
    )
    top = sorted(int(j) for j in np.asarray(est.ranking_)[:2])
    _ensure(
        top == [0, 1],
        f"on y ~ Bernoulli(sigmoid(4 x0 - 3 x1)) features 0 and 1 should rank first; scores {_fmt(scores)}",
    )
    explicit = p.make(random_state=SEED).fit(X, y, task="binary", **_labels(p, len(y)))
    _ensure(_close(explicit.scores_, scores), "fit(task='binary') differs from fit with the task inferred")
    grid = p.cls.fit_grid(X, y, [dict(p.params)], random_state=SEED, task="binary", **_labels(p, len(y)))[0]
    tol = TIGHT if not _seed_dependent(p) else 1e-2
    _ensure(
        _close(grid, scores, tol), f"fit_grid(task='binary') gives {_fmt(grid)}, fit gives {_fmt(scores)}"
    )


@_check("selector", applies=_regression_only)
def check_selector_refuses_binary(p: _Plugin) -> None:
    """A selector that does not declare "binary" refuses a binary task named in ``fit`` and
    ``fit_grid`` (``task="binary"``) with a one-line OodfsError. (A 0/1 target without a task
    named stays a regression target for such a method, as for scikit-learn's regressors.)"""
    X, y = _binary_data(envs=_labelled(p))
    labels = _labels(p, len(y))
    _expect_oodfs_error(
        "fit(task='binary')", lambda: p.make(random_state=SEED).fit(X, y, task="binary", **labels)
    )
    _expect_oodfs_error(
        "fit_grid(task='binary')",
        lambda: p.cls.fit_grid(X, y, [dict(p.params)], random_state=SEED, task="binary", **labels),
    )


@_check("selector")
def check_selector_ranking(p: _Plugin) -> None:
    """``ranking_`` is a permutation of the features, best first, consistent with ``scores_``
    (ties in column order, as :func:`oodfs.ranking_from_scores`)."""
    X, y = _regression_data(seed=3, envs=_labelled(p))
    est = _fit(p, X, y)
    scores = _scores(est, D)
    ranking = np.asarray(getattr(est, "ranking_", None))
    _ensure(
        ranking.shape == (D,) and np.issubdtype(ranking.dtype, np.integer),
        f"ranking_ must be {D} integer feature indices, got {ranking!r}",
    )
    _ensure(
        sorted(ranking.tolist()) == list(range(D)),
        f"ranking_ {ranking.tolist()} is not a permutation of 0..{D - 1}",
    )
    _ensure(
        np.all(np.diff(scores[ranking]) <= 0),
        f"scores_ along ranking_ are not non-increasing: {_fmt(scores[ranking])}",
    )
    _ensure(
        np.array_equal(ranking, ranking_from_scores(scores)),
        f"ranking_ {ranking.tolist()} differs from ranking_from_scores(scores_) "
        f"{ranking_from_scores(scores).tolist()}",
    )


@_check("selector")
def check_selector_support(p: _Plugin) -> None:
    """``get_support()`` marks the top ``k`` of ``ranking_`` (k = 1, 3, d) except a feature scored
    0 when no score is negative (:func:`oodfs.contract.api.support_mask`); ``transform`` keeps
    exactly those columns; k = 0 or k > d is an OodfsError."""
    X, y = _regression_data(seed=4, envs=_labelled(p))
    est = _fit(p, X, y)
    ranking = np.asarray(est.ranking_)
    scores = np.asarray(est.scores_, dtype=float)
    for k in (1, 3, D):
        est.set_params(k=k)
        mask = np.asarray(est.get_support())
        _ensure(
            mask.dtype == bool and mask.shape == (D,),
            f"get_support() must be a boolean mask of {D}, got {mask!r}",
        )
        top = np.zeros(D, dtype=bool)
        top[ranking[:k]] = True
        if (scores >= 0).all():  # a feature scored 0 is never marked
            top &= scores > 0
        _ensure(
            np.array_equal(mask, top),
            f"k={k}: get_support() {np.nonzero(mask)[0].tolist()} is not the top k of "
            f"ranking_ {ranking.tolist()} (leaving out features scored 0)",
        )
        _ensure(
            np.array_equal(est.get_support(indices=True), np.flatnonzero(top)),
            f"k={k}: get_support(indices=True) is not the sorted top k",
        )
        Xt = np.asarray(est.transform(X))
        _ensure(
            Xt.shape == (X.shape[0], int(top.sum())),
            f"k={k}: transform gives shape {Xt.shape}, expected {(X.shape[0], int(top.sum()))}",
        )
        _ensure(np.array_equal(Xt, X[:, mask]), f"k={k}: transform does not keep the selected columns")
    for bad in (0, D + 1):
        est.set_params(k=bad)
        _expect_oodfs_error(f"get_support() with k={bad} of {D} features", est.get_support)


@_check("selector")
def check_selector_deterministic(p: _Plugin) -> None:
    """Two fits with the same ``random_state`` give the same scores, and refitting a fitted object
    on other data gives what a fresh object gives (no state carried from one fit to the next)."""
    X, y = _regression_data(seed=5, envs=_labelled(p))
    a = _scores(_fit(p, X, y), D, "first fit")
    b = _scores(_fit(p, X, y), D, "second fit")
    _ensure(_close(a, b, 1e-9), f"two fits with random_state={SEED} differ: {_fmt(a)} vs {_fmt(b)}")
    X2, y2 = _regression_data(seed=6, envs=_labelled(p))
    fresh = _scores(_fit(p, X2, y2), D, "fit on other data")
    est = _fit(p, X, y)
    est.fit(X2, y2, **_labels(p, len(y2)))
    c = _scores(est, D, "refit")
    _ensure(
        _close(fresh, c, 1e-9),
        f"refitting a fitted object on new data gives {_fmt(c)}, a fresh object gives "
        f"{_fmt(fresh)} (state carried over from the previous fit)",
    )


@_check("selector", applies=_not_permutation_invariant)
def check_selector_column_permutation(p: _Plugin) -> None:
    """Reordering the columns of X reorders the scores the same way (tolerance 1e-6 of the largest
    score). Applies unless the class declares ``permutation_invariant = False``."""
    X, y = _regression_data(seed=7, envs=_labelled(p))
    perm = np.array([3, 0, 5, 1, 4, 2])
    a = _scores(_fit(p, X, y), D)
    b = _scores(_fit(p, X[:, perm], y), D, "fit on permuted columns")
    _ensure(
        _close(a[perm], b),
        f"scores do not follow a column permutation {perm.tolist()}: expected {_fmt(a[perm])}, "
        f"got {_fmt(b)} (declare permutation_invariant = False if the fit depends on column order)",
    )


@_check("selector", applies=_no_sample_weight)
def check_selector_sample_weight_ones(p: _Plugin) -> None:
    """``sample_weight`` of ones gives the scores of no ``sample_weight`` (tolerance 1e-6).
    Checked for selectors whose scores do not depend on ``random_state`` (a seeded selector may
    draw its random numbers differently once weights are given, e.g. a weighted bootstrap)."""
    if _seed_dependent(p):
        return
    X, y = _regression_data(seed=8, envs=_labelled(p))
    a = _scores(_fit(p, X, y), D)
    b = _scores(_fit(p, X, y, sample_weight=np.ones(len(y))), D, "fit with sample_weight = 1")
    _ensure(_close(a, b), f"sample_weight of ones changes the scores: {_fmt(a)} vs {_fmt(b)}")


@_check("selector", applies=_no_sample_weight)
def check_selector_sample_weight_direction(p: _Plugin) -> None:
    """Weights move the result the right way: on data where y follows x0 in half A of the rows and
    x1 in half B, weight 1 on A and 0 on B ranks x0 above x1, and the reverse weights rank x1
    above x0 (catches a selector that ignores ``sample_weight``)."""
    X, y, a = _two_regime_data()
    on_a = _scores(_fit(p, X, y, sample_weight=a.astype(float)), D, "fit with weights on half A")
    on_b = _scores(_fit(p, X, y, sample_weight=(~a).astype(float)), D, "fit with weights on half B")
    why = (
        "y = 2 x0 + noise on half A of the rows, y = 2 x1 + noise on half B; with sample_weight 1 on {} and "
        "0 elsewhere feature {} should score above feature {}; scores {}"
    )
    if np.allclose(on_a, on_b):
        raise _Failed(
            f"sample_weight appears to be ignored (weights on A or on B give the same scores {_fmt(on_a)}) "
            "although supports_sample_weight is True"
        )
    _ensure(on_a[0] > on_a[1], why.format("half A", 0, 1, _fmt(on_a)))
    _ensure(on_b[1] > on_b[0], why.format("half B", 1, 0, _fmt(on_b)))


@_check("selector", applies=_no_sample_weight)
def check_selector_sample_weight_duplication(p: _Plugin) -> None:
    """Integer weights act like repeated rows, zero weights like dropped rows: the weighted fit is
    within 5% (of the effect of the weights) of the fit on the rows repeated. Checked for selectors
    whose scores do not depend on ``random_state``; a seeded selector (bootstrap, SGD) sees
    different random draws on the longer data set, so it is checked in direction only."""
    if _seed_dependent(p):
        return
    X, y, a = _two_regime_data(seed=9)
    w = np.where(a, 3, np.arange(len(y)) % 2).astype(float)  # 3 on A, alternately 0 and 1 on B
    rows = np.repeat(np.arange(len(y)), w.astype(int))
    dup = _scores(_fit(p, X[rows], y[rows]), D, "fit on repeated rows")
    weighted = _scores(_fit(p, X, y, sample_weight=w), D, "weighted fit")
    plain = _scores(_fit(p, X, y), D, "unweighted fit")
    effect = np.linalg.norm(plain - dup)
    error = np.linalg.norm(weighted - dup)
    _ensure(
        error <= 0.05 * effect or _close(weighted, dup),
        f"integer sample_weight (3 on half the rows, 0/1 on the other half) should match repeating the rows: "
        f"weighted {_fmt(weighted)}, repeated rows {_fmt(dup)}, unweighted {_fmt(plain)} "
        f"(distance {error:.3g} vs effect of the weights {effect:.3g})",
    )


@_check("selector", applies=_with_sample_weight)
def check_selector_sample_weight_rejected(p: _Plugin) -> None:
    """A selector with ``supports_sample_weight = False`` refuses non-uniform ``sample_weight``
    with an OodfsError instead of silently ignoring it."""
    X, y, a = _two_regime_data()
    w = np.where(a, 1.0, 2.0)
    _expect_oodfs_error(
        "fit with non-uniform sample_weight (supports_sample_weight is False)",
        lambda: _fit(p, X, y, sample_weight=w),
    )


@_check("selector")
def check_selector_fit_grid(p: _Plugin) -> None:
    """``fit_grid(X, y, points, random_state)`` returns one finite score vector per point, equal to
    separate fits ``cls(**point, random_state=...)`` within 1e-6 of the largest score; for a
    selector whose scores depend on ``random_state`` (ties broken at random, e.g. trees) within
    1e-2, each result nearest its own point's separate fit. Uses the default point and the
    cheapest neighbours in the grid."""
    cls = p.cls
    X, y = _regression_data(seed=10, envs=_labelled(p))
    points = _cheap_points(cls)
    out = cls.fit_grid(X, y, [dict(q) for q in points], random_state=SEED, **_labels(p, len(y)))
    _ensure(
        isinstance(out, (list, tuple)) and len(out) == len(points),
        f"fit_grid with {len(points)} points returned {len(out) if hasattr(out, '__len__') else out!r} "
        "results",
    )
    for q, s in zip(points, out):
        s = np.asarray(s, dtype=float)
        _ensure(s.shape == (D,), f"fit_grid at {q}: shape {s.shape}, expected ({D},)")
        _ensure(np.all(np.isfinite(s)), f"fit_grid at {q}: non-finite scores {_fmt(s)}")
    singles = [cls(**q, random_state=SEED).fit(X, y, **_labels(p, len(y))).scores_ for q in points]
    _check_aligned(points, out, singles, _seed_dependent(_Plugin(cls, "selector")), "score")


def _check_aligned(points, out, singles, seed_dependent: bool, what: str) -> None:
    """fit_grid results against separate fits: equal to 1e-6 of the largest value; for a seeded
    plugin (whose ties may be broken differently when fits are shared) to 1e-2, and each result
    nearer its own point's separate fit than any other point's (catches points mixed up)."""
    rtol = 1e-2 if seed_dependent else TIGHT
    for i, (q, g, single) in enumerate(zip(points, out, singles)):
        g, single = np.asarray(g, dtype=float), np.asarray(single, dtype=float)
        shown = (
            f"gives {_fmt(g)} but a separate fit gives {_fmt(single)}"
            if g.size <= 12
            else f"differs from a separate fit by up to {np.abs(g - single).max():.3g}"
            if g.shape == single.shape
            else f"has shape {g.shape}, a separate fit {single.shape}"
        )
        _ensure(
            _close(g, single, rtol), f"fit_grid at {q} {shown} (tolerance {rtol:g} of the largest {what})"
        )
        if not seed_dependent:
            continue
        own = np.linalg.norm(g - single)
        for q2, other in zip(points, singles):
            other = np.asarray(other, dtype=float)
            if q2 is q or _close(other, single, 1e-9):
                continue
            _ensure(
                own < np.linalg.norm(g - other),
                f"fit_grid at {q} is nearer the separate fit at {q2} than the one "
                "at its own point (results out of order?)",
            )


@_check("selector")
def check_selector_invalid_input(p: _Plugin) -> None:
    """NaN or inf in X or y, X and y of different lengths, 1-D X (and, when supported, a bad
    ``sample_weight``) raise OodfsError with a one-line message, from ``fit`` and from
    ``fit_grid``."""
    X, y = _regression_data(n=60, seed=11, envs=_labelled(p))
    cases = []
    Xn = X.copy()
    Xn[3, 2] = np.nan  # noqa: E702
    Xi = X.copy()
    Xi[5, 1] = np.inf  # noqa: E702
    yn = y.copy()
    yn[7] = np.nan  # noqa: E702
    cases += [
        ("NaN in X", Xn, y, None),
        ("inf in X", Xi, y, None),
        ("NaN in y", X, yn, None),
        ("y shorter than X", X, y[:-1], None),
        ("1-D X", X[:, 0], y, None),
    ]
    if getattr(p.cls, "supports_sample_weight", True):
        cases += [
            ("sample_weight of the wrong length", X, y, np.ones(len(y) - 1)),
            ("negative sample_weight", X, y, np.r_[-1.0, np.ones(len(y) - 1)]),
            ("NaN in sample_weight", X, y, np.r_[np.nan, np.ones(len(y) - 1)]),
        ]
    for what, Xc, yc, w in cases:
        _expect_oodfs_error(f"fit with {what}", lambda Xc=Xc, yc=yc, w=w: _fit(p, Xc, yc, sample_weight=w))
    point = _cheap_points(p.cls, limit=1)
    for what, Xc, yc, w in cases[:4]:
        _expect_oodfs_error(
            f"fit_grid with {what}",
            lambda Xc=Xc, yc=yc: p.cls.fit_grid(Xc, yc, point, random_state=SEED, **_labels(p, len(yc))),
        )


def _label_free(p: _Plugin):
    return None if _labelled(p) else "uses_groups is False"


@_check("selector", applies=_label_free)
def check_selector_refuses_bad_labels(p: _Plugin) -> None:
    """A selector with ``uses_groups = True`` refuses, with a one-line OodfsError from ``fit`` and
    from ``fit_grid``: no labels, labels of the wrong length, one environment only, and an
    environment with fewer rows than ``min_group_rows``."""
    X, y = _regression_data(n=90, seed=12, envs=True)
    g = _groups(len(y))
    point = _cheap_points(p.cls, limit=1)
    need = int(getattr(p.cls, "min_group_rows", 2))
    small = np.where(g == 2, 1, g)  # environment 2 keeps only its last need - 1 rows
    if need > 1:
        small[len(y) - need + 1 :] = 2
    cases = [
        ("no groups", None),
        ("groups of the wrong length", g[:-1]),
        ("one environment", np.zeros(len(y))),
        (f"an environment with {need - 1} rows (min_group_rows = {need})", small),
    ]
    for what, groups in cases:
        if what.startswith("an environment") and need < 2:
            continue
        _expect_oodfs_error(
            f"fit with {what}", lambda groups=groups: p.make(random_state=SEED).fit(X, y, groups=groups)
        )
        _expect_oodfs_error(
            f"fit_grid with {what}",
            lambda groups=groups: p.cls.fit_grid(X, y, point, random_state=SEED, groups=groups),
        )


@_check("selector", applies=_label_free)
def check_selector_label_names(p: _Plugin) -> None:
    """The scores depend on which rows share an environment, not on the labels' names or order:
    labels 0/1/2, the same environments named "c"/"a"/"b", and the rows shuffled together with
    their labels give the same scores (tolerance 1e-6 of the largest score)."""
    X, y = _regression_data(seed=13, envs=True)
    g = _groups(len(y))
    a = _scores(p.make(random_state=SEED).fit(X, y, groups=g), D)
    named = np.array(["c", "a", "b"])[g]
    b = _scores(p.make(random_state=SEED).fit(X, y, groups=named), D, "fit with renamed environments")
    _ensure(
        _close(a, b),
        f"renaming the environments (0, 1, 2 -> c, a, b) changes the scores: {_fmt(a)} vs {_fmt(b)}",
    )
    if not _seed_dependent(p):
        order = np.random.default_rng(0).permutation(len(y))
        c = _scores(
            p.make(random_state=SEED).fit(X[order], y[order], groups=g[order]), D, "fit on shuffled rows"
        )
        _ensure(
            _close(a, c, 1e-4),
            f"shuffling the rows with their labels changes the scores: {_fmt(a)} vs {_fmt(c)}",
        )


def check_selector(selector, skip: dict[str, str] | None = None) -> dict[str, str]:
    """Run every selector check on a Selector class (or instance). Raises AssertionError listing
    the failed checks; returns ``{check name: "passed" | "skipped: reason"}``. ``skip`` maps check
    names to the reason to skip them."""
    return _run("selector", selector, skip)
