"""The checks of a task type (oodfs.testing.check_task_type; CONTRIBUTING.md, "Writing a plugin").

A task type (:class:`oodfs.plugin.TaskType`) is only usable with what goes around it: a
downstream model that predicts it, the metrics its selection rules and leaderboard read, and a
method that handles it. The kit checks the declaration, its target check and its scores, then
that each of those is registered, and says which is missing and how to add it.
"""

from __future__ import annotations

import numpy as np

from oodfs.testing._core import _declared, _ensure, _expect_oodfs_error, _Failed, _kind_check

HOW = 'CONTRIBUTING.md, "Writing a plugin"'


def _example_target(task, y):
    if y is not None:
        return np.asarray(y)
    rng = np.random.default_rng(0)
    if task.name == "regression":
        return rng.standard_normal(60)
    if task.name == "binary":
        return (rng.random(60) < 0.5).astype(float)
    raise TypeError(
        f"check_task_type: give an example target of task type {task.name!r} (y=[...], 20 rows or more)"
    )


def check_task_type(task, y=None, plugins=None) -> None:
    """Check a :class:`oodfs.plugin.TaskType` declaration. ``y``: an example target it takes (the
    built-ins have their own); ``plugins``: the registry to look its companions up in (default:
    this process's, :func:`oodfs.plugin.registry`).

    The declaration: a name and description; its scores, each with a title and a direction, the
    first (the validation loss every selection rule minimises) lower-is-better; its headline
    metric names. Its target check turns ``y`` into floats with a note or None and refuses a
    target of three text levels with one line. Its scores of a batch of predictions: every
    declared score per model, a model's score independent of the others in the batch, a perfect
    prediction's validation loss no worse than a constant one's. Then its companions, each
    named when missing with how to add it: a downstream model that predicts it, the metrics the
    selection rules and the leaderboard read for it, a method that handles it."""
    from oodfs.contract.task_types import TaskType

    label = f"task type {getattr(task, 'name', task)!r}"

    def registry():
        if plugins is not None:
            return plugins
        from oodfs.contract.registry import registry as current

        return current()

    def metadata():
        _declared(task)
        _ensure(isinstance(task, TaskType), "not an oodfs.plugin.TaskType")
        _ensure(
            isinstance(task.scores, tuple) and task.scores and all(isinstance(s, str) for s in task.scores),
            f"scores is {task.scores!r}: a tuple of score names, the validation loss first",
        )
        for s in task.scores:
            _ensure(s in task.titles, f"score {s!r} has no title (titles = {{{s!r}: ...}})")
            _ensure(
                task.lower_is_better.get(s) in (True, False),
                f"score {s!r} has no direction (lower_is_better = {{{s!r}: True or False}})",
            )
        _ensure(
            task.lower_is_better.get(task.scores[0]) is True,
            f"its first score {task.scores[0]!r} is the validation loss every selection rule minimises, "
            "so lower must be better",
        )
        _ensure(
            isinstance(task.headline, tuple) and all(isinstance(h, str) for h in task.headline),
            f"headline is {task.headline!r}: a tuple of metric names",
        )
        _ensure(callable(task.check) and callable(task.scorer), "check and scorer must be callables")

    def target():
        raw = _example_target(task, y)
        got = task.check_target(raw, "y")
        _ensure(
            isinstance(got, tuple) and len(got) == 2, "check_target() must return (y as floats, note or None)"
        )
        values, note = got
        values = np.asarray(values)
        _ensure(values.dtype.kind == "f", f"check_target() gives {values.dtype} values, not floats")
        _ensure(values.shape == (len(raw),), f"check_target() gives shape {values.shape} for {len(raw)} rows")
        _ensure(note is None or (isinstance(note, str) and "\n" not in note), "the note is not one line")
        _expect_oodfs_error(
            "check_target() of a target of three text levels",
            lambda: task.check_target(["a", "b", "c"] * 5, "y"),
        )

    def scores():
        values = np.asarray(task.check_target(_example_target(task, y), "y")[0], dtype=float)
        rng = np.random.default_rng(1)
        constant = np.full_like(values, float(np.mean(values)))
        noisy = np.clip(values + 0.3 * rng.standard_normal(values.shape), min(values.min(), 0.0), None)
        if set(np.unique(values)) <= {0.0, 1.0}:  # a probability of class 1.0
            noisy = np.clip(np.abs(noisy), 0.0, 1.0)
        P = np.vstack([values, constant, noisy])
        out = task.score(values, P)
        _ensure(isinstance(out, dict), "score() must return {score: array (models,)}")
        _ensure(
            set(out) == set(task.scores),
            f"score() gives {sorted(out)}, its declared scores are {list(task.scores)}",
        )
        for s, v in out.items():
            v = np.asarray(v, dtype=float)
            _ensure(v.shape == (3,), f"score {s!r} has shape {v.shape} for 3 models, not (3,)")
        loss = np.asarray(out[task.validation_loss], dtype=float)
        _ensure(
            np.isfinite(loss).all(), f"the validation loss {task.validation_loss!r} is not finite: {loss}"
        )
        _ensure(
            loss[0] <= loss[1],
            f"a perfect prediction's {task.validation_loss} ({loss[0]:.4g}) is worse than a constant one's "
            f"({loss[1]:.4g})",
        )
        alone = task.score(values, P[2])
        for s in task.scores:
            a, b = float(np.asarray(alone[s])[0]), float(np.asarray(out[s])[2])
            _ensure(
                (np.isnan(a) and np.isnan(b)) or np.isclose(a, b, rtol=1e-9, atol=0),
                f"score {s!r} of a model depends on the other models of the batch ({a} alone, {b} in it)",
            )

    def downstream_model():
        found = [
            name
            for name, info in registry().entries("downstream_model").items()
            if task.name in info.cls.task_types
        ]
        _ensure(
            found,
            f"no registered downstream model predicts task type {task.name!r}, so no suite of it can "
            f"run: add a DownstreamModel subclass (oodfs.plugin) with task_types = ({task.name!r},) "
            f"and return it from the plugin's oodfs_downstream_models hook ({HOW})",
        )

    def metrics():
        known = registry().entries("metric")
        wanted = {task.metric("val"): "the val selection rule", task.metric("mean"): "the oracle rule"}
        wanted.update({h: "its headline" for h in task.headline})
        missing = [
            f"{name!r} ({why})"
            for name, why in wanted.items()
            if name not in known or not known[name].cls.applies_to(task.name)
        ]
        _ensure(
            not missing,
            f"task type {task.name!r} has no registered metric {', '.join(missing)}: return "
            f"task_metrics(<your TaskType>) (oodfs.plugin) from the plugin's oodfs_metrics hook ({HOW})",
        )

    def method():
        able = [
            name
            for name, info in registry().entries("selector").items()
            if info.cls.yardstick is None and info.cls.handles(task.name)
        ]
        if not able:
            raise _Failed(
                f"no registered method handles task type {task.name!r}, so a suite of it runs nothing: a "
                f"Selector or Weighter subclass (oodfs.plugin) takes it when its task_types include "
                f"{task.name!r} ({HOW})"
            )

    _kind_check(
        label,
        {
            "check_task_type_metadata": metadata,
            "check_task_type_target": target,
            "check_task_type_scores": scores,
            "check_task_type_downstream_model": downstream_model,
            "check_task_type_metrics": metrics,
            "check_task_type_method": method,
        },
    )
