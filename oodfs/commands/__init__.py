"""The commands of ``oodfs``, one module each: ``add_parser(subparsers)`` and ``run(args) -> int``.

Commands are a plugin kind (hook ``oodfs_commands``): the built-in ones below are registered the
way a third party's are, and the program's parser is built from the registry (oodfs/cli.py).
"""

from __future__ import annotations

import importlib

from oodfs.contract.extensions import Command
from oodfs.contract.hookspecs import hookimpl

#: name -> what it does (the modules are imported when the parser is built)
BUILTIN = {
    "bench": "run a benchmark suite and print its leaderboard",
    "leaderboard": "print the leaderboard of a results folder",
    "compare": "paired tests between methods, Friedman test and critical-difference diagrams",
    "plot": "draw the paper's figures and the feature-ranking table for a results folder",
    "report": "write a static results site",
    "merge": "combine results folders of one suite into one",
    "plugins": "list the registered plugins of every kind",
    "select": "rank the features of your own table with any selector",
    "suites": "list the shipped suites with their data cards",
    "theory": "check the paper's WLS theorems numerically",
    "replay": "check that a reference is what the installed code computes",
}


def _module(name: str):
    return importlib.import_module(f"{__name__}.{name}")


def _builtin(name: str) -> Command:
    return Command(
        name, BUILTIN[name], lambda sub: _module(name).add_parser(sub), lambda args: _module(name).run(args)
    )


@hookimpl
def oodfs_commands() -> list[Command]:
    return [_builtin(name) for name in BUILTIN]
