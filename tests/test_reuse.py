"""Results you can reuse: task identity and resume, --force, merging folders, reference results,
provenance. Tiny suites (n_train 300, ols/correlation and a --plugin file whose code the tests
change between runs)."""

import json
import shutil
import sqlite3
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.contract.registry import registry
from oodfs.results.identity import explain
from oodfs.results.merge import merge_stores
from oodfs.results.provenance import environment, git_state
from oodfs.results.store import ResultStore, load_results
from oodfs.run.identity import code_hash, method_code_hashes, task_identities
from oodfs.run.reference import COLUMNS, load_reference, write_reference
from oodfs.run.runner import resume_plan, run_suite
from oodfs.validation import OodfsError

from .conftest import TINY as SHARED_TINY
from .conftest import tiny as tiny_suite

TINY = {**SHARED_TINY, "runs": 1}  # this module's tiny suite: one run

PLUGIN = '''
import numpy as np
import oodfs


class Mine(oodfs.Selector):
    """Absolute correlation with the target (a user's method under development)."""
    name = "mine"
    def _fit_scores(self, X, y, sw):
        return SIGN * np.abs(np.corrcoef(X.T, y)[-1, :-1])

class Theirs(oodfs.Selector):
    """Absolute OLS coefficients (another method of the same module)."""
    name = "theirs"
    def _fit_scores(self, X, y, sw):
        return np.abs(np.linalg.lstsq(X, y, rcond=None)[0])

SIGN = 1.0

@oodfs.hookimpl
def oodfs_selectors():
    return [Mine, Theirs]
'''

KEY = ["setting", "r_train", "run", "method"]


def tiny(**changes):
    return tiny_suite(**{"runs": 1, **changes})


def write_plugin(path, sign=1.0):
    path.write_text(PLUGIN.replace("SIGN = 1.0", f"SIGN = {sign}"))
    return str(path)


def values(out) -> pd.Series:
    df = load_results(out)
    df = df.assign(env=df["env"].fillna(""))
    return df.set_index(KEY + ["point", "metric", "env", "k"])["value"].sort_index()


def tasks(out) -> pd.DataFrame:
    with sqlite3.connect(ResultStore(out).path) as con:
        return pd.read_sql_query("SELECT * FROM tasks", con).set_index(KEY).sort_index()


def run(suite, out, plugin=None, **kw):
    notes = []
    run_suite(
        suite, out, progress=False, plugin_modules=(plugin,) if plugin else (), notes=notes.append, **kw
    )
    # the note on subsets taken from a reference is tested in test_reference_subsets.py
    return [n for n in notes if not n.startswith("downstream models:")]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """One run of ols, correlation and mine (sign +1), and the plugin file."""
    where = tmp_path_factory.mktemp("base")
    plugin = write_plugin(where / "mine.py")
    from oodfs.contract.registry import reset_registry

    reset_registry()
    run(tiny(methods=["ols", "correlation", "mine"]), where / "out", plugin)
    reset_registry()
    return where


@pytest.fixture
def copy(base, tmp_path):
    """A private copy of the base run and its plugin file."""
    shutil.copytree(base / "out", tmp_path / "out")
    plugin = write_plugin(tmp_path / "mine.py")
    return tmp_path / "out", plugin


# -- identity -----------------------------------------------------------------------------
def test_code_hash_follows_the_module_source(tmp_path):
    plugin = write_plugin(tmp_path / "mine.py")
    registry((plugin,))
    before = code_hash(registry().get("selector", "mine"))
    assert code_hash(registry().get("selector", "mine")) == before  # same source, same hash
    write_plugin(tmp_path / "mine.py", sign=-1.0)
    registry(())
    registry((plugin,))
    after = code_hash(registry().get("selector", "mine"))
    assert after != before
    # a built-in's hash does not depend on a plugin file
    assert code_hash(registry().get("selector", "ols")) == code_hash(registry().get("selector", "ols"))


