"""DWR at high dimension, and what DWR, SRDO, OLS and LASSO cost as n and d grow.

    python benchmarks/bench_scale.py table [--n 20000] [--d 10 50 200] [--converge]
    python benchmarks/bench_scale.py paper-grid [--n 10000] [--runs 2]
    python benchmarks/bench_scale.py cost  [--repeats 2] 2> cost.log
    python benchmarks/bench_scale.py cost --from-log cost.log   # summary of an unfinished run

Data: the synthetic generator, setting ``poly``, r_train = 2.5, 5 stable features S1..S5 and
d - 5 others V1..V_{d-5} (V4, V5 spurious, as in the paper), data seed 0; stable set from the
environment. Notes and measured numbers: benchmarks/SCALE.md.

``table``: DWR's default grid point (``lambda1 = lambda2 = 0.05``, L-BFGS-B, tol 5e-3) at each d:
iterations, objective, largest |corr| between two features before -> after, ``converged_``,
``corr_kept`` (and whether its declared suspect rule flags it), ESS fraction, fit seconds, and the
F1 / rank average of the ``dwr`` selector's top 5. ``--converge`` adds the same fit run to scipy's
own convergence (tol 0, cap 20000): does the default stop short of the objective's minimum?
"cov term (V4-V5)": the objective's covariance term sum_{i != j} Cov_w(X_i, X_j)^2 and, in
brackets, the part of it from the spurious pair V4-V5 (the correlation DWR is there to remove),
under uniform weights (row "uniform") and under DWR's.

``paper-grid``: the paper's d = 10 data (poly and mlp, every r_train of the synthetic suite, runs
0..runs-1, n = 10000): does the ``corr_kept`` rule flag any of DWR's default fits (a false alarm on
the data where DWR is known to work), how many meet the tolerance, mean F1.

``cost``: the default grid point of each selector (``dwr``, ``srdo`` = weights + weighted least
squares; ``ols``, ``lasso`` as cheap references) fitted once per (n, d), all four in one fresh
process per point and repeat (order reversed on odd repeats), along
n at d = 50 and along d at n = 5000. Wall and CPU seconds of ``fit`` and its peak memory (the
process's peak resident set during the fit minus the resident set before it; the kernel's peak
counter is reset before the fit). Memory that an earlier fit in the same process freed can be
reused without raising the counter, so a figure is a lower bound; the table shows the largest over
repeats, and DWR runs first on even repeats (its figure is exact there). BLAS and torch are
limited to one thread (the runner parallelises over tasks). Exponents: least-squares slope of
log(CPU s) on log(n) or log(d); for DWR also per L-BFGS-B iteration (its iteration count varies
with the data). Times: medians over ``--repeats`` runs, interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from tabulate import tabulate  # noqa: E402

K = 5
METHODS = ("dwr", "srdo", "ols", "lasso")
N_ALONG = (2000, 5000, 20000, 50000)
D_AT_N = 50
D_ALONG = (10, 50, 100, 200)
N_AT_D = 5000
R_TRAIN = (1.5, 1.7, 2.0, 2.3, 2.5, 2.7, 3.0)  # the synthetic suite's r_train grid


def make_data(n: int, d: int, env_too: bool = False):
    from oodfs_plugins.environments.synthetic import Synthetic

    env = Synthetic(setting="poly", d_v=d - 5)
    X, y = env.sample(2.5, n, 0)
    return (X, y, env) if env_too else (X, y, env.stable_set)


def objective_split(X, w, pair):
    """DWR's covariance term sum_{i != j} Cov_w(X_i, X_j)^2, and the share of it from one pair."""
    p = w / w.sum()
    Xc = X - p @ X
    C = (Xc * p[:, None]).T @ Xc
    off = C - np.diag(np.diag(C))
    return float(np.sum(off**2)), float(2 * off[pair] ** 2)


