"""Fit time of the eight baseline selectors: default grid point, whole grid (``fit_grid``) and,
for the methods that share work across their grid, the naive whole grid (one fit per point).

Data: synthetic ``poly``, r_train = 2.5, n = 10000, d = 10 (docs/PROTOCOL.md, section 1), one draw. Each
repeat
runs every (method, mode) once, in an interleaved order, so that load on a shared machine hits
all of them alike; the tables show medians over repeats of wall time and of CPU (process) time
-- on a shared machine CPU time is the steadier figure. All fits are single-threaded (torch 1
thread, XGBoost ``n_jobs=1``, forests ``n_jobs=1``): the benchmark runner parallelises over
tasks instead.

    python benchmarks/fit_time/bench_baselines.py                      # 3 repeats; naive grids of gb/rf once
    python benchmarks/fit_time/bench_baselines.py --repeats 5 --naive-repeats-slow 3
    python benchmarks/fit_time/bench_baselines.py --gb-options         # + what could make gb's grid cheaper
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np
from tabulate import tabulate

from oodfs.contract.seeds import derive_seed
from oodfs_plugins.baselines import SELECTORS

SHARING = ("mi", "gb", "xgb", "rf", "lasso", "stg")  # methods whose fit_grid shares work
SLOW_NAIVE = ("gb", "rf")  # naive whole grid takes minutes: fewer repeats by default


def make_data(n: int, seed: int):
    try:
        from oodfs_plugins.environments.synthetic import Synthetic
    except ImportError:  # pragma: no cover - fallback when the environment plugin is absent
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, 10))
        y = X[:, :5] @ np.array([1 / 3, -2 / 3, 1, -1 / 3, 2 / 3]) + X[:, 0] * X[:, 1] * X[:, 2] / 4
        return X, y + 0.3 * rng.normal(size=n), "N(0,1) features, poly-like target (synthetic plugin absent)"
    X, y = Synthetic(setting="poly").sample(2.5, n, derive_seed(seed, "bench-baselines", "train"))
    return X, y, "synthetic poly, r = 2.5"


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def run(cls, mode: str, X, y, seed: int):
    if mode == "default":
        return lambda: cls(random_state=seed).fit(X, y)
    points = cls.grid_points()
    if mode == "grid":
        return lambda: cls.fit_grid(X, y, points, random_state=seed)
    return lambda: [cls(**p, random_state=seed).fit(X, y) for p in points]  # naive


def fmt(seconds: list[float]) -> str:
    return "" if not seconds else f"{statistics.median(seconds):.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument(
        "--repeats", type=int, default=3, help="repeats of default point, grid and cheap naive grids"
    )
    ap.add_argument(
        "--naive-repeats-slow", type=int, default=1, help=f"repeats of the naive grid of {SLOW_NAIVE}"
    )
    ap.add_argument("--methods", default=",".join(c.name for c in SELECTORS))
    ap.add_argument("--gb-options", action="store_true", help="also time options for a cheaper gb grid")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    X, y, what = make_data(args.n, args.seed)
    classes = {c.name: c for c in SELECTORS}
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(classes)
    if unknown:
        ap.error(f"unknown methods {sorted(unknown)}; valid: {', '.join(classes)}")
    print(
        f"# bench_baselines: {what}, n = {X.shape[0]}, d = {X.shape[1]}; python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start"
    )
    import sklearn
    import torch
    import xgboost

    print(f"# scikit-learn {sklearn.__version__}, xgboost {xgboost.__version__}, torch {torch.__version__}")

    # warm-up: imports and first-call costs (torch, xgboost) are not part of any timing
    Xs, ys = X[:200], y[:200]
    for m in methods:
        cls = classes[m]
        fast = {
            "stg": {"max_epochs": 1},
            "gb": {"n_estimators": 2},
            "rf": {"n_estimators": 2},
            "xgb": {"n_estimators": 2},
        }.get(m, {})
        cls(**fast, random_state=0).fit(Xs, ys)

    times: dict = {(m, mode): ([], []) for m in methods for mode in ("default", "grid", "naive")}
    for r in range(max(args.repeats, args.naive_repeats_slow)):
        for m in methods:
            modes = ["default", "grid"] if r < args.repeats else []
            if m in SHARING and r < (args.naive_repeats_slow if m in SLOW_NAIVE else args.repeats):
                modes.append("naive")
            for mode in modes:
                wall, cpu = timed(run(classes[m], mode, X, y, seed=r))
                times[(m, mode)][0].append(wall)
                times[(m, mode)][1].append(cpu)
                print(
                    f"  repeat {r}: {m:12s} {mode:8s} wall {wall:7.2f} s  cpu {cpu:7.2f} s",
                    file=sys.stderr,
                    flush=True,
                )

    rows = []
    total_grid = 0.0
    for m in methods:
        cls = classes[m]
        dw, dc = times[(m, "default")]
        gw, gc = times[(m, "grid")]
        nw, nc = times[(m, "naive")]
        total_grid += statistics.median(gc)
        saving = f"{statistics.median(nc) / statistics.median(gc):.1f}x" if nc else ""
        rows.append(
            [
                m,
                len(cls.grid_points()),
                str(cls.default_params() or "-"),
                fmt(dw),
                fmt(dc),
                fmt(gw),
                fmt(gc),
                fmt(nw),
                fmt(nc),
                len(nc) or "",
                saving,
            ]
        )
    print()
    print(
        tabulate(
            rows,
            headers=[
                "method",
                "points",
                "default point",
                "default wall",
                "default cpu",
                "grid wall",
                "grid cpu",
                "naive wall",
                "naive cpu",
                "naive reps",
                "grid saving (cpu)",
            ],
            tablefmt="github",
        )
    )
    longest = max(statistics.median(times[(m, "grid")][1]) for m in methods)
    print(
        f"\nWhole grid of these {len(methods)} methods, one training set: {total_grid:.1f} CPU-s; with 2 "
        "jobs (one task per method) at least max(longest task, total / 2) = "
        f"{max(longest, total_grid / 2):.1f} s wall. Medians of {args.repeats} repeats (naive "
        f"{SLOW_NAIVE}: {args.naive_repeats_slow})."
    )

    if args.gb_options and "gb" in methods:
        gb_options(X, y, args.seed)
    return 0


def gb_options(X, y, seed: int) -> None:
    """Where gb's grid time goes, and two ways to cut it (not used by the selector)."""
    from joblib import Parallel, delayed
    from sklearn.ensemble import GradientBoostingRegressor
    from xgboost import XGBRegressor

    def gb_fit(depth):
        return GradientBoostingRegressor(n_estimators=200, max_depth=depth, random_state=seed).fit(X, y)

    rows = []
    fits = {}
    for depth in (6, 8, 10):
        w0, c0 = time.perf_counter(), time.process_time()
        fits[depth] = gb_fit(depth)
        rows.append(
            [
                f"sklearn GB, 200 stages, max_depth {depth}",
                f"{time.perf_counter() - w0:.2f}",
                f"{time.process_time() - c0:.2f}",
                "",
                "",
            ]
        )
    w0 = time.perf_counter()
    Parallel(n_jobs=2)(delayed(gb_fit)(d) for d in (10, 8, 6))
    rows.append(
        [
            "sklearn GB, the 3 depths in 2 processes (joblib)",
            f"{time.perf_counter() - w0:.2f}",
            "(in workers)",
            "identical",
            "identical",
        ]
    )
    # the same algorithm in another implementation: exact greedy CART on squared-error residuals,
    # no L2 leaf penalty, learning rate 0.1, initial prediction = mean(y); importances = total gain
    for depth in (6, 8, 10):
        w0, c0 = time.perf_counter(), time.process_time()
        xg = XGBRegressor(
            n_estimators=200,
            max_depth=depth,
            learning_rate=0.1,
            reg_lambda=0.0,
            min_child_weight=1.0,
            tree_method="exact",
            base_score=float(np.mean(y)),
            n_jobs=1,
            importance_type="total_gain",
        ).fit(X, y)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        a, b = fits[depth].feature_importances_, xg.feature_importances_.astype(float)
        same_rank = np.array_equal(np.argsort(-a, kind="stable"), np.argsort(-b, kind="stable"))
        rows.append(
            [
                f"xgboost exact (GB emulation), 200 rounds, max_depth {depth}",
                f"{wall:.2f}",
                f"{cpu:.2f}",
                f"{np.abs(a - b).max():.4f}",
                "yes" if same_rank else "no",
            ]
        )
    print()
    print(
        tabulate(
            rows,
            headers=[
                "gb grid option (one repeat)",
                "wall s",
                "cpu s",
                "max |d importance| vs sklearn",
                "same ranking",
            ],
            tablefmt="github",
        )
    )


if __name__ == "__main__":
    sys.exit(main())
