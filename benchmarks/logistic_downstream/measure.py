"""The logistic downstream model with its scorer computed without re-validation, against
scikit-learn's own ``neg_log_loss`` scorer: CPU time side by side, and the predictions compared
bit for bit (the numbers are in README.md beside this script).

    python benchmarks/logistic_downstream/measure.py [--repeats 5] [--rows 2000] [--features 20]

Each repeat draws one binary table and 24 feature subsets, trains the model on every subset both
ways (the order alternates between repeats) and records each way's CPU time; the ratio is the
median over repeats of (ours / scikit-learn's scorer) from the same repeat.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from oodfs_plugins.downstream import Logistic, _SklearnModel


class SklearnScorer(Logistic):
    """The same model scored by scikit-learn's ``neg_log_loss`` scorer (the way before)."""

    def estimator(self, seed: int):
        return _SklearnModel.estimator(self, seed)


def table(rng, rows: int, features: int):
    X = rng.normal(size=(rows, features))
    beta = rng.normal(size=features) * (rng.random(features) < 0.4)
    y = (rng.random(rows) < 1 / (1 + np.exp(-(X @ beta)))).astype(float)
    sizes = rng.integers(1, features + 1, 24)
    subsets = [tuple(sorted(rng.choice(features, size=k, replace=False))) for k in sizes]
    return X, y, rng.normal(size=(rows // 2, features)), subsets


def cpu(model, X, y, T, subsets, seed):
    start = time.process_time()
    out = model.predict_subsets(X, y, subsets, seed, [T, X])
    return time.process_time() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--features", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    ours_s, theirs_s, ratios, unequal = [], [], [], 0
    for r in range(args.repeats):
        X, y, T, subsets = table(rng, args.rows, args.features)
        ways = [("ours", Logistic(task="binary")), ("sklearn", SklearnScorer(task="binary"))]
        timed = {name: cpu(model, X, y, T, subsets, r) for name, model in (ways if r % 2 else ways[::-1])}
        (t_ours, p_ours), (t_sk, p_sk) = timed["ours"], timed["sklearn"]
        unequal += sum(not np.array_equal(a, b) for a, b in zip(p_ours, p_sk))
        ours_s.append(t_ours)
        theirs_s.append(t_sk)
        ratios.append(t_ours / t_sk)
        print(f"repeat {r + 1}: ours {t_ours:.2f} s, scikit-learn's {t_sk:.2f} s, ratio {ratios[-1]:.3f}")
    print(
        f"median CPU over {args.repeats} repeats ({args.rows} x {args.features}, 24 subsets): ours "
        f"{statistics.median(ours_s):.2f} s, scikit-learn's scorer {statistics.median(theirs_s):.2f} s, "
        f"ratio {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
        f"prediction arrays not equal bit for bit: {unequal}"
    )


if __name__ == "__main__":
    main()
