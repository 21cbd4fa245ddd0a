"""Add methods to a shipped reference from a results folder that ran them on the suite's full grid.

    python benchmarks/references/extend_reference.py synthetic-default RUN --methods iamb,hiton_mb,hrm,rsw

A reference (oodfs/run/reference/) is rebuilt from a full run of the suite; a method that joins
the suite's list later was run alone on the same tasks (``oodfs bench --methods NEW``, or with
``--reference``). This script copies that run's rows of ``--methods`` into the reference instead of
rerunning every method: the run must have the reference's suite identity, hold every task of each
method on the suite's grid (a failed task is kept as the runner recorded it), and each task's
identity must be the current code's (else the script refuses and names the task; ``--keep-stale``
copies it under its stored identity, so that ``--reference`` reruns that method and says why). The
reference's other rows, its invocations and its re-stamp history are kept; the run's invocations
are added, and ``extended`` in the provenance file records which methods came from where and when.
"""

from __future__ import annotations

import argparse
import datetime
import json
import tempfile
from dataclasses import replace
from pathlib import Path

import pandas as pd

from oodfs.contract.registry import registry
from oodfs.contract.task import TASK_KEY
from oodfs.results.identity import explain, identity_conflicts
from oodfs.results.store import ResultStore
from oodfs.run.identity import task_identities
from oodfs.run.reference import COLUMNS, ZSTD_LEVEL, _sha256, load_reference, take, write_reference
from oodfs.run.suite import customise, load_suite, with_task
from oodfs.validation import OodfsError


def current_suite(suite_name: str, profile: str, made_with: set[str]):
    """The suite as the runner reads it, with the downstream models the reference was made with
    (as oodfs.run.reference.replay.replay_suite)."""
    suite, _ = with_task(customise(load_suite(suite_name), profile=profile), registry())
    models = tuple(m for m in suite.downstream if m in made_with)
    return replace(suite, downstream=models or suite.downstream)


def extend(name: str, run: str | Path, methods: list[str], keep_stale: bool = False) -> dict:
    suite_name, profile = name.rsplit("-", 1)
    ref = load_reference(suite_name, profile)
    old = pd.read_parquet(ref.path)
    for (
        c
    ) in COLUMNS:  # written before the trained subset was stored with each row (as load_reference reads it)
        if c not in old:
            old[c] = None
    suite = current_suite(suite_name, profile, set(old["downstream"].dropna().astype(str)))
    store = ResultStore(run)
    if not store.exists():
        raise OodfsError(f"no results in {run}")
    conflicts = identity_conflicts(ref.meta["suite_identity"], store.get_meta("suite_identity"))
    if conflicts:
        raise OodfsError(f"{run} was run with a different {', '.join(conflicts)} than the reference {name}")
    already = [m for m in methods if m in ref.methods]
    if already:
        raise OodfsError(f"the reference {name} already holds {', '.join(already)}")
    tasks, _ = store.tables()
    tasks = tasks[tasks["method"].isin(methods)].set_index(TASK_KEY)
    current = task_identities(suite, methods)
    stale = []
    for m in methods:
        for key in suite.task_keys([m]):
            if key not in tasks.index:
                raise OodfsError(f"{run} lacks the task {key} of {m}")
            if tasks.at[key, "identity"] != current[key[0], m].digest:
                stale.append((key, explain(json.loads(tasks.at[key, "parts"]), current[key[0], m].parts)))
    if stale and not keep_stale:
        raise OodfsError(f"{len(stale)} tasks of {run} are not the current code's (e.g. {stale[0]})")
    with tempfile.TemporaryDirectory() as tmp:  # the run's rows and provenance as write_reference makes them
        new_path, new_meta_path = write_reference(run, Path(tmp) / "run.parquet")
        new = pd.read_parquet(new_path)
        new_meta = json.loads(new_meta_path.read_text())
    new = new[new["method"].isin(methods)]
    keys = set(suite.task_keys(methods))
    new = new[
        [
            (s, r, int(u), m) in keys
            for s, r, u, m in zip(new["setting"], new["r_train"], new["run"], new["method"])
        ]
    ]
    # text columns are dictionary-encoded in the file (as write_reference does): concatenate them as text
    text = [
        c
        for c in COLUMNS
        if isinstance(old[c].dtype, pd.CategoricalDtype) or isinstance(new[c].dtype, pd.CategoricalDtype)
    ]
    frame = pd.concat(
        [old[COLUMNS].astype({c: object for c in text}), new[COLUMNS].astype({c: object for c in text})],
        ignore_index=True,
    )
    frame = frame.sort_values(TASK_KEY + ["point", "metric", "env", "k"], kind="stable", na_position="first")
    frame = frame.astype({c: "category" for c in text})
    frame.to_parquet(ref.path, index=False, compression="zstd", compression_level=ZSTD_LEVEL)
    meta = ref.meta
    added = new.drop_duplicates(TASK_KEY)
    meta["methods"] = list(ref.methods) + list(methods)
    meta["tasks"] = int(meta["tasks"]) + len(added)
    meta["rows"] = int(len(frame))
    meta["failed_tasks"] = int(meta["failed_tasks"]) + int((added["status"] != "ok").sum())
    for digest in set(added["identity"]):
        meta["identities"][digest] = new_meta["identities"][digest]
    meta["invocations"] = meta.get("invocations", []) + new_meta["invocations"]
    meta.setdefault("extended", []).append(
        {
            "methods": list(methods),
            "from": str(run),
            "tasks": len(added),
            "stale_kept": len(stale),
            "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
    )
    meta["sha256"] = _sha256(ref.path)
    ref.path.with_suffix(".json").write_text(json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n")
    # the reference as --reference reads it: which of the suite's methods it cannot give
    ref = load_reference(suite_name, profile)
    _, _, refused = take(ref, suite, list(suite.methods), task_identities(suite, list(suite.methods)))
    return {"added_tasks": len(added), "stale": len(stale), "refused": refused}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", help="the reference, <suite>-<profile> (e.g. synthetic-default)")
    p.add_argument("run", help="the results folder that ran --methods on the suite's grid")
    p.add_argument("--methods", required=True, help="comma-separated methods to add")
    p.add_argument("--keep-stale", action="store_true", help="copy tasks of other code under their identity")
    args = p.parse_args()
    print(args.name, extend(args.name, args.run, args.methods.split(","), args.keep_stale))


if __name__ == "__main__":
    main()
