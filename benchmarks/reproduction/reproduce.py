"""Reproduce the paper's synthetic experiment and write the reproduction report.

    python benchmarks/reproduction/reproduce.py --jobs 2                    # run what is missing, then report
    python benchmarks/reproduction/reproduce.py --report-only               # report on the existing runs
    python benchmarks/reproduction/reproduce.py --site-only                 # only the results site

Runs (each resumable, each its own results folder under --root):
  synthetic            the paper's grid, profile `default`: the shipped reference results, copied
                       (``oodfs bench --reference``), the full grid that CI replays
  synthetic-paper      the same grid, profile `paper` (the paper's literal settings)
  synthetic-variants   the robustness suite (other data processes), profile `default`

Writes ``benchmarks/reproduction/REPRODUCTION.md`` and copies the figures to
``benchmarks/reproduction/figures/``. Every verdict cites a paired test, an effect size with its
interval and the number of pairs; where the data cannot decide, it says "not distinguishable".

Also writes the results site ``benchmarks/site/`` (``oodfs report``: open ``index.html``) of the
synthetic suite's runs, both profiles side by side. Where those runs are not on this machine
(they are not in the repository), the site shows the reference results shipped with oodfs (the
full default-profile grid, copied into ``ROOT/reference`` by ``oodfs bench --reference``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from oodfs.report import stats
from oodfs.report.compare import comparison_markdown, selected_values
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report
from oodfs.report.site import build_site
from oodfs.results.store import ResultStore, load_results

HERE = Path(__file__).resolve().parent
SITE = HERE.parent / "site"  # the results page stays at benchmarks/site/, where README links it
#: figure files of the committed site: SVG only (what the page shows; PNG and PDF of the main
#: figures are in benchmarks/reproduction/figures/), so that the site stays a few MB
SITE_FORMATS = ("svg",)
IW = ("dwr", "srdo")
PAPER_METHODS = ("dwr", "srdo", "mi", "correlation", "gb", "xgb", "rf", "ols", "lasso", "stg")
RUNS = {
    # the default profile's full grid ships as the synthetic reference, which CI replays: the
    # report takes it rather than running it again, so that what it states is what the reference
    # gives (tests/test_reproduction.py checks the committed report against it)
    "default": ("synthetic", ["--reference"]),
    # the paper's ten methods: under the paper profile SVI runs the SVI code's own blocks (up to
    # 20 000 Adam steps of the community DWR and 8 000 gate steps per round), about 80 s per data
    # set at n = 10 000 against 6 s (BENCH_SVI.md); SVI.md tests SVI under both profiles
    "paper": (
        "synthetic",
        ["--profile", "paper", "--methods", ",".join(PAPER_METHODS)],
    ),
    "variants": ("synthetic-variants", []),
}
ALPHA = 0.05


def run(root: Path, name: str, jobs: int, narrow: list[str]) -> Path:
    suite, extra = RUNS[name]
    out = root / name
    copy = "--reference" in extra
    if copy:
        if (out / "results.sqlite").exists():  # a copy is whole or absent: nothing to resume
            return out
        narrow = []  # the reference is the full grid
    cmd = [
        "oodfs",
        "bench",
        "--suite",
        suite,
        "--jobs",
        str(jobs),
        "--out",
        str(out),
        "--quiet",
        *extra,
        *narrow,
    ]
    if (out / "results.sqlite").exists():  # (a copy that exists returned above)
        cmd.append("--resume")
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    timing = out / "wall.json"
    previous = json.loads(timing.read_text()) if timing.exists() and "--resume" in cmd else {"seconds": 0.0}
    timing.write_text(
        json.dumps(
            {
                "seconds": previous["seconds"] + wall,
                "command": " ".join(cmd[:-1] if "--resume" in cmd else cmd),
            }
        )
    )
    return out


def wall_of(out: Path) -> str:
    timing = out / "wall.json"
    if not timing.exists():
        return "wall time not recorded"
    t = json.loads(timing.read_text())
    if "--reference" in t["command"]:
        return f"the shipped reference results (`{t['command']}`), the suite's full grid, which CI replays"
    return f"`{t['command']}`, wall time **{t['seconds'] / 60:.1f} min** on this 2-core machine"


def fmt_p(p: float) -> str:
    return "n/a" if not np.isfinite(p) else f"{p:.2g}"


def directed(r, a: str) -> tuple[float, float, float]:
    """A pairwise_tests row's effect as ``a`` − the other method: (mean difference, low, high)."""
    sign = 1 if r["method_a"] == a else -1
    lo, hi = sorted([sign * r["diff_low"], sign * r["diff_high"]])
    return sign * r["mean_diff"], lo, hi


