"""oodfs's iamb and hiton_mb against pyCausalFS's IAMB and HITON_MB on the same data.

pyCausalFS (Yu et al.'s causal feature selection toolbox) is never copied into oodfs: this script
imports it from a local checkout of its repository, only for the cross-check::

    git clone https://github.com/wt-hu/pyCausalFS
    python benchmarks/crosscheck/crosscheck_markov.py --repo PATH_TO_pyCausalFS \
        [--out benchmarks/crosscheck/MARKOV_CROSSCHECK.md]

Both sides run with Fisher's z at the same level on the same matrix (outcome first). pyCausalFS
is run three ways: as shipped; with its Fisher-z p-value replaced by the two-sided one (the
shipped code returns Phi(W), a one-sided p-value of the wrong tail for positive correlations);
and, for HITON-MB, also without its ``break`` after the first spouse found through each member
of PC(T) (reimplemented in this script around pyCausalFS's own HITON_PC, which is left as is).
Each mismatch of boundaries is traced to the phase where the two sides part: PC(T), the spouses,
or the IAMB grow/shrink order.

Data: the markov_boundary environment (poly, r = 2.5, n = 500 / 2000, five seeds, the paper's
column order plus H, C, W) and the linear Gaussian DAG of tests/test_markov.py (n = 500 / 4000).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.stats import norm

from oodfs_plugins.environments.markov import MarkovBoundaryEnv
from oodfs_plugins.markov import HITONMB, IAMB
from oodfs_plugins.markov.ci_tests import CITest
from oodfs_plugins.markov.search import hiton_pc


def linear_dag(n, seed):
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((n, 8))
    x0 = 0.8 * e[:, 4] + e[:, 0]
    y = 0.7 * x0 - 0.6 * e[:, 1] + e[:, 7]
    x2 = 0.8 * y + 0.8 * e[:, 3] + e[:, 2]
    X = np.column_stack([x0, e[:, 1], x2, e[:, 3], e[:, 4], e[:, 5], 0.9 * x2 + e[:, 6]])
    return X, y, ["X0", "X1", "X2", "X3", "X4", "X5", "X6"]


def datasets():
    env = MarkovBoundaryEnv(layout_seed=None)
    for n in (500, 2000):
        for seed in range(5):
            X, y = env.sample(2.5, n, seed)
            yield f"markov_boundary n={n} seed={seed}", X, y, env.feature_names
    for n in (500, 4000):
        for seed in range(3):
            X, y, names = linear_dag(n, seed)
            yield f"linear DAG n={n} seed={seed}", X, y, names


def load_pycausalfs(repo: Path, into: Path):
    """pyCausalFS's CBD package from the checkout's HEAD, extracted to a temporary folder."""
    git = ["git", f"--git-dir={repo / '.git'}"] if (repo / ".git").exists() else ["git", f"--git-dir={repo}"]
    tar = subprocess.run([*git, "archive", "HEAD", "pyCausalFS/CBD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    sys.path.insert(0, str(into / "pyCausalFS"))
    import CBD.MBs.common.condition_independence_test as cit
    from CBD.MBs.HITON.HITON_MB import HITON_MB
    from CBD.MBs.HITON.HITON_PC import HITON_PC
    from CBD.MBs.IAMB import IAMB as pcfs_iamb

    return cit, pcfs_iamb, HITON_MB, HITON_PC


def two_sided(original):
    def fisher_z(data, var1, var2, cond=[], alpha=0.05):  # noqa: B006 -- the shipped signature
        ci, r, _ = original(data, var1, var2, cond, alpha)
        n = np.shape(data)[0]
        w = np.sqrt(n - len(cond) - 3) * abs(np.arctanh(min(r, 1 - 1e-15)))
        return ci, r, 2 * norm.sf(w)

    return fisher_z


def hiton_mb_all_spouses(data, target, alpha, hiton_pc_fn, cit):
    """pyCausalFS's HITON_MB without its break after the first spouse of each PC member."""
    pc, sepset, _ = hiton_pc_fn(data, target, alpha, False)
    mb = list(pc)
    for x in pc:
        pc_x, _, _ = hiton_pc_fn(data, x, alpha, False)
        for y in pc_x:
            if y != target and y not in mb:
                cond = sorted(set(sepset[y]) | {x})
                if cit.cond_indep_test(data, target, y, cond, False)[0] <= alpha:
                    mb.append(y)
    return mb


