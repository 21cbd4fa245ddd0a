"""Property-based tests (hypothesis): awkward but legal inputs give valid results, bad inputs a clear error.

For selectors, weighters and metrics, on random shapes (n from 2, d up to 8, n close to d),
constant and duplicated columns, tiny and huge scales (1e-8 .. 1e8, large offsets), integer
and binary data, constant targets: the result is valid (finite scores, one per feature;
non-negative finite weights with mean 1; finite metric values in their range) or an
``OodfsError`` whose message is one line. Never an exception from inside a library
(LinAlgError, ZeroDivisionError, IndexError, a numpy broadcasting error ...), never a silent
NaN. NaN / inf in the input must be an ``OodfsError``.

Expensive selectors run in a small setting (5 trees, 2 epochs); every test has a bounded
number of examples and no deadline.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oodfs import OodfsError
from oodfs.contract.metrics import f1_at_k, feature_ranks, rank_average, rmse, rmse_summary
from oodfs.contract.registry import registry

SCALES = [1e-8, 1e-4, 1.0, 1e4, 1e8]
SETTINGS = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    derandomize=True,
    database=None,
)

#: (selector or weighter name, parameters for fit) -- cheap settings of the expensive ones
SELECTORS = [
    ("ols", {}),
    ("correlation", {}),
    ("lasso", {}),
    ("mi", {}),
    ("dwr", {}),
    ("srdo", {}),
    ("gb", {"n_estimators": 5, "max_depth": 2}),
    ("xgb", {"n_estimators": 5, "max_depth": 2}),
    ("rf", {"n_estimators": 5, "max_depth": 3}),
    ("stg", {"max_epochs": 2, "hidden_layer_sizes": (8,)}),
]
#: fit_grid points for the selectors whose defaults are expensive (others: the default point)
GRID_POINTS = {
    "gb": [{"n_estimators": 3, "max_depth": 2}, {"n_estimators": 5, "max_depth": 2}],
    "xgb": [{"n_estimators": 3, "max_depth": 2}, {"n_estimators": 5, "max_depth": 2}],
    "rf": [{"n_estimators": 3, "max_depth": 3}, {"n_estimators": 5, "max_depth": 3}],
    "lasso": [{"alpha": 0.001}, {"alpha": 0.1}],
    "mi": [{"n_neighbors": 3}, {"n_neighbors": 5}],
    "stg": [{"lam": 0.1}, {"lam": 1.0}],
}
EXAMPLES = {"stg": 12, "gb": 15, "xgb": 15, "rf": 15, "srdo": 15, "dwr": 15}  # default 25


def settings_for(max_examples: int):
    """Bounded examples, no deadline."""
    return settings(max_examples=max_examples, **SETTINGS)


#: OodfsError messages that are not a clear answer to the input but the core catching a plugin bug
PLUGIN_BUG_MESSAGES = (
    "produced a non-finite score",
    "scores for",
    "produced invalid scores",
    "produced invalid weights",
    "weights for",
)


def lookup(kind: str, name: str):
    try:
        return registry().get(kind, name)
    except OodfsError:
        return None


def plugin_params(kind: str, entries):
    out = []
    for name, params in entries:
        cls = lookup(kind, name)
        marks = []
        if cls is None:
            marks.append(pytest.mark.skip(reason=f"{kind} {name!r} is not registered"))
        out.append(pytest.param(name, params, marks=marks, id=name))
    return out


def weighter_entries():
    names = {"dwr", "srdo"}
    try:
        names |= set(registry().names("weighter"))
    except OodfsError:
        pass
    return [(name, {}) for name in sorted(names)]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- data ------------------------------------------------------------------------------------
@st.composite
def feature_matrices(draw, max_n: int = 40, max_d: int = 8):
    """X with awkward but finite values: scales 1e-8..1e8, offsets, constant / duplicated
    columns, integer / binary columns, n close to d."""
    d = draw(st.integers(1, max_d))
    if draw(st.booleans()):
        n = draw(st.integers(max(2, d - 1), d + 2))  # n close to d (also n <= d)
    else:
        n = draw(st.integers(2, max_n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dist = draw(st.sampled_from(["normal", "uniform", "integers", "binary", "heavy"]))
    X = {
        "normal": lambda: rng.standard_normal((n, d)),
        "uniform": lambda: rng.random((n, d)),
        "integers": lambda: rng.integers(-3, 4, (n, d)).astype(float),
        "binary": lambda: rng.integers(0, 2, (n, d)).astype(float),
        "heavy": lambda: rng.standard_cauchy((n, d)),
    }[dist]()
    X = X * draw(st.sampled_from(SCALES))
    if draw(st.booleans()):  # each column on its own scale
        X = X * rng.choice(SCALES, size=d)
    if draw(st.booleans()):  # a large offset (catastrophic cancellation when centring)
        X = X + draw(st.sampled_from([1e3, 1e8, -1e8]))
    for j in draw(st.lists(st.integers(0, d - 1), max_size=d, unique=True)):  # constant columns
        X[:, j] = draw(st.sampled_from([0.0, 1.0, -2.5, 1e8]))
    for a, b in draw(st.lists(st.tuples(st.integers(0, d - 1), st.integers(0, d - 1)), max_size=2)):
        X[:, b] = X[:, a]  # duplicated columns
    return X


@st.composite
def regression_problems(draw, max_n: int = 40, max_d: int = 8):
    X = draw(feature_matrices(max_n, max_d))
    n, d = X.shape
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["linear", "constant", "noise", "copy"]))
    if kind == "linear":
        span = np.abs(X).max(axis=0)
        Z = (X - X.mean(axis=0)) / np.where(span > 0, span, 1.0)
        y = Z @ rng.standard_normal(d) + 0.1 * rng.standard_normal(n)
    elif kind == "constant":
        y = np.full(n, draw(st.sampled_from([0.0, 1.0, 1e8])))
    elif kind == "noise":
        y = rng.standard_normal(n)
    else:
        y = X[:, draw(st.integers(0, d - 1))].copy()
    return X, y * draw(st.sampled_from(SCALES))


@st.composite
def poisoned(draw, problem):
    """A problem with one NaN / inf placed in X or y."""
    X, y = (a.copy() for a in draw(problem))
    bad = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    if draw(st.booleans()):
        X[draw(st.integers(0, X.shape[0] - 1)), draw(st.integers(0, X.shape[1] - 1))] = bad
    else:
        y[draw(st.integers(0, len(y) - 1))] = bad
    return X, y


def sample_weights(n: int):
    return (
        st.lists(st.sampled_from([0.0, 1e-8, 0.5, 1.0, 3.0, 1e8]), min_size=n, max_size=n)
        .map(np.array)
        .filter(lambda w: w.sum() > 0)
    )


# -- what a valid answer is ------------------------------------------------------------------
def clear_error(exc: BaseException, what: str) -> None:
    """``exc`` must be an OodfsError with a one-line message that is about the input."""
    assert isinstance(exc, OodfsError), f"{what}: {type(exc).__name__} from inside: {exc}"
    msg = str(exc)
    assert msg.strip() and "\n" not in msg.strip(), f"{what}: unclear message {msg!r}"
    assert not any(s in msg for s in PLUGIN_BUG_MESSAGES), f"{what}: the plugin computed garbage: {msg}"


def outcome(call, what: str):
    """The result of ``call()``, or None after a clear OodfsError; anything else fails the test."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call()
    except Exception as exc:  # noqa: BLE001 -- judged by clear_error
        clear_error(exc, what)
        return None


