"""oodfs's rsw against the authors' RSW code (StableLearn/StableLearn, Sample_Reweighting/RSW), on
the same data.

The authors' code has no licence and is never copied into oodfs: this script imports its
``Backend.py`` and ``ERM.py`` from a local checkout, only for the cross-check::

    git clone https://github.com/StableLearn/StableLearn
    python benchmarks/crosscheck/crosscheck_rsw.py --repo PATH_TO_StableLearn \
        [--out benchmarks/crosscheck/RSW_CROSSCHECK.md]

Data: the paper generator's poly setting at r = 2.5 (one training environment, as RSW needs),
``--n`` rows, features standardised and y centred as oodfs's rsw does. Both implementations run
the authors' first simulation setting (alpha 1e5, lam 10, sigma 0.01, 3 weightings a step, an
intercept, pretrain 2000, 6000 steps), two seeds each. Compared: the two least-open gates and
the five most-open gates (Jaccard), and the rank correlation of the gate means, across
implementations against each one's own seed-to-seed agreement (its floor).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from oodfs_plugins.environments.synthetic import Synthetic
from oodfs_plugins.independence.rsw import RSW

CODE = "Sample_Reweighting/RSW/Code"


def draws(n_sets, n):
    env = Synthetic(setting="poly")
    for s in range(n_sets):
        X, y = env.sample(2.5, n, 300 + s)
        yield (X - X.mean(0)) / X.std(0), y - y.mean()
    print("columns of V4, V5:", env.column_of("V4"), env.column_of("V5"), file=sys.stderr)


def load(repo: Path, into: Path):
    git = ["git", f"--git-dir={repo / '.git'}"] if (repo / ".git").exists() else ["git", f"--git-dir={repo}"]
    for f in ("Backend.py", "ERM.py"):
        (into / f).write_bytes(
            subprocess.run([*git, "show", f"HEAD:{CODE}/{f}"], check=True, capture_output=True).stdout
        )
    sys.path.insert(0, str(into))
    import ERM

    return ERM


def theirs(ERM, X, y, seed):
    import torch

    torch.manual_seed(seed)
    np.random.seed(seed)
    model = ERM.JW(X.shape[1], 0.01, 10.0, 1e5, True)
    model.train([torch.tensor(X, dtype=torch.float32), torch.tensor(y[:, None], dtype=torch.float32)], 3)
    return (model.mip.mu + 0.5).detach().numpy().astype(float)


def ours(X, y, seed):
    return RSW(random_state=seed).fit(X, y).scores_


def jaccard(a, b):
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 1.0


def floor_and_cross(a, b, sim):
    fa = np.mean([sim(x[0], x[1]) for x in a])
    fb = np.mean([sim(x[0], x[1]) for x in b])
    cross = np.mean([sim(p, q) for x, z in zip(a, b) for p in x for q in z])
    return fa, fb, cross


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True, type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--sets", type=int, default=2, help="data sets (draws)")
    ap.add_argument("--n", type=int, default=1000, help="rows of each data set (the authors' 1000)")
    args = ap.parse_args(argv)
    ERM = load(args.repo, Path(tempfile.mkdtemp()))
    seeds = (0, 1)
    mine, authors, t_o, t_t = [], [], [], []
    for X, y in draws(args.sets, args.n):
        t = time.perf_counter()
        mine.append([ours(X, y, s) for s in seeds])
        t_o.append(time.perf_counter() - t)
        t = time.perf_counter()
        authors.append([theirs(ERM, X, y, s) for s in seeds])
        t_t.append(time.perf_counter() - t)
    lines = [
        "# RSW: oodfs against the authors' code",
        "",
        "Written by `python benchmarks/crosscheck/crosscheck_rsw.py` "
        f"(--sets {args.sets}, --n {args.n}; two seeds per implementation and data set).",
        "",
        "| compared | floor oodfs | floor authors | cross |",
        "| --- | --- | --- | --- |",
    ]
    for what, f in (
        ("two least-open gates, Jaccard", lambda p: np.argsort(p)[:2]),
        ("five most-open gates, Jaccard", lambda p: np.argsort(p)[-5:]),
    ):
        fa, fb, cr = floor_and_cross(
            [[f(p) for p in x] for x in mine], [[f(p) for p in x] for x in authors], jaccard
        )
        lines.append(f"| {what} | {fa:.2f} | {fb:.2f} | {cr:.2f} |")
    fa, fb, cr = floor_and_cross(mine, authors, lambda p, q: spearmanr(p, q)[0])
    lines += [f"| gate means, Spearman | {fa:.2f} | {fb:.2f} | {cr:.2f} |", ""]
    lines += ["Gate means mu + 0.5 (data set, seed; columns in the data's order):", ""]
    for i, (o, t) in enumerate(zip(mine, authors)):
        for s in range(len(seeds)):
            lines.append(
                f"- set {i} seed {s}: oodfs {np.round(o[s], 3).tolist()}; "
                f"authors {np.round(t[s], 3).tolist()}"
            )
    lines += [
        "",
        f"Seconds per data set (two seeds): oodfs {np.median(t_o):.1f}, authors {np.median(t_t):.1f}.",
        "",
    ]
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
