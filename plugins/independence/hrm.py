"""Heterogeneous risk minimisation (HRM; Liu, Hu, Cui, Li and Shen, ICML 2021), linear.

HRM needs no environment labels: it alternates two modules for ``outer_iters`` rounds.

* Mc, heterogeneity identification: the rows are split into ``n_envs`` latent environments by a
  hard-assignment mixture of linear regressions of y on X whose coefficients are L1-penalised by
  the previous round's gate probabilities (weighted lasso, penalty ``cluster_lam * mean_j
  p_j |b_j|``; p = 0 in round 1): the features the backend judged invariant are shrunk away, so
  the environments are told apart by the variant ones. Start: a random assignment; then fit one
  weighted lasso per environment, reassign each row to the environment with the smallest
  absolute residual, until fewer than ``cluster_tol`` x n rows change.
* Mp, invariant prediction: a linear model on gated features x * z, z_j = clamp(mu_j + 0.5 +
  sigma eps, 0, 1) (stochastic gates, Yamada et al. 2020), trained on the inferred environments
  with loss = mean_e MSE_e + alpha * sum_j (mu_j + 0.5) sum_e (g_ej - mean_e g_ej)^2 + lam *
  (sum_j Phi((mu_j + 0.5) / sigma) - hard_sum)^2, g_e the gradient of MSE_e in the model's
  coefficients (with the gates held fixed): the variance of the gradients across environments
  is HRM's invariance penalty, applied per feature through its gate. ``pretrain_epochs`` of plain
  least squares first, then ``epochs`` of Adam (full batch); alpha and lam grow by ``growth``
  after every round.

Scores: the final gate means mu_j + 0.5 (monotone in the gate probabilities, without their ties
at 0 and 1). Every open choice, and where the authors' code settles one, is in docs/PROTOCOL.md,
section 12. ``environments_`` holds the last round's inferred environment of every row.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from numba import njit
from scipy.special import ndtr
from sklearn.linear_model import Lasso

import oodfs
from oodfs.numeric import int_seed

#: what HRM reports about its inferred environments (``n_selected`` is declared with SVI's)
HRM_METRICS = [
    oodfs.diagnostic(
        "env_min_share", "smallest env share", None, "share of rows in HRM's smallest inferred environment"
    ),
    oodfs.diagnostic(
        "env_max_share", "largest env share", None, "share of rows in HRM's largest inferred environment"
    ),
    oodfs.diagnostic(
        "env_cluster_iters",
        "clustering rounds",
        None,
        "reassignment rounds of HRM's last environment inference",
    ),
]


def _norm_cdf(u):
    return ndtr(u)


def weighted_lasso(X, y, penalty_weights, lam):
    """argmin_b,c mean((y - X b - c)^2) + lam mean_j w_j |b_j| (exactly, by coordinate descent on
    rescaled columns; a weight below 1e-3 counts as 1e-3, an almost free coefficient)."""
    w = np.maximum(penalty_weights, 1e-3)
    # the rescaled copy is float64 and column-major as scikit-learn's checks would make it: they
    # are skipped (half of a call's time at d = 13; the same coefficients, benchmarks/MARKOV_COST.md)
    Xw = np.asfortranarray(X / w)
    model = Lasso(alpha=lam / (2 * X.shape[1]), max_iter=10_000, tol=1e-6).fit(Xw, y, check_input=False)
    return model.coef_ / w, float(model.intercept_)


def infer_environments(X, y, penalty_weights, n_envs, lam, tol, max_iter, rng):
    """HRM's Mc: (environment of every row, rounds run)."""
    n = len(y)
    domain = rng.integers(0, n_envs, n)
    coefs = np.zeros((n_envs, X.shape[1]))
    bias = np.zeros(n_envs)
    for it in range(1, max_iter + 1):
        for k in range(n_envs):
            rows = domain == k
            if rows.sum() >= 2:  # an emptied environment keeps its last model
                coefs[k], bias[k] = weighted_lasso(X[rows], y[rows], penalty_weights, lam)
        new = np.argmin(np.abs(X @ coefs.T + bias - y[:, None]), axis=1)
        changed = int((new != domain).sum())
        domain = new
        if changed <= tol * n:
            break
    return domain, it


