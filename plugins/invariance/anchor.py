"""Anchor regression (Rothenhäusler, Meinshausen, Bühlmann and Peters, JRSS-B 2021) with the
environment labels as anchors.

With anchors A (here the one-hot environment indicators) and P_A the projection on their span,
anchor regression minimises ||(I - P_A)(y - Xb)||^2 + gamma ||P_A (y - Xb)||^2: gamma = 1 is
least squares, gamma -> infinity approaches instrumental-variable regression (invariance of the
residual's mean across environments). The paper's closed form is least squares on the
transformed data W = (I - (1 - sqrt(gamma)) P_A) applied to X and y; with environment
indicators P_A replaces each row by its environment's mean, so the transformation costs O(n d).
The intercept lies in the span of the indicators, so fitting it in the transformed problem is
fitting it in the original one. Scores: |coefficient|.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

import oodfs

from ._weights import refuse_weights


def _env_means(M, groups, n_envs):
    sums = np.zeros((n_envs,) + M.shape[1:])
    np.add.at(sums, groups, M)
    return (sums / np.bincount(groups, minlength=n_envs).reshape((-1,) + (1,) * (M.ndim - 1)))[groups]


def anchor_coefficients(X, y, groups, gammas, fit_intercept=True):
    """Anchor-regression coefficients (no intercept entry), one row per gamma."""
    n_envs = int(groups.max()) + 1
    PX, Py = _env_means(X, groups, n_envs), _env_means(y, groups, n_envs)
    out = []
    for gamma in gammas:
        c = 1.0 - np.sqrt(gamma)
        Xt, yt = X - c * PX, y - c * Py
        if fit_intercept:  # the transformed constant column is sqrt(gamma) * 1: centre on it
            Xt = np.column_stack([np.full(len(yt), np.sqrt(gamma)), Xt])
        coef = np.linalg.lstsq(Xt, yt, rcond=None)[0]
        out.append(coef[1:] if fit_intercept else coef)
    return np.array(out)


def _check_gamma(gamma):
    if not (isinstance(gamma, (int, float, np.integer, np.floating)) and np.isfinite(gamma) and gamma >= 0):
        raise oodfs.OodfsError(f"anchor gamma must be a number >= 0, got {gamma!r}")


class Anchor(oodfs.Selector):
    """Anchor regression with the environment labels as anchors: |coefficients|, needs environment labels."""

    name = "anchor"
    uses_groups: ClassVar[bool] = True
    supports_sample_weight: ClassVar[bool] = False
    min_group_rows: ClassVar[int] = 1
    # gamma = 1 is pooled OLS; the paper treats gamma as a continuum (docs/PROTOCOL.md)
    grid: ClassVar[dict] = {"gamma": [1.0, 2.0, 5.0, 10.0, 100.0]}

    def __init__(self, gamma=5.0, fit_intercept=True, k=5, random_state=None):
        self.gamma = gamma
        self.fit_intercept = fit_intercept
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight, groups):
        refuse_weights(sample_weight, "anchor")
        _check_gamma(self.gamma)
        return np.abs(anchor_coefficients(X, y, groups, [float(self.gamma)], self.fit_intercept)[0])

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, groups):
        refuse_weights(sample_weight, "anchor")
        for p in points:
            _check_gamma(p["gamma"])
        out = []
        for intercept in (True, False):  # one transformation pass per intercept choice
            idx = [i for i, p in enumerate(points) if bool(p["fit_intercept"]) == intercept]
            if idx:
                coefs = anchor_coefficients(X, y, groups, [float(points[i]["gamma"]) for i in idx], intercept)
                out += list(zip(idx, np.abs(coefs)))
        return [c for _, c in sorted(out, key=lambda t: t[0])]
