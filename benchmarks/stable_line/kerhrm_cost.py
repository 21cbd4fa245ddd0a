"""What a kerhrm fit costs at the default point, and where the time goes.

    python benchmarks/stable_line/kerhrm_cost.py [--sizes 500 10000] [--repeats 3] \
        [--out benchmarks/stable_line/KERHRM_COST.md]

Data: the paper generator's poly setting at r = 2.5 (d = 10), the synthetic suite's size n = 10 000
and n = 500. Per size: the median wall time of ``--repeats`` whole fits (seed 0, default point), and
of the fit's phases run alone on the same data: the tangent features, their truncated SVD, one
round's environment inference (from a random start) and one round's invariant learning.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.utils.extmath import randomized_svd

from oodfs_plugins.environments.synthetic import Synthetic
from oodfs_plugins.independence.kerhrm import KerHRM, TangentNetwork, cluster_environments


def timed(f, repeats):
    """(median wall seconds, median CPU seconds of this process, f's result): on a shared machine
    the wall time counts the waits for a core as well, the CPU time only the work."""
    times, out = [], None
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        out = f()
        times.append((time.perf_counter() - t, time.process_time() - c))
    return tuple(np.median(times, axis=0)), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 10_000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    KerHRM(width=8, n_components=2, outer_iters=1, epochs=2).fit(*Synthetic().sample(2.5, 50, 0))  # compile
    rows = []
    for n in args.sizes:
        X, y = Synthetic(setting="poly").sample(2.5, n, 0)
        est = KerHRM(random_state=0)
        whole, _ = timed(lambda: est.fit(X, y), args.repeats)
        Xs = (X - X.mean(0)) / X.std(0)
        yc = y - y.mean()
        net = TangentNetwork(X.shape[1], est.width, np.random.default_rng(0))
        t_ntf, ntf = timed(lambda: net.tangent_features(Xs), args.repeats)
        t_svd, (U, S, _) = timed(
            lambda: randomized_svd(ntf, n_components=est.n_components, n_iter=10, random_state=0),
            args.repeats,
        )
        ntf = None  # the n x 12 289 matrix, freed before the rest
        feats = (U * S).astype(float)
        start = np.random.default_rng(0).integers(0, 2, n)
        t_cl, (domain, _) = timed(
            lambda: cluster_environments(feats, yc, start, 2, est.cluster_lam, est.cluster_tol, 100),
            args.repeats,
        )
        t_inv, _ = timed(
            lambda: est._invariant(np.random.default_rng(0), feats, yc - net.output(Xs), domain), args.repeats
        )
        rows.append((n, whole, t_ntf, t_svd, t_cl, t_inv))
        print(rows[-1], flush=True)
    lines = [
        "Seconds, wall / CPU (median of the repeats):",
        "",
        "| n | whole fit | tangent features | SVD | one round: clustering | one round: invariant learning |",
        "| --- | --- | --- | --- | --- | --- |",
        *("| " + " | ".join([str(r[0])] + [f"{w:.1f} / {c:.1f}" for w, c in r[1:]]) + " |" for r in rows),
    ]
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
