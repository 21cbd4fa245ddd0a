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
from numba import njit
from scipy.special import expit, ndtr
from threadpoolctl import threadpool_limits

import oodfs
from oodfs.numeric import int_seed

from .hrm import _JIT, adam_step, gate_cdf


def random_weights(X, n_envs, scale, rng):
    """``n_envs`` random covariate-determined weightings of the rows, each summing to 1 (E, n)."""
    bound = scale * math.sqrt(6.0 / (X.shape[1] + 1))
    a = rng.uniform(-bound, bound, (n_envs, X.shape[1]))
    w = np.clip(expit(X @ a.T), 0.01, 1.0).T
    return w / w.sum(axis=1, keepdims=True)


def row_features(X, y):
    """Every row's contribution to the weighted moments, one row each: (x_i x_j for i <= j, x,
    x y, y, y^2); the upper triangle of x x' is enough, G_e being symmetric."""
    iu, ju = np.triu_indices(X.shape[1])
    return np.hstack([X[:, iu] * X[:, ju], X, X * y[:, None], y[:, None], y[:, None] ** 2])


def weighted_moments(F, w, d):
    """Per weighting e, from :func:`row_features` ``F``: (G_e = X'W_eX, m_e = X'w_e, c_e = X'W_e y,
    ybar_e = w_e'y, yy_e = y'W_e y), one matrix product for all of them."""
    M = w @ F
    return _unpack(M, d)


@njit(**_JIT)
def _unpack(M, d):
    """:func:`weighted_moments` from the weighted row features ``M`` (E, len(features))."""
    E, T = M.shape[0], d * (d + 1) // 2
    G = np.empty((E, d, d))
    for e in range(E):
        k = 0
        for i in range(d):
            for j in range(i, d):
                G[e, i, j] = G[e, j, i] = M[e, k]
                k += 1
    return G, M[:, T : T + d].copy(), M[:, T + d : T + 2 * d].copy(), M[:, -2].copy(), M[:, -1].copy()


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


