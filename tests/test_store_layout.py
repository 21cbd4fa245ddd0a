"""The results store's layout (docs/PROTOCOL.md, "The results store"): the columns a task's rows
share are stored once per group, the readers get the same frame as from the first layout (one
``results`` table, every column on every row), and a folder written in the first layout is read as
it is and converted, unchanged, when a run next writes to it.

``data/first_layout`` is a folder written by oodfs before the change (``oodfs bench --suite
tiny.toml --out ...``): its store (gzipped), the results.parquet and leaderboard.md it exported.
"""

import gzip
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.results.merge import merge_stores
from oodfs.results.store import RESULT_COLUMNS, ResultStore, _typed, load_results

FIRST_LAYOUT = Path(__file__).parent / "data" / "first_layout"


@pytest.fixture
def first(tmp_path) -> Path:
    """A copy of the folder written in the first layout."""
    out = tmp_path / "first"
    out.mkdir()
    with gzip.open(FIRST_LAYOUT / "results.sqlite.gz") as src, open(out / "results.sqlite", "wb") as dst:
        shutil.copyfileobj(src, dst)
    for name in ("results.parquet", "leaderboard.md"):
        shutil.copy(FIRST_LAYOUT / name, out / name)
    return out


def layout(folder: Path) -> dict:
    with sqlite3.connect(folder / "results.sqlite") as con:
        return dict(con.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"))


def test_a_first_layout_store_reads_as_the_frame_it_exported_without_being_written(first):
    before = (first / "results.sqlite").read_bytes()
    frame = load_results(first)
    pd.testing.assert_frame_equal(frame, pd.read_parquet(FIRST_LAYOUT / "results.parquet"))
    tasks, results = ResultStore(first).tables()  # (what merge and the references read)
    assert len(tasks) == 2 and results["value"].tolist() == frame["value"].tolist()
    assert (first / "results.sqlite").read_bytes() == before  # a reader converts nothing
    assert layout(first)["results"] == "table"


def test_merge_reads_a_first_layout_folder_without_writing_it_and_writes_the_current_layout(first, tmp_path):
    before = (first / "results.sqlite").read_bytes()
    info = merge_stores([first], tmp_path / "merged")
    assert info["tasks"] == 2
    assert (first / "results.sqlite").read_bytes() == before
    assert layout(tmp_path / "merged")["results"] == "view"
    pd.testing.assert_frame_equal(
        load_results(tmp_path / "merged"), pd.read_parquet(FIRST_LAYOUT / "results.parquet")
    )


def test_a_first_layout_store_is_converted_when_written_and_reads_the_same(first):
    store = ResultStore(first)
    frame = store.frame()
    with sqlite3.connect(store.path) as con:
        old_rows = con.execute("SELECT COUNT(*) FROM results").fetchone()[0]
    store.task_records()  # a writer's connection converts it
    assert layout(first) == {
        "meta": "table",
        "tasks": "table",
        "invocations": "table",
        "result_groups": "table",
        "result_rows": "table",
        "results": "view",
    }
    pd.testing.assert_frame_equal(store.frame(), frame)  # the same rows, values, types and order
    tasks, results = store.tables()
    pd.testing.assert_frame_equal(results, frame.assign(r_train=results["r_train"]))
    assert len(results) == old_rows and len(tasks) == 2
    with sqlite3.connect(store.path) as con:  # the copy was compacted: no page left free
        assert con.execute("PRAGMA freelist_count").fetchone()[0] == 0


def test_resume_on_a_first_layout_store_runs_nothing_again_and_reports_the_same(first, capsys):
    finished = ResultStore(first).tables()[0].set_index(["method"])["finished_at"]
    code = main(["bench", "--suite", str(FIRST_LAYOUT / "tiny.toml"), "--out", str(first), "--resume"])
    assert code == 0, capsys.readouterr().err
    assert layout(first)["results"] == "view"
    tasks, _ = ResultStore(first).tables()
    pd.testing.assert_series_equal(tasks.set_index(["method"])["finished_at"], finished)  # none rerun
    assert (first / "leaderboard.md").read_text() == (FIRST_LAYOUT / "leaderboard.md").read_text()
    pd.testing.assert_frame_equal(load_results(first), pd.read_parquet(FIRST_LAYOUT / "results.parquet"))
    pd.testing.assert_frame_equal(
        pd.read_parquet(first / "results.parquet"), pd.read_parquet(FIRST_LAYOUT / "results.parquet")
    )


def test_any_rows_come_back_as_written_in_their_order(first, tmp_path):
    """Rows whose tasks interleave, whose shared columns differ within a task, and whose values
    differ only in type (1 and 1.0 in a text column) are stored and read back exactly."""
    tasks, results = ResultStore(first).tables()
    rng = np.random.default_rng(0)
    results = results.iloc[rng.permutation(len(results))].reset_index(drop=True)  # tasks interleaved
    results["error"] = results["error"].astype(object)
    results.loc[0, "error"], results.loc[1, "error"] = 1, 1.0  # (SQLite text: '1' and '1.0')
    results.loc[2, "scores"] = "[1.0]"  # one row of a group unlike its others
    copy = ResultStore(tmp_path / "copy")
    copy.insert_tasks(tasks, results)
    _, back = copy.tables()
    expected = results.assign(error=results["error"].map(lambda v: None if pd.isna(v) else str(v)))
    pd.testing.assert_frame_equal(back, expected.astype(back.dtypes.to_dict()))
    assert back.loc[:1, "error"].tolist() == ["1", "1.0"]
    # a task committed again replaces its rows: nothing of the old copy stays
    setting, r_train, run, method = tasks.iloc[0][["setting", "r_train", "run", "method"]]
    key = (setting, r_train, int(run), method)
    rows = [dict(zip(RESULT_COLUMNS, r)) for r in results.itertuples(index=False) if tuple(r[2:6]) == key]
    copy.commit_task(key, "ok", None, rows[:3], identity="again")
    _, again = copy.tables()
    assert len(again) == len(results) - len(rows) + 3
    with sqlite3.connect(copy.path) as con:
        assert con.execute(
            "SELECT COUNT(*) FROM result_groups g WHERE NOT EXISTS "
            "(SELECT 1 FROM result_rows r WHERE r.group_id = g.id)"
        ).fetchone() == (0,)


def test_rows_share_a_group_only_with_equal_values_of_the_same_types(first, tmp_path):
    """Within one task, rows whose shared columns differ only in a value's type (1, 1.0, True)
    are three groups however they interleave, and rows whose only difference is which NaN object
    they hold (NaN is never equal to itself) are one group, its value stored as NULL."""
    tasks, results = ResultStore(first).tables()
    key = tuple(tasks.iloc[0][["setting", "r_train", "run", "method"]])
    template = dict(zip(RESULT_COLUMNS, results.iloc[0]))
    errors = [1, 1.0, True, 1, 1.0, True, 1]
    rows = [{**template, "error": e, "metric": f"m{i}"} for i, e in enumerate(errors)]
    rows += [{**template, "error": None, "fit_seconds": float("nan"), "metric": f"nan{i}"} for i in range(3)]
    store = ResultStore(tmp_path / "groups")
    store.commit_task((key[0], key[1], int(key[2]), key[3]), "ok", None, rows, identity="x")
    with sqlite3.connect(store.path) as con:
        by_metric = dict(con.execute("SELECT metric, group_id FROM result_rows"))
        nulls = con.execute("SELECT COUNT(*) FROM result_groups WHERE fit_seconds IS NULL").fetchone()[0]
    groups = {
        kind: {by_metric[f"m{i}"] for i, e in enumerate(errors) if type(e) is kind}
        for kind in (int, float, bool)
    }
    assert all(len(ids) == 1 for ids in groups.values()), groups
    assert len(set.union(*groups.values())) == 3
    assert len({by_metric[f"nan{i}"] for i in range(3)}) == 1 and nulls == 1


def test_a_store_reads_as_the_join_of_its_rows_and_groups(first, tmp_path):
    """The frame reads each group once and repeats it over its rows: it is the frame, types
    included, that the SQL join of rows and groups gives, rows in their stored order; rows whose
    group is gone are left out and a group without rows is not seen, as in the join."""
    from oodfs.results.store import ROW_COLUMNS, _read_grouped

    tasks, results = ResultStore(first).tables()
    results = results.iloc[np.random.default_rng(1).permutation(len(results))].reset_index(drop=True)
    results["error"] = results["error"].astype(object)
    results.loc[0, "error"] = 1  # a number among the text of one column
    store = ResultStore(tmp_path / "copy")
    store.insert_tasks(tasks, results)

    def join(con):
        columns = ", ".join(f"{'r' if c in ROW_COLUMNS else 'g'}.{c} AS {c}" for c in RESULT_COLUMNS)
        joined = "result_rows r JOIN result_groups g ON g.id = r.group_id"
        return pd.read_sql_query(f"SELECT {columns} FROM {joined} ORDER BY r.rowid", con)

    with sqlite3.connect(store.path) as con:
        pd.testing.assert_frame_equal(load_results(store.out_dir), _typed(join(con)))
        orphaned = con.execute("SELECT group_id FROM result_rows ORDER BY rowid LIMIT 1").fetchone()[0]
        con.execute("DELETE FROM result_groups WHERE id = ?", (orphaned,))
        con.execute("INSERT INTO result_groups (suite, run) VALUES ('no rows', 1.5)")
        frame = _read_grouped(con)
        pd.testing.assert_frame_equal(frame, join(con))
        assert len(frame) < len(results)


def test_a_task_committed_while_the_store_is_read_does_not_split_the_frame(first, tmp_path, monkeypatch):
    """Rows and groups are read apart, in one snapshot: a run that replaces a task between the two
    reads changes neither (the frame is the store as the read found it)."""
    tasks, results = ResultStore(first).tables()
    store = ResultStore(tmp_path / "copy")
    store.insert_tasks(tasks, results)
    setting, r_train, run, method = tasks.iloc[0][["setting", "r_train", "run", "method"]]
    key = (setting, r_train, int(run), method)
    rows = [dict(zip(RESULT_COLUMNS, r)) for r in results.itertuples(index=False) if tuple(r[2:6]) == key]
    before = store.frame()
    read = pd.read_sql_query

    def replaced_between(sql, con, *args, **kwargs):
        out = read(sql, con, *args, **kwargs)
        if sql.startswith("SELECT group_id"):  # the rows are read: now a run replaces the task
            store.commit_task(key, "ok", None, rows[:3], identity="again")
        return out

    monkeypatch.setattr(pd, "read_sql_query", replaced_between)
    pd.testing.assert_frame_equal(store.frame(), before)
    monkeypatch.undo()
    assert len(store.frame()) == len(before) - len(rows) + 3


def _rows(template: list[dict], run: int, n_envs: int) -> list[dict]:
    """A task's rows as a bench stores them: the template task's at ``n_envs`` test environments."""
    rows = []
    for row in template:
        for e in range(n_envs if row["env"] is not None else 1):
            env = None if row["env"] is None else f"{row['env']}-{e}"
            rows.append({**row, "run": run, "env": env})
    return rows


def test_a_store_grows_by_its_rows_not_by_their_shared_columns(first, tmp_path):
    """Per task, the store grows by less than 56 bytes per row plus the columns its rows share
    once per group; the first layout grew by every shared column on every row (over 10 times as
    much here: 10 features, 20 test environments)."""
    old = tmp_path / "old.sqlite"  # the same tasks in the first layout (the fixture's own table)
    shutil.copy(first / "results.sqlite", old)
    _, results = ResultStore(first).tables()
    template = [
        dict(zip(RESULT_COLUMNS, r)) for r in results[results["method"] == "ols"].itertuples(index=False)
    ]
    n_tasks, n_envs = 40, 20
    key = ("poly", template[0]["r_train"], 0, "ols")

    def size(path: Path) -> int:
        with sqlite3.connect(path) as con:
            return (
                con.execute("PRAGMA page_count").fetchone()[0] * con.execute("PRAGMA page_size").fetchone()[0]
            )

    new = ResultStore(tmp_path / "new")
    new.commit_task(key, "ok", None, _rows(template, 0, n_envs))
    start = size(new.path)
    for run in range(1, n_tasks + 1):
        new.commit_task(key[:2] + (run,) + key[3:], "ok", None, _rows(template, run, n_envs))
    per_task = (size(new.path) - start) / n_tasks

    rows = _rows(template, 0, n_envs)
    shared = {tuple(row[c] for c in RESULT_COLUMNS if c not in ("metric", "env", "value")) for row in rows}
    shared_bytes = sum(len(str(v)) for group in shared for v in group if v is not None)
    assert per_task < 56 * len(rows) + 1.5 * shared_bytes, (per_task, len(rows), shared_bytes)

    with sqlite3.connect(old) as con:
        con.execute("DELETE FROM results")
        con.commit()
        con.execute("VACUUM")
    insert = (
        f"INSERT INTO results ({', '.join(RESULT_COLUMNS)}) VALUES ({', '.join('?' * len(RESULT_COLUMNS))})"
    )
    with sqlite3.connect(old) as con:
        con.executemany(insert, [tuple(r[c] for c in RESULT_COLUMNS) for r in _rows(template, 0, n_envs)])
    start = size(old)
    for run in range(1, n_tasks + 1):
        with sqlite3.connect(old) as con:
            con.executemany(
                insert, [tuple(r[c] for c in RESULT_COLUMNS) for r in _rows(template, run, n_envs)]
            )
    old_per_task = (size(old) - start) / n_tasks
    assert per_task * 10 < old_per_task, (per_task, old_per_task)


def test_a_task_keyed_by_numpy_numbers_is_stored_as_plain_values_and_replaced_when_committed_again(tmp_path):
    """A run given as np.int64 (an r_train as a number) is the same task as the plain one: it is
    stored as an integer, found by resume, and a second commit replaces its rows."""
    store = ResultStore(tmp_path / "out")

    def rows(value):
        row = dict.fromkeys(RESULT_COLUMNS)
        row.update(suite="t", profile="default", setting="s", r_train="1.5", run=np.int64(0),
                   method="m", point=np.int64(0), metric="rmse_mean", k=np.int64(2),
                   value=np.float64(value), status="ok")  # fmt: skip
        return [row]

    store.commit_task(("s", "1.5", np.int64(0), "m"), "ok", None, rows(0.5), identity="a")
    store.commit_task(("s", np.float64(1.5), np.int64(0), "m"), "ok", None, rows(0.25), identity="b")
    assert store.finished_tasks() == {("s", "1.5", 0, "m")}
    assert store.task_records()[("s", "1.5", 0, "m")]["identity"] == "b"
    back = load_results(tmp_path / "out")
    assert back["value"].tolist() == [0.25] and back["run"].tolist() == [0]
    with sqlite3.connect(store.path) as con:
        assert con.execute("SELECT typeof(run) FROM tasks").fetchall() == [("integer",)]
        assert set(con.execute("SELECT typeof(run) FROM result_groups").fetchall()) == {("integer",)}
