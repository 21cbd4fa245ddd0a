"""How many times `oodfs bench` enters each oodfs module on its way from the command line to the
results store (issue 49; CALL_PATH.md gives the definition, the tables and the reading).

``oodfs bench`` runs in this process (``oodfs.cli.main``) on a tiny suite, one job at a time with
the local backend (``--jobs 1``: the jobs run in this process, so the whole path is seen), traced
with ``sys.setprofile`` (main thread only). Each call of a function of an ``oodfs`` module is
attributed to its caller, the nearest frame below it in oodfs or its plugins (``oodfs_plugins``);
frames of other libraries (contextlib, argparse, dataclasses' generated methods, pandas) are passed
through, so ``with store.lock()`` is a call of the function that wrote it. An *entry* into a
module is a distinct (caller function, callee function) edge whose caller is in another module
or outside oodfs; the *events* are the calls themselves, every time they happen. Not counted:
code run by imports (module bodies, what they call, a module's ``__getattr__`` asked for
``__path__`` by ``from module import name``), generated code (a dataclass's ``__init__``), a
generator resumed (only its first call). A comprehension or a lambda calls as the function it is
written in. *Callers* counts the distinct functions that enter a module (``registry().get(...)``
is two entries from one caller). Four phases: ``parse``, from ``main`` until the command runs (the
parser of every command built, the arguments parsed); ``path``, from the command's ``run`` until
the pool (``oodfs.run.runner.run_suites``) returns and the stores are closed; ``job``, what the
jobs run (below ``oodfs.run.runner.run_pool_job``; in a worker process with ``--jobs`` above 1;
each fit in a forked child, not traced); ``after``, the parent once the stores are closed
(results.parquet, the leaderboard, the last lines).

    python benchmarks/call_path/call_path.py                  # the tables, tiny suite
    python benchmarks/call_path/call_path.py --edges oodfs.run.runner   # one module's edges
    python benchmarks/call_path/call_path.py --json FILE      # everything, as JSON
    python benchmarks/call_path/call_path.py --bound 4        # exit 1 if a module of the path exceeds it
    python benchmarks/call_path/call_path.py -- --suite synthetic --quick --methods ols,correlation

Arguments after ``--`` replace the suite options (``--suite FILE`` by default, the tiny suite
below); ``--jobs 1 --no-figures --out TEMP`` are always added.
"""

from __future__ import annotations

import argparse
import dis
import importlib
import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

#: the tiny suite: the command-line tests' smallest synthetic suite (tests/conftest.py), one run
TINY_SUITE = """
environment = "synthetic"
r_train = [2.5]
r_test = [-2.0, 2.0]
runs = 1
n_train = 300
n_val = 100
n_test = 300
k = 5
methods = ["ols", "correlation"]
[settings.poly]
params = { setting = "poly" }
"""

#: the registry's lookups counted apart (the earlier reading counted them)
LOOKUPS = ("get_rule", "get_task")
PHASES = ("parse", "path", "job", "after")
_GENERATOR = 0x20 | 0x80 | 0x200  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
_RESUME = dis.opmap["RESUME"]


def _enclosing(qualname: str) -> str:
    """A comprehension's or lambda's function: the one it is written in (3.12 inlines comprehensions)."""
    head, sep, tail = qualname.partition(".<locals>.<")
    return head if sep and tail.startswith(_INLINE) else qualname


_INLINE = ("listcomp", "dictcomp", "setcomp", "genexpr", "lambda")


def _project(module: str) -> bool:
    return module == "oodfs" or module.startswith(("oodfs.", "oodfs_plugins"))


