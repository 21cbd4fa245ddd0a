"""The synthetic bias-rate environments of Xu et al. (ICML 2022), generalised.

Data process (the paper's, with its dimensions as parameters)
-------------------------------------------------------------
Z_1..Z_{d_s+1}, V_1..V_{d_v} i.i.d. N(0, 1); S_i = 0.8 Z_i + 0.2 Z_{i+1}; every feature clipped to
[-clip, clip]. Y = f(S) + N(0, noise_sd^2) with f = beta.S + S1 S2 S3 / 4 (``poly``) or beta.S + a
frozen random 3-3-3-1 ReLU MLP of S1..S3 (``mlp``). beta is the paper's (1/3, -2/3, 1, -1/3, 2/3)
for d_s = 5; for other d_s it repeats that pattern cyclically (beta_i = paper beta_{(i-1) mod 5 + 1},
so d_s = 3 keeps the first three entries and d_s = 7 appends 1/3, -2/3) -- the paper defines only
d_s = 5, and the cyclic rule keeps every coefficient's size and sign among the paper's values.
d_s >= 3 because both outcomes use S1..S3. The environment with bias rate r (|r| > 1) keeps a
candidate row with probability prod_{j in spurious} |r|^(-exponent |f(S) - sgn(r) V_j|) (the
paper: spurious = {V4, V5}, exponent 10). ``spurious`` may be any subset of V1..V_{d_v}, named,
so it means the same features whatever the column layout; empty = no selection.

Column layout: ``layout_seed=None`` gives the paper's fixed order (S1..S_{d_s}, V1..V_{d_v}); an
integer places the features at columns permuted by that seed, so that a method that breaks ties
by column order gains nothing from S being first. ``feature_names`` and ``stable_set`` follow.

Exact sampler -- why it is the selected distribution
----------------------------------------------------
Write s = sgn(r), lam = exponent * ln|r|, cl = clip, and a(f, v) = exp(-lam |f - v|). A candidate
x = (S, V) from p(s) p(v_1) ... p(v_{d_v}) is kept with probability prod_{j in spurious} a(f(S), s V_j),
so the selected density is proportional to

    p(S) prod_{j in spurious} [p(v_j) a(f(S), s v_j)]  *  prod_{j not spurious} p(v_j).

Each V_j is a clipped N(0, 1), independent of S and of the other V's (whichever V's are spurious):
density phi on (-cl, cl) plus atoms of mass Phi(-cl) at +-cl. That law is symmetric, so with
W_j = s V_j the factors are p(w_j) a(f, w_j) whatever the sign of r. Hence:

1. S has marginal p(S) c(f(S))^k, k = len(spurious), c(f) = E[a(f, V)]. We draw S from p and
   accept with probability (c(f) / C)^k, C >= sup c (rejection sampling of S alone: acceptance
   57-61% for 1.3 <= |r| <= 3, against 4.6% to 0.3% for plain rejection of whole rows).
2. Given S, each spurious W_j is independently p(w) a(f, w) / c(f). With m = clip(f, -cl, cl),
   phi(w) e^{+-lam w} = e^{lam^2/2} phi(w -+ lam), so this is a mixture of four pieces:
     atom -cl:  Phi(-cl) e^{-lam |f + cl|}
     (-cl, m):  e^{-lam f + lam^2/2} [Phi(m - lam) - Phi(-cl - lam)],   N(+lam, 1) truncated there
     (m, cl):   e^{+lam f + lam^2/2} [Phi(-m - lam) - Phi(-cl - lam)],  N(-lam, 1) truncated there
     atom +cl:  Phi(-cl) e^{-lam |f - cl|}
   and c(f) is their sum. Everything is computed in log space (log_ndtr, ndtri_exp): the normal
   pieces sit ~lam standard deviations into a tail.
3. V_j = s W_j for the spurious columns; the other V columns are plain clipped normals.

The bound C: |d log c / df| <= lam (as |da/df| <= lam a), so the maximum of c over a grid of
[-cl, cl] with spacing h, times e^{lam h / 2}, bounds c on [-cl, cl]; outside it c decreases
(every v lies on one side of f). tests/test_synthetic.py checks this sampler against plain
rejection sampling.

The ``svi`` setting (Yu et al., AAAI 2023, the "collinearity" mode of their code)
--------------------------------------------------------------------------------
S ~ N(0, Sigma_s) and V ~ N(0, Sigma_v), each equicorrelated (``corr_s``, default 0.9, among the
S; ``corr_v``, default 0.1, among the V), S independent of V; f = beta.S + S1 S2 S3 (the
misspecification term at full strength, not / 4). The selection is the same mechanism with the
reference's numbers given by the suite (``spurious = ["V5"]``, ``exponent = 5``, ``noise_sd`` =
sqrt(0.3), ``clip = inf``: the reference does not clip). Because the V's are correlated, the exact
sampler's factorisation above does not hold: for this setting ``exact`` draws by plain rejection
of whole rows, which is exact too (it is the reference's own generator, which keeps selected
candidates until it has n rows). The oracle weights are not defined for it.

The same quantities give the oracle weights (:mod:`oodfs_plugins.environments.oracle`):
Pr(select | x; r) and E_V[Pr(select | f, V)] = c(f)^k.
"""

