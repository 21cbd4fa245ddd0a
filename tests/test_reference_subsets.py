"""A new method run against reference results takes the downstream scores of every feature subset the
reference already trained on the same data set with the same models, instead of training it again:
the rows it stores are those of the same run training every subset (docs/PROTOCOL.md section 6).
Tiny suites: regression (MLP, a k grid, a curve), binary (logistic: four scores per test environment)
and several labelled training environments (validation scores per environment, ridge)."""

import json

import pandas as pd
import pytest

from oodfs.contract.registry import reset_registry
from oodfs.results.store import load_results
from oodfs.run.downstream_models import DownstreamCache
from oodfs.run.identity import task_identities
from oodfs.run.reference import load_reference, trained_subsets, write_reference
from oodfs.run.runner import run_suite

from .conftest import tiny

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PLUGIN = '''
import numpy as np
import oodfs


class Overlap(oodfs.Selector):
    """|corr(X_j, y)| times 2: the ranking of `correlation`, so the same subsets."""
    name = "overlap"
    task_types = ("regression", "binary")
    def _fit_scores(self, X, y, sw):
        return 2.0 * np.abs(np.corrcoef(X.T, y)[-1, :-1])


class Disjoint(oodfs.Selector):
    """The reverse of `correlation`'s ranking: subsets the reference (mostly) never trained."""
    name = "disjoint"
    task_types = ("regression", "binary")
    def _fit_scores(self, X, y, sw):
        return -np.abs(np.corrcoef(X.T, y)[-1, :-1])


@oodfs.hookimpl
def oodfs_selectors():
    return [Overlap, Disjoint]
'''

SUITES = {
    "regression": {
        "runs": 1,
        "k_grid": [1, 3, 5],
        "curve": {"r_train": [2.5]},  # its first method's curve: sizes 1..d, summaries only
    },
    "binary": {
        "runs": 1,
        "environment": "synthetic_binary",
        "downstream": ["logistic"],
        "k_grid": [1, 5],  # logistic's cross-validated C per subset is the slowest part of this module
        "n_train": 200,
        "n_test": 60,
    },
    "environments": {
        "runs": 1,
        "r_train": [[1.5, 2.0, 3.0]],
        "n_train": 150,
        "n_val": 60,
        "k_grid": [3, 5],
        "downstream": ["ridge"],  # the MLP is the regression case's; ridge is fast
    },
}
#: columns that may differ between the two runs: the timings
TIMINGS = ["fit_seconds", "downstream_seconds", "data_seconds"]


def with_methods(name: str, methods: list[str]):
    """Suite ``name`` of SUITES running ``methods`` (the first with a curve where the suite has one)."""
    changes = dict(SUITES[name], methods=methods)
    if "curve" in changes:
        changes["curve"] = {**changes["curve"], "methods": methods[:1]}
    return tiny(**changes)


def rows(out) -> pd.DataFrame:
    df = load_results(out).drop(columns=TIMINGS)
    key = ["setting", "r_train", "run", "method", "downstream", "point", "metric", "env", "k"]
    return df.sort_values(key, na_position="first").reset_index(drop=True)


def trained(monkeypatch, suite) -> list:
    """Record every subset the downstream models of ``suite``'s data sets train from now on (the run
    is in this process; the leave-one-environment-out models, on other rows, are not recorded)."""
    seen = []
    original = DownstreamCache._train
    seeds = {key.seed(suite.seed, "downstream") for key in suite.data_keys()}

    def spy(self, missing):
        if self.seed in seeds:
            seen.extend((self.model.name, s) for s in missing)
        return original(self, missing)

    monkeypatch.setattr(DownstreamCache, "_train", spy)
    return seen


def run(suite, out, plugin, **kw) -> list[str]:
    notes = []
    run_suite(suite, out, progress=False, plugin_modules=(plugin,), notes=notes.append, jobs=1, **kw)
    return notes


@pytest.fixture(scope="module", params=list(SUITES))
def made(request, tmp_path_factory):
    """A reference of `ols` and `correlation` on a tiny suite, and the plugin with the new methods."""
    where = tmp_path_factory.mktemp(request.param)
    plugin = where / "new.py"
    plugin.write_text(PLUGIN)
    reset_registry()
    suite = with_methods(request.param, ["correlation", "ols"])
    run(suite, where / "ref-run", str(plugin))
    path, _ = write_reference(where / "ref-run", where / "ref" / "tiny-default.parquet")
    reset_registry()
    return suite, path, str(plugin)


