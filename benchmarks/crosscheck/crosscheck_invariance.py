"""oodfs's stabilized, eills, drig and vrex against their authors' public code, on the same data.

The reference code is never copied into oodfs: this script runs it from local checkouts::

    git clone https://github.com/NiklasPfister/StabilizedRegression-R   # the R package (GPL-3)
    git clone https://github.com/wmyw96/EILLS                            # methods/brute_force.py
    git clone https://github.com/xwshen51/DRIG                           # estimate.py
    git clone https://github.com/facebookresearch/DomainBed              # domainbed/algorithms.py (VREx)
    python benchmarks/crosscheck/crosscheck_invariance.py --sr-repo P --eills-repo P --drig-repo P \
        --domainbed-repo P

Stabilized regression runs in R (``Rscript``; Debian's r-base-core with r-cran-r6, r-cran-glmnet,
r-cran-corpcor, r-cran-ggplot2, r-cran-ggrepel, r-cran-mass): the package is installed into a
temporary library and called with ``pars = list(B = NA)`` (all subsets, as oodfs). DomainBed's
``VREx.update`` is run unchanged on a linear network, its ``F.cross_entropy`` replaced by the squared
error (DomainBed is classification-only), with its default hyperparameters (Adam, lr 1e-3, batch 64
per environment, 5000 steps, 500 annealing steps, lambda 10); it imports torchvision.

Data: the suites' own draws (``make_dataset``): ``irm-sem`` (FOU, FEU, POU, PEU) and
``synthetic-multienv`` (poly, mlp on {1.5, 2, 3}), runs 0-1; 1000 rows per environment (300 for the
R package, whose exact test inverts an n_e x n_e matrix per set and environment). Agreement between
two selections is the Jaccard index of their top 5 (and, for stabilized, of the stable blankets);
the *floor* of an implementation is the mean agreement of its own seeds (1 when deterministic), the
*cross* agreement the mean over all seed pairs. Coefficients are compared by max |difference| /
max |coefficient|. Writes markdown to ``--out`` (default stdout).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SETS = [("irm-sem", s, (0.2, 2.0, 5.0)) for s in ("FOU", "FEU", "POU", "PEU")] + [
    ("synthetic-multienv", s, (1.5, 2.0, 3.0)) for s in ("poly", "mlp")
]
RUNS = (0, 1)


def datasets(n_per_env=None, settings=None, runs=RUNS):
    """(name, X, y, groups, stable set) for the suite data sets (of ``settings``, default all); the
    first n_per_env rows of each environment when given."""
    from oodfs.contract.task import DataKey
    from oodfs.run.dataset import make_dataset
    from oodfs.run.suite import load_suite

    out = []
    for suite_name, setting, envs in SETS:
        if settings and setting not in settings:
            continue
        suite = load_suite(suite_name)
        for run in runs:
            ds = make_dataset(suite, DataKey(setting, envs, run))
            X, y, g = np.asarray(ds.X_train), np.asarray(ds.y_train), np.asarray(ds.groups_train)
            if n_per_env is not None:
                keep = np.concatenate([np.flatnonzero(g == e)[:n_per_env] for e in np.unique(g)])
                X, y, g = X[keep], y[keep], g[keep]
            out.append((f"{suite_name} {setting} run {run}", X, y, g, frozenset(ds.stable_set or ())))
    return out


#: where the markdown goes (None: stdout at the end); rewritten after every row of the slow parts
OUT = None


def flush(lines):
    """Write what is measured so far: the R and DomainBed parts take long on a loaded machine."""
    if OUT is not None:
        Path(OUT).write_text("\n".join(lines) + "\n")


def jaccard(a, b) -> float:
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 1.0


def top5(scores):
    return frozenset(np.argsort(-np.asarray(scores), kind="stable")[:5].tolist())


def floor(sels):
    pairs = list(itertools.combinations(sels, 2))
    return float(np.mean([jaccard(a, b) for a, b in pairs])) if pairs else 1.0


def cross(sa, sb):
    return float(np.mean([jaccard(a, b) for a in sa for b in sb]))


def rel_diff(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- EILLS ------------------------------------------------------------------------------------------
def part_eills(repo, lines):
    from oodfs_plugins.invariance import EILLS

    bf = load_module(Path(repo) / "methods" / "brute_force.py", "eills_brute_force")
    lines += [
        "## EILLS: the authors' `brute_force` (loss 'eills') against oodfs's `eills`",
        "",
        "Both deterministic (floor 1); no intercept on either side (the authors' code has none), "
        "gamma = 20 (the authors' value) and 1000. Support = nonzero coefficients.",
        "",
        "| data set | gamma | reference support | oodfs support | max coef diff (rel.) | ref s | oodfs s |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    agree, diffs = [], []
    for name, X, y, g, _ in datasets():
        xs = [X[g == e] for e in np.unique(g)]
        ys = [y[g == e][:, None] for e in np.unique(g)]
        for gamma in (20.0, 1000.0):
            t0 = time.perf_counter()
            ref = np.asarray(bf.brute_force(xs, ys, gamma, loss_type="eills")).ravel()
            t_ref = time.perf_counter() - t0
            t0 = time.perf_counter()
            mine = EILLS(gamma=gamma, fit_intercept=False).fit(X, y, groups=g).scores_
            t_mine = time.perf_counter() - t0
            s_ref, s_mine = np.flatnonzero(np.abs(ref) > 0).tolist(), np.flatnonzero(mine > 0).tolist()
            agree.append(jaccard(s_ref, s_mine))
            diffs.append(rel_diff(mine, np.abs(ref)))
            lines.append(
                f"| {name} | {gamma:g} | {s_ref} | {s_mine} | {diffs[-1]:.1e} | {t_ref:.2f} | {t_mine:.2f} |"
            )
    lines += [
        "",
        f"Support agreement (Jaccard) {np.mean(agree):.2f} over {len(agree)} fits (floors 1); largest "
        f"relative coefficient difference {max(diffs):.1e}.",
        "",
    ]


# -- DRIG -------------------------------------------------------------------------------------------
def part_drig(repo, lines):
    from oodfs_plugins.invariance import DRIG
    from oodfs_plugins.invariance.drig import choose_reference
    from oodfs_plugins.invariance.irm import environment_moments

    est = load_module(Path(repo) / "estimate.py", "drig_estimate")
    lines += [
        "## DRIG: the authors' `est_drig` against oodfs's `drig`",
        "",
        "Both deterministic (floor 1); no intercept on either side (the authors' code has none); "
        "the authors' code takes the reference environment first: it is given oodfs's choice "
        "(`reference = 'least-perturbed'`). Weights proportional to the environments' sizes on both sides.",
        "",
        "| data set | reference (oodfs's choice) | max rel. coef diff (grid) | top-5 agreement |",
        "| --- | --- | --- | --- |",
    ]
    worst, agree = 0.0, []
    for name, X, y, g, _ in datasets():
        E = int(g.max()) + 1
        G, _ = environment_moments(X, y, g, E, fit_intercept=False)
        ref = choose_reference(G, np.bincount(g) / len(g))
        order = [ref] + [e for e in range(E) if e != ref]
        data = [np.column_stack([X[g == e], y[g == e]]) for e in order]
        d, a = 0.0, []
        for gamma in DRIG.grid["gamma"]:
            b_ref = est.est_drig(data, gamma)
            mine = DRIG(gamma=gamma, fit_intercept=False).fit(X, y, groups=g).scores_
            d = max(d, rel_diff(mine, np.abs(b_ref)))
            a.append(jaccard(top5(mine), top5(np.abs(b_ref))))
        worst = max(worst, d)
        agree += a
        lines.append(f"| {name} | environment {ref} | {d:.1e} | {np.mean(a):.2f} |")
    lines += [
        "",
        f"Top-5 agreement {np.mean(agree):.2f} over {len(agree)} fits (floors 1); largest relative "
        f"coefficient difference {worst:.1e}.",
        "",
    ]


# -- stabilized regression (R) ---------------------------------------------------------------------
R_SCRIPT = r"""
suppressMessages(library(StabilizedRegression, lib.loc = "{lib}"))
args <- commandArgs(trailingOnly = TRUE)
dat <- read.csv(args[1])
X <- as.matrix(dat[, grep("^x", names(dat))])
Y <- dat$y
A <- as.factor(dat$a)
out <- NULL
for (seed in as.integer(strsplit(args[3], ",")[[1]])) {{
  fit <- suppressWarnings(StabilizedRegression(X, Y, A, pars = list(B = NA), seed = seed))
  out <- rbind(out, c(seed, fit$variable_importance))
}}
write.csv(out, args[2], row.names = FALSE)
"""


def part_stabilized(repo, lines, seeds, n_per_env, settings):
    from oodfs_plugins.invariance import Stabilized

    tmp = Path(tempfile.mkdtemp(prefix="sr_crosscheck_"))
    lib = tmp / "lib"
    lib.mkdir()
    subprocess.run(
        ["R", "CMD", "INSTALL", f"--library={lib}", str(Path(repo) / "StabilizedRegression")],
        check=True,
        capture_output=True,
    )
    script = tmp / "sr.R"
    script.write_text(R_SCRIPT.format(lib=lib))
    lines += [
        "## Stabilized regression: the authors' R package against oodfs's `stabilized`",
        "",
        f"Default level 0.05 / 0.05, all subsets (`B = NA`), run 0, {n_per_env} rows per environment, seeds "
        f"{', '.join(map(str, seeds))} on each side (R's `seed`, oodfs's `random_state`: the MSE "
        "bootstrap is the only random part). Blanket = features with importance > 0.",
        "",
        "| data set | R blanket (seed 1) | oodfs blanket (seed 1) | blanket floor R | floor oodfs | cross | "
        "top-5 floor R | floor oodfs | cross | importance diff (rel.) | R s | oodfs s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    rows = []
    for name, X, y, g, _ in datasets(n_per_env, settings, runs=(0,)):
        csv = tmp / "data.csv"
        header = ",".join([f"x{j}" for j in range(X.shape[1])] + ["y", "a"])
        np.savetxt(csv, np.column_stack([X, y, g]), delimiter=",", header=header, comments="", fmt="%.17g")
        t0 = time.perf_counter()
        subprocess.run(
            ["Rscript", str(script), str(csv), str(tmp / "out.csv"), ",".join(map(str, seeds))],
            check=True,
            capture_output=True,
        )
        t_r = (time.perf_counter() - t0) / len(seeds)
        imp_r = np.loadtxt(tmp / "out.csv", delimiter=",", skiprows=1)[:, 1:]
        t0 = time.perf_counter()
        imp_o = [Stabilized(random_state=s).fit(X, y, groups=g).scores_ for s in seeds]
        t_o = (time.perf_counter() - t0) / len(seeds)
        bl_r = [frozenset(np.flatnonzero(v > 0).tolist()) for v in imp_r]
        bl_o = [frozenset(np.flatnonzero(v > 0).tolist()) for v in imp_o]
        t5_r, t5_o = [top5(v) for v in imp_r], [top5(v) for v in imp_o]
        diff = rel_diff(np.maximum(imp_o[0], 0), imp_r[0])
        row = (floor(bl_r), floor(bl_o), cross(bl_r, bl_o), floor(t5_r), floor(t5_o), cross(t5_r, t5_o), diff)
        rows.append(row)
        lines.append(
            f"| {name} | {sorted(bl_r[0])} | {sorted(bl_o[0])} | "
            + " | ".join(f"{v:.2f}" for v in row[:6])
            + f" | {diff:.1e} | {t_r:.1f} | {t_o:.2f} |"
        )
        flush(lines)
    m = np.mean(rows, axis=0)
    lines += [
        "",
        f"Mean over {len(rows)} data sets: blanket floors R {m[0]:.2f}, oodfs {m[1]:.2f}, cross {m[2]:.2f}; "
        f"top-5 floors R {m[3]:.2f}, oodfs {m[4]:.2f}, cross {m[5]:.2f}; first seeds' importances differ by "
        f"{m[6]:.1e} of the largest on average.",
        "",
    ]


# -- V-REx (DomainBed) -----------------------------------------------------------------------------
def domainbed_vrex(X, y, g, seed, steps=5000, batch=64, lam=10.0, anneal=500, lr=1e-3):
    """DomainBed's VREx.update, unchanged, on a linear network with the squared error."""
    import torch
    import torch.nn.functional as F
    from domainbed import algorithms, hparams_registry

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    hp = hparams_registry.default_hparams("VREx", "ColoredMNIST")
    hp.update({"vrex_lambda": lam, "vrex_penalty_anneal_iters": anneal, "lr": lr, "weight_decay": 0.0})
    hp.update({"mlp_width": 8, "mlp_depth": 3, "mlp_dropout": 0.0})  # the MLP it builds is replaced below
    alg = algorithms.VREx((X.shape[1],), 2, int(g.max()) + 1, hp)
    alg.network = torch.nn.Linear(X.shape[1], 1).double()
    alg.optimizer = torch.optim.Adam(alg.network.parameters(), lr=lr, weight_decay=0.0)
    real_ce = algorithms.F.cross_entropy
    algorithms.F.cross_entropy = lambda logits, target: F.mse_loss(logits.view(-1), target)
    try:
        envs = [(torch.tensor(X[g == e]), torch.tensor(y[g == e])) for e in range(int(g.max()) + 1)]
        for _ in range(steps):
            mb = []
            for xe, ye in envs:
                idx = torch.as_tensor(rng.integers(0, len(ye), batch))
                mb.append((xe[idx], ye[idx]))
            alg.update(mb)
    finally:
        algorithms.F.cross_entropy = real_ce
    return alg.network.weight.detach().numpy().ravel()