def table(args):
    from oodfs.contract.metrics import f1_at_k, rank_average
    from oodfs.contract.registry import registry
    from oodfs.numeric import max_abs_offdiag_corr, weighted_least_squares
    from oodfs_plugins.independence import DWRWeighter

    rule = registry().entries("metric")["corr_kept"].cls.suspect
    rows = []
    for d in args.d:
        X, y, env = make_data(args.n, d, env_too=True)
        stable, pair = env.stable_set, (env.column_of("V4"), env.column_of("V5"))
        rows.append(
            [d, "uniform", 0, "", "%.3g (%.3g)" % objective_split(X, np.ones(len(y)), pair)] + [""] * 7
        )
        fits = [("default", DWRWeighter())]
        if args.converge:
            fits.append(("tol 0", DWRWeighter(tol=0.0, max_iter=20000)))
        for label, est in fits:
            t = time.perf_counter()
            est.fit(X)
            secs = time.perf_counter() - t
            g = est.diagnostics_
            cov, v45 = objective_split(X, est.weights_, pair)
            scores = np.abs(weighted_least_squares(X, y, est.weights_))
            kept = g["corr_kept"]
            flagged = kept is not None and bool(rule.flags(__import__("pandas").Series([kept]))[0])
            rows.append(
                [
                    d,
                    label,
                    est.n_iter_,
                    f"{est.objective_:.3g}",
                    f"{cov:.3g} ({v45:.3g})",
                    f"{max_abs_offdiag_corr(X):.2f} -> {g['max_abs_corr']:.2f}",
                    est.converged_,
                    "-" if kept is None else f"{kept:.2f}" + (" (suspect)" if flagged else ""),
                    f"{g['ess_fraction']:.3f}",
                    f"{f1_at_k(scores, stable, K):.2f}",
                    f"{rank_average(scores, stable):.1f}",
                    f"{secs:.1f}",
                ]
            )
            print(tabulate([rows[-1]]), file=sys.stderr, flush=True)
    head = ["d", "fit", "iter", "objective", "cov term (V4-V5)", "max |corr|", "converged_", "corr_kept"]
    print(f"n = {args.n}, load average {os.getloadavg()[0]:.1f}")
    print(tabulate(rows, headers=[*head, "ESS/n", "F1", "rank avg", "s"], tablefmt="github"))


