"""SRDO's density-ratio classifier on one synthetic data set (poly, r = 2.5, n = 10 000, seed 1),
its default budget of 200 epochs: timed under two MKL reproducibility branches and against its own
earlier code; its digest under other MKL branches or numpy vector loops shows whether they reach
SRDO's numbers (README.md, section 6).

    python benchmarks/references/srdo_classifier.py [--n 10000] [--epochs 200] [--batch-size 512]

tests/test_independence.py runs it small (n 2 000, 20 epochs) to check the digest.

Prints the MKL branch it ran under, the epochs, the classifier's own CPU seconds (without the
imports and the draw) and a digest of the logits (two runs under one branch give the same digest).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time

import oodfs  # noqa: F401 -- pins the kernels before numpy loads
from oodfs_plugins.environments.synthetic import Synthetic
from oodfs_plugins.independence.srdo import density_ratio_logits


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000, help="training rows")
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=512)
    args = p.parse_args()
    X, _ = Synthetic("poly").sample(2.5, args.n, 1)
    start = time.process_time()
    logits, _, epochs = density_ratio_logits(X, seed=0, epochs=args.epochs, batch_size=args.batch_size)
    seconds = time.process_time() - start
    digest = hashlib.sha256(logits.tobytes()).hexdigest()[:16]
    print(os.environ.get("MKL_CBWR"), epochs, f"{seconds:.2f} s", digest)


if __name__ == "__main__":
    main()
