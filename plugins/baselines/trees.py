"""Tree-ensemble baselines: gradient boosting, XGBoost, random forest.

All three score features by the ensemble's impurity/gain importances and share work across
the ``n_estimators`` axis of the grid: for each ``max_depth`` one ensemble with the largest
``n_estimators`` is fitted, and the smaller ensembles are read off its first trees.

Gradient boosting and random forest are scikit-learn's algorithms. ``engine="oodfs"`` (the
default) fits them with :mod:`.cart`, a re-implementation of scikit-learn's exact tree builder on
presorted columns (same splits, training predictions and impurity decreases up to float
rounding; gb's grid ~15x and rf's ~8x faster, ``benchmarks/bench_trees.py``);
``engine="sklearn"`` fits scikit-learn's own estimators (for audits).
The two differ only in which of several equally good features a node credits (see ``cart``).

On a binary target (0.0 / 1.0) all three are classifiers (docs/PROTOCOL.md, "Binary targets"):
gradient boosting with the binomial deviance, the random forest with the Gini criterion (all
features per split, as the regression forest), XGBoost with ``binary:logistic``; the grids and
the importances are computed as for regression.
"""
from __future__ import annotations

from numbers import Integral
from typing import ClassVar

import numpy as np

import oodfs


TREE_GRID = {"n_estimators": [50, 100, 200], "max_depth": [6, 8, 10]}
#: how gb and rf fit their ensembles: this package's exact CART builder, or scikit-learn itself
ENGINES = ("oodfs", "sklearn")


def _check_tree_params(name: str, n_estimators, max_depth) -> None:
    for what, v in (("n_estimators", n_estimators), ("max_depth", max_depth)):
        if not isinstance(v, Integral) or isinstance(v, bool) or v < 1:
            raise oodfs.OodfsError(f"{name} {what} must be a positive integer, got {v!r}")


def _check_engine(name: str, engine) -> None:
    if engine not in ENGINES:
        raise oodfs.OodfsError(f"{name} engine must be one of {', '.join(map(repr, ENGINES))}, got {engine!r}")


class _TreeSelector(oodfs.Selector):
    """Shared grid logic: one largest-ensemble fit per max_depth, prefixes for smaller sizes."""

    grid: ClassVar[dict] = TREE_GRID
    #: ties between equally good splits on different features are broken by column order
    permutation_invariant: ClassVar[bool] = False
    task_types: ClassVar[tuple[str, ...]] = ("regression", "binary")

    def __init__(self, n_estimators: int = 100, max_depth: int = 6, k: int = 5, random_state=None):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.k = k
        self.random_state = random_state

    # subclasses: build the library model, and importances of the first m trees of a fit
    def _model(self):
        raise NotImplementedError

    @staticmethod
    def _prefix_importances(model, ms: list[int]) -> dict[int, np.ndarray]:
        raise NotImplementedError

    @classmethod
    def _grid_options(cls) -> dict:
        """Constructor options (not grid parameters) of the instances ``fit_grid`` builds."""
        return {}

    @property
    def _binary(self) -> bool:
        return getattr(self, "task_", "regression") == "binary"

    @classmethod
    def _grid_model(cls, task: str, n_estimators: int, max_depth: int, random_state):
        """The library model ``fit_grid`` fits for ``task``."""
        est = cls(n_estimators=n_estimators, max_depth=max_depth, random_state=random_state, **cls._grid_options())
        est.task_ = task
        return est._model()

    def _fit_scores(self, X, y, sample_weight):
        _check_tree_params(self.name, self.n_estimators, self.max_depth)
        model = self._model()
        model.fit(X, y, sample_weight=sample_weight)
        # the same computation as fit_grid's, so a grid point and a separate fit agree
        return self._prefix_importances(model, [int(self.n_estimators)])[int(self.n_estimators)]

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, task="regression"):
        """Scores for every (n_estimators, max_depth) in ``points``: per max_depth one fit of the
        largest ensemble, read at each requested size."""
        out: list = [None] * len(points)
        by_depth: dict = {}
        for i, p in enumerate(points):
            by_depth.setdefault(p["max_depth"], []).append(i)
        for depth, idx in by_depth.items():
            ms = sorted({int(points[i]["n_estimators"]) for i in idx})
            for m in ms:
                _check_tree_params(cls.name, m, depth)
            model = cls._grid_model(task, ms[-1], depth, random_state)
            model.fit(X, y, sample_weight=sample_weight)
            by_m = cls._prefix_importances(model, ms)
            for i in idx:
                out[i] = by_m[int(points[i]["n_estimators"])]
            oodfs.point_done(len(idx))  # the run's progress line (docs/PROTOCOL.md, "Progress")
        return out


