"""The feature-shift axis (docs/PROTOCOL.md, "Feature shift"): test rows shifted, training rows
untouched, the identity changed only when a shift is declared, the handling's numbers, one line for
a bad value."""

import numpy as np
import pytest

from oodfs.contract.task import DataKey
from oodfs.results.store import load_results
from oodfs.run.dataset import make_dataset
from oodfs.run.downstream_models import DownstreamCache
from oodfs.run.feature_shift import parse_feature_shift, shift_rows, top_feature
from oodfs.run.identity import suite_identity, task_identities
from oodfs.run.runner import run_suite
from oodfs.run.suite import customise
from oodfs.validation import OodfsError

from .conftest import assert_one_line, run_cli, tiny

KEY = DataKey("poly", 2.5, 0)


def test_only_the_test_rows_are_shifted():
    plain = make_dataset(tiny(), KEY)
    for spec in ("drop-top", "missing:0.3", "scale:3"):
        data = make_dataset(tiny(feature_shift=spec), KEY)
        # training, validation and unshifted test rows: the same bytes as without a shift
        for a, b in ((plain.X_train, data.X_train), (plain.y_train, data.y_train), (plain.X_val, data.X_val)):
            np.testing.assert_array_equal(a, b)
        for (r0, X0, y0), (r1, X1, y1), (r2, X2, y2) in zip(plain.tests, data.tests, data.shifted):
            assert r0 == r1 == r2
            np.testing.assert_array_equal(X0, X1)
            np.testing.assert_array_equal(y0, y2)
            assert not np.array_equal(X1, X2)
        assert plain.shifted is None


def test_the_shifts_and_their_seed():
    data = make_dataset(tiny(), KEY)
    top = top_feature(data.X_train, data.y_train)
    r = [abs(np.corrcoef(data.X_train[:, j], data.y_train)[0, 1]) for j in range(data.X_train.shape[1])]
    assert top == int(np.argmax(r))
    mean = data.X_train.mean(axis=0)
    X = data.tests[0][1]
    dropped = shift_rows(parse_feature_shift("drop-top"), X, mean, top, seed=1)
    assert (dropped[:, top] == mean[top]).all()
    np.testing.assert_array_equal(np.delete(dropped, top, 1), np.delete(X, top, 1))
    scaled = shift_rows(parse_feature_shift("scale:3"), X, mean, top, seed=1)
    np.testing.assert_array_equal(scaled[:, top], 3 * X[:, top])
    a = shift_rows(parse_feature_shift("missing:0.3"), X, mean, top, seed=7)
    b = shift_rows(parse_feature_shift("missing:0.6"), X, mean, top, seed=7)
    moved_a, moved_b = a != X, b != X
    assert 0.25 < moved_a.mean() < 0.35 and 0.55 < moved_b.mean() < 0.65
    assert not (moved_a & ~moved_b).any()  # the same seed: the cells missing at 0.3 are missing at 0.6
    np.testing.assert_array_equal(a, shift_rows(parse_feature_shift("missing:0.3"), X, mean, top, seed=7))


def test_identity_changes_only_with_a_shift():
    plain = tiny()
    assert "feature_shift" not in suite_identity(plain)
    assert "feature_shift" not in plain.to_dict()
    # given the default (none) explicitly: the same suite and identities as before
    assert customise(plain, feature_shift=None) == plain
    shifted = customise(plain, feature_shift="drop-top")
    ident = suite_identity(shifted)
    assert ident["feature_shift"] == "drop-top" and ident["feature_shift_impute"] == "train-mean"
    before, after = task_identities(plain), task_identities(shifted)
    assert all(before[k].digest != after[k].digest for k in before)
    assert all(before[k].parts["suite"] != after[k].parts["suite"] for k in before)
    assert suite_identity(customise(plain, feature_shift="drop-top", feature_shift_impute="refit")) != ident


def _cache(spec, impute=None):
    suite = tiny(feature_shift=spec, **({"feature_shift_impute": impute} if impute else {}))
    data = make_dataset(suite, KEY)
    return data, DownstreamCache(data, 0, model="ridge")


