"""Real suites trained on several labelled environments at once: does a label-using method beat
the label-free ones, or all_features?

    python benchmarks/multienv_real/multienv_real.py [ROOT] [--run] [--ship] [--jobs N]

ROOT (default results/) holds one results folder per suite (ROOT/lending-states, ...), made by
``oodfs bench --suite S --jobs 1``; ``--run`` runs the suites missing there first. A suite not in ROOT
is read from its shipped reference results. ``--ship`` writes each complete suite in ROOT as shipped
reference results (oodfs/run/reference/<suite>-default.*, oodfs.run.reference.write_reference).

Writes benchmarks/multienv_real/MULTIENV_REAL.md: per suite and downstream model, every method's RMSE over the
suite's units (each r_train entry, a disjoint set of training environments: docs/PROTOCOL.md
section 10, "Several labelled training environments"), the one analysis's verdicts against
all_features (oodfs.report.analysis), and the label-using methods against the label-free ones: each
label-using method, and their mean, against the mean of the label-free methods on the same unit
(two-sided Wilcoxon over the units, Holm over the label-using methods). The hand-written reading
is benchmarks/multienv_real/multienv_real_notes.md, included as it is.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from oodfs.contract.registry import registry
from oodfs.report import stats
from oodfs.report.analysis import REFERENCE, Analysis
from oodfs.report.report import Report
from oodfs.run.reference import shipped_dir
from oodfs.run.suite import load_suite, train_envs

HERE = Path(__file__).resolve().parent
SUITES = ("lending-states", "txhousing-citysets")
MODELS = ("ridge", "mlp")
METRIC = "rmse_mean"
#: the per-unit mean of each family, compared as if it were a method
USING_MEAN, FREE_MEAN = "label-using (mean)", "label-free (mean)"


def uses_labels(method: str) -> bool:
    return bool(getattr(registry().get("selector", method), "uses_groups", False))


def source(root: Path, name: str) -> Path | None:
    """ROOT/<suite> when it was run there, else the shipped reference results, else None."""
    folder = root / name
    if (folder / "results.sqlite").exists():
        return folder
    shipped = shipped_dir() / f"{name}-default.parquet"
    return shipped if shipped.is_file() else None


def load_report(path: Path, name: str, model: str) -> Report:
    """The suite's report under ``model`` from a results folder or a shipped reference (whose
    provenance file holds the metric declarations and the methods' order)."""
    unit = load_suite(name).unit
    if path.suffix != ".parquet":
        return Report.from_path(path, downstream=model, unit=unit)
    from oodfs.results.store import load_results

    meta = json.loads(path.with_suffix(".json").read_text())
    return Report(load_results(path), "val", meta["metrics"], meta["methods"], model, None, unit=unit)


def complete(report: Report, name: str) -> bool:
    """Has every r_train entry of the suite a row for every method?"""
    s = load_suite(name)
    return report.tasks.groupby(["r_train", "run"]).ngroups == len(s.r_train) * s.runs


def run_missing(root: Path, jobs: int) -> dict:
    """Run every suite without a results folder in ROOT (nice -n 10); wall seconds per suite."""
    seconds = {}
    for name in SUITES:
        if (root / name / "results.sqlite").exists():
            continue
        t0 = time.perf_counter()
        cmd = ["nice", "-n", "10", sys.executable, "-m", "oodfs.cli", "bench", "--suite", name]
        subprocess.run([*cmd, "--jobs", str(jobs), "--out", str(root / name), "--quiet"], check=True)
        seconds[name] = time.perf_counter() - t0
    return seconds


def ship(root: Path) -> list[str]:
    from oodfs.run.reference import write_reference

    shipped = []
    for name in SUITES:
        folder = root / name
        if (folder / "results.sqlite").exists() and complete(load_report(folder, name, MODELS[0]), name):
            write_reference(folder, shipped_dir() / f"{name}-default.parquet")
            shipped.append(name)
    return shipped


