"""Binary outcomes: the synthetic binary process's Bayes accuracy, and every binary-capable
method's default point on its draws (docs/PROTOCOL.md, "Binary targets").

    python benchmarks/binary/bench_binary.py bayes   [--n 50000]
    python benchmarks/binary/bench_binary.py methods [--runs 5] [--n-train 2000] [--r-train 2.5] \
        [--methods ...]

``bayes``: per setting (poly; mlp with mlp_seed 0..4) and ``logit_scale``, the Bayes accuracy
E[max(p, 1 - p)], p = P(Y = 1 | S), and the share of 1s, over n exact draws of each bias rate
of the suite's test environments (seed 1); the range over those environments is printed.

``methods``: per setting and run i (mlp_seed i for mlp, a column layout drawn from seed i), a
training draw of ``n_train`` rows at ``r_train`` (seed 1000 + i) and ``n_test`` rows of every
test bias rate (seed 2000 + i + 100 r_test). Every selector that declares "binary" is fitted at
its default point (``random_state = i``, ``task="binary"``); DWR and SRDO once more with
``binary_fit="wls"`` (rows ``dwr[wls]``, ``srdo[wls]``, from the same weights: one ``fit_grid``
call). Reported: rank average and F1 of the top k = 5 against S1..S5, the fit time, and, as a
downstream check, the test accuracy and log-loss of an unpenalised logistic regression on the
method's selected features (mean and worst over the test environments). A paired comparison of
``binary_fit`` logistic vs wls (per data set, both weighters) closes the output: mean difference
and a 95% t interval over the data sets (the unit of replication).

This runs without the runner, before the runner supports a task type; the suite
``synthetic-binary`` runs the same process on the full grid.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, log_loss
from tabulate import tabulate

import oodfs
from oodfs.contract.api import ranking_from_scores, support_mask
from oodfs.contract.metrics import f1_at_k, rank_average
from oodfs.contract.registry import registry

R_TEST = [-3.0, -2.5, -2.0, -1.5, -1.3, 1.3, 1.5, 2.0, 2.5, 3.0]
K = 5
#: not run by default: the reference's DWR (slow; DWR's selection step is the same), and the
#: oracles, which know the regression environment's selection and layout, not this one's
EXCLUDED = ("dwr_community", "oracle_ipw", "oracle_cond")


def bayes(args) -> None:
    env_cls = oodfs.get_environment("synthetic_binary")
    rows = []
    for setting, seeds in (("poly", [0]), ("mlp", range(5))):
        for seed in seeds:
            for scale in args.scales:
                env = env_cls(setting=setting, mlp_seed=seed, logit_scale=scale)
                acc, base = [], []
                for r in R_TEST:
                    X, y = env.sample(r, args.n, 1)
                    p = expit(env.logit(X))
                    acc.append(np.maximum(p, 1 - p).mean())
                    base.append(y.mean())
                rows.append(
                    [
                        setting,
                        seed if setting == "mlp" else "",
                        scale,
                        f"{min(acc):.3f}-{max(acc):.3f}",
                        f"{min(base):.3f}-{max(base):.3f}",
                    ]
                )
    print(f"n = {args.n} draws per test bias rate {R_TEST}")
    print(tabulate(rows, headers=["setting", "mlp_seed", "logit_scale", "Bayes accuracy", "share of 1s"]))


def _downstream(X, y, support, tests):
    """Accuracy and log-loss of unpenalised logistic regression on the selected columns, per test draw."""
    cols = np.flatnonzero(support)
    model = LogisticRegression(C=np.inf, max_iter=1000).fit(X[:, cols], y)
    acc, ll = [], []
    for Xt, yt in tests:
        p = model.predict_proba(Xt[:, cols])[:, 1]
        acc.append(accuracy_score(yt, p > 0.5))
        ll.append(log_loss(yt, p, labels=[0.0, 1.0]))
    return np.array(acc), np.array(ll)


def methods(args) -> None:
    reg = registry()
    names = args.methods or [
        n
        for n in reg.names("selector")
        if "binary" in reg.get("selector", n).task_types and n != "dwr_community"
    ]
    env_cls = oodfs.get_environment("synthetic_binary")
    records = []
    for setting in ("mlp", "poly"):
        for run in range(args.runs):
            env = env_cls(setting=setting, mlp_seed=run, layout_seed=run)
            X, y = env.sample(args.r_train, args.n_train, 1000 + run)
            tests = [env.sample(r, args.n_test, 2000 + run + int(100 * r)) for r in R_TEST]
            stable = env.stable_set
            for name in names:
                cls = reg.get("selector", name)
                variants = [(name, {})]
                if name in ("dwr", "srdo"):
                    variants.append((f"{name}[wls]", {"binary_fit": "wls"}))
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fits = cls.fit_grid(X, y, [p for _, p in variants], random_state=run, task="binary")
                seconds = time.perf_counter() - t0
                for (label, _), scores in zip(variants, fits):
                    ranking = ranking_from_scores(scores, run)
                    support = support_mask(scores, ranking, K)
                    acc, ll = (
                        _downstream(X, y, support, tests) if support.any() else (np.full(1, np.nan),) * 2
                    )
                    records.append(
                        dict(
                            setting=setting,
                            run=run,
                            method=label,
                            rank_avg=rank_average(scores, stable),
                            f1=f1_at_k(scores, stable, K),
                            acc_mean=float(acc.mean()),
                            acc_worst=float(acc.min()),
                            logloss_mean=float(ll.mean()),
                            logloss_worst=float(ll.max()),
                            seconds=seconds,
                        )
                    )
                print(f"{setting} run {run} {name}: {seconds:.1f} s", flush=True)
    if args.out:
        with open(args.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(records[0]))
            w.writeheader()
            w.writerows(records)
    _report(records, args)


def _mean_sd(values) -> str:
    return f"{statistics.mean(values):.3f} ({statistics.stdev(values) if len(values) > 1 else 0:.3f})"


def _report(records, args) -> None:
    print(
        f"\nn_train = {args.n_train} at r_train = {args.r_train}, n_test = {args.n_test} per test bias rate, "
        f"{args.runs} runs per setting; mean (sd) over runs; k = {K}"
    )
    for setting in ("mlp", "poly"):
        rows = []
        for m in dict.fromkeys(r["method"] for r in records):
            rs = [r for r in records if r["setting"] == setting and r["method"] == m]
            rows.append(
                [m]
                + [
                    _mean_sd([r[c] for r in rs])
                    for c in ("rank_avg", "f1", "acc_mean", "acc_worst", "logloss_mean")
                ]
                + [f"{statistics.median(r['seconds'] for r in rs):.1f}"]
            )
        rows.sort(key=lambda row: float(row[1].split()[0]))
        print(f"\nsetting {setting}")
        print(
            tabulate(
                rows, headers=["method", "rank avg", "F1", "acc mean", "acc worst", "log-loss mean", "fit s"]
            )
        )
    print("\nbinary_fit: logistic minus wls, paired per data set (both settings, both weighters)")
    rows = []
    for w in ("dwr", "srdo"):
        for c in ("rank_avg", "f1", "acc_mean", "acc_worst", "logloss_mean"):
            a = {(r["setting"], r["run"]): r[c] for r in records if r["method"] == w}
            b = {(r["setting"], r["run"]): r[c] for r in records if r["method"] == f"{w}[wls]"}
            d = np.array([a[key] - b[key] for key in a if key in b])
            if d.size < 2:
                continue
            half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
            rows.append(
                [
                    w,
                    c,
                    d.size,
                    f"{d.mean():+.4f}",
                    f"[{d.mean() - half:+.4f}, {d.mean() + half:+.4f}]",
                    int((d != 0).sum()),
                ]
            )
    print(
        tabulate(rows, headers=["weighter", "metric", "data sets", "mean diff", "95% t interval", "differ"])
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    b = sub.add_parser("bayes")
    b.add_argument("--n", type=int, default=50_000)
    b.add_argument("--scales", type=float, nargs="+", default=[2.0, 3.0, 4.0, 5.0, 6.0])
    m = sub.add_parser("methods")
    m.add_argument("--runs", type=int, default=5)
    m.add_argument("--n-train", type=int, default=2000)
    m.add_argument("--n-test", type=int, default=2000)
    m.add_argument("--r-train", type=float, default=2.5)
    m.add_argument("--methods", nargs="+")
    m.add_argument("--out", type=Path)
    args = parser.parse_args()
    {"bayes": bayes, "methods": methods}[args.part](args)


if __name__ == "__main__":
    main()
