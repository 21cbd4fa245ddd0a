"""The downstream regressor's two engines side by side: numba (the default) against torch.

Both train the same MLPs (docs/PROTOCOL.md, section 4: same initial weights, validation split,
minibatch order, float32 Adam, schedule and stopping rule); they differ in the order of float
operations. This script measures what that changes, on the data sets of the shipped reference
results (suite ``synthetic``, profile ``default``: 70 training sets), re-evaluating the feature
subsets the reference's methods selected (rankings rebuilt from the stored scores, as the run
drew them) -- no method is refitted.

(a) ``equivalence``: for every data set, the subsets every method's grid points need (k = 5,
    and k = 1..10 on the suite's ood-S curve) are trained with the numba engine under the run's
    downstream seed; the torch engine's numbers are the reference's (for the first ``--check``
    data sets the torch engine is rerun to confirm it reproduces them bit for bit). On the first
    ``--data-sets`` data sets, ``--spread-subsets`` subsets drawn per data set are also trained by
    both engines under another seed: the torch engine's own seed-to-seed spread, against which
    the numba - torch difference is read.
(b) ``verdicts``: the reproduction report's default-profile verdicts (claims 1-3, SRDO's ranking,
    ood-S) derived from the reference as shipped (torch engine) and from the same rows with every
    downstream number (test RMSE per environment, RMSE mean and sd, validation RMSE, and so the
    `val` rule's choice of grid point) replaced by the numba engine's. Needs all 70 data sets of
    part (a).
(c) ``stg``: STG's 5-lambda grid fitted by both of its engines (same draws, another float order)
    on the first ``--stg-data-sets`` data sets: per lambda, the largest |difference| in the gate
    means mu, how often the top-5 set differs, and F1 and rank average under each engine.
(d) ``speed``: one data set's whole downstream batch (every subset its 10 methods need) and STG's
    5-lambda grid, each engine in turn, ``--repeats`` times interleaved, one thread; medians.

    python benchmarks/downstream_engines/bench_downstream_engines.py \
        --out benchmarks/downstream_engines/downstream_engines.md
    python benchmarks/downstream_engines/bench_downstream_engines.py --parts speed --repeats 5

Parts (a) and (b) read the torch engine's numbers from the reference, so it must be one made with
the torch engine: the one shipped before the numba engine became the default, e.g.
``git show 72f00d5:oodfs/run/reference/synthetic-default.parquet > ref/synthetic-default.parquet``
(and the ``.json``), then ``--reference ref/synthetic-default.parquet``. The torch rerun on the
first ``--check`` data sets says whether it is (max |difference| 0).

Output: markdown on stdout (and ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tabulate import tabulate

from oodfs.contract.api import ranking_from_scores
from oodfs.contract.metrics import BUILTIN_METRICS, Evaluation, f1_at_k, rank_average
from oodfs.contract.seeds import derive_seed
from oodfs.contract.task import env_key
from oodfs.report.report import Report
from oodfs.run.dataset import make_dataset
from oodfs.run.downstream import PROFILES, fit_downstream
from oodfs.run.reference import load_reference
from oodfs.run.suite import load_suite

HERE = Path(__file__).resolve().parent
DOWNSTREAM_METRICS = {
    m.name: m for m in BUILTIN_METRICS if m.name in ("rmse", "rmse_mean", "rmse_std", "rmse_val")
}


def data_sets(suite):
    """The suite's data sets (DataKey), ordered so that any prefix spans both settings and every
    r_train before it repeats a run."""
    return sorted(suite.data_keys(), key=lambda k: (k.run, k.r_train, k.setting))


def rows_of(results: pd.DataFrame, key) -> pd.DataFrame:
    return results[
        (results["setting"] == key.setting)
        & (results["r_train"] == env_key(key.r_train))
        & (results["run"] == key.run)
    ]


def selections(ref_rows: pd.DataFrame, suite, key, n_features: int):
    """{(method, point): (scores, ranking, [k...])} as the run drew them (ties from the task seed,
    as oodfs.run.evaluate.fit_method; k as its curve_ks)."""
    out = {}
    first = ref_rows.drop_duplicates(["method", "point"])
    for r in first.itertuples():
        seed = key.seed(suite.seed, r.method)
        scores = np.asarray(json.loads(r.scores), float)
        ranking = ranking_from_scores(scores, derive_seed(seed, int(r.point), "ties"))
        k = min(suite.k, n_features)
        ks = [k]
        if r.method in suite.curve_methods and key.r_train in suite.curve_r_train:
            ks += [kk for kk in range(1, n_features + 1) if kk != k]
        out[r.method, int(r.point)] = (scores, ranking, ks)
    return out


def subset_of(ranking, k) -> tuple[int, ...]:
    return tuple(sorted(int(c) for c in ranking[:k]))


def evaluate(data, subsets, seed, options, engine):
    models = fit_downstream(data.X_train, data.y_train, subsets, seed, **{**options, "engine": engine})
    val = models.rmse(data.X_val, data.y_val)
    tests = np.column_stack([models.rmse(X, y) for _, X, y in data.tests])
    return {s: (float(val[i]), tests[i]) for i, s in enumerate(subsets)}


def stored_values(rows: pd.DataFrame, sel):
    """{subset: (validation RMSE, test RMSE mean)} from the reference rows (torch engine)."""
    out = {}
    k_rows = rows[rows["metric"].isin(["rmse_mean", "rmse_val"])]
    for (method, point, k), g in k_rows.groupby(["method", "point", "k"]):
        _, ranking, _ = sel[method, int(point)]
        v = g.set_index("metric")["value"]
        out[subset_of(ranking, int(k))] = (float(v.get("rmse_val", np.nan)), float(v["rmse_mean"]))
    return out


def patched_rows(rows: pd.DataFrame, sel, values, stable, envs) -> pd.DataFrame:
    """``rows`` with every downstream metric recomputed from ``values`` ({subset: (val, tests)})."""
    rows = rows.copy()
    mask = rows["metric"].isin(list(DOWNSTREAM_METRICS))
    new = []
    for idx, r in zip(rows.index[mask], rows[mask].itertuples()):
        scores, ranking, _ = sel[r.method, int(r.point)]
        val, tests = values[subset_of(ranking, int(r.k))]
        ev = Evaluation(scores, ranking, int(r.k), stable, val, dict(zip(envs, tests)), {})
        v = DOWNSTREAM_METRICS[r.metric].compute(ev)
        new.append(v[r.env] if isinstance(v, dict) else v)
    rows.loc[mask, "value"] = np.asarray(new, float)
    return rows


def rel(a, b):
    return (np.asarray(a) - np.asarray(b)) / np.asarray(b)


def quantiles(x, label):
    x = np.abs(np.asarray(x)) * 100
    return [
        label,
        x.size,
        f"{np.median(x):.2g}",
        f"{np.quantile(x, 0.9):.2g}",
        f"{np.quantile(x, 0.99):.2g}",
        f"{x.max():.2g}",
        f"{np.mean(x == 0) * 100:.0f} %",
    ]


def part_equivalence(args, suite, ref, out):
    options = PROFILES[suite.profile]
    keys = data_sets(suite)[: max(args.data_sets, 70 if "verdicts" in args.parts else 0)]
    results = ref.results
    diffs, spread_t, spread_n, cross = [], [], [], []
    diffs_val, where = [], []
    patched = []
    n_checked = 0
    t0 = time.perf_counter()
    for i, key in enumerate(keys):
        rows = rows_of(results, key)
        data = make_dataset(suite, key)
        envs = [env_key(r) for r, _, _ in data.tests]
        sel = selections(rows, suite, key, data.X_train.shape[1])
        wanted = list(dict.fromkeys(subset_of(rk, k) for _, rk, ks in sel.values() for k in ks))
        seed = key.seed(suite.seed, "downstream")
        torch_vals = stored_values(rows, sel)
        numba_vals = evaluate(data, wanted, seed, options, "numba")
        if n_checked < args.check:
            rerun = evaluate(data, wanted, seed, options, "torch")
            worst = max(
                max(abs(rerun[s][1].mean() - torch_vals[s][1]), abs(rerun[s][0] - torch_vals[s][0]))
                for s in wanted
            )
            out.append(
                f"- check {key.setting}, r_train {key.r_train}, run {key.run}: torch engine rerun vs the "
                f"reference's stored RMSE mean and validation RMSE over {len(wanted)} subsets, "
                f"max |difference| = {worst:.3g}"
            )
            n_checked += 1
        for s in wanted:
            diffs.append(rel(numba_vals[s][1].mean(), torch_vals[s][1]))
            where.append((key, s, numba_vals[s][1].mean(), torch_vals[s][1]))
            diffs_val.append(rel(numba_vals[s][0], torch_vals[s][0]))
        if "verdicts" in args.parts:
            patched.append(patched_rows(rows, sel, numba_vals, data.stable_set, envs))
        if i < args.data_sets:
            rng = np.random.default_rng(derive_seed("bench-engines", i))
            sample = [
                wanted[j]
                for j in sorted(rng.choice(len(wanted), min(args.spread_subsets, len(wanted)), replace=False))
            ]
            seed2 = derive_seed(seed, "bench-engines", "other seed")
            t2 = evaluate(data, sample, seed2, options, "torch")
            n2 = evaluate(data, sample, seed2, options, "numba")
            for s in sample:
                spread_t.append(rel(t2[s][1].mean(), torch_vals[s][1]))
                spread_n.append(rel(n2[s][1].mean(), numba_vals[s][1].mean()))
                cross.append(rel(n2[s][1].mean(), t2[s][1].mean()))
        print(
            f"[{i + 1}/{len(keys)}] {key.setting} r_train {key.r_train} run {key.run}: {len(wanted)} subsets "
            f"({time.perf_counter() - t0:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
    d = np.asarray(diffs)
    out += [
        "",
        f"Per-subset relative difference in test RMSE mean (mean over the 10 test environments), in %; "
        f"{len(keys)} data sets, {d.size} (data set, subset) pairs; spread rows: {args.spread_subsets} "
        f"subsets drawn per data set on the first {args.data_sets}.",
        "",
    ]
    table = [
        quantiles(d, "numba − torch, same seed (all subsets)"),
        quantiles(diffs_val, "numba − torch, same seed: validation RMSE"),
        quantiles(cross, "numba − torch, other seed (sampled)"),
        quantiles(spread_t, "torch: other seed − seed (sampled)"),
        quantiles(spread_n, "numba: other seed − seed (sampled)"),
    ]
    out.append(
        tabulate(
            table,
            headers=[
                "absolute relative difference",
                "pairs",
                "median %",
                "90 % quantile",
                "99 % quantile",
                "max",
                "exactly 0",
            ],
            tablefmt="github",
            disable_numparse=True,
        )
    )
    m, s = d.mean() * 100, d.std(ddof=1) * 100 / np.sqrt(d.size)
    out += [
        "",
        f"Signed numba − torch (bias): mean {m:+.4f} % ± {1.96 * s:.4f} % (95 %, normal), median "
        f"{np.median(d) * 100:+.4f} %; share of subsets where numba is lower: {np.mean(d < 0) * 100:.1f} %, "
        f"higher: {np.mean(d > 0) * 100:.1f} %.",
    ]
    worst = np.argsort(-np.abs(d))[:3]
    out += ["", "Largest differences (same seed):", ""]
    for j in worst:
        key, s, a, b = where[j]
        out.append(
            f"- {key.setting}, r_train {key.r_train}, run {key.run}, columns {list(s)}: numba {a:.4f}, "
            f"torch {b:.4f} ({100 * d[j]:+.1f} %)"
        )
    return pd.concat(patched) if patched else None


def verdict_lines(results: pd.DataFrame, meta):
    sys.path.insert(0, str(HERE.parent / "reproduction"))
    import reproduce

    report = Report(results, "val", meta)
    values = reproduce.selected_values(report)
    c1, tally1 = reproduce.claim1(values, report)
    c2, tally2 = reproduce.claim2(values)
    # the comparisons' rows: table lines after the header (the separator starts with "|-")
    table1 = [line for line in "\n".join(c1).splitlines() if line.startswith("| ")][1:]
    table2 = [line for line in "\n".join(c2).splitlines() if line.startswith("| ")][1:]
    return {
        "claim 1": c1[0],
        "claim 1 table": table1,
        "claim 2": c2[0],
        "claim 2 table": table2,
        "claim 3": reproduce.claim3(values),
        "ranking": reproduce.ranking_check(report),
        "ood-S": reproduce.ood_s_check(report),
    }


def verdict_of(line: str) -> str:
    return line.rstrip(" |").rsplit("|", 1)[-1].strip()


def part_verdicts(ref, patched, out):
    meta = ref.meta["metrics"]
    base = verdict_lines(ref.results, meta)
    new = verdict_lines(patched, meta)
    out += [
        "",
        "Claim 1, torch engine (reference as shipped): " + base["claim 1"],
        "",
        "Claim 1, numba engine: " + new["claim 1"],
    ]
    changed = [
        (a, b) for a, b in zip(base["claim 1 table"], new["claim 1 table"]) if verdict_of(a) != verdict_of(b)
    ]
    out += ["", f"Claim 1 comparisons whose verdict differs: {len(changed)} of {len(base['claim 1 table'])}"]
    out += [f"  - torch: `{a.strip()}`\n    numba: `{b.strip()}`" for a, b in changed]
    out += ["", "Claim 2, torch engine: " + base["claim 2"], "", "Claim 2, numba engine: " + new["claim 2"]]
    changed = [
        (a, b) for a, b in zip(base["claim 2 table"], new["claim 2 table"]) if verdict_of(a) != verdict_of(b)
    ]
    out += ["", f"Claim 2 tests whose verdict differs: {len(changed)} of {len(base['claim 2 table'])}"]
    out += [f"  - torch: `{a.strip()}`\n    numba: `{b.strip()}`" for a, b in changed]
    out += [
        "",
        "Claim 3, torch engine:",
        "",
        *base["claim 3"],
        "",
        "Claim 3, numba engine:",
        "",
        *new["claim 3"],
    ]
    titles = {
        "ranking": "SRDO's ranking (runs with S1..S5 as its top 5)",
        "ood-S": "ood-S (best k per r_train)",
    }
    for key, title in titles.items():
        out += ["", f"{title}, torch engine:", "", base[key], ""]
        out += ["numba engine: the same table."] if base[key] == new[key] else ["numba engine:", "", new[key]]


def part_speed(args, suite, ref, out):
    from oodfs_plugins.baselines.stg import STG

    options = PROFILES[suite.profile]
    key = data_sets(suite)[args.speed_data_set]
    data = make_dataset(suite, key)
    sel = selections(rows_of(ref.results, key), suite, key, data.X_train.shape[1])
    wanted = list(dict.fromkeys(subset_of(rk, k) for _, rk, ks in sel.values() for k in ks))
    seed = key.seed(suite.seed, "downstream")
    stg_seed = key.seed(suite.seed, "stg")
    points = [dict(lam=lam) for lam in STG.grid["lam"]]
    jobs = {
        "downstream, torch": lambda: evaluate(data, wanted, seed, options, "torch"),
        "downstream, numba": lambda: evaluate(data, wanted, seed, options, "numba"),
        "stg grid, torch": lambda: STG.fit_grid(
            data.X_train, data.y_train, [dict(p, engine="torch") for p in points], random_state=stg_seed
        ),
        "stg grid, numba": lambda: STG.fit_grid(data.X_train, data.y_train, points, random_state=stg_seed),
    }
    evaluate(data, wanted[:1], seed, {**options, "max_epochs": 1}, "numba")  # compile (or load the cache)
    STG.fit_grid(data.X_train[:300], data.y_train[:300], points[:1], random_state=0)
    wall = {k: [] for k in jobs}
    cpu = {k: [] for k in jobs}
    for rep in range(args.repeats):
        for name, fn in jobs.items():
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)
        print(f"speed repeat {rep + 1}/{args.repeats}", file=sys.stderr, flush=True)
    med = statistics.median
    table = []
    for part in ("downstream", "stg grid"):
        t, n = f"{part}, torch", f"{part}, numba"
        table.append(
            [
                part,
                f"{med(wall[t]):.2f}",
                f"{med(wall[n]):.2f}",
                f"{med(cpu[t]):.2f}",
                f"{med(cpu[n]):.2f}",
                f"{med(a / b for a, b in zip(cpu[t], cpu[n])):.1f}×",
            ]
        )
    out += [
        "",
        f"{key.setting}, r_train {key.r_train}, run {key.run}: {len(wanted)} subsets (the whole downstream "
        f"batch of that data set, train + evaluation on validation and 10 test sets); STG: the 5-lambda "
        f"grid. {args.repeats} repeats, engines interleaved, 1 thread; load average "
        f"{os.getloadavg()[0]:.1f} at the end.",
        "",
        tabulate(
            table,
            headers=[
                "part",
                "torch wall s",
                "numba wall s",
                "torch CPU s",
                "numba CPU s",
                "median CPU ratio (torch / numba)",
            ],
            tablefmt="github",
            disable_numparse=True,
        ),
    ]


def part_stg(args, suite, out):
    from oodfs_plugins.baselines.stg import STG

    lams = STG.grid["lam"]
    stats_ = {lam: {"diff": [], "top5": 0, "f1": ([], []), "rank": ([], [])} for lam in lams}
    keys = data_sets(suite)[: args.stg_data_sets]
    for i, key in enumerate(keys):
        data = make_dataset(suite, key)
        seed = key.seed(suite.seed, "stg")
        both = [
            STG.fit_grid(
                data.X_train, data.y_train, [dict(lam=lam, engine=e) for lam in lams], random_state=seed
            )
            for e in ("torch", "numba")
        ]
        for lam, t, n in zip(lams, *both):
            st = stats_[lam]
            st["diff"].append(float(np.abs(t - n).max()))
            st["top5"] += set(np.argsort(-t)[:5]) != set(np.argsort(-n)[:5])
            for j, sc in enumerate((t, n)):
                st["f1"][j].append(f1_at_k(sc, data.stable_set, suite.k))
                st["rank"][j].append(rank_average(sc, data.stable_set))
        print(f"stg [{i + 1}/{len(keys)}]", file=sys.stderr, flush=True)
    table = [
        [
            lam,
            f"{max(st['diff']):.2g}",
            f"{np.median(st['diff']):.2g}",
            f"{st['top5']} / {len(keys)}",
            f"{np.mean(st['f1'][0]):.3f} / {np.mean(st['f1'][1]):.3f}",
            f"{np.mean(st['rank'][0]):.3f} / {np.mean(st['rank'][1]):.3f}",
        ]
        for lam, st in stats_.items()
    ]
    out += [
        "",
        f"First {len(keys)} data sets of the suite (both settings), the task's STG seed; mu is O(0.1-1).",
        "",
        tabulate(
            table,
            headers=[
                "lambda",
                "max |mu diff|",
                "median",
                "top-5 set differs",
                "F1 torch / numba",
                "rank avg",
            ],
            tablefmt="github",
            disable_numparse=True,
        ),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--parts",
        default="equivalence,verdicts,stg,speed",
        help="comma-separated: equivalence, verdicts, stg, speed",
    )
    ap.add_argument(
        "--data-sets", type=int, default=40, help="data sets with the seed-spread study (default 40)"
    )
    ap.add_argument(
        "--spread-subsets", type=int, default=12, help="subsets drawn per data set for the spread"
    )
    ap.add_argument(
        "--check", type=int, default=2, help="data sets on which the torch engine is rerun (default 2)"
    )
    ap.add_argument("--repeats", type=int, default=5, help="speed: interleaved repeats (default 5)")
    ap.add_argument("--stg-data-sets", type=int, default=10, help="stg: data sets (default 10)")
    ap.add_argument("--speed-data-set", type=int, default=0, help="speed: index of the data set (default 0)")
    ap.add_argument("--out", help="also write the markdown to this file")
    ap.add_argument(
        "--reference", help="reference results made with the torch engine (default: the shipped one)"
    )
    ap.add_argument("--save-rows", help="verdicts: also save the numba engine's result rows (parquet) here")
    ap.add_argument("--rows", help="verdicts: the numba engine's rows saved by --save-rows (skips part a)")
    args = ap.parse_args(argv)
    args.parts = [p.strip() for p in args.parts.split(",")]
    torch.set_num_threads(1)
    suite = load_suite("synthetic")
    ref = load_reference("synthetic", "default", args.reference)
    out = [
        "# Downstream engines: numba against torch",
        "",
        f"Reference: {ref.label}; torch {torch.__version__}; load average {os.getloadavg()[0]:.1f} at start. "
        "`python benchmarks/downstream_engines/bench_downstream_engines.py "
        f"{' '.join(sys.argv[1:] if argv is None else argv)}`",
    ]
    patched = None
    if args.rows:
        patched = pd.read_parquet(args.rows)
    elif "equivalence" in args.parts or "verdicts" in args.parts:
        out += ["", "## (a) Equivalence", ""]
        patched = part_equivalence(args, suite, ref, out)
    if "verdicts" in args.parts:
        if args.save_rows:
            patched.to_parquet(args.save_rows)
        out += ["", "## (b) The reproduction report's default-profile verdicts under both engines"]
        part_verdicts(ref, patched, out)
    if "stg" in args.parts:
        out += ["", "## (c) STG: numba engine against torch engine"]
        part_stg(args, suite, out)
    if "speed" in args.parts:
        out += ["", "## (d) Speed"]
        part_speed(args, suite, ref, out)
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