def placeholder_image_packages():
    """DomainBed's networks module imports torchvision and timm for its image networks, which the
    linear network here never uses; where they are not installed (oodfs needs neither) empty
    placeholder modules let ``domainbed.algorithms`` import."""
    import importlib.machinery
    import types

    for name in ("torchvision", "torchvision.models", "torchvision.transforms", "timm"):
        top = name.split(".")[0]
        if name in sys.modules or (top == name and importlib.util.find_spec(name) is not None):
            continue
        if top != name and not isinstance(sys.modules.get(top), types.ModuleType):
            continue
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        sys.modules[name] = module
        if top != name:
            setattr(sys.modules[top], name.split(".")[1], module)


def part_vrex(repo, lines, seeds, settings):
    sys.path.insert(0, str(repo))
    placeholder_image_packages()
    from oodfs_plugins.invariance import VREx

    lines += [
        "## V-REx: DomainBed's `VREx.update` (linear network, squared error) against oodfs's `vrex`",
        "",
        "lambda = 10 (DomainBed's default) with its 500 annealing steps, Adam lr 1e-3, minibatches of 64 "
        f"rows per environment, 5000 steps, seeds {', '.join(map(str, seeds))}, run 0; "
        "oodfs's `vrex` is "
        "deterministic (floor 1). Coefficients: DomainBed's against oodfs's exact optimum.",
        "",
        "| data set | top-5 floor DomainBed | cross | median rel. coef diff | DomainBed s | oodfs s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    rows = []
    for name, X, y, g, _ in datasets(None, settings, runs=(0,)):  # run 0: DomainBed's loop is slow
        t0 = time.perf_counter()
        ref = [domainbed_vrex(X, y, g, s) for s in seeds]
        t_ref = (time.perf_counter() - t0) / len(seeds)
        t0 = time.perf_counter()
        mine = VREx(penalty=10.0).fit(X, y, groups=g).scores_
        t_mine = time.perf_counter() - t0
        sel = [top5(np.abs(r)) for r in ref]
        coef_diff = float(np.median([rel_diff(np.abs(r), mine) for r in ref]))
        row = (floor(sel), cross(sel, [top5(mine)]), coef_diff)
        rows.append(row)
        lines.append(f"| {name} | {row[0]:.2f} | {row[1]:.2f} | {row[2]:.2f} | {t_ref:.1f} | {t_mine:.2f} |")
        flush(lines)
    m = np.mean(rows, axis=0)
    lines += [
        "",
        f"Mean over {len(rows)} data sets: DomainBed's top-5 floor {m[0]:.2f}, cross with oodfs {m[1]:.2f}; "
        f"coefficients differ by {m[2]:.2f} of the largest (median over seeds).",
        "",
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sr-repo")
    ap.add_argument("--eills-repo")
    ap.add_argument("--drig-repo")
    ap.add_argument("--domainbed-repo")
    ap.add_argument("--parts", default="eills,drig,stabilized,vrex")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--sr-rows", type=int, default=300)
    ap.add_argument(
        "--settings", help="settings of the R and DomainBed parts (default: all), e.g. FOU,PEU,poly"
    )
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    global OUT
    OUT = args.out
    seeds = [int(s) for s in args.seeds.split(",")]
    settings = args.settings.split(",") if args.settings else None
    lines = ["# The new invariance methods against their authors' code", ""]
    parts = args.parts.split(",")
    if "eills" in parts:
        part_eills(args.eills_repo, lines)
    if "drig" in parts:
        part_drig(args.drig_repo, lines)
    if "stabilized" in parts:
        part_stabilized(args.sr_repo, lines, seeds, args.sr_rows, settings)
    if "vrex" in parts:
        part_vrex(args.domainbed_repo, lines, seeds, settings)
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
