"""Each method's fit peak memory against the estimate `oodfs select` and `oodfs bench` refuse by.

    nice -n 10 python benchmarks/memory_estimate/measure.py measure   # one process per fit
    python benchmarks/memory_estimate/measure.py report               # the table of README.md

``measure``: for every method of the synthetic suite (kerhrm included), its default grid point
fitted once at two or three sizes of the scale suite (n in 2 000, 20 000, 200 000; d in 10, 50,
200, 500; the sizes whose fit took at most about 20 CPU s there; kerhrm also at 50 000 x 2), each
in a fresh process: the synthetic generator (poly, r_train 2.5, data seed 0; standard normal
columns below d = 5), a warm-up fit on a few rows (imports and
numba's compiled kernels are not the fit's memory), then the kernel's peak resident set is reset
(/proc/self/clear_refs) and the fit's peak growth is VmHWM after the fit minus VmRSS before it:
what the estimate's fit term stands for. One JSON line per fit in ``peaks.jsonl``.

``report``: each measured peak beside the estimate of the installed oodfs
(``oodfs.results.scale.fit_memory_mb``) and their ratio, estimate / measured, which must be at
least 1 for every row (exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one thread per fit, as a run's workers fit

HERE = os.path.dirname(os.path.abspath(__file__))
PEAKS = os.path.join(HERE, "peaks.jsonl")

#: (method, n, d): per method the scale-suite sizes at which its fit is cheap enough to repeat here
SIZES = {
    "correlation": [(20000, 500), (200000, 50), (200000, 200)],
    "dwr": [(2000, 500), (20000, 200), (200000, 10)],
    "gb": [(2000, 200), (20000, 50), (200000, 10)],
    "mi": [(2000, 500), (20000, 50), (200000, 10)],
    "ols": [(20000, 500), (200000, 50), (200000, 200)],
    "lasso": [(20000, 500), (200000, 50), (200000, 200)],
    "rf": [(2000, 500), (20000, 50), (200000, 10)],
    "srdo": [(2000, 200), (2000, 500), (20000, 10)],
    "stg": [(20000, 200), (20000, 500), (200000, 50)],
    "svi": [(2000, 10), (2000, 50)],
    "svi_d": [(2000, 200), (20000, 10), (20000, 50)],
    "xgb": [(2000, 500), (20000, 200), (200000, 50)],
    "iamb": [(20000, 10), (200000, 10)],
    "hiton_mb": [(20000, 10), (200000, 10)],
    "hrm": [(2000, 200), (20000, 50), (200000, 10)],
    "rsw": [(2000, 10), (20000, 10)],
    # and the shape, d = 2 (below the generator's 5 stable features: standard normal data),
    # where the network's hidden rows, not the tangent features, are the largest arrays of the fit
    "kerhrm": [(2000, 10), (2000, 50), (20000, 10), (50000, 2)],
}


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def one(method: str, n: int, d: int) -> dict:
    """In this (fresh) process: the fit's CPU seconds and its peak resident memory growth in MB."""
    import gc
    import warnings

    import numpy as np
    import torch

    from oodfs.contract.registry import registry
    from oodfs_plugins.environments.synthetic import Synthetic

    torch.set_num_threads(1)
    if d >= 5:
        X, y = Synthetic(setting="poly", d_v=d - 5).sample(2.5, n, 0)
    else:
        rng = np.random.default_rng(0)
        X = rng.standard_normal((n, d))
        y = X[:, 0] + 0.5 * rng.standard_normal(n)
    cls = registry().get("selector", method)
    few = min(n, max(200, 2 * d + 10))  # least squares needs more rows than features
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls.fit_grid_detailed(X[:few], y[:few], [{}], random_state=0)
        gc.collect()
        with open("/proc/self/clear_refs", "w") as fh:  # reset the peak resident set (VmHWM)
            fh.write("5")
        rss0 = _status_kb("VmRSS")
        c0 = time.process_time()
        cls.fit_grid_detailed(X, y, [{}], random_state=0)
        cpu = time.process_time() - c0
    peak = (_status_kb("VmHWM") - rss0) / 1024
    return {"method": method, "n": n, "d": d, "cpu_s": round(cpu, 2), "peak_mb": round(peak, 1)}


def measure(args) -> None:
    done = set()
    if os.path.exists(PEAKS) and not args.redo:
        with open(PEAKS) as fh:
            done = {(r["method"], r["n"], r["d"]) for r in map(json.loads, fh)}
    todo = [(m, n, d) for m in args.methods for n, d in SIZES[m] if (m, n, d) not in done]
    for m, n, d in todo:
        t0 = time.perf_counter()
        code = (
            f"import sys, json; sys.path.insert(0, {HERE!r}); import measure; "
            f"print(json.dumps(measure.one({m!r}, {n}, {d})))"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{m} {n} x {d}: failed: {proc.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        row["wall_s"] = round(time.perf_counter() - t0, 1)
        with open(PEAKS, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(
            f"{m} {n} x {d}: {row['peak_mb']:.0f} MB, {row['cpu_s']:.1f} CPU s", file=sys.stderr, flush=True
        )


def report(args) -> int:
    from tabulate import tabulate

    from oodfs.results.scale import fit_memory_mb

    rows = {}
    with open(PEAKS) as fh:
        for r in map(json.loads, fh):
            rows[(r["method"], r["n"], r["d"])] = r  # a --redo replaces a size
    out, low = [], []
    for (m, n, d), r in rows.items():
        est = fit_memory_mb(m, n, d)
        # a peak below 1 MB is the counter's noise; the ratio is taken against 1 MB there
        ratio = est / max(r["peak_mb"], 1.0) if est is not None else 0.0
        if ratio < 1:
            low.append(f"{m} {n} x {d}")
        out.append(
            [m, f"{n:,}", d, f"{r['peak_mb']:.0f}", "none" if est is None else f"{est:.0f}", f"{ratio:.2f}"]
        )
    heads = ["method", "n", "d", "measured MB", "estimated MB", "estimate / measured"]
    print(tabulate(out, headers=heads, tablefmt="github", disable_numparse=True))
    ratios = sorted(float(r[5]) for r in out)
    median = ratios[len(ratios) // 2]
    print(f"\n{len(out)} fits; estimate / measured {ratios[0]:.2f}-{ratios[-1]:.2f}, median {median:.2f}")
    if low:
        print(f"below 1: {', '.join(low)}")
        return 1
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure", help="fit each method at its sizes, one process per fit")
    m.add_argument("--methods", nargs="+", default=list(SIZES), choices=list(SIZES))
    m.add_argument("--redo", action="store_true", help="measure again the sizes peaks.jsonl has")
    sub.add_parser("report", help="the measured peaks against the estimate")
    args = p.parse_args()
    if args.command == "measure":
        measure(args)
        return 0
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
