"""``oodfs theory``: the paper's theorems on weighted least squares, checked numerically.

Xu et al. (ICML 2022) prove that WLS with a weighting function under which a non-stable feature
is independent of the others gives that feature a zero population coefficient (Theorem 5.1), and
bound the finite-sample error (Theorem 5.3)::

    ||beta_hat_w_hat - beta_w||^2 <= O(W sigma^2 d / (n lambda)) + O(W B^2 C^2 / (n lambda^2))
                                     + O(eps^2 M_w / lambda^2) + o(1/n),

W a bound on the weights, eps^2 = E[(w - w_hat)^2] the error of learned weights; the same bound
holds for ||beta_hat(V)|| and ||beta_hat(S) - beta_w(S)|| separately. With exact weights (eps = 0)
both norms shrink like n^(-1/2); with learned weights they level off at the eps term.

What is run. For each *condition* (synthetic environment parameters and a training bias rate r),
each n of a log grid and each replicate: one training sample (X, y) from the environment (all
methods fit the same sample: paired comparisons), a column layout drawn per sample, and WLS with
the weights of each *method*:

* ``ols`` (no weights); target law: the training law itself (its V coefficients are not zero);
* ``oracle_ipw``, ``oracle_cond``: the environment's oracle weighters (registered plugins), built
  with ``for_environment(env, r)``; target laws: the law before selection, and the selected law
  of S with V drawn independently of it;
* ``dwr``, ``srdo`` (default parameters), ``dwr_converged`` (L-BFGS-B run to convergence:
  ``tol=0``, at most 5000 iterations, instead of the default early stop) and ``srdo_unclipped`` (the same
  classifier, ratio
  clipped at 1e12 instead of 10: one fit, read twice through ``fit_grid``); target law: the
  product of the training marginals (the law SRDO's density ratio points to; DWR's
  decorrelation has no unique population target, it is compared with the same law).

Per fit: ``beta_v`` = ||beta_hat(V)||_2, ``err_s`` = ||beta_hat(S) - beta*(S)||_2 with beta* of the
method's target law, ``err`` = ||beta_hat - beta*||_2, the weights' effective sample size
``ess`` (and ``ess_fraction``), ``max_abs_corr`` (largest weighted |correlation| over all pairs of
features), ``max_corr_v`` (over pairs with a V feature) and ``max_corr_vr`` (largest weighted
|corr(V_j, a)|, a = f(S) minus its weighted least-squares fit on S: the misspecification that
WLS cannot explain with S. By Frisch-Waugh-Lovell, beta_hat(V) is the weighted regression of
y on V residualised on S, whose population part is driven by cov_w(V, a) -- the dependence
that Theorem 5.1 removes by making V independent of S; V may stay correlated with S itself
without biasing beta(V) when f is linear in S).
beta* of each target law is estimated once per condition on ``n_target`` draws of that law
(sampled directly, without weights: the law before selection by the environment's
``sample_unselected``, the others by recombining columns of selected draws), as the least-squares
coefficients of the noiseless f(S) on X.

Slopes: per (condition, method, metric) the least-squares slope of log10(metric) on log10(n)
over every replicate (``scipy.stats.linregress``; 95% interval from its standard error and
Student's t), the Theil-Sen slope of the per-n medians (``scipy.stats.theilslopes``, its 95%
interval), the same slope restricted to n >= ``tail_n``, and the slope against log10(ESS).

Cost. WLS and the oracle weights are cheap; DWR and SRDO are the cost, so they run on fewer
replicates and only up to ``max_n`` (see ``METHODS``). Tasks (condition, n, replicate) run in
``jobs`` worker processes, largest n first.
"""

from __future__ import annotations

from oodfs.theory.analysis import METRICS, load_run, slopes, summary_markdown
from oodfs.theory.experiment import (
    CONDITIONS,
    METHODS,
    N_GRID,
    TARGETS,
    Condition,
    Method,
    TheoryConfig,
    check_config,
    quick_config,
    run_task,
    target_coefficients,
)
from oodfs.theory.figures import make_figures
from oodfs.theory.run import run_theory

__all__ = [
    "CONDITIONS",
    "METHODS",
    "METRICS",
    "N_GRID",
    "TARGETS",
    "Condition",
    "Method",
    "TheoryConfig",
    "check_config",
    "load_run",
    "make_figures",
    "quick_config",
    "run_task",
    "run_theory",
    "slopes",
    "summary_markdown",
    "target_coefficients",
]
