"""SVI, sparse variable independence (Yu et al., AAAI 2023), and its one-shot variant SVI^d.

SVI alternates sample reweighting and variable selection. Round t: DWR weights whose decorrelation
term skips the pairs of variables already selected (covariance mask ``1 - s s^T``, s the selection
ratios of the previous rounds); a stochastic-gates (STG) fit of a linear model weighted by those
weights; its gate ratios Phi((mu + 0.5) / sigma) averaged over the last ``period`` rounds become s.
After ``rounds`` rounds the variables with s > ``threshold`` are selected and least squares is fit
on them. SVI^d is one round: DWR weights on every pair, one weighted STG fit, the threshold.

Both are built on oodfs's own pieces: :class:`~oodfs_plugins.independence.dwr.DWRWeighter`'s
objective and solver, and :class:`~oodfs_plugins.baselines.stg.STG` with a linear backbone.
dwr.py has no covariance mask, and a mask cannot be passed through its public parameters, so the
masked objective is here (:func:`masked_dwr_objective`); with every entry of the mask 1 it is
bit-for-bit :func:`~oodfs_plugins.independence.dwr.dwr_objective` (tested), and round 1, whose mask
is all ones, calls ``DWRWeighter`` itself. docs/PROTOCOL.md ("SVI") lists every departure from the
reference code with its measured effect.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from scipy.special import ndtr
from threadpoolctl import threadpool_limits

import oodfs
from oodfs import OodfsError
from oodfs.contract.wls import weighted_logistic_regression
from oodfs.numeric import int_seed, one_torch_thread, standardize
from oodfs_plugins.baselines.stg import STG

from .dwr import DWRWeighter, _projected_gradient_max
from .dwr_community import community_dwr_weights

#: SVI's two building blocks: oodfs's own (default) or the reference code's (profile "paper")
DWR_KINDS = ("oodfs", "community")
GATE_KINDS = ("oodfs", "reference")


def masked_dwr_objective(w, X, lambda1: float, lambda2: float, mask: np.ndarray):
    """DWR's objective with the pair (i, j) of the covariance term weighted by ``mask[i, j]``, and
    its gradient: ``sum_{i != j} M_ij Cov_w(X_i, X_j)^2 + lambda1 (sum w - 1)^2 + lambda2 sum w^2``.

    The gradient is :func:`~oodfs_plugins.independence.dwr.dwr_objective`'s with G = 2 M * offdiag(C):
    the derivation there holds for any symmetric G = dF/dC.
    """
    w = np.asarray(w, dtype=float)
    s = float(w.sum())
    if s <= 0.0:
        return lambda1 + 0.0, -2.0 * lambda1 + 2.0 * lambda2 * w
    p = w / s
    m = p @ X
    Xc = X - m
    C = (Xc * p[:, None]).T @ Xc
    off = C.copy()
    np.fill_diagonal(off, 0.0)
    moff = mask * off
    val = float(np.sum(moff * off) + lambda1 * (s - 1.0) ** 2 + lambda2 * float(w @ w))
    G = 2.0 * moff
    quad = np.einsum("ij,ij->i", Xc @ G, Xc)
    grad = (quad - float(np.sum(G * C))) / s + 2.0 * lambda1 * (s - 1.0) + 2.0 * lambda2 * w
    return val, grad


class MaskedDWR(DWRWeighter):
    """DWR whose decorrelation term weights each pair of features by ``mask`` (not registered:
    SVI's reweighting step). Same solvers, stopping rule and defaults as DWR."""

    name = "dwr_masked"

    def __init__(
        self,
        mask=None,
        lambda1=0.05,
        lambda2=0.05,
        solver="lbfgs",
        tol=5e-3,
        max_iter=1000,
        adam_steps=5000,
        adam_lr=1e-3,
        adam_scale="mean1",
        random_state=None,
    ):
        super().__init__(
            lambda1=lambda1,
            lambda2=lambda2,
            solver=solver,
            tol=tol,
            max_iter=max_iter,
            adam_steps=adam_steps,
            adam_lr=adam_lr,
            adam_scale=adam_scale,
            random_state=random_state,
        )
        self.mask = mask

    def _fit_weights(self, X: np.ndarray) -> np.ndarray:
        self._check_params()
        n, d = X.shape
        mask = np.ones((d, d)) if self.mask is None else np.asarray(self.mask, dtype=float)
        lam1, lam2 = float(self.lambda1), float(self.lambda2)

        def fun(u):
            val, grad = masked_dwr_objective(u / n, X, lam1, lam2, mask)
            return val, grad / n

        with threadpool_limits(limits=1, user_api="blas"):
            u0 = np.ones(n)
            _, g0 = fun(u0)
            pgtol = float(self.tol) * float(np.abs(g0).max())
            if self.solver == "lbfgs":
                u, n_iter, _ = self._lbfgs(fun, u0, pgtol)
            else:
                u, n_iter = self._adam(fun, u0, scale=1.0 if self.adam_scale == "mean1" else float(n))
            if not np.all(np.isfinite(u)) or u.sum() <= 0:
                raise OodfsError("svi: the masked DWR produced no usable weights (non-finite or all zero)")
            # DWR's rule: the declared tolerance is met at the returned point, whatever stopped the solver
            self.objective_, grad = fun(u)
            converged = _projected_gradient_max(u, grad) <= pgtol
        self.n_iter_, self.converged_, self.sum_w_ = int(n_iter), bool(converged), float(u.sum() / n)
        return u


def reference_gates(
    X,
    y,
    w,
    lam: float,
    sigma: float,
    seed: int,
    pretrain: int = 3000,
    epochs: int = 5000,
    lr_model: float = 1e-3,
    lr_gates: float = 3e-4,
) -> np.ndarray:
    """Gate ratios Phi((mu + 0.5) / sigma) of the reference code's linear STG (``model/STG.py``).

    oodfs's STG cannot express it through its parameters (no pretraining, one learning rate, a
    penalty linear in the gate probabilities, standardised data), and its selections differ
    (docs/PROTOCOL.md, "SVI"): a linear model without intercept on the raw data, xavier-uniform
    initialised, ``pretrain`` unweighted full-batch Adam steps (lr ``lr_model``) on the model
    alone, then ``epochs`` steps of Adam (``lr_model`` for the model, ``lr_gates`` for the gate
    means mu, which start at 0) on sum_i w_i (y_i - f(x_i * z))^2 + lam (sum_j Phi_j)^2, with
    w summing to 1 and one gate-noise draw per step. float32, as the reference.
    """
    import torch

    n, d = X.shape
    with one_torch_thread():
        g = torch.Generator().manual_seed(int(seed))
        Xt = torch.as_tensor(X, dtype=torch.float32)
        yt = torch.as_tensor(y, dtype=torch.float32)[:, None]
        wt = torch.as_tensor(w / w.sum(), dtype=torch.float32)[:, None]
        bound = math.sqrt(6.0 / (d + 1))  # xavier_uniform_ of a (1, d) weight
        beta = torch.nn.Parameter((torch.rand(d, 1, generator=g) * 2 - 1) * bound)
        mu = torch.nn.Parameter(torch.zeros(d))
        pre = torch.optim.Adam([beta], lr=lr_model)
        for _ in range(int(pretrain)):
            pre.zero_grad()
            torch.mean((Xt @ beta - yt) ** 2).backward()
            pre.step()
        opt = torch.optim.Adam([{"params": [beta], "lr": lr_model}, {"params": [mu], "lr": lr_gates}])
        inv = 1.0 / math.sqrt(2.0)
        for _ in range(int(epochs)):
            opt.zero_grad()
            z = torch.clamp(mu + sigma * torch.randn(d, generator=g) + 0.5, 0.0, 1.0)
            erm = (wt * ((Xt * z) @ beta - yt) ** 2).sum()
            reg = (0.5 * (1 + torch.erf((mu + 0.5) / sigma * inv))).sum()
            (erm + lam * reg**2).backward()
            opt.step()
        with torch.no_grad():
            return (0.5 * (1 + torch.erf((mu + 0.5) / sigma * inv))).double().numpy().copy()


def _positive_int(value, what: str, who: str) -> int:
    if not isinstance(value, Integral) or isinstance(value, bool) or value < 1:
        raise OodfsError(f"{who}: {what} must be a positive integer, got {value!r}")
    return int(value)


def _positive_real(value, what: str, who: str, *, allow_zero: bool = False) -> float:
    ok = isinstance(value, Real) and not isinstance(value, bool) and np.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise OodfsError(f"{who}: {what} must be a finite number {bound}, got {value!r}")
    return float(value)


class SVI(oodfs.Selector):
    """SVI (Yu et al. 2023): masked DWR weights and weighted stochastic gates, iterated; scores = gate ratios.

    Round t of ``rounds`` (reference 10): DWR weights that decorrelate every pair of features
    except those already selected (mask 1 - s s^T), then a linear stochastic-gates fit weighted
    by them; s is the mean gate ratio Phi((mu + 0.5) / sigma) over the last ``period`` rounds
    (reference 3). ``scores_`` are the final s (in [0, 1]); ``selected_`` is s > ``threshold``
    (reference 0.2), the set SVI reports; ``coef_`` least squares without intercept on it (the
    reference's final model). ``diagnostics_``: ``n_selected``, the weights' ESS / n in the first
    and last round.

    Parameters (docs/PROTOCOL.md, "SVI", gives the reference's values and the measured effects):

    * ``dwr`` -- ``"oodfs"`` (default): oodfs's DWR objective and solver, masked; ``"community"``:
      the reference's DWR (:mod:`oodfs_plugins.independence.dwr_community`), masked, with
      ``dwr_steps`` Adam steps (reference 20 000).
    * ``gates`` -- ``"oodfs"`` (default): oodfs's STG with a linear backbone, full-batch,
      ``stg_epochs`` steps, penalty ``lam`` * sum_j Phi_j on the standardised data;
      ``"reference"``: the reference's linear STG (:func:`reference_gates`), penalty
      ``lam`` * (sum_j Phi_j)^2 after 3000 pretraining steps.
    * ``lam`` 3, ``sigma`` 0.1, ``threshold`` 0.2, ``rounds`` 10, ``period`` 3: the reference's.
      No grid: the reference fixes every constant.

    ``profiles["paper"]``: the reference's blocks (community DWR, 20 000 steps; reference gates).

    On a binary target (docs/PROTOCOL.md, "Binary targets") the weights are learnt from X as
    ever and the selection step is weighted logistic regression with stochastic gates: oodfs's
    linear STG with its logistic loss (``gates="oodfs"``); ``coef_`` is unpenalised logistic
    regression on the selected features (raw scale). The reference's gates are a least-squares
    model without intercept: ``gates="reference"`` refuses a binary target.
    """

    name = "svi"
    grid = {"lam": [3.0]}
    profiles = {"paper": {"dwr": "community", "gates": "reference"}}
    task_types = ("regression", "binary")
    #: the gates' initial weights are drawn per input column, in column order
    permutation_invariant = False

    def __init__(
        self,
        lam=3.0,
        sigma=0.1,
        threshold=0.2,
        rounds=10,
        period=3,
        dwr="oodfs",
        gates="oodfs",
        stg_epochs=5000,
        dwr_steps=20000,
        k=5,
        random_state=None,
    ):
        self.lam = lam
        self.sigma = sigma
        self.threshold = threshold
        self.rounds = rounds
        self.period = period
        self.dwr = dwr
        self.gates = gates
        self.stg_epochs = stg_epochs
        self.dwr_steps = dwr_steps
        self.k = k
        self.random_state = random_state

    # -- parameters ------------------------------------------------------------------------
    def _settings(self, task: str = "regression") -> dict:
        who = self.name
        for what, valid in (("dwr", DWR_KINDS), ("gates", GATE_KINDS)):
            value = getattr(self, what)
            if not isinstance(value, str) or value not in valid:
                raise OodfsError(f"{who}: {what} must be one of {', '.join(map(repr, valid))}; got {value!r}")
        out = {
            "lam": _positive_real(self.lam, "lam", who, allow_zero=True),
            "sigma": _positive_real(self.sigma, "sigma", who),
            "threshold": _positive_real(self.threshold, "threshold", who),
            "stg_epochs": _positive_int(self.stg_epochs, "stg_epochs", who),
            "dwr_steps": _positive_int(self.dwr_steps, "dwr_steps", who),
            "rounds": _positive_int(self.rounds, "rounds", who),
            "period": _positive_int(self.period, "period", who),
            "dwr": self.dwr,
            "gates": self.gates,
            "task": task,
        }
        if task == "binary" and self.gates == "reference":
            raise OodfsError(
                f"{who}: gates='reference' fits least squares and cannot classify; use gates='oodfs'"
            )
        if out["threshold"] >= 1:
            raise OodfsError(f"{who}: threshold must be a gate ratio in (0, 1), got {self.threshold!r}")
        return out

    # -- the algorithm ---------------------------------------------------------------------
    @staticmethod
    def _weights(X, s: dict, ratio: np.ndarray | None) -> tuple[np.ndarray, bool | None]:
        """DWR weights (mean 1) whose decorrelation term skips pairs by 1 - ratio ratio^T; round 1
        (ratio None: every pair) is oodfs's DWR itself, or the community DWR unmasked. Also
        whether oodfs's DWR met its tolerance (None for the community DWR, which has no rule)."""
        mask = None if ratio is None else 1.0 - np.outer(ratio, ratio)
        if s["dwr"] == "community":
            return community_dwr_weights(X, mask, steps=s["dwr_steps"])[0], None
        est = DWRWeighter() if mask is None else MaskedDWR(mask=mask)
        est.fit(X)
        return est.weights_, est.converged_

    @staticmethod
    def _ratios(X, y, w, s: dict, seed: int) -> np.ndarray:
        if s["gates"] == "reference":
            return reference_gates(X, y, w, s["lam"], s["sigma"], seed, epochs=s["stg_epochs"])
        stg = STG(
            lam=s["lam"],
            penalty_reduction="sum",
            sigma=s["sigma"],
            hidden_layer_sizes=(),
            batch_size=X.shape[0],
            max_epochs=s["stg_epochs"],
            random_state=seed,
            track_loss=False,  # a round keeps the gates only, not STG's loss curve
        )
        return ndtr((stg.fit(X, y, sample_weight=w, task=s["task"]).scores_ + 0.5) / s["sigma"])

    @classmethod
    def _run(cls, X, y, sample_weight, s: dict, seed: int, first: tuple) -> oodfs.GridFit:
        seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=s["rounds"])
        history: list[np.ndarray] = []
        ratio = previous = None
        ess, dwr_met = [], []
        for t in range(s["rounds"]):
            w, met = first if t == 0 else cls._weights(X, s, ratio)
            ess.append(float(w.sum() ** 2 / (w @ w) / w.size))
            dwr_met.append(met)
            fit_w = w if sample_weight is None else w * sample_weight
            history = (history + [cls._ratios(X, y, fit_w, s, int(seeds[t]))])[-s["period"] :]
            previous, ratio = ratio, np.mean(history, axis=0)
        n_selected = int((ratio > s["threshold"]).sum())
        return oodfs.GridFit(
            ratio,
            {
                "n_selected": n_selected,
                "ess_fraction_first": ess[0],
                "ess_fraction_last": ess[-1],
                "converged": cls._settled(previous, ratio, s["threshold"]),
                "dwr_converged": None if None in dwr_met else float(np.mean(dwr_met)),
            },
        )

    #: the rounds' declared convergence rule: in the last round the averaged gate ratios moved by
    #: at most this (gate-ratio units) and the selected set did not change (docs/PROTOCOL.md,
    #: "Iterative methods' stopping rules")
    converge_tol = 0.05

    @classmethod
    def _settled(cls, previous: np.ndarray | None, ratio: np.ndarray, threshold: float) -> bool | None:
        if previous is None:  # one round (SVI^d): nothing iterates
            return None
        same_set = np.array_equal(previous > threshold, ratio > threshold)
        return bool(same_set and float(np.abs(ratio - previous).max()) <= cls.converge_tol)

    def _fit_scores(self, X, y, sample_weight):
        s = self._settings(self.task_)
        fit = self._run(X, y, sample_weight, s, int_seed(self.random_state), self._weights(X, s, None))
        self.selected_ = fit.values > s["threshold"]
        self.coef_ = np.zeros(X.shape[1])
        if self.selected_.any() and self.task_ == "binary":
            Xs = X[:, self.selected_]
            self.coef_[self.selected_] = weighted_logistic_regression(Xs, y) / standardize(Xs).sd
        elif self.selected_.any():
            self.coef_[self.selected_] = np.linalg.lstsq(X[:, self.selected_], y, rcond=None)[0]
        self.diagnostics_ = fit.diagnostics
        return fit.values

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, task="regression"):
        """Round 1's weights depend on no gate setting: computed once per DWR setting."""
        cache: dict[tuple, np.ndarray] = {}
        out = []
        for p in points:
            s = cls(**p, random_state=random_state)._settings(task)
            key = (s["dwr"], s["dwr_steps"])
            if key not in cache:
                cache[key] = cls._weights(X, s, None)
            out.append(cls._run(X, y, sample_weight, s, int_seed(random_state), cache[key]))
        return out


