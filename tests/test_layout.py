"""The package's rooms and which way data flows between them (CONTRIBUTING, "Layout").

contract <- results <- report, and contract <- run: the report package can be read and tested
without the runner; nothing in the core imports a plugin. Every import counts, including those
inside functions.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "oodfs"

#: package -> the oodfs packages it must never import
FORBIDDEN = {
    "contract": ("oodfs.run", "oodfs.results", "oodfs.report", "oodfs.theory", "oodfs.commands"),
    "results": ("oodfs.run", "oodfs.report", "oodfs.theory", "oodfs.commands"),
    "report": ("oodfs.run", "oodfs.theory", "oodfs.commands"),
    "run": ("oodfs.report", "oodfs.theory", "oodfs.commands"),
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def modules_of(package: str) -> list[Path]:
    return sorted((PACKAGE / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_nothing_above_it(package):
    wrong = {
        f"{path.relative_to(PACKAGE.parent)} imports {name}"
        for path in modules_of(package)
        for name in imported_modules(path)
        if name.startswith(FORBIDDEN[package])
    }
    assert not wrong, sorted(wrong)


def test_no_core_module_imports_a_plugin():
    wrong = [
        str(path.relative_to(PACKAGE.parent))
        for path in sorted(PACKAGE.rglob("*.py"))
        if any(name.startswith("oodfs_plugins") for name in imported_modules(path))
    ]
    assert not wrong


def test_few_modules_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 8, top


def test_no_sql_outside_the_results_package():
    wrong = [
        str(path.relative_to(PACKAGE.parent))
        for path in sorted(PACKAGE.rglob("*.py"))
        if "sqlite3" in imported_modules(path) and path.parent.name != "results"
    ]
    assert not wrong
