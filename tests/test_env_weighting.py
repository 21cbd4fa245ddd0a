"""How the test environments count in the statistics over them (docs/PROTOCOL.md section 3,
"Weighting the test environments"): equal by default, by test rows or with a minimum size on
request, in `select --evaluate` and in a bench report alike; the stored values never change."""

import json

import numpy as np
import pandas as pd
import pytest

from oodfs.contract.env_weights import EnvWeighting
from oodfs.report.report import Report
from oodfs.run.identity import suite_identity
from oodfs.run.rank import summarize_evaluation
from oodfs.run.suite import suite_from_dict
from oodfs.validation import OodfsError

from .conftest import run_cli

#: three test environments of very different sizes, as on a user's clinics
ROWS = {"clinic_1": 3303, "clinic_2": 40, "clinic_17": 1}
#: per method, its test RMSE in each environment
RMSE = {
    "lasso": {"clinic_1": 1.0, "clinic_2": 2.0, "clinic_17": 9.0},
    "ols": {"clinic_1": 1.5, "clinic_2": 1.2, "clinic_17": 0.1},
}


def hand(values: dict, rows: dict, keep=lambda env: True):
    env = [e for e in values if keep(e)]
    v, w = np.array([values[e] for e in env]), np.array([rows[e] for e in env], dtype=float)
    mean = (w * v).sum() / w.sum()
    return mean, np.sqrt((w * (v - mean) ** 2).sum() / w.sum()), v.max()


def results(stored_mean: float | None = None) -> pd.DataFrame:
    """A results table of one data set, two methods of one grid point each, as a run stores it: the
    per-environment RMSEs and the statistics over them (``stored_mean``: a stored mean that is not
    the equal mean, to see whether a report recomputes it)."""
    rows = []
    base = dict(suite="s", profile="default", setting="t", r_train="a", run=0, point=0, k=2,
                status="ok", error=None, params="{}", is_default=1, method_kind="selector",
                downstream="ridge")  # fmt: skip
    for method, per_env in RMSE.items():
        v = np.array(list(per_env.values()))
        flat = {"rmse_val": 1.0, "rmse_mean": stored_mean or float(v.mean()), "rmse_std": float(v.std())}
        rows += [dict(base, method=method, metric=m, env=None, value=x) for m, x in flat.items()]
        rows += [dict(base, method=method, metric="rmse", env=e, value=x) for e, x in per_env.items()]
    return pd.DataFrame(rows)


ENV_ROWS = pd.DataFrame([{"setting": "t", "run": 0, "env": e, "rows": n} for e, n in ROWS.items()])


def test_the_rows_weighting_is_the_hand_computed_row_weighted_mean_and_sd():
    values = [1.0, 2.0, 9.0]
    got = EnvWeighting("rows").summarize(values, list(ROWS.values()))
    mean, sd, worst = hand(dict(zip(ROWS, values)), ROWS)
    assert got["mean"] == pytest.approx(mean, rel=1e-12) and got["std"] == pytest.approx(sd, rel=1e-12)
    assert got["worst"] == worst == 9.0  # the worst is not weighted
    assert got["mean"] == pytest.approx((3303 * 1 + 40 * 2 + 9) / 3344)


def test_a_bench_report_weights_the_stored_per_environment_values_and_names_what_it_leaves_out():
    report = Report(results(), "val", unit="run", task="regression", env_weighting=EnvWeighting("rows", 2),
                    env_rows=ENV_ROWS)  # fmt: skip
    chosen = report.chosen.set_index("method")
    for method, per_env in RMSE.items():
        mean, sd, _ = hand(per_env, ROWS, keep=lambda e: ROWS[e] >= 2)
        assert chosen.loc[method, "rmse_mean"] == pytest.approx(mean, rel=1e-12)
        assert chosen.loc[method, "rmse_std"] == pytest.approx(sd, rel=1e-12)
    assert report.env_left_out == {"clinic_17": 1}
    notes = report.env_notes()
    assert any("left out of the across-environment statistics: clinic_17 (1 row) (fewer than 2 rows)" in n
               for n in notes)  # fmt: skip
    assert any("weighted by each environment's test rows" in n for n in notes)
    # the values per environment are shown as stored, the small environment among them
    assert set(report.per_env["env"]) == set(ROWS)


def test_the_default_reads_the_stored_statistics_as_they_are():
    stored = results(stored_mean=7.25)  # not the mean of the per-environment values
    report = Report(stored, "val", unit="run", task="regression")
    assert (report.chosen["rmse_mean"] == 7.25).all()
    assert report.env_notes() == [] and report.env_left_out == {}
    # given the rows but not asked to weight: still as stored
    same = Report(
        stored, "val", unit="run", task="regression", env_weighting=EnvWeighting(), env_rows=ENV_ROWS
    )
    pd.testing.assert_frame_equal(report.points, same.points)


def test_weighting_without_the_rows_says_what_is_missing():
    with pytest.raises(OodfsError, match="number of test rows of environment clinic_1"):
        Report(results(), "val", unit="run", task="regression", env_weighting=EnvWeighting("rows"))


