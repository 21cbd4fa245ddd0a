"""``oodfs merge``: combine results folders of one suite (several machines, or shards of a grid)
into one folder.

The folders must have the same suite identity (environment, test environments, sizes, k, seed,
profile; a setting of one name defined alike, so that shards split by ``--settings`` combine) and
metric declarations. A task present in several folders must be the same
task: the same identity (method code, version, grid, profile, data) and the same values; a
stored failure gives way to a result of the same identity. Anything else is an error naming the
task, and nothing is written: the merged store is built under a temporary name and renamed.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from oodfs.contract.downstream import DEFAULT_MODEL
from oodfs.contract.task import TASK_KEY, TaskKey
from oodfs.results.identity import combined_identity, explain, identity_conflicts
from oodfs.results.outputs import check_output
from oodfs.results.provenance import environment
from oodfs.results.store import (
    DAMAGE_HINT,
    DB_NAME,
    RESULT_COLUMNS,
    TASK_COLUMNS,
    ResultStore,
    export,
)
from oodfs.validation import OodfsError

#: result columns that may differ between two copies of a task (made on different machines)
MACHINE_COLUMNS = (
    "fit_seconds",
    "downstream_seconds",
    "data_seconds",
    "oodfs_version",
    "versions",
    "identity",
    "origin",
)
#: result columns that must agree between them: the rest but the task key
COMPARED = [c for c in RESULT_COLUMNS if c not in TASK_KEY and c not in MACHINE_COLUMNS]


def _read(path: Path) -> dict:
    store = ResultStore(path)
    if not path.is_dir() or not store.exists():
        raise OodfsError(
            f"{path} is not a results folder (no {DB_NAME}; merge reads folders written by oodfs bench)"
        )
    damage = store.check()  # (a file SQLite cannot read: one line naming it)
    if damage:
        raise OodfsError(f"cannot merge {path}: it is damaged: {damage.summary()} ({DAMAGE_HINT})")
    try:
        identity = store.get_meta("suite_identity")
        metrics = store.get_meta("metrics")
        tasks, results = store.tables()
        with store._reading() as con:  # (read only: a folder merged from is never written)
            invocations = con.execute(
                "SELECT started_at, provenance FROM invocations ORDER BY started_at"
            ).fetchall()
    except sqlite3.DatabaseError as exc:
        raise OodfsError(f"{store.path} cannot be read: {exc}") from None
    finally:
        store.close()  # (a store left in WAL mode: no -wal or -shm left)
    if identity is None:
        raise OodfsError(f"{path} has no suite identity (written by an older oodfs): rerun it before merging")
    return {
        "path": path,
        "identity": identity,
        "metrics": metrics,
        "tasks": tasks,
        "results": results,
        "invocations": invocations,
    }


def _differences(a: dict, b: dict) -> str:
    parts = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            va, vb = a.get(k), b.get(k)
            short = all(isinstance(v, (int, float, str, type(None))) for v in (va, vb))
            parts.append(f"{k} ({va!r} vs {vb!r})" if short else k)
    return ", ".join(parts)


def _rows(store: dict, key) -> pd.DataFrame:
    rows = store["results"].iloc[store["groups"][key]][COMPARED]
    rows = rows.assign(env=rows["env"].fillna(""), downstream=rows["downstream"].fillna(DEFAULT_MODEL))
    order = ["downstream", "point", "metric", "env", "k"]
    return rows.sort_values(order, kind="stable").reset_index(drop=True)


def _same(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Exactly the same values (a column's dtype may differ between stores: an integer column
    read as float where another task stored NULLs)."""
    try:
        pd.testing.assert_frame_equal(a, b, check_dtype=False, check_exact=True)
    except AssertionError:
        return False
    return True


