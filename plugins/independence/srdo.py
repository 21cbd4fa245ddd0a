"""SRDO: sample reweighting by density-ratio estimation (Shen et al. 2020), as in the paper's appendix.

Q is X with every column permuted independently (a draw from the product of the empirical
marginals). A classifier tells P = X (label 0) from Q (label 1); on the training samples
w(x) = P(Q | x) / P(P | x) = exp(logit(x)) estimates the density ratio
prod_j p(x_j) / p(x); it is clipped to [1/gamma, gamma] and scaled to mean 1.

The classifier is the paper's: an MLP with hidden layers (30, 10), ReLU, binary cross-entropy,
Adam (torch tensors). What the paper leaves open, and what was chosen here (measured on the
synthetic data, n = 10000, development seeds 100-104, not the quality-test seeds 0-4):

* **The ratio has to be learned well.** At r = 2.5-3 the training distribution is thin around
  V4 ~ V5 ~ f(S) and the ratio is sharp there; with a partly trained classifier the weights
  barely move the WLS coefficient of V4/V5 and S1/S4 (coefficients 1/3) drop below it. With
  Adam at the paper's lr 0.001 the (30, 10) net needed ~16 000-40 000 steps (batch 256) before
  the ranking settled (about 10-20 s here).
* **Learning-rate schedule** (``lr_schedule="warm"``): ``lr_start`` (0.01) for the first
  ``warm_fraction`` (3/4) of the epochs, then the paper's ``lr`` 0.001 for the rest -- the same
  device as the downstream regressor (:mod:`oodfs.regressor`, 0.01 down to the paper's
  0.001). ``lr_schedule="constant"`` is the paper's constant rate. This is a departure from
  the paper, and SRDO's result depends on it: ``benchmarks/bench_protocol.py`` measures both.
* **A fresh Q every epoch** (``fresh_q=True``: a new independent permutation of every column
  of X), so the classifier sees many draws of the product distribution instead of memorising
  one; the official code draws Q once (``fresh_q=False``). P and Q stay balanced (n rows
  each), so the odds are the density ratio without a prior correction.
* Inputs standardised per column with P's mean and standard deviation (the same map for Q);
  constant columns are dropped (the ratio does not depend on them).
* **Fixed budget, no early stopping** (``stop_tol=None``): ``epochs`` passes over the 2n rows in shuffled
  mini-batches of ``batch_size``; default 200 x 512 (~7 800 steps at n = 10 000, ~3 s). On
  the development seeds (poly, r = 2.5 and 3) every run ranked S1..S5 first with a margin
  (smallest S coefficient minus largest V coefficient) of at least +0.10 / +0.035; at 150
  epochs one r = 3 run put a V above an S, and so did one at batch 1024 (whose r = 2.5
  margins also shrank to +0.023). The weights are read on the
  training rows; a (30, 10) net cannot memorise 10 000 points, and cross-fitting would halve
  the data each classifier sees. (Whitening the inputs instead of standardising them was
  tried and learned the correct ratio more slowly.)
* Speed: a hand-written backward pass and Adam on one flat parameter vector (no autograd
  graph; checked against autograd in the tests), on one torch thread (restored afterwards).
* The same numbers on every machine: the matrix products go through numpy's BLAS (OpenBLAS,
  which oodfs pins to one kernel on every x86-64 CPU), the rest through torch's vectorised
  operations (pinned too). torch's own products (MKL) computed otherwise on an AMD CPU than on
  an Intel one, and thousands of Adam steps turn a last bit into another optimum
  (docs/PROTOCOL.md section 6; benchmarks/references/README.md, section 6).

``fit_grid`` trains the classifier once and clips its ratio at every gamma of the grid.
Deterministic for an integer ``random_state`` (a numpy generator for the permutations and
mini-batches, a seeded ``torch.Generator`` for the initialisation; the global RNGs are not
touched).
"""
from __future__ import annotations

import math

import numpy as np
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

import oodfs
from oodfs import OodfsError
from oodfs.numeric import one_torch_thread, standardize

from oodfs_plugins.baselines.stg import loss_settled

from ._warnings import warn_if_clipped, warn_if_collapsed
from .dwr import corr_kept

#: the paper's Adam learning rate (the last quarter of the schedule)
PAPER_LR = 1e-3
#: fraction of the epochs run at ``lr_start`` before switching to ``lr`` (schedule "warm")
WARM_FRACTION = 0.75
#: learning-rate schedules of the classifier
LR_SCHEDULES = ("warm", "constant")


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


