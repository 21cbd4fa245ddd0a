"""Fit times of the independence-driven weighters (DWR, SRDO) on the synthetic data.

    python benchmarks/fit_time/bench_independence.py [--runs 5] [--adam-runs 5] [--n 10000]

Data: synthetic ``poly``, r = 2.5, n = 10000, d = 10; run i uses data seed i (and
random_state i). One torch thread, as the runner sets per worker. Reports medians (and the
range) over the runs of:

* DWR with the default solver (L-BFGS-B, analytic gradient) and with ``solver="adam"``
  (the paper's Adam, lr 0.001, 5000 steps): fit time, final objective (the appendix formula),
  effective sample size; the time ratio and the objective ratio per run.
  Goal: default <= 1 s, >= 20x faster than Adam, objective never above Adam's.
* SRDO: one fit at the default gamma, and ``fit_grid`` over its 3 gammas (one classifier).
  Goal: fit <= 3 s.

The machine may be shared: the load average is printed with the results, and times are wall
times of the fit calls.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

from tabulate import tabulate


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _summary(values, fmt="{:.3f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs for DWR (default solver) and SRDO")
    parser.add_argument("--adam-runs", type=int, default=5, help="runs for DWR with Adam (5000 steps)")
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--r", type=float, default=2.5)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    from oodfs_plugins.environments.synthetic import Synthetic
    from oodfs_plugins.independence import DWRWeighter, SRDOWeighter

    warnings.simplefilter("ignore")  # collapse warnings are reported through the ESS column
    data = [Synthetic("poly").sample(args.r, args.n, seed) for seed in range(max(args.runs, args.adam_runs))]
    # warm-up (imports, first-call overheads), not timed
    DWRWeighter(solver="adam", adam_steps=5).fit(data[0][0][:500])
    DWRWeighter().fit(data[0][0][:500])  # scipy's L-BFGS-B has a first-call cost (~0.2 s)
    SRDOWeighter(epochs=1).fit(data[0][0][:500])

    rows, t_default, t_adam, f_default, f_adam = [], [], [], [], []
    ess_default, ess_adam, it_default = [], [], []
    for i in range(args.runs):
        t, est = _timed(lambda: DWRWeighter(random_state=i).fit(data[i][0]))
        t_default.append(t)
        f_default.append(est.objective_)
        ess_default.append(est.diagnostics_["ess"])
        it_default.append(est.n_iter_)
    for i in range(args.adam_runs):
        t, est = _timed(lambda: DWRWeighter(solver="adam", adam_steps=5000, random_state=i).fit(data[i][0]))
        t_adam.append(t)
        f_adam.append(est.objective_)
        ess_adam.append(est.diagnostics_["ess"])
    paired = range(min(args.runs, args.adam_runs))
    time_ratio = [t_adam[i] / t_default[i] for i in paired]
    obj_ratio = [f_default[i] / f_adam[i] for i in paired]
    rows.append(
        [
            "DWR, L-BFGS-B (default)",
            args.runs,
            _summary(t_default),
            _summary(f_default, "{:.4f}"),
            _summary(ess_default, "{:.0f}"),
            f"{statistics.median(it_default):.0f} iterations",
        ]
    )
    rows.append(
        [
            "DWR, Adam lr 0.001, 5000 steps",
            args.adam_runs,
            _summary(t_adam),
            _summary(f_adam, "{:.4f}"),
            _summary(ess_adam, "{:.0f}"),
            "5000 steps",
        ]
    )

    t_srdo, t_grid, ess_srdo = [], [], []
    grid = SRDOWeighter.grid_points()
    for i in range(args.runs):
        t, est = _timed(lambda: SRDOWeighter(random_state=i).fit(data[i][0]))
        t_srdo.append(t)
        ess_srdo.append(est.diagnostics_["ess"])
        t, _ = _timed(lambda: SRDOWeighter.fit_grid(data[i][0], grid, random_state=i))
        t_grid.append(t)
    rows.append(
        [
            "SRDO, fit (gamma = 10)",
            args.runs,
            _summary(t_srdo),
            "",
            _summary(ess_srdo, "{:.0f}"),
            f"{SRDOWeighter().epochs} epochs x batch {SRDOWeighter().batch_size}",
        ]
    )
    rows.append(
        [
            f"SRDO, fit_grid (gamma in {[p['gamma'] for p in grid]})",
            args.runs,
            _summary(t_grid),
            "",
            "",
            "one classifier",
        ]
    )

    print(
        f"n = {args.n}, d = {data[0][0].shape[1]}, synthetic poly r = {args.r}; 1 torch thread; "
        f"load average {os.getloadavg()[0]:.2f} (1 min)"
    )
    print(
        tabulate(rows, headers=["weighter", "runs", "time s: median (min-max)", "objective", "ESS", "budget"])
    )
    print()
    summary = [
        [
            "DWR default / Adam time ratio (speed-up)",
            _summary(time_ratio, "{:.1f}"),
            ">= 20",
            statistics.median(time_ratio) >= 20,
        ],
        ["DWR default time, s", _summary(t_default), "<= 1", statistics.median(t_default) <= 1],
        [
            "DWR objective default / Adam",
            _summary(obj_ratio, "{:.2f}"),
            "<= 1 in every run",
            max(obj_ratio) <= 1,
        ],
        ["SRDO fit time, s", _summary(t_srdo), "<= 3", statistics.median(t_srdo) <= 3],
    ]
    print(tabulate(summary, headers=["measure", "median (min-max)", "goal", "met"]))


if __name__ == "__main__":
    main()
