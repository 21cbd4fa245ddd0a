"""The downstream models of a run: the registry's models (:mod:`oodfs.contract.downstream`), and
the cache that trains each feature subset once per data set and scores it with the task type.

The downstream model turns a selected feature subset into the scores a leaderboard reports
(docs/PROTOCOL.md, "Downstream model"). An empty subset (the ``mean`` and ``prior`` yardsticks)
predicts the training mean (a binary target's base rate), whatever the model. Every subset's
model is seeded from ``(seed, subset)`` only, so sharing it between methods changes no number.
"""

from __future__ import annotations

import numpy as np

from oodfs.contract.downstream import DEFAULT_MODEL
from oodfs.contract.registry import get_task, registry
from oodfs.contract.task import env_key
from oodfs.validation import OodfsError


def models(task: str | None = None, table: dict | None = None) -> dict[str, type]:
    """``{name: class}`` of the registered downstream models (of those predicting ``task``).
    ``table``: ``{name: class}`` already read (a suite's plugins,
    :attr:`oodfs.contract.registry.SuitePlugins.downstream`); None reads the registry's."""
    if table is None:
        table = {name: info.cls for name, info in registry().entries("downstream").items()}
    return {n: c for n, c in table.items() if task is None or task in c.task_types}


def check_model(name, task: str | None = "regression", table: dict | None = None) -> str:
    """``name`` if it is a registered model predicting ``task`` (None: any task); else one line
    naming the valid ones. ``table``: as :func:`models`'."""
    if table is None:
        table = models()
    if name not in table:
        raise OodfsError(f"unknown downstream model {name!r}; valid: {', '.join(table)}")
    if task is not None and name not in models(task, table):
        raise OodfsError(
            f"downstream model {name!r} does not predict a {task} target; "
            + (
                f"valid for {task}: {', '.join(models(task, table))}"
                if models(task, table)
                else no_model_for(task)
            )
        )
    return name


def no_model_for(task: str) -> str:
    """What to do when no registered downstream model predicts ``task`` (a task type a plugin
    added without its model): the words of the one-line refusal."""
    return (
        f"no registered downstream model predicts the task type {task!r}: add one, a DownstreamModel "
        f"subclass (oodfs.plugin) with task_types = ({task!r},) returned by a plugin's "
        "oodfs_downstream_models hook, and name it in the suite's downstream = [...] "
        '(CONTRIBUTING.md, "Writing a plugin")'
    )


def get_model(name: str, task: str = "regression", profile: str = "default", table: dict | None = None):
    """An instance of the model ``name`` for ``task`` with the settings of ``profile``.
    ``table``: as :func:`models`'."""
    if table is None:
        table = models()
    return table[check_model(name, task, table)](task=task, profile=profile)


def score_subsets(
    model, X_train, y_train, subsets, seed: int, targets: list[tuple], task: str = "regression"
) -> list[dict]:
    """Train ``model`` (an instance) on each subset (``()``: the training mean) and score it on
    every ``(X, y)`` of ``targets``: per target, ``{score: array (subsets,)}``. What the runner's
    cache and ``oodfs select --evaluate`` both call."""
    task_type = get_task(task)
    subsets = [tuple(s) for s in subsets]
    fitted = [s for s in subsets if s]
    preds = model.predict_subsets(X_train, y_train, fitted, seed, [X for X, _ in targets]) if fitted else []
    mean = float(np.mean(y_train))
    out = []
    for t, (X, y) in enumerate(targets):
        P = np.empty((len(subsets), X.shape[0]))
        row = {s: i for i, s in enumerate(fitted)}
        for i, s in enumerate(subsets):
            P[i] = preds[t][row[s]] if s else mean
        out.append(task_type.score(y, P))
    return out


