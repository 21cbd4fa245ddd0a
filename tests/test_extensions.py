"""Every extension point is a hook: selection rules, backends, leaderboard formats and commands come
from plugins as the methods do, are listed by `oodfs plugins`, and pass the conformance kit; a
third party adds each without editing oodfs."""

import sys
import textwrap

import pandas as pd
import pytest

from oodfs import testing as kit
from oodfs.contract.registry import registry
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report
from oodfs.results.store import load_results
from oodfs.run.runner import run_suite

from .conftest import assert_one_line, run_cli, tiny

#: a third party's plugin: one of each new kind
PLUGIN = '''
import pandas as pd

import oodfs
from oodfs.contract.extensions import Backend, BackendOption, Command, OutputFormat
from oodfs.contract.selection import SelectionRule
from oodfs.contract.task import TASK_KEY
from oodfs.report.escape import csv_frame


class WorstTestEnvironment(SelectionRule):
    """A rule with its own choose(): the grid point with the lowest worst-case test RMSE."""

    def choose(self, points: pd.DataFrame, rows=None, task="regression") -> pd.DataFrame:
        ranked = points.sort_values([*TASK_KEY, "rmse_max", "point"], kind="stable")
        return ranked.groupby(TASK_KEY, sort=False).head(1).reset_index(drop=True)


class Serial(Backend):
    """every job in this process, last one first (the order never changes a number)"""

    name = "serial"
    options = (BackendOption("reverse", "run the calls last first (yes or no)", lambda t: t == "yes"),)

    def run(self, fn, calls, *, jobs=1, reverse=True):
        for args in reversed(calls) if reverse else calls:
            yield fn(*args)


def tsv(board):
    return csv_frame(board.cells).to_csv(index=False, sep="\\t")


def hello(args):
    print(f"hello {args.who}")
    return 0


def hello_parser(sub):
    p = sub.add_parser("hello", help="say hello")
    p.add_argument("--who", default="world")


@oodfs.hookimpl
def oodfs_selection_rules():
    return [WorstTestEnvironment("worst-test", "lowest worst test RMSE (upper bound)", upper_bound=True)]


@oodfs.hookimpl
def oodfs_backends():
    return [Serial]


@oodfs.hookimpl
def oodfs_leaderboard_formats():
    return [OutputFormat("tsv", "cells, tab-separated", "csv", tsv, ".tsv")]


@oodfs.hookimpl
def oodfs_commands():
    return [Command("hello", "say hello", hello_parser, hello)]
'''


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    """The plugin above, installed (an entry point of a distribution on sys.path)."""
    from .conftest import make_distribution

    site = make_distribution(
        tmp_path / "site", "oodfs-extras", {"extras": "oodfs_extras"}, {"oodfs_extras": PLUGIN}
    )
    monkeypatch.syspath_prepend(str(site))
    sys.modules.pop("oodfs_extras", None)
    yield site
    sys.modules.pop("oodfs_extras", None)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return kit.hostile_results(tmp_path_factory.mktemp("hostile"))


def values(out) -> pd.Series:
    df = load_results(out)
    df = df[df["status"] == "ok"].assign(env=lambda d: d["env"].fillna(""))
    return df.set_index(["setting", "r_train", "run", "method", "point", "metric", "env", "k"])[
        "value"
    ].sort_index()


# -- the built-in ones pass the kit ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["val", "oracle", "default", "train-domain", "loeo"])
def test_builtin_rules_pass_the_kit(name):
    kit.check_selection_rule(registry().get("rule", name))


def test_builtin_commands_pass_the_kit():
    for command in registry().entries("command").values():
        kit.check_command(command.cls)


def test_local_backend_passes_the_kit():
    kit.check_backend(registry().get("backend", "local"), jobs=2)


@pytest.mark.slow
def test_jobqueue_backend_passes_the_kit_on_its_local_test_cluster(tmp_path):
    pytest.importorskip("dask_jobqueue")
    backend = registry().get("backend", "jobqueue")
    kit.check_backend(backend, jobs=2, system="local", shared_directory=str(tmp_path))
    assert not list(tmp_path.glob(".dask-jobqueue*"))  # the run's TLS certificates go with the run


# -- the kit can fail ----------------------------------------------------------------------------------
def test_the_kit_finds_a_format_that_does_not_escape(hostile):
    from oodfs.contract.extensions import OutputFormat

    raw = OutputFormat(
        "raw", "names as they are", "markdown", lambda b: "\n".join(b.report.results["method"])
    )
    with pytest.raises(AssertionError, match="check_format_escaping failed"):
        kit.check_output_format(raw, Leaderboard(Report.from_path(hostile)))


def test_the_kit_finds_a_rule_that_keeps_two_points_per_task():
    from oodfs.contract.selection import SelectionRule

    class Both(SelectionRule):
        def choose(self, points, rows=None, task="regression"):
            return points[points["point"] < 2]

    with pytest.raises(AssertionError, match="check_rule_one_row_per_task failed"):
        kit.check_selection_rule(Both("both", "two points per task"))


