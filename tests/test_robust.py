"""The DRO selectors (plugins/invariance/robust.py): their radius checks and the one line when the
optional dro package cannot be imported run everywhere; the fits need dro (docs/PROTOCOL.md,
section 13: it is not a dev dependency, since it does not install cleanly beside CPU torch)."""

import sys

import numpy as np
import pytest

import oodfs
from oodfs_plugins.invariance.robust import KLDRO, Chi2DRO, CVaRDRO, WassersteinDRO


def data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5)) * np.array([1.0, 2.0, 0.5, 1.0, 3.0])
    y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.standard_normal(n)
    return X, y


@pytest.mark.parametrize(
    "cls,params,needle",
    [
        (Chi2DRO, {"eps": -0.1}, "chi2dro eps must be a number in [0, inf), got -0.1"),
        (KLDRO, {"eps": float("inf")}, "kldro eps must be a number in [0, inf), got inf"),
        (WassersteinDRO, {"eps": "big"}, "wdro eps must be a number in [0, inf), got 'big'"),
        (CVaRDRO, {"alpha": 0.0}, "cvardro alpha must be a number in (0, 1], got 0.0"),
        (CVaRDRO, {"alpha": 1.5}, "cvardro alpha must be a number in (0, 1], got 1.5"),
    ],
)
def test_a_radius_or_level_outside_its_range_is_refused_in_one_line(cls, params, needle):
    X, y = data()
    with pytest.raises(oodfs.OodfsError) as exc:
        cls(**params).fit(X, y)
    assert str(exc.value) == needle


def test_without_an_importable_dro_the_fit_fails_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "dro", None)  # import dro raises ImportError
    monkeypatch.setitem(sys.modules, "dro.linear_model", None)
    X, y = data()
    with pytest.raises(oodfs.OodfsError, match="the DRO methods need the `dro` package") as exc:
        Chi2DRO().fit(X, y)
    assert "\n" not in str(exc.value) and "section 13" in str(exc.value)


def test_robust_scores_are_the_package_coefficients_on_standardised_features():
    linear_model = pytest.importorskip("dro.linear_model")
    X, y = data(1)
    Xs = (X - X.mean(0)) / X.std(0)
    for cls, value in ((Chi2DRO, 0.1), (CVaRDRO, 0.5), (WassersteinDRO, 0.1)):
        model = getattr(linear_model, cls.dro_class)(5, model_type="ols", fit_intercept=True)
        model.update({cls.radius_name: value})
        theta = np.asarray(model.fit(Xs, y)["theta"]).ravel()
        scores = cls(**{cls.radius_name: value}).fit(X, y).scores_
        assert np.allclose(scores, np.abs(theta), rtol=1e-3, atol=1e-5)
        assert set(np.argsort(-scores)[:2]) == {0, 1}
    # alpha = 1: CVaR of the whole distribution is the mean loss, i.e. least squares
    ols = np.linalg.lstsq(np.column_stack([np.ones(len(y)), Xs]), y, rcond=None)[0][1:]
    assert np.allclose(CVaRDRO(alpha=1.0).fit(X, y).scores_, np.abs(ols), atol=1e-4)
