"""A run that cannot decide says so before it runs (docs/PROTOCOL.md section 10): from the suite's
declared unit and counts, the smallest p its tested family can reach after Holm."""

from dataclasses import replace

import pytest

from oodfs.report.analysis import undecidable_before_run
from oodfs.report.stats import _p_floor
from oodfs.run.suite import customise, load_suite


@pytest.mark.parametrize(
    "name, quick, says",
    [
        ("synthetic", False, ""),  # 35 (r_train, run) blocks: decidable
        ("auto", False, ""),  # 10 resplits, 14 methods against all_features: 14 x 2/2^10 < 0.05
        ("synthetic", True, "with 1 unit of replication per comparison"),
        ("arrests", False, "with 3 units of replication per comparison (each a training environment)"),
    ],
)
def test_the_note_follows_the_suites_units_and_family(name, quick, says):
    suite = customise(load_suite(name), quick=quick)
    note = undecidable_before_run(suite)
    assert (note == "") if not says else (says in note)


def test_the_advice_is_the_smallest_count_that_can_decide():
    """arrests: 10 methods against all_features over 3 environments (p floor 0.25). Holm needs a p
    below 0.005: 9 environments give 2/2^9 = 0.0039, 8 give 0.0078. Fewer methods cannot help:
    one method alone still needs 0.25 < 0.05."""
    suite = load_suite("arrests")
    note = undecidable_before_run(suite)
    assert "Holm over the 10 comparisons (10 methods against all_features) needs one below 0.005" in note
    assert note.endswith("a verdict needs at least 9 units (more training environments (r_train))")
    assert 10 * _p_floor(9, "wilcoxon") < 0.05 <= 10 * _p_floor(8, "wilcoxon")
    # the same suite with 9 training environments' worth of units decides
    nine = replace(suite, r_train=tuple(range(9)))
    assert undecidable_before_run(nine) == ""


def test_fewer_methods_are_offered_when_they_would_decide():
    suite = load_suite("synthetic-multienv")  # every pair of 11 methods over 6 blocks
    note = undecidable_before_run(suite)
    assert note.endswith(
        "a verdict needs at least 12 units (more runs (--runs) or r_train values) or at most 2 methods"
    )
    assert undecidable_before_run(customise(suite, methods=suite.methods[:2])) == ""


def test_bench_says_it_before_the_first_task(tmp_path, capsys):
    from oodfs.cli import main

    args = ["bench", "--suite", "synthetic", "--quick", "--methods", "lasso,ols", "--downstream", "ridge"]
    assert main([*args, "--out", str(tmp_path / "o"), "--no-figures"]) == 0
    err = capsys.readouterr().err.splitlines()
    first = err[0]
    assert first.startswith("oodfs: this run can give no verdict: with 1 unit of replication per comparison")
    assert first.endswith("a verdict needs at least 6 units (more runs (--runs) or r_train values)")
    assert "Holm over the 1 comparison (every pair of 2 methods)" in first