def test_a_removed_feature_outside_the_subset_leaves_the_loss_unchanged():
    data, cache = _cache("drop-top")
    top = data.shift_removed  # drop-top: the column train-mean imputes, refit leaves out
    others = [j for j in range(data.X_train.shape[1]) if j != top[0]]
    outside, inside = tuple(others[:3]), tuple(sorted([top[0], *others[:2]]))
    res = cache.evaluate([outside, inside])
    np.testing.assert_array_equal(res[outside]["fshift"]["rmse"], res[outside]["test"]["rmse"])
    assert not np.allclose(res[inside]["fshift"]["rmse"], res[inside]["test"]["rmse"])
    # train-mean: the shifted RMSE is the RMSE of the same model on rows with the training mean
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from oodfs_plugins.downstream import RIDGE_ALPHAS

    cols = list(inside)
    model = make_pipeline(StandardScaler(), RidgeCV(alphas=RIDGE_ALPHAS)).fit(
        data.X_train[:, cols], data.y_train
    )
    _, X, y = data.tests[0]
    X = X.copy()
    X[:, top[0]] = data.X_train[:, top[0]].mean()
    expected = np.sqrt(np.mean((model.predict(X[:, cols]) - y) ** 2))
    assert res[inside]["fshift"]["rmse"][0] == pytest.approx(expected, rel=1e-10)


def test_refit_scores_the_subset_without_the_removed_feature():
    data, cache = _cache("drop-top", "refit")
    (top,) = data.shift_removed
    others = [j for j in range(data.X_train.shape[1]) if j != top]
    inside = tuple(sorted([top, *others[:2]]))
    res = cache.evaluate([inside])
    reduced = cache.evaluate([tuple(others[:2])])[tuple(others[:2])]
    np.testing.assert_array_equal(res[inside]["fshift"]["rmse"], reduced["test"]["rmse"])
    alone = cache.evaluate([(top,)])[(top,)]  # nothing left: the training mean
    mean = np.mean(data.y_train)
    _, _, y = data.tests[0]
    assert alone["fshift"]["rmse"][0] == pytest.approx(np.sqrt(np.mean((y - mean) ** 2)))


def test_a_shifted_run_stores_the_shift_metrics(tmp_path):
    plain_dir, shifted_dir = tmp_path / "plain", tmp_path / "shifted"
    kw = dict(downstream=["ridge"], runs=1)
    run_suite(tiny(**kw), plain_dir, progress=False)
    run_suite(tiny(feature_shift="missing:0.3", **kw), shifted_dir, progress=False)
    plain, shifted = load_results(plain_dir), load_results(shifted_dir)
    assert not plain["metric"].str.contains("fshift").any()
    key = ["method", "point", "metric", "env", "k"]
    # every unshifted number is the same with the shift on
    both = plain.merge(shifted, on=key, suffixes=("", "_s"))
    assert len(both) == len(plain)
    np.testing.assert_array_equal(both["value"], both["value_s"])
    wide = shifted[shifted["env"].isna()].pivot_table(
        index=["method", "point"], columns="metric", values="value"
    )
    increase = wide["rmse_fshift_mean"] - wide["rmse_mean"]
    np.testing.assert_allclose(wide["rmse_fshift_increase"], increase, rtol=1e-12, atol=1e-12)
    per_env = shifted[shifted["metric"] == "rmse_fshift"].groupby(["method", "point"])["value"].mean()
    np.testing.assert_allclose(per_env.loc[wide.index], wide["rmse_fshift_mean"], rtol=1e-12)


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--feature-shift", "drop"], ["feature shift", "missing:P", "drop-top", "scale:C"]),
        (["--feature-shift", "missing:2"], ["missing:P", "(0, 1]"]),
        (["--feature-shift", "scale:abc"], ["missing:P", "drop-top", "scale:C"]),
        (["--feature-shift", "drop-top", "--feature-shift-impute", "median"], ["train-mean", "refit"]),
        (["--feature-shift", "missing:0.3", "--feature-shift-impute", "refit"], ["drop-top", "train-mean"]),
        (["--feature-shift-impute", "refit"], ["needs a feature shift", "drop-top"]),
    ],
)
def test_a_bad_feature_shift_is_one_line(capsys, tmp_path, args, needles):
    result = run_cli(capsys, "bench", "--suite", "synthetic", "--quick", "--out", str(tmp_path / "x"), *args)
    assert_one_line(result, *needles)
    assert not (tmp_path / "x").exists()


def test_a_bad_feature_shift_in_a_suite_file():
    with pytest.raises(OodfsError, match="valid: missing:P, drop-top, scale:C"):
        tiny(feature_shift="top")