@njit(**_JIT)
def rsw_train(theta, X, F, G0, c, mx, my, draws_a, noise, free, pretrain_epochs, alphas, lam, sigma,
              hard_sum, lr_model, lr_gates):  # fmt: skip
    """RSW's training as :meth:`RSW._fit_grid` runs it, compiled, for every penalty weight in
    ``alphas`` at once: ``pretrain_epochs`` Adam steps of least squares on the unweighted moments
    (G0, c, mx, my), then per epoch the random weightings of :func:`random_weights` from the
    directions ``draws_a`` (epochs, E, d), their moments from the row features ``F``
    (:func:`weighted_moments`) and, per alpha, one Adam step of :func:`rsw_gradients` with gate
    noise ``noise`` (epochs, 2, E, d). The weightings, their moments and the pretraining depend on
    no alpha, so they are computed once per epoch for all of them; each alpha's arithmetic is the
    one-alpha loop's, in its order. ``theta`` (d + 1) = (beta, b0) is the start; returns the
    (beta, b0) and the gate means mu of every alpha, (len(alphas), d + 1) and (len(alphas), d)."""
    n, d = X.shape
    K = alphas.size
    m1, v1 = np.zeros(d + 1), np.zeros(d + 1)
    grad = np.zeros(d + 1)
    beta = theta[:d]
    for t in range(1, pretrain_epochs + 1):
        b0 = theta[d]
        mb = 0.0
        for j in range(d):
            s = 0.0
            for i in range(d):
                s += G0[j, i] * beta[i]
            grad[j] = 2 * (s + b0 * mx[j] - c[j])
            mb += mx[j] * beta[j]
        grad[d] = 2 * (mb + b0 - my) if free else 0.0
        adam_step(theta, grad, m1, v1, t, lr_model)
    E = draws_a.shape[1]
    thetas = np.empty((K, d + 1))
    for k in range(K):
        thetas[k] = theta
    M1, V1 = np.zeros((K, d + 1)), np.zeros((K, d + 1))
    MU, M2, V2 = np.zeros((K, d)), np.zeros((K, d)), np.zeros((K, d))
    w = np.empty((E, n))
    z, inside, zp, weight, r = np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    g_mu, mean, acc, Gv = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    A = np.empty((E, d, d))
    Abar = np.empty((d, d))
    dev = np.empty((E, d))
    u = np.empty((E, d))
    for t in range(1, noise.shape[0] + 1):
        a = draws_a[t - 1]
        eps = noise[t - 1]
        for e in range(E):  # w_e = clamp(sigmoid(X a_e), 0.01, 1), normalised to sum 1
            total = 0.0
            for i in range(n):
                s = 0.0
                for j in range(d):
                    s += X[i, j] * a[e, j]
                w[e, i] = min(max(1 / (1 + math.exp(-s)), 0.01), 1.0)
                total += w[e, i]
            for i in range(n):
                w[e, i] /= total
        M = w @ F  # BLAS, held to one thread by the caller
        G, m, c_e, ybar, _ = _unpack(M, d)
        for k in range(K):
            alpha = alphas[k]
            th = thetas[k]
            beta = th[:d]
            mu = MU[k]
            b0 = th[d]
            for j in range(d + 1):
                grad[j] = 0.0
            g_mu[:] = 0.0
            for e in range(E):  # loss: mean over weightings of the weighted MSE with gates z_e
                mv = 0.0
                for j in range(d):
                    pre = mu[j] + 0.5 + sigma * eps[0, e, j]
                    z[j] = min(max(pre, 0.0), 1.0)
                    inside[j] = 1.0 if (pre > 0 and pre < 1) else 0.0
                for i in range(d):
                    s = 0.0
                    for j in range(d):
                        s += G[e, i, j] * (z[j] * beta[j])
                    Gv[i] = s
                for j in range(d):
                    mv += m[e, j] * (z[j] * beta[j])
                for j in range(d):
                    r[j] = 2 * (Gv[j] + b0 * m[e, j] - c_e[e, j]) / E
                    grad[j] += z[j] * r[j]
                    g_mu[j] += beta[j] * r[j] * inside[j]
                grad[d] += 2 * (mv + b0 - ybar[e])
            grad[d] /= E
            # penalty on the coefficients' gradients with gates zp held fixed (see rsw_gradients)
            for e in range(E):
                for j in range(d):
                    zp[j] = min(max(mu[j] + 0.5 + sigma * eps[1, e, j], 0.0), 1.0)
                for i in range(d):
                    s = 0.0
                    for j in range(d):
                        A[e, i, j] = 2 * zp[i] * G[e, i, j] * zp[j]
                        s += A[e, i, j] * beta[j]
                    u[e, i] = 2 * zp[i] * m[e, i]
                    dev[e, i] = s + b0 * u[e, i] - 2 * zp[i] * c_e[e, i]
            mean[:] = 0.0
            Abar[:, :] = 0.0
            ubar = np.zeros(d)
            for e in range(E):
                for j in range(d):
                    mean[j] += dev[e, j]
                    ubar[j] += u[e, j]
                    for i in range(d):
                        Abar[i, j] += A[e, i, j]
            penalty = np.zeros(d)
            for j in range(d):
                mean[j] /= E
                ubar[j] /= E
                weight[j] = mu[j] + 0.5
                for i in range(d):
                    Abar[i, j] /= E
            for e in range(E):
                for j in range(d):
                    dev[e, j] -= mean[j]
                    penalty[j] += dev[e, j] ** 2
            acc[:] = 0.0
            gu = 0.0
            for e in range(E):
                for i in range(d):
                    wd = dev[e, i] * weight[i]
                    gu += (u[e, i] - ubar[i]) * wd
                    for j in range(d):
                        acc[j] += (A[e, i, j] - Abar[i, j]) * wd
            reg = 0.0
            for j in range(d):
                reg += gate_cdf((mu[j] + 0.5) / sigma)
            for j in range(d):
                grad[j] += alpha * 2 * acc[j]
                g_mu[j] += alpha * penalty[j]
                q = (mu[j] + 0.5) / sigma
                g_mu[j] += lam * 2 * (reg - hard_sum) * math.exp(-(q**2) / 2) / math.sqrt(2 * math.pi) / sigma
            grad[d] = grad[d] + alpha * 2 * gu if free else 0.0
            adam_step(th, grad, M1[k], V1[k], t, lr_model)
            adam_step(mu, g_mu, M2[k], V2[k], t, lr_gates)
    return thetas, MU


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
        thetas, mus = self._train(X, y, [self.alpha])
        return self._finish(thetas[0], mus[0])

    def _train(self, X, y, alphas):
        """This estimator's training for each penalty weight of ``alphas`` (its own ``alpha``
        aside), from the same draws: every weight's (beta, b0) and gate means (:func:`rsw_train`)."""
        n, d = X.shape
        sd = X.std(axis=0)
        Xs = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        yc = y - y.mean()
        rng = np.random.default_rng(int_seed(self.random_state))
        hard_sum = float(d if self.hard_sum is None else self.hard_sum)
        lam, sigma = float(self.lam), float(self.sigma)
        E, free = int(self.n_envs), bool(self.fit_intercept)
        bound = math.sqrt(6.0 / (d + 1))  # xavier-uniform, as a torch linear layer of 1 output
        theta = np.append(rng.uniform(-bound, bound, d), 0.0)  # (beta, intercept b0)
        # every epoch's weighting directions and gate noise, drawn beforehand in the order the
        # epochs draw them (random_weights, then the noise)
        epochs, w_bound = int(self.epochs), float(self.weight_scale) * bound
        draws_a, noise = np.empty((epochs, E, d)), np.empty((epochs, 2, E, d))
        for t in range(epochs):
            draws_a[t] = rng.uniform(-w_bound, w_bound, (E, d))
            rng.standard_normal(out=noise[t])
        # pretraining: plain least squares on the unweighted rows (docs/PROTOCOL.md, 12, "RSW")
        G, c, mx, my = Xs.T @ Xs / n, Xs.T @ yc / n, Xs.mean(axis=0), yc.mean()
        with threadpool_limits(1):  # BLAS threads stall the small products on a shared machine
            return rsw_train(theta, Xs, row_features(Xs, yc), G, c, mx, float(my), draws_a, noise, free,
                             int(self.pretrain_epochs), np.asarray(alphas, dtype=float), lam, sigma, hard_sum,
                             float(self.lr_model), float(self.lr_gates))  # fmt: skip

    def _finish(self, theta, mu) -> oodfs.GridFit:
        d = mu.size
        density = ndtr((mu + 0.5) / float(self.sigma))
        self.gate_probabilities_ = density
        self.coef_, self.intercept_ = theta[:d].copy(), float(theta[d])
        self.selected_ = sorted(int(j) for j in np.flatnonzero(density > self.threshold))
        return oodfs.GridFit(mu + 0.5, {"n_selected": float(len(self.selected_))})

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state):
        """The points that differ only in ``alpha`` share their draws, so they train together: one
        :func:`rsw_train` per group, the weightings computed once (docs/PROTOCOL.md, 12, "RSW")."""
        models = [cls(**p, random_state=random_state) for p in points]
        groups: dict[tuple, list[int]] = {}
        for i, (model, p) in enumerate(zip(models, points)):
            model._check()
            groups.setdefault(tuple((k, repr(v)) for k, v in sorted(p.items()) if k != "alpha"), []).append(i)
        out = [None] * len(points)
        for members in groups.values():
            thetas, mus = models[members[0]]._train(X, y, [models[i].alpha for i in members])
            for i, theta, mu in zip(members, thetas, mus):
                out[i] = models[i]._finish(theta, mu)
        return out
