"""Distributional robustness via invariant gradients (Shen, Bühlmann and Taeb, 2023), the closed
form of the authors' ``est_drig`` (``estimate.py``).

With each environment's uncentred moments G_e = E_e[x x'] and Z_e = E_e[x y], weights w_e
proportional to the environments' sizes and a reference environment 0,

    b_gamma = ((1 - gamma) G_0 + gamma sum_e w_e G_e)^-1 ((1 - gamma) Z_0 + gamma sum_e w_e Z_e):

gamma = 0 is least squares on the reference environment, gamma = 1 pooled least squares, and a
larger gamma protects against stronger additive interventions in the directions in which the
environments differ from the reference. The method needs the reference to be the least-perturbed
environment (the observational one in the paper). These suites have none, so oodfs chooses it from
the data: the environment e0 whose weighted differences sum_e w_e (G_e - G_e0) have the largest
smallest eigenvalue, i.e. the one the others dominate most (docs/PROTOCOL.md, section 13).
Scores: |b|. With ``fit_intercept`` a constant column is appended to x (its moments are the means,
so mean shifts count as interventions) and its coefficient is not scored.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

import oodfs

from ._weights import refuse_weights
from .irm import environment_moments

REFERENCES = ("least-perturbed", "largest")


def choose_reference(G, w, how="least-perturbed"):
    """The reference environment's index: "least-perturbed" maximises the smallest eigenvalue of
    sum_e w_e (G_e - G_r) over r; "largest" takes the environment with the most rows (first of equal)."""
    if how == "largest":
        return int(np.argmax(w))
    pooled = np.einsum("e,eij->ij", w, G)
    return int(np.argmax([np.linalg.eigvalsh(pooled - G[r])[0] for r in range(len(G))]))


def drig_coefficients(G, Z, w, gammas, reference):
    """DRIG's closed form, one row per gamma."""
    G_pool, Z_pool = np.einsum("e,eij->ij", w, G), w @ Z
    out = []
    for gamma in gammas:
        A = (1 - gamma) * G[reference] + gamma * G_pool
        b = (1 - gamma) * Z[reference] + gamma * Z_pool
        out.append(np.linalg.lstsq(A, b, rcond=None)[0])
    return np.array(out)


def _check(p):
    gamma = p["gamma"]
    if (
        isinstance(gamma, bool)
        or not isinstance(gamma, (int, float, np.number))
        or not (np.isfinite(gamma) and gamma >= 0)
    ):
        raise oodfs.OodfsError(f"drig gamma must be a number >= 0, got {gamma!r}")
    if p["reference"] not in REFERENCES:
        raise oodfs.OodfsError(
            f"drig reference must be one of {', '.join(REFERENCES)}, got {p['reference']!r}"
        )


class DRIG(oodfs.Selector):
    """DRIG: closed form against a reference environment chosen from the data; needs environment labels."""

    name = "drig"
    uses_groups: ClassVar[bool] = True
    uses_reference_env: ClassVar[bool] = True
    supports_sample_weight: ClassVar[bool] = False
    min_group_rows: ClassVar[int] = 1
    #: gamma = 0: the reference's least squares; 1: pooled least squares; the paper's examples go to ~20+
    grid: ClassVar[dict] = {"gamma": [0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]}

    def __init__(self, gamma=5.0, reference="least-perturbed", fit_intercept=True, k=5, random_state=None):
        self.gamma = gamma
        self.reference = reference
        self.fit_intercept = fit_intercept
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight, groups):
        fit = self._fit_grid(
            X, y, [self.get_params()], sample_weight=sample_weight, random_state=None, groups=groups
        )
        self.reference_ = int(fit[0].diagnostics["reference_env"])
        return fit[0].values

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, groups):
        refuse_weights(sample_weight, "drig")
        for p in points:
            _check(p)
        n_envs = int(groups.max()) + 1
        w = np.bincount(groups, minlength=n_envs) / len(groups)
        out = []
        moments = {}
        for p in points:
            intercept = bool(p["fit_intercept"])
            if intercept not in moments:
                moments[intercept] = environment_moments(X, y, groups, n_envs, intercept)
            G, Z = moments[intercept]
            ref = choose_reference(G, w, p["reference"])
            coef = drig_coefficients(G, Z, w, [float(p["gamma"])], ref)[0]
            out.append(oodfs.GridFit(np.abs(coef[1:] if intercept else coef), {"reference_env": float(ref)}))
        return out