def test_select_summary_weights_by_the_rows_column_and_leaves_the_small_ones_out():
    evaluation = pd.DataFrame(
        {"env": list(ROWS), "rows": list(ROWS.values()), "rmse_selected": [1.0, 2.0, 9.0],
         "rmse_all": [1.5, 1.2, 0.1], "rmse_mean": [3.0, 3.0, 3.0]}
    )  # fmt: skip
    default = summarize_evaluation(evaluation).set_index(["score", "statistic"])
    assert default.loc[("rmse", "mean"), "selected"] == pytest.approx(4.0)
    assert default.loc[("rmse", "worst"), "selected"] == 9.0
    weighted = summarize_evaluation(evaluation, weighting=EnvWeighting("rows", 2)).set_index(
        ["score", "statistic"]
    )
    mean, sd, worst = hand(dict(zip(ROWS, [1.0, 2.0, 9.0])), ROWS, keep=lambda e: ROWS[e] >= 2)
    assert weighted.loc[("rmse", "mean"), "selected"] == pytest.approx(mean, rel=1e-12)
    assert weighted.loc[("rmse", "sd"), "selected"] == pytest.approx(sd, rel=1e-12)
    assert weighted.loc[("rmse", "worst"), "selected"] == 2.0  # clinic_17's 9.0 is left out


SUITE = {
    "environment": "table",
    "settings": {"t": {"params": {"path": "t.csv", "target": "y", "env_column": "site"}}},
    "r_train": ["a"],
    "r_test": ["b", "c"],
    "n_train": 50,
    "n_test": 100,
    "methods": ["lasso"],
}


def test_a_suite_file_declares_it_and_it_is_not_part_of_the_identity():
    plain = suite_from_dict("s", dict(SUITE))
    weighted = suite_from_dict("s", dict(SUITE, env_weighting="rows", min_env_rows=30))
    assert (plain.env_weighting, plain.min_env_rows) == ("equal", None)
    assert (weighted.env_weighting, weighted.min_env_rows) == ("rows", 30)
    assert suite_identity(plain) == suite_identity(weighted)
    with pytest.raises(OodfsError, match=r"env_weighting must be one of equal, rows, got 'size'"):
        suite_from_dict("s", dict(SUITE, env_weighting="size"))
    with pytest.raises(OodfsError, match="min_env_rows must be a positive whole number"):
        suite_from_dict("s", dict(SUITE, min_env_rows=0))


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    frames = []
    for env, n in {"a": 120, "b": 80, "c": 5, "d": 1}.items():
        X = rng.normal(size=(n, 3))
        frames.append(
            pd.DataFrame(X, columns=["u", "v", "w"]).assign(y=X[:, 0] + rng.normal(size=n), site=env)
        )
    path = tmp_path / "t.csv"
    pd.concat(frames).to_csv(path, index=False)
    return str(path)


def one_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


SELECT = ["select", "--target", "y", "--method", "correlation", "--env-column", "site", "--train-envs", "a",
          "--evaluate", "--downstream", "ridge", "--top-k", "1"]  # fmt: skip


def test_select_refuses_bad_options_in_one_line(table, capsys):
    code, _, err = run_cli(capsys, *SELECT, table, "--env-weighting", "size")
    assert code == 2 and "invalid choice: 'size' (choose from 'equal', 'rows')" in one_line(err)
    code, _, err = run_cli(capsys, *SELECT, table, "--min-env-rows", "100")
    assert code == 2
    assert (
        "min_env_rows (--min-env-rows) 100 leaves no test environment: the largest, b, has 80 rows"
        in one_line(err)
    )


def test_select_names_what_it_leaves_out_and_the_default_prints_as_before(table, capsys):
    code, out, _ = run_cli(capsys, *SELECT, table, "--json")
    assert code == 0
    default = json.loads(out)["evaluation"]
    assert "env_weighting" not in default and "left_out_envs" not in default  # the form as before
    code, out, _ = run_cli(capsys, *SELECT, table, "--json", "--env-weighting", "rows", "--min-env-rows", "2")
    weighted = json.loads(out)["evaluation"]
    assert weighted["left_out_envs"] == [{"env": "d", "rows": 1}]
    envs = {e["env"]: e for e in weighted["environments"]}
    mean = (80 * envs["b"]["rmse_selected"] + 5 * envs["c"]["rmse_selected"]) / 85
    got = {(s["score"], s["statistic"]): s for s in weighted["summary"]}
    assert got[("rmse", "mean")]["selected"] == pytest.approx(mean, rel=1e-12)
    # the environments' own values are those of the default run
    assert weighted["environments"] == default["environments"]
    code, out, _ = run_cli(capsys, *SELECT, table, "--env-weighting", "rows", "--min-env-rows", "2")
    assert "left out of the across-environment statistics: d (1 row) (fewer than 2 rows)" in out
    assert "mean ± sd and worst over 2 of the 3 environments, weighted by their rows" in out
