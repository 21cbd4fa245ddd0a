"""``oodfs plugins``: the registered plugins of every kind: selectors, weighters, environments,
metrics, selection rules, backends (with their options), leaderboard formats and commands."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    p = sub.add_parser(
        "plugins",
        help="list the registered plugins of every kind (selectors, weighters, environments, metrics, "
        "selection rules, backends, leaderboard formats, commands)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.add_argument(
        "--plugin", action="append", default=[], metavar="MODULE", help="also register this module"
    )


def _options(info) -> list[dict]:
    """A backend's declared options (``--backend-option NAME=VALUE``)."""
    return [{"name": o.name, "help": o.help} for o in info.cls.options] if info.kind == "backend" else []


def run(args) -> int:
    from tabulate import tabulate

    from oodfs.contract.registry import registry

    infos = registry(tuple(args.plugin)).all()
    if args.json:
        listed = [i.as_dict() | ({"options": _options(i)} if i.kind == "backend" else {}) for i in infos]
        print(json.dumps(listed, indent=2))
        return 0
    rows = [
        [
            i.kind,
            i.name,
            i.package,
            i.version,
            i.description + "".join(f"; option {o['name']}" for o in _options(i)),
        ]
        for i in infos
    ]
    print(tabulate(rows, headers=["kind", "name", "package", "version", "description"]))
    return 0
