"""SRDO's density-ratio classifier on one synthetic data set (poly, r = 2.5, n = 10 000, seed 1),
its default budget of 200 epochs: timed under two MKL reproducibility branches and against its own
earlier code; its digest under other MKL branches or numpy vector loops shows whether they reach
SRDO's numbers (README.md, section 6).

    python benchmarks/references/srdo_classifier.py

Prints the MKL branch it ran under, the epochs, the classifier's own CPU seconds (without the
imports and the draw) and a digest of the logits (two runs under one branch give the same digest).
"""

from __future__ import annotations

import hashlib
import os
import time

import oodfs  # noqa: F401 -- pins the kernels before numpy loads
from oodfs_plugins.environments.synthetic import Synthetic
from oodfs_plugins.independence.srdo import density_ratio_logits

X, _ = Synthetic("poly").sample(2.5, 10_000, 1)
start = time.process_time()
logits, losses, epochs = density_ratio_logits(X, seed=0)
seconds = time.process_time() - start
digest = hashlib.sha256(logits.tobytes()).hexdigest()[:16]
print(os.environ.get("MKL_CBWR"), epochs, f"{seconds:.2f} s", digest)
