"""The leak checks of `oodfs select` on the 23 shipped real suites, and on a planted leak
(benchmarks/leak_check/README.md; docs/PROTOCOL.md section 17, "Leaks").

    python benchmarks/leak_check/leak_check.py                  # print the report
    python benchmarks/leak_check/leak_check.py --out benchmarks/leak_check/README.md

Reads every shipped suite on the ``table`` or ``binary_table`` environment straight from its TOML
file and loads its table through that environment, as a run would. For each training unit (one
training environment, or the union of a set of them), on all of its rows:

1. **False alarms**: :func:`oodfs.tables.find_leaks` -- the function ``oodfs select`` runs on the
   rows it fits on -- with the suite's task: the binary suites' strong-copy check (refused unless
   kept), the one-feature step function (binary and regression) and the identity (regression).
   Beside it, for a binary unit, its strongest feature alone (AUC, max of AUC and 1 - AUC) and the
   AUC the other features reach together (a 5-fold cross-validated logistic regression).
2. **The planted leak** (binary units, and two synthetic tables): a column equal to the target with
   5 % of its values flipped (seeded), and one with 20 %, added as an ordinary feature; whether the
   check flags it, its AUC and the AUC of the table's own features together. A copy is flagged
   by its own AUC alone, so ``--draws`` further seeds of the flips (the copy's AUC only) give how
   often each table flags it.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from tabulate import tabulate

from oodfs.contract.registry import registry
from oodfs.tables import find_leaks
from oodfs.tables.leaks import BINARY_LEAK_AUC, FOLDS, LEAK_AUC, LEAK_R2, _rest_auc
from oodfs_plugins.environments.table import BinaryTable, Table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FLIPS = (0.05, 0.20)
COPY = "balance"  # the planted column's name: an ordinary feature's


def real_suites() -> dict[str, dict]:
    """Every shipped suite on a real table, as its raw TOML (read without the runner)."""
    out = {}
    for path in sorted(resources.files("oodfs.suites").iterdir(), key=lambda p: p.name):
        if path.name.endswith(".toml"):
            raw = tomllib.loads(path.read_text())
            if raw.get("environment") in ("table", "binary_table"):
                out[path.name[:-5]] = raw
    return out


def table_of(raw: dict) -> Table:
    (setting,) = raw["settings"].values()
    cls = BinaryTable if raw["environment"] == "binary_table" else Table
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # thin one-hot levels: the run warns about them itself
        env = cls(**setting["params"])
        env.labels  # loads and prepares the table
    return env


def units(env: Table, raw: dict):
    """(name, X, y) of each training unit: an environment, or the union of a set of them."""
    data = env._data()
    for entry in raw["r_train"]:
        labels = entry if isinstance(entry, list) else [entry]
        rows = np.sort(np.concatenate([data["index"][env.check_env(label)] for label in labels]))
        yield "+".join(map(str, labels)), data["X"][rows], data["y"][rows]


def alone_auc(y: np.ndarray, x: np.ndarray) -> float:
    a = roc_auc_score(y, x)
    return max(a, 1 - a)


def flipped(y: np.ndarray, share: float, seed: int) -> np.ndarray:
    """y with ``share`` of its values flipped, each row independently (seeded)."""
    return np.where(np.random.default_rng(seed).random(len(y)) < share, 1 - y, y)


def alarms(leaks) -> list[str]:
    out = [f"{f} (copy {a:.3f})" for f, (a, _) in leaks.strong.items()]
    out += [f"{f} (alone {v:.3f})" for f, v in leaks.alone.items()]
    if leaks.identity:
        out.append(f"identity of {', '.join(leaks.identity)} (R² {leaks.identity_r2:.4f})")
    return out


def false_alarms(suites: dict) -> tuple[pd.DataFrame, dict]:
    """One row per training unit of every real suite; the binary units' tables for the flips."""
    rows, binary = [], {}
    for name, raw in suites.items():
        env = table_of(raw)
        names = list(env._data()["names"])
        task = "binary" if raw["environment"] == "binary_table" else "regression"
        for unit, X, y in units(env, raw):
            start = time.perf_counter()
            leaks = find_leaks(X, y, names, task, seed=0)
            seconds = time.perf_counter() - start
            row = {"suite": name, "task": task, "training unit": unit, "rows": len(y), "features": len(names)}
            if task == "binary":
                varying = [j for j in range(X.shape[1]) if np.ptp(X[:, j]) > 0]
                aucs = {j: alone_auc(y, X[:, j]) for j in varying}
                top = max(aucs, key=aucs.get)
                rest = _rest_auc(X[:, [j for j in varying if j != top]], y, 0)
                row.update({"strongest alone": names[top], "its AUC": aucs[top], "the rest's AUC": rest})
                binary[f"{name} / {unit}"] = (X, y)
            rows.append({**row, "alarms": "; ".join(alarms(leaks)) or "none", "check s": seconds})
            print(f"{name} / {unit}: {rows[-1]['alarms']} ({seconds:.1f} s)", file=sys.stderr, flush=True)
    return pd.DataFrame(rows), binary


