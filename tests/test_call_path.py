"""Following ``oodfs bench`` from the command line to the store enters no module more often than
benchmarks/call_path/CALL_PATH.md measured (issue 49): the measurement runs on the tiny suite in a
fresh process, and a module of the path entered through a new edge fails here, named with its
edges, instead of the path growing silently."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "call_path" / "call_path.py"
#: distinct (caller, callee) edges into one module along the path (CALL_PATH.md, "Definition")
BOUND = 4
#: the modules the path enters more often, each for reasons CALL_PATH.md names, at what it measured
CEILINGS = {"oodfs.run.suite": 10, "oodfs.validation": 5}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    out = tmp_path_factory.mktemp("call_path") / "call_path.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--json", str(out)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


def test_the_path_enters_no_module_more_often_than_measured(measured):
    modules = measured["phases"]["path"]["modules"]
    over = {
        name: [f"{e['caller']} -> {e['callee']}" for e in m["edges"]]
        for name, m in modules.items()
        if m["entries"] > CEILINGS.get(name, BOUND)
    }
    assert not over, over


def test_the_registrys_rule_and_task_are_looked_up_as_measured(measured):
    lookups = measured["phases"]["path"]["lookups"]
    assert lookups.get("get_rule", 0) <= 1 and lookups.get("get_task", 0) <= 1, lookups


def test_the_measurement_follows_the_whole_path(measured):
    """A tracer that saw nothing would pass the bound: the path reaches the use case, the runner
    and the store, the job runs in this process, the outputs come after."""
    phases = measured["phases"]
    assert measured["status"] == 0
    assert {"oodfs.run.bench", "oodfs.run.runner", "oodfs.results.store"} <= set(phases["path"]["modules"])
    assert "oodfs.run.evaluate" in phases["job"]["modules"]
    assert "oodfs.report.bench" in phases["after"]["modules"]
    assert "oodfs.commands.options" in phases["parse"]["modules"]
