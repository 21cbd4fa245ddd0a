"""IAMB and HITON-MB as oodfs selectors, each with Fisher's z (``iamb``, ``hiton_mb``) or the
randomized kernel test (``iamb_rcit``, ``hiton_mb_rcit``) -- docs/PROTOCOL.md, section 12.

Scores rank every feature: with B the boundary found, s_j = -log10 p(X_j independent of Y given
B without X_j) by the same test; members of B score s_j plus an offset that puts them above
every non-member (1 + the largest non-member s_j), so the top |B| features are the boundary,
ordered by their association given the rest of it, and the others follow by their evidence of
dependence given the boundary.

Budget: the search is refused beyond ``max_features`` features unless ``screen="marginal"``,
which keeps the ``screen_size`` features with the smallest marginal p-value of the same test
(the others score below every kept feature, in that marginal order).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

import oodfs

from .ci_tests import CITest, check_test
from .search import hiton_mb, iamb

SCREENS = ("none", "marginal")


class _MarkovBoundary(oodfs.Selector):
    supports_sample_weight: ClassVar[bool] = False
    family: ClassVar[str] = "Markov boundary"

    def __init__(
        self,
        test="fisherz",
        alpha=0.05,
        max_features=30,
        screen="none",
        screen_size=20,
        k=5,
        random_state=None,
    ):
        self.test = test
        self.alpha = alpha
        self.max_features = max_features
        self.screen = screen
        self.screen_size = screen_size
        self.k = k
        self.random_state = random_state

    # -- checks --------------------------------------------------------------------------
    def _check(self, d: int) -> None:
        who = self.name
        check_test(self.test, who)
        if not (0 < float(self.alpha) < 1):
            raise oodfs.OodfsError(f"{who} alpha must be in (0, 1), got {self.alpha!r}")
        if self.screen not in SCREENS:
            raise oodfs.OodfsError(f"{who} screen must be one of {', '.join(SCREENS)}, got {self.screen!r}")
        for what in ("max_features", "screen_size"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise oodfs.OodfsError(f"{who} {what} must be an integer >= 1, got {v!r}")
        if self.screen == "none" and d > self.max_features:
            raise oodfs.OodfsError(
                f"{who}: the search is limited to max_features={self.max_features} features, got {d}; "
                f"pass screen='marginal' (keeps screen_size <= {self.max_features} features) or select "
                "fewer columns"
            )
        if self.screen == "marginal" and self.screen_size > self.max_features:
            raise oodfs.OodfsError(
                f"{who} screen_size must be at most max_features={self.max_features}, "
                f"got {self.screen_size!r}"
            )

    def _search(self, test: CITest, candidates: list[int]) -> list[int]:
        raise NotImplementedError

    # -- fitting -------------------------------------------------------------------------
    @classmethod
    def own_support(cls, scores, diagnostics, params):
        """The boundary found: the top ``boundary_size`` scores (members score above every
        non-member; docs/PROTOCOL.md section 10, "The k grid")."""
        scores = np.asarray(scores)
        size = int(diagnostics["boundary_size"])
        return scores >= np.sort(scores)[::-1][size - 1] if size else np.zeros(scores.size, bool)

    def _fit_scores(self, X, y, sample_weight):
        _refuse_weights(sample_weight, self.name)
        return self._fit_detailed(
            CITest(np.column_stack([y, X]), self.test, self.random_state, self.name)
        ).values

    def _fit_detailed(self, test: CITest) -> oodfs.GridFit:
        d = test.data.shape[1] - 1
        self._check(d)
        columns = list(range(1, d + 1))
        marginal = None
        if self.screen == "marginal" and d > self.screen_size:
            marginal = np.array([test.log_p(0, c) for c in columns])
            columns = sorted(int(c) for c in 1 + np.argsort(marginal, kind="stable")[: self.screen_size])
        before = test.n_tests
        boundary = self._search(test, columns)
        s = np.array(
            [-test.log_p(0, c, [m for m in boundary if m != c]) / np.log(10) for c in columns], dtype=float
        )
        member = np.isin(columns, boundary)
        offset = 1.0 + (s[~member].max() if (~member).any() else 0.0)
        scores = np.full(d, np.nan)
        scores[np.array(columns) - 1] = np.where(member, s + offset, s)
        if marginal is not None:  # screened out: below every kept feature, in marginal order
            out = np.isnan(scores)
            low = np.nanmin(scores) - 1.0
            scores[out] = low - (marginal[out] - marginal[out].min()) / (np.ptp(marginal[out]) + 1.0) - 1e-9
        self.boundary_ = sorted(int(c) - 1 for c in boundary)
        self.selected_ = self.boundary_
        return oodfs.GridFit(
            scores,
            {"boundary_size": float(len(boundary)), "ci_tests": float(test.n_tests - before)},
        )

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state):
        _refuse_weights(sample_weight, cls.name)
        tests: dict = {}  # one cache per test: p-values do not depend on alpha or max_k
        fits = []
        for p in points:
            sel = cls(**p, random_state=random_state)
            check_test(sel.test, cls.name)
            if sel.test not in tests:
                tests[sel.test] = CITest(np.column_stack([y, X]), sel.test, random_state, cls.name)
            fits.append(sel._fit_detailed(tests[sel.test]))
        return fits


def _refuse_weights(sample_weight, who: str) -> None:
    if sample_weight is not None and not np.all(sample_weight == sample_weight[0]):
        raise oodfs.OodfsError(
            f"{who} does not support non-uniform sample_weight (supports_sample_weight is False)"
        )


class IAMB(_MarkovBoundary):
    """IAMB (Tsamardinos et al. 2003), Fisher's z: the Markov boundary of Y, grown then shrunk."""

    name = "iamb"
    # the level: the paper's search has no grid; the two levels of HITON's (docs/PROTOCOL.md, 12)
    grid: ClassVar[dict] = {"alpha": [0.01, 0.05]}

    def _search(self, test, candidates):
        return iamb(test, 0, candidates, float(self.alpha))