# -- claims --------------------------------------------------------------------------------
def claim1(values: pd.DataFrame, report: Report) -> tuple[list[str], dict]:
    """Each IW method against each baseline, per setting and headline metric: paired Wilcoxon
    over (r_train, run), Holm over the 2 x 8 comparisons of a (setting, metric)."""
    tally = {"IW better": 0, "baseline better": 0, "not distinguishable": 0}
    rows = []
    for setting in dict.fromkeys(values["setting"]):
        for metric in report.headline:
            info = report.metrics[metric]
            g = values[values["setting"] == setting]
            pw = stats.pairwise_tests(g, metric, info.lower_is_better, within=("setting",), correction="none")
            pw = pw[pw["method_a"].isin(IW) ^ pw["method_b"].isin(IW)]
            pw = pw.assign(p_adjusted=stats.adjust_pvalues(pw["p"], "holm"))
            for _, r in pw.iterrows():
                iw, base = (r.method_a, r.method_b) if r.method_a in IW else (r.method_b, r.method_a)
                diff, lo, hi = directed(r, iw)
                if r.p_adjusted < ALPHA:
                    better_iw = (diff < 0) == info.lower_is_better
                    verdict = "IW better" if better_iw else "baseline better"
                else:
                    verdict = "not distinguishable"
                tally[verdict] += 1
                rows.append(
                    [
                        setting,
                        info.title,
                        iw,
                        base,
                        r.n_pairs,
                        f"{diff:+.3f}",
                        f"[{lo:+.3f}, {hi:+.3f}]",
                        fmt_p(r.p_adjusted),
                        verdict,
                    ]
                )
    table = tabulate(
        rows,
        headers=[
            "setting",
            "metric",
            "IW",
            "baseline",
            "pairs",
            "IW − baseline",
            "95 % t interval",
            "p (Holm)",
            "verdict",
        ],
        tablefmt="github",
        disable_numparse=True,
    )
    n = sum(tally.values())
    summary = (
        f"IW significantly better in **{tally['IW better']} of {n}** (IW method, baseline, setting, metric) "
        f"comparisons, a baseline significantly better in **{tally['baseline better']}**, not "
        f"distinguishable in **{tally['not distinguishable']}**."
    )
    return [summary, "", "<details><summary>All comparisons</summary>", "", table, "", "</details>"], tally


def claim2(values: pd.DataFrame) -> tuple[list[str], dict]:
    """Every method gets worse as r_train grows: Page's trend test over r_train, blocked by run,
    one test per (setting, method) for rank average (up = worse) and F1 (down = worse)."""
    rows, tally = [], {}
    for metric, lower in (("rank_avg", True), ("f1", False)):
        if metric not in values:
            continue
        tr = stats.trend_test(
            values.dropna(subset=[metric]),
            metric,
            within=("setting", "method"),
            lower_is_better=lower,
            test="page",
            block="run",
        )
        for r in tr.itertuples():
            tally[r.verdict] = tally.get(r.verdict, 0) + 1
            rows.append(
                [
                    r.setting,
                    r.method,
                    metric,
                    r.n,
                    f"{r.slope:+.3f}" if np.isfinite(r.slope) else "",
                    f"[{r.slope_low:+.3f}, {r.slope_high:+.3f}]" if np.isfinite(r.slope_low) else "",
                    fmt_p(r.p),
                    r.verdict,
                ]
            )
    table = tabulate(
        rows,
        headers=[
            "setting",
            "method",
            "metric",
            "values",
            "Theil–Sen slope per unit r_train",
            "95 % interval",
            "p (Page)",
            "verdict",
        ],
        tablefmt="github",
        disable_numparse=True,
    )
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(tally.items(), key=lambda kv: str(kv[0])))
    return [
        f"Verdicts over (setting, method, metric): {summary}.",
        "",
        "<details><summary>All trend tests</summary>",
        "",
        table,
        "",
        "</details>",
    ], tally