def synthetic_tables() -> dict:
    """Two synthetic binary tables: the synthetic-binary suite's process (poly, bias rate 2.5) and
    y ~ Bernoulli(sigmoid(2 x0 - 1.5 x1 + x2)) with 7 noise features."""
    env = registry().get("environment", "synthetic_binary")(setting="poly")
    X1, y1 = env.sample(2.5, 2000, 0)
    rng = np.random.default_rng(0)
    X2 = rng.normal(size=(2000, 10))
    y2 = (rng.random(2000) < 1 / (1 + np.exp(-(2 * X2[:, 0] - 1.5 * X2[:, 1] + X2[:, 2])))).astype(float)
    return {"synthetic-binary (poly, r 2.5)": (X1, y1), "logistic, 10 features": (X2, y2)}


def planted(tables: dict, draws: int) -> pd.DataFrame:
    rows = []
    for i, (name, (X, y)) in enumerate(tables.items()):
        names = [f"x{j}" for j in range(X.shape[1])] + [COPY]
        row = {"table": name, "rows": len(y)}
        for share in FLIPS:
            copy = flipped(y, share, seed=1000 + i)
            leaks = find_leaks(np.column_stack([X, copy]), y, names, "binary", seed=0)
            tag = f"{share:.0%}"
            row[f"{tag}: AUC"] = alone_auc(y, copy)
            row[f"{tag}: flagged"] = COPY in leaks.strong
            if COPY in leaks.strong:
                row[f"{tag}: the rest's AUC"] = leaks.strong[COPY][1]
            seeds = range(2000 + 97 * i, 2000 + 97 * i + draws)
            hits = sum(alone_auc(y, flipped(y, share, s)) >= BINARY_LEAK_AUC for s in seeds)
            row[f"{tag}: flagged in draws"] = f"{hits}/{draws}"
        rows.append(row)
    return pd.DataFrame(rows)


def report(checks: pd.DataFrame, plants: pd.DataFrame, draws: int, seconds: float) -> str:
    def fmt(v):
        if v is None:
            return "n/a"
        return f"{v:.3f}" if isinstance(v, float) else v

    n_alarm = int((checks["alarms"] != "none").sum())
    binary = checks[checks["task"] == "binary"]
    n_regression = checks.loc[checks["task"] == "regression", "suite"].nunique()
    cols = ["suite", "task", "training unit", "rows", "features"]
    cols += ["strongest alone", "its AUC", "the rest's AUC", "alarms"]
    lines = [
        f"{len(checks)} training units of {checks['suite'].nunique()} suites "
        f"({binary['suite'].nunique()} binary, {n_regression} regression); units with an alarm: {n_alarm}. "
        "Largest single-feature AUC of a binary unit: "
        f"{binary['its AUC'].max():.3f}; the bound is {BINARY_LEAK_AUC} (step function: AUC {LEAK_AUC}, "
        f"R² {LEAK_R2}; {FOLDS} folds). Whole run: {seconds:.0f} s.",
        "",
        # a regression unit has no AUC: its cells stay empty
        tabulate(
            checks[cols].astype(object).where(checks[cols].notna(), "").map(fmt),
            headers="keys",
            tablefmt="github",
            showindex=False,
        ),  # fmt: skip
        "",
        f"Planted copies of the target ('{COPY}'; flips seeded; draws: {draws} further seeds of the flips):",
        "",
        tabulate(
            plants.astype(object).where(plants.notna(), "").map(fmt),
            headers="keys",
            tablefmt="github",
            showindex=False,
        ),  # fmt: skip
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=100)
    p.add_argument("--out", type=Path, help="write the tables between the README's markers")
    args = p.parse_args()
    start = time.perf_counter()
    checks, binary = false_alarms(real_suites())
    plants = planted({**binary, **synthetic_tables()}, args.draws)
    text = report(checks, plants, args.draws, time.perf_counter() - start)
    if args.out is None:
        print(text)
        return
    begin, end = "<!-- results: begin -->", "<!-- results: end -->"
    page = args.out.read_text()
    head, rest = page.split(begin)
    args.out.write_text(f"{head}{begin}\n{text}{end}{rest.split(end)[1]}")


if __name__ == "__main__":
    main()
