"""Durable results: one SQLite file per output folder, one transaction per finished task.

A task is (setting, r_train, run, method). Its rows (every grid point x every metric) and its
entry in ``tasks`` are committed together, so a run killed at any moment leaves either the
whole task or none of it; ``--resume`` skips exactly the committed tasks. SQLite (standard
library, WAL mode) lets parallel workers on one machine commit independently.

Each task also stores its identity (:mod:`oodfs.run.identity`: what produced it) and its origin
(``run``: computed here; ``reference``: copied from oodfs's shipped reference results). A task
committed again replaces its old rows in the same transaction, so one task never holds rows of
two computations.

The rows are stored in two tables (docs/PROTOCOL.md, "The results store"): ``result_groups`` holds
each distinct combination of a task's columns other than (metric, env, value) once (its grid
point, feature scores, subset, versions, identity...), ``result_rows`` one (group, metric, env,
value) per row; the view ``results`` joins them back into the long table every reader gets.
A store of the first layout (one ``results`` table, every column on every row) is read as it is
and converted when a run next writes to it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import operator
import os
import sqlite3
import time
from pathlib import Path

import numpy as np
import pandas as pd

from oodfs.contract.task import TASK_KEY, TaskKey, env_key
from oodfs.results.atomic import write_atomically
from oodfs.validation import OodfsError, RunAborted

DB_NAME = "results.sqlite"
LOCK_NAME = "results.lock"  # held (flock) by the one run writing a folder
#: the files oodfs writes in a results folder (none may be a symbolic link)
WRITTEN = (
    "results.sqlite",
    "results.sqlite-wal",
    "results.sqlite-shm",
    "results.sqlite-journal",
    "results.lock",
    "results.parquet",
    "results.parquet.tmp",
    "leaderboard.md",
    "compare.md",
    "figures",
)
#: what a results folder may hold before its first task is stored (a run killed that early)
_FRESH_FOLDER = {LOCK_NAME}

#: what to do about a damaged store, said with every message about one
DAMAGE_HINT = "`oodfs bench ... --resume` on the folder runs the damaged tasks again"

RESULT_COLUMNS = [
    "suite",
    "profile",
    "setting",
    "r_train",
    "run",
    "method",
    "method_kind",
    "point",
    "params",
    "is_default",
    "metric",
    "env",
    "k",
    "value",
    "seed",
    "scores",
    "feature_names",
    "status",
    "error",
    "fit_seconds",
    "downstream_seconds",
    "data_seconds",
    "oodfs_version",
    "versions",
    "identity",
    "origin",
    "downstream",
    "subset",
]
#: per task: its status, identity (digest and parts, see oodfs.run.identity) and origin
TASK_COLUMNS = [*TASK_KEY, "status", "error", "finished_at", "identity", "parts", "origin"]
#: columns added since the first schema, added to older stores when they are opened
_ADDED = {
    "tasks": {"identity": "TEXT", "parts": "TEXT", "origin": "TEXT"},
    "results": {"identity": "TEXT", "origin": "TEXT", "downstream": "TEXT", "subset": "TEXT"},
}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS tasks (
    setting TEXT, r_train TEXT, run INTEGER, method TEXT, status TEXT, error TEXT,
    finished_at REAL, identity TEXT, parts TEXT, origin TEXT, PRIMARY KEY (setting, r_train, run, method));
CREATE TABLE IF NOT EXISTS invocations (started_at REAL, provenance TEXT);
"""
#: the columns that differ from row to row of one task's results; every other result column is
#: stored once per distinct combination (a group) in ``result_groups``
ROW_COLUMNS = ["metric", "env", "value"]
GROUP_COLUMNS = [c for c in RESULT_COLUMNS if c not in ROW_COLUMNS]
#: each result column's declared type (SQLite's type affinity, as in the first layout's table)
_DECLARED = {
    "run": "INTEGER",
    "point": "INTEGER",
    "is_default": "INTEGER",
    "k": "INTEGER",
    "seed": "INTEGER",
    "value": "REAL",
    "fit_seconds": "REAL",
    "downstream_seconds": "REAL",
    "data_seconds": "REAL",
}
_GROUPS_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS result_groups (id INTEGER PRIMARY KEY, {
    ", ".join(f"{c} {_DECLARED.get(c, 'TEXT')}" for c in GROUP_COLUMNS)
});
CREATE INDEX IF NOT EXISTS result_groups_task ON result_groups (setting, r_train, run, method);
CREATE TABLE IF NOT EXISTS result_rows (group_id INTEGER, {
    ", ".join(f"{c} {_DECLARED.get(c, 'TEXT')}" for c in ROW_COLUMNS)
});
CREATE INDEX IF NOT EXISTS result_rows_group ON result_rows (group_id);
CREATE VIEW IF NOT EXISTS results AS SELECT {
    ", ".join(f"{'r' if c in ROW_COLUMNS else 'g'}.{c} AS {c}" for c in RESULT_COLUMNS)
} FROM result_rows r JOIN result_groups g ON g.id = r.group_id;
"""


def _insert(table: str, columns: list[str]) -> str:
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def _names(con: sqlite3.Connection) -> dict[str, str]:
    """The store's tables and views: ``{name: "table" or "view"}``."""
    return dict(con.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"))


def _migrate(con: sqlite3.Connection) -> bool:
    """Bring a store written by an older oodfs to the current schema: new columns of ``tasks`` are
    NULL for its tasks (no identity recorded), and a first-layout ``results`` table is converted
    into ``result_groups`` and ``result_rows`` (:func:`_convert`), every row's values unchanged.
    Whether a conversion was made (the file is then compacted by the caller)."""
    for table, columns in _ADDED.items():
        if _names(con).get(table) != "table":
            continue
        have = {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns.items():
            if name not in have:
                con.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
    con.commit()
    converted = False
    if _names(con).get("results") == "table":
        con.execute("BEGIN IMMEDIATE")  # (another process may be converting it: it is checked again)
        try:
            if _names(con).get("results") == "table":
                _convert(con)
                converted = True
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    con.executescript(_GROUPS_SCHEMA)
    return converted


def _convert(con: sqlite3.Connection) -> None:
    """Move a first-layout ``results`` table's rows, in their order, into the two tables (in the
    caller's transaction), then replace the table by the view."""
    for statement in _GROUPS_SCHEMA.split(";"):  # (not executescript: it would commit first)
        if "CREATE VIEW" not in statement and statement.strip():
            con.execute(statement)
    cursor = con.execute(f"SELECT {', '.join(RESULT_COLUMNS)} FROM results ORDER BY rowid")
    groups: dict = {}
    while batch := cursor.fetchmany(50_000):
        _store_rows(con, batch, groups)
    con.execute("DROP TABLE results")  # (its index results_task goes with it)


_group_of = operator.itemgetter(*(RESULT_COLUMNS.index(c) for c in GROUP_COLUMNS))
_row_of = operator.itemgetter(*(RESULT_COLUMNS.index(c) for c in ROW_COLUMNS))


def _store_rows(con: sqlite3.Connection, rows, groups: dict | None = None) -> None:
    """Write result rows (tuples in :data:`RESULT_COLUMNS` order): each distinct combination of
    their group columns once in ``result_groups`` (compared with the type of each value, so 1 and
    1.0 stay two groups), each row as (group, metric, env, value) in ``result_rows``. ``groups``:
    the groups written so far in this transaction (a conversion's batches share them)."""
    groups = {} if groups is None else groups
    next_id = con.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM result_groups").fetchone()[0]
    new, out = [], []
    # a task's rows repeat its groups: a group's values as they came, with their types, find its
    # id without the per-value key below (equal values of the same types make the same key)
    seen: dict = {}
    for row in rows:
        raw = _group_of(row)
        kinds = tuple(map(type, raw))
        hit = seen.get(raw)
        if hit is not None and hit[0] == kinds:
            gid = hit[1]
        else:
            # (a NaN is stored as NULL by SQLite: as None here, so that NaNs, never equal, share a group)
            values = tuple(None if isinstance(v, float) and v != v else v for v in raw)
            key = tuple((v.__class__, v) for v in values)
            gid = groups.get(key)
            if gid is None:
                gid = groups[key] = next_id
                next_id += 1
                new.append((gid, *values))
            seen[raw] = (kinds, gid)
        out.append((gid, *_row_of(row)))
    con.executemany(_insert("result_groups", ["id", *GROUP_COLUMNS]), new)
    con.executemany(_insert("result_rows", ["group_id", *ROW_COLUMNS]), out)


class StorageError(RunAborted):
    """The results could not be written (disk full, I/O error, read-only or damaged store).
    It aborts the run: it is never recorded as a method's failure."""


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (not removed, not replaced)."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


class ResultStore:
    """The results of one output folder. Reading never writes (a read-only folder can be
    reported on); writing is for the one run that holds the folder's lock."""

    def __init__(self, out_dir: str | Path):
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / DB_NAME

    def exists(self) -> bool:
        return self.path.exists()

    # -- opening ---------------------------------------------------------------------------
    def check_output_folder(self) -> None:
        """Refuse an ``--out`` that is not a folder oodfs can write its results to: a file, a
        device, a name the file system rejects, or a non-empty folder of something else (a
        folder holding only results.parquet would be silently replaced)."""
        out = self.out_dir
        try:
            if out.exists() and not out.is_dir():
                raise OodfsError(
                    f"--out {str(out)!r} is not a folder (it is a file or a device); choose a folder"
                )
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a name too long, a parent that is a file, no permission
            raise OodfsError(f"cannot create the output folder {str(out)!r}: {exc.strerror or exc}") from None
        self.check_links()
        if self.exists():
            if not self.path.is_file():
                raise OodfsError(f"{self.path} is not a file; choose another --out")
            others = [n for n in ("results.parquet", "results.csv") if (out / n).exists()]
            if self.path.stat().st_size == 0 and others:  # the store is lost; the export is the only copy
                raise OodfsError(
                    f"{self.path} is empty (0 bytes) although {out / others[0]} is there; "
                    "oodfs will not overwrite it: choose another --out"
                )
            return
        other = sorted(p.name for p in out.iterdir() if p.name not in _FRESH_FOLDER)
        if other:
            kind = (
                "results of another kind"
                if {"results.parquet", "results.csv"} & set(other)
                else "other files"
            )
            raise OodfsError(
                f"{out} holds {kind} ({', '.join(other[:3])}{', ...' if len(other) > 3 else ''}) but no "
                f"{DB_NAME}; "
                "oodfs writes only into a new, empty or oodfs results folder: choose another --out"
            )

    def check_links(self) -> None:
        """Refuse a results folder where a file oodfs writes is a symbolic link: writing through it
        would truncate and overwrite whatever it points to."""
        for name in WRITTEN:
            if (self.out_dir / name).is_symlink():
                raise OodfsError(
                    f"{self.out_dir / name} is a symbolic link; oodfs writes only its own files: remove it "
                    "or choose another --out"
                )

    @classmethod
    @contextlib.contextmanager
    def for_run(cls, out_dir: str | Path):
        """The store of ``out_dir`` held for one run, in one call: the folder checked
        (:meth:`check_output_folder`) and locked (:meth:`lock`), the store closed (:meth:`close`)
        when the run ends, however it ends. Yields the store and whether the folder held no store
        before (a fresh run)."""
        store = cls(out_dir)
        store.check_output_folder()
        fresh = not store.exists()
        with store.lock():
            try:
                yield store, fresh
            finally:
                store.close()  # no -wal or -shm left in the folder, however the run ended

    @contextlib.contextmanager
    def lock(self):
        """Hold the folder for one run: a second run on it (a second ``--resume``) is refused
        at once. The lock is the kernel's (``flock``): it ends with the process however the
        process ends, so a killed run leaves nothing stale behind. A run that ends normally
        removes the lock file too, while still holding it; a run that locked the file just as it
        was removed finds it gone (:meth:`_lock_file`) and locks the new one, so two runs never
        hold two different files."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover -- not POSIX: no lock
            yield
            return
        fd = self._lock_file(fcntl)
        path, owner = self.out_dir / LOCK_NAME, os.getpid()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(owner).encode(), 0)
            yield
        finally:
            try:
                # only the run itself (not a forked child) removes it, and never a file another run made
                if os.getpid() == owner and _same_file(fd, path):
                    path.unlink()
            except OSError:  # a read-only folder keeps its lock file; the lock still ends below
                pass
            os.close(fd)  # releases the lock

    def _lock_file(self, fcntl) -> int:
        """An open descriptor of the folder's lock file, locked by this process, or an error."""
        path = self.out_dir / LOCK_NAME
        while True:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    message = f"{path} is a symbolic link; remove it or choose another --out"
                    raise OodfsError(message) from None
                raise StorageError(f"cannot create {path}: {exc.strerror or exc}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                busy = exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() if busy else ""
                os.close(fd)
                if not busy:
                    raise StorageError(f"cannot lock {path}: {exc.strerror or exc}") from None
                raise OodfsError(
                    f"another oodfs run (pid {holder or '?'}) is writing to {self.out_dir}; "
                    "wait for it to end or choose another --out"
                ) from None
            if _same_file(fd, path):
                return fd
            os.close(fd)  # the run that held it removed it before we locked: lock the file now there

    def connect(self) -> sqlite3.Connection:
        """A connection for writing (the schema is created if missing)."""
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.check_links()
            con = sqlite3.connect(self.path, timeout=120)
            try:
                con.execute("PRAGMA journal_mode=WAL")
                con.execute("PRAGMA synchronous=NORMAL")
                con.executescript(_SCHEMA)
                if _migrate(con):  # a first-layout store: the space its repeated columns took is freed
                    with contextlib.suppress(sqlite3.OperationalError):  # busy, or no room for the copy
                        con.execute("VACUUM")
            except BaseException:
                con.close()
                raise
        except (sqlite3.Error, OSError) as exc:
            raise StorageError(f"cannot write results to {self.path}: {_reason(exc, self.out_dir)}") from None
        return con

    @contextlib.contextmanager
    def _reading(self):
        """A read-only connection (SQLite's ``mode=ro``: no schema, no journal change), and
        one line naming the file for a store that is damaged or is not an oodfs store."""
        uri = self.path.absolute().as_uri()
        con = None
        try:
            try:
                con = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=120)
                con.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            except sqlite3.OperationalError:
                if con is not None:
                    con.close()
                # a WAL store in a folder this process cannot write to (no -shm file can be
                # made): read the file as it is, which is safe since nothing can be writing it
                con = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True)
            yield con
        except (sqlite3.Error, pd.errors.DatabaseError) as exc:
            reason = _reason(exc).rpartition("': ")[2]  # pandas: "Execution failed on sql '...': reason"
            raise OodfsError(
                f"cannot read {self.path}: {reason} (a damaged file, or not an oodfs results store)"
            ) from None
        finally:
            if con is not None:
                con.close()

    def _tables(self, con) -> set[str]:
        """The store's tables and views (``results`` is a view of the current layout)."""
        return set(_names(con))

    # -- run-level metadata ----------------------------------------------------------------
    def get_meta(self, key: str):
        if not self.exists():
            return None
        with self._reading() as con:
            if "meta" not in self._tables(con):
                return None
            row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else self._loads(row[0], f"its run metadata {key!r}")

    def set_meta(self, key: str, value) -> None:
        self._write("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def add_invocation(self, provenance: dict) -> None:
        self._write("INSERT INTO invocations VALUES (?, ?)", (time.time(), json.dumps(provenance)))

    def _write(self, sql: str, params: tuple) -> None:
        con = self.connect()
        try:
            with con:
                con.execute(sql, params)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot write results to {self.path}: {_reason(exc, self.out_dir)}") from None
        finally:
            con.close()

    def invocations(self) -> list[dict]:
        if not self.exists():
            return []
        with self._reading() as con:
            if "invocations" not in self._tables(con):
                return []
            rows = con.execute("SELECT provenance FROM invocations ORDER BY started_at").fetchall()
        # a damaged record is left out here; reading the results names it (check_store)
        return [json.loads(p) for (p,) in rows if _invocation_ok(p)]

    def _loads(self, text, what: str):
        try:
            return json.loads(text)
        except (TypeError, ValueError):
            raise OodfsError(f"{self.path} is damaged: {what} is not valid JSON ({DAMAGE_HINT})") from None

    def close(self) -> None:
        """End a run's writing: the write-ahead log is copied into the file and the store goes back
        to SQLite's rollback journal, so that no results.sqlite-wal or -shm stays in the folder and
        readers make none; the next run's :meth:`connect` turns WAL on again. Best effort: a reader
        holding the store open (another process) keeps it in WAL mode, which is as safe."""
        if not self.path.is_file():
            return
        try:
            con = sqlite3.connect(self.path, timeout=5)
            try:
                con.execute("PRAGMA journal_mode=DELETE")
            finally:
                con.close()
        except sqlite3.Error:
            pass

    def discard_if_empty(self) -> None:
        """Remove a store that holds no task (with its journal), as if the run had not started."""
        try:
            if self.exists() and not self.finished_tasks():
                for name in (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm"):
                    (self.out_dir / name).unlink(missing_ok=True)
        except (OSError, OodfsError):  # it stays: the user is told about the first error anyway
            pass

    # -- checking and repairing -------------------------------------------------------------
    def check(self) -> Damage:
        """What is damaged in the store's contents (see :func:`check_store`); a file SQLite
        cannot read is one line naming it."""
        if not self.exists():
            return Damage()
        with self._reading() as con:
            return check_store(con)

    def validate(self) -> None:
        """Refuse, in one line naming the damaged tasks, a store whose contents are damaged."""
        damage = self.check()
        if damage:
            raise OodfsError(f"{self.path} is damaged: {damage.summary()} ({DAMAGE_HINT})")

    def repair(self, damage: Damage) -> None:
        """Delete what ``damage`` names (damaged tasks with all their rows, rows of no task,
        damaged invocation records) in one transaction: a resume then runs those tasks
        again."""
        with self._transaction() as con:
            _delete_tasks(con, list(damage.tasks), as_stored=True)
            con.execute(
                "DELETE FROM result_groups WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE "
                "result_groups.setting = t.setting AND result_groups.r_train = t.r_train AND "
                "result_groups.run = t.run AND result_groups.method = t.method)"
            )
            con.execute(
                "DELETE FROM result_rows WHERE NOT EXISTS (SELECT 1 FROM result_groups g WHERE g.id = "
                "result_rows.group_id)"
            )
            bad = [
                (rowid,)
                for rowid, p in con.execute("SELECT rowid, provenance FROM invocations")
                if not _invocation_ok(p)
            ]
            con.executemany("DELETE FROM invocations WHERE rowid = ?", bad)
            bad = [(key,) for key, value in con.execute("SELECT key, value FROM meta") if not _json_ok(value)]
            con.executemany("DELETE FROM meta WHERE key = ?", bad)

    def wall_seconds(self) -> float | None:
        """Wall time of the run: for each invocation, from its start to the last task it stored
        (tasks copied from reference results do not count), summed; None when not recorded."""
        if not self.exists():
            return None
        with self._reading() as con:
            if not {"invocations", "tasks"} <= self._tables(con):
                return None
            starts = [t for (t,) in con.execute("SELECT started_at FROM invocations ORDER BY started_at")]
            done = [
                t
                for (t,) in con.execute(
                    "SELECT finished_at FROM tasks WHERE finished_at IS NOT NULL "
                    "AND (origin IS NULL OR origin != 'reference')"
                )
            ]
        total = 0.0
        for start, end in zip(starts, starts[1:] + [float("inf")]):
            mine = [t for t in done if start <= t < end]
            total += max(mine) - start if mine else 0.0
        return total or None

    # -- tasks -----------------------------------------------------------------------------
    def finished_tasks(self, failed: bool = True) -> set[tuple[str, str, int, str]]:
        """The stored tasks' keys; ``failed=False``: only those that succeeded (the failed
        ones are then run again, see ``--retry-failed``)."""
        if not self.exists():
            return set()
        with self._reading() as con:
            if "tasks" not in self._tables(con):
                return set()
            where = "" if failed else " WHERE status = 'ok'"
            return {tuple(r) for r in con.execute(f"SELECT setting, r_train, run, method FROM tasks{where}")}

    def task_records(self) -> dict[tuple, dict]:
        """Every stored task: ``{(setting, r_train, run, method): {"status", "identity",
        "parts", "origin"}}`` (identity and parts None for a task stored by an older oodfs)."""
        if not self.exists():
            return {}
        con = self.connect()  # (brings an older store's schema up to date)
        try:
            rows = con.execute(
                "SELECT setting, r_train, run, method, status, identity, parts, origin FROM tasks"
            ).fetchall()
        except sqlite3.Error as exc:
            raise OodfsError(f"cannot read {self.path}: {_reason(exc)} (a damaged file)") from None
        finally:
            con.close()
        return {
            tuple(r[:4]): {
                "status": r[4],
                "identity": r[5],
                "parts": self._loads(r[6], "a task's parts") if r[6] else None,
                "origin": r[7] or "run",
            }
            for r in rows
        }

    def commit_task(
        self,
        key: tuple,
        status: str,
        error: str | None,
        rows: list[dict],
        identity: str | None = None,
        parts: dict | None = None,
        origin: str = "run",
    ) -> None:
        """Write one finished task atomically (all its rows and its tasks entry, or nothing).

        A task stored already is replaced in the same transaction (a rerun: its identity
        changed, or --force), except that a failure never replaces a result of the same
        identity (a repeated attempt of a task that once succeeded).
        """
        key = task_key(key)
        setting, r_train, run, method = key
        con = self.connect()
        try:
            with con:  # one transaction, holding the write lock from its start (the check below stays true)
                con.execute("BEGIN IMMEDIATE")
                old = con.execute(
                    "SELECT status, identity FROM tasks WHERE setting = ? AND r_train = ? AND run = ? "
                    "AND method = ?",
                    key,
                ).fetchone()
                if old is not None:
                    if status != "ok" and old[0] == "ok" and old[1] == identity:
                        return
                    _delete_tasks(con, [key])
                con.execute(
                    _insert("tasks", TASK_COLUMNS),
                    (
                        setting,
                        r_train,
                        run,
                        method,
                        status,
                        error,
                        time.time(),
                        identity,
                        None if parts is None else json.dumps(parts, sort_keys=True),
                        origin,
                    ),
                )
                _store_rows(con, [tuple(_plain(row.get(c)) for c in RESULT_COLUMNS) for row in rows])
        except sqlite3.Error as exc:  # disk full, I/O error: the run stops, the method is not blamed
            raise StorageError(f"cannot write results to {self.path}: {_reason(exc, self.out_dir)}") from None
        finally:
            con.close()

    @contextlib.contextmanager
    def _transaction(self):
        """One write transaction (holding the write lock from its start); a storage error is a
        StorageError, which stops the run."""
        con = self.connect()
        try:
            with con:
                con.execute("BEGIN IMMEDIATE")
                yield con
        except sqlite3.Error as exc:
            raise StorageError(f"cannot write results to {self.path}: {_reason(exc, self.out_dir)}") from None
        finally:
            con.close()

    def remove_tasks(self, keys) -> None:
        """Delete tasks and their rows, all in one transaction."""
        with self._transaction() as con:
            _delete_tasks(con, list(keys))

    def insert_tasks(self, tasks: pd.DataFrame, results: pd.DataFrame) -> None:
        """Write many tasks (``tasks``: :data:`TASK_COLUMNS`; ``results``: their rows, with
        r_train as stored text) in one transaction, replacing any stored copy of them."""
        tasks = tasks.reindex(columns=TASK_COLUMNS)
        results = results.reindex(columns=RESULT_COLUMNS)
        with self._transaction() as con:
            _delete_tasks(con, [tuple(k) for k in tasks[TASK_KEY].itertuples(index=False)])
            con.executemany(
                _insert("tasks", TASK_COLUMNS),
                _records(tasks),
            )
            _store_rows(con, _records(results))

    def tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The stored ``tasks`` and ``results`` tables as they are (r_train as text), for
        copying tasks between stores. Read only, in either layout: a column an older oodfs did not
        store is None, as the schema update of a writing connection would make it."""
        if not self.exists():
            raise OodfsError(f"no results in {self.out_dir} (expected {DB_NAME})")
        with self._reading() as con:
            names = _names(con)
            if names.get("results") == "view":
                results = _read_grouped(con)
            else:
                results = _read_present(con, "results", RESULT_COLUMNS, names)
            tasks = _read_present(con, "tasks", TASK_COLUMNS, names)
        return tasks, results

    def frame(self) -> pd.DataFrame:
        """The long results table (one row per task, grid point and metric)."""
        if not self.exists():
            raise OodfsError(f"no results in {self.out_dir} (expected {DB_NAME} or results.parquet)")
        if self.path.stat().st_size == 0:
            raise OodfsError(f"{self.path} is empty (0 bytes): it holds no results")
        with self._reading() as con:
            damage = check_store(con)
            if damage:
                raise OodfsError(f"{self.path} is damaged: {damage.summary()} ({DAMAGE_HINT})")
            if "results" not in self._tables(con):
                raise OodfsError(f"{self.path} holds no oodfs results (no results table)")
            if _names(con)["results"] == "table":  # the first layout, read as it is
                df = pd.read_sql_query("SELECT * FROM results", con)
            else:
                df = _read_grouped(con)
        return _typed(df)


#: free space below which SQLite's "disk I/O error" is a full disk (a WAL store grows its -shm file in
#: 32 KiB steps and its -wal file page by page, and says no more than that when it cannot)
_NEARLY_FULL = 1 << 20


def _reason(exc: BaseException, folder: Path | None = None) -> str:
    reason = (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or type(exc).__name__
    if folder is not None and isinstance(exc, sqlite3.OperationalError) and "disk I/O error" in reason:
        with contextlib.suppress(OSError):
            fs = os.statvfs(folder)
            if fs.f_bavail * fs.f_frsize < _NEARLY_FULL:
                reason += f": No space left on device ({fs.f_bavail * fs.f_frsize // 1024} KiB free)"
    return reason


def _plain(value):
    """A numpy scalar as its Python value (SQLite would store it as a BLOB), anything else as is."""
    return value.item() if isinstance(value, np.generic) else value


def task_key(key) -> TaskKey:
    """A task's key as the store keeps it, in plain Python types whatever the caller passed (a
    numpy run, a numeric r_train): setting and method as text, r_train as its text key
    (:func:`oodfs.contract.task.env_key`), run an int. Every write and delete goes through it, so a
    task committed again replaces its stored copy and a resumed run finds it."""
    setting, r_train, run, method = (_plain(v) for v in key)
    if isinstance(run, bool) or not isinstance(run, int):
        if not (isinstance(run, float) and run.is_integer()):
            raise OodfsError(f"a task's run must be a whole number, got {run!r} (task {setting}, {method})")
        run = int(run)
    return TaskKey(str(setting), env_key(r_train), run, str(method))


def _delete_tasks(con: sqlite3.Connection, keys: list[tuple], as_stored: bool = False) -> None:
    """Remove the tasks ``keys`` with their rows: keys a caller gives, normalised by
    :func:`task_key`; or, ``as_stored``, keys read back from the store (a damaged task's run may
    hold text, and is removed as it is stored)."""
    keys = [tuple(_plain(v) for v in k) if as_stored else task_key(k) for k in keys]
    where = "setting = ? AND r_train = ? AND run = ? AND method = ?"
    groups = f"SELECT id FROM result_groups WHERE {where}"
    con.executemany(f"DELETE FROM result_rows WHERE group_id IN ({groups})", keys)
    con.executemany(f"DELETE FROM result_groups WHERE {where}", keys)
    con.executemany(f"DELETE FROM tasks WHERE {where}", keys)


def _read_present(con: sqlite3.Connection, table: str, columns: list[str], names: dict) -> pd.DataFrame:
    """``columns`` of ``table`` in their stored order, those it lacks (an older store's) as None;
    a table it lacks: no rows."""
    have = {row[1] for row in con.execute(f"PRAGMA table_info({table})")} if table in names else set()
    present = [c for c in columns if c in have]
    if not present:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    df = pd.read_sql_query(f"SELECT {', '.join(present)} FROM {table} ORDER BY rowid", con)
    for c in columns:
        if c not in have:
            df[c] = pd.Series([None] * len(df), dtype=object)
    return df[columns]


def _read_grouped(con: sqlite3.Connection) -> pd.DataFrame:
    """The long table of the current layout in the order its rows were stored (a reader's frame, a
    reference's rows): the frame the join of rows and groups reads (the view ``results``), but each
    group's columns read and typed once, then repeated over its rows (the join made and converted
    them once per row, most of a leaderboard's reading time). Groups are typed from those that
    have rows, the values the join sees, so every column has the join's type; rows whose group is
    gone are left out, as the join leaves them."""
    row_sql = f"SELECT group_id, {', '.join(ROW_COLUMNS)} FROM result_rows ORDER BY rowid"
    group_sql = (
        f"SELECT id, {', '.join(GROUP_COLUMNS)} FROM result_groups"
        " WHERE id IN (SELECT group_id FROM result_rows)"  # groups with rows: typed as the join sees them
    )
    snapshot = not con.in_transaction  # both reads in one: a task a run replaces between them is not split
    if snapshot:
        con.execute("BEGIN")
    try:
        rows = pd.read_sql_query(row_sql, con)
        groups = pd.read_sql_query(group_sql, con)
    finally:
        if snapshot:
            con.rollback()  # a read: nothing to keep
    at = pd.Index(groups.pop("id")).get_indexer(rows.pop("group_id"))
    if (at < 0).any():
        rows, at = rows[at >= 0].reset_index(drop=True), at[at >= 0]
    df = groups.take(at).reset_index(drop=True)
    for col in ROW_COLUMNS:
        df[col] = rows[col]
    return df[RESULT_COLUMNS]


def _records(df: pd.DataFrame) -> list[tuple]:
    """Rows as tuples of Python values (NaN/NA -> None, numpy scalars -> Python numbers), column by
    column: numbers and text convert in numpy and pandas, other objects one by one."""
    return list(zip(*(_python_values(df[col]) for col in df.columns))) if len(df.columns) else [()] * len(df)


def _python_values(col: pd.Series) -> list:
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "biu":
        return col.to_numpy().tolist()
    if isinstance(col.dtype, pd.CategoricalDtype):  # a reference's text columns: each level once
        levels = np.array([*_python_values(pd.Series(col.cat.categories)), None], dtype=object)
        return levels[col.cat.codes.to_numpy()].tolist()  # code -1 (missing) takes the last: None
    values = col.to_numpy(dtype=object, na_value=None).tolist()  # NaN, NA, None -> None
    if col.dtype == object and any(issubclass(kind, np.generic) for kind in set(map(type, values))):
        values = [v.item() if isinstance(v, np.generic) else v for v in values]  # numpy scalars
    return values


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    df["r_train"] = _numeric_or_text(df["r_train"])
    return df


def _numeric_or_text(col: pd.Series) -> pd.Series:
    converted = pd.to_numeric(col, errors="coerce")
    return converted if converted.notna().all() else col


def load_results(path: str | Path) -> pd.DataFrame:
    """Results from an output folder (SQLite, else parquet/CSV) or a results file."""
    path = Path(path)
    if path.is_dir():
        store = ResultStore(path)
        if store.exists():
            others = [n for n in ("results.parquet", "results.csv") if (path / n).exists()]
            if store.path.is_file() and store.path.stat().st_size == 0 and others:
                raise OodfsError(
                    f"{store.path} is empty (0 bytes) although {path / others[0]} is there: "
                    f"read that file directly (oodfs leaderboard {path / others[0]}) or remove the empty one"
                )
            return store.frame()
        for name in ("results.parquet", "results.csv"):
            if (path / name).exists():
                return load_results(path / name)
        raise OodfsError(f"no results in {path} (expected {DB_NAME}, results.parquet or results.csv)")
    if not path.exists():
        raise OodfsError(f"{path} does not exist")
    if path.suffix not in (".parquet", ".csv"):
        raise OodfsError(f"{path}: expected a results folder, .parquet or .csv file")
    try:
        df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001 -- pyarrow and pandas raise many kinds for a bad file
        raise OodfsError(
            f"cannot read {path}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        ) from None
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise OodfsError(f"{path} is not an oodfs results table (no column {', '.join(missing)})")
    return df


#: the columns every results table has (what a report cannot do without)
_REQUIRED = (
    "suite",
    "setting",
    "r_train",
    "run",
    "method",
    "point",
    "metric",
    "env",
    "k",
    "value",
    "status",
    "error",
)


def export(df: pd.DataFrame, out_dir: Path) -> Path:
    """Write the long table next to the SQLite file (parquet)."""
    # in one step: a reader never sees half a file, a full disk leaves the old table (or none)
    return write_atomically(Path(out_dir) / "results.parquet", lambda out: df.to_parquet(out, index=False))


# -- checking a store's contents ------------------------------------------------------------------
#: what each stored column may hold (SQLite's typeof): a value of another type is damage
_TYPES = {
    "tasks": {
        "setting": ("text",),
        "r_train": ("text",),
        "run": ("integer",),
        "method": ("text",),
        "status": ("text",),
        "error": ("text", "null"),
        "finished_at": ("real", "integer", "null"),
        "identity": ("text", "null"),
        "parts": ("text", "null"),
        "origin": ("text", "null"),
    },
    "results": {
        "setting": ("text",),
        "r_train": ("text",),
        "run": ("integer",),
        "method": ("text",),
        "point": ("integer", "null"),
        "is_default": ("integer", "null"),
        "metric": ("text", "null"),
        "env": ("text", "null"),
        "k": ("integer", "null"),
        "value": ("real", "integer", "null"),
        "seed": ("integer", "null"),
        "status": ("text", "null"),
        "fit_seconds": ("real", "integer", "null"),
        "downstream_seconds": ("real", "integer", "null"),
        "data_seconds": ("real", "integer", "null"),
    },
}
#: columns holding JSON text
_JSON = {"tasks": ("parts",), "results": ("params", "scores", "feature_names", "versions", "subset")}
_STATUSES = ("ok", "failed")
#: the current layout's two tables (the view ``results`` joins them)
_PARTS = ("result_groups", "result_rows")
_KEY_SQL = ", ".join(TASK_KEY)


class Damage:
    """What :func:`check_store` found: damaged tasks (key -> what is wrong with it), rows of no
    task, and damaged records that belong to no task (run metadata, invocations)."""

    def __init__(self):
        self.tasks: dict[tuple, list[str]] = {}
        self.orphan_rows = 0
        self.records: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.tasks or self.orphan_rows or self.records)

    def task(self, key, what: str) -> None:
        found = self.tasks.setdefault(tuple(key), [])
        if what not in found:
            found.append(what)

    def summary(self, limit: int = 3) -> str:
        """One line: how many tasks, the first few named with what is wrong, and the rest."""
        parts = []
        if self.tasks:
            named = [f"{_task_label(k)}: {', '.join(w)}" for k, w in list(self.tasks.items())[:limit]]
            more = f" and {len(self.tasks) - limit} more" if len(self.tasks) > limit else ""
            parts.append(
                f"{len(self.tasks)} damaged task{'s' * (len(self.tasks) != 1)} ({'; '.join(named)}{more})"
            )
        if self.orphan_rows:
            parts.append(f"{self.orphan_rows} result row{'s' * (self.orphan_rows != 1)} of no stored task")
        parts += self.records
        return "; ".join(parts)


def _task_label(key) -> str:
    setting, r_train, run, method = key
    return f"setting {setting!r}, r_train {r_train!s:.40}, run {run!s:.20}, method {method!r}"


def _json_ok(text) -> bool:
    if text is None:
        return True
    try:
        json.loads(text)
    except (TypeError, ValueError):
        return False
    return True


_INVOCATION_DAMAGE = "not valid JSON or without the suite the reports read"


def _invocation_ok(text) -> bool:
    return _invocation_problem(text) is None


#: the fields of an invocation record the reports read (the results page's overview), each
#: absent or of this type
_PROVENANCE_FIELDS = {
    ("argv",): list,
    ("versions",): dict,
    ("environment",): dict,
    ("environment", "oodfs_git"): dict,
    ("environment", "platform"): str,
    ("environment", "usable_cpus"): int,
    ("host",): str,
}


def _invocation_problem(text) -> str | None:
    """What is wrong with an invocation record, or None: it is JSON with what the reports read
    from it: its suite's methods (a list of names), selection rule (text) and metrics (a list of
    names), and the provenance fields of :data:`_PROVENANCE_FIELDS` of their types."""
    try:
        record = json.loads(text)
    except (TypeError, ValueError):
        return "not valid JSON"
    suite = record.get("suite") if isinstance(record, dict) else None
    if not isinstance(suite, dict):
        return "no suite"
    methods, metrics = suite.get("methods"), suite.get("metrics")
    if not (isinstance(methods, list) and all(isinstance(m, str) for m in methods)):
        return "suite.methods is not a list of names"
    if not isinstance(suite.get("selection"), (str, type(None))):
        return "suite.selection is not text"
    if not (isinstance(metrics, (list, type(None))) and all(isinstance(m, str) for m in metrics or [])):
        return "suite.metrics is not a list of names"
    for path, kind in _PROVENANCE_FIELDS.items():
        value = record
        for step in path:
            value = value.get(step) if isinstance(value, dict) else None
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            return f"{'.'.join(path)} is not {_KINDS[kind]}"
    return None


_KINDS = {list: "a list", dict: "an object", str: "text", int: "a whole number"}


def check_store(con: sqlite3.Connection) -> Damage:
    """Check a store's contents (a read connection): SQLite's own integrity check, the type of
    every column, the JSON fields, each task's rows (a task without rows, rows without a task),
    mixed numeric and text r_train. Fast enough to run on every read (types in SQL, JSON once
    per distinct value)."""
    found = Damage()
    tables = set(_names(con))
    problems = [row[0] for row in con.execute("PRAGMA quick_check(3)")]
    if problems != ["ok"]:
        raise sqlite3.DatabaseError(" ".join("; ".join(problems).split()))  # one line
    grouped = bool(set(_PARTS) & tables)  # the current layout (else one results table, or none)
    missing = [name for name in (*_PARTS, "results") if name not in tables] if grouped else []
    if missing:  # a part of the current layout dropped: every task lost its rows
        found.records.append(f"{'view' if missing[0] == 'results' else 'table'} {missing[0]} is missing")
        if "tasks" in tables:
            for key in con.execute(f"SELECT {_KEY_SQL} FROM tasks"):
                found.task(key, "no result rows")
        return found
    if not {"tasks", "results"} & tables:  # no oodfs store: the reader says so
        return found
    if not {"tasks", "results"} <= tables:  # one of them dropped: what the other holds is damaged
        _missing_table(con, found, tables)
        return found
    strict = _strict_json(con)
    source = "result_groups" if grouped else "results"  # where the group columns are, each once
    _check_columns(con, found, "tasks", strict)
    _check_columns(con, found, source, strict, _TYPES["results"], _JSON["results"])
    if grouped:
        rows = {col: kinds for col, kinds in _TYPES["results"].items() if col in ROW_COLUMNS}
        _check_columns(con, found, "results", strict, rows, ())
    _check_values(con, found, tables)
    _check_scores(con, found, strict, source)
    _check_keys(con, found, tables, source)
    statuses = ", ".join(f"'{s}'" for s in _STATUSES)
    for key in con.execute(f"SELECT {_KEY_SQL} FROM tasks WHERE status NOT IN ({statuses})"):
        found.task(key, "unknown status")
    for key in con.execute(
        f"SELECT {_KEY_SQL} FROM tasks t WHERE NOT EXISTS (SELECT 1 FROM results r WHERE "
        "r.setting = t.setting AND r.r_train = t.r_train AND r.run = t.run AND r.method = t.method)"
    ):
        found.task(key, "no result rows")
    found.orphan_rows = con.execute(
        "SELECT COUNT(*) FROM results r WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE r.setting = t.setting "
        "AND r.r_train = t.r_train AND r.run = t.run AND r.method = t.method)"
    ).fetchone()[0]
    if grouped:  # rows whose group is gone (the view leaves them out)
        found.orphan_rows += con.execute(
            "SELECT COUNT(*) FROM result_rows r WHERE NOT EXISTS (SELECT 1 FROM result_groups g WHERE "
            "g.id = r.group_id)"
        ).fetchone()[0]
    keys = [row for row in con.execute(f"SELECT {_KEY_SQL} FROM tasks")]
    numeric = [k for k in keys if _is_rate(k[1])]
    if numeric and len(numeric) < len(keys):  # bias rates (or sets of them) and labels never mix
        for key in keys:
            if not _is_rate(key[1]):
                found.task(key, "r_train is text among numbers")
    if "meta" in tables:
        for key, value in con.execute("SELECT key, value FROM meta"):
            if not _json_ok(value):
                found.records.append(f"run metadata {key!r} is not valid JSON")
    if "invocations" in tables:
        bad = [
            (rowid, _invocation_problem(p))
            for rowid, p in con.execute("SELECT rowid, provenance FROM invocations")
            if _invocation_problem(p)
        ]
        if bad:
            found.records.append(
                f"{len(bad)} invocation record{'s' * (len(bad) != 1)} {_INVOCATION_DAMAGE} "
                f"(invocations.provenance, row {bad[0][0]}: {bad[0][1]})"
            )
    return found


def _missing_table(con: sqlite3.Connection, found: "Damage", tables: set) -> None:
    """A store with ``tasks`` but no ``results`` table (or the other way round): every task lost
    its rows (or every row its task)."""
    if "results" not in tables:
        found.records.append("table results is missing")
        for key in con.execute(f"SELECT {_KEY_SQL} FROM tasks"):
            found.task(key, "no result rows")
    else:
        found.records.append("table tasks is missing")
        found.orphan_rows = con.execute("SELECT COUNT(*) FROM results").fetchone()[0]


#: the largest |value| a stored metric or feature score can have: the reports square values (a
#: standard deviation over runs), and beyond 1e150 the square overflows. Inputs are refused
#: beyond float32's 3.4e38 (oodfs.validation.FLOAT32_MAX), so no RMSE, MSE, F1, rank, beta error
#: or time computed from them comes near this; a larger value, or inf, was written by something
#: other than oodfs
MAX_STORED_VALUE = 1e150
#: how far a value may pass a metric's declared bounds by rounding (an ESS fraction of 1 + 1e-16)
_BOUNDS_SLACK = 1e-9


def _check_columns(
    con: sqlite3.Connection, found: "Damage", table: str, strict: bool, types=None, texts=None
) -> None:
    """Each column's SQLite type and each JSON column's text, in one scan of ``table`` (a scan per
    check made reading a large store slow): SQL picks the rows with a wrong type, and the texts
    SQLite's strict JSON parser rejects (``strict``: :func:`_strict_json`); Python's parser decides
    about those (it also takes NaN). ``types``, ``texts``: the columns to check (default: the
    table's in :data:`_TYPES` and :data:`_JSON`), those ``table`` has."""
    have = {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
    types = _TYPES[table] if types is None else types
    types = [(col, kinds) for col, kinds in types.items() if col in have]
    texts = [col for col in (_JSON[table] if texts is None else texts) if col in have]
    wrong = [f"typeof({col}) NOT IN ({', '.join(repr(k) for k in kinds)})" for col, kinds in types]
    suspect = [
        f"{col} IS NOT NULL AND (typeof({col}) != 'text' OR NOT json_valid({col}))" if strict else "0"
        for col in texts
    ]
    flags = [f"({c})" for c in wrong + suspect] or ["0"]
    picked = ", ".join([*flags, *(f"CASE WHEN {c} THEN {col} END" for c, col in zip(suspect, texts))])
    rows = con.execute(f"SELECT {_KEY_SQL}, {picked} FROM {table} WHERE {' OR '.join(flags)}").fetchall()
    for i, (col, kinds) in enumerate(types):
        for row in rows:
            if row[4 + i]:
                found.task(
                    row[:4], f"{col} holds {_kind(kinds)}" if col != "value" else "value is not a number"
                )
    for j, col in enumerate(texts):
        if strict:
            at = 4 + len(flags) + j
            candidates = [(row[at], row[:4]) for row in rows if row[4 + len(types) + j]]
        else:  # an SQLite without a strict JSON check: every distinct text goes to Python's parser
            candidates = [(text, None) for (text,) in con.execute(f"SELECT DISTINCT {col} FROM {table}")]
        bad = list(dict.fromkeys(text for text, _ in candidates if text is not None and not _json_ok(text)))
        for text in bad:
            if strict:
                keys = [key for value, key in candidates if value == text]
            else:
                keys = con.execute(f"SELECT DISTINCT {_KEY_SQL} FROM {table} WHERE {col} = ?", (text,))
            for key in keys:
                found.task(key, f"{col} is not valid JSON")


def _strict_json(con: sqlite3.Connection) -> bool:
    """Whether this SQLite's json_valid() accepts only standard JSON (JSON1 built in, and not the
    JSON5 leniency of versions 3.42-3.44), so that it can pick the texts Python must check."""
    probe = "SELECT json_valid('{a:1}'), json_valid('[1,]'), json_valid('[1]')"
    try:
        return con.execute(probe).fetchone() == (0, 0, 1)
    except sqlite3.Error:
        return False


def _check_values(con: sqlite3.Connection, found: "Damage", tables: set) -> None:
    """The values a read trusts: a finished task's metric rows hold a number (not NULL) no
    larger than MAX_STORED_VALUE (not inf), each of a downstream model the run trained (its
    invocation records name them: a row relabelled to another model is damage)."""
    for key in con.execute(
        f"SELECT DISTINCT {_KEY_SQL} FROM results WHERE status = 'ok' AND metric IS NOT NULL "
        "AND value IS NULL"
    ):
        found.task(key, "a metric row without a value")
    for key in con.execute(
        f"SELECT DISTINCT {_KEY_SQL} FROM results WHERE typeof(value) IN ('real', 'integer') AND "
        f"abs(value) > {MAX_STORED_VALUE!r}"
    ):
        found.task(key, f"a results.value beyond {MAX_STORED_VALUE:g} or infinite")
    _check_bounds(con, found)
    have = {row[1] for row in con.execute("PRAGMA table_info(results)")}
    if "invocations" not in tables or "downstream" not in have:
        return
    trained = set()
    for (text,) in con.execute("SELECT provenance FROM invocations"):
        suite = json.loads(text).get("suite", {}) if _invocation_ok(text) else {}
        models = suite.get("downstream")
        trained |= {models} if isinstance(models, str) else set(models or ())
    if not trained:  # a store from before invocations named their models
        return
    marks = ", ".join("?" * len(trained))
    for row in con.execute(
        f"SELECT DISTINCT {_KEY_SQL}, downstream FROM results WHERE downstream IS NOT NULL AND "
        f"downstream NOT IN ({marks})",
        sorted(trained),
    ):
        found.task(row[:4], f"rows of downstream model {row[4]!r}, which the run did not train")


def _declared_bounds() -> dict:
    """``{metric: (low, high)}`` of the registered metrics that declare bounds
    (:attr:`oodfs.contract.metrics.Metric.bounds`)."""
    from oodfs.contract.registry import registry

    out = {}
    for name, info in registry().entries("metric").items():
        bounds = getattr(info.cls, "bounds", None)
        if bounds:
            out[name] = bounds
    return out


def _check_bounds(con: sqlite3.Connection, found: "Damage") -> None:
    """A metric's value outside its declared bounds (an F1 of 5, a negative RMSE) is damage: one
    scan of the results, joined to the bounds."""
    bounds = _declared_bounds()
    if not bounds:
        return
    groups: dict[tuple, list[str]] = {}  # metrics by their bounds: a few conditions, one scan
    for name, (low, high) in bounds.items():
        low = -math.inf if low is None else low - _BOUNDS_SLACK * max(1.0, abs(low))
        high = math.inf if high is None else high + _BOUNDS_SLACK * max(1.0, abs(high))
        groups.setdefault((low, high), []).append(name)
    conditions, params = [], []
    for (low, high), names in groups.items():
        conditions.append(f"(metric IN ({', '.join('?' * len(names))}) AND (value < ? OR value > ?))")
        params += [*names, low, high]
    query = (
        f"SELECT {_KEY_SQL}, metric, value FROM results WHERE typeof(value) IN ('real', 'integer') AND "
        f"({' OR '.join(conditions)}) GROUP BY {_KEY_SQL}, metric"
    )
    for *key, metric, value in con.execute(query, params):
        low, high = bounds[metric]
        shown = f"[{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}]"
        found.task(key, f"results.value of metric {metric!r} is {value:g}, outside its range {shown}")


def _check_scores(con: sqlite3.Connection, found: "Damage", strict: bool, source: str = "results") -> None:
    """A row's feature scores are a list of numbers, one per feature name, none beyond
    MAX_STORED_VALUE or infinite (NaN is a method's "no score"). With SQLite's JSON functions
    (``strict``), in SQL over each distinct list (one scan); what only Python reads (NaN,
    Infinity), or everything without them, in Python."""
    have = {row[1] for row in con.execute(f"PRAGMA table_info({source})")}
    if not {"scores", "feature_names"} <= have:
        return
    pairs = (
        f"SELECT DISTINCT {_KEY_SQL}, scores, feature_names FROM {source} WHERE scores IS NOT NULL "
        "AND feature_names IS NOT NULL"
    )
    if strict:  # (CASE: SQLite evaluates the JSON functions only on valid JSON, in any plan)
        valid = (
            "json_valid(scores) AND json_valid(feature_names) AND json_type(scores) = 'array' AND "
            "json_type(feature_names) = 'array'"
        )
        query = (
            f"SELECT {_KEY_SQL}, CASE WHEN {valid} THEN json_array_length(scores) END, CASE WHEN {valid} "
            f"THEN json_array_length(feature_names) END, CASE WHEN {valid} THEN (SELECT COUNT(*) FROM "
            "json_each(scores) j WHERE j.type NOT IN ('integer', 'real', 'null') OR abs(j.value) > "
            f"{MAX_STORED_VALUE!r}) END, json_valid(scores) AND json_valid(feature_names) FROM ({pairs})"
        )
        for *key, scores, names, bad, valid_json in con.execute(query):
            if valid_json and (scores is None or scores != names):
                found.task(key, _length_problem(scores, names))
            elif bad:
                found.task(key, _SCORE_DAMAGE)
        pairs += " AND NOT (json_valid(scores) AND json_valid(feature_names))"  # for Python
    for *key, scores, names in con.execute(pairs):
        problem = _scores_problem(scores, names)
        if problem:
            found.task(key, problem)


_SCORE_DAMAGE = f"results.scores holds a value that is not a number, beyond {MAX_STORED_VALUE:g} or infinite"


def _length_problem(scores, names) -> str:
    if scores is None or names is None:
        return "results.scores or results.feature_names is not a list"
    return f"results.scores holds {scores} values for {names} results.feature_names"


def _scores_problem(scores_text, names_text) -> str | None:
    """What is wrong with a row's scores (Python's reading, also of NaN and Infinity), or None."""
    try:
        scores, names = json.loads(scores_text), json.loads(names_text)
    except (TypeError, ValueError):
        return None  # not JSON: _check_columns names it
    if not isinstance(scores, list) or not isinstance(names, list):
        return _length_problem(None, None)
    if len(scores) != len(names):
        return _length_problem(len(scores), len(names))
    for s in scores:
        if s is None or (isinstance(s, float) and math.isnan(s)):
            continue
        if isinstance(s, bool) or not isinstance(s, (int, float)) or abs(s) > MAX_STORED_VALUE:
            return _SCORE_DAMAGE
    return None


def _check_keys(con: sqlite3.Connection, found: "Damage", tables: set, source: str = "results") -> None:
    """A task's key is the one its rows were computed for: its r_train is one the run's suite
    names (its invocation records), and the seed stored with its rows is the one derived from
    its setting, r_train, run and method (:meth:`oodfs.contract.task.DataKey.seed`), so a task
    relabelled to another r_train, run, setting or method is damage. Tasks copied from reference
    results carry the reference's seed and are checked for their r_train only."""
    from oodfs.contract.seeds import derive_seed
    from oodfs.contract.task import env_key

    if "invocations" not in tables:
        return
    values, seeds = {}, set()  # r_train key -> the suite's value; the suites' seeds
    for (text,) in con.execute("SELECT provenance FROM invocations"):
        suite = json.loads(text).get("suite", {}) if _invocation_ok(text) else {}
        entries = [*(suite.get("r_train") or ()), *(suite.get("curve_r_train") or ())]
        if "r_train" not in suite or not isinstance(suite.get("seed"), int):
            return  # a store from before invocations named them: nothing to compare with
        for entry in entries:
            value = tuple(entry) if isinstance(entry, list) else entry
            values[env_key(value)] = value
        seeds.add(suite["seed"])
    if not values:
        return
    for key in con.execute(f"SELECT {_KEY_SQL} FROM tasks"):
        if key[1] not in values:
            found.task(key, f"tasks.r_train {key[1]!r} is not an r_train of the run's suite")
    have = {row[1] for row in con.execute("PRAGMA table_info(tasks)")}
    copied = set()  # tasks copied from reference results
    if "origin" in have:
        copied = {tuple(k) for k in con.execute(f"SELECT {_KEY_SQL} FROM tasks WHERE origin = 'reference'")}
    for setting, r_train, run, method, seed in con.execute(
        f"SELECT DISTINCT {_KEY_SQL}, seed FROM {source} WHERE typeof(seed) = 'integer'"
    ):
        if (
            r_train in values
            and (setting, r_train, run, method) not in copied
            and not any(derive_seed(s, setting, values[r_train], run, method) == seed for s in seeds)
        ):
            found.task(
                (setting, r_train, run, method),
                "results.seed is not the seed of its setting, r_train, run and method (relabelled?)",
            )


def _kind(kinds) -> str:
    names = {"text": "text", "integer": "an integer", "real": "a number", "null": "nothing"}
    return "something other than " + " or ".join(names[k] for k in kinds if k != "null")


def _is_rate(text) -> bool:
    """A stored r_train that names bias rates: one number, or a set of them ("(1.5, 2.0, 3.0)")."""
    text = str(text)
    if text.startswith("(") and text.endswith(")"):
        members = [m for m in text[1:-1].split(",") if m.strip()]
        return bool(members) and all(_is_number(m) for m in members)
    return _is_number(text)


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True
