"""How the test environments count in the statistics over them (docs/PROTOCOL.md section 3,
"Weighting the test environments").

A downstream model's score in each test environment is summarised over the environments by its
mean, its standard deviation (ddof 0) and its worst value. ``equal`` (the default, and the paper's)
counts every environment once, whatever its size; ``rows`` weights the mean and the sd by each
environment's number of test rows (the worst is a worst: not weighted). A minimum size
(``min_env_rows``) leaves the smaller environments out of every statistic over environments,
and the outputs name them once. The values per environment are never changed: only what is said
over them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from oodfs.validation import OodfsError

#: the ways the test environments can count (docs/PROTOCOL.md section 3)
ENV_WEIGHTINGS = ("equal", "rows")
#: the statistics over test environments, by the suffix of their stored metric name
STATISTICS = ("mean", "std", "worst")
#: each test environment's rows per data set, as a run records them (results meta ``test_rows``)
ENV_ROWS_COLUMNS = ["setting", "run", "env", "rows"]


def check_env_weighting(value, what: str = "env_weighting") -> str:
    if value not in ENV_WEIGHTINGS:
        raise OodfsError(f"{what} must be one of {', '.join(ENV_WEIGHTINGS)}, got {value!r}")
    return value


def check_min_env_rows(value, what: str = "min_env_rows") -> int | None:
    """None (no minimum) or a positive integer."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise OodfsError(f"{what} must be a positive whole number of rows, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class EnvWeighting:
    """``weighting``: one of :data:`ENV_WEIGHTINGS`; ``min_rows``: environments with fewer test
    rows are left out of the statistics over environments (None: none is)."""

    weighting: str = "equal"
    min_rows: int | None = None

    def __post_init__(self):
        check_env_weighting(self.weighting)
        check_min_env_rows(self.min_rows)

    @property
    def is_default(self) -> bool:
        """Every environment counted once, none left out: the numbers as stored."""
        return self.weighting == "equal" and self.min_rows is None

    def kept(self, rows) -> np.ndarray:
        """A mask over ``rows`` (each environment's test rows): the environments the statistics use."""
        rows = np.asarray(rows, dtype=float)
        return rows >= self.min_rows if self.min_rows is not None else np.ones(rows.shape, dtype=bool)

    def summarize(self, values, rows, lower_is_better: bool = True) -> dict[str, float]:
        """``{"mean", "std", "worst"}`` of ``values`` (one per environment; NaN: undefined there,
        left out) over the environments kept, the mean and sd weighted by ``rows`` under ``rows``
        weighting; NaN each when none is left."""
        values = np.asarray(values, dtype=float)
        keep = self.kept(rows) & np.isfinite(values)
        v = values[keep]
        if not v.size:
            return {s: float("nan") for s in STATISTICS}
        w = np.asarray(rows, dtype=float)[keep] if self.weighting == "rows" else np.ones(v.size)
        mean = float(np.sum(w * v) / np.sum(w))
        std = float(np.sqrt(np.sum(w * (v - mean) ** 2) / np.sum(w)))
        return {"mean": mean, "std": std, "worst": float(v.max() if lower_is_better else v.min())}

    def left_out(self, rows: dict) -> dict:
        """``{environment: its rows}`` of the environments left out (fewer than ``min_rows``)."""
        if self.min_rows is None:
            return {}
        return {env: n for env, n in rows.items() if n < self.min_rows}

    def notes(self, left_out: dict) -> list[str]:
        """What an output says about the weighting: one line for ``rows``, one naming the
        environments left out (``{environment: rows}``, rows a number or a text such as "3-5")."""
        out = []
        if self.weighting == "rows":
            out.append(
                "the mean and sd over test environments are weighted by each environment's test rows "
                "(env_weighting rows; the worst is not weighted)"
            )
        if left_out:
            named = ", ".join(f"{env} ({_rows(n)})" for env, n in left_out.items())
            out.append(
                f"left out of the across-environment statistics: {named} (fewer than {self.min_rows} rows)"
            )
        return out

    def check_leaves_some(self, rows: dict, where: str = "") -> None:
        """Refuse a minimum that leaves no test environment (``rows``: ``{environment: rows}``)."""
        if self.min_rows is not None and rows and all(n < self.min_rows for n in rows.values()):
            largest = max(rows, key=lambda e: rows[e])
            raise OodfsError(
                f"min_env_rows (--min-env-rows) {self.min_rows} leaves no test environment{where}: the "
                f"largest, {largest}, has {_rows(rows[largest])}"
            )


def _rows(n) -> str:
    return f"{n} row" if isinstance(n, (int, np.integer)) and n == 1 else f"{n} rows"


