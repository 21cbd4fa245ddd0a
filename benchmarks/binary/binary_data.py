"""The real binary suites' tables and shifts, measured (benchmarks/binary/BINARY_DATA.md).

    python benchmarks/binary/binary_data.py                   # print the report
    python benchmarks/binary/binary_data.py --out benchmarks/binary/BINARY_DATA.md

Reads every shipped suite on the ``binary_table`` environment straight from its TOML file and
loads its table through that environment (the ``table`` environment with a binary target), as a
run would. For each suite it prints the card's facts (rows, positives and base rate per
environment) and two checks:

* **Leaks**: the AUC of every feature alone over the whole table (max of AUC and 1 - AUC); a
  column above 0.99 would predict the target by itself.
* **Shift**: a logistic regression (scikit-learn, L2 with C = 1, on the standardised features)
  fitted on ``n_train`` rows of each training environment, as a run draws them, scored on the
  ``n_val`` held-out rows of that environment (in distribution) and on every test environment
  (whole): accuracy, AUC and log-loss, averaged over the training environments and ``runs``
  draws, beside the log-loss of the training base rate (the ``prior`` yardstick). A test
  environment where the model loses much more than on the hold-out holds a real shift; one
  where it stays as good holds little to repair.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, log_loss, roc_auc_score
from tabulate import tabulate

from oodfs_plugins.environments.table import BinaryTable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: a single feature with an AUC above this predicts the target alone (a leak)
LEAK_AUC = 0.99


def binary_suites() -> dict[str, dict]:
    """Every shipped suite on a binary table, as its raw TOML (read without the runner)."""
    out = {}
    for path in sorted(resources.files("oodfs.suites").iterdir(), key=lambda p: p.name):
        if path.name.endswith(".toml"):
            raw = tomllib.loads(path.read_text())
            if raw.get("environment") == "binary_table":
                out[path.name[:-5]] = raw
    return out


def table_of(raw: dict) -> BinaryTable:
    (setting,) = raw["settings"].values()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # thin one-hot levels: the run warns about them itself
        env = BinaryTable(**setting["params"])
        env.labels  # loads and prepares the table
    return env


def env_counts(env: BinaryTable, raw: dict) -> pd.DataFrame:
    data = env._data()
    rows = []
    for label, index in data["index"].items():
        y = data["y"][index]
        role = "train" if label in raw["r_train"] else "test" if label in raw["r_test"] else "unused"
        rows.append({"environment": label, "role": role, "rows": len(y), "positives": int(y.sum()),
                     "base rate": y.mean()})  # fmt: skip
    return pd.DataFrame(rows)


def single_feature_auc(env: BinaryTable) -> pd.Series:
    """Each feature's AUC alone over the whole table (max of AUC and 1 - AUC)."""
    data = env._data()
    X, y = data["X"], data["y"]
    aucs = {}
    for j, name in enumerate(data["names"]):
        if np.ptp(X[:, j]) == 0:
            continue
        a = roc_auc_score(y, X[:, j])
        aucs[name] = max(a, 1 - a)
    return pd.Series(aucs).sort_values(ascending=False)


def _scores(y, p, prior) -> dict:
    p = np.clip(p, 1e-15, 1 - 1e-15)
    both = len(np.unique(y)) == 2
    return {
        "accuracy": accuracy_score(y, p >= 0.5),
        "AUC": roc_auc_score(y, p) if both else np.nan,
        "log-loss": log_loss(y, p, labels=[0, 1]),
        "prior log-loss": log_loss(y, np.full(len(y), prior), labels=[0, 1]),
    }


HOLD_OUT = "hold-out (training env.)"


def shift(env: BinaryTable, raw: dict) -> pd.DataFrame:
    """Logistic regression per training environment and run: its scores on the hold-out and on
    each test environment, one row per (training environment, run, scored environment)."""
    n_train, n_val, runs = raw["n_train"], raw["n_val"], raw["runs"]
    tests = {label: env.sample(label, 10**9, 0) for label in raw["r_test"]}
    rows = []
    for label in raw["r_train"]:
        for run in range(runs):
            X, y = env.sample(label, n_train + n_val, 1000 + run)
            model = LogisticRegression(C=1.0, max_iter=5000).fit(X[:n_train], y[:n_train])
            prior = y[:n_train].mean()
            held = _scores(y[n_train:], model.predict_proba(X[n_train:])[:, 1], prior)
            rows.append({"train": label, "environment": HOLD_OUT, **held})
            for test, (Xt, yt) in tests.items():
                rows.append(
                    {"train": label, "environment": test, **_scores(yt, model.predict_proba(Xt)[:, 1], prior)}
                )
    return pd.DataFrame(rows)


