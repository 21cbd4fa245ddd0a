"""Column-order neutrality: ties and column positions never decide a result (docs/PROTOCOL.md,
"Ties" and "Column layout")."""

import json

import numpy as np

import oodfs
from oodfs import ranking_from_scores
from oodfs.results.store import load_results
from oodfs.run.runner import run_suite
from oodfs.run.suite import suite_from_dict

TIE_PLUGIN = '''
import numpy as np
import oodfs

class AllTies(oodfs.Selector):
    """Every feature gets the same score."""
    name = "allties"
    def _fit_scores(self, X, y, sw):
        return np.zeros(X.shape[1])

class ColumnIndex(oodfs.Selector):
    """Scores by column position: the first column best."""
    name = "colindex"
    def _fit_scores(self, X, y, sw):
        return -np.arange(X.shape[1], dtype=float)

@oodfs.hookimpl
def oodfs_selectors():
    return [AllTies, ColumnIndex]
'''


def test_ties_are_broken_by_a_seeded_random_order_not_by_column():
    ties = np.zeros(10)
    top5 = np.array([np.isin(np.arange(10), ranking_from_scores(ties, seed)[:5]) for seed in range(2000)])
    assert np.allclose(top5.mean(axis=0), 0.5, atol=0.05)  # every column equally likely in the top 5
    assert (ranking_from_scores(ties, 7) == ranking_from_scores(ties, 7)).all()  # reproducible
    scores = np.array([0.3, 0.9, 0.1, 0.9, 0.5])
    order = ranking_from_scores(scores, 3)
    assert set(order[:2]) == {1, 3} and order[2:].tolist() == [4, 0, 2]  # only ties are shuffled


def test_selector_support_of_tied_scores_follows_random_state():
    X = np.random.default_rng(0).standard_normal((50, 10))
    y = X[:, 0]

    class AllTies(oodfs.Selector):
        """ties"""

        name = "allties-local"

        def _fit_scores(self, X, y, sw):
            return np.ones(X.shape[1])  # equal and above 0 (a feature scored 0 is never selected)

    supports = {tuple(np.nonzero(AllTies(k=5, random_state=s).fit(X, y).get_support())[0]) for s in range(20)}
    assert len(supports) > 10  # a different order of the tied features for most seeds


def test_an_all_ties_or_column_index_selector_is_never_the_best(tmp_path):
    plugin = tmp_path / "ties_plugin.py"
    plugin.write_text(TIE_PLUGIN)
    suite = suite_from_dict(
        "neutral",
        {
            "environment": "synthetic",
            "r_train": [2.5],
            "r_test": [-2.0, 2.5],
            "runs": 6,
            "n_train": 1500,
            "n_val": 300,
            "n_test": 1000,
            "k": 5,
            "methods": ["allties", "colindex", "ols", "dwr"],
            "settings": {"poly": {"params": {"setting": "poly"}, "run_params": {"layout_seed": "seed"}}},
        },
    )
    run_suite(suite, tmp_path / "out", plugin_modules=(str(plugin),), progress=False)
    df = load_results(tmp_path / "out")
    assert (df["status"] == "ok").all(), df.loc[df["status"] != "ok", "error"].unique()
    # the layout changes between runs: S is not always in the first columns
    layouts = {tuple(json.loads(n)) for n in df.drop_duplicates("run")["feature_names"]}
    assert len(layouts) == 6
    v = df[df["env"].isna() & (df["k"] == 5)].pivot_table(
        index=["method", "run"], columns="metric", values="value", aggfunc="min"
    )
    ties = v.loc["allties"]
    assert (ties["rank_avg"] == 5.5).all() and np.allclose(ties["f1"], 0.5)  # the fair tie values
    col = v.loc["colindex"]
    assert 4.0 <= col["rank_avg"].mean() <= 7.0 and 0.2 <= col["f1"].mean() <= 0.8  # chance, not S
    mean_rmse = v["rmse_mean"].groupby("method").mean()
    assert mean_rmse["dwr"] < mean_rmse["allties"] and mean_rmse["dwr"] < mean_rmse["colindex"]
    assert mean_rmse.idxmin() not in ("allties", "colindex")