from __future__ import annotations

import numbers
from functools import lru_cache

import numpy as np
from scipy.special import log_ndtr, ndtri_exp

import oodfs
from oodfs.validation import OodfsError, check_bias_rate, check_positive_int, check_X

#: the paper's stable coefficients (d_s = 5); other d_s repeat them cyclically (module docstring)
PAPER_BETA = np.array([1 / 3, -2 / 3, 1, -1 / 3, 2 / 3])
BETA = PAPER_BETA  # kept for callers of the fixed paper process


def stable_beta(d_s: int) -> np.ndarray:
    """beta for d_s stable features: the paper's five coefficients repeated cyclically."""
    return PAPER_BETA[np.arange(d_s) % PAPER_BETA.size]


def _logsumexp(a):
    """log(sum(exp(a))) over the last axis (scipy's logsumexp is ~5x slower on small arrays)."""
    mx = a.max(axis=-1, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    return (mx + np.log(np.exp(a - mx).sum(axis=-1, keepdims=True)))[..., 0]


def _log_phi_diff(a, b):
    """log(Phi(b) - Phi(a)) for a <= b, accurate in the far left tail (-inf when a == b)."""
    la, lb = log_ndtr(a), log_ndtr(b)
    with np.errstate(divide="ignore"):
        return lb + np.log(-np.expm1(la - lb))


def _log_pieces(f, lam, cl):
    """Log masses of the four pieces of p(w) a(f, w) (columns: atom -cl, (-cl, m), (m, cl), atom +cl)."""
    f = np.asarray(f, dtype=float)
    m = np.clip(f, -cl, cl)
    log_atom = log_ndtr(-cl)
    return np.stack(
        [
            log_atom - lam * np.abs(f + cl),
            -lam * f + lam**2 / 2 + _log_phi_diff(-cl - lam, m - lam),
            lam * f + lam**2 / 2 + _log_phi_diff(-cl - lam, -m - lam),
            log_atom - lam * np.abs(f - cl),
        ],
        axis=-1,
    )


def _log_c(f, lam, cl):
    """log c(f) = log E[exp(-lam |f - V|)], V the clipped standard normal."""
    return _logsumexp(_log_pieces(f, lam, cl))


@lru_cache(maxsize=256)
def _log_c_bound(lam: float, cl: float) -> float:
    """log C with C >= sup_f c(f) (grid maximum plus the log-Lipschitz margin lam * h / 2)."""
    grid, h = np.linspace(-cl, cl, 4001, retstep=True)
    return float(_log_c(grid, lam, cl).max() + lam * h / 2)


def _truncnorm_lam(lam, cl, b, rng):
    """Draws from N(lam, 1) truncated to (-cl, b), one per entry of b, by inverse CDF in log space."""
    log_pa, log_pb = log_ndtr(-cl - lam), log_ndtr(b - lam)
    u = rng.random(np.shape(b))
    with np.errstate(divide="ignore"):
        log_p = np.logaddexp(np.log1p(-u) + log_pa, np.log(u) + log_pb)
    return np.clip(lam + ndtri_exp(log_p), -cl, b)


def _sample_w(f, lam, cl, k, rng):
    """k independent draws of W ~ p(w) exp(-lam |f - w|) per entry of f, shape (len(f), k)."""
    log_w = _log_pieces(f, lam, cl)
    cum = np.cumsum(np.exp(log_w - _logsumexp(log_w)[:, None]), axis=1)[:, None, :-1]
    piece = (rng.random((len(f), k))[:, :, None] > cum).sum(axis=2)
    m = np.broadcast_to(np.clip(f, -cl, cl)[:, None], piece.shape)
    w = np.where(piece == 0, -cl, cl).astype(float)
    lo, hi = piece == 1, piece == 2
    w[lo] = _truncnorm_lam(lam, cl, m[lo], rng)
    w[hi] = -_truncnorm_lam(lam, cl, -m[hi], rng)
    return w


def _is_int(value) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool)


