"""``oodfs replay``: fit one data set of a reference again with the installed code and compare every
stored value with the fresh one (docs/PROTOCOL.md section 6, "Replaying a reference")."""

from __future__ import annotations

import sys

#: exit status when a reference does not replay (bad input is 2, as everywhere)
EXIT_DIFFERS = 1


def add_parser(sub) -> None:
    from oodfs.run.reference import available

    p = sub.add_parser(
        "replay",
        help="check that a reference is what the installed code computes",
        description="Fit one data set of each reference again (every method it holds, every grid "
        "point, every downstream model it was made with) and compare each stored value with the "
        "fresh one: equal bit for bit, or within the relative tolerance docs/PROTOCOL.md declares per "
        "method and downstream model. Exit status 0 when every method replays, 1 when one does not.",
        epilog=f"Shipped references: {', '.join(available())}.",
    )
    p.add_argument(
        "references",
        nargs="*",
        metavar="REFERENCE",
        help="a shipped reference (<suite>-<profile>, e.g. auto-default) or a reference .parquet file",
    )
    p.add_argument("--all", action="store_true", help="every shipped reference")
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="references replayed at once, each in a process of its own (default 1; at most the CPUs)",
    )
    p.add_argument(
        "--stamp",
        action="store_true",
        help="write into each reference the current identities of the methods that replayed and the "
        "replay's record (for maintainers regenerating the shipped references)",
    )

    p.add_argument(
        "--withhold",
        action="store_true",
        help="with --stamp: take the rows of every method that did not replay out of the reference "
        "(a reference ships only numbers that replay; --reference then runs those methods)",
    )


def run(args) -> int:
    import os

    from oodfs.run.reference.replay import load_named, replay_many
    from oodfs.validation import OodfsError

    names = list(args.references)
    if args.all:
        from oodfs.run.reference import available

        names += [n for n in available() if n not in names]
    if not names:
        raise OodfsError("name a reference (e.g. auto-default) or give --all")
    if args.withhold and not args.stamp:
        raise OodfsError("--withhold takes rows out of a reference when it is stamped: give --stamp too")
    if len(set(names)) < len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise OodfsError(f"reference {twice!r} is named twice")
    cpus = os.cpu_count() or 1
    if not 1 <= args.jobs <= cpus:
        raise OodfsError(f"--jobs must be between 1 and the {cpus} CPUs of this machine, not {args.jobs}")
    refs = {n: load_named(n) for n in names}  # every name checked before any work
    status = 0
    for name, result in replay_many(list(refs), args.jobs):
        print(f"{name}: data set {', '.join(map(str, result.data_set))} ({result.seconds:.0f} s)")
        for method, m in result.methods.items():
            print(f"  {'ok  ' if m.ok else 'DIFF'} {method}: {m.line()}")
        if not result.ok:
            status = EXIT_DIFFERS
        if args.stamp:
            from oodfs.run.reference.replay import stamp

            stamped = stamp(load_named(name), result, withhold=args.withhold)
            print(f"  stamped: {', '.join(stamped) or 'the record only (no method replayed)'}")
        sys.stdout.flush()
    return status