def test_code_hash_covers_the_plugin_modules_a_method_uses():
    """SVI's numbers come from STG and DWR, RSW's from HRM's Adam step, RF's from cart: their
    modules are part of its code, so a change there reruns the method on --resume; oodfs's core
    is not followed."""
    from oodfs.run.identity import code_modules

    reg = registry()
    svi = code_modules(reg.get("selector", "svi"))
    assert svi[0] == "oodfs_plugins.independence.svi"
    assert {"oodfs_plugins.baselines.stg", "oodfs_plugins.independence.dwr"} <= set(svi)
    assert "oodfs_plugins.independence.hrm" in code_modules(reg.get("selector", "rsw"))
    # trees.py imports its own tree builder inside a method only: the source is read for imports
    assert "oodfs_plugins.baselines.cart" in code_modules(reg.get("selector", "rf"))
    assert not any(m.startswith("oodfs.") for m in svi)
    assert code_modules(reg.get("selector", "ols")) == ["oodfs_plugins.baselines.linear"]


def test_code_hash_follows_a_helper_module_imported_inside_a_function(tmp_path, monkeypatch):
    """A package's helper that a method imports only where it runs is part of the method's code
    (an edit there reruns it); an optional module that cannot be imported is skipped."""
    from oodfs.run.identity import _used_modules, module_source

    package = tmp_path / "pkgx"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("def g():\n    return 1\n")
    (package / "method.py").write_text(
        "def fit():\n"
        "    from .helper import g\n"
        "    try:\n"
        "        from .optional import h  # not shipped\n"
        "    except ImportError:\n"
        "        h = None\n"
        "    return g()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    importlib.import_module("pkgx.method")
    try:
        assert _used_modules(["pkgx.method"]) == {"pkgx.method", "pkgx.helper"}
        assert b"return 1" in module_source("pkgx.helper")
    finally:
        for name in [m for m in sys.modules if m == "pkgx" or m.startswith("pkgx.")]:
            del sys.modules[name]


def test_identity_parts_and_explanations():
    suite = tiny()
    ident = task_identities(suite)
    ols, corr = ident["poly", "ols"], ident["poly", "correlation"]
    assert ols.digest != corr.digest  # same module, but not the same class
    assert ols.parts["class"].endswith(".OLS") and ols.parts["package"] == "oodfs"
    changed = task_identities(tiny(settings={"poly": {"params": {"setting": "mlp"}}}))["poly", "ols"]
    assert changed.parts["data"] != ols.parts["data"] and changed.parts["code"] == ols.parts["code"]
    assert (
        explain(ols.parts, changed.parts) == "data changed"
    )  # a setting is data; narrowing a suite changes no task
    assert explain(ols.parts, {**ols.parts, "code": "x"}) == "code changed"
    assert (
        explain(ols.parts, {**ols.parts, "version": "9"}) == f"version ({ols.parts['version']} -> 9) changed"
    )
    assert explain(None, ols.parts) == "no identity recorded (stored by an older oodfs)"
    assert task_identities(tiny(profile="paper"))["poly", "ols"].parts["profile"].startswith("paper:")


def test_a_table_file_is_part_of_the_data_identity(tmp_path):
    csv = tmp_path / "t.csv"
    pd.DataFrame({"y": [1.0, 2, 3, 4], "x": [1.0, 0, 1, 0], "g": ["a", "a", "b", "b"]}).to_csv(
        csv, index=False
    )
    suite = tiny(
        environment="table",
        r_train=["a"],
        r_test=["b"],
        settings={"t": {"params": {"path": str(csv), "target": "y", "env_column": "g"}}},
    )
    before = task_identities(suite)["t", "ols"].parts["data"]
    assert task_identities(suite)["t", "ols"].parts["data"] == before
    csv.write_text(csv.read_text().replace("4.0", "5.0"))
    assert task_identities(suite)["t", "ols"].parts["data"] != before


def test_an_environment_can_declare_its_data_identity(tmp_path):
    """An environment whose data come from a package (not a file) says what they are."""
    env_plugin = tmp_path / "envs.py"
    code = '''
import oodfs
from oodfs_plugins.environments.synthetic import Synthetic

class Versioned(Synthetic):
    """The synthetic environment, with a declared data release."""
    name = "versioned"
    def data_identity(self):
        return {"release": RELEASE, "setting": self.setting}

RELEASE = 1

@oodfs.hookimpl
def oodfs_environments():
    return [Versioned]
'''
    env_plugin.write_text(code)
    registry((str(env_plugin),))
    suite = tiny(environment="versioned")
    before = task_identities(suite)["poly", "ols"].parts
    env_plugin.write_text(code.replace("RELEASE = 1", "RELEASE = 2"))
    registry(())
    registry((str(env_plugin),))
    after = task_identities(suite)["poly", "ols"].parts
    assert explain(before, after) == "data changed"


# -- resume -------------------------------------------------------------------------------
def test_resume_with_nothing_changed_reruns_nothing(copy):
    out, plugin = copy
    before = tasks(out)
    notes = run(tiny(methods=["ols", "correlation", "mine"]), out, plugin, resume=True)
    assert notes == []
    pd.testing.assert_frame_equal(tasks(out), before)


def test_resume_reruns_a_method_whose_code_changed(copy, tmp_path):
    out, plugin = copy
    old = values(out)
    write_plugin(tmp_path / "mine.py", sign=-1.0)  # scores inverted: a different method
    suite = tiny(methods=["ols", "correlation", "mine"])
    notes = run(suite, out, plugin, resume=True)
    assert notes == ["1 task of mine rerun: code changed"]
    new = values(out)
    # the other methods are untouched, mine's rows replaced (none averaged with the old)
    pd.testing.assert_series_equal(new.drop("mine", level="method"), old.drop("mine", level="method"))
    assert len(new) == len(old)
    mine_old, mine_new = old.xs("mine", level="method"), new.xs("mine", level="method")
    assert mine_old.xs("rank_avg", level="metric").iloc[0] != mine_new.xs("rank_avg", level="metric").iloc[0]
    # ... and they are exactly what a fresh run of the new code gives
    run(suite, tmp_path / "fresh", plugin)
    pd.testing.assert_series_equal(new, values(tmp_path / "fresh"))
    assert tasks(out)["identity"].equals(tasks(tmp_path / "fresh")["identity"])
    # the invocation says what was rerun and why
    last = ResultStore(out).invocations()[-1]
    assert last["resume"]["rerun"] == [{"method": "mine", "reason": "code changed", "tasks": 1}]


def test_resume_with_more_runs_after_a_change_never_mixes_identities(copy, tmp_path):
    out, plugin = copy
    write_plugin(tmp_path / "mine.py", sign=-1.0)
    notes = run(tiny(methods=["mine"], runs=2), out, plugin, resume=True)
    assert notes == ["1 task of mine rerun: code changed"]
    t = tasks(out).xs("mine", level="method")
    assert len(t) == 2 and t["identity"].nunique() == 1


def test_force_reruns_a_method_and_replaces_its_rows(copy):
    out, plugin = copy
    before, old = tasks(out), values(out)
    notes = run(tiny(methods=["ols", "correlation", "mine"]), out, plugin, force=("ols",))
    assert notes == ["1 task of ols rerun: forced (--force)"]
    after = tasks(out)
    assert (
        after.loc[("poly", "2.5", 0, "ols"), "finished_at"]
        > before.loc[("poly", "2.5", 0, "ols"), "finished_at"]
    )
    assert (
        after.loc[("poly", "2.5", 0, "mine"), "finished_at"]
        == before.loc[("poly", "2.5", 0, "mine"), "finished_at"]
    )
    pd.testing.assert_series_equal(values(out), old)  # same identity, same seeds: the same numbers, once
    with pytest.raises(OodfsError, match="--force names 'lasso', which this run does not include"):
        run(tiny(), out, plugin, force=("lasso",))


def test_a_store_without_identities_is_rerun(copy):
    out, plugin = copy
    with sqlite3.connect(ResultStore(out).path) as con:
        con.execute("UPDATE tasks SET identity = NULL, parts = NULL WHERE method = 'ols'")
    notes = run(tiny(methods=["ols", "correlation", "mine"]), out, plugin, resume=True)
    assert notes == ["1 task of ols rerun: no identity recorded (stored by an older oodfs)"]
    assert tasks(out)["identity"].notna().all()


def test_an_old_schema_is_migrated(tmp_path):
    """A store written before identities existed opens, reads, and gains the new columns."""
    old_schema = """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
    CREATE TABLE tasks (setting TEXT, r_train TEXT, run INTEGER, method TEXT, status TEXT, error TEXT,
        finished_at REAL, PRIMARY KEY (setting, r_train, run, method));
    CREATE TABLE results (suite TEXT, profile TEXT, setting TEXT, r_train TEXT, run INTEGER, method TEXT,
        method_kind TEXT, point INTEGER, params TEXT, is_default INTEGER, metric TEXT, env TEXT, k INTEGER,
        value REAL, seed INTEGER, scores TEXT, feature_names TEXT, status TEXT, error TEXT, fit_seconds REAL,
        downstream_seconds REAL, data_seconds REAL, oodfs_version TEXT, versions TEXT);
    CREATE TABLE invocations (started_at REAL, provenance TEXT);
    INSERT INTO tasks VALUES ('poly', '2.5', 0, 'ols', 'ok', NULL, 0);
    INSERT INTO results (suite, setting, r_train, run, method, metric, k, value, status)
        VALUES ('tiny', 'poly', '2.5', 0, 'ols', 'f1', 5, 0.5, 'ok');
    """
    (tmp_path / "old").mkdir()
    with sqlite3.connect(tmp_path / "old" / "results.sqlite") as con:
        con.executescript(old_schema)
    store = ResultStore(tmp_path / "old")
    assert store.frame()["value"].tolist() == [0.5]
    rec = store.task_records()[("poly", "2.5", 0, "ols")]
    assert rec["identity"] is None and rec["origin"] == "run"
    store.commit_task(
        ("poly", "2.5", 1, "ols"),
        "ok",
        None,
        [
            {
                "suite": "tiny",
                "setting": "poly",
                "r_train": "2.5",
                "run": 1,
                "method": "ols",
                "metric": "f1",
                "k": 5,
                "value": 0.7,
                "identity": "abc",
            }
        ],
        "abc",
        {},
    )
    assert sorted(store.frame()["value"]) == [0.5, 0.7]


def test_commit_replaces_a_task_but_a_failure_never_erases_its_result(tmp_path):
    store = ResultStore(tmp_path)
    key = ("poly", "2.5", 0, "ols")

    def rows(v, n):
        return [
            {"setting": "poly", "r_train": "2.5", "run": 0, "method": "ols", "metric": f"m{i}", "value": v}
            for i in range(n)
        ]

    store.commit_task(key, "ok", None, rows(1.0, 3), "id1", {"code": "a"})
    store.commit_task(key, "ok", None, rows(2.0, 2), "id2", {"code": "b"})
    assert store.frame()["value"].tolist() == [2.0, 2.0]
    store.commit_task(
        key, "failed", "boom", [{"setting": "poly", "r_train": "2.5", "run": 0, "method": "ols"}], "id2"
    )
    assert store.frame()["value"].tolist() == [2.0, 2.0] and store.task_records()[key]["status"] == "ok"
    store.commit_task(
        key, "failed", "boom", [{"setting": "poly", "r_train": "2.5", "run": 0, "method": "ols"}], "id3"
    )
    assert store.task_records()[key]["status"] == "failed" and len(store.frame()) == 1


def test_resume_plan_outside_the_selection():
    """Stale tasks of a method being run but outside the selection are removed (a method never
    holds two identities); stale tasks of other methods are kept and reported."""
    suite = tiny(runs=1)
    ident = task_identities(suite, ["ols", "correlation"])
    cur = {m: ident["poly", m] for m in ("ols", "correlation")}
    old_parts = {**cur["ols"].parts, "code": "old"}
    records = {
        ("poly", "2.5", 0, "ols"): {"identity": cur["ols"].digest, "parts": cur["ols"].parts, "status": "ok"},
        ("poly", "2.5", 1, "ols"): {"identity": "stale", "parts": old_parts, "status": "ok"},
        ("poly", "2.5", 0, "correlation"): {
            "identity": "stale",
            "parts": {**cur["correlation"].parts, "grid": "g"},
            "status": "ok",
        },
        ("poly", "2.5", 0, "unknown"): {"identity": "x", "parts": None, "status": "ok"},
    }
    plan = resume_plan(tiny(methods=["ols"]), records, ident)
    assert plan.keep == {("poly", "2.5", 0, "ols")} and not plan.rerun
    assert dict(plan.remove) == {("ols", "code changed"): [("poly", "2.5", 1, "ols")]}
    assert dict(plan.stale_kept) == {("correlation", "grid changed"): [("poly", "2.5", 0, "correlation")]}
    assert plan.notes() == [
        "removed 1 task of ols outside this run's selection: code changed",
        "kept 1 task of correlation, which this run does not include, although grid changed since: "
        "rerun them with --methods correlation --resume",
    ]
    records["poly", "2.5", 0, "ols"]["status"] = "failed"
    assert resume_plan(tiny(methods=["ols"]), records, ident).keep == {("poly", "2.5", 0, "ols")}
    retried = resume_plan(tiny(methods=["ols"]), records, ident, retry_failed=True)
    assert dict(retried.rerun) == {("ols", "failed before"): [("poly", "2.5", 0, "ols")]} and not retried.keep


@pytest.mark.slow
def test_an_edited_table_is_rerun_not_averaged(tmp_path):
    """Issue: a table suite whose CSV was edited, resumed with more runs, averaged a run on the
    old data with one on the new."""
    rng = np.random.default_rng(0)
    n = 600
    x = rng.normal(size=(n, 4))
    df = pd.DataFrame(x, columns=["a", "b", "c", "d"]).assign(g=np.repeat(["old", "new"], n // 2))
    df["y"] = df["a"] + 0.3 * rng.normal(size=n)
    csv = tmp_path / "t.csv"
    df.to_csv(csv, index=False)
    table = dict(
        environment="table",
        r_train=["old"],
        r_test=["new"],
        n_train=200,
        n_val=50,
        n_test=1000,
        k=2,
        settings={"t": {"params": {"path": str(csv), "target": "y", "env_column": "g"}}},
    )
    run(tiny(**table), tmp_path / "out")
    df["y"] = df["b"] + 0.3 * rng.normal(size=n)  # another target: other results
    df.to_csv(csv, index=False)
    notes = run(tiny(**table, runs=2), tmp_path / "out", resume=True)
    assert notes == ["1 task of ols rerun: data changed", "1 task of correlation rerun: data changed"]
    run(tiny(**table, runs=2), tmp_path / "fresh")
    pd.testing.assert_series_equal(values(tmp_path / "out"), values(tmp_path / "fresh"))


# -- merge --------------------------------------------------------------------------------
def test_merge_combines_shards_and_accepts_identical_duplicates(copy, tmp_path, capsys):
    out, plugin = copy
    run(tiny(methods=["ols"], runs=2), tmp_path / "shard", plugin)  # run 0 of ols is in both
    assert main(["merge", str(out), str(tmp_path / "shard"), "--out", str(tmp_path / "merged")]) == 0
    assert "merged 2 folders into" in capsys.readouterr().err
    merged = values(tmp_path / "merged")
    expected = pd.concat(
        [values(out), values(tmp_path / "shard").xs(1, level="run", drop_level=False)]
    ).sort_index()
    pd.testing.assert_series_equal(merged, expected)
    assert len(tasks(tmp_path / "merged")) == 4
    assert (tmp_path / "merged" / "results.parquet").exists()
    store = ResultStore(tmp_path / "merged")
    assert store.invocations()[-1]["merged"] == [str(out), str(tmp_path / "shard")]
    assert main(["leaderboard", str(tmp_path / "merged")]) == 0


def _cli_error(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("oodfs: error: ") and "\n" not in err
    return err


def test_merge_refuses_different_suites_and_conflicting_tasks(copy, tmp_path, capsys):
    out, plugin = copy
    run(tiny(methods=["ols"], seed=3), tmp_path / "seed3", plugin)
    target = tmp_path / "merged"
    err = _cli_error(["merge", str(out), str(tmp_path / "seed3"), "--out", str(target)], capsys)
    assert "different suite seed (0 vs 3)" in err and not target.exists()

    other = tmp_path / "other"
    shutil.copytree(out, other)
    with sqlite3.connect(ResultStore(other).path) as con:
        con.execute(
            "UPDATE result_rows SET value = value + 1e-9 WHERE metric = 'rmse' AND group_id IN "
            "(SELECT id FROM result_groups WHERE method = 'ols')"
        )
    err = _cli_error(["merge", str(out), str(other), "--out", str(target)], capsys)
    assert (
        "task (setting poly, r_train 2.5, run 0, method ols) has different values" in err
        and not target.exists()
    )

    other = tmp_path / "other2"
    shutil.copytree(out, other)
    with sqlite3.connect(ResultStore(other).path) as con:
        con.execute(
            "UPDATE tasks SET identity = 'x', parts = ? WHERE method = 'mine'",
            (
                json.dumps(
                    {
                        **json.loads(
                            con.execute("SELECT parts FROM tasks WHERE method = 'mine'").fetchone()[0]
                        ),
                        "code": "old",
                    }
                ),
            ),
        )
    err = _cli_error(["merge", str(out), str(other), "--out", str(target)], capsys)
    assert "method mine) differs between" in err and "different identities (code changed)" in err

    err = _cli_error(["merge", str(out), str(tmp_path / "nowhere"), "--out", str(target)], capsys)
    assert "is not a results folder" in err and not target.exists()
    err = _cli_error(["merge", str(out), str(out), "--out", str(tmp_path / "x")], capsys)
    assert "named twice" in err
    err = _cli_error(["merge", str(out), "--out", str(out)], capsys)
    assert "already holds results" in err


def test_merge_prefers_a_result_to_a_failed_copy(copy, tmp_path):
    out, _ = copy
    failed = tmp_path / "failed"
    shutil.copytree(out, failed)
    with sqlite3.connect(ResultStore(failed).path) as con:
        con.execute("UPDATE tasks SET status = 'failed', error = 'timeout' WHERE method = 'ols'")
        con.execute(
            "DELETE FROM result_rows WHERE group_id IN (SELECT id FROM result_groups WHERE method = 'ols')"
        )
        con.execute("DELETE FROM result_groups WHERE method = 'ols'")
        con.execute(
            "INSERT INTO result_groups (setting, r_train, run, method, status, error) VALUES "
            "('poly', '2.5', 0, 'ols', 'failed', 'timeout')"
        )
        con.execute("INSERT INTO result_rows (group_id) VALUES (last_insert_rowid())")
    info = merge_stores([failed, out], tmp_path / "merged")
    assert info == {"folders": 2, "tasks": 3, "duplicates": 3, "replaced_failures": 1}
    pd.testing.assert_series_equal(values(tmp_path / "merged"), values(out))


# -- reference results --------------------------------------------------------------------
@pytest.fixture
def reference(base, tmp_path):
    """Reference results of the base run (ols, correlation, mine) and where they are."""
    path, meta = write_reference(base / "out", tmp_path / "ref" / "tiny-default.parquet")
    return path


def test_write_and_read_a_reference(base, reference):
    ref = load_reference("tiny", "default", reference)
    assert ref.methods == ["ols", "correlation", "mine"] and list(ref.results.columns) == COLUMNS + ["origin"]
    stored = load_results(base / "out")
    assert len(ref.results) == len(stored)
    a = ref.results.sort_values(KEY + ["metric", "env", "k"]).reset_index(drop=True)
    b = ResultStore(base / "out").tables()[1].sort_values(KEY + ["metric", "env", "k"]).reset_index(drop=True)
    pd.testing.assert_series_equal(a["value"], b["value"])
    assert (a["identity"] == b["identity"]).all()
    meta = json.loads(reference.with_suffix(".json").read_text())
    assert meta["suite_identity"]["n_train"] == 300 and meta["tasks"] == 3 and len(meta["sha256"]) == 64
    import pyarrow.parquet as pq

    schema = pq.read_schema(reference)
    assert str(schema.field("method").type).startswith("dictionary")
    assert pq.ParquetFile(reference).metadata.row_group(0).column(0).compression == "ZSTD"


def test_bench_reference_runs_only_the_new_method(base, reference, tmp_path, capsys):
    plugin = write_plugin(tmp_path / "mine.py", sign=-1.0)
    out = tmp_path / "out"
    assert (
        main(
            [
                "bench",
                "--suite",
                _suite_file(tmp_path),
                "--methods",
                "mine",
                "--reference",
                str(reference),
                "--plugin",
                plugin,
                "--out",
                str(out),
                "--jobs",
                "1",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert (
        "from the reference results tiny-default.parquet" in captured.err
        and "ols, correlation" in captured.err
    )
    assert "| ols" in captured.out and "| mine" in captured.out
    t = tasks(out)
    assert t["origin"].to_dict() == {
        ("poly", "2.5", 0, "correlation"): "reference",
        ("poly", "2.5", 0, "mine"): "run",
        ("poly", "2.5", 0, "ols"): "reference",
    }
    # the reference rows are copied exactly; mine (changed code) was run, not taken
    pd.testing.assert_series_equal(
        values(out).drop("mine", level="method"), values(base / "out").drop("mine", level="method")
    )
    assert (load_results(out).query("method != 'mine'")["origin"] == "reference").all()


def _suite_file(where) -> str:
    """TINY as a suite file named tiny.toml, with the methods ols, correlation and mine."""
    path = where / "tiny.toml"
    lines = [f"{k} = {json.dumps(v)}" for k, v in TINY.items() if k not in ("settings", "methods")]
    lines += ['methods = ["ols", "correlation", "mine"]', "[settings.poly]", 'params = { setting = "poly" }']
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_reference_methods_whose_identity_differs_are_run(base, reference, tmp_path):
    plugin = write_plugin(tmp_path / "mine.py", sign=-1.0)  # changes mine's (and theirs') code
    suite = tiny(methods=["ols"])
    ref = load_reference("tiny", "default", reference)
    notes = run(
        suite, tmp_path / "out", plugin, reference=ref, reference_methods=["ols", "correlation", "mine"]
    )
    assert notes == [
        "mine: not taken from the reference (code changed); running it",
        "from the reference results tiny-default.parquet (oodfs "
        f"{ref.meta['oodfs_version']}, {ref.meta['created'][:10]}): correlation (1 task, "
        f"{(ref.results['method'] == 'correlation').sum()} rows; column origin = 'reference')",
    ]
    assert tasks(tmp_path / "out")["origin"].to_dict() == {
        ("poly", "2.5", 0, "correlation"): "reference",
        ("poly", "2.5", 0, "mine"): "run",
        ("poly", "2.5", 0, "ols"): "run",
    }
    # another seed: the suite identity differs, nothing is taken
    notes = run(
        tiny(methods=["ols"], seed=5),
        tmp_path / "seed5",
        plugin,
        reference=ref,
        reference_methods=["correlation"],
    )
    assert notes == [
        "correlation: not taken from the reference (the reference was made with a different seed); running it"
    ]
    # more runs than the reference holds
    notes = run(
        tiny(methods=["ols"], runs=2),
        tmp_path / "runs2",
        plugin,
        reference=ref,
        reference_methods=["correlation"],
    )
    assert notes[0].startswith(
        "correlation: not taken from the reference (the reference holds 1 of the 2 tasks"
    )


def test_the_core_downstream_settings_are_part_of_a_folder_and_a_reference(
    base, reference, tmp_path, monkeypatch
):
    """Tasks whose RMSEs come from other downstream settings (another engine, optimiser or stopping
    rule in oodfs's core) are never mixed: a resume is refused naming them, a reference is not taken,
    and a folder that does not record them (an older oodfs) resumes with a note."""
    from oodfs.run import downstream

    out = tmp_path / "out"
    shutil.copytree(base / "out", out)
    monkeypatch.setitem(downstream.PROFILES, "default", {**downstream.PROFILES["default"], "engine": "torch"})
    with pytest.raises(OodfsError, match=r"different core \(its downstream regressor settings\)"):
        run(tiny(methods=["ols"]), out, resume=True)
    ref = load_reference("tiny", "default", reference)
    notes = run(tiny(methods=["ols"]), tmp_path / "new", reference=ref, reference_methods=["correlation"])
    assert notes == [
        "correlation: not taken from the reference (the reference was made with a different core (its "
        "downstream regressor settings)); running it"
    ]
    monkeypatch.undo()
    older = tmp_path / "older"
    shutil.copytree(base / "out", older)
    store = ResultStore(older)
    store.set_meta(
        "suite_identity", {k: v for k, v in store.get_meta("suite_identity").items() if k != "core"}
    )
    notes = run(tiny(methods=["ols"]), older, resume=True)
    assert any("does not record how its tasks' downstream models were trained" in n for n in notes)
    assert "core" in ResultStore(older).get_meta("suite_identity")  # recorded from now on


def test_reference_bad_input(reference, tmp_path, capsys):
    suite = _suite_file(tmp_path)
    out = tmp_path / "out"
    argv = ["bench", "--suite", suite, "--methods", "ols", "--out", str(out), "--jobs", "1", "--reference"]
    err = _cli_error(argv, capsys)  # a suite file: no shipped reference is looked up by its name
    assert "suite file" in err and "give its reference file (--reference FILE)" in err and not out.exists()
    err = _cli_error(argv + [str(tmp_path / "none.parquet")], capsys)
    assert "none.parquet is missing" in err and not out.exists()
    data = bytearray(reference.read_bytes())
    data[len(data) // 2] ^= 0xFF
    reference.write_bytes(bytes(data))
    err = _cli_error(argv + [str(reference)], capsys)
    assert "is corrupt (its SHA-256 differs" in err and not out.exists()
    reference.with_suffix(".json").write_text("{not json")
    err = _cli_error(argv + [str(reference)], capsys)
    assert "tiny-default.json is corrupt (not JSON" in err and not out.exists()


# -- provenance ---------------------------------------------------------------------------
def test_invocations_record_packages_code_hashes_and_threads(base):
    inv = ResultStore(base / "out").invocations()[-1]
    env = inv["environment"]
    import numpy

    assert env["packages"]["numpy"] == numpy.__version__ and "pluggy" in env["packages"]
    assert env["cpu_count"] >= 1 and isinstance(env["threadpools"], list)
    assert set(env["method_code"]) == {"ols", "correlation", "mine"}
    assert env["method_code"]["ols"] == code_hash(registry().get("selector", "ols"))
    assert env["oodfs_git"] is None or set(env["oodfs_git"]) == {"commit", "dirty"}
    assert inv["identities"]["poly/ols"] == tasks(base / "out").loc[("poly", "2.5", 0, "ols"), "identity"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_state_commit_and_dirty_flag(tmp_path):
    def git(*args):
        subprocess.run(
            ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
            capture_output=True,
        )

    assert git_state(tmp_path) is None  # not a checkout
    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("commit", "-qm", "one")
    state = git_state(tmp_path)
    assert len(state["commit"]) == 40 and state["dirty"] is False
    (tmp_path / "a.py").write_text("x = 2\n")
    assert git_state(tmp_path)["dirty"] is True
    (tmp_path / "untracked").mkdir()
    assert git_state(tmp_path / "untracked") is None  # a folder the checkout does not track
    assert environment(method_code_hashes(["ols"]))["method_code"] == {
        "ols": code_hash(registry().get("selector", "ols"))
    }


# -- settings added, narrowed or split -----------------------------------------------------------
TWO_SETTINGS = {
    "poly": {"params": {"setting": "poly"}},
    "strong": {"params": {"setting": "poly", "exponent": 20.0}},
}


def test_resume_adds_a_setting_and_keeps_what_was_run(tmp_path):
    """A run narrowed with --settings (or a suite that later gains a setting) is resumed with
    the whole suite: only the new setting's tasks run; a setting redefined under its old name is
    refused, naming it."""
    from oodfs.run.suite import customise

    suite = tiny(settings=TWO_SETTINGS)
    out = tmp_path / "out"
    run(customise(suite, settings=["poly"]), out)
    before = values(out)
    finished = tasks(out)["finished_at"]
    run(suite, out, resume=True)
    after = values(out)
    assert set(after.index.get_level_values("setting")) == {"poly", "strong"}
    pd.testing.assert_series_equal(after.xs("poly", level="setting", drop_level=False), before)
    assert (tasks(out).loc[finished.index, "finished_at"] == finished).all()  # poly was not rerun
    stored = [s["name"] for s in ResultStore(out).get_meta("suite_identity")["settings"]]
    assert stored == ["poly", "strong"]
    run(customise(suite, settings=["poly"]), out, resume=True)  # narrowing again forgets nothing
    assert [s["name"] for s in ResultStore(out).get_meta("suite_identity")["settings"]] == ["poly", "strong"]
    changed = tiny(settings={**TWO_SETTINGS, "strong": {"params": {"setting": "poly", "exponent": 5.0}}})
    with pytest.raises(OodfsError, match="different setting 'strong'"):
        run(changed, out, resume=True)


def test_merge_combines_shards_split_by_setting(tmp_path, capsys):
    from oodfs.run.suite import customise

    suite = tiny(settings=TWO_SETTINGS)
    run(customise(suite, settings=["poly"]), tmp_path / "a")
    run(customise(suite, settings=["strong"]), tmp_path / "b")
    run(suite, tmp_path / "whole")
    assert main(["merge", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "m")]) == 0
    pd.testing.assert_series_equal(values(tmp_path / "m"), values(tmp_path / "whole"))
    assert ResultStore(tmp_path / "m").get_meta("suite_identity") == ResultStore(tmp_path / "whole").get_meta(
        "suite_identity"
    )
    capsys.readouterr()
    run(tiny(settings={"strong": {"params": {"setting": "poly", "exponent": 5.0}}}), tmp_path / "c")
    err = _cli_error(
        ["merge", str(tmp_path / "b"), str(tmp_path / "c"), "--out", str(tmp_path / "m2")], capsys
    )
    assert "setting 'strong'" in err
