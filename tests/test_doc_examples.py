"""The code blocks of README.md, CONTRIBUTING.md and the pages under docs/ (the user guide, the
protocol's index and chapters), read from the files themselves (so the two cannot drift apart), run
as a reader would run them.

Every fenced block is claimed by exactly one rule below; a new block that no rule claims fails
:func:`test_every_block_is_run_or_checked`, so it gets a rule before it is merged.

Run as written, each in a temporary folder, in the order of the file:

* every ``python`` block: executed; a block that starts with ``# some/path.py`` is a file the
  reader writes, so it is written there and used by the blocks after it (CONTRIBUTING's plugin:
  listed by ``oodfs plugins --plugin``; its test file: run with pytest, every conformance check);
* the ``toml`` block (a plugin's ``pyproject.toml``): written beside the plugin and read as
  setuptools reads it when pip builds the package (schema-checked); its entry point must resolve
  to the plugin's module and hook, and the extra it names must exist (building a wheel here would
  need the ``wheel`` package or an online, isolated build);
* shell lines ``python -c ...``, ``ruff ...`` and the ``oodfs`` commands that finish in seconds
  (``select``, ``plugins``, ``suites``): run; the output block of ``oodfs select``
  (docs/guide/own-table.md) must be what that run printed, line for line (its ``...`` lines stand
  for rows left out).

Only checked, and why:

* ``pip install`` lines: installing needs the network and would change this environment; every
  extra they name must exist in pyproject.toml and the pinned torch must be the one installed;
* ``python -m pytest -q``: the test suite itself (this test is part of it); CI runs it through
  the README's test command (.ci/run reads it between the ``test-command`` markers), on several
  workers (pytest-xdist's ``-n``, from the ``dev`` extra), and CONTRIBUTING's copy of that
  command must be the same text;
* ``oodfs bench`` commands: a suite runs for minutes (the quick suite) to hours (the full grid),
  far beyond this test; each is parsed by oodfs's own parser (an unknown option or a bad value
  fails), its suite must exist, and a ``--plugin`` file it names must be one the docs show. The
  quick suite itself runs in tests/test_cli.py and tests/test_runner.py;
* ``python -m sphinx ...``: the documentation build, which tests/test_docs.py runs with warnings as
  errors; it must be the command the results page names (``oodfs.report.site.GUIDE_COMMAND``);
* ``python benchmarks/X.py``: benchmarks run for minutes; the script must exist;
* another slow ``oodfs`` command (``leaderboard`` of a whole reference) in a block marked not-run:
  parsed by oodfs's own parser;
* the command-line synopsis: every option it shows exists, and every option of a command is shown
  (:func:`test_the_synopsis_lists_every_option_and_only_real_ones`);
* CONTRIBUTING's layout list: compared with the source tree (:func:`test_the_layout_list_matches_the_tree`);
* a ``{toctree}`` block of docs/index.md: a Sphinx directive, which tests/test_docs.py builds.

On the pages under docs/ every block is executed (its python and its fast commands run, its output
block compared) unless the line before it says why not, ``<!-- not-run: REASON -->``, naming the
test that covers it where one does: a block that is only checked must carry that line, and a block
that runs must not (:func:`test_docs_blocks_run_or_say_why_not`).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
#: the pages of the user guide and the protocol (docs/), in the order a reader meets them
PAGES = tuple(
    p.relative_to(ROOT).as_posix()
    for p in [ROOT / "docs" / "index.md", ROOT / "docs" / "PROTOCOL.md"]
    + sorted((ROOT / "docs" / "guide").glob("*.md"))
    + sorted((ROOT / "docs" / "protocol").glob("*.md"))
)
DOCS = ("README.md", "CONTRIBUTING.md", *PAGES)
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: oodfs commands that finish in seconds: run as written
FAST_COMMANDS = {"select", "plugins", "suites"}
SYNOPSIS_OMITS: dict[str, set[str]] = {}  # options a command's synopsis may leave out (none today)


@dataclass(frozen=True)
class Block:
    doc: str
    index: int
    lang: str
    text: str
    line: int
    not_run: str | None = None  # the reason of a `<!-- not-run: REASON -->` line right before it

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(doc: str) -> list[Block]:
    from markdown_it import MarkdownIt

    source = (ROOT / doc).read_text()
    lines = source.splitlines()
    tokens = MarkdownIt().parse(source)
    fences = [t for t in tokens if t.type == "fence"]

    def not_run(start: int) -> str | None:
        marked = re.fullmatch(r"<!-- not-run: (.*) -->", lines[start - 1]) if start else None
        return marked.group(1).strip() if marked else None

    return [
        Block(doc, i, t.info.strip(), t.content, t.map[0] + 1, not_run(t.map[0]))
        for i, t in enumerate(fences)
    ]


ALL_BLOCKS = [b for doc in DOCS for b in blocks(doc)]


def shell_commands(text: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments dropped, `&&` split."""
    joined = text.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        line = re.split(r"\s{2,}#", line)[0].strip()
        out += [c.strip() for c in line.split(" && ") if c.strip()]
    return out


