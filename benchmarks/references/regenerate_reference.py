"""Regenerate shipped references from fresh runs, then replay and stamp them (docs/PROTOCOL.md
section 6, "Replaying a reference").

    python benchmarks/references/regenerate_reference.py auto-default wage-default --root /tmp/regen
    python benchmarks/references/regenerate_reference.py synthetic-default --methods srdo,dwr \
        --root /tmp/regen
    python benchmarks/references/regenerate_reference.py all --root ROOT --from-run --jobs 2

Without ``--methods`` the suite is run whole (``oodfs bench``, the reference's profile and the
downstream models it holds) and the reference is written anew from that run. With ``--methods`` only
those methods are run and every other is taken from the reference (``--reference``: they must have
replayed, which ``oodfs replay --stamp`` records), and the reference is written from that folder.
With ``--methods`` and ``--fresh`` only those methods are run and the reference is written from that
run alone (it then holds those methods only: a costly method can follow in a second call).
With ``--from-run ROOT`` nothing is run: each reference is written from the folder a whole-benchmark
run (``oodfs bench --suite all --out ROOT``) gave its suite and profile, ``ROOT/<suite>`` or
``ROOT/<suite>-<profile>``, with every downstream model that run trained; once all are written they
are replayed ``--jobs`` at once, as CI replays them.
Either way the new reference is then replayed on its data set and stamped; one that does not replay
is left written but unstamped, and the script says what differed. Runs are resumable (``--resume``
into ``ROOT/NAME``): an interrupted regeneration goes on where it stopped.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from oodfs.run.reference import available, load_reference, write_reference
from oodfs.run.reference.replay import load_named, replay, replay_many, stamp


def regenerate(
    name: str, root: Path, methods: list[str] | None, jobs: int, fresh: bool = False, from_run: bool = False
) -> bool:
    suite, profile = name.rsplit("-", 1)
    ref = load_named(name)
    if from_run:
        out = root / (suite if profile == "default" else name)
        print(f"+ {name} from {out}", flush=True)
        write_reference(out, ref.path)
        return True  # replayed after every reference is written (replay_all)
    models = ",".join(dict.fromkeys(ref.results["downstream"].dropna().astype(str)))
    out = root / name
    argv = ["oodfs", "bench", "--suite", suite, "--profile", profile, "--downstream", models]
    argv += ["--out", str(out), "--jobs", str(jobs), "--quiet", "--no-figures"]
    if methods:
        argv += ["--methods", ",".join(methods)] + ([] if fresh else ["--reference"])
    if (out / "results.sqlite").exists():
        argv.append("--resume")
    print("+", " ".join(argv), flush=True)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    write_reference(out, ref.path)
    return replay_and_stamp(suite, profile)


def replay_and_stamp(suite: str, profile: str) -> bool:
    fresh = load_reference(suite, profile)
    return said_and_stamped(f"{suite}-{profile}", fresh, replay(fresh))


def replay_all(names: list[str], jobs: int) -> bool:
    """Replay the references ``names`` as written, ``jobs`` at once (as CI does), stamping each
    one that replays."""
    ok = [said_and_stamped(name, load_named(name), result) for name, result in replay_many(names, jobs)]
    return all(ok)


def said_and_stamped(name: str, fresh, result) -> bool:
    print(f"= {name}", flush=True)
    for method, m in result.methods.items():
        print(f"  {'ok  ' if m.ok else 'DIFF'} {method}: {m.line()}", flush=True)
    if result.ok:
        print(f"  stamped: {', '.join(stamp(fresh, result))}", flush=True)
    return result.ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="+", help="references, <suite>-<profile>, or all: every shipped one")
    p.add_argument("--methods", help="comma-separated: run only these, take the others from the reference")
    p.add_argument("--root", type=Path, required=True, help="the folder of the runs (one per reference)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--fresh", action="store_true", help="with --methods: a reference of those methods alone")
    p.add_argument(
        "--from-run",
        action="store_true",
        help="write each from ROOT's folder of a whole-benchmark run, run nothing",
    )
    args = p.parse_args()
    methods = args.methods.split(",") if args.methods else None
    shipped = available()
    names = shipped if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in shipped]
    if unknown:
        p.error(f"no shipped reference {', '.join(unknown)}; shipped: {', '.join(shipped)} (or all)")
    if args.from_run and methods:
        p.error("--from-run writes every method the run holds: give no --methods")
    ok = [regenerate(n, args.root, methods, args.jobs, args.fresh, args.from_run) for n in names]
    if args.from_run:
        ok.append(replay_all(names, args.jobs))
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
