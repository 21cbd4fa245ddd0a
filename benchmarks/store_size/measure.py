"""How many bytes a results store takes per task, in the first layout (one ``results`` table, every
column on every row) and in the current one (``result_groups`` + ``result_rows``, docs/PROTOCOL.md,
"The results store"), and what the layout does to reading and writing time.

    python benchmarks/store_size/measure.py run [--work DIR] [--jobs 2]
    python benchmarks/store_size/measure.py measure FOLDER [FOLDER ...] [--repeats 5]

``run``: writes a synthetic binary table like the one of the report that asked for this (15,000
rows, 79 numeric features, 7 environments; seed 0) and a ``binary_table`` suite file beside it
(3 training environments x 6 runs x 8 methods = 144 tasks; downstream logistic and mlp, as the
shipped binary suites), runs ``oodfs bench`` on it into ``WORK/bench`` and measures that folder.

``measure``: for each folder's store, the same tasks in both layouts, each written and read by
the code of its layout: the first layout by ``oodfs/results/store.py`` as it was at commit
``--before`` (read from git: the last commit before the current layout), the current one by this
checkout. The store as it is, and a copy in the other layout made from the same rows (the first
layout: the old module's ``insert_tasks``; the current layout: the conversion a run makes when it
first writes to a first-layout folder). For each: the file's bytes, bytes per task, the bytes of
each table and index (SQLite's ``dbstat``, when compiled in), the free pages; the time to read the
frame every reader gets (``load_results``, which checks the store first) and the time to write
every task again into an empty store, one ``commit_task`` (one transaction) per task, as medians of
``--repeats`` runs alternating the layouts, and their ratio. The frames both read are compared
(``pandas.testing.assert_frame_equal``).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from oodfs.results.store import RESULT_COLUMNS, ResultStore

SUITE = """description = "store size: a 15,000-row binary table (benchmarks/store_size)"
environment = "binary_table"
task = "binary"
r_train = ["a", "b", "c"]
unit = "environment"
r_test = ["d", "e", "f", "g"]
runs = 6
n_train = 450
n_val = 150
n_test = 100000
k = 10
methods = ["correlation", "mi", "lasso", "dwr", "ols", "srdo"]
yardsticks = ["all_features", "prior"]
downstream = ["logistic", "mlp"]
selection = "val"