def mp_gradients(beta, mu, envs, noise, alpha, lam, sigma, hard_sum):
    """HRM's Mp objective and its gradients in (beta, mu), from the environments' moments
    ``envs`` = [(G_e, c_e, mean y_e^2)] and gate noise ``noise`` (2, E, d): draws for the loss
    and for the penalty. Returns (objective, d/d beta, d/d mu)."""
    E, d = len(envs), len(beta)
    # loss: mean over environments of MSE_e with gates z_e
    pre = mu + 0.5 + sigma * noise[0]
    z = np.clip(pre, 0.0, 1.0)
    inside = (pre > 0) & (pre < 1)
    loss, g_beta, g_mu = 0.0, np.zeros(d), np.zeros(d)
    for e, (Ge, ce, yy) in enumerate(envs):
        v = z[e] * beta
        loss += (v @ Ge @ v - 2 * ce @ v + yy) / E
        r = 2 * (Ge @ v - ce) / E  # d loss / d v
        g_beta += z[e] * r
        g_mu += beta * r * inside[e]
    # penalty: alpha * sum_j (mu_j + 0.5) * sum_e (g_ej - mean_e g_ej)^2 with the gates held
    # fixed, g_e = A_e beta - b_e the gradient of MSE_e in beta
    zp = np.clip(mu + 0.5 + sigma * noise[1], 0.0, 1.0)
    A = np.stack([2 * zp[e][:, None] * Ge * zp[e][None, :] for e, (Ge, _, _) in enumerate(envs)])
    b = np.stack([2 * zp[e] * ce for e, (_, ce, _) in enumerate(envs)])
    dev = A @ beta - b
    dev -= dev.mean(axis=0)
    penalty = (dev**2).sum(axis=0)
    weight = mu + 0.5
    Abar = A.mean(axis=0)
    g_beta += alpha * sum(2 * (A[e] - Abar).T @ (dev[e] * weight) for e in range(E))
    g_mu += alpha * penalty
    # gate budget: lam * (sum_j Phi((mu_j + 0.5) / sigma) - hard_sum)^2
    u = (mu + 0.5) / sigma
    reg = _norm_cdf(u).sum()
    g_mu += lam * 2 * (reg - hard_sum) * np.exp(-(u**2) / 2) / math.sqrt(2 * math.pi) / sigma
    total = loss + alpha * penalty @ weight + lam * (reg - hard_sum) ** 2
    return total, g_beta, g_mu


# no fastmath: the kernels do the numpy code's float operations in its order (a matrix product's
# sums aside), so a fit's numbers stay those of the numpy loop they replace (docs/PROTOCOL.md, 12)
_JIT = dict(cache=True, nogil=True, error_model="numpy")


@njit(**_JIT)
def adam_step(x, grad, m, v, t, lr):
    """Adam step ``t`` (from 1) with torch's defaults (betas 0.9, 0.999, eps 1e-8), in place on
    ``x`` and its moments ``m``, ``v``."""
    c1 = 1 - math.pow(0.9, t)
    c2 = 1 - math.pow(0.999, t)
    for j in range(x.size):
        m[j] = 0.9 * m[j] + 0.1 * grad[j]
        v[j] = 0.999 * v[j] + 0.001 * (grad[j] * grad[j])
        x[j] = x[j] - lr * (m[j] / c1) / (math.sqrt(v[j] / c2) + 1e-8)


@njit(**_JIT)
def gate_cdf(u):
    """Phi(u), as scipy's ``ndtr`` computes it (from erf near 0, erfc in the tails)."""
    x = u * 0.7071067811865476
    if abs(x) < 0.7071067811865476:
        return 0.5 + 0.5 * math.erf(x)
    y = 0.5 * math.erfc(abs(x))
    return 1.0 - y if x > 0 else y