def kind(block: Block) -> str:
    """Which rule claims the block (module docstring)."""
    first = block.text.lstrip().splitlines()[0] if block.text.strip() else ""
    if block.lang == "python":
        return "python"
    if block.lang.startswith("{") and block.doc == "docs/index.md":
        return "directive"
    if block.lang == "toml" and first.startswith("# pyproject.toml"):
        return "pyproject"
    if block.lang == "":
        if first.startswith("oodfs/ "):
            return "layout"
        if first.startswith("oodfs bench --suite NAME"):
            return "synopsis"
        if first.startswith("oodfs: note:"):
            return "output"
        if all(c.split()[0] in ("pip", "python", "oodfs", "ruff") for c in shell_commands(block.text)):
            return "shell"
    return "unclaimed"


def test_every_block_is_run_or_checked():
    unclaimed = [b.id for b in ALL_BLOCKS if kind(b) == "unclaimed"]
    assert not unclaimed, f"blocks no rule of this test runs or checks: {unclaimed}"
    kinds = {kind(b) for b in ALL_BLOCKS}
    assert {"python", "pyproject", "layout", "synopsis", "output", "shell", "directive"} <= kinds


def executed(block: Block) -> bool:
    """Whether running the block (:func:`test_block_runs_as_written`) executes all of it: python,
    an output compared with what its command printed, or shell commands that all run."""
    if kind(block) in ("python", "output"):
        return True
    if kind(block) != "shell":
        return False  # a file's schema, a synopsis, a layout list, a directive: checked only
    return all(runs(command) for command in shell_commands(block.text))


def runs(command: str) -> bool:
    words = shlex.split(command)
    if words[0] in ("pip",) or words[:3] in (["python", "-m", "pytest"], ["python", "-m", "sphinx"]):
        return False
    if words[0] == "python":
        return not (len(words) > 1 and words[1].startswith("benchmarks/"))
    if words[0] == "oodfs":
        return words[1] in FAST_COMMANDS
    return words[0] == "ruff"


def test_docs_blocks_run_or_say_why_not():
    """Every block of the guide and the protocol runs, or says on the line before it why it does
    not (and what covers it); a block that runs does not claim otherwise. A test it names exists."""
    for block in (b for b in ALL_BLOCKS if b.doc in PAGES and kind(b) != "directive"):
        if executed(block):
            assert block.not_run is None, f"{block.id} runs here but is marked not-run: {block.not_run}"
            continue
        assert block.not_run, (
            f"{block.id} is not executed by this test: run it, or say why on the line before it "
            "(<!-- not-run: REASON -->)"
        )
        for path in re.findall(r"tests/test_\w+\.py", block.not_run):
            assert (ROOT / path).is_file(), f"{block.id}'s reason names {path}, which does not exist"


# -- running the blocks -------------------------------------------------------------------------------
def run(args, cwd, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, **kwargs)


def oodfs_args(command: str) -> list[str]:
    return shlex.split(command)[1:]


def check_pip_install(command: str) -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra_list in re.findall(r"\.\[([\w,-]+)\]", command):
        for extra in extra_list.split(","):
            assert extra in extras, (
                f"{command!r} names the extra {extra!r}; pyproject.toml has {sorted(extras)}"
            )
    pinned = re.search(r"torch==([\w.]+)", command)
    if pinned:
        import torch

        assert torch.__version__.split("+")[0] == pinned.group(1), (command, torch.__version__)
    for package in re.findall(r"--no-deps (\w+)", command):
        assert package in ("ISLP",), f"{command!r}: say why {package} is installed without its dependencies"


