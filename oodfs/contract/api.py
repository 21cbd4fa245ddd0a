"""The three plugin kinds: Selector, Weighter, Environment.

A plugin is a subclass of one of these, returned from a hook in :mod:`oodfs.contract.hookspecs`.
Each class declares

* ``name``  -- the registry name (``oodfs bench --methods NAME``);
* ``grid``  -- the hyperparameter grid, ``{param: [values]}`` (the paper's search ranges);
  the default grid point is the ``__init__`` default of each parameter;
* a docstring whose first line is the one-line description shown by ``oodfs plugins``.
"""

from __future__ import annotations

import inspect
import itertools
import warnings
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from oodfs.contract.progress import point_done
from oodfs.contract.seeds import derive_seed
from oodfs.contract.task_types import BINARY, TaskType, infer_task
from oodfs.numeric import max_abs_offdiag_corr
from oodfs.validation import OodfsError, check_X, check_X_y


def describe(cls) -> str:
    """The summary of a class docstring (its first paragraph, on one line): the plugin's
    description. A summary wrapped over two lines is kept whole, never cut mid-sentence."""
    summary = (inspect.getdoc(cls) or "").strip().split("\n\n")[0]
    return " ".join(summary.split())


def ranking_from_scores(scores, random_state=0) -> np.ndarray:
    """Feature indices ordered best first (higher score = better).

    Features with equal scores are put in a pseudo-random order drawn from ``random_state``,
    never in column order: a column's position must not decide a tie (docs/PROTOCOL.md,
    "Ties"). The same ``random_state`` gives the same order.
    """
    scores = np.asarray(scores, dtype=float)
    tie_order = check_random_state(random_state).permutation(scores.size)
    return np.lexsort((tie_order, -scores))


def task_ranking(scores, seed: int, point: int, fitted: np.ndarray | None = None) -> np.ndarray:
    """The ranking a task's downstream models are trained on (best first): ties in the order seeded
    by ``(seed, point, "ties")``, every feature left out of the fit (``fitted`` False) after every
    fitted one (docs/PROTOCOL.md, "Ties" and "Own tables"). The one recipe: the runner stores the
    subset it gives with every row (column ``subset``), and reports read that."""
    ranking = ranking_from_scores(scores, derive_seed(seed, point, "ties"))
    if fitted is not None and not np.all(fitted):
        ranking = ranking[np.argsort(~np.asarray(fitted)[ranking], kind="stable")]
    return ranking


def support_mask(scores, ranking, k: int) -> np.ndarray:
    """The features ``get_support`` marks: the first ``k`` of ``ranking``, except a feature
    whose score is 0 when no score is negative.

    A score of 0 from an importance-like score (a LASSO coefficient set to 0, a tree
    importance, clipped mutual information, the |correlation| of a constant column) means the
    method did not use the feature: selecting it would only fill a quota, so with fewer than
    ``k`` features above 0, fewer than ``k`` are marked (``transform`` then keeps fewer
    columns). Scores that can be negative (STG's gate means) have no such floor: the top ``k``
    (docs/PROTOCOL.md, "Own tables").
    """
    scores = np.asarray(scores, dtype=float)
    mask = np.zeros(scores.size, dtype=bool)
    mask[np.asarray(ranking, dtype=int)[:k]] = True
    if (scores >= 0).all():
        mask &= scores > 0
    return mask


def check_scores(scores, n_features: int, who: str) -> np.ndarray:
    """One finite float score per feature, or an OodfsError naming ``who`` and the problem."""
    if np.iscomplexobj(scores):  # float() would silently drop the imaginary part
        raise OodfsError(f"{who} returned complex scores; scores must be real numbers")
    scores = np.asarray(scores, dtype=float).ravel()
    if scores.shape != (n_features,):
        raise OodfsError(f"{who} returned {scores.size} scores for {n_features} features")
    if not np.all(np.isfinite(scores)):
        raise OodfsError(
            f"{who} produced a non-finite score (features {np.nonzero(~np.isfinite(scores))[0].tolist()})"
        )
    return scores


