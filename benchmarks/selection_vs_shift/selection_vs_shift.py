"""When does feature selection help under shift? Each method family's gain over `all_features` per
suite against the share of the suite's drop due to Y | X, tested across suites.

    python benchmarks/selection_vs_shift/selection_vs_shift.py            # numbers, figure, README
    python benchmarks/selection_vs_shift/selection_vs_shift.py --rediagnose   # diagnoses computed again

Reads the reference results shipped with oodfs (every real suite holding `all_features`: its
downstream models, the `val` rule, k chosen on validation where the suite has a k grid) and each
suite's shift diagnosis (oodfs.shift.diagnose_suite, cached in diagnosis.json beside this script:
computing all of them takes about five minutes). The synthetic suite's reference has no
`all_features`: the script runs it alone (`oodfs bench --suite synthetic --methods all_features
--reference --out ROOT/synthetic-af`, about two minutes; the other methods are copied from the
reference) and adds the synthetic suite's two settings as suites of a known share (covariate
shift only: Y | X is f(S) + noise in every environment, docs/PROTOCOL.md section 1), with the
diagnosis computed on them as a check of the diagnosis (it should find a share near 0).

Writes README.md (the report, opening with the paragraph the results page shows:
reproduce.py --site-only computes it again from the same inputs through :func:`page_answer`),
selection_vs_shift.png/.svg (the figure), points.csv and tests.csv (the numbers).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from oodfs.contract.registry import get_task
from oodfs.report import across_shift
from oodfs.report.analysis import REFERENCE, Analysis
from oodfs.report.report import Report
from oodfs.results.store import load_results
from oodfs.run import reference as references
from oodfs.run.suite import available_suites, load_suite

HERE = Path(__file__).resolve().parent
DIAGNOSIS = HERE / "diagnosis.json"
#: the synthetic suite's settings, each a suite of its own here (a data process of its own)
SYNTHETIC = "synthetic"
KNOWN_SHARE = 0.0  # covariate shift only, by construction (docs/PROTOCOL.md section 1)


def real_suites() -> list[str]:
    """The shipped suites on a table whose shipped reference holds all_features."""
    out = []
    for name in references.available():
        suite, profile = name.rsplit("-", 1)
        if profile != "default" or suite not in available_suites():
            continue
        if load_suite(suite).environment in ("table", "binary_table"):
            out.append(suite)
    return out


def diagnoses(suites, rediagnose: bool = False) -> dict:
    """{suite: oodfs.shift.diagnose_suite(suite)} (regression or binary), cached in diagnosis.json."""
    from oodfs.contract.registry import registry
    from oodfs.run.suite import with_task
    from oodfs.shift import diagnose_suite

    stored = json.loads(DIAGNOSIS.read_text()) if DIAGNOSIS.exists() and not rediagnose else {}
    changed = False
    for s in suites:
        if s not in stored:
            print(f"diagnosing {s} ...", flush=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stored[s] = diagnose_suite(with_task(load_suite(s), registry())[0])
            changed = True
    for s in [f"{SYNTHETIC}/{st.name}" for st in load_suite(SYNTHETIC).settings]:
        if s not in stored:
            print(f"diagnosing {s} (the check against the known share) ...", flush=True)
            stored[s] = synthetic_diagnosis(s.split("/")[1])
            changed = True
    if changed:
        DIAGNOSIS.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
    return stored


def synthetic_diagnosis(setting: str) -> dict:
    """The same decomposition on one setting of the synthetic suite (its first run's data)."""
    from oodfs.shift import drop_kind, shift_diagnosis

    suite = load_suite(SYNTHETIC)
    one = dataclasses.replace(suite, settings=tuple(s for s in suite.settings if s.name == setting))
    d = shift_diagnosis(one)
    d.pop("pairs")
    task = d.pop("task")
    d = {k: float(v) for k, v in d.items()}
    return dict(d, kind=drop_kind(d), task=task)


def synthetic_run(root: Path) -> Path:
    """A results folder of the synthetic suite with all_features (run here, the rest copied)."""
    out = root / "synthetic-af"
    if not (out / "results.sqlite").exists():
        cmd = [
            "oodfs",
            "bench",
            "--suite",
            SYNTHETIC,
            "--methods",
            REFERENCE,
            "--reference",
            "--out",
            str(out),
            "--jobs",
            "1",
            "--quiet",
        ]
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def _analysis(rows: pd.DataFrame, metrics, order, unit: str, model: str) -> tuple[str, Analysis]:
    task = "binary" if "log_loss_mean" in set(rows["metric"]) else "regression"
    metric = get_task(task).metric("mean")
    report = Report(rows, "val", metrics, order, model, [metric], unit=unit)
    return metric, Analysis(report)


def groups(root: Path | None) -> dict:
    """{downstream model: (metric, {suite: Analysis})}: the real suites' references, and (with
    ``root``) the synthetic suite's settings from :func:`synthetic_run`."""
    out: dict = {}
    for suite in real_suites():
        ref = references.load_reference(suite, "default")
        meta = ref.meta
        rows = load_results(ref.path)
        for model in list(dict.fromkeys(rows["downstream"].dropna())):
            metric, a = _analysis(rows, meta["metrics"], meta["methods"], load_suite(suite).unit, model)
            out.setdefault(model, (metric, {}))[1][suite] = a
    if root is not None:
        from oodfs.results.store import ResultStore

        folder = synthetic_run(root)
        rows = load_results(folder)
        store = ResultStore(folder)
        order = list(load_suite(SYNTHETIC).methods)
        for setting in dict.fromkeys(rows["setting"].astype(str)):
            part = rows[rows["setting"].astype(str) == setting]
            metric, a = _analysis(part, store.get_meta("metrics"), order, "run", "mlp")
            out.setdefault("mlp", (metric, {}))[1][f"{SYNTHETIC}/{setting}"] = a
    return out


def answer(root: Path | None, rediagnose: bool = False) -> tuple[dict, dict]:
    """(the result of oodfs.report.across_shift.selection_vs_shift, the diagnoses)."""
    g = groups(root)
    suites = sorted({s for _, analyses in g.values() for s in analyses if "/" not in s})
    diag = diagnoses(suites, rediagnose)
    shares = {s: (np.nan if diag[s]["y_share"] is None else diag[s]["y_share"]) for s in suites}
    known = {s: KNOWN_SHARE for _, analyses in g.values() for s in analyses if s.startswith(f"{SYNTHETIC}/")}
    gains = {model: across_shift.family_gains(analyses, metric) for model, (metric, analyses) in g.items()}
    kinds = {s: diag[s]["kind"] for s in suites}
    check = {s: diag[s]["y_share"] for s in known if s in diag and diag[s]["y_share"] is not None}
    return across_shift.selection_vs_shift(gains, shares, known, kinds, check), diag


def page_answer(root: Path, figure_dir: Path) -> dict:
    """What the results page shows (oodfs.report.site.build_site's ``answer``): the paragraph, the
    figure (SVG written to ``figure_dir``) and every suite's diagnosis."""
    res, diag = answer(root)
    from oodfs.report.figure_files import figure_formats

    with figure_formats(("svg",)):
        paths = across_shift.figure(res, figure_dir)
    rows = [
        dict(suite=s, **{k: diag[s].get(k) for k in ("kind", "y_share", "x_shift", "y_shift", "overlap")})
        for s in sorted(diag)
    ]
    return dict(
        paragraph=across_shift.paragraph(res),
        figure=paths[0],
        diagnoses=rows,
        report="benchmarks/selection_vs_shift/README.md",
    )


def _f(v, fmt="{:+.2f}"):
    return "" if v is None or not np.isfinite(v) else fmt.format(v)


def report(res: dict, diag: dict) -> str:
    tests, points = res["tests"], res["points"]
    para = across_shift.paragraph(res)
    lines = [
        "# When does feature selection help under shift?",
        "",
        "Written by `python benchmarks/selection_vs_shift/selection_vs_shift.py` from the reference results "
        "shipped with oodfs and each suite's shift diagnosis (`oodfs suites NAME` shows it on the card). "
        "The results page shows the same paragraph, generated by the same code "
        "(`oodfs.report.across_shift`).",
        "",
        "## The answer",
        "",
        para,
        "",
        "![gain over all_features against the share of the drop due to Y | X](selection_vs_shift.png)",
        "",
        "## How it is measured",
        "",
        f"- **Gain**: {across_shift.GAIN_TEXT}. It is the negative of the analysis object's effect "
        "(`oodfs.report.analysis.across_suites`, the verdict across suites of REALDATA.md and the page), per "
        "suite and downstream model; the loss is the task's mean test loss (RMSE mean; log-loss mean for a "
        "binary target), the `val` rule, k chosen on validation where the suite has a k grid.",
        "- **Kind of shift**: the share of the drop of "
        "`all_features` from held-out training rows to the test "
        "environments that the change in Y | X accounts for (`oodfs.shift.diagnose_suite`, docs/PROTOCOL.md "
        'section 10, "Diagnosis"). It can lie outside [0, 1]: '
        "where the change in X alone would lower the loss, "
        "the Y | X part is larger than the drop. A suite whose "
        "loss does not rise (no drop) has no share and is "
        "left out of the tests.",
        "- **Test**: per (downstream model, family), Spearman's rank correlation over the suites "
        "(scipy.stats.spearmanr), the suite as the unit of replication; 95 % interval by the Fisher z "
        f"transform with variance {across_shift.FISHER_VARIANCE} "
        "/ (n - 3); Holm over the tests. Binary suites "
        "are diagnosed on log-loss under logistic regression and enter under `logistic` (their references "
        "train logistic only).",
        "",
        "## The tests",
        "",
    ]
    t = tests.copy()
    table = [
        [
            r.model,
            r.family,
            r.n,
            _f(r.rho),
            f"[{_f(r.low)}, {_f(r.high)}]",
            _f(r.p, "{:.3g}"),
            _f(r.p_holm, "{:.3g}"),
            r.verdict,
            _f(100 * r.mean_gain, "{:+.2f} %"),
            f"{r.helped} of {r.cells}",
        ]
        for r in t.itertuples()
    ]
    lines += [
        tabulate(
            table,
            headers=[
                "model",
                "family",
                "suites",
                "ρ",
                "95 % interval",
                "p",
                "p (Holm)",
                "verdict",
                "mean gain",
                "suites gained",
            ],
            tablefmt="github",
        ),
        "",
    ]
    # sensitivity: the suites whose overlap is too small to read the split left out
    from oodfs.shift import MIN_OVERLAP

    low = {s for s, d in diag.items() if "/" not in s and d["overlap"] < MIN_OVERLAP}
    sens = []
    for (model, fam), p in points[points["source"] == "diagnosed"].groupby(["model", "family"], sort=False):
        p = p[~p["suite"].isin(low)]
        r = across_shift.spearman(p["share"], p["gain"])
        sens.append(
            [model, fam, r["n"], _f(r["rho"]), f"[{_f(r['low'])}, {_f(r['high'])}]", _f(r["p"], "{:.3g}")]
        )
    lines += [
        f"**Without the suites of overlap below {MIN_OVERLAP:g}** "
        f"({len(low)}: {', '.join(sorted(low))}; there "
        'the split rests on few rows and the diagnosis reads "unclear"), unadjusted:',
        "",
        tabulate(sens, headers=["model", "family", "suites", "ρ", "95 % interval", "p"], tablefmt="github"),
        "",
        "## Each suite's diagnosis and gains",
        "",
    ]
    wide = points.pivot_table(index=["suite", "model"], columns="family", values="gain").mul(100).round(2)
    drows = []
    for (suite, model), g in wide.iterrows():
        d = diag.get(suite, {})
        syn = suite.startswith(f"{SYNTHETIC}/")
        drows.append(
            [
                suite,
                model,
                "known: X alone" if syn else d.get("kind", ""),
                f"{KNOWN_SHARE:g} (computed {_f(d.get('y_share'))})" if syn else _f(d.get("y_share")),
                _f(d.get("overlap"), "{:.2f}"),
                *[_f(v, "{:+.2f}") for v in g],
            ]
        )
    lines += [
        tabulate(
            drows,
            headers=[
                "suite",
                "model",
                "diagnosis",
                "share Y ∣ X",
                "overlap",
                *[f"{c} (gain %)" for c in wide.columns],
            ],
            tablefmt="github",
        ),
        "",
    ]
    syn = {s: d for s, d in diag.items() if s.startswith(f"{SYNTHETIC}/")}
    if syn:
        lines += [
            "## The diagnosis on data of a known shift",
            "",
            "The synthetic suite's environments select rows on (f(S), V4, V5) and draw the noise after "
            "selection: Y | X is f(S) + ε in every environment, "
            "a shift of X alone, so the share due to Y | X is "
            f"{KNOWN_SHARE:g} by construction. The diagnosis "
            "computed on its first run (the same code as on a "
            "table):",
            "",
            tabulate(
                [
                    [
                        s,
                        d["kind"],
                        _f(d["p"], "{:.4g}"),
                        _f(d["q"], "{:.4g}"),
                        _f(d["x_shift"], "{:+.4g}"),
                        _f(d["y_shift"], "{:+.4g}"),
                        _f(d["y_share"]),
                        _f(d["overlap"], "{:.2f}"),
                    ]
                    for s, d in sorted(syn.items())
                ],
                headers=[
                    "setting",
                    "diagnosis",
                    "loss P",
                    "loss Q",
                    "from X",
                    "from Y ∣ X",
                    "share Y ∣ X",
                    "overlap",
                ],
                tablefmt="github",
            ),
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--root", default="results/selection_vs_shift", help="where the synthetic run is kept"
    )
    parser.add_argument("--rediagnose", action="store_true", help="compute every diagnosis again")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="An input array is constant")
    res, diag = answer(Path(args.root), args.rediagnose)
    res["points"].to_csv(HERE / "points.csv", index=False)
    res["tests"].to_csv(HERE / "tests.csv", index=False)
    across_shift.figure(res, HERE)
    for ext in ("pdf",):
        (HERE / f"selection_vs_shift.{ext}").unlink(missing_ok=True)
    (HERE / "README.md").write_text(report(res, diag))
    print(f"wrote {HERE / 'README.md'}")


if __name__ == "__main__":
    main()