def assert_scores(scores, d: int, what: str) -> None:
    scores = np.asarray(scores, dtype=float)
    assert scores.shape == (d,), f"{what}: {scores.shape} scores for {d} features"
    assert np.all(np.isfinite(scores)), f"{what}: non-finite scores {scores}"


def describe(X, y) -> str:
    return (
        f"n={X.shape[0]}, d={X.shape[1]}, |X| max {np.abs(X).max():.3g}, sd(X) "
        f"{np.round(X.std(0), 12).tolist()}, y sd {y.std():.3g}"
    )


# -- selectors ---------------------------------------------------------------------------------
def fit_scores(name, params, X, y, sample_weight=None):
    est = lookup("selector", name)(**params, random_state=0)
    return est.fit(X, y, sample_weight=sample_weight).scores_


def grid_scores(name, X, y):
    cls = lookup("selector", name)
    points = GRID_POINTS.get(name, [cls.default_params()])
    return cls.fit_grid(X, y, [dict(p) for p in points], random_state=0)


@pytest.mark.parametrize("name, params", plugin_params("selector", SELECTORS))
def test_selector_awkward_data(name, params):
    @settings_for(EXAMPLES.get(name, 25))
    @given(regression_problems())
    def prop(problem):
        X, y = problem
        what = f"{name} on {describe(X, y)}"
        scores = outcome(lambda: fit_scores(name, params, X, y), what)
        if scores is not None:
            assert_scores(scores, X.shape[1], what)
        out = outcome(lambda: grid_scores(name, X, y), f"{what} (fit_grid)")
        if out is not None:
            for s in out:
                assert_scores(s, X.shape[1], f"{what} (fit_grid)")

    prop()


