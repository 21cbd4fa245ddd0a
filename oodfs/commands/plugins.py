"""``oodfs plugins``: the registered selectors, weighters, environments and metrics."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    p = sub.add_parser("plugins", help="list the registered selectors, weighters, environments and metrics")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.add_argument(
        "--plugin", action="append", default=[], metavar="MODULE", help="also register this module"
    )


def run(args) -> int:
    from tabulate import tabulate

    from oodfs.contract.registry import registry

    infos = registry(tuple(args.plugin)).all()
    if args.json:
        print(json.dumps([i.as_dict() for i in infos], indent=2))
        return 0
    rows = [[i.kind, i.name, i.package, i.version, i.description] for i in infos]
    print(tabulate(rows, headers=["kind", "name", "package", "version", "description"]))
    return 0