def paired(values: pd.DataFrame, a: str, b: str, metric: str, lower: bool, mask=None) -> tuple[str, str]:
    """One paired comparison a vs b over every (setting, r_train, run) in ``mask``."""
    v = values if mask is None else values[mask]
    v = v[v["method"].isin([a, b])].assign(block=lambda d: d["setting"] + "/" + d["r_train"].astype(str))
    pw = stats.pairwise_tests(v.assign(all="all"), metric, lower, within=("all",), pair_on=("block", "run"))
    if pw.empty:
        return "no data", "not tested"
    r = pw.iloc[0]
    diff, lo, hi = directed(r, a)
    verdict = r["verdict"].replace(" better", " better") if r["p_adjusted"] < ALPHA else "not distinguishable"
    return (
        f"{a} − {b} = {diff:+.3f} [{lo:+.3f}, {hi:+.3f}] over {int(r['n_pairs'])} pairs, Wilcoxon p = "
        f"{fmt_p(r['p'])}",
        verdict,
    )


def claim3(values: pd.DataFrame) -> list[str]:
    lines = []
    numeric_r = pd.to_numeric(values["r_train"], errors="coerce")
    parts = [
        ("SRDO better than DWR overall (all settings and r_train)", None),
        (
            "SRDO much better than DWR in `mlp` at large r_train (r_train ≥ 2.5)",
            (values["setting"] == "mlp") & (numeric_r >= 2.5),
        ),
    ]
    for title, mask in parts:
        lines.append(f"- **{title}**:")
        for metric, lower in (("rank_avg", True), ("f1", False), ("rmse_mean", True)):
            if metric in values:
                text, verdict = paired(values, "srdo", "dwr", metric, lower, mask)
                lines.append(f"  - {metric}: {text} — **{verdict}**")
    poly = values[values["setting"] == "poly"]
    if not poly.empty and "f1" in poly:
        f1 = stats.cell_summary(poly.loc[poly["method"] == "dwr", "f1"], method="bootstrap")
        best = stats.best_set(poly, "f1", False, within=("setting",))
        in_best = bool(best.loc[best["method"] == "dwr", "in_best_set"].any())
        lines.append(
            f"- **DWR does well in `poly`**: F1 {f1.mean:.3f} [{f1.low:.3f}, {f1.high:.3f}] over {f1.n} "
            f"(r_train, run) values; {'in' if in_best else 'not in'} the best set for F1 "
            "(Wilcoxon against the best, Holm)."
        )
    return lines


def ranking_check(report: Report) -> str:
    """SRDO's top five = S1..S5 (by feature name, whatever the column layout) per setting and r_train."""
    chosen = report.chosen
    s = chosen[
        (chosen["method"] == "srdo")
        & pd.to_numeric(chosen["r_train"], errors="coerce").isin([1.5, 2.0, 2.5, 3.0])
    ]
    if s.empty:
        return "no SRDO results"

    def top5_is_s(row) -> bool:
        scores, names = np.array(json.loads(row["scores"])), json.loads(row["feature_names"])
        top = {names[j] for j in np.argsort(-scores, kind="stable")[:5]}
        return top == {f"S{i}" for i in range(1, 6)}

    by = s.assign(ok=s.apply(top5_is_s, axis=1)).groupby(["setting", "r_train"])["ok"].agg(["sum", "count"])
    rows = [[setting, r, f"{int(v['sum'])}/{int(v['count'])}"] for (setting, r), v in by.iterrows()]
    return tabulate(
        rows, headers=["setting", "r_train", "runs with S1..S5 as SRDO's top 5"], tablefmt="github"
    )


