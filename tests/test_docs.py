"""The API reference (docs/api) builds from the docstrings with every warning an error: a
docstring that Sphinx cannot read, or a page that names a module that is gone, fails here."""

from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs" / "api"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The mapping interface for autodoc options")  # napoleon's, not ours
def test_the_api_reference_builds_without_warnings(tmp_path):
    from sphinx.cmd.build import build_main

    warnings = tmp_path / "warnings.txt"
    code = build_main(
        ["-W", "--keep-going", "-E", "-q", "-w", str(warnings), "-b", "html", str(DOCS), str(tmp_path)]
    )
    assert code == 0, warnings.read_text()
    testing = (tmp_path / "testing.html").read_text()
    for name in (
        "check_selector",
        "check_selection_rule",
        "check_backend",
        "check_output_format",
        "check_command",
    ):
        assert f'id="oodfs.testing.{name}"' in testing, name
    contract = (tmp_path / "contract.html").read_text()
    for name in ("contract.api.Selector", "contract.extensions.Backend", "contract.hookspecs.oodfs_commands"):
        assert f'id="oodfs.{name}"' in contract, name
    assert 'id="oodfs.run.runner.run_suite"' in (tmp_path / "python.html").read_text()
