"""Conformance kit: check that a plugin keeps the oodfs contract.

One line per plugin author::

    from oodfs.testing import parametrize_plugin_checks

    @parametrize_plugin_checks([MySelector, MyWeighter, MyEnvironment])
    def test_my_plugins(plugin, check):
        check(plugin)

or, outside pytest, ``check_selector(MySelector)`` / ``check_weighter(...)`` /
``check_environment(...)``, which run every check and raise one :class:`AssertionError` naming
each failed check and why. The extension points around the methods have one function each:
``check_selection_rule(rule)``, ``check_backend(MyBackend, **options)``,
``check_output_format(fmt, leaderboard)`` (with a leaderboard of :func:`hostile_results`, names
that are markup in one format or another) and ``check_command(command)``.

A check also accepts an *instance* (``MyNet(max_epochs=10)``): its parameters are used instead
of the class defaults (a way to shrink an expensive plugin, as
long as it still learns something from 300 rows; the grid checks use the class's grid and
defaults, as the benchmark does).

Data are small (n = 300 rows, d = 6 features) and seeded, so the checks are deterministic
and fast. Every check returns normally when the plugin conforms and raises ``AssertionError``
("<plugin>: <check> failed: <why>") when it does not; a crash inside the plugin is reported
the same way, with the original exception chained.

Optional class attributes the kit reads (none is required):

* ``Selector.supports_sample_weight`` (in :class:`oodfs.Selector`, default True);
* ``permutation_invariant`` (selectors, default True): reordering the columns of X
  reorders the scores and changes nothing else. Declare ``False`` when a fit depends on the
  column order (e.g. a network whose initial weights are drawn per input column);
* ``task_types`` (selectors, default ``("regression",)``): a selector that declares "binary"
  must rank the two features of an easy logistic model first on a 0/1 target; one that does
  not must refuse a binary task with one line;
* ``example_envs`` / ``invalid_envs`` (environments): a few valid environment ids and a few
  ids that ``check_env`` must reject. The built-in ``synthetic`` environment gets
  ``(2.5, -1.5)`` / ``(0.5, 1.0, -1.0)`` (|r| must exceed 1) when it does not declare them.

What "deterministic" means here: a selector whose scores do not change with
``random_state`` (OLS, correlation, LASSO, XGBoost, ...) must match separate fits in
``fit_grid`` to 1e-6, give the same scores for ``sample_weight`` of ones as for none, and
match row duplication for integer ``sample_weight``; a selector whose scores depend on the
seed (random forest, STG, ...) must be reproducible for a fixed seed, match separate fits in
``fit_grid`` to 1e-2 (ties may be broken differently when fits are shared) with each result
nearest its own point's separate fit, and move with ``sample_weight`` in the right direction.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, field

import numpy as np

from oodfs.contract.api import (
    Environment,
    Selector,
    WeightCollapseWarning,
    Weighter,
    describe,
    ranking_from_scores,
)
from oodfs.validation import OodfsError

__all__ = [
    "ENVIRONMENT_CHECKS",
    "HOSTILE_METHODS",
    "HOSTILE_SETTINGS",
    "SELECTOR_CHECKS",
    "WEIGHTER_CHECKS",
    "check_backend",
    "check_command",
    "check_environment",
    "check_output_format",
    "check_plugin",
    "check_selection_rule",
    "check_selector",
    "check_weighter",
    "hostile_results",
    "parametrize_plugin_checks",
    "plugin_checks",
    "with_defaults",
    "with_envs",
]

N, D = 300, 6  # the size of every check's data set
SEED = 0  # the random_state of every fit
TIGHT = 1e-6  # relative tolerance for "the same numbers" (relative to the largest |value|)


# -- plumbing ----------------------------------------------------------------------------------
class _Failed(Exception):
    """A contract violation found by a check (turned into an AssertionError with context)."""


def _ensure(condition, why: str) -> None:
    if not condition:
        raise _Failed(why)


@dataclass
class _Plugin:
    """A plugin class with the parameters to build it from (an instance's, or none)."""

    cls: type
    kind: str
    params: dict = field(default_factory=dict)
    envs: tuple | None = None
    invalid_envs: tuple | None = None

    @property
    def name(self) -> str:
        return getattr(self.cls, "name", "") or self.cls.__name__

    @property
    def label(self) -> str:
        extra = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.kind} {self.name!r}" + (f" ({extra})" if extra else "")

    def make(self, **overrides):
        return self.cls(**{**self.params, **overrides})


_KINDS = (("selector", Selector), ("weighter", Weighter), ("environment", Environment))


def with_envs(environment, envs, invalid_envs=()) -> _Plugin:
    """An environment (class or instance) together with the environment ids to check it with:
    ``envs`` valid ids, ``invalid_envs`` ids that ``check_env`` must reject. Use it where a
    plugin is expected: ``parametrize_plugin_checks([with_envs(Table(path=...), ["a", "b"])])`` with
    ``Table = oodfs.get_environment("table")``."""
    p = _resolve(environment)
    if p.kind != "environment":
        raise TypeError(f"with_envs needs an environment, got a {p.kind}")
    return _Plugin(p.cls, p.kind, p.params, tuple(envs), tuple(invalid_envs))