def ood_s_check(report: Report) -> str:
    c = report.curves
    if c.empty:
        return "no curve results"
    rows = []
    for (setting, method, r), g in c.groupby(["setting", "method", "r_train"]):
        means = g[g["metric"] == "rmse_mean"].groupby("k")["value"].mean()
        sds = g[g["metric"] == "rmse_std"].groupby("k")["value"].mean()
        rows.append(
            [
                setting,
                method,
                r,
                int(means.idxmin()),
                int(sds.idxmin()),
                f"{means.get(5, np.nan):.3f}",
                f"{means.min():.3f}",
                f"{means.iloc[-1]:.3f}",
            ]
        )
    return tabulate(
        rows,
        headers=[
            "setting",
            "ranking",
            "r_train",
            "best k (RMSE mean)",
            "best k (RMSE sd)",
            "RMSE mean @5",
            "min RMSE mean",
            "RMSE mean @10",
        ],
        tablefmt="github",
    )


def profile_by_part(results: pd.DataFrame) -> str:
    """Worker seconds by part, summed over all tasks (the runner times each part)."""
    tasks = results.groupby(["setting", "r_train", "run", "method"]).first().reset_index()
    data = tasks.groupby(["setting", "r_train", "run"])["data_seconds"].max()  # with the test draws
    stored = data.notna().any()  # a reference does not store the draws' seconds
    rows = [["data (train + validation + test environments)", data.sum()]] if stored else []
    by_method = tasks.groupby("method")[["fit_seconds", "downstream_seconds"]].sum()
    for method, r in by_method.sort_values("fit_seconds", ascending=False).iterrows():
        rows.append([f"{method}: fit (whole grid)", r["fit_seconds"]])
    rows.append(["downstream regressor (one batch per data set)", by_method["downstream_seconds"].sum()])
    total = sum(r[1] for r in rows)
    rows = [[name, f"{sec:.0f}", f"{100 * sec / total:.1f} %"] for name, sec in rows]
    rows.append(["total (worker seconds)", f"{total:.0f}", "100 %"])
    table = tabulate(rows, headers=["part", "seconds", "share"], tablefmt="github")
    return (
        table
        if stored
        else table + "\n\nThe data draws are not in the table: a reference does not store their seconds."
    )


