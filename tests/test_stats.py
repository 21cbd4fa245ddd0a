"""oodfs.report.stats against known answers: scipy's own numbers, hand computations, clear-cut data."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from oodfs import OodfsError
from oodfs.report import stats as S

LOWER = {"rmse_mean": True, "f1": False}


def table(values: dict, setting="poly", r_trains=(1.5, 2.0), runs=5):
    """A tidy results frame: ``values[method]`` lists rmse_mean over (r_train, run) blocks."""
    blocks = [(r, run) for r in r_trains for run in range(runs)]
    rows = [
        dict(setting=setting, r_train=r, run=run, method=m, rmse_mean=v)
        for m, vals in values.items()
        for (r, run), v in zip(blocks, vals)
    ]
    return pd.DataFrame(rows)


def base(n=10, seed=0):
    return np.random.default_rng(seed).normal(0.5, 0.1, n)


# -- cell_summary ----------------------------------------------------------------------------


def test_t_interval_equals_scipy():
    x = np.array([0.31, 0.42, 0.38, 0.55, 0.47])
    cs = S.cell_summary(x)
    low, high = st.t.interval(0.95, 4, loc=x.mean(), scale=st.sem(x))
    assert (cs.mean, cs.n) == (pytest.approx(x.mean()), 5)
    assert (cs.low, cs.high) == (pytest.approx(low), pytest.approx(high))
    assert S.cell_summary(x, level=0.9).high < cs.high


def test_bootstrap_interval_equals_scipy_and_is_seeded():
    x = np.array([0.31, 0.42, 0.38, 0.55, 0.47, 0.29])
    cs = S.cell_summary(x, method="bootstrap", random_state=3)
    ci = st.bootstrap(
        (x,), np.mean, method="percentile", n_resamples=S.N_RESAMPLES, rng=np.random.default_rng(3)
    ).confidence_interval
    assert (cs.low, cs.high) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert cs == S.cell_summary(x, method="bootstrap", random_state=3)
    assert cs.low < x.mean() < cs.high


def test_one_run_has_no_interval_and_nans_are_dropped():
    cs = S.cell_summary([0.4, np.nan])
    assert cs.mean == 0.4 and cs.n == 1 and np.isnan(cs.low) and np.isnan(cs.high)
    assert S.cell_summary([]).n == 0 and np.isnan(S.cell_summary([]).mean)
    assert S.cell_summary([0.7, 0.7, 0.7]) == (0.7, 0.7, 0.7, 3)  # constant: the point, no NaN


def test_describe_interval_and_bad_method():
    assert "t interval" in S.describe_interval("t") and "95 %" in S.describe_interval("t")
    assert "bootstrap" in S.describe_interval("bootstrap", level=0.9) and "90 %" in S.describe_interval(
        "bootstrap", level=0.9
    )
    with pytest.raises(OodfsError, match="unknown interval method 'bca'; valid: t, bootstrap"):
        S.cell_summary([1, 2], method="bca")


# -- multiple comparisons --------------------------------------------------------------------


def test_holm_matches_hand_computation():
    # sorted 0.01, 0.03, 0.04 -> 3*0.01 = 0.03, 2*0.03 = 0.06, max(0.06, 1*0.04) = 0.06
    assert S.adjust_pvalues([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    out = S.adjust_pvalues([0.01, np.nan, 0.04, 0.03])  # NaN is not part of the family
    assert np.isnan(out[1]) and out[[0, 2, 3]] == pytest.approx([0.03, 0.06, 0.06])
    assert S.adjust_pvalues([0.01, 0.04], "none") == pytest.approx([0.01, 0.04])


@pytest.mark.parametrize("correction", ["holm", "bonferroni", "fdr_bh"])
def test_corrections_equal_statsmodels(correction):
    from statsmodels.stats.multitest import multipletests

    p = np.random.default_rng(5).uniform(0, 0.2, 12) ** 2
    p[3] = p[7]  # a tie
    assert S.adjust_pvalues(p, correction) == pytest.approx(multipletests(p, method=correction)[1])


# -- best_set --------------------------------------------------------------------------------


def test_constant_margin_over_ten_pairs_is_significantly_worse():
    b = base()
    res = S.best_set(table({"dwr": b, "ols": b + 0.05}), "rmse_mean", LOWER).set_index("method")
    assert res.loc["dwr", "is_best"] and res.loc["dwr", "in_best_set"]
    assert res.loc["ols", "p_raw"] == pytest.approx(2 / 2**10)  # exact Wilcoxon, all 10 signs agree
    assert not res.loc["ols", "in_best_set"] and res.loc["ols", "n_pairs"] == 10
    # higher is better flips the winner
    res = S.best_set(table({"dwr": b, "ols": b + 0.05}).rename(columns={"rmse_mean": "f1"}), "f1", LOWER)
    assert res.set_index("method").loc["ols", "is_best"]


def test_identical_methods_share_the_best_set():
    b = base()
    res = S.best_set(table({"dwr": b, "ols": b.copy(), "rf": b + 1}), "rmse_mean", LOWER).set_index("method")
    assert res.loc["ols", "p_raw"] == 1.0 and res.loc["ols", "in_best_set"]
    assert not res.loc["rf", "in_best_set"]
    assert res["is_best"].sum() == 1


def test_holm_is_applied_to_the_comparisons_with_the_best():
    b = base(10, seed=1)
    noise = np.random.default_rng(2).normal(0, 0.05, (3, 10))
    res = S.best_set(
        table({"best": b - 1, "a": b + noise[0], "b": b + 0.02 + noise[1], "c": b + noise[2]}),
        "rmse_mean",
        LOWER,
    )
    tested = res[~res["is_best"]]
    assert tested["p_vs_best"].to_numpy() == pytest.approx(S.adjust_pvalues(tested["p_raw"], "holm"))
    bonf = S.best_set(table({"best": b - 1, "a": b + noise[0]}), "rmse_mean", LOWER, correction="bonferroni")
    assert bonf["p_vs_best"].iloc[1] == bonf["p_raw"].iloc[1]  # one comparison: nothing to adjust


def test_one_run_gives_no_best():
    res = S.best_set(table({"dwr": [0.3], "ols": [0.5]}, r_trains=(2.0,), runs=1), "rmse_mean", LOWER)
    assert not res["is_best"].any() and not res["in_best_set"].any()
    assert (res["note"] == "fewer than 2 runs: no best").all()
    assert "No best where no method has 2 runs: setting=poly" in S.describe_best_rule(res)


def test_a_method_with_too_few_pairs_is_not_in_the_best_set():
    # rf has values in 5 of 10 blocks (failed tasks): its test cannot reach 0.05, so it is not in
    # the best set, although the group is decidable for the others
    b = base(10)
    df = table({"dwr": b, "ols": b + 0.001 * base(10, 3), "rf": b + 0.2})
    df = df[~((df["method"] == "rf") & (df["r_train"] == 2.0))]
    res = S.best_set(df, "rmse_mean", LOWER).set_index("method")
    assert res.loc["rf", "n_pairs"] == 5 and res.loc["rf", "decidable"]
    assert not res.loc["rf", "in_best_set"] and "too few pairs (5)" in res.loc["rf", "note"]


def test_few_pairs_cannot_reach_alpha_and_say_so():
    # 5 pairs, every one worse: the smallest two-sided Wilcoxon p is 2/32 = 0.0625 > 0.05
    b = base(5)
    res = S.best_set(table({"dwr": b, "ols": b + 1}, r_trains=(2.0,)), "rmse_mean", LOWER).set_index("method")
    assert res.loc["ols", "p_raw"] == pytest.approx(0.0625)
    # not shown worse, but no test could have: it is not in the best set (nothing is bolded)
    assert not res.loc["ols", "in_best_set"] and not res.loc["ols", "decidable"]
    assert res.loc["ols", "note"] == "too few pairs to reach alpha"
    assert "Too few pairs for the test to reach alpha" in S.describe_best_rule(res.reset_index())
    # the paired t-test can decide on 5 pairs
    t = S.best_set(
        table({"dwr": b, "ols": b + 1 + base(5, 9) / 10}, r_trains=(2.0,)), "rmse_mean", LOWER, test="ttest"
    )
    assert not t.set_index("method").loc["ols", "in_best_set"]


def test_unequal_run_counts_are_reported():
    b = base()
    df = table({"dwr": b, "ols": b + 0.05})
    df = df.drop(df.index[(df["method"] == "ols") & (df["run"] >= 3)])  # ols: 6 of 10 blocks
    res = S.best_set(df, "rmse_mean", LOWER).set_index("method")
    assert res.loc["dwr", "n"] == 10 and res.loc["ols", "n"] == 6 and res.loc["ols", "n_pairs"] == 6
    assert res.loc["ols", "note"] == "4 unpaired values dropped"
    text = S.describe_best_rule(res.reset_index())
    assert "Unequal run counts: setting=poly: dwr 10, ols 6." in text
    assert (
        "Wilcoxon signed-rank test paired over (r_train, run), Holm-corrected within each setting, alpha 0.05"
        in text
    )


def test_a_method_missing_from_one_setting_still_shows():
    b = base()
    df = pd.concat([table({"dwr": b, "ols": b + 1}), table({"dwr": b}, setting="mlp")])
    res = S.best_set(df, "rmse_mean", LOWER)
    row = res[(res["setting"] == "mlp") & (res["method"] == "ols")].iloc[0]
    assert row["n"] == 0 and row["note"] == "no value" and not row["in_best_set"]


def test_bad_input_is_named():
    df = table({"dwr": base()})
    with pytest.raises(OodfsError, match="results have no column 'setting'"):
        S.best_set(df.drop(columns="setting"), "rmse_mean", LOWER)
    with pytest.raises(OodfsError, match="lower_is_better has no entry for metric 'rmse_mean'; it has: f1"):
        S.best_set(df, "rmse_mean", {"f1": False})
    with pytest.raises(OodfsError, match="more than one row for r_train=1.5, run=0, method='dwr'"):
        S.best_set(pd.concat([df, df.head(1)]), "rmse_mean", LOWER)
    with pytest.raises(OodfsError, match="unknown test 'sign'; valid: wilcoxon, ttest"):
        S.best_set(df, "rmse_mean", LOWER, test="sign")
    with pytest.raises(OodfsError, match="metric column 'rmse_mean' must be numeric"):
        S.best_set(df.assign(rmse_mean="x"), "rmse_mean", LOWER)


# -- pairwise_tests --------------------------------------------------------------------------


def test_pairwise_verdicts_effect_size_and_interval():
    b = base()
    shift = 0.05 + np.random.default_rng(4).normal(0, 0.01, 10)
    res = S.pairwise_tests(table({"dwr": b, "ols": b + shift, "lasso": b + shift}), "rmse_mean", LOWER)
    r = res.set_index(["method_a", "method_b"])
    assert r.loc[("dwr", "ols"), "verdict"] == "dwr better" and r.loc[("dwr", "ols"), "better"] == "dwr"
    assert r.loc[("dwr", "ols"), "mean_diff"] == pytest.approx(-shift.mean())
    cs = S.cell_summary(-shift)
    assert (r.loc[("dwr", "ols"), "diff_low"], r.loc[("dwr", "ols"), "diff_high"]) == (
        pytest.approx(cs.low),
        pytest.approx(cs.high),
    )
    assert r.loc[("dwr", "ols"), "p"] == pytest.approx(st.wilcoxon(-shift).pvalue)
    assert r.loc[("dwr", "ols"), "p_adjusted"] == pytest.approx(S.adjust_pvalues(res["p"])[0])
    assert r.loc[("ols", "lasso"), "verdict"] == "not distinguishable" and r.loc[("ols", "lasso"), "p"] == 1.0
    # higher is better: the larger method wins
    res = S.pairwise_tests(
        table({"dwr": b, "ols": b + shift}).rename(columns={"rmse_mean": "f1"}), "f1", LOWER
    )
    assert res["verdict"].iloc[0] == "ols better"


def test_pairwise_counts_dropped_blocks():
    b = base()
    df = table({"dwr": b, "ols": b + 0.05})
    df = df.drop(df.index[(df["method"] == "dwr") & (df["r_train"] == 2.0)])  # dwr: 5 of 10
    row = S.pairwise_tests(df, "rmse_mean", LOWER).iloc[0]
    assert (row["n_a"], row["n_b"], row["n_pairs"], row["n_dropped"]) == (5, 10, 5, 5)
    assert row["verdict"] == "too few pairs to decide"  # 5 pairs cannot reach 0.05: not "no difference"


# -- friedman --------------------------------------------------------------------------------


def test_friedman_equals_scipy_and_ranks_average_ties():
    a = [0.30, 0.40, 0.35, 0.50]
    b = [0.32, 0.40, 0.36, 0.55]
    c = [0.40, 0.41, 0.30, 0.60]
    res = S.friedman(table({"a": a, "b": b, "c": c}, r_trains=(2.0,), runs=4), "rmse_mean", LOWER)
    ref = st.friedmanchisquare(a, b, c)
    assert res["statistic"].iloc[0] == pytest.approx(ref.statistic) and res["p"].iloc[0] == pytest.approx(
        ref.pvalue
    )
    # ranks per block (1 = lowest): (1,2,3), (1.5,1.5,3), (2,3,1), (1,2,3)
    assert res["avg_rank"].tolist() == pytest.approx([5.5 / 4, 8.5 / 4, 10 / 4])
    assert (res["n_blocks"].iloc[0], res["k"].iloc[0], res["n_dropped"].iloc[0]) == (4, 3, 0)
    # higher is better reverses the ranks
    hi = S.friedman(
        table({"a": a, "b": b, "c": c}, r_trains=(2.0,), runs=4).rename(columns={"rmse_mean": "f1"}),
        "f1",
        LOWER,
    )
    assert hi["avg_rank"].tolist() == pytest.approx([4 - r for r in [5.5 / 4, 8.5 / 4, 10 / 4]])


def test_friedman_drops_incomplete_blocks_and_needs_three_methods():
    df = table({"a": base(), "b": base(seed=1), "c": base(seed=2)})
    df = df.drop(df.index[(df["method"] == "c") & (df["run"] == 0)])
    res = S.friedman(df, "rmse_mean", LOWER)
    assert (res["n_blocks"].iloc[0], res["n_dropped"].iloc[0]) == (8, 2)
    two = S.friedman(table({"a": base(), "b": base(seed=1)}), "rmse_mean", LOWER)
    assert np.isnan(two["p"].iloc[0]) and "needs 3 methods" in two["note"].iloc[0]


# -- trend_test ------------------------------------------------------------------------------


def trend_frame(y, xs=(1.5, 1.7, 2.0, 2.3, 2.5, 2.7, 3.0), runs=5):
    rows = [
        dict(setting="mlp", method="dwr", r_train=x, run=run, rmse_mean=y(x, run))
        for x in xs
        for run in range(runs)
    ]
    return pd.DataFrame(rows)


def test_trend_detects_monotone_increase():
    noise = np.random.default_rng(0).normal(0, 0.01, 200)
    df = trend_frame(lambda x, run: 0.2 * x + noise[int(10 * x) + 30 * run])
    res = S.trend_test(df, "rmse_mean", lower_is_better=LOWER).iloc[0]
    ref = st.kendalltau(df["r_train"], df["rmse_mean"])
    assert res["statistic"] == pytest.approx(ref.statistic) and res["p"] == pytest.approx(ref.pvalue)
    assert res["p"] < 1e-6 and res["direction"] == "increases" and res["verdict"] == "gets worse"
    assert res["slope_low"] < 0.2 < res["slope_high"] and res["slope"] == pytest.approx(0.2, abs=0.02)
    assert (res["n"], res["n_x"]) == (35, 7)
    up = S.trend_test(df.rename(columns={"rmse_mean": "f1"}), "f1", lower_is_better=LOWER).iloc[0]
    assert up["verdict"] == "gets better"


def test_constant_series_is_no_variation_not_a_pass():
    res = S.trend_test(trend_frame(lambda x, run: 0.926), "rmse_mean", lower_is_better=LOWER).iloc[0]
    assert res["direction"] == "no variation" and res["verdict"] == "no variation" and np.isnan(res["p"])
    flat = S.trend_test(trend_frame(lambda x, run: np.sin(7 * run + x)), "rmse_mean").iloc[0]
    assert flat["direction"] == "no significant trend" and flat["verdict"] is None


def test_page_test_sees_a_trend_inside_runs_that_kendall_misses():
    # a run effect (shared data) 100x larger than the trend hides it from a pooled Kendall's tau
    df = trend_frame(lambda x, run: run + 0.01 * x)
    assert S.trend_test(df, "rmse_mean")["direction"].iloc[0] == "no significant trend"
    page = S.trend_test(df, "rmse_mean", test="page").iloc[0]
    assert page["direction"] == "increases" and page["p"] < 1e-3
    down = S.trend_test(trend_frame(lambda x, run: run - 0.01 * x), "rmse_mean", test="page").iloc[0]
    assert down["direction"] == "decreases"


def test_trend_needs_numeric_x():
    df = trend_frame(lambda x, run: x).astype({"r_train": object})
    df.loc[0, "r_train"] = "low"
    with pytest.raises(OodfsError, match="trend_test needs a numeric 'r_train' column; it has 'low'"):
        S.trend_test(df, "rmse_mean")


# -- cd_diagram ------------------------------------------------------------------------------


def test_cd_diagram_writes_png_and_pdf(tmp_path):
    rng = np.random.default_rng(0)
    b = base(14)
    df = pd.concat(
        [
            table(
                {
                    m: b + off + rng.normal(0, 0.01, 14)
                    for m, off in [("dwr", 0), ("srdo", 0.001), ("ols", 0.1), ("rf", 0.3)]
                },
                setting=s,
                runs=7,
            )
            for s in ("poly", "mlp")
        ]
    )
    png, pdf = S.cd_diagram(df, "rmse_mean", LOWER, tmp_path / "cd" / "mlp_rmse.png", within_value="mlp")
    assert (png.name, pdf.name) == ("mlp_rmse.png", "mlp_rmse.pdf")
    assert png.read_bytes()[:4] == b"\x89PNG" and pdf.read_bytes()[:4] == b"%PDF"
    # dwr and srdo are not distinguishable, every other pair is
    p = S.posthoc_matrix(
        df[df["setting"] == "mlp"].pivot(index=["r_train", "run"], columns="method", values="rmse_mean"), True
    )
    assert p.loc["dwr", "srdo"] > 0.05 and p.loc["dwr", "ols"] < 0.05 and p.loc["ols", "rf"] < 0.05
    with pytest.raises(OodfsError, match="within_value 'lin' is not a group of setting; valid: poly, mlp"):
        S.cd_diagram(df, "rmse_mean", LOWER, tmp_path / "x", within_value="lin")
    with pytest.raises(OodfsError, match="needs 2 methods and 2 complete blocks; it has 1 and 14"):
        S.cd_diagram(df[df["method"] == "dwr"], "rmse_mean", LOWER, tmp_path / "x", within_value="mlp")


def test_the_signed_rank_test_with_ties_or_zeros_gives_scipys_p():
    """Ties and zero differences (two methods choosing the same subset) send scipy.stats.wilcoxon
    to a permutation test over every sign pattern; oodfs counts the same patterns at once. Its p
    and statistic must be scipy's, exactly, including the boundaries (n = 13 is still exact, n = 14
    is scipy's normal approximation)."""
    from scipy import stats as sps

    from oodfs.report.stats import _paired

    rng = np.random.default_rng(7)
    cases = [np.array([1.0, -1.0, 0.0]), np.array([0.5] * 9), np.array([0.0, 0.0, 2.0, -2.0, 2.0])]
    cases += [rng.integers(-3, 4, size=n).astype(float) for n in (2, 5, 8, 10, 11, 13, 14, 20)]
    cases += [np.r_[rng.normal(size=6).round(1), 0.0] for _ in range(3)]
    for d in cases:
        if np.all(d == 0):
            continue
        ref = sps.wilcoxon(d, zero_method="wilcox", alternative="two-sided")
        statistic, p, _ = _paired(d, "wilcoxon")
        assert (statistic, p) == (float(ref.statistic), float(ref.pvalue)), d