def paper_grid(args):
    """corr_kept and converged_ of DWR's default point on the paper's d = 10 data (false flags?)."""
    import pandas as pd

    from oodfs.contract.metrics import f1_at_k
    from oodfs.contract.registry import registry
    from oodfs.numeric import weighted_least_squares
    from oodfs_plugins.environments.synthetic import Synthetic
    from oodfs_plugins.independence import DWRWeighter

    rule = registry().entries("metric")["corr_kept"].cls.suspect
    rows = []
    for setting in ("poly", "mlp"):
        for r in R_TRAIN:
            for run in range(args.runs):
                env = Synthetic(setting=setting, mlp_seed=run)
                X, y = env.sample(r, args.n, run)
                est = DWRWeighter().fit(X)
                kept = est.diagnostics_["corr_kept"]
                f1 = f1_at_k(np.abs(weighted_least_squares(X, y, est.weights_)), env.stable_set, K)
                rows.append(dict(setting=setting, r=r, run=run, kept=kept, conv=est.converged_, f1=f1))
                print(rows[-1], file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    df["flagged"] = rule.flags(df["kept"].astype(float))
    out = df.groupby(["setting", "r"]).agg(
        corr_kept_max=("kept", "max"),
        flagged=("flagged", "sum"),
        converged=("conv", "sum"),
        f1=("f1", "mean"),
    )
    print(f"n = {args.n}, {args.runs} runs per (setting, r_train); DWR default point")
    print(tabulate(out.reset_index(), headers="keys", tablefmt="github", showindex=False, floatfmt=".2f"))


def _rss_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def one(methods: list[str], n: int, d: int) -> list[dict]:
    """Fit each method's default grid point once on (n, d) data, in this (fresh) process."""
    import gc

    import torch

    from oodfs.contract.registry import registry

    torch.set_num_threads(1)
    X, y, _ = make_data(n, d)
    out = []
    for method in methods:
        est = registry().get("selector", method)(random_state=0)
        gc.collect()
        with open("/proc/self/clear_refs", "w") as fh:  # reset the peak resident set (VmHWM)
            fh.write("5")
        rss0 = _rss_kb("VmRSS")
        w0, c0 = time.perf_counter(), time.process_time()
        est.fit(X, y)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        diag = getattr(est, "weight_diagnostics_", None) or {}
        peak = (_rss_kb("VmHWM") - rss0) / 1024
        out.append({"method": method, "n": n, "d": d, "wall": wall, "cpu": cpu, "peak_mb": peak})
        out[-1]["n_iter"] = diag.get("n_iter")
        del est
    return out


def slope(xs, ys) -> float:
    if len(set(xs)) < 2:
        return float("nan")
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def cost(args):
    points = [(n, D_AT_N) for n in N_ALONG] + [(N_AT_D, d) for d in D_ALONG if d != D_AT_N]
    runs = []
    for rep in range(args.repeats):
        order = list(METHODS) if rep % 2 == 0 else list(reversed(METHODS))
        for n, d in points:
            out = subprocess.run(
                [sys.executable, __file__, "one", str(n), str(d), *order],
                capture_output=True,
                text=True,
                check=True,
            )
            runs += json.loads(out.stdout.strip().splitlines()[-1])
            print(json.dumps(runs[-len(order) :]), file=sys.stderr, flush=True)
    summarise(runs, f"{args.repeats} repeats")


def summarise(runs: list[dict], what: str) -> None:
    """Median table and fitted exponents of the ``cost`` runs (points with no run are left out)."""
    med = {}
    for r in runs:
        med.setdefault((r["method"], r["n"], r["d"]), []).append(r)
    rows = []
    for (m, n, d), rs in sorted(med.items(), key=lambda kv: (METHODS.index(kv[0][0]), kv[0][2], kv[0][1])):
        cpu = float(np.median([r["cpu"] for r in rs]))
        it = rs[0]["n_iter"]
        rows.append(
            [
                m,
                n,
                d,
                f"{np.median([r['wall'] for r in rs]):.2f}",
                f"{cpu:.2f}",
                f"{max(r['peak_mb'] for r in rs):.0f}",
                "" if it is None else f"{it} ({cpu / (it + 1) * 1000:.0f} ms/it)",
            ]
        )
    print(f"load average {os.getloadavg()[0]:.1f}, {what}")
    heads = ["method", "n", "d", "wall s", "CPU s", "peak MB", "iterations (DWR) / epochs (SRDO)"]
    print(tabulate(rows, headers=heads, tablefmt="github"))
    ex = []
    for m in METHODS:

        def cpu(n, d, per_iter=False, m=m):
            rs = med[(m, n, d)]
            c = float(np.median([r["cpu"] for r in rs]))
            return c / (rs[0]["n_iter"] + 1) if per_iter else c

        ns = [n for n in N_ALONG if (m, n, D_AT_N) in med]
        ds = [d for d in D_ALONG if (m, N_AT_D, d) in med]
        row = [m, f"{slope(ns, [cpu(n, D_AT_N) for n in ns]):.2f} ({min(ns)}-{max(ns)})"]
        row.append(f"{slope(ds, [cpu(N_AT_D, d) for d in ds]):.2f} ({min(ds)}-{max(ds)})")
        if m == "dwr":
            row.append(f"{slope(ns, [cpu(n, D_AT_N, True) for n in ns]):.2f}")
            row.append(f"{slope(ds, [cpu(N_AT_D, d, True) for d in ds]):.2f}")
        ex.append(row)
    print()
    heads = ["method", f"exponent in n (d = {D_AT_N})", f"in d (n = {N_AT_D})", "per iter, n", "per iter, d"]
    print(tabulate(ex, headers=heads, tablefmt="github"))


# -- the scale suite (issue 38): every method at its default grid point, n x d up to 200 000 x 500 --
SUITE_N = (2000, 20000, 200000)
SUITE_D = (10, 50, 200, 500)
#: the test environments of the suite's RMSE under shift (bias rates of the synthetic suite's r_test,
#: both signs; n_test rows each)
SUITE_R_TEST = (-3.0, -1.5, 1.5, 3.0)
SUITE_N_TEST = 10000
#: declared budgets of one fit: CPU seconds (one core) and peak memory growth in MB. A method whose
#: estimate (from its own smaller sizes) is past either is not run at that size and says so.
CPU_BUDGET_S = 120.0
MEM_BUDGET_MB = 6000.0
#: a fit still running after this many wall seconds is stopped (the machine is shared: wall > CPU)
WALL_LIMIT_S = 900.0
SCALE_DIR = os.environ.get("OODFS_SCALE_DATA", "/tmp/oodfs_scale")
NOT_RUN = {
    "icp": "needs several training environments (this data has one), and its exact search over the "
    "2^d - 1 subsets refuses d > 12 (d = 500: 3e150 subsets)",
}


def suite_methods() -> list[str]:
    import tomllib
    from pathlib import Path

    here = Path(__file__).resolve().parent.parent / "oodfs" / "suites" / "synthetic.toml"
    return tomllib.loads(here.read_text())["methods"]


def suite_data(n: int, d: int, binary: bool = False) -> str:
    """Training data (r_train 2.5, data seed 0) and the test environments, cached as .npz."""
    os.makedirs(SCALE_DIR, exist_ok=True)
    path = os.path.join(SCALE_DIR, f"{'bin' if binary else 'reg'}_{n}_{d}.npz")
    if os.path.exists(path):
        return path
    if binary:
        from oodfs_plugins.environments.synthetic import SyntheticBinary as Env
    else:
        from oodfs_plugins.environments.synthetic import Synthetic as Env
    env = Env(setting="poly", d_v=d - 5)
    X, y = env.sample(2.5, n, 0)
    tests = [env.sample(r, SUITE_N_TEST, 1000 + i) for i, r in enumerate(SUITE_R_TEST)]
    np.savez(
        path + ".tmp.npz",
        X=X,
        y=y,
        stable=np.asarray(env.stable_set),
        Xt=np.stack([t[0] for t in tests]),
        yt=np.stack([t[1] for t in tests]),
    )
    os.replace(path + ".tmp.npz", path)
    return path


def suite_one(method: str, path: str) -> dict:
    """One fit of ``method``'s default grid point on the cached data, in this fresh process."""
    import gc
    import warnings

    import torch

    from oodfs.contract.metrics import f1_at_k, rank_average
    from oodfs.contract.registry import registry

    torch.set_num_threads(1)
    data = np.load(path)
    X, y, stable = data["X"], data["y"], tuple(int(i) for i in data["stable"])
    cls = registry().get("selector", method)
    # warm-up on 200 rows: imports and compiled kernels (numba's cache) are not the fit's cost
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls.fit_grid_detailed(X[:200], y[:200], [{}], random_state=0)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as fh:  # reset the peak resident set (VmHWM)
        fh.write("5")
    rss0 = _rss_kb("VmRSS")
    w0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = cls.fit_grid_detailed(X, y, [{}], random_state=0)[0]
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    peak = (_rss_kb("VmHWM") - rss0) / 1024
    scores = np.asarray(fit.values)
    top = np.argsort(-scores, kind="stable")[:K]
    rmses = []
    for Xt, yt in zip(data["Xt"], data["yt"]):  # downstream: OLS with intercept on the top K
        A = np.column_stack([np.ones(len(y)), X[:, top]])
        beta = np.linalg.lstsq(A, y, rcond=None)[0]
        At = np.column_stack([np.ones(len(yt)), Xt[:, top]])
        rmses.append(float(np.sqrt(np.mean((At @ beta - yt) ** 2))))
    diag = {k: (None if v is None else float(v)) for k, v in fit.diagnostics.items() if _is_number(v)}
    return {
        "method": method,
        "n": X.shape[0],
        "d": X.shape[1],
        "status": "ok",
        "cpu": cpu,
        "wall": wall,
        "peak_mb": peak,
        "rank_avg": rank_average(scores, stable),
        "f1": f1_at_k(scores, stable, K),
        "rmse_mean": float(np.mean(rmses)),
        "rmse_sd": float(np.std(rmses)),
        "diagnostics": diag,
        "warnings": sorted({type(w.message).__name__ for w in caught}),
    }


def _is_number(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, np.integer, np.floating, np.bool_))


