"""The downstream MLP's logistic output: the numba kernel against the torch engine and scikit-learn's
MLPClassifier, per data set.

Data: the paper's synthetic generator (``poly`` setting, bias rate r_train = 2.5, tests at
r = -3 and 3; docs/PROTOCOL.md, section 2) with its outcome turned binary by a logistic link,
y ~ Bernoulli(sigmoid(scale * (Y - median) / sd)) (scale ``--scale``, 2 by default), one draw per
data set (``--data-sets`` runs). On each data set ``--subsets`` feature subsets (k = 1..5, drawn
once) are trained by

* the numba engine and the torch engine of :func:`oodfs.run.downstream.fit_downstream` with
  ``task="binary"`` (the default profile; the same initial weights, split, minibatch order and
  schedule; they differ in float order only), and the torch engine under a second seed: its own
  seed-to-seed spread, the yardstick for the numba - torch difference;
* scikit-learn's ``MLPClassifier`` with the same architecture (hidden (5, 5), ReLU, Adam lr 0.001,
  batch 256, early stopping on 15 % of the rows), one fit per subset: the library a user would
  reach for.

Reported: per engine pair, the median and 95th percentile of |difference| in test log-loss and
AUC over (data set, subset, test environment); each engine's mean test log-loss; wall and CPU time
per data set (all subsets), engines interleaved, one thread, medians.

    python benchmarks/downstream_engines/bench_classifier_engines.py \
        --out benchmarks/downstream_engines/classifier_engines.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
import torch
from tabulate import tabulate

from oodfs.contract.tasks import get_task
from oodfs.run.downstream import PROFILES, fit_downstream


def data_set(run: int, n: int, n_test: int, scale: float):
    from oodfs_plugins.environments.synthetic import Synthetic

    env = Synthetic(setting="poly")
    X, y = env.sample(2.5, n, 1000 + run)
    tests = [env.sample(r, n_test, 2000 + 10 * run + i) for i, r in enumerate((-3.0, 3.0))]
    centre, sd = np.median(y), y.std()
    rng = np.random.default_rng(run)

    def binary(v):
        return (rng.random(v.size) < 1 / (1 + np.exp(-scale * (v - centre) / sd))).astype(float)

    return X, binary(y), [(Xt, binary(yt)) for Xt, yt in tests]


def scores(P_list, tests):
    binary = get_task("binary")
    return [binary.score(yt, P) for P, (_, yt) in zip(P_list, tests)]


def numba_or_torch(engine, seed):
    def run(X, y, subsets, tests):
        models = fit_downstream(
            X, y, subsets, seed, task="binary", **{**PROFILES["default"], "engine": engine}
        )
        return [models.predict(Xt) for Xt, _ in tests]

    return run


def sklearn_mlp(X, y, subsets, tests):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    out = [np.empty((len(subsets), Xt.shape[0])) for Xt, _ in tests]
    for i, s in enumerate(subsets):
        cols = list(s)
        model = make_pipeline(
            StandardScaler(),
            MLPClassifier(
                hidden_layer_sizes=(5, 5),
                learning_rate_init=1e-3,
                batch_size=256,
                max_iter=1000,
                early_stopping=True,
                validation_fraction=0.15,
                n_iter_no_change=40,
                random_state=i,
            ),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X[:, cols], y)
        for P, (Xt, _) in zip(out, tests):
            P[i] = model.predict_proba(Xt[:, cols])[:, 1]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-sets", type=int, default=5)
    ap.add_argument("--subsets", type=int, default=20)
    ap.add_argument("--n", type=int, default=2000, help="training rows per data set (default 2000)")
    ap.add_argument("--n-test", type=int, default=2000)
    ap.add_argument("--scale", type=float, default=2.0)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    engines = {
        "numba": numba_or_torch("numba", 7),
        "torch": numba_or_torch("torch", 7),
        "torch, other seed": numba_or_torch("torch", 8),
        "sklearn MLPClassifier": sklearn_mlp,
    }
    fit_downstream(
        np.random.default_rng(0).normal(size=(50, 2)),
        np.tile([0.0, 1.0], 25),
        [(0,)],
        0,
        task="binary",
        max_epochs=1,
    )  # fmt: skip -- compile (or load the kernel cache)
    rng = np.random.default_rng(0)
    found = {name: [] for name in engines}
    wall = {name: [] for name in engines}
    cpu = {name: [] for name in engines}
    for run in range(args.data_sets):
        X, y, tests = data_set(run, args.n, args.n_test, args.scale)
        subsets = list(
            dict.fromkeys(
                tuple(sorted(rng.choice(X.shape[1], size=rng.integers(1, 6), replace=False).tolist()))
                for _ in range(args.subsets)
            )
        )
        for name, fn in engines.items():
            w0, c0 = time.perf_counter(), time.process_time()
            P = fn(X, y, subsets, tests)
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)
            found[name].append(scores(P, tests))
        print(f"data set {run + 1}/{args.data_sets}: {len(subsets)} subsets", file=sys.stderr, flush=True)

    def values(name, score):
        return np.concatenate([np.concatenate([t[score] for t in per_set]) for per_set in found[name]])

    rows = []
    for a, b in (("numba", "torch"), ("torch, other seed", "torch"), ("sklearn MLPClassifier", "torch")):
        for score in ("log_loss", "auc"):
            d = np.abs(values(a, score) - values(b, score))
            rows.append(
                [f"{a} vs {b}", score, f"{np.median(d):.2e}", f"{np.quantile(d, 0.95):.2e}", f"{d.max():.2e}"]
            )
    med = statistics.median
    speed = [
        [
            name,
            f"{values(name, 'log_loss').mean():.4f}",
            f"{values(name, 'auc').mean():.4f}",
            f"{med(wall[name]):.2f}",
            f"{med(cpu[name]):.2f}",
            f"{med(c / n for c, n in zip(cpu[name], cpu['numba'])):.1f}×",
        ]
        for name in engines
    ]
    out = [
        "# The downstream MLP's logistic output: numba kernel, torch engine, scikit-learn",
        "",
        f"`python benchmarks/downstream_engines/bench_classifier_engines.py --data-sets {args.data_sets} "
        f"--subsets {args.subsets} --n {args.n} --n-test {args.n_test} --scale {args.scale}`: "
        f"{args.data_sets} data sets (synthetic poly, r_train 2.5, tests r = -3 and 3, logistic link of "
        f"scale {args.scale}), up to {args.subsets} subsets each (k = 1..5), 2 test environments; "
        "1 thread; load average "
        f"{os.getloadavg()[0]:.1f} at the end.",
        "",
        "|difference| per (data set, subset, test environment):",
        "",
        tabulate(
            rows,
            headers=["pair", "score", "median", "95th pct", "max"],
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
        "Per engine: mean test log-loss and AUC; time per data set (all its subsets), medians:",
        "",
        tabulate(
            speed,
            headers=["engine", "log-loss", "AUC", "wall s", "CPU s", "CPU / numba's"],
            tablefmt="github",
            disable_numparse=True,
        ),
    ]
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
