"""benchmarks/real_data/REALDATA.md as a reader relies on it: every interval of a bounded or positive quantity
stays inside its range (an RMSE at or above 0, a relative RMSE difference above -100 %, a share of
fits in [0, 100] %), and the verdict at the top states the k it is at."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import tables

TEXT = (Path(__file__).resolve().parents[1] / "benchmarks" / "real_data" / "REALDATA.md").read_text()
NUMBER = r"[+-]?\d+(?:\.\d+)?"
INTERVAL = re.compile(rf"({NUMBER}) \[({NUMBER}), ({NUMBER})\]")
PERCENT = re.compile(rf"({NUMBER}) %")


def columns(kind: str):
    """(header, cell) of every table column of ``kind``: "rmse" (an RMSE itself) or "relative" (a
    relative RMSE difference in %)."""
    for header, rows in tables(TEXT):
        for j, name in enumerate(header):
            difference = any(w in name for w in ("−", "difference", "relative", "vs all_features"))
            if kind == "rmse":
                wanted = (name.startswith("RMSE") and not difference) or name == "all_features"
            else:
                wanted = name.startswith("RMSE vs all_features")
            if wanted:
                yield from ((name, row[j]) for row in rows if j < len(row))


def test_the_report_has_its_tables():
    assert len(list(tables(TEXT))) > 40
    assert len(list(columns("rmse"))) > 100


def test_every_rmse_interval_is_at_or_above_zero_and_holds_its_mean():
    checked = 0
    for name, cell in columns("rmse"):
        for mean, low, high in INTERVAL.findall(cell):
            assert 0 <= float(low) <= float(mean) <= float(high), f"{name}: {cell}"
            checked += 1
    assert checked > 100


def test_every_relative_difference_stays_above_minus_100_percent():
    checked = 0
    for name, cell in columns("relative"):
        for value in re.findall(NUMBER, cell.replace("%", "")):
            assert float(value) > -100, f"{name}: {cell}"
            checked += 1
    assert checked > 50


def test_every_share_of_fits_is_between_0_and_100_percent():
    checked = 0
    for header, rows in tables(TEXT):
        for row in rows:
            for name, cell in zip(header, row):
                if "fits" in name or name.startswith("all (") or "(" in cell and "%)" in cell:
                    for value in PERCENT.findall(cell):
                        assert 0 <= float(value) <= 100, f"{name}: {cell}"
                        checked += 1
    assert checked > 100


def test_the_verdict_at_the_top_states_the_k_it_is_at():
    top = TEXT.split("## The verdict", 1)[1].split("\n## ", 1)[0]
    assert "k chosen on validation" in top and "At the fixed k" in top
    assert TEXT.index("## The verdict") < TEXT.index("## Verdict across suites (k chosen on validation)")
    # every per-suite table says which k it is at and keeps the fixed k beside
    assert TEXT.count("k chosen on validation (the fixed k beside)") == 2 * TEXT.count("\n## `")
