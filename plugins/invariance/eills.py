"""Environment invariant linear least squares (Fan, Fang, Gu and Zhang, AoS 2024), by the exact
search over supports of the authors' ``brute_force`` (``methods/brute_force.py``, loss "eills").

With each environment's moments S_e = E_e[x x'] and c_e = E_e[x y], EILLS minimises

    sum_e w_e R_e(b) + gamma * sum_{j in supp(b)} sum_e w_e (E_e[x_j (y - x'b)])^2,

the pooled risk plus the squared correlation, in every environment, of the residual with each
variable the model uses. For a fixed support S the objective is quadratic in b_S: with
A = sum_e w_e (S_e + gamma S_e S_e) and r = sum_e w_e (c_e + gamma S_e c_e) (all restricted to
S), b_S = A^-1 r and the objective is b_S'A b_S / 2 - b_S'r + gamma sum_e w_e |c_e,S|^2 / 2
(constant terms dropped; the empty set scores 0). The estimate is the support with the smallest
objective, searched over all 2^d supports (the authors' code; no size penalty), with equal
environment weights w_e = 1/E as theirs. Scores: |b| (0 outside the selected support). With
``fit_intercept`` a constant column joins every support (docs/PROTOCOL.md, section 13).
"""

from __future__ import annotations

import itertools
from typing import ClassVar

import numpy as np

import oodfs

from ._weights import refuse_weights
from .irm import environment_moments

#: the exact search fits 2^d supports
MAX_EXACT = 14


def eills_path(S, c, gammas, always=()):
    """EILLS coefficients (one row per gamma) from per-environment moments S (E, p, p) and c (E, p);
    the columns in ``always`` (e.g. an intercept) are in every support."""
    E, p = c.shape
    free = [j for j in range(p) if j not in always]
    gammas = np.asarray(gammas, dtype=float)
    best = np.full(len(gammas), 0.0 if not always else np.inf)  # the empty support scores 0
    out = np.zeros((len(gammas), p))
    for r in range(len(free) + 1):
        for sub in itertools.combinations(free, r):
            cols = sorted(list(always) + list(sub))
            if not cols:
                continue
            Ss, cs = S[:, cols][:, :, cols], c[:, cols]  # restricted first, then squared (the authors' order)
            S_bar, c_bar = Ss.mean(0), cs.mean(0)
            SS_bar = np.einsum("eij,ejk->ik", Ss, Ss) / E
            Sc_bar = np.einsum("eij,ej->i", Ss, cs) / E
            cc = (cs**2).sum() / E
            for g, gamma in enumerate(gammas):
                A = S_bar + gamma * SS_bar
                rhs = c_bar + gamma * Sc_bar
                try:
                    beta = np.linalg.solve(A, rhs)
                except np.linalg.LinAlgError:
                    continue
                loss = 0.5 * beta @ A @ beta - beta @ rhs + 0.5 * gamma * cc
                if loss < best[g]:
                    best[g] = loss
                    out[g] = 0.0
                    out[g, cols] = beta
    return out


def _check_gamma(gamma):
    if (
        isinstance(gamma, bool)
        or not isinstance(gamma, (int, float, np.number))
        or not (np.isfinite(gamma) and gamma >= 0)
    ):
        raise oodfs.OodfsError(f"eills gamma must be a number >= 0, got {gamma!r}")


class EILLS(oodfs.Selector):
    """Environment invariant linear least squares: exact support search; |b|; needs environment labels."""

    name = "eills"
    uses_groups: ClassVar[bool] = True
    supports_sample_weight: ClassVar[bool] = False
    min_group_rows: ClassVar[int] = 1
    #: points of the authors' regularisation path; 20 is the value of their experiments
    grid: ClassVar[dict] = {"gamma": [0.0, 1.0, 5.0, 10.0, 20.0, 50.0, 100.0, 1000.0]}

    def __init__(self, gamma=20.0, fit_intercept=True, k=5, random_state=None):
        self.gamma = gamma
        self.fit_intercept = fit_intercept
        self.k = k
        self.random_state = random_state

    @classmethod
    def own_support(cls, scores, diagnostics, params):
        """The support of the estimate b: |b| > 0 (docs/PROTOCOL.md section 10, "The k grid")."""
        return np.asarray(scores) > 0

    def _fit_scores(self, X, y, sample_weight, groups):
        return self._fit_grid(
            X, y, [self.get_params()], sample_weight=sample_weight, random_state=None, groups=groups
        )[0]

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, groups):
        refuse_weights(sample_weight, "eills")
        if X.shape[1] > MAX_EXACT:
            raise oodfs.OodfsError(
                f"eills: the exact support search is limited to {MAX_EXACT} features, got {X.shape[1]}; "
                "select fewer columns"
            )
        for p in points:
            _check_gamma(p["gamma"])
        n_envs = int(groups.max()) + 1
        out = [None] * len(points)
        for intercept in (True, False):
            idx = [i for i, p in enumerate(points) if bool(p["fit_intercept"]) == intercept]
            if not idx:
                continue
            S, c = environment_moments(X, y, groups, n_envs, intercept)
            coefs = eills_path(
                S, c, [float(points[i]["gamma"]) for i in idx], always=(0,) if intercept else ()
            )
            for i, row in zip(idx, coefs):
                out[i] = np.abs(row[1:] if intercept else row)
        return out