def check_pytest(command: str) -> None:
    """The suite as CI runs it (README's test command's pytest steps) or the same serially. CI's
    steps together run every test once: one step, or one with ``-m "not X"`` and one with ``-m X``."""
    steps = [c for c in shell_commands(README_TEST_COMMAND) if c.startswith("python -m pytest")]
    assert steps and all(s.startswith("python -m pytest -q") for s in steps), README_TEST_COMMAND
    options = [shlex.split(s)[3:] for s in steps]  # after "python -m pytest"
    marks = [o[o.index("-m") + 1] if "-m" in o else None for o in options]
    assert marks == [None] or (len(marks) == 2 and marks[0] == f"not {marks[1]}"), marks
    assert command in ("python -m pytest -q", *steps), command
    if "-n" in shlex.split(command):  # the workers' option comes from pytest-xdist
        assert any(r.startswith("pytest-xdist") for r in PYPROJECT["project"]["optional-dependencies"]["dev"])


def check_bench(command: str, folder: Path) -> None:
    from oodfs.cli import build_parser
    from oodfs.run.suite import load_suite

    try:
        args = build_parser().parse_args(oodfs_args(command))
    except SystemExit as exc:
        raise AssertionError(f"{command!r} does not parse (exit {exc.code})") from None
    from oodfs.commands.bench import bench_options
    from oodfs.run.bench import suite_entries

    for entry in suite_entries(bench_options(args)):  # a name, a comma list of them, or all
        load_suite(entry.suite)
    for plugin in args.plugin:
        assert plugin in PLUGIN_FILES, f"{command!r} names --plugin {plugin}, a file no block shows"


#: files a reader is told to write (blocks starting with `# path`) or that stand for one
PLUGIN_FILES = {
    "mine.py": "CONTRIBUTING.md's plugin, saved as mine.py (README: 'Write a Selector in mine.py')"
}


class Reader:
    """Runs one document's blocks in order in one folder, as a reader following it would."""

    def __init__(self, doc: str, folder: Path):
        self.doc, self.folder = doc, folder
        self.last_output: str | None = None

    def python(self, block: Block) -> None:
        first = block.text.splitlines()[0]
        path = re.fullmatch(r"# ([\w/]+\.py)", first)
        if path:  # a file the reader writes
            target = self.folder / path.group(1)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.parent.name != "tests":  # "my_package/ (which also holds an empty __init__.py)"
                (target.parent / "__init__.py").touch()
            target.write_text(block.text)
            self.file_written(path.group(1))
            return
        done = run([sys.executable, "-c", block.text], self.folder)
        assert done.returncode == 0, f"{block.id} fails as written:\n{done.stderr[-3000:]}"
        # an example runs clean, unless its warning is its point (the block says "# warns")
        warned = re.findall(r"^.*\w+Warning: .*$", done.stderr, re.M)
        assert not warned or "# warns" in block.text, f"{block.id} warns as written: {warned}"

    def file_written(self, path: str) -> None:
        if path.startswith("tests/"):  # the plugin's own tests: every conformance check passes
            done = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path], self.folder)
            assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
            assert re.search(r"\d+ passed", done.stdout) and "failed" not in done.stdout, done.stdout
        else:  # the plugin: `--plugin FILE` registers it
            done = run([sys.executable, "-m", "oodfs.cli", "plugins", "--plugin", path], self.folder)
            assert done.returncode == 0, done.stderr
            assert re.search(r"^selector\s+abscov\s", done.stdout, re.M), done.stdout

    def pyproject(self, block: Block) -> None:
        pytest.importorskip(
            "setuptools", reason="reads pyproject.toml as pip's build does (venvs of Python >= 3.12 lack it)"
        )
        (self.folder / "pyproject.toml").write_text(block.text)
        # read and validated as setuptools reads it when pip builds the package (its schema check
        # raises on a bad table); building needs `wheel` or an isolated, online build: not here
        read = (
            "import json, warnings; warnings.simplefilter('ignore');"
            "from setuptools.config.pyprojecttoml import read_configuration as r;"
            "c = r('pyproject.toml'); print(json.dumps([c['project'], c['tool']['setuptools']['packages']]))"
        )
        done = run([sys.executable, "-c", read], self.folder)
        assert done.returncode == 0, done.stderr[-3000:]
        project, packages = json.loads(done.stdout)
        assert "oodfs" in project["dependencies"]
        for requirement in project.get("optional-dependencies", {}).get("test", []):
            extra = re.fullmatch(r"oodfs\[(\w+)\]", requirement)
            assert extra and extra.group(1) in PYPROJECT["project"]["optional-dependencies"], requirement
        (module,) = project["entry-points"]["oodfs"].values()
        assert (
            module.split(".")[0] in packages and (self.folder / (module.replace(".", "/") + ".py")).is_file()
        )
        # the entry point resolves to a module whose hook returns the plugin
        hook = f"import {module} as m; print([c.name for c in m.oodfs_selectors()])"
        done = run([sys.executable, "-c", hook], self.folder)
        assert done.returncode == 0 and done.stdout.strip() == "['abscov']", done.stderr[-3000:]

    def shell(self, block: Block) -> None:
        outputs = []
        for command in shell_commands(block.text):
            words = shlex.split(command)
            if words[0] == "pip":
                check_pip_install(command)
            elif words[:3] == ["python", "-m", "pytest"]:
                check_pytest(command)
            elif words[:3] == ["python", "-m", "sphinx"]:  # the docs build: tests/test_docs.py runs it
                from oodfs.report.site import GUIDE_COMMAND

                assert command == GUIDE_COMMAND, (command, GUIDE_COMMAND)
            elif words[0] == "python" and len(words) > 1 and words[1].startswith("benchmarks/"):
                assert (ROOT / words[1]).is_file(), command
            elif words[0] == "ruff":  # the repository's style, as CI checks it
                done = run([sys.executable, "-m", "ruff", *words[1:]], ROOT)
                assert done.returncode == 0, f"{command!r}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            elif words[0] == "python":
                if "ISLP" in command:
                    pytest.importorskip(
                        "ISLP", reason="the bikeshare table ships with ISLP (pip install --no-deps ISLP)"
                    )
                done = run([sys.executable, *words[1:]], self.folder)
                assert done.returncode == 0, f"{command!r}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            elif words[:2] == ["oodfs", "bench"]:
                check_bench(command, self.folder)
            elif words[0] == "oodfs" and words[1] in FAST_COMMANDS:
                done = run([sys.executable, "-m", "oodfs.cli", *words[1:]], self.folder)
                assert done.returncode == 0, f"{command!r}:\n{done.stderr[-3000:]}"
                outputs.append(done.stderr + done.stdout)
            elif words[0] == "oodfs" and block.not_run:  # a slow command: it must parse
                from oodfs.cli import build_parser

                try:
                    build_parser().parse_args(words[1:])
                except SystemExit as exc:
                    raise AssertionError(f"{command!r} does not parse (exit {exc.code})") from None
            else:
                raise AssertionError(f"{block.id}: no rule for the command {command!r}")
        self.last_output = "\n".join(outputs) if outputs else None

    def output(self, block: Block) -> None:
        assert self.last_output is not None, f"{block.id}: an output block with no command run before it"
        printed = {line.rstrip() for line in self.last_output.splitlines()}
        shown = [line.rstrip() for line in block.text.splitlines() if line.strip() and line.strip() != "..."]
        missing = [line for line in shown if line not in printed]
        assert not missing, f"{block.id} shows lines the command does not print:\n" + "\n".join(missing)