@njit(**_JIT)
def mp_train(beta, G, c, Ge, ce, noise, pretrain_epochs, alpha, lam, sigma, hard_sum, lr_model, lr_gates):
    """HRM's Mp backend as :meth:`HRM._backend` runs it, compiled: ``pretrain_epochs`` Adam steps
    of least squares on the pooled moments (G, c), then one Adam step of :func:`mp_gradients`
    per epoch on the environments' moments (``Ge`` (E, d, d), ``ce`` (E, d)) with gate noise
    ``noise`` (epochs, 2, E, d), drawn beforehand in the reference's order. Returns mu (beta is
    updated in place)."""
    d = beta.size
    E = Ge.shape[0]
    m1, v1 = np.zeros(d), np.zeros(d)
    grad = np.empty(d)
    for t in range(1, pretrain_epochs + 1):
        for j in range(d):
            s = 0.0
            for i in range(d):
                s += G[j, i] * beta[i]
            grad[j] = 2 * (s - c[j])
        adam_step(beta, grad, m1, v1, t, lr_model)
    mu = np.zeros(d)
    m1, v1, m2, v2 = np.zeros(d), np.zeros(d), np.zeros(d), np.zeros(d)
    z, inside, zp, weight = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    vv, r, g_beta, g_mu = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
    A = np.empty((E, d, d))
    dev = np.empty((E, d))
    mean = np.empty(d)
    acc = np.empty(d)
    Abar = np.empty((d, d))
    for t in range(1, noise.shape[0] + 1):
        eps = noise[t - 1]
        g_beta[:] = 0.0
        g_mu[:] = 0.0
        for e in range(E):  # loss: mean over environments of MSE_e with gates z_e
            for j in range(d):
                pre = mu[j] + 0.5 + sigma * eps[0, e, j]
                z[j] = min(max(pre, 0.0), 1.0)
                inside[j] = 1.0 if (pre > 0 and pre < 1) else 0.0
                vv[j] = z[j] * beta[j]
            for j in range(d):
                s = 0.0
                for i in range(d):
                    s += Ge[e, j, i] * vv[i]
                r[j] = 2 * (s - ce[e, j]) / E
                g_beta[j] += z[j] * r[j]
                g_mu[j] += beta[j] * r[j] * inside[j]
        for e in range(E):  # penalty: the gradients' variance across environments, gates fixed
            for j in range(d):
                zp[j] = min(max(mu[j] + 0.5 + sigma * eps[1, e, j], 0.0), 1.0)
            for i in range(d):
                s = 0.0
                for j in range(d):
                    A[e, i, j] = 2 * zp[i] * Ge[e, i, j] * zp[j]
                    s += A[e, i, j] * beta[j]
                dev[e, i] = s - 2 * zp[i] * ce[e, i]
        mean[:] = 0.0
        Abar[:, :] = 0.0
        for e in range(E):
            for j in range(d):
                mean[j] += dev[e, j]
            for i in range(d):
                for j in range(d):
                    Abar[i, j] += A[e, i, j]
        for j in range(d):
            mean[j] /= E
            weight[j] = mu[j] + 0.5
        for i in range(d):
            for j in range(d):
                Abar[i, j] /= E
        penalty = np.zeros(d)
        for e in range(E):
            for j in range(d):
                dev[e, j] -= mean[j]
                penalty[j] += dev[e, j] ** 2
        acc[:] = 0.0
        for e in range(E):
            for j in range(d):
                s = 0.0
                for i in range(d):
                    s += 2 * (A[e, i, j] - Abar[i, j]) * (dev[e, i] * weight[i])
                acc[j] += s
        reg = 0.0
        for j in range(d):
            reg += gate_cdf((mu[j] + 0.5) / sigma)
        for j in range(d):
            g_beta[j] += alpha * acc[j]
            g_mu[j] += alpha * penalty[j]
            u = (mu[j] + 0.5) / sigma
            g_mu[j] += lam * 2 * (reg - hard_sum) * math.exp(-(u**2) / 2) / math.sqrt(2 * math.pi) / sigma
        adam_step(beta, g_beta, m1, v1, t, lr_model)
        adam_step(mu, g_mu, m2, v2, t, lr_gates)
    return mu


