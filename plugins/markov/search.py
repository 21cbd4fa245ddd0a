"""The Markov-boundary searches, on any :class:`~.ci_tests.CITest` (docs/PROTOCOL.md, section 12).

Variables are columns of the test's data matrix; the target is a column too (the outcome is
column 0), so HITON-MB can run HITON-PC with a feature as its target. Association is -log p of
the same test (for Fisher's z at a fixed conditioning size, the order of |partial correlation|).

* IAMB (Tsamardinos, Aliferis and Statnikov, FLAIRS 2003): grow -- add the candidate most
  associated with T given the current blanket while it is dependent at level alpha; shrink --
  remove, one at a time in the order they entered, members independent of T given the rest.
* Semi-interleaved HITON-PC (Aliferis et al., JMLR 2010, part I): candidates marginally dependent
  on T, in decreasing association, enter when no subset of the current set of at most max_k
  members makes them independent of T; then every member is removed that some subset of the
  other members (size <= max_k) makes independent. The separating set found is kept.
* HITON-MB (Aliferis, Tsamardinos and Statnikov, AMIA 2003): PC(T) and PC(X) for each X in PC(T);
  a Y in some PC(X), outside PC(T) and not T, is a spouse when it is dependent on T given its
  separating set from T plus X. The paper's optional wrapper step is not run.
"""

from __future__ import annotations

import itertools

import numpy as np


def iamb(test, target: int, candidates, alpha: float) -> list[int]:
    log_alpha = np.log(alpha)
    mb: list[int] = []
    while True:
        rest = [x for x in candidates if x not in mb]
        if not rest:
            break
        logp = [test.log_p(target, x, mb) for x in rest]
        best = int(np.argmin(logp))  # first of the most associated: ties go to the lower column
        if logp[best] > log_alpha:
            break
        mb.append(rest[best])
    for x in list(mb):
        if test.log_p(target, x, [m for m in mb if m != x]) > log_alpha:
            mb.remove(x)
    return mb


def _separating_set(test, target, x, others, max_k, log_alpha):
    """The first subset S of ``others`` (by size, then in order) with |S| <= max_k that makes x
    independent of target at level alpha, or None."""
    for size in range(min(max_k, len(others)) + 1):
        for s in itertools.combinations(others, size):
            if test.log_p(target, x, s) > log_alpha:
                return list(s)
    return None


def hiton_pc(test, target: int, candidates, alpha: float, max_k: int):
    """(parents and children of target, separating sets {variable: S})."""
    log_alpha = np.log(alpha)
    sepset: dict[int, list[int]] = {}
    marginal = {x: test.log_p(target, x) for x in candidates if x != target}
    open_ = sorted((x for x, lp in marginal.items() if lp <= log_alpha), key=lambda x: (marginal[x], x))
    sepset.update({x: [] for x, lp in marginal.items() if lp > log_alpha})
    pc: list[int] = []
    for x in open_:  # forward, semi-interleaved: only the newcomer is tested
        s = _separating_set(test, target, x, pc, max_k, log_alpha)
        if s is None:
            pc.append(x)
        else:
            sepset[x] = s
    for x in list(pc):  # backward
        s = _separating_set(test, target, x, [m for m in pc if m != x], max_k, log_alpha)
        if s is not None:
            pc.remove(x)
            sepset[x] = s
    return pc, sepset


def hiton_mb(test, target: int, candidates, alpha: float, max_k: int) -> list[int]:
    log_alpha = np.log(alpha)
    variables = [target, *[c for c in candidates if c != target]]
    pc, sepset = hiton_pc(test, target, variables, alpha, max_k)
    mb = list(pc)
    for x in pc:
        pc_x, _ = hiton_pc(test, x, variables, alpha, max_k)
        for y in pc_x:
            if y == target or y in mb:
                continue
            cond = sorted(set(sepset.get(y, [])) | {x})
            if test.log_p(target, y, cond) <= log_alpha:
                mb.append(y)
    return mb
