"""Names are data: hostile method and setting names go through every command and format and come
out as text -- no markup, link, script or image in rendered markdown, no spreadsheet formula in
CSV, no LaTeX command, no terminal escape, no file outside the output folder -- and files planted
as links in a results folder are never written through."""

import contextlib
import csv
import io
import json
import os
import textwrap
from pathlib import Path

import pytest

from oodfs import testing as kit
from oodfs.cli import main
from oodfs.contract.registry import registry
from oodfs.report import escape

#: hostile names (no commas: a method list on the command line is comma-separated)
METHODS = {
    "formula": '=HYPERLINK("http://evil.example/x")',
    "script": "<script>alert(1)</script>",
    "image": "a`b![i](javascript:alert(1))`",
    "escape": "\x1b[31mred $\\alpha$ \u202eevil",
}
SETTINGS = ["../../escaped", "`](javascript:alert(2))<img src=x onerror=alert(3)>", "+cmd|' /C calc'!A0"]

PLUGIN = kit._HOSTILE_PLUGIN  # the kit's plugin of hostile method names


def run(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A results folder whose method and setting names are hostile (two runs: compare has pairs)."""
    root = tmp_path_factory.mktemp("hostile")
    plugin = root / "hostile_names.py"
    plugin.write_text(PLUGIN % list(METHODS.values()))
    settings = "\n".join(f'[settings.{escape_toml(s)}]\nparams = {{ setting = "poly" }}' for s in SETTINGS)
    suite = root / "hostile.toml"
    suite.write_text(
        textwrap.dedent(f"""
        environment = "synthetic"
        r_train = [2.5]
        r_test = [-2.0, 2.0]
        runs = 2
        n_train = 200
        n_val = 100
        n_test = 200
        k = 3
        methods = {escape_toml_list(["ols", *METHODS.values()])}
        """)
        + settings
        + "\n"
    )
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    out = deep / "out"
    code, stdout, err = run(
        "bench", "--suite", str(suite), "--plugin", str(plugin), "--out", str(out), "--jobs", "1"
    )
    assert code == 0, err
    return {"root": root, "out": out, "plugin": str(plugin), "stdout": stdout, "stderr": err}


def escape_toml(name: str) -> str:
    return json.dumps(name)  # a JSON string is a TOML basic string


def escape_toml_list(names) -> str:
    return "[" + ", ".join(escape_toml(n) for n in names) + "]"


def assert_inert_markdown(text: str) -> None:
    """Rendered as CommonMark with GitHub tables, the text holds only the tags a report uses, no
    link, and images only of the report's own figure files (the kit's check), and no raw escape."""
    kit._inert_markdown(text)
    assert "\x1b" not in text and "\u202e" not in text


def test_no_file_outside_the_output_folder(hostile):
    root = hostile["root"]
    outside = [p for p in root.rglob("*") if hostile["out"] not in [p, *p.parents]]
    assert sorted(str(p.relative_to(root)) for p in outside) == [
        "a",
        "a/b",
        "hostile.toml",
        "hostile_names.py",
    ]
    figures = hostile["out"] / "figures"
    assert all(escape.file_stem(p.name) == p.name for p in figures.iterdir())


def test_markdown_of_bench_leaderboard_and_compare_is_inert(hostile):
    out = hostile["out"]
    assert_inert_markdown(hostile["stdout"])
    assert_inert_markdown((out / "leaderboard.md").read_text())
    code, stdout, err = run("compare", str(out))
    assert code == 0, err
    assert_inert_markdown(stdout)
    assert_inert_markdown((out / "compare.md").read_text())
    assert [p for p in hostile["root"].rglob("*escaped*") if out not in p.parents] == []
    for p in (out / "figures").glob("feature_ranking-*.md"):
        assert_inert_markdown(p.read_text())


def test_csv_holds_no_formula_and_latex_no_command(hostile):
    code, text, err = run("leaderboard", str(hostile["out"]), "--format", "csv")
    assert code == 0, err
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r") and not _number(c)]
    assert "'" + METHODS["formula"] in cells and "\x1b" not in text
    code, latex, err = run("leaderboard", str(hostile["out"]), "--format", "latex")
    assert code == 0, err
    assert "\\alpha" not in latex.replace("\\textbackslash{}alpha", "") and "$\\alpha$" not in latex
    assert "\x1b" not in latex and "<script>" not in latex


@pytest.mark.parametrize("name", registry().names("format"))
def test_every_registered_format_shows_hostile_names_as_text(hostile, name):
    """Every leaderboard format, a plugin's too (`oodfs_leaderboard_formats`), by the escaping
    rules of its declared language (oodfs.testing.check_output_format)."""
    from oodfs.report.leaderboard import Leaderboard
    from oodfs.report.report import Report

    kit.check_output_format(registry().get("format", name), Leaderboard(Report.from_path(hostile["out"])))


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_plot_and_compare_write_where_told_and_only_there(hostile, tmp_path):
    before = sorted(p.relative_to(hostile["out"]) for p in hostile["out"].rglob("*"))
    target = tmp_path / "elsewhere"
    assert run("plot", str(hostile["out"]), "--out", str(target))[0] == 0
    assert run("compare", str(hostile["out"]), "--out", str(target))[0] == 0
    assert {p.name for p in target.iterdir()} == {"figures", "compare.md"}
    assert sorted(p.relative_to(hostile["out"]) for p in hostile["out"].rglob("*")) == before


def test_escape_functions_on_their_own():
    assert escape.md_code("a`b") == "``a`b``" and escape.md_code("`x") == "`` `x ``"
    assert escape.md_text("<b>|x|</b>") == "&lt;b>\\|x\\|&lt;/b>" and escape.md_text("<1950") == "<1950"
    assert (
        escape.csv_cell("=1+1") == "'=1+1" and escape.csv_cell("-x") == "'-x" and escape.csv_cell(2.5) == 2.5
    )
    assert escape.terminal("a\x1b[2Jb\rc") == "a\\x1b[2Jb\\x0dc"
    assert escape.latex("50% & $x_1$") == r"50\% \& \$x\_1\$"
    assert escape.file_stem("../../x") != "../../x" and "/" not in escape.file_stem("../../x")
    assert escape.file_stem("poly", "rmse_mean") == "poly_rmse_mean"
    with pytest.raises(escape.OodfsError, match="outside"):
        escape.inside("/tmp/out", "../elsewhere")


# -- links planted in a results folder -------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["results.lock", "leaderboard.md", "results.sqlite-wal", "results.parquet.tmp"]
)
def test_a_planted_symlink_is_never_written_through(hostile, tmp_path, name):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(hostile["out"], copy)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (copy / name).unlink(missing_ok=True)
    os.symlink(victim, copy / name)
    suite = hostile["root"] / "hostile.toml"
    code, _, err = run(
        "bench", "--suite", str(suite), "--plugin", hostile["plugin"], "--out", str(copy), "--resume"
    )
    assert code == 2 and "symbolic link" in err and len(err.strip().splitlines()) == 1, err
    assert victim.read_text() == "precious"


def test_a_report_file_that_is_a_link_is_refused(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    os.symlink(victim, tmp_path / "compare.md")
    with pytest.raises(escape.OodfsError, match="symbolic link"):
        escape.write_text(tmp_path / "compare.md", "x")
    os.link(victim, tmp_path / "hard.md")
    with pytest.raises(escape.OodfsError, match="plain file"):
        escape.write_text(tmp_path / "hard.md", "x")
    assert victim.read_text() == "precious"
    assert Path(escape.write_text(tmp_path / "fine.md", "ok")).read_text() == "ok"


def test_the_html_page_shows_control_characters_as_escapes(hostile):
    """A name's ESC and right-to-left override reach the page as visible escapes: raw, they
    would make one name display as another."""
    code, page, err = run("leaderboard", str(hostile["out"]), "--format", "html")
    assert code == 0, err
    assert "\x1b" not in page and "\u202e" not in page
    assert "\\x1b[31mred" in page and "\\u202eevil" in page


def test_select_prints_column_names_and_environment_labels_escaped(tmp_path):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 2)), columns=["a\x1b[31mRED", "ev\u202elig"])
    frame["y"] = frame.iloc[:, 0] + rng.normal(size=200)
    frame["env"] = np.where(np.arange(200) < 100, "e\x1b]0;title\x07", "e2")
    frame.to_csv(tmp_path / "t.csv", index=False)
    args = ["select", str(tmp_path / "t.csv"), "--target", "y", "--method", "ols", "--no-isolation"]
    code, out, err = run(
        *args, "--env-column", "env", "--train-envs", "e2", "--evaluate", "--downstream", "ridge"
    )
    assert code == 0, err
    for text in (out, err):
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text, text
    assert "a\\x1b[31mRED" in out and "ev\\u202elig" in out and "e\\x1b]0;title\\x07" in out


def test_short_names_are_cut_visible_and_distinct():
    long = "m" * 20_000
    shown = escape.short_names([long, long + "x", "ols", "\x1b[31m"])
    assert all(len(s) <= escape.DISPLAY_WIDTH for s in shown)
    assert len(set(shown)) == 4 and shown[2] == "ols" and shown[3] == "\\x1b[31m"
    assert shown[0].endswith("\u2026")


CD_FIGURE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (%d, %d))
import numpy as np, pandas as pd
from PIL import Image
from oodfs.report.stats import cd_diagram

rng = np.random.default_rng(0)
long = "m" * 20000
rows = [
    {"setting": "s", "r_train": r, "run": run, "method": m, "f1": rng.random()}
    for m in [long, long + "x", "ols", "dwr"] for r in range(3) for run in range(4)
]
png, _ = cd_diagram(pd.DataFrame(rows), "f1", False, sys.argv[1])
print(*Image.open(png).size)
"""


def test_a_20000_character_method_name_draws_a_figure_of_ordinary_size(tmp_path):
    """The critical-difference figure was sized by its labels (a 20 000-character name: > 6 GB);
    labels are cut for display, and the figure is drawn within the tests' memory limit."""
    import subprocess
    import sys

    from .hostile import MEMORY_LIMIT

    code = CD_FIGURE % (MEMORY_LIMIT, MEMORY_LIMIT)
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "cd")], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    width, height = map(int, proc.stdout.split())
    assert width < 3000 and height < 1000, (width, height)
