"""The paper's generator with a Markov boundary larger than the minimal stable set
(docs/PROTOCOL.md, section 12).

On top of the ``synthetic`` environment's S1..S5, V1..V5 and its bias-rate selection (drawn by
that environment, with noise_sd 0), three features are added:

    H ~ N(0, 1) clipped to [-clip, clip]              a variance-only parent of Y
    Y = f(S) + g(H) e,  g(h) = noise_sd + hetero |h|,  e ~ N(0, 1)
    W ~ N(0, 1) clipped                                the child's other parent (a spouse of Y)
    C = sgn(r) child_coef Y + W + N(0, child_sd^2)     a child of Y whose mechanism flips with sgn(r)

The seed paper's example after Strobl and Visweswaran is H: Y's mean does not depend on it, its
variance does, so H is in the Markov boundary and useless for the mean. The child C predicts Y
well in every environment, but its coefficient's sign is that of the bias rate, so a model that
uses it fails where the test environments' bias has the other sign. Hence

    minimal stable set = {S1..S5}       (``stable_set``: E[Y | S] = f(S) in every environment;
                                         the flipping child breaks covariate shift on purpose,
                                         docs/PROTOCOL.md section 12)
    Markov boundary    = {S1..S5, H, C, W}   (``markov_boundary``)

V1..V5 are outside the boundary: given S, the selection leaves them independent of the noise.
Feature names S1..S5, V1..V5, H, C, W; ``layout_seed`` permutes all columns as ``synthetic`` does.
"""

from __future__ import annotations

import numbers

import numpy as np

import oodfs
from oodfs.validation import OodfsError, check_positive_int

from .synthetic import Synthetic

EXTRA = ("H", "C", "W")


class MarkovBoundaryEnv(oodfs.Environment):
    """The paper's generator plus a variance-only parent H of Y, a child C flipping with sgn(r), and W."""

    name = "markov_boundary"
    example_envs = (2.5, -1.5)
    invalid_envs = (0.5, 1.0, -1.0)

    def __init__(
        self,
        setting="poly",
        mlp_seed=0,
        noise_sd=0.3,
        hetero=0.5,
        child_coef=1.0,
        child_sd=1.0,
        clip=2.0,
        layout_seed=None,
    ):
        self.setting = setting
        self.mlp_seed = mlp_seed
        self.noise_sd = noise_sd
        self.hetero = hetero
        self.child_coef = child_coef
        self.child_sd = child_sd
        self.clip = clip
        self.layout_seed = layout_seed

    def _base(self) -> Synthetic:
        if self.setting not in ("poly", "mlp"):
            raise OodfsError(
                f"unknown setting {self.setting!r} for environment 'markov_boundary'; valid: mlp, poly"
            )
        for what in ("noise_sd", "hetero", "child_coef", "child_sd", "clip"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not np.isfinite(v) or v < 0:
                raise OodfsError(f"{what} must be a finite number >= 0, got {v!r}")
        if self.clip <= 0:
            raise OodfsError(f"clip must be positive, got {self.clip!r}")
        return Synthetic(setting=self.setting, mlp_seed=self.mlp_seed, noise_sd=0.0, clip=self.clip)

    # -- layout --------------------------------------------------------------------------
    def _canonical_names(self) -> list[str]:
        return self._base().feature_names + list(EXTRA)

    def _order(self) -> np.ndarray:
        d = len(self._canonical_names())
        seed = self.layout_seed
        if seed is None:
            return np.arange(d)
        if isinstance(seed, bool) or not isinstance(seed, (numbers.Integral, np.integer)) or seed < 0:
            raise OodfsError(f"layout_seed must be None or an integer >= 0, got {seed!r}")
        return np.random.default_rng(int(seed)).permutation(d)

    @property
    def feature_names(self) -> list[str]:
        names = self._canonical_names()
        return [names[i] for i in self._order()]

    def _columns(self, wanted) -> tuple[int, ...]:
        return tuple(j for j, name in enumerate(self.feature_names) if name in wanted)

    @property
    def stable_set(self) -> tuple[int, ...]:
        return self._columns({n for n in self._canonical_names() if n.startswith("S")})

    @property
    def markov_boundary(self) -> tuple[int, ...]:
        return self._columns({n for n in self._canonical_names() if n.startswith("S")} | set(EXTRA))

    @property
    def true_coef(self) -> np.ndarray:
        """The stable linear coefficients of f (0 for V, H, C and W), in this layout's columns."""
        base = self._base()
        coef = np.concatenate([base.true_coef, np.zeros(len(EXTRA))])
        return coef[self._order()]

    # -- sampling ------------------------------------------------------------------------
    def check_env(self, env) -> float:
        return self._base().check_env(env)

    def sample(self, env, n: int, seed: int):
        base = self._base()
        r = base.check_env(env)
        n = check_positive_int(n, "n")
        X, f = base.sample(r, n, seed)  # noise_sd 0: y is f(S), the selection is the paper's
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 35]))
        h = np.clip(rng.standard_normal(n), -self.clip, self.clip)
        w = np.clip(rng.standard_normal(n), -self.clip, self.clip)
        y = f + (self.noise_sd + self.hetero * np.abs(h)) * rng.standard_normal(n)
        c = np.sign(r) * self.child_coef * y + w + self.child_sd * rng.standard_normal(n)
        X = np.column_stack([X, h, c, w])
        return X[:, self._order()], y
