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
  0.31 at convergence; ESS 450 there). Adam with lr 0.001 on mean-1 weights for 5000 steps
  is therefore an early-stopped solver, and so is the default here (see ``tol``): neither
  minimises the paper's objective, and what they select depends on where they stop.

Solvers (both minimise exactly :func:`dwr_objective`, start from the uniform weights
w = 1/n with sum(w) = 1, and return the weights scaled to mean 1):

* ``"lbfgs"`` (default): scipy L-BFGS-B on the mean-1 variables u = n * w with bounds u >= 0
  and the exact analytic gradient. Stops when the largest projected gradient component has
  fallen to ``tol`` times its value at the start (a scale-free rule: it does not depend on n or
  on the units of X), or after ``max_iter`` iterations. ``tol=0`` runs to scipy's own
  convergence. Default ``tol=5e-3``, measured on the synthetic poly data (r = 1.5 / 2.5 / 3,
  n = 500 / 2000 / 10000): 17-70 iterations, ESS 5-15% of n. **This tolerance is an implicit
  regulariser, not a numerical detail**: lower tolerances head for the degenerate minimum
  above, and on poly data with r = 2.5, n = 10000 the spurious V4/V5 enter the top five when
  DWR runs to convergence (``benchmarks/bench_protocol.py`` measures objective, ESS and F1 at
  tol 5e-3, 1e-3, 1e-4 and 0). The paper states no solver tolerance or budget.
* ``"adam"``: the paper's optimiser, Adam (``torch.optim.Adam``) with learning rate
  ``adam_lr`` (paper: 0.001) for a fixed ``adam_steps`` steps (the paper gives no step
  count), projected onto w >= 0 after every step, fed the same analytic gradient. What the
  learning rate applies to is ``adam_scale``:

  - ``"mean1"`` (default): the variables are u = n * w (mean 1), as in Kuang et al.'s
    formulation with mean-1 weights; a step of 0.001 is 0.1 % of a weight.
  - ``"sum1"``: the variables are w itself with sum(w) = 1, as the paper's appendix writes
    the objective. Adam's step does not depend on the gradient's scale, so lr 0.001 on w is
    lr 0.001 * n on u: at n = 10000 one step is 10x a weight and the weights fall into the
    degenerate minimum within a few hundred steps (measured in ``benchmarks/bench_protocol.py``).

  Adam has no stopping rule; ``converged_`` reports whether its last point meets L-BFGS-B's
  rule (largest projected gradient component at most ``tol`` times the starting one).

``profiles["paper"]`` is the paper's literal reading: Adam, lr 0.001 on w with sum(w) = 1.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, minimize
from threadpoolctl import threadpool_limits

import oodfs
from oodfs import OodfsError
from oodfs.numeric import max_abs_offdiag_corr

from ._warnings import warn_if_collapsed

SOLVERS = ("lbfgs", "adam")
#: what Adam's learning rate applies to: the mean-1 weights u = n * w, or w with sum(w) = 1
ADAM_SCALES = ("mean1", "sum1")
#: ``corr_kept`` is reported only when the largest unweighted |correlation| is at least this:
#: below it there is little to decorrelate and the ratio is noise over noise (docs/PROTOCOL.md,
#: "DWR's stop and its decorrelation check")
CORR_KEPT_MIN_BEFORE = 0.2


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def corr_kept(X: np.ndarray, w: np.ndarray) -> float | None:
    """The largest weighted |correlation| between two features over the unweighted one, None when
    the unweighted one is below ``CORR_KEPT_MIN_BEFORE`` (nothing much to decorrelate)."""
    before = max_abs_offdiag_corr(X)
    return max_abs_offdiag_corr(X, w) / before if before >= CORR_KEPT_MIN_BEFORE else None


