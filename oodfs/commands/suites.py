"""``oodfs suites``: the shipped suites, each with its split and, for real data, its data card."""

from __future__ import annotations

import json
import warnings


def add_parser(sub) -> None:
    p = sub.add_parser(
        "suites",
        help="list the shipped suites with their data cards",
        description="Every suite shipped with oodfs: what it trains and tests on, its sizes and downstream "
        "models, and for a real table its data card (source, licence, rows, environments, target, why the "
        "shift is real, what to install).",
    )
    p.add_argument(
        "suites",
        nargs="*",
        metavar="SUITE",
        help="only these suites (names or suite files), each on a table with its shift diagnosis: how "
        "much of the drop from training to test environments is a change of X and how much of Y|X",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list instead of text")
    p.add_argument(
        "--tables-anywhere",
        action="store_true",
        help="let a suite file read a table outside its own folder (as bench --tables-anywhere)",
    )


def describe(name: str, shift: bool = False, tables_anywhere: bool = False) -> dict:
    """One suite as a JSON-ready dict: its split, sizes, models and card; with ``shift``, the card
    also holds the shift diagnosis of a suite on a table (``shift_diagnosis``, beside the card's
    own ``shift`` text: :func:`oodfs.shift.diagnose_suite`)."""
    from oodfs.run.suite import load_suite

    s = load_suite(name, tables_anywhere)
    card = dict(s.card)
    if shift:
        from oodfs.contract.registry import registry
        from oodfs.run.suite import with_task
        from oodfs.shift import diagnose_suite, known_shift

        d = diagnose_suite(with_task(s, registry())[0])  # a two-level target decided as bench decides it
        if d is not None:
            nan_free = {k: (None if isinstance(v, float) and v != v else v) for k, v in d.items()}
            card["shift_diagnosis"] = nan_free
        elif known_shift(s):  # simulated data: its shift is known, not diagnosed
            card["shift_diagnosis"] = {"known": known_shift(s)}
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
        "card": card,
    }


def run(args) -> int:
    from oodfs.run.suite import available_suites
    from oodfs.shift import shift_sentence

    names = args.suites or available_suites()
    with warnings.catch_warnings():  # a table's notes are a run's to give; here the card speaks
        warnings.simplefilter("ignore")
        suites = [describe(name, bool(args.suites), args.tables_anywhere) for name in names]
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
            if key != "shift_diagnosis":
                print(f"  {key}: {value}")
        shift = s["card"].get("shift_diagnosis")
        if shift and "known" in shift:
            print(f"  shift: {shift['known']}")
        elif shift:
            print(f"  shift diagnosis: {shift_sentence(shift)}")
        print()
    return 0
