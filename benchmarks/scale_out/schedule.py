"""The whole benchmark's schedule on many workers, from the seconds its runs stored (issue 48, item 3).

    python benchmarks/scale_out/schedule.py [--workers 2,8,32,128]

`oodfs bench --suite all --jobs W` hands every data set of every suite to one pool, longest first,
to whichever of W workers frees first (docs/PROTOCOL.md, "The whole benchmark in one command"). This
replays that schedule on the per-data-set seconds of benchmarks/whole_benchmark/whole_benchmark.json
(each suite's recorded run or shipped reference: data draw + every method's fits + the downstream
training), twice:

* **data sets**: one job per data set, as the pool was before `split_for_workers`;
* **split**: the runner's rule now (oodfs.run.runner.split_for_workers): a job more than
  SPLIT_ABOVE_SHARE times an even share of the pool (total / W), or every job when there are fewer
  jobs than workers, becomes one job per method. A method's job draws the data again and trains
  alone the subsets it needs. For a suite with a shipped reference those are read from it: the
  method's fit seconds plus, per downstream model, the data set's downstream seconds times the
  share of the data set's distinct subsets the method needs (every subset assumed to cost the same).
  For a suite without one (its record is a run that is not in the repository) the data set's
  seconds are divided among its methods in proportion to their recorded fit seconds plus an equal
  share of its downstream seconds: an approximation, named in the output.

The seconds are what the runs stored (wall seconds in a worker, at the load of the day each record
was made) and predate the cheaper logistic model (benchmarks/logistic_downstream): read the ratios
and which job bounds the schedule, not the minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from tabulate import tabulate

from oodfs.run.progress import split_for_workers
from oodfs.run.reference import shipped_dir
from oodfs.run.suite import customise, load_suite

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "whole_benchmark"))
from whole_benchmark import lanes as makespan  # noqa: E402 -- longest first, each to the first free worker

FACTS = HERE.parent / "whole_benchmark" / "whole_benchmark.json"
DATA_KEY = ["setting", "r_train", "run"]


def per_method_from_reference(label: str, ratios: dict, cuts: dict) -> list[dict] | None:
    """Per data set, ``{method: seconds of its job alone}`` and ``"__data_set__"``: the data set's
    whole job; None without a reference. A method's job alone: its fits and, per model, the share of
    the data set's distinct subsets it needs times the data set's downstream seconds of that model
    (the data draw, which a reference does not store, is the caller's). A model the suite declares
    and its reference lacks (the real binary suites' MLP) is counted at its measured ratio to one it
    holds (``ratios``: ``{"mlp/logistic": r}``, whole_benchmark.json), as the estimate does; ``cuts``
    (``{model: factor}``) scales a held model's own seconds (not those estimated from it)."""
    path = shipped_dir() / f"{label.replace('@', '-')}.parquet"
    if not path.is_file():
        return None
    name, profile = label.split("@")
    declared = customise(load_suite(name), profile=profile).downstream
    cols = [*DATA_KEY, "method", "downstream", "subset", "fit_seconds", "downstream_seconds"]
    df = pd.read_parquet(path, columns=cols).astype({"r_train": str, "run": str})
    held = set(df["downstream"].dropna())
    extra = {}  # a model held: the ratios of the declared models it stands for
    for key, r in ratios.items():
        model, to = key.split("/")
        if model in declared and model not in held:
            extra[to] = r
    out = []
    for _, d in df.groupby(DATA_KEY, sort=False):
        fit = d.drop_duplicates("method").set_index("method")["fit_seconds"].fillna(0.0)
        alone = fit.to_dict()
        whole = float(fit.sum())  # the data set's job: every fit, every model's downstream once
        for model, m in d.dropna(subset=["downstream"]).groupby("downstream"):
            total = m.drop_duplicates(["method"])["downstream_seconds"].fillna(0.0).sum()
            total *= cuts.get(model, 1.0) + extra.get(model, 0.0)
            whole += total
            distinct = m["subset"].dropna().nunique() or 1
            for method, rows in m.groupby("method"):
                alone[method] = alone.get(method, 0.0) + total * rows["subset"].dropna().nunique() / distinct
        out.append({**alone, "__data_set__": whole})
    return out


def pool(facts: dict, cuts: dict) -> list[dict]:
    """Every data set of the whole benchmark: its suite, its job seconds, its methods' jobs alone."""
    items = []
    for e in facts["estimate"]:
        ref = per_method_from_reference(e["suite"], facts["ratios"], cuts)
        n = len(e["job_s"])
        fit = e["fit_s"]
        down_share = sum(e["downstream_s"].values()) / max(len(fit), 1)
        weights = {m: s + down_share for m, s in fit.items()}
        total_w = sum(weights.values()) or 1.0
        for i, job in enumerate(e["job_s"]):
            draw = e["data_s"] / n
            if ref is not None and len(ref) == n:  # the reference's own seconds, job and methods alike
                alone = {m: draw + s for m, s in ref[i].items()}
                job = draw + ref[i]["__data_set__"]
                alone.pop("__data_set__")
                basis = "reference"
            else:
                alone = {m: draw + (job - draw) * w / total_w for m, w in weights.items()}
                basis = "proportional"
            items.append({"suite": e["suite"], "index": i, "job_s": job, "alone": alone, "basis": basis})
    return items


@dataclass(frozen=True)
class _Job:
    """What the runner's rule reads of a job: its methods (one data set of ``pool``)."""

    methods: tuple


def schedule(items: list[dict], workers: int) -> dict:
    total = sum(it["job_s"] for it in items)
    longest = max(items, key=lambda it: it["job_s"])
    share = total / workers
    # the runner's own rule, on the data sets' stored seconds
    pending = [(i, None, _Job(tuple(it["alone"]))) for i, it in enumerate(items)]
    pieces = []
    for i, _, job in split_for_workers(pending, workers, lambda item: items[item[0]]["job_s"]):
        it = items[i]
        if job.methods == tuple(it["alone"]):
            pieces.append((it["job_s"], f"{it['suite']} data set {it['index']} (whole)", i))
        else:
            (m,) = job.methods
            pieces.append((it["alone"][m], f"{it['suite']} data set {it['index']}, {m}", i))
    split = [p[0] for p in pieces]
    top = max(pieces)
    return {
        "workers": workers,
        "worker_s": total,
        "data_set_jobs_h": makespan([it["job_s"] for it in items], workers) / 3600,
        "bound_data_sets": "the longest data set" if longest["job_s"] >= share else "total / workers",
        "longest_data_set": f"{longest['suite']} data set {longest['index']}: {longest['job_s']:.0f} s",
        "split_jobs": len({i for _, label, i in pieces if "(whole)" not in label}),
        "split_worker_s": sum(split),
        "split_h": makespan(split, workers) / 3600,
        "bound_split": "its longest job" if top[0] >= sum(split) / workers else "total / workers",
        "longest_split_job": f"{top[1]}: {top[0]:.0f} s",
    }


#: the logistic model's measured cut since the references were stored (benchmarks/logistic_downstream:
#: 0.283 x its CPU time, numbers bit for bit), for the second table
LOGISTIC_CUT = {"logistic": 0.283}
HEADERS = [
    "workers",
    "wall h, one job per data set",
    "bounded by",
    "wall h, long data sets split",
    "data sets split",
    "worker s, split / not",
    "bounded by",
    "longest job after the split",
]


def table(rows: list[dict]) -> str:
    cells = [
        [
            r["workers"],
            f"{r['data_set_jobs_h']:.2f}",
            r["bound_data_sets"],
            f"{r['split_h']:.2f}",
            r["split_jobs"],
            f"{r['split_worker_s'] / r['worker_s']:.3f}",
            r["bound_split"],
            r["longest_split_job"],
        ]
        for r in rows
    ]
    return tabulate(cells, HEADERS, tablefmt="github")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", default="2,8,32,128", help="comma-separated worker counts")
    args = p.parse_args(argv)
    facts = json.loads(FACTS.read_text())
    out = {}
    for name, cuts in [("as stored", {}), ("logistic cut", LOGISTIC_CUT)]:
        items = pool(facts, cuts)
        rows = [schedule(items, int(w)) for w in args.workers.split(",")]
        out[name] = rows
        print(
            f"\n{name}: {len(items)} data sets, {rows[0]['worker_s']:.0f} worker s; longest data set "
            f"{rows[0]['longest_data_set']}"
        )
        print(table(rows))
    proportional = sorted({it["suite"] for it in items if it["basis"] == "proportional"})
    print(f"\nmethods' jobs approximated in proportion (no shipped reference): {', '.join(proportional)}")
    (HERE / "schedule.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
