"""Linear invariant risk minimisation (Arjovsky, Bottou, Gulrajani and Lopez-Paz, 2019) as in the
authors' reference code for their synthetic experiment (``InvariantRiskMinimization`` in
``code/experiment_synthetic/models.py``).

The reference learns a d x d matrix phi with a fixed classifier w = 1 (a vector of ones),
starting from phi = I, by Adam (lr 1e-3, 100 000 steps) on

    reg * sum_e R_e(phi w) + (1 - reg) * sum_e mean_j (dR_e / dw_j)^2,

R_e the mean squared error in environment e, and returns phi w; reg is chosen from
{0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1}. Every quantity depends on the data only through each
environment's second moments S_e = X_e'X_e / n_e and c_e = X_e'y_e / n_e, so this module runs the
same Adam iterations on those (float64, the exact gradient written out, all grid points batched),
independent of n. Scores: |phi w|. With ``fit_intercept`` a constant column is appended to X (it
is part of phi's input, as any invariant feature) and its coefficient is not scored.

On a binary target (0.0 / 1.0) R_e is the IRM paper's logistic loss, the mean binomial deviance
softplus(x'phi w) - y x'phi w of environment e (its Colored-MNIST experiment's
``binary_cross_entropy_with_logits``), in the same linear model, penalty, Adam and grid. The
loss no longer depends on the data through moments alone: every Adam step makes full passes over
each environment's rows (:func:`irm_logistic_solutions`), so a fit costs O(n d) per step.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numba import njit

import oodfs

from ._weights import refuse_weights


def environment_moments(X, y, groups, n_envs, fit_intercept=True):
    """S (E, d, d) and c (E, d): per-environment second moments, with a constant column first
    when ``fit_intercept``."""
    if fit_intercept:
        X = np.column_stack([np.ones(len(y)), X])
    S = np.empty((n_envs, X.shape[1], X.shape[1]))
    c = np.empty((n_envs, X.shape[1]))
    for e in range(n_envs):
        m = groups == e
        S[e] = X[m].T @ X[m] / m.sum()
        c[e] = X[m].T @ y[m] / m.sum()
    return S, c


@njit(cache=True, nogil=True, error_model="numpy")
def _adam(S, c, regs, lr, n_iterations, beta1, beta2, eps):  # pragma: no cover - compiled
    R, E, d = regs.shape[0], S.shape[0], S.shape[1]
    out = np.empty((R, d))
    v_ = np.empty(d)
    r = np.empty((E, d))
    g = np.empty((E, d))
    pg = np.empty((E, d))
    G = np.empty((d, d))
    for q in range(R):
        a, b = 2.0 * regs[q], 4.0 / d * (1.0 - regs[q])
        phi = np.eye(d)
        m = np.zeros((d, d))
        v = np.zeros((d, d))
        for t in range(1, n_iterations + 1):
            for i in range(d):  # v = phi 1
                acc = 0.0
                for j in range(d):
                    acc += phi[i, j]
                v_[i] = acc
            for e in range(E):  # r_e = S_e v - c_e; g_e = 2 phi' r_e; pg_e = phi g_e
                for i in range(d):
                    acc = 0.0
                    for j in range(d):
                        acc += S[e, i, j] * v_[j]
                    r[e, i] = acc - c[e, i]
                for j in range(d):
                    acc = 0.0
                    for i in range(d):
                        acc += phi[i, j] * r[e, i]
                    g[e, j] = 2.0 * acc
                for i in range(d):
                    acc = 0.0
                    for j in range(d):
                        acc += phi[i, j] * g[e, j]
                    pg[e, i] = acc
            for i in range(d):
                sg = 0.0  # sum_e (S_e phi g_e)_i
                rs = 0.0  # sum_e r_e,i
                for e in range(E):
                    rs += r[e, i]
                    for k in range(d):
                        sg += S[e, i, k] * pg[e, k]
                for j in range(d):
                    outer = 0.0
                    for e in range(E):
                        outer += r[e, i] * g[e, j]
                    G[i, j] = b * (outer + sg) + a * rs
            c1 = lr / (1.0 - beta1**t)
            c2 = 1.0 / (1.0 - beta2**t)
            for i in range(d):
                for j in range(d):
                    m[i, j] = beta1 * m[i, j] + (1.0 - beta1) * G[i, j]
                    v[i, j] = beta2 * v[i, j] + (1.0 - beta2) * G[i, j] * G[i, j]
                    phi[i, j] -= c1 * m[i, j] / (np.sqrt(v[i, j] * c2) + eps)
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += phi[i, j]
            out[q, i] = acc
    return out


def irm_solutions(S, c, regs, lr=1e-3, n_iterations=100_000, beta1=0.9, beta2=0.999, eps=1e-8):
    """phi @ 1 after ``n_iterations`` Adam steps from phi = I, one row per reg.

    With v = phi 1, r_e = S_e v - c_e and g_e = 2 phi' r_e (the gradient of R_e in w):
    dR_e/dphi = 2 r_e 1' and d mean_j(g_e,j^2)/dphi = (4/d)(r_e g_e' + S_e phi g_e 1').
    Adam as torch.optim.Adam (bias-corrected moments; eps added to the corrected root).
    """
    return _adam(
        np.ascontiguousarray(S, dtype=float),
        np.ascontiguousarray(c, dtype=float),
        np.asarray(regs, dtype=float),
        float(lr),
        int(n_iterations),
        beta1,
        beta2,
        eps,
    )


@njit(cache=True, nogil=True, error_model="numpy")
def _adam_logistic(X, y, starts, regs, lr, n_iterations, beta1, beta2, eps):  # pragma: no cover - compiled
    R, n, d = regs.shape[0], X.shape[0], X.shape[1]
    E = starts.shape[0] - 1
    out = np.empty((R, d))
    v_ = np.empty(d)
    s = np.empty(n)
    a_ = np.empty(d)
    g = np.empty(d)
    u = np.empty(d)
    hv = np.empty(d)
    G = np.empty((d, d))
    for q in range(R):
        reg = regs[q]
        pen = 2.0 / d * (1.0 - reg)
        phi = np.eye(d)
        m = np.zeros((d, d))
        v = np.zeros((d, d))
        for t in range(1, n_iterations + 1):
            for i in range(d):  # v = phi 1
                acc = 0.0
                for j in range(d):
                    acc += phi[i, j]
                v_[i] = acc
            G[:, :] = 0.0
            for e in range(E):
                lo, hi = starts[e], starts[e + 1]
                ne = hi - lo
                a_[:] = 0.0  # a_e = X_e' (sigmoid(X_e v) - y_e) / n_e, the gradient of R_e in v
                for r in range(lo, hi):
                    z = 0.0
                    for i in range(d):
                        z += X[r, i] * v_[i]
                    if z >= 0:
                        p = 1.0 / (1.0 + np.exp(-z))
                    else:
                        ez = np.exp(z)
                        p = ez / (1.0 + ez)
                    s[r] = p
                    res = p - y[r]
                    for i in range(d):
                        a_[i] += res * X[r, i]
                for i in range(d):
                    a_[i] /= ne
                for j in range(d):  # g_e = phi' a_e, the gradient of R_e in w
                    acc = 0.0
                    for i in range(d):
                        acc += phi[i, j] * a_[i]
                    g[j] = acc
                for i in range(d):  # u = phi g_e
                    acc = 0.0
                    for j in range(d):
                        acc += phi[i, j] * g[j]
                    u[i] = acc
                hv[:] = 0.0  # H_e u, H_e = X_e' diag(p (1 - p)) X_e / n_e
                for r in range(lo, hi):
                    z = 0.0
                    for i in range(d):
                        z += X[r, i] * u[i]
                    h = s[r] * (1.0 - s[r]) * z
                    for i in range(d):
                        hv[i] += h * X[r, i]
                for i in range(d):
                    hv[i] /= ne
                for i in range(d):  # reg dR_e/dphi + (1 - reg) dP_e/dphi
                    for j in range(d):
                        G[i, j] += reg * a_[i] + pen * (a_[i] * g[j] + hv[i])
            c1 = lr / (1.0 - beta1**t)
            c2 = 1.0 / (1.0 - beta2**t)
            for i in range(d):
                for j in range(d):
                    m[i, j] = beta1 * m[i, j] + (1.0 - beta1) * G[i, j]
                    v[i, j] = beta2 * v[i, j] + (1.0 - beta2) * G[i, j] * G[i, j]
                    phi[i, j] -= c1 * m[i, j] / (np.sqrt(v[i, j] * c2) + eps)
        for i in range(d):
            acc = 0.0
            for j in range(d):
                acc += phi[i, j]
            out[q, i] = acc
    return out


def irm_logistic_solutions(
    X, y, groups, regs, lr=1e-3, n_iterations=100_000, beta1=0.9, beta2=0.999, eps=1e-8, fit_intercept=True
):
    """phi @ 1 after ``n_iterations`` Adam steps from phi = I on the logistic IRM objective, one
    row per reg (with a constant column first when ``fit_intercept``).

    With v = phi 1, a_e = X_e'(sigmoid(X_e v) - y_e) / n_e and g_e = phi' a_e (the gradient of R_e
    in w): dR_e/dphi = a_e 1' and d mean_j(g_e,j^2)/dphi = (2/d)(a_e g_e' + H_e phi g_e 1'),
    H_e = X_e' diag(p (1 - p)) X_e / n_e. Adam as in :func:`irm_solutions`.
    """
    if fit_intercept:
        X = np.column_stack([np.ones(len(y)), X])
    order = np.argsort(groups, kind="stable")
    starts = np.searchsorted(groups[order], np.arange(int(groups.max()) + 2))
    return _adam_logistic(
        np.ascontiguousarray(X[order], dtype=float),
        np.ascontiguousarray(y[order], dtype=float),
        starts.astype(np.int64),
        np.asarray(regs, dtype=float),
        float(lr),
        int(n_iterations),
        beta1,
        beta2,
        eps,
    )


def _check(p):
    reg, lr, n_it = p["reg"], p["lr"], p["n_iterations"]
    if not (isinstance(reg, (int, float, np.number)) and 0 <= reg <= 1):
        raise oodfs.OodfsError(f"irm reg must be a number in [0, 1], got {reg!r}")
    if not (isinstance(lr, (int, float, np.number)) and lr > 0):
        raise oodfs.OodfsError(f"irm lr must be a positive number, got {lr!r}")
    if isinstance(n_it, bool) or not isinstance(n_it, (int, np.integer)) or n_it < 1:
        raise oodfs.OodfsError(f"irm n_iterations must be a positive integer, got {n_it!r}")


class IRM(oodfs.Selector):
    """Linear invariant risk minimisation (the IRM reference code): |phi w|; needs environment labels."""

    name = "irm"
    uses_groups: ClassVar[bool] = True
    supports_sample_weight: ClassVar[bool] = False
    min_group_rows: ClassVar[int] = 1
    #: the reference code's penalty grid (reg weighs the error term, 1 - reg the penalty)
    grid: ClassVar[dict] = {"reg": [0.0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1]}
    task_types: ClassVar[tuple[str, ...]] = ("regression", "binary")

    def __init__(self, reg=1e-3, lr=1e-3, n_iterations=100_000, fit_intercept=True, k=5, random_state=None):
        self.reg = reg
        self.lr = lr
        self.n_iterations = n_iterations
        self.fit_intercept = fit_intercept
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight, groups):
        refuse_weights(sample_weight, "irm")
        return self._fit_grid(
            X, y, [self.get_params()], sample_weight=None, random_state=None, groups=groups, task=self.task_
        )[0]

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, groups, task="regression"):
        refuse_weights(sample_weight, "irm")
        n_envs = int(groups.max()) + 1
        out = [None] * len(points)
        batches = {}
        for i, p in enumerate(points):  # one batched run per (lr, n_iterations, fit_intercept)
            _check(p)
            batches.setdefault((float(p["lr"]), int(p["n_iterations"]), bool(p["fit_intercept"])), []).append(
                i
            )
        for (lr, n_it, intercept), idx in batches.items():
            regs = [float(points[i]["reg"]) for i in idx]
            if task == "binary":
                sol = irm_logistic_solutions(
                    X, y, groups, regs, lr=lr, n_iterations=n_it, fit_intercept=intercept
                )
            else:
                S, c = environment_moments(X, y, groups, n_envs, intercept)
                sol = irm_solutions(S, c, regs, lr=lr, n_iterations=n_it)
            for row, i in zip(sol, idx):
                out[i] = np.abs(row[1:] if intercept else row)
        return out
