"""Every bad input a user can give -- command-line options, plugin files, output folders, results
files, suite files -- is answered with one line naming what is wrong and exit status 2, before
any work is done. The commands run in this process (``oodfs.cli.main``), which is what the
``oodfs`` script calls."""

import json
import os
import textwrap

import numpy as np
import pandas as pd
import pytest

from .conftest import TINY_SUITE_TOML, assert_one_line
from .conftest import run_cli as run
from .hostile import run_cases

SUITE = TINY_SUITE_TOML.format(runs=1)


def suite_with(tmp_path, *, drop=(), extra="", name="s") -> str:
    lines = [line for line in SUITE.splitlines() if line.split(" =")[0] not in drop]
    text = extra + "\n" + "\n".join(lines) if not extra.startswith("[") else "\n".join(lines) + "\n" + extra
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return str(path)


def plugin_file(tmp_path, code: str, name="plug.py", binary: bytes | None = None) -> str:
    path = tmp_path / name
    if binary is not None:
        path.write_bytes(binary)
    else:
        path.write_text(textwrap.dedent(code))
    return str(path)


NON_CLASS_PLUGIN = """
import oodfs
@oodfs.hookimpl
def oodfs_selectors():
    return [42]
"""


@pytest.fixture
def files(tmp_path):
    """Odd things to point options at."""
    (tmp_path / "existing.txt").write_text("x")
    (tmp_path / "garbage.parquet").write_bytes(os.urandom(500))
    pd.DataFrame({"a": [1, 2], "b": [3, 4]}).to_csv(tmp_path / "other.csv", index=False)
    rng = np.random.default_rng(0)
    table = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "y"])
    table.to_csv(tmp_path / "table.csv", index=False)
    table.assign(nested=[{"x": [1, 2]}] * 60).to_parquet(tmp_path / "nested.parquet")
    return tmp_path


BENCH = ["bench", "--quiet", "--jobs", "1"]


def _link(tmp_path, name: str, target: str) -> str:
    (tmp_path / name).symlink_to(target)
    return str(tmp_path / name)


def _fifo(tmp_path) -> str:
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return str(path)