def averaged_side_by_side(reports: dict[str, Report]) -> str:
    """The averaged leaderboard numbers of several profiles, side by side."""
    rows = []
    cells = {name: Leaderboard(r).cells for name, r in reports.items()}
    first = next(iter(reports.values()))
    for setting in dict.fromkeys(first.chosen["setting"]):
        for method in dict.fromkeys(first.chosen["method"]):
            row = [setting, method]
            for name, c in cells.items():
                for metric in ("rank_avg", "f1", "rmse_mean"):
                    x = c[
                        (c["setting"] == setting)
                        & (c["method"] == method)
                        & (c["metric"] == metric)
                        & (c["r_train"] == "all")
                    ]
                    row.append(
                        ""
                        if x.empty
                        else f"{x['mean'].iloc[0]:.3f} [{x['low'].iloc[0]:.3f}, {x['high'].iloc[0]:.3f}]"
                    )
            rows.append(row)
    headers = ["setting", "method"] + [
        f"{name}: {m}" for name in reports for m in ("rank avg", "F1", "RMSE mean")
    ]
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def profile_effect(default: pd.DataFrame, paper: pd.DataFrame) -> str:
    """Per (setting, method, metric): paper − default, paired over the (r_train, run) cells both
    profiles share (the same data), Wilcoxon, Holm over the whole table."""
    both = pd.concat(
        [
            default.assign(method=default["method"] + "@default"),
            paper.assign(method=paper["method"] + "@paper"),
        ]
    )
    rows = []
    for metric, lower in (("rank_avg", True), ("f1", False), ("rmse_mean", True)):
        for setting in dict.fromkeys(default["setting"]):
            for method in dict.fromkeys(default["method"]):
                v = both[
                    (both["setting"] == setting)
                    & both["method"].isin([f"{method}@paper", f"{method}@default"])
                ]
                pw = stats.pairwise_tests(v, metric, lower, within=("setting",), correction="none")
                if pw.empty:
                    continue
                r = pw.iloc[0]
                diff, lo, hi = directed(r, f"{method}@paper")
                rows.append(
                    [setting, method, metric, int(r["n_pairs"]), diff, lo, hi, r["p"], (diff < 0) == lower]
                )
    table = pd.DataFrame(
        rows, columns=["setting", "method", "metric", "pairs", "diff", "low", "high", "p", "paper_better"]
    )
    table["p_holm"] = stats.adjust_pvalues(table["p"].fillna(1.0), "holm")
    table["verdict"] = np.where(
        table["p_holm"] >= ALPHA,
        "not distinguishable",
        np.where(table["paper_better"], "paper better", "default better"),
    )
    shown = table[(table["p_holm"] < ALPHA) | table["method"].isin(IW)]
    out = [
        [
            r.setting,
            r.method,
            r.metric,
            r.pairs,
            f"{r.diff:+.3f}",
            f"[{r.low:+.3f}, {r.high:+.3f}]",
            fmt_p(r.p_holm),
            r.verdict,
        ]
        for r in shown.itertuples()
    ]
    hidden = len(table) - len(shown)
    note = (
        f"\n\nThe other {hidden} (setting, method, metric) comparisons of the baselines: not distinguishable."
        if hidden
        else ""
    )
    return (
        tabulate(
            out,
            headers=[
                "setting",
                "method",
                "metric",
                "pairs",
                "paper − default",
                "95 % t interval",
                "p (Holm)",
                "verdict",
            ],
            tablefmt="github",
            disable_numparse=True,
        )
        + note
    )


def variants_table(values: pd.DataFrame) -> str:
    """Per variant: claim 1 (each IW method vs the best baseline by mean, on F1 and RMSE mean) and
    claim 3a (SRDO vs DWR on F1), each as a paired test over (r_train, run)."""
    rows = []
    for setting in dict.fromkeys(values["setting"]):
        v = values[values["setting"] == setting]
        row = [setting]
        for metric, lower in (("f1", False), ("rmse_mean", True)):
            base = v[~v["method"].isin(IW)].groupby("method")[metric].mean()
            best_base = base.idxmin() if lower else base.idxmax()
            for iw in IW:
                text, verdict = paired(v, iw, best_base, metric, lower)
                row.append(f"{verdict} ({text.split(' over')[0].split('= ')[1]}; vs {best_base})")
        text, verdict = paired(v, "srdo", "dwr", "f1", False)
        row.append(f"{verdict} ({text.split(' over')[0].split('= ')[1]})")
        rows.append(row)
    return tabulate(
        rows,
        headers=[
            "variant",
            "dwr vs best baseline, F1",
            "srdo vs best baseline, F1",
            "dwr vs best baseline, RMSE mean",
            "srdo vs best baseline, RMSE mean",
            "srdo vs dwr, F1",
        ],
        tablefmt="github",
        disable_numparse=True,
    )


DISCUSSION = (
    "<!-- discussion: written by hand, kept when the report is regenerated -->",
    "<!-- /discussion -->",
)
PROTOCOL_NOTES = ("<!-- protocol: written by hand -->", "<!-- /protocol -->")
SPEED_NOTES = ("<!-- speed: written by hand -->", "<!-- /speed -->")