# -- the numbers -----------------------------------------------------------------------------------
def numbers(report: Report) -> dict:
    """Per method: RMSE over the units [95 % bootstrap]; the analysis's test against all_features;
    the label-using methods (and their mean) against the label-free methods' mean per unit."""
    analysis = Analysis(report)
    values = analysis.values.dropna(subset=[METRIC])
    setting = values["setting"].iloc[0]
    methods = list(analysis.family.methods)
    using = [m for m in methods if uses_labels(m)]
    free = [m for m in methods if m not in using]
    wide = values.pivot_table(index="r_train", columns="method", values=METRIC, aggfunc="first")
    cells = {m: stats.cell_summary(wide[m], method="bootstrap") for m in wide.columns}
    vs_all = analysis.tests(setting, METRIC).set_index("method_a")
    # a family's mean on a unit is taken over the members with a value there (a failed task is left out)
    families = pd.DataFrame({USING_MEAN: wide[using].mean(axis=1), FREE_MEAN: wide[free].mean(axis=1)})
    long = _long(pd.concat([wide[using], families], axis=1), setting)
    kw = dict(within=("setting",), pair_on=("r_train",))
    per_method = stats.versus_reference(long[long["method"] != USING_MEAN], METRIC, True, FREE_MEAN, **kw)
    both = long[long["method"].isin(families.columns)]
    family = stats.versus_reference(both, METRIC, True, FREE_MEAN, **kw)
    # a label-using method that beats the label-free mean, against each label-free method (Holm over them)
    wins = per_method[per_method["better"] == per_method["method_a"]]["method_a"]
    follow_up = {
        m: stats.versus_reference(_long(wide[[m, *free]], setting), METRIC, True, m, **kw) for m in wins
    }
    ref = wide[REFERENCE]
    relative = {
        m: stats.cell_summary((col - ref) / ref * 100, method="bootstrap")
        for m, col in pd.concat([wide, families], axis=1).items()
    }
    return dict(
        analysis=analysis, wide=wide, cells=cells, vs_all=vs_all, using=using, free=free,
        vs_free=pd.concat([per_method, family]).set_index("method_a"), relative=relative, follow_up=follow_up,
        units=len(wide), failed=report.tasks[report.tasks["status"] != "ok"][["method", "r_train", "error"]],
    )  # fmt: skip


def _long(wide: pd.DataFrame, setting) -> pd.DataFrame:
    """One row per (unit, method) of a unit x method table, as the stats functions read it."""
    return (
        wide.reset_index()
        .melt(id_vars="r_train", var_name="method", value_name=METRIC)
        .assign(setting=setting)
    )


def _ci(c, signed=False, digits=3) -> str:
    f = f"{{:{'+' if signed else ''}.{digits}f}}"
    if not np.isfinite(c.mean):
        return ""
    return f.format(c.mean) + ("" if not np.isfinite(c.low) else f" [{f.format(c.low)}, {f.format(c.high)}]")


def _test(row) -> str:
    """'+0.012 [−0.003, 0.027], p = 0.42, verdict' of a comparison row."""
    if row is None:
        return ""
    diff = stats.CellSummary(row["mean_diff"], row["diff_low"], row["diff_high"], int(row["n_pairs"]))
    return f"{_ci(diff, signed=True)} | {row['p_adjusted']:.3g} | {row['verdict']}"