[settings.table.params]
path = "table.csv"
target = "y"
positive = 1
env_column = "region"
"""

#: the last commit whose store wrote the first layout
BEFORE = "35dac9b"
ROOT = Path(__file__).resolve().parents[2]
_KEY = ["setting", "r_train", "run", "method"]


def old_store(rev: str):
    """``oodfs/results/store.py`` as it was at ``rev``, as a module."""
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:oodfs/results/store.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="oodfs-old-store-")) / "old_store.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("old_store", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shutil.rmtree(path.parent)  # (the module is loaded: its file is no longer needed)
    return module


def write_table(work: Path) -> Path:
    rng = np.random.default_rng(0)
    n, d = 15000, 79
    env = rng.integers(0, 7, n)
    X = rng.normal(size=(n, d)) + 0.3 * env[:, None] * (np.arange(d) % 3 == 0)
    logit = X[:, :5].sum(1) - 0.5
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(d)])
    df["region"] = np.array(list("abcdefg"))[env]
    df["y"] = y
    work.mkdir(parents=True, exist_ok=True)
    df.to_csv(work / "table.csv", index=False)
    (work / "suite.toml").write_text(SUITE)
    return work / "suite.toml"


def layout(path: Path) -> str:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        kind = con.execute("SELECT type FROM sqlite_master WHERE name = 'results'").fetchone()
    return "first" if kind == ("table",) else "current"


def stats(path: Path) -> dict:
    """Bytes of the file, of each table and index, free pages, tasks and rows."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        tasks = con.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
        rows = con.execute("SELECT COUNT(*) FROM results").fetchone()[0]
        free = (
            con.execute("PRAGMA freelist_count").fetchone()[0] * con.execute("PRAGMA page_size").fetchone()[0]
        )
        try:
            parts = dict(con.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"))
        except sqlite3.OperationalError:  # SQLite without dbstat
            parts = {}
    wal = path.with_name(path.name + "-wal")
    return {
        "bytes": path.stat().st_size,
        "wal": wal.stat().st_size if wal.exists() else 0,
        "free": free,
        "tasks": tasks,
        "rows": rows,
        "parts": parts,
    }


def first_layout_copy(store: ResultStore, folder: Path, old) -> Path:
    """The store's tasks in the first layout: its other tables as they are, its rows written by the
    old module (``old``)."""
    folder.mkdir(parents=True)
    target = folder / "results.sqlite"
    tasks, results = store.tables()
    with sqlite3.connect(store.path) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    with sqlite3.connect(target) as con:
        con.executescript(
            "DELETE FROM tasks; DROP VIEW results; DROP TABLE result_rows; DROP TABLE result_groups;"
        )
    first = old.ResultStore(folder)
    first.insert_tasks(tasks, results)
    with sqlite3.connect(target) as con:
        con.execute("VACUUM")
    first.close()
    return target


def current_layout_copy(path: Path, folder: Path) -> Path:
    """A first-layout store converted as a run converts it (its first writing connection)."""
    folder.mkdir(parents=True)
    shutil.copy(path, folder / "results.sqlite")
    store = ResultStore(folder)
    store.task_records()
    store.close()
    return store.path


def _rows(group: pd.DataFrame) -> list[dict]:
    return [
        {
            c: (None if pd.isna(v) else v.item() if isinstance(v, np.generic) else v)
            for c, v in zip(RESULT_COLUMNS, r)
        }
        for r in group[RESULT_COLUMNS].itertuples(index=False)
    ]


def time_read(folder: Path, module) -> tuple[float, pd.DataFrame]:
    start = time.perf_counter()
    frame = module.load_results(folder)
    return time.perf_counter() - start, frame


def time_write(per_task: list, module, scratch: Path) -> float:
    """Every task written again into an empty store, one ``commit_task`` (transaction) per task."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    store = module.ResultStore(scratch)
    start = time.perf_counter()
    for key, status, rows in per_task:
        store.commit_task(key, status, None, rows)
    store.close()
    return time.perf_counter() - start


def mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def measure(folder: Path, repeats: int, before: str) -> None:
    old = old_store(before)
    modules = {"first": old, "current": sys.modules[ResultStore.__module__]}
    store = ResultStore(folder)
    with tempfile.TemporaryDirectory(prefix="oodfs-store-size-") as tmp:
        tmp = Path(tmp)
        source = tmp / "source"
        source.mkdir()
        shutil.copy(store.path, source / "results.sqlite")  # (never write the folder measured)
        if layout(source / "results.sqlite") == "first":
            first = source / "results.sqlite"
            current = current_layout_copy(first, tmp / "current")
        else:
            current = source / "results.sqlite"
            first = first_layout_copy(ResultStore(source), tmp / "first", old)
        print(f"## {folder}\n")
        print("| layout | file | per task | tasks | rows | free | largest parts |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        sizes = {}
        for name, path in (("first", first), ("current", current)):
            s = stats(path)
            sizes[name] = s["bytes"]
            parts = ", ".join(f"{k} {mb(v)}" for k, v in list(s["parts"].items())[:4])
            print(
                f"| {name} | {mb(s['bytes'])} | {s['bytes'] / s['tasks'] / 1e3:.1f} kB | {s['tasks']} "
                f"| {s['rows']} | {s['free']} B | {parts} |"
            )
        print(f"\nfirst / current: {sizes['first'] / sizes['current']:.1f}x\n")
        tasks, results = ResultStore(current.parent).tables()
        status = dict(zip(map(tuple, tasks[_KEY].itertuples(index=False)), tasks["status"]))
        per_task = [
            ((k[0], k[1], int(k[2]), k[3]), status[tuple(k)], _rows(group))
            for k, group in results.groupby(_KEY, sort=False)
        ]
        reads = {"first": [], "current": []}
        writes = {"first": [], "current": []}
        frames = {}
        for i in range(repeats):
            order = ("first", "current") if i % 2 == 0 else ("current", "first")
            for name in order:
                seconds, frames[name] = time_read(
                    (first if name == "first" else current).parent, modules[name]
                )
                reads[name].append(seconds)
                writes[name].append(time_write(per_task, modules[name], tmp / f"write-{name}"))
        pd.testing.assert_frame_equal(frames["first"], frames["current"])
        print("The frames both layouts read are equal (pandas.testing.assert_frame_equal).\n")
        print(f"| time (median of {repeats}) | first | current | first / current |")
        print("| --- | --- | --- | --- |")
        for what, times in (("read (load_results)", reads), ("write (every task, one commit each)", writes)):
            a, b = statistics.median(times["first"]), statistics.median(times["current"])
            print(f"| {what} | {a:.3f} s | {b:.3f} s | {a / b:.2f} |")
        print()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="build the 144-task store of a 15,000-row binary table and measure it")
    run.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "oodfs-store-size")
    run.add_argument("--jobs", type=int, default=2)
    run.add_argument("--repeats", type=int, default=5)
    run.add_argument("--before", default=BEFORE, help=f"the first layout's commit (default {BEFORE})")
    one = sub.add_parser("measure", help="measure existing results folders")
    one.add_argument("folders", nargs="+", type=Path)
    one.add_argument("--repeats", type=int, default=5)
    one.add_argument("--before", default=BEFORE, help=f"the first layout's commit (default {BEFORE})")
    args = parser.parse_args(argv)
    if args.command == "run":
        suite = write_table(args.work)
        out = args.work / "bench"
        shutil.rmtree(out, ignore_errors=True)
        command = ["oodfs", "bench", "--suite", str(suite), "--out", str(out), "--jobs", str(args.jobs)]
        print("$", " ".join(command), "--quiet --no-figures", file=sys.stderr)
        start = time.perf_counter()
        subprocess.run([*command, "--quiet", "--no-figures"], check=True, stdout=subprocess.DEVNULL)
        print(f"(bench: {time.perf_counter() - start:.0f} s)\n", file=sys.stderr)
        folders = [out]
    else:
        folders = args.folders
    for folder in folders:
        measure(folder, args.repeats, args.before)


if __name__ == "__main__":
    main()
