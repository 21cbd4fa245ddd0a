"""Random sample weighting (RSW; He, Shen, Xu, Zhang, Jiang, Zou and Cui, AAAI 2023), linear.

RSW simulates heterogeneous environments from one training set: at every training step it draws
``n_envs`` random weight functions of the covariates, w_e(x) = clamp(sigmoid(a_e' x), 0.01, 1)
normalised to sum 1 over the rows, a_e uniform on [-b, b] (b = ``weight_scale`` sqrt(6 / (d + 1))),
and trains HRM's invariant-prediction module on the weighted copies of the data: a linear model
on gated features x * z with loss mean_e wMSE_e + alpha sum_j (mu_j + 0.5) sum_e (g_ej - mean_e
g_ej)^2 + lam (sum_j Phi((mu_j + 0.5) / sigma) - hard_sum)^2, g_e the gradient of wMSE_e in the
coefficients with the gates held fixed. Variables whose regression coefficient is the same under
every reweighting of X keep their gates open.

Scores: the final gate means mu_j + 0.5. Every open choice is in docs/PROTOCOL.md (section
"RSW", appended to section 12).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from scipy.special import expit, ndtr

import oodfs
from oodfs.numeric import int_seed

from .hrm import _Adam


def random_weights(X, n_envs, scale, rng):
    """``n_envs`` random covariate-determined weightings of the rows, each summing to 1 (E, n)."""
    bound = scale * math.sqrt(6.0 / (X.shape[1] + 1))
    a = rng.uniform(-bound, bound, (n_envs, X.shape[1]))
    w = np.clip(expit(X @ a.T), 0.01, 1.0).T
    return w / w.sum(axis=1, keepdims=True)


def row_features(X, y):
    """Every row's contribution to the weighted moments, one row each: (x x', x, x y, y, y^2)."""
    n, d = X.shape
    return np.hstack(
        [(X[:, :, None] * X[:, None, :]).reshape(n, d * d), X, X * y[:, None], y[:, None], y[:, None] ** 2]
    )


def weighted_moments(F, w, d):
    """Per weighting e, from :func:`row_features` ``F``: (G_e = X'W_eX, m_e = X'w_e, c_e = X'W_e y,
    ybar_e = w_e'y, yy_e = y'W_e y), one matrix product for all of them."""
    M = w @ F
    dd = d * d
    return M[:, :dd].reshape(-1, d, d), M[:, dd : dd + d], M[:, dd + d : dd + 2 * d], M[:, -2], M[:, -1]


def rsw_gradients(beta, b0, mu, moments, noise, alpha, lam, sigma, hard_sum):
    """The RSW objective and its gradients in (beta, intercept b0, mu) from the weightings'
    moments (see :func:`weighted_moments`) and gate noise ``noise`` (2, E, d): draws for the loss
    and for the penalty. The intercept is not gated and not in the penalty (which is on the
    coefficients' gradients only). Returns (objective, d/d beta, d/d b0, d/d mu)."""
    G, m, c, ybar, yy = moments
    E = len(G)
    pre = mu + 0.5 + sigma * noise[0]
    z = np.clip(pre, 0.0, 1.0)
    inside = (pre > 0) & (pre < 1)
    v = z * beta  # (E, d)
    Gv = np.einsum("eij,ej->ei", G, v)
    mv = np.einsum("ej,ej->e", m, v)
    loss = np.mean(np.einsum("ej,ej->e", v, Gv) + 2 * b0 * mv + b0**2 - 2 * np.einsum("ej,ej->e", c, v)
                   - 2 * b0 * ybar + yy)  # fmt: skip
    r = 2 * (Gv + b0 * m - c) / E  # d loss / d v_e
    g_beta = (z * r).sum(axis=0)
    g_b0 = float(np.sum(2 * (mv + b0 - ybar)) / E)
    g_mu = (beta * r * inside).sum(axis=0)
    # penalty on the coefficients' gradients with gates zp held fixed:
    # g_e = A_e beta + b0 u_e - h_e, A_e = 2 Zp G_e Zp, u_e = 2 zp m_e, h_e = 2 zp c_e
    zp = np.clip(mu + 0.5 + sigma * noise[1], 0.0, 1.0)
    A = 2 * zp[:, :, None] * G * zp[:, None, :]
    u = 2 * zp * m
    dev = A @ beta + b0 * u - 2 * zp * c
    dev -= dev.mean(axis=0)
    penalty = (dev**2).sum(axis=0)
    weight = mu + 0.5
    wd = dev * weight
    g_beta += alpha * 2 * np.einsum("eij,ei->j", A - A.mean(axis=0), wd)
    g_b0 += alpha * 2 * float(np.sum((u - u.mean(axis=0)) * wd))
    g_mu += alpha * penalty
    t = (mu + 0.5) / sigma
    reg = ndtr(t).sum()
    g_mu += lam * 2 * (reg - hard_sum) * np.exp(-(t**2) / 2) / math.sqrt(2 * math.pi) / sigma
    total = loss + alpha * penalty @ weight + lam * (reg - hard_sum) ** 2
    return total, g_beta, g_b0, g_mu


class RSW(oodfs.Selector):
    """Random sample weighting (He et al. 2023): invariant gates across random reweightings."""

    name = "rsw"
    supports_sample_weight: ClassVar[bool] = False
    # the weight functions, the coefficients' start and the gate noise are drawn per column position
    permutation_invariant = False
    # the settings of the authors' simulations: alpha 1e4, 1e5, 1e8 with 3, 5 or 8 weightings
    # a step (docs/PROTOCOL.md, section 12, "RSW")
    grid: ClassVar[dict] = {"alpha": [1e4, 1e5, 1e8], "n_envs": [3, 8]}

    def __init__(
        self,
        alpha=1e5,
        lam=10.0,
        sigma=0.01,
        hard_sum=None,
        n_envs=3,
        weight_scale=10.0,
        fit_intercept=True,
        pretrain_epochs=2000,
        epochs=6000,
        lr_model=1e-3,
        lr_gates=3e-4,
        threshold=0.2,
        k=5,
        random_state=None,
    ):
        self.alpha = alpha
        self.lam = lam
        self.sigma = sigma
        self.hard_sum = hard_sum
        self.n_envs = n_envs
        self.weight_scale = weight_scale
        self.fit_intercept = fit_intercept
        self.pretrain_epochs = pretrain_epochs
        self.epochs = epochs
        self.lr_model = lr_model
        self.lr_gates = lr_gates
        self.threshold = threshold
        self.k = k
        self.random_state = random_state

    def _check(self):
        for what in ("alpha", "lam", "sigma", "weight_scale", "lr_model", "lr_gates"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise oodfs.OodfsError(f"rsw {what} must be a positive number, got {v!r}")
        for what, low in (("n_envs", 2), ("pretrain_epochs", 0), ("epochs", 1)):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise oodfs.OodfsError(f"rsw {what} must be an integer >= {low}, got {v!r}")
        if not isinstance(self.fit_intercept, bool):
            raise oodfs.OodfsError(f"rsw fit_intercept must be true or false, got {self.fit_intercept!r}")

    def _fit_scores(self, X, y, sample_weight):
        return self._fit_detailed(X, y).values

    def _fit_detailed(self, X, y) -> oodfs.GridFit:
        self._check()
        n, d = X.shape
        sd = X.std(axis=0)
        Xs = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        yc = y - y.mean()
        rng = np.random.default_rng(int_seed(self.random_state))
        hard_sum = float(d if self.hard_sum is None else self.hard_sum)
        alpha, lam, sigma = float(self.alpha), float(self.lam), float(self.sigma)
        E, free = int(self.n_envs), bool(self.fit_intercept)
        bound = math.sqrt(6.0 / (d + 1))  # xavier-uniform, as a torch linear layer of 1 output
        beta, b0 = rng.uniform(-bound, bound, d), 0.0
        # pretraining: plain least squares on the unweighted rows (docs/PROTOCOL.md, 12, "RSW")
        G, c, mx, my = Xs.T @ Xs / n, Xs.T @ yc / n, Xs.mean(axis=0), yc.mean()
        adam = _Adam(d + 1, self.lr_model)
        for _ in range(int(self.pretrain_epochs)):
            g_b = 2 * (G @ beta + b0 * mx - c)
            g_0 = 2 * (mx @ beta + b0 - my) if free else 0.0
            theta = adam.step(np.append(beta, b0), np.append(g_b, g_0))
            beta, b0 = theta[:d], float(theta[d])
        adam, adam_m = _Adam(d + 1, self.lr_model), _Adam(d, self.lr_gates)
        mu = np.zeros(d)
        F = row_features(Xs, yc)
        for _ in range(int(self.epochs)):
            moments = weighted_moments(F, random_weights(Xs, E, float(self.weight_scale), rng), d)
            noise = rng.standard_normal((2, E, d))
            _, g_b, g_0, g_mu = rsw_gradients(beta, b0, mu, moments, noise, alpha, lam, sigma, hard_sum)
            theta = adam.step(np.append(beta, b0), np.append(g_b, g_0 if free else 0.0))
            beta, b0 = theta[:d], float(theta[d])
            mu = adam_m.step(mu, g_mu)
        density = ndtr((mu + 0.5) / sigma)
        self.gate_probabilities_ = density
        self.coef_, self.intercept_ = beta, b0
        self.selected_ = sorted(int(j) for j in np.flatnonzero(density > self.threshold))
        return oodfs.GridFit(mu + 0.5, {"n_selected": float(len(self.selected_))})

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state):
        return [cls(**p, random_state=random_state)._fit_detailed(X, y) for p in points]
