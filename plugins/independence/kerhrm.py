"""Kernelized heterogeneous risk minimisation (KerHRM; Liu, Hu, Cui, Li and Shen, NeurIPS 2021).

KerHRM runs HRM's two modules on neural tangent features instead of the raw inputs:

* Features: a one-hidden-layer ReLU network of ``width`` units at its random initialisation (the
  default initialisation of a torch linear layer); every row's neural tangent feature is the
  gradient of the network's output in all of its parameters, written out in closed form; a
  truncated SVD reduces them to ``n_components`` dimensions, u(x) = NTF(x) V_k'.
* Mc, heterogeneity identification: the rows are split into ``n_envs`` latent environments by a
  hard-assignment mixture of lasso regressions of y on the variant part of u (u with its
  component along the last invariant direction removed), warm-started from the previous round's
  environments, until at most ``cluster_tol`` x n / n_envs rows change.
* Mp, invariant learning: the linearised network f(x) = f0(x) + u(x) theta, theta trained by full-
  batch Adam on the mean of the environments' squared errors plus a penalty on how much their
  gradients in theta differ, ``warmup_penalty`` for the first ``warmup_epochs`` then ``penalty``.

``outer_iters`` rounds. Scores (``score``): how much the last round's predictor f depends on each
input, by its mean absolute input gradient over the training rows in standard-deviation units
(``"gradient"``), or by permutation importance (``"permutation"``). Every open choice, and where
the authors' code settles one, is in docs/PROTOCOL.md, section 12 ("KerHRM").
``environments_`` holds the last round's inferred environment of every row.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from numba import njit
from sklearn.linear_model import Lasso
from sklearn.utils.extmath import randomized_svd

import oodfs
from oodfs.numeric import int_seed

from .hrm import adam_step

SCORES = ("gradient", "permutation")


class TangentNetwork:
    """A one-hidden-layer ReLU network x -> w2 . relu(W1 x + b1) + b2 at initialisation, and the
    linearisation f(x) = f0(x) + grad_w f0(x) . dw around it (the NTK model KerHRM learns in)."""

    def __init__(self, d, width, rng):
        # a torch linear layer's default initialisation: weights and biases U(-1/sqrt(fan_in), ..)
        b1, b2 = 1 / math.sqrt(d), 1 / math.sqrt(width)
        self.W1 = rng.uniform(-b1, b1, (width, d))
        self.b1 = rng.uniform(-b1, b1, width)
        self.w2 = rng.uniform(-b2, b2, width)
        self.b2 = float(rng.uniform(-b2, b2))

    @property
    def n_params(self):
        width, d = self.W1.shape
        return width * d + 2 * width + 1

    def _hidden(self, X):
        return X @ self.W1.T + self.b1

    def output(self, X):
        return np.maximum(self._hidden(X), 0) @ self.w2 + self.b2

    def tangent_features(self, X, dtype=np.float32):
        """The gradient of the output in (W1, b1, w2, b2), one row per row of X, in torch's
        parameter order (W1 row-major); float32 as the authors' torch code computes it."""
        width, d = self.W1.shape
        out = np.empty((len(X), self.n_params), dtype=dtype)
        for start in range(0, len(X), 1024):  # in blocks of rows: no n x width x d temporary
            rows = slice(start, start + 1024)
            H = self._hidden(X[rows])
            A = (H > 0) * self.w2  # d output / d pre-activation
            out[rows, : width * d] = (A[:, :, None] * X[rows, None, :]).reshape(len(A), -1)
            out[rows, width * d : width * (d + 1)] = A
            out[rows, width * (d + 1) : -1] = np.maximum(H, 0)
            out[rows, -1] = 1.0
        return out

    def split(self, dw):
        width, d = self.W1.shape
        ends = np.cumsum([width * d, width, width])
        return dw[: ends[0]].reshape(width, d), dw[ends[0] : ends[1]], dw[ends[1] : ends[2]], dw[-1]

    def linearised(self, X, dw):
        """f0(x) + grad_w f0(x) . dw without the tangent features: O(n width d)."""
        dW1, db1, dw2, db2 = self.split(dw)
        H = self._hidden(X)
        A = (H > 0) * self.w2
        return self.output(X) + ((X @ dW1.T + db1) * A).sum(axis=1) + np.maximum(H, 0) @ dw2 + db2

    def linearised_input_gradient(self, X, dw):
        """d f / d x of the linearised network, one row per row of X (the ReLU's kink has measure 0)."""
        dW1, _, dw2, _ = self.split(dw)
        M = (self._hidden(X) > 0).astype(float)
        return (M * self.w2) @ (self.W1 + dW1) + (M * dw2) @ self.W1


