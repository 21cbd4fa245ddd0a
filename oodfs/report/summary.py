"""The summary of a run of several suites (``oodfs bench --suite a,b`` or ``--suite all``):
ROOT/summary.md (docs/PROTOCOL.md, "The whole benchmark in one command").

Per suite: its folder, its tasks (run now, taken from the folder or a reference, failed), when its
last task finished, and the worker-seconds of the tasks run now by part, read from what the store
records per task (``fit_seconds``: the method's whole grid on one data set; ``downstream_seconds``:
the task's share of its data set's downstream training, per model; ``data_seconds``: the data
draw, once per data set). Then what the folders hold over every invocation (a run stopped and
resumed counts each task once, in the invocation that computed it): the same parts per suite, per
method and per downstream model, so that a whole benchmark run in several sittings has its cost in
one place. Then each suite's tested verdicts in the analysis's own words
(:meth:`oodfs.report.analysis.Analysis.verdict_sentences`): one run's verdicts, nothing marked a
winner.
"""

from __future__ import annotations

import pandas as pd

from oodfs.numeric import clock

DATA_KEY = ["setting", "r_train", "run"]
TASK_KEY = [*DATA_KEY, "method"]


def stored_results(store) -> pd.DataFrame | None:
    """A store's results rows as stored (r_train as text, as in the task keys), read once for
    both of the summary's tables; None when there is no store."""
    return store.tables()[1] if store is not None and store.exists() else None


def worker_seconds(results, keys) -> dict:
    """``{"fit", "downstream", "data"}``: the seconds a store's ``results`` (:func:`stored_results`)
    record for the tasks ``keys`` (TaskKeys), summed: each task's fit, its downstream share of
    every model, each data set's draw once."""
    out = {"fit": 0.0, "downstream": 0.0, "data": 0.0}
    keys = {tuple(k) for k in keys}
    if not keys or results is None:
        return out
    rows = results[[tuple(k) in keys for k in results[TASK_KEY].itertuples(index=False, name=None)]]
    if rows.empty:
        return out
    held = held_seconds(rows)
    models = [c for c in held.columns if c.startswith("downstream:")]
    return {
        "fit": float(held["fit"].sum()),
        "downstream": float(held[models].to_numpy().sum()),
        "data": float(held["data"].sum()),
    }


def computed_rows(results) -> pd.DataFrame:
    """The rows of a store's ``results`` (:func:`stored_results`) of every task that oodfs computed
    (not copied from reference results), whichever invocation ran it; empty if there is none."""
    return results[results["origin"].fillna("run") != "reference"]


def held_seconds(rows) -> pd.DataFrame:
    """Per task (``TASK_KEY``) of ``rows`` (:func:`computed_rows`): its fit seconds, its
    downstream seconds per model (columns ``downstream:MODEL``) and its data set's draw seconds
    (counted on the data set's first task, so that the column sums to each draw once: the largest a
    task of it records, as the test environments are drawn when a first subset needs them and a
    task committed before then records the training draw alone)."""
    tasks = rows.drop_duplicates(TASK_KEY)[[*TASK_KEY, "fit_seconds"]].set_index(TASK_KEY)
    out = pd.DataFrame({"fit": tasks["fit_seconds"].fillna(0.0)})
    ds = rows.dropna(subset=["downstream"]).drop_duplicates([*TASK_KEY, "downstream"])
    per_model = ds.pivot_table(
        index=TASK_KEY, columns="downstream", values="downstream_seconds", aggfunc="sum"
    )
    out = out.join(per_model.add_prefix("downstream:").fillna(0.0)).fillna(0.0)
    drawn = rows.groupby(DATA_KEY, dropna=False)["data_seconds"].transform("max")
    firsts = rows.assign(data_seconds=drawn).drop_duplicates(DATA_KEY)
    first = firsts.set_index(TASK_KEY)["data_seconds"].fillna(0.0)
    out["data"] = first.reindex(out.index).fillna(0.0)
    return out


def held_lines(runs, stored: dict) -> list[str]:
    """The tables of what the folders hold (every task oodfs computed, over every invocation):
    worker-seconds by suite, by method and by downstream model, each by part. ``stored``: each
    run's results (:func:`stored_results`) by its label."""
    per_suite = {}
    for r in runs:
        rows = computed_rows(stored[r.label]) if stored[r.label] is not None else None
        if rows is not None and not rows.empty:
            per_suite[r.label] = held_seconds(rows)
    lines = ["", "## What the folders hold, over every invocation", ""]
    if not per_suite:
        return lines + ["No folder holds a task computed by oodfs."]
    table = pd.concat(per_suite, names=["suite"]).fillna(0.0)
    models = sorted(c for c in table.columns if c.startswith("downstream:"))
    table["downstream"] = table[models].sum(axis=1)
    table["all"] = table[["fit", "downstream", "data"]].sum(axis=1)
    total = table["all"].sum()
    lines.append(
        f"Every task the folders hold that oodfs computed ({len(table)} tasks, whichever invocation ran "
        f"it; a task copied from reference results is not counted): {total:.0f} worker-seconds, as "
        "the stores record them. By suite, by method and by downstream model, each by part."
    )
    parts = ["fit", "downstream", "data", "all"]

    def rows_of(grouped: pd.DataFrame, name: str) -> list[str]:
        grouped = grouped.sort_values("all", ascending=False)
        out = [
            f"| {name} | tasks | fit s | downstream s | data s | all s | share |",
            "| --- |" + " --- |" * 6,
        ]
        for key, g in grouped.iterrows():
            cells = " | ".join(f"{g[p]:.1f}" for p in parts)
            out.append(f"| {key} | {int(g['tasks'])} | {cells} | {100 * g['all'] / total:.1f} % |")
        return out

    counted = table.assign(tasks=1)
    lines += ["", *rows_of(counted.groupby(level="suite")[["tasks", *parts]].sum(), "suite")]
    # a data set's draw belongs to no method: its own row, not the first method's
    by_method = counted.assign(data=0.0, all=counted["fit"] + counted["downstream"])
    by_method = by_method.groupby(level="method")[["tasks", *parts]].sum()
    draws = table["data"].sum()
    by_method.loc["(data draws)"] = {"tasks": 0, "fit": 0.0, "downstream": 0.0, "data": draws, "all": draws}
    lines += ["", *rows_of(by_method, "method")]
    if models:
        lines += ["", "| downstream model | seconds | share |", "| --- | --- | --- |"]
        for m in models:
            seconds = table[m].sum()
            lines.append(f"| {m.split(':', 1)[1]} | {seconds:.1f} | {100 * seconds / total:.1f} % |")
    return lines


