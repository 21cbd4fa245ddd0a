"""How far the logistic downstream model's predictions are from the exact optimum of its own
objective, and whether scikit-learn's other solver is faster (the numbers are in README.md beside
this script).

    python benchmarks/logistic_downstream/solver_accuracy.py [--repeats 3] [--rows 2000] [--features 20]

Each repeat draws the table and 24 subsets of measure.py and trains the shipped model (L-BFGS at
scikit-learn's default tolerance 1e-4), then the same model with L-BFGS at tolerance 1e-10 (the
"exact" optimum) and scikit-learn's ``newton-cholesky`` at 1e-4 and 1e-10. It prints, for each,
the largest |difference| of a predicted probability from the exact one, and its CPU time against
the shipped model's.
"""

from __future__ import annotations

import argparse

import numpy as np
from measure import cpu, table

from oodfs_plugins.downstream import Logistic

WAYS = [("lbfgs", 1e-4), ("lbfgs", 1e-10), ("newton-cholesky", 1e-4), ("newton-cholesky", 1e-10)]


class Solver(Logistic):
    """The shipped model with another solver or tolerance (the same objective, folds and C grid)."""

    def __init__(self, solver: str, tol: float):
        super().__init__(task="binary")
        self.solver, self.tol = solver, tol

    def estimator(self, seed: int):
        model = super().estimator(seed)
        model[-1].set_params(solver=self.solver, tol=self.tol, max_iter=10_000)
        return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--features", type=int, default=20)
    args = parser.parse_args()
    for r in range(args.repeats):
        X, y, T, subsets = table(np.random.default_rng(r), args.rows, args.features)
        cpu(Logistic(task="binary"), X, y, T, subsets[:1], r)  # warm up: imports, first calls
        shipped_s, _ = cpu(Logistic(task="binary"), X, y, T, subsets, r)
        runs = {way: cpu(Solver(*way), X, y, T, subsets, r) for way in WAYS}
        exact = runs[("lbfgs", 1e-10)][1]
        for (solver, tol), (seconds, predictions) in runs.items():
            gap = max(np.abs(p - e).max() for p, e in zip(predictions, exact))
            print(
                f"repeat {r + 1}: {solver:15s} tol {tol:.0e}: max |p - exact| {gap:.2e}, "
                f"CPU {seconds:.2f} s = {seconds / shipped_s:.2f} x the shipped model's {shipped_s:.2f} s"
            )


if __name__ == "__main__":
    main()