def per_unit(scores: pd.DataFrame, raw: dict) -> pd.DataFrame:
    """AUC / log-loss per training environment (rows) and scored environment (columns): the
    (training, test) pairs are the suite's units."""
    cells = scores.groupby(["train", "environment"], sort=False)[["AUC", "log-loss"]].mean()
    table = cells.apply(lambda r: f"{r['AUC']:.3f} / {r['log-loss']:.3f}", axis=1).unstack("environment")
    return table.loc[list(raw["r_train"]), [HOLD_OUT] + list(raw["r_test"])]


def _pct(x) -> str:
    return f"{100 * x:.1f} %"


def suite_section(name: str, raw: dict) -> tuple[str, dict]:
    env = table_of(raw)
    counts = env_counts(env, raw)
    aucs = single_feature_auc(env)
    scores = shift(env, raw)
    units = per_unit(scores, raw)
    measured = scores.drop(columns="train").groupby("environment", sort=False).mean()
    measured = measured.loc[[HOLD_OUT] + list(raw["r_test"])]
    card = counts.assign(**{"base rate": counts["base rate"].map(_pct)})
    held = measured.iloc[0]
    tests = measured.iloc[1:]
    summary = {
        "suite": name,
        "rows": int(counts["rows"].sum()),
        "features": len(env.feature_names),
        "train / test envs": f"{len(raw['r_train'])} / {len(raw['r_test'])}",
        "top single-feature AUC": f"{aucs.iloc[0]:.3f} ({aucs.index[0]})",
        "AUC hold-out": f"{held['AUC']:.3f}",
        "AUC test (mean; worst)": f"{tests['AUC'].mean():.3f}; {tests['AUC'].min():.3f}",
        "log-loss hold-out": f"{held['log-loss']:.3f}",
        "log-loss test (mean; worst)": f"{tests['log-loss'].mean():.3f}; {tests['log-loss'].max():.3f}",
        "prior log-loss test (mean)": f"{tests['prior log-loss'].mean():.3f}",
    }
    lines = [
        f"### {name}",
        "",
        raw["description"] + f" ({len(env.feature_names)} features; target {raw['card']['target']}).",
        "",
        tabulate(card, headers="keys", tablefmt="github", showindex=False),
        "",
        "Single-feature AUC (whole table), the three largest: "
        + ", ".join(f"{c} {a:.3f}" for c, a in aucs.head(3).items())
        + (" -- **above the leak bound**" if aucs.iloc[0] > LEAK_AUC else f" (none above {LEAK_AUC})."),
        "",
        f"Logistic regression on {raw['n_train']} rows of each training environment, {raw['runs']} draws "
        f"each ({len(raw['r_train']) * raw['runs']} fits); mean scores:",
        "",
        tabulate(measured.reset_index(), headers="keys", tablefmt="github", showindex=False, floatfmt=".3f"),
        "",
        "AUC / log-loss per training environment (rows; mean over its draws) and scored environment:",
        "",
        tabulate(units.reset_index(), headers="keys", tablefmt="github", showindex=False),
        "",
    ]
    return "\n".join(lines), summary


def report() -> str:
    sections, summaries = [], []
    for name, raw in binary_suites().items():
        text, summary = suite_section(name, raw)
        sections.append(text)
        summaries.append(summary)
    head = [
        "# The real binary suites: tables and shifts",
        "",
        "Written by `python benchmarks/binary/binary_data.py --out benchmarks/binary/BINARY_DATA.md` (the "
        "script's "
        "docstring says what is measured). Every table is loaded through the `binary_table` "
        "environment, as a run loads it. AUC: higher is better; log-loss: lower is better; the prior "
        "log-loss is that of predicting the training base rate for every row (the `prior` yardstick).",
        "",
        "## Summary",
        "",
        tabulate(pd.DataFrame(summaries), headers="keys", tablefmt="github", showindex=False),
        "",
        "## Per suite",
        "",
    ]
    return "\n".join(head + sections)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the report here (default: print it)")
    args = parser.parse_args(argv)
    text = report()
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