def summary_markdown(runs, reports, wall: float) -> str:
    """The summary of a pool: ``runs`` (:class:`oodfs.run.runner.SuiteRun`, each after the pool),
    ``reports`` (each suite's Report, or the error that kept it from one), ``wall`` (the
    command's seconds)."""
    from oodfs.report.analysis import Analysis

    rows = []
    totals = dict(planned=0, ran=0, taken=0, failed=0, fit=0.0, downstream=0.0, data=0.0)
    stored = {r.label: stored_results(r.store) for r in runs}
    for r in runs:
        secs = worker_seconds(stored[r.label], [t.key for t in r.ran])
        rows.append(
            f"| {r.label} | {r.out_dir} | {r.planned} | {len(r.ran)} | {r.taken} | {r.failed} | "
            f"{clock(r.seconds)} | {secs['fit']:.1f} | {secs['downstream']:.1f} | {secs['data']:.1f} |"
        )
        counts = dict(planned=r.planned, ran=len(r.ran), taken=r.taken, failed=r.failed)
        for key, value in {**counts, **secs}.items():
            totals[key] += value
    jobs = runs[0].options.jobs if runs else 1
    last_task = max((r.seconds for r in runs if r.seconds is not None), default=None)
    lines = [
        f"# {len(runs)} suites in one run",
        "",
        f"Wall time {clock(wall)} with {jobs} worker{'s' * (jobs != 1)} ({runs[0].options.backend_name} "
        "backend), every suite's jobs in one pool, longest first. Per suite: its tasks (run now; taken: "
        "stored before with the current identity, or from reference results; failed: of those run now), "
        "when its last task finished after the pool started, and the worker-seconds of the tasks run now "
        "by part, as its store records them (fit: each method's whole grid on a data set; downstream: "
        "the models trained on the selected subsets; data: each data set's draw).",
        "",
        "| suite | folder | tasks | run now | taken | failed | last task after | fit s | downstream s "
        "| data s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *rows,
        f"| all | | {totals['planned']} | {totals['ran']} | {totals['taken']} | {totals['failed']} | "
        f"{clock(last_task)} | {totals['fit']:.1f} | {totals['downstream']:.1f} | {totals['data']:.1f} |",
        *held_lines(runs, stored),
        "",
        "## Each suite's verdicts",
        "",
        "As the analysis states them (docs/PROTOCOL.md section 10), per setting and headline metric, from "
        "this run alone; `oodfs leaderboard FOLDER` and `oodfs compare FOLDER` give the tables and pairs.",
    ]
    analyses = {}
    for r, report in zip(runs, reports):
        lines += ["", f"### {r.label}", ""]
        if isinstance(report, Exception):
            lines.append(f"No report: {report}")
            continue
        analysis = analyses[r.label] = Analysis(report)
        lines.append(f"Tested: {analysis.test_text()}; downstream model {analysis.family.downstream}.")
        lines.append("")
        sentences = analysis.verdict_sentences()
        lines += [f"- {s['setting']}, {s['metric']}: {s['text']}" for s in sentences] or [
            "- nothing tested (no setting with methods to compare)"
        ]
        note = analysis.undecidable_note()
        if note:
            lines += ["", note]
    return "\n".join(lines + across_lines(analyses)) + "\n"


def across_lines(analyses: dict) -> list[str]:
    """The verdict across suites (:func:`oodfs.report.analysis.across_suites`, as `oodfs report`'s
    index page gives it) over the suites whose analysis compares every method with the reference."""
    from oodfs.report.analysis import REFERENCE, across_suites

    with_reference = {name: a for name, a in analyses.items() if a.family.reference}
    lines = ["", "## Across suites", ""]
    if len(with_reference) < 2:
        return lines + [
            f"A verdict across suites compares each method with {REFERENCE} over the suites; "
            f"{len(with_reference)} of these {len(analyses)} suites hold {REFERENCE} (it needs two or more)."
        ]
    res = across_suites(with_reference)
    lines.append(
        f"The suite as the unit (as `oodfs report`'s index page): per suite, each method's RMSE relative "
        f"to {REFERENCE}, (method - {REFERENCE}) / {REFERENCE}; per method a two-sided Wilcoxon test over "
        f"the {res['n_suites']} suites that have the RMSE, Holm over the methods."
    )
    if len(res["methods"]) == 0:
        return lines + ["", "No suite holds the RMSE of its methods and the reference."]
    lines += ["", "| method | suites | relative effect | suites better | p (Holm) | verdict |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for m in res["methods"].itertuples():
        p = f"{m.p_holm:.3g}" if m.p_holm == m.p_holm else ""
        lines.append(
            f"| {m.method} | {m.suites} | {m.effect:+.3f} [{m.low:+.3f}, {m.high:+.3f}] | {m.better} of "
            f"{m.suites} | {p} | {m.verdict} |"
        )
    return lines