class CallPath:
    """The profile function: call edges into oodfs modules, by phase."""

    def __init__(self):
        import _frozen_importlib

        from oodfs.run import runner

        self.importing_code = _frozen_importlib._find_and_load.__code__
        self.job_code = runner.run_pool_job.__code__
        self.pool_code = runner.run_suites.__code__
        self.parsing = True  # until the command runs: the parser built and the arguments parsed
        self.importing = 0  # depth of imports under way
        self.job = 0  # depth of run_pool_job frames
        self.after = False  # the pool has returned: its stores are closed
        self.edges = {p: Counter() for p in PHASES}  # (caller mod, caller fn, callee mod, callee fn) -> calls
        self.lookups = {p: Counter() for p in PHASES}
        self._generators: dict = {}

    def _resumed(self, frame) -> bool:
        code = frame.f_code
        if not code.co_flags & _GENERATOR:
            return False
        raw = self._generators.get(code)
        if raw is None:
            raw = self._generators[code] = code.co_code
        i = frame.f_lasti
        return raw[i] == _RESUME and raw[i + 1] != 0

    def __call__(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code is self.importing_code:
                self.importing += 1
                return
            if code is self.job_code:
                self.job += 1
            if self.importing:
                return
            module = frame.f_globals.get("__name__") or ""
            if not (module == "oodfs" or module.startswith("oodfs.")):
                return
            if self.parsing and module == "oodfs.commands.bench" and code.co_name == "run":
                self.parsing = False  # the command runs (its module, by name: only cli.py imports it)
            if code.co_filename.startswith("<") or code.co_name == "<module>" or self._resumed(frame):
                return
            if code.co_qualname == "__getattr__" and frame.f_locals.get(code.co_varnames[0]) == "__path__":
                return  # ``from module import name`` asks a module's __getattr__ whether it is a package
            caller, caller_fn = "(outside)", ""
            f = frame.f_back
            while f is not None:
                name = f.f_globals.get("__name__") or ""
                if _project(name) and not f.f_code.co_filename.startswith("<"):
                    caller, caller_fn = name, _enclosing(f.f_code.co_qualname)
                    break
                f = f.f_back
            phase = "job" if self.job else "after" if self.after else "parse" if self.parsing else "path"
            if code.co_name in LOOKUPS and module == "oodfs.contract.registry":
                self.lookups[phase][code.co_name] += 1
            if caller != module:
                self.edges[phase][caller, caller_fn, module, code.co_qualname] += 1
        elif event == "return":
            code = frame.f_code
            if code is self.importing_code:
                self.importing -= 1
            elif code is self.job_code:
                self.job -= 1
            elif code is self.pool_code and not self.job:
                self.after = True

    def summary(self) -> dict:
        """Per phase: each module's entries (distinct edges, from oodfs and from outside or from
        plugins) and events (calls from another module), the lookups, and every edge."""
        out = {}
        for phase in PHASES:
            modules = defaultdict(
                lambda: {"entries": 0, "callers": 0, "from_plugins": 0, "events": 0, "edges": []}
            )
            for (caller, caller_fn, module, fn), n in sorted(self.edges[phase].items()):
                m = modules[module]
                m["events"] += n
                if caller.startswith("oodfs_plugins"):
                    m["from_plugins"] += 1
                else:
                    m["entries"] += 1
                m["edges"].append({"caller": f"{caller}:{caller_fn}".rstrip(":"), "callee": fn, "calls": n})
            for m in modules.values():
                m["callers"] = len({e["caller"] for e in m["edges"] if not e["caller"].startswith("oodfs_")})
            ordered = sorted(modules.items(), key=lambda kv: (-kv[1]["entries"], -kv[1]["events"], kv[0]))
            out[phase] = {"modules": dict(ordered), "lookups": dict(self.lookups[phase])}
        return out


def measure(args: list[str]) -> dict:
    """``oodfs bench ARGS --jobs 1 --no-figures --out TEMP`` in this process, traced; the summary
    (:meth:`CallPath.summary`) and the exit status. Call it once per process: what is loaded or
    cached by a first run is not loaded again."""
    from oodfs.cli import main

    for name in ("oodfs.run.bench", "oodfs.report.bench", "oodfs.run.executors.local"):
        importlib.import_module(name)  # imports are not counted; loading them first keeps the trace short
    tracer = CallPath()
    with tempfile.TemporaryDirectory(prefix="oodfs-call-path-") as tmp:
        argv = ["bench", *args, "--jobs", "1", "--no-figures", "--out", str(Path(tmp) / "out")]
        sys.setprofile(tracer)
        try:
            status = main(argv)
        finally:
            sys.setprofile(None)
    return {"argv": argv[:-1] + ["TEMP"], "status": status, "phases": tracer.summary()}


def table(summary: dict, phase: str) -> str:
    """A phase's modules as a markdown table, most entries first."""
    lines = [
        "| module | entries | callers | from plugins | events |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for module, m in summary["phases"][phase]["modules"].items():
        lines.append(f"| {module} | {m['entries']} | {m['callers']} | {m['from_plugins']} | {m['events']} |")
    lookups = summary["phases"][phase]["lookups"]
    said = ", ".join(f"{k} {lookups.get(k, 0)}" for k in LOOKUPS)
    return "\n".join(lines) + f"\n\nlookups ({phase}): {said}"


def over(summary: dict, bound: int, phase: str = "path") -> dict:
    """The modules of ``phase`` entered more than ``bound`` times (entries from oodfs or outside)."""
    modules = summary["phases"][phase]["modules"]
    return {name: m["entries"] for name, m in modules.items() if m["entries"] > bound}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="write the whole summary to FILE as JSON")
    parser.add_argument("--edges", metavar="MODULE", help="print the edges into MODULE, per phase")
    parser.add_argument("--bound", type=int, help="exit 1 if a module of the path has more entries")
    parser.add_argument("bench_args", nargs="*", help="after --: the suite options of oodfs bench")
    a = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="oodfs-call-path-suite-") as tmp:
        args = a.bench_args
        if not args:
            suite = Path(tmp) / "tiny.toml"
            suite.write_text(TINY_SUITE)
            args = ["--suite", str(suite)]
        summary = measure(args)
    if not a.bench_args:  # the tiny suite's temporary path says nothing
        summary["argv"][2] = "TINY_SUITE.toml"
    if a.json:
        Path(a.json).write_text(json.dumps(summary, indent=1))
    if a.edges:
        for phase in PHASES:
            m = summary["phases"][phase]["modules"].get(a.edges)
            if m:
                print(
                    f"## {phase}: {a.edges}, {m['entries']} entries from {m['callers']} callers, "
                    f"{m['from_plugins']} from plugins"
                )
                for e in m["edges"]:
                    print(f"  {e['caller']} -> {e['callee']} ({e['calls']})")
    else:
        print(f"oodfs {' '.join(summary['argv'])}: exit status {summary['status']}")
        for phase in PHASES:
            print(f"\n## {phase}\n\n{table(summary, phase)}")
    if a.bound is not None and over(summary, a.bound):
        print(f"over {a.bound}: {over(summary, a.bound)}", file=sys.stderr)
        return 1
    return 0 if summary["status"] == 0 else 2


if __name__ == "__main__":
    sys.exit(main())