README_TEST_COMMAND = next(
    b.text.strip()
    for b in ALL_BLOCKS
    if b.doc == "README.md" and b.text.strip().startswith("pip install") and "pytest" in b.text
)


@pytest.fixture(scope="module")
def readers(tmp_path_factory):
    return {doc: Reader(doc, tmp_path_factory.mktemp(re.sub(r"\W", "-", doc.lower()))) for doc in DOCS}


@pytest.mark.parametrize(
    "block",
    [b for b in ALL_BLOCKS if kind(b) in ("python", "pyproject", "shell", "output")],
    ids=lambda b: f"{b.id}-{kind(b)}",
)
def test_block_runs_as_written(block, readers):
    """Blocks run in file order (parametrize keeps it), each document in its own folder."""
    getattr(readers[block.doc], kind(block))(block)


# -- checked, not run -----------------------------------------------------------------------------------
def test_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "sed -n '/<!-- test-command -->/,/<!-- \\/test-command -->/p' README.md" in ci
    readme = (ROOT / "README.md").read_text()
    marked = re.search(r"<!-- test-command -->\n```\n(.*?)\n```\n<!-- /test-command -->", readme, re.S)
    assert marked and marked.group(1) == README_TEST_COMMAND
    contributing = [b.text.strip() for b in blocks("CONTRIBUTING.md")]
    assert README_TEST_COMMAND in contributing, "CONTRIBUTING shows CI's command as README has it"


def _synopsis() -> dict[str, set[str]]:
    text = next(b.text for b in ALL_BLOCKS if kind(b) == "synopsis")
    shown: dict[str, set[str]] = {}
    for line in text.splitlines():
        if line.startswith("oodfs "):
            command = line.split()[1]
            shown[command] = set()
        shown[command] |= set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line))
    return shown


