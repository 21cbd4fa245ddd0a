"""What ``oodfs bench`` writes after its run (:func:`oodfs.run.bench.run_bench`): per suite
results.parquet, leaderboard.md (and leaderboard-MODEL.md for each other downstream model), the
figures; for a pool of several suites ROOT/summary.md (:mod:`oodfs.report.summary`)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from oodfs.validation import OodfsError, RunAborted


def _print_note(line: str) -> None:
    print(f"oodfs: {line}", file=sys.stderr)


@dataclass
class SuiteOutputs:
    """What was written for one suite: its Report, the text of its leaderboard.md, the analysis
    behind it (:class:`oodfs.report.analysis.Analysis`, its tests done once), its figures' paths;
    or, for a suite of a pool, the error that kept them from being written."""

    report: object = None
    leaderboard: str = ""
    figures: list[Path] = field(default_factory=list)
    error: OodfsError | None = None
    analysis: object = None


@dataclass
class BenchOutputs:
    """Every suite's outputs, in the order given, and the summary of a pool (None for one suite)."""

    suites: list[SuiteOutputs]
    summary: str | None = None


def write_bench_outputs(
    runs,
    *,
    root: Path | None = None,
    figures: bool = True,
    started: float | None = None,
    show: Callable[[str], None] | None = None,
    say: Callable[[str], None] = _print_note,
    inform: Callable[[str], None] = lambda line: None,
    steps=None,
) -> BenchOutputs:
    """Write what follows a ``bench`` run. ``runs``: ``(suite, out, suite_run, skipped)`` per
    suite (:class:`oodfs.run.runner.SuiteRun` after the pool, its store open to read; ``skipped``:
    the methods the suite skipped and why). One suite (``root`` None): an error writing its outputs
    stops here (:class:`RunAborted`). A pool (``root``, its folder): a suite whose outputs cannot be
    written is said (``say``) and the others are written, then ROOT/summary.md (its wall time from
    ``started``, a :func:`time.perf_counter` reading). ``show``: called with one suite's leaderboard
    as soon as it is written; ``inform``: the figures written. ``steps``: what says each step as
    it begins and while it lasts (:class:`oodfs.run.progress.Steps`), closed here once all is
    written (None: nothing said)."""
    with steps if steps is not None else contextlib.nullcontext():
        return _write_bench_outputs(runs, root, figures, started, show, say, inform, steps)


def _write_bench_outputs(runs, root, figures, started, show, say, inform, steps) -> BenchOutputs:
    step = steps.step if steps is not None else _unsaid
    outputs = []
    for suite, out, run, skipped, *env_rows in runs:
        try:
            outputs.append(
                suite_outputs(
                    suite,
                    out,
                    run.store,
                    skipped,
                    figures=figures,
                    show=show,
                    say=say,
                    step=step,
                    env_rows=env_rows[0] if env_rows else None,
                )
            )
        except OodfsError as exc:
            if root is None:
                raise
            say(f"{out}: {exc}")
            outputs.append(SuiteOutputs(error=exc))
            continue
        if outputs[-1].figures:
            inform(f"figures: {', '.join(str(p) for p in outputs[-1].figures)}")
    if root is None:
        return BenchOutputs(outputs)
    from oodfs.report.escape import write_text
    from oodfs.report.summary import summary_markdown

    wall = time.perf_counter() - (started if started is not None else time.perf_counter())
    reports = [o.error if o.error is not None else o.report for o in outputs]
    with step(f"writing {root / 'summary.md'}"):
        text = summary_markdown([entry[2] for entry in runs], reports, wall)
        try:
            write_text(root / "summary.md", text)
        except OSError as exc:
            raise RunAborted(f"cannot write {root / 'summary.md'}: {exc.strerror or exc}") from None
    return BenchOutputs(outputs, text)


@contextlib.contextmanager
def _unsaid(text: str):
    yield


def suite_outputs(
    suite,
    out: Path,
    store,
    skipped: dict,
    *,
    figures: bool = True,
    show=None,
    say=_print_note,
    step=None,
    env_rows: list | None = None,
) -> SuiteOutputs:
    """One suite's outputs, as ``bench`` writes them after its run: results.parquet,
    leaderboard.md (and leaderboard-MODEL.md for each other downstream model), the figures unless
    not ``figures``; ``show`` called with the leaderboard once it is written; ``step``: a context
    manager called with what each step does (the analysis, the leaderboard, each figure).
    ``env_rows``: each test environment's rows per data set, for a suite that does not count every
    test environment once (stored with the results, so that a later report reads them too)."""
    import pandas as pd

    from oodfs.contract.env_weights import ENV_ROWS_COLUMNS, EnvWeighting
    from oodfs.contract.registry import get_rule
    from oodfs.report.escape import write_text
    from oodfs.report.leaderboard import Leaderboard
    from oodfs.report.plots import make_figures
    from oodfs.report.report import Report
    from oodfs.results.store import export

    step = step or _unsaid
    if env_rows is not None:
        store.set_meta("test_rows", env_rows)
    counted = dict(
        env_weighting=EnvWeighting(suite.env_weighting, suite.min_env_rows),
        env_rows=None if env_rows is None else pd.DataFrame(env_rows, columns=ENV_ROWS_COLUMNS),
    )
    rule = get_rule(suite.selection)  # looked up once: the report and each model's report take it
    with step(f"reading the results of {out}"):
        results = store.frame()
        metrics = store.get_meta("metrics")
        columns = list(suite.metrics) or None  # the suite's table metrics
        try:
            report = Report(
                results,
                rule,
                metrics,
                list(suite.methods),
                columns=columns,
                unit=suite.unit,
                task=suite.task,
                setting_order=[s.name for s in suite.settings],
                **counted,
            )
        except OodfsError as exc:  # e.g. a β error where the data declare no true coefficients
            say(f"the suite's metrics cannot be shown ({exc}); showing the headline metrics")
            report = Report(
                results,
                rule,
                metrics,
                list(suite.methods),
                unit=suite.unit,
                task=suite.task,
                setting_order=[s.name for s in suite.settings],
                **counted,
            )
    try:
        with step(f"writing {out / 'results.parquet'}"):
            export(results, out)
        with step(f"testing the comparisons and writing {out / 'leaderboard.md'}"):
            board = Leaderboard(report)
            text = board.to_markdown() + skipped_note(skipped, suite.task)
            write_text(out / "leaderboard.md", text)
            for other in report.model_reports()[1:]:  # the other downstream models, same fits
                write_text(
                    out / f"leaderboard-{other.downstream}.md",
                    Leaderboard(other).to_markdown() + skipped_note(skipped, suite.task),
                )
        if show is not None:
            show(text)
        paths = make_figures(report, out, step=step) if figures else []
    except OSError as exc:
        raise RunAborted(
            f"cannot write to {exc.filename or out}: {exc.strerror or exc} (the results are stored in "
            f"{store.path}; `oodfs leaderboard {out}` prints them)"
        ) from None
    return SuiteOutputs(report, text, paths, analysis=board.analysis)


def skipped_note(skipped: dict, task: str) -> str:
    """The leaderboard's line on the methods a suite skipped (they cannot handle its task type)."""
    if not skipped:
        return ""
    lines = [f"- {method}: {why}" for method, why in skipped.items()]
    return (
        f'\n\nSkipped, not failed (the target is {task}; docs/PROTOCOL.md, "Task types"):\n'
        + "\n".join(lines)
        + "\n"
    )
