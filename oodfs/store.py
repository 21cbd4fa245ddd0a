"""Durable results: one SQLite file per output folder, one transaction per finished task.

A task is (setting, r_train, run, method). Its rows (every grid point x every metric) and its
entry in ``tasks`` are committed together, so a run killed at any moment leaves either the
whole task or none of it; ``--resume`` skips exactly the committed tasks. SQLite (standard
library, WAL mode) lets parallel workers on one machine commit independently.
"""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pandas as pd

from .validation import OodfsError

DB_NAME = "results.sqlite"

RESULT_COLUMNS = [
    "suite", "profile", "setting", "r_train", "run", "method", "method_kind", "point", "params", "is_default",
    "metric", "env", "k", "value", "seed", "scores", "feature_names", "status", "error", "fit_seconds",
    "downstream_seconds", "data_seconds", "oodfs_version", "versions",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS tasks (
    setting TEXT, r_train TEXT, run INTEGER, method TEXT, status TEXT, error TEXT,
    finished_at REAL, PRIMARY KEY (setting, r_train, run, method));
CREATE TABLE IF NOT EXISTS results (
    suite TEXT, profile TEXT, setting TEXT, r_train TEXT, run INTEGER, method TEXT, method_kind TEXT, point INTEGER,
    params TEXT, is_default INTEGER, metric TEXT, env TEXT, k INTEGER, value REAL, seed INTEGER,
    scores TEXT, feature_names TEXT, status TEXT, error TEXT, fit_seconds REAL, downstream_seconds REAL,
    data_seconds REAL, oodfs_version TEXT, versions TEXT);
CREATE TABLE IF NOT EXISTS invocations (started_at REAL, provenance TEXT);
"""


def env_key(value) -> str:
    """A stable text key for an environment id (2.5 -> '2.5'), so floats compare exactly."""
    return repr(float(value)) if isinstance(value, (int, float)) else str(value)


class ResultStore:
    def __init__(self, out_dir: str | Path):
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / DB_NAME

    def exists(self) -> bool:
        return self.path.exists()

    def connect(self) -> sqlite3.Connection:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        con = sqlite3.connect(self.path, timeout=120)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        con.executescript(_SCHEMA)
        return con

    # -- run-level metadata ----------------------------------------------------------------
    def get_meta(self, key: str):
        with self.connect() as con:
            row = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value) -> None:
        with self.connect() as con:
            con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def add_invocation(self, provenance: dict) -> None:
        with self.connect() as con:
            con.execute("INSERT INTO invocations VALUES (?, ?)", (time.time(), json.dumps(provenance)))

    def invocations(self) -> list[dict]:
        with self.connect() as con:
            return [json.loads(p) for (p,) in con.execute("SELECT provenance FROM invocations ORDER BY started_at")]

    # -- tasks -----------------------------------------------------------------------------
    def finished_tasks(self) -> set[tuple[str, str, int, str]]:
        if not self.exists():
            return set()
        with self.connect() as con:
            return {tuple(r) for r in con.execute("SELECT setting, r_train, run, method FROM tasks")}

    def commit_task(self, key: tuple, status: str, error: str | None, rows: list[dict]) -> None:
        """Write one finished task atomically (all its rows and its tasks entry, or nothing)."""
        setting, r_train, run, method = key
        con = self.connect()
        try:
            with con:  # one transaction
                con.execute(
                    "INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (setting, r_train, run, method, status, error, time.time()),
                )
                con.executemany(
                    f"INSERT INTO results VALUES ({', '.join('?' * len(RESULT_COLUMNS))})",
                    [tuple(row.get(c) for c in RESULT_COLUMNS) for row in rows],
                )
        except sqlite3.IntegrityError:
            pass  # committed already by an earlier attempt: never duplicate a task
        finally:
            con.close()

    def frame(self) -> pd.DataFrame:
        """The long results table (one row per task, grid point and metric)."""
        if not self.exists():
            raise OodfsError(f"no results in {self.out_dir} (expected {DB_NAME} or results.parquet)")
        with self.connect() as con:
            df = pd.read_sql_query("SELECT * FROM results", con)
        return _typed(df)


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
            return store.frame()
        for name in ("results.parquet", "results.csv"):
            if (path / name).exists():
                return load_results(path / name)
        raise OodfsError(f"no results in {path} (expected {DB_NAME}, results.parquet or results.csv)")
    if not path.exists():
        raise OodfsError(f"{path} does not exist")
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix == ".csv":
        return pd.read_csv(path)
    raise OodfsError(f"{path}: expected a results folder, .parquet or .csv file")


def export(df: pd.DataFrame, out_dir: Path) -> Path:
    """Write the long table next to the SQLite file (parquet)."""
    target = Path(out_dir) / "results.parquet"
    tmp = target.with_suffix(".parquet.tmp")
    df.to_parquet(tmp, index=False)
    tmp.replace(target)  # atomic: a reader never sees half a file
    return target