def test_the_synopsis_lists_every_option_and_only_real_ones():
    from oodfs.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    shown = _synopsis()
    assert set(shown) == set(commands)
    for name, options in shown.items():
        actions = commands[name]._actions
        real = {
            o for a in actions if a.help != argparse.SUPPRESS for o in a.option_strings if o.startswith("--")
        }
        real.discard("--help")
        assert options <= real, (
            f"docs/guide/cli.md's synopsis of `oodfs {name}` shows options it does not have: {options - real}"
        )
        omitted = real - options - SYNOPSIS_OMITS.get(name, set())
        assert not omitted, f"docs/guide/cli.md's synopsis of `oodfs {name}` leaves out {sorted(omitted)}"


def _layout() -> dict[str, str]:
    """{path: description} of CONTRIBUTING's layout list (nesting by two-space indentation;
    a line indented as far as the descriptions continues the entry above)."""
    text = next(b.text for b in ALL_BLOCKS if kind(b) == "layout")
    entries: dict[str, str] = {}
    stack: list[str] = []
    last = None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        match = re.match(r"(\S+(?:, \S+)*)(?:\s{2,}(.*))?$", body)
        if indent >= 20 or match is None:
            entries[last] += " " + body
            continue
        stack = stack[: indent // 2]
        for name in match.group(1).split(", "):
            path = "/".join([*stack, name])
            assert path not in entries, f"the layout list names {path} twice"
            entries[path], last = match.group(2) or "", path
        if match.group(1).endswith("/"):
            stack.append(match.group(1).rstrip("/"))
    return entries


def test_the_layout_list_matches_the_tree():
    """Every entry exists; every package under oodfs/ and plugins/ is listed; in a folder whose
    modules the list enumerates, every module is named (as an entry or in an entry's text)."""
    entries = _layout()
    for path in entries:
        assert (ROOT / path).exists(), f"CONTRIBUTING's layout lists {path}, which does not exist"
    for top in ("oodfs", "plugins"):
        for init in (ROOT / top).rglob("__init__.py"):
            package = init.parent.relative_to(ROOT).as_posix() + "/"
            assert package in entries, f"CONTRIBUTING's layout does not list the package {package}"
    for folder in [p for p in entries if p.endswith("/")]:
        children = {p: d for p, d in entries.items() if p != folder and p.startswith(folder)}
        if not any(p.endswith(".py") for p in children):
            continue  # described as a whole
        text = " ".join(f"{p.rsplit('/', 1)[-1]} {d}" for p, d in children.items()) + " " + entries[folder]
        for module in sorted((ROOT / folder).glob("*.py")):
            if module.name == "__init__.py" and folder != "oodfs/":
                continue
            assert re.search(rf"(?<![\w.]){re.escape(module.name)}", text), (
                f"CONTRIBUTING's layout of {folder} does not name {module.name}"
            )


def test_docs_name_only_what_oodfs_exports():
    """`with_envs(Table(...))` once named a class `from oodfs import Table` cannot import: every
    `oodfs.NAME` the docs use exists."""
    import oodfs
    import oodfs.testing

    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for name in set(re.findall(r"(?<![\w.])oodfs\.([A-Za-z_]\w*)(?![\w/])", text)):
            if name in ("toml", "md", "py"):  # file names such as oodfs/suites/ames.toml
                continue
            assert (
                hasattr(oodfs, name)
                or (ROOT / "oodfs" / name).is_dir()
                or (ROOT / "oodfs" / f"{name}.py").is_file()
            ), f"{doc} uses oodfs.{name}, which oodfs does not have"
        for name in set(re.findall(r"oodfs\.testing\.(\w+)", text)):
            assert hasattr(oodfs.testing, name), f"{doc} uses oodfs.testing.{name}"
    assert "Table(path" not in (ROOT / "CONTRIBUTING.md").read_text()


def test_every_repository_path_the_docs_name_exists():
    # a reader's own files, and the pattern of a protocol chapter's name
    placeholders = {"oodfs/suites/NAME.toml", "tests/test_my_plugin.py", "docs/protocol/NN-name.md"}
    for doc in DOCS:
        text = (ROOT / doc).read_text()
        for path in set(
            re.findall(r"(?<![\w/])((?:benchmarks|docs|examples|oodfs|plugins|tests)/[\w./-]+)", text)
        ):
            path = path.rstrip(".")
            if path.startswith("docs/_build/"):  # what the documented docs build writes
                continue
            assert path in placeholders or (ROOT / path).exists(), f"{doc} names {path}, which does not exist"
