"""The memory estimate is an upper bound: KerHRM's from the arrays its fit holds, every other
method's curve above its measured sizes and at least proportional beyond them; a fit that runs
out of memory anyway ends in one line (docs/PROTOCOL.md, "Measured sizes and the memory
estimate")."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oodfs.contract.registry import registry
from oodfs.results import scale
from oodfs.run import rank
from oodfs.run.suite import load_suite
from oodfs.validation import OodfsError

from .conftest import TINY_SUITE_TOML, assert_one_line
from .conftest import run_cli as run

ROOT = Path(__file__).resolve().parents[1]
GIB = 1024.0  # MB


def test_kerhrm_on_two_and_a_half_million_rows_of_two_features_is_refused_on_24_gib(monkeypatch):
    """The issue's case: the fit asked for 38.2 GiB of tangent features (2.5e6 x 4097 float32)."""
    monkeypatch.setattr(scale, "available_mb", lambda: 24 * GIB)
    with pytest.raises(
        OodfsError, match=r"estimated to need 4\d\.\d GiB.*n = 2,500,000 rows, d = 2 features"
    ):
        rank.check_fit_memory("kerhrm", 2_500_000, 2)
    assert scale.fit_memory_mb("kerhrm", 2_500_000, 2) > 2_500_000 * 4097 * 4 / 2**20  # the 38.2 GiB


def test_kerhrm_estimate_is_at_least_its_tangent_features_and_hidden_rows():
    """At every size, at least the float32 tangent features (n x (1024 (d + 2) + 1)) and the two
    float64 n x 1024 arrays of the network's output, the two largest things its fit holds."""
    for n in (100, 2000, 20000, 1_000_000, 10_000_000):
        for d in (1, 2, 10, 50, 500):
            tangent = n * (1024 * (d + 2) + 1) * 4 / 2**20
            hidden = n * 1024 * 16 / 2**20
            assert scale.fit_memory_mb("kerhrm", n, d) >= max(tangent, hidden), (n, d)


def _measured():
    """The fresh-process peaks of benchmarks/memory_estimate and of the scale grid (>= 5 MB)."""
    script = ROOT / "benchmarks" / "scale" / "bench_scale.py"
    spec = importlib.util.spec_from_file_location("bench_scale", script)
    bs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bs)
    rows = [
        r
        for r in bs.last_rows(str(ROOT / "benchmarks" / "scale" / "scale_results.jsonl"))
        if r["status"] == "ok"
    ]
    peaks = ROOT / "benchmarks" / "memory_estimate" / "peaks.jsonl"
    rows += [json.loads(line) for line in peaks.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["peak_mb"] >= 5]


def test_no_measured_peak_is_above_its_estimate():
    rows = _measured()
    suite = load_suite("synthetic")
    assert set(suite.methods) <= {r["method"] for r in rows}  # kerhrm among them
    low = [
        (r["method"], r["n"], r["d"], r["peak_mb"])
        for r in rows
        if not scale.fit_memory_mb(r["method"], r["n"], r["d"]) >= r["peak_mb"]
    ]
    assert not low


def test_beyond_the_measured_sizes_the_estimate_grows_at_least_in_proportion():
    """xgb's curve grows as n^0.38 within its sizes; beyond them the estimate does not fall
    behind a fixed part plus a part per row, which grows in proportion."""
    n_hi = scale.facts()["methods"]["xgb"]["memory_range"]["n"][1]
    at_hi = scale.fit_memory_mb("xgb", n_hi, 50)
    assert scale.fit_memory_mb("xgb", 10 * n_hi, 50) >= 10 * at_hi * (1 - 1e-12)
    # below the smallest d measured, the estimate stays at that d's (memory does not shrink with d)
    d_lo = scale.facts()["methods"]["correlation"]["memory_range"]["d"][0]
    assert scale.fit_memory_mb("correlation", 200000, 2) == scale.fit_memory_mb("correlation", 200000, d_lo)


def test_a_method_measured_at_one_n_has_an_estimate():
    """svi ran at n = 2 000 only (its CPU budget): still an estimate, in proportion to n beyond."""
    two, twenty = scale.fit_memory_mb("svi", 2000, 10), scale.fit_memory_mb("svi", 20000, 10)
    assert two is not None and twenty == pytest.approx(10 * two)


def _table(tmp_path, n=200, d=6) -> Path:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)]).assign(y=X[:, 0] + rng.normal(size=n))
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    return path


def test_select_checks_kerhrm_by_its_bound(tmp_path, capsys, monkeypatch):
    """On a 200 x 6 table kerhrm's fit needs more than 64 MB (its 1024 x 1024 x 9 block alone), OLS's
    little: with 60 MiB available the one is refused before fitting, the other fits."""
    monkeypatch.setattr(scale, "available_mb", lambda: 60.0)
    path = str(_table(tmp_path))
    result = run(capsys, "select", path, "--target", "y", "--method", "kerhrm", "--no-isolation")
    assert_one_line(
        result, "estimated to need", "n = 200 rows, d = 6 features: kerhrm's fit", "--ignore-memory-estimate"
    )
    code, out, err = run(capsys, "select", path, "--target", "y", "--method", "ols", "--no-isolation")
    assert code == 0, err


def test_bench_with_kerhrm_at_a_million_training_rows_is_refused_on_24_gib(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(scale, "available_mb", lambda: 24 * GIB)
    suite = tmp_path / "big.toml"
    suite.write_text(
        TINY_SUITE_TOML.format(runs=1)
        .replace("n_train = 300", "n_train = 1000000")
        .replace('methods = ["ols", "correlation"]', 'methods = ["ols", "kerhrm"]')
    )
    out = tmp_path / "out"
    result = run(capsys, "bench", "--quiet", "--jobs", "1", "--suite", str(suite), "--out", str(out))
    assert_one_line(
        result, "estimated to need", "kerhrm's fit needs most", "n = 1,000,000", "--ignore-memory-estimate"
    )
    assert not out.exists()


@pytest.mark.parametrize("isolation", [[], ["--no-isolation"]])
def test_a_fit_that_runs_out_of_memory_is_one_line(isolation, tmp_path, capsys, monkeypatch):
    """numpy's MemoryError ("Unable to allocate ...") during the fit, with or without the estimate's
    check: one line naming the method, the size and what to try, exit status 2."""
    cls = registry().get("selector", "ols")

    def out_of_memory(self, *args, **kwargs):
        raise MemoryError(
            "Unable to allocate 38.2 GiB for an array with shape (2500000, 4097) and data type float32"
        )

    monkeypatch.setattr(cls, "fit", out_of_memory)
    args = ["select", str(_table(tmp_path)), "--target", "y", "--method", "ols", "--ignore-memory-estimate"]
    result = run(capsys, *args, *isolation)
    assert_one_line(
        result,
        "selector 'ols' ran out of memory",
        "n = 200 rows x d = 6 features",
        "Unable to allocate 38.2 GiB",
        "use fewer rows or features",
    )