class _EngineSelector(_TreeSelector):
    """gb and rf: ``engine`` picks who fits the scikit-learn algorithm (see the module docstring)."""

    #: the engine ``fit_grid`` uses (it builds its own instances; ``engine`` is no grid parameter)
    grid_engine: ClassVar[str] = "oodfs"

    @classmethod
    def _grid_options(cls) -> dict:
        return {"engine": cls.grid_engine}

    def _model(self):
        _check_engine(self.name, self.engine)
        return self._sklearn_model() if self.engine == "sklearn" else self._cart_model()


class GradientBoosting(_EngineSelector):
    """Gradient-boosting importances (scikit-learn GradientBoostingRegressor.feature_importances_).

    scikit-learn defaults apart from the grid (squared error, learning rate 0.1, no
    subsampling, initial prediction the mean, ``squared_error`` trees -- scikit-learn >= 1.9's
    criterion; the ``friedman_mse`` of earlier versions ranks splits identically); importances
    are the mean over trees of each tree's unnormalised impurity decrease, normalised to sum 1.
    ``engine``: ``"oodfs"`` (default) or ``"sklearn"``, see the module docstring.

    Default point ``n_estimators = 100, max_depth = 6``: 100 is scikit-learn's default;
    scikit-learn's default depth (3) is not in the paper's grid and 6 is the grid value
    closest to it (also the cheapest).

    ``fit_grid``: boosting is sequential and, without subsampling or early stopping, the
    first m stages of a 200-stage model *are* the m-stage model (same initial prediction,
    same residuals, same per-stage tree seeds drawn in order from ``random_state``).
    Importances for 50/100/200 stages are computed from ``estimators_[:m]`` exactly as
    scikit-learn computes ``feature_importances_``; identical to separate fits (tested).

    On a binary target: ``GradientBoostingClassifier`` (binomial deviance, the same defaults;
    the ``oodfs`` engine's :class:`.cart.GradientBoostingClassifier`): each stage's regression
    tree on the negative gradient gives the importances, as for regression.
    """

    name = "gb"

    def __init__(self, n_estimators: int = 100, max_depth: int = 6, k: int = 5, random_state=None,
                 engine: str = "oodfs"):
        super().__init__(n_estimators=n_estimators, max_depth=max_depth, k=k, random_state=random_state)
        self.engine = engine

    def _sklearn_model(self):
        from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor

        model = GradientBoostingClassifier if self._binary else GradientBoostingRegressor
        return model(n_estimators=int(self.n_estimators), max_depth=int(self.max_depth), random_state=self.random_state)

    def _cart_model(self):
        from .cart import GradientBoostingClassifier, GradientBoostingRegressor

        model = GradientBoostingClassifier if self._binary else GradientBoostingRegressor
        return model(n_estimators=int(self.n_estimators), max_depth=int(self.max_depth), random_state=self.random_state)

    @staticmethod
    def _prefix_importances(model, ms):
        n_features = model.n_features_in_
        # per stage: unnormalised importance of its (single, for regression) tree, or None
        # for a stump of one node -- scikit-learn skips those
        per_stage = [_impurity_decrease(tree.tree_, n_features) for stage in model.estimators_ for tree in stage]
        return {m: _mean_normalised(per_stage[:m], n_features) for m in ms}


