"""The downstream MLPs' fused training kernel (numba): forward, backward and Adam of one model in
one compiled loop, model after model.

It runs the torch engine's algorithm (:mod:`oodfs.run.downstream`) step for step: the same
initial weights, validation split, minibatch order (one ``torch.randperm`` per epoch from the
same generator), float32 arithmetic, ``torch.optim.Adam``'s update with a learning rate per
model, and the same per-epoch schedule and stopping rule. What differs is the order of float
operations (sums over the minibatch, fused multiply-adds), so a model's numbers differ from the
torch engine's by rounding, which training amplifies as any change of summation order would;
docs/PROTOCOL.md, section 4, gives the measured size of that difference.

A model's arithmetic depends on its own parameters, columns and the shared minibatch order only,
so a subset gets bit-for-bit the same network whatever else is trained in the same call.
Activations are stored unit by unit over the rows of a minibatch, ``A[unit, row]``, so every
inner loop runs over contiguous rows and is vectorised.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# reassoc + contract only: sums may be reordered and multiply-adds fused (float order), but no
# approximate division, square root or exp and no assumptions about NaN or infinities
_JIT = dict(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})


@njit(**_JIT)
def _offsets(k, hidden):
    """Offsets of ``W_l`` (in_l x out_l, row-major) and ``b_l`` in a model's flat parameters."""
    L = hidden.size + 1
    wo = np.empty(L, np.int64)
    bo = np.empty(L, np.int64)
    o = 0
    fan_in = k
    for li in range(L):
        out = hidden[li] if li < L - 1 else 1
        wo[li] = o
        o += fan_in * out
        bo[li] = o
        o += out
        fan_in = out
    return wo, bo, o


@njit(**_JIT)
def _forward(theta, A, hidden, k, wo, bo, B):
    """Rows ``A[:k, :B]`` hold the model's inputs; each layer's units follow. Returns the row of
    the output unit."""
    L = hidden.size + 1
    row_in = 0
    fan_in = k
    row_out = k
    for li in range(L):
        out = hidden[li] if li < L - 1 else 1
        for o in range(out):
            bias = theta[bo[li] + o]
            for r in range(B):
                A[row_out + o, r] = bias
            for i in range(fan_in):
                w = theta[wo[li] + i * out + o]
                for r in range(B):
                    A[row_out + o, r] += w * A[row_in + i, r]
            if li < L - 1:
                for r in range(B):
                    if not A[row_out + o, r] > 0:  # ReLU (clamp_min(0))
                        A[row_out + o, r] = 0.0
        row_in = row_out
        row_out += out
        fan_in = out
    return row_in


@njit(**_JIT)
def _sigmoid(z):
    """1 / (1 + exp(-z)) in float32, without overflow for large |z|."""
    if z >= 0:
        return np.float32(1.0) / (np.float32(1.0) + np.exp(-z))
    e = np.exp(z)
    return e / (np.float32(1.0) + e)


@njit(**_JIT)
def _bce_logit(z, y):
    """Binary cross-entropy of the logit ``z`` against ``y`` (0 or 1): softplus(z) - y z, stable."""
    return max(z, np.float32(0.0)) - y * z + np.log1p(np.exp(-abs(z)))


@njit(**_JIT)
def _load(A, X, cols, m, k, start, B):
    for i in range(k):
        c = cols[m, i]
        for r in range(B):
            A[i, r] = X[c, start + r]


