"""oodfs's ICP on a binary target against the authors' R package, InvariantCausalPrediction, on the
same data.

The package is never copied into oodfs: this script sources its R files from a local checkout
(the CRAN mirror on GitHub; only base R is needed for ``selection = "all"``, so the package's
declared dependencies glmnet and mboost need not be installed)::

    git clone https://github.com/cran/InvariantCausalPrediction
    python benchmarks/crosscheck/crosscheck_icp_binary.py --repo InvariantCausalPrediction \
        --out benchmarks/crosscheck/ICP_BINARY.md

For every data set, both implementations test every subset of the features (R: ``getpval`` on a
factor response, the function ``ICP(selection = "all")`` calls for each set; oodfs:
``subset_log_pvalues_binary``), and both run the whole procedure at alpha 0.05 (R: ``ICP``; oodfs:
the ``icp`` selector), whose per-variable p-values (R's ``pvalues``; oodfs's ``10 ** -scores_``),
accepted sets and their intersection are compared. Data sets (docs/PROTOCOL.md section 15):

* ``causal``: the test suite's problem (three environments moving the means of the causes x0, x1
  and of x2, an effect of y; x3 noise), 400 rows per environment, seeds 0-2;
* ``kit``: the conformance kit's binary problem with environment labels (300 rows, 6 features);
* ``separable``: x0 alone separates the classes (R's glm stops after 10 steps with a warning);
* ``synthetic-binary``: the suite's process, settings poly and mlp, bias rates 1.5, 2.0 and 3.0 as
  three environments, 300 rows each, 10 features (1024 sets).

The table is rewritten after each data set, so a run cut short reports the data sets it finished.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

R_FILES = ("ICP.R", "getpval.R", "getpvalClassif.R", "getblanketall.R", "pvalfunc.R")
ALPHA = 0.05
#: below this p-value both implementations say "rejected at any level"; their logs are not compared
P_FLOOR = 1e-12

R_SCRIPT = r"""
args <- commandArgs(trailingOnly = TRUE)
src <- args[1]; data <- args[2]; out <- args[3]
for (f in c({files})) source(file.path(src, f))
d <- read.csv(data)
Y <- factor(d$y); E <- d$g; X <- as.matrix(d[, grepl("^x", names(d))])
IN <- lapply(sort(unique(E)), function(e) which(E == e))
p <- ncol(X)
sets <- getblanketall(X, Y)
t0 <- proc.time()[["elapsed"]]
pv <- sapply(sets, function(s) getpval(Y, cbind(1, X[, s, drop = FALSE]), IN, test = "normal")$pval)
t_sets <- proc.time()[["elapsed"]] - t0
t0 <- proc.time()[["elapsed"]]
fit <- suppressWarnings(ICP(X, Y, E, alpha = {alpha}, selection = "all", showAcceptedSets = FALSE,
                            showCompletion = FALSE))
t_icp <- proc.time()[["elapsed"]] - t0
acc <- sapply(fit$acceptedSets, function(s) paste(sort(s) - 1, collapse = " "))
inter <- if (length(fit$acceptedSets)) Reduce(intersect, fit$acceptedSets) else integer(0)
lines <- c(paste("sets", t_sets), sapply(seq_along(sets), function(i)
             paste(paste(sort(sets[[i]]) - 1, collapse = " "), format(pv[i], digits = 17), sep = ";")),
           paste("icp", t_icp), paste("pvalues", paste(format(fit$pvalues, digits = 17), collapse = " ")),
           paste("reject", fit$modelReject), paste("accepted", paste(acc, collapse = "|")),
           paste("intersection", paste(sort(inter) - 1, collapse = " ")))