class _MLP:
    """ReLU MLP d -> hidden... -> 1 on one flat float32 parameter vector, with the binary
    cross-entropy gradient written out and Adam (torch's update, bias-corrected) applied to the
    whole vector. Initialisation as ``nn.Linear``: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""

    def __init__(self, d: int, hidden, generator):
        import torch

        dims = [d, *[int(h) for h in hidden], 1]
        shapes = []
        for a, b in zip(dims[:-1], dims[1:]):
            shapes += [(a, b), (b,)]
        total = sum(math.prod(s) for s in shapes)
        self.theta = torch.zeros(total)
        self.grad = torch.zeros(total)
        self.params, self.grads = [], []
        offset = 0
        for s in shapes:
            k = math.prod(s)
            self.params.append(self.theta[offset : offset + k].view(s))
            self.grads.append(self.grad[offset : offset + k].view(s))
            offset += k
        for i in range(0, len(self.params), 2):
            bound = 1.0 / math.sqrt(self.params[i].shape[0])
            self.params[i].uniform_(-bound, bound, generator=generator)
            self.params[i + 1].uniform_(-bound, bound, generator=generator)
        self.m = torch.zeros(total)
        self.v = torch.zeros(total)
        self.t = 0
        self.n_layers = len(self.params) // 2

    def _forward(self, x):
        import torch

        acts = [x]
        h = x
        for layer in range(self.n_layers):
            # numpy's BLAS, not torch's MKL: the same bits on every CPU (module docstring)
            h = torch.from_numpy(h.numpy() @ self.params[2 * layer].numpy()).add_(self.params[2 * layer + 1])
            if layer < self.n_layers - 1:
                h = h.clamp_(min=0.0)
            acts.append(h)
        return acts

    def logits(self, x):
        return self._forward(x)[-1][:, 0]

    def gradient(self, x, y, with_loss: bool = False) -> float:
        """Fill ``self.grad`` with the gradient of the mean BCE-with-logits loss (and return the
        loss if ``with_loss``, else NaN)."""
        import torch

        acts = self._forward(x)
        z = acts[-1][:, 0]
        loss = float(torch.nn.functional.binary_cross_entropy_with_logits(z, y)) if with_loss else float("nan")
        dz = (torch.sigmoid(z) - y).unsqueeze(1).div_(y.shape[0])
        for layer in range(self.n_layers - 1, -1, -1):
            np.matmul(acts[layer].numpy().T, dz.numpy(), out=self.grads[2 * layer].numpy())
            torch.sum(dz, 0, out=self.grads[2 * layer + 1])
            if layer > 0:
                # ReLU backward; sign() of a ReLU output is its 0/1 mask (4x cheaper than a bool mask)
                dz = torch.from_numpy(dz.numpy() @ self.params[2 * layer].numpy().T).mul_(acts[layer].sign())
        return loss

    def adam_step(self, lr: float, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> None:
        self.t += 1
        self.m.mul_(beta1).add_(self.grad, alpha=1 - beta1)
        self.v.mul_(beta2).addcmul_(self.grad, self.grad, value=1 - beta2)
        denom = (self.v / (1 - beta2**self.t)).sqrt_().add_(eps)
        self.theta.addcdiv_(self.m, denom, value=-lr / (1 - beta1**self.t))


def density_ratio_logits(
    X: np.ndarray,
    seed: int,
    hidden_layer_sizes=(30, 10),
    epochs: int = 200,
    batch_size: int = 512,
    lr: float = PAPER_LR,
    lr_schedule: str = "warm",
    lr_start: float = 0.01,
    warm_fraction: float = WARM_FRACTION,
    fresh_q: bool = True,
    stop_tol: float | None = None,
    stop_patience: int = 10,
) -> tuple[np.ndarray, np.ndarray, int]:
    """log P(Q|x)/P(P|x) on the rows of X from a P-vs-Q MLP (module docstring), the mean
    training loss of every epoch run, and the number of epochs run.

    ``lr_schedule="warm"``: ``lr_start`` for the first ``warm_fraction`` of the epochs, then
    ``lr``; ``"constant"``: ``lr`` throughout. ``fresh_q``: a new permuted Q every epoch, else
    one Q drawn before training. ``stop_tol``: None for a fixed budget of ``epochs``, else
    also stop once the epoch's training loss has not fallen by ``stop_tol`` below its best
    for more than ``stop_patience`` consecutive epochs (scikit-learn's MLPClassifier rule).
    """
    import torch

    n = X.shape[0]
    epochs, batch_size = int(epochs), int(batch_size)
    standardized = standardize(X)  # constant columns dropped: the ratio does not depend on them
    keep = np.nonzero(~standardized.constant)[0]
    if keep.size == 0:  # every column constant: P and Q are the same distribution
        return np.zeros(n), np.array([np.log(2.0)]), 0
    # per-column standardisation commutes with per-column permutation: Q is drawn from Z directly
    Z = standardized.Z[:, keep].astype(np.float32)
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(int(seed))
    warm = int(math.ceil(warm_fraction * epochs)) if lr_schedule == "warm" else 0
    with one_torch_thread(), threadpool_limits(limits=1, user_api="blas"):
        P = torch.from_numpy(Z)
        labels = torch.cat([torch.zeros(n), torch.ones(n)])
        net = _MLP(keep.size, hidden_layer_sizes, generator)
        Q = None if fresh_q else torch.from_numpy(rng.permuted(Z, axis=0))
        losses, best_loss, stalled, epoch = [], float("inf"), 0, 0
        for epoch in range(1, epochs + 1):
            step_lr = lr_start if epoch <= warm else lr
            Qe = torch.from_numpy(rng.permuted(Z, axis=0)) if fresh_q else Q  # each column shuffled on its own
            A = torch.cat([P, Qe])
            order = torch.from_numpy(rng.permutation(2 * n))
            A, y = A[order], labels[order]  # one gather per epoch; the mini-batches are slices
            total = 0.0
            for start in range(0, 2 * n, batch_size):
                xb, yb = A[start : start + batch_size], y[start : start + batch_size]
                # every epoch's loss is kept: the convergence check reads the last ones
                total += net.gradient(xb, yb, with_loss=True) * yb.shape[0]
                net.adam_step(step_lr)
            losses.append(total / (2 * n))
            if stop_tol is not None:
                stalled = stalled + 1 if losses[-1] > best_loss - stop_tol else 0
                best_loss = min(best_loss, losses[-1])
                if stalled > stop_patience:
                    break
        logits = net.logits(P).double().numpy()
    if not np.all(np.isfinite(logits)):
        raise OodfsError("srdo: the P-vs-Q classifier diverged (non-finite output); check X for extreme values")
    return logits, np.asarray(losses), epoch


def clip_ratio(logits: np.ndarray, gamma: float) -> np.ndarray:
    """exp(logits) clipped to [1/gamma, gamma] (computed in log space, never overflows)."""
    lg = float(np.log(gamma))
    return np.exp(np.clip(logits, -lg, lg))


class SRDOWeighter(oodfs.Weighter):
    """SRDO: density-ratio weights from a P-vs-permuted-Q MLP classifier, clipped to [1/gamma, gamma].

    w(x) = P(Q|x) / P(P|x), Q = X with each column permuted independently; an MLP classifier
    (ReLU, binary cross-entropy, Adam) on standardised inputs; see
    :mod:`oodfs_plugins.independence.srdo` for the choices the paper leaves open.
    After mean-1 normalisation max/min of ``weights_`` is at most gamma^2. ``log_ratio_`` holds
    the unclipped log ratio, ``train_loss_`` the last epoch's training loss, ``n_epochs_`` the
    epochs run; the diagnostics add the fractions of samples at the lower and upper clip
    (``frac_clipped_low``, ``frac_clipped_high``) and ``n_iter`` (epochs run).

    Parameters (the paper's value where it states one; ours; why):

    * ``gamma`` -- the paper's grid {5, 10, 20}; default 10, the middle.
    * ``hidden_layer_sizes`` -- paper: (30, 10); ours: the same.
    * ``lr`` -- paper: Adam lr 0.001; ours: 0.001, reached after the warm phase.
    * ``lr_schedule`` -- paper: a constant rate. Ours: ``"warm"``, ``lr_start`` (0.01) for the
      first ``warm_fraction`` (3/4) of the epochs, then ``lr``: at the constant 0.001 the
      classifier had not learned the sharp ratio within the budget (module docstring).
      ``"constant"``: ``lr`` throughout (``lr_start`` and ``warm_fraction`` unused).
    * ``epochs``, ``batch_size`` -- paper: none stated (its official code: scikit-learn's
      MLPClassifier defaults, at most 500 epochs of batches of 200 with a loss-plateau stop).
      Ours: a fixed 200 epochs of batches of 512, no early stopping.
    * ``fresh_q`` -- paper: one permuted Q (the official code draws it once). Ours: True, a
      fresh permutation every epoch, so the classifier cannot memorise one draw of Q.
    * ``stop_tol``, ``stop_patience`` -- None (ours: a fixed budget) or scikit-learn's rule:
      stop once the training loss has not improved by ``stop_tol`` for more than
      ``stop_patience`` epochs (the official code's defaults: 1e-4 and 10).

    ``profiles["paper"]``: constant lr 0.001, one Q, batches of 200, at most 500 epochs with
    the loss-plateau stop (the official code's scikit-learn defaults), clipping by the gamma
    grid. It does not standardise differently nor add scikit-learn's L2 penalty (alpha 1e-4).

    A grid point whose weights collapse (ESS fraction below ``collapse_ess_fraction``) or
    are almost all clipped (``frac_clipped_low + frac_clipped_high >= clip_warn_fraction``)
    warns, from ``fit`` and ``fit_grid`` alike (:class:`oodfs_plugins.independence.WeightClippingWarning`, a subclass of
    :class:`oodfs.WeightCollapseWarning`).
    """

    name = "srdo"
    grid = {"gamma": [5, 10, 20]}
    profiles = {"paper": {"lr": 1e-3, "lr_schedule": "constant", "fresh_q": False, "batch_size": 200,
                          "epochs": 500, "stop_tol": 1e-4, "stop_patience": 10}}
    #: Q's column shuffles and the network's initial weights are drawn in column order
    permutation_invariant = False
    #: warn when at least this fraction of the weights sits at a clip bound. In normal operation
    #: up to ~90 % sit at the lower clip (poly, r = 3, gamma 5: the training distribution is
    #: concentrated where the product of its marginals is not); at 99 % the classifier tells
    #: almost every row apart and its ratio carries no more than a two-valued split.
    clip_warn_fraction = 0.99
    #: the fixed-budget convergence rule (:func:`loss_settled`): the training loss's mean over the
    #: last tenth of the epochs is at most 1 % below its mean over the tenth before
    #: (docs/PROTOCOL.md, "Iterative methods' stopping rules")
    converge_window = 0.1
    converge_tol = 0.01

    def __init__(
        self,
        gamma: float = 10,
        hidden_layer_sizes=(30, 10),
        epochs: int = 200,
        batch_size: int = 512,
        lr: float = PAPER_LR,
        lr_schedule: str = "warm",
        lr_start: float = 0.01,
        warm_fraction: float = WARM_FRACTION,
        fresh_q: bool = True,
        stop_tol: float | None = None,
        stop_patience: int = 10,
        random_state=None,
    ):
        self.gamma = gamma
        self.hidden_layer_sizes = hidden_layer_sizes
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.lr_schedule = lr_schedule
        self.lr_start = lr_start
        self.warm_fraction = warm_fraction
        self.fresh_q = fresh_q
        self.stop_tol = stop_tol
        self.stop_patience = stop_patience
        self.random_state = random_state

    # -- parameter checks ---------------------------------------------------------------
    def _check_params(self) -> None:
        g = self.gamma
        if not _is_real(g) or not np.isfinite(g) or g < 1:
            raise OodfsError(f"srdo: gamma must be a finite number >= 1, got {g!r}")
        for what in ("epochs", "batch_size", "stop_patience"):
            v = getattr(self, what)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise OodfsError(f"srdo: {what} must be a positive integer, got {v!r}")
        for what in ("lr", "lr_start"):
            v = getattr(self, what)
            if not _is_real(v) or not np.isfinite(v) or v <= 0:
                raise OodfsError(f"srdo: {what} must be a finite number > 0, got {v!r}")
        if not isinstance(self.lr_schedule, str) or self.lr_schedule not in LR_SCHEDULES:
            raise OodfsError(f"srdo: lr_schedule must be one of {', '.join(map(repr, LR_SCHEDULES))}; "
                             f"got {self.lr_schedule!r}")
        wf = self.warm_fraction
        if not _is_real(wf) or not 0 <= wf <= 1:
            raise OodfsError(f"srdo: warm_fraction must be a number in [0, 1], got {wf!r}")
        if not isinstance(self.fresh_q, (bool, np.bool_)):
            raise OodfsError(f"srdo: fresh_q must be True or False, got {self.fresh_q!r}")
        st = self.stop_tol
        if st is not None and (not _is_real(st) or not np.isfinite(st) or st < 0):
            raise OodfsError(f"srdo: stop_tol must be None (a fixed budget) or a finite number >= 0, got {st!r}")
        try:
            sizes = [int(h) for h in self.hidden_layer_sizes]
        except (TypeError, ValueError):
            raise OodfsError(f"srdo: hidden_layer_sizes must be a sequence of positive integers, got {self.hidden_layer_sizes!r}") from None
        if not sizes or any(h < 1 for h in sizes):
            raise OodfsError(f"srdo: hidden_layer_sizes must be positive, got {self.hidden_layer_sizes!r}")

    def _seed(self) -> int:
        return int(check_random_state(self.random_state).randint(0, 2**31 - 1))

    def _logits(self, X: np.ndarray, seed: int) -> np.ndarray:
        logits, loss, n_epochs = density_ratio_logits(
            X,
            seed,
            hidden_layer_sizes=tuple(int(h) for h in self.hidden_layer_sizes),
            epochs=int(self.epochs),
            batch_size=int(self.batch_size),
            lr=float(self.lr),
            lr_schedule=self.lr_schedule,
            lr_start=float(self.lr_start),
            warm_fraction=float(self.warm_fraction),
            fresh_q=bool(self.fresh_q),
            stop_tol=None if self.stop_tol is None else float(self.stop_tol),
            stop_patience=int(self.stop_patience),
        )
        self.log_ratio_ = logits
        self.losses_ = loss
        self.n_epochs_ = n_epochs
        return logits

    @property
    def train_loss_(self) -> float:
        return float(self.losses_[-1])

    @property
    def converged_(self) -> bool:
        """The declared stopping rule was met (docs/PROTOCOL.md, "Iterative methods' stopping
        rules"): with ``stop_tol`` set, the loss-plateau stop ended training before the epoch
        cap; with a fixed budget, the training loss had settled by its end (:func:`loss_settled`
        over windows of ``converge_window`` of the epochs, relative ``converge_tol``)."""
        if self.n_epochs_ == 0:  # every column constant: nothing to learn
            return True
        if self.stop_tol is not None:
            return bool(self.n_epochs_ < int(self.epochs))
        window = int(np.ceil(self.converge_window * int(self.epochs)))
        return loss_settled(self.losses_, window, self.converge_tol)

    # -- the Weighter contract ---------------------------------------------------------
    def _fit_weights(self, X: np.ndarray) -> np.ndarray:
        self._check_params()
        w = clip_ratio(self._logits(X, self._seed()), float(self.gamma))
        self.corr_kept_ = corr_kept(X, w)
        # fit: the base class checks the collapse, the clipping check is ours
        warn_if_clipped(type(self), {"gamma": self.gamma}, self._diagnostics(), stacklevel=4)
        return w

    def _diagnostics(self) -> dict:
        lg = np.log(float(self.gamma))
        return {
            "frac_clipped_low": float(np.mean(self.log_ratio_ <= -lg)),
            "frac_clipped_high": float(np.mean(self.log_ratio_ >= lg)),
            "n_iter": int(self.n_epochs_),
            "converged": self.converged_,
            "train_loss": self.train_loss_,
            "corr_kept": getattr(self, "corr_kept_", None),
        }

    @classmethod
    def _fit_grid(cls, X, points: list[dict], *, random_state) -> list:
        """One classifier per distinct non-gamma setting (one for the paper's grid), clipped at
        every gamma; the same weights as separate fits with the same integer ``random_state``."""
        cache: dict[tuple, tuple] = {}
        out = []
        for params in points:
            est = cls(**params, random_state=random_state)
            est._check_params()
            key = tuple((k, repr(v)) for k, v in sorted(params.items()) if k != "gamma")
            if key not in cache:
                # a RandomState instance is consumed once per classifier, as separate fits would
                est._logits(X, est._seed())
                cache[key] = (est.log_ratio_, est.losses_, est.n_epochs_)
            est.log_ratio_, est.losses_, est.n_epochs_ = cache[key]
            w = clip_ratio(est.log_ratio_, float(params["gamma"]))
            est.corr_kept_ = corr_kept(X, w)
            fit = oodfs.GridFit(w, est._diagnostics())
            warn_if_collapsed(cls, params, fit.values)
            warn_if_clipped(cls, params, fit.diagnostics)
            out.append(fit)
            oodfs.point_done()  # the run's progress line (docs/PROTOCOL.md, "Progress")
        return out