def check_groups(groups, n_samples: int, who: str, min_rows: int = 2) -> np.ndarray:
    """Environment labels (one per row) as integer codes 0..E-1 in sorted label order, or a
    one-line OodfsError: no labels, a wrong length, a missing label, one environment only, or an
    environment with fewer than ``min_rows`` rows."""
    if groups is None:
        raise OodfsError(
            f"{who} uses environment labels: pass groups (one label per training row); in a suite, "
            "train on several environments, e.g. r_train = [[1.5, 2.0, 3.0]]"
        )
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != n_samples:
        raise OodfsError(f"{who}: groups has {g.size if g.ndim else 1} labels for {n_samples} training rows")
    missing = pd.isna(g) if g.dtype.kind in "fOU" else np.zeros(n_samples, bool)
    if missing.any():
        raise OodfsError(f"{who}: groups has {int(missing.sum())} missing labels")
    try:
        labels, codes = np.unique(g, return_inverse=True)
    except TypeError:  # labels of mixed types: compare them as text
        labels, codes = np.unique(g.astype(str), return_inverse=True)
    if len(labels) < 2:
        raise OodfsError(f"{who} needs at least 2 training environments, got 1 ({labels[0]!r})")
    counts = np.bincount(codes, minlength=len(labels))
    if counts.min() < min_rows:
        small = int(np.argmin(counts))
        label = labels[small].item() if hasattr(labels[small], "item") else labels[small]
        raise OodfsError(
            f"{who} needs at least {min_rows} rows in every environment; "
            f"environment {label!r} has {counts[small]}"
        )
    return codes.astype(np.intp)


@dataclass
class GridFit:
    """One grid point's result: ``values`` (a selector's scores or a weighter's weights) and
    ``diagnostics``, what the method reports about that fit (e.g. ESS, an objective)."""

    values: np.ndarray
    diagnostics: dict = field(default_factory=dict)


def _as_grid_fit(result) -> GridFit:
    return result if isinstance(result, GridFit) else GridFit(result)


class _GridMixin:
    kind: ClassVar[str] = ""
    name: ClassVar[str] = ""
    grid: ClassVar[dict[str, list]] = {}
    #: named sets of non-grid parameters, e.g. {"paper": {...}}: the paper's literal settings
    #: (see docs/PROTOCOL.md, "Profiles"); a profile a class does not name uses its defaults
    profiles: ClassVar[dict[str, dict]] = {}
    #: whether the method learns from environment labels: it then receives ``groups``, one label
    #: per training row, in ``fit`` and ``fit_grid`` (and refuses to fit without them);
    #: label-free methods never receive them (docs/PROTOCOL.md, "Several training environments")
    uses_groups: ClassVar[bool] = False
    #: the fewest rows an environment must have for a label-using method
    min_group_rows: ClassVar[int] = 2
    #: whether the method also takes one of the labelled training environments as its reference
    #: (DRIG's least-perturbed environment); the results page groups methods by what they need
    uses_reference_env: ClassVar[bool] = False
    #: the family the results page and figures group and colour the method by (e.g. "robust
    #: (DRO)"); empty: inferred from what the method is (oodfs.report.analysis.method_family)
    family: ClassVar[str] = ""

    @classmethod
    def _groups(cls, groups, n_samples: int):
        """Integer environment codes for a label-using method (None for a label-free one)."""
        if not cls.uses_groups:
            return None
        return check_groups(groups, n_samples, cls._label(), min_rows=cls.min_group_rows)

    @classmethod
    def default_params(cls) -> dict:
        """The default grid point: the ``__init__`` defaults of the grid's parameters."""
        sig = inspect.signature(cls.__init__)
        return {p: sig.parameters[p].default for p in cls.grid}

    @classmethod
    def full_points(cls, points: list[dict]) -> list[dict]:
        """Points completed with the ``__init__`` defaults (a point may name any parameter but
        ``k`` and ``random_state``)."""
        sig = inspect.signature(cls.__init__)
        defaults = {
            k: p.default
            for k, p in sig.parameters.items()
            if k not in ("self", "k", "random_state") and p.default is not inspect.Parameter.empty
        }
        unknown = sorted({key for p in points for key in p} - set(defaults))
        valid = ", ".join(sorted(defaults)) or "none (its __init__ has no other parameter with a default)"
        reserved = [key for key in unknown if key in ("k", "random_state")]
        if reserved:
            raise OodfsError(
                f"{cls.kind} {cls.name!r}: a grid point cannot set {', '.join(reserved)} (the run sets k "
                f"from the suite and random_state from the task's seed); grid parameters: {valid}"
            )
        if unknown:
            raise OodfsError(f"{cls.kind} {cls.name!r} has no parameter(s) {unknown}; valid: {valid}")
        return [{**defaults, **p} for p in points]

    @classmethod
    def grid_points(cls) -> list[dict]:
        """Every point of the grid, in a fixed order (the default point if there is no grid)."""
        if not cls.grid:
            return [{}]
        keys = list(cls.grid)
        return [dict(zip(keys, values)) for values in itertools.product(*(cls.grid[k] for k in keys))]


