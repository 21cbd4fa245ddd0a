"""The earlier name of :mod:`oodfs.contract.task_types` (a *task* is one method on one data set,
:mod:`oodfs.contract.task`; a *task type* is the kind of target): every name of that module is still
found here, and ``get_task``, which lives beside the registry (:mod:`oodfs.contract.registry`).

Nothing in oodfs imports this module; it stays for the plugins and scripts that do
(CONTRIBUTING.md, "Writing a plugin").
"""

from oodfs.contract import task_types as _task_types


def __getattr__(name):
    # ``get_task`` is imported on use only: nothing in oodfs.contract reaches it (tests/test_layout.py)
    if name == "get_task":
        from oodfs.contract.registry import get_task

        return get_task
    try:
        return getattr(_task_types, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
