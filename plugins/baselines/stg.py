"""Stochastic gates (STG, Yamada et al. 2020), our own torch implementation."""
from __future__ import annotations

import math
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from numba import njit

import oodfs

from oodfs.numeric import int_seed, one_torch_thread, sample_probabilities, standardize

#: how the gate penalty is reduced over features: "mean" (reference code) or "sum" (STG paper)
REDUCTIONS = ("mean", "sum")
#: who trains the networks: a numba kernel (default) or torch's autograd (for audits); the same
#: algorithm and random draws, numbers equal up to float rounding (docs/PROTOCOL.md, section 4)
ENGINES = ("numba", "torch")


class STG(oodfs.Selector):
    """Stochastic-gates feature selection (Yamada et al. 2020); scores = the gate means mu.

    Model (as in the authors' reference implementation, github.com/runopti/stg, which the
    paper used): every feature j has a gate ``z_j = clamp(mu_j + sigma * eps_j + 0.5, 0, 1)``
    with ``eps ~ N(0, 1)`` during training; an MLP (ReLU) predicts y from ``x * z``; the loss
    is the (sample-weighted) mean squared error plus ``lam * reduce_j Phi((mu_j + 0.5) /
    sigma)``, Phi the standard normal CDF (``reduce`` = mean: the expected fraction of open
    gates). Adam. Scores are the raw ``mu`` (the 0/1 clamp of the gate probabilities makes
    ties; ``mu`` does not).

    Parameters (the paper's value where it states one; ours; why). The paper (Xu et al.)
    states only the lambda grid and that it ran the authors' original implementation:

    * ``lam`` -- the paper's grid {0.001, 0.01, 0.1, 1, 10}; default 0.1, the reference
      implementation's default, mid-grid.
    * ``penalty_reduction`` -- ``"mean"`` (default) over features, as the reference code the
      paper ran its lambda grid with; ``"sum"`` as the STG paper (Yamada et al.) writes the
      regulariser. sum = d x mean, i.e. the lambda grid shifted by a factor d.
    * ``sigma`` -- the gate noise, 0.5 (the reference implementation's default).
    * ``hidden_layer_sizes`` -- the backbone, (60, 20) (the reference's regression example;
      the paper states none).
    * ``learning_rate`` -- Adam, 1e-3 (the paper's Adam rate for its other networks); no
      weight decay (the reference wrapper's default adds 1e-3; the paper does not say).
    * ``batch_size`` 256, ``max_epochs`` 30 full passes (the paper states none: enough for mu to
      separate on n ~ 10^4; fixed budget, no early stopping, so results are reproducible).
    * ``engine`` -- ``"numba"`` (default): a compiled kernel trains the network (forward,
      backward and Adam in one loop); ``"torch"``: torch's autograd and ``torch.optim.Adam``
      (for audits). Both draw the same random numbers in the same order from one
      ``torch.Generator``; they differ in the order of float operations only.
    * ``track_loss`` -- True (default): record every epoch's training loss (``losses_``) for the
      convergence diagnostic; False skips it (a caller that wants the gates only, as SVI's
      rounds): the same gates, ``losses_`` NaN and ``converged`` None.

    ``profiles["paper"]`` keeps ``penalty_reduction="mean"``: the paper's runs used the
    reference code, whose regression model takes the mean; the sum is the STG paper's formula,
    which the reference code does not implement for regression.

    Other choices: one ``eps`` vector per optimisation step, shared by the mini-batch
    (reference code); ``mu`` initialised ``0.01 * N(0, 1)`` (reference code); linear layers
    initialised like ``torch.nn.Linear``; features and target standardised (weighted mean 0,
    standard deviation 1) before training, so a closed gate replaces a feature by its mean and
    ``lam`` is relative to a unit-variance target; one torch thread during the fit (fastest for
    these small models; restored after).

    ``sample_weight`` weights the squared errors (weights rescaled to mean 1).

    On a binary target (0.0 / 1.0) the network's output is a logit and the loss is the
    (sample-weighted) mean binomial deviance ``softplus(h) - y h`` in place of the squared error
    (the target is not standardised); the gates, penalty, grid and training are unchanged. The
    reference code's classifier has a softmax over two outputs, the same model class as one
    logit; ``lam`` is then relative to the log-loss (docs/PROTOCOL.md, "Binary targets").

    ``fit_grid`` trains the models for all lambdas that share the other settings in one
    program, on the initialisation, mini-batch order and gate noise that a separate fit with
    the same ``random_state`` draws (drawn once). The numba engine trains them one after the
    other in one kernel call, each with exactly a separate fit's arithmetic: identical numbers
    per lambda (tested). The torch engine gives every parameter a leading "model" axis
    (batched matrix products, the loss summed over models): the same as separate fits up to
    rounding in the batched products.
    """

    name = "stg"
    #: the network's initial weights are drawn per input column, in column order
    permutation_invariant = False
    grid: ClassVar[dict] = {"lam": [0.001, 0.01, 0.1, 1.0, 10.0]}
    profiles: ClassVar[dict] = {"paper": {"penalty_reduction": "mean"}}
    task_types: ClassVar[tuple[str, ...]] = ("regression", "binary")
    #: the fixed-budget convergence rule (:func:`loss_settled`): the training loss's mean over the
    #: last tenth of the epochs is at most 1 % below its mean over the tenth before
    #: (docs/PROTOCOL.md, "Iterative methods' stopping rules")
    converge_window: ClassVar[float] = 0.1
    converge_tol: ClassVar[float] = 0.01

    def __init__(
        self,
        lam: float = 0.1,
        penalty_reduction: str = "mean",
        sigma: float = 0.5,
        hidden_layer_sizes: tuple = (60, 20),
        learning_rate: float = 1e-3,
        batch_size: int = 256,
        max_epochs: int = 30,
        k: int = 5,
        random_state=None,
        engine: str = "numba",
        track_loss: bool = True,
    ):
        self.lam = lam
        self.penalty_reduction = penalty_reduction
        self.sigma = sigma
        self.hidden_layer_sizes = hidden_layer_sizes
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.k = k
        self.random_state = random_state
        self.engine = engine
        self.track_loss = track_loss

    def _training_params(self) -> dict:
        hidden = self.hidden_layer_sizes
        if isinstance(hidden, Integral):
            hidden = (hidden,)
        try:
            hidden = tuple(hidden)
        except TypeError:
            hidden = (None,)
        if not all(isinstance(h, Integral) and not isinstance(h, bool) and h >= 1 for h in hidden):
            raise oodfs.OodfsError(f"stg hidden_layer_sizes must be positive integers, got {self.hidden_layer_sizes!r}")
        for what, v in (("batch_size", self.batch_size), ("max_epochs", self.max_epochs)):
            if not isinstance(v, Integral) or isinstance(v, bool) or v < 1:
                raise oodfs.OodfsError(f"stg {what} must be a positive integer, got {v!r}")
        for what, v in (("learning_rate", self.learning_rate), ("sigma", self.sigma)):
            if not (isinstance(v, Real) and not isinstance(v, bool) and np.isfinite(v) and v > 0):
                raise oodfs.OodfsError(f"stg {what} must be a finite number > 0, got {v!r}")
        if self.penalty_reduction not in REDUCTIONS:
            raise oodfs.OodfsError(f"stg penalty_reduction must be one of {', '.join(map(repr, REDUCTIONS))}; "
                                   f"got {self.penalty_reduction!r}")
        if self.engine not in ENGINES:
            raise oodfs.OodfsError(f"stg engine must be one of {', '.join(map(repr, ENGINES))}; got {self.engine!r}")
        return dict(
            engine=str(self.engine),
            track_loss=bool(self.track_loss),
            hidden=hidden,
            learning_rate=float(self.learning_rate),
            batch_size=int(self.batch_size),
            max_epochs=int(self.max_epochs),
            sigma=float(self.sigma),
            reduction=str(self.penalty_reduction),
        )

    @classmethod
    def own_support(cls, scores, diagnostics, params):
        """The gates open at inference, ``clamp(mu + 0.5, 0, 1) > 0``, i.e. ``mu > -0.5`` (the STG
        paper's deterministic gate; docs/PROTOCOL.md section 10, "The k grid")."""
        return np.asarray(scores) > -0.5

    def _fit_scores(self, X, y, sample_weight):
        mu, losses = train_stg(X, y, sample_weight, [_check_lam(self.lam)], seed=int_seed(self.random_state),
                               logistic=self.task_ == "binary", **self._training_params())
        self.losses_ = losses[0]
        self.diagnostics_ = self._diagnostics(losses[0])
        return mu[0]

    def _diagnostics(self, losses: np.ndarray) -> dict:
        """``converged``: the training loss had settled by the end of the fixed budget
        (:func:`loss_settled`; docs/PROTOCOL.md, "Iterative methods' stopping rules")."""
        if not self.track_loss:  # no loss curve, so nothing to judge
            return {"converged": None, "train_loss": None, "n_iter": int(self.max_epochs)}
        window = int(math.ceil(self.converge_window * int(self.max_epochs)))
        return {
            "converged": loss_settled(losses, window, self.converge_tol),
            "train_loss": float(losses[-1]),
            "n_iter": int(len(losses)),
        }

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, task="regression"):
        """Scores for every point: one batched training run per group of points that differ
        only in ``lam``."""
        groups: dict[tuple, list[int]] = {}
        for i, p in enumerate(points):
            key = tuple((k, repr(v)) for k, v in sorted(p.items()) if k != "lam")
            groups.setdefault(key, []).append(i)
        out = [None] * len(points)
        for members in groups.values():
            template = cls(**points[members[0]], random_state=random_state)
            lams = [_check_lam(points[i]["lam"]) for i in members]
            mu, losses = train_stg(X, y, sample_weight, lams, seed=int_seed(random_state),
                                   logistic=task == "binary", **template._training_params())
            for i, scores, curve in zip(members, mu, losses):
                out[i] = oodfs.GridFit(scores, template._diagnostics(curve))
            oodfs.point_done(len(members))  # the run's progress line (docs/PROTOCOL.md, "Progress")
        return out