@pytest.mark.parametrize("name, params", plugin_params("selector", SELECTORS))
def test_selector_sample_weight(name, params):
    if not getattr(lookup("selector", name), "supports_sample_weight", True):
        pytest.skip(f"{name} does not support sample_weight")

    @settings_for(max(5, EXAMPLES.get(name, 25) // 2))
    @given(st.data())
    def prop(data):
        X, y = data.draw(regression_problems(max_n=30))
        w = data.draw(sample_weights(X.shape[0]))
        what = f"{name} on {describe(X, y)}, sample_weight {w.tolist()}"
        scores = outcome(lambda: fit_scores(name, params, X, y, w), what)
        if scores is not None:
            assert_scores(scores, X.shape[1], what)

    prop()


def test_gb_tiny_sample_weight():
    """The minimal example hypothesis found for gb (test_selector_sample_weight)."""
    scores = outcome(
        lambda: fit_scores(
            "gb",
            {},
            np.array([[2.0], [1.0], [0.0]]),
            np.array([-34.0, -6.5, -5.8]),
            np.array([1e-16, 1.0, 1.0]),
        ),
        "gb with a 1e-16 sample weight",
    )
    if scores is not None:
        assert_scores(scores, 1, "gb with a 1e-16 sample weight")


@pytest.mark.parametrize("name, params", plugin_params("selector", SELECTORS))
def test_selector_rejects_nan_and_inf(name, params):
    @settings_for(10)
    @given(poisoned(regression_problems(max_n=20)))
    def prop(problem):
        X, y = problem
        for what, call in (
            ("fit", lambda: fit_scores(name, params, X, y)),
            ("fit_grid", lambda: grid_scores(name, X, y)),
        ):
            try:
                call()
            except Exception as exc:  # noqa: BLE001
                clear_error(exc, f"{name}.{what} with NaN/inf")
            else:
                pytest.fail(f"{name}.{what} accepted NaN/inf input without an error")

    prop()


# -- weighters ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, params", plugin_params("weighter", weighter_entries()))
def test_weighter_awkward_data(name, params):
    cls = lookup("weighter", name)

    @settings_for(EXAMPLES.get(name, 20))
    @given(feature_matrices())
    def prop(X):
        what = f"weighter {name} on n={X.shape[0]}, d={X.shape[1]}, |X| max {np.abs(X).max():.3g}"
        w = outcome(lambda: cls(**params, random_state=0).fit(X).weights_, what)
        if w is not None:
            w = np.asarray(w, dtype=float)
            assert w.shape == (X.shape[0],) and np.all(np.isfinite(w)) and np.all(w >= 0), what
            assert abs(w.mean() - 1) < 1e-9, what
        grid = outcome(lambda: cls.fit_grid(X, [cls.default_params()], random_state=0), f"{what} (fit_grid)")
        if grid is not None:
            assert len(grid) == 1 and np.all(np.isfinite(grid[0])) and np.all(np.asarray(grid[0]) >= 0), what

    prop()


@pytest.mark.parametrize("name, params", plugin_params("weighter", weighter_entries()))
def test_weighter_rejects_nan_and_inf(name, params):
    cls = lookup("weighter", name)

    @settings_for(8)
    @given(feature_matrices(max_n=20), st.sampled_from([np.nan, np.inf, -np.inf]), st.data())
    def prop(X, bad, data):
        X = X.copy()
        X[data.draw(st.integers(0, X.shape[0] - 1)), data.draw(st.integers(0, X.shape[1] - 1))] = bad
        for what, call in (
            ("fit", lambda: cls(**params, random_state=0).fit(X)),
            ("fit_grid", lambda: cls.fit_grid(X, [cls.default_params()], random_state=0)),
        ):
            try:
                call()
            except Exception as exc:  # noqa: BLE001
                clear_error(exc, f"weighter {name}.{what} with {bad}")
            else:
                pytest.fail(f"weighter {name}.{what} accepted {bad} without an error")

    prop()


# -- metrics --------------------------------------------------------------------------------------
score_values = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e8, max_value=1e8),
    st.sampled_from([0.0, 1e-8, -1e-8, 1.0, 1e8]),
    st.sampled_from([np.nan, np.inf, -np.inf]),
)
score_vectors = st.lists(score_values, min_size=0, max_size=12).map(lambda v: np.array(v, dtype=float))
true_sets = st.lists(st.integers(-2, 14), min_size=0, max_size=6)


