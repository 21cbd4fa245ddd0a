"""The downstream regressor: one small MLP per feature subset, all trained at once.

The paper trains an MLP with hidden layers (5, 5), ReLU and Adam (lr 0.001) on the top-k features and
reports its RMSE in the test environments. The benchmark needs thousands of these fits, so
:func:`fit_downstream` trains every subset of one data set in one call (one compiled kernel, or one tensor
program). The measurements behind each choice below are in benchmarks/downstream_engines/bench_regressor.py
and benchmarks/downstream_engines/bench_downstream_engines.py.

* **Engines.** ``engine="numba"`` (the default) trains each model with a fused kernel
  (:mod:`oodfs.run.downstream_kernel`: forward, backward and Adam of one model in one compiled
  loop), because at h = 5 the tensor program spends most of a step on per-operation overhead;
  ``engine="torch"``, the tensor program of the next three points, is kept for audits. Both run
  the same algorithm (initial weights, validation split, minibatch order, float32 Adam, schedule
  and stopping rule, below) and differ in the order of float operations only; docs/PROTOCOL.md,
  section 4, gives the measured effect (benchmarks/downstream_engines/bench_downstream_engines.py). The kernel
  trains every model on its own, so it needs no packing and a subset's result cannot depend on
  its batch.
* **One network per subset, packed block-diagonally.** Every model sees the same rows, so the
  first layer is one GEMM ``X (B, d) @ W1 (d, M*h1)`` whose column block for model ``m`` is zero
  outside model ``m``'s input columns; the next layers are block-diagonal GEMMs and the output
  layer is ``(M*h_last, M)``. Masked gradients keep the off-block weights at exactly zero, so each
  model is exactly a separate MLP on its own columns. At h = 5 a step costs per-operation
  overhead, not FLOPs, so a few GEMMs beat ``bmm`` over a model dimension and autograd.
* **Hand-written backward pass and Adam** on one flat parameter vector, no autograd graph. Adam is
  element-wise, so one Adam over the packed vector with a learning rate per model is the same as
  one Adam per model (checked against autograd in tests/test_regressor.py).
* **Fixed-size blocks, so a subset's result does not depend on its batch.** Models are trained in
  blocks of exactly ``block_size`` slots (empty slots are inert zeros): BLAS picks its kernel by
  matrix shape, and another kernel sums in another order. A model's initial weights come from
  ``(seed, subset)`` only (``nn.Linear``'s default init, from a generator seeded by
  :func:`oodfs.contract.seeds.derive_seed`); the validation split and minibatch order come from ``seed``;
  schedule and stopping are decided per model. So a subset gets bit-for-bit the same network
  whatever it is batched with, which the runner's cache relies on (tests/test_regressor.py). A
  subset is a *set*: its columns are used in sorted order.
* **Optimiser and schedule.** Adam on standardised inputs and target (training-part mean and
  standard deviation; predictions are mapped back), minibatches of ``batch_size`` = 256. The
  learning rate starts at ``lr_start`` = 0.01 and is divided by ``lr_factor`` (sqrt(10)) each time
  a model's validation MSE has not reached a new minimum for ``patience`` = 40 epochs, down to the
  paper's ``lr`` = 0.001; the next such plateau at 0.001 stops that model (or ``max_epochs``).
  The high start only shortens the way; the end is the paper's Adam 0.001. The validation part
  is ``val_fraction`` = 15 % of the training rows (seeded).
* **Final, not best-validation, parameters** (``restore_best=False``): on this data the i.i.d.
  validation loss flattens long before the out-of-distribution RMSE does, so early stopping here
  decides *when training has converged*, not which weights to keep.
* **Profiles.** :data:`PROFILES` holds the keyword arguments of :func:`fit_downstream` per named
  profile: ``"default"`` (the defaults above) and ``"paper"``, the paper's constant Adam lr 0.001
  (``lr_start = lr = 0.001``). The paper states no epochs or stopping rule; the paper profile
  keeps the same validation-plateau stop: a fixed epoch count would be one more guess.
  docs/PROTOCOL.md, sections 4 and 5, lists both with their measured effect.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

from oodfs.contract.seeds import derive_seed
from oodfs.numeric import one_torch_thread, standardize
from oodfs.validation import OodfsError, check_vector, check_X

if TYPE_CHECKING:  # torch is imported in the functions that train or predict: a process that
    import torch  # trains no MLP (a report, a run's parent process) never loads it

__all__ = ["fit_downstream", "DownstreamModels", "PROFILES", "ENGINES"]

#: who trains the MLPs: "numba", a fused per-model kernel (:mod:`oodfs.run.downstream_kernel`), or
#: "torch", the packed tensor program; the same algorithm (module docstring, "Engines")
ENGINES = ("numba", "torch")

#: keyword arguments of :func:`fit_downstream` per named profile (module docstring, "Profiles");
#: "default" repeats the function's defaults, so a profile can be read without the signature
PROFILES = {
    "default": {
        "hidden": (5, 5),
        "lr": 1e-3,
        "lr_start": 1e-2,
        "lr_factor": 10**0.5,
        "batch_size": 256,
        "max_epochs": 1000,
        "patience": 40,
        "min_delta": 0.0,
        "restore_best": False,
        "val_fraction": 0.15,
        "engine": "numba",
    },
}
PROFILES["paper"] = {**PROFILES["default"], "lr_start": 1e-3}


def _check_subsets(subsets, d: int) -> list[tuple[int, ...]]:
    if isinstance(subsets, (str, bytes)) or not hasattr(subsets, "__iter__"):
        raise OodfsError(f"subsets must be a sequence of tuples of column indices, got {subsets!r}")
    out = []
    for i, s in enumerate(subsets):
        if isinstance(s, (str, bytes)):
            raise OodfsError(f"subset {i} must be a sequence of column indices, got {s!r}")
        try:
            cols = [int(j) for j in s]
            ok = all(float(j) == int(j) for j in s)
        except (TypeError, ValueError):
            raise OodfsError(f"subset {i} must be a sequence of column indices, got {s!r}") from None
        if not ok:
            raise OodfsError(f"subset {i} has a non-integer column index: {s!r}")
        if not cols:
            raise OodfsError(f"subset {i} is empty; a downstream model needs at least one feature")
        bad = [j for j in cols if j < 0 or j >= d]
        if bad:
            raise OodfsError(f"subset {i} has column index {bad[0]} out of range for X with {d} columns")
        if len(set(cols)) != len(cols):
            raise OodfsError(f"subset {i} repeats a column: {s!r}")
        out.append(tuple(sorted(cols)))
    if not out:
        raise OodfsError("subsets is empty; give at least one feature subset")
    return out


@dataclass
class _Block:
    """Trained parameters of up to ``block_size`` models, packed as described in the module doc."""

    subsets: list[tuple[int, ...]]
    weights: list[torch.Tensor]  # W_l, shape (in_l, out_l)
    biases: list[torch.Tensor]  # b_l, shape (out_l,)
    slots: list[int]  # output columns of the occupied slots

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        import torch

        h = X
        last = len(self.weights) - 1
        for i, (W, b) in enumerate(zip(self.weights, self.biases)):
            h = torch.addmm(b, h, W)
            if i < last:
                h = h.clamp_min_(0)
        return h[:, self.slots]  # (n, n_models)


@dataclass
class DownstreamModels:
    """The trained downstream MLPs, one per subset (in the order given to :func:`fit_downstream`)."""

    subsets: list[tuple[int, ...]]
    n_features: int
    x_mean: np.ndarray
    x_scale: np.ndarray
    y_mean: float
    y_scale: float
    blocks: list[_Block]  # the torch engine's packed blocks (empty for the numba engine)
    #: per model: epochs trained, epoch of its lowest validation loss, that lowest validation
    #: RMSE (original units; on the internal validation part)
    epochs: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    best_epoch: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    val_rmse: np.ndarray = field(default_factory=lambda: np.zeros(0))
    fit_seconds: float = 0.0
    #: optimiser steps (torch engine: each block's, summed; numba engine: each model's, summed)
    n_steps: int = 0
    engine: str = "torch"
    #: the numba engine's models: (hidden sizes, columns, column counts, flat parameters)
    kernel: tuple | None = None
    #: "regression", or "binary": the outputs are logits and ``predict`` gives probabilities
    task: str = "regression"
    #: per model, its lowest validation loss (MSE of the standardised target, or binary cross-entropy)
    val_loss: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return len(self.subsets)

    def predict(self, X) -> np.ndarray:
        """Predictions of every model, shape ``(n_subsets, n_samples)``."""
        import torch

        X = check_X(X)
        if X.shape[1] != self.n_features:
            raise OodfsError(f"X has {X.shape[1]} columns, the models were trained on {self.n_features}")
        Xs = ((X - self.x_mean) / self.x_scale).astype(np.float32)
        if self.kernel is not None:  # each model on its own: independent of the batch too
            from oodfs.run.downstream_kernel import predict

            hidden, cols, ks, theta = self.kernel
            out = predict(np.ascontiguousarray(Xs.T), hidden, cols, ks, theta, 256)
            return self._output(out.astype(np.float64))
        Xs = torch.from_numpy(Xs)
        with torch.no_grad(), one_torch_thread():
            out = torch.cat([b.forward(Xs) for b in self.blocks], dim=1)
        # C-contiguous rows: numpy then reduces each model's row the same way whatever the
        # number of models, so rmse() too is independent of how subsets were batched
        return self._output(np.ascontiguousarray(out.T.double().numpy()))

    def _output(self, z: np.ndarray) -> np.ndarray:
        if self.task == "binary":  # the logistic of the logit, in float64
            from scipy.special import expit

            return expit(z)
        return z * self.y_scale + self.y_mean

    def rmse(self, X, y) -> np.ndarray:
        """Root mean squared error of every model on (X, y), shape ``(n_subsets,)`` (not the MSE)."""
        X = check_X(X)
        y = check_vector(y, X.shape[0], "y")
        return np.sqrt(np.mean((self.predict(X) - y[None, :]) ** 2, axis=1))


def _init_block(subsets, d: int, hidden: tuple[int, ...], seed: int):
    """Packed initial parameters and gradient masks for one block of models.

    Model ``m`` draws its weights from a generator seeded by ``(seed, subset)``, layer by layer,
    exactly like ``nn.Linear``'s default init (weight then bias, U(-1/sqrt(fan_in), +)).
    """
    import torch

    M = len(subsets)
    sizes = list(hidden) + [1]
    weights, biases, wmasks = [], [], []
    for li, h_out in enumerate(sizes):
        rows = d if li == 0 else M * sizes[li - 1]
        weights.append(torch.zeros(rows, M * h_out))
        biases.append(torch.zeros(M * h_out))
        wmasks.append(torch.zeros(rows, M * h_out))
    for m, sub in enumerate(subsets):
        if sub is None:  # an empty slot of a partly filled block: all zeros, masked, inert
            continue
        g = torch.Generator().manual_seed(derive_seed(seed, "downstream-init", *sub))
        fan_in = len(sub)
        for li, h_out in enumerate(sizes):
            bound = 1.0 / math.sqrt(fan_in)
            W = (torch.rand(fan_in, h_out, generator=g, dtype=torch.float64) * 2 - 1) * bound
            b = (torch.rand(h_out, generator=g, dtype=torch.float64) * 2 - 1) * bound
            cols = slice(m * h_out, (m + 1) * h_out)
            if li == 0:
                idx = torch.tensor(sub)
                weights[0][idx, cols] = W.float()
                wmasks[0][idx, cols] = 1.0
            else:
                h_in = sizes[li - 1]
                rows = slice(m * h_in, (m + 1) * h_in)
                weights[li][rows, cols] = W.float()
                wmasks[li][rows, cols] = 1.0
            biases[li][cols] = b.float()
            fan_in = h_out
    return weights, biases, wmasks


def _train_block(
    subsets,
    Xtr,
    ytr,
    Xva,
    yva,
    *,
    hidden,
    lr,
    lr_start,
    lr_factor,
    batch_size,
    max_epochs,
    patience,
    min_delta,
    restore_best,
    seed,
    betas=(0.9, 0.999),
    eps=1e-8,
    logistic=False,
):
    import torch

    M = len(subsets)
    n, d = Xtr.shape
    weights, biases, wmasks = _init_block(subsets, d, hidden, seed)
    L = len(weights)

    # one flat vector holds every parameter; the layer tensors are views into it
    shapes = []
    for W, b in zip(weights, biases):
        shapes += [W.shape, b.shape]
    sizes = [math.prod(s) for s in shapes]
    P = sum(sizes)
    flat = torch.cat([t.reshape(-1) for pair in zip(weights, biases) for t in pair])
    mask = torch.cat([t.reshape(-1) for w in wmasks for t in (w, torch.ones(w.shape[1]))])
    grad = torch.zeros(P)
    m1 = torch.zeros(P)
    m2 = torch.zeros(P)
    # which model each parameter belongs to (per-model learning rates and snapshots)
    owner = torch.cat(
        [
            t.reshape(-1)
            for li, w in enumerate(weights)
            for t in (
                (torch.arange(w.shape[1]) // (w.shape[1] // M)).expand(w.shape[0], -1),
                torch.arange(w.shape[1]) // (w.shape[1] // M),
            )
        ]
    )

    def views(buf):
        out, o = [], 0
        for s, k in zip(shapes, sizes):
            out.append(buf[o : o + k].view(s))
            o += k
        return out[0::2], out[1::2]

    Ws, bs = views(flat)
    gWs, gbs = views(grad)
    best = flat.clone()
    best_val = torch.full((M,), float("inf"))
    since = torch.zeros(M, dtype=torch.long)
    active = torch.tensor([s is not None for s in subsets])
    epochs = torch.zeros(M, dtype=torch.long)
    best_epoch = torch.zeros(M, dtype=torch.long)
    lr_model = torch.where(active, float(lr_start), 0.0)  # 0 freezes a model (and empty slots)
    lr_elem = lr_model[owner]

    gen = torch.Generator().manual_seed(derive_seed(seed, "downstream-shuffle"))
    b1, b2 = betas
    step = 0
    acts = [None] * L  # post-ReLU activations, acts[i] is the input of layer i+1
    for epoch in range(1, max_epochs + 1):
        perm = torch.randperm(n, generator=gen)
        Xp, yp = Xtr[perm], ytr[perm]
        for start in range(0, n, batch_size):
            xb = Xp[start : start + batch_size]
            yb = yp[start : start + batch_size]
            B = xb.shape[0]
            # forward
            h = xb
            for i in range(L):
                h = torch.addmm(bs[i], h, Ws[i])
                if i < L - 1:
                    h.clamp_min_(0)
                    acts[i] = h
            # backward of the mean squared error (or, for a logit, the mean binary cross-entropy),
            # per model (columns of h)
            delta = (torch.sigmoid(h) - yb).mul_(1.0 / B) if logistic else (h - yb).mul_(2.0 / B)  # (B, M)
            for i in range(L - 1, -1, -1):
                inp = acts[i - 1] if i > 0 else xb
                torch.mm(inp.T, delta, out=gWs[i])
                torch.sum(delta, 0, out=gbs[i])
                if i > 0:
                    delta = torch.mm(delta, Ws[i].T).mul_(inp > 0)
            grad.mul_(mask)
            # Adam (torch.optim.Adam's update, element-wise over the packed vector) with a
            # learning rate per model
            step += 1
            m1.lerp_(grad, 1 - b1)
            m2.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            denom = m2.sqrt().div_(math.sqrt(1 - b2**step)).add_(eps)
            flat.addcdiv_(m1 * lr_elem, denom, value=-1.0 / (1 - b1**step))
        # per model: validation loss, snapshot, learning-rate decay on plateau, stop
        with torch.no_grad():
            h = Xva
            for i in range(L):
                h = torch.addmm(bs[i], h, Ws[i])
                if i < L - 1:
                    h.clamp_min_(0)
            if logistic:  # binary cross-entropy of the logits
                val = torch.nn.functional.binary_cross_entropy_with_logits(
                    h, yva.expand_as(h), reduction="none"
                ).mean(0)
            else:
                val = ((h - yva) ** 2).mean(0)
        improved = active & (val < best_val * (1 - min_delta))
        if improved.any():
            best = torch.where(improved[owner], flat, best)
            best_val = torch.where(improved, val, best_val)
            best_epoch[improved] = epoch
        since = torch.where(improved, 0, since + 1)
        epochs[active] = epoch
        plateau = active & (since >= patience)
        if plateau.any():
            at_floor = lr_model <= lr * (1 + 1e-9)
            decay = plateau & ~at_floor
            lr_model = torch.where(decay, torch.clamp(lr_model / lr_factor, min=lr), lr_model)
            since = torch.where(decay, 0, since)
            done = plateau & at_floor
            active &= ~done
            lr_model = torch.where(done, 0.0, lr_model)
            lr_elem = lr_model[owner]
            if not active.any():
                break
    final = best if restore_best else flat
    bW, bb = views(final)
    real = [m for m, s in enumerate(subsets) if s is not None]
    return (
        _Block([subsets[m] for m in real], [w.clone() for w in bW], [b.clone() for b in bb], real),
        epochs.numpy()[real],
        best_epoch.numpy()[real],
        best_val.numpy()[real],
        step,
    )


def fit_downstream(
    X,
    y,
    subsets: Sequence[Sequence[int]],
    seed: int,
    *,
    hidden=(5, 5),
    lr=1e-3,
    lr_start: float = 1e-2,
    lr_factor: float = 10**0.5,
    batch_size: int = 256,
    max_epochs: int = 1000,
    patience: int = 40,
    min_delta: float = 0.0,
    restore_best: bool = False,
    val_fraction: float = 0.15,
    block_size: int = 4,
    engine: str = "numba",
    task: str = "regression",
) -> DownstreamModels:
    """Train one MLP per feature subset of ``X`` (all subsets batched) and return them.

    ``subsets`` is a sequence of column-index tuples (lengths may differ; order within a tuple
    does not matter); ``seed`` fixes the validation split, the minibatch order and (with the
    subset) every model's initial weights. Returns a :class:`DownstreamModels` with
    ``predict(X) -> (n_subsets, n)`` and ``rmse(X, y) -> (n_subsets,)``.

    Keyword arguments (the paper's value where it states one; ours; why -- module docstring):

    * ``hidden`` -- hidden layer sizes, ReLU. Paper: (5, 5); ours: the same.
    * ``lr`` -- Adam's final learning rate. Paper: 0.001 (constant); ours: 0.001.
    * ``lr_start``, ``lr_factor`` -- the schedule. Paper: a constant lr (``lr_start = lr``, the
      ``"paper"`` profile). Ours: start at 0.01, divide by sqrt(10) after each plateau of the
      validation MSE down to ``lr`` (the high start only shortens the way to the same end).
    * ``patience``, ``min_delta`` -- a plateau is ``patience`` (40) epochs without a new minimum
      of the validation MSE beyond a relative ``min_delta`` (0); a plateau at ``lr`` stops
      the model. Paper: no stopping rule stated.
    * ``max_epochs`` -- cap on the epochs, 1000 (rarely reached). Paper: none stated.
    * ``batch_size`` -- 256 (as the authors' code; the paper states none).
    * ``val_fraction`` -- share of the training rows held out for that validation, 0.15
      (seeded). Paper: none (it states no stopping rule, so no hold-out).
    * ``restore_best`` -- False: the final parameters, not the best-validation snapshot
      (the latter is less converged out of distribution).
    * ``block_size`` -- models per packed block of the torch engine, 4 (changing it may change
      the last bits).
    * ``engine`` -- ``"numba"`` (default), a fused per-model kernel, or ``"torch"``, the packed
      tensor program (for audits): the same algorithm, numbers equal up to float order
      (module docstring, "Engines").
    * ``task`` -- ``"regression"``: a linear output on the standardised target, trained on the
      mean squared error; ``"binary"`` (y of 0.0 / 1.0): a logistic output (one logit) trained
      on the mean binary cross-entropy, which is also the validation loss of the schedule; the
      target is not standardised and ``predict`` gives the probability of class 1.0
      (docs/PROTOCOL.md, "Task types").

    :data:`PROFILES` names these settings per profile. Raises :class:`OodfsError` (a
    ValueError) on an empty, out-of-range or repeated column, a non-finite value, or a bad
    setting.
    """
    import torch

    t0 = time.perf_counter()
    try:
        seed_ok = int(seed) == seed and not isinstance(seed, bool)
    except (TypeError, ValueError):
        seed_ok = False
    if not seed_ok:
        raise OodfsError(f"seed must be an integer, got {seed!r}")
    seed = int(seed)  # derive_seed hashes repr(): np.int64(3) and 3 must give the same models
    X = check_X(X)
    y = check_vector(y, X.shape[0], "y")
    n, d = X.shape
    subs = _check_subsets(subsets, d)
    try:
        hidden = tuple(int(h) for h in hidden)
    except (TypeError, ValueError):
        raise OodfsError(
            f"hidden must be a non-empty tuple of positive layer sizes, got {hidden!r}"
        ) from None
    if not hidden or any(h <= 0 for h in hidden):
        raise OodfsError(f"hidden must be a non-empty tuple of positive layer sizes, got {hidden}")
    for name, v in (
        ("lr", lr),
        ("lr_start", lr_start),
        ("lr_factor", lr_factor),
        ("min_delta", min_delta),
        ("val_fraction", val_fraction),
    ):
        if (
            not isinstance(v, (int, float, np.integer, np.floating))
            or isinstance(v, bool)
            or not math.isfinite(v)
        ):
            raise OodfsError(f"{name} must be a finite number, got {v!r}")
    if not lr > 0:
        raise OodfsError(f"lr must be positive, got {lr}")
    if not lr_start >= lr:
        raise OodfsError(f"lr_start must be at least lr ({lr}), got {lr_start}")
    if not lr_factor > 1:
        raise OodfsError(f"lr_factor must be > 1, got {lr_factor}")
    if not (0 <= min_delta < 1):
        raise OodfsError(f"min_delta must be in [0, 1), got {min_delta}")
    if not 0 < val_fraction < 1:
        raise OodfsError(f"val_fraction must be in (0, 1), got {val_fraction}")
    for name, v in (
        ("batch_size", batch_size),
        ("max_epochs", max_epochs),
        ("patience", patience),
        ("block_size", block_size),
    ):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
            raise OodfsError(f"{name} must be a positive integer, got {v!r}")
    if engine not in ENGINES:
        raise OodfsError(f"engine must be one of {', '.join(map(repr, ENGINES))}, got {engine!r}")
    if task not in ("regression", "binary"):
        raise OodfsError(f"task must be 'regression' or 'binary', got {task!r}")
    logistic = task == "binary"
    if logistic and not np.isin(y, (0.0, 1.0)).all():
        raise OodfsError("a binary target must hold 0.0 and 1.0 only")
    n_val = int(round(val_fraction * n))
    if n_val < 1 or n - n_val < 2:
        raise OodfsError(f"too few samples ({n}) for a validation split of {val_fraction:.0%}")

    rng = np.random.default_rng(derive_seed(seed, "downstream-split"))
    perm = rng.permutation(n)
    tr, va = perm[n_val:], perm[:n_val]
    _, x_mean, x_scale, _ = standardize(X[tr])  # the training part's mean and sd (1 if constant)
    # a logit is fitted to 0/1 as they are; a regression target is standardised
    y_mean = 0.0 if logistic else float(y[tr].mean())
    y_scale = 1.0 if logistic else float(y[tr].std()) or 1.0
    Xs = torch.from_numpy(((X - x_mean) / x_scale).astype(np.float32))
    ys = torch.from_numpy(((y - y_mean) / y_scale).astype(np.float32))[:, None]
    tr_t, va_t = torch.from_numpy(tr), torch.from_numpy(va)
    Xtr, ytr, Xva, yva = Xs[tr_t], ys[tr_t], Xs[va_t], ys[va_t]

    schedule = dict(
        hidden=hidden,
        lr=float(lr),
        lr_start=float(lr_start),
        lr_factor=float(lr_factor),
        restore_best=bool(restore_best),
        batch_size=int(batch_size),
        max_epochs=int(max_epochs),
        patience=int(patience),
        min_delta=float(min_delta),
        seed=seed,
        logistic=logistic,
    )
    if engine == "numba":
        kernel, epochs, best_epoch, val, steps = _train_kernel(subs, Xtr, ytr, Xva, yva, **schedule)
        blocks = []
    else:
        kernel = None
        with one_torch_thread():
            blocks, epochs, best_epoch, val, steps = _train_all(
                subs, Xtr, ytr, Xva, yva, block_size=int(block_size), **schedule
            )
        epochs, best_epoch, val = np.concatenate(epochs), np.concatenate(best_epoch), np.concatenate(val)
    return DownstreamModels(
        subsets=subs,
        n_features=d,
        x_mean=x_mean,
        x_scale=x_scale,
        y_mean=y_mean,
        y_scale=y_scale,
        blocks=blocks,
        epochs=epochs,
        best_epoch=best_epoch,
        val_rmse=np.full(len(subs), np.nan) if logistic else np.sqrt(val.astype(float)) * y_scale,
        val_loss=val.astype(float),
        fit_seconds=time.perf_counter() - t0,
        n_steps=steps,
        engine=engine,
        kernel=kernel,
        task=task,
    )


def _train_all(subs, Xtr, ytr, Xva, yva, *, block_size, **kw):
    blocks, epochs, best_epoch, val, steps = [], [], [], [], 0
    for start in range(0, len(subs), block_size):
        chunk = subs[start : start + block_size]
        chunk = chunk + [None] * (block_size - len(chunk))  # fixed shape: see the module doc
        blk, ep, be, v, st = _train_block(chunk, Xtr, ytr, Xva, yva, **kw)
        blocks.append(blk)
        epochs.append(ep)
        best_epoch.append(be)
        val.append(v)
        steps += st
    return blocks, epochs, best_epoch, val, steps


def _init_flat(subsets, hidden: tuple[int, ...], seed: int) -> np.ndarray:
    """Every model's initial parameters as :func:`_init_block` draws them, flat per model
    (layer by layer: ``W`` (in, out) row-major, then ``b``), zero-padded to one length."""
    import torch

    sizes = list(hidden) + [1]
    flats = []
    for sub in subsets:
        g = torch.Generator().manual_seed(derive_seed(seed, "downstream-init", *sub))
        fan_in = len(sub)
        parts = []
        for h_out in sizes:
            bound = 1.0 / math.sqrt(fan_in)
            W = (torch.rand(fan_in, h_out, generator=g, dtype=torch.float64) * 2 - 1) * bound
            b = (torch.rand(h_out, generator=g, dtype=torch.float64) * 2 - 1) * bound
            parts += [W.float().reshape(-1), b.float()]
            fan_in = h_out
        flats.append(torch.cat(parts).numpy())
    theta = np.zeros((len(subsets), max(f.size for f in flats)), np.float32)
    for i, f in enumerate(flats):
        theta[i, : f.size] = f
    return theta


def _train_kernel(
    subs,
    Xtr,
    ytr,
    Xva,
    yva,
    *,
    hidden,
    lr,
    lr_start,
    lr_factor,
    batch_size,
    max_epochs,
    patience,
    min_delta,
    restore_best,
    seed,
    betas=(0.9, 0.999),
    eps=1e-8,
    logistic=False,
):
    """The numba engine: :func:`oodfs.run.downstream_kernel.train_epoch` trains every model,
    epoch by epoch, on the torch engine's minibatch order (one permutation per epoch from the
    same generator, shared by all models)."""
    import torch

    from oodfs.run.downstream_kernel import train_epoch

    M = len(subs)
    hid = np.asarray(hidden, np.int64)
    theta = _init_flat(subs, hidden, seed)
    ks = np.array([len(s) for s in subs], np.int64)
    cols = np.zeros((M, int(ks.max())), np.int64)
    for i, s in enumerate(subs):
        cols[i, : len(s)] = s
    m1, m2 = np.zeros_like(theta), np.zeros_like(theta)
    grad = np.zeros(theta.shape[1], np.float32)
    best_theta = theta.copy() if restore_best else np.zeros((1, 1), np.float32)
    lr_m = np.full(M, lr_start, np.float32)
    active = np.ones(M, np.bool_)
    since = np.zeros(M, np.int64)
    best_val = np.full(M, np.inf, np.float32)
    best_epoch = np.zeros(M, np.int64)
    epochs = np.zeros(M, np.int64)
    XT = np.ascontiguousarray(Xtr.numpy().T)
    yt = np.ascontiguousarray(ytr.numpy()[:, 0])
    XvaT = np.ascontiguousarray(Xva.numpy().T)
    yva_ = np.ascontiguousarray(yva.numpy()[:, 0])
    A = np.zeros((int(ks.max()) + sum(hidden) + 1, batch_size), np.float32)  # activations
    D = np.zeros_like(A)  # their gradients
    gen = torch.Generator().manual_seed(derive_seed(seed, "downstream-shuffle"))
    n = XT.shape[1]
    step, model_steps = 0, 0
    for epoch in range(1, max_epochs + 1):
        perm = torch.randperm(n, generator=gen).numpy()
        model_steps += int(active.sum()) * -(-n // batch_size)
        step += train_epoch(
            XT[:, perm],
            yt[perm],
            XvaT,
            yva_,
            hid,
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
            step,
            batch_size,
            betas[0],
            betas[1],
            eps,
            lr,
            lr_factor,
            patience,
            min_delta,
            restore_best,
            A,
            D,
            logistic,
        )
        if not active.any():
            break
    final = best_theta if restore_best else theta
    return (hid, cols, ks, final), epochs, best_epoch, best_val, model_steps
