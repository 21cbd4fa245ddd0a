"""Oracle weights for the synthetic environment: the weighting functions that independence-driven
importance weighting tries to learn, computed from the known selection mechanism.

A training sample of the synthetic environment with bias rate r has density

    p_r(s, v) = p(s) p(v) Pr(select | s, v; r) / Z_r,   Z_r = E_p[Pr(select | S, V; r)],

where p(s) p(v) is the law before selection (S and V independent, the V's i.i.d. clipped
normals). Two weighting functions undo (part of) the selection:

* ``oracle_ipw``, the inverse selection probability: w(x) = Z_r / Pr(select | x; r). The weighted
  law is p(s) p(v): every V column is independent of all other columns, which is what the
  paper's proof that WLS gives V a zero coefficient uses (Theorem 5.1 in the paper). The S
  columns keep their own correlation (S_i = 0.8 Z_i + 0.2 Z_{i+1}), so the features are not
  mutually independent: V independent of the rest is the part of the independence that the
  V coefficients need.
* ``oracle_cond``, undoing only V's conditional law given S: w(x) = c(f(S))^k / Pr(select | x; r),
  c^k = E_V[Pr(select | f, V)] (module :mod:`oodfs_plugins.environments.synthetic`). The
  weighted law is p_r(s) p(v): S keeps its selected marginal, V gets back its own law,
  independent of S. Its weights are exactly mean 1 under p_r and much less spread than
  ``oracle_ipw``'s (the factor c^k cancels the part of 1 / Pr that only depends on S).

Both are computed in log space (at the paper's r = 2.5 the weights span tens of orders of
magnitude) and scaled to mean 1 on the sample, as every oodfs weighter; the constant Z_r
drops out. ``diagnostics_`` adds ``log10_weight_span`` (log10 of max / min weight).

They take the environment's parameters (including ``layout_seed``, so that they read the
features from the right columns) and the bias rate ``r`` of the training data; they are only
meaningful on data drawn from that environment. ``for_environment(env, r)`` builds one from an
environment instance.
"""

from __future__ import annotations

import numpy as np

import oodfs

from .synthetic import Synthetic

#: the environment parameters that the weights depend on (not the sampler or the noise)
ENV_PARAMS = ("setting", "mlp_seed", "spurious", "exponent", "clip", "d_s", "d_v", "layout_seed")


class _SyntheticOracle(oodfs.Weighter):
    grid: dict = {}
    #: the weights depend on which column holds which feature (the environment's layout)
    permutation_invariant = False

    def __init__(
        self,
        r=2.5,
        setting="poly",
        mlp_seed=0,
        spurious=("V4", "V5"),
        exponent=10.0,
        clip=2.0,
        d_s=5,
        d_v=5,
        layout_seed=None,
        random_state=None,
    ):
        self.r = r
        self.setting = setting
        self.mlp_seed = mlp_seed
        self.spurious = spurious
        self.exponent = exponent
        self.clip = clip
        self.d_s = d_s
        self.d_v = d_v
        self.layout_seed = layout_seed
        self.random_state = random_state

    @classmethod
    def for_environment(cls, env: Synthetic, r, **kwargs):
        """The oracle for data of the synthetic environment ``env`` with bias rate ``r``."""
        params = env.get_params(deep=False)
        return cls(r=r, **{k: params[k] for k in ENV_PARAMS}, **kwargs)

    def environment(self) -> Synthetic:
        return Synthetic(**{k: getattr(self, k) for k in ENV_PARAMS})

    def _log_weights(self, env: Synthetic, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _fit_weights(self, X: np.ndarray) -> np.ndarray:
        log_w = self._log_weights(self.environment(), X)
        self.log10_weight_span_ = float((log_w.max() - log_w.min()) / np.log(10))
        return np.exp(log_w - log_w.max())  # the largest weight is 1; the base class scales to mean 1

    def fit(self, X, y=None):
        super().fit(X, y)
        self.diagnostics_["log10_weight_span"] = self.log10_weight_span_
        return self


class OracleIPW(_SyntheticOracle):
    """Oracle inverse selection probability 1 / Pr(select | x; r) of the synthetic environment (V
    independent of the rest).

    Undoes the selection: the weighted law is the synthetic environment's law before selection.
    Parameters: the training bias rate ``r`` and the environment's parameters (see
    :mod:`oodfs_plugins.environments.oracle`). Deterministic; ``random_state`` is ignored.
    """

    name = "oracle_ipw"

    def _log_weights(self, env, X):
        return -env.log_select_prob(X, self.r)


class OracleConditional(_SyntheticOracle):
    """Oracle weights c(f(S))^k / Pr(select | x; r) of the synthetic environment: undo only V's law given S.

    The weighted law keeps the selected law of S and gives V back its own law, independent of S.
    Parameters: the training bias rate ``r`` and the environment's parameters (see
    :mod:`oodfs_plugins.environments.oracle`). Deterministic; ``random_state`` is ignored.
    """

    name = "oracle_cond"

    def _log_weights(self, env, X):
        return env.log_mean_select_prob(X, self.r) - env.log_select_prob(X, self.r)
