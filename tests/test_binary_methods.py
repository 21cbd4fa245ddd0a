"""Every method's classification form on a 0/1 target (docs/PROTOCOL.md, "Binary targets").

What must hold: each form is the library estimator it names (the exact CART engine against
scikit-learn's classifiers, the L1 logistic against scikit-learn's objective), a weighter's
selector fits weighted logistic regression (or least squares with ``binary_fit="wls"``), and a
regression-only method refuses a binary task in one line.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.feature_selection import mutual_info_classif
from sklearn.linear_model import LogisticRegression

import oodfs
from oodfs.contract.wls import weighted_logistic_regression
from oodfs_plugins.baselines import cart
from oodfs_plugins.baselines.trees import _impurity_decrease, _mean_normalised, _normalised


def logistic_data(n=1500, seed=0):
    """Distinct continuous values, y from a logistic link on x0, x1 and x2 * x3."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, 6))
    logit = 3 * X[:, 0] - 2 * X[:, 1] + 2 * X[:, 2] * X[:, 3]
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(float)
    w = rng.uniform(0.5, 2.0, size=n)
    return X, y, w


@pytest.mark.parametrize("weighted", [False, True])
def test_cart_gb_classifier_equals_sklearn(weighted):
    X, y, w = logistic_data()
    w = w if weighted else None
    ours = cart.GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(
        X, y, sample_weight=w
    )
    theirs = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(
        X, y, sample_weight=w
    )
    assert all(a.tree_.n_tied == 0 for (a,) in ours.estimators_)
    # the Newton leaf values: the same raw predictions as scikit-learn's
    want = theirs._raw_predict(X.astype(np.float32))[:, 0]
    np.testing.assert_allclose(ours.train_raw_prediction_, want, rtol=0, atol=1e-12)
    got = _mean_normalised([_impurity_decrease(a.tree_, 6) for (a,) in ours.estimators_], 6)
    np.testing.assert_allclose(got, theirs.feature_importances_, rtol=0, atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_cart_rf_classifier_equals_sklearn_gini(weighted):
    X, y, w = logistic_data(n=3000, seed=1)
    w = w if weighted else None
    ours = cart.RandomForestClassifier(n_estimators=10, max_depth=4, random_state=2).fit(
        X, y, sample_weight=w
    )
    theirs = RandomForestClassifier(
        n_estimators=10, max_depth=4, random_state=2, max_features=None, criterion="gini", n_jobs=1
    ).fit(X, y, sample_weight=w)
    assert all(a.tree_.n_tied == 0 for a in ours.estimators_)
    got = _mean_normalised([_normalised(_impurity_decrease(a.tree_, 6)) for a in ours.estimators_], 6)
    np.testing.assert_allclose(got, theirs.feature_importances_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.predict(X), theirs.predict_proba(X)[:, 1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["gb", "rf", "xgb", "lasso", "mi"])
def test_fit_grid_equals_separate_binary_fits(name):
    X, y, _ = logistic_data(n=800)
    cls = oodfs.get_selector(name)
    points = cls.grid_points()[:2]
    grid = cls.fit_grid(X, y, points, random_state=3, task="binary")
    for p, scores in zip(points, grid):
        np.testing.assert_allclose(scores, cls(**p, random_state=3).fit(X, y).scores_, rtol=1e-6, atol=1e-9)


def test_linear_forms_are_the_named_estimators():
    X, y, w = logistic_data(n=2000, seed=4)
    n = len(y)
    # OLS -> unpenalised logistic regression on standardised features
    Z = (X - X.mean(0)) / X.std(0)
    want = LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000).fit(Z, y).coef_[0]
    np.testing.assert_allclose(oodfs.get_selector("ols")().fit(X, y).scores_, np.abs(want), rtol=1e-5)
    # LASSO -> mean log-loss + alpha * ||beta||_1, i.e. C = 1 / (alpha n)
    alpha = 0.01
    want = LogisticRegression(
        C=1 / (alpha * n), l1_ratio=1.0, solver="liblinear", intercept_scaling=1e4, tol=1e-10
    )
    want = want.fit(X, y, sample_weight=w / w.mean()).coef_[0]
    got = oodfs.get_selector("lasso")(alpha=alpha).fit(X, y, sample_weight=w).scores_
    np.testing.assert_allclose(got, np.abs(want), atol=1e-4)
    assert (got[4:] == 0).all() and (got[:2] > 0.5).all()  # pure-noise features are zeroed
    # MI -> mutual_info_classif; correlation -> point-biserial (Pearson on 0/1)
    np.testing.assert_allclose(
        oodfs.get_selector("mi")(random_state=0).fit(X, y).scores_,
        mutual_info_classif(X, y, n_neighbors=3, random_state=0),
    )
    corr = [abs(np.corrcoef(X[:, j], y)[0, 1]) for j in range(6)]
    np.testing.assert_allclose(oodfs.get_selector("correlation")().fit(X, y).scores_, corr, rtol=1e-10)


def test_weighter_selector_fits_weighted_logistic_regression_or_wls():
    X, y, _ = logistic_data(n=1000, seed=5)
    dwr = oodfs.get_selector("dwr")
    fitted = dwr(random_state=0).fit(X, y)
    w = fitted.weights_
    np.testing.assert_allclose(fitted.scores_, np.abs(weighted_logistic_regression(X, y, w)))
    # against scikit-learn on the weighted-standardised columns
    p = w / w.sum()
    m = p @ X
    Z = (X - m) / np.sqrt(p @ (X - m) ** 2)
    want = LogisticRegression(C=np.inf, tol=1e-10, max_iter=1000).fit(Z, y, sample_weight=w).coef_[0]
    np.testing.assert_allclose(fitted.scores_, np.abs(want), rtol=1e-5)
    by_wls = dwr(binary_fit="wls", random_state=0).fit(X, y).scores_
    np.testing.assert_allclose(by_wls, np.abs(oodfs.weighted_least_squares(X, y, w)))
    grid = dwr.fit_grid(X, y, [{}, {"binary_fit": "wls"}], random_state=0, task="binary")
    np.testing.assert_allclose(grid[0], fitted.scores_)
    np.testing.assert_allclose(grid[1], by_wls)


def test_bad_binary_fit_is_one_line():
    X, y, _ = logistic_data(n=200)
    with pytest.raises(oodfs.OodfsError, match=r"binary_fit must be one of logistic, wls, got 'probit'"):
        oodfs.get_selector("dwr")(binary_fit="probit").fit(X, y)


@pytest.mark.parametrize("name", ["anchor"])
def test_regression_only_method_refuses_a_binary_task(name):
    X, y, _ = logistic_data(n=200)
    groups = np.repeat([0, 1], 100)
    with pytest.raises(oodfs.OodfsError, match=rf"'{name}' handles regression targets, not binary$"):
        oodfs.get_selector(name)().fit(X, y, groups=groups, task="binary")


def test_irm_logistic_equals_autograd_of_the_irm_objective():
    """IRMv1 with the logistic loss: reg * sum_e R_e + (1 - reg) * sum_e mean_j (dR_e/dw_j)^2 at
    w = 1, R_e torch's binary_cross_entropy_with_logits, torch.optim.Adam on phi."""
    torch = pytest.importorskip("torch")
    from oodfs_plugins.invariance.irm import irm_logistic_solutions

    rng = np.random.default_rng(0)
    n, d = 300, 3
    X = rng.normal(size=(n, d))
    groups = np.repeat([0, 1, 2], 100)
    y = (rng.random(n) < 1 / (1 + np.exp(-(X[:, 0] - X[:, 1])))).astype(float)
    regs = [0.0, 0.1]
    ours = irm_logistic_solutions(X, y, groups, regs, n_iterations=50)
    Xi, yt = torch.tensor(np.column_stack([np.ones(n), X])), torch.tensor(y)
    for q, reg in enumerate(regs):
        phi = torch.eye(d + 1, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.Adam([phi], lr=1e-3)
        for _ in range(50):
            w = torch.ones(d + 1, dtype=torch.float64, requires_grad=True)
            total = 0.0
            for e in range(3):
                m = torch.tensor(groups == e)
                risk = torch.nn.functional.binary_cross_entropy_with_logits(Xi[m] @ phi @ w, yt[m])
                grad = torch.autograd.grad(risk, w, create_graph=True)[0]
                total = total + reg * risk + (1 - reg) * (grad**2).mean()
            opt.zero_grad()
            total.backward()
            opt.step()
        want = (phi @ torch.ones(d + 1, dtype=torch.float64)).detach().numpy()
        np.testing.assert_allclose(ours[q], want, rtol=0, atol=1e-12)


# -- the synthetic binary process ------------------------------------------------------------------
def test_synthetic_binary_features_are_the_regression_process_and_y_its_logistic_draw():
    from sklearn.linear_model import LogisticRegression as LR

    env = oodfs.get_environment("synthetic_binary")(setting="mlp", mlp_seed=1)
    assert env.task == "binary" and env.stable_set == (0, 1, 2, 3, 4)
    X, y = env.sample(2.5, 20000, 7)
    X_reg, _ = oodfs.get_environment("synthetic")(setting="mlp", mlp_seed=1).sample(2.5, 20000, 7)
    np.testing.assert_array_equal(X, X_reg)  # the same features, only the outcome differs
    assert set(np.unique(y)) == {0.0, 1.0} and 0.45 < y.mean() < 0.55  # centred logit: balanced
    # Y depends on X through the logit alone: given it, the spurious V4, V5 carry nothing
    coef = LR(C=np.inf).fit(np.column_stack([env.logit(X), X[:, 8], X[:, 9]]), y).coef_[0]
    assert abs(coef[0] - 1.0) < 0.1 and np.abs(coef[1:]).max() < 0.1, coef
    # ...but they predict Y marginally, with the sign of the bias rate
    assert np.corrcoef(X[:, 8], y)[0, 1] > 0.3
    X_neg, y_neg = env.sample(-2.5, 20000, 8)
    assert np.corrcoef(X_neg[:, 8], y_neg)[0, 1] < -0.3


def test_synthetic_binary_passes_the_environment_kit_and_refuses_bad_options():
    from oodfs.testing import check_environment

    cls = oodfs.get_environment("synthetic_binary")
    check_environment(cls)
    with pytest.raises(
        oodfs.OodfsError, match=r"unknown setting 'svi' for environment 'synthetic_binary'; valid: mlp, poly"
    ):
        cls(setting="svi").sample(2.5, 10, 0)
    with pytest.raises(oodfs.OodfsError, match=r"logit_scale must be a finite positive number, got -1"):
        cls(logit_scale=-1).sample(2.5, 10, 0)


# -- the kit's binary checks catch what they are meant to catch ------------------------------------
class _IgnoresY(oodfs.Selector):
    """Declares binary, but scores each column by its spread (y plays no part)."""

    name = "ignores_y"
    task_types = ("regression", "binary")

    def _fit_scores(self, X, y, sample_weight):
        return X.std(axis=0) * np.arange(1, X.shape[1] + 1)


class _NeverRefuses(oodfs.Selector):
    """Regression only, but its own fit skips the base class's task check."""

    name = "never_refuses"

    def fit(self, X, y, sample_weight=None, groups=None, task=None):
        self.scores_ = np.abs(np.corrcoef(np.column_stack([X, y]).T)[-1, :-1])
        self.ranking_ = np.argsort(-self.scores_)
        self.n_features_in_ = X.shape[1]
        return self

    @classmethod
    def fit_grid(cls, X, y, points, random_state=None, **kwargs):
        return [cls().fit(X, y).scores_ for _ in points]


def test_kit_binary_checks_catch_their_defects():
    from oodfs import testing as kit

    with pytest.raises(
        AssertionError, match=r"check_selector_binary_known_answer failed: .*features 0 and 1"
    ):
        kit.check_selector_binary_known_answer(_IgnoresY)
    with pytest.raises(
        AssertionError, match=r"check_selector_refuses_binary failed: fit\(task='binary'\): expected"
    ):
        kit.check_selector_refuses_binary(_NeverRefuses)
    kit.check_selector_binary_known_answer(oodfs.get_selector("ols"))  # a conforming method passes
    kit.check_selector_refuses_binary(oodfs.get_selector("anchor"))


# -- ICP's binary form: the authors' R package's classification path (docs/PROTOCOL.md section 15) --
def icp_binary_data(n=400, seed=0):
    """Three environments moving the means of the causes x0 and x1 and of x2, an effect of y; x3
    is noise; y ~ Bernoulli(sigmoid(2 x0 - 1.5 x1)) in every environment."""
    rng = np.random.default_rng(seed)
    g = np.repeat([0, 1, 2], n)
    x0 = rng.normal(size=3 * n) + np.array([-1.0, 0.0, 1.0])[g]
    x1 = rng.normal(size=3 * n) + np.array([1.0, -1.0, 0.0])[g]
    y = (rng.random(3 * n) < 1 / (1 + np.exp(-(2 * x0 - 1.5 * x1)))).astype(float)
    x2 = y + 0.8 * rng.normal(size=3 * n) + np.array([0.0, 1.0, -1.0])[g]
    x3 = rng.normal(size=3 * n)
    return np.column_stack([x0, x1, x2, x3]), y, g


def reference_binary_pvalue(X, y, g, subset):
    """The package's getpval for a factor Y, written out with scikit-learn and scipy: unpenalised
    logistic regression with intercept, residuals y - p_hat, per environment a Welch t-test
    against the other rows, (E - 1) * min over environments, capped at 1."""
    if subset:
        model = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X[:, list(subset)], y)
        p_hat = model.predict_proba(X[:, list(subset)])[:, 1]
    else:
        p_hat = np.full(len(y), y.mean())
    resid = y - p_hat
    envs = np.unique(g)
    ps = [stats.ttest_ind(resid[g == e], resid[g != e], equal_var=False).pvalue for e in envs]
    return min(1.0, min(ps) * (len(envs) - 1))


def test_icp_binary_pvalues_are_the_packages_logistic_residual_test():
    from oodfs_plugins.invariance.icp import subset_log_pvalues_binary

    X, y, g = icp_binary_data()
    subsets = [(), (0,), (1,), (0, 1), (0, 1, 2), (0, 1, 3), (2,), (0, 1, 2, 3)]
    mine = np.exp(subset_log_pvalues_binary(X, y, g, 3, subsets))
    ref = np.array([reference_binary_pvalue(X, y, g, s) for s in subsets])
    big = ref > 1e-12
    # glm's 10 IRLS steps stop at a relative deviance change of 1e-6, not at the exact optimum
    np.testing.assert_allclose(mine[big], ref[big], rtol=1e-4)
    assert np.all(mine[~big] < 1e-10)
    assert ref[3] > 0.05 and ref[4] < 1e-4  # the causes accepted; adding the effect x2 rejected


def test_icp_binary_selects_the_causes_and_ranks_them_first():
    X, y, g = icp_binary_data(seed=1)
    icp = oodfs.get_selector("icp")(alpha=0.05).fit(X, y, groups=g)
    assert icp.task_ == "binary"
    assert icp.selected_ == [0, 1]
    assert sorted(icp.ranking_[:2]) == [0, 1]
    assert [0, 1] in icp.accepted_sets_ and all({0, 1} <= set(s) for s in icp.accepted_sets_)
    # the regression test on the same 0/1 target (task named) is a different test
    as_regression = oodfs.get_selector("icp")(alpha=0.05).fit(X, y, groups=g, task="regression")
    assert not np.allclose(as_regression.scores_, icp.scores_)


def test_icp_binary_glm_stops_like_r_on_separable_data():
    """Separable data: R's glm stops after 10 IRLS steps with finite probabilities (and a warning);
    the port does the same rather than fail."""
    from oodfs_plugins.invariance.icp import glm_logistic

    x = np.linspace(-1, 1, 40)
    y = (x > 0).astype(float)
    mu = glm_logistic(np.column_stack([x, np.ones_like(x)]), y)
    assert np.all((mu > 0) & (mu < 1)) and np.all((mu > 0.5) == (y == 1))
