"""``oodfs plugins``: the registered plugins of every kind (the table of kinds,
oodfs/contract/kinds.py): selectors, weighters, environments, metrics, task types, downstream
models, selection rules, backends (with their options), leaderboard formats and commands; for a
selector, the largest sizes it was measured at and their cost (oodfs/results/scale.py)."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    from oodfs.contract.kinds import KINDS

    p = sub.add_parser(
        "plugins",
        help="list the registered plugins of every kind ("
        + ", ".join(f"{k.label}s" for k in KINDS)
        + "; kind as in oodfs.plugin.KINDS)",
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
    from oodfs.results.scale import describe, method_scale

    infos = registry(tuple(args.plugin)).all()
    if args.json:
        listed = [
            i.as_dict()
            | ({"options": _options(i)} if i.kind == "backend" else {})
            | ({"scale": method_scale(i.name)} if i.kind == "selector" else {})
            for i in infos
        ]
        print(json.dumps(listed, indent=2))
        return 0
    rows = [
        [
            i.kind,
            i.name,
            i.package,
            i.version,
            i.description
            + "".join(f"; option {o['name']}" for o in _options(i))
            + (f" [largest measured: {describe(i.name)}]" if i.kind == "selector" else ""),
        ]
        for i in infos
    ]
    print(tabulate(rows, headers=["kind", "name", "package", "version", "description"]))
    print(
        "\nlargest measured: the largest sizes (n rows x d features) at which the selector's default grid "
        "point was fitted, fit CPU seconds and peak memory there (`oodfs plugins --json` names the "
        'machine; docs/PROTOCOL.md, "Measured sizes and the memory estimate")'
    )
    return 0