class RandomForest(_EngineSelector):
    """Random-forest importances (scikit-learn RandomForestRegressor.feature_importances_).

    scikit-learn defaults apart from the grid (bootstrap, all features per split, squared
    error); ``n_jobs = 1`` (the benchmark parallelises over tasks; results do not depend on
    it). Importances: mean over trees of each tree's normalised impurity decrease,
    renormalised. ``engine``: ``"oodfs"`` (default) or ``"sklearn"``, see the module
    docstring; both draw scikit-learn's bootstrap samples from ``random_state``.

    Default point ``n_estimators = 100, max_depth = 10``: 100 is scikit-learn's default;
    scikit-learn grows unlimited-depth trees by default (the usual random-forest regime,
    deep low-bias trees averaged), and 10 is the grid value closest to that.

    ``fit_grid``: a forest's trees are independent; tree i gets the i-th seed drawn from
    ``random_state`` (its bootstrap sample and split randomness come from that seed) no
    matter how many trees follow, so the first m trees of a 200-tree forest are exactly the
    m-tree forest with the same ``random_state`` (scikit-learn's ``warm_start`` relies on
    the same property). Importances of 50/100/200 trees are computed from
    ``estimators_[:m]`` as scikit-learn does; identical to separate fits (tested).

    On a binary target: ``RandomForestClassifier(criterion="gini", max_features=None)`` -- all
    features per split as in the regression forest (scikit-learn's classifier default, sqrt(d)
    features, is not used: the classification form changes the loss only; docs/PROTOCOL.md).
    Two-class Gini is twice the squared-error impurity of the 0/1 target, so the ``oodfs``
    engine grows its regression trees on 0/1 (:class:`.cart.RandomForestClassifier`).
    """

    name = "rf"

    def __init__(self, n_estimators: int = 100, max_depth: int = 10, k: int = 5, random_state=None,
                 engine: str = "oodfs"):
        super().__init__(n_estimators=n_estimators, max_depth=max_depth, k=k, random_state=random_state)
        self.engine = engine

    def _sklearn_model(self):
        from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

        params = dict(
            n_estimators=int(self.n_estimators), max_depth=int(self.max_depth), random_state=self.random_state, n_jobs=1
        )
        if self._binary:
            return RandomForestClassifier(criterion="gini", max_features=None, **params)
        return RandomForestRegressor(**params)

    def _cart_model(self):
        from .cart import RandomForestClassifier, RandomForestRegressor

        model = RandomForestClassifier if self._binary else RandomForestRegressor
        return model(n_estimators=int(self.n_estimators), max_depth=int(self.max_depth), random_state=self.random_state)

    @classmethod
    def _fit_grid(cls, X, y, points, *, sample_weight, random_state, task="regression"):
        """One 200-tree forest at the deepest requested depth serves every point.

        Besides prefixes of the forest (exact, see the class docstring), a shallower depth D
        is read from the same trees cut at depth D: a node's impurity does not depend on
        whether it is split further, so the cut tree is the depth-D tree grown on the same
        bootstrap sample, provided each node picks the same split. With all features tried
        at every split (scikit-learn's default for regression) the split only depends on the
        data, except for exact ties between features. The ``oodfs`` engine breaks them with keys
        drawn from the tree's seed and the node's position, the same at every depth, so its cut
        trees *are* the depth-D trees (identical scores). scikit-learn breaks them with a
        feature order drawn from the random state, which differs between a depth-D and a deeper
        fit; such ties do not occur in the large nodes near the root. `tests/test_baselines.py`
        compares the cut trees with separate fits for both engines.
        """
        for p in points:
            _check_tree_params(cls.name, p["n_estimators"], p["max_depth"])
        m_max = max(int(p["n_estimators"]) for p in points)
        d_max = max(int(p["max_depth"]) for p in points)
        model = cls._grid_model(task, m_max, d_max, random_state)
        model.fit(X, y, sample_weight=sample_weight)
        out = []
        for p in points:
            per_tree = [_normalised(_impurity_decrease(t.tree_, X.shape[1], int(p["max_depth"])))
                        for t in model.estimators_]
            out.append(_mean_normalised(per_tree[: int(p["n_estimators"])], X.shape[1]))
        return out

    @staticmethod
    def _prefix_importances(model, ms):
        n_features = model.n_features_in_
        per_tree = [_normalised(_impurity_decrease(t.tree_, n_features)) for t in model.estimators_]
        return {m: _mean_normalised(per_tree[:m], n_features) for m in ms}


