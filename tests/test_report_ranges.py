"""The benchmark reports a reader cites: every printed interval of a metric itself (not of a
difference) holds its mean and stays inside the metric's range (F1, AUC and accuracy in [0, 1],
RMSE and log-loss at or above 0, the rank average of a five-feature stable set at or above 3, its
best possible value)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import tables

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
NUMBER = r"[+-]?\d+(?:\.\d+)?"
INTERVAL = re.compile(rf"({NUMBER}) \[({NUMBER}), ({NUMBER})\]")
#: (words in a column's header, the metric's range); the synthetic reports' stable set has 5 features
RANGES = {
    "rank avg": (3.0, float("inf")),
    "F1": (0.0, 1.0),
    "RMSE": (0.0, float("inf")),
    "log-loss": (0.0, float("inf")),
    "AUC": (0.0, 1.0),
    "accuracy": (0.0, 1.0),
}
#: a header naming a difference, a comparison or a relative change: its interval may be negative
DIFFERENCE = ("−", " vs ", "difference", "relative", "interval", "diff")
REPORTS = [
    "reproduction/REPRODUCTION.md",
    "multienv/MULTIENV_RESULTS.md",
    "binary/BINARY_RESULTS.md",
    "multienv_real/MULTIENV_REAL.md",
]


def metric_cells(text: str):
    """(header, cell, (low, high) range) of every table cell that gives a metric itself."""
    for header, rows in tables(text):
        for j, name in enumerate(header):
            if any(w in name for w in DIFFERENCE):
                continue
            bounds = next((r for key, r in RANGES.items() if key.lower() in name.lower()), None)
            if bounds is not None:
                yield from ((name, row[j], bounds) for row in rows if j < len(row))


@pytest.mark.parametrize("report", REPORTS)
def test_every_interval_of_a_metric_holds_its_mean_and_stays_in_range(report):
    checked = 0
    for name, cell, (low_end, high_end) in metric_cells((BENCH / report).read_text()):
        for mean, low, high in INTERVAL.findall(cell):
            mean, low, high = float(mean), float(low), float(high)
            assert low <= mean <= high, f"{report}, {name}: {cell}"
            outside = f"{report}, {name}: {cell} leaves [{low_end}, {high_end}]"
            assert low_end <= low and high <= high_end, outside
            checked += 1
    assert checked > 20, f"{report}: only {checked} intervals found; the table headers changed?"
