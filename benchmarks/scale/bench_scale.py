"""DWR at high dimension, and what DWR, SRDO, OLS and LASSO cost as n and d grow.

    python benchmarks/scale/bench_scale.py table [--n 20000] [--d 10 50 200] [--converge]
    python benchmarks/scale/bench_scale.py paper-grid [--n 10000] [--runs 2]
    python benchmarks/scale/bench_scale.py cost  [--repeats 2] 2> cost.log
    python benchmarks/scale/bench_scale.py cost --from-log cost.log   # summary of an unfinished run

Data: the synthetic generator, setting ``poly``, r_train = 2.5, 5 stable features S1..S5 and
d - 5 others V1..V_{d-5} (V4, V5 spurious, as in the paper), data seed 0; stable set from the
environment. Notes and measured numbers: benchmarks/scale/SCALE.md.

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
import math
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
    """The declared stopping rules and suspect checks on the paper's d = 10 data: how many default
    fits of each iterative method meet their tolerance (``converged``), how many the ``corr_kept``
    rule flags (a false alarm where DWR and SRDO are known to work), mean F1."""
    import warnings

    import pandas as pd

    from oodfs.contract.metrics import f1_at_k
    from oodfs.contract.registry import registry
    from oodfs_plugins.environments.synthetic import Synthetic

    rule = registry().entries("metric")["corr_kept"].cls.suspect
    rows = []
    for setting in ("poly", "mlp"):
        for r in R_TRAIN:
            for run in range(args.runs):
                env = Synthetic(setting=setting, mlp_seed=run)
                X, y = env.sample(r, args.n, run)
                for method in args.methods:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        fit = (
                            registry()
                            .get("selector", method)
                            .fit_grid_detailed(X, y, [{}], random_state=run)[0]
                        )
                    g = fit.diagnostics
                    rows.append(
                        dict(
                            method=method,
                            setting=setting,
                            r=r,
                            run=run,
                            kept=g.get("corr_kept"),
                            conv=g.get("converged"),
                            f1=f1_at_k(fit.values, env.stable_set, K),
                        )
                    )
                    print(rows[-1], file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    df["flagged"] = rule.flags(df["kept"].astype(float))
    df["conv"] = df["conv"].astype(float)
    out = df.groupby(["method", "setting", "r"], sort=False).agg(
        corr_kept_max=("kept", "max"),
        flagged=("flagged", "sum"),
        converged=("conv", "sum"),
        fits=("f1", "size"),
        f1=("f1", "mean"),
    )
    print(f"n = {args.n}, {args.runs} run(s) per (setting, r_train); default grid points")
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


def suite_methods(binary: bool = False) -> list[str]:
    """The method list of the suite whose generator the grid draws from (``synthetic`` or
    ``synthetic-binary``)."""
    from pathlib import Path

    import tomllib

    name = "synthetic-binary.toml" if binary else "synthetic.toml"
    here = Path(__file__).resolve().parents[2] / "oodfs" / "suites" / name
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


def downstream_scores(X, y, Xt, yt, top, task: str) -> dict:
    """The test-environment scores of a downstream model on the top K features: OLS with intercept
    for a numeric target (RMSE); for a binary one its classification form, logistic regression
    with intercept and no penalty, scored as the binary suites score a model (the task's log-loss,
    AUC, accuracy and Brier score: oodfs.contract.tasks). Mean and sd over the test environments."""
    if task == "regression":
        A = np.column_stack([np.ones(len(y)), X[:, top]])
        beta = np.linalg.lstsq(A, y, rcond=None)[0]
        rmses = []
        for Xe, ye in zip(Xt, yt):
            Ae = np.column_stack([np.ones(len(ye)), Xe[:, top]])
            rmses.append(float(np.sqrt(np.mean((Ae @ beta - ye) ** 2))))
        return {"rmse_mean": float(np.mean(rmses)), "rmse_sd": float(np.std(rmses))}
    from sklearn.linear_model import LogisticRegression

    from oodfs.contract.tasks import get_task

    model = LogisticRegression(C=np.inf, solver="newton-cholesky", max_iter=1000).fit(X[:, top], y)
    per_env = [get_task("binary").score(ye, model.predict_proba(Xe[:, top])[:, 1]) for Xe, ye in zip(Xt, yt)]
    out = {}
    for score in ("log_loss", "auc", "accuracy", "brier"):
        values = [float(s[score][0]) for s in per_env]
        out[f"{score}_mean"], out[f"{score}_sd"] = float(np.mean(values)), float(np.std(values))
    return out


def suite_one(methods: list[str], path: str, task: str = "regression") -> None:
    """Fit each method's default grid point once on the cached data, in this process, one after
    the other; one JSON line per method on standard output as soon as it is done. ``task`` is
    passed to the fit (a binary target gets each method's classification form, and a method
    without one refuses it in one line, recorded as ``refused``)."""
    import gc
    import warnings

    import torch

    from oodfs.contract.metrics import f1_at_k, rank_average
    from oodfs.contract.registry import registry

    torch.set_num_threads(1)
    data = np.load(path)
    X, y, stable = data["X"], data["y"], tuple(int(i) for i in data["stable"])
    from oodfs.validation import OodfsError

    for method in methods:
        cls = registry().get("selector", method)
        # warm-up on a few rows: imports and compiled kernels (numba's cache) are not the fit's cost
        few = min(len(y), max(200, 2 * X.shape[1] + 10))  # least squares needs n > d
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cls.fit_grid_detailed(X[:few], y[:few], [{}], random_state=0, task=task)
        except OodfsError as e:  # a method that refuses the size (IAMB's feature budget) or the task
            why = str(e).splitlines()[0]
            row = {"method": method, "n": X.shape[0], "d": X.shape[1], "status": "refused", "why": why}
            print(json.dumps(row), flush=True)
            continue
        gc.collect()
        with open("/proc/self/clear_refs", "w") as fh:  # reset the peak resident set (VmHWM)
            fh.write("5")
        rss0 = _rss_kb("VmRSS")
        w0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit = cls.fit_grid_detailed(X, y, [{}], random_state=0, task=task)[0]
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        peak = (_rss_kb("VmHWM") - rss0) / 1024
        scores = np.asarray(fit.values)
        top = np.argsort(-scores, kind="stable")[:K]
        diag = {k: (None if v is None else float(v)) for k, v in fit.diagnostics.items() if _is_number(v)}
        row = {
            "method": method,
            "n": X.shape[0],
            "d": X.shape[1],
            "status": "ok",
            "cpu": cpu,
            "wall": wall,
            "peak_mb": peak,
            "rank_avg": rank_average(scores, stable),
            "f1": f1_at_k(scores, stable, K),
            **downstream_scores(X, y, data["Xt"], data["yt"], top, task),
            "diagnostics": diag,
            "warnings": sorted({type(w.message).__name__ for w in caught}),
        }
        print(json.dumps(row), flush=True)
        del fit
        gc.collect()


def _is_number(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, np.integer, np.floating, np.bool_))


def _estimate(done: list[dict], n: int, d: int, key: str) -> float | None:
    """``key`` (cpu or peak_mb) at (n, d) from the method's own runs: scaled from its largest run
    by n^a d^b, a (b) the log-log slope along n (d) over the runs that share a d (an n), the
    steepest such slope, at least 0.5; 1 where no two sizes differ along that axis."""
    ok = [r for r in done if r["status"] == "ok"]
    if not ok:
        return None
    big = max(ok, key=lambda r: (r["n"] * r["d"], r["n"]))
    floor = 0.05 if key == "cpu" else 1.0  # below the timer's / counter's resolution

    def exponent(axis, other):
        slopes = []
        for fixed in {r[other] for r in ok}:
            rows = [r for r in ok if r[other] == fixed]
            if len({r[axis] for r in rows}) >= 2:
                slopes.append(slope([r[axis] for r in rows], [max(r[key], floor) for r in rows]))
        return max(0.5, max(slopes)) if slopes else 1.0

    a, b = exponent("n", "d"), exponent("d", "n")
    return max(big[key], floor) * (n / big["n"]) ** a * (d / big["d"]) ** b


def machine() -> dict:
    """The machine a row was measured on: CPU model, logical CPUs, memory (GiB), system."""
    import platform

    model, total_kb = platform.processor() or platform.machine(), 0
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), model)
        with open("/proc/meminfo") as fh:
            total_kb = next(int(ln.split()[1]) for ln in fh if ln.startswith("MemTotal:"))
    except (OSError, StopIteration):
        pass
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "memory_gib": round(total_kb / 2**20, 1),
        "system": platform.system(),
    }


def deadline(until: str | None) -> float:
    """The epoch second of the next ``HH:MM`` UTC from now (past midnight when that time of day
    has gone: a run started at 22:57 with ``--until 00:15`` stops the next day); inf for None."""
    import datetime as dt

    if not until:
        return float("inf")
    now = dt.datetime.now(dt.timezone.utc)
    hour, minute = (int(v) for v in until.split(":"))
    at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return (at + dt.timedelta(days=1) if at <= now else at).timestamp()


def suite(args):
    """Run the scale suite (results appended to ``--out`` as JSON lines; a rerun skips what is there
    unless ``--redo``; the report and ``ship`` read the last row of a point)."""
    methods = args.methods or suite_methods(args.binary)
    task = "binary" if args.binary else "regression"
    out = args.out
    have = []
    if os.path.exists(out):
        with open(out) as fh:
            have = [json.loads(line) for line in fh if line.strip()]

    def record(row):
        row.update(binary=args.binary, load=round(os.getloadavg()[0], 1), machine=machine(), fresh=args.fresh)
        have.append(row)
        with open(out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(json.dumps(row), file=sys.stderr, flush=True)

    sizes = sorted(((n, d) for n in args.n for d in args.d), key=lambda nd: (nd[0] * nd[1], nd[0]))
    stop = deadline(args.until)
    for n, d in sizes:
        if time.time() >= stop:
            print(f"stopped at {args.until} UTC (--until)", file=sys.stderr)
            return
        todo = []
        for method in methods:
            if method in NOT_RUN:
                continue
            done = (method, n, d, args.binary)
            if not args.redo and any((r["method"], r["n"], r["d"], r["binary"]) == done for r in have):
                continue
            mine = [r for r in have if r["method"] == method and r["binary"] == args.binary]
            why = None
            if any(r["status"] != "ok" and (r["n"], r["d"]) == (n, d) for r in mine):
                continue  # --redo keeps a point's budget verdict (its reason stays the recorded one)
            refused = [r for r in mine if r["status"] == "refused" and r["n"] <= n and r["d"] <= d]
            if refused:  # the method's own refusal (the task, a feature limit) holds at larger sizes
                record({"method": method, "n": n, "d": d, "status": "refused", "why": refused[0]["why"]})
                continue
            if any(r["status"] != "ok" and r["n"] <= n and r["d"] <= d for r in mine):
                why = "past its budget at a smaller size"
            else:
                cpu_est, mem_est = _estimate(mine, n, d, "cpu"), _estimate(mine, n, d, "peak_mb")
                if cpu_est is not None and cpu_est > args.cpu_budget:
                    why = f"estimated {cpu_est:.0f} CPU s > {args.cpu_budget:.0f}"
                elif mem_est is not None and mem_est > MEM_BUDGET_MB:
                    why = f"estimated {mem_est:.0f} MB > {MEM_BUDGET_MB:.0f}"
            if why:
                record({"method": method, "n": n, "d": d, "status": "past budget", "why": why})
            else:
                todo.append(method)
        path = suite_data(n, d, args.binary) if todo else None
        # one process per size (--fresh: per method, so that every peak memory figure is exact)
        for todo in [[m] for m in todo] if args.fresh else [todo]:
            if time.time() >= stop:  # with --fresh, no new method's fit starts after --until either
                print(f"stopped at {args.until} UTC (--until)", file=sys.stderr)
                return
            _run_size(todo, path, n, d, record, task)


def _run_size(todo: list[str], path: str, n: int, d: int, record, task: str = "regression") -> None:
    """Fit ``todo`` one after the other in one fresh process; one fit past the wall limit is stopped
    and recorded as past budget, and the rest go on in a new process."""
    import select

    while todo:
        proc = subprocess.Popen(
            [sys.executable, __file__, "suite-one", path, *todo, "--task", task],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        while todo:
            ready, _, _ = select.select([proc.stdout], [], [], WALL_LIMIT_S)
            line = proc.stdout.readline() if ready else None
            if line:
                record(json.loads(line))
                todo.pop(0)
                continue
            proc.kill()
            proc.wait()
            why = "failed" if ready else f"stopped after {WALL_LIMIT_S:.0f} wall s"
            record(
                {
                    "method": todo.pop(0),
                    "n": n,
                    "d": d,
                    "status": "past budget" if not ready else "failed",
                    "why": why,
                }
            )
            break
        proc.wait()


def suite_report(args):
    """Markdown tables of a scale-suite results file."""
    import pandas as pd

    with open(args.out) as fh:
        df = pd.DataFrame([json.loads(line) for line in fh if line.strip()])
    df = df[df["binary"] == args.binary]
    # the suite's methods in its order, then the others measured (the stable line)
    measured = set(df.loc[df["status"] != "refused", "method"])  # a method refused everywhere: "Not run"
    methods = list(dict.fromkeys(m for m in [*suite_methods(args.binary), *df["method"]] if m in measured))
    sizes = sorted({(n, d) for n, d in zip(df["n"], df["d"])}, key=lambda nd: (nd[0], nd[1]))

    def cell(m, n, d, fmt):
        r = df[(df["method"] == m) & (df["n"] == n) & (df["d"] == d)]
        if r.empty:
            return ""
        r = r.iloc[-1]
        return fmt(r) if r["status"] == "ok" else {"past budget": "budget"}.get(r["status"], r["status"])

    heads = ["method"] + [f"{n // 1000}k x {d}" for n, d in sizes]
    envs = f"the {len(SUITE_R_TEST)} test environments"
    if args.binary:
        downstream = (
            (
                f"test log-loss mean (sd over {envs}), logistic regression on the top {K}",
                lambda r: f"{r['log_loss_mean']:.3f} ({r['log_loss_sd']:.3f})",
            ),
            (f"test AUC mean (sd over {envs})", lambda r: f"{r['auc_mean']:.3f} ({r['auc_sd']:.3f})"),
        )
    else:
        downstream = (
            (f"test RMSE mean (sd over {envs})", lambda r: f"{r['rmse_mean']:.3f} ({r['rmse_sd']:.3f})"),
        )
    for title, fmt in (
        ("F1 / rank average", lambda r: f"{r['f1']:.2f} / {r['rank_avg']:.1f}"),
        *downstream,
        ("fit CPU seconds", lambda r: f"{r['cpu']:.2f}" if r["cpu"] < 10 else f"{r['cpu']:.0f}"),
        ("fit peak memory MB", lambda r: f"{max(r['peak_mb'], 0):.0f}"),
    ):
        rows = [[m] + [cell(m, n, d, fmt) for n, d in sizes] for m in methods]
        print(f"\n### {title}\n")
        print(tabulate(rows, headers=heads, tablefmt="github", disable_numparse=True))
    print(
        "\n### Cost exponents: least squares of log(cost) = a + b log(n) + c log(d) over the measured sizes\n"
    )
    ex = []
    for m in methods:
        ok = df[(df["method"] == m) & (df["status"] == "ok")]
        row = [m, len(ok)]
        for key, floor in (("cpu", 0.01), ("peak_mb", 1.0)):
            if len(ok) >= 3 and ok["n"].nunique() > 1 and ok["d"].nunique() > 1:
                A = np.column_stack([np.ones(len(ok)), np.log(ok["n"]), np.log(ok["d"])])
                coef = np.linalg.lstsq(A, np.log(np.maximum(ok[key].astype(float), floor)), rcond=None)[0]
                row += [f"{coef[1]:.2f}", f"{coef[2]:.2f}"]
            else:
                row += ["", ""]
        ex.append(row)
    heads = ["method", "sizes", "CPU: b (n)", "CPU: c (d)", "memory: b (n)", "memory: c (d)"]
    print(tabulate(ex, headers=heads, tablefmt="github", disable_numparse=True))
    print("\n### Not run\n")
    for m, why in NOT_RUN.items():
        if m in suite_methods(args.binary):
            print(f"- `{m}`: {why}.")
    refused = df[df["status"] == "refused"].groupby(["method", "why"], sort=False)
    for (m, why), rs in refused:  # a method's own refusal, once with the sizes it holds at
        at = "every size" if len(rs) == len(sizes) else ", ".join(f"{r.n} x {r.d}" for r in rs.itertuples())
        print(f"- `{m}` refused at {at}: {why}.")
    bad = df[~df["status"].isin(["ok", "refused"])]
    for r in bad.itertuples():
        print(f"- `{r.method}` at n = {r.n}, d = {r.d}: {r.status} ({r.why}).")
    diag_rows = []
    for r in df[df["status"] == "ok"].itertuples():
        g = r.diagnostics or {}
        flags = ["not converged" for k in ("converged",) if k in g and g[k] is not None and not g[k]]
        kept = g.get("corr_kept")
        if kept is not None and kept > 0.9:
            flags.append(f"corr_kept {kept:.2f}")
        if flags:
            diag_rows.append(f"- `{r.method}` at n = {r.n}, d = {r.d}: {', '.join(flags)}")
    print("\n### Fits their own diagnostics mark\n")
    print("\n".join(diag_rows) or "none")


# -- the facts shipped inside oodfs: largest measured sizes and memory curves (`ship`) -----------------
FACTS = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "oodfs", "results", "scale_facts.json"
)
#: peak-memory figures below this many MB are left out of the memory curves: the counter's noise and
#: lower bounds (COST_CURVES.md, section 1)
MEMORY_MIN_MB = 5.0
#: what a worker process of `oodfs bench` has imported once it has fitted the synthetic suite's methods
#: (the built-in plugins, and torch and XGBoost, which srdo, stg, svi and xgb import when they fit)
WORKER_IMPORTS = (
    "import torch, xgboost, sklearn.ensemble\n"
    "from oodfs.contract.registry import registry\n"
    "import oodfs.run.jobs\n"
    "reg = registry()\n"
    "for kind in ('selector', 'weighter', 'environment', 'downstream'):\n"
    "    [reg.get(kind, name) for name in reg.entries(kind)]\n"
)


def last_rows(path: str, binary: bool = False) -> list[dict]:
    """The last row of each (method, n, d) of a scale-suite results file (a --redo replaces a point)."""
    rows = {}
    with open(path) as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                if r.get("binary", False) == binary:
                    rows[(r["method"], r["n"], r["d"])] = r
    return list(rows.values())


def memory_curve(ok: list[dict]) -> list[float] | None:
    """log(peak MB) = a + b log n + c log d over a method's measured sizes whose peak is at least
    MEMORY_MIN_MB: b and c by least squares where the sizes have two n (two d) and at least as many
    sizes as the curve has free numbers, else 1 (growth in proportion, which bounds a fixed part plus a
    part linear in n or d from above); then a raised until none of these sizes is above the curve
    (an estimate to refuse by must not be below what was measured; docs/PROTOCOL.md, "Measured
    sizes and the memory estimate"). None without any such size."""
    big = [r for r in ok if r["peak_mb"] >= MEMORY_MIN_MB]
    if not big:
        return None
    logs = np.log([[r["n"], r["d"], r["peak_mb"]] for r in big])
    free = [j for j, k in enumerate(("n", "d")) if len({r[k] for r in big}) >= 2]
    exps = [1.0, 1.0]
    if free and len(big) >= len(free) + 1:
        A = np.column_stack([np.ones(len(big)), *(logs[:, j] for j in free)])
        for j, v in zip(free, np.linalg.lstsq(A, logs[:, 2], rcond=None)[0][1:]):
            exps[j] = round(float(v), 4)
    b, c = exps
    a = float(np.max(logs[:, 2] - b * logs[:, 0] - c * logs[:, 1]))
    # a rounded up, so that the rounding cannot take the curve below a measured size
    return [math.ceil(a * 1e4) / 1e4, b, c]


def memory_range(ok: list[dict]) -> dict | None:
    """The smallest and largest n and d of the sizes :func:`memory_curve` is fitted on: outside
    them the package does not follow the curve (docs/PROTOCOL.md, "Measured sizes and the memory
    estimate")."""
    big = [r for r in ok if r["peak_mb"] >= MEMORY_MIN_MB]
    if not big:
        return None
    return {k: [min(r[k] for r in big), max(r[k] for r in big)] for k in ("n", "d")}


def largest(ok: list[dict]) -> list[dict]:
    """The measured sizes that no other measured size of the method exceeds in both n and d."""
    return sorted(
        (
            r
            for r in ok
            if not any(
                q["n"] >= r["n"] and q["d"] >= r["d"] and (q["n"], q["d"]) != (r["n"], r["d"]) for q in ok
            )
        ),
        key=lambda r: (r["n"], r["d"]),
    )


def worker_rss_mb() -> float:
    """Resident memory of a fresh process that has imported what a run's worker imports."""
    code = WORKER_IMPORTS + "print(open('/proc/self/status').read())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return int(next(line for line in out.splitlines() if line.startswith("VmRSS:")).split()[1]) / 1024


def task_facts(mine: list[dict], unstamped_ok: bool) -> dict:
    """One method's facts for one task type: its largest measured sizes (fit CPU s, wall s, peak MB,
    the machine and its load), the sizes it was not run at and why, how many sizes it ran at."""
    ok = [r for r in mine if r["status"] == "ok"]
    missing = [r for r in ok if "machine" not in r]
    if missing and not unstamped_ok:
        raise SystemExit(
            f"{len(missing)} rows of {ok[0]['method']} name no machine; rerun them, or pass "
            "--unstamped-machine-is-this"
        )
    return {
        "largest": [
            {
                "n": r["n"],
                "d": r["d"],
                "cpu_s": round(r["cpu"], 3),
                "wall_s": round(r["wall"], 3),
                "peak_mb": round(max(r["peak_mb"], 0.0), 1),
                "load": r.get("load"),
                "machine": r.get("machine") or machine(),
            }
            for r in largest(ok)
        ],
        "stopped": [
            {"n": r["n"], "d": r["d"], "why": r.get("why", r["status"])}
            for r in sorted(mine, key=lambda r: (r["n"], r["d"]))
            if r["status"] != "ok"
        ],
        "sizes_measured": len(ok),
    }


def ship(args):
    """Write oodfs/results/scale_facts.json from --out: per method, its facts on the numeric target
    (:func:`task_facts`, and its fitted memory curve) and, under ``binary``, those on the binary
    generator where it was measured there; the methods the grid does not run and why; a worker's own
    memory."""
    rows, binary = last_rows(args.out), last_rows(args.out, binary=True)
    methods = {}
    for m in sorted({r["method"] for r in rows}):
        mine = [r for r in rows if r["method"] == m]
        ok = [r for r in mine if r["status"] == "ok"]
        if not ok:
            continue
        methods[m] = task_facts(mine, args.unstamped_machine_is_this) | {
            "memory_curve": memory_curve(ok),
            "memory_range": memory_range(ok),
        }
        mine = [r for r in binary if r["method"] == m]
        if any(r["status"] == "ok" for r in mine):
            methods[m]["binary"] = task_facts(mine, args.unstamped_machine_is_this)
    facts = {
        "what": "each method's default grid point fitted once per size on the synthetic generator (poly, "
        "r_train 2.5): fit CPU seconds (one thread), wall seconds, and the growth of the process's peak "
        "resident memory during the fit (benchmarks/scale/SCALE.md, section 3); under a method's `binary`, "
        "the same on the synthetic binary generator (section 3c)",
        "source": "benchmarks/scale/scale_results.jsonl, written by `python "
        "benchmarks/scale/bench_scale.py ship`",
        "methods": methods,
        "not_run": NOT_RUN,
        "worker_mb": round(worker_rss_mb(), 1),
        "worker_machine": machine(),
    }
    with open(FACTS, "w") as fh:
        fh.write(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    print(f"wrote {os.path.normpath(FACTS)}: {len(methods)} methods")


def memory_error(args):
    """How far each method's fitted memory curve is from its own measured peaks (in-sample), and
    from its largest sizes when fitted without them (out-of-sample: the sizes with n = 200 000 or
    d = 500 predicted from the smaller ones)."""
    rows = last_rows(args.out)
    out = []
    for m in sorted({r["method"] for r in rows}):
        ok = [r for r in rows if r["method"] == m and r["status"] == "ok"]
        curve = memory_curve(ok)
        if curve is None:
            continue
        small = [r for r in ok if r["n"] < 200000 and r["d"] < 500]
        held = [r for r in ok if r not in small]
        early = memory_curve(small) if held else None
        for r in ok:
            if r["peak_mb"] < args.min_mb:
                continue
            fit = float(np.exp(curve[0] + curve[1] * np.log(r["n"]) + curve[2] * np.log(r["d"])))
            row = [m, r["n"], r["d"], f"{r['peak_mb']:.0f}", f"{fit:.0f}", f"{fit / r['peak_mb']:.2f}"]
            if early and r in held:
                pred = float(np.exp(early[0] + early[1] * np.log(r["n"]) + early[2] * np.log(r["d"])))
                row += [f"{pred:.0f}", f"{pred / r['peak_mb']:.2f}"]
            else:
                row += ["", ""]
            out.append(row)
    heads = [
        "method",
        "n",
        "d",
        "measured MB",
        "curve MB",
        "curve / measured",
        "from smaller sizes MB",
        "ratio",
    ]
    print(tabulate(out, headers=heads, tablefmt="github", disable_numparse=True))
    ratios = np.array([float(r[5]) for r in out])
    held = np.array([float(r[7]) for r in out if r[7]])
    print(
        f"\nin-sample: {len(ratios)} sizes with a peak of at least {args.min_mb:g} MB; curve / measured "
        f"median {np.median(ratios):.2f}, range {ratios.min():.2f}-{ratios.max():.2f}"
        + (
            f"; out-of-sample: {len(held)} sizes, median {np.median(held):.2f}, "
            f"range {held.min():.2f}-{held.max():.2f}"
            if len(held)
            else ""
        )
    )


RUN_MEMORY_SUITE = """
description = "memory estimate check"
environment = "synthetic"
r_train = [2.5]
r_test = [-3.0, 3.0]
runs = {runs}
n_train = {n}
n_val = 2000
n_test = 10000
k = 5
methods = {methods}
downstream = ["ridge"]
[settings.poly]
params = {{ setting = "poly", d_v = {d_v} }}
"""


def facts_worker_mb() -> float:
    with open(FACTS) as fh:
        return float(json.load(fh)["worker_mb"])


def run_memory(args):
    """`oodfs bench`'s memory estimate against the measured peak of whole runs: a synthetic suite at
    each (n, d) of --sizes (r_train 2.5, two test environments, downstream ridge), its estimate
    (oodfs.run.bench.run_memory_estimate), then the run as a user starts it (`oodfs bench` in a
    process of its own: its process tree is what is measured), sampling the proportional set size
    (PSS: shared pages split between the processes sharing them) summed over the run's process
    tree every 0.2 s, against the estimate plus the starting process's own memory (the shipped
    worker_mb: a process with the same imports)."""
    import tempfile

    import psutil

    from oodfs.run.bench import run_memory_estimate
    from oodfs.run.suite import load_suite

    rows = []
    for size in args.sizes:
        n, d = (int(v) for v in size.split("x"))
        with tempfile.TemporaryDirectory(prefix="oodfs-memory-") as tmp:
            path = os.path.join(tmp, "s.toml")
            with open(path, "w") as fh:
                fh.write(
                    RUN_MEMORY_SUITE.format(runs=args.runs, n=n, methods=json.dumps(args.methods), d_v=d - 5)
                )
            est = run_memory_estimate(load_suite(path), args.jobs)
            cmd = ["oodfs", "bench", "--suite", path, "--out", os.path.join(tmp, "out"), "--quiet"]
            cmd += ["--jobs", str(args.jobs), "--ignore-memory-estimate"]
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            top, peak, t0 = psutil.Process(proc.pid), 0.0, time.perf_counter()
            while proc.poll() is None:
                total = 0
                try:
                    for p in [top, *top.children(recursive=True)]:
                        try:
                            total += p.memory_full_info().pss
                        except (psutil.NoSuchProcess, psutil.AccessDenied):
                            pass
                except psutil.NoSuchProcess:
                    break
                peak = max(peak, total / 2**20)
                time.sleep(0.2)
            wall = time.perf_counter() - t0
        start = facts_worker_mb()  # the starting process's own memory (the estimate adds to it)
        rows.append(
            [
                n,
                d,
                ", ".join(args.methods),
                est["workers"],
                f"{start:.0f} + {est['total_mb']:.0f}",
                f"{est['worker_mb']:.0f} + {est['data_mb']:.0f} + {est['fit_mb']:.0f} ({est['method']})",
                f"{peak:.0f}",
                f"{(start + est['total_mb']) / peak:.2f}" if peak else "",
                f"{wall:.0f}",
                proc.returncode,
            ]
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    heads = [
        "n",
        "d",
        "methods",
        "jobs at once",
        "starting process + estimate MB",
        "per job: worker + data + fit MB",
    ]
    heads += ["measured MB"]
    print(tabulate(rows, headers=heads + ["estimate / measured", "wall s", "exit"], tablefmt="github"))


# -- the numbers of the edited methods, old code against new ---------------------------------------
def numbers() -> dict:
    """SHA-256 of what dwr, srdo, stg, svi and svi_d compute (default points, and the paper profile
    where the edit touched it) on small synthetic data: the edits of this round must leave them
    bit for bit (``same-numbers``)."""
    import hashlib

    from oodfs.contract.registry import registry
    from oodfs_plugins.environments.synthetic import Synthetic, SyntheticBinary

    def h(a) -> str:
        return hashlib.sha256(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes()).hexdigest()[
            :16
        ]

    X, y = Synthetic(setting="poly").sample(2.5, 2000, 0)
    Xb, yb = SyntheticBinary(setting="poly").sample(2.5, 2000, 0)
    sel = registry().get
    out = {}
    grid = [dict(lambda1=a, lambda2=b) for a in (0.02, 0.1) for b in (0.05,)]
    out["dwr grid"] = [h(f) for f in sel("weighter", "dwr").fit_grid(X, grid)]
    out["dwr adam"] = h(sel("weighter", "dwr")(solver="adam", adam_steps=200).fit(X).weights_)
    out["srdo"] = h(sel("weighter", "srdo")(epochs=20, random_state=0).fit(X).weights_)
    out["srdo grid"] = [h(f) for f in sel("weighter", "srdo").fit_grid(X, [{"gamma": 5, "epochs": 20}], 0)]
    out["srdo plateau"] = h(sel("weighter", "srdo")(epochs=40, stop_tol=1e-2, random_state=0).fit(X).weights_)
    for engine in ("numba", "torch"):
        stg = sel("selector", "stg")
        out[f"stg {engine}"] = [
            h(f) for f in stg.fit_grid(X, y, [{"lam": 0.1, "engine": engine, "max_epochs": 5}], 0)
        ]
        out[f"stg {engine} binary"] = h(stg(engine=engine, max_epochs=5, random_state=0).fit(Xb, yb).scores_)
    small = dict(stg_epochs=300, random_state=0)
    out["svi"] = h(sel("selector", "svi")(rounds=4, **small).fit(X, y).scores_)
    out["svi_d"] = h(sel("selector", "svi_d")(**small).fit(X, y).scores_)
    out["svi binary"] = h(sel("selector", "svi")(rounds=3, **small).fit(Xb, yb).scores_)
    return out


def same_numbers(args):
    """Run :func:`numbers` on the code at ``--old`` (a directory holding ``oodfs`` and
    ``oodfs_plugins`` of the older commit) and on this worktree's; print both and whether they agree."""
    env = dict(os.environ, PYTHONPATH=args.old)
    runs = {}
    for label, e in (("old", env), ("new", dict(os.environ))):
        res = subprocess.run(
            [sys.executable, __file__, "numbers"],
            capture_output=True,
            text=True,
            check=True,
            env=e,
            cwd="/tmp",
        )
        runs[label] = json.loads(res.stdout.strip().splitlines()[-1])
    for key in runs["new"]:
        same = runs["old"].get(key) == runs["new"][key]
        print(f"{key}: {'identical' if same else 'DIFFERENT'} {runs['new'][key]}")
    print("all identical" if runs["old"] == runs["new"] else "SOME DIFFER")


# -- the authors' implementations side by side ----------------------------------------------------
AUTHOR_POINTS = ((2000, 10), (2000, 50), (20000, 10), (2000, 200), (20000, 50))
#: reference DWR steps timed per point (its per-step cost; the SVI code runs up to 5000 per call)
REF_DWR_STEPS = 100


def authors_one(n: int, d: int, svi_repo: str, srdo_repo: str) -> list[dict]:
    """CPU seconds of oodfs's fits and the authors' on the same (n, d) data, in this one process:
    DWR (oodfs's default fit; the SVI repository's algorithm/DWR.py, ``REF_DWR_STEPS`` Adam steps
    with its early stops off, and oodfs's L-BFGS-B iterations), SRDO (oodfs's default; the official
    ``model.decorrelation``), SVI's gate step (oodfs's linear STG, 5000 full-batch epochs; the
    reference model/STG.py, 5000 epochs, on the same round-1 weights)."""
    import contextlib
    import importlib.util
    import io
    import warnings
    from pathlib import Path

    import torch

    torch.set_num_threads(1)
    sys.path.insert(0, svi_repo)
    from algorithm.DWR import DWR as ref_dwr
    from model.STG import STG as RefSTG

    spec = importlib.util.spec_from_file_location("srdo_official_model", Path(srdo_repo) / "model.py")
    official = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(official)

    from oodfs_plugins.independence import DWRWeighter, SRDOWeighter
    from oodfs_plugins.independence.svi import SVI

    X, y, _ = make_data(n, d)
    rows = []

    def timed(label, impl, fn, per=None):
        c0 = time.process_time()
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            out = fn()
        cpu = time.process_time() - c0
        rows.append({"what": label, "impl": impl, "n": n, "d": d, "cpu": cpu, "per": per})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        return out

    class _Quiet:
        def debug(self, *a, **k):
            pass

    dwr = timed("DWR fit", "oodfs", lambda: DWRWeighter().fit(X))
    rows[-1]["per"] = dwr.n_iter_
    mask = np.ones((d, d))
    timed(
        f"DWR, {REF_DWR_STEPS} Adam steps",
        "authors",
        lambda: ref_dwr(X, cov_mask=mask, num_steps=REF_DWR_STEPS, tol=0.0, loss_lb=0.0, logger=_Quiet()),
        REF_DWR_STEPS,
    )
    timed("SRDO fit", "oodfs", lambda: SRDOWeighter(random_state=0).fit(X))
    timed("SRDO fit", "authors", lambda: official.decorrelation(X, random_state=0))
    w = dwr.weights_
    s = SVI()._settings()
    timed("SVI gate step (5000 epochs)", "oodfs", lambda: SVI._ratios(X, y, w, s, 0))

    def ref_gates():
        torch.manual_seed(0)
        stg = RefSTG(d, 1, sigma=0.1, lam=3)
        stg.train(X, y[:, None], W=(w / w.sum())[:, None], epochs=5000)
        return stg.get_ratios()

    timed("SVI gate step (5000 epochs)", "authors", ref_gates)
    return rows


def authors(args):
    runs, stop = [], deadline(args.until)
    for n, d in AUTHOR_POINTS:
        if time.time() >= stop:
            break
        out = subprocess.run(
            [sys.executable, __file__, "authors-one", str(n), str(d), args.svi_repo, args.srdo_repo],
            capture_output=True,
            text=True,
            check=True,
        )
        runs += json.loads(out.stdout.strip().splitlines()[-1])
        with open(args.out, "a") as fh:
            for r in runs[-6:]:
                fh.write(json.dumps(r) + "\n")
    authors_report(runs)


def authors_report(runs: list[dict]) -> None:
    rows = []
    for n, d in AUTHOR_POINTS:
        at = {(r["what"], r["impl"]): r for r in runs if (r["n"], r["d"]) == (n, d)}
        if not at:
            continue
        dwr, ref = at[("DWR fit", "oodfs")], at[(f"DWR, {REF_DWR_STEPS} Adam steps", "authors")]
        per_o = dwr["cpu"] / (dwr["per"] + 1)  # one evaluation per iteration, plus the start
        per_r = ref["cpu"] / REF_DWR_STEPS
        so, sr = at[("SRDO fit", "oodfs")], at[("SRDO fit", "authors")]
        go, gr = at[("SVI gate step (5000 epochs)", "oodfs")], at[("SVI gate step (5000 epochs)", "authors")]
        rows.append(
            [
                n,
                d,
                f"{dwr['cpu']:.2f} ({dwr['per']} it)",
                f"{per_o * 1000:.2f} / {per_r * 1000:.2f} = {per_o / per_r:.2f}",
                f"{per_r * 5000:.1f} (5000 steps) / {dwr['cpu']:.2f} = {per_r * 5000 / dwr['cpu']:.0f}",
                f"{so['cpu']:.2f} / {sr['cpu']:.2f} = {so['cpu'] / sr['cpu']:.2f}",
                f"{go['cpu']:.2f} / {gr['cpu']:.2f} = {go['cpu'] / gr['cpu']:.2f}",
            ]
        )
    heads = [
        "n",
        "d",
        "oodfs DWR fit, CPU s",
        "DWR ms per step, oodfs / authors",
        "authors' DWR at 5000 steps / oodfs fit",
        "SRDO fit CPU s, oodfs / authors",
        "SVI gate step CPU s, oodfs / authors",
    ]
    print(tabulate(rows, headers=heads, tablefmt="github", disable_numparse=True))


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
    g.add_argument("--methods", nargs="+", default=["dwr", "srdo", "stg"])
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
    s.add_argument("--out", default="benchmarks/scale/scale_results.jsonl")
    s.add_argument("--until", help="start no fit after this UTC time, HH:MM")
    s.add_argument("--report", action="store_true", help="print the tables of --out and stop")
    s.add_argument("--fresh", action="store_true", help="one process per method (exact peak memory)")
    s.add_argument("--redo", action="store_true", help="measure points --out already holds again")
    sub.add_parser("numbers")
    rm = sub.add_parser("run-memory", help="oodfs bench's memory estimate against measured whole runs")
    rm.add_argument("--sizes", nargs="+", default=["20000x200"], help="NxD, e.g. 20000x200")
    rm.add_argument("--methods", nargs="+", default=["dwr", "ols", "correlation"])
    rm.add_argument("--jobs", type=int, default=1)
    rm.add_argument("--runs", type=int, default=1)
    sh = sub.add_parser("ship", help="write oodfs/results/scale_facts.json from --out")
    sh.add_argument("--out", default="benchmarks/scale/scale_results.jsonl")
    sh.add_argument(
        "--unstamped-machine-is-this",
        action="store_true",
        help="rows recorded before rows named their machine were measured on this machine",
    )
    me = sub.add_parser("memory-error", help="the fitted memory curves against the measured peaks")
    me.add_argument("--out", default="benchmarks/scale/scale_results.jsonl")
    me.add_argument("--min-mb", type=float, default=5.0, help="leave out peaks below this (counter noise)")
    au = sub.add_parser("authors")
    au.add_argument("--svi-repo", required=True)
    au.add_argument("--srdo-repo", required=True)
    au.add_argument("--until", help="start no point after this UTC time, HH:MM")
    au.add_argument("--out", default="/tmp/authors_cost.jsonl")
    au.add_argument("--report", action="store_true", help="print the table of --out and stop")
    ao = sub.add_parser("authors-one")
    ao.add_argument("n", type=int)
    ao.add_argument("d", type=int)
    ao.add_argument("svi_repo")
    ao.add_argument("srdo_repo")
    sn = sub.add_parser("same-numbers")
    sn.add_argument(
        "--old", required=True, help="a directory with the older commit's oodfs and oodfs_plugins"
    )
    so = sub.add_parser("suite-one")
    so.add_argument("path")
    so.add_argument("methods", nargs="+")
    so.add_argument("--task", default="regression", choices=["regression", "binary"])
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
    elif args.part == "authors" and args.report:
        with open(args.out) as fh:
            authors_report([json.loads(line) for line in fh if line.strip()])
    elif args.part == "authors":
        authors(args)
    elif args.part == "authors-one":
        print(json.dumps(authors_one(args.n, args.d, args.svi_repo, args.srdo_repo)))
    elif args.part == "run-memory":
        run_memory(args)
    elif args.part == "ship":
        ship(args)
    elif args.part == "memory-error":
        memory_error(args)
    elif args.part == "numbers":
        print(json.dumps(numbers()))
    elif args.part == "same-numbers":
        same_numbers(args)
    elif args.part == "suite-one":
        suite_one(args.methods, args.path, args.task)
    else:
        print(json.dumps(one(args.methods, args.n, args.d)))


if __name__ == "__main__":
    main()