class XGBoost(_TreeSelector):
    """XGBoost importances (XGBRegressor, importance_type="gain": mean loss reduction per split).

    ``importance_type = "gain"`` -- the average gain of the splits that use the feature,
    normalised to sum 1 -- is XGBRegressor's default ``feature_importances_`` for tree
    boosters, so the plainest reading of the paper's unspecified "XGBoost importances".
    (Unused features score 0. "total_gain" would be the analogue of scikit-learn's impurity
    importances; set the class attribute ``importance_type`` to switch.) XGBoost defaults apart from the grid (learning rate 0.3, ``hist``
    trees, squared error, no subsampling); ``n_jobs = 1`` (the benchmark parallelises over
    tasks); ``random_state`` is XGBoost's seed (0 when None; with no subsampling the fit
    does not use it).

    On a binary target: ``XGBClassifier`` (``binary:logistic``, the same settings and importances).

    Default point ``n_estimators = 100, max_depth = 6``: XGBoost's own defaults (100 rounds,
    ``max_depth`` 6), both in the grid.

    ``fit_grid``: boosting is sequential and, without subsampling, the first m rounds of a
    200-round booster are the m-round booster (same quantile sketch, base score and
    residuals). Importances of 50/100/200 rounds are read from the sliced booster
    ``booster[:m]`` with the same ``get_score`` call and float32 normalisation the
    wrapper uses; identical to separate fits (tested).
    """

    name = "xgb"
    importance_type: ClassVar[str] = "gain"

    def _model(self):
        from xgboost import XGBClassifier, XGBRegressor

        return (XGBClassifier if self._binary else XGBRegressor)(
            n_estimators=int(self.n_estimators),
            max_depth=int(self.max_depth),
            random_state=self.random_state,
            n_jobs=1,
            importance_type=self.importance_type,
        )

    def _fit_scores(self, X, y, sample_weight):
        _check_tree_params(self.name, self.n_estimators, self.max_depth)
        model = self._model()
        model.fit(X, y, sample_weight=sample_weight)
        # the same computation as model.feature_importances_, shared with fit_grid
        return self._booster_importances(model.get_booster(), X.shape[1])

    @classmethod
    def _booster_importances(cls, booster, n_features: int) -> np.ndarray:
        score = booster.get_score(importance_type=cls.importance_type)
        names = booster.feature_names or [f"f{i}" for i in range(n_features)]
        imp = np.array([score.get(f, 0.0) for f in names], dtype=np.float32)
        total = imp.sum()
        return (imp / total if total > 0 else imp).astype(np.float64)

    @staticmethod
    def _prefix_importances(model, ms):
        booster = model.get_booster()
        n_features = model.n_features_in_
        return {m: XGBoost._booster_importances(booster[:m], n_features) for m in ms}


def _impurity_decrease(tree, n_features: int, max_depth: int | None = None):
    """scikit-learn's unnormalised impurity importances of ``tree`` (``compute_feature_importances(
    normalize=False)``: per feature, the weighted impurity decrease of its splits over the root
    weight), optionally of the tree cut at ``max_depth``; None for a single leaf, which
    scikit-learn skips.

    Unlike scikit-learn's own computation this never turns NaN because of a node of negligible
    weight (a row with sample weight 1e-16 can end in a leaf whose impurity scikit-learn stores as
    NaN): such a node's weighted impurity is taken as 0, which it is to machine precision.
    """
    split = tree.children_left >= 0
    if max_depth is not None:
        split &= tree.compute_node_depths() - 1 < max_depth  # the root has depth 1 there
    nodes = np.nonzero(split)[0]
    if nodes.size == 0:
        return None
    w = tree.weighted_n_node_samples
    weighted_impurity = w * tree.impurity
    negligible = ~np.isfinite(weighted_impurity) & (w <= 1e-12 * w[0])
    weighted_impurity[negligible] = 0.0
    left, right = tree.children_left[nodes], tree.children_right[nodes]
    decrease = weighted_impurity[nodes] - weighted_impurity[left] - weighted_impurity[right]
    return np.bincount(tree.feature[nodes], weights=decrease, minlength=n_features) / w[0]


def _normalised(importances):
    """One tree's importances scaled to sum 1, as scikit-learn's ``tree.feature_importances_``."""
    if importances is None:
        return None
    total = importances.sum()
    return importances / total if total > 0 else importances


def _mean_normalised(per_tree, n_features: int) -> np.ndarray:
    relevant = [imp for imp in per_tree if imp is not None]
    if not relevant:
        return np.zeros(n_features)
    avg = np.mean(relevant, axis=0, dtype=np.float64)
    return avg / np.sum(avg)
