"""Every shipped reference is what the installed code computes (docs/PROTOCOL.md section 6,
"Replaying a reference" and "Identities"): its identities are plain declared values, the same in
any process, and one data set of each, fitted again, gives every stored value back bit for bit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal, getcontext
from pathlib import Path

import pandas as pd
import pytest

from oodfs.cli import main
from oodfs.run.identity import digest, suite_identity, task_identities
from oodfs.run.reference import _sha256, available, load_reference, not_replayed, take
from oodfs.run.reference.replay import (
    compare,
    load_named,
    replay,
    replay_many,
    replay_suite,
    withhold_not_replayed,
)

SHIPPED = available()
ROOT = Path(__file__).resolve().parents[1]


def test_an_identity_takes_plain_values_only():
    """An estimator's repr depends on the library; a digest refuses it (one clear error)."""
    from sklearn.linear_model import RidgeCV

    assert digest({"alphas": (0.1, 1.0)}) == digest({"alphas": [0.1, 1.0]})
    with pytest.raises(TypeError, match="plain values only, not RidgeCV"):
        digest({"model": RidgeCV()})


def test_the_ridge_and_logistic_grids_are_the_nearest_doubles_of_half_decades():
    """Written out, not computed with np.logspace, whose 10^2.5 was one unit in the last place apart
    on two CPUs (and so was every real reference's identity)."""
    from oodfs.run.downstream_models import get_model

    getcontext().prec = 50
    exact = tuple(float(Decimal(10) ** (Decimal(k) / 2)) for k in range(-6, 7))
    assert get_model("ridge").settings.alphas == exact
    assert tuple(get_model("logistic", "binary").settings.Cs) == exact


IDENTITIES = """
import json, sys
from oodfs.run.identity import suite_identity, task_identities
from oodfs.run.reference import available
from oodfs.run.reference.replay import load_named, replay_suite
out = {}
for name in available():
    ref = load_named(name)
    suite = replay_suite(ref)
    ids = task_identities(suite, ref.methods)
    out[name] = {"suite": suite_identity(suite), "tasks": {f"{s}/{m}": i.digest for (s, m), i in ids.items()}}
json.dump(out, sys.stdout)
"""


def test_identities_are_the_same_in_another_process_hash_seed_and_folder(tmp_path):
    """What each shipped reference records is what a fresh interpreter computes, whatever its hash
    seed and working directory (a fresh machine computed another core digest before)."""
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", IDENTITIES], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    computed = json.loads(done.stdout)
    for name in SHIPPED:
        ref = load_named(name)
        assert computed[name]["suite"] == ref.meta["suite_identity"], name
        stored = {
            f"{s}/{m}": i for s, m, i in ref.tasks[["setting", "method", "identity"]].itertuples(index=False)
        }
        assert stored == {k: v for k, v in computed[name]["tasks"].items() if k in stored}, name


@pytest.mark.parametrize("name", SHIPPED)
def test_every_method_of_a_shipped_reference_replayed_when_it_was_stamped(name):
    """The record the last replay wrote: its data set, every method the reference holds, each
    reproduced; `--reference` takes every method of the suite from it."""
    ref = load_named(name)
    record = ref.meta.get("replay")
    assert record, f"{name} has no replay record"
    assert sorted(record["methods"]) == sorted(ref.methods) and not not_replayed(ref)
    suite = replay_suite(ref)
    _, _, refused = take(ref, suite, ref.methods, task_identities(suite, ref.methods))
    assert refused == {}


@pytest.mark.parametrize("name", SHIPPED)
def test_reference_gives_every_method_of_its_suite_on_its_full_grid_but_the_withheld(name):
    """`oodfs bench --suite S --methods NEW --reference` fits NEW alone: every other method of the
    suite is copied, on every task of the grid, except those the reference withholds (its rows did
    not replay, or were not regenerated yet), which are run and named with the reason."""
    from oodfs.run.reference.replay import declared_suite

    ref = load_named(name)
    suite = declared_suite(ref)
    methods = list(suite.methods)
    withheld = ref.meta.get("withheld", {})
    tasks, rows, refused = take(ref, suite, methods, task_identities(suite, methods))
    assert refused == {m: refused[m] for m in withheld if m in methods}, refused
    assert all(why.startswith("withheld from the reference") for why in refused.values())
    kept = [m for m in methods if m not in withheld]
    assert len(tasks) == len(suite.task_keys(kept))  # every task of every method it gives
    assert set(rows["downstream"].dropna()) == set(suite.downstream)


def test_every_shipped_reference_replays():
    """One data set of each shipped reference fitted again, every method, every grid point and
    downstream model: every stored value is equal bit for bit (two references at a time)."""
    failed = {
        name: result.failures() for name, result in replay_many(SHIPPED, jobs=min(2, os.cpu_count() or 1))
    }
    assert {n: f for n, f in failed.items() if f} == {}