class SVID(SVI):
    """SVI^d (Yu et al. 2023): DWR weights and one weighted stochastic-gates fit; scores = gate ratios.

    SVI's first round alone, as the reference's ``exp_linear.py --reweighting DWR --paradigm fs``:
    DWR weights on every pair of features, one weighted linear stochastic-gates fit,
    ``selected_`` = gate ratio > ``threshold``. Parameters and profiles as :class:`SVI`'s.
    """

    name = "svi_d"
    #: one round, so no moving average
    rounds = 1
    period = 1

    def __init__(
        self,
        lam=3.0,
        sigma=0.1,
        threshold=0.2,
        dwr="oodfs",
        gates="oodfs",
        stg_epochs=5000,
        dwr_steps=20000,
        k=5,
        random_state=None,
    ):
        self.lam = lam
        self.sigma = sigma
        self.threshold = threshold
        self.dwr = dwr
        self.gates = gates
        self.stg_epochs = stg_epochs
        self.dwr_steps = dwr_steps
        self.k = k
        self.random_state = random_state


# -- what SVI's experiment reports, declared for every suite (docs/PROTOCOL.md, "SVI") -----------
def _rmses(e: oodfs.Evaluation) -> np.ndarray:
    return np.asarray(list(e.test_rmse.values()), dtype=float)