CASES = {
    # --plugin
    "plugin raises at import": (
        lambda t: (
            BENCH + ["--suite", suite_with(t), "--out", str(t / "o"), "--plugin", plugin_file(t, "1 / 0")]
        ),
        ["failed to import", "ZeroDivisionError"],
    ),
    "plugin is not Python": (
        lambda t: (
            BENCH
            + [
                "--suite",
                suite_with(t),
                "--out",
                str(t / "o"),
                "--plugin",
                plugin_file(t, "", "bin.py", binary=b"\x7fELF\x02\x01\x00\x00"),
            ]
        ),
        ["bin.py", "failed to import"],
    ),
    "plugin is text, not Python": (
        lambda t: (
            BENCH
            + [
                "--suite",
                suite_with(t),
                "--out",
                str(t / "o"),
                "--plugin",
                plugin_file(t, "Remember: buy milk!\n", "notes.py"),
            ]
        ),
        ["notes.py", "not valid Python"],
    ),
    "plugin exits at import": (
        lambda t: (
            BENCH
            + [
                "--suite",
                suite_with(t),
                "--out",
                str(t / "o"),
                "--plugin",
                plugin_file(t, "import sys; sys.exit(3)"),
            ]
        ),
        ["sys.exit(3)"],
    ),
    "plugin returns a non-class": (
        lambda t: (
            BENCH
            + ["--suite", suite_with(t), "--out", str(t / "o"), "--plugin", plugin_file(t, NON_CLASS_PLUGIN)]
        ),
        ["42", "not a Selector subclass"],
    ),
    "plugin file missing": (
        lambda t: BENCH + ["--suite", suite_with(t), "--plugin", str(t / "nope.py")],
        ["does not exist"],
    ),
    # --out
    "out is /dev/null": (
        lambda t: BENCH + ["--suite", suite_with(t), "--out", "/dev/null"],
        ["not a folder"],
    ),
    "out is a file": (
        lambda t: BENCH + ["--suite", suite_with(t), "--out", str(t / "existing.txt")],
        ["not a folder"],
    ),
    "out name too long": (
        lambda t: BENCH + ["--suite", suite_with(t), "--out", str(t / ("x" * 300))],
        ["cannot create the output folder", "too long"],
    ),
    "out holds other files": (
        lambda t: BENCH + ["--suite", suite_with(t), "--out", str(t)],
        ["other files", "--out"],
    ),
    # other bench options
    "task timeout nan": (
        lambda t: BENCH + ["--suite", suite_with(t), "--task-timeout", "nan"],
        ["finite positive"],
    ),
    "task timeout inf": (
        lambda t: BENCH + ["--suite", suite_with(t), "--task-timeout", "inf"],
        ["finite positive"],
    ),
    "task timeout negative": (
        lambda t: BENCH + ["--suite", suite_with(t), "--task-timeout", "-1"],
        ["finite positive"],
    ),
    "task timeout without isolation": (
        lambda t: (
            BENCH + ["--suite", suite_with(t), "--out", str(t / "o"), "--task-timeout", "5", "--no-isolation"]
        ),
        ["--no-isolation"],
    ),
    "scheduler without dask": (
        lambda t: BENCH + ["--suite", suite_with(t), "--scheduler", "tcp://x:1"],
        ["--backend dask"],
    ),
    "jobs zero": (lambda t: BENCH + ["--suite", suite_with(t), "--jobs", "0"], ["positive integer"]),
    "r-train not numbers": (lambda t: BENCH + ["--suite", suite_with(t), "--r-train", "a,b"], ["numbers"]),
    "r-train set with an empty member": (
        lambda t: BENCH + ["--suite", suite_with(t), "--r-train", "1.5++2.0"],
        ["joined by '+'", "'1.5++2.0'"],
    ),
    # suite files
    "suite unknown key": (
        lambda t: BENCH + ["--suite", suite_with(t, extra="n_trian = 5")],
        ["unknown key 'n_trian'", "n_train"],
    ),
    "suite methods a string": (
        lambda t: BENCH + ["--suite", suite_with(t, drop=["methods"], extra='methods = "ols"')],
        ["methods must be a list"],
    ),
    "suite empty r_test": (
        lambda t: BENCH + ["--suite", suite_with(t, drop=["r_test"], extra="r_test = []")],
        ["r_test is empty"],
    ),
    "suite n_train a float": (
        lambda t: BENCH + ["--suite", suite_with(t, drop=["n_train"], extra="n_train = 1e11")],
        ["n_train must be a positive integer"],
    ),
    "suite n_train absurd": (
        lambda t: BENCH + ["--suite", suite_with(t, drop=["n_train"], extra="n_train = 100000000000")],
        ["n_train + n_val", "typo"],
    ),
    "suite runs zero": (
        lambda t: BENCH + ["--suite", suite_with(t, drop=["runs"], extra="runs = 0")],
        ["runs"],
    ),
    "suite k a boolean": (
        lambda t: BENCH + ["--suite", suite_with(t, drop=["k"], extra="k = true")],
        ["k must be"],
    ),
    "suite seed negative": (lambda t: BENCH + ["--suite", suite_with(t, extra="seed = -1")], ["seed"]),
    "suite environment a number": (
        lambda t: BENCH + ["--suite", suite_with(t, drop=["environment"], extra="environment = 3")],
        ["environment"],
    ),
    "suite unknown environment": (
        lambda t: BENCH + ["--suite", suite_with(t, drop=["environment"], extra='environment = "synthetc"')],
        ["unknown environment 'synthetc'", "synthetic"],
    ),
    "suite val rule without n_val": (
        lambda t: BENCH + ["--suite", suite_with(t, drop=["n_val"], extra='selection = "val"')],
        ["n_val"],
    ),
    "suite --selection val without n_val": (
        lambda t: BENCH + ["--suite", suite_with(t, drop=["n_val"]), "--selection", "val"],
        ["n_val"],
    ),
    "suite not TOML": (
        lambda t: BENCH + ["--suite", suite_with(t, extra="this is = = not toml")],
        ["not valid TOML"],
    ),
    "suite setting unknown key": (
        lambda t: BENCH + ["--suite", suite_with(t, extra="[settings.mlp]\nparms = {}")],
        ["unknown key 'parms'", "params"],
    ),
    "suite settings not a table": (
        lambda t: (
            BENCH + ["--suite", suite_with(t, drop=["[settings.poly]", "params"], extra="settings = 3")]
        ),
        ["settings"],
    ),
    "suite quick unknown key": (
        lambda t: BENCH + ["--suite", suite_with(t, extra="[quick]\nrunz = 1"), "--quick"],
        ["[quick]", "runz"],
    ),
    "suite curve methods a string": (
        lambda t: BENCH + ["--suite", suite_with(t, extra='[curve]\nmethods = "ols"')],
        ["curve.methods"],
    ),
    "suite missing key": (lambda t: BENCH + ["--suite", suite_with(t, drop=["n_test"])], ["n_test"]),
    "suite file missing": (lambda t: BENCH + ["--suite", str(t / "none.toml")], ["does not exist"]),
    # leaderboard / plot
    "leaderboard missing folder": (lambda t: ["leaderboard", str(t / "none")], ["does not exist"]),
    "leaderboard a text file": (
        lambda t: ["leaderboard", str(t / "existing.txt")],
        ["expected a results folder"],
    ),
    "leaderboard garbage parquet": (
        lambda t: ["leaderboard", str(t / "garbage.parquet")],
        ["cannot read", "garbage"],
    ),
    "leaderboard a foreign csv": (
        lambda t: ["leaderboard", str(t / "other.csv")],
        ["not an oodfs results table"],
    ),
    "leaderboard a folder of other files": (lambda t: ["leaderboard", str(t)], ["no results"]),
    "leaderboard bad format": (lambda t: ["leaderboard", str(t), "--format", "yaml"], ["invalid choice"]),
    "plot a text file": (lambda t: ["plot", str(t / "existing.txt")], ["expected a results folder"]),
    # select
    "select negative seed": (
        lambda t: ["select", str(t / "table.csv"), "--target", "y", "--method", "mi", "--seed", "-1"],
        ["--seed"],
    ),
    "select nested parquet": (
        lambda t: ["select", str(t / "nested.parquet"), "--target", "y", "--method", "ols"],
        ["nested"],
    ),
    "select unknown method": (
        lambda t: ["select", str(t / "table.csv"), "--target", "y", "--method", "nope"],
        ["unknown selector 'nope'"],
    ),
    "select missing target": (
        lambda t: ["select", str(t / "table.csv"), "--target", "z", "--method", "ols"],
        ["'z'"],
    ),
    # plugins
    "plugins missing module": (lambda t: ["plugins", "--plugin", "no_such_mod_zz"], ["no_such_mod_zz"]),
}


