"""``oodfs suites``: the shipped suites, each with its split and, for real data, its data card."""

from __future__ import annotations

import json


def add_parser(sub) -> None:
    p = sub.add_parser(
        "suites",
        help="list the shipped suites with their data cards",
        description="Every suite shipped with oodfs: what it trains and tests on, its sizes and downstream "
        "models, and for a real table its data card (source, licence, rows, environments, target, why the "
        "shift is real, what to install).",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list instead of text")


def describe(name: str) -> dict:
    """One suite as a JSON-ready dict: its split, sizes, models and card."""
    from oodfs.run.suite import load_suite

    s = load_suite(name)
    blocks = len(s.r_train) * s.runs
    return {
        "name": s.name,
        "description": s.description,
        "environment": s.environment,
        "settings": [st.name for st in s.settings],
        "r_train": list(s.r_train),
        "r_test": list(s.r_test),
        "runs": s.runs,
        "paired_blocks": blocks,
        "unit": s.unit,
        "n_train": s.n_train,
        "n_val": s.n_val,
        "n_test": s.n_test,
        "k": s.k,
        "k_grid": list(s.k_grid) if s.k_grid else None,
        "methods": [m for m in s.methods if m not in s.yardsticks],
        "yardsticks": list(s.yardsticks),
        "downstream": list(s.downstream),
        "card": dict(s.card),
    }


def run(args) -> int:
    from oodfs.run.suite import available_suites

    suites = [describe(name) for name in available_suites()]
    if args.json:
        print(json.dumps(suites, indent=2))
        return 0
    for s in suites:
        print(f"{s['name']} — {s['description']}")
        print(f"  train on {', '.join(map(str, s['r_train']))}; test on {', '.join(map(str, s['r_test']))}")
        sizes = f"n_train {s['n_train']}, n_val {s['n_val']}, k {s['k']}"
        if s["k_grid"]:
            sizes += f" (k chosen on validation among {', '.join(map(str, s['k_grid']))})"
        print(
            f"  {s['runs']} runs ({s['paired_blocks']} paired blocks; unit of replication: {s['unit']}), "
            f"{sizes}; "
            f"downstream {', '.join(s['downstream'])}"
            + (f"; yardsticks {', '.join(s['yardsticks'])}" if s["yardsticks"] else "")
        )
        for key, value in s["card"].items():
            print(f"  {key}: {value}")
        print()
    return 0
