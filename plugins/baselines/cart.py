"""scikit-learn's exact regression trees, grown level by level on presorted columns (numba).

scikit-learn's ``DecisionTreeRegressor`` (``splitter="best"``, all features per split) re-sorts
the samples of every node for every feature. This module implements the same algorithm on
columns sorted once: each level of the tree scans every feature's sorted rows once and then
partitions them stably between the children, so a tree costs O(n * d) per level. What is
reproduced from scikit-learn (``sklearn/tree/_splitter.pyx``, ``_criterion.pyx``, ``_tree.pyx``):

* X is cast to float32 (as scikit-learn does); targets, weights and all sums are float64;
  rows of sample weight 0 take no part in the tree;
* the ``squared_error`` criterion: split candidates between consecutive sorted values that
  differ by more than ``FEATURE_THRESHOLD`` (float32 arithmetic), the proxy
  ``sum_left**2 / w_left + sum_right**2 / w_right`` accumulated along the sorted rows (left to
  right, or back from the end when that is shorter, as scikit-learn's ``update``), the first
  best position of a feature kept, threshold ``v_prev / 2 + v / 2``;
* node impurities from the parent's split (``children_impurity``), the root's from its sums;
  node values ``sum / weight``;
* the stopping rules: ``max_depth``, ``min_samples_split``, ``min_samples_leaf``,
  ``min_weight_fraction_leaf``, impurity <= machine epsilon, ``min_impurity_decrease``.

What differs: scikit-learn visits the features of a node in a random order and keeps the first
best, so when several features give equally good splits (typically the same partition of a
small node) the winner depends on its random state. Here the features whose proxy is within
``TIE_RTOL`` of the best are *tied* and the winner is the one with the smallest key drawn from
(seed, node position, feature) -- a random order per node, from the seed, that does not depend
on how deep the tree is grown (so the first D levels of a deeper tree are the depth-D tree).
Some sums also run in another order than scikit-learn's (a node's own totals, and rows of equal
value), which changes results by float rounding only (~1e-15 relative).

:class:`GradientBoostingRegressor` and :class:`RandomForestRegressor` reproduce scikit-learn's
ensembles of these trees for regression with their defaults (see their docstrings); their
``estimators_[i].tree_`` expose the arrays scikit-learn's ``Tree`` has (``feature``,
``threshold``, ``children_left``/``right``, ``impurity``, ``weighted_n_node_samples``, ...), so
importances are computed from them exactly as from scikit-learn's trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from numba import njit
from sklearn.utils import check_random_state

#: scikit-learn's FEATURE_THRESHOLD (a float32 constant; consecutive sorted values whose float32
#: difference is not above it are not split apart, nor is a feature whose range is not above it)
FEATURE_THRESHOLD = np.float32(1e-7)
#: scikit-learn's EPSILON in the tree builder: a node of impurity <= EPSILON is a leaf
EPSILON = float(np.finfo(np.float64).eps)
#: features whose best proxy is within this relative distance of a node's best are equally good
#: (their difference is float rounding: different summation orders of the same partition)
TIE_RTOL = 1e-12
#: scikit-learn's bound for tree seeds drawn from a random state (RAND_R_MAX, np.int32 max)
_RAND_R_MAX = 0x7FFFFFFF
_MAX_INT = np.iinfo(np.int32).max

_JIT = dict(cache=True, nogil=True, error_model="numpy")  # numpy semantics: x / 0 is inf/nan


# -- the tree --------------------------------------------------------------------------------------
@dataclass
class Tree:
    """A fitted tree as scikit-learn's ``Tree`` arrays (nodes numbered breadth-first; leaves have
    ``children_left == children_right == -1`` and ``feature == -2``)."""

    feature: np.ndarray
    threshold: np.ndarray
    children_left: np.ndarray
    children_right: np.ndarray
    impurity: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    value: np.ndarray  # (node_count,): the (weighted) mean target of each node
    depth: np.ndarray  # the root has depth 0
    #: for each row used in the fit, the leaf it falls in (-1 for rows of weight 0)
    train_leaf: np.ndarray = field(repr=False)
    #: nodes where several features gave equally good splits (the winner drawn from the seed)
    n_tied: int = 0

    @property
    def node_count(self) -> int:
        return self.feature.size

    def compute_node_depths(self) -> np.ndarray:
        """As scikit-learn's ``Tree.compute_node_depths``: the root has depth 1."""
        return self.depth + 1

    def apply(self, X32: np.ndarray) -> np.ndarray:
        """The leaf of every row of float32 ``X32`` (``x <= threshold`` goes left)."""
        return _apply(X32, self.feature, self.threshold, self.children_left, self.children_right)

    def train_predict(self, X32: np.ndarray) -> np.ndarray:
        """Leaf values of the training rows (rows of weight 0 routed through the thresholds)."""
        leaf = self.train_leaf
        if (leaf < 0).any():
            leaf = leaf.copy()
            out = leaf < 0
            leaf[out] = self.apply(X32[out])
        return self.value[leaf]