class Synthetic(oodfs.Environment):
    """Xu et al. (ICML 2022) synthetic data: Y from S1..S5, V4 and V5 spuriously tied to Y by a bias rate r.

    ``sample(r, n, seed)`` returns X (features S1..S{d_s}, V1..V{d_v}; columns in the paper's
    order, or permuted by ``layout_seed``) and y for bias rate r (|r| > 1): a candidate is kept
    with probability prod_{j in spurious} |r|^(-exponent |f(S) - sgn(r) V_j|).
    ``setting`` picks f: ``poly`` (beta.S + S1 S2 S3 / 4) or ``mlp`` (beta.S + a random frozen
    3-3-3-1 ReLU MLP of S1..S3 drawn from ``mlp_seed``). ``sampler``: ``exact`` (i.i.d. draws from
    the selected distribution, fast; see the module docstring), ``pool`` (the authors' generator:
    100 n candidates, n weighted draws with replacement) or ``rejection`` (plain rejection
    sampling, exact but slow; for reference). ``d_s`` (>= 3), ``d_v`` (>= 1): numbers of stable
    and other features; ``spurious``: names of the V features the selection acts on (any subset
    of V1..V{d_v}; the paper's V4, V5 by default); ``exponent``: the paper's 10; ``layout_seed``:
    None for the paper's fixed column order, an integer for a column order drawn from it.
    ``svi`` (Yu et al. 2023's "collinearity" data): f = beta.S + S1 S2 S3, S and V equicorrelated
    normals (``corr_s``, ``corr_v``; used by this setting only), drawn by rejection.
    """

    name = "synthetic"
    settings = ("mlp", "poly", "svi")
    example_envs = (2.5, -1.5)  # for the conformance kit: bias rates with |r| > 1
    invalid_envs = (0.5, 1.0, -1.0)
    samplers = ("exact", "pool", "rejection")

    def __init__(
        self,
        setting="poly",
        sampler="exact",
        mlp_seed=0,
        spurious=("V4", "V5"),
        exponent=10.0,
        noise_sd=0.3,
        clip=2.0,
        d_s=5,
        d_v=5,
        layout_seed=None,
        corr_s=0.9,
        corr_v=0.1,
    ):
        self.setting = setting
        self.sampler = sampler
        self.mlp_seed = mlp_seed
        self.spurious = spurious
        self.exponent = exponent
        self.noise_sd = noise_sd
        self.clip = clip
        self.d_s = d_s
        self.d_v = d_v
        self.layout_seed = layout_seed
        self.corr_s = corr_s
        self.corr_v = corr_v

    # -- layout --------------------------------------------------------------------------
    def _canonical_names(self) -> list[str]:
        return [f"S{i}" for i in range(1, self.d_s + 1)] + [f"V{i}" for i in range(1, self.d_v + 1)]

    def _order(self) -> np.ndarray:
        """order[j] = the canonical index (S1..S{d_s}, V1..V{d_v}) of the feature in column j."""
        self._check_layout()
        d = self.d_s + self.d_v
        if self.layout_seed is None:
            return np.arange(d)
        return np.random.default_rng(int(self.layout_seed)).permutation(d)

    def column_of(self, name: str) -> int:
        """The column that holds feature ``name`` (e.g. "V4") in this environment's layout."""
        names = self.feature_names
        if name not in names:
            raise OodfsError(
                f"unknown feature {name!r} for environment 'synthetic'; "
                f"valid: {', '.join(self._canonical_names())}"
            )
        return names.index(name)

    @property
    def stable_set(self) -> tuple[int, ...]:
        return tuple(int(j) for j in np.nonzero(self._order() < self.d_s)[0])

    @property
    def true_coef(self) -> np.ndarray:
        """beta of f's linear part in this layout's columns, 0 for the V (the misspecification
        term is not part of it, as in the SVI code's beta errors)."""
        order = self._order()
        beta = np.zeros(order.size)
        stable = order < self.d_s
        beta[stable] = stable_beta(self.d_s)[order[stable]]
        return beta

    @property
    def feature_names(self) -> list[str]:
        canonical = self._canonical_names()
        return [canonical[i] for i in self._order()]

    # -- validation ----------------------------------------------------------------------
    def _check_layout(self) -> None:
        for what, lowest in (("d_s", 3), ("d_v", 1)):
            value = getattr(self, what)
            if not _is_int(value) or value < lowest:
                why = " (both outcomes use S1..S3)" if what == "d_s" else ""
                raise OodfsError(f"{what} must be an integer >= {lowest}{why}, got {value!r}")
        seed = self.layout_seed
        if seed is not None and (not _is_int(seed) or seed < 0):
            raise OodfsError(
                f"layout_seed must be None (the paper's column order) or an integer >= 0, got {seed!r}"
            )

    def _spurious_index(self) -> list[int]:
        """Indices 0..d_v-1 (V1 = 0) of the spurious features."""
        self._check_layout()
        valid = [f"V{i}" for i in range(1, self.d_v + 1)]
        sp = self.spurious
        if isinstance(sp, str) or np.ndim(sp) != 1 or not all(isinstance(v, str) for v in sp):
            raise OodfsError(f"spurious must be a list of V feature names such as ['V4', 'V5'], got {sp!r}")
        for v in sp:
            if v not in valid:
                raise OodfsError(
                    f"spurious names {v!r}, not a non-stable feature of this environment; "
                    f"valid: {', '.join(valid)}"
                )
        if len(set(sp)) != len(sp):
            raise OodfsError(f"spurious lists a feature twice: {list(sp)!r}")
        return [valid.index(v) for v in sp]

    def _check_params(self) -> None:
        if self.setting not in self.settings:
            raise OodfsError(
                f"unknown setting {self.setting!r} for environment 'synthetic'; "
                f"valid: {', '.join(self.settings)}"
            )
        if self.sampler not in self.samplers:
            raise OodfsError(
                f"unknown sampler {self.sampler!r} for environment 'synthetic'; "
                f"valid: {', '.join(self.samplers)}"
            )
        self._spurious_index()  # checks d_s, d_v, layout_seed too
        for what, lowest in (("exponent", "positive"), ("clip", "positive"), ("noise_sd", "non-negative")):
            value = getattr(self, what)
            if what == "clip" and self.setting == "svi" and value == np.inf:
                continue  # the svi setting's reference does not clip
            ok = (
                isinstance(value, numbers.Real)
                and np.isfinite(value)
                and (value > 0 or (value == 0 and lowest == "non-negative"))
            )
            if not ok:
                raise OodfsError(f"{what} must be a finite {lowest} number, got {value!r}")
        if self.setting == "svi":
            for what, d in (("corr_s", self.d_s), ("corr_v", self.d_v)):
                value = getattr(self, what)
                low = -1.0 / (d - 1) if d > 1 else -1.0
                ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and low < value < 1
                if not ok:
                    raise OodfsError(
                        f"{what} must be a number in ({low:g}, 1) (an equicorrelation of {d} features), "
                        f"got {value!r}"
                    )

    # -- the outcome ---------------------------------------------------------------------
    def mlp_params(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The frozen MLP as (weight (out, in), bias) per layer, every entry U(-1, 1) from ``mlp_seed``."""
        rng = np.random.default_rng(self.mlp_seed)
        return [(rng.uniform(-1, 1, (o, i)), rng.uniform(-1, 1, o)) for i, o in ((3, 3), (3, 3), (3, 1))]

    def _f(self, S: np.ndarray) -> np.ndarray:
        """f from the stable features in canonical order (S1..S{d_s})."""
        linear = S @ stable_beta(S.shape[1])
        if self.setting == "svi":
            return linear + S[:, 0] * S[:, 1] * S[:, 2]
        if self.setting == "poly":
            return linear + S[:, 0] * S[:, 1] * S[:, 2] / 4
        h = S[:, :3]
        layers = self.mlp_params()
        for k, (W, b) in enumerate(layers):
            h = h @ W.T + b
            if k < len(layers) - 1:
                h = np.maximum(h, 0.0)
        return linear + h[:, 0]

    def _outcome(self, S: np.ndarray, rng) -> np.ndarray:
        """Y for stable features S (canonical order): f(S) plus N(0, noise_sd^2) noise."""
        return self._f(S) + rng.normal(0.0, self.noise_sd, S.shape[0])

    def _split(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(S, V) in canonical order from rows of X in this environment's layout."""
        self._check_params()
        X = check_X(X)
        d = self.d_s + self.d_v
        if X.shape[1] != d:
            raise OodfsError(
                f"X has {X.shape[1]} columns; this synthetic environment has {d} ({self.d_s} stable + "
                f"{self.d_v} other)"
            )
        canonical = X[:, np.argsort(self._order())]
        return canonical[:, : self.d_s], canonical[:, self.d_s :]

    def f(self, X) -> np.ndarray:
        """The noiseless outcome f(S) for rows of X (in this environment's column layout)."""
        return self._f(self._split(X)[0])

    def check_env(self, env) -> float:
        """A bias rate is a valid environment id when it is a finite number with |r| > 1."""
        return check_bias_rate(env)

    # -- the selection mechanism ---------------------------------------------------------
    def log_select_prob(self, X, env) -> np.ndarray:
        """log Pr(select | x; r) for rows of X (this environment's layout) in the environment
        with bias rate ``env``: -exponent ln|r| sum_{j in spurious} |f(S) - sgn(r) V_j|."""
        r = self.check_env(env)
        S, V = self._split(X)
        return self._log_select(self._f(S), V, r)

    def log_mean_select_prob(self, X, env) -> np.ndarray:
        """log E_V[Pr(select | f(S), V; r)] for rows of X, V drawn from its unselected law: k log c(f(S))
        (module docstring). The selected S has density p(S) times this, divided by its mean."""
        r = self.check_env(env)
        S, _ = self._split(X)
        if self.setting == "svi":
            raise OodfsError("oracle selection probability is not defined for setting 'svi' (correlated V)")
        k = len(self._spurious_index())
        if k == 0:
            return np.zeros(S.shape[0])
        return k * _log_c(self._f(S), self.exponent * np.log(abs(r)), float(self.clip))

    # -- sampling ------------------------------------------------------------------------
    def _draw_collinear(self, m: int, d: int, rho: float, rng) -> np.ndarray:
        """m rows of N(0, Sigma), Sigma equicorrelated (1 on the diagonal, rho elsewhere), clipped."""
        sigma = np.full((d, d), float(rho))
        np.fill_diagonal(sigma, 1.0)
        Z = rng.standard_normal((m, d)) @ np.linalg.cholesky(sigma).T
        return np.clip(Z, -self.clip, self.clip)

    def _draw_S(self, m: int, rng) -> np.ndarray:
        if self.setting == "svi":
            return self._draw_collinear(m, self.d_s, self.corr_s, rng)
        Z = rng.standard_normal((m, self.d_s + 1))
        return np.clip(0.8 * Z[:, :-1] + 0.2 * Z[:, 1:], -self.clip, self.clip)

    def _draw_V(self, m: int, rng) -> np.ndarray:
        if self.setting == "svi":
            return self._draw_collinear(m, self.d_v, self.corr_v, rng)
        return np.clip(rng.standard_normal((m, self.d_v)), -self.clip, self.clip)

    def _log_select(self, f, V, r) -> np.ndarray:
        """log Pr(select | x; r) for candidate rows (f = f(S), V the V columns in canonical order)."""
        d = np.abs(f[:, None] - np.sign(r) * V[:, self._spurious_index()])
        return -self.exponent * np.log(abs(r)) * d.sum(axis=1)

    def sample(self, env, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """(X, y) of n rows from the environment with bias rate ``env`` (|r| > 1), deterministic per seed."""
        self._check_params()
        r = self.check_env(env)
        n = check_positive_int(n, "n")
        rng = np.random.default_rng(seed)
        X = {"exact": self._sample_exact, "pool": self._sample_pool, "rejection": self._sample_rejection}[
            self.sampler
        ](r, n, rng)
        y = self._outcome(X[:, : self.d_s], rng)  # noise after selection
        return X[:, self._order()], y

    def sample_unselected(self, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """(X, y) of n rows before selection (S, V independent), in this environment's layout:
        the law that the inverse-selection-probability oracle weights restore."""
        self._check_params()
        n = check_positive_int(n, "n")
        rng = np.random.default_rng(seed)
        S = self._draw_S(n, rng)
        X = np.hstack([S, self._draw_V(n, rng)])
        y = self._outcome(S, rng)
        return X[:, self._order()], y

    @staticmethod
    def _accept_until(n: int, draw, guess: float) -> np.ndarray:
        """Concatenate accepted rows of ``draw(m) -> accepted rows`` batches until there are n.
        Batch size follows the acceptance rate seen so far, so few batches are needed."""
        parts, have, tried = [], 0, 0
        while have < n:
            rate = max(have / tried if have else guess, 1e-4)
            m = min(int(1.2 * (n - have) / rate) + 100, 5_000_000)
            rows = draw(m)
            parts.append(rows)
            have += len(rows)
            tried += m
        return np.concatenate(parts)[:n]

    def _sample_exact(self, r: float, n: int, rng) -> np.ndarray:
        """Rows in canonical order (S1..S{d_s}, V1..V{d_v})."""
        if self.setting == "svi":  # correlated V: the factorisation does not hold (module docstring)
            return self._sample_rejection(r, n, rng)
        spurious = self._spurious_index()
        k, cl = len(spurious), float(self.clip)
        lam = self.exponent * np.log(abs(r))
        log_C = _log_c_bound(float(lam), cl)

        def draw(m):  # step 1: S from p(S) c(f)^k by rejection on S alone
            S = self._draw_S(m, rng)
            log_acc = k * (_log_c(self._f(S), lam, cl) - log_C)
            return S[np.log(rng.random(m)) < log_acc]

        S = self._accept_until(n, draw, guess=0.5)
        V = self._draw_V(n, rng)
        if k:
            # steps 2-3: the spurious V_j given f, independent of each other
            V[:, spurious] = np.sign(r) * _sample_w(self._f(S), lam, cl, k, rng)
        return np.hstack([S, V])

    def _sample_rejection(self, r: float, n: int, rng) -> np.ndarray:
        def draw(m):
            S, V = self._draw_S(m, rng), self._draw_V(m, rng)
            keep = np.log(rng.random(m)) < self._log_select(self._f(S), V, r)
            return np.hstack([S[keep], V[keep]])

        return self._accept_until(n, draw, guess=0.01)

    def _sample_pool(self, r: float, n: int, rng) -> np.ndarray:
        m = 100 * n  # the authors' pool size
        S, V = self._draw_S(m, rng), self._draw_V(m, rng)
        log_p = self._log_select(self._f(S), V, r)
        p = np.exp(log_p - log_p.max())
        idx = rng.choice(m, size=n, replace=True, p=p / p.sum())
        return np.hstack([S[idx], V[idx]])


#: the Monte-Carlo mean of f that centres the binary outcome's logit: draws, seed, bias rate
CENTER_DRAWS, CENTER_SEED, CENTER_BIAS_RATE = 200_000, 0, 2.0


@lru_cache(maxsize=64)
def _f_mean(params: tuple) -> float:
    """E[f(S)] in the selected environment of bias rate CENTER_BIAS_RATE (CENTER_DRAWS exact
    draws seeded CENTER_SEED)."""
    env = Synthetic(**dict(params))
    X = env._sample_exact(CENTER_BIAS_RATE, CENTER_DRAWS, np.random.default_rng(CENTER_SEED))
    return float(env._f(X[:, : env.d_s]).mean())


class SyntheticBinary(Synthetic):
    """Xu et al.'s synthetic process with a binary outcome: Y ~ Bernoulli(sigmoid(logit_scale (f(S) - E f))).

    The same features, settings (``mlp``, ``poly``), bias-rate selection (it acts on f(S), the
    logit's stable part, exactly as in :class:`Synthetic`) and stable set S1..S{d_s}; only the
    outcome differs: ``P(Y = 1 | S) = sigmoid(logit_scale * (f(S) - c))``, c the mean of f in
    the environment of bias rate 2 (a Monte-Carlo mean of 200 000 exact draws, seed 0: the
    selection pulls f towards the V's, so the unselected mean would unbalance the classes of
    the ``mlp`` setting), so that the classes are about balanced in every environment whatever
    the MLP's offset. Y is coded 0.0 / 1.0; there is no ``noise_sd`` (the Bernoulli draw is the
    noise). ``logit_scale`` (default 4) sets how hard the task is: docs/PROTOCOL.md, "Binary
    targets", has the measured Bayes accuracy per scale.
    """

    name = "synthetic_binary"
    task = "binary"
    settings = ("mlp", "poly")

    def __init__(
        self,
        setting="poly",
        sampler="exact",
        mlp_seed=0,
        spurious=("V4", "V5"),
        exponent=10.0,
        logit_scale=4.0,
        clip=2.0,
        d_s=5,
        d_v=5,
        layout_seed=None,
    ):
        super().__init__(
            setting=setting,
            sampler=sampler,
            mlp_seed=mlp_seed,
            spurious=spurious,
            exponent=exponent,
            clip=clip,
            d_s=d_s,
            d_v=d_v,
            layout_seed=layout_seed,
        )
        self.logit_scale = logit_scale

    def _check_params(self) -> None:
        if self.setting not in self.settings:
            raise OodfsError(
                f"unknown setting {self.setting!r} for environment 'synthetic_binary'; "
                f"valid: {', '.join(self.settings)}"
            )
        super()._check_params()
        scale = self.logit_scale
        if not (
            isinstance(scale, numbers.Real)
            and not isinstance(scale, bool)
            and np.isfinite(scale)
            and scale > 0
        ):
            raise OodfsError(f"logit_scale must be a finite positive number, got {scale!r}")

    def logit(self, X) -> np.ndarray:
        """log-odds of Y = 1 for rows of X (this environment's layout)."""
        return self.logit_scale * (self.f(X) - self.f_center())

    def f_center(self) -> float:
        """c, the mean of f(S) under the unselected law (estimated once per setting)."""
        return _f_mean(
            (("setting", self.setting), ("mlp_seed", self.mlp_seed), ("clip", self.clip), ("d_s", self.d_s))
        )

    def _outcome(self, S: np.ndarray, rng) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(-self.logit_scale * (self._f(S) - self.f_center())))
        return (rng.random(S.shape[0]) < p).astype(float)