def test_a_run_that_takes_the_references_subsets_stores_the_same_rows(made, tmp_path, monkeypatch):
    suite, path, plugin = made
    new = with_methods(_name(suite), ["overlap", "disjoint"])
    ref = load_reference("tiny", "default", path)
    seen = trained(monkeypatch, new)
    notes = run(new, tmp_path / "taken", plugin, reference=ref)
    taken = list(seen)
    seen.clear()
    run(new, tmp_path / "trained", plugin, reference=ref, reference_subsets=False)
    everything = list(seen)
    pd.testing.assert_frame_equal(rows(tmp_path / "taken"), rows(tmp_path / "trained"))
    # what the reference stored with every test environment's scores was taken, the rest trained
    stored = load_results(tmp_path / "trained")
    complete = subsets(stored.query("method in ['ols', 'correlation'] and metric in ['rmse', 'log_loss']"))
    assert set(taken) == set(everything) - complete
    overlap = subsets(stored.query("method == 'overlap' and metric in ['rmse', 'log_loss']"))
    assert overlap and overlap <= complete  # correlation's ranking: nothing of it trained again
    assert (stored["method"] == "disjoint").any()
    assert subsets(stored.query("method == 'disjoint'")) & set(taken)  # what the reference lacks: trained
    assert any("is taken from it, not trained again" in n for n in notes), notes


def test_a_method_whose_subsets_the_reference_holds_draws_no_test_environment(made, tmp_path, monkeypatch):
    """The test environments are drawn when a first subset must be trained (oodfs.run.dataset.LazyTests):
    `overlap` ranks as `correlation` does, so with the reference's subsets none is drawn; the rows
    are those of the run that draws them and trains every subset."""
    import oodfs.run.dataset as dataset

    suite, path, plugin = made
    if _name(suite) == "regression":
        pytest.skip("its curve trains subsets of which the reference stores summaries only")
    new = with_methods(_name(suite), ["overlap"])
    ref = load_reference("tiny", "default", path)
    drawn = []
    original = dataset._draw_test
    monkeypatch.setattr(dataset, "_draw_test", lambda *a: drawn.append(a[-1]) or original(*a))
    run(new, tmp_path / "taken", plugin, reference=ref)
    assert drawn == []
    run(new, tmp_path / "trained", plugin, reference=ref, reference_subsets=False)
    assert len(drawn) == len(list(new.data_keys())) * len(new.r_test)
    pd.testing.assert_frame_equal(rows(tmp_path / "taken"), rows(tmp_path / "trained"))


def subsets(rows) -> set:
    """``{(downstream model, sorted subset)}`` of ``rows`` (with the metric of a test environment's
    loss, `rmse` or `log_loss`: the subsets stored with every test environment's scores)."""
    return {
        (m, tuple(sorted(json.loads(s)))) for m, s in rows[["downstream", "subset"]].itertuples(index=False)
    }


def _name(suite) -> str:
    if suite.environment == "synthetic_binary":
        return "binary"
    return "environments" if isinstance(suite.r_train[0], tuple) else "regression"


def test_a_reference_with_other_downstream_settings_is_trained_not_taken(made, tmp_path, monkeypatch):
    suite, path, plugin = made
    if _name(suite) != "regression":
        pytest.skip("one suite is enough")
    meta = json.loads(path.with_suffix(".json").read_text())
    meta["suite_identity"]["core"] = "0" * 16  # the downstream models' settings of another oodfs
    other = tmp_path / "tiny-default.parquet"
    other.write_bytes(path.read_bytes())
    other.with_suffix(".json").write_text(json.dumps(meta))
    ref = load_reference("tiny", "default", other)
    new = with_methods("regression", ["overlap"])
    seen = trained(monkeypatch, new)
    notes = run(new, tmp_path / "out", plugin, reference=ref, reference_methods=("correlation",))
    assert any("every subset is trained" in n and "different core" in n for n in notes), notes
    stored = load_results(tmp_path / "out")
    assert subsets(stored.query("method == 'overlap'")) <= set(seen)


def test_only_tasks_of_the_current_data_are_taken(made):
    suite, path, plugin = made
    if _name(suite) != "regression":
        pytest.skip("one suite is enough")
    reset_registry()
    from oodfs.contract.registry import registry

    registry((plugin,))
    ref = load_reference("tiny", "default", path)
    ident = task_identities(suite, ["ols"])
    data = {s: i.parts["data"] for (s, _), i in ident.items()}
    same, why = trained_subsets(ref, suite, data)
    assert why is None and same
    scores = next(iter(next(iter(same.values()))["mlp"].values()))
    assert set(scores["test"]) == {"-2.0", "2.0"} and "rmse" in scores["val"]
    other, why = trained_subsets(ref, suite, {s: "another table" for s in data})
    assert other == {} and "no downstream scores" in why
    reset_registry()