#: limits and suites that say less than they mean (each a one-line refusal before any work)
MANY_R = ",".join(str(1.5 + i / 100) for i in range(200))
CASES.update(
    {
        "runs absurd": (
            lambda t: BENCH + ["--suite", suite_with(t), "--runs", "1000000000"],
            ["runs is 1000000000", "limit of 10000", "OODFS_LIMITS=runs="],
        ),
        "suite runs absurd": (
            lambda t: BENCH + ["--suite", suite_with(t, drop=["runs"], extra="runs = 1000000000")],
            ["runs is 1000000000", "OODFS_LIMITS=runs="],
        ),
        "grid too large": (
            lambda t: BENCH + ["--suite", suite_with(t), "--runs", "2500", "--r-train", MANY_R],
            ["number of tasks", "is 1000000", "worker hours", "OODFS_LIMITS=tasks="],
        ),
        "jobs above the CPUs": (
            lambda t: BENCH[:2] + ["--suite", suite_with(t), "--jobs", "100000"],
            ["--force-jobs"],
        ),
        "k above the features": (
            lambda t: BENCH + ["--suite", suite_with(t, drop=["k"], extra="k = 1000"), "--out", str(t / "o")],
            ["k = 1000", "10 features"],
        ),
        "curve names a method the suite does not run": (
            lambda t: BENCH + ["--suite", suite_with(t, extra='[curve]\nmethods = ["srdo"]')],
            ["[curve] methods names 'srdo'", "ols"],
        ),
        "curve names an r_train the suite lacks": (
            lambda t: BENCH + ["--suite", suite_with(t, extra='[curve]\nmethods = ["ols"]\nr_train = [9.0]')],
            ["[curve] r_train names 9.0", "2.5"],
        ),
        "methods named twice": (
            lambda t: BENCH + ["--suite", suite_with(t), "--methods", "ols,ols"],
            ["'ols' twice"],
        ),
        "settings named twice": (
            lambda t: BENCH + ["--suite", suite_with(t), "--settings", "poly,poly"],
            ["settings names 'poly' twice"],
        ),
        "--no-reference-subsets without --reference": (
            lambda t: BENCH + ["--suite", suite_with(t), "--no-reference-subsets"],
            ["--no-reference-subsets needs --reference"],
        ),
        "a plugin module that registers nothing": (
            lambda t: BENCH + ["--suite", suite_with(t), "--out", str(t / "o"), "--plugin", "os"],
            ["--plugin os", "implements no oodfs hook"],
        ),
        "a run's table as --reference": (
            lambda t: BENCH + ["--suite", suite_with(t), "--reference", str(t / "garbage.parquet")],
            ["garbage.json is missing", "a reference is a .parquet file with its .json"],
        ),
        "a device as --reference": (
            lambda t: BENCH + ["--suite", suite_with(t), "--reference", "/dev/zero"],
            ["--reference /dev/zero is not a regular file"],
        ),
        "select on a device": (
            lambda t: ["select", _link(t, "zero.csv", "/dev/zero"), "--target", "y", "--method", "ols"],
            ["zero.csv is not a regular file"],
        ),
        "select on a pipe": (
            lambda t: ["select", _fifo(t), "--target", "y", "--method", "ols"],
            ["is not a regular file"],
        ),
        "suite r_train twice": (
            lambda t: BENCH + ["--suite", suite_with(t, drop=["r_train"], extra="r_train = [2.5, 2.50]")],
            ["r_train names 2.5 twice"],
        ),
        "out empty": (lambda t: BENCH + ["--suite", suite_with(t), "--out", ""], ["empty name"]),
        "methods empty": (
            lambda t: BENCH + ["--suite", suite_with(t), "--out", str(t / "o"), "--methods", ""],
            ["--methods is empty"],
        ),
        "select param of the wrong kind": (
            lambda t: [
                "select",
                str(t / "table.csv"),
                "--target",
                "y",
                "--method",
                "lasso",
                "--param",
                "alpha=true",
            ],
            ["'alpha' expects a number"],
        ),
    }
)


