"""``oodfs select``: rank the features of the user's own table (see :mod:`oodfs.tabular`)."""
from __future__ import annotations


def add_parser(sub) -> None:
    from ..tabular import add_select_parser

    add_select_parser(sub)


def run(args) -> int:
    from ..tabular import cmd_select

    return cmd_select(args)
