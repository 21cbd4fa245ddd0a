"""The binary suites' shipped reference results and the verdicts benchmarks/binary/BINARY_RESULTS.md states.

What must hold: every shipped binary reference is the full grid of its suite made by the code
that ships with it (``--reference`` takes every method, none rerun), and the verdicts of
BINARY_RESULTS.md are what the shipped results give when the report is made again from them.
"""

import sys
import warnings
from pathlib import Path

import oodfs.run.reference as oodfs_reference

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "binary"
sys.path.insert(0, str(BENCH))
import binary_results  # noqa: E402

BINARY = [*binary_results.real_binary_suites(), binary_results.SYNTHETIC]
SHIPPED = [n for n in BINARY if (Path(oodfs_reference.__file__).parent / f"{n}-default.parquet").is_file()]
#: the sections of the report that hold verdicts (up to the run table, which holds wall times)
SECTIONS = ("## Verdict across suites", "## What was run")


def test_binary_references_are_shipped():
    assert SHIPPED, "no binary suite has shipped reference results"


def _verdicts(text: str) -> str:
    start, end = (text.index(s) for s in SECTIONS)
    return text[start:end]


def test_binary_results_states_what_the_shipped_references_give(tmp_path, monkeypatch):
    """The report made again from the shipped results (no runs in ROOT) has the committed file's
    verdict sections, word for word."""
    monkeypatch.setattr(
        binary_results, "HERE", tmp_path
    )  # the figure is drawn there, not over the committed one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = binary_results.write_report(tmp_path / "none", BINARY, {}, 1)
    committed = (BENCH / "BINARY_RESULTS.md").read_text()
    assert _verdicts(text) == _verdicts(committed)


def test_a_misspelt_suite_is_refused_in_one_line(capsys):
    """`--suites` naming no binary suite: one line naming it and the valid ones, status 2, nothing run."""
    assert binary_results.main(["--suites", "churn,chrun", "--report-only"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "'chrun'" in err and "churn, " in err