def test_a_run_stopped_before_its_first_task_leaves_no_store(tmp_path, monkeypatch, capsys):
    """An unreachable scheduler (or any stop before the first task) leaves the folder as it was:
    a plain rerun is not refused for results that do not exist."""
    from oodfs.run import runner

    def unreachable(*args, **kwargs):
        raise runner.OodfsError("cannot reach the dask scheduler 'tcp://nowhere:1'")

    monkeypatch.setattr(runner, "_dispatch", unreachable)
    out = tmp_path / "o"
    assert_one_line(run(capsys, *BENCH, "--suite", suite_with(tmp_path), "--out", str(out)), "cannot reach")
    assert not (out / "results.sqlite").exists()
    monkeypatch.undo()
    code, _, err = run(capsys, *BENCH, "--suite", suite_with(tmp_path), "--out", str(out))
    assert code == 0, err


def test_non_string_column_names_and_huge_values_are_one_line():
    import oodfs

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", 1, 2.5])
    y = rng.normal(size=60)
    for name in ("ols", "xgb"):
        with pytest.raises(oodfs.OodfsError, match="column names must all be strings"):
            oodfs.get_selector(name)(k=2).fit(X, y)
    X.columns = ["a", "b", "c"]
    X.iloc[0, 0] = 1e300
    with pytest.raises(oodfs.OodfsError, match="beyond what float32 models"):
        oodfs.get_selector("xgb")(k=2).fit(X, y)


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_exit_2(case, files, capsys):
    args, needles = CASES[case]
    assert_one_line(run(capsys, *args(files)), *needles)


