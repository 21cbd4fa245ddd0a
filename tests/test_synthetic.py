"""The synthetic environment: check values, the exact sampler against plain rejection
sampling and the authors' pool sampler, outcome, noise, clipping, seeds and input errors.

Every random draw uses a fixed seed, so each test is deterministic; thresholds are set so that
other seeds pass too (several standard errors of slack), yet a wrong distribution fails (see
``test_comparison_has_power``).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from sklearn.base import clone

import oodfs
from oodfs import OodfsError
from oodfs_plugins.environments.synthetic import Synthetic, _log_c, _log_c_bound, _sample_w, stable_beta

N = 10_000
BETA = np.array([1 / 3, -2 / 3, 1, -1 / 3, 2 / 3])


def corr_with_y(X, y):
    return np.array([np.corrcoef(X[:, j], y)[0, 1] for j in range(X.shape[1])])


def mean_corr(env, r, seeds=range(5), n=N):
    """corr(X_j, Y) averaged over a few seeds (standard error ~0.005 instead of ~0.01)."""
    return np.mean([corr_with_y(*env.sample(r, n, s)) for s in seeds], axis=0)


# -- check values (reference draws of the poly setting) ------------------------------------
# The reference check values are those of the `poly` setting (mlp_seed=0 gives corr(S_j, Y) of about
# (0.14, -0.25, 0.27, 0.01, 0.30), which does not match). Reference values with n = 10^6:
# r = 2.5: S (0.112, -0.158, 0.394, 0.032, 0.264), V4/V5 0.865; r = 1.3: 0.685; r = -3: -0.872.
def test_check_values_poly_r25():
    c = mean_corr(Synthetic(setting="poly"), 2.5)
    np.testing.assert_allclose(c[8:], 0.86, atol=0.015)
    # the reference S values are one n = 10^4 sample (S1 0.09 vs 0.112 at n = 10^6), hence a wider band
    np.testing.assert_allclose(c[:5], [0.09, -0.15, 0.39, 0.03, 0.28], atol=0.035)
    np.testing.assert_allclose(c[:5], [0.112, -0.158, 0.394, 0.032, 0.264], atol=0.02)
    np.testing.assert_allclose(c[5:8], 0.0, atol=0.02)


@pytest.mark.parametrize("r, expected", [(1.3, 0.68), (-3.0, -0.87)])
def test_check_values_poly_other_r(r, expected):
    c = mean_corr(Synthetic(setting="poly"), r)
    np.testing.assert_allclose(c[8:], expected, atol=0.015)
    np.testing.assert_allclose(c[5:8], 0.0, atol=0.02)


def test_mlp_setting_is_biased_the_same_way():
    c = mean_corr(Synthetic(setting="mlp"), 2.5, seeds=range(2))
    np.testing.assert_allclose(c[8:], 0.86, atol=0.02)
    np.testing.assert_allclose(c[5:8], 0.0, atol=0.03)


# -- outcome, noise, clipping ---------------------------------------------------------------
@pytest.mark.parametrize("setting", Synthetic.settings)
def test_shapes_clipping_and_noise(setting):
    env = Synthetic(setting=setting)
    X, y = env.sample(2.5, N, 0)
    assert X.shape == (N, 10) and y.shape == (N,) and X.dtype == np.float64
    assert X.min() == -2.0 and X.max() == 2.0  # clipped, and the clip atoms are reached
    at_edge = np.mean(np.abs(X[:, 5]) == 2.0)  # V1 is a plain clipped normal: 2 Phi(-2) = 0.0455
    assert abs(at_edge - 2 * stats.norm.cdf(-2)) < 0.01
    resid = y - env.f(X)
    assert abs(resid.std() - 0.3) < 0.01 and abs(resid.mean()) < 0.01
    # the noise is added after selection: independent of the spurious V4, V5
    assert np.all(np.abs(corr_with_y(X, resid)) < 0.04)


def test_poly_outcome():
    X = np.random.default_rng(0).uniform(-2, 2, (50, 10))
    expected = X[:, :5] @ BETA + X[:, 0] * X[:, 1] * X[:, 2] / 4
    np.testing.assert_allclose(Synthetic(setting="poly").f(X), expected)


def test_mlp_outcome_depends_on_seed():
    X = np.random.default_rng(0).uniform(-2, 2, (200, 10))
    f0 = Synthetic(setting="mlp", mlp_seed=0).f(X)
    np.testing.assert_array_equal(f0, Synthetic(setting="mlp", mlp_seed=0).f(X))
    for seed in (1, 2, 3, 4):
        assert np.max(np.abs(f0 - Synthetic(setting="mlp", mlp_seed=seed).f(X))) > 0.05
    # the MLP only sees S1..S3: changing S4, S5 moves f by beta only; V never matters
    X2 = X.copy()
    X2[:, 3:] += 0.1
    np.testing.assert_allclose(Synthetic(setting="mlp").f(X2) - f0, 0.1 * (BETA[3] + BETA[4]))


def test_mlp_params():
    layers = Synthetic(setting="mlp", mlp_seed=7).mlp_params()
    assert [(W.shape, b.shape) for W, b in layers] == [((3, 3), (3,)), ((3, 3), (3,)), ((1, 3), (1,))]
    assert all(np.all(np.abs(a) < 1) for layer in layers for a in layer)


def test_metadata_and_registration():
    env = Synthetic()
    assert env.stable_set == (0, 1, 2, 3, 4)
    assert env.feature_names == ["S1", "S2", "S3", "S4", "S5", "V1", "V2", "V3", "V4", "V5"]
    assert Synthetic.name == "synthetic" and set(Synthetic.settings) == {"mlp", "poly", "svi"}
    assert isinstance(env, oodfs.Environment)
    assert oodfs.contract.api.describe(Synthetic)  # one-line description for `oodfs plugins`
    assert clone(Synthetic(setting="mlp", mlp_seed=3)).get_params()["mlp_seed"] == 3
    from oodfs_plugins.environments import oodfs_environments

    assert Synthetic in oodfs_environments()


# -- seeds ----------------------------------------------------------------------------------
@pytest.mark.parametrize("sampler", Synthetic.samplers)
def test_deterministic_per_seed(sampler):
    env = Synthetic(sampler=sampler)
    X1, y1 = env.sample(-1.5, 500, 42)
    X2, y2 = env.sample(-1.5, 500, 42)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    X3, _ = env.sample(-1.5, 500, 43)
    assert not np.array_equal(X1, X3)


# -- the exact sampler ----------------------------------------------------------------------
@pytest.mark.parametrize("lam", [0.05, 2.6, 9.2, 40.0])
def test_c_closed_form_matches_quadrature(lam):
    """c(f) = E exp(-lam |f - V|) for the clipped normal V (two atoms + a density)."""
    for f in (-5.0, -2.0, -1.3, 0.0, 0.7, 2.0, 3.5):
        dens = integrate.quad(
            lambda v: stats.norm.pdf(v) * np.exp(-lam * abs(f - v)),
            -2,
            2,
            points=[np.clip(f, -2, 2)],
            epsabs=0,
            epsrel=1e-12,
            limit=200,
        )[0]
        atoms = stats.norm.cdf(-2) * (np.exp(-lam * abs(f - 2)) + np.exp(-lam * abs(f + 2)))
        assert np.exp(_log_c(np.array([f]), lam, 2.0))[0] == pytest.approx(dens + atoms, rel=1e-10)
    # the acceptance bound really bounds c (checked on a grid 100x finer than the one it uses)
    assert _log_c(np.linspace(-2, 2, 400_001), lam, 2.0).max() <= _log_c_bound(lam, 2.0)


def test_plain_rejection_acceptance_matches_spec():
    """E_S[c(f)^2] is the acceptance rate of plain rejection: about 4.6% at 1.3, 0.30% at 3."""
    env = Synthetic()
    f = env._f(env._draw_S(400_000, np.random.default_rng(0)))
    for r, rate in ((1.3, 0.046), (3.0, 0.0030)):
        assert np.mean(np.exp(2 * _log_c(f, 10 * np.log(r), 2.0))) == pytest.approx(rate, rel=0.05)


@pytest.mark.parametrize("f", [-2.6, -0.4, 0.7, 1.95])
@pytest.mark.parametrize("lam", [2.6, 9.2])
def test_conditional_of_spurious_v(f, lam):
    """W | f ~ p(w) exp(-lam |f - w|): atoms and CDF of the draws against numerical integration."""
    w = _sample_w(np.full(100_000, f), lam, 2.0, 2, np.random.default_rng(1)).ravel()
    assert np.all(np.abs(w) <= 2)
    dens = lambda v: stats.norm.pdf(v) * np.exp(-lam * abs(f - v))  # noqa: E731
    atom = stats.norm.cdf(-2) * np.exp(-lam * np.abs(f - np.array([-2.0, 2.0])))
    total = np.exp(_log_c(np.array([f]), lam, 2.0))[0]
    se = 4 * np.sqrt(0.25 / w.size)
    for a, x in zip(atom, (-2.0, 2.0)):
        assert abs(np.mean(w == x) - a / total) < se
    for t in np.linspace(-1.9, 1.9, 15):
        cdf = (atom[0] + integrate.quad(dens, -2, t, points=[np.clip(f, -2, t)], limit=200)[0]) / total
        assert abs(np.mean(w <= t) - cdf) < se


def compare(a, b, env, r):
    """Min KS p-value over V4, V5, f, y, S3 and sgn(r) V_j - f (what selection acts on; the most
    sensitive), and the max |difference| of the correlations with y, corr(V4, V5) and two means.
    Those differences have standard error <= 0.014 at n = 10^4 (0.02 at 5000): we allow ~4 SE."""
    (Xa, ya), (Xb, yb) = a, b
    s = np.sign(r)
    cols = [
        lambda X, y: X[:, 8],
        lambda X, y: X[:, 9],
        lambda X, y: env.f(X),
        lambda X, y: y,
        lambda X, y: X[:, 2],
        lambda X, y: s * X[:, 8] - env.f(X),
        lambda X, y: s * X[:, 9] - env.f(X),
    ]
    p = min(stats.ks_2samp(g(Xa, ya), g(Xb, yb)).pvalue for g in cols)

    def summary(X, y):
        return np.r_[corr_with_y(X, y), np.corrcoef(X[:, 8], X[:, 9])[0, 1], X[:, 8].mean(), y.mean()]

    return p, np.max(np.abs(summary(Xa, ya) - summary(Xb, yb)))


@pytest.mark.parametrize("r", [2.5, -1.3])
def test_exact_matches_plain_rejection(r):
    exact, rejection = Synthetic(sampler="exact"), Synthetic(sampler="rejection")
    p, diff = compare(exact.sample(r, N, 0), rejection.sample(r, N, 1), exact, r)
    assert p > 1e-3 and diff < 0.06


def test_exact_matches_plain_rejection_mlp():
    exact, rejection = Synthetic("mlp", "exact", mlp_seed=3), Synthetic("mlp", "rejection", mlp_seed=3)
    p, diff = compare(exact.sample(2.0, 5000, 0), rejection.sample(2.0, 5000, 1), exact, 2.0)
    assert p > 1e-3 and diff < 0.085


@pytest.mark.parametrize("r", [2.5, -1.3])
def test_exact_matches_pool(r):
    exact, pool = Synthetic(sampler="exact"), Synthetic(sampler="pool")
    # the pool's duplicate rows make its KS p-values optimistic; a looser threshold
    p, diff = compare(exact.sample(r, N, 0), pool.sample(r, N, 1), exact, r)
    assert p > 1e-4 and diff < 0.06


def test_pool_duplicates_rows_exact_does_not():
    """The pool sampler repeats about 22% of rows at r = 2.5; i.i.d. draws repeat none."""
    X, _ = Synthetic(sampler="pool").sample(2.5, N, 0)
    assert 1 - len(np.unique(X, axis=0)) / N == pytest.approx(0.22, abs=0.02)
    X, _ = Synthetic(sampler="exact").sample(2.5, N, 0)
    assert len(np.unique(X, axis=0)) == N


def test_comparison_has_power():
    """The same checks tell r = 2.5 from r = 2.2 and catch a sampler that forgets to reweight S."""
    env = Synthetic()
    p, _ = compare(env.sample(2.5, N, 0), Synthetic(sampler="rejection").sample(2.2, N, 1), env, 2.5)
    assert p < 1e-3

    class NoSReweighting(Synthetic):  # draws V4, V5 | f correctly but S from p(S)
        def _sample_exact(self, r, n, rng):
            S, V = self._draw_S(n, rng), self._draw_V(n, rng)
            V[:, 3:] = np.sign(r) * _sample_w(self._f(S), 10 * np.log(abs(r)), 2.0, 2, rng)
            return np.hstack([S, V])

    p, _ = compare(
        NoSReweighting().sample(2.5, N, 0), Synthetic(sampler="rejection").sample(2.5, N, 1), env, 2.5
    )
    assert p < 1e-3


def test_exact_sampler_other_parameters():
    """A single spurious column, another exponent and clip level: still the rejection distribution."""
    kw = dict(spurious=("V3",), exponent=5.0, clip=1.5)
    exact, rejection = Synthetic(sampler="exact", **kw), Synthetic(sampler="rejection", **kw)
    (Xa, ya), (Xb, _) = exact.sample(-2.0, N, 0), rejection.sample(-2.0, N, 1)
    assert np.abs(Xa).max() == 1.5
    for j in (7, 8):
        assert stats.ks_2samp(Xa[:, j], Xb[:, j]).pvalue > 1e-3
    assert stats.ks_2samp(exact.f(Xa), exact.f(Xb)).pvalue > 1e-3
    assert abs(np.corrcoef(Xa[:, 8], ya)[0, 1]) < 0.03  # V5 is no longer spurious


# -- column layout -------------------------------------------------------------------------
@pytest.mark.parametrize("sampler", Synthetic.samplers)
def test_layout_permutes_columns_only(sampler):
    """A layout seed moves whole columns: same draws, names and stable set follow the columns."""
    fixed, moved = Synthetic(sampler=sampler), Synthetic(sampler=sampler, layout_seed=11)
    Xf, yf = fixed.sample(2.5, 400, 3)
    Xm, ym = moved.sample(2.5, 400, 3)
    names = moved.feature_names
    assert sorted(names) == sorted(fixed.feature_names) and names != fixed.feature_names
    np.testing.assert_array_equal(ym, yf)
    np.testing.assert_array_equal(Xm, Xf[:, [fixed.feature_names.index(nm) for nm in names]])
    assert moved.stable_set == tuple(j for j, nm in enumerate(names) if nm.startswith("S"))
    assert moved.stable_set != (0, 1, 2, 3, 4)
    np.testing.assert_allclose(moved.f(Xm), fixed.f(Xf))
    assert moved.column_of("V4") == names.index("V4")
    # the noise is what is left of y once f is known: same in both layouts
    np.testing.assert_allclose(ym - moved.f(Xm), yf - fixed.f(Xf))


def test_layout_differs_between_seeds():
    orders = {tuple(Synthetic(layout_seed=s).feature_names) for s in range(20)}
    assert len(orders) == 20
    stable = [Synthetic(layout_seed=s).stable_set for s in range(20)]
    # S is not favoured: over seeds every column holds a stable feature about half the time
    share = np.bincount(np.concatenate(stable), minlength=10) / 20
    assert share.min() > 0.15 and share.max() < 0.85


def test_spurious_columns_follow_the_layout():
    env = Synthetic(layout_seed=5, spurious=("V1", "V2"))
    X, y = env.sample(-2.5, 5000, 0)
    c = corr_with_y(X, y)
    for name in env.feature_names:
        j = env.column_of(name)
        if name in ("V1", "V2"):
            assert c[j] < -0.8
        elif name.startswith("V"):
            assert abs(c[j]) < 0.05


# -- general dimensions, spurious sets and exponents -------------------------------------------
def test_dimensions_and_cyclic_beta():
    np.testing.assert_allclose(stable_beta(5), BETA)
    np.testing.assert_allclose(stable_beta(3), BETA[:3])
    np.testing.assert_allclose(stable_beta(7), np.r_[BETA, BETA[:2]])
    env = Synthetic(d_s=7, d_v=10, spurious=("V9", "V10"))
    X, y = env.sample(2.0, 2000, 0)
    assert X.shape == (2000, 17) and env.stable_set == tuple(range(7))
    assert env.feature_names[7:] == [f"V{i}" for i in range(1, 11)]
    expected = X[:, :7] @ stable_beta(7) + X[:, 0] * X[:, 1] * X[:, 2] / 4
    np.testing.assert_allclose(env.f(X), expected)
    c = corr_with_y(X, y)
    assert np.all(c[15:] > 0.8) and np.all(np.abs(c[7:15]) < 0.06)


def test_true_coef_follows_the_layout_and_is_what_least_squares_recovers():
    env = Synthetic(setting="poly", layout_seed=7, spurious=())  # no selection: X independent of noise
    beta = env.true_coef
    names = env.feature_names
    for j, name in enumerate(names):
        expected = stable_beta(5)[int(name[1:]) - 1] if name.startswith("S") else 0.0
        assert beta[j] == expected
    X, y = env.sample(2.0, 20000, 1)
    y_linear = y - env.f(X) + X @ beta  # the outcome without the misspecification term
    coef, *_ = np.linalg.lstsq(np.column_stack([np.ones(len(y)), X]), y_linear, rcond=None)
    np.testing.assert_allclose(coef[1:], beta, atol=0.02)


def test_no_spurious_columns_means_no_selection():
    """An empty spurious set: every r gives the unselected distribution."""
    env = Synthetic(spurious=())
    X, y = env.sample(3.0, N, 0)
    Xu, yu = env.sample_unselected(N, 1)
    for j in range(10):
        assert stats.ks_2samp(X[:, j], Xu[:, j]).pvalue > 1e-3
    assert np.all(np.abs(corr_with_y(X, y)[5:]) < 0.04)
    X2, _ = Synthetic(spurious=(), sampler="rejection").sample(3.0, 200, 0)  # accepts every candidate
    assert X2.shape == (200, 10)


def compare_named(a, b, env, r, spurious):
    """compare() for any layout and spurious set: min KS p-value over f, y, S3 and each spurious
    V_j and sgn(r) V_j - f; max |difference| of the correlations with y and of corr between the
    first two spurious columns."""
    (Xa, ya), (Xb, yb) = a, b
    s = np.sign(r)
    cols = [env.column_of(v) for v in spurious]
    funcs = [lambda X, y: env.f(X), lambda X, y: y, lambda X, y: X[:, env.column_of("S3")]]
    for j in cols:
        funcs += [lambda X, y, j=j: X[:, j], lambda X, y, j=j: s * X[:, j] - env.f(X)]
    p = min(stats.ks_2samp(g(Xa, ya), g(Xb, yb)).pvalue for g in funcs)

    def summary(X, y):
        extra = [np.corrcoef(X[:, cols[0]], X[:, cols[1]])[0, 1]] if len(cols) > 1 else []
        return np.r_[corr_with_y(X, y), extra]

    return p, np.max(np.abs(summary(Xa, ya) - summary(Xb, yb)))


@pytest.mark.parametrize(
    "kw, r",
    [
        ({"spurious": ("V1", "V2"), "layout_seed": 3}, 2.5),
        ({"spurious": ("V3", "V4", "V5"), "layout_seed": 4}, -2.0),
        ({"d_v": 10, "spurious": ("V4", "V5"), "layout_seed": 5}, 2.5),
        ({"exponent": 5.0}, 3.0),
        ({"exponent": 20.0, "layout_seed": 6}, -1.5),
        ({"d_s": 3, "d_v": 2, "spurious": ("V2",)}, 2.0),
        ({"setting": "mlp", "mlp_seed": 2, "exponent": 20.0, "layout_seed": 7}, 1.5),
    ],
)
def test_exact_matches_plain_rejection_variants(kw, r):
    """The exact sampler against plain rejection for the generalised process (n = 5000 each)."""
    exact, rejection = Synthetic(sampler="exact", **kw), Synthetic(sampler="rejection", **kw)
    spurious = kw.get("spurious", ("V4", "V5"))
    p, diff = compare_named(exact.sample(r, 5000, 0), rejection.sample(r, 5000, 1), exact, r, spurious)
    assert p > 1e-3 and diff < 0.085


def test_variant_comparison_has_power():
    """compare_named tells spurious {V3, V4, V5} from {V4, V5}, and exponent 20 from 10."""
    env = Synthetic(spurious=("V3", "V4", "V5"))
    other = Synthetic(sampler="rejection", spurious=("V4", "V5"))
    p, _ = compare_named(env.sample(2.0, 5000, 0), other.sample(2.0, 5000, 1), env, 2.0, ("V4", "V5"))
    assert p < 1e-3
    env = Synthetic(exponent=20.0)
    p, _ = compare_named(
        env.sample(1.5, 5000, 0), Synthetic(sampler="rejection").sample(1.5, 5000, 1), env, 1.5, ("V4", "V5")
    )
    assert p < 1e-3


# -- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, r, n, match",
    [
        ({}, 1.0, 10, r"\|r\| > 1"),
        ({}, -0.5, 10, r"\|r\| > 1"),
        ({}, "strong", 10, "bias rate r must be a number"),
        ({}, 2.0, 0, "n must be a positive integer"),
        ({}, 2.0, -3, "n must be a positive integer"),
        ({}, 2.0, 2.5, "n must be a positive integer"),
        ({"setting": "quadratic"}, 2.0, 10, "unknown setting 'quadratic'.*mlp, poly"),
        ({"sampler": "mcmc"}, 2.0, 10, "unknown sampler 'mcmc'.*exact, pool, rejection"),
        (
            {"spurious": ("S3", "V5")},
            2.0,
            10,
            "spurious names .S3., not a non-stable feature.*valid: V1, V2, V3, V4, V5",
        ),
        ({"exponent": -1.0}, 2.0, 10, "exponent must be"),
        ({"noise_sd": -0.3}, 2.0, 10, "noise_sd must be"),
        ({"exponent": 0.0}, 2.0, 10, "exponent must be a finite positive number"),
        ({"spurious": ("V6",)}, 2.0, 10, "spurious names 'V6'.*valid: V1, V2, V3, V4, V5"),
        ({"spurious": ("V4", "V4")}, 2.0, 10, "spurious lists a feature twice"),
        ({"spurious": "V4"}, 2.0, 10, "spurious must be a list of V feature names"),
        ({"spurious": (8, 9)}, 2.0, 10, "spurious must be a list of V feature names"),
        ({"d_v": 0}, 2.0, 10, "d_v must be an integer >= 1, got 0"),
        ({"d_s": 2}, 2.0, 10, r"d_s must be an integer >= 3 \(both outcomes use S1..S3\), got 2"),
        ({"d_s": 5.0}, 2.0, 10, "d_s must be an integer >= 3"),
        ({"layout_seed": -1}, 2.0, 10, "layout_seed must be None"),
        ({"layout_seed": 1.5}, 2.0, 10, "layout_seed must be None"),
    ],
)
def test_bad_input(kwargs, r, n, match):
    with pytest.raises(OodfsError, match=match):
        Synthetic(**kwargs).sample(r, n, 0)


def test_bad_input_messages_are_one_line():
    for kwargs in ({"d_v": 0}, {"spurious": ("V9",)}, {"layout_seed": "x"}):
        with pytest.raises(OodfsError) as info:
            Synthetic(**kwargs).sample(2.0, 10, 0)
        assert "\n" not in str(info.value)


def test_f_needs_the_environment_columns():
    with pytest.raises(OodfsError, match="X has 6 columns; this synthetic environment has 10"):
        Synthetic().f(np.zeros((3, 6)))
    with pytest.raises(OodfsError, match="unknown feature 'V9'"):
        Synthetic().column_of("V9")
