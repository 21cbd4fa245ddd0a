"""DWR on a wide binary table (issue 53, item 6) and what a run says about its fits' warnings
and failures: the collapse of the learned weights is one note naming the effective sample size and
what to try, every exact-zero score is explained, a task that cannot fit says why in the
leaderboard, and a solver's warnings are one counted note (docs/PROTOCOL.md sections 6 and 8)."""

import contextlib
import io
import json

import numpy as np
import pandas as pd
import pytest

from tests.conftest import TINY_SUITE_TOML, run_cli


def wide_binary(path, seed=5, n=600, continuous=5, binary=40):
    """A wide binary table: a few correlated continuous columns and many rare 0/1 columns (3-10 %
    ones), a rare positive class. On site `a` (300 rows) DWR's weights collapse to an effective
    sample size near 12 and leave some 0/1 columns constant among the rows they keep."""
    rng = np.random.default_rng(seed)
    xc = rng.normal(size=(n, 3)) @ rng.normal(size=(3, continuous)) + 0.3 * rng.normal(size=(n, continuous))
    xb = (rng.random((n, binary)) < np.linspace(0.03, 0.1, binary)).astype(int)
    logit = 1.2 * xc[:, 0] + 1.5 * xb[:, -1] - 2.5
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    df = pd.DataFrame(
        np.column_stack([xc.round(4), xb]),
        columns=[f"c{i}" for i in range(continuous)] + [f"b{i}" for i in range(binary)],
    )
    df["site"] = np.where(np.arange(n) < n // 2, "a", "b")
    df["y"] = y
    df.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def dwr_on_wide(tmp_path_factory):
    """``oodfs select --json`` of DWR on the wide table's site a, run once: (the JSON, stderr)."""
    from oodfs.cli import main

    path = wide_binary(tmp_path_factory.mktemp("wide") / "wide.csv")
    args = ["select", str(path), "--target", "y", "--method", "dwr", "--env-column", "site"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main([*args, "--train-envs", "a", "--top-k", "5", "--json"]) == 0, err.getvalue()
    return json.loads(out.getvalue()), err.getvalue()


def test_a_collapse_is_one_note_with_the_effective_sample_size_and_what_to_try(dwr_on_wide):
    doc, err = dwr_on_wide
    ess = doc["diagnostics"]["ess"]
    assert ess < 0.05 * doc["rows"]  # the table reproduces the collapse
    collapse = [n for n in doc["notes"] if "weights collapsed" in n]
    assert len(collapse) == 1
    assert f"effective sample size {ess:.1f} of {doc['rows']} rows" in collapse[0]
    assert "try srdo" in collapse[0] and "--drop" in collapse[0] and "--train-envs" in collapse[0]
    # said once: neither the weighter's own warning nor the suspect rule's sentence on the same size
    assert "WeightCollapseWarning" not in err
    assert not any("ess_fraction" in n for n in doc["notes"])
    assert err.count("weights collapsed") == 1


def test_every_exact_zero_score_is_explained_in_a_note(dwr_on_wide):
    doc, _ = dwr_on_wide
    zeros = [r["feature"] for r in doc["ranking"] if r["score"] == 0]
    left_out = set(doc["left_out"])
    fitted_zeros = [f for f in zeros if f not in left_out]
    assert fitted_zeros, "the table should leave a fitted 0/1 column constant under the weights"
    weighted = [n for n in doc["notes"] if "constant among the rows its learned weights keep" in n]
    assert len(weighted) == 1 and f"dwr scored {len(fitted_zeros)} feature" in weighted[0]
    for feature in fitted_zeros:
        assert repr(feature) in weighted[0]
    for feature in left_out:
        assert any(n.startswith("left out of the fit") and repr(feature) in n for n in doc["notes"])
    assert not any(r["selected"] for r in doc["ranking"] if r["score"] == 0)


def test_a_penalised_zero_is_explained_by_the_method(tmp_path, capsys):
    path = wide_binary(tmp_path / "wide.csv")
    status, out, err = run_cli(
        capsys, "select", str(path), "--target", "y", "--method", "lasso", "--param", "alpha=0.02", "--json"
    )
    assert status == 0, err
    doc = json.loads(out)
    zeros = [r["feature"] for r in doc["ranking"] if r["score"] == 0 and r["feature"] not in doc["left_out"]]
    assert zeros
    note = [n for n in doc["notes"] if "its L1 penalty set their coefficients to 0" in n]
    assert len(note) == 1 and note[0].startswith(f"lasso scored {len(zeros)} features (")


PLUGIN = '''
import warnings

import numpy as np

import oodfs
from oodfs.contract.wls import weighted_logistic_regression


class Noisy(oodfs.Selector):
    """Warns as a solver on near-singular data does: twice per fit."""

    name = "noisy"

    def _fit_scores(self, X, y, sample_weight):
        for i in range(2):
            warnings.warn(f"ill-conditioned matrix at iteration {i}", RuntimeWarning)
        return np.abs(X.T @ (y - y.mean()))


class OneClass(oodfs.Selector):
    """The logistic step of a weighted selector on weights that keep the rows of one class."""

    name = "oneclass"

    def _fit_scores(self, X, y, sample_weight):
        upper = (y > np.median(y)).astype(float)
        return np.abs(weighted_logistic_regression(X, upper, upper))


@oodfs.hookimpl
def oodfs_selectors():
    return [Noisy, OneClass]
'''


def test_fit_warnings_are_one_counted_note_and_a_failed_fit_says_why(tmp_path, capfd):
    """The tiny suite (2 tasks a method) with the two plugin methods, in this process; capfd also
    holds what a forked fit would have printed itself."""
    plugin = tmp_path / "fits.py"
    plugin.write_text(PLUGIN)
    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY_SUITE_TOML.format(runs=2))
    out = tmp_path / "out"
    args = ["--plugin", str(plugin), "--methods", "noisy,oneclass", "--out", str(out), "--no-figures"]
    status, stdout, err = run_cli(capfd, "bench", "--suite", str(suite), *args)
    assert status == 0, err
    # four warnings (two per fit) are one counted line, not four
    assert [line for line in err.splitlines() if "RuntimeWarning" in line] == [
        "oodfs: noisy: RuntimeWarning 4 times in the fits of 2 of its 2 tasks (the fits went on; their "
        "results are stored as they came), first: ill-conditioned matrix at iteration 0"
    ]
    # a fit that cannot run is one line of the leaderboard with its error and why
    lines = [line for line in stdout.splitlines() if line.startswith("- `oneclass`")]
    assert len(lines) == 1
    line = lines[0].replace("\\", "")  # markdown's escapes of [ and ]
    error = "logistic regression needs both classes among the weighted rows, got [1.0]"
    assert f"2 task(s) failed — {error}: " in line
    assert "the learned sample weights left rows of one class only" in line and "try srdo" in line
    assert lines[0] in (out / "leaderboard.md").read_text()
