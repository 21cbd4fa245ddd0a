"""The kit's plumbing: plugins and checks, the data every method check fits on, running the checks
of a kind (CONTRIBUTING.md, "Writing a plugin")."""

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
)
from oodfs.validation import OodfsError

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


# -- the kinds that are declarations (or, for backends, a class) rather than estimators ----------------
# Each has one check function that runs every check of its kind and raises one AssertionError naming the
# plugin, the check and why.
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