@pytest.fixture(scope="module")
def churn(tmp_path_factory):
    """A copy of a small shipped reference and its replay."""
    where = tmp_path_factory.mktemp("ref")
    for suffix in (".parquet", ".json"):
        shutil.copy(load_named("churn-default").path.with_suffix(suffix), where / f"churn-default{suffix}")
    return where / "churn-default.parquet"


def _change_one_value(path: Path, method: str, factor: float) -> None:
    """Scale one stored value of ``method`` in the replayed data set; the file's SHA-256 follows
    (a deliberate edit, not a damaged file)."""
    ref = load_reference("churn", "default", path)
    setting, r_train, run = ref.meta["replay"]["data_set"]
    frame = pd.read_parquet(path)
    row = frame.index[
        (frame["method"] == method)
        & (frame["setting"] == setting)
        & (frame["r_train"].astype(str) == str(r_train))
        & (frame["run"] == run)
        & (frame["metric"] == "log_loss")
    ][0]
    frame.loc[row, "value"] *= factor
    frame.to_parquet(path, index=False, compression="zstd")
    meta = json.loads(path.with_suffix(".json").read_text())
    meta["sha256"] = _sha256(path)
    path.with_suffix(".json").write_text(json.dumps(meta))


def test_one_changed_value_fails_the_replay_and_the_reference_then_refuses_the_method(churn, capsys):
    _change_one_value(churn, "lasso", 1 + 1e-8)  # ten times the tolerance of another CPU's numpy loops
    assert main(["replay", str(churn)]) == 1
    out = capsys.readouterr().out
    assert "DIFF lasso: largest relative difference 1e-08, 10 x its tolerance" in out
    assert "metric log_loss" in out
    assert "ok   mi:" in out  # every other method still replays
    assert main(["replay", str(churn), "--stamp"]) == 1
    ref = load_reference("churn", "default", churn)
    suite = replay_suite(ref)
    _, rows, refused = take(ref, suite, ref.methods, task_identities(suite, ref.methods))
    assert list(refused) == ["lasso"] and "did not replay (largest relative difference" in refused["lasso"]
    assert "lasso" not in set(rows["method"])
    # withheld: the rows that do not replay leave the file, and --reference says why it runs lasso
    assert withhold_not_replayed(ref) == ["lasso"]  # as `oodfs replay --stamp --withhold` does
    ref = load_reference("churn", "default", churn)
    assert "lasso" not in set(ref.results["method"]) and "lasso" not in ref.methods
    assert "largest relative difference 1e-08" in ref.meta["withheld"]["lasso"]
    _, _, refused = take(ref, suite, list(suite.methods), task_identities(suite, list(suite.methods)))
    assert list(refused) == ["lasso"] and refused["lasso"].startswith("withheld from the reference")
    assert main(["replay", str(churn)]) == 0  # what it ships replays


def test_the_replay_compares_texts_and_counts_rows_made_on_one_side():
    stored = pd.DataFrame(
        {
            "setting": ["s"] * 2,
            "r_train": ["1"] * 2,
            "run": [0, 0],
            "method": ["m"] * 2,
            "point": [0.0, 0.0],
            "metric": ["rmse", "ess"],
            "env": [None, None],
            "k": [2.0, 2.0],
            "downstream": ["ridge"] * 2,
            "value": [1.0, 5.0],
            "scores": ["[0.5, 0.25]"] * 2,
            "subset": ["[0, 1]"] * 2,
            "status": ["ok"] * 2,
            "error": [None] * 2,
        }
    )
    fresh = stored.copy()
    fresh["point"], fresh["k"] = 0, 2  # read back as floats, made as integers: the same rows
    assert compare(stored, fresh)["m"].ok
    fresh.loc[0, "subset"] = "[0, 2]"
    assert compare(stored, fresh)["m"].text_diffs == 1
    m = compare(stored, fresh.iloc[:1])["m"]
    assert m.missing == 1 and "stored only" in m.where and not m.ok


def test_replay_names_a_missing_reference_in_one_line(capsys):
    assert main(["replay", "nosuch-default"]) == 2
    assert "has no reference results" in capsys.readouterr().err
    assert main(["replay", "churn-default", "churn-default"]) == 2
    assert "named twice" in capsys.readouterr().err
    assert main(["replay", "churn-default", "--withhold"]) == 2
    assert "give --stamp too" in capsys.readouterr().err


def test_the_suite_identity_of_a_reference_is_the_current_one_of_its_suite():
    for name in SHIPPED:
        ref = load_named(name)
        assert ref.meta["suite_identity"] == suite_identity(replay_suite(ref)), name


def test_a_replay_on_the_machine_kind_that_stamped_a_reference_is_bit_for_bit():
    """Same numpy vector extensions as the stamping machine: every number equal bit for bit; on
    another kind, within the declared tolerance (docs/PROTOCOL.md section 6)."""
    from oodfs.run.kernels import numeric_platform

    ref = load_named("churn-default")
    result = replay(ref)
    assert result.ok
    if numeric_platform()["numpy_simd"] == ref.meta["replay"]["platform"]["numpy_simd"]:
        assert all(m.differing == 0 for m in result.methods.values())
