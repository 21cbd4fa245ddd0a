"""The whole theory run: every task of the experiment, then its analysis, summary and figures."""

from __future__ import annotations

import json
import time
from pathlib import Path

from oodfs.results.atomic import write_atomically
from oodfs.theory.analysis import slopes, summary_markdown
from oodfs.theory.experiment import TheoryConfig, check_config, run_task, target_coefficients
from oodfs.theory.figures import make_figures
from oodfs.validation import OodfsError


def run_theory(config: TheoryConfig, out_dir, jobs: int = 1, progress: bool = True) -> dict:
    """Run every (condition, n, replicate) task, write the results, slopes, summary and figures to
    ``out_dir``; return the paths written."""
    import pandas as pd

    from oodfs.run.executors import run_calls

    check_config(config)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OodfsError(f"--out {str(out)!r} is not a folder (it is a file or a device); choose a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file, no permission
        raise OodfsError(f"cannot create --out {str(out)!r}: {exc.strerror or exc}") from None
    start = time.perf_counter()
    # results arrive in completion order: each carries its condition's name
    targets = {
        t["condition"]: t
        for t in run_calls(target_coefficients, [(config, c) for c in config.conditions], jobs=jobs)
    }
    reps = max([config.replicates] + [m.replicates or 0 for m in config.methods])
    calls = [
        (config, cond, n, rep, targets[cond.name])
        for n in sorted(config.n_grid, reverse=True)
        for cond in config.conditions
        for rep in range(reps)
    ]
    rows, done = [], 0
    for task_rows in run_calls(run_task, calls, backend_name="local", jobs=jobs):
        rows += task_rows
        done += 1
        if progress and (done % max(1, len(calls) // 20) == 0 or done == len(calls)):
            print(
                f"oodfs theory: {done}/{len(calls)} samples, {time.perf_counter() - start:.0f} s", flush=True
            )
    results = pd.DataFrame(rows).sort_values(["condition", "method", "n", "replicate"], kind="stable")
    results = results.reset_index(drop=True)
    results.attrs["tail_n"] = config.tail_n
    slope_table = slopes(results)
    seconds = time.perf_counter() - start
    paths = {
        "results": out / "theory_results.csv",
        "slopes": out / "theory_slopes.csv",
        "summary": out / "theory_summary.md",
        "config": out / "theory_config.json",
    }
    # each file in one step: a full disk leaves no half a file (one line from the command line)
    write_atomically(paths["results"], results.to_csv(index=False).encode())
    write_atomically(paths["slopes"], slope_table.to_csv(index=False).encode())
    summary = summary_markdown(results, slope_table, targets, config, seconds)
    write_atomically(paths["summary"], summary.encode())
    config_text = json.dumps(
        {"config": config.to_dict(), "targets": targets, "jobs": jobs, "seconds": seconds}, indent=1
    )
    write_atomically(paths["config"], config_text.encode())
    for p in make_figures(results, targets, config, out):
        paths[p.stem] = p
    return paths