def loss_settled(losses, window: int, tol: float) -> bool:
    """The declared convergence rule of a fixed-budget training run with a loss per epoch
    (docs/PROTOCOL.md, "Iterative methods' stopping rules"): the mean loss of the last ``window``
    epochs is at most ``tol`` (relative) below the mean of the ``window`` epochs before them. A
    run shorter than two windows has not shown that it settled. (STG, SRDO.)"""
    losses = np.asarray(losses, dtype=float)
    window = max(1, int(window))
    if losses.size < 2 * window or not np.all(np.isfinite(losses[-2 * window :])):
        return False
    last, before = losses[-window:].mean(), losses[-2 * window : -window].mean()
    return bool(before - last <= tol * abs(last))


def _check_lam(lam) -> float:
    if not (isinstance(lam, Real) and np.isfinite(lam) and lam >= 0):
        raise oodfs.OodfsError(f"stg lam must be a non-negative number, got {lam!r}")
    return float(lam)


def train_stg(
    X: np.ndarray,
    y: np.ndarray,
    sample_weight: np.ndarray | None,
    lams: list[float],
    *,
    seed: int,
    hidden: tuple[int, ...],
    learning_rate: float,
    batch_size: int,
    max_epochs: int,
    sigma: float = 0.5,
    reduction: str = "mean",
    engine: str = "numba",
    logistic: bool = False,
    track_loss: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Train one STG model per lambda in ``lams``; returns mu, shape (len(lams), d), and each
    epoch's mean training loss (squared error or deviance plus the gate penalty), shape
    (len(lams), max_epochs).

    ``logistic``: y is 0/1, the output a logit, the loss the binomial deviance (y kept as is).

    ``track_loss`` False: the curves are NaN under either engine (the numba engine skips the
    per-epoch loss); the parameters are computed exactly as with it.

    All randomness (initialisation, mini-batch order, gate noise) comes from one
    ``torch.Generator(seed)``, drawn in the same order by both engines and shared by the
    models. With the numba engine model m is exactly what a one-model run with
    ``lams=[lams[m]]`` computes; with the torch engine, up to rounding in batched products.
    """
    import torch

    n, d = X.shape
    p = sample_probabilities(sample_weight, n)
    Xs = standardize(X, p)[0]
    ys = np.asarray(y, dtype=float) if logistic else standardize(y[:, None], p)[0][:, 0]
    if reduction not in REDUCTIONS:
        raise oodfs.OodfsError(f"stg penalty_reduction must be one of {', '.join(map(repr, REDUCTIONS))}; got {reduction!r}")
    if engine not in ENGINES:
        raise oodfs.OodfsError(f"stg engine must be one of {', '.join(map(repr, ENGINES))}; got {engine!r}")
    pen_scale = 1.0 / d if reduction == "mean" else 1.0
    bs = min(batch_size, n)

    with one_torch_thread():
        g = torch.Generator().manual_seed(int(seed))
        dtype = torch.float32
        mu0 = 0.01 * torch.randn(d, generator=g, dtype=dtype)
        layers = []
        sizes = (d, *hidden, 1)
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            bound = 1.0 / math.sqrt(fan_in)  # torch.nn.Linear's default initialisation
            W = (torch.rand(fan_in, fan_out, generator=g, dtype=dtype) * 2 - 1) * bound
            b = (torch.rand(1, fan_out, generator=g, dtype=dtype) * 2 - 1) * bound
            layers.append((W, b))
        if engine == "torch":
            mu, curves = _train_torch(Xs, ys, p, lams, g, mu0, layers, pen_scale=pen_scale, sigma=sigma,
                                      learning_rate=learning_rate, bs=bs, max_epochs=max_epochs, logistic=logistic)
            return mu, _tracked(curves, track_loss)
        theta0 = torch.cat([t.reshape(-1) for W, b in layers for t in (W, b)]).numpy()
        XT = np.ascontiguousarray(Xs.T, dtype=np.float32)
        yk, wk = ys.astype(np.float32), (p * n).astype(np.float32)
        M, P = len(lams), theta0.size
        # every model's parameters and Adam moments, carried from one chunk of epochs to the next
        state = (np.tile(theta0, (M, 1)), np.tile(mu0.numpy(), (M, 1)), np.zeros((M, P), np.float32),
                 np.zeros((M, P), np.float32), np.zeros((M, d), np.float32), np.zeros((M, d), np.float32))
        # the torch loop's draws, in its order: per epoch a permutation, then a noise vector per step;
        # drawn a chunk of epochs at a time, so memory does not grow with epochs x n
        n_steps = -(-n // bs)
        chunk = max(1, DRAW_CHUNK_ROWS // n)
        losses = []
        for e0 in range(0, max_epochs, chunk):
            E = min(chunk, max_epochs - e0)
            perms = np.empty((E, n), np.int64)
            eps = np.empty((E * n_steps, d), np.float32)
            for e in range(E):
                perms[e] = torch.randperm(n, generator=g).numpy()
                for s in range(n_steps):
                    eps[e * n_steps + s] = torch.randn(d, generator=g, dtype=dtype).numpy()
            losses.append(_train_kernel(XT, yk, wk, perms, eps, *state, e0 * n_steps, np.asarray(sizes, np.int64),
                                        np.asarray(lams, np.float64), pen_scale, float(sigma), float(learning_rate),
                                        bs, 0.9, 0.999, 1e-8, bool(logistic), bool(track_loss)))
    return state[1].astype(np.float64), _tracked(np.concatenate(losses, axis=1), track_loss)


def _tracked(curves: np.ndarray, track_loss: bool) -> np.ndarray:
    """The loss curves as the caller asked for them: NaN when it did not track the loss, under
    either engine (the numba kernel did not compute them; torch's are dropped)."""
    return curves if track_loss else np.full_like(curves, np.nan)


def _train_torch(Xs, ys, p, lams, g, mu0, layers, *, pen_scale, sigma, learning_rate, bs, max_epochs,
                 logistic=False):
    """The torch engine: every parameter has a leading model axis; autograd and torch.optim.Adam."""
    import torch

    n, d = Xs.shape
    M = len(lams)
    dtype = torch.float32
    Xt = torch.as_tensor(Xs, dtype=dtype)
    yt = torch.as_tensor(ys, dtype=dtype)
    wt = torch.as_tensor(p * n, dtype=dtype)  # weights with mean 1
    lam_t = torch.as_tensor(lams, dtype=dtype)

    def shared(t: torch.Tensor) -> torch.nn.Parameter:
        # one draw, copied to every model: identical starting points
        return torch.nn.Parameter(t.unsqueeze(0).repeat(M, *([1] * t.dim())).contiguous())

    mu = shared(mu0)
    weights = [shared(W) for W, _ in layers]
    biases = [shared(b) for _, b in layers]
    params = [mu, *weights, *biases]
    opt = torch.optim.Adam(params, lr=learning_rate)
    inv_sqrt2 = 1.0 / math.sqrt(2.0)
    losses = np.zeros((M, max_epochs))
    n_steps = -(-n // bs)
    for epoch in range(max_epochs):
        perm = torch.randperm(n, generator=g)
        for start in range(0, n, bs):
            idx = perm[start:start + bs]
            eps = torch.randn(d, generator=g, dtype=dtype)
            z = torch.clamp(mu + sigma * eps + 0.5, 0.0, 1.0)  # (M, d)
            h = Xt[idx].unsqueeze(0) * z.unsqueeze(1)  # (M, B, d)
            for i, (W, b) in enumerate(zip(weights, biases)):
                h = torch.baddbmm(b, h, W)
                if i < len(weights) - 1:
                    h = torch.relu(h)
            out = h[..., 0]  # (M, B)
            if logistic:  # binomial deviance of the logit: softplus(h) - y h
                fit = (wt[idx] * (torch.nn.functional.softplus(out) - yt[idx] * out)).mean(dim=1)
            else:
                resid = out - yt[idx]
                fit = (wt[idx] * resid * resid).mean(dim=1)  # (M,)
            open_prob = 0.5 * (1.0 + torch.erf((mu + 0.5) / sigma * inv_sqrt2))  # Phi
            per_model = fit + lam_t * pen_scale * open_prob.sum(dim=1)
            losses[:, epoch] += per_model.detach().double().numpy() / n_steps
            opt.zero_grad(set_to_none=True)
            per_model.sum().backward()
            opt.step()
    return mu.detach().double().numpy().copy(), losses


# reassoc + contract only: sums may be reordered and multiply-adds fused, no approximations
_JIT = dict(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})


#: the numba engine draws the permutations of at most this many rows (epochs x n) at a time: a
#: full-batch fit of SVI's 5 000 epochs at n = 20 000 held 800 MB of them (benchmarks/COST_CURVES.md)
DRAW_CHUNK_ROWS = 1 << 22


@njit(**_JIT)
def _train_kernel(XT, y, w, perms, eps, TH, MU, M1, M2, MU1, MU2, step0, sizes, lams, pen_scale, sigma, lr, batch,
                  b1, b2, adam_eps, logistic, track):
    """The numba engine: the torch engine's forward pass, loss, gradients and Adam updates for
    one model after the other (each model's arithmetic is its own), over the epochs of ``perms``
    (a chunk of the run, starting at Adam step ``step0``). ``XT`` (d, n) standardised features;
    per model m, updated in place: ``TH[m]`` the layers flat (``W`` (in, out) row-major, then
    ``b``) for ``sizes`` (d, hidden..., 1), ``MU[m]`` the gate means, ``M1``/``M2`` and
    ``MU1``/``MU2`` their Adam moments. Activations are stored ``A[unit, row]``, so inner loops
    run over rows. Returns each epoch's mean training loss per model."""
    d, n = XT.shape
    E = perms.shape[0]
    L = sizes.size - 1
    P = TH.shape[1]
    wo = np.empty(L, np.int64)  # offsets of W_l and b_l in theta
    bo = np.empty(L, np.int64)
    ro = np.empty(L + 1, np.int64)  # first row of layer l's units in A and D
    o, r0 = 0, 0
    for li in range(L + 1):
        ro[li] = r0
        r0 += sizes[li]
        if li < L:
            wo[li] = o
            o += sizes[li] * sizes[li + 1]
            bo[li] = o
            o += sizes[li + 1]
    A = np.zeros((r0, batch), np.float32)
    D = np.zeros((r0, batch), np.float32)
    Xb = np.zeros((d, batch), np.float32)
    losses = np.zeros((lams.size, E), np.float64)  # each epoch's mean training loss, per model
    grad = np.zeros(P, np.float32)
    gmu = np.zeros(d, np.float32)
    z = np.zeros(d, np.float32)
    passes = np.zeros(d, np.bool_)
    sig = np.float32(sigma)
    half = np.float32(0.5)
    zero = np.float32(0.0)
    one = np.float32(1.0)
    inv_sqrt2 = np.float32(1.0 / math.sqrt(2.0))
    two_over_sqrt_pi = np.float32(2.0 / math.sqrt(math.pi))
    w1 = np.float32(1.0 - b1)
    b2f = np.float32(b2)
    w2 = np.float32(1.0 - b2)
    epsf = np.float32(adam_eps)
    n_steps = (n + batch - 1) // batch
    for m in range(lams.size):
        th = TH[m]
        mu = MU[m]
        m1 = M1[m]
        m2 = M2[m]
        mu1 = MU1[m]
        mu2 = MU2[m]
        lam = np.float32(lams[m] * pen_scale)
        step = step0
        for e in range(E):
            for s in range(n_steps):
                start = s * batch
                B = min(batch, n - start)
                noise = eps[e * n_steps + s]
                for j in range(d):  # gates z = clamp(mu + sigma * eps + 0.5, 0, 1)
                    pre = mu[j] + sig * noise[j] + half
                    passes[j] = pre >= zero and pre <= one  # where clamp passes the gradient
                    z[j] = min(max(pre, zero), one)
                for j in range(d):
                    for r in range(B):
                        x = XT[j, perms[e, start + r]]
                        Xb[j, r] = x
                        A[j, r] = x * z[j]
                for li in range(L):  # forward, ReLU between layers
                    fi, fo, ri, rr = sizes[li], sizes[li + 1], ro[li], ro[li + 1]
                    for oo in range(fo):
                        bias = th[bo[li] + oo]
                        for r in range(B):
                            A[rr + oo, r] = bias
                        for i in range(fi):
                            wv = th[wo[li] + i * fo + oo]
                            for r in range(B):
                                A[rr + oo, r] += wv * A[ri + i, r]
                        if li < L - 1:
                            for r in range(B):
                                if not A[rr + oo, r] > 0:
                                    A[rr + oo, r] = 0.0
                top = ro[L]
                fit = 0.0  # the step's loss, for the convergence check only (float64, kept apart)
                if logistic:  # d mean_r w_r (softplus(h_r) - y_r h_r) / d h_r = w_r (sigmoid(h_r) - y_r) / B
                    c1 = np.float32(1.0 / B)
                    for r in range(B):
                        idx = perms[e, start + r]
                        if track:
                            h = float(A[top, r])
                            fit += w[idx] * (max(h, 0.0) + math.log1p(math.exp(-abs(h))) - y[idx] * h)
                        prob = one / (one + np.exp(-A[top, r]))
                        D[top, r] = c1 * w[idx] * (prob - y[idx])
                else:
                    c2 = np.float32(2.0 / B)  # d mean_r w_r (h_r - y_r)^2 / d h_r
                    for r in range(B):
                        idx = perms[e, start + r]
                        if track:
                            res = float(A[top, r] - y[idx])
                            fit += w[idx] * res * res
                        D[top, r] = c2 * w[idx] * (A[top, r] - y[idx])
                if track:
                    pen = 0.0
                    for j in range(d):
                        pen += 0.5 * (1.0 + math.erf((mu[j] + 0.5) / sigma / math.sqrt(2.0)))
                    losses[m, e] += (fit / B + lams[m] * pen_scale * pen) / n_steps
                for li in range(L - 1, -1, -1):  # backward, down to the gated inputs
                    fi, fo, ri, rr = sizes[li], sizes[li + 1], ro[li], ro[li + 1]
                    for oo in range(fo):
                        acc = zero
                        for r in range(B):
                            acc += D[rr + oo, r]
                        grad[bo[li] + oo] = acc
                        for i in range(fi):
                            acc = zero
                            for r in range(B):
                                acc += A[ri + i, r] * D[rr + oo, r]
                            grad[wo[li] + i * fo + oo] = acc
                    for i in range(fi):
                        for r in range(B):
                            D[ri + i, r] = 0.0
                        for oo in range(fo):
                            wv = th[wo[li] + i * fo + oo]
                            for r in range(B):
                                D[ri + i, r] += wv * D[rr + oo, r]
                        if li > 0:
                            for r in range(B):
                                if not A[ri + i, r] > 0:
                                    D[ri + i, r] = 0.0
                for j in range(d):  # d loss / d mu: through the gate, plus lam * dPhi
                    acc = zero
                    if passes[j]:
                        for r in range(B):
                            acc += D[j, r] * Xb[j, r]
                    t = (mu[j] + half) / sig * inv_sqrt2
                    gmu[j] = acc + lam * (half * two_over_sqrt_pi * np.exp(-t * t) * inv_sqrt2 / sig)
                step += 1  # torch.optim.Adam's update
                bc2 = np.float32(math.sqrt(1.0 - b2**step))
                scale = np.float32(-lr / (1.0 - b1**step))
                for q in range(P):
                    g = grad[q]
                    a = m1[q] + w1 * (g - m1[q])
                    m1[q] = a
                    v = m2[q] * b2f + w2 * g * g
                    m2[q] = v
                    th[q] = th[q] + scale * (a / (np.sqrt(v) / bc2 + epsf))
                for j in range(d):
                    g = gmu[j]
                    a = mu1[j] + w1 * (g - mu1[j])
                    mu1[j] = a
                    v = mu2[j] * b2f + w2 * g * g
                    mu2[j] = v
                    mu[j] = mu[j] + scale * (a / (np.sqrt(v) / bc2 + epsf))
    return losses