def test_leaderboard_output_into_a_missing_folder(files, capsys, tmp_path):
    out = tmp_path / "res"
    assert run(capsys, *BENCH, "--suite", suite_with(tmp_path), "--out", str(out), "--methods", "ols")[0] == 0
    result = run(capsys, "leaderboard", str(out), "--output", str(tmp_path / "missing" / "board.md"))
    assert_one_line(result, "cannot write --output", "missing")


def test_an_installed_plugin_returning_a_non_class_is_skipped_with_one_warning(tmp_path):
    import subprocess
    import sys

    from .conftest import make_distribution

    site = make_distribution(
        tmp_path / "site", "oodfs-odd", {"odd": "oodfs_odd"}, {"oodfs_odd": NON_CLASS_PLUGIN}
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "oodfs.cli", "plugins"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0 and "ols" in proc.stdout  # every other command keeps working
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("oodfs: warning:"), proc.stderr
    assert "oodfs-odd" in lines[0] and "42" in lines[0]


def test_a_suite_without_n_val_runs_end_to_end(tmp_path, capsys):
    out = tmp_path / "out"
    code, board, err = run(capsys, *BENCH, "--suite", suite_with(tmp_path, drop=["n_val"]), "--out", str(out))
    assert code == 0, err
    assert "Model selection: **default**" in board and "| ols" in board
    code, board, err = run(capsys, "leaderboard", str(out))  # the stored rule, not `val`
    assert code == 0 and "Model selection: **default**" in board, err


def test_a_relative_table_path_is_relative_to_the_suite_file(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "study"
    folder.mkdir()
    rng = np.random.default_rng(1)
    n = 240
    X = rng.normal(size=(n, 3))
    env = np.repeat(["A", "B"], n // 2)
    pd.DataFrame(
        {"x1": X[:, 0], "x2": X[:, 1], "x3": X[:, 2], "y": X[:, 0] + rng.normal(size=n) * 0.3, "period": env}
    ).to_csv(folder / "data.csv", index=False)
    (folder / "mine.toml").write_text(
        textwrap.dedent("""
        environment = "table"
        r_train = ["A"]
        r_test = ["B"]
        n_train = 100
        n_val = 20
        n_test = 1000
        k = 2
        methods = ["ols"]
        [settings.t.params]
        path = "data.csv"
        target = "y"
        env_column = "period"
    """)
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, board, err = run(capsys, *BENCH, "--suite", str(folder / "mine.toml"), "--out", "out")
    assert code == 0, err
    assert "| ols" in board


def test_complex_scores_or_weights_are_refused_not_truncated():
    """float() would drop the imaginary part silently; a plugin returning complex numbers is told."""
    import numpy as np

    from oodfs import OodfsError
    from oodfs.contract.api import check_scores, check_weights

    with pytest.raises(OodfsError, match="returned complex scores"):
        check_scores(np.array([1 + 1j, 2.0]), 2, "selector 'mine'")
    with pytest.raises(OodfsError, match="returned complex weights"):
        check_weights(np.array([1 + 0j, 2.0]), 2, "weighter 'mine'")


# -- hostile inputs: each bounded before work starts, one line, under a memory limit ------------------
WRONG_SCORES = """
import numpy as np
import oodfs

class WrongScores(oodfs.Selector):
    "sets scores_ itself, two of them whatever the table"
    name = "wrong_scores"

    def fit(self, X, y, sample_weight=None):
        self.scores_ = np.ones(2)
        return self

@oodfs.hookimpl
def oodfs_selectors():
    return [WrongScores]
"""


def _table_suite(folder, path: str, name="t") -> str:
    """A suite file in ``folder`` that reads the table at ``path`` (as written in the file)."""
    suite = folder / f"{name}.toml"
    suite.write_text(
        textwrap.dedent(f"""
        environment = "table"
        r_train = ["A"]
        r_test = ["B"]
        n_train = 50
        n_val = 10
        n_test = 100
        k = 2
        methods = ["ols"]
        [settings.t.params]
        path = {json.dumps(path)}
        target = "y"
        env_column = "period"
    """)
    )
    return str(suite)


def _hostile_files(t) -> dict:
    """``{case: (argv, needles)}``: hostile suite files, tables and options, written into ``t``."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "y"])
    frame["period"] = np.repeat(["A", "B"], 40)
    frame.to_csv(t / "table.csv", index=False)
    huge = "1" + "0" * 400  # 10**400: beyond float
    (t / "huge.csv").write_text(
        "a,b,y\n" + "".join(f"{huge if i == 3 else i % 7},{i % 5},{i}\n" for i in range(40))
    )
    (t / "huge_int.csv").write_text(
        "g,b,y\n" + "".join(f"{huge if i == 3 else i % 3},{i % 5},{i}\n" for i in range(40))
    )
    names = [f"c{i}" for i in range(10**6)]
    (t / "wide.csv").write_text(",".join(names + ["c5"]) + "\n" + ",".join(["1"] * (len(names) + 1)) + "\n")
    (t / "plug.py").write_text(WRONG_SCORES)
    outside = t / "outside"
    outside.mkdir()
    frame.to_csv(outside / "secret.csv", index=False)
    study = t / "study"
    study.mkdir()
    (study / "link.csv").symlink_to(outside / "secret.csv")
    select = ["select", str(t / "table.csv"), "--target", "y", "--method", "ols"]
    deep = "[" * 1000 + "2.5" + "]" * 1000
    many = ", ".join(str(i) for i in range(2, 10**5 + 2))  # under the limit of a suite file's size
    many_test = ", ".join(str(-i) for i in range(2, 10**5 + 2))
    member_set = "[" + ", ".join(str(1.5 + i / 1000) for i in range(1000)) + "]"
    settings = "".join(f'[settings.s{i}]\nparams = {{ setting = "poly" }}\n' for i in range(10**4))
    return {
        "suite arrays 1000 deep": (
            ["--suite", suite_with(t, name="h1", drop=["r_train"], extra=f"r_train = {deep}")],
            ["nests"],
        ),
        "suite arrays 9 deep": (
            ["--suite", suite_with(t, name="h2", drop=["r_train"], extra=f"r_train = {'[' * 9}2.5{']' * 9}")],
            ["more than 8 deep", "OODFS_LIMITS=nesting"],
        ),
        "100000 r_train values": (
            ["--suite", suite_with(t, name="h3", drop=["r_train"], extra=f"r_train = [{many}]")],
            ["number of r_train values is 100000", "OODFS_LIMITS=r_train=100000"],
        ),
        "100000 r_test values": (
            ["--suite", suite_with(t, name="h4", drop=["r_test"], extra=f"r_test = [{many_test}]")],
            ["number of r_test values is 100000"],
        ),
        "10000 settings": (
            ["--suite", suite_with(t, name="h5", drop=["[settings.poly]", "params"], extra=settings)],
            ["number of settings", "is 10000"],
        ),
        "a set of 1000 environments": (
            ["--suite", suite_with(t, name="h6", drop=["r_train"], extra=f"r_train = [{member_set}]")],
            ["number of environments in the r_train set", "is 1000"],
        ),
        "a 401-member --r-train set": (
            ["--suite", suite_with(t), "--r-train", "+".join(str(1.5 + i / 100) for i in range(401))],
            ["is 401", "OODFS_LIMITS=set_members"],
        ),
        "a grid of evaluations": (
            [
                "--suite",
                suite_with(
                    t,
                    name="g101",
                    drop=["r_test"],
                    extra=f"r_test = [{', '.join(str(-1.5 - i / 10) for i in range(900))}]",
                ),
                "--runs",
                "9000",
            ],
            ["test evaluations", "worker hours"],
        ),
        "unknown key in params": (
            [
                "--suite",
                suite_with(
                    t,
                    name="g102",
                    drop=["[settings.poly]", "params"],
                    extra='[settings.poly]\nparams = { setting = "poly", bogus = 1 }',
                ),
            ],
            ["has no parameter 'bogus'", "valid: clip", "setting"],
        ),
        "NUL in a table path": (["--suite", _table_suite(t, "a\0b.csv", "nul")], ["NUL"]),
        "a table path ../": (
            ["--suite", _table_suite(study, "../outside/secret.csv", "up")],
            ["outside the suite file's folder", "--tables-anywhere"],
        ),
        "an absolute table path": (
            ["--suite", _table_suite(study, str(outside / "secret.csv"), "abs")],
            ["outside the suite file's folder"],
        ),
        "a symlink out": (
            ["--suite", _table_suite(study, "link.csv", "link")],
            ["outside the suite file's folder"],
        ),
        "select: NUL in the file name": (["select", "a\0b.csv", "--target", "y", "--method", "ols"], ["NUL"]),
        "select: --param 30000 deep": (
            select + ["--param", "alpha=" + "[" * 30000 + "]" * 30000],
            ["--param alpha", "too deeply"],
        ),
        "select: --param 9 deep": (
            select + ["--param", "alpha=" + "[" * 9 + "]" * 9],
            ["--param alpha", "more than 8 deep"],
        ),
        "select: a cell of 10**400": (
            ["select", str(t / "huge.csv"), "--target", "y", "--method", "ols"],
            ["'a'", "infinite"],
        ),
        "select: 10**6 columns": (
            ["select", str(t / "wide.csv"), "--target", "c1", "--method", "ols"],
            ["number of columns", "is 1000001", "OODFS_LIMITS=columns"],
        ),
        "select: scores of the wrong length": (
            select[:-1] + ["wrong_scores", "--plugin", str(t / "plug.py")],
            ["selector 'wrong_scores'", "returned 2 scores for"],
        ),
    }


def test_hostile_inputs_are_one_line_under_a_memory_limit(tmp_path):
    """Each case ends in one line (exit status 2) before any work, in one process limited to
    MEMORY_LIMIT of address space: a regression that recurses, loops or allocates without bound
    fails here instead of taking the machine."""
    cases = _hostile_files(tmp_path)
    argv = {
        name: (a if a[0] == "select" else [*BENCH, *a, "--out", str(tmp_path / "o")])
        for name, (a, _) in cases.items()
    }
    results = run_cases(argv)
    wrong = {}
    for name, (_, needles) in cases.items():
        status, err = results[name]
        lines = [line for line in err.splitlines() if line.strip()]
        if status != 2 or len(lines) != 1 or "Traceback" in err or not all(n in err for n in needles):
            wrong[name] = (status, err[-600:])
    assert not wrong, wrong
    assert not (tmp_path / "o").exists()


def test_a_header_of_a_million_names_is_read_in_linear_time(tmp_path):
    """With the column limit raised, the duplicate-name check of 10**6 names is one pass (it was
    quadratic: 10**5 names took minutes), and names the repeated column."""
    names = [f"c{i}" for i in range(10**6)]
    (tmp_path / "wide.csv").write_text(
        ",".join(names + ["c5"]) + "\n" + ",".join(["1"] * (len(names) + 1)) + "\n"
    )
    env = {**os.environ, "OODFS_LIMITS": "columns=2000000"}
    argv = {"wide": ["select", str(tmp_path / "wide.csv"), "--target", "c1", "--method", "ols"]}
    status, err = run_cases(argv, env=env, timeout=120)["wide"]
    assert status == 2 and "'c5' appear more than once" in err and len(err.strip().splitlines()) == 1, err


def test_tables_anywhere_lets_a_suite_read_outside_its_folder(tmp_path, capsys):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(240, 3)), columns=["a", "b", "y"])
    frame["period"] = np.repeat(["A", "B"], 120)
    frame.to_csv(tmp_path / "table.csv", index=False)
    study = tmp_path / "study"
    study.mkdir()
    suite = _table_suite(study, "../table.csv")
    code, board, err = run(
        capsys, *BENCH, "--suite", suite, "--out", str(tmp_path / "o"), "--tables-anywhere"
    )
    assert code == 0, err
    assert "| ols" in board


def test_a_column_near_the_float_limit_is_ranked_not_silently_left_out():
    """Values of +-1.7e308 are finite: standardised (by powers of two, without computing 2**1024)
    the column is fitted like any other, not left out as "fewer than 10 rows differ"."""
    import warnings

    from oodfs.run.rank import rank_features

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 3)), columns=["a", "b", "c"])
    frame["y"] = frame["a"] + 0.1 * rng.normal(size=200)
    frame["a"] = np.sign(frame["a"]) * 1.7e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning on the way either
        ranking = rank_features(frame, "y", "correlation", top_k=2, isolate=False).ranking
    assert ranking.set_index("feature").loc["a", "score"] > 0.5
    assert ranking.iloc[0]["feature"] == "a"
