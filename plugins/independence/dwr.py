"""DWR: decorrelation weighting (Kuang et al. 2020) with the objective of the paper's appendix.

The objective (paper, "More Experimental Details", equation app-DWR), over w in R^n, w >= 0::

    F(w) = sum_{i != j} Cov_w(X_i, X_j)^2 + lambda1 * (sum_k w_k - 1)^2 + lambda2 * sum_k w_k^2

``Cov_w`` is the weighted empirical covariance with the normalised weights p = w / sum(w)
(``np.cov(X.T, aweights=w, bias=True)``)::

    Cov_w = sum_k p_k (x_k - m)(x_k - m)^T,   m = sum_k p_k x_k.

Why normalised: it is the usual definition of a weighted covariance, and it makes the first term
depend on the *shape* of w only, so that lambda1 does what its term says (keeps sum(w) near 1).
With the unnormalised form ``sum_k w_k x_k x_k^T - (sum_k w_k x_k)(...)^T`` the first term can
be made small just by shrinking every weight, and the optimum has sum(w) ~ lambda1 / (lambda1 +
||Cov||^2) ~ 0.05 instead of 1. The two forms agree whenever sum(w) = 1.

Consequences worth knowing (measured on the synthetic data, n = 10000):

* For fixed p the best total mass is s = lambda1 / (lambda1 + lambda2 * sum p^2), so the two
  penalties act on p only through lambda1 * lambda2 * q / (lambda1 + lambda2 * q) ~ lambda2 * q,
  q = sum p^2 = 1 / ESS. lambda1 barely matters and lambda2 is a weak penalty on the effective
  sample size (ESS): the whole 3 x 3 grid gives nearly the same weights.
* The global minimum of F is degenerate: the covariances can be shrunk by concentrating the
  weights near the feature means (shrinking the variances) as well as by decorrelating. Run to
  convergence, either solver ends with ~98% of the weights at 0 (ESS ~ 60-200 of 10000), while
  the largest weighted |correlation| hardly improves after ~50 L-BFGS iterations (0.33 there,
  0.31 at convergence; ESS 450 there). The paper's Adam (lr 0.001, 5000 steps on mean-1
  weights) is therefore an early-stopped solver, and so is the default here (see ``tol``).

Solvers (both minimise exactly :func:`dwr_objective`; both work on the mean-1 variables
u = n * w, start from u = 1, i.e. w = 1/n, the uniform weights with sum(w) = 1):

* ``"lbfgs"`` (default): scipy L-BFGS-B with bounds u >= 0 and the exact analytic gradient.
  Stops when the largest projected gradient component has fallen to ``tol`` times its value
  at the start (a scale-free rule: it does not depend on n or on the units of X), or after
  ``max_iter`` iterations. ``tol=0`` runs to scipy's own convergence. Default ``tol=5e-3``,
  measured on the synthetic poly data (r = 1.5 / 2.5 / 3, n = 500 / 2000 / 10000): 17-70
  iterations, an objective 1.7-7x below what Adam reaches in 5000 steps, ESS 5-15% of n
  (Adam's: ~20%). At ``tol=1e-2`` the objective was once *above* Adam's (r = 3, n = 10000:
  0.0407 against 0.0406); lower tolerances head for the degenerate minimum. Small n
  concentrates the weights sooner (ESS 6-7% at n = 500): the collapse warning of
  :class:`oodfs.Weighter` may fire there; a larger ``tol`` or ``solver="adam"`` keeps more.
* ``"adam"``: the paper's optimiser, ``torch.optim.Adam`` with lr 0.001 for ``adam_steps``
  steps, projected onto u >= 0 after every step, fed the same analytic gradient. lr 0.001 is
  applied to the mean-1 weights u (as in Kuang et al.'s formulation and the group's code);
  applied to w itself (sum(w) = 1, so every w_k ~ 1e-4) one step is 10x a weight, and Adam
  falls into the degenerate minimum within ~1000 steps.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, minimize
from threadpoolctl import threadpool_limits

import oodfs
from oodfs import OodfsError
from oodfs.numeric import one_torch_thread

SOLVERS = ("lbfgs", "adam")


def dwr_objective(w: np.ndarray, X: np.ndarray, lambda1: float, lambda2: float, return_grad: bool = True):
    """The paper's DWR objective F(w) and, if ``return_grad``, its exact gradient dF/dw.

    ``w`` are the raw weights (sum about 1); ``Cov_w`` uses p = w / sum(w) (module docstring).
    With G = 2 * offdiag(Cov_w) and s = sum(w), the gradient of the first term is
    ``((x_k - m)^T G (x_k - m) - tr(G Cov_w)) / s``.
    """
    w = np.asarray(w, dtype=float)
    s = float(w.sum())
    if s <= 0.0:  # all weights zero: no distribution, covariance term taken as 0
        val = lambda1 + 0.0
        return (val, -2.0 * lambda1 + 2.0 * lambda2 * w) if return_grad else val
    p = w / s
    m = p @ X
    Xc = X - m
    C = (Xc * p[:, None]).T @ Xc
    off = C.copy()
    np.fill_diagonal(off, 0.0)
    val = float(np.sum(off * off) + lambda1 * (s - 1.0) ** 2 + lambda2 * float(w @ w))
    if not return_grad:
        return val
    G = 2.0 * off
    quad = np.einsum("ij,ij->i", Xc @ G, Xc)
    grad = (quad - float(np.sum(G * C))) / s + 2.0 * lambda1 * (s - 1.0) + 2.0 * lambda2 * w
    return val, grad


class DWRWeighter(oodfs.Weighter):
    """DWR: sample weights that decorrelate every pair of features (paper's appendix objective).

    Minimises ``sum_{i!=j} Cov_w(X_i, X_j)^2 + lambda1 (sum w - 1)^2 + lambda2 sum w^2`` over
    w >= 0 (see :mod:`oodfs_plugins.independence.dwr` for the covariance convention, the
    solvers and why both are early-stopped). ``weights_`` are the solution scaled to mean 1;
    ``objective_`` is F at the solution (raw weights, sum about 1), ``n_iter_`` the iterations
    (L-BFGS-B) or steps (Adam) used, ``converged_`` whether the stopping rule (rather than the
    iteration cap) ended L-BFGS-B (always True for Adam, which has a fixed budget).

    Default grid point (lambda1, lambda2) = (0.05, 0.05): the centre of the paper's search
    range. The choice matters little: lambda1 mostly sets sum(w), and over the whole 3 x 3 grid
    the weights' effective sample size stays within 1246-1481 of 10000 (synthetic poly data,
    r = 2.5, seed 0), with the same ranking.

    ``random_state`` is accepted for the common interface; both solvers are deterministic.
    """

    name = "dwr"
    grid = {"lambda1": [0.02, 0.05, 0.1], "lambda2": [0.02, 0.05, 0.1]}

    def __init__(
        self,
        lambda1: float = 0.05,
        lambda2: float = 0.05,
        solver: str = "lbfgs",
        tol: float = 5e-3,
        max_iter: int = 1000,
        adam_steps: int = 5000,
        random_state=None,
    ):
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.adam_steps = adam_steps
        self.random_state = random_state

    def _check_params(self) -> None:
        if self.solver not in SOLVERS:
            raise OodfsError(f"dwr: solver must be one of {SOLVERS}, got {self.solver!r}")
        for what in ("lambda1", "lambda2", "tol"):
            value = getattr(self, what)
            if not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                raise OodfsError(f"dwr: {what} must be a finite number >= 0, got {value!r}")
        for what in ("max_iter", "adam_steps"):
            value = getattr(self, what)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise OodfsError(f"dwr: {what} must be a positive integer, got {value!r}")

    def _fit_weights(self, X: np.ndarray) -> np.ndarray:
        self._check_params()
        n = X.shape[0]
        lam1, lam2 = float(self.lambda1), float(self.lambda2)

        def fun(u):  # F as a function of the mean-1 variables u = n * w
            val, grad = dwr_objective(u / n, X, lam1, lam2)
            return val, grad / n

        # Tall-skinny products (n x d, d ~ 10): threaded BLAS only adds overhead, and under
        # load it made every evaluation 20-50x slower.
        with threadpool_limits(limits=1, user_api="blas"):
            u0 = np.ones(n)
            if self.solver == "lbfgs":
                u, n_iter, converged = self._lbfgs(fun, u0)
            else:
                u, n_iter, converged = self._adam(fun, u0)
            if not np.all(np.isfinite(u)) or u.sum() <= 0:
                raise OodfsError(
                    "dwr: the optimiser produced no usable weights (non-finite or all zero); "
                    "check X for extreme values"
                )
            self.objective_ = dwr_objective(u / n, X, lam1, lam2, return_grad=False)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self.sum_w_ = float(u.sum() / n)
        return u

    def _lbfgs(self, fun, u0):
        _, g0 = fun(u0)
        # u0 = 1 is interior, so the projected gradient at the start is the gradient
        pgtol = float(self.tol) * float(np.abs(g0).max())
        res = minimize(
            fun,
            u0,
            jac=True,
            method="L-BFGS-B",
            bounds=Bounds(0.0, np.inf),
            options={"maxiter": int(self.max_iter), "gtol": pgtol},
        )
        converged = res.status == 0
        return np.maximum(res.x, 0.0), res.nit, converged

    def _adam(self, fun, u0):
        import torch

        with one_torch_thread():
            u = torch.tensor(u0, dtype=torch.float64, requires_grad=True)
            opt = torch.optim.Adam([u], lr=1e-3)
            for _ in range(int(self.adam_steps)):
                _, g = fun(u.detach().numpy())
                u.grad = torch.from_numpy(g)
                opt.step()
                with torch.no_grad():
                    u.clamp_(min=0.0)
            return u.detach().numpy().copy(), self.adam_steps, True

    def _diagnostics(self) -> dict:
        return {"objective": self.objective_, "n_iter": self.n_iter_, "converged": self.converged_}
