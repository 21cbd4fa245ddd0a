"""The theory runner (oodfs.theory): a tiny grid end to end, the target coefficients, the slope
fits, and bad options."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import pytest

from oodfs import OodfsError
from oodfs import theory as T
from oodfs.commands import theory as theory_cli

MILD = T.Condition("mild", {"setting": "poly", "exponent": 2.0}, 1.5)
PAPER_BETA = [1 / 3, -2 / 3, 1, -1 / 3, 2 / 3]


def tiny_config(**changes) -> T.TheoryConfig:
    methods = (
        T.Method("ols", None, "selected"),
        T.Method("oracle_ipw", "oracle_ipw", "unselected"),
        T.Method("oracle_cond", "oracle_cond", "selected_s"),
        T.Method("dwr", "dwr", "product", max_n=200, replicates=2),
        T.Method("srdo", "srdo", "product", {"gamma": 10, "epochs": 3}, max_n=100, replicates=1),
        T.Method("srdo_unclipped", "srdo", "product", {"gamma": 1e12, "epochs": 3}, max_n=100, replicates=1),
    )
    base = dict(conditions=(MILD,), methods=methods, n_grid=(100, 200, 400), replicates=3, n_target=20_000)
    return T.TheoryConfig(**{**base, **changes})


@pytest.fixture(autouse=True)
def one_torch_thread():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_tiny_run_writes_its_outputs(tmp_path):
    paths = T.run_theory(tiny_config(), tmp_path, progress=False)
    for key in (
        "results",
        "slopes",
        "summary",
        "config",
        "theory_beta_v",
        "theory_err_s",
        "theory_ess",
        "theory_independence",
    ):
        assert paths[key].exists() and paths[key].stat().st_size > 0, key
    res = pd.read_csv(paths["results"])
    counts = res.groupby("method").size().to_dict()
    assert counts == {"ols": 9, "oracle_ipw": 9, "oracle_cond": 9, "dwr": 4, "srdo": 1, "srdo_unclipped": 1}
    assert res[["beta_v", "err_s", "err", "ess", "max_corr_v", "max_corr_vr"]].notna().all().all()
    # OLS weights are uniform; the oracle weights have a smaller effective sample size
    assert (res.loc[res.method == "ols", "ess_fraction"] == 1).all()
    assert (res.loc[res.method == "oracle_ipw", "ess_fraction"] < 1).all()
    # the same sample for every method at one (n, replicate): paired fits
    a = res[(res.n == 200) & (res.replicate == 0)]
    assert set(a.method) == {"ols", "oracle_ipw", "oracle_cond", "dwr"}
    slopes = pd.read_csv(paths["slopes"])
    assert set(slopes.metric) == {"beta_v", "err_s"}
    assert slopes.loc[slopes.method == "ols", "slope"].notna().all()  # 3 sizes: a slope with an interval
    assert "## mild" in paths["summary"].read_text()
    # a finished run can be read back and drawn again
    results, targets, config = T.load_run(tmp_path)
    assert config == tiny_config() and len(results) == len(res)
    assert [p.name for p in T.make_figures(results, targets, config, tmp_path)] == [
        "theory_beta_v.png",
        "theory_err_s.png",
        "theory_ess.png",
        "theory_independence.png",
    ]


def test_deterministic():
    """A task's numbers depend only on its coordinates (not on the worker or the order)."""
    cfg = tiny_config()
    targets = T.target_coefficients(cfg, MILD)
    a = T.run_task(cfg, MILD, 200, 1, targets)
    T.run_task(cfg, MILD, 100, 0, targets)  # another task in between changes nothing
    b = T.run_task(cfg, MILD, 200, 1, targets)
    drop = lambda rows: [{k: v for k, v in r.items() if k != "fit_seconds"} for r in rows]  # noqa: E731
    assert drop(a) == drop(b) and {r["method"] for r in a} == {"ols", "oracle_ipw", "oracle_cond", "dwr"}


