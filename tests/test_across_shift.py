"""Selection against the kind of shift across suites (oodfs.report.across_shift): the rank
correlation and its interval, the words that follow the test, and the paragraph on the page."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from oodfs.report import across_shift
from tests.test_site import noisy, results

FAMS = ["independence weighting", "other selectors"]


def gains(values: dict) -> pd.DataFrame:
    return pd.DataFrame(values)


def test_a_perfect_monotone_relation_gives_rho_1_and_no_relation_an_interval_over_0():
    share = np.arange(12) / 11.0
    r = across_shift.spearman(share, np.exp(share))  # monotone, not linear
    assert r["rho"] == pytest.approx(1.0) and r["n"] == 12
    assert r["p"] < 1e-6 and r["high"] == pytest.approx(1.0) and r["low"] > 0.99
    # a gain that does not follow the share (rho exactly 0 on these 8 ranks)
    x, y = np.arange(8), np.array([1, 2, 4, 7, 6, 5, 3, 0])
    assert sps.spearmanr(x, y).statistic == pytest.approx(0.0, abs=1e-12)
    r = across_shift.spearman(x, y)
    assert r["low"] < 0 < r["high"] and r["p"] > 0.5
    # the Fisher-z interval: tanh(atanh(rho) -+ 1.96 sqrt(1.06 / (n - 3)))
    rho = sps.spearmanr(x, y).statistic
    half = sps.norm.ppf(0.975) * np.sqrt(1.06 / 5)
    assert r["low"] == pytest.approx(np.tanh(np.arctanh(rho) - half))
    # too few suites, or a constant side: not tested (NaN), never a number
    assert np.isnan(across_shift.spearman([0, 1, 2], [1, 2, 3])["rho"])
    assert np.isnan(across_shift.spearman([0, 1, 2, 3, 4], [1, 1, 1, 1, 1])["p"])


def answer_result(related: bool):
    suites = [f"s{i}" for i in range(12)]
    shares = dict(zip(suites, np.linspace(-0.5, 2.0, 12)))
    shares["s11"] = np.nan  # no drop: left out and named
    rng = np.random.default_rng(0)
    x = np.array([shares[s] for s in suites])
    first = -0.05 * np.nan_to_num(x) if related else rng.permutation(np.linspace(-0.02, 0.02, 12))
    g = gains({FAMS[0]: dict(zip(suites, first)), FAMS[1]: dict(zip(suites, rng.normal(-0.01, 0.01, 12)))})
    known = {"synthetic/poly": 0.0}
    g.loc["synthetic/poly"] = [0.03, -0.01]
    return across_shift.selection_vs_shift({"ridge": g}, shares, known)


def test_the_words_follow_the_test():
    res = answer_result(related=True)
    t = res["tests"].set_index("family")
    assert t.loc[FAMS[0], "n"] == 11  # the suite of no drop and the known-share suite are not tested
    assert t.loc[FAMS[0], "rho"] == pytest.approx(-1.0)
    assert t.loc[FAMS[0], "verdict"] == "gains more where more of the drop is X"
    text = across_shift.paragraph(res)
    assert (
        "independence weighting under ridge gains more where more of the drop is X (Spearman ρ = -1.00 "
        "[-1.00, -1.00], Holm p < 0.0001, 11 suites); the other 1 of the 2 relations are not distinguishable"
    ) in text
    assert "left out, as the loss does not rise there (no share): 1 suite (s11)" in text
    assert "Holm over the 2 tests" in text
    assert (
        "synthetic/poly under ridge: 1 of 2 families beat all_features, the best independence weighting"
        in text
    )
    assert "Not distinguishable" not in text

    res = answer_result(related=False)
    text = across_shift.paragraph(res)
    assert set(res["tests"]["verdict"]) == {"not distinguishable"}
    assert text.startswith(
        "Does feature selection help more where the shift is in X? Not distinguishable: in none of the 2"
    )
    # when it helped, counted by the kind of drop, whichever way the test comes out
    t = res["tests"]
    helped = int(t["helped"].sum())
    assert f"A family's mean loss was below that of all_features in {helped} of 24" in text
    assert (
        "where the drop is mostly X (4 suites)" in text and "where the loss does not rise (1 suite)" in text
    )
    strongest = t.loc[t["p"].idxmin()]
    assert f"ρ = {strongest['rho']:+.2f} [{strongest['low']:+.2f}, {strongest['high']:+.2f}]" in text


def test_family_gains_are_the_negative_of_the_analysis_effects():
    from oodfs.report.analysis import Analysis, across_suites
    from oodfs.report.report import Report

    analyses = {}
    for suite, shift in (("a", 0.0), ("b", 0.02)):
        df = results(
            {
                "all_features": noisy(0.30, 0.01, 1),
                "dwr": noisy(0.29 + shift, 0.01, 2),
                "ols": noisy(0.32, 0.01, 3),
            },
            suite=suite,
        )
        df.loc[df["method"] == "all_features", "method_kind"] = "yardstick"
        analyses[suite] = Analysis(Report(df, "val"))
    g = across_shift.family_gains(analyses, "rmse_mean")
    fam = across_suites(analyses)["family_effects"]
    pd.testing.assert_frame_equal(g, -fam)
    assert g.loc["a", "independence weighting"] > 0  # dwr's RMSE is below all_features' in suite a


def test_a_synthetic_suites_card_states_its_known_shift(capsys):
    """A simulated suite is not diagnosed; its card says the shift it has by construction, and a
    process whose Y | X moves (the IRM SEM) is not said to be covariate shift."""
    import json

    from oodfs.cli import main

    assert main(["suites", "--json", "synthetic", "synthetic-binary", "irm-sem"]) == 0
    cards = {s["name"]: s["card"] for s in json.loads(capsys.readouterr().out)}
    for name in ("synthetic", "synthetic-binary"):
        assert "share of the drop due to Y | X = 0" in cards[name]["shift_diagnosis"]["known"]
    assert "shift_diagnosis" not in cards["irm-sem"]
    assert main(["suites", "synthetic"]) == 0
    assert "  shift: known by construction: a change of X alone" in capsys.readouterr().out
