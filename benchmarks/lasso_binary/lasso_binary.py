"""LASSO's binary path: solvers of the same L1-logistic objective against the shipped SAGA fit (issue #48).

The `lasso` selector on a binary target (plugins/baselines/linear.py, ``_l1_logistic``; docs/PROTOCOL.md,
"Binary targets") minimises, per alpha of its grid,

    1/n * sum_i w_i * logloss(y_i, b0 + x_i.beta) + alpha * ||beta||_1      (weights rescaled to sum n)

with an unpenalised intercept, on the raw feature scale, by scikit-learn's SAGA to tol 1e-8. This
script draws the binary suites' training data as the runner does (``make_dataset``, the fitted
columns of ``fitted_features``; docs/PROTOCOL.md, "Own tables"), fits the same objective with other
solvers and compares, per (data set, alpha): CPU seconds, the objective at each solution, the
largest |coefficient| difference, and the selection -- the runner's ranking (``task_ranking``, ties
seeded as the runner seeds them; docs/PROTOCOL.md, "Ties"), the top-k set at every size of the
suite's k grid (``grid_ks``) and the support (nonzero coefficients, ``own_support``).

The reference selection is the shipped reference's stored lasso scores (oodfs/run/reference/
SUITE-default.parquet), which replay bit for bit; SAGA itself is refitted (timed) on a subset of
the data sets, and the refit is checked against the stored scores.

Solvers (each a name below; ``SOLVERS``):

* ``saga``: the shipped fit, one ``LogisticRegression(solver="saga", tol=1e-8)`` per alpha;
* ``saga_warm``: the same solver and tolerance, warm-started from the largest alpha down;
* ``saga_1e-6``: the same solver at tol 1e-6;
* ``glum``: glum's ``GeneralizedLinearRegressor(family="binomial", l1_ratio=1)``, IRLS with
  coordinate descent, gradient_tol 1e-8, one fit per alpha; its objective is
  1/(2 sum s) * deviance + alpha * ||beta||_1 = the same (binomial deviance = 2 log-loss, any scale
  of s), intercept unpenalised;
* ``glum_path``: the same, all alphas in one ``alpha_search`` path (warm starts);
* ``skglm``: skglm's ``SparseLogisticRegression`` (prox-Newton, tol 1e-8): mean log-loss +
  alpha * ||beta||_1, intercept unpenalised; it takes no sample weights (valid for unweighted fits
  only, which is what ``oodfs bench`` fits);
* ``glmnet``: python-glmnet's ``LogitNet`` (Fortran glmnet), lambda = alpha, standardize=False,
  tol 1e-10, all alphas in one path; glmnet normalises the weights.

Commands (from the repository root; run under ``nice -n 10`` on a shared machine)::

    python benchmarks/lasso_binary/lasso_binary.py run       # appends to results.jsonl.gz (~20 CPU min)
    python benchmarks/lasso_binary/lasso_binary.py report    # the tables of README.md
    python benchmarks/lasso_binary/lasso_binary.py runner-time   # the runner's own fit, now vs stored
    python benchmarks/lasso_binary/lasso_binary.py converge  # SAGA at 10x the epochs on one pair
    python benchmarks/lasso_binary/lasso_binary.py weighted  # non-uniform sample weights

``run`` options: ``--out`` (default: results.jsonl.gz beside this script; data sets already in it
are skipped), ``--suites`` (default: every binary suite), ``--per-suite N`` data sets per suite
(default 12, spread over r_train; ``--synthetic-binary N``, default 6), ``--saga-per-suite N`` of
them also refitted by the three SAGA solvers (default 12), ``--repeats`` (3, the median kept) for
fits that take under ``--cheap`` (2) CPU seconds.
"""

from __future__ import annotations

import os

# one thread per fit, as a benchmark worker runs; CPU time then counts one core's work
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ALPHAS = [0.0003, 0.001, 0.01, 0.1]  # LassoSelector.grid, in grid-point order
BINARY_SUITES = [
    "caravan",
    "credit",
    "oj",
    "arrests",
    "churn",
    "happiness",
    "insurance",
    "lending",
    "stops",
    "vote",
    "income",
    "synthetic-binary",
]
SAGA_SOLVERS = ("saga", "saga_warm", "saga_1e-6")
CANDIDATES = ("glum", "glum_path", "skglm", "glmnet")
#: caravan data sets timed through the runner's own fit: a spread of the shipped run's stored fit
#: times (28 s to 243 s)
RUNNER_TIME = ("average family/1", "family with grown ups/3", "conservative families/2", "average family/0")