def _key(frame: pd.DataFrame, columns: list[str]) -> pd.Series:
    """One text per row naming its values of ``columns`` (a whole number as one, a missing value as
    empty): rows of a store, a parquet file or a reference, whatever their column types, match."""

    def text(v):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return ""
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            return str(int(v))
        return str(v)

    parts = [frame[c].astype(object).map(text) for c in columns]
    out = parts[0]
    for p in parts[1:]:
        out = out + "\x1f" + p
    return out


def reweighted(results: pd.DataFrame, task, env_rows: pd.DataFrame, weighting: EnvWeighting, keys: list[str]):
    """``results`` (long rows of successful tasks) with every statistic over test environments
    (``<score>_mean``, ``_std``, ``_worst`` for each score of ``task``, a
    :class:`oodfs.contract.task_types.TaskType`) computed again from the stored per-environment
    rows under ``weighting``, and ``{environment: rows}`` of those it left out. ``env_rows``: columns
    ``setting``, ``run``, ``env``, ``rows`` (each test environment's rows per data set); ``keys``:
    the columns that make one evaluation (task, point, k, downstream model). A statistic stored at a
    k without per-environment rows (the extra k of a curve) is kept as stored; one whose every
    environment is left out is dropped (as a statistic with no environment is never stored)."""
    if weighting.is_default or results.empty:
        return results, {}
    stats = {f"{score}_{stat}": (score, stat) for score in task.scores for stat in STATISTICS}
    results = results.reset_index(drop=True)
    is_flat = results["env"].isna().to_numpy()
    metric = results["metric"].astype(object)
    per_env = results[~is_flat & metric.isin(task.scores).to_numpy()]
    summary = results[is_flat & metric.isin(list(stats)).to_numpy()]
    if per_env.empty or summary.empty:
        return results, {}
    data_set = ["setting", "run", "env"]
    sizes = dict(zip(_key(env_rows, data_set), env_rows["rows"].astype(int)))
    pe = pd.DataFrame(
        {
            "eval": _key(per_env, keys).to_numpy(),
            "score": per_env["metric"].astype(str).to_numpy(),
            "env": per_env["env"].astype(str).to_numpy(),
            "value": per_env["value"].astype(float).to_numpy(),
            "rows": _key(per_env, data_set).map(sizes).to_numpy(),
            "data_set": _key(per_env, ["setting", "run"]).to_numpy(),
        }
    )
    if pe["rows"].isna().any():
        u = per_env[pe["rows"].isna().to_numpy()].iloc[0]
        raise OodfsError(
            f"the number of test rows of environment {u['env']} (setting {u['setting']}, run {u['run']}) is "
            "not known, and env_weighting / min_env_rows need it: run the suite with them given (oodfs bench "
            "--env-weighting ... / --min-env-rows ...), which records every test environment's rows"
        )
    evaluated = set(pe["eval"])
    once = pe.drop_duplicates(["data_set", "env"])
    left = once[~weighting.kept(once["rows"])]
    left_out = {}
    for env, g in left.groupby("env", sort=False):
        lo, hi = int(g["rows"].min()), int(g["rows"].max())
        left_out[env] = lo if lo == hi else f"{lo}-{hi}"
    pe = pe[weighting.kept(pe["rows"]) & np.isfinite(pe["value"])].copy()
    pe["w"] = pe["rows"].astype(float) if weighting.weighting == "rows" else 1.0
    pe["wx"] = pe["w"] * pe["value"]
    group = ["eval", "score"]
    agg = pe.groupby(group, sort=False).agg(
        W=("w", "sum"), WX=("wx", "sum"), high=("value", "max"), low=("value", "min")
    )
    agg["mean"] = agg["WX"] / agg["W"]
    pe = pe.join(agg["mean"], on=group)
    pe["dev"] = pe["w"] * (pe["value"] - pe["mean"]) ** 2
    agg["std"] = np.sqrt(pe.groupby(group, sort=False)["dev"].sum() / agg["W"])
    evals = agg.index.get_level_values("eval").to_numpy(dtype=object)
    scores = agg.index.get_level_values("score").to_numpy(dtype=object)
    lower = np.array([bool(task.lower_is_better[s]) for s in scores], dtype=bool)
    new = []
    for stat in STATISTICS:
        values = np.where(lower, agg["high"], agg["low"]) if stat == "worst" else agg[stat].to_numpy()
        new.append(pd.Series(values, index=evals + "\x1e" + scores + f"_{stat}"))
    new = pd.concat(new)
    at = _key(summary, keys).to_numpy(dtype=object)
    value = (
        pd.Series(at + "\x1e" + summary["metric"].astype(str).to_numpy(dtype=object)).map(new).to_numpy(float)
    )
    # the extra k of a curve has no per-environment rows: its statistics stay as stored
    changed = pd.Series(at).isin(evaluated).to_numpy()
    out = results.copy()
    keep = changed & np.isfinite(value)
    out.loc[summary.index[keep], "value"] = value[keep]
    return out.drop(index=summary.index[changed & ~np.isfinite(value)]), left_out
