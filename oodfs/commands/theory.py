"""``oodfs theory``: the paper's theorems checked numerically (see :mod:`oodfs.theory`)."""
from __future__ import annotations


def add_parser(sub) -> None:
    from ..theory import add_parser as add

    add(sub)


def run(args) -> int:
    from ..theory import run as run_theory

    return run_theory(args)