def _estimate(done: list[dict], n: int, d: int, key: str) -> float | None:
    """``key`` (cpu or peak_mb) at (n, d) from the method's own runs: scaled from its largest run
    by n^a d^b, a and b the log-log slopes along n (at that run's d) and along d (at its n) where
    two sizes were measured, else 1 (linear)."""
    ok = [r for r in done if r["status"] == "ok"]
    if not ok:
        return None
    big = max(ok, key=lambda r: (r["n"] * r["d"], r["n"]))
    along_n = [r for r in ok if r["d"] == big["d"]]
    along_d = [r for r in ok if r["n"] == big["n"]]
    floor = 0.05 if key == "cpu" else 1.0  # below the timer's / counter's resolution

    def exponent(rows, axis):
        if len({r[axis] for r in rows}) < 2:
            return 1.0
        return max(1.0, slope([r[axis] for r in rows], [max(r[key], floor) for r in rows]))

    a, b = exponent(along_n, "n"), exponent(along_d, "d")
    return max(big[key], floor) * (n / big["n"]) ** a * (d / big["d"]) ** b


def suite(args):
    """Run the scale suite (results appended to ``--out`` as JSON lines; a rerun skips what is there)."""
    methods = args.methods or suite_methods()
    out = args.out
    have = []
    if os.path.exists(out):
        with open(out) as fh:
            have = [json.loads(line) for line in fh if line.strip()]
    sizes = sorted(((n, d) for n in args.n for d in args.d), key=lambda nd: (nd[0] * nd[1], nd[0]))
    for n, d in sizes:
        for method in methods:
            if args.until and time.strftime("%H:%M", time.gmtime()) >= args.until:
                print(f"stopped at {args.until} UTC (--until)", file=sys.stderr)
                return
            if method in NOT_RUN:
                continue
            key = (method, n, d, args.binary)
            if any((r["method"], r["n"], r["d"], r.get("binary", False)) == key for r in have):
                continue
            mine = [r for r in have if r["method"] == method and r.get("binary", False) == args.binary]
            if any(r["status"] != "ok" and r["n"] <= n and r["d"] <= d for r in mine):
                row = {"status": "past budget", "why": "past its budget at a smaller size"}
            else:
                cpu_est, mem_est = _estimate(mine, n, d, "cpu"), _estimate(mine, n, d, "peak_mb")
                if cpu_est is not None and cpu_est > args.cpu_budget:
                    row = {"status": "past budget", "why": f"estimated {cpu_est:.0f} CPU s > {args.cpu_budget:.0f}"}
                elif mem_est is not None and mem_est > MEM_BUDGET_MB:
                    row = {"status": "past budget", "why": f"estimated {mem_est:.0f} MB > {MEM_BUDGET_MB:.0f}"}
                else:
                    path = suite_data(n, d, args.binary)
                    try:
                        res = subprocess.run(
                            [sys.executable, __file__, "suite-one", method, path],
                            capture_output=True,
                            text=True,
                            timeout=WALL_LIMIT_S,
                        )
                        if res.returncode == 0:
                            row = json.loads(res.stdout.strip().splitlines()[-1])
                        else:
                            row = {"status": "failed", "why": res.stderr.strip().splitlines()[-1][:200]}
                    except subprocess.TimeoutExpired:
                        row = {"status": "past budget", "why": f"stopped after {WALL_LIMIT_S:.0f} wall s"}
            row.update(method=method, n=n, d=d, binary=args.binary, load=round(os.getloadavg()[0], 1))
            have.append(row)
            with open(out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(json.dumps(row), file=sys.stderr, flush=True)


def suite_report(args):
    """Markdown tables of a scale-suite results file."""
    import pandas as pd

    with open(args.out) as fh:
        df = pd.DataFrame([json.loads(line) for line in fh if line.strip()])
    df = df[df["binary"] == args.binary]
    methods = [m for m in suite_methods() if m in set(df["method"])]
    sizes = sorted({(n, d) for n, d in zip(df["n"], df["d"])}, key=lambda nd: (nd[0], nd[1]))

    def cell(m, n, d, fmt):
        r = df[(df["method"] == m) & (df["n"] == n) & (df["d"] == d)]
        if r.empty:
            return ""
        r = r.iloc[-1]
        return fmt(r) if r["status"] == "ok" else ("budget" if r["status"] == "past budget" else "failed")

    heads = ["method"] + [f"{n // 1000}k x {d}" for n, d in sizes]
    for title, fmt in (
        ("F1 / rank average", lambda r: f"{r['f1']:.2f} / {r['rank_avg']:.1f}"),
        ("test RMSE mean (sd over the 4 test environments)", lambda r: f"{r['rmse_mean']:.3f} ({r['rmse_sd']:.3f})"),
        ("fit CPU seconds", lambda r: f"{r['cpu']:.2f}" if r["cpu"] < 10 else f"{r['cpu']:.0f}"),
        ("fit peak memory MB", lambda r: f"{max(r['peak_mb'], 0):.0f}"),
    ):
        rows = [[m] + [cell(m, n, d, fmt) for n, d in sizes] for m in methods]
        print(f"\n### {title}\n")
        print(tabulate(rows, headers=heads, tablefmt="github", disable_numparse=True))
    print("\n### Not run\n")
    for m, why in NOT_RUN.items():
        print(f"- `{m}`: {why}.")
    bad = df[df["status"] != "ok"]
    for r in bad.itertuples():
        print(f"- `{r.method}` at n = {r.n}, d = {r.d}: {r.status} ({r.why}).")
    diag_rows = []
    for r in df[df["status"] == "ok"].itertuples():
        g = r.diagnostics or {}
        flags = [k for k in ("converged",) if k in g and g[k] is not None and not g[k]]
        kept = g.get("corr_kept")
        if kept is not None and kept > 0.9:
            flags.append(f"corr_kept {kept:.2f}")
        if flags:
            diag_rows.append(f"- `{r.method}` at n = {r.n}, d = {r.d}: {', '.join(flags)}")
    print("\n### Fits their own diagnostics mark\n")
    print("\n".join(diag_rows) or "none")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    t = sub.add_parser("table")
    t.add_argument("--n", type=int, default=20000)
    t.add_argument("--d", type=int, nargs="+", default=[10, 50, 200])
    t.add_argument("--converge", action="store_true")
    g = sub.add_parser("paper-grid")
    g.add_argument("--n", type=int, default=10000)
    g.add_argument("--runs", type=int, default=2)
    c = sub.add_parser("cost")
    c.add_argument("--repeats", type=int, default=2)
    c.add_argument(
        "--from-log", help="summarise the JSON lines a (possibly unfinished) cost run wrote to stderr"
    )
    o = sub.add_parser("one")
    o.add_argument("n", type=int)
    o.add_argument("d", type=int)
    o.add_argument("methods", nargs="+", choices=METHODS)
    s = sub.add_parser("suite")
    s.add_argument("--n", type=int, nargs="+", default=list(SUITE_N))
    s.add_argument("--d", type=int, nargs="+", default=list(SUITE_D))
    s.add_argument("--methods", nargs="+")
    s.add_argument("--binary", action="store_true", help="the synthetic-binary generator")
    s.add_argument("--cpu-budget", type=float, default=CPU_BUDGET_S)
    s.add_argument("--out", default="benchmarks/scale_results.jsonl")
    s.add_argument("--until", help="start no fit after this UTC time, HH:MM")
    s.add_argument("--report", action="store_true", help="print the tables of --out and stop")
    so = sub.add_parser("suite-one")
    so.add_argument("method")
    so.add_argument("path")
    args = ap.parse_args()
    if args.part == "table":
        table(args)
    elif args.part == "paper-grid":
        paper_grid(args)
    elif args.part == "cost" and args.from_log:
        with open(args.from_log) as fh:
            runs = [r for line in fh if line.startswith("[{") for r in json.loads(line)]
        summarise(runs, f"from {args.from_log}")
    elif args.part == "cost":
        cost(args)
    elif args.part == "suite" and args.report:
        suite_report(args)
    elif args.part == "suite":
        suite(args)
    elif args.part == "suite-one":
        print(json.dumps(suite_one(args.method, args.path)))
    else:
        print(json.dumps(one(args.methods, args.n, args.d)))


if __name__ == "__main__":
    main()
