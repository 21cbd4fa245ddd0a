"""The DWR that later stable-learning papers ran: the objective and optimiser of the public SVI code
(Yu et al. 2023, ``algorithm/DWR.py``), which is not the objective of oodfs's ``dwr``.

Over v in R^n (the weights are w = v^2), with the covariance weighted by w / n (not normalised)::

    L(v) = (2000 / p) sum_j sqrt(sum_{k != j} M_jk Cov_w(X_j, X_k)^2 + 1e-10)
           + 0.5 (sum_i w_i - n)^2 + 5e-5 sum_i w_i^2

Adam (torch's update, betas 0.9 / 0.999, eps 1e-8) on v from v = 1, learning rate 0.01, at most
``steps`` steps; it stops early once the decorrelation term (the sum of square roots) is at most
0.001. (The reference also tests ``|loss - loss_prev| <= 1e-8`` but never updates ``loss_prev``
from 0, so that test never fires; it is not reproduced.) The weights are w / mean(w).

Differences from oodfs's ``dwr`` (docs/PROTOCOL.md, "SVI" and "community DWR"): a sum of per-row
norms instead of a sum of squares, an unnormalised covariance whose total mass is held near 1 by
a penalty, a penalty on sum w^2 (i.e. on v^4), and an optimiser that runs a fixed budget.
The gradient is written out (float64 numpy; the reference uses float32 torch autograd).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from threadpoolctl import threadpool_limits

import oodfs
from oodfs import OodfsError

#: the reference's constants (hard-coded there)
BALANCE_SCALE = 2000.0
SUM_PENALTY = 0.5
L2_PENALTY = 5e-5
SQRT_EPS = 1e-10


def community_dwr_loss(v: np.ndarray, X: np.ndarray, mask: np.ndarray | None = None):
    """(loss, decorrelation term, gradient d loss / d v) of the reference's DWR at v."""
    n, p = X.shape
    w = v * v
    W = w / n
    xbar = W @ X
    Xc = X - xbar
    C = (Xc * W[:, None]).T @ Xc + (1.0 - W.sum()) * np.outer(xbar, xbar)
    # C = X^T diag(W) X - xbar xbar^T, written through centred rows for accuracy
    Q = C * C if mask is None else C * C * mask
    np.fill_diagonal(Q, 0.0)
    r = np.sqrt(Q.sum(axis=1) + SQRT_EPS)
    balance = float(r.sum())
    sw = float(w.sum())
    loss = BALANCE_SCALE / p * balance + SUM_PENALTY * (sw - n) ** 2 + L2_PENALTY * float(w @ w)
    G = C / r[:, None] if mask is None else C * mask / r[:, None]
    np.fill_diagonal(G, 0.0)
    Gs = 0.5 * (G + G.T)
    # dC/dW_i = (x_i - xbar)(x_i - xbar)^T - xbar xbar^T
    dB_dW = np.einsum("ij,ij->i", Xc @ Gs, Xc) - float(xbar @ Gs @ xbar)
    dL_dw = BALANCE_SCALE / p * dB_dW / n + 2 * SUM_PENALTY * (sw - n) + 2 * L2_PENALTY * w
    return loss, balance, dL_dw * 2.0 * v


def community_dwr_weights(
    X: np.ndarray, mask=None, steps: int = 5000, lr: float = 0.01, stop_balance: float = 1e-3
) -> tuple[np.ndarray, int, float]:
    """Mean-1 weights of the reference DWR, the steps run and the final decorrelation term."""
    n = X.shape[0]
    mask = None if mask is None else np.asarray(mask, dtype=float)
    v = np.ones(n)
    m1 = np.zeros(n)
    m2 = np.zeros(n)
    b1, b2, eps = 0.9, 0.999, 1e-8
    balance = float("nan")
    t = 0
    with threadpool_limits(limits=1, user_api="blas"):
        for t in range(1, int(steps) + 1):
            _, balance, g = community_dwr_loss(v, X, mask)
            m1 = b1 * m1 + (1 - b1) * g
            m2 = b2 * m2 + (1 - b2) * g * g
            denom = np.sqrt(m2) / np.sqrt(1 - b2**t) + eps
            v = v - (lr / (1 - b1**t)) * m1 / denom
            if balance <= stop_balance:  # the reference tests the loss of the step just taken
                break
    w = v * v
    if not np.all(np.isfinite(w)) or w.sum() <= 0:
        raise OodfsError("dwr_community: the optimiser produced no usable weights (non-finite or all zero)")
    return w / w.mean(), t, balance


class DWRCommunity(oodfs.Weighter):
    """Community DWR: the decorrelation weights of the public SVI code (Adam on sqrt(w), lr 0.01).

    The objective and optimiser of ``algorithm/DWR.py`` in the SVI authors' repository, the DWR
    that many later papers ran (module :mod:`oodfs_plugins.independence.dwr_community`); not the
    objective of oodfs's ``dwr``. ``steps`` -- 5000, the reference function's default (the SVI
    experiment scripts pass 20 000); ``lr`` 0.01. It has no grid: the reference fixes every
    constant. Deterministic (``random_state`` is accepted for the common interface).
    """

    name = "dwr_community"
    grid: dict = {}

    def __init__(self, steps: int = 5000, lr: float = 0.01, random_state=None):
        self.steps = steps
        self.lr = lr
        self.random_state = random_state

    def _fit_weights(self, X):
        if not isinstance(self.steps, Integral) or isinstance(self.steps, bool) or self.steps < 1:
            raise OodfsError(f"dwr_community: steps must be a positive integer, got {self.steps!r}")
        lr = self.lr
        if not isinstance(lr, Real) or isinstance(lr, bool) or not np.isfinite(lr) or lr <= 0:
            raise OodfsError(f"dwr_community: lr must be a finite number > 0, got {lr!r}")
        w, self.n_iter_, self.balance_ = community_dwr_weights(X, None, int(self.steps), float(lr))
        return w

    def _diagnostics(self) -> dict:
        return {"n_iter": self.n_iter_, "objective": self.balance_}
