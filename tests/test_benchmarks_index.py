"""benchmarks/README.md is the index of the studies: a reader finds any report from it in one
step, and every path it names exists (docs/PROTOCOL.md and README.md link the reports the same
way)."""

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
#: folders whose markdown is not a report: the results page, and the tables a report's figures
#: come with (the report links them)
NOT_REPORTS = ("site", "figures")


def index_problems(root: Path) -> list[str]:
    """What is wrong with ``root``/README.md as an index of ``root``: a report (``*.md``) or a
    script (``*.py``) it does not name, a link or a ``benchmarks/`` path it names that does not
    exist, a script in its script table that is not in the folder given."""
    index = root / "README.md"
    if not index.is_file():
        return [f"{index} does not exist"]
    text = index.read_text()
    problems = []
    links = {m.split("#")[0] for m in re.findall(r"\]\(([^)\s]+)\)", text)}
    for link in sorted(links):
        if link and not re.match(r"[a-z]+:", link) and not (root / link).exists():
            problems.append(f"the index links {link}, which does not exist")
    named = set()
    for path in re.findall(r"(?<![\w/])benchmarks/([\w./-]*\w)", text):
        named.add(path)
        if not (root / path).exists():
            problems.append(f"the index names benchmarks/{path}, which does not exist")
    # the table of scripts without a report: | folder/ | `a.py`, `b.py` | ... |
    for folder, cell in re.findall(r"^\| ([\w-]+)/ \| ([^|]+)\|", text, re.M):
        for script in re.findall(r"`([\w-]+\.py)`", cell):
            named.add(f"{folder}/{script}")
            if not (root / folder / script).is_file():
                problems.append(f"the index lists {folder}/{script}, which does not exist")
    for report in sorted(root.rglob("*.md")):
        rel = report.relative_to(root)
        if report == index or any(part in NOT_REPORTS for part in rel.parts[:-1]):
            continue
        if rel.as_posix() not in links:
            problems.append(f"the report {rel.as_posix()} is not linked from the index")
    for script in sorted(root.rglob("*.py")):
        rel = script.relative_to(root).as_posix()
        if rel not in named:
            problems.append(f"the script {rel} is not named in the index")
    return problems


def test_the_index_names_every_report_and_script_and_only_what_exists():
    assert index_problems(BENCHMARKS) == []


def test_every_study_is_a_folder():
    """Nothing but the index and the results page's screenshot at the top of benchmarks/."""
    loose = sorted(p.name for p in BENCHMARKS.iterdir() if p.is_file())
    assert loose == ["README.md", "site.png"]


def test_the_check_finds_a_report_left_out_and_a_path_that_does_not_exist(tmp_path):
    (tmp_path / "study").mkdir()
    (tmp_path / "study" / "REPORT.md").write_text("# a report\n")
    (tmp_path / "study" / "run.py").write_text("")
    (tmp_path / "README.md").write_text(
        "| q | v | [study/GONE.md](study/GONE.md) | `python benchmarks/study/run.py` | - |\n"
        "| study/ | `run.py`, `missing.py` | what |\n"
    )
    assert index_problems(tmp_path) == [
        "the index links study/GONE.md, which does not exist",
        "the index lists study/missing.py, which does not exist",
        "the report study/REPORT.md is not linked from the index",
    ]
    (tmp_path / "other.py").write_text("")
    assert "the script other.py is not named in the index" in index_problems(tmp_path)
