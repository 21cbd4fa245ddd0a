"""What `oodfs bench --suite S --methods NEW --reference` fits on every shipped reference: the
reference's own decision (oodfs.run.reference.take, which the run calls), per suite. NEW fits one
task per data set; every other method of the suite is copied unless the reference withholds it
(its rows did not replay), and then it is fitted too.

    python benchmarks/references/new_method_plan.py          # a markdown table
"""

from __future__ import annotations

from tabulate import tabulate

from oodfs.run.identity import task_identities
from oodfs.run.reference import available
from oodfs.run.reference.replay import declared_suite, load_named


def plan(name: str) -> dict:
    ref = load_named(name)
    suite = declared_suite(ref)
    methods = list(suite.methods)
    tasks, _, refused = take_(ref, suite, methods)
    data_sets = len(list(suite.data_keys()))
    return {
        "reference": name,
        "data sets": data_sets,
        "methods copied": len(methods) - len(refused),
        "tasks copied": len(tasks),
        "tasks fitted (NEW + methods not copied)": data_sets + len(suite.task_keys(list(refused))),
        "methods not copied (withheld or not replayed)": ", ".join(refused) or "none",
    }


def take_(ref, suite, methods):
    from oodfs.run.reference import take

    return take(ref, suite, methods, task_identities(suite, methods))


def main() -> None:
    rows = [plan(name) for name in available()]
    print(tabulate(rows, headers="keys", tablefmt="github"))


if __name__ == "__main__":
    main()