@njit(**_JIT)
def _apply(X32, feature, threshold, left, right):
    out = np.empty(X32.shape[0], np.int64)
    for r in range(X32.shape[0]):
        k = 0
        while left[k] >= 0:
            k = left[k] if X32[r, feature[k]] <= threshold[k] else right[k]
        out[r] = k
    return out


def as_float32(X) -> np.ndarray:
    """X as scikit-learn's trees see it: C-contiguous float32, refused when a value is not finite
    there (NaN, infinite, or beyond float32's range)."""
    from oodfs import OodfsError

    X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] < 1:
        raise OodfsError(f"cart: X must be a non-empty 2-d array, got shape {X.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        X32 = np.ascontiguousarray(X, dtype=np.float32)
    if not np.isfinite(X32).all():
        raise OodfsError("cart: X has NaN, infinite or float32-overflowing values")
    return X32


class Presorted:
    """X as float32 (scikit-learn's conversion) and every column's rows sorted once.

    ``keys[j]`` lists column j's rows by increasing ``X32[:, j]`` (ties by row), each as one
    uint64 key: the value's float32 bits above the row number, so that partitioning moves one
    word per row; (n_features, n_rows) C-contiguous.
    """

    def __init__(self, X):
        self.X32 = as_float32(X)
        order = np.argsort(self.X32, axis=0, kind="stable")
        bits = np.take_along_axis(self.X32, order, axis=0).view(np.uint32).astype(np.uint64)
        self.keys = np.ascontiguousarray(((bits << np.uint64(32)) | order.astype(np.uint64)).T)

    @property
    def shape(self):
        return self.X32.shape


@njit(inline="always")
def _row(key):
    return np.int64(key & np.uint64(0xFFFFFFFF))


@njit(inline="always")
def _value(key):
    return np.uint32(key >> np.uint64(32)).view(np.float32)


@njit(**_JIT)
def _keep_rows(keys, keep, n_keep):
    """The sorted columns restricted to rows with ``keep`` (order preserved)."""
    d, n = keys.shape
    out = np.empty((d, n_keep), np.uint64)
    for j in range(d):
        m = 0
        for q in range(n):
            if keep[_row(keys[j, q])]:
                out[j, m] = keys[j, q]
                m += 1
    return out


@njit(**_JIT)
def _sequential_sum(a):
    """Left-to-right float64 sum (scikit-learn's ``weighted_n_samples``), not numpy's pairwise."""
    s = 0.0
    for x in a:
        s += x
    return s


@njit(inline="always")
def _tie_key(seed, heap, j):
    """A random key for feature ``j`` at node position ``heap`` (root 1, children 2h and 2h + 1):
    splitmix64 of the three, so the same node of a deeper tree gets the same keys."""
    z = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + heap * np.uint64(0xD6E8FEB86659FD93) + np.uint64(j)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def _weight(w, i):
    """Row i's weight; ``w`` None means unit weights (a separate compiled variant without loads)."""
    if w is None:
        return 1.0
    return w[i]


@njit(inline="always")
def _best_position(keys, w, wy, s, e, S, W, min_samples_leaf, min_weight_leaf, ft):
    """scikit-learn's search over one feature of a node (``node_split_best``'s inner loop) on
    the node's sorted keys ``keys[s:e]``: the best proxy and its position (-inf, -1 when no
    position is valid)."""
    best = -np.inf
    bound = -np.inf  # a proxy below it cannot beat best, whatever the rounding
    bpos = -1
    sl = 0.0
    wl = 0.0
    pos = s  # where scikit-learn's criterion last stopped (``criterion.pos``)
    v_next = _value(keys[s])
    for q in range(s, e - 1):
        # moving rows to the left one by one adds them in the order scikit-learn's update does
        i = _row(keys[q])
        sl += wy[i]
        if w is None:
            wl = float(q + 1 - s)  # a sum of ones: the count, exactly
        else:
            wl += w[i]
        # next_p: a position p is a candidate when its value exceeds its predecessor's by more
        # than FEATURE_THRESHOLD (float32 arithmetic)
        v = v_next
        v_next = _value(keys[q + 1])
        if not v_next > v + ft:
            continue
        p = q + 1
        if p - s < min_samples_leaf or e - p < min_samples_leaf:
            continue
        if p - pos > e - p:
            # scikit-learn's update(p) takes the shorter way: back from the node's totals
            sl = S
            wl = W
            for r in range(e - 1, p - 1, -1):
                i = _row(keys[r])
                sl -= wy[i]
                wl -= _weight(w, i)
        pos = p
        wr = W - wl
        if wl < min_weight_leaf or wr < min_weight_leaf:
            continue
        sr = S - sl
        # the proxy sl^2/wl + sr^2/wr is compared exactly as scikit-learn computes it, but its two
        # divisions are skipped when its division-free form is clearly (1e-12) below the best
        if sl * sl * wr + sr * sr * wl < bound * (wl * wr):
            continue
        proxy = sl * sl / wl + sr * sr / wr
        if proxy > best:
            best = proxy
            bound = best * (1.0 - 1e-12)
            bpos = p
    return best, bpos


@njit(**_JIT)
def _grow(
    keys,
    rows,
    y,
    w,
    wy,
    w_total,
    max_depth,
    min_samples_split,
    min_samples_leaf,
    min_weight_leaf,
    min_impurity_decrease,
    seed,
    ft,
):
    """Grow one tree level by level. ``keys`` (features x used rows) are the sorted columns of
    the rows used (weight != 0), partitioned in place; ``rows`` the used rows in row order;
    ``wy = w * y`` (``w`` None: unit weights); ``w_total`` the sum of all weights. Returns the
    node arrays, the leaf of every row (-1 if unused) and the number of nodes with tied
    features."""
    d, N = keys.shape
    n_rows = y.shape[0]
    cap = 2 * N - 1
    if max_depth < 40 and (1 << (max_depth + 1)) - 1 < cap:
        cap = (1 << (max_depth + 1)) - 1
    feature = np.full(cap, -2, np.int64)
    threshold = np.full(cap, -2.0)
    impurity = np.empty(cap)
    n_node = np.empty(cap, np.int64)
    wn = np.empty(cap)
    value = np.empty(cap)
    left = np.full(cap, -1, np.int64)
    right = np.full(cap, -1, np.int64)
    depth = np.zeros(cap, np.int64)
    start = np.empty(cap, np.int64)
    end = np.empty(cap, np.int64)
    heap = np.empty(cap, np.uint64)
    ssum = np.empty(cap)
    sqsum = np.empty(cap)
    home = np.zeros(cap, np.int64)  # a feature list in which the node's rows are contiguous

    # the root: sums in row order, as scikit-learn's first node
    S = 0.0
    SQ = 0.0
    W = 0.0
    for r in range(rows.size):
        i = rows[r]
        S += wy[i]
        SQ += wy[i] * y[i]
        W += _weight(w, i)
    mean = S / W
    impurity[0] = SQ / W - mean * mean
    n_node[0] = N
    wn[0] = W
    value[0] = mean
    start[0] = 0
    end[0] = N
    heap[0] = np.uint64(1)
    ssum[0] = S
    sqsum[0] = SQ
    n_nodes = 1

    act = np.empty(N, np.int64)  # nodes to split at this level
    nxt = np.empty(N, np.int64)
    parts = np.empty(N, np.int64)  # split nodes whose other feature lists must be partitioned
    n_act = 0
    if not (
        max_depth <= 0
        or N < min_samples_split
        or N < 2 * min_samples_leaf
        or W < 2 * min_weight_leaf
        or impurity[0] <= EPSILON
    ):
        act[0] = 0
        n_act = 1
    goes_left = np.zeros(n_rows, np.uint8)
    tmp = np.empty(N, np.uint64)
    fbest = np.empty((N, d))  # per node of the level and feature: best proxy and its position
    fpos = np.empty((N, d), np.int64)
    n_tied = 0

    while n_act > 0:
        n_nxt = 0
        n_parts = 0
        # best position of every (node, feature), one feature at a time: each list is swept
        # front to back (the nodes of a level are in list order)
        for j in range(d):
            kj = keys[j]
            for a in range(n_act):
                k = act[a]
                fbest[a, j], fpos[a, j] = _best_position(
                    kj, w, wy, start[k], end[k], ssum[k], wn[k], min_samples_leaf, min_weight_leaf, ft
                )
        for a in range(n_act):
            k = act[a]
            s = start[k]
            e = end[k]
            S = ssum[k]
            W = wn[k]
            top = -np.inf
            for j in range(d):
                if fbest[a, j] > top:
                    top = fbest[a, j]
            if top == -np.inf:
                continue  # no valid split: a leaf
            tol = TIE_RTOL * abs(top)
            f = -1
            n_equal = 0
            for j in range(d):
                if fbest[a, j] == top or fbest[a, j] >= top - tol:  # == for top = inf
                    n_equal += 1
                    if f < 0:
                        f = j
            if n_equal > 1:  # the tied feature with the smallest key
                n_tied += 1
                fkey = _tie_key(seed, heap[k], f)
                for j in range(f + 1, d):
                    if fbest[a, j] == top or fbest[a, j] >= top - tol:
                        key = _tie_key(seed, heap[k], j)
                        if key < fkey:
                            f = j
                            fkey = key
            p = fpos[a, f]
            # criterion.reset(); update(p); children_impurity(); impurity_improvement()
            if p - s <= e - p:
                sl = 0.0
                wl = 0.0
                for q in range(s, p):
                    i = _row(keys[f, q])
                    sl += wy[i]
                    wl += _weight(w, i)
            else:
                sl = S
                wl = W
                for q in range(e - 1, p - 1, -1):
                    i = _row(keys[f, q])
                    sl -= wy[i]
                    wl -= _weight(w, i)
            sql = 0.0
            for q in range(s, p):
                i = _row(keys[f, q])
                sql += wy[i] * y[i]
            wr = W - wl
            sr = S - sl
            ml = sl / wl
            mr = sr / wr
            imp_l = sql / wl - ml * ml
            imp_r = (sqsum[k] - sql) / wr - mr * mr
            improvement = (W / w_total) * (impurity[k] - (wr / W * imp_r) - (wl / W * imp_l))
            if improvement + EPSILON < min_impurity_decrease:
                continue
            feature[k] = f
            threshold[k] = _value(keys[f, p - 1]) / 2.0 + _value(keys[f, p]) / 2.0
            any_active = False
            for c in range(2):
                ch = n_nodes
                n_nodes += 1
                cs = s if c == 0 else p
                ce = p if c == 0 else e
                cS = 0.0
                cSQ = 0.0
                cW = 0.0
                for q in range(cs, ce):  # node_reset: the child's own sums
                    i = _row(keys[f, q])
                    cS += wy[i]
                    cSQ += wy[i] * y[i]
                    cW += _weight(w, i)
                start[ch] = cs
                end[ch] = ce
                depth[ch] = depth[k] + 1
                heap[ch] = heap[k] * np.uint64(2) + np.uint64(c)
                impurity[ch] = imp_l if c == 0 else imp_r
                n_node[ch] = ce - cs
                wn[ch] = cW
                value[ch] = cS / cW
                ssum[ch] = cS
                sqsum[ch] = cSQ
                home[ch] = f
                if c == 0:
                    left[k] = ch
                else:
                    right[k] = ch
                n_c = ce - cs
                if not (
                    depth[ch] >= max_depth
                    or n_c < min_samples_split
                    or n_c < 2 * min_samples_leaf
                    or cW < 2 * min_weight_leaf
                    or impurity[ch] <= EPSILON
                ):
                    nxt[n_nxt] = ch
                    n_nxt += 1
                    any_active = True
            if any_active:
                parts[n_parts] = k
                n_parts += 1
        # partition the other features' lists of nodes that have a child to split next, one
        # feature at a time (each list is swept once, front to back)
        for a in range(n_parts):
            k = parts[a]
            f = feature[k]
            p = end[left[k]]
            for q in range(start[k], end[k]):
                goes_left[_row(keys[f, q])] = 1 if q < p else 0
        for j in range(d):
            kj = keys[j]
            for a in range(n_parts):
                k = parts[a]
                if feature[k] == j:
                    continue
                lo = start[k]
                m = 0
                for q in range(start[k], end[k]):  # stable, without branches: both targets written
                    key = kj[q]
                    g = goes_left[_row(key)]
                    kj[lo] = key
                    tmp[m] = key
                    lo += g
                    m += 1 - g
                for q in range(m):
                    kj[lo + q] = tmp[q]
        act, nxt = nxt, act
        n_act = n_nxt

    train_leaf = np.full(n_rows, -1, np.int64)
    for k in range(n_nodes):
        if left[k] < 0:
            h = home[k]
            for q in range(start[k], end[k]):
                train_leaf[_row(keys[h, q])] = k
    return (
        feature[:n_nodes].copy(),
        threshold[:n_nodes].copy(),
        left[:n_nodes].copy(),
        right[:n_nodes].copy(),
        impurity[:n_nodes].copy(),
        n_node[:n_nodes].copy(),
        wn[:n_nodes].copy(),
        value[:n_nodes].copy(),
        depth[:n_nodes].copy(),
        train_leaf,
        n_tied,
    )


def grow_tree(
    pre: Presorted,
    y: np.ndarray,
    sample_weight: np.ndarray | None = None,
    *,
    max_depth: int | None = None,
    seed: int = 0,
    min_samples_split: int = 2,
    min_samples_leaf: int = 1,
    min_weight_fraction_leaf: float = 0.0,
    min_impurity_decrease: float = 0.0,
) -> Tree:
    """scikit-learn's ``DecisionTreeRegressor(criterion="squared_error", max_depth=max_depth,
    ...).fit(X, y, sample_weight)`` on presorted ``X``, ties between features broken from
    ``seed`` (see the module docstring). Integer ``min_samples_*`` only."""
    from oodfs import OodfsError

    n = pre.shape[0]
    y = np.ascontiguousarray(y, dtype=np.float64)
    w = np.ones(n) if sample_weight is None else np.ascontiguousarray(sample_weight, dtype=np.float64)
    if y.shape != (n,) or w.shape != (n,):
        raise OodfsError("cart: y and sample_weight must have one value per row of X")
    if not (np.isfinite(w).all() and (w >= 0).all() and (w > 0).any()):
        raise OodfsError("cart: sample weights must be finite, non-negative and not all 0")
    unit = bool((w == 1.0).all())  # then w * y is y and weight sums are counts: skip the loads
    keep = w != 0.0
    if keep.all():
        keys = pre.keys.copy()
        rows = np.arange(n, dtype=np.int32)
    else:
        rows = np.flatnonzero(keep).astype(np.int32)
        keys = _keep_rows(pre.keys, keep, rows.size)
    w_total = _sequential_sum(w)
    min_samples_split = max(int(min_samples_split), 2 * int(min_samples_leaf))
    min_weight_leaf = min_weight_fraction_leaf * (n if sample_weight is None else float(np.sum(w)))
    depth_cap = np.iinfo(np.int32).max if max_depth is None else int(max_depth)
    arrays = _grow(
        keys,
        rows,
        y,
        None if unit else w,
        y if unit else w * y,
        w_total,
        depth_cap,
        min_samples_split,
        int(min_samples_leaf),
        float(min_weight_leaf),
        float(min_impurity_decrease),
        int(seed),
        FEATURE_THRESHOLD,
    )
    return Tree(*arrays)


def _estimator(tree: Tree):
    """What ``estimators_`` hold: an object with ``tree_``, as scikit-learn's fitted trees."""
    return SimpleNamespace(tree_=tree)


# -- ensembles ---------------------------------------------------------------------------------------
class GradientBoostingRegressor:
    """scikit-learn's ``GradientBoostingRegressor`` with its defaults (squared error, learning rate
    0.1, ``subsample = 1``, initial prediction the (weighted) mean of y, ``squared_error`` trees
    with all features per split) on this module's trees.

    Stage i fits a tree to the residuals ``y - raw`` with the sample weights and adds
    ``learning_rate *`` its leaf values to ``raw``. Tree seeds are drawn in order from
    ``random_state`` as scikit-learn draws them, so the first m stages do not depend on
    ``n_estimators``.
    """

    def __init__(
        self,
        n_estimators: int = 100,
        max_depth: int | None = 3,
        learning_rate: float = 0.1,
        random_state=None,
    ):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        pre = Presorted(X)
        y = np.ascontiguousarray(y, dtype=np.float64)
        # DummyRegressor(strategy="mean") on y as a column, as scikit-learn's init estimator
        self.init_ = float(np.average(y.reshape(-1, 1), axis=0, weights=sample_weight)[0])
        raw = np.full(y.shape, self.init_)
        rng = check_random_state(self.random_state)
        self.estimators_ = np.empty((int(self.n_estimators), 1), dtype=object)
        for m in range(int(self.n_estimators)):
            seed = rng.randint(0, _RAND_R_MAX)  # what scikit-learn's splitter draws per tree
            tree = grow_tree(pre, y - raw, sample_weight, max_depth=self.max_depth, seed=seed)
            raw += self.learning_rate * tree.train_predict(pre.X32)
            self.estimators_[m, 0] = _estimator(tree)
        self.train_raw_prediction_ = raw
        self.n_features_in_ = pre.shape[1]
        return self

    def predict(self, X) -> np.ndarray:
        X32 = as_float32(X)
        raw = np.full(X32.shape[0], self.init_)
        for (est,) in self.estimators_:
            raw += self.learning_rate * est.tree_.value[est.tree_.apply(X32)]
        return raw


class GradientBoostingClassifier(GradientBoostingRegressor):
    """scikit-learn's ``GradientBoostingClassifier`` for a 0/1 target with its defaults (binomial
    deviance ``log_loss``, learning rate 0.1, ``subsample = 1``, ``squared_error`` trees with all
    features per split) on this module's trees.

    As scikit-learn: the initial raw prediction is the log-odds of the (weighted) share of 1s
    (``DummyClassifier(strategy="prior")``, clipped to [eps, 1 - eps]); stage i fits a regression
    tree to the negative gradient ``y - expit(raw)`` with the sample weights, then sets each leaf
    to one Newton step, ``sum(w (y - p)) / sum(w p (1 - p))`` over its rows (0 where the
    mean hessian is below 1e-150), and adds ``learning_rate *`` the leaf values to ``raw``.
    """

    def fit(self, X, y, sample_weight=None):
        from scipy.special import expit

        pre = Presorted(X)
        y = np.ascontiguousarray(y, dtype=np.float64)
        w = np.ones(y.size) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        eps = np.finfo(np.float64).eps
        prior = float(np.clip(np.average(y, weights=w), eps, 1 - eps))
        self.init_ = float(np.log(prior / (1 - prior)))
        raw = np.full(y.shape, self.init_)
        rng = check_random_state(self.random_state)
        self.estimators_ = np.empty((int(self.n_estimators), 1), dtype=object)
        for m in range(int(self.n_estimators)):
            seed = rng.randint(0, _RAND_R_MAX)
            prob = expit(raw)
            neg_gradient = y - prob
            tree = grow_tree(pre, neg_gradient, sample_weight, max_depth=self.max_depth, seed=seed)
            leaf = tree.apply(pre.X32)
            size = tree.node_count
            w_sum = np.bincount(leaf, weights=w, minlength=size)
            leaves = np.flatnonzero(tree.children_left < 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                num = np.bincount(leaf, weights=w * neg_gradient, minlength=size) / w_sum
                den = np.bincount(leaf, weights=w * prob * (1 - prob), minlength=size) / w_sum
            step = np.where(np.abs(den[leaves]) < 1e-150, 0.0, num[leaves] / den[leaves])
            tree.value = tree.value.copy()
            tree.value[leaves] = step
            raw += self.learning_rate * tree.value[leaf]
            self.estimators_[m, 0] = _estimator(tree)
        self.train_raw_prediction_ = raw
        self.n_features_in_ = pre.shape[1]
        return self


class RandomForestRegressor:
    """scikit-learn's ``RandomForestRegressor`` with its defaults (bootstrap, all features per
    split, ``squared_error``) on this module's trees.

    Tree i gets the i-th seed drawn from ``random_state`` (``randint(np.int32 max)``, as
    scikit-learn sets its trees' ``random_state``); from that seed, its bootstrap sample is
    scikit-learn's: ``randint(0, n, n)`` draws, or with ``sample_weight``
    ``choice(n, n, p=sample_weight / sum)`` (scikit-learn >= 1.9), and the tree is fitted with
    the draw counts as sample weights. Ties between features are broken from the same seed.
    """

    def __init__(self, n_estimators: int = 100, max_depth: int | None = None, random_state=None):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.random_state = random_state

    @staticmethod
    def bootstrap_counts(seed: int, n: int, sample_weight=None) -> np.ndarray:
        """scikit-learn's bootstrap of a tree with ``random_state = seed``, as row counts."""
        rng = check_random_state(seed)
        if sample_weight is None:
            indices = rng.randint(0, n, n)
        else:
            indices = rng.choice(n, n, replace=True, p=sample_weight / np.sum(sample_weight))
        return np.bincount(indices.astype(np.int32), minlength=n).astype(np.float64)

    def fit(self, X, y, sample_weight=None):
        pre = Presorted(X)
        n = pre.shape[0]
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
        rng = check_random_state(self.random_state)
        seeds = [rng.randint(_MAX_INT) for _ in range(int(self.n_estimators))]
        self.estimators_ = [
            _estimator(
                grow_tree(
                    pre, y, self.bootstrap_counts(s, n, sample_weight), max_depth=self.max_depth, seed=s
                )
            )
            for s in seeds
        ]
        self.n_features_in_ = pre.shape[1]
        return self

    def predict(self, X) -> np.ndarray:
        X32 = as_float32(X)
        out = np.zeros(X32.shape[0])
        for est in self.estimators_:
            out += est.tree_.value[est.tree_.apply(X32)]
        return out / len(self.estimators_)


class RandomForestClassifier(RandomForestRegressor):
    """scikit-learn's ``RandomForestClassifier(criterion="gini", max_features=None)`` for a 0/1
    target on this module's trees (bootstrap and seeds as :class:`RandomForestRegressor`).

    For two classes the Gini impurity of a node is ``2 p (1 - p)``, p its weighted share of 1s,
    and the squared-error impurity of the 0/1 target is ``p (1 - p)``: the same criterion up to
    the factor 2, hence the same splits, and the same importances once normalised. The trees
    here are the squared-error trees of the 0/1 target (their ``impurity`` is half the Gini);
    ``predict`` gives the share of 1s (scikit-learn's ``predict_proba[:, 1]``).
    """
