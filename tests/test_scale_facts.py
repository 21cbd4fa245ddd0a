"""Which methods are usable at a user's size: each selector's largest measured sizes and their cost
in ``oodfs plugins`` and on the results page, from facts shipped inside the package and derived from
the scale grid's measurements; and the one-line refusal of a run whose estimated peak memory exceeds
the machine's (docs/PROTOCOL.md, "Measured sizes and the memory estimate")."""

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oodfs.contract.registry import registry
from oodfs.report.site import build_site
from oodfs.results import scale
from oodfs.run import rank

from .conftest import TINY_SUITE_TOML, assert_one_line
from .conftest import run_cli as run
from .test_site import _section, folder, noisy, results

ROOT = Path(__file__).resolve().parents[1]


def bench_scale():
    path = ROOT / "benchmarks" / "scale" / "bench_scale.py"
    spec = importlib.util.spec_from_file_location("bench_scale", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plugins_json_carries_the_measured_sizes_of_every_selector(capsys):
    code, out, err = run(capsys, "plugins", "--json")
    assert code == 0, err
    selectors = {e["name"]: e for e in json.loads(out) if e["kind"] == "selector"}
    assert set(selectors) == set(registry().entries("selector"))
    measured = {name for name, e in selectors.items() if e["scale"]["measured"]}
    assert {"dwr", "srdo", "ols", "lasso", "stg"} <= measured  # measured on the scale grid
    for name in measured:
        largest = selectors[name]["scale"]["largest"]
        assert largest, name
        for point in largest:
            assert point["n"] >= 2000 and point["d"] >= 10 and point["cpu_s"] >= 0 and point["peak_mb"] >= 0
            assert {"cpu", "cpus", "memory_gib", "system"} <= set(point["machine"])
    for name in set(selectors) - measured:
        assert selectors[name]["scale"]["note"].startswith("not measured"), name
    assert "exact search" in selectors["icp"]["scale"]["note"]  # why the grid does not run it
    assert "scale" not in next(e for e in json.loads(out) if e["kind"] == "environment")


def test_plugins_table_says_the_largest_measured_size_or_not_measured(capsys):
    code, out, _ = run(capsys, "plugins")
    assert code == 0
    lines = {tuple(line.split()[:2]): line for line in out.splitlines()}
    dwr = scale.method_scale("dwr")["largest"][-1]
    assert f"n {dwr['n']:,} x d {dwr['d']}" in lines[("selector", "dwr")]
    assert "[largest measured: not measured]" in lines[("selector", "anchor")]


def test_the_shipped_facts_are_those_of_the_measurements():
    """scale_facts.json is what ``bench_scale.py ship`` derives from benchmarks/scale/scale_results.jsonl
    (no figure typed by hand, none left behind by a newer measurement)."""
    bs = bench_scale()
    rows = bs.last_rows(str(ROOT / "benchmarks" / "scale" / "scale_results.jsonl"))
    shipped = scale.facts()["methods"]
    assert set(shipped) == {r["method"] for r in rows if r["status"] == "ok"}
    for method, entry in shipped.items():
        ok = [r for r in rows if r["method"] == method and r["status"] == "ok"]
        assert [(p["n"], p["d"], p["cpu_s"]) for p in entry["largest"]] == [
            (r["n"], r["d"], round(r["cpu"], 3)) for r in bs.largest(ok)
        ]
        assert entry["memory_curve"] == bs.memory_curve(ok)
        assert entry["sizes_measured"] == len(ok)
    assert scale.facts()["not_run"] == bs.NOT_RUN


def test_largest_keeps_the_sizes_no_other_exceeds_in_both_n_and_d():
    bs = bench_scale()
    pts = [dict(n=n, d=d) for n, d in ((2000, 10), (2000, 200), (20000, 10), (20000, 50), (2000, 50))]
    assert [(p["n"], p["d"]) for p in bs.largest(pts)] == [(2000, 200), (20000, 50)]


def test_the_memory_estimate_grows_with_the_size_and_names_the_method_needing_most():
    small = scale.estimate_peak_mb(["ols", "dwr"], 2000, 10, 10000, 1)
    big = scale.estimate_peak_mb(["ols", "dwr"], 200000, 500, 300000, 2)
    assert big["fit_mb"] > 100 * small["fit_mb"] and big["total_mb"] > 100 * small["total_mb"]
    assert big["method"] == max(["ols", "dwr"], key=lambda m: scale.fit_memory_mb(m, 200000, 500))
    assert big["data_mb"] == pytest.approx(300000 * 501 * 8 / 2**20)
    # two workers are new processes, each with its own memory; one job runs in the starting process
    assert big["worker_mb"] > 0 and small["worker_mb"] == 0
    assert big["total_mb"] == pytest.approx(2 * (big["worker_mb"] + big["data_mb"] + big["fit_mb"]))
    assert scale.estimate_peak_mb(["icp"], 2000, 10, 1000, 1)["unknown"] == ["icp"]


def tiny_suite(tmp_path) -> str:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SUITE_TOML.format(runs=1))
    return str(path)