class HRM(oodfs.Selector):
    """Heterogeneous risk minimisation (Liu et al. 2021): inferred environments, invariant gates."""

    name = "hrm"
    supports_sample_weight: ClassVar[bool] = False
    # the coefficients' random start and the gate noise are drawn per column position
    permutation_invariant = False
    # the authors' README: alpha "from 1e-1 to 1e3", to be tuned per task (docs/PROTOCOL.md, 12)
    grid: ClassVar[dict] = {"alpha": [0.1, 1.0, 10.0, 100.0, 1000.0]}

    def __init__(
        self,
        alpha=1000.0,
        lam=0.1,
        sigma=0.1,
        hard_sum=None,
        n_envs=3,
        outer_iters=5,
        pretrain_epochs=3000,
        epochs=6000,
        lr_model=1e-3,
        lr_gates=3e-4,
        growth=1.05,
        cluster_lam=1.0,
        cluster_tol=0.05,
        cluster_max_iter=100,
        threshold=0.2,
        k=5,
        random_state=None,
    ):
        self.alpha = alpha
        self.lam = lam
        self.sigma = sigma
        self.hard_sum = hard_sum
        self.n_envs = n_envs
        self.outer_iters = outer_iters
        self.pretrain_epochs = pretrain_epochs
        self.epochs = epochs
        self.lr_model = lr_model
        self.lr_gates = lr_gates
        self.growth = growth
        self.cluster_lam = cluster_lam
        self.cluster_tol = cluster_tol
        self.cluster_max_iter = cluster_max_iter
        self.threshold = threshold
        self.k = k
        self.random_state = random_state

    def _check(self):
        for what in ("alpha", "lam", "sigma", "lr_model", "lr_gates", "growth", "cluster_lam"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise oodfs.OodfsError(f"hrm {what} must be a positive number, got {v!r}")
        for what, low in (("n_envs", 2), ("outer_iters", 1), ("pretrain_epochs", 0), ("epochs", 1)):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise oodfs.OodfsError(f"hrm {what} must be an integer >= {low}, got {v!r}")

    def _fit_scores(self, X, y, sample_weight):
        return self._fit_detailed(X, y).values

    def _fit_detailed(self, X, y) -> oodfs.GridFit:
        self._check()
        n, d = X.shape
        if n < 4 * self.n_envs:
            raise oodfs.OodfsError(
                f"hrm needs at least {4 * self.n_envs} rows for {self.n_envs} environments, got {n}"
            )
        sd = X.std(axis=0)
        Xs = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)  # the backend has no intercept
        yc = y - y.mean()
        hard_sum = float(d if self.hard_sum is None else self.hard_sum)
        seed = int_seed(self.random_state)
        rng = np.random.default_rng(seed)
        alpha, lam, sigma = float(self.alpha), float(self.lam), float(self.sigma)
        density = np.zeros(d)
        pooled = (Xs.T @ Xs / n, Xs.T @ yc / n)
        for _ in range(int(self.outer_iters)):
            domain, cluster_iters = infer_environments(
                Xs, yc, density, int(self.n_envs), float(self.cluster_lam), float(self.cluster_tol),
                int(self.cluster_max_iter), rng,
            )  # fmt: skip
            envs = []
            for e in range(int(self.n_envs)):
                rows = domain == e
                if rows.any():
                    Xe, ye = Xs[rows], yc[rows]
                    envs.append((Xe.T @ Xe / len(ye), Xe.T @ ye / len(ye), float(ye @ ye) / len(ye)))
            mu, beta = self._backend(rng, envs, pooled, alpha, lam, sigma, hard_sum)
            density = _norm_cdf((mu + 0.5) / sigma)
            alpha *= self.growth
            lam *= self.growth
        self.environments_ = domain
        self.gate_probabilities_ = density
        self.selected_ = sorted(int(j) for j in np.flatnonzero(density > self.threshold))
        shares = np.bincount(domain, minlength=int(self.n_envs)) / n
        return oodfs.GridFit(
            mu + 0.5,
            {
                "env_min_share": float(shares.min()),
                "env_max_share": float(shares.max()),
                "env_cluster_iters": float(cluster_iters),
                "n_selected": float(len(self.selected_)),
            },
        )

    def _backend(self, rng, envs, pooled, alpha, lam, sigma, hard_sum):
        """HRM's Mp on the inferred environments: (gate means mu, coefficients). Every term is a
        quadratic form in the environments' moments (G_e = X_e'X_e / n_e, c_e = X_e'y_e / n_e), so
        a step costs O(E d^2) whatever n; the gradients are written out (docs/PROTOCOL.md, 12)."""
        G, c = pooled
        d = len(c)
        bound = math.sqrt(6.0 / (d + 1))  # xavier-uniform, as a torch linear layer of 1 output
        beta = rng.uniform(-bound, bound, d)
        # one gate draw per environment and epoch, for each term: the reference's per-epoch
        # draws, taken in one call (the same numbers in the same order)
        noise = rng.standard_normal((int(self.epochs), 2, len(envs), d))
        Ge = np.stack([Gm for Gm, _, _ in envs])
        ce = np.stack([cm for _, cm, _ in envs])
        mu = mp_train(beta, G, c, Ge, ce, noise, int(self.pretrain_epochs), alpha, lam, sigma, hard_sum,
                      float(self.lr_model), float(self.lr_gates))  # fmt: skip
        return mu, beta

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state):
        return [cls(**p, random_state=random_state)._fit_detailed(X, y) for p in points]