def _kept(report: Path, markers) -> str:
    if not report.exists():
        return ""
    text = report.read_text()
    start, end = text.find(markers[0]), text.find(markers[1])
    return text[start : end + len(markers[1])] if 0 <= start < end else ""


def write_site(root: Path) -> Path:
    """The results site of the synthetic runs under ``root`` (default and paper profiles side by
    side), or, without them, of the shipped reference results."""
    folders = [root / name for name in ("default", "paper") if (root / name / "results.sqlite").exists()]
    if not folders:
        reference = root / "reference"
        if not (reference / "results.sqlite").exists():
            cmd = [
                "oodfs",
                "bench",
                "--suite",
                "synthetic",
                "--reference",
                "--out",
                str(reference),
                "--quiet",
            ]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        folders = [reference]
    index = build_site(folders, SITE, selection="val", formats=SITE_FORMATS, answer=across_shift_answer(root))
    print(f"wrote {index} from {', '.join(map(str, folders))}")
    return index


def across_shift_answer(root: Path):
    """The page's answer across suites of selection against the kind of shift, computed by
    benchmarks/selection_vs_shift/selection_vs_shift.py (its synthetic run under
    ROOT/../selection_vs_shift)."""
    import importlib.util

    path = HERE.parent / "selection_vs_shift" / "selection_vs_shift.py"
    spec = importlib.util.spec_from_file_location("selection_vs_shift", path)
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    return lambda fig_dir: study.page_answer(root.parent / "selection_vs_shift", fig_dir)


def claim_sections(report: Report, oracle: Report) -> list[str]:
    """The report's sections on the paper's three claims (its default profile: the results of
    ``report`` under the rule ``val``, and of ``oracle``), as lines; tests/test_reproduction.py
    checks that the committed report's are what the shipped reference gives."""
    values = selected_values(report)
    c1, _ = claim1(values, report)
    c2, _ = claim2(values)
    c1_oracle, _ = claim1(selected_values(oracle), oracle)
    return [
        "## Claim 1: SRDO and DWR select the stable set best and predict best out of distribution",
        "",
        "Each IW method against each baseline, per setting and metric (Holm over the 16 comparisons of a "
        "setting and metric); model selection `val`.",
        "",
        *c1,
        "",
        "Under the `oracle` rule (an upper bound that peeks at the test environments): " + c1_oracle[0],
        "",
        "## Claim 2: every method gets worse as r_train grows",
        "",
        "Page's trend test over r_train, blocked by run (the runs share their test data and, in `mlp`, their "
        "network across r_train, so the points are not independent); one test per (setting, method, "
        "metric); the claim holds for a method only if its own test shows the worsening.",
        "",
        *c2,
        "",
        "## Claim 3: SRDO against DWR",
        "",
        *claim3(values),
        "",
    ]


