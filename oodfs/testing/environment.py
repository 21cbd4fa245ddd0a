"""The checks of an environment (oodfs.testing.check_environment; CONTRIBUTING.md, "Writing a plugin")."""

from __future__ import annotations

import numpy as np

from oodfs.testing._core import (
    _check,
    _check_metadata,
    _ensure,
    _expect_oodfs_error,
    _Failed,
    _first_line,
    _init_params,
    _Plugin,
    _run,
    _same,
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


def check_environment(
    environment, envs=None, invalid_envs=None, skip: dict[str, str] | None = None
) -> dict[str, str]:
    """Run every environment check on an Environment class (or instance). ``envs``: valid
    environment ids to sample (default: the class's ``example_envs``); ``invalid_envs``: ids
    ``check_env`` must reject (default: ``invalid_envs``)."""
    return _run("environment", environment, skip, envs=envs, invalid_envs=invalid_envs)
