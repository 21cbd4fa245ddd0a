"""The order the tasks finished in changes no number: the same stored rows in any order give the
same leaderboard, verdicts and intervals, bit for bit (docs/PROTOCOL.md section 10, "Intervals")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from oodfs.report.analysis import Analysis, across_suites
from oodfs.report.features import per_env_rmse
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report
from oodfs.run.reference import load_reference
from tests.test_site import noisy, results


def _outputs(ref, rows: pd.DataFrame) -> tuple[str, str, str]:
    # the reference holds two downstream models: a bare table declares no order of them, so its
    # reader names the one to report (the suite's first, as bench and a stored folder do)
    first = ref.meta["suite_identity"]["downstream"][0]
    board = Leaderboard(Report(rows, "val", ref.meta["metrics"], ref.methods, downstream=first))
    analysis = board.analysis
    tests = analysis.all_tests()
    return (
        board.to_markdown(),
        tests.to_csv(index=False, float_format="%.17g"),
        "\n".join(map(str, analysis.verdict_sentences())),
    )


@pytest.fixture(scope="module")
def churn():
    return load_reference("churn", "default")


def test_shuffled_rows_give_the_same_leaderboard_and_verdicts_bit_for_bit(churn):
    rows = churn.results
    base = _outputs(churn, rows)
    assert "[" in base[0] and "verdict" in base[1]  # intervals and verdicts are printed
    for seed in (0, 1):
        shuffled = rows.sample(frac=1, random_state=seed).reset_index(drop=True)
        assert _outputs(churn, shuffled) == base


def test_every_interval_is_over_its_units_in_key_order():
    """The bootstrap reads a cell's blocks sorted by their key, not in the stored order: the cells
    and the intervals per test environment of the rows stored backwards are the same."""
    df = results({"a": noisy(0.3, 0.05, 1), "b": noisy(0.31, 0.05, 2)})
    backwards = df.iloc[::-1].reset_index(drop=True)
    for reader in (lambda r: r.cells(), lambda r: per_env_rmse(r)):
        one, other = reader(Report(df, "val")), reader(Report(backwards, "val"))
        pd.testing.assert_frame_equal(one, other, check_exact=True)
        assert len(one) and np.isfinite(one["low"]).all()


def test_the_verdict_across_suites_does_not_depend_on_the_order_of_the_suites():
    analyses = {}
    for suite, shift in (("a", 0.0), ("b", 0.02), ("c", -0.01), ("d", 0.01), ("e", 0.015)):
        df = results(
            {
                "all_features": noisy(0.30, 0.01, 1),
                "dwr": noisy(0.29 + shift, 0.01, 2),
                "ols": noisy(0.32 - shift, 0.01, 3),
            },
            suite=suite,
        )
        df.loc[df["method"] == "all_features", "method_kind"] = "yardstick"
        analyses[suite] = Analysis(Report(df, "val"))
    one = across_suites(analyses)
    other = across_suites(dict(reversed(analyses.items())))
    for part in ("methods", "families"):
        pd.testing.assert_frame_equal(one[part], other[part], check_exact=True)
    assert one["family_pair"] == other["family_pair"]
    assert list(other["effects"].index) == list("edcba")  # shown in the order given