def metric_outcome(call, what):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a RuntimeWarning (0/0, overflow) is a silent NaN in the making
            return call()
    except Exception as exc:  # noqa: BLE001
        clear_error(exc, what)
        return None


@settings(max_examples=200, **SETTINGS)
@given(score_vectors, true_sets, st.integers(-1, 14))
def test_rank_average_and_f1(scores, true_set, k):
    valid = (
        scores.size > 0
        and np.all(np.isfinite(scores))
        and len(true_set) > 0
        and all(0 <= j < scores.size for j in true_set)
    )
    ra = metric_outcome(
        lambda: rank_average(scores, true_set), f"rank_average({scores.tolist()}, {true_set})"
    )
    f1 = metric_outcome(lambda: f1_at_k(scores, true_set, k), f"f1_at_k({scores.tolist()}, {true_set}, {k})")
    if not valid:
        assert ra is None and f1 is None, "invalid scores or true set must be an OodfsError"
        return
    m = len(set(true_set))
    assert ra is not None and np.isfinite(ra) and (m + 1) / 2 - 1e-9 <= ra <= scores.size - (m - 1) / 2 + 1e-9
    if 1 <= k <= scores.size:
        assert f1 is not None and np.isfinite(f1) and 0 <= f1 <= 1 + 1e-12
    else:
        assert f1 is None


finite_vectors = st.lists(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False, min_value=-1e8, max_value=1e8),
        st.sampled_from([0.0, 1e-8, -1e-8, 1e8]),
    ),
    min_size=1,
    max_size=12,
).map(lambda v: np.array(v, dtype=float))


@settings(max_examples=100, **SETTINGS)
@given(finite_vectors)
def test_feature_ranks_finite(scores):
    ranks = metric_outcome(lambda: feature_ranks(scores), f"feature_ranks({scores.tolist()})")
    assert ranks is not None and np.all(np.isfinite(ranks)), f"feature_ranks({scores.tolist()}) = {ranks}"
    assert np.isclose(np.sum(ranks), scores.size * (scores.size + 1) / 2)


@settings(max_examples=50, **SETTINGS)
@given(score_vectors)
def test_feature_ranks_never_nan(scores):
    ranks = metric_outcome(lambda: feature_ranks(scores), f"feature_ranks({scores.tolist()})")
    if ranks is not None:
        assert np.all(np.isfinite(ranks)), f"feature_ranks({scores.tolist()}) = {ranks}"


@settings(max_examples=100, **SETTINGS)
@given(st.data())
def test_rmse_finite(data):
    a = data.draw(finite_vectors)
    b = data.draw(st.lists(st.floats(-1e8, 1e8), min_size=a.size, max_size=a.size).map(np.array))
    value = metric_outcome(lambda: rmse(a, b), f"rmse({a.tolist()}, {b.tolist()})")
    assert value is not None and np.isfinite(value) and value >= 0
    assert np.isclose(value, np.sqrt(np.mean((a - b) ** 2)))
    mean, sd = metric_outcome(lambda: rmse_summary(np.abs(a)), f"rmse_summary({np.abs(a).tolist()})")
    assert np.isfinite(mean) and np.isfinite(sd) and sd >= 0


@settings(max_examples=100, **SETTINGS)
@given(score_vectors, score_vectors)
def test_rmse_never_nan(a, b):
    value = metric_outcome(lambda: rmse(a, b), f"rmse({a.tolist()}, {b.tolist()})")
    if value is not None:
        assert np.isfinite(value) and value >= 0, f"rmse({a.tolist()}, {b.tolist()}) = {value}"


@settings(max_examples=50, **SETTINGS)
@given(score_vectors)
def test_rmse_summary_never_nan(values):
    out = metric_outcome(lambda: rmse_summary(values), f"rmse_summary({values.tolist()})")
    if out is not None:
        mean, sd = out
        assert np.isfinite(mean) and np.isfinite(sd) and sd >= 0, f"rmse_summary({values.tolist()}) = {out}"