def test_target_coefficients():
    """Known answers: with independent symmetric marginals ('product') the interaction S1 S2 S3 / 4 has
    no linear part, so beta*(S) is the paper's beta; every law but the training law gives V zero."""
    tg = T.target_coefficients(tiny_config(n_target=100_000), T.Condition("p", {"setting": "poly"}, 2.5))
    assert tg["names"][:5] == ["S1", "S2", "S3", "S4", "S5"] and tg["stable"] == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(tg["product"][:5], PAPER_BETA, atol=0.01)
    for law in ("unselected", "selected_s", "product"):
        np.testing.assert_allclose(tg[law][5:], 0.0, atol=0.01)
    sel = np.asarray(tg["selected"])
    assert np.all(sel[8:] > 0.15) and np.all(np.abs(sel[5:8]) < 0.01)  # OLS's bias on V4, V5


def test_slopes_recover_a_known_rate():
    rng = np.random.default_rng(0)
    n = np.repeat([500, 1000, 2000, 5000, 10_000], 20)
    res = pd.DataFrame(
        {
            "condition": "c",
            "method": "m",
            "n": n,
            "ess": n / 2.0,
            "beta_v": 3 * n**-0.5 * rng.lognormal(0, 0.2, n.size),
            "err_s": 0.2 * rng.lognormal(0, 0.2, n.size),
        }
    )
    t = T.slopes(res).set_index("metric")
    assert t.loc["beta_v", "slope_lo"] < -0.5 < t.loc["beta_v", "slope_hi"]
    assert t.loc["beta_v", "theil_lo"] < -0.5 < t.loc["beta_v", "theil_hi"]
    assert t.loc["beta_v", "ess_slope"] == pytest.approx(t.loc["beta_v", "slope"])
    assert t.loc["err_s", "slope_lo"] < 0 < t.loc["err_s", "slope_hi"]


def parse(*argv):
    p = argparse.ArgumentParser()
    theory_cli.add_parser(p.add_subparsers(dest="command"))
    return p.parse_args(["theory", *argv])


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--conditions", "nope"], "unknown condition 'nope'; valid: exp2-r1.5"),
        (["--methods", "ols,lasso"], "unknown method 'lasso'; valid: ols, oracle_ipw"),
        (["--replicates", "20000"], "--replicates is 20000, more than the limit of 10000"),
        (["--jobs", "5000", "--force-jobs"], "--jobs is 5000, more than the limit of 1024"),
    ],
)
def test_bad_options(argv, match):
    with pytest.raises(OodfsError, match=match):
        theory_cli.config_from_args(parse(*argv))


def test_options_select_conditions_and_methods():
    cfg = theory_cli.config_from_args(
        parse("--quick", "--conditions", "exp10-r2.5", "--methods", "ols,dwr", "--seed", "3")
    )
    assert [c.name for c in cfg.conditions] == ["exp10-r2.5"] and [m.name for m in cfg.methods] == [
        "ols",
        "dwr",
    ]
    assert cfg.seed == 3 and cfg.n_grid == (500, 2000, 10_000)


@pytest.mark.parametrize(
    "changes, match",
    [
        ({"n_grid": (100, 10)}, "every n of n_grid must be >= 20"),
        ({"n_grid": ()}, "n_grid is empty"),
        ({"conditions": (T.Condition("bad", {"setting": "poly"}, 0.5),)}, r"\|r\| > 1"),
        ({"conditions": (T.Condition("bad", {"spurious": ["V7"]}, 2.0),)}, "spurious names 'V7'"),
        ({"methods": (T.Method("x", "nope", "product"),)}, "unknown weighter 'nope'"),
        ({"methods": (T.Method("x", None, "uniform"),)}, "unknown target law 'uniform'"),
    ],
)
def test_bad_config(tmp_path, changes, match):
    with pytest.raises(OodfsError, match=match):
        T.run_theory(tiny_config(**changes), tmp_path, progress=False)


@pytest.mark.parametrize("out", ["/dev/null", "a-file"])
def test_an_out_that_is_not_a_folder_is_one_line(out, tmp_path, capsys, monkeypatch):
    from oodfs.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("")
    assert main(["theory", "--quick", "--out", out, "--conditions", "exp2-r1.5", "--methods", "ols"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a folder" in err[0], err
