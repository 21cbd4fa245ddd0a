"""benchmarks/reproduction/REPRODUCTION.md states what the shipped synthetic reference gives.

The report's default profile is the synthetic suite's full grid, which ships as the reference that
CI replays (tests/test_reference_replay.py). Its claims and its leaderboard, made again from that
reference, must be the committed report's word for word: a reference regenerated without the
report, or a report edited by hand, fails here.
"""

import sys
import warnings
from pathlib import Path

import pytest

from oodfs.cli import main
from oodfs.report.report import Report
from oodfs.results.store import ResultStore, load_results

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "reproduction"
sys.path.insert(0, str(BENCH))
import reproduce  # noqa: E402


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "synthetic"
    assert (
        main(["bench", "--suite", "synthetic", "--reference", "--out", str(out), "--no-figures", "--quiet"])
        == 0
    )
    whole = load_results(out)
    results = whole[whole["method"].isin(reproduce.PAPER_METHODS)]
    metrics = ResultStore(out).get_meta("metrics")
    return Report(results, "val", metrics), Report(results, "oracle", metrics)


@pytest.fixture(scope="module")
def committed():
    return (BENCH / "REPRODUCTION.md").read_text()


def test_the_claims_are_what_the_shipped_reference_gives(reports, committed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant series: the claims say "constant" themselves
        claims = "\n".join(reproduce.claim_sections(*reports))
    assert claims in committed


def test_the_leaderboard_is_what_the_shipped_reference_gives(reports, committed):
    assert reproduce.leaderboard_section(reports[0]) in committed