def lasso(F, y, lam):
    """argmin_b,c mean((y - F b - c)^2) + lam mean_j |b_j|, exactly (coordinate descent on the
    k x k Gram matrix: the tangent features are few and the rows many)."""
    model = Lasso(alpha=lam / (2 * F.shape[1]), precompute=True, max_iter=10_000, tol=1e-6).fit(F, y)
    return model.coef_, float(model.intercept_)


def cluster_environments(F, y, start, n_envs, lam, tol, max_iter):
    """KerHRM's Mc: (environment of every row, rounds run). One lasso per environment (uniform
    penalty ``lam``), each row to the environment of smallest absolute residual, from ``start``."""
    n = len(y)
    domain = start.copy()
    coefs = np.zeros((n_envs, F.shape[1]))
    bias = np.zeros(n_envs)
    for it in range(1, max_iter + 1):
        for k in range(n_envs):
            rows = domain == k
            if rows.sum() >= 2:  # an emptied environment keeps its last model
                coefs[k], bias[k] = lasso(F[rows], y[rows], lam)
        new = np.argmin(np.abs(F @ coefs.T + bias - y[:, None]), axis=1)
        changed = int((new != domain).sum())
        domain = new
        if changed <= tol * n / n_envs:
            break
    return domain, it


@njit(cache=True, nogil=True, error_model="numpy")
def invariant_train(theta, Ge, ce, epochs, lr, penalty, warmup_penalty, warmup_epochs):
    """KerHRM's Mp, full-batch Adam on theta (in place): the objective mean_e MSE_e + lam * P, P the
    mean over pairs of environments of mean_j (g_ej - g_fj)^2 = 2 / (E - 1) / k * sum_e |g_e -
    mean g|^2, g_e = 2 (G_e theta - c_e) the gradient of MSE_e; lam = ``warmup_penalty`` for the
    first ``warmup_epochs`` steps, then ``penalty``."""
    E, k = ce.shape
    m, v = np.zeros(k), np.zeros(k)
    g = np.empty((E, k))
    for t in range(1, epochs + 1):
        lam = warmup_penalty if t <= warmup_epochs else penalty
        for e in range(E):
            g[e] = 2 * (Ge[e] @ theta - ce[e])
        mean = g.sum(axis=0) / E
        grad = mean.copy()
        if E > 1:
            for e in range(E):
                grad += lam * 2 / (E - 1) / k * 2 * (2 * Ge[e] @ (g[e] - mean))
        adam_step(theta, grad, m, v, t, lr)


