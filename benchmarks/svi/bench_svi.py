"""SVI's cost per data set and what sharing round 1 across grid points saves.

One data set of the `svi` suite (n = 2000, 10 features, r_train = 2.5). SVI runs ``rounds`` (10)
DWR fits and gate fits; round 1's DWR weights (every pair decorrelated) depend on no gate setting,
so ``fit_grid`` computes them once per DWR setting and a grid of G points saves G - 1 of them.
Timed side by side in one process, medians of ``--repeats`` runs:

* each building block once: round-1 DWR (oodfs's, and the community DWR of the paper profile),
  a masked DWR of a later round, one gate fit (oodfs's STG, and the reference gates);
* whole fits of SVI and SVI^d per data set under both profiles, at the `svi` suite's n = 2000 and
  the paper grid's n = 10 000 (paper-profile fits once: each takes minutes);
* a 3-point grid over ``lam`` with ``fit_grid`` (shared round 1) against three separate fits,
  for both profiles' DWR (the paper profile's budget reduced by ``--paper-scale`` to stay short).

    python benchmarks/svi/bench_svi.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import numpy as np


def timed(fn, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--paper-scale", type=int, default=10, help="divide the paper profile's step counts by this"
    )
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.paper_scale < 1:
        print("bench_svi: --repeats and --paper-scale must be positive integers", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")
    from oodfs_plugins.environments.synthetic import Synthetic
    from oodfs_plugins.independence.dwr import DWRWeighter
    from oodfs_plugins.independence.dwr_community import community_dwr_weights
    from oodfs_plugins.independence.svi import SVI, SVID, MaskedDWR

    env = Synthetic(setting="svi", spurious=["V5"], exponent=5.0, noise_sd=0.3**0.5, clip=float("inf"))
    X, y = env.sample(2.5, 2000, 7)
    w = DWRWeighter().fit(X).weights_
    ratio = np.r_[np.ones(5), np.zeros(5)]
    mask = 1 - np.outer(ratio, ratio)
    r = args.repeats
    s_def = SVI()._settings()
    s_ref = SVI(gates="reference")._settings()
    rows = [
        ("round-1 DWR, oodfs (L-BFGS-B)", timed(lambda: DWRWeighter().fit(X), r)),
        ("masked DWR, oodfs (a later round)", timed(lambda: MaskedDWR(mask=mask).fit(X), r)),
        (
            "community DWR, 20 000 steps (paper profile)",
            timed(lambda: community_dwr_weights(X, None, 20000), 1),
        ),
        ("gate fit, oodfs STG (5000 full-batch steps)", timed(lambda: SVI._ratios(X, y, w, s_def, 0), r)),
        ("gate fit, reference gates (3000 + 5000 steps)", timed(lambda: SVI._ratios(X, y, w, s_ref, 0), r)),
    ]
    # whole fits per data set: the `svi` suite's size and the paper's grid's (n = 10 000)
    X10, y10 = env.sample(2.5, 10000, 7)
    paper = dict(dwr="community", dwr_steps=20000, gates="reference")
    for n, (Xn, yn) in ((2000, (X, y)), (10000, (X10, y10))):
        for label, cls in (("SVI", SVI), ("SVI^d", SVID)):
            rows.append((f"{label} whole fit, default profile, n = {n}", timed(lambda: cls().fit(Xn, yn), r)))
            rows.append(
                (f"{label} whole fit, paper profile, n = {n}", timed(lambda: cls(**paper).fit(Xn, yn), 1))
            )
    small = dict(rounds=2, stg_epochs=500)
    grid_rows = []
    for label, extra in (
        ("oodfs DWR", {}),
        ("community DWR", dict(dwr="community", dwr_steps=20000 // args.paper_scale)),
    ):
        points = [{"lam": lam, **small, **extra} for lam in (1.0, 3.0, 10.0)]
        shared = timed(lambda: SVI.fit_grid(X, y, points, random_state=0), r)
        separate = timed(lambda: [SVI(**p, random_state=0).fit(X, y) for p in points], r)
        grid_rows.append((label, shared, separate))
    print("# SVI's cost per data set (d = 10; n = 2000 unless named)\n")
    print(
        f"Medians of {r} runs (single runs for the community DWR and every paper-profile fit), "
        "seconds, one process.\n"
    )
    print("| what | seconds |\n| --- | --- |")
    for label, t in rows:
        print(f"| {label} | {t:.2f} |")
    print(
        "\nA 3-point lam grid (2 rounds, 500 gate steps, to keep it short; the paper profile's DWR "
        f"at 1/{args.paper_scale} of its steps): fit_grid shares round 1's weights.\n"
    )
    print("| DWR | fit_grid (shared round 1) | 3 separate fits | saved |\n| --- | --- | --- | --- |")
    for label, shared, separate in grid_rows:
        print(f"| {label} | {shared:.2f} | {separate:.2f} | {1 - shared / separate:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
