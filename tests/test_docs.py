"""The documentation (docs/: the user guide, the protocol in chapters and the API reference) builds
with every warning an error: a docstring that Sphinx cannot read, a page that names a module that is
gone, a link to a page or a repository file that does not exist, or a page in no table of contents
fails here. The command is the one CONTRIBUTING.md, "Documentation", documents."""

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

# Sphinx's and myst-parser's deprecation notices to each other, not oodfs's
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::PendingDeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: README.md's sections before it became a front page (2026-11-29), and the page each moved to
#: with its first line: nothing of the old README is lost
README_SECTIONS = {
    "Set up and run": ("docs/guide/install.md", "Python ≥ 3.10 with pip. From a clone of this repository"),
    "Results": ("docs/guide/results.md", "The full default-profile grid as one page"),
    "Beyond the paper": ("docs/guide/findings.md", "Each with its tested verdicts (paired Wilcoxon"),
    "Command line": ("docs/guide/cli.md", "oodfs bench --suite NAME[,NAME...]|all [--quick]"),
    "Use it from Python": ("docs/guide/python.md", "import oodfs"),
    "Use it on your data": ("docs/guide/own-table.md", "Rank the features of your own table"),
    "Real-data suites": ("docs/guide/real-data.md", 'pip install -e ".[real]"` and `pip install --no-deps'),
    "Several labelled training environments": (
        "docs/guide/multienv.md",
        "Methods that learn from environment",
    ),
    "Add or change a method and compare": ("docs/guide/new-method.md", "Write a Selector in `mine.py`"),
    "Writing a plugin": ("docs/guide/plugins.md", 'See [CONTRIBUTING.md](../../CONTRIBUTING.md), "Writing a'),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from sphinx.cmd.build import build_main

    out = tmp_path_factory.mktemp("html")
    warnings = out / "warnings.txt"
    code = build_main(
        ["-W", "--keep-going", "-E", "-q", "-w", str(warnings), "-b", "html", str(DOCS), str(out)]
    )
    assert code == 0, warnings.read_text()
    return out


@pytest.mark.slow
def test_the_api_reference_builds_without_warnings(built):
    testing = (built / "api" / "testing.html").read_text()
    for name in (
        "check_selector",
        "check_selection_rule",
        "check_backend",
        "check_output_format",
        "check_command",
    ):
        assert f'id="oodfs.testing.{name}"' in testing, name
    contract = (built / "api" / "contract.html").read_text()
    for name in ("contract.api.Selector", "contract.extensions.Backend", "contract.hookspecs.oodfs_commands"):
        assert f'id="oodfs.{name}"' in contract, name
    assert 'id="oodfs.run.runner.run_suite"' in (built / "api" / "python.html").read_text()


@pytest.mark.slow
def test_every_guide_page_and_protocol_chapter_is_built_and_its_links_resolve(built):
    """Each markdown page is a page of the site, and every link of the guide and the protocol
    leads to a built page or to a file of the repository (a study's report, the results page)."""
    pages = [*DOCS.glob("guide/*.md"), *DOCS.glob("protocol/*.md"), DOCS / "PROTOCOL.md"]
    assert len(pages) >= 30
    for page in pages:
        html = built / page.relative_to(DOCS).with_suffix(".html")
        assert html.is_file(), f"{page.relative_to(ROOT)} is not built"
        for href in re.findall(
            r'<a class="reference (?:internal|external)" href="([^"#]+)', html.read_text()
        ):
            if re.match(r"[a-z]+:", href):
                continue
            assert (html.parent / unquote(href)).resolve().exists(), f"{html.name}: {href} leads nowhere"
    index = (built / "PROTOCOL.html").read_text()
    for chapter in sorted(DOCS.glob("protocol/*.md")):
        assert f'href="protocol/{chapter.stem}.html"' in index, chapter.name


def test_the_protocol_index_finds_every_section_and_heading_in_one_step():
    """docs/PROTOCOL.md lists each numbered section with its chapter file, the chapter's headings and
    its named paragraphs, so a citation "docs/PROTOCOL.md section N, "Name"" is found from it."""
    index = (DOCS / "PROTOCOL.md").read_text()
    chapters = sorted(DOCS.glob("protocol/*.md"))
    assert [int(c.name[:2]) for c in chapters] == list(range(1, len(chapters) + 1))
    for chapter in chapters:
        text = chapter.read_text()
        title = re.match(r"# (\d+)\. (.+)", text)
        assert title and int(title.group(1)) == int(chapter.name[:2]), chapter.name
        assert (
            f"- **§{title.group(1)}** [{title.group(1)}. {title.group(2)}](protocol/{chapter.name})" in index
        )
        entry = index.split(f"(protocol/{chapter.name})", 1)[1].split("\n- **§", 1)[0]
        outside_code = re.sub(r"```.*?```", "", text, flags=re.S)
        for heading in re.findall(r"^#{2,} (.+)$", outside_code, re.M):
            assert heading.strip() in entry, f"{chapter.name}: the index does not list {heading!r}"
        for name in re.findall(r"(?:^|\n\n)\*\*(.+?)\*\*", outside_code):
            assert name.rstrip(".:") in entry, f"{chapter.name}: the index does not list {name!r}"
    cited = set()
    for path in [*ROOT.glob("oodfs/**/*.py"), *ROOT.glob("plugins/**/*.py"), *ROOT.glob("tests/*.py")]:
        cited |= {int(n) for n in re.findall(r"PROTOCOL\.md,? sections? (\d+)", path.read_text())}
    assert cited and cited <= set(range(1, len(chapters) + 1)), sorted(cited)


def test_nothing_of_the_old_readme_is_lost():
    """Each section README.md had before it became a front page is in the guide, opening as it did."""
    for section, (page, first) in README_SECTIONS.items():
        assert first in (ROOT / page).read_text(), f"README's section {section!r} is not in {page}"