def test_a_run_larger_than_the_memory_available_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(scale, "available_mb", lambda: 0.01)  # a machine with 10 KiB free
    out = tmp_path / "out"
    args = ["bench", "--quiet", "--jobs", "1", "--suite", tiny_suite(tmp_path), "--out", str(out)]
    result = run(capsys, *args)
    assert_one_line(result, "estimated to need", "than the 0.01 MiB", "available", "--ignore-memory-estimate")
    assert re.search(r"(ols|correlation)'s fit needs most", result[2]), result[2]
    assert not out.exists()  # refused before anything ran


def test_the_override_runs_it_anyway(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(scale, "available_mb", lambda: 0.01)
    out = tmp_path / "out"
    code, board, err = run(
        capsys,
        "bench",
        "--quiet",
        "--jobs",
        "1",
        "--suite",
        tiny_suite(tmp_path),
        "--out",
        str(out),
        "--ignore-memory-estimate",
        "--no-figures",
    )
    assert code == 0, err
    assert "ols" in board and (out / "results.sqlite").exists()


def test_the_results_page_says_each_methods_largest_measured_size(tmp_path):
    df = results({"dwr": noisy(0.3, 0.01, 0), "anchor": noisy(0.4, 0.01, 1)}, runs=range(2))
    html = build_site([folder(tmp_path / "run", df)], tmp_path / "site", formats=["svg"]).read_text()
    section = _section(html, "scale")
    rows = dict(re.findall(r"<tr><td>(\w+)</td>(.*?)</tr>", section, flags=re.S))
    dwr = scale.method_scale("dwr")["largest"][-1]
    assert f"{dwr['n']:,} × {dwr['d']}" in rows["dwr"]
    assert scale.cpu_text(dwr["cpu_s"]) in rows["dwr"]
    assert "not measured" in rows["anchor"]
    assert "AMD" in section or "CPUs" in section  # the machine, named once or per row
    assert 'href="#scale"' in html


def _table(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6))
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(6)]).assign(y=X[:, 0] + rng.normal(size=200))
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    return path