def read_lines(path: Path) -> list[str]:
    """The lines of a results file (gzip-compressed when it ends in .gz, as the committed one does)."""
    return (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()).read().splitlines()


# -- the objective ---------------------------------------------------------------------------------
def objective(X, y, w, coef, intercept, alpha) -> float:
    """Mean weighted log-loss (weights summing to n) + alpha * ||coef||_1."""
    z = X @ coef + intercept
    return float(np.mean(w * (np.logaddexp(0.0, z) - y * z)) + alpha * np.abs(coef).sum())


# -- the solvers: each returns ([coef per alpha], [intercept per alpha], info) ----------------------
def _saga(X, y, w, alphas, tol=1e-8, warm=False, max_iter=100_000):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    n = X.shape[0]
    coefs, icpts, iters = {}, {}, {}
    model = None
    order = sorted(alphas, reverse=True) if warm else list(alphas)
    for a in order:
        if model is None or not warm:
            # exactly plugins/baselines/linear.py's _l1_logistic
            model = LogisticRegression(
                C=1.0 / (a * n),
                l1_ratio=1.0,
                solver="saga",
                tol=tol,
                max_iter=max_iter,
                random_state=0,
                warm_start=warm,
            )
        else:
            model.set_params(C=1.0 / (a * n))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, y, sample_weight=w)
        coefs[a], icpts[a] = model.coef_[0].copy(), float(model.intercept_[0])
        iters[a] = int(model.n_iter_[0])  # epochs; max_iter means the tolerance was not reached
    return [coefs[a] for a in alphas], [icpts[a] for a in alphas], {"n_iter": [iters[a] for a in alphas]}


