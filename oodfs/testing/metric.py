"""The checks of a metric (oodfs.testing.check_metric; CONTRIBUTING.md, "Writing a plugin").

A metric is a declaration (:class:`oodfs.plugin.Metric`): the runner calls its ``compute`` on the
:class:`oodfs.plugin.Evaluation` of every grid point and stores what it returns. The kit builds
evaluations of each task type the metric is computed for and checks what comes back.
"""

from __future__ import annotations

import json
import math

import numpy as np

from oodfs.testing._core import _declared, _ensure, _Failed, _kind_check

#: the test environments, training environments and rows of the kit's evaluations
TEST_ENVS = ("-2.0", "2.0", "3.0")
TRAIN_ENVS = ("1.5", "2.5")


def _task_type(name, task_types):
    """The TaskType called ``name``: given in ``task_types``, else registered."""
    for t in task_types or ():
        if t.name == name:
            return t
    from oodfs.contract.registry import get_task

    return get_task(name)


def evaluations(task, seed: int = 0) -> list:
    """Evaluations of one grid point as the runner builds them for ``task`` (a TaskType): with and
    without a stable set and validation data, with and without several training environments."""
    from oodfs.contract.metrics import Evaluation

    rng = np.random.default_rng(seed)
    d, k = 6, 2
    scores = rng.random(d)
    ranking = np.argsort(-scores, kind="stable")

    def values():
        return {s: float(rng.random()) for s in task.scores}

    loss = task.validation_loss
    full = Evaluation(
        scores=scores,
        ranking=ranking,
        k=k,
        stable_set=(0, 1),
        validation=values(),
        tests={env: values() for env in TEST_ENVS},
        diagnostics={"ess": 120.0},
        environments={task.metric("train_domain"): 0.4, task.metric("loeo"): 0.5},
        coef=np.array([1.0, 0.5, 0, 0, 0, 0]),
        true_coef=np.array([1.0, 0.6, 0, 0, 0, 0]),
        task=task.name,
        validation_envs={env: {loss: float(rng.random())} for env in TRAIN_ENVS},
    )
    bare = Evaluation(
        scores=scores,
        ranking=ranking,
        k=k,
        stable_set=None,
        validation={},
        tests={env: values() for env in TEST_ENVS},
        diagnostics={},
        task=task.name,
    )
    return [full, bare]


def _number(value, what: str) -> None:
    _ensure(
        isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool),
        f"{what} is {value!r}, not a number (or None: not applicable)",
    )


def check_metric(metric, task_types=None) -> None:
    """Check a :class:`oodfs.plugin.Metric` declaration: a name, a title, a description, a known
    role and direction, a declaration that survives JSON (it is stored with the results), and a
    ``compute`` that, on evaluations of every task type it is computed for, returns a number or
    None (a dict of numbers per test environment when ``per_env``), within its ``bounds``, the
    same twice and without changing the evaluation. ``task_types``: TaskType declarations not
    registered in this process (a plugin's own, checked before it is installed)."""
    from oodfs.contract.metrics import ROLES, Metric

    def metadata():
        _declared(metric)
        _ensure(isinstance(metric, Metric), "not an oodfs.plugin.Metric")
        _ensure(isinstance(metric.title, str) and metric.title.strip(), "no `title` (a table's column head)")
        _ensure(metric.role in ROLES, f"role {metric.role!r} is none of {', '.join(ROLES)}")
        _ensure(
            metric.lower_is_better in (True, False, None),
            f"lower_is_better is {metric.lower_is_better!r}, not True, False or None",
        )
        _ensure(callable(metric.compute), "compute is not callable")
        _ensure(
            metric.task_types is None
            or (isinstance(metric.task_types, tuple) and all(isinstance(t, str) for t in metric.task_types)),
            f"task_types is {metric.task_types!r}: a tuple of task type names, or None for every task",
        )
        if metric.bounds is not None:
            low, high = metric.bounds
            _ensure(low is None or high is None or low <= high, f"bounds {metric.bounds!r}: lowest > highest")
        stored = json.loads(json.dumps(metric.as_dict()))
        _ensure(
            Metric(compute=metric.compute, **stored).as_dict() == metric.as_dict(),
            "its declaration does not read back from JSON (as_dict())",
        )

    def tasks():
        names = metric.task_types if metric.task_types is not None else ("regression", "binary")
        found = []
        for name in names:
            try:
                found.append(_task_type(name, task_types))
            except Exception:  # noqa: BLE001 -- an unknown task type: said below
                raise _Failed(
                    f"it is computed for task type {name!r}, which is not registered: install the plugin "
                    "that declares it, or pass its TaskType (check_metric(metric, task_types=[...]))"
                ) from None
        return found

    def computes():
        low, high = metric.bounds or (None, None)

        def within(value, what):
            _number(value, what)
            v = float(value)
            _ensure(math.isfinite(v) or math.isnan(v), f"{what} is {v}, not finite (None: not applicable)")
            _ensure(
                math.isnan(v) or ((low is None or v >= low) and (high is None or v <= high)),
                f"{what} is {v}, outside its bounds {metric.bounds}",
            )

        for task in tasks():
            for i, e in enumerate(evaluations(task)):
                what = f"compute() on a {task.name} evaluation" + (" without a stable set" if i else "")
                before = (e.scores.copy(), e.ranking.copy(), json.dumps(e.tests, sort_keys=True))
                value = metric.compute(e)
                after = (e.scores, e.ranking, json.dumps(e.tests, sort_keys=True))
                _ensure(
                    np.array_equal(before[0], after[0])
                    and np.array_equal(before[1], after[1])
                    and before[2] == after[2],
                    f"{what} changed the evaluation",
                )
                again = metric.compute(e)
                _ensure(
                    json.dumps(value, sort_keys=True, default=float)
                    == json.dumps(again, sort_keys=True, default=float),
                    f"{what} gives {value!r}, then {again!r}",
                )
                if value is None:
                    continue
                if metric.per_env:
                    _ensure(isinstance(value, dict), f"{what} is {value!r}: per_env asks for {{env: number}}")
                    for env, v in value.items():
                        within(v, f"{what}, environment {env!r},")
                else:
                    within(value, what)
                if metric.needs_stable_set and e.stable_set is None:
                    raise _Failed(f"{what} is {value!r}: needs_stable_set says it is None without one")

    _kind_check(
        f"metric {getattr(metric, 'name', metric)!r}",
        {"check_metric_metadata": metadata, "check_metric_compute": computes},
    )