def merge_stores(dirs, out, argv=None) -> dict:
    """Merge the results folders ``dirs`` into the new folder ``out``; returns counts
    (``folders``, ``tasks``, ``duplicates``, ``replaced_failures``)."""

    paths = [Path(d) for d in dirs]
    out = Path(out)
    check_output(out, "--out")  # (a folder holding results is refused below)
    if out.exists() and not out.is_dir():
        raise OodfsError(f"--out {out} is a file, not a folder")
    for name in (DB_NAME, "results.parquet", "results.csv"):
        if (out / name).exists():
            raise OodfsError(f"--out {out} already holds results ({name}); choose a new folder")
    if len({p.resolve() for p in paths}) < len(paths):
        raise OodfsError("a folder is named twice")
    stores = [_read(p) for p in paths]
    first = stores[0]
    combined = first["identity"]
    for other in stores[1:]:
        conflicts = identity_conflicts(combined, other["identity"])
        if conflicts:
            fields = _differences(
                *({k: v for k, v in i.items() if k != "settings"} for i in (combined, other["identity"]))
            )
            named = [fields] if fields else []
            raise OodfsError(
                f"cannot merge {first['path']} and {other['path']}: different suite "
                f"{', '.join(named + [c for c in conflicts if c.startswith('setting ')])}"
            )
        combined = combined_identity(combined, other["identity"])  # shards split by --settings
        if other["metrics"] != first["metrics"]:
            names = lambda s: {m.get("name") for m in s["metrics"] or []}  # noqa: E731
            diff = sorted(names(first) ^ names(other)) or ["(their declarations)"]
            raise OodfsError(
                f"cannot merge {first['path']} and {other['path']}: different metrics: {', '.join(diff)}"
            )
    for s in stores:
        s["groups"] = s["results"].groupby(TASK_KEY, sort=False).indices
        s["by_key"] = {tuple(r[:4]): r for r in s["tasks"].itertuples(index=False, name=None)}

    chosen: dict[tuple, int] = {}  # task -> index of the store its copy comes from
    duplicates = replaced = 0
    status_at, identity_at, parts_at = (TASK_COLUMNS.index(c) for c in ("status", "identity", "parts"))
    for i, s in enumerate(stores):
        for key, task in s["by_key"].items():
            if key not in chosen:
                chosen[key] = i
                continue
            duplicates += 1
            j = chosen[key]
            kept = stores[j]["by_key"][key]
            if kept[identity_at] != task[identity_at]:
                old = json.loads(kept[parts_at]) if kept[parts_at] else None
                new = json.loads(task[parts_at]) if task[parts_at] else {}
                raise OodfsError(
                    f"task {TaskKey(*key).describe()} differs between {stores[j]['path']} and {s['path']}: "
                    f"different identities ({explain(old, new)})"
                )
            if kept[status_at] != task[status_at] and "ok" in (kept[status_at], task[status_at]):
                replaced += 1
                if task[status_at] == "ok":
                    chosen[key] = i
                continue
            if not _same(_rows(stores[j], key), _rows(s, key)):
                raise OodfsError(
                    f"task {TaskKey(*key).describe()} has different values in {stores[j]['path']} and "
                    f"{s['path']}"
                )

    tasks = pd.concat(
        [
            s["tasks"].iloc[[k in chosen and chosen[k] == i for k in s["by_key"]]]
            for i, s in enumerate(stores)
        ],
        ignore_index=True,
    )
    results = pd.concat(
        [
            s["results"].iloc[
                sorted(ix for k, ix_list in s["groups"].items() if chosen.get(k) == i for ix in ix_list)
            ]
            for i, s in enumerate(stores)
        ],
        ignore_index=True,
    )
    invocations = sorted(inv for s in stores for inv in s["invocations"])

    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out, prefix=".merge-"))
    renamed = False
    try:
        store = ResultStore(tmp)
        store.set_meta("suite_identity", combined)
        store.set_meta("metrics", first["metrics"])
        store.insert_tasks(tasks, results)
        con = store.connect()
        try:
            with con:
                con.executemany("INSERT INTO invocations VALUES (?, ?)", invocations)
                # the suite as last run (its selection rule is what a report of the folder uses)
                suites = [json.loads(p).get("suite") for _, p in invocations]
                con.execute(
                    "INSERT INTO invocations VALUES (?, ?)",
                    (
                        time.time(),
                        json.dumps(
                            {
                                "argv": list(argv if argv is not None else sys.argv),
                                "merged": [str(p) for p in paths],
                                "suite": next((s for s in reversed(suites) if s), {}),
                                "environment": environment(),
                            }
                        ),
                    ),
                )
            # one self-contained, compact file (no write-ahead log beside it) to rename into place
            con.execute("VACUUM INTO ?", (str(tmp / "merged.sqlite"),))
        finally:
            con.close()
        os.replace(tmp / "merged.sqlite", out / DB_NAME)
        renamed = True
        export(ResultStore(out).frame(), out)
    except BaseException:  # leave nothing behind: --out held no results before
        if renamed:
            (out / DB_NAME).unlink(missing_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "folders": len(stores),
        "tasks": len(tasks),
        "duplicates": duplicates,
        "replaced_failures": replaced,
    }
