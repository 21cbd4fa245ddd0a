"""The quick job ends with a tested verdict: its own run (one unit per comparison) cannot test, so
bench gives the shipped reference's verdicts on the same methods and settings, labelled as the
reference's, with its units and test (docs/PROTOCOL.md section 10)."""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path
from types import SimpleNamespace

import pytest

from oodfs.commands.bench import found_lines
from oodfs.report.analysis import Analysis, shipped_verdicts
from oodfs.report.report import Report
from oodfs.run.reference import load_reference

REFERENCE = load_reference("synthetic", "default")


def _one_data_set(methods=None):
    """The synthetic reference's rows of one data set (r_train 2.5, run 0), as a quick run stores
    them: one unit per comparison."""
    ref = REFERENCE.results
    rows = ref[(ref["r_train"].astype(str) == "2.5") & (ref["run"] == 0)]
    if methods is not None:
        rows = rows[rows["method"].isin(methods)]
    return Report(rows.drop(columns="origin"), "val")


@pytest.fixture(scope="module")
def quick():
    """A quick run's report and the reference's verdicts for it."""
    run = _one_data_set()
    return run, shipped_verdicts(run, REFERENCE)


def test_a_run_too_small_to_test_gets_the_references_verdicts_on_its_methods(quick):
    run, v = quick
    assert Analysis(run).undecidable_settings()  # one unit: nothing tested
    assert v["name"] == "synthetic-default" and v["downstream"] == "mlp"
    assert v["units"] == 35 and "Holm over 136 pairs" in v["test"]  # 17 methods, 7 r_train x 5 runs
    by = {(s["setting"], s["metric"]): s for s in v["sentences"]}
    poly = by[("poly", "RMSE mean ↓")]
    assert poly["decided"] and "dwr better than 13 of 13" in poly["text"] and "srdo" in poly["text"]


def test_the_references_family_is_the_runs_methods():
    """A run of three methods is told the verdicts of those three, tested as three (3 pairs)."""
    v = shipped_verdicts(_one_data_set(["dwr", "srdo", "ols"]), REFERENCE)
    assert "Holm over 3 pairs" in v["test"]
    text = " ".join(s["text"] for s in v["sentences"])
    assert "mi" not in text.split() and "ols" in text


def test_no_verdicts_when_the_reference_holds_too_few_of_the_runs_methods():
    run = _one_data_set(["dwr", "ols"])
    run.results = run.results.assign(method=run.results["method"].map({"dwr": "mine", "ols": "ols"}))
    assert shipped_verdicts(run, REFERENCE) is None


def _outcome(verdicts, shipped=True, root=None):
    suite = SimpleNamespace(name="synthetic", shipped=shipped)
    done = SimpleNamespace(
        reference_verdicts=verdicts, out=Path("results/synthetic-quick"), planned=SimpleNamespace(suite=suite)
    )
    return SimpleNamespace(root=root, suites=[done])


def test_the_last_lines_say_whose_verdicts_they_are_and_what_to_run_next(quick):
    v = quick[1]
    lines = found_lines(_outcome(v), Namespace(quiet=False, suite="synthetic"))
    text = "\n".join(lines)
    assert "this run has too few units to test" in text and "Its verdicts, not this run's" in text
    assert "35 units per comparison" in text
    assert any(line.startswith("  poly, RMSE mean ↓: ") for line in lines)
    assert "spread alone" not in text  # RMSE sd is never called best: not a verdict to show
    assert "oodfs report results/synthetic-quick --out results/synthetic-quick-site" in text
    assert "oodfs bench --suite synthetic" in text
    # quiet: nothing; a run that could test: only what to run next
    assert found_lines(_outcome(v), Namespace(quiet=True, suite="synthetic")) == []
    plain = found_lines(_outcome(None), Namespace(quiet=False, suite="synthetic"))
    assert not any("reference" in line for line in plain) and plain[-1].startswith("next: ")