def _glum(X, y, w, alphas, path=False):
    from glum import GeneralizedLinearRegressor

    common = dict(
        family="binomial",
        l1_ratio=1.0,
        fit_intercept=True,
        solver="irls-cd",
        gradient_tol=1e-8,
        max_iter=1000,
        scale_predictors=False,
    )
    Xf = np.asfortranarray(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if path:
            order = sorted(alphas, reverse=True)
            m = GeneralizedLinearRegressor(alpha=order, alpha_search=True, **common).fit(
                Xf, y, sample_weight=w
            )
            by = {a: (m.coef_path_[i].copy(), float(m.intercept_path_[i])) for i, a in enumerate(order)}
        else:
            by = {}
            for a in alphas:
                m = GeneralizedLinearRegressor(alpha=a, **common).fit(Xf, y, sample_weight=w)
                by[a] = (m.coef_.copy(), float(m.intercept_))
    info = {"warnings": sorted({type(c.message).__name__ for c in caught})}
    return [by[a][0] for a in alphas], [by[a][1] for a in alphas], info


def _skglm(X, y, w, alphas):
    from skglm import SparseLogisticRegression

    if not np.all(w == w[0]):
        raise ValueError("skglm's logistic datafit takes no sample weights")
    coefs, icpts = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for a in alphas:
            m = SparseLogisticRegression(alpha=a, tol=1e-8, max_iter=1000, max_epochs=100_000).fit(X, y)
            coefs.append(m.coef_[0].copy())
            icpts.append(float(np.ravel(m.intercept_)[0]))
    return coefs, icpts, {"warnings": sorted({type(c.message).__name__ for c in caught})}


def _glmnet(X, y, w, alphas):
    from glmnet import LogitNet

    order = sorted(alphas, reverse=True)
    m = LogitNet(
        alpha=1.0,
        lambda_path=np.array(order),
        standardize=False,
        fit_intercept=True,
        n_splits=0,
        tol=1e-10,
        max_iter=1_000_000,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(X, y, sample_weight=w)
    if m.n_lambda_ != len(order):
        raise RuntimeError(f"glmnet stopped its path after {m.n_lambda_} of {len(order)} lambdas")
    by = {a: (m.coef_path_[0][:, i].copy(), float(m.intercept_path_[0][i])) for i, a in enumerate(order)}
    return [by[a][0] for a in alphas], [by[a][1] for a in alphas], {}


SOLVERS = {
    "saga": lambda X, y, w, a: _saga(X, y, w, a),
    "saga_warm": lambda X, y, w, a: _saga(X, y, w, a, warm=True),
    "saga_1e-6": lambda X, y, w, a: _saga(X, y, w, a, tol=1e-6),
    "glum": lambda X, y, w, a: _glum(X, y, w, a),
    "glum_path": lambda X, y, w, a: _glum(X, y, w, a, path=True),
    "skglm": _skglm,
    "glmnet": _glmnet,
}


def timed(fn, repeats: int, cheap: float):
    """(result, median CPU seconds, number of runs): one run, repeated up to ``repeats`` if it was cheap."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn()
        times.append(time.process_time() - t0)
        if times[0] >= cheap:
            break
    return out, float(np.median(times)), len(times)


def warm_up() -> dict:
    """CPU seconds of each library's first fit in a fresh process (skglm compiles with numba)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + rng.normal(size=60) > 0).astype(float)
    w = np.ones(60)
    out = {}
    for name in CANDIDATES:
        t0 = time.process_time()
        SOLVERS[name](X, y, w, ALPHAS)
        out[name] = time.process_time() - t0
    return out


# -- run -------------------------------------------------------------------------------------------
def stored_scores(suite_name: str):
    import pandas as pd

    path = ROOT / "oodfs" / "run" / "reference" / f"{suite_name}-default.parquet"
    df = pd.read_parquet(
        path, columns=["setting", "r_train", "run", "method", "point", "scores", "fit_seconds"]
    )
    df = df[df.method == "lasso"]
    out = {}
    for (setting, r_train, run), g in df.groupby(["setting", "r_train", "run"]):
        by_point = g.groupby("point").scores.first()
        out[(setting, str(r_train), int(run))] = {
            "scores": [json.loads(by_point[float(i)]) for i in range(len(ALPHAS))],
            "fit_seconds": float(g.fit_seconds.iloc[0]),
        }
    return out


def run(args) -> None:
    from oodfs.contract.registry import registry
    from oodfs.run.dataset import make_dataset
    from oodfs.run.suite import grid_ks, load_suite, with_task
    from oodfs.tables.prepare import fitted_features

    reg = registry()
    out = Path(args.out)
    done = set()
    if out.exists():
        for line in read_lines(out):
            r = json.loads(line)
            if r.get("kind") == "data set":
                done.add((r["suite"], r["setting"], r["r_train"], r["run"]))
    with gzip.open(out, "at") if out.suffix == ".gz" else out.open("a") as fh:
        fh.write(json.dumps({"kind": "warm-up", "cpu": warm_up()}) + "\n")
        fh.flush()
        for name in args.suites.split(","):
            suite, _ = with_task(load_suite(name), reg)
            assert suite.task == "binary" and "lasso" in suite.methods, name
            stored = stored_scores(name)
            keys = list(suite.data_keys())
            count = args.synthetic_binary if name == "synthetic-binary" else args.per_suite
            # spread over the r_train values: the i-th data set of each r_train in turn
            by_env: dict = {}
            for k in keys:
                by_env.setdefault(k.r_train, []).append(k)
            spread = [
                k
                for i in range(max(map(len, by_env.values())))
                for ks in by_env.values()
                for k in ks[i : i + 1]
            ]
            chosen = spread[:count]
            saga_keys = set(chosen[: args.saga_per_suite])
            for key in chosen:
                ident = (name, key.setting, str(key.r_train), int(key.run))
                if ident in done:
                    continue
                data = make_dataset(suite, key)
                fitted = fitted_features(data.X_train)
                X = np.ascontiguousarray(data.X_train[:, fitted], dtype=float)
                y = np.asarray(data.y_train, dtype=float)
                w = np.ones(X.shape[0])  # fit_method passes no sample weight: sample_probabilities(None) * n
                rec = {
                    "kind": "data set",
                    "suite": name,
                    "setting": key.setting,
                    "r_train": str(key.r_train),
                    "run": int(key.run),
                    "n": int(X.shape[0]),
                    "d": int(fitted.size),
                    "fitted": fitted.tolist(),
                    "positives": float(y.mean()),
                    "seed": int(key.seed(suite.seed, "lasso")),
                    "ks": grid_ks(suite, int(fitted.size)),
                    "stored": stored[(key.setting, str(key.r_train), int(key.run))],
                    "solvers": {},
                }
                names = list(CANDIDATES) + (list(SAGA_SOLVERS) if key in saga_keys else [])
                for sname in names:
                    try:
                        (coefs, icpts, info), cpu, runs = timed(
                            lambda s=sname: SOLVERS[s](X, y, w, ALPHAS), args.repeats, args.cheap
                        )
                    except Exception as exc:  # recorded: a solver that fails is a finding
                        rec["solvers"][sname] = {"error": f"{type(exc).__name__}: {exc}"}
                        continue
                    rec["solvers"][sname] = {
                        "cpu": cpu,
                        "runs": runs,
                        "coef": [c.tolist() for c in coefs],
                        "intercept": icpts,
                        "objective": [objective(X, y, w, c, b, a) for c, b, a in zip(coefs, icpts, ALPHAS)],
                        **info,
                    }
                    print(
                        f"{name} {key.r_train}/{key.run} {sname}: {cpu:.3f} s x{runs}",
                        file=sys.stderr,
                        flush=True,
                    )
                fh.write(json.dumps(rec) + "\n")
                fh.flush()


def draw(suite_name: str, r_train: str, run_: int):
    """(suite, key, data, fitted, X, y) of one data set, drawn as the runner draws it."""
    from oodfs.contract.registry import registry
    from oodfs.run.dataset import make_dataset
    from oodfs.run.suite import load_suite, with_task
    from oodfs.tables.prepare import fitted_features

    suite, _ = with_task(load_suite(suite_name), registry())
    key = next(k for k in suite.data_keys() if str(k.r_train) == r_train and k.run == run_)
    data = make_dataset(suite, key)
    fitted = fitted_features(data.X_train)
    return (
        suite,
        key,
        data,
        fitted,
        np.ascontiguousarray(data.X_train[:, fitted]),
        np.asarray(data.y_train, float),
    )


def runner_time(args) -> None:
    """The runner's own fit (``fit_method(suite, key, "lasso", data)``): wall and CPU seconds now,
    beside the fit seconds the shipped reference stored for the same data set."""
    from oodfs.run.evaluate import fit_method

    stored = stored_scores("caravan")
    print(
        "| data set | stored fit_seconds (wall, shipped run) | fit_method now: wall s | CPU s "
        "| scores == stored |"
    )
    print("| --- | --- | --- | --- | --- |")
    for item in args.data_sets.split(","):
        r_train, run_ = item.rsplit("/", 1)
        suite, key, data, *_ = draw("caravan", r_train, int(run_))
        w0, c0 = time.perf_counter(), time.process_time()
        fit = fit_method(suite, key, "lasso", data)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        ref = stored[(key.setting, r_train, int(run_))]
        same = all(
            np.array_equal(np.asarray(f.values), np.asarray(s)) for f, s in zip(fit.fits, ref["scores"])
        )
        print(f"| caravan {item} | {ref['fit_seconds']:.1f} | {wall:.1f} | {cpu:.1f} | {same} |", flush=True)


def converge(args) -> None:
    """SAGA at more epochs on one (data set, alpha): does it walk to the coordinate-descent optimum?"""
    from oodfs.contract.api import task_ranking

    name, rest = args.data_set.split(":", 1)
    r_train, run_ = rest.rsplit("/", 1)
    suite, key, data, fitted, X, y = draw(name, r_train, int(run_))
    w = np.ones(X.shape[0])
    a = args.alpha
    i = ALPHAS.index(a)
    seed = key.seed(suite.seed, "lasso")
    (gc, gb, _), gcpu, _ = timed(lambda: _glum(X, y, w, [a]), 3, 2.0)
    g_obj = objective(X, y, w, gc[0], gb[0], a)

    def ranking(coef):
        full = np.zeros(fitted.size)
        full[fitted] = np.abs(coef)
        return task_ranking(full, seed, i, fitted), full > 0

    g_rank, g_supp = ranking(gc[0])
    print(
        f"{args.data_set}, alpha {a}: glum objective {g_obj:.12f} ({gcpu:.3f} CPU s), "
        f"support {int(g_supp.sum())}\n"
    )
    print(
        "| SAGA max_iter | epochs run | CPU s | objective - glum's | max abs coef diff to glum "
        "| support equal | ranking equal |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for m in (int(v) for v in args.max_iters.split(",")):
        (c, b, info), cpu, _ = timed(lambda m=m: _saga(X, y, w, [a], max_iter=m), 1, 0.0)
        r, supp = ranking(c[0])
        print(
            f"| {m} | {info['n_iter'][0]} | {cpu:.1f} | {objective(X, y, w, c[0], b[0], a) - g_obj:.2e} | "
            f"{np.abs(c[0] - gc[0]).max():.2e} | {bool(np.array_equal(supp, g_supp))} | "
            f"{bool(np.array_equal(r, g_rank))} |",
            flush=True,
        )


def weighted(args) -> None:
    """The same comparison with non-uniform sample weights (``oodfs bench`` passes none; a caller of
    the selector may): integer weights 1..3, rescaled to sum n as ``_l1_logistic`` does."""
    from oodfs.contract.api import ranking_from_scores

    print("| data set | alpha | solver | objective - SAGA's | support equal | ranking equal |")
    print("| --- | --- | --- | --- | --- | --- |")
    for item in args.data_sets.split(","):
        name, rest = item.split(":", 1)
        r_train, run_ = rest.rsplit("/", 1)
        *_, X, y = draw(name, r_train, int(run_))
        raw = np.random.default_rng(0).integers(1, 4, size=X.shape[0]).astype(float)
        w = raw / raw.sum() * X.shape[0]
        ref_c, ref_b, _ = _saga(X, y, w, ALPHAS)
        for sname in ("glum", "glmnet"):
            c, b, _ = SOLVERS[sname](X, y, raw, ALPHAS)  # the raw weights: each library rescales its own
            for i, a in enumerate(ALPHAS):
                gap = objective(X, y, w, c[i], b[i], a) - objective(X, y, w, ref_c[i], ref_b[i], a)
                supp = np.array_equal(c[i] != 0, ref_c[i] != 0)
                rank = np.array_equal(
                    ranking_from_scores(np.abs(c[i])), ranking_from_scores(np.abs(ref_c[i]))
                )
                print(f"| {item} | {a} | {sname} | {gap:.1e} | {supp} | {rank} |", flush=True)


# -- report ----------------------------------------------------------------------------------------
def compare(rec: dict, sname: str) -> list[dict]:
    """Per alpha: the candidate's selection against the stored SAGA scores."""
    from oodfs.contract.api import task_ranking

    fitted = np.array(rec["fitted"])
    sol = rec["solvers"][sname]
    out = []
    for i, a in enumerate(ALPHAS):
        ref = np.asarray(rec["stored"]["scores"][i], dtype=float)
        cand = np.zeros(fitted.size)
        cand[fitted] = np.abs(np.asarray(sol["coef"][i]))
        r_ref = task_ranking(ref, rec["seed"], i, fitted)
        r_cand = task_ranking(cand, rec["seed"], i, fitted)
        topk = all(set(r_ref[:k]) == set(r_cand[:k]) for k in rec["ks"])
        support = bool(np.array_equal((ref > 0) & fitted, (cand > 0) & fitted))
        ranking = bool(np.array_equal(r_ref, r_cand))
        out.append(
            {
                "alpha": a,
                "ranking": ranking,
                "topk": topk,
                "support": support,
                "max_diff": float(np.abs(ref - cand).max()),
                "bit_equal": bool(np.array_equal(ref, cand)),
            }
        )
    return out


def report(args) -> None:
    recs, warm = [], None
    for line in read_lines(Path(args.results)):
        r = json.loads(line)
        if r["kind"] == "warm-up":
            warm = r["cpu"]
        else:
            recs.append(r)
    solvers = [s for s in (*SAGA_SOLVERS, *CANDIDATES) if any(s in r["solvers"] for r in recs)]
    print(f"Data sets: {len(recs)}; first-fit CPU seconds in a fresh process: {json.dumps(warm)}\n")

    # 1. every candidate against the stored SAGA selection, per suite
    print("### Selections against the shipped SAGA fit (stored reference scores), per suite\n")
    print("Each cell: (data set, alpha) pairs whose top-k sets at every k of the grid and support are")
    print(
        "equal / all pairs; in brackets, pairs whose full ranking differs; then the largest |score| "
        "difference.\n"
    )
    print("| suite | data sets | n x d | " + " | ".join(solvers) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in solvers) + " |")
    totals = {s: [0, 0, 0] for s in solvers}
    per_suite: dict = {}
    for r in recs:
        per_suite.setdefault(r["suite"], []).append(r)
    for suite, rs in per_suite.items():
        cells = []
        for s in solvers:
            cmp = [c for r in rs if s in r["solvers"] and "coef" in r["solvers"][s] for c in compare(r, s)]
            errs = sum(1 for r in rs if s in r["solvers"] and "error" in r["solvers"][s])
            if not cmp and not errs:
                cells.append("—")
                continue
            eq = sum(c["topk"] and c["support"] for c in cmp)
            rk = sum(not c["ranking"] for c in cmp)
            md = max((c["max_diff"] for c in cmp), default=float("nan"))
            totals[s][0] += eq
            totals[s][1] += len(cmp)
            totals[s][2] += rk
            cell = f"{eq}/{len(cmp)} ({rk}) {md:.0e}"
            if errs:
                cell += f", {errs} failed"
            cells.append(cell)
        dims = sorted({f"{r['n']}x{sum(r['fitted'])}" for r in rs})
        dims_s = dims[0] if len(dims) == 1 else f"{dims[0]}..{dims[-1]}"
        print(f"| {suite} | {len(rs)} | {dims_s} | " + " | ".join(cells) + " |")
    print(
        "| **all** | "
        + f"{len(recs)} | | "
        + " | ".join(f"**{t[0]}/{t[1]}** ({t[2]})" for t in totals.values())
        + " |"
    )

    # 2. cost and objective, paired on the data sets where SAGA was refitted
    paired = [r for r in recs if "saga" in r["solvers"] and "cpu" in r["solvers"]["saga"]]
    print(f"\n### CPU and objective on the {len(paired)} data sets refitted by SAGA (paired, same process)\n")
    print(
        "CPU: each solver's CPU seconds for the 4 alphas, summed over the data sets, and the ratio to SAGA's."
    )
    print("Objective: per (data set, alpha), the solver's objective minus the lowest of all solvers (0 = the")
    print(
        "lowest); the table gives the largest such excess and how often the solver is above SAGA by > 1e-9.\n"
    )
    print("| suite | data sets | SAGA CPU s | " + " | ".join(s for s in solvers if s != "saga") + " |")
    print("| --- | --- | --- | " + " | ".join("---" for s in solvers if s != "saga") + " |")
    by_suite: dict = {}
    for r in paired:
        by_suite.setdefault(r["suite"], []).append(r)
    for suite, rs in list(by_suite.items()) + [("**all**", paired)]:
        cells = []
        saga_cpu = sum(r["solvers"]["saga"]["cpu"] for r in rs)
        for s in solvers:
            if s == "saga":
                continue
            ok = [r for r in rs if s in r["solvers"] and "cpu" in r["solvers"][s]]
            cpu = sum(r["solvers"][s]["cpu"] for r in ok)
            base = sum(r["solvers"]["saga"]["cpu"] for r in ok)
            cells.append(f"{cpu:.3g} s = {cpu / base:.2g} x" if base else "—")
        print(f"| {suite} | {len(rs)} | {saga_cpu:.3g} | " + " | ".join(cells) + " |")
    print(
        "\n| solver | largest objective excess over the lowest | (data set, alpha) above SAGA by > 1e-9 | "
        "below SAGA by > 1e-9 | SAGA refit == stored scores |"
    )
    print("| --- | --- | --- | --- | --- |")
    for s in solvers:
        excess, above, below, n = 0.0, 0, 0, 0
        for r in paired:
            if s not in r["solvers"] or "objective" not in r["solvers"][s]:
                continue
            objs = [v["objective"] for v in r["solvers"].values() if "objective" in v]
            for i in range(len(ALPHAS)):
                best = min(o[i] for o in objs)
                mine = r["solvers"][s]["objective"][i]
                saga = r["solvers"]["saga"]["objective"][i]
                excess = max(excess, mine - best)
                above += mine > saga + 1e-9
                below += mine < saga - 1e-9
                n += 1
        same = ""
        if s == "saga":
            eq = sum(all(c["bit_equal"] for c in compare(r, "saga")) for r in paired)
            same = f"{eq}/{len(paired)} data sets bit for bit"
        print(f"| {s} | {excess:.1e} | {above}/{n} | {below}/{n} | {same} |")

    # 3. SAGA's epochs
    hit = [
        (r, i) for r in paired for i, e in enumerate(r["solvers"]["saga"].get("n_iter", [])) if e >= 100_000
    ]
    print(
        "\nSAGA (tol 1e-8) ran its max_iter = 100 000 epochs without reaching its tolerance in "
        f"{len(hit)} of "
        f"{len(paired) * len(ALPHAS)} (data set, alpha): "
        + ", ".join(f"{r['suite']} {r['r_train']}/{r['run']} alpha {ALPHAS[i]}" for r, i in hit)
    )

    # 4. the differing pairs, listed
    print("\n### Every (data set, alpha) whose selection differs from the stored SAGA fit\n")
    print(
        "The objective column: the solver's objective minus SAGA's at the same (data set, alpha), where SAGA"
    )
    print(
        "was refitted (negative: the solver's solution is the better minimiser); SAGA's epochs beside it.\n"
    )
    print(
        "| solver | data set | alpha | top-k / support / ranking equal | max score diff "
        "| objective - SAGA's | "
        "SAGA epochs |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for s in solvers:
        for r in recs:
            if s not in r["solvers"] or "coef" not in r["solvers"][s]:
                continue
            for i, c in enumerate(compare(r, s)):
                if not (c["topk"] and c["support"] and c["ranking"]):
                    flags = "/".join("yes" if c[f] else "**no**" for f in ("topk", "support", "ranking"))
                    saga = r["solvers"].get("saga", {})
                    gap = (
                        f"{r['solvers'][s]['objective'][i] - saga['objective'][i]:.1e}"
                        if "objective" in saga
                        else "—"
                    )
                    epochs = saga.get("n_iter", ["—"] * len(ALPHAS))[i]
                    print(
                        f"| {s} | {r['suite']} {r['r_train']}/{r['run']} | {c['alpha']} | {flags} | "
                        f"{c['max_diff']:.1e} | {gap} | {epochs} |"
                    )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", default=str(Path(__file__).with_name("results.jsonl.gz")))
    r.add_argument("--suites", default=",".join(BINARY_SUITES))
    r.add_argument("--per-suite", type=int, default=12)
    r.add_argument("--synthetic-binary", type=int, default=6)
    r.add_argument("--saga-per-suite", type=int, default=12)
    r.add_argument("--repeats", type=int, default=3)
    r.add_argument("--cheap", type=float, default=2.0)
    q = sub.add_parser("report")
    q.add_argument("--results", default=str(Path(__file__).with_name("results.jsonl.gz")))
    t = sub.add_parser("runner-time")
    t.add_argument("--data-sets", default=",".join(RUNNER_TIME))
    c = sub.add_parser("converge")
    c.add_argument("--data-set", default="caravan:conservative families/2")
    c.add_argument("--alpha", type=float, default=0.0003)
    c.add_argument("--max-iters", default="100000,1000000")
    g = sub.add_parser("weighted")
    g.add_argument("--data-sets", default="credit:owner/0,churn:northeast/0,happiness:1994/0")
    a = p.parse_args(argv)
    {"run": run, "report": report, "runner-time": runner_time, "converge": converge, "weighted": weighted}[
        a.cmd
    ](a)


if __name__ == "__main__":
    main()
