"""The checks of a downstream model (oodfs.testing.check_downstream_model; CONTRIBUTING.md,
"Writing a plugin").

A downstream model (:class:`oodfs.plugin.DownstreamModel`) trains one model per selected feature
subset and predicts the rows of every target matrix; its task type scores the predictions. The
runner shares a subset's model between methods, so a subset's predictions may depend on the seed
and the subset only, never on the other subsets of the batch.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from oodfs.testing._core import (
    _binary_data,
    _close,
    _declared,
    _ensure,
    _expect_oodfs_error,
    _Failed,
    _kind_check,
    _regression_data,
)

HOW = 'CONTRIBUTING.md, "Writing a plugin"'


def _data(task: str, data):
    """(X, y) of the kit for ``task``: the built-ins' own, another's from ``data``."""
    if data and task in data:
        X, y = data[task]
        return np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    if task == "regression":
        return _regression_data(n=200)
    if task == "binary":
        return _binary_data(n=200)
    raise TypeError(
        f"check_downstream_model: give data for task type {task!r}: data={{{task!r}: (X, y)}} "
        "(y as the task type's check_target gives it)"
    )


def check_downstream_model(model, data=None, task_types=None, plugins=None) -> None:
    """Check a :class:`oodfs.plugin.DownstreamModel` subclass. ``data``: ``{task: (X, y)}`` for a task
    type other than the built-ins (theirs are the kit's); ``task_types``: TaskType declarations not
    registered in this process; ``plugins``: the registry to look task types up in.

    The class: a name, a docstring, task types that are registered (one named when it is not,
    with how to add it), frozen ``Settings`` whose every profile builds, an identity that is
    JSON, and an instance for a task it does not declare refused with one line. Its
    predictions, for every task type it declares: one array (subsets, rows) per target matrix,
    finite, the same for the same seed, each subset's the same alone as in a batch, and scores
    of its task type that are finite."""
    from oodfs.contract.downstream import DownstreamModel
    from oodfs.contract.profiles import PROFILES

    label = f"downstream model {getattr(model, 'name', model)!r}"

    def registry():
        if plugins is not None:
            return plugins
        from oodfs.contract.registry import registry as current

        return current()

    def task_type(name):
        for t in task_types or ():
            if t.name == name:
                return t
        known = registry().entries("task_type")
        if name not in known:
            raise _Failed(
                f"it predicts task type {name!r}, which no plugin registers: declare a TaskType "
                f"(oodfs.plugin) named {name!r} and return it from the plugin's oodfs_task_types hook "
                f"({HOW}), or pass it (check_downstream_model(model, task_types=[...]))"
            )
        return known[name].cls

    def metadata():
        _declared(model)
        _ensure(
            isinstance(model, type) and issubclass(model, DownstreamModel), "not a DownstreamModel subclass"
        )
        _ensure(
            isinstance(model.task_types, tuple) and model.task_types,
            f"task_types is {model.task_types!r}: a tuple of the task types it predicts",
        )
        for name in model.task_types:
            task_type(name)
        _ensure(dataclasses.is_dataclass(model.Settings), "Settings is not a dataclass")
        _ensure(
            model.Settings.__dataclass_params__.frozen, "Settings is not frozen (@dataclass(frozen=True))"
        )
        for profile in ("default", *model.profiles):
            _ensure(
                profile in PROFILES, f"profiles names {profile!r}, which is none of {', '.join(PROFILES)}"
            )
            instance = model(task=model.task_types[0], profile=profile)
            try:
                json.dumps(instance.identity(), sort_keys=True)
            except TypeError as exc:
                raise _Failed(f"identity() under profile {profile!r} is not JSON: {exc}") from None
        _expect_oodfs_error(
            "an instance for a task type it does not declare", lambda: model(task="no-such-task")
        )

    def predictions():
        for name in model.task_types:
            task = task_type(name)
            X, y = _data(name, data)
            half = len(y) // 2
            X_train, y_train, X_test = X[:half], y[:half], X[half:]
            subsets = [(0,), (0, 1), (2, 3, 4)]
            targets = [X_test, X_train]
            m = model(task=name)
            out = m.predict_subsets(X_train, y_train, subsets, 7, targets)
            what = f"predict_subsets() for {name}"
            _ensure(
                isinstance(out, list) and len(out) == len(targets), f"{what}: one array per target matrix"
            )
            for P, T in zip(out, targets):
                P = np.asarray(P, dtype=float)
                _ensure(
                    P.shape == (len(subsets), T.shape[0]), f"{what}: shape {P.shape}, not (subsets, rows)"
                )
                _ensure(np.isfinite(P).all(), f"{what}: predictions that are not finite")
            again = m.predict_subsets(X_train, y_train, subsets, 7, targets)
            _ensure(
                all(_close(a, b) for a, b in zip(out, again)), f"{what}: two calls with the same seed differ"
            )
            alone = model(task=name).predict_subsets(X_train, y_train, subsets[2:], 7, targets)
            _ensure(
                all(_close(np.asarray(a)[0], np.asarray(b)[2]) for a, b in zip(alone, out)),
                f"{what}: a subset's predictions depend on the other subsets of the batch (seed each "
                "subset's model from (seed, subset) only)",
            )
            scores = task.score(y[half:], np.asarray(out[0], dtype=float))
            loss = np.asarray(scores[task.validation_loss], dtype=float)
            _ensure(
                np.isfinite(loss).all(), f"{what}: the {task.validation_loss} of its predictions is {loss}"
            )

    _kind_check(
        label,
        {"check_downstream_model_metadata": metadata, "check_downstream_model_predictions": predictions},
    )