class Selector(_GridMixin, SelectorMixin, BaseEstimator):
    """Base class of feature selectors: a scikit-learn estimator that scores every feature.

    Subclasses implement ``_fit_scores(X, y, sample_weight) -> scores`` (one finite score per
    feature, higher = more important) and take ``k`` (features kept by ``transform``) and
    ``random_state`` in ``__init__``. After ``fit``: ``scores_`` (alias
    ``feature_importances_``), ``ranking_`` (feature indices, best first; ties in a seeded
    random order), ``get_support()`` (the top ``k`` among features scored above 0:
    :func:`support_mask`), ``transform``, and the input's column
    names in ``feature_names_in_`` / ``get_feature_names_out()`` when X is a DataFrame.

    ``fit_grid`` scores many grid points at once. It validates the input, completes every
    point with the defaults, calls ``_fit_grid`` and checks each result as ``fit`` does; a
    plugin overrides ``_fit_grid`` to share work between points (e.g. one 200-tree forest
    scored at 50/100/200 trees). Both receive validated float arrays and ``sample_weight``
    (None or non-negative weights).

    A selector with ``uses_groups = True`` learns from environment labels: ``fit(X, y,
    groups=labels)`` and ``fit_grid(..., groups=labels)`` check them (:func:`check_groups`) and
    pass integer codes 0..E-1 on, as ``_fit_scores(X, y, sample_weight, groups)`` and
    ``_fit_grid(..., groups=codes)``. A label-free selector accepts ``groups`` and ignores it.

    A selector declares the task types it handles in ``task_types`` (default regression only;
    docs/PROTOCOL.md, "Task types"). ``fit(X, y, task=...)`` sets ``task_`` before calling
    ``_fit_scores`` (a binary target arrives as 0.0 / 1.0) and refuses a task the class does not
    declare; ``fit_grid(..., task=...)`` passes ``task=`` on to the ``_fit_grid`` of a class that
    declares ``"binary"`` (its override must accept the keyword), and the default ``_fit_grid``
    fits instances with ``task_`` set.
    """

    kind: ClassVar[str] = "selector"

    #: whether fit honours ``sample_weight`` (checked by the conformance kit); when False, ``fit``
    #: and ``fit_grid`` refuse non-uniform weights with an OodfsError before ``_fit_scores`` runs
    supports_sample_weight: ClassVar[bool] = True
    #: the task types the method handles (oodfs.contract.task_types); a suite skips the others. A
    #: yardstick (below) ranks nothing and is evaluated on every task type (:meth:`handles`)
    task_types: ClassVar[tuple[str, ...]] = ("regression",)
    #: whether reordering the columns of X reorders the scores alike (checked by the conformance kit)
    permutation_invariant: ClassVar[bool] = True
    #: a reference row, not a method: "all" (the downstream model on every feature) or 0 (on none);
    #: None for a method (docs/PROTOCOL.md, "Real data")
    yardstick: ClassVar[object] = None

    def __init__(self, k: int = 5, random_state=None):
        self.k = k
        self.random_state = random_state

    # -- what a plugin implements -------------------------------------------------------
    def _fit_scores(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def own_support(cls, scores: np.ndarray, diagnostics: dict, params: dict) -> np.ndarray | None:
        """The set the method's algorithm itself selects at one grid point (LASSO's nonzero
        coefficients, STG's open gates, a Markov boundary), as a boolean mask over the features,
        read off that point's ``scores`` and ``diagnostics`` (``params``: the point's full
        parameters); every feature in it must score above every feature outside it. None: the
        method yields no set (the default). A suite's k grid entry ``"support"`` makes that set
        one more candidate of the `val` rule (docs/PROTOCOL.md section 10, "The k grid")."""
        return None

    @classmethod
    def has_support(cls) -> bool:
        """Whether the class declares its own support (overrides :meth:`own_support`)."""
        return cls.own_support.__func__ is not Selector.own_support.__func__

    # -- the shared machinery ------------------------------------------------------------
    @classmethod
    def handles(cls, task: str) -> bool:
        """Whether the class can be run on a target of task type ``task``: it declares it, or it is
        a yardstick (every feature or none, whatever the target)."""
        return task in cls.task_types or cls.yardstick is not None

    @classmethod
    def _task(cls, y, task) -> tuple[str, np.ndarray]:
        """The task of a fit and its target as the method receives it. ``task=None`` infers it
        from y (:func:`oodfs.contract.task_types.infer_task`); an inferred task the class does not
        declare falls back to its first (a two-valued y stays a regression target for a
        regression method, as scikit-learn's regressors take it). A task named explicitly that
        the class does not declare is refused in one line."""
        if task is None:
            task = infer_task(y)
            if not cls.handles(task):
                task = cls.task_types[0]
        else:
            task = task.name if isinstance(task, TaskType) else task
            if not cls.handles(task):
                raise OodfsError(f"{cls._label()} handles {' and '.join(cls.task_types)} targets, not {task}")
        if task == "binary":  # the contract: two levels reach every method as 0.0 / 1.0
            y = BINARY.check_target(y, "y")[0]
        return task, y

    @classmethod
    def _refuse_unsupported_weights(cls, sample_weight) -> None:
        """A class declaring ``supports_sample_weight = False`` refuses non-uniform weights here,
        before its own code runs, so a plugin cannot ignore them silently by forgetting to check."""
        if cls.supports_sample_weight or sample_weight is None:
            return
        if not np.all(sample_weight == sample_weight[0]):
            raise OodfsError(
                f"{cls._label()} does not support non-uniform sample_weight (supports_sample_weight is False)"
            )

    def fit(self, X, y, sample_weight=None, groups=None, task=None):
        Xa, y, sample_weight = check_X_y(X, y, sample_weight, min_samples=2, who=self._label())
        self._refuse_unsupported_weights(sample_weight)
        codes = self._groups(groups, Xa.shape[0])
        self.task_, y = self._task(y, task)
        # scikit-learn's own bookkeeping of column names (feature_names_in_, n_features_in_)
        validate_data(self, X, skip_check_array=True, reset=True)
        raw = (
            self._fit_scores(Xa, y, sample_weight)
            if codes is None
            else self._fit_scores(Xa, y, sample_weight, codes)
        )
        self.scores_ = check_scores(raw, Xa.shape[1], self._label())
        # ties in a seeded order; random_state=None gives the same order every time
        self.ranking_ = ranking_from_scores(
            self.scores_, 0 if self.random_state is None else self.random_state
        )
        return self

    @classmethod
    def _label(cls) -> str:
        return f"selector {cls.name or cls.__name__!r}"

    @property
    def feature_importances_(self) -> np.ndarray:
        return self.scores_

    def _get_support_mask(self) -> np.ndarray:
        k = int(self.k)
        if not 1 <= k <= self.n_features_in_:
            raise OodfsError(f"k must be between 1 and {self.n_features_in_}, got {self.k}")
        return support_mask(self.scores_, self.ranking_, k)

    @classmethod
    def fit_grid(
        cls,
        X,
        y,
        points: list[dict],
        random_state=None,
        *,
        sample_weight=None,
        groups=None,
        task="regression",
    ) -> list[np.ndarray]:
        """Scores for each grid point, aligned with ``points`` (see the class docstring)."""
        fits = cls.fit_grid_detailed(
            X, y, points, random_state, sample_weight=sample_weight, groups=groups, task=task
        )
        return [f.values for f in fits]

    @classmethod
    def fit_grid_detailed(
        cls,
        X,
        y,
        points: list[dict],
        random_state=None,
        *,
        sample_weight=None,
        groups=None,
        task="regression",
    ) -> list[GridFit]:
        """As :meth:`fit_grid`, with each point's diagnostics: a list of :class:`GridFit`."""
        X, y, sample_weight = check_X_y(X, y, sample_weight, min_samples=2, who=cls._label())
        cls._refuse_unsupported_weights(sample_weight)
        codes = cls._groups(groups, X.shape[0])
        task, y = cls._task(y, task)
        points = cls.full_points(points)
        extra = {} if codes is None else {"groups": codes}
        if "binary" in cls.task_types:  # a regression-only override need not know the keyword
            extra["task"] = task
        out = cls._fit_grid(X, y, points, sample_weight=sample_weight, random_state=random_state, **extra)
        if len(out) != len(points):
            raise OodfsError(
                f"{cls._label()}: fit_grid returned {len(out)} results for {len(points)} grid points"
            )
        fits = [_as_grid_fit(r) for r in out]
        return [GridFit(check_scores(f.values, X.shape[1], cls._label()), dict(f.diagnostics)) for f in fits]

    @classmethod
    def _fit_grid(
        cls, X, y, points: list[dict], *, sample_weight, random_state, groups=None, task="regression"
    ) -> list:
        """One separate fit per point; override to share work between points. Returns one score
        vector (or :class:`GridFit`) per point. ``groups`` (codes) reaches label-using classes only;
        ``task`` classes that declare "binary" only."""
        extra = () if groups is None else (groups,)
        out = []
        for p in points:
            est = cls(**p, random_state=random_state)
            est.task_ = task
            out.append(est._fit_scores(X, y, sample_weight, *extra))
            point_done()
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def weight_diagnostics(X: np.ndarray, w: np.ndarray) -> dict:
    """Effective sample size (Σw)²/Σw², max weight (weights scaled to mean 1) and the largest
    remaining |weighted correlation| between two features."""
    w = np.asarray(w, dtype=float)
    n = w.size
    ess = float(w.sum() ** 2 / np.sum(w**2))
    return {
        "ess": ess,
        "ess_fraction": ess / n,
        "max_weight": float(w.max() / w.mean()),
        "max_abs_corr": max_abs_offdiag_corr(X, w),
    }


def check_weights(w, n_samples: int, who: str) -> np.ndarray:
    """Valid sample weights (finite, >= 0, not all zero) scaled to mean 1, or an OodfsError."""
    if np.iscomplexobj(w):
        raise OodfsError(f"{who} returned complex weights; weights must be real numbers")
    w = np.asarray(w, dtype=float).ravel()
    if w.shape != (n_samples,):
        raise OodfsError(f"{who} returned {w.size} weights for {n_samples} samples")
    if not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
        raise OodfsError(f"{who} produced invalid weights (negative, non-finite or all zero)")
    return w / w.mean()


class WeightCollapseWarning(UserWarning):
    """The learned weights put almost all mass on a few samples (low effective sample size)."""


class Weighter(_GridMixin, BaseEstimator):
    """Base class of sample weighters: learn w(x) >= 0 (mean 1) that make the features independent.

    Subclasses implement ``_fit_weights(X) -> weights``. After ``fit``: ``weights_`` (mean 1,
    usable as any scikit-learn estimator's ``sample_weight``) and ``diagnostics_`` (see
    :func:`weight_diagnostics`; a subclass adds its own entries by overriding
    ``_diagnostics``). ``fit_grid`` validates X, completes the points with the defaults and
    calls ``_fit_grid``, which a plugin overrides to share work between points (e.g. one SRDO
    classifier, several clipping levels); every result is checked as ``fit`` checks it.
    A weighter with ``uses_groups = True`` receives environment codes as ``_fit_weights(X,
    groups)`` and ``_fit_grid(..., groups=codes)``, as a label-using selector does.
    """

    kind: ClassVar[str] = "weighter"

    #: warn when the effective sample size falls below this fraction of n
    collapse_ess_fraction: ClassVar[float] = 0.05
    #: whether reordering the columns of X leaves the weights unchanged (the selector made from
    #: the weighter inherits it)
    permutation_invariant: ClassVar[bool] = True

    def __init__(self, random_state=None):
        self.random_state = random_state

    def _fit_weights(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def fit(self, X, y=None, groups=None):
        X = check_X(X, min_samples=2, who=self._label())
        codes = self._groups(groups, X.shape[0])
        raw = self._fit_weights(X) if codes is None else self._fit_weights(X, codes)
        self.weights_ = check_weights(raw, X.shape[0], self._label())
        self.diagnostics_ = {**weight_diagnostics(X, self.weights_), **self._diagnostics()}
        if self.diagnostics_["ess_fraction"] < self.collapse_ess_fraction:
            warnings.warn(
                f"{self._label()}: weights collapsed (effective sample size "
                f"{self.diagnostics_['ess']:.1f} of {X.shape[0]})",
                WeightCollapseWarning,
                stacklevel=2,
            )
        return self

    def _diagnostics(self) -> dict:
        """Extra diagnostics of the last fit (e.g. an optimiser's objective); override."""
        return {}

    @classmethod
    def _label(cls) -> str:
        return f"weighter {cls.name or cls.__name__!r}"

    def fit_weights(self, X, groups=None) -> np.ndarray:
        labels = {} if groups is None else {"groups": groups}  # a label-free fit may not take them
        return self.fit(X, **labels).weights_

    @classmethod
    def fit_grid(cls, X, points: list[dict], random_state=None, *, groups=None) -> list[np.ndarray]:
        """Weights (mean 1) for each grid point, aligned with ``points`` (see the class docstring)."""
        return [f.values for f in cls.fit_grid_detailed(X, points, random_state, groups=groups)]

    @classmethod
    def fit_grid_detailed(cls, X, points: list[dict], random_state=None, *, groups=None) -> list[GridFit]:
        """As :meth:`fit_grid`, with each point's diagnostics (:func:`weight_diagnostics` plus
        what the weighter reports)."""
        X = check_X(X, min_samples=2, who=cls._label())
        codes = cls._groups(groups, X.shape[0])
        points = cls.full_points(points)
        extra = {} if codes is None else {"groups": codes}
        out = cls._fit_grid(X, points, random_state=random_state, **extra)
        if len(out) != len(points):
            raise OodfsError(
                f"{cls._label()}: fit_grid returned {len(out)} results for {len(points)} grid points"
            )
        fits = []
        for f in map(_as_grid_fit, out):
            w = check_weights(f.values, X.shape[0], cls._label())
            fits.append(GridFit(w, {**weight_diagnostics(X, w), **f.diagnostics}))
        return fits

    @classmethod
    def _fit_grid(cls, X, points: list[dict], *, random_state, groups=None) -> list:
        """One separate fit per point; override to share work between points. Returns one weight
        vector (or :class:`GridFit`) per point."""
        extra = () if groups is None else (groups,)
        fits = []
        for p in points:
            est = cls(**p, random_state=random_state)
            fits.append(GridFit(est._fit_weights(X, *extra), est._diagnostics()))
            point_done()
        return fits


class Environment(BaseEstimator):
    """Base class of environments: makes (X, y) for an environment id and a seed.

    ``sample(env, n, seed)`` returns ``X`` of shape (n, n_features) and ``y`` of shape (n,).
    ``env`` identifies the environment (a bias rate for synthetic data, a group label for a
    table). A finite source (a table) may return fewer rows than ``n``, in random order; the
    runner holds out the tail of the training draw as validation data. ``check_env(env)``
    rejects an invalid id up front. ``stable_set`` is the tuple of true stable feature indices, or None when
    unknown; ``true_coef`` the coefficient of each column in the outcome's linear part (0 for a
    column it does not contain), or None when unknown (the β errors are then not computed);
    ``feature_names`` names the columns. Constructor parameters (e.g. ``setting``) are the
    environment's options; ``settings`` lists the named settings a suite can ask for.
    """

    name: ClassVar[str] = ""
    settings: ClassVar[tuple[str, ...]] = ()
    #: the task type of its target (oodfs.contract.task_types): "regression" or "binary"; the runner
    #: reads it, and a suite may not contradict it
    task: ClassVar[str] = "regression"
    #: a finite source's environment labels (a table's groups), None for a drawn environment:
    #: the runner then checks that each training environment holds enough rows
    labels: ClassVar[object] = None
    #: a few valid environment ids the conformance kit samples with (oodfs.testing)
    example_envs: ClassVar[tuple | None] = None

    @property
    def stable_set(self) -> tuple[int, ...] | None:
        return None

    @property
    def true_coef(self) -> np.ndarray | None:
        return None

    @property
    def feature_names(self) -> list[str]:
        raise NotImplementedError

    def sample(self, env, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def check_env(self, env):
        """Raise OodfsError if ``env`` is not a valid environment id (checked before a run)."""
        return env