class KerHRM(oodfs.Selector):
    """Kernelized heterogeneous risk minimisation (Liu et al. 2021): HRM on neural tangent features."""

    name = "kerhrm"
    supports_sample_weight: ClassVar[bool] = False
    # the network's random initialisation is drawn per column position
    permutation_invariant = False
    # the authors' selection-bias runs set k to 40, 30, 20 at training bias rates 1.5, 1.9, 2.3
    grid: ClassVar[dict] = {"n_components": [20, 30, 40]}

    def __init__(
        self,
        n_components=30,
        width=1024,
        n_envs=2,
        outer_iters=20,
        epochs=3000,
        lr=7e-3,
        penalty=0.1,
        warmup_penalty=0.6,
        warmup_epochs=500,
        cluster_lam=1e-2,
        cluster_tol=0.1,
        cluster_max_iter=100,
        score="gradient",
        n_repeats=5,
        k=5,
        random_state=None,
    ):
        self.n_components = n_components
        self.width = width
        self.n_envs = n_envs
        self.outer_iters = outer_iters
        self.epochs = epochs
        self.lr = lr
        self.penalty = penalty
        self.warmup_penalty = warmup_penalty
        self.warmup_epochs = warmup_epochs
        self.cluster_lam = cluster_lam
        self.cluster_tol = cluster_tol
        self.cluster_max_iter = cluster_max_iter
        self.score = score
        self.n_repeats = n_repeats
        self.k = k
        self.random_state = random_state

    def _check(self, n, d):
        if self.score not in SCORES:
            raise oodfs.OodfsError(f"kerhrm score must be one of {', '.join(SCORES)}, got {self.score!r}")
        for what in ("lr", "cluster_lam", "cluster_tol"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise oodfs.OodfsError(f"kerhrm {what} must be a positive number, got {v!r}")
        for what in ("penalty", "warmup_penalty"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                raise oodfs.OodfsError(f"kerhrm {what} must be a number >= 0, got {v!r}")
        for what, low in (
            ("n_components", 1), ("width", 1), ("n_envs", 2), ("outer_iters", 1), ("epochs", 1),
            ("warmup_epochs", 0), ("cluster_max_iter", 1), ("n_repeats", 1),
        ):  # fmt: skip
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise oodfs.OodfsError(f"kerhrm {what} must be an integer >= {low}, got {v!r}")
        if n < 4 * self.n_envs:
            raise oodfs.OodfsError(
                f"kerhrm needs at least {4 * self.n_envs} rows for {self.n_envs} environments, got {n}"
            )
        most = min(n, self.width * d + 2 * self.width + 1)
        if self.n_components > most:
            raise oodfs.OodfsError(
                f"kerhrm n_components must be at most {most} (the rows and the tangent features), "
                f"got {self.n_components}"
            )

    def _fit_scores(self, X, y, sample_weight):
        return self._fit_detailed(X, y).values

    def _fit_detailed(self, X, y) -> oodfs.GridFit:
        n, d = X.shape
        self._check(n, d)
        sd = X.std(axis=0)
        Xs = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        yc = y - y.mean()
        rng = np.random.default_rng(int_seed(self.random_state))
        net = TangentNetwork(d, int(self.width), rng)
        NTF = net.tangent_features(Xs)
        # U S = NTF V_k': the reduced tangent features of the training rows
        U, S, VT = randomized_svd(
            NTF, n_components=int(self.n_components), n_iter=10, random_state=int(rng.integers(2**31 - 1))
        )
        del NTF
        feats = (U * S).astype(float)
        f0 = net.output(Xs)
        target = yc - f0  # the linear model learns the residual of the network at initialisation
        n_envs = int(self.n_envs)
        domain = rng.integers(0, n_envs, n)
        variant = feats
        for _ in range(int(self.outer_iters)):
            domain, cluster_iters = cluster_environments(
                variant, yc, domain, n_envs, float(self.cluster_lam), float(self.cluster_tol),
                int(self.cluster_max_iter),
            )  # fmt: skip
            theta = self._invariant(rng, feats, target, domain)
            unit = theta / np.linalg.norm(theta)
            variant = feats - np.outer(feats @ unit, unit)
        dw = VT.T @ theta  # the parameter step of the linearised network
        scores = self._input_scores(net, Xs, yc, dw, rng)
        self.environments_ = domain
        self.theta_ = theta
        shares = np.bincount(domain, minlength=n_envs) / n
        return oodfs.GridFit(
            scores,
            {
                "env_min_share": float(shares.min()),
                "env_max_share": float(shares.max()),
                "env_cluster_iters": float(cluster_iters),
            },
        )

    def _invariant(self, rng, feats, target, domain):
        """KerHRM's Mp: theta of f0 + u theta on the inferred environments (docs/PROTOCOL.md, 12)."""
        k = feats.shape[1]
        envs = [domain == e for e in range(int(self.n_envs)) if (domain == e).any()]
        Ge = np.stack([feats[r].T @ feats[r] / r.sum() for r in envs])
        ce = np.stack([feats[r].T @ target[r] / r.sum() for r in envs])
        bound = 0.1 * math.sqrt(6.0 / (k + 1))  # xavier-uniform with gain 0.1, as the authors'
        theta = rng.uniform(-bound, bound, k)
        invariant_train(theta, Ge, ce, int(self.epochs), float(self.lr), float(self.penalty),
                        float(self.warmup_penalty), int(self.warmup_epochs))  # fmt: skip
        return theta

    def _input_scores(self, net, Xs, yc, dw, rng):
        """How much the final predictor depends on each (standardised) input (docs/PROTOCOL.md, 12)."""
        if self.score == "gradient":
            return np.abs(net.linearised_input_gradient(Xs, dw)).mean(axis=0)
        base = np.mean((yc - net.linearised(Xs, dw)) ** 2)
        scores = np.zeros(Xs.shape[1])
        for j in range(Xs.shape[1]):
            for _ in range(int(self.n_repeats)):
                Xp = Xs.copy()
                Xp[:, j] = rng.permutation(Xp[:, j])
                scores[j] += np.mean((yc - net.linearised(Xp, dw)) ** 2) - base
        return scores / int(self.n_repeats)

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state):
        return [cls(**p, random_state=random_state)._fit_detailed(X, y) for p in points]