def test_the_kit_finds_a_backend_that_loses_a_call():
    from oodfs.contract.extensions import Backend

    class Lossy(Backend):
        """drops the last call"""

        name = "lossy"

        def run(self, fn, calls, *, jobs=1):
            return (fn(*args) for args in calls[:-1])

    with pytest.raises(AssertionError, match="check_backend_results failed: 5 results for 6 calls"):
        kit.check_backend(Lossy)


# -- a third party adds one of each, without editing oodfs --------------------------------------------
def test_plugins_lists_every_kind_of_a_third_party(third_party, capsys):
    import json

    code, out, err = run_cli(capsys, "plugins", "--json")
    assert code == 0, err
    mine = {(e["kind"], e["name"]) for e in json.loads(out) if e["package"] == "oodfs-extras"}
    assert mine == {
        ("selection_rule", "worst-test"),
        ("backend", "serial"),
        ("leaderboard_format", "tsv"),
        ("command", "hello"),
    }
    serial = next(e for e in json.loads(out) if e["name"] == "serial")
    assert serial["options"] == [{"name": "reverse", "help": "run the calls last first (yes or no)"}]


def test_a_third_party_command_runs_and_passes_the_kit(third_party, capsys):
    assert run_cli(capsys, "hello", "--who", "oodfs")[:2] == (0, "hello oodfs\n")
    kit.check_command(registry().get("command", "hello"))


def test_a_third_party_rule_format_and_backend_in_a_run(third_party, tmp_path, capsys):
    kit.check_selection_rule(registry().get("rule", "worst-test"))
    kit.check_backend(registry().get("backend", "serial"), reverse=True)
    run_suite(tiny(), tmp_path / "local", progress=False)
    run_suite(
        tiny(),
        tmp_path / "serial",
        backend_name="serial",
        backend_options=(("reverse", "yes"),),
        progress=False,
    )
    pd.testing.assert_series_equal(values(tmp_path / "local"), values(tmp_path / "serial"), check_exact=True)
    code, out, err = run_cli(
        capsys, "leaderboard", str(tmp_path / "serial"), "--selection", "worst-test", "--format", "tsv"
    )
    assert code == 0, err
    table = pd.read_csv(__import__("io").StringIO(out), sep="\t")
    assert set(table["method"]) == {"ols", "correlation"} and table["mean"].notna().all()
    report = Report.from_path(tmp_path / "serial", "worst-test")
    chosen = report.chosen.set_index(["run", "method"])["rmse_max"]
    best = report.points.groupby(["run", "method"])["rmse_max"].min()
    pd.testing.assert_series_equal(chosen.sort_index(), best.sort_index(), check_names=False)


def test_backend_options_are_checked_against_the_backend(third_party, capsys, tmp_path):
    suite = tmp_path / "tiny.toml"
    suite.write_text(
        textwrap.dedent("""
        environment = "synthetic"
        r_train = [2.5]
        r_test = [-2.0, 2.0]
        runs = 1
        n_train = 300
        n_val = 100
        n_test = 300
        k = 5
        methods = ["ols"]
        [settings.poly]
        params = { setting = "poly" }
        """)
    )
    bench = ["bench", "--suite", str(suite), "--out", str(tmp_path / "o"), "--quiet", "--jobs", "1"]
    result = run_cli(capsys, *bench, "--backend", "serial", "--backend-option", "speed=fast")
    assert_one_line(result, "--backend-option speed", "serial backend has no such option", "valid: reverse")
    result = run_cli(capsys, *bench, "--backend", "local", "--backend-option", "scheduler=tcp://x:1")
    assert_one_line(result, "local backend has no such option", "valid: none")
    assert_one_line(run_cli(capsys, *bench, "--backend", "nope"), "unknown backend 'nope'", "jobqueue")
    assert_one_line(run_cli(capsys, *bench, "--backend-option", "x"), "expected NAME=VALUE")
    assert not (tmp_path / "o").exists()


def test_a_broken_command_is_skipped_and_the_rest_works(tmp_path, monkeypatch, capsys):
    from .conftest import make_distribution

    broken = """
    import oodfs
    from oodfs.contract.extensions import Command

    def parser(sub):
        raise RuntimeError("no parser today")

    @oodfs.hookimpl
    def oodfs_commands():
        return [Command("broken", "never parses", parser, lambda args: 0)]
    """
    site = make_distribution(
        tmp_path / "site", "oodfs-broken", {"broken": "oodfs_broken"}, {"oodfs_broken": broken}
    )
    monkeypatch.syspath_prepend(str(site))
    with pytest.warns(UserWarning, match="'broken' failed to build its parser"):
        code, out, err = run_cli(capsys, "suites")
    assert code == 0 and "synthetic" in out


# -- the job-queue backend: the same numbers as a local run --------------------------------------------
@pytest.mark.slow
def test_jobqueue_backend_gives_the_numbers_of_a_local_run(tmp_path):
    pytest.importorskip("dask_jobqueue")
    run_suite(tiny(), tmp_path / "local", jobs=1, progress=False)
    run_suite(
        tiny(),
        tmp_path / "jq",
        jobs=2,
        backend_name="jobqueue",
        backend_options=(("system", "local"),),
        progress=False,
    )
    pd.testing.assert_series_equal(values(tmp_path / "local"), values(tmp_path / "jq"), check_exact=True)
