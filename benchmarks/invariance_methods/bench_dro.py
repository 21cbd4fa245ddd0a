"""The dro package's robust linear models on the multi-environment suites' data: as feature rankers
(oodfs's chi2dro, cvardro, kldro, wdro selectors) and as downstream models beside ERM.

    pip install dro            # see docs/PROTOCOL.md, section 13: it does not install cleanly here
    python benchmarks/invariance_methods/bench_dro.py --out benchmarks/invariance_methods/DRO.md

``import dro`` imports torchvision (for its neural models), and PyPI's torchvision does not load
beside oodfs's CPU build of torch ("operator torchvision::nms does not exist"). The linear models
need none of it, so this script puts an empty placeholder module in torchvision's place when it
cannot be imported: a benchmark-only workaround, never done inside oodfs.

Data: ``irm-sem`` (FOU, FEU, POU, PEU) and ``synthetic-multienv`` (poly, mlp; training sets
{1.5, 2, 3} and {2.5, 2.7, 3}), run 0, pooled training rows of every environment (the DRO
methods use no labels). Per data set and grid point: F1 of the top 5 against the stable set, and
the test RMSE (mean over the suite's test environments) of the fitted robust linear model itself,
on all features, against least squares (ERM) on all features and on the stable set. Paired over
data sets: two-sided Wilcoxon signed-rank, mean difference with a 95 % t interval.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import sys
import time
import types
from pathlib import Path

import numpy as np
from scipy import stats

SETS = [("irm-sem", s, (0.2, 2.0, 5.0)) for s in ("FOU", "FEU", "POU", "PEU")] + [
    ("synthetic-multienv", s, envs) for s in ("poly", "mlp") for envs in ((1.5, 2.0, 3.0), (2.5, 2.7, 3.0))
]
RUNS = (0,)


def import_dro():
    """dro.linear_model, with a placeholder torchvision where the real one cannot be loaded."""
    try:
        import torchvision  # noqa: F401
    except Exception:
        for name in ("torchvision", "torchvision.models", "torchvision.transforms", "torchvision.datasets"):
            module = types.ModuleType(name)
            module.__spec__ = importlib.machinery.ModuleSpec(name, None)
            sys.modules[name] = module
        for sub in ("models", "transforms", "datasets"):
            setattr(sys.modules["torchvision"], sub, sys.modules[f"torchvision.{sub}"])
    import dro.linear_model

    return dro.linear_model


def datasets():
    from oodfs.contract.task import DataKey
    from oodfs.run.dataset import make_dataset
    from oodfs.run.suite import load_suite

    for suite_name, setting, envs in SETS:
        suite = load_suite(suite_name)
        for run in RUNS:
            yield f"{suite_name} {setting} {envs} run {run}", make_dataset(suite, DataKey(setting, envs, run))


def f1(top, stable):
    tp = len(set(top) & set(stable))
    return 2 * tp / (len(top) + len(stable))


def test_rmse(predict, ds):
    return float(np.mean([np.sqrt(np.mean((y - predict(X)) ** 2)) for _, X, y in ds.tests]))


def paired(a, b):
    d = np.asarray(a) - np.asarray(b)
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    p = stats.wilcoxon(a, b).pvalue if np.any(d != 0) else 1.0
    return f"{d.mean():+.3f} [{d.mean() - half:+.3f}, {d.mean() + half:+.3f}], p = {p:.3g}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    linear_model = import_dro()
    from sklearn.linear_model import LinearRegression

    from oodfs_plugins.invariance.robust import ROBUST_SELECTORS

    results = {}  # (method, point) -> {"f1": [], "rmse": [], "seconds": [], "failed": int}
    erm, erm_stable, erm_f1, names = [], [], [], []
    for name, ds in datasets():
        X, y, stable = np.asarray(ds.X_train), np.asarray(ds.y_train), sorted(ds.stable_set)
        names.append(name)
        ols = LinearRegression().fit(X, y)
        erm.append(test_rmse(ols.predict, ds))
        erm_f1.append(f1(np.argsort(-np.abs(ols.coef_ * X.std(0)))[:5], stable))
        ols_s = LinearRegression().fit(X[:, stable], y)
        erm_stable.append(test_rmse(lambda Z, m=ols_s: m.predict(Z[:, stable]), ds))
        mu, sd = X.mean(0), X.std(0)
        Xs = (X - mu) / sd
        for cls in ROBUST_SELECTORS:
            for value in cls.grid[cls.radius_name]:
                rec = results.setdefault(
                    (cls.name, value), {"f1": [], "rmse": [], "seconds": [], "failed": 0}
                )
                if rec["failed"] and not rec["f1"]:
                    continue  # failed on the first data set: not retried (a failed solve costs the most)
                model = getattr(linear_model, cls.dro_class)(
                    input_dim=X.shape[1], model_type="ols", fit_intercept=True
                )
                model.update({cls.radius_name: float(value)})
                t0 = time.perf_counter()
                try:
                    params = model.fit(Xs, y)
                except Exception:
                    rec["failed"] += 1
                    continue
                rec["seconds"].append(time.perf_counter() - t0)
                theta, b = np.asarray(params["theta"]).ravel(), float(params.get("b", 0.0))
                if len(names) == 1:  # the selector's scores are these |theta|: checked on the first data set
                    sel = cls(**{cls.radius_name: value}).fit(X, y).scores_
                    assert np.allclose(sel, np.abs(theta), rtol=1e-3, atol=1e-4 * np.abs(theta).max())
                rec["f1"].append(f1(np.argsort(-np.abs(theta))[:5], stable))
                rec["rmse"].append(test_rmse(lambda Z, t=theta, b=b: ((Z - mu) / sd) @ t + b, ds))
        print(name, flush=True)

    n = len(names)
    lines = [
        "# The dro package's robust linear models: rankers or downstream models?",
        "",
        f"`python benchmarks/invariance_methods/bench_dro.py` ({n} data sets: "
        f"{', '.join(sorted({s for s, *_ in SETS}))}, "
        "run(s) "
        f"{', '.join(map(str, RUNS))}; one fit per data set and grid point). ERM = least squares on all "
        f"features: F1 {np.mean(erm_f1):.2f}, test RMSE {np.mean(erm):.3f}; least squares on the stable set "
        f"(the target of feature selection): test RMSE {np.mean(erm_stable):.3f}.",
        "",
        "| method | radius | fits failed | F1 of top 5 (mean) | F1 vs ERM's | test RMSE of the DRO model "
        "(mean) | RMSE vs ERM's (paired over data sets) | s per fit (median) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (method, value), rec in results.items():
        ok = len(rec["f1"])
        if ok < n:  # paired comparisons need every data set
            tried = "the first data set" if not ok else f"{rec['failed']} of {n}"
            lines.append(f"| {method} | {value:g} | {tried} | — | — | — | — | — |")
            continue
        lines.append(
            f"| {method} | {value:g} | 0 of {n} | {np.mean(rec['f1']):.2f} | {paired(rec['f1'], erm_f1)} | "
            f"{np.mean(rec['rmse']):.3f} | {paired(rec['rmse'], erm)} | {np.median(rec['seconds']):.2f} |"
        )
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