SVI_METRICS = (
    oodfs.Metric(
        "rmse_max",
        "RMSE max",
        True,
        lambda e: float(_rmses(e).max()),
        role="detail",
        description="largest downstream RMSE over the test environments (SVI's 'max')",
    ),
    oodfs.Metric(
        "mse_mean",
        "MSE mean",
        True,
        lambda e: float(np.mean(_rmses(e) ** 2)),
        role="detail",
        description="mean over test environments of the downstream MSE (the SVI code's 'RMSE average')",
    ),
    oodfs.Metric(
        "mse_std",
        "MSE sd",
        True,
        lambda e: float(np.std(_rmses(e) ** 2)),
        role="detail",
        description="standard deviation (ddof 0) over test environments of that MSE (SVI's 'RMSE std')",
    ),
    oodfs.Metric(
        "mse_max",
        "MSE max",
        True,
        lambda e: float(np.max(_rmses(e) ** 2)),
        role="detail",
        description="largest downstream MSE over the test environments (the SVI code's 'RMSE max')",
    ),
    oodfs.diagnostic("n_selected", "selected", None, "features whose gate ratio passes the threshold (SVI)"),
    oodfs.diagnostic(
        "ess_fraction_first",
        "ESS / n, round 1",
        False,
        "effective sample size of round 1's DWR weights, over n (SVI)",
    ),
    oodfs.diagnostic(
        "ess_fraction_last",
        "ESS / n, last round",
        False,
        "effective sample size of the last round's weights (SVI)",
    ),
)