def leaderboard_section(report: Report) -> str:
    """The default profile's leaderboard, its title dropped and its sections one level down."""
    return Leaderboard(report).to_markdown().split("\n", 1)[1].replace("\n## ", "\n### ")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--root", default="results/reproduction", help="folder of the three runs")
    parser.add_argument("--only", choices=list(RUNS), action="append", help="run only these (repeatable)")
    parser.add_argument("--report-only", action="store_true", help="write the report from the existing runs")
    parser.add_argument(
        "--runs",
        help="runs per (setting, r_train) instead of the suite's (a smaller grid; "
        "a later call without it resumes and adds the missing runs)",
    )
    parser.add_argument("--r-train", help="comma-separated r_train values instead of the suite's")
    parser.add_argument(
        "--site-only", action="store_true", help="write only the results site (benchmarks/site/)"
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="An input array is constant")
    root = Path(args.root)
    if args.site_only:
        write_site(root)
        return
    if not args.report_only:
        narrow = (["--runs", args.runs] if args.runs else []) + (
            ["--r-train", args.r_train] if args.r_train else []
        )
        for name in args.only or RUNS:
            run(root, name, args.jobs, narrow)
    fig_dir = HERE / "figures"
    fig_dir.mkdir(exist_ok=True)

    default_dir = root / "default"
    # the paper's claims are about its ten methods; SVI and SVI^d, which the suite also runs, are
    # tested in SVI.md (the figures, drawn from the whole folder, show them too)
    whole = load_results(default_dir)
    results = whole[whole["method"].isin(PAPER_METHODS)]
    report = Report(results, "val", ResultStore(default_dir).get_meta("metrics"))
    oracle = Report(results, "oracle", ResultStore(default_dir).get_meta("metrics"))
    subprocess.run(["oodfs", "plot", str(default_dir)], check=True, stderr=subprocess.DEVNULL)
    subprocess.run(
        ["oodfs", "plot", str(default_dir), "--selection", "oracle"], check=True, stderr=subprocess.DEVNULL
    )
    compare_text, _ = comparison_markdown(report, fig_dir)
    for f in (default_dir / "figures").iterdir():
        shutil.copy(f, fig_dir / f.name)
    versions = ResultStore(default_dir).invocations()[-1]["versions"]
    n_tasks = whole.groupby(["setting", "r_train", "run", "method"]).ngroups
    n_failed = int(
        (whole.groupby(["setting", "r_train", "run", "method"])["status"].first() == "failed").sum()
    )
    others = sorted(set(whole["method"]) - set(PAPER_METHODS))
    studies = "each has its study in benchmarks/README.md"
    read = (
        f"; this report reads the paper's ten methods, not {', '.join(others)}: {studies}" if others else ""
    )
    also = f" (the run also fitted {', '.join(others)}: {studies})" if others else ""

    parts = [
        "# Reproduction of the synthetic experiment (Xu et al., ICML 2022)",
        "",
        f"Default profile: {wall_of(default_dir)} ({n_tasks} tasks, {n_failed} failed{read}).",
        f"Versions: {', '.join(f'{k} {v}' for k, v in sorted(versions.items()))}.",
        "Regenerate: `python benchmarks/reproduction/reproduce.py --jobs 2` (runs what is missing, "
        "resumable), or "
        "`--report-only`. The protocol, and every choice the paper leaves open, is in "
        "[docs/PROTOCOL.md](../../docs/PROTOCOL.md).",
        "",
        "How to read the verdicts: every comparison is a two-sided Wilcoxon signed-rank test paired over "
        "the (r_train, run) blocks both methods share (the same training and test data), Holm-corrected "
        "within the "
        'family named; the effect is the mean paired difference with its 95 % t interval. "Not '
        'distinguishable" '
        "means the test could not separate the methods at alpha 0.05; it is not a tie and not a win.",
        "",
        *claim_sections(report, oracle),
    ]
    discussion = _kept(HERE / "REPRODUCTION.md", DISCUSSION)
    if discussion:
        parts += [discussion, ""]
    paper_dir = root / "paper"
    if (paper_dir / "results.sqlite").exists():
        paper_results = load_results(paper_dir)
        paper = Report(paper_results, "val", ResultStore(paper_dir).get_meta("metrics"))
        pv = selected_values(paper)
        # the default profile on exactly the paper run's (setting, r_train, run) cells: like for like
        keys = ["setting", "r_train", "run"]
        cells = paper_results[keys].drop_duplicates()
        matched = Report(results.merge(cells, on=keys), "val", ResultStore(default_dir).get_meta("metrics"))
        mv = selected_values(matched)
        grid = ", ".join(f"{k} {sorted(set(cells[k]))}" for k in keys)
        parts += [
            "## Does the result depend on implementation choices?",
            "",
            f"The `paper` profile ({wall_of(paper_dir)}; grid: {grid}): the paper's literal settings where "
            "it states them (docs/PROTOCOL.md, section 5), beside the `default` profile on exactly the same "
            "(setting, r_train, run) cells. Cells: mean [95 % percentile-bootstrap interval] over runs, each "
            "run averaged over r_train (the leaderboard's interval: it stays inside the metric's range); "
            "model selection `val`.",
            "",
            averaged_side_by_side({"default": matched, "paper": paper}),
            "",
            "The profile's effect per method: paper − default on the same (r_train, run) cells, paired "
            "Wilcoxon, Holm over all (setting, method, metric); DWR and SRDO always shown, a baseline only "
            "where the profile changed it significantly.",
            "",
            profile_effect(mv, pv),
            "",
            "Claim 1 on these cells, default profile: " + claim1(mv, matched)[0][0],
            "",
            "Claim 1 on these cells, paper profile: " + claim1(pv, paper)[0][0],
            "",
            "Claim 3 on these cells, default profile:",
            "",
            *claim3(mv),
            "",
            "Claim 3 on these cells, paper profile:",
            "",
            *claim3(pv),
            "",
        ]
        protocol_notes = _kept(HERE / "REPRODUCTION.md", PROTOCOL_NOTES)
        if protocol_notes:
            parts += [protocol_notes, ""]
    variants_dir = root / "variants"
    if (variants_dir / "results.sqlite").exists():
        vrep = Report(load_results(variants_dir), "val", ResultStore(variants_dir).get_meta("metrics"))
        parts += [
            "## Robustness over data processes",
            "",
            f"Suite `synthetic-variants` ({wall_of(variants_dir)}): one row per variant of the data process "
            "(see oodfs/suites/synthetic-variants.toml). Each cell: the verdict of a paired Wilcoxon test "
            "over (r_train, run) at alpha 0.05, not corrected for the table's many cells (read a single "
            "borderline cell with care), and the mean paired difference with its 95 % t interval; the best "
            "baseline is the one with the best mean in that variant. `poly-fixed-layout` and `poly-pool` "
            "keep the paper's data process and undo one of oodfs's protocol choices each.",
            "",
            variants_table(selected_values(vrep)),
            "",
        ]
    theory = HERE.parent / "theory" / "THEORY.md"
    if theory.exists():
        parts += [
            "## The theorems, checked numerically",
            "",
            "See [THEORY.md](../theory/THEORY.md): the coefficient error of weighted least squares against "
            "n for the "
            "oracle weights, DWR and SRDO, against what the paper's theorems predict.",
            "",
        ]
    parts += [
        "## Method comparisons (Friedman, pairwise tests, critical-difference diagrams)",
        "",
        compare_text.replace("](cd_", "](figures/cd_"),
        "",
        "## SRDO's ranking (the paper's feature-ranking table)",
        "",
        ranking_check(report),
        "",
        "Full rankings: [figures/feature_ranking-val.md](figures/feature_ranking-val.md).",
        "",
        "## RMSE against the number of selected features (Figure ood-S)",
        "",
        "The paper's claim: k = 5 (the minimal stable set) is best.",
        "",
        ood_s_check(report),
        "",
        "![ood-S](figures/ood_s-val.png)",
        "",
        "## Figure 1",
        "",
        "![Figure 1](figures/figure1-val.png)",
        "",
        "Under the oracle rule: [figures/figure1-oracle.png](figures/figure1-oracle.png).",
        "",
        "## Profile by part (default profile)",
        "",
        f"The paper's ten methods{also}:",
        "",
        profile_by_part(results),
        "",
    ]
    speed_notes = _kept(HERE / "REPRODUCTION.md", SPEED_NOTES)
    if speed_notes:
        parts += [speed_notes, ""]
    parts += ["## Leaderboard (default profile, model selection: val)", ""]
    parts.append(leaderboard_section(report))
    (HERE / "REPRODUCTION.md").write_text("\n".join(parts) + "\n")
    print(f"wrote {HERE / 'REPRODUCTION.md'}")
    write_site(root)


if __name__ == "__main__":
    sys.exit(main())
