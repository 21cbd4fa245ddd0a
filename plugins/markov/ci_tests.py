"""Conditional-independence tests for the Markov-boundary searches (docs/PROTOCOL.md, section 12).

A test sees one data matrix whose column 0 is the outcome and columns 1..d the features, and
answers ``log_p(a, b, S)``: the natural log of the p-value of "column a independent of column b
given the columns S". Every answer is cached (a p-value does not depend on the search's level or
conditioning bound, so all grid points of one fit share one cache) and counted.

* ``fisherz``: Fisher's z on the partial correlation (Gaussian, linear dependence), from the
  inverse of the correlation submatrix, two-sided, in log space so that tiny p-values still rank.
* ``rcit``: the randomized conditional independence test of Strobl, Zhang and Visweswaran (2019),
  random Fourier features of a Gaussian kernel, as causal-learn implements it (nonparametric:
  it sees a dependence of the variance as well as of the mean). Its random features are drawn
  from a seed derived from the fit's seed and the tested columns' contents (not their
  positions: the answer does not depend on the column order), so a fit is reproducible and the
  same triple gets the same answer at every grid point.
* ``kci``: the kernel conditional independence test (Zhang et al. 2011), causal-learn's, with its
  gamma approximation of the null; cubic in n, meant for small samples.
"""

from __future__ import annotations

import zlib

import numpy as np
from scipy import stats

import oodfs

TESTS = ("fisherz", "rcit", "kci")
#: floor of log p-values: keeps scores finite when a statistic is enormous (as ICP does)
LOG_P_FLOOR = -1e6


def check_test(name, who: str) -> str:
    if name not in TESTS:
        raise oodfs.OodfsError(
            f"{who}: unknown conditional-independence test {name!r}; valid: {', '.join(TESTS)}"
        )
    return name


class CITest:
    """One test on one data matrix (column 0 the outcome), with a cache and a count of tests run."""

    def __init__(self, data: np.ndarray, test: str, random_state=None, who: str = "markov"):
        self.test = check_test(test, who)
        self.data = np.asarray(data, dtype=float)
        self.n = self.data.shape[0]
        self.seed = 0 if random_state is None else int(random_state)
        self.cache: dict = {}
        self.n_tests = 0
        if test == "fisherz":
            with np.errstate(invalid="ignore", divide="ignore"):
                corr = np.corrcoef(self.data, rowvar=False)
            self.corr = np.where(np.isfinite(corr), corr, 0.0)
            np.fill_diagonal(self.corr, 1.0)
        else:
            self._kernel = _causallearn_test(test, who)
            # a column's identity for the random features: a checksum of its values
            self._content = [zlib.crc32(np.ascontiguousarray(c).tobytes()) for c in self.data.T]

    def log_p(self, a: int, b: int, cond=()) -> float:
        a, b = min(a, b), max(a, b)
        cond = tuple(sorted(int(c) for c in cond))
        key = (a, b, cond)
        if key not in self.cache:
            self.n_tests += 1
            value = self._fisherz(a, b, cond) if self.test == "fisherz" else self._kernel_log_p(a, b, cond)
            self.cache[key] = max(float(value), LOG_P_FLOOR)
        return self.cache[key]

    def _fisherz(self, a, b, cond) -> float:
        idx = [a, b, *cond]
        dof = self.n - len(cond) - 3
        if dof < 1:
            raise oodfs.OodfsError(
                f"fisherz needs more rows than conditioning features + 3; got {self.n} rows for a "
                f"conditioning set of {len(cond)}"
            )
        prec = np.linalg.pinv(self.corr[np.ix_(idx, idx)])
        denom = np.sqrt(abs(prec[0, 0] * prec[1, 1]))
        r = 0.0 if denom == 0 else float(np.clip(-prec[0, 1] / denom, -1 + 1e-15, 1 - 1e-15))
        z = np.sqrt(dof) * abs(np.arctanh(r))
        return float(np.log(2.0) + stats.norm.logsf(z))

    def _kernel_log_p(self, a, b, cond) -> float:
        # causal-learn draws its random features from numpy's global generator: seed it from the
        # fit's seed and the columns' contents, in an order set by the contents, and give the
        # caller's state back afterwards
        key = self._content
        a, b = sorted((a, b), key=lambda c: key[c])
        cond = sorted(cond, key=lambda c: key[c])
        state = np.random.get_state()
        np.random.seed(
            np.random.SeedSequence([self.seed, key[a], key[b], *(key[c] for c in cond)]).generate_state(1)[0]
        )
        try:
            x, y = self.data[:, [a]], self.data[:, [b]]
            if cond:
                p = self._kernel[1].compute_pvalue(x, y, self.data[:, list(cond)])[0]
            else:
                p = self._kernel[0].compute_pvalue(x, y)[0]
        finally:
            np.random.set_state(state)
        p = float(p)
        if not np.isfinite(p):
            p = 1.0  # a constant column: no evidence of dependence
        with np.errstate(divide="ignore"):
            return float(np.log(min(max(p, 0.0), 1.0)))


def _causallearn_test(test: str, who: str):
    """(unconditional, conditional) test objects of causal-learn for ``test``."""
    try:
        if test == "rcit":
            from causallearn.utils.RCIT.RCIT import RCIT, RIT

            return RIT(), RCIT()
        from causallearn.utils.KCI.KCI import KCI_CInd, KCI_UInd

        return KCI_UInd(approx=True), KCI_CInd(approx=True)
    except ImportError:
        raise oodfs.OodfsError(
            f"{who}: test {test!r} needs the causal-learn package: pip install 'oodfs[markov]'"
        ) from None