writeLines(lines, out)
"""


def causal(seed: int, n: int = 400):
    rng = np.random.default_rng(seed)
    g = np.repeat([0, 1, 2], n)
    x0 = rng.normal(size=3 * n) + np.array([-1.0, 0.0, 1.0])[g]
    x1 = rng.normal(size=3 * n) + np.array([1.0, -1.0, 0.0])[g]
    y = (rng.random(3 * n) < 1 / (1 + np.exp(-(2 * x0 - 1.5 * x1)))).astype(float)
    x2 = y + 0.8 * rng.normal(size=3 * n) + np.array([0.0, 1.0, -1.0])[g]
    x3 = rng.normal(size=3 * n)
    return np.column_stack([x0, x1, x2, x3]), y, g


def separable(seed: int = 0, n: int = 100):
    rng = np.random.default_rng(seed)
    g = np.repeat([0, 1], n)
    X = rng.normal(size=(2 * n, 3)) + np.array([0.0, 0.5])[g][:, None]
    y = (X[:, 0] > 0).astype(float)
    return X, y, g


def synthetic(setting: str, n: int = 300, run: int = 0):
    from oodfs.contract.registry import registry

    env = registry().get("environment", "synthetic_binary")(setting=setting)
    parts = [env.sample(r, n, 100 * run + i) for i, r in enumerate((1.5, 2.0, 3.0))]
    X = np.vstack([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    return X, y, np.repeat([0, 1, 2], n)


def datasets():
    from oodfs.testing import _binary_data, _groups

    out = [(f"causal seed {s}", *causal(s)) for s in range(3)]
    X, y = _binary_data(envs=True)
    out.append(("kit", X, y, _groups(len(y))))
    out.append(("separable", *separable()))
    out += [(f"synthetic-binary {s}", *synthetic(s)) for s in ("poly", "mlp")]
    return out


def run_r(src: Path, X, y, g, workdir: Path) -> dict:
    data, out, script = workdir / "data.csv", workdir / "out.txt", workdir / "icp.R"
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(y=y.astype(int), g=g)
    frame.to_csv(data, index=False)
    files = ", ".join(f'"{f}"' for f in R_FILES)
    script.write_text(R_SCRIPT.replace("{files}", files).replace("{alpha}", repr(ALPHA)))
    subprocess.run(["Rscript", str(script), str(src), str(data), str(out)], check=True, capture_output=True)
    lines = out.read_text().splitlines()
    res = {"sets": {}, "accepted": []}
    for line in lines:
        if ";" in line:
            key, p = line.split(";")
            res["sets"][tuple(int(v) for v in key.split())] = float(p)
            continue
        word, _, rest = line.partition(" ")
        if word in ("sets", "icp"):
            res[f"{word}_seconds"] = float(rest)
        elif word == "pvalues":
            res["pvalues"] = np.array([float(v) for v in rest.split()])
        elif word == "reject":
            res["reject"] = rest == "TRUE"
        elif word == "accepted":
            res["accepted"] = (
                sorted(tuple(int(v) for v in s.split()) for s in rest.split("|")) if rest else []
            )
        elif word == "intersection":
            res["intersection"] = tuple(int(v) for v in rest.split())
    return res


def run_oodfs(X, y, g) -> dict:
    import oodfs
    from oodfs_plugins.invariance.icp import subset_log_pvalues_binary

    d = X.shape[1]
    subsets = [tuple(int(j) for j in np.flatnonzero([(i >> b) & 1 for b in range(d)])) for i in range(2**d)]
    t0 = time.perf_counter()
    logp = subset_log_pvalues_binary(X, y, g, int(g.max()) + 1, subsets)
    t_sets = time.perf_counter() - t0
    t0 = time.perf_counter()
    icp = oodfs.get_selector("icp")(alpha=ALPHA).fit(X, y, groups=g)
    t_icp = time.perf_counter() - t0
    return {
        "sets": dict(zip(subsets, np.exp(logp))),
        "sets_seconds": t_sets,
        "icp_seconds": t_icp,
        "pvalues": 10.0**-icp.scores_,
        "accepted": sorted(tuple(s) for s in icp.accepted_sets_),
        "intersection": tuple(icp.selected_),
    }


def compare(name, X, y, g, r: dict, o: dict) -> list:
    keys = sorted(r["sets"])
    pr = np.array([r["sets"][k] for k in keys])
    po = np.array([o["sets"][k] for k in keys])
    both = (pr > P_FLOOR) & (po > P_FLOOR)
    log_diff = np.max(np.abs(np.log10(pr[both]) - np.log10(po[both]))) if both.any() else 0.0
    # the same side of the floor, or within a factor 10 of each other where one of them crosses it
    close = np.abs(np.log10(np.maximum(pr, 1e-300)) - np.log10(np.maximum(po, 1e-300))) < 1
    floor_agree = np.all(((pr > P_FLOOR) == (po > P_FLOOR)) | close)
    same_decision = int(np.sum((pr > ALPHA) == (po > ALPHA)))
    var_diff = float(
        np.max(
            np.abs(np.log10(np.maximum(r["pvalues"], 1e-300)) - np.log10(np.maximum(o["pvalues"], 1e-300)))
        )
    )
    return [
        name,
        f"{len(y)} x {X.shape[1]}",
        int(g.max()) + 1,
        len(keys),
        f"{log_diff:.1e}",
        f"{same_decision} of {len(keys)}",
        "yes" if floor_agree else "no",
        f"{var_diff:.1e}" if not r.get("reject") else "model rejected",
        "yes" if r["accepted"] == o["accepted"] else f"no ({len(r['accepted'])} vs {len(o['accepted'])})",
        f"{{{', '.join(map(str, r['intersection']))}}} / {{{', '.join(map(str, o['intersection']))}}}",
        f"{r['sets_seconds']:.2f} / {o['sets_seconds']:.2f}",
    ]  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", required=True, help="checkout of the InvariantCausalPrediction package")
    p.add_argument("--out", help="markdown file (default stdout)")
    args = p.parse_args(argv)
    src = Path(args.repo) / "R"
    if not all((src / f).is_file() for f in R_FILES):
        raise SystemExit(f"{src} lacks the package's R files ({', '.join(R_FILES)})")
    r_version = subprocess.run(["Rscript", "--version"], capture_output=True, text=True)
    version = (r_version.stdout + r_version.stderr).strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, X, y, g in datasets():
            r = run_r(src, X, y, g, Path(tmp))
            o = run_oodfs(X, y, g)
            rows.append(compare(name, X, y, g, r, o))
            print(name, "done", file=sys.stderr)
            write(rows, version, args.out)
    return 0


def write(rows, version, out) -> None:
    headers = [
        "data set", "rows x features", "envs", "sets", "max |Δ log10 p| (p > 1e-12)", "same decision at 0.05",
        "same side of 1e-12", "max |Δ log10 p| per variable", "same accepted sets", "intersection R / oodfs",
        "seconds, all sets: R / oodfs",
    ]  # fmt: skip
    text = "\n".join([
        "# ICP on a binary target: oodfs against the authors' R package",
        "",
        "Generated by `python benchmarks/crosscheck/crosscheck_icp_binary.py --repo "
        "<InvariantCausalPrediction "
        f"checkout>` ({version}; the package's R files sourced from its CRAN mirror, version 0.8). Per data "
        "set: every subset's "
        "p-value from R's `getpval` on a factor response with ICP's default test (`test = \"normal\"`, "
        "Welch's t-test) and from oodfs's `subset_log_pvalues_binary`; the "
        "largest difference of their log10 where both exceed 1e-12 (below it both read \"rejected at any "
        "level\"); how many sets both accept or both reject at alpha 0.05; the per-variable p-values of the "
        "whole procedure (R's `ICP(..., selection = \"all\")$pvalues`, oodfs's 10^-score); the accepted "
        "sets and "
        "their intersection at 0.05. Seconds: wall time of testing every set, on the shared 2-core machine "
        "under load (R's loop of `glm` calls against oodfs's loop of its IRLS port).",
        "",
        tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True),
        "",
    ])  # fmt: skip
    if out:
        Path(out).write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    sys.exit(main())
