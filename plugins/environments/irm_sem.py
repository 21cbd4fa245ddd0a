"""The synthetic structural equation model of the IRM paper (Arjovsky et al. 2019, section 5.1;
``ChainEquationModel`` in the authors' ``code/experiment_synthetic/sem.py``).

With q = dim / 2 and an environment given by its noise scale e > 0:

    H = N(0, e^2)^q                          hidden confounder
    X = H W_hx + N(0, e^2)^q                 the causal features
    Y = X W_xy + H W_hy + N(0, s_y^2)^q      (q outcome components; the target is their sum)
    Z = Y W_yz + H W_hz + N(0, s_z^2)^q      non-causal children of Y

Homoskedastic (``hetero=False``): s_y = 1, s_z = e (the children's noise changes with e, Y's does
not). Heteroskedastic: s_y = e, s_z = 1. ``ones=True``: W_xy = W_yz = I; otherwise N(0, 1/dim)
entries. ``hidden=False``: W_hx = I and W_hy = W_hz = 0 (no confounding; H is then extra noise of X);
``hidden=True``: all three N(0, 1/dim). ``scramble=True`` multiplies (X, Z) by a random orthogonal
matrix (the features are then mixtures and there is no stable feature subset: ``stable_set`` is
None). The structural matrices are drawn from ``sem_seed``, once per environment object, as the
reference draws them once per repetition.

The invariant (causal) coefficients are those of X: ``coefficients`` = (W_xy 1, 0). The stable
set is the q columns of X: E[Y | X] is the same in every environment (without hidden
confounding), and Y's regression on any set that contains a child of Y changes with e.
Feature names X1..Xq, Z1..Zq; ``layout_seed`` permutes the columns as in the synthetic
environment.
"""

from __future__ import annotations

import numbers

import numpy as np

import oodfs
from oodfs.validation import OodfsError, check_positive_int


def _flag(value, what):
    if not isinstance(value, (bool, np.bool_)) and value not in (0, 1):
        raise OodfsError(f"{what} must be true or false, got {value!r}")
    return bool(value)


class IRMChain(oodfs.Environment):
    """The IRM paper's synthetic SEM: causal X, non-causal children Z of Y, environments by noise scale."""

    name = "irm_sem"
    #: the paper's setup codes: F/P (fully observed / hidden confounding), O/E (homo-/
    #: heteroskedastic), U/S (unscrambled / scrambled)
    setups = ("FOU", "FOS", "FEU", "FES", "POU", "POS", "PEU", "PES")
    example_envs = (0.2, 2.0, 5.0)  # for the conformance kit: the paper's training environments
    invalid_envs = (0.0, -1.0)

    def __init__(
        self, dim=10, ones=True, hidden=False, hetero=False, scramble=False, sem_seed=0, layout_seed=None
    ):
        self.dim = dim
        self.ones = ones
        self.hidden = hidden
        self.hetero = hetero
        self.scramble = scramble
        self.sem_seed = sem_seed
        self.layout_seed = layout_seed

    @staticmethod
    def setting_params(code: str) -> dict:
        """The constructor flags of one of the paper's ``setups``."""
        if code not in IRMChain.setups:
            raise OodfsError(f"unknown IRM setup {code!r}; valid: {', '.join(IRMChain.setups)}")
        return {"hidden": code[0] == "P", "hetero": code[1] == "E", "scramble": code[2] == "S"}

    # -- structure -----------------------------------------------------------------------
    def _check(self):
        if (
            isinstance(self.dim, bool)
            or not isinstance(self.dim, numbers.Integral)
            or self.dim < 2
            or self.dim % 2
        ):
            raise OodfsError(f"dim must be an even integer >= 2, got {self.dim!r}")
        for what in ("ones", "hidden", "hetero", "scramble"):
            _flag(getattr(self, what), what)
        for what in ("sem_seed", "layout_seed"):
            v = getattr(self, what)
            if (v is not None or what == "sem_seed") and (
                isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0
            ):
                raise OodfsError(f"{what} must be an integer >= 0, got {v!r}")

    def structure(self) -> dict:
        """The structural matrices, drawn from ``sem_seed`` (W_xy, W_yz, W_hx, W_hy, W_hz, scramble)."""
        self._check()
        q, dim = self.dim // 2, self.dim
        rng = np.random.default_rng(self.sem_seed)
        if self.ones:
            wxy, wyz = np.eye(q), np.eye(q)
        else:
            wxy, wyz = rng.standard_normal((q, q)) / dim, rng.standard_normal((q, q)) / dim
        if self.scramble:
            scramble, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
        else:
            scramble = np.eye(dim)
        if self.hidden:
            whx, why, whz = (rng.standard_normal((q, q)) / dim for _ in range(3))
        else:
            whx, why, whz = np.eye(q), np.zeros((q, q)), np.zeros((q, q))
        return {"wxy": wxy, "wyz": wyz, "whx": whx, "why": why, "whz": whz, "scramble": scramble}

    @property
    def coefficients(self) -> np.ndarray:
        """The invariant solution in the unscrambled canonical order (X1..Xq, Z1..Zq)."""
        w = self.structure()["wxy"]
        return np.concatenate([w.sum(axis=1), np.zeros(self.dim // 2)])

    def _order(self) -> np.ndarray:
        self._check()
        if self.layout_seed is None:
            return np.arange(self.dim)
        return np.random.default_rng(int(self.layout_seed)).permutation(self.dim)

    @property
    def stable_set(self):
        if _flag(self.scramble, "scramble"):
            return None
        return tuple(int(j) for j in np.nonzero(self._order() < self.dim // 2)[0])

    @property
    def feature_names(self) -> list[str]:
        q = self.dim // 2
        prefix = "M" if _flag(self.scramble, "scramble") else None  # scrambled columns are mixtures
        canonical = (
            [f"M{i}" for i in range(1, self.dim + 1)]
            if prefix
            else [f"X{i}" for i in range(1, q + 1)] + [f"Z{i}" for i in range(1, q + 1)]
        )
        return [canonical[i] for i in self._order()]

    def check_env(self, env) -> float:
        """An environment is its noise scale: a finite number > 0."""
        if isinstance(env, bool) or not isinstance(env, numbers.Real) or not np.isfinite(env) or env <= 0:
            raise OodfsError(f"an irm_sem environment is a noise scale > 0, got {env!r}")
        return float(env)

    def sample(self, env, n: int, seed: int):
        e = self.check_env(env)
        n = check_positive_int(n, "n")
        w = self.structure()
        q = self.dim // 2
        rng = np.random.default_rng(seed)
        h = rng.standard_normal((n, q)) * e
        x = h @ w["whx"] + rng.standard_normal((n, q)) * e
        s_y, s_z = (e, 1.0) if self.hetero else (1.0, e)
        y = x @ w["wxy"] + h @ w["why"] + rng.standard_normal((n, q)) * s_y
        z = y @ w["wyz"] + h @ w["whz"] + rng.standard_normal((n, q)) * s_z
        X = np.concatenate([x, z], axis=1) @ w["scramble"]
        return X[:, self._order()], y.sum(axis=1)
