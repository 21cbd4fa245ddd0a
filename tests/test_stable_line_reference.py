"""The shipped references hold every method of their suite's list, the stable line (iamb,
hiton_mb, hrm, rsw) included, on every task of the suite's grid, under the current code's
identities: `oodfs bench --suite S --reference` then copies every method and runs none
(docs/PROTOCOL.md section 12, "The line in a suite")."""

from __future__ import annotations

import pytest

from oodfs.cli import main
from oodfs.results.store import ResultStore
from oodfs.run.identity import task_identities
from oodfs.run.reference import load_reference, take
from oodfs.run.suite import load_suite

LINE = ["iamb", "hiton_mb", "hrm", "rsw"]
REAL = [
    "ames",
    "auto",
    "bikeshare",
    "computers",
    "diamonds",
    "gapminder",
    "txhousing",
    "txhousing-cities",
    "wage",
    "wagepan",
]


def _coverage(name: str):
    suite = load_suite(name)
    ref = load_reference(name, "default")
    methods = list(suite.methods)
    tasks = ref.tasks.set_index(["setting", "r_train", "run", "method"])
    missing = [k for k in suite.task_keys(methods) if k not in tasks.index]
    _, _, refused = take(ref, suite, methods, task_identities(suite, methods))
    return suite, tasks, missing, refused


def test_the_synthetic_reference_covers_the_suites_full_method_list():
    """Every method but those it withholds (rows that did not replay, docs/PROTOCOL.md section 6)."""
    suite, tasks, missing, refused = _coverage("synthetic")
    withheld = load_reference("synthetic", "default").meta.get("withheld", {})
    assert set(LINE) <= set(suite.methods)
    missing = [k for k in missing if k[3] not in withheld]
    assert missing == [], f"the shipped reference lacks {len(missing)} tasks, e.g. {missing[:3]}"
    assert set(refused) == set(withheld) & set(suite.methods), f"the shipped reference is stale: {refused}"
    # every (setting, r_train, run) of the paper's grid, each method's task a result, not a failure
    keys = suite.task_keys([m for m in suite.methods if m not in withheld])
    assert len(keys) == 2 * 7 * 5 * len([m for m in suite.methods if m not in withheld])
    assert (tasks.loc[keys, "status"] == "ok").all()


@pytest.mark.parametrize("name", REAL)
def test_the_real_references_hold_the_stable_line_with_its_refusals(name):
    """Coverage and identities of every method: tests/test_realdata.py. Here: the line is there, and
    a method that refuses the table (IAMB and HITON-MB over their 30-feature budget) is a failed
    task with its reason, as the runner records it; every other task of the line is a result."""
    suite, tasks, missing, _ = _coverage(name)
    assert set(LINE) <= set(suite.methods) and missing == []
    line = tasks.loc[suite.task_keys(LINE)]
    failed = line[line["status"] != "ok"]
    assert set(failed.index.get_level_values("method")) <= {"iamb", "hiton_mb"}
    assert failed["error"].str.contains("max_features=30").all()
    assert (len(failed) > 0) == (name in ("bikeshare", "txhousing"))


@pytest.mark.slow
def test_reference_quick_run_copies_every_method_it_holds_and_runs_the_withheld(tmp_path):
    out = tmp_path / "quick"
    argv = ["bench", "--suite", "synthetic", "--reference", "--quick", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    tasks, _ = ResultStore(out).tables()
    suite = load_suite("synthetic")
    assert set(tasks["method"]) == set(suite.methods)
    # every method copied but those the reference withholds (their rows did not replay): those are run
    withheld = set(load_reference("synthetic", "default").meta.get("withheld", {}))
    copied = tasks[~tasks["method"].isin(withheld)]
    assert (copied["origin"] == "reference").all(), copied[copied["origin"] != "reference"]
    assert (tasks[tasks["method"].isin(withheld)]["origin"] == "run").all()
