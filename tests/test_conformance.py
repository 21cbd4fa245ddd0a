"""The conformance kit (oodfs.testing): every built-in plugin passes it, and it catches broken plugins.

The first half runs the kit on every registered built-in plugin, one test per (plugin, check),
exactly as a plugin author would. The second half hands the kit deliberately broken plugins,
one defect each, and asserts that the check meant to catch that defect fails (with a message
naming the check and the reason) -- so no check is vacuous -- and that correct toy plugins pass.
"""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path

import numpy as np
import pytest

import oodfs
from oodfs import OodfsError
from oodfs import testing as kit
from oodfs.contract.registry import registry
from oodfs.testing import parametrize_plugin_checks, with_defaults, with_envs

pytestmark = pytest.mark.usefixtures("one_torch_thread")


# -- the built-ins -------------------------------------------------------------------------------
def _table_spec():
    """The ``table`` environment needs a table: a small CSV with three groups."""
    from oodfs_plugins.environments.table import Table

    where = Path(tempfile.mkdtemp(prefix="oodfs-conformance-")) / "groups.csv"
    rng = np.random.default_rng(0)
    n = 240
    x = rng.standard_normal((n, 3))
    group = np.repeat(["a", "b", "c"], n // 3)
    y = x[:, 0] + 0.5 * x[:, 1] + 0.1 * rng.standard_normal(n)
    lines = ["x0,x1,x2,group,y"] + [
        f"{a:.6f},{b:.6f},{c:.6f},{g},{t:.6f}" for (a, b, c), g, t in zip(x, group, y)
    ]
    where.write_text("\n".join(lines) + "\n")
    return with_envs(
        Table(path=str(where), target="y", env_column="group"), envs=("a", "c"), invalid_envs=("zzz",)
    )


def _binary_table_spec():
    """The ``binary_table`` environment: the same kind of table with a yes / no target."""
    from oodfs_plugins.environments.table import BinaryTable

    where = Path(tempfile.mkdtemp(prefix="oodfs-conformance-")) / "groups.csv"
    rng = np.random.default_rng(0)
    n = 240
    x = rng.standard_normal((n, 3))
    group = np.repeat(["a", "b", "c"], n // 3)
    y = np.where(x[:, 0] + 0.5 * x[:, 1] + rng.standard_normal(n) > 0, "yes", "no")
    lines = ["x0,x1,x2,group,y"] + [
        f"{a:.6f},{b:.6f},{c:.6f},{g},{t}" for (a, b, c), g, t in zip(x, group, y)
    ]
    where.write_text("\n".join(lines) + "\n")
    return with_envs(
        BinaryTable(path=str(where), target="y", positive="yes", env_column="group"),
        envs=("a", "c"),
        invalid_envs=("zzz",),
    )


#: environments that cannot be checked from their class alone: how to build a checkable one
ENVIRONMENT_SPECS = {"table": _table_spec, "binary_table": _binary_table_spec}

#: weighters (and their WLS selectors) that know the synthetic environment's selection mechanism
ORACLES = ("oracle_ipw", "oracle_cond")


def _oracle_spec(cls):
    """An oracle reads X in its environment's layout: the kit's 6-column data are those of d_v = 1
    (S1..S5, V1) with V1 spurious, and mild selection (exponent 1, r = 1.5) keeps the weights
    within a factor of about 10 on the kit's unclipped normal data."""
    return with_defaults(cls, d_v=1, spurious=("V1",), exponent=1.0, r=1.5)


def _rsw_spec():
    """rsw's 8 000 Adam steps a fit, on a short schedule; at its authors' alpha (1e4 to 1e8) every
    gate closes and the known answer is lost (docs/PROTOCOL.md, section 12, "RSW"), so the kit
    checks it at alpha 100, a one-value alpha grid of its own (the rest of the grid as shipped)."""
    cls = with_defaults(registry().get("selector", "rsw"), alpha=100.0, pretrain_epochs=100, epochs=400)
    cls.grid = {**cls.grid, "alpha": [100.0]}
    return cls


#: irm's 100 000 Adam steps amplify floating-point rounding: a column permutation or renamed
#: environments move its scores by ~3e-5 of the largest; at 2 000 steps they agree to 1e-6
#: (docs/PROTOCOL.md, "Multi-environment methods")
#: the community DWR's 5 000 Adam steps likewise (at 500 steps its scores follow a permutation only to
#: ~5e-6 of the largest, above the kit's 1e-6); tests/test_svi.py checks its weighter at 300 steps
SELECTOR_SPECS = {
    "irm": lambda: with_defaults(registry().get("selector", "irm"), n_iterations=2000),
    "dwr_community": lambda: with_defaults(registry().get("selector", "dwr_community"), steps=100),
    # hrm's 45 000 Adam steps a fit: the kit checks its contract on a short schedule
    "hrm": lambda: with_defaults(
        registry().get("selector", "hrm"), outer_iters=1, pretrain_epochs=100, epochs=300
    ),
    "rsw": lambda: _rsw_spec(),
    # kerhrm's 20 rounds of 3000 Adam steps on a 1024-unit network's tangent features: a short schedule
    "kerhrm": lambda: with_defaults(
        registry().get("selector", "kerhrm"), width=64, n_components=20, outer_iters=2, epochs=300
    ),
}


def builtin_plugins() -> list:
    plugins = []
    names = set()
    for info in registry().all():
        # the kit checks selectors, weighters and environments (declarations and downstream models have
        # their own tests: test_metrics, test_tasks)
        if (
            info.package != "oodfs"
            or info.name in ORACLES
            or info.kind not in ("selector", "weighter", "environment")
        ):
            continue
        names.add((info.kind, info.name))
        specs = ENVIRONMENT_SPECS if info.kind == "environment" else SELECTOR_SPECS
        spec = specs.get(info.name)
        plugins.append(spec() if spec is not None else info.cls)
    # a built-in environment module that registers itself only through --plugin is still ours
    try:
        importlib.import_module("oodfs_plugins.environments.table")
    except ImportError:
        pass
    else:
        if ("environment", "table") not in names:
            plugins.append(_table_spec())
    return plugins


@parametrize_plugin_checks(builtin_plugins())
def test_builtin_plugin_conforms(plugin, check):
    check(plugin)


def oracle_plugins() -> list:
    return [
        _oracle_spec(info.cls)
        for info in registry().all()
        if info.package == "oodfs" and info.name in ORACLES
    ]


@parametrize_plugin_checks(
    oracle_plugins(),
    skip={
        "check_weighter_decorrelates": "an oracle undoes a known selection; it is not meant to decorrelate "
        "features whose dependence does not come from that selection (the kit's X0, X1)"
    },
)
def test_oracle_weighters_conform(plugin, check):
    check(plugin)


def test_oracles_are_checked():
    assert sorted((kit._resolve(p).kind, kit._resolve(p).name) for p in oracle_plugins()) == sorted(
        (kind, name) for kind in ("selector", "weighter") for name in ORACLES
    )


def test_every_builtin_kind_is_covered():
    kinds = {kit._resolve(p).kind for p in builtin_plugins()}
    assert kinds >= {"selector", "environment"}
    assert {"ols", "correlation"} <= {kit._resolve(p).name for p in builtin_plugins()}


# -- correct toy plugins: the kit must not reject them ---------------------------------------
class AbsCorr(oodfs.Selector):
    """Weighted |corr(X_j, y)| (a correct toy selector)."""

    name = "abscorr"
    grid = {"power": [1, 2]}

    def __init__(self, power=1, k=5, random_state=None):
        self.power = power
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight):
        w = np.ones(len(y)) if sample_weight is None else sample_weight
        p = w / w.sum()
        Xc, yc = X - p @ X, y - p @ y
        sx, sy = np.sqrt(p @ Xc**2), np.sqrt(p @ yc**2)
        corr = np.abs(p @ (Xc * yc[:, None])) / np.where(sx * sy > 0, sx * sy, 1.0)
        return corr**self.power


class NoisyCorr(AbsCorr):
    """|corr| plus seeded noise (correct, and its scores depend on random_state)."""

    name = "noisycorr"
    permutation_invariant = False  # the noise is drawn per column position

    def _fit_scores(self, X, y, sample_weight):
        rng = np.random.default_rng(self.random_state)
        return super()._fit_scores(X, y, sample_weight) + 0.01 * rng.random(X.shape[1])


class ProductWeighter(oodfs.Weighter):
    """Down-weights rows where features move together (a correct toy weighter)."""

    name = "product"
    grid = {"strength": [0.5, 1.0]}

    def __init__(self, strength=0.5, random_state=None):
        self.strength = strength
        self.random_state = random_state

    def _fit_weights(self, X):
        Z = (X - X.mean(0)) / X.std(0)
        s = (Z[:, :, None] * Z[:, None, :]).sum(axis=(1, 2)) - (Z**2).sum(axis=1)  # sum_{i != j} z_i z_j
        return np.exp(-self.strength * np.clip(s, -5, 5) / X.shape[1])


class Gaussian(oodfs.Environment):
    """Gaussian features, y = x0 + noise; environment = mean shift (a correct toy environment)."""

    name = "gaussian"
    settings = ("linear", "square")
    example_envs = (0.0, 1.0)
    invalid_envs = ("left", float("nan"))

    def __init__(self, setting="linear", d=4):
        self.setting = setting
        self.d = d

    @property
    def feature_names(self):
        return [f"x{j}" for j in range(self.d)]

    @property
    def stable_set(self):
        return (0,)

    def check_env(self, env):
        if not isinstance(env, (int, float)) or not np.isfinite(env):
            raise OodfsError(f"environment must be a finite mean shift, got {env!r}")
        return env

    def sample(self, env, n, seed):
        self.check_env(env)
        if self.setting not in self.settings:
            raise OodfsError(f"unknown setting {self.setting!r}")
        if not isinstance(n, int) or n < 1:
            raise OodfsError(f"n must be a positive integer, got {n!r}")
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((n, self.d)) + env
        f = X[:, 0] if self.setting == "linear" else X[:, 0] ** 2
        return X, f + 0.1 * rng.standard_normal(n)


@pytest.mark.parametrize("plugin", [AbsCorr, NoisyCorr, AbsCorr(power=2), ProductWeighter, Gaussian])
def test_correct_toy_plugins_pass(plugin):
    results = kit.check_plugin(plugin)
    assert results and all(r == "passed" or r.startswith("skipped") for r in results.values())


def test_results_say_what_was_skipped_and_why():
    from oodfs_plugins.baselines.mi import MutualInfo

    results = kit.check_selector(MutualInfo)
    assert results["check_selector_sample_weight_direction"] == "skipped: supports_sample_weight is False"
    assert results["check_selector_sample_weight_rejected"] == "passed"


# -- broken selectors: each defect is caught by the check meant for it ------------------------
def caught(check, plugin, *fragments):
    """``check(plugin)`` fails with a message naming the check, the plugin and each fragment."""
    with pytest.raises(AssertionError) as info:
        check(plugin)
    message = str(info.value)
    assert check.name in message and kit._resolve(plugin).name in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def selector(name, scores=None, **attrs):
    """A subclass of AbsCorr with ``_fit_scores`` replaced (and class attributes set)."""
    namespace = {"name": name, "__doc__": f"Broken selector {name}.", **attrs}
    if scores is not None:
        namespace["_fit_scores"] = scores
    return type(name.title(), (AbsCorr,), namespace)


def test_nan_scores_are_caught():
    cls = selector("nanscores", lambda self, X, y, w: np.full(X.shape[1], np.nan))
    caught(kit.check_selector_known_answer, cls, "non-finite")


def test_wrong_number_of_scores_is_caught():
    cls = selector("short", lambda self, X, y, w: np.ones(X.shape[1] - 1))
    caught(kit.check_selector_known_answer, cls, "5 scores for 6 features")


def test_scores_bypassing_the_base_class_are_checked_too():
    class Raw(AbsCorr):
        """Sets scores_ itself, without the base class's checks."""

        name = "raw"

        def fit(self, X, y, sample_weight=None):
            self.scores_ = np.r_[np.nan, np.ones(np.shape(X)[1] - 1)]
            return self

    caught(kit.check_selector_known_answer, Raw, "non-finite scores")


def test_wrong_answer_is_caught():
    cls = selector("inverted", lambda self, X, y, w: -AbsCorr._fit_scores(self, X, y, w))
    caught(kit.check_selector_known_answer, cls, "feature 0 should score highest")


def test_unseeded_randomness_is_caught():
    cls = selector(
        "unseeded", lambda self, X, y, w: AbsCorr._fit_scores(self, X, y, w) + np.random.random(X.shape[1])
    )
    caught(kit.check_selector_deterministic, cls, "random_state=0 differ")


def test_state_carried_between_fits_is_caught():
    def scores(self, X, y, w):
        if not hasattr(self, "_first"):
            self._first = AbsCorr._fit_scores(self, X, y, w)
        return self._first

    caught(kit.check_selector_deterministic, selector("sticky", scores), "state carried over")


def test_column_order_dependence_is_caught_unless_declared():
    def scores(self, X, y, w):
        return AbsCorr._fit_scores(self, X, y, w) + 1e-3 * np.arange(X.shape[1])

    caught(kit.check_selector_column_permutation, selector("ordered", scores), "column permutation")
    declared = selector("ordered2", scores, permutation_invariant=False)
    kit.check_selector_column_permutation(declared)  # declared: nothing to check
    assert kit.check_selector_column_permutation.skip_reason(declared) == "permutation_invariant is False"


def test_ignored_sample_weight_is_caught():
    cls = selector("deaf", lambda self, X, y, w: AbsCorr._fit_scores(self, X, y, None))
    caught(kit.check_selector_sample_weight_direction, cls, "appears to be ignored")
    caught(kit.check_selector_sample_weight_duplication, cls, "repeating the rows")


def test_sample_weight_in_the_wrong_way_is_caught():
    # sqrt of the weights: still the right direction, but integer weights no longer act like repeated rows
    cls = selector(
        "sqrtweights",
        lambda self, X, y, w: AbsCorr._fit_scores(self, X, y, None if w is None else np.sqrt(w)),
    )
    kit.check_selector_sample_weight_direction(cls)
    caught(kit.check_selector_sample_weight_duplication, cls, "repeating the rows")
    # inverted weights: the wrong direction
    inverted = selector(
        "invweights",
        lambda self, X, y, w: AbsCorr._fit_scores(self, X, y, None if w is None else 1 - w / w.max()),
    )
    caught(kit.check_selector_sample_weight_direction, inverted, "should score above")


def test_weights_of_one_must_change_nothing():
    cls = selector(
        "ones", lambda self, X, y, w: AbsCorr._fit_scores(self, X, y, w) * (1.0 if w is None else 2.0)
    )
    caught(kit.check_selector_sample_weight_ones, cls, "sample_weight of ones")


def test_declaring_no_sample_weight_is_enough_to_refuse_weights():
    # the plugin ignores its weights; the base class refuses them for it (supports_sample_weight)
    cls = selector(
        "quiet", lambda self, X, y, w: AbsCorr._fit_scores(self, X, y, None), supports_sample_weight=False
    )
    kit.check_selector_sample_weight_rejected(cls)
    X, y = np.random.default_rng(0).normal(size=(2, 40, 3))
    w = np.r_[np.ones(20), np.full(20, 2.0)]
    for fit in (
        lambda: cls().fit(X, y[:, 0], sample_weight=w),
        lambda: cls.fit_grid(X, y[:, 0], [{}], sample_weight=w),
    ):
        with pytest.raises(
            oodfs.OodfsError, match="selector 'quiet' does not support non-uniform sample_weight"
        ):
            fit()
    uniform = cls().fit(X, y[:, 0], sample_weight=np.full(40, 3.0)).scores_
    np.testing.assert_array_equal(uniform, cls().fit(X, y[:, 0]).scores_)


def test_silently_ignored_unsupported_sample_weight_is_caught():
    # a plugin that bypasses the base class (its own fit drops the weights) is still caught
    def fit(self, X, y, sample_weight=None, groups=None, task=None):
        return AbsCorr.fit(self, X, y)

    cls = selector("quiet", fit=fit, supports_sample_weight=False)
    caught(kit.check_selector_sample_weight_rejected, cls, "expected OodfsError, nothing was raised")


def test_bad_metadata_is_caught():
    caught(kit.check_selector_metadata, selector("", None), "`name` must be a non-empty string")
    caught(kit.check_selector_metadata, selector("two words"), "one word")

    class NoDoc(oodfs.Selector):  # would be listed with oodfs.Selector's own docstring
        name = "nodoc"

        def __init__(self, k=5, random_state=None):
            self.k = k
            self.random_state = random_state

    caught(kit.check_selector_metadata, NoDoc, "docstring")
    caught(kit.check_selector_metadata, selector("scalargrid", grid={"power": 1}), "non-empty list")
    caught(kit.check_selector_metadata, selector("offgrid", grid={"power": [2, 3]}), "power=1", "not in grid")
    caught(
        kit.check_selector_metadata,
        selector("unknownparam", grid={"alpha": [1]}),
        "not an __init__ parameter",
    )

    class NoK(oodfs.Selector):
        """No k parameter."""

        name = "nok"

        def __init__(self, random_state=None):
            self.random_state = random_state

    caught(kit.check_selector_metadata, NoK, "'k'")


def test_unconstructible_grid_point_and_broken_get_params_are_caught():
    class Picky(AbsCorr):
        """Rejects one of its own grid values."""

        name = "picky"

        def __init__(self, power=1, k=5, random_state=None):
            if power == 2:
                raise ValueError("power 2 not allowed")
            super().__init__(power, k, random_state)

    caught(kit.check_selector_grid_points, Picky, "{'power': 2}", "ValueError")

    class Mangler(AbsCorr):
        """Stores a parameter changed (breaks sklearn.clone)."""

        name = "mangler"

        def __init__(self, power=1, k=5, random_state=None):
            super().__init__(float(power) * 10, k, random_state)

    caught(kit.check_selector_grid_points, Mangler, "clone", "unchanged")


def test_inconsistent_ranking_and_support_are_caught():
    class Backwards(AbsCorr):
        """ranking_ worst first."""

        name = "backwards"

        def fit(self, X, y, sample_weight=None):
            super().fit(X, y, sample_weight)
            self.ranking_ = self.ranking_[::-1].copy()
            return self

    caught(kit.check_selector_ranking, Backwards, "not non-increasing")

    class Bottom(AbsCorr):
        """get_support picks the worst k."""

        name = "bottom"

        def _get_support_mask(self):
            mask = np.zeros(self.n_features_in_, dtype=bool)
            mask[self.ranking_[::-1][: self.k]] = True
            return mask

    caught(kit.check_selector_support, Bottom, "is not the top k")


def test_misaligned_or_short_fit_grid_is_caught():
    class Reversed(AbsCorr):
        """fit_grid returns the points in reverse order."""

        name = "reversedgrid"

        @classmethod
        def fit_grid(cls, X, y, points, random_state=None):
            return super().fit_grid(X, y, points, random_state)[::-1]

    caught(kit.check_selector_fit_grid, Reversed, "separate fit")

    class Short(AbsCorr):
        """fit_grid drops the last point."""

        name = "shortgrid"

        @classmethod
        def fit_grid(cls, X, y, points, random_state=None):
            return super().fit_grid(X, y, points, random_state)[:-1]

    caught(kit.check_selector_fit_grid, Short, "2 points returned 1 results")

    class SeededReversed(NoisyCorr):
        """A seeded selector whose fit_grid mixes up the points."""

        name = "seededreversed"
        grid = {"power": [1, 1.001]}

        @classmethod
        def fit_grid(cls, X, y, points, random_state=None):
            return super().fit_grid(X, y, points, random_state)[::-1]

    caught(kit.check_selector_fit_grid, SeededReversed, "nearer the separate fit at {'power': 1.001}")


def test_missing_input_validation_is_caught():
    class Unchecked(AbsCorr):
        """fit_grid skips the input checks (NaN in, NaN out, no error)."""

        name = "unchecked"

        @classmethod
        def fit_grid(cls, X, y, points, random_state=None):
            X = np.asarray(X, dtype=float)
            return [np.nan_to_num(np.abs(X.T @ np.resize(np.asarray(y, float), X.shape[0]))) for _ in points]

    caught(kit.check_selector_invalid_input, Unchecked, "fit_grid with NaN in X", "nothing was raised")

    class Imputer(AbsCorr):
        """fit imputes NaN silently."""

        name = "imputer"

        def fit(self, X, y, sample_weight=None):
            return super().fit(np.nan_to_num(np.asarray(X, dtype=float)), y, sample_weight)

    caught(kit.check_selector_invalid_input, Imputer, "fit with NaN in X")

    class DeepError(AbsCorr):
        """Lets numpy's error through for mismatched lengths."""

        name = "deeperror"

        def fit(self, X, y, sample_weight=None):
            X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
            if np.isnan(X).any() or np.isinf(X).any() or np.isnan(y).any() or X.ndim != 2:
                raise OodfsError("bad input")
            X.T @ y  # raises a numpy ValueError for mismatched lengths
            return super().fit(X, y, sample_weight)

    caught(kit.check_selector_invalid_input, DeepError, "y shorter than X", "expected OodfsError")


def test_check_selector_lists_every_failure():
    calls = []

    def scores(self, X, y, w):  # ignores sample_weight, and drifts from one fit to the next
        calls.append(1)
        return AbsCorr._fit_scores(self, X, y, None) + 1e-3 * len(calls)

    cls = selector("manybugs", scores)
    with pytest.raises(AssertionError) as info:
        kit.check_selector(cls)
    message = str(info.value)
    assert "check_selector_deterministic failed" in message
    assert "check_selector_sample_weight_direction failed" in message
    assert "check_selector_metadata" not in message  # those pass


def test_a_crash_inside_the_plugin_is_reported_as_a_failure_of_that_check():
    def boom(self, X, y, w):
        raise ZeroDivisionError("oops")

    message = caught(
        kit.check_selector_known_answer, selector("boom", boom), "raised ZeroDivisionError: oops"
    )
    assert "\n" not in message


# -- broken weighters ---------------------------------------------------------------------------
def weighter(name, weights=None, **attrs):
    namespace = {"name": name, "__doc__": f"Broken weighter {name}.", **attrs}
    if weights is not None:
        namespace["_fit_weights"] = weights
    return type(name.title(), (ProductWeighter,), namespace)


def raw_weighter(name, make):
    """A weighter whose fit sets weights_ itself (bypassing the base class's checks)."""

    def fit(self, X, y=None):
        X = oodfs.validation.check_X(X)
        self.weights_ = make(self, X)
        self.diagnostics_ = oodfs.weight_diagnostics(X, np.ones(X.shape[0]))
        return self

    return weighter(name, fit=fit)


def test_negative_weights_are_caught():
    caught(kit.check_weighter_weights, weighter("negative", lambda self, X: X[:, 0]), "invalid weights")
    caught(
        kit.check_weighter_weights,
        raw_weighter("rawnegative", lambda self, X: 1 + 2 * X[:, 0]),
        "negative weights",
    )


def test_weights_not_mean_one_or_wrong_length_are_caught():
    caught(
        kit.check_weighter_weights, raw_weighter("mean2", lambda self, X: np.full(X.shape[0], 2.0)), "mean 1"
    )
    caught(
        kit.check_weighter_weights, raw_weighter("rawshort", lambda self, X: np.ones(X.shape[0] - 1)), "shape"
    )
    caught(
        kit.check_weighter_weights, weighter("short", lambda self, X: np.ones(X.shape[0] - 1)), "weights for"
    )


def test_missing_diagnostics_are_caught():
    def fit(self, X, y=None):
        self.weights_ = np.ones(np.shape(X)[0])
        return self

    caught(kit.check_weighter_weights, weighter("nodiag", fit=fit), "diagnostics_")


def test_unseeded_weighter_is_caught():
    cls = weighter("shaky", lambda self, X: 1 + np.random.random(X.shape[0]))
    caught(kit.check_weighter_deterministic, cls, "different weights")


def test_weighter_fit_grid_mistakes_are_caught():
    cls = weighter(
        "gridless", fit_grid=classmethod(lambda cls, X, points, random_state=None: [np.ones(len(X))])
    )
    caught(kit.check_weighter_fit_grid, cls, "returned 1 results")
    raw = weighter(
        "rawgrid",
        fit_grid=classmethod(lambda cls, X, points, random_state=None: [np.ones(len(X))] * len(points)),
    )
    message = caught(kit.check_weighter_fit_grid, raw, "differs from a separate fit by up to")
    assert len(message) < 300


def test_weighter_without_input_validation_is_caught():
    def fit(self, X, y=None):
        X = np.nan_to_num(np.asarray(X, dtype=float))
        self.weights_ = np.ones(X.shape[0])
        self.diagnostics_ = oodfs.weight_diagnostics(X, self.weights_)
        return self

    caught(kit.check_weighter_invalid_input, weighter("lenient", fit=fit), "fit with NaN in X")


def test_weighter_metadata_is_checked():
    caught(kit.check_weighter_metadata, weighter("offgrid", grid={"strength": [2.0]}), "not in grid")


# -- broken environments -------------------------------------------------------------------------
def environment(name, **attrs):
    namespace = {"name": name, "__doc__": f"Broken environment {name}.", **attrs}
    return type(name.title(), (Gaussian,), namespace)


def test_wrong_shapes_are_caught():
    def sample_2d_y(self, env, n, seed):
        X, y = Gaussian.sample(self, env, n, seed)
        return X, y[:, None]

    caught(kit.check_environment_sample, environment("column", sample=sample_2d_y), "y has shape")

    def sample_short(self, env, n, seed):
        X, y = Gaussian.sample(self, env, n, seed)
        return X[1:], y[1:]

    caught(kit.check_environment_sample, environment("short", sample=sample_short), "X has shape")
    extra = property(lambda self: [f"x{j}" for j in range(self.d + 1)])
    caught(kit.check_environment_sample, environment("names", feature_names=extra), "feature_names")


def test_non_finite_data_are_caught():
    def sample(self, env, n, seed):
        X, y = Gaussian.sample(self, env, n, seed)
        X[0, 0] = np.inf
        return X, y

    caught(kit.check_environment_sample, environment("infinite", sample=sample), "non-finite")


def test_seed_mistakes_are_caught():
    def unseeded(self, env, n, seed):
        return Gaussian.sample(self, env, n, np.random.randint(1 << 30))

    caught(kit.check_environment_seeds, environment("unseeded", sample=unseeded), "not reproducible")

    def seedless(self, env, n, seed):
        return Gaussian.sample(self, env, n, 0)

    caught(kit.check_environment_seeds, environment("seedless", sample=seedless), "ignores the seed")


def test_lenient_check_env_is_caught():
    caught(
        kit.check_environment_ids,
        environment("lenient", check_env=lambda self, env: env),
        "check_env('left')",
    )
    missing = environment("noids", example_envs=None)
    caught(kit.check_environment_sample, missing, "example_envs")
    kit.check_environment(missing, envs=(0.5,))  # ids given directly


def test_bad_stable_set_and_settings_are_caught():
    caught(
        kit.check_environment_metadata,
        environment("unstable", stable_set=property(lambda self: (0, 9))),
        "stable_set",
    )

    def sample(self, env, n, seed):  # accepts any setting
        rng = np.random.default_rng(seed)
        return rng.standard_normal((n, self.d)), rng.standard_normal(n)

    caught(kit.check_environment_settings, environment("anysetting", sample=sample), "no-such-setting")


# -- the pytest helper ----------------------------------------------------------------------------
def test_parametrize_helper_ids_and_skips():
    from oodfs_plugins.baselines.mi import MutualInfo

    mark = parametrize_plugin_checks(
        [AbsCorr, MutualInfo, ProductWeighter, with_envs(Gaussian(d=3), [0.0])]
    ).mark
    argnames, params = mark.args
    assert argnames == "plugin, check"
    ids = [p.id for p in params]
    assert "selector-abscorr-check_selector_fit_grid" in ids
    assert "weighter-product-check_weighter_weights" in ids
    assert "environment-gaussian(d=3)-check_environment_sample" in ids
    assert len(ids) == len(set(ids))
    skipped = {p.id: p.marks[0].kwargs["reason"] for p in params if p.marks}
    assert skipped["selector-mi-check_selector_sample_weight_direction"] == "supports_sample_weight is False"
    assert "selector-abscorr-check_selector_sample_weight_rejected" in skipped
    assert len(params) == 2 * len(kit.SELECTOR_CHECKS) + len(kit.WEIGHTER_CHECKS) + len(
        kit.ENVIRONMENT_CHECKS
    )


def test_a_check_refuses_the_wrong_kind():
    with pytest.raises(TypeError, match="checks a selector"):
        kit.check_selector_known_answer(ProductWeighter)
    with pytest.raises(TypeError, match="not an oodfs"):
        kit.check_plugin(object)


def test_weighter_that_does_not_decorrelate_is_caught():
    def correlating(self, X):
        Z = (X - X.mean(0)) / X.std(0)
        return np.exp(np.clip(Z[:, 0] * Z[:, 1], -3, 3))  # up-weights rows where X0 and X1 agree

    caught(kit.check_weighter_decorrelates, weighter("correlating", correlating), "more) independent")


def test_weighter_grid_points_are_checked():
    class Strict(ProductWeighter):
        """Rejects a grid value."""

        name = "strict"

        def __init__(self, strength=0.5, random_state=None):
            if strength > 0.5:
                raise OodfsError("too strong")
            super().__init__(strength, random_state)

    caught(kit.check_weighter_grid_points, Strict, "{'strength': 1.0}", "too strong")


def test_the_example_third_party_plugin_conforms(example_installed):
    """examples/oodfs-variance (its own tests/test_covfilter.py runs the same kit)."""
    covfilter = registry().get("selector", "covfilter")
    assert registry().info("selector", "covfilter").package == "oodfs-variance"
    results = kit.check_selector(covfilter)
    assert results["check_selector_sample_weight_duplication"] == "passed"
