"""Variance risk extrapolation, V-REx (Krueger et al., ICML 2021), with a linear model, as DomainBed
implements it (``VREx`` in ``domainbed/algorithms.py``): the mean of the per-environment risks plus
lambda times their variance,

    F(b) = mean_e R_e(b) + lambda * mean_e (R_e(b) - mean_e' R_e'(b))^2,

R_e the mean squared error in environment e. DomainBed trains with penalty weight 1 for its
annealing steps and lambda afterwards, by Adam on minibatches; a linear model's risks depend on the
data only through each environment's moments (R_e(b) = b'S_e b - 2 c_e'b + E_e[y^2]), so oodfs
minimises F exactly on those, full batch, by L-BFGS with the exact gradient: from the minimiser of
the mean risk, first the lambda = 1 objective (the annealing phase), then the lambda objective
(docs/PROTOCOL.md, section 13). Scores: |b|; with ``fit_intercept`` a constant column is appended
and its coefficient is not scored.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.optimize import minimize

import oodfs

from ._weights import refuse_weights
from .irm import environment_moments


def _objective(b, S, c, yy, lam):
    """F(b) / (1 + lambda) and its gradient (the scaling keeps large lambdas well conditioned)."""
    Sb = S @ b  # (E, p)
    risks = np.einsum("ep,p->e", Sb, b) - 2 * c @ b + yy
    grads = 2 * (Sb - c)  # dR_e/db
    dev = risks - risks.mean()
    value = risks.mean() + lam * np.mean(dev**2)
    grad = grads.mean(0) + lam * 2 * (dev @ grads) / len(risks)
    return value / (1 + lam), grad / (1 + lam)


def vrex_solutions(S, c, yy, lams, tol=1e-12, max_iter=10_000):
    """V-REx coefficients, one row per lambda, from per-environment moments."""
    start = np.linalg.lstsq(S.mean(0), c.mean(0), rcond=None)[0]  # the minimiser of the mean risk

    def solve(b0, lam):
        res = minimize(
            _objective,
            b0,
            args=(S, c, yy, lam),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "ftol": tol, "gtol": 1e-10, "maxcor": 30},
        )
        return res.x

    annealed = solve(start, 1.0)
    return np.array([solve(annealed, float(lam)) for lam in lams])


def _check(lam):
    if (
        isinstance(lam, bool)
        or not isinstance(lam, (int, float, np.number))
        or not (np.isfinite(lam) and lam >= 0)
    ):
        raise oodfs.OodfsError(f"vrex penalty must be a number >= 0, got {lam!r}")


class VREx(oodfs.Selector):
    """V-REx: a linear model, mean risk + lambda x variance of the risks; needs environment labels."""

    name = "vrex"
    uses_groups: ClassVar[bool] = True
    supports_sample_weight: ClassVar[bool] = False
    min_group_rows: ClassVar[int] = 1
    #: DomainBed's random-search range 10^U(-1, 5), at its integer exponents
    grid: ClassVar[dict] = {"penalty": [0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5]}

    def __init__(self, penalty=10.0, fit_intercept=True, k=5, random_state=None):
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight, groups):
        return self._fit_grid(
            X, y, [self.get_params()], sample_weight=sample_weight, random_state=None, groups=groups
        )[0]

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, groups):
        refuse_weights(sample_weight, "vrex")
        for p in points:
            _check(p["penalty"])
        n_envs = int(groups.max()) + 1
        yy = np.array([np.mean(y[groups == e] ** 2) for e in range(n_envs)])
        out = [None] * len(points)
        for intercept in (True, False):
            idx = [i for i, p in enumerate(points) if bool(p["fit_intercept"]) == intercept]
            if not idx:
                continue
            S, c = environment_moments(X, y, groups, n_envs, intercept)
            sol = vrex_solutions(S, c, yy, [float(points[i]["penalty"]) for i in idx])
            for i, row in zip(idx, sol):
                out[i] = np.abs(row[1:] if intercept else row)
        return out