def with_defaults(cls, **defaults) -> type:
    """A subclass of plugin class ``cls`` whose ``__init__`` defaults are replaced by ``defaults``
    (e.g. fewer training epochs), so that every check -- ``fit_grid`` included, which builds
    ``cls(**point)`` -- runs the cheaper setting. Same name, grid and code otherwise."""
    init = cls.__init__
    sig = inspect.signature(init)
    unknown = set(defaults) - set(sig.parameters)
    if unknown:
        raise TypeError(f"{cls.__name__}.__init__ has no parameter(s) {sorted(unknown)}")
    new_sig = sig.replace(
        parameters=[
            p.replace(default=defaults[p.name]) if p.name in defaults else p for p in sig.parameters.values()
        ]
    )

    def __init__(self, *args, **kwargs):
        bound = new_sig.bind(self, *args, **kwargs)
        bound.apply_defaults()
        positional = [
            v
            for k, v in bound.arguments.items()
            if new_sig.parameters[k].kind in (inspect.Parameter.POSITIONAL_ONLY,)
        ]
        keywords = {
            k: v
            for k, v in bound.arguments.items()
            if new_sig.parameters[k].kind is not inspect.Parameter.POSITIONAL_ONLY
        }
        init(*positional, **keywords)

    __init__.__signature__ = new_sig
    namespace = {
        "__init__": __init__,
        "__module__": cls.__module__,
        "__doc__": cls.__doc__,
        "__qualname__": cls.__qualname__,
        "_conformance_defaults": dict(defaults),
    }
    return type(cls.__name__, (cls,), namespace)


def _resolve(plugin, envs=None, invalid_envs=None) -> _Plugin:
    if isinstance(plugin, _Plugin):
        if envs is None and invalid_envs is None:
            return plugin
        return _Plugin(
            plugin.cls,
            plugin.kind,
            plugin.params,
            plugin.envs if envs is None else tuple(envs),
            plugin.invalid_envs if invalid_envs is None else tuple(invalid_envs),
        )
    if hasattr(plugin, "cls") and hasattr(plugin, "kind") and isinstance(plugin.cls, type):  # a PluginInfo
        plugin = plugin.cls
    if isinstance(plugin, type):
        cls, params = plugin, {}
    else:
        cls = type(plugin)
        defaults = cls().get_params(deep=False) if _constructible(cls) else {}
        params = {
            k: v
            for k, v in plugin.get_params(deep=False).items()
            if k not in defaults or not _same(v, defaults[k])
        }
    for kind, base in _KINDS:
        if isinstance(cls, type) and issubclass(cls, base):
            return _Plugin(cls, kind, params, envs, invalid_envs)
    raise TypeError(f"{plugin!r} is not an oodfs Selector, Weighter or Environment (class or instance)")


def _constructible(cls) -> bool:
    try:
        cls()
    except Exception:  # noqa: BLE001 -- only asks whether defaults exist
        return False
    return True


class _Check:
    """One named check of one plugin kind; call it with a plugin class or instance."""

    def __init__(self, kind: str, func, applies=None):
        self.kind = kind
        self.func = func
        self.applies = applies  # _Plugin -> the reason the check does not apply, or None
        self.name = self.__name__ = func.__name__
        self.__doc__ = inspect.getdoc(func) or ""

    def skip_reason(self, plugin) -> str | None:
        p = _resolve(plugin)
        return self.applies(p) if self.applies is not None else None

    def __call__(self, plugin, **options) -> None:
        p = _resolve(plugin, **options)
        if p.kind != self.kind:
            raise TypeError(f"{self.name} checks a {self.kind}, got a {p.kind} ({p.cls.__qualname__})")
        reason = self.applies(p) if self.applies is not None else None
        if reason is not None:
            return  # nothing to check (parametrize_plugin_checks reports it as a skip)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", WeightCollapseWarning)
                self.func(p)
        except _Failed as exc:
            raise AssertionError(f"{p.label}: {self.name} failed: {exc}") from None
        except Exception as exc:
            raise AssertionError(
                f"{p.label}: {self.name} failed: the plugin raised {type(exc).__name__}: {_first_line(exc)}"
            ) from exc

    def __repr__(self) -> str:
        return self.name


SELECTOR_CHECKS: list[_Check] = []
WEIGHTER_CHECKS: list[_Check] = []
ENVIRONMENT_CHECKS: list[_Check] = []
_REGISTRY = {"selector": SELECTOR_CHECKS, "weighter": WEIGHTER_CHECKS, "environment": ENVIRONMENT_CHECKS}


def _check(kind: str, applies=None):
    def decorate(func):
        check = _Check(kind, func, applies)
        _REGISTRY[kind].append(check)
        return check

    return decorate


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _same(a, b) -> bool:
    """Equal parameter values (arrays element-wise; True is not 1)."""
    if a is b:
        return True
    try:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.array_equal(a, b))
        if isinstance(a, bool) != isinstance(b, bool):
            return False
        return bool(a == b)
    except Exception:  # noqa: BLE001 -- incomparable objects are not the same
        return False


def _close(a, b, rtol: float = TIGHT) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return False
    scale = max(float(np.abs(a).max(initial=0.0)), float(np.abs(b).max(initial=0.0)), 1e-300)
    return bool(np.allclose(a, b, rtol=0.0, atol=rtol * scale))


def _fmt(v) -> str:
    return np.array2string(np.asarray(v, dtype=float), precision=4, separator=", ", max_line_width=200)


def _expect_oodfs_error(what: str, call) -> None:
    """``call()`` must raise OodfsError with a non-empty one-line message."""
    try:
        call()
    except OodfsError as exc:
        msg = str(exc)
        _ensure(msg.strip(), f"{what}: OodfsError with an empty message")
        _ensure("\n" not in msg.strip(), f"{what}: the OodfsError message spans several lines: {msg!r}")
        return
    except Exception as exc:
        raise _Failed(
            f"{what}: expected OodfsError with a clear message, got {type(exc).__name__}: {_first_line(exc)}"
        ) from None
    raise _Failed(f"{what}: expected OodfsError, nothing was raised")


def _init_params(cls) -> dict:
    return {
        k: p
        for k, p in inspect.signature(cls.__init__).parameters.items()
        if k != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }


# -- data ----------------------------------------------------------------------------------------
def _regression_data(n: int = N, d: int = D, seed: int = 0, envs: bool = False):
    """X standard normal; y = 2 x0 + 0.5 x1 + small noise: feature 0 is the known best feature.
    With ``envs`` (for label-using selectors) the rows of the three environments of
    :func:`_groups` have their features scaled by 0.5, 1 and 2: y given X is the same in each,
    the distribution of X and of y is not."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if envs:
        X *= np.array([0.5, 1.0, 2.0])[_groups(n)][:, None]
    y = 2.0 * X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y


#: with ``envs``, the shift of x0's mean (and the opposite shift of x1's) in each environment
BINARY_ENV_SHIFT = (-0.5, 0.0, 0.5)


def _binary_data(n: int = N, d: int = D, seed: int = 4, envs: bool = False):
    """X standard normal; y ~ Bernoulli(sigmoid(4 x0 - 3 x1)) coded 0.0 / 1.0: features 0 and 1
    are the known stable set. With ``envs`` the features are scaled as in :func:`_regression_data`
    and the environments also move the means of x0 and x1 (by +s and -s, s in
    BINARY_ENV_SHIFT), so the base rate differs between them; y given X is unchanged. (Scaling
    alone keeps every environment's base rate at 1/2 and the residual means of any model at 0, so
    a test of residual means across environments, ICP's binary test, could not see a missing
    cause.)"""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if envs:
        g = _groups(n)
        X *= np.array([0.5, 1.0, 2.0])[g][:, None]
        X[:, 0] += np.array(BINARY_ENV_SHIFT)[g]
        X[:, 1] -= np.array(BINARY_ENV_SHIFT)[g]
    logit = 4.0 * X[:, 0] - 3.0 * X[:, 1]
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(float)
    return X, y


def _groups(n: int) -> np.ndarray:
    """The kit's environment labels: three blocks of consecutive rows, labelled 0, 1, 2."""
    return np.minimum(np.arange(n) * 3 // max(n, 1), 2)


def _labelled(p) -> bool:
    return bool(getattr(p.cls, "uses_groups", False))


def _labels(p, n: int) -> dict:
    """``groups`` for a label-using plugin (nothing for a label-free one)."""
    return {"groups": _groups(n)} if _labelled(p) else {}


def _two_regime_data(n: int = N, d: int = D, seed: int = 1):
    """Rows of half A follow y = 2 x0 + noise, rows of half B follow y = 2 x1 + noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    a = np.arange(n) < n // 2
    y = np.where(a, 2.0 * X[:, 0], 2.0 * X[:, 1]) + 0.2 * rng.standard_normal(n)
    return X, y, a


def _correlated_data(n: int = N, d: int = D, seed: int = 2):
    """Columns 0 and 1 strongly correlated (about 0.8), the others independent."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[:, 1] = 0.8 * X[:, 0] + 0.6 * X[:, 1]
    return X


# -- selectors -------------------------------------------------------------------------------------
def _fit(p: _Plugin, X, y, sample_weight=None, random_state=SEED, **params):
    est = p.make(random_state=random_state, **params)
    labels = _labels(p, len(y))  # a label-using selector gets the kit's environments
    out = (
        est.fit(X, y, **labels)
        if sample_weight is None
        else est.fit(X, y, sample_weight=sample_weight, **labels)
    )
    _ensure(out is est, f"fit must return self, returned {type(out).__name__}")
    return est


def _scores(est, d: int, what: str = "fit") -> np.ndarray:
    scores = getattr(est, "scores_", None)
    _ensure(scores is not None, f"{what}: no scores_ after fit")
    scores = np.asarray(scores)
    _ensure(
        scores.shape == (d,),
        f"{what}: scores_ has shape {scores.shape}, expected ({d},) (one score per feature)",
    )
    _ensure(
        np.issubdtype(scores.dtype, np.number), f"{what}: scores_ has dtype {scores.dtype}, expected numbers"
    )
    _ensure(np.all(np.isfinite(scores)), f"{what}: non-finite scores {_fmt(scores)}")
    return scores.astype(float)


_SEED_DEPENDENT: dict = {}


def _seed_dependent(p: _Plugin) -> bool:
    """Whether the scores change with random_state (fits with seeds 0 and 1 on the known-answer
    data differ). Computed once per plugin class and parameters."""
    key = (p.cls, repr(sorted(p.params.items())))
    if key not in _SEED_DEPENDENT:
        X, y = _regression_data(envs=_labelled(p))
        _SEED_DEPENDENT[key] = not _close(
            _fit(p, X, y, random_state=0).scores_, _fit(p, X, y, random_state=1).scores_, 1e-9
        )
    return _SEED_DEPENDENT[key]


def _cheap_points(cls, limit: int = 3) -> list[dict]:
    """The default grid point, then per grid parameter the default with that parameter set to its
    smallest other value (usually the cheapest), at most ``limit`` points."""
    default = cls.default_params()
    points = [dict(default)]
    for key, values in cls.grid.items():
        others = [v for v in values if not _same(v, default[key])]
        if not others:
            continue
        try:
            value = min(others)
        except TypeError:
            value = others[0]
        points.append({**default, key: value})
    return points[:limit]


def _no_sample_weight(p: _Plugin):
    return None if getattr(p.cls, "supports_sample_weight", True) else "supports_sample_weight is False"


def _with_sample_weight(p: _Plugin):
    return "supports_sample_weight is True" if getattr(p.cls, "supports_sample_weight", True) else None


def _not_permutation_invariant(p: _Plugin):
    return None if getattr(p.cls, "permutation_invariant", True) else "permutation_invariant is False"


def _check_grid_declaration(p: _Plugin) -> None:
    cls = p.cls
    grid = getattr(cls, "grid", None)
    _ensure(isinstance(grid, dict), f"grid must be a dict {{param: [values]}}, got {type(grid).__name__}")
    params = _init_params(cls)
    for key, values in grid.items():
        _ensure(key in params, f"grid parameter {key!r} is not an __init__ parameter (have {sorted(params)})")
        _ensure(
            isinstance(values, (list, tuple)) and len(values) > 0,
            f"grid[{key!r}] must be a non-empty list of values, got {values!r}",
        )
        _ensure(
            params[key].default is not inspect.Parameter.empty,
            f"grid parameter {key!r} has no __init__ default (the default grid point)",
        )
        for i, v in enumerate(values):
            _ensure(not any(_same(v, w) for w in values[:i]), f"grid[{key!r}] lists {v!r} twice")
    default = cls.default_params()
    for key, value in default.items():
        _ensure(
            any(_same(value, v) for v in grid[key]),
            f"the default {key}={value!r} (the __init__ default) is not in grid[{key!r}] = {grid[key]!r}",
        )
    _ensure(
        any(all(_same(point[k], default[k]) for k in default) for point in cls.grid_points()),
        "the default point is not among grid_points()",
    )


def _check_metadata(p: _Plugin, required: tuple[str, ...]) -> None:
    cls = p.cls
    name = getattr(cls, "name", None)
    _ensure(isinstance(name, str) and name.strip(), f"`name` must be a non-empty string, got {name!r}")
    _ensure(
        name == name.strip() and " " not in name and "," not in name,
        f"`name` {name!r} must be one word (it is typed on the command line, in comma lists)",
    )
    base_docs = {describe(b) for b in (Selector, Weighter, Environment)}
    _ensure(
        describe(cls) and describe(cls) not in base_docs,
        "the class needs a docstring: its first line is the description `oodfs plugins` shows",
    )
    params = _init_params(cls)
    for r in required:
        _ensure(r in params, f"__init__ must take a {r!r} parameter (has {sorted(params)})")


def _check_points_constructible(p: _Plugin) -> None:
    from sklearn.base import clone

    cls = p.cls
    for point in [{}] + cls.grid_points():
        try:
            est = cls(**point)
        except Exception as exc:
            raise _Failed(
                f"{cls.__name__}(**{point!r}) raised {type(exc).__name__}: {_first_line(exc)}"
            ) from None
        params = est.get_params(deep=False)
        for k, v in point.items():
            _ensure(
                k in params and _same(params[k], v),
                f"{cls.__name__}(**{point!r}).get_params() gives {k}={params.get(k)!r}, expected {v!r}",
            )
        try:
            copy = clone(est)
        except Exception as exc:
            raise _Failed(
                f"sklearn.base.clone({cls.__name__}(**{point!r})) raised {type(exc).__name__}: "
                f"{_first_line(exc)} (__init__ must store each parameter unchanged under its own name)"
            ) from None
        rebuilt = copy.get_params(deep=False)
        _ensure(
            set(rebuilt) == set(params) and all(_same(rebuilt[k], params[k]) for k in params),
            f"get_params of a clone differs: {rebuilt!r} vs {params!r}",
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


# -- environments ------------------------------------------------------------------------------------
def _env_ids(p: _Plugin) -> tuple[tuple, tuple]:
    envs = p.envs if p.envs is not None else getattr(p.cls, "example_envs", None)
    invalid = p.invalid_envs if p.invalid_envs is not None else getattr(p.cls, "invalid_envs", None)
    _ensure(
        envs is not None and len(envs) > 0,
        "no environment ids to test with: declare `example_envs = (...)` on the class "
        "(and `invalid_envs = (...)`) or pass envs=... to check_environment",
    )
    return tuple(envs), tuple(invalid or ())


def _draw(env_obj, env, n, seed, what):
    out = env_obj.sample(env, n, seed)
    _ensure(
        isinstance(out, tuple) and len(out) == 2,
        f"{what}: sample must return (X, y), got {type(out).__name__}",
    )
    X, y = np.asarray(out[0]), np.asarray(out[1])
    _ensure(X.ndim == 2 and X.shape[0] == n, f"{what}: X has shape {X.shape}, expected ({n}, n_features)")
    _ensure(y.shape == (n,), f"{what}: y has shape {y.shape}, expected ({n},)")
    _ensure(
        np.issubdtype(X.dtype, np.number) and np.issubdtype(y.dtype, np.number),
        f"{what}: X and y must be numeric",
    )
    _ensure(np.all(np.isfinite(X)) and np.all(np.isfinite(y)), f"{what}: non-finite values in X or y")
    return X, y


@_check("environment")
def check_environment_metadata(p: _Plugin) -> None:
    """``name`` (one word), a docstring, constructor parameters that ``clone`` round-trips,
    ``settings`` a tuple of names, ``feature_names`` distinct strings, ``stable_set`` None or
    distinct valid column indices, ``true_coef`` None or one finite number per column."""
    from sklearn.base import clone

    _check_metadata(p, ())
    env = p.make()
    try:
        copy = clone(env)
    except Exception as exc:
        raise _Failed(f"sklearn.base.clone raised {type(exc).__name__}: {_first_line(exc)}") from None
    params = env.get_params(deep=False)
    rebuilt = copy.get_params(deep=False)
    _ensure(
        all(_same(rebuilt[k], params[k]) for k in params),
        f"get_params of a clone differs: {rebuilt} vs {params}",
    )
    settings = getattr(p.cls, "settings", ())
    _ensure(
        isinstance(settings, tuple) and all(isinstance(s, str) for s in settings),
        f"settings must be a tuple of names, got {settings!r}",
    )
    names = env.feature_names
    _ensure(
        isinstance(names, (list, tuple)) and len(names) > 0 and all(isinstance(s, str) for s in names),
        f"feature_names must be a non-empty list of strings, got {names!r}",
    )
    _ensure(len(set(names)) == len(names), f"feature_names has duplicates: {names!r}")
    stable = env.stable_set
    if stable is not None:
        idx = list(stable)
        _ensure(
            all(isinstance(j, (int, np.integer)) and not isinstance(j, bool) for j in idx),
            f"stable_set must hold integer column indices, got {stable!r}",
        )
        _ensure(
            len(set(idx)) == len(idx) and all(0 <= j < len(names) for j in idx),
            f"stable_set {stable!r} must be distinct indices in 0..{len(names) - 1}",
        )
    coef = getattr(env, "true_coef", None)
    if coef is not None:
        coef = np.asarray(coef)
        _ensure(
            coef.shape == (len(names),) and np.issubdtype(coef.dtype, np.number) and np.isfinite(coef).all(),
            f"true_coef must be {len(names)} finite numbers (one per column), got {coef!r}",
        )


@_check("environment")
def check_environment_sample(p: _Plugin) -> None:
    """``sample(env, n, seed)`` gives finite X of shape (n, d) and y of shape (n,) for every example
    environment id (n = 3 and n = 50), d = len(feature_names); asked for more rows than it has
    (n = 5000), a finite source returns at most n rows, and at least the 50 it gave before."""
    envs, _ = _env_ids(p)
    env_obj = p.make()
    d = len(env_obj.feature_names)
    for env in envs:
        for n in (3, 50):
            X, _ = _draw(env_obj, env, n, 0, f"sample({env!r}, {n}, 0)")
            _ensure(X.shape[1] == d, f"sample({env!r}, {n}, 0): {X.shape[1]} columns but {d} feature_names")
        X, y = (np.asarray(a) for a in env_obj.sample(env, 5000, 0))
        _ensure(
            X.ndim == 2 and 50 <= X.shape[0] <= 5000 and X.shape[1] == d and y.shape == (X.shape[0],),
            f"sample({env!r}, 5000, 0): shapes {X.shape} and {y.shape}, expected at most 5000 (and at "
            f"least 50) rows of {d} columns",
        )
        _ensure(
            np.all(np.isfinite(X)) and np.all(np.isfinite(y)), f"sample({env!r}, 5000, 0): non-finite values"
        )


@_check("environment")
def check_environment_seeds(p: _Plugin) -> None:
    """The same seed gives the same data (also from a fresh object); different seeds differ."""
    envs, _ = _env_ids(p)
    for env in envs:
        X1, y1 = _draw(p.make(), env, 50, 1, f"sample({env!r}, 50, 1)")
        X2, y2 = _draw(p.make(), env, 50, 1, f"sample({env!r}, 50, 1) again")
        _ensure(
            np.array_equal(X1, X2) and np.array_equal(y1, y2),
            f"sample({env!r}, 50, seed=1) is not reproducible",
        )
        X3, y3 = _draw(p.make(), env, 50, 2, f"sample({env!r}, 50, 2)")
        _ensure(
            not (np.array_equal(X1, X3) and np.array_equal(y1, y3)),
            f"sample({env!r}, ...) ignores the seed (1 and 2 give the same data)",
        )


@_check("environment")
def check_environment_ids(p: _Plugin) -> None:
    """``check_env`` accepts the example environment ids and raises OodfsError for invalid ones;
    ``sample`` with an invalid id, or with n = 0, raises OodfsError too."""
    envs, invalid = _env_ids(p)
    env_obj = p.make()
    for env in envs:
        try:
            env_obj.check_env(env)
        except Exception as exc:
            raise _Failed(
                f"check_env({env!r}) rejects a valid id: {type(exc).__name__}: {_first_line(exc)}"
            ) from None
    for env in invalid:
        _expect_oodfs_error(f"check_env({env!r}) (an invalid id)", lambda env=env: env_obj.check_env(env))
        _expect_oodfs_error(
            f"sample({env!r}, 10, 0) (an invalid id)", lambda env=env: env_obj.sample(env, 10, 0)
        )
    _expect_oodfs_error(f"sample({envs[0]!r}, 0, 0) (n = 0)", lambda: env_obj.sample(envs[0], 0, 0))


@_check(
    "environment",
    applies=lambda p: (
        None if getattr(p.cls, "settings", ()) and "setting" in _init_params(p.cls) else "no named settings"
    ),
)
def check_environment_settings(p: _Plugin) -> None:
    """Every named setting in ``settings`` samples valid data; an unknown setting raises
    OodfsError when sampling."""
    envs, _ = _env_ids(p)
    for s in p.cls.settings:
        _draw(p.make(setting=s), envs[0], 20, 0, f"setting {s!r}: sample({envs[0]!r}, 20, 0)")
    bad = p.make(setting="no-such-setting")
    _expect_oodfs_error("sample with setting='no-such-setting'", lambda: bad.sample(envs[0], 20, 0))


# -- running checks -----------------------------------------------------------------------------------
def _run(kind: str, plugin, skip=None, **options) -> dict[str, str]:
    p = _resolve(plugin, **options)
    if p.kind != kind:
        raise TypeError(f"check_{kind} needs a {kind}, got a {p.kind} ({p.cls.__qualname__})")
    skip = dict(skip or {})
    results, failures = {}, []
    for check in _REGISTRY[kind]:
        reason = skip.get(check.name) or (check.applies(p) if check.applies is not None else None)
        if reason:
            results[check.name] = f"skipped: {reason}"
            continue
        try:
            check(p)
        except AssertionError as exc:
            failures.append(str(exc))
            results[check.name] = "failed"
        else:
            results[check.name] = "passed"
    if failures:
        raise AssertionError(f"{len(failures)} check(s) failed:\n" + "\n".join(f"  {f}" for f in failures))
    return results


def check_selector(selector, skip: dict[str, str] | None = None) -> dict[str, str]:
    """Run every selector check on a Selector class (or instance). Raises AssertionError listing
    the failed checks; returns ``{check name: "passed" | "skipped: reason"}``. ``skip`` maps check
    names to the reason to skip them."""
    return _run("selector", selector, skip)


def check_weighter(weighter, skip: dict[str, str] | None = None) -> dict[str, str]:
    """Run every weighter check on a Weighter class (or instance); see :func:`check_selector`."""
    return _run("weighter", weighter, skip)


def check_environment(
    environment, envs=None, invalid_envs=None, skip: dict[str, str] | None = None
) -> dict[str, str]:
    """Run every environment check on an Environment class (or instance). ``envs``: valid
    environment ids to sample (default: the class's ``example_envs``); ``invalid_envs``: ids
    ``check_env`` must reject (default: ``invalid_envs``)."""
    return _run("environment", environment, skip, envs=envs, invalid_envs=invalid_envs)


def check_plugin(plugin, skip: dict[str, str] | None = None) -> dict[str, str]:
    """:func:`check_selector`, :func:`check_weighter` or :func:`check_environment`, by kind."""
    return _run(_resolve(plugin).kind, plugin, skip)


def plugin_checks(plugin) -> list[_Check]:
    """The checks that apply to ``plugin``'s kind (each is called as ``check(plugin)``)."""
    return list(_REGISTRY[_resolve(plugin).kind])


def _plugin_id(plugin) -> str:
    p = _resolve(plugin)
    shrunk = {**getattr(p.cls, "_conformance_defaults", {}), **p.params}
    extra = ",".join(f"{k}={v!r}" if len(repr(v)) <= 24 else f"{k}=..." for k, v in shrunk.items())
    return f"{p.kind}-{p.name}" + (f"({extra})" if extra else "")


def parametrize_plugin_checks(plugins, skip: dict[str, str] | None = None):
    """A ``pytest.mark.parametrize`` over every (plugin, check) pair, with ids such as
    ``selector-ols-check_selector_fit_grid``; checks that do not apply (e.g. the sample-weight
    checks of a selector without ``supports_sample_weight``) and those named in ``skip`` are
    reported as skipped::

        @parametrize_plugin_checks([MySelector, MyWeighter])
        def test_conformance(plugin, check):
            check(plugin)
    """
    import pytest

    skip = dict(skip or {})
    params = []
    for plugin in plugins:
        if (
            not isinstance(plugin, _Plugin)
            and hasattr(plugin, "cls")
            and isinstance(getattr(plugin, "cls"), type)
        ):
            plugin = plugin.cls  # a PluginInfo from oodfs.contract.registry.registry().all()
        p = _resolve(plugin)
        for check in _REGISTRY[p.kind]:
            reason = skip.get(check.name) or (check.applies(p) if check.applies is not None else None)
            marks = [pytest.mark.skip(reason=reason)] if reason else []
            params.append(pytest.param(plugin, check, id=f"{_plugin_id(plugin)}-{check.name}", marks=marks))
    return pytest.mark.parametrize("plugin, check", params)


# -- the extension points around the methods: rules, backends, formats, commands ---------------------
# Each of these kinds is a declaration (or, for backends, a class) rather than an estimator, so each
# has one check function that runs every check of its kind and raises one AssertionError naming the
# plugin, the check and why.

#: method and setting names that are markup, formulas, commands and terminal escapes in one format or
#: another: :func:`hostile_results` runs a small benchmark under these names, and
#: :func:`check_output_format` checks that a format shows them as text
HOSTILE_METHODS = (
    '=HYPERLINK("http://evil.example/x")',
    "<script>alert(1)</script>",
    "a`b![i](javascript:alert(1))`",
    "\x1b[31mred $\\alpha$ \u202eevil",
)
HOSTILE_SETTINGS = (
    "../../escaped",
    "`](javascript:alert(2))<img src=x onerror=alert(3)>",
    "+cmd|' /C calc'!A0",
)


def _kind_check(label: str, checks) -> None:
    """Run ``checks`` (name -> function of no argument) and raise one AssertionError for the failed."""
    failures = []
    for name, check in checks.items():
        try:
            check()
        except _Failed as exc:
            failures.append(f"{label}: {name} failed: {exc}")
        except Exception as exc:  # noqa: BLE001 -- the plugin crashed: reported as a failure
            failures.append(
                f"{label}: {name} failed: the plugin raised {type(exc).__name__}: {_first_line(exc)}"
            )
    if failures:
        raise AssertionError(f"{len(failures)} check(s) failed:\n" + "\n".join(f"  {f}" for f in failures))


def _declared(obj) -> None:
    _ensure(isinstance(getattr(obj, "name", None), str) and obj.name, "no `name`")
    description = obj.description if hasattr(obj, "description") else describe(obj)
    _ensure(
        isinstance(description, str) and description.strip(), "no description (docstring or `description`)"
    )


def _points_table(extra_metrics=(), seed: int = 0):
    """An evaluated-points table as a rule sees it: 2 settings x 2 r_train x 2 runs x 2 methods x
    3 grid points, every registered metric (and ``extra_metrics``) drawn at random."""
    import pandas as pd

    from oodfs.contract.registry import registry

    rng = np.random.default_rng(seed)
    rows = [
        {"setting": s, "r_train": r, "run": run, "method": m, "point": p, "is_default": int(p == 1)}
        for s in ("poly", "mlp")
        for r in (1.5, 2.5)
        for run in (0, 1)
        for m in ("ols", "dwr")
        for p in range(3)
    ]
    points = pd.DataFrame(rows)
    for name in sorted({*registry().names("metric"), *extra_metrics}):
        points[name] = rng.random(len(points))
    return points


def check_selection_rule(rule) -> None:
    """Check a :class:`oodfs.contract.selection.SelectionRule` (built-in, declared or a subclass with
    its own ``choose``): on a table of evaluated points it returns one of each task's rows per task,
    leaves the table as it was, and chooses the same points whatever the order of the rows."""
    from oodfs.contract.selection import SelectionRule
    from oodfs.contract.task import TASK_KEY

    metric = rule.metric() if isinstance(rule, SelectionRule) else None  # regression's, for the table
    points = _points_table([metric] if metric else [])
    tasks = points[TASK_KEY].drop_duplicates()

    def chosen(table):
        out = rule.choose(table)
        _ensure(set(points.columns) <= set(out.columns), "choose() dropped columns of the points table")
        return out.sort_values(TASK_KEY, kind="stable").reset_index(drop=True)[list(points.columns)]

    def one_row_per_task():
        out = chosen(points.copy())
        _ensure(len(out) == len(tasks), f"{len(out)} rows chosen for {len(tasks)} tasks (one per task)")
        _ensure(not out[TASK_KEY].duplicated().any(), "a task has two chosen rows")
        merged = out.merge(points, on=list(points.columns), how="left", indicator=True)
        _ensure((merged["_merge"] == "both").all(), "a chosen row is not a row of the points table")

    def leaves_the_input():
        table = points.copy()
        rule.choose(table)
        _ensure(table.equals(points), "choose() changed the table it was given")

    def row_order_free():
        shuffled = points.sample(frac=1, random_state=1)
        _ensure(chosen(shuffled).equals(chosen(points.copy())), "the choice depends on the order of the rows")

    label = f"selection rule {getattr(rule, 'name', rule)!r}"
    _kind_check(
        label,
        {
            "check_rule_metadata": lambda: (
                _declared(rule),
                _ensure(isinstance(rule, SelectionRule), "not an oodfs.contract.selection.SelectionRule"),
            ),
            "check_rule_one_row_per_task": one_row_per_task,
            "check_rule_leaves_the_input": leaves_the_input,
            "check_rule_row_order": row_order_free,
        },
    )


def backend_probe(i: int, seed: int) -> tuple[int, float, int]:
    """The job :func:`check_backend` runs: its inputs, a seeded draw and the worker's process id."""
    import os

    return i, float(np.random.default_rng(seed).normal()), os.getpid()


def check_backend(backend, jobs: int = 2, **options) -> None:
    """Check a :class:`oodfs.contract.extensions.Backend` subclass (``options``: the values of its
    declared options to run it with): it runs every call exactly once with ``jobs`` workers and
    returns what the same calls return in this process, runs no call for no calls, and its declared
    options parse (an unknown one is refused with one line naming the valid ones)."""
    from oodfs.contract.extensions import Backend

    calls = [(i, 1000 + i) for i in range(6)]
    expected = sorted(backend_probe(*c)[:2] for c in calls)

    def metadata():
        _declared(backend)
        _ensure(isinstance(backend, type) and issubclass(backend, Backend), "not a Backend subclass")
        _ensure(isinstance(backend.commits_in_worker, bool), "commits_in_worker is not a bool")
        names = [o.name for o in backend.options]
        _ensure(len(set(names)) == len(names), f"an option is declared twice: {names}")
        _expect_oodfs_error(
            "parse_options with an unknown option", lambda: backend.parse_options({"no-such": "1"})
        )

    def same_results():
        got = list(backend().run(backend_probe, calls, jobs=jobs, **options))
        _ensure(len(got) == len(calls), f"{len(got)} results for {len(calls)} calls")
        _ensure(sorted(g[:2] for g in got) == expected, "the results differ from the same calls run here")

    def no_calls():
        _ensure(list(backend().run(backend_probe, [], jobs=jobs, **options)) == [], "results for no calls")

    _kind_check(
        f"backend {getattr(backend, 'name', backend)!r}",
        {
            "check_backend_metadata": metadata,
            "check_backend_results": same_results,
            "check_backend_no_calls": no_calls,
        },
    )


def hostile_results(folder) -> str:
    """Run a small benchmark (2 runs, 200 rows) whose method and setting names are
    :data:`HOSTILE_METHODS` and :data:`HOSTILE_SETTINGS` into ``folder``/out, in this process, and
    return that results folder: the leaderboard :func:`check_output_format` renders."""
    import contextlib
    import io
    import json
    import textwrap
    from pathlib import Path

    from oodfs.cli import main

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    plugin = folder / "hostile_names.py"
    plugin.write_text(_HOSTILE_PLUGIN % list(HOSTILE_METHODS))
    settings = "\n".join(
        f'[settings.{json.dumps(s)}]\nparams = {{ setting = "poly" }}' for s in HOSTILE_SETTINGS
    )
    methods = "[" + ", ".join(json.dumps(m) for m in ("ols", *HOSTILE_METHODS)) + "]"
    suite = folder / "hostile.toml"
    suite.write_text(
        textwrap.dedent(f"""
        environment = "synthetic"
        r_train = [2.5]
        r_test = [-2.0, 2.0]
        runs = 2
        n_train = 200
        n_val = 100
        n_test = 200
        k = 3
        methods = {methods}
        """)
        + settings
        + "\n"
    )
    out = folder / "a" / "b" / "out"
    out.parent.mkdir(parents=True, exist_ok=True)
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(
            ["bench", "--suite", str(suite), "--plugin", str(plugin), "--out", str(out), "--jobs", "1"]
        )
    if code != 0:
        raise RuntimeError(f"the hostile benchmark failed: {err.getvalue().strip()}")
    return str(out)


_HOSTILE_PLUGIN = """
import numpy as np
import oodfs

def selector(name):
    def fit(self, X, y, sw):
        return np.abs(np.corrcoef(X.T, y)[-1, :-1])
    cls = type("Hostile", (oodfs.Selector,), {"name": name, "__doc__": "a hostile name", "_fit_scores": fit})
    cls.__module__ = __name__
    return cls

NAMES = %r

@oodfs.hookimpl
def oodfs_selectors():
    return [selector(n) for n in NAMES]
"""


def _inert_markdown(text: str) -> None:
    """Rendered as CommonMark with tables: no tag but a report's, no link, no foreign image."""
    import re
    from html.parser import HTMLParser

    from markdown_it import MarkdownIt

    tags = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append((tag, dict(attrs)))

    Tags().feed(MarkdownIt("commonmark").enable("table").render(text))
    allowed = {
        "h1",
        "h2",
        "h3",
        "p",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "code",
        "strong",
        "ul",
        "li",
    }
    for tag, attrs in tags:
        _ensure(tag in allowed | {"img", "em"}, f"the markdown renders a <{tag}> element: {attrs}")
        if tag == "img":
            _ensure(
                re.fullmatch(r"(figures/)?[A-Za-z0-9_-][A-Za-z0-9._-]*", attrs.get("src", "")),
                f"image {attrs}",
            )
        _ensure(not any(k.startswith("on") or k == "href" for k in attrs), f"a link or handler: {attrs}")


def _inert_html(text: str) -> None:
    """No hostile name as markup: none of their tags, no handler attribute, no javascript: address."""
    from html.parser import HTMLParser

    found = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    Tags().feed(text)
    for tag, attrs in found:
        _ensure(not any(k.startswith("on") for k in attrs), f"a <{tag}> with an event handler: {attrs}")
        _ensure(
            not any("javascript:" in str(v).lower() for v in attrs.values()),
            f"a javascript: address: {attrs}",
        )
    for name in (*HOSTILE_METHODS, *HOSTILE_SETTINGS):
        for piece in ("<script>alert", "<img src=x"):
            _ensure(not (piece in name and piece in text), f"the name {name!r} is markup in the page")


def _inert_csv(text: str) -> None:
    """No cell that a spreadsheet reads as a formula (a number with a sign is a number)."""
    import csv
    import io

    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                try:
                    float(cell)
                except ValueError:
                    raise _Failed(f"the cell {cell!r} is a spreadsheet formula") from None


def _inert_latex(text: str) -> None:
    """No name's backslash, dollar or brace reaches LaTeX as a command or math."""
    _ensure("$\\alpha$" not in text, "a name's $...$ is math in the LaTeX")
    _ensure(
        "\\alpha" not in text.replace("\\textbackslash{}alpha", ""), "a name's \\alpha is a LaTeX command"
    )


_INERT = {"markdown": _inert_markdown, "html": _inert_html, "csv": _inert_csv, "latex": _inert_latex}


def check_output_format(fmt, leaderboard) -> None:
    """Check an :class:`oodfs.contract.extensions.OutputFormat`: rendered from ``leaderboard`` (a
    :class:`oodfs.report.leaderboard.Leaderboard`, best one of :func:`hostile_results`), the text
    holds every method name, no terminal escape or bidirectional override, and shows the names as
    text in its declared language (markdown renders no link, tag or foreign image; HTML has no
    handler or script from a name; CSV has no formula cell; LaTeX no command or math from a name)."""
    from oodfs.contract.extensions import FORMAT_LANGUAGES, OutputFormat

    def metadata():
        _declared(fmt)
        _ensure(isinstance(fmt, OutputFormat), "not an oodfs.contract.extensions.OutputFormat")
        _ensure(fmt.language in FORMAT_LANGUAGES, f"language {fmt.language!r} is none of {FORMAT_LANGUAGES}")

    def inert():
        text = fmt.render(leaderboard)
        _ensure(isinstance(text, str) and text.strip(), "render() returned no text")
        _ensure(
            "\x1b" not in text and "\u202e" not in text, "a terminal escape or bidi override reached the text"
        )
        _INERT.get(fmt.language, lambda t: None)(text)

    _kind_check(
        f"leaderboard format {getattr(fmt, 'name', fmt)!r}",
        {"check_format_metadata": metadata, "check_format_escaping": inert},
    )


def check_command(command) -> None:
    """Check an :class:`oodfs.contract.extensions.Command`: its name is a command name, it adds a
    parser of that name to a sub-parsers action, and ``oodfs NAME --help`` exits 0."""
    import argparse
    import contextlib
    import io
    import re

    from oodfs.contract.extensions import Command

    def metadata():
        _declared(command)
        _ensure(isinstance(command, Command), "not an oodfs.contract.extensions.Command")
        _ensure(re.fullmatch(r"[a-z][a-z0-9-]*", command.name), f"{command.name!r} is not a command name")
        _ensure(callable(command.run), "run is not callable")

    def parser():
        top = argparse.ArgumentParser(prog="oodfs")
        sub = top.add_subparsers(dest="command")
        command.add_parser(sub)
        _ensure(
            list(sub.choices) == [command.name],
            f"add_parser added {list(sub.choices)}, not [{command.name!r}]",
        )
        with contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                top.parse_args([command.name, "--help"])
            except SystemExit as exc:
                _ensure(exc.code in (0, None), f"`oodfs {command.name} --help` exited with {exc.code}")
        _ensure(command.name in out.getvalue(), "the help does not name the command")

    _kind_check(
        f"command {getattr(command, 'name', command)!r}",
        {"check_command_metadata": metadata, "check_command_parser": parser},
    )