def test_select_refuses_a_fit_larger_than_the_memory_available_before_fitting(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(scale, "available_mb", lambda: 0.01)  # a machine with 10 KiB free

    def no_fit(*args, **kwargs):
        raise AssertionError("the selector was fitted")

    monkeypatch.setattr(rank, "_fit_scores", no_fit)
    args = ["select", _table(tmp_path), "--target", "y", "--method", "dwr", "--no-isolation"]
    result = run(capsys, *map(str, args))
    assert_one_line(result, "estimated to need", "than the 0.01 MiB", "--ignore-memory-estimate")
    assert "n = 200 rows, d = 6 features: dwr's fit" in result[2]


def test_select_with_the_override_fits_anyway(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(scale, "available_mb", lambda: 0.01)
    args = ["select", _table(tmp_path), "--target", "y", "--method", "ols", "--ignore-memory-estimate"]
    code, out, err = run(capsys, *map(str, args))
    assert code == 0, err
    assert out.split("\n")[2].split()[1] == "x0"  # ranked first: the one feature that predicts y


# -- a binary target's measured sizes beside the numeric target's (the synthetic binary generator) --
def _point(n, d, cpu_s, peak_mb):
    return dict(n=n, d=d, cpu_s=cpu_s, wall_s=cpu_s, peak_mb=peak_mb, load=1.0, machine={})


BOTH = {
    "methods": {
        "dwr": {
            "largest": [_point(200000, 50, 24.0, 267.0)],
            "stopped": [dict(n=200000, d=200, why="estimated 168 CPU s > 90")],
            "memory_curve": None,
            "binary": {
                "largest": [_point(20000, 500, 15.0, 250.0)],
                "stopped": [dict(n=200000, d=50, why="estimated 130 CPU s > 120")],
            },
        },
        "ols": {
            "largest": [_point(2000, 10, 0.01, 0.0)],
            "stopped": [],
            "memory_curve": None,
        },
    },
    "not_run": {},
    "worker_mb": 400.0,
}


def test_the_reader_returns_the_largest_sizes_of_both_target_types(monkeypatch):
    monkeypatch.setattr(scale, "facts", lambda: BOTH)
    dwr = scale.method_scale("dwr")
    assert [(p["n"], p["d"]) for p in dwr["largest"]] == [(200000, 50)]  # the numeric target's
    assert [(p["n"], p["d"]) for p in dwr["binary"]["largest"]] == [(20000, 500)]
    assert dwr["binary"]["stopped"][0]["why"] == "estimated 130 CPU s > 120"
    assert "binary" not in scale.method_scale("ols")  # measured on a numeric target only
    text = scale.describe("dwr")
    assert text.index("n 200,000 x d 50: 24 CPU s") < text.index("binary target: n 20,000 x d 500: 15 CPU s")
    assert "binary" not in scale.describe("ols")


def test_plugins_json_and_the_page_show_the_binary_sizes_where_measured(tmp_path, capsys):
    """On the shipped facts: every method of the synthetic-binary suite that ran there has its binary
    sizes in `oodfs plugins --json`, and the results page lists them beside the numeric ones."""
    code, out, err = run(capsys, "plugins", "--json")
    assert code == 0, err
    selectors = {e["name"]: e["scale"] for e in json.loads(out) if e["kind"] == "selector"}
    both = {m for m, s in selectors.items() if "binary" in s}
    assert {"dwr", "srdo", "ols", "correlation", "stg"} <= both
    assert not {"hrm", "rsw", "iamb", "hiton_mb", "kerhrm"} & both  # regression-only methods
    for m in both:
        assert selectors[m]["binary"]["largest"] and selectors[m]["largest"], m
    df = results({"dwr": noisy(0.3, 0.01, 0), "hrm": noisy(0.4, 0.01, 1)}, runs=range(2))
    html = build_site([folder(tmp_path / "run", df)], tmp_path / "site", formats=["svg"]).read_text()
    rows = dict(re.findall(r"<tr><td>(\w+)</td>(.*?)</tr>", _section(html, "scale"), flags=re.S))
    binary = selectors["dwr"]["binary"]["largest"][-1]
    assert "numeric" in rows["dwr"] and "binary" in rows["dwr"]
    assert f"{binary['n']:,} × {binary['d']}" in rows["dwr"]
    assert "binary" not in rows["hrm"].split("</td>")[0]  # its target column: numeric only


def test_the_scale_suite_fits_a_binary_target_with_each_methods_classification_form(tmp_path, capsys):
    """``suite-one --task binary``: a method with a classification form is scored as the binary suites
    score one (log-loss, AUC), and a regression-only method is recorded as refused with its line."""
    from oodfs_plugins.environments.synthetic import SyntheticBinary

    bs = bench_scale()
    env = SyntheticBinary(setting="poly", d_v=5)
    X, y = env.sample(2.5, 600, 0)
    tests = [env.sample(r, 500, 1000 + i) for i, r in enumerate((-3.0, 3.0))]
    path = tmp_path / "bin.npz"
    np.savez(
        path,
        X=X,
        y=y,
        stable=np.asarray(env.stable_set),
        Xt=np.stack([t[0] for t in tests]),
        yt=np.stack([t[1] for t in tests]),
    )
    bs.suite_one(["ols", "hrm"], str(path), "binary")
    ols, hrm = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert ols["status"] == "ok" and "rmse_mean" not in ols
    assert 0 < ols["log_loss_mean"] < np.log(2) and 0.5 < ols["auc_mean"] <= 1  # better than a coin
    assert hrm == dict(method="hrm", n=600, d=10, status="refused", why=hrm["why"])
    assert "not binary" in hrm["why"]


def test_until_is_the_next_such_time_of_day_even_past_midnight():
    """``suite --until HH:MM`` started before midnight with a time after it must not stop at once."""
    import datetime as dt
    import time

    bs = bench_scale()
    now = dt.datetime.now(dt.timezone.utc)
    for minutes in (1, 60 * 23 + 58):  # a minute from now, and a time of day that has just gone
        until = (now + dt.timedelta(minutes=minutes)).strftime("%H:%M")
        left = bs.deadline(until) - time.time()
        assert 0 < left <= 24 * 3600, (until, left)
    assert bs.deadline(None) == float("inf")


def test_the_shipped_binary_facts_are_those_of_the_binary_measurements():
    bs = bench_scale()
    rows = bs.last_rows(str(ROOT / "benchmarks" / "scale" / "scale_results.jsonl"), binary=True)
    shipped = {m: e["binary"] for m, e in scale.facts()["methods"].items() if "binary" in e}
    assert set(shipped) == {r["method"] for r in rows if r["status"] == "ok"}
    for method, entry in shipped.items():
        mine = [r for r in rows if r["method"] == method]
        ok = [r for r in mine if r["status"] == "ok"]
        assert [(p["n"], p["d"], p["cpu_s"]) for p in entry["largest"]] == [
            (r["n"], r["d"], round(r["cpu"], 3)) for r in bs.largest(ok)
        ]
        assert len(entry["stopped"]) == len(mine) - len(ok)
