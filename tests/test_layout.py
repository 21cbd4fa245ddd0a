"""The package's rooms and which way data flows between them (CONTRIBUTING, "Layout").

contract <- results <- report, and contract <- run: the report package can be read and tested
without the runner; nothing in the core imports a plugin. The user's tables (``tables``: reading,
preparing, naming features) sit beside the contract: the runner and the reports use them, they use
neither (ranking a table's features is a use case of the runner, ``run/rank.py``), and no package
imports the deprecated ``oodfs.tabular``, which imports the runner. Every import counts, including
those inside functions.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "oodfs"

#: package -> the oodfs packages it must never import
FORBIDDEN = {
    "contract": (
        "oodfs.run",
        "oodfs.results",
        "oodfs.report",
        "oodfs.theory",
        "oodfs.commands",
        "oodfs.tables",
    ),
    "tables": ("oodfs.run", "oodfs.results", "oodfs.report", "oodfs.theory", "oodfs.commands"),
    "results": ("oodfs.run", "oodfs.report", "oodfs.theory", "oodfs.commands"),
    "report": ("oodfs.run", "oodfs.theory", "oodfs.commands"),
    "run": ("oodfs.report", "oodfs.theory", "oodfs.commands"),
}
#: module -> packages it may import although its package may not: the bench use case is where a run
#: meets its report (the outputs written after it), the one module of run that imports report
ALLOWED = {"run/bench.py": ("oodfs.report",)}
#: the deprecated module, kept for one release: it imports the runner, so no package may import it
DEPRECATED = ("oodfs.tabular",)


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
        if name.startswith(FORBIDDEN[package] + DEPRECATED)
        and not name.startswith(ALLOWED.get(str(path.relative_to(PACKAGE)), ()))
    }
    assert not wrong, sorted(wrong)


def test_the_exceptions_to_the_direction_are_the_ones_named():
    # an exception names a module that exists and imports what it is let import
    for module, packages in ALLOWED.items():
        names = imported_modules(PACKAGE / module)
        assert all(any(n.startswith(p) for n in names) for p in packages), module


def test_nothing_outside_the_command_line_imports_the_commands():
    """A script or a plugin that needs what a command does calls its use case (``oodfs.run.rank``,
    ``oodfs.run.bench``), never the command: the commands parse and print only."""
    roots = (PACKAGE, PACKAGE.parent / "plugins", PACKAGE.parent / "benchmarks")
    wrong = sorted(
        f"{path.relative_to(PACKAGE.parent)} imports {name}"
        for root in roots
        for path in sorted(root.rglob("*.py"))
        if path != PACKAGE / "cli.py" and (PACKAGE / "commands") not in path.parents
        for name in imported_modules(path)
        if name == "oodfs.commands" or name.startswith("oodfs.commands.")
    )
    assert not wrong, wrong


def test_the_commands_check_finds_an_import_of_a_command(tmp_path):
    script = tmp_path / "script.py"
    script.write_text("def f():\n    from oodfs.commands.bench import run\n")
    assert "oodfs.commands.bench" in imported_modules(script)
    script.write_text("from oodfs import commands\n")
    assert "oodfs.commands" in imported_modules(script)


def test_no_module_of_oodfs_or_its_plugins_imports_the_deprecated_tabular():
    roots = (PACKAGE, PACKAGE.parent / "plugins")
    wrong = [
        str(path.relative_to(PACKAGE.parent))
        for root in roots
        for path in sorted(root.rglob("*.py"))
        if path != PACKAGE / "tabular.py"
        and any(name.startswith(DEPRECATED) for name in imported_modules(path))
    ]
    assert not wrong, wrong


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


ENDS_BLOCK = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def unreachable(source: str, filename: str = "<string>") -> list[str]:
    """Statements after a ``return``, ``raise``, ``continue`` or ``break`` in the same block (code
    that never runs; a merge once left some after a ``return``, and the linter does not flag it)."""
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for stmt, after in zip(block, block[1:]):
                if isinstance(stmt, ENDS_BLOCK):
                    found.append(f"{filename}:{after.lineno} follows a {type(stmt).__name__.lower()}")
    return found


def test_the_dead_code_check_finds_dead_code():
    source = (
        "def f(x):\n    for y in x:\n        continue\n        print(y)\n"
        "    try:\n        return 1\n        x = 2\n    except E:\n        raise\n        pass\n"
        "    finally:\n        pass\n    return 3\n    f(x)\n"
    )
    assert sorted(int(hit.split(":")[1].split()[0]) for hit in unreachable(source)) == [4, 7, 10, 14]


def test_no_statement_follows_a_return_raise_continue_or_break():
    roots = (PACKAGE, PACKAGE.parent / "plugins")
    found = [
        hit
        for root in roots
        for path in sorted(root.rglob("*.py"))
        for hit in unreachable(path.read_text(), str(path.relative_to(PACKAGE.parent)))
    ]
    assert not found, found


CONTRACT = "oodfs.contract"


def contract_imports(source: str) -> set[str]:
    """The modules of oodfs.contract a module's source imports, at module level or inside a
    function. A module-level ``__getattr__`` is left out: it keeps an old import path working
    (``from oodfs.contract.tasks import get_task``) for callers outside the package and runs only
    when one of them asks for that name, never while oodfs.contract imports (CONTRIBUTING.md,
    "Layout")."""
    tree = ast.parse(source)
    shims = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
    skipped = {id(node) for shim in shims for node in ast.walk(shim)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["oodfs", "contract"] and len(parts) >= 3:
                found.add(parts[2])
    return found


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (module -> the modules it imports) as a path, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_scan_finds_a_cycle_through_a_function_level_import():
    a = "from oodfs.contract.b import x\n"
    b = "def f():\n    from oodfs.contract import a\n"
    shim = "def __getattr__(name):\n    from oodfs.contract.a import x\n    return x\n"
    assert import_cycle({"a": contract_imports(a), "b": contract_imports(b)}) == ["a", "b", "a"]
    assert import_cycle({"a": contract_imports(a), "b": contract_imports(shim)}) is None


def test_no_import_cycle_in_the_contract():
    """``registry`` imports the kinds' modules; none of them imports it back (the lookups
    ``get_task``, ``get_rule`` and ``rules`` live in the registry's module)."""
    modules = {p.stem: p for p in sorted((PACKAGE / "contract").glob("*.py"))}
    graph = {name: contract_imports(path.read_text()) & set(modules) for name, path in modules.items()}
    assert import_cycle(graph) is None, " -> ".join(import_cycle(graph))
