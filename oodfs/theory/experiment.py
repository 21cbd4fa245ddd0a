"""The theory experiment: its configuration, one task (a sample, every method's WLS fit) and the
whole run. What is run and why is in the package docstring (:mod:`oodfs.theory`)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from oodfs.contract.seeds import derive_seed
from oodfs.validation import OodfsError


@dataclass(frozen=True)
class Condition:
    """A synthetic environment (its parameters, ``layout_seed`` excluded) and the training bias rate r."""

    name: str
    env_params: dict
    r: float


@dataclass(frozen=True)
class Method:
    """WLS with the weights of ``weighter`` (None: OLS) at ``params``; ``gamma_read`` lists extra
    SRDO clip levels read from the same classifier; at most ``replicates`` replicates, n <= ``max_n``."""

    name: str
    weighter: str | None
    target: str
    params: dict = field(default_factory=dict)
    max_n: int | None = None
    replicates: int | None = None


#: the target laws of beta* (see the package docstring, oodfs.theory)
TARGETS = ("selected", "unselected", "selected_s", "product")

#: lam = exponent * ln r sets how far the selection reaches: 0.81, 1.62, 4.05 at r = 1.5 (the
#: paper's exponent 10 is the last), and the paper's r_train = 2.5 (lam = 9.16)
CONDITIONS = (
    Condition("exp2-r1.5", {"setting": "poly", "exponent": 2.0}, 1.5),
    Condition("exp4-r1.5", {"setting": "poly", "exponent": 4.0}, 1.5),
    Condition("exp10-r1.5", {"setting": "poly", "exponent": 10.0}, 1.5),
    Condition("exp10-r2.5", {"setting": "poly", "exponent": 10.0}, 2.5),
)

METHODS = (
    Method("ols", None, "selected"),
    Method("oracle_ipw", "oracle_ipw", "unselected"),
    Method("oracle_cond", "oracle_cond", "selected_s"),
    # DWR: ~1-2 s per fit at n = 5e4 (L-BFGS, 15-70 iterations); capped there, 6 replicates
    Method("dwr", "dwr", "product", max_n=50_000, replicates=6),
    # DWR run to convergence (tol 0): hundreds to thousands of iterations, ~2 s at n = 5000
    Method("dwr_converged", "dwr", "product", {"tol": 0.0, "max_iter": 5000}, max_n=5_000, replicates=4),
    # SRDO: 200 epochs over 2n rows (~7 s at n = 5000); capped there, 4 replicates; the
    # unclipped ratio is read from the same classifier
    Method("srdo", "srdo", "product", {"gamma": 10}, max_n=5_000, replicates=4),
    Method("srdo_unclipped", "srdo", "product", {"gamma": 1e12}, max_n=5_000, replicates=4),
)

N_GRID = (500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000)


@dataclass(frozen=True)
class TheoryConfig:
    conditions: tuple[Condition, ...] = CONDITIONS
    methods: tuple[Method, ...] = METHODS
    n_grid: tuple[int, ...] = N_GRID
    replicates: int = 30
    n_target: int = 1_000_000
    tail_n: int = 10_000
    seed: int = 0
    environment: str = "synthetic"

    def to_dict(self) -> dict:
        return json.loads(json.dumps(asdict(self)))


def quick_config(config: TheoryConfig | None = None) -> TheoryConfig:
    """A small version: 3 sizes, 5 replicates, smaller DWR/SRDO caps (158 s with 2 jobs on a 2-core
    machine under a load average of 9)."""
    config = config or TheoryConfig()
    methods = tuple(
        replace(m, max_n=min(m.max_n, 2000), replicates=min(m.replicates, 2)) if m.max_n else m
        for m in config.methods
    )
    return replace(config, n_grid=(500, 2000, 10_000), replicates=5, n_target=200_000, methods=methods)


# -- one task ---------------------------------------------------------------------------------------
def _env(config: TheoryConfig, cond: Condition, layout_seed=None):
    from oodfs.contract.registry import registry

    cls = registry().get("environment", config.environment)
    return cls(**cond.env_params, layout_seed=layout_seed)


def _weighted_corr(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    p = w / w.sum()
    Xc = X - p @ X
    cov = (Xc * p[:, None]).T @ Xc
    sd = np.sqrt(np.clip(np.diag(cov), 1e-300, None))
    corr = cov / np.outer(sd, sd)
    np.fill_diagonal(corr, 0.0)
    return corr


def _method_weights(methods, X, env, cond, seed) -> dict[str, tuple[np.ndarray, dict, float]]:
    """Weights (mean 1), extra diagnostics and fit seconds per method; methods on the same
    weighter and parameters but gamma share one SRDO classifier (``fit_grid``)."""
    from oodfs.contract.registry import registry

    out = {}
    groups: dict[tuple, list[Method]] = {}
    for m in methods:
        key = (m.weighter, tuple(sorted((k, repr(v)) for k, v in m.params.items() if k != "gamma")))
        groups.setdefault(key, []).append(m)
    for (weighter, _), ms in groups.items():
        t0 = time.perf_counter()
        if weighter is None:
            for m in ms:
                out[m.name] = (np.ones(X.shape[0]), {}, 0.0)
            continue
        cls = registry().get("weighter", weighter)
        if hasattr(cls, "for_environment"):  # an oracle: it knows the environment and r
            for m in ms:
                t0 = time.perf_counter()
                est = cls.for_environment(env, cond.r, **m.params).fit(X)
                out[m.name] = (est.weights_, dict(est.diagnostics_), time.perf_counter() - t0)
            continue
        if len(ms) == 1:
            est = cls(**ms[0].params, random_state=seed).fit(X)
            extra = {
                k: v
                for k, v in est.diagnostics_.items()
                if k not in ("ess", "ess_fraction", "max_weight", "max_abs_corr")
            }
            for attr in ("n_iter_", "converged_"):
                if hasattr(est, attr):
                    extra[attr.rstrip("_")] = float(getattr(est, attr))
            out[ms[0].name] = (est.weights_, extra, time.perf_counter() - t0)
        else:
            weights = cls.fit_grid(X, [dict(m.params) for m in ms], random_state=seed)
            seconds = (time.perf_counter() - t0) / len(ms)
            for m, w in zip(ms, weights):
                out[m.name] = (w, {}, seconds)
    return out


def run_task(config: TheoryConfig, cond: Condition, n: int, rep: int, targets: dict) -> list[dict]:
    """Every method that applies at (n, rep) on one training sample of ``cond``; rows of the results."""
    import warnings

    from threadpoolctl import threadpool_limits

    from oodfs.contract.api import WeightCollapseWarning, weight_diagnostics
    from oodfs.contract.wls import weighted_least_squares

    methods = [
        m
        for m in config.methods
        if (m.max_n is None or n <= m.max_n)
        and rep < (m.replicates if m.replicates is not None else config.replicates)
    ]
    if not methods:
        return []
    env = _env(config, cond, layout_seed=derive_seed(config.seed, cond.name, n, rep, "layout"))
    X, y = env.sample(cond.r, n, derive_seed(config.seed, cond.name, n, rep, "sample"))
    canonical = targets["names"]
    order = [env.feature_names.index(name) for name in canonical]  # layout column of each canonical feature
    Xc = X[:, order]
    d_s = len(targets["stable"])
    f = env.f(X)
    rows = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", WeightCollapseWarning)  # low ESS is measured, not an error here
        weights = _method_weights(methods, X, env, cond, derive_seed(config.seed, cond.name, n, rep, "fit"))
        for m in methods:
            w, extra, seconds = weights[m.name]
            if m.weighter is not None:  # rows tied at the extremes: SRDO's clipped weights
                for what, v in (("frac_at_min", w.min()), ("frac_at_max", w.max())):
                    tied = np.mean(w == v)
                    extra[what] = float(tied) if tied * n > 1 else 0.0
            beta = weighted_least_squares(Xc, y, w)
            star = np.asarray(targets[m.target])
            diag = weight_diagnostics(Xc, w)
            corr = np.abs(_weighted_corr(Xc, w))
            # the part of f(S) = E[Y | X] that is not linear in S under the weights: WLS gives V a
            # non-zero coefficient through its weighted covariance with it (package docstring, oodfs.theory)
            p = w / w.sum()
            S_c = Xc[:, :d_s] - p @ Xc[:, :d_s]
            resid = f - p @ f - S_c @ weighted_least_squares(Xc[:, :d_s], f, w)
            corr_r = np.abs(_weighted_corr(np.column_stack([Xc[:, d_s:], resid]), w)[-1, :-1])
            rows.append(
                {
                    "condition": cond.name,
                    "r": cond.r,
                    "n": n,
                    "replicate": rep,
                    "method": m.name,
                    "target": m.target,
                    "beta_v": float(np.linalg.norm(beta[d_s:])),
                    "err_s": float(np.linalg.norm(beta[:d_s] - star[:d_s])),
                    "err": float(np.linalg.norm(beta - star)),
                    "ess": diag["ess"],
                    "ess_fraction": diag["ess_fraction"],
                    "max_weight": diag["max_weight"],
                    "max_abs_corr": diag["max_abs_corr"],
                    "max_corr_v": float(corr[d_s:, :].max()),
                    "max_corr_vr": float(corr_r.max()),
                    "fit_seconds": seconds,
                    **{f"beta_{name}": float(b) for name, b in zip(canonical, beta)},
                    **{f"diag_{k}": float(v) for k, v in extra.items()},
                }
            )
    return rows


def target_coefficients(config: TheoryConfig, cond: Condition) -> dict:
    """beta* of every target law, on ``n_target`` direct draws of that law (package
    docstring, oodfs.theory)."""
    from oodfs.contract.wls import weighted_least_squares

    env = _env(config, cond)
    names, stable = list(env.feature_names), list(env.stable_set)
    n = config.n_target
    Xs, _ = env.sample(cond.r, n, derive_seed(config.seed, cond.name, "target", "selected"))
    Xu, _ = env.sample_unselected(n, derive_seed(config.seed, cond.name, "target", "unselected"))
    rng = np.random.default_rng(derive_seed(config.seed, cond.name, "target", "product"))
    s_cols = np.isin(np.arange(len(names)), stable)
    laws = {
        "selected": Xs,
        "unselected": Xu,
        "selected_s": np.where(s_cols, Xs, Xu),  # selected S, V from the law before selection
        "product": rng.permuted(Xs, axis=0),  # each column shuffled on its own
    }
    out = {"condition": cond.name, "names": names, "stable": stable}
    for law, X in laws.items():
        out[law] = weighted_least_squares(X, env.f(X)).tolist()
    return out


def check_config(config: TheoryConfig) -> None:
    from oodfs.contract.registry import registry
    from oodfs.validation import check_positive_int

    reg = registry()
    reg.get("environment", config.environment)
    for m in config.methods:
        if m.weighter is not None:
            reg.get("weighter", m.weighter)
        if m.target not in TARGETS:
            raise OodfsError(
                f"method {m.name!r}: unknown target law {m.target!r}; valid: {', '.join(TARGETS)}"
            )
    if not config.conditions or not config.methods:
        raise OodfsError("the theory run needs at least one condition and one method")
    if not config.n_grid:
        raise OodfsError("n_grid is empty")
    for n in config.n_grid:
        check_positive_int(n, "every n of n_grid")
        if n < 20:
            raise OodfsError(f"every n of n_grid must be >= 20 (WLS on up to 15 features), got {n}")
    check_positive_int(config.replicates, "replicates")
    check_positive_int(config.n_target, "n_target")
    for cond in config.conditions:
        _env(config, cond).check_env(cond.r)
