"""gb and rf: the oodfs CART engine against scikit-learn -- speed of the whole grid, and fidelity.

1. Speed: CPU time of ``fit_grid`` over the whole grid (9 points) of gb and rf on one training
   set (synthetic ``poly``, r_train = 2.5, n = 10000), with ``engine="sklearn"`` and with the
   default ``engine="oodfs"``. Each repeat runs the four (method, engine) fits in turn, so load
   on a shared machine hits them alike; the table shows medians over repeats and the ratio
   sklearn / oodfs. Everything runs in one thread (the benchmark runner parallelises over tasks).
2. Fidelity, judged by the benchmark's own outcomes: over a few training sets (both settings,
   a few r_train) and every grid point, how often oodfs picks the same top-5 set as
   scikit-learn with the same ``random_state``, and the mean difference in rank average of the
   true set (columns 0..4) -- next to the same numbers for scikit-learn against itself, as
   measures of its own arbitrariness: with another tie-breaking seed (for gb another
   ``random_state``; for rf, whose random state also draws the bootstrap samples, the same
   bootstrap samples with other tree seeds, fitted as the forest fits its trees), and on the
   same rows in another order (same seed), which changes how it decides near-exact ties.
3. The numba compile cost: first fits in a fresh process with an empty compile cache, with the
   cache filled, and the imports alone.

    python benchmarks/fit_time/bench_trees.py  # ~5 CPU-min: 3 repeats at n = 10000, 4 sets at n = 2000
    python benchmarks/fit_time/bench_trees.py \
        --n-fidelity 10000  # fidelity at the benchmark's n (~8 CPU-min more)
    python benchmarks/fit_time/bench_trees.py --quick  # ~1 CPU-min: 1 repeat at n = 2000, 2 sets at n = 1000
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from tabulate import tabulate

import oodfs
from oodfs.contract.metrics import rank_average
from oodfs.contract.seeds import derive_seed
from oodfs_plugins.baselines import GradientBoosting, RandomForest

TRUE_SET = (0, 1, 2, 3, 4)


class SklearnGB(GradientBoosting):
    grid_engine = "sklearn"


class SklearnRF(RandomForest):
    grid_engine = "sklearn"


ENGINES = {
    "gb": {"oodfs": GradientBoosting, "sklearn": SklearnGB},
    "rf": {"oodfs": RandomForest, "sklearn": SklearnRF},
}


def data(setting: str, r: float, n: int, seed: int):
    env = oodfs.get_environment("synthetic")(setting=setting)
    return env.sample(r, n, derive_seed(seed, "bench-trees", setting, r, "train"))


def grid(cls, X, y, seed):
    return cls.fit_grid(X, y, cls.grid_points(), random_state=seed)


def cpu(fn):
    c0 = time.process_time()
    out = fn()
    return time.process_time() - c0, out


def speed(n: int, repeats: int, seed: int) -> None:
    X, y = data("poly", 2.5, n, seed)
    times = {(m, e): [] for m in ENGINES for e in ("sklearn", "oodfs")}
    for r in range(repeats):
        for m, engines in ENGINES.items():
            for e in ("sklearn", "oodfs"):
                t, _ = cpu(lambda: grid(engines[e], X, y, derive_seed(seed, m, r)))
                times[(m, e)].append(t)
                print(f"  repeat {r}: {m} {e:7s} grid {t:7.2f} CPU-s", file=sys.stderr, flush=True)
    rows = []
    for m in ENGINES:
        sk, oo = statistics.median(times[(m, "sklearn")]), statistics.median(times[(m, "oodfs")])
        ratios = [a / b for a, b in zip(times[(m, "sklearn")], times[(m, "oodfs")])]
        rows.append([m, f"{sk:.2f}", f"{oo:.2f}", f"{sk / oo:.1f}x", f"{min(ratios):.1f}-{max(ratios):.1f}x"])
    print(
        f"\n## Whole grid (9 points) on one training set: poly, r_train = 2.5, n = {n}; "
        f"CPU seconds, medians of {repeats} repeats\n"
    )
    print(
        tabulate(
            rows,
            headers=["method", "sklearn", "oodfs", "sklearn / oodfs", "per-repeat ratios"],
            tablefmt="github",
        )
    )


def sklearn_rf(X, y, seed: int, other: int, perm=None) -> list[np.ndarray]:
    """scikit-learn's random forest grid with the bootstrap samples of ``random_state = seed``
    and tree seeds drawn from ``other``, on the rows in the order ``perm`` (the same rows, the same
    draws): the trees are fitted as RandomForestRegressor fits them (a DecisionTreeRegressor on
    the draw counts as sample weights), scored as RandomForest.fit_grid scores scikit-learn's
    forest (depths cut from the depth-10 trees, prefixes of 200 trees). ``other = seed`` and no
    ``perm`` is exactly RandomForest(engine="sklearn")."""
    from sklearn.tree import DecisionTreeRegressor

    from oodfs_plugins.baselines.cart import RandomForestRegressor as CartForest
    from oodfs_plugins.baselines.trees import _impurity_decrease, _mean_normalised, _normalised

    points = RandomForest.grid_points()
    m_max = max(p["n_estimators"] for p in points)
    d_max = max(p["max_depth"] for p in points)
    boot, ties = np.random.RandomState(seed), np.random.RandomState(other)
    perm = np.arange(len(y)) if perm is None else perm
    trees = []
    for _ in range(m_max):
        counts = CartForest.bootstrap_counts(boot.randint(np.iinfo(np.int32).max), len(y))
        tree = DecisionTreeRegressor(max_depth=d_max, random_state=ties.randint(np.iinfo(np.int32).max))
        trees.append(tree.fit(X[perm], y[perm], sample_weight=counts[perm]).tree_)
    d = X.shape[1]
    return [
        _mean_normalised(
            [_normalised(_impurity_decrease(t, d, p["max_depth"])) for t in trees[: p["n_estimators"]]], d
        )
        for p in points
    ]


#: what is compared with scikit-learn (same data, same random_state): the oodfs engine, and two
#: measures of scikit-learn's own arbitrariness in breaking ties between equally good features
COMPARED = ("oodfs", "sklearn, other seed", "sklearn, rows shuffled")


def top5(scores) -> frozenset:
    return frozenset(np.argsort(-np.asarray(scores), kind="stable")[:5].tolist())


def fidelity(n: int, sets: list[tuple[str, float]], seed: int) -> None:
    stats = {(m, c): {"same": [], "delta": []} for m in ENGINES for c in COMPARED}
    for setting, r in sets:
        X, y = data(setting, r, n, seed)
        for m, engines in ENGINES.items():
            s0 = derive_seed(seed, setting, r, m)
            s1 = derive_seed(seed, setting, r, m, "other")
            t0 = time.perf_counter()
            ref = grid(engines["sklearn"], X, y, s0)
            perm = np.random.default_rng(s1).permutation(len(y))
            if m == "gb":
                other = grid(engines["sklearn"], X, y, s1)
                shuffled = grid(engines["sklearn"], X[perm], y[perm], s0)
            else:
                other, shuffled = sklearn_rf(X, y, s0, s1), sklearn_rf(X, y, s0, s0, perm)
            runs = dict(zip(COMPARED, (grid(engines["oodfs"], X, y, s0), other, shuffled)))
            for c, got in runs.items():
                for a, b in zip(got, ref):
                    stats[(m, c)]["same"].append(top5(a) == top5(b))
                    stats[(m, c)]["delta"].append(rank_average(a, TRUE_SET) - rank_average(b, TRUE_SET))
            print(f"  {setting} r={r} {m}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    rows = []
    for (m, c), s in stats.items():
        rows.append(
            [
                m,
                c,
                f"{100 * np.mean(s['same']):.1f} %",
                f"{np.mean(s['delta']):+.3f}",
                f"{np.mean(np.abs(s['delta'])):.3f}",
                len(s["same"]),
            ]
        )
    names = ", ".join(f"{s} r={r}" for s, r in sets)
    print(
        f"\n## Agreement with scikit-learn (same random_state) over {len(sets)} training sets ({names}; "
        f"n = {n}) x 9 grid points\n"
    )
    print(
        tabulate(
            rows,
            headers=[
                "method",
                "compared with scikit-learn",
                "same top-5 set",
                "mean d rank average",
                "mean |d rank average|",
                "points",
            ],
            tablefmt="github",
        )
    )
    print(
        "\n(d rank average: the candidate's rank average of the true set S = columns 0..4 minus "
        "scikit-learn's; lower is better. 'other seed': scikit-learn with another tie-breaking seed, "
        "which decides exact ties; 'rows shuffled': the same rows in another order, which changes "
        "float rounding and so decides the near-exact ties -- two features cutting a node alike give "
        "proxies equal up to rounding -- that scikit-learn leaves to rounding and oodfs to its seed.)"
    )


def compile_cost() -> None:
    imports = (
        "import time; t = time.perf_counter(); import numpy as np; "
        "from oodfs_plugins.baselines import GradientBoosting, RandomForest; "
        "from oodfs_plugins.baselines import cart; "
    )
    fits = (
        "X = np.random.default_rng(0).normal(size=(300, 5)); y = X[:, 0]; w = np.full(300, 2.0); "
        "[c(n_estimators=2, max_depth=3, random_state=0).fit(X, y, sample_weight=s) "
        "for c in (GradientBoosting, RandomForest) for s in (None, w)]; "
    )
    done = "print(time.process_time())"
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for what, code in (
            ("empty cache: imports + first fits (compiles)", imports + fits),
            ("cache filled: imports + first fits", imports + fits),
            ("imports only", imports),
        ):
            out = subprocess.run(
                [sys.executable, "-c", code + done], env=env, capture_output=True, text=True, check=True
            )
            rows.append([what, f"{float(out.stdout.strip()):.1f}"])
    print("\n## First gb + rf fits (unit and non-unit weights) in a fresh process\n")
    print(tabulate(rows, headers=["what", "CPU s"], tablefmt="github"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="small n, one repeat, two training sets, no compile part"
    )
    ap.add_argument("--n", type=int, help="rows of the timing set (default 10000; --quick 2000)")
    ap.add_argument("--repeats", type=int, help="timing repeats (default 3; --quick 1)")
    ap.add_argument("--n-fidelity", type=int, help="rows of each fidelity set (default 2000; --quick 1000)")
    ap.add_argument(
        "--sets", help="fidelity sets as setting:r_train,... (default mlp:1.5,mlp:3.0,poly:1.5,poly:3.0)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: speed, fidelity, compile")
    args = ap.parse_args(argv)
    n = args.n or (2000 if args.quick else 10000)
    repeats = args.repeats or (1 if args.quick else 3)
    n_fid = args.n_fidelity or (1000 if args.quick else 2000)
    sets = args.sets or ("mlp:2.0,poly:2.0" if args.quick else "mlp:1.5,mlp:3.0,poly:1.5,poly:3.0")
    sets = [(s.split(":")[0], float(s.split(":")[1])) for s in sets.split(",") if s]
    skip = set(args.skip.split(",")) | ({"compile"} if args.quick else set())

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        threadpool_limits = None
    import numba
    import sklearn

    print(
        f"# bench_trees: python {platform.python_version()}, scikit-learn {sklearn.__version__}, "
        f"numba {numba.__version__}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start"
    )
    limits = threadpool_limits(1) if threadpool_limits else None
    # warm-up: compilation (or loading the compiled code) and imports are not part of any timing
    Xs, ys = data("poly", 2.5, 300, args.seed)
    for engines in ENGINES.values():
        for cls in engines.values():
            cls(n_estimators=2, max_depth=3, random_state=0).fit(Xs, ys)
    if "speed" not in skip:
        speed(n, repeats, args.seed)
    if "fidelity" not in skip:
        fidelity(n_fid, sets, args.seed)
    if limits is not None:
        limits.restore_original_limits()
    if "compile" not in skip:
        compile_cost()
    return 0


if __name__ == "__main__":
    sys.exit(main())