def names_of(cols, names):
    return "{" + ", ".join(names[c - 1] for c in sorted(cols)) + "}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--repo", required=True, type=Path, help="a checkout (or bare git dir) of wt-hu/pyCausalFS"
    )
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp())
    cit, pcfs_iamb, pcfs_hiton_mb, pcfs_hiton_pc = load_pycausalfs(args.repo, tmp)
    shipped = cit.cond_indep_fisher_z
    fixed = two_sided(shipped)

    rows, counts, traces = [], {}, []
    for label, X, y, names in datasets():
        data = np.column_stack([y, X])
        for alpha in (0.01, 0.05):
            ours_i = {c + 1 for c in IAMB(alpha=alpha).fit(X, y).boundary_}
            ours_h = {c + 1 for c in HITONMB(alpha=alpha, max_k=3).fit(X, y).boundary_}
            cit.cond_indep_fisher_z = shipped
            ship_i = set(pcfs_iamb(data, 0, alpha, False)[0])
            ship_h = set(pcfs_hiton_mb(data, 0, alpha, False)[0])
            cit.cond_indep_fisher_z = fixed
            fix_i = set(pcfs_iamb(data, 0, alpha, False)[0])
            fix_h = set(pcfs_hiton_mb(data, 0, alpha, False)[0])
            fix_h_all = set(hiton_mb_all_spouses(data, 0, alpha, pcfs_hiton_pc, cit))
            their_pc = set(pcfs_hiton_pc(data, 0, alpha, False)[0])
            cit.cond_indep_fisher_z = shipped
            our_pc = set(hiton_pc(CITest(data, "fisherz"), 0, range(1, data.shape[1]), alpha, 3)[0])
            cmp = {
                "iamb = shipped": ours_i == ship_i,
                "iamb = two-sided": ours_i == fix_i,
                "hiton_mb = shipped": ours_h == ship_h,
                "hiton_mb = two-sided": ours_h == fix_h,
                "hiton_mb = two-sided, all spouses": ours_h == fix_h_all,
                "HITON-PC = two-sided": our_pc == their_pc,
            }
            for k, v in cmp.items():
                counts.setdefault(k, [0, 0])
                counts[k][0] += v
                counts[k][1] += 1
            rows.append(
                f"| {label} | {alpha} | {names_of(ours_i, names)} | {names_of(ship_i, names)} | "
                f"{names_of(ours_h, names)} | {names_of(ship_h, names)} | {names_of(fix_h, names)} | "
                f"{names_of(fix_h_all, names)} |"
            )
            if ours_h != fix_h_all:
                where = "PC(T)" if our_pc != their_pc else "spouse phase"
                traces.append(
                    f"- {label}, alpha {alpha}: hiton_mb {names_of(ours_h, names)} vs pyCausalFS "
                    f"(two-sided, all spouses) {names_of(fix_h_all, names)}; PC(T) oodfs "
                    f"{names_of(our_pc, names)}, pyCausalFS {names_of(their_pc, names)}: they part in the "
                    f"{where}"
                )
            if ours_h != fix_h and ours_h == fix_h_all:
                traces.append(
                    f"- {label}, alpha {alpha}: pyCausalFS (two-sided) HITON_MB {names_of(fix_h, names)} "
                    f"misses {names_of(ours_h - fix_h, names)}, found by oodfs and by pyCausalFS without its "
                    "break after the first spouse of a PC member"
                )
            if ours_i != fix_i:
                traces.append(
                    f"- {label}, alpha {alpha}: iamb {names_of(ours_i, names)} vs pyCausalFS (two-sided) "
                    f"{names_of(fix_i, names)}"
                )

    out = [
        "# Markov-boundary searches: oodfs against pyCausalFS",
        "",
        "Written by `python benchmarks/crosscheck/crosscheck_markov.py --repo PATH_TO_pyCausalFS` (its "
        "docstring says",
        "what is compared). Boundaries are the sets of features found for Y, Fisher's z, on the same matrix.",
        "",
        "## Agreement (identical boundaries / comparisons)",
        "",
        "| comparison | identical | of |",
        "| --- | --- | --- |",
        *[f"| {k} | {a} | {b} |" for k, (a, b) in counts.items()],
        "",
        "## Where the two sides part",
        "",
        *(traces or ["- nowhere: every boundary is identical once pyCausalFS's p-value is two-sided."]),
        "",
        "pyCausalFS's shipped Fisher z returns Phi(W) (one tail): a feature correlated positively with Y",
        "given the conditioning set gets p near 1 and is never admitted, hence its shipped boundaries.",
        "",
        "## Every boundary",
        "",
        "| data | alpha | oodfs iamb | pyCausalFS IAMB (shipped) | oodfs hiton_mb "
        "| pyCausalFS HITON_MB (shipped) | pyCausalFS HITON_MB (two-sided) | (two-sided, all spouses) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]
    text = "\n".join(out)
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
