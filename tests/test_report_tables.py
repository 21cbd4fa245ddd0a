"""The tables the claim reports share (benchmarks/shared/report_tables.py: STABLE_LINE_SYNTH.md, MARKOV.md,
SVI.md, STABLE_LINE.md): a cell is the mean with its interval, a lone value has no interval, a
claim's difference is a − b when asked, and rewriting a report keeps its hand-written verdicts."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "shared"))
from report_tables import (  # noqa: E402
    VERDICTS,
    claim_line,
    claim_rows,
    interval_cell,
    means_table,
    write_keeping_verdicts,
)


def chosen(a: list[float], b: list[float]) -> pd.DataFrame:
    """Chosen fits of methods a and b in one setting, one row per run."""
    rows = [dict(setting="s", r_train="0.1", run=i, method=m, f1=v) for m, vs in (("a", a), ("b", b))
            for i, v in enumerate(vs)]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_cell_is_the_mean_and_its_interval_a_lone_value_has_none():
    values = [0.2, 0.4, 0.6, 0.8, np.nan]
    mean, low, high = (
        float(x) for x in interval_cell(values).replace("[", "").replace(",", "").replace("]", "").split()
    )
    assert (
        mean == 0.5 and 0.2 <= low < mean < high <= 0.8
    )  # the percentile bootstrap stays in the data's range
    assert interval_cell([0.25]) == "0.250"
    assert interval_cell([np.nan]) == "—"
    t = interval_cell(values, "t")
    assert t.startswith("0.500 [") and float(t.split("[")[1].split(",")[0]) < 0.2  # a t interval is wider


def test_the_means_table_has_a_row_per_method_and_the_last_column_it_is_given():
    df = chosen([0.9, 0.8, 1.0], [0.5])
    lines = means_table(df, ["a", "b", "c"], ["f1"], extra=("runs", lambda m, sub: str(len(sub))))
    assert lines[0] == "| method | f1 | runs |" and lines[1] == "| --- | --- | --- |"
    assert lines[2].startswith("| a | 0.900 [") and lines[2].endswith(" | 3 |")
    assert lines[3] == "| b | 0.500 | 1 |"
    assert lines[4] == "| c | — | 0 |"


def test_a_claim_is_a_minus_b_when_oriented_and_its_verdict_follows_holm():
    better_b = chosen([0.1 * i for i in range(8)], [0.1 * i + 0.3 for i in range(8)])
    (r,) = claim_rows(better_b, [("a", "b")], "f1", lower=False, orient=True)
    assert (r["method_a"], r["method_b"]) == ("a", "b")
    assert np.isclose(r["mean_diff"], -0.3) and r["diff_low"] <= r["mean_diff"] <= r["diff_high"]
    assert r["verdict"] == "b better" and r["family"] == 1 and r["p_holm"] == r["p"] < 0.05
    assert claim_line(r, with_family=True).startswith("| f1 | a | b | 8 | -0.300 [")
    # a claim whose method is missing is left out, and the Holm family is what remains
    assert claim_rows(better_b, [("a", "b"), ("a", "z")], "f1", lower=False)[0]["family"] == 1


def test_rewriting_a_report_keeps_its_hand_written_verdicts(tmp_path):
    out = tmp_path / "REPORT.md"
    write_keeping_verdicts("# first\n", out)
    assert out.read_text() == "# first\n"
    out.write_text("# first\n" + VERDICTS + ")\n\nby hand\n")
    written = write_keeping_verdicts("# second\n", out)
    assert written == out.read_text() == "# second\n" + VERDICTS + ")\n\nby hand\n"