@njit(**_JIT)
def train_epoch(
    Xp,
    yp,
    Xva,
    yva,
    hidden,
    cols,
    ks,
    theta,
    m1,
    m2,
    grad,
    best_theta,
    lr_m,
    active,
    since,
    best_val,
    best_epoch,
    epochs,
    epoch,
    step0,
    batch,
    b1,
    b2,
    eps,
    lr_floor,
    lr_factor,
    patience,
    min_delta,
    keep_best,
    A,
    D,
    logistic=False,
):
    """One epoch of every active model on the rows of ``Xp`` (d, n; columns in minibatch order),
    then its validation loss and the schedule, all in place. Returns the steps of the epoch.
    ``logistic``: the output is a logit trained on the mean binary cross-entropy (a 0/1 target),
    and the validation loss is that cross-entropy; otherwise the mean squared error."""
    n = Xp.shape[1]
    M = ks.size
    w1 = np.float32(1.0 - b1)
    b2f = np.float32(b2)
    w2 = np.float32(1.0 - b2)
    epsf = np.float32(eps)
    n_steps = (n + batch - 1) // batch
    for m in range(M):
        if not active[m]:
            continue
        k = ks[m]
        wo, bo, P = _offsets(k, hidden)
        L = wo.size
        th = theta[m]
        mm1 = m1[m]
        mm2 = m2[m]
        lr = lr_m[m]
        for s in range(n_steps):
            start = s * batch
            B = min(batch, n - start)
            _load(A, Xp, cols, m, k, start, B)
            top = _forward(th, A, hidden, k, wo, bo, B)
            if logistic:  # d mean(BCE(sigmoid(z), y)) / d z = (sigmoid(z) - y) / B
                c1 = np.float32(1.0 / B)
                for r in range(B):
                    D[top, r] = (_sigmoid(A[top, r]) - yp[start + r]) * c1
            else:
                c2 = np.float32(2.0 / B)  # d mean((h - y)^2) / d h
                for r in range(B):
                    D[top, r] = (A[top, r] - yp[start + r]) * c2
            row_out = top
            for li in range(L - 1, -1, -1):
                out = hidden[li] if li < L - 1 else 1
                fan_in = hidden[li - 1] if li > 0 else k
                row_in = row_out - fan_in
                for o in range(out):
                    acc = np.float32(0.0)
                    for r in range(B):
                        acc += D[row_out + o, r]
                    grad[bo[li] + o] = acc
                    for i in range(fan_in):
                        acc = np.float32(0.0)
                        for r in range(B):
                            acc += A[row_in + i, r] * D[row_out + o, r]
                        grad[wo[li] + i * out + o] = acc
                if li > 0:
                    for i in range(fan_in):
                        for r in range(B):
                            D[row_in + i, r] = 0.0
                        for o in range(out):
                            w = th[wo[li] + i * out + o]
                            for r in range(B):
                                D[row_in + i, r] += w * D[row_out + o, r]
                        for r in range(B):
                            if not A[row_in + i, r] > 0:
                                D[row_in + i, r] = 0.0
                row_out = row_in
            # torch.optim.Adam's update (the torch engine's arithmetic), this model's learning rate
            step = step0 + s + 1
            bc2 = np.float32(math.sqrt(1.0 - b2**step))
            scale = np.float32(-1.0 / (1.0 - b1**step))
            for p in range(P):
                g = grad[p]
                a = mm1[p]
                a = a + w1 * (g - a)
                mm1[p] = a
                v = mm2[p] * b2f + w2 * g * g
                mm2[p] = v
                th[p] = th[p] + scale * ((a * lr) / (np.sqrt(v) / bc2 + epsf))
        # validation MSE, then the schedule: new minimum, plateau, decay, stop
        total = np.float32(0.0)
        nva = Xva.shape[1]
        for start in range(0, nva, batch):
            B = min(batch, nva - start)
            _load(A, Xva, cols, m, k, start, B)
            top = _forward(th, A, hidden, k, wo, bo, B)
            if logistic:
                for r in range(B):
                    total += _bce_logit(A[top, r], yva[start + r])
            else:
                for r in range(B):
                    e = A[top, r] - yva[start + r]
                    total += e * e
        v = total / np.float32(nva)
        if v < best_val[m] * np.float32(1.0 - min_delta):
            best_val[m] = v
            best_epoch[m] = epoch
            since[m] = 0
            if keep_best:
                best_theta[m, :] = th
        else:
            since[m] += 1
        epochs[m] = epoch
        if since[m] >= patience:
            if lr_m[m] <= np.float32(lr_floor * (1 + 1e-9)):
                active[m] = False
                lr_m[m] = 0.0
            else:
                lr_m[m] = max(lr_m[m] / np.float32(lr_factor), np.float32(lr_floor))
                since[m] = 0
    return n_steps


@njit(**_JIT)
def predict(XT, hidden, cols, ks, theta, batch):
    """Outputs of every model on the rows of ``XT`` (d, n), float32, shape (n_models, n)."""
    M = ks.size
    n = XT.shape[1]
    out = np.empty((M, n), np.float32)
    A = np.empty((cols.shape[1] + hidden.sum() + 1, batch), np.float32)
    for m in range(M):
        k = ks[m]
        wo, bo, _ = _offsets(k, hidden)
        for start in range(0, n, batch):
            B = min(batch, n - start)
            _load(A, XT, cols, m, k, start, B)
            top = _forward(theta[m], A, hidden, k, wo, bo, B)
            for r in range(B):
                out[m, start + r] = A[top, r]
    return out
