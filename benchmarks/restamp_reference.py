"""Re-stamp the method identities of shipped reference results after an edit that changed a
method's source file but not its numbers.

A task's identity hashes the whole module of its method (oodfs.run.identity): adding the
classification form of a baseline to its file, or a new diagnostic to DWR's, makes every shipped
reference of that method "stale" although no regression number moved. Rebuilding every reference
reruns every suite (hours on two cores); this script instead writes the current identities into
the reference files, and records in each provenance file which methods were re-stamped, when, and
why, so a reader of the reference knows its rows come from the earlier code.

Use it only with evidence that the numbers are unchanged (the commit that needs it says which:
bit-for-bit scores of the edited methods on the old and the new code). Rebuild instead
(benchmarks/reproduce.py, benchmarks/realdata.py) when a number may have moved.

    python benchmarks/restamp_reference.py --why "classification forms added; regression scores bit for bit"
"""

from __future__ import annotations

import argparse
import datetime
import json
from dataclasses import replace

import pandas as pd

from oodfs.contract.registry import registry
from oodfs.run.identity import task_identities
from oodfs.run.reference import ZSTD_LEVEL, _sha256, available, load_reference, shipped_dir
from oodfs.run.suite import customise, load_suite, with_task


def restamp(name: str, why: str) -> list[str]:
    suite_name, profile = name.rsplit("-", 1)
    ref = load_reference(suite_name, profile)
    # the task type as the runner reads it (the environment's; a suite file need not say it)
    suite, _ = with_task(customise(load_suite(suite_name), profile=profile), registry())
    path = ref.path
    frame = pd.read_parquet(path)
    # the downstream models the reference was made with (a binary suite's reference has its default
    # model alone): they are part of the suite's identity, so the stamp must be of that suite
    made_with = set(frame["downstream"].dropna().astype(str))
    models = tuple(m for m in suite.downstream if m in made_with)
    suite = replace(suite, downstream=models or suite.downstream)
    current = task_identities(suite, ref.methods)
    changed = set()
    identity = frame["identity"].astype(object).to_numpy().copy()
    for i, (setting, method, old) in enumerate(zip(frame["setting"], frame["method"], frame["identity"])):
        new = current.get((str(setting), str(method)))
        if new is not None and old != new.digest:
            identity[i] = new.digest
            changed.add(str(method))
    if not changed:
        return []
    frame["identity"] = pd.Categorical(identity)
    frame.to_parquet(path, index=False, compression="zstd", compression_level=ZSTD_LEVEL)
    meta = json.loads(path.with_suffix(".json").read_text())
    for (setting, method), ident in current.items():
        if method in changed:
            meta["identities"][ident.digest] = ident.parts
    meta.setdefault("restamped", []).append(
        {
            "methods": sorted(changed),
            "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "why": why,
        }
    )
    meta["sha256"] = _sha256(path)
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n")
    return sorted(changed)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--why", required=True, help="the evidence that the numbers did not move")
    p.add_argument("names", nargs="*", help=f"references (default: all in {shipped_dir()})")
    args = p.parse_args()
    for name in args.names or available():
        print(name, restamp(name, args.why) or "up to date")


if __name__ == "__main__":
    main()