def method_table(n: dict) -> list[str]:
    lines = [
        "| method | needs labels | RMSE [95 % bootstrap] | vs all_features, % [95 % bootstrap] | "
        "vs all_features: diff [95 % t] | Holm p | verdict | "
        "vs label-free mean: diff [95 % t] | Holm p | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    yardsticks = [REFERENCE, *[m for m in n["wide"] if m == "mean"]]
    order = [*n["using"], USING_MEAN, *n["free"], FREE_MEAN, *yardsticks]
    for m in order:
        cell = n["cells"].get(m) or stats.cell_summary(
            n["wide"][n["using"] if m == USING_MEAN else n["free"]].mean(axis=1), method="bootstrap"
        )
        vs_all = n["vs_all"].loc[m] if m in n["vs_all"].index else None
        vs_free = n["vs_free"].loc[m] if m in n["vs_free"].index and m != FREE_MEAN else None
        label = "yes" if m in n["using"] or m == USING_MEAN else ("" if m in yardsticks else "no")
        rel = _ci(n["relative"][m], signed=True, digits=1) if m != REFERENCE else ""
        name = f"**{m}**" if m in (USING_MEAN, FREE_MEAN) else f"`{m}`"
        tests = f"{_test(vs_all) or ' | | '} | {_test(vs_free) or ' | | '}"
        lines.append(f"| {name} | {label} | {_ci(cell)} | {rel} | {tests} |")
    return lines


def verdicts(n: dict) -> list[str]:
    """The answers in words, read off the tests."""
    out = []
    using = n["using"]
    vs_all = n["vs_all"]
    better = [m for m in vs_all.index if vs_all.loc[m, "better"] == m]
    worse = [m for m in vs_all.index if vs_all.loc[m, "better"] == REFERENCE]
    decidable = bool(vs_all["decidable"].any())
    if not decidable:
        out.append(f"- Against `all_features`: no test can reach 0.05 after Holm with {n['units']} units.")
    else:
        lu_better = [m for m in better if m in using]
        out.append(
            "- Against `all_features` (the analysis's family, Holm over "
            f"{len(vs_all[vs_all['family'] == 'methods'])} methods): "
            + (f"better: {', '.join(f'`{m}`' for m in better)}; " if better else "no method better; ")
            + (f"worse: {', '.join(f'`{m}`' for m in worse)}; " if worse else "none worse; ")
            + ("a label-using method beats it." if lu_better else "no label-using method beats it.")
        )
    fam = n["vs_free"].loc[USING_MEAN]
    rel = n["relative"]
    diff = stats.CellSummary(fam["mean_diff"], fam["diff_low"], fam["diff_high"], int(fam["n_pairs"]))
    out.append(
        f"- Label-using family mean against label-free family mean, paired over {diff.n} units: "
        f"{_ci(diff, signed=True)} RMSE, "
        f"Wilcoxon p = {fam['p']:.3g}: {fam['verdict']} "
        f"(relative to all_features: label-using {_ci(rel[USING_MEAN], signed=True, digits=1)} %, "
        f"label-free {_ci(rel[FREE_MEAN], signed=True, digits=1)} %)."
    )
    per = n["vs_free"].loc[[m for m in using if m in n["vs_free"].index]]
    wins = [m for m in per.index if per.loc[m, "better"] == m]
    losses = [m for m in per.index if per.loc[m, "better"] == FREE_MEAN]
    best = per["mean_diff"].idxmin()
    out.append(
        f"- Each label-using method against the label-free mean (Holm over {len(per)}): "
        + (f"better: {', '.join(f'`{m}`' for m in wins)}; " if wins else "none better; ")
        + (f"worse: {', '.join(f'`{m}`' for m in losses)}; " if losses else "none worse; ")
        + f"the smallest mean difference is `{best}`'s, {per.loc[best, 'mean_diff']:+.3f} "
        f"(Holm p = {per.loc[best, 'p_adjusted']:.3g})."
    )
    for m, t in n["follow_up"].items():  # the family's mean is no method: is it better than each of them?
        beaten = t[t["better"] == m]["method_a"].tolist()
        closest = t.sort_values("mean_diff").iloc[0]
        out.append(
            f"- `{m}` against each label-free method (Holm over {len(t)}): better than "
            + (", ".join(f"`{b}`" for b in beaten) if beaten else "none")
            + f"; the best of them, `{closest['method_a']}`: {m} − {closest['method_a']} = "
            f"{-closest['mean_diff']:+.3f} RMSE (Holm p = {closest['p_adjusted']:.3g})."
        )
    return out


def suite_section(name: str, path: Path | None) -> list[str]:
    suite = load_suite(name)
    lines = [f"## `{name}`", "", f"{suite.description}. Data card: `oodfs suites`; design: docs/PROTOCOL.md "
             "section 10, \"Several labelled training environments\".", ""]  # fmt: skip
    if path is None:
        return lines + ["Not run (no results folder and no shipped reference).", ""]
    sizes = {len(train_envs(r)) for r in suite.r_train}
    lines += [
        f"Units: {len(suite.r_train)} disjoint r_train entries of {'/'.join(map(str, sorted(sizes)))} "
        f"environments each ({suite.n_train} + {suite.n_val} rows per environment, one run per entry), "
        f"tested on {', '.join(suite.r_test)} (every row). Results: "
        + (f"`{path.name}` (shipped reference)." if path.suffix == ".parquet" else "a full-grid run."),
        "",
    ]
    for model in suite.downstream:
        report = load_report(path, name, model)
        if not complete(report, name):
            lines += [f"### {model}: incomplete ({report.tasks.groupby('r_train').ngroups} entries)", ""]
            continue
        n = numbers(report)
        lines += [f"### Downstream model: {model}", "", *verdicts(n), "", *method_table(n), ""]
        if len(n["failed"]):
            failed = ", ".join(sorted(set(n["failed"]["method"])))
            lines += [f"Failed tasks: {len(n['failed'])} ({failed}).", ""]
    return lines


def cached_section(name: str, path: Path | None) -> list[str]:
    """:func:`suite_section`, kept in a results folder until its results change (the tests of
    both models take minutes per suite on a loaded machine)."""
    if path is None or path.suffix == ".parquet":
        return suite_section(name, path)
    cache = path / "multienv_real-section.md"
    if cache.is_file() and cache.stat().st_mtime > (path / "results.sqlite").stat().st_mtime:
        return cache.read_text().split("\n")
    lines = suite_section(name, path)
    cache.write_text("\n".join(lines))
    return lines


def diagnosis_line(name: str, path: Path | None) -> list[str]:
    """The shift diagnosis of the data card (oodfs.shift; docs/PROTOCOL.md section 10, "Diagnosis"):
    how much of all_features' drop from the held-out training rows to the test environments
    comes from the change in X and how much from the change in Y | X. Kept in a results folder."""
    from oodfs.shift import diagnose_suite

    cache = path / "multienv_real-diagnosis.json" if path is not None and path.is_dir() else None
    if cache is not None and cache.is_file():
        d = json.loads(cache.read_text())
    else:
        d = diagnose_suite(name)
        if cache is not None:
            cache.write_text(json.dumps(d))
    return [
        f"Shift diagnosis (ridge on every feature, means over up to five entries and every test "
        f"environment, MSE): held-out training rows {d['p']:.3f}, test {d['q']:.3f}; of the drop "
        f"{d['drop']:+.3f}, change in X {d['x_shift']:+.3f}, change in Y | X {d['y_shift']:+.3f} "
        f"({d['kind']}; overlap of the covariates {d['overlap']:.2f}).",
        "",
    ]


def write_report(root: Path, timings: dict) -> str:
    lines = [
        "# Label-using methods on real data with several labelled training environments",
        "",
        "Generated by `python benchmarks/multienv_real/multienv_real.py` (reading at the end: "
        "`benchmarks/multienv_real/multienv_real_notes.md`). Each suite trains every method on the pooled "
        "rows of "
        "several labelled environments (one r_train entry); the entries are disjoint sets of "
        'environments, so each is one independent unit (`unit = "environment"`, each entry\'s one run), '
        "and every entry is tested on the same test environments, which no entry holds. RMSE is the "
        "mean over the test environments; every method's grid point and set size are chosen by the "
        "`val` rule on held-out training rows. Tests, all two-sided Wilcoxon signed-rank over the "
        "units: each method against `all_features` (the one analysis, `oodfs.report.analysis`, Holm "
        "over every method of the suite); each label-using method against the mean RMSE of the ten "
        "label-free methods on the same unit (Holm over the label-using methods), and the two "
        "families' means against each other. RMSE cells and relative effects: 95 % percentile "
        "bootstrap over the units (inside the metric's range); paired differences: 95 % t interval.",
        "",
    ]
    for name in SUITES:
        path = source(root, name)
        section = cached_section(name, path)
        lines += section[:4] + diagnosis_line(name, path) + section[4:]
    if timings:
        lines += ["## What was run", ""]
        lines += [f"- `{k}`: {v}" for k, v in timings.items()] + [""]
    notes = HERE / "multienv_real_notes.md"
    if notes.is_file():
        lines += [notes.read_text().strip(), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", nargs="?", default="results", type=Path)
    p.add_argument("--run", action="store_true", help="run the suites missing in ROOT first")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--ship", action="store_true", help="write the complete suites' reference results")
    p.add_argument("--timing", action="append", default=[], metavar="SUITE=TEXT",
                   help="a line for 'What was run', e.g. lending-states='41 min wall, --jobs 1'")  # fmt: skip
    args = p.parse_args(argv)
    timings = dict(t.split("=", 1) for t in args.timing)
    if args.run:
        for name, s in run_missing(args.root, args.jobs).items():
            timings.setdefault(name, f"{s / 60:.1f} min wall with --jobs {args.jobs}")
    if args.ship:
        print(f"shipped: {', '.join(ship(args.root)) or 'none'}", file=sys.stderr)
    (HERE / "MULTIENV_REAL.md").write_text(write_report(args.root, timings))
    print(HERE / "MULTIENV_REAL.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