class IAMBRCIT(IAMB):
    """IAMB with the randomized kernel CI test (RCIT): sees dependence of the variance as well as the mean."""

    name = "iamb_rcit"

    def __init__(
        self, test="rcit", alpha=0.05, max_features=30, screen="none", screen_size=20, k=5, random_state=None
    ):
        super().__init__(test, alpha, max_features, screen, screen_size, k, random_state)


class HITONMB(_MarkovBoundary):
    """HITON-MB (Aliferis et al. 2003), Fisher's z: parents and children by HITON-PC, then spouses."""

    name = "hiton_mb"
    # Aliferis et al. (JMLR 2010)'s parameterisations: alpha 0.05 / 0.01, max-k 1..4
    grid: ClassVar[dict] = {"alpha": [0.01, 0.05], "max_k": [1, 2, 3, 4]}

    def __init__(
        self,
        test="fisherz",
        alpha=0.05,
        max_k=3,
        max_features=30,
        screen="none",
        screen_size=20,
        k=5,
        random_state=None,
    ):
        super().__init__(test, alpha, max_features, screen, screen_size, k, random_state)
        self.max_k = max_k

    def _check(self, d):
        super()._check(d)
        v = self.max_k
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise oodfs.OodfsError(f"{self.name} max_k must be an integer >= 0, got {v!r}")

    def _search(self, test, candidates):
        return hiton_mb(test, 0, candidates, float(self.alpha), int(self.max_k))


class HITONMBRCIT(HITONMB):
    """HITON-MB with the randomized kernel CI test (RCIT)."""

    name = "hiton_mb_rcit"

    def __init__(
        self,
        test="rcit",
        alpha=0.05,
        max_k=3,
        max_features=30,
        screen="none",
        screen_size=20,
        k=5,
        random_state=None,
    ):
        super().__init__(test, alpha, max_k, max_features, screen, screen_size, k, random_state)