class DownstreamCache:
    """Downstream scores per feature subset, trained once per subset per data set.

    Many grid points (and many methods) pick the same top-k features; the model for a subset is
    seeded from (data set, subset), and batching does not change a subset's result, so sharing
    it changes no number.
    """

    def __init__(
        self, data, seed: int, *, model: str = DEFAULT_MODEL, task: str = "regression", profile="default"
    ):
        self.data = data
        self.seed = seed
        self.task = task
        self.model = get_model(model, task, profile)
        self.results: dict[tuple[int, ...], dict] = {}

    @classmethod
    def for_profile(
        cls, data, seed: int, profile: str, model: str = DEFAULT_MODEL, task: str = "regression"
    ) -> DownstreamCache:
        """The cache that trains ``model`` with the settings of ``profile``."""
        return cls(data, seed, model=model, task=task, profile=profile)

    def evaluate(self, subsets) -> dict[tuple[int, ...], dict]:
        """``{subset: {"val": {score: value} (empty without validation data), "test": {score:
        array per test env}}}``, and with several training environments ``"val_envs"``: ``{score:
        array per training env}``, each one's validation scores."""
        wanted = _subsets(subsets)
        missing = self.missing(wanted)
        if missing:
            self._train(missing)
        return {s: self.results[s] for s in wanted}

    def missing(self, subsets) -> list[tuple[int, ...]]:
        """Those of ``subsets`` (as sorted tuples) that :meth:`evaluate` would train: not held yet."""
        return [s for s in _subsets(subsets) if s not in self.results]

    def add_stored(self, stored: dict) -> None:
        """Take the scores of subsets trained before on this data set with this model and settings
        (:func:`oodfs.run.reference.trained_subsets`: ``{subset: {"val": {score: v}, "test": {env:
        {score: v}}, "val_envs": {env: {score: v}}}}``) instead of training them again; a score
        not stored (an undefined AUC, a score no metric keeps) reads as NaN, as no metric stores one."""
        d = self.data
        if getattr(d, "shifted", None) is not None:  # stored scores hold no shifted ones: train again
            return
        task = get_task(self.task)
        tests = [env_key(r) for r in d.test_envs]
        g = getattr(d, "groups_val", None)
        envs = g is not None and d.X_val is not None
        train_envs = [env_key(r) for r in d.train_envs] if envs else []
        nan = float("nan")
        for subset, s in stored.items():
            if subset in self.results:
                continue
            result = {
                "val": dict(s["val"]) if d.X_val is not None else {},
                "test": {k: np.array([s["test"].get(e, {}).get(k, nan) for e in tests]) for k in task.scores},
            }
            if envs:
                result["val_envs"] = {
                    task.validation_loss: np.array(
                        [s["val_envs"].get(e, {}).get(task.validation_loss, nan) for e in train_envs]
                    )
                }
            self.results[subset] = result

    def _train(self, missing) -> None:
        d = self.data
        targets = [(X, y) for _, X, y in d.tests]
        # a feature shift (docs/PROTOCOL.md, "Feature shift"): the same models predict the shifted
        # test rows (train-mean: a removed value is already the training mean there); a refit
        # scores the subset without the removed columns on the test rows instead (_refit_shifted)
        shifted = getattr(d, "shifted", None)
        refit = shifted is not None and getattr(d, "shift_impute", None) == "refit"
        n_shift = len(shifted) if shifted is not None and not refit else 0
        if n_shift:
            targets += [(X, y) for _, X, y in shifted]
        g = getattr(d, "groups_val", None)
        envs = [] if g is None or d.X_val is None else list(np.unique(g))
        if d.X_val is not None:  # each target predicted on its own rows, as oodfs always did
            targets += [(d.X_val, d.y_val)] + [(d.X_val[g == e], d.y_val[g == e]) for e in envs]
        scored = score_subsets(self.model, d.X_train, d.y_train, missing, self.seed, targets, self.task)
        n_test = len(d.tests)
        tests, moved, rest = scored[:n_test], scored[n_test : n_test + n_shift], scored[n_test + n_shift :]
        for i, s in enumerate(missing):
            result = {
                "val": {k: float(v[i]) for k, v in rest[0].items()} if rest else {},
                "test": {k: np.array([t[k][i] for t in tests]) for k in (tests[0] if tests else {})},
            }
            if n_shift:
                result["fshift"] = {k: np.array([t[k][i] for t in moved]) for k in moved[0]}
            if envs:  # several training environments: each one's held-out scores (train-domain, worst-env)
                result["val_envs"] = {k: np.array([t[k][i] for t in rest[1:]]) for k in rest[0]}
            self.results[s] = result
        if refit:
            self._refit_shifted(missing)

    def _refit_shifted(self, subsets) -> None:
        """``refit``: a subset's shifted scores are those of the model refitted on it without the
        removed columns, on the test rows (which it does not read there); a subset without them
        keeps its own scores."""
        removed = set(self.data.shift_removed)
        for s in subsets:
            reduced = tuple(c for c in s if c not in removed)
            if reduced != s:
                self.evaluate([reduced])  # trained once, like any subset; it holds no removed column
            self.results[s]["fshift"] = dict(self.results[reduced]["test"])


def _subsets(subsets) -> list[tuple[int, ...]]:
    """Each subset once, in order, as the sorted tuple of its column indices."""
    return list(dict.fromkeys(tuple(sorted(int(j) for j in s)) for s in subsets))