def _projected_gradient_max(u: np.ndarray, grad: np.ndarray) -> float:
    """Largest component of the gradient projected on the bounds u >= 0 (L-BFGS-B's measure)."""
    pg = np.where(u > 0, grad, np.minimum(grad, 0.0))
    return float(np.abs(pg).max())


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
    (L-BFGS-B) or steps (Adam) used, ``converged_`` whether the returned point meets the declared
    tolerance (largest projected gradient component at most ``tol`` times the starting one),
    whichever rule ended the solver, and ``corr_kept_`` the largest weighted |correlation|
    between two features divided by the unweighted one (None when that is below
    ``CORR_KEPT_MIN_BEFORE``). These four are also the fit's diagnostics (``objective``,
    ``n_iter``, ``converged``, ``corr_kept``); a ``corr_kept`` above 0.9 marks the fit suspect:
    the weights left the features about as correlated as they were (docs/PROTOCOL.md, "DWR's
    stop and its decorrelation check": at d = 200 this is the objective's own minimum, not a
    stalled solver).

    Parameters (the paper's value where it states one; ours; why):

    * ``lambda1``, ``lambda2`` -- the paper's grid {0.02, 0.05, 0.1} each; default 0.05, the
      centre. The choice matters little: lambda1 mostly sets sum(w), and over the whole
      3 x 3 grid the weights' effective sample size stays within 1246-1481 of 10000
      (synthetic poly data, r = 2.5, seed 0), with the same ranking.
    * ``solver`` -- paper: Adam. Ours: ``"lbfgs"`` (L-BFGS-B, exact gradient): the same
      objective in ~20 iterations instead of thousands of steps; ``"adam"`` is available.
    * ``tol`` -- paper: none stated. Ours: 5e-3, L-BFGS-B stops when the largest projected
      gradient component is ``tol`` times the starting one; ``0`` runs to convergence. It
      acts as a regulariser (module docstring); must be >= 0. With ``tol=0`` ``converged_``
      is True only at an exactly stationary point, so scipy's own (relative-reduction) stop
      reports False.
    * ``max_iter`` -- L-BFGS-B's iteration cap, 1000 (never reached at ``tol=5e-3``).
    * ``adam_steps`` -- paper: none stated. Ours: 5000 (Adam only).
    * ``adam_lr`` -- paper: 0.001; ours: 0.001 (Adam only).
    * ``adam_scale`` -- what ``adam_lr`` applies to: ``"mean1"`` (default; u = n * w, mean-1
      weights) or ``"sum1"`` (w with sum(w) = 1, as the paper writes the objective).

    ``profiles["paper"]``: Adam, lr 0.001 on w with sum(w) = 1, 1000 steps. The paper gives no
    step count; on the synthetic poly data (n = 10000, r = 2.5, 3 seeds) the objective has
    reached its floor by then: median 0.00154 after 1000 steps, 0.00149 and 0.00153 after 2000
    and 4000 (Adam at a constant rate wanders around it), ESS 73 / 64 / 64 of 10000; F1 per
    seed 0.8 / 0.8 / 1.0 after 1000 steps, 1.0 / 0.8 / 1.0 after 2000 and 4000: whether the
    collapsed weights put S1..S5 in the top five varies with the seed more than with the step
    count past ~250 (``benchmarks/bench_protocol.py`` part b). 1000 steps cost 1-3 s at n = 10000 (9-27 s for the 3 x 3 grid of one data set).

    ``random_state`` is accepted for the common interface; both solvers are deterministic.
    A fit whose effective sample size falls below ``collapse_ess_fraction`` of n warns
    (:class:`oodfs.WeightCollapseWarning`), from ``fit`` and from ``fit_grid`` alike.
    """

    name = "dwr"
    grid = {"lambda1": [0.02, 0.05, 0.1], "lambda2": [0.02, 0.05, 0.1]}
    profiles = {"paper": {"solver": "adam", "adam_scale": "sum1", "adam_lr": 1e-3, "adam_steps": 1000}}

    def __init__(
        self,
        lambda1: float = 0.05,
        lambda2: float = 0.05,
        solver: str = "lbfgs",
        tol: float = 5e-3,
        max_iter: int = 1000,
        adam_steps: int = 5000,
        adam_lr: float = 1e-3,
        adam_scale: str = "mean1",
        random_state=None,
    ):
        self.lambda1 = lambda1
        self.lambda2 = lambda2
        self.solver = solver
        self.tol = tol
        self.max_iter = max_iter
        self.adam_steps = adam_steps
        self.adam_lr = adam_lr
        self.adam_scale = adam_scale
        self.random_state = random_state

    def _check_params(self) -> None:
        for what, valid in (("solver", SOLVERS), ("adam_scale", ADAM_SCALES)):
            value = getattr(self, what)
            if not isinstance(value, str) or value not in valid:
                raise OodfsError(f"dwr: {what} must be one of {', '.join(map(repr, valid))}; got {value!r}")
        for what in ("lambda1", "lambda2", "tol"):
            value = getattr(self, what)
            if not _is_real(value) or not np.isfinite(value) or value < 0:
                raise OodfsError(f"dwr: {what} must be a finite number >= 0, got {value!r}")
        if not _is_real(self.adam_lr) or not np.isfinite(self.adam_lr) or self.adam_lr <= 0:
            raise OodfsError(f"dwr: adam_lr must be a finite number > 0, got {self.adam_lr!r}")
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
            _, g0 = fun(u0)
            # u0 = 1 is interior, so the projected gradient at the start is the gradient
            pgtol = float(self.tol) * float(np.abs(g0).max())
            if self.solver == "lbfgs":
                u, n_iter, _ = self._lbfgs(fun, u0, pgtol)
            else:
                u, n_iter = self._adam(fun, u0, scale=1.0 if self.adam_scale == "mean1" else float(n))
            if not np.all(np.isfinite(u)) or u.sum() <= 0:
                raise OodfsError(
                    "dwr: the optimiser produced no usable weights (non-finite or all zero); "
                    "check X for extreme values"
                )
            # Converged means the declared tolerance is met at the returned point, whatever ended
            # the solver (its budget, or scipy's relative-reduction rule on a stalled objective).
            self.objective_, grad = fun(u)
            converged = _projected_gradient_max(u, grad) <= pgtol
            kept = corr_kept(X, u)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self.sum_w_ = float(u.sum() / n)
        self.corr_kept_ = kept
        return u

    def _lbfgs(self, fun, u0, pgtol):
        res = minimize(
            fun,
            u0,
            jac=True,
            method="L-BFGS-B",
            bounds=Bounds(0.0, np.inf),
            options={"maxiter": int(self.max_iter), "gtol": pgtol},
        )
        # the third value (scipy's status 0, which a relative-reduction stall also gives) is what
        # SVI's masked DWR reports as converged; DWR itself checks its tolerance (_fit_weights)
        return np.maximum(res.x, 0.0), res.nit, res.status == 0

    def _adam(self, fun, u0, scale: float):
        """Adam on v = u / scale (scale 1: the mean-1 weights u; scale n: w itself), projected
        onto v >= 0 after every step. Returns u and the number of steps.

        The update is ``torch.optim.Adam``'s (betas 0.9, 0.999, eps 1e-8, bias-corrected),
        written in numpy: a step then costs one objective evaluation and no tensor round trip."""
        lr, b1, b2, eps = float(self.adam_lr), 0.9, 0.999, 1e-8
        v = u0 / scale
        m1 = np.zeros_like(v)
        m2 = np.zeros_like(v)
        for t in range(1, int(self.adam_steps) + 1):
            _, g = fun(v * scale)
            g = g * scale  # dF/dv = dF/du * du/dv
            m1 = b1 * m1 + (1 - b1) * g
            m2 = b2 * m2 + (1 - b2) * g * g
            denom = np.sqrt(m2) / np.sqrt(1 - b2**t) + eps
            v = np.maximum(v - (lr / (1 - b1**t)) * m1 / denom, 0.0)
        return v * scale, int(self.adam_steps)

    def _diagnostics(self) -> dict:
        return {
            "objective": self.objective_,
            "n_iter": self.n_iter_,
            "converged": self.converged_,
            "corr_kept": getattr(self, "corr_kept_", None),  # not set by subclasses' own fits (SVI)
        }

    @classmethod
    def _fit_grid(cls, X, points: list[dict], *, random_state) -> list:
        """One fit per point (they share nothing); a collapsed point warns as ``fit`` does."""
        fits = []
        for p in points:
            est = cls(**p, random_state=random_state)
            fit = oodfs.GridFit(est._fit_weights(X), est._diagnostics())
            warn_if_collapsed(cls, p, fit.values)
            fits.append(fit)
            oodfs.point_done()  # the run's progress line (docs/PROTOCOL.md, "Progress")
        return fits
