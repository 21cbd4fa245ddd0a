"""A suite file named like a shipped suite is not that suite: its reference, timings and shift
diagnosis are never looked up by its name (docs/PROTOCOL.md section 6)."""

import shutil
from importlib import resources

import pytest

from oodfs.cli import main
from oodfs.report.site import RunInfo
from oodfs.run.progress import _reference_seconds
from oodfs.run.suite import load_suite


@pytest.fixture
def own_synthetic(tmp_path):
    path = tmp_path / "synthetic.toml"
    with resources.as_file(resources.files("oodfs.suites").joinpath("synthetic.toml")) as shipped:
        shutil.copy(shipped, path)
    return path


def test_a_suite_file_with_a_shipped_name_is_not_the_shipped_suite(own_synthetic):
    mine, shipped = load_suite(str(own_synthetic)), load_suite("synthetic")
    assert mine.name == shipped.name == "synthetic"
    assert shipped.shipped and not mine.shipped
    assert mine.to_dict()["shipped"] is False  # stored with each invocation
    assert _reference_seconds(shipped) is not None  # progress weighted by the shipped reference's times
    assert _reference_seconds(mine) is None  # not by a reference of another suite's


def test_reference_without_a_file_is_refused_for_a_suite_file(own_synthetic, tmp_path, capsys):
    code = main(["bench", "--suite", str(own_synthetic), "--methods", "lasso", "--reference", "--out",
                 str(tmp_path / "out")])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "is not one; give its reference file (--reference FILE)" in err[0]
    assert not (tmp_path / "out").exists()


def test_the_page_shows_no_shipped_diagnosis_for_a_suite_file(tmp_path):
    def info(suite):
        return RunInfo(tmp_path, "run", None, None, None, invocations=[{"suite": suite}])

    assert info({"name": "auto", "shipped": False}).from_suite_file
    assert not info({"name": "auto", "shipped": True}).from_suite_file
    assert not info({"name": "auto"}).from_suite_file  # stored before suites said: as then
