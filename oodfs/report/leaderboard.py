"""Leaderboard: a report -> per-setting tables of the headline metrics (rank average, F1, RMSE
mean and RMSE sd for the built-in ones).

Every cell is a mean over runs with its 95 % interval and the run count is shown; one run gives
no interval. "Best" (bold) is a tested statement: the best mean and every method not
significantly worse by a paired test (oodfs.report.stats.best_set), and the rule is printed under the
tables. Nothing is marked where the test cannot decide (too few runs).
"""

from __future__ import annotations

import re
from functools import cached_property

import numpy as np
import pandas as pd
from tabulate import tabulate

from oodfs.contract.profiles import DOWNSTREAM_MODELS, PROFILES
from oodfs.contract.selection import SUPPORT_MARK
from oodfs.contract.task import env_sort_key
from oodfs.contract.wls import FAILURE_CAUSES
from oodfs.report import stats
from oodfs.report.analysis import Analysis
from oodfs.report.escape import csv_frame, latex, latex_comment, md_code, md_text
from oodfs.report.report import Report
from oodfs.validation import OodfsError

#: what each built-in yardstick row is, per task (a binary target's "mean" is its base rate)
YARDSTICK_TEXT = {
    "regression": {
        "all_features": "all_features trains the model on every feature",
        "mean": "mean predicts the training mean",
    },
    "binary": {
        "all_features": "all_features trains the model on every feature",
        "mean": "mean predicts the training base rate (the share of positives) for every row",
        "prior": "prior predicts the training base rate (the share of positives) for every row",
    },
}


def failure_cause(error) -> str | None:
    """Why a task failed, for an error whose cause oodfs knows (:data:`oodfs.contract.wls.FAILURE_CAUSES`:
    a weighted fit on collapsed weights), else None."""
    text = str(error or "")
    return next((cause for start, cause in FAILURE_CAUSES.items() if text.startswith(start)), None)


#: every cell's interval: the percentile bootstrap stays inside the range of the values, hence of
#: the metric (F1 in [0, 1], an RMSE sd >= 0, a rank average within its possible ranks), where a t
#: interval can leave it (docs/PROTOCOL.md section 10)
INTERVAL = "bootstrap"


def summarize(results: pd.DataFrame, rule: str = "val") -> pd.DataFrame:
    """The leaderboard's numbers (see :meth:`oodfs.report.report.Report.wide_summary`)."""
    return Report(results, rule).wide_summary()


def _fmt(value: float) -> str:
    return f"{value:.3f}"


def _interval(mean, low, high, n, fmt: str = "{:.3f}") -> str:
    """``mean [low, high]``, or the mean alone without an interval (n < 2)."""
    text = fmt.format(mean)
    return text if n < 2 or not np.isfinite(low) else f"{text} [{fmt.format(low)}, {fmt.format(high)}]"


class Leaderboard:
    """Tables of a :class:`~oodfs.report.report.Report`: per setting, the headline metrics averaged
    over r_train, and each metric by r_train."""

    def __init__(self, report: Report):
        self.report = report
        self.rule = report.rule
        self.suite = report.suite
        self.metrics = {m: report.metrics[m] for m in report.headline}
        self.summary = report.wide_summary()
        self.per_run = report.per_run()
        self.cells = report.cells(INTERVAL)
        # the tables look up thousands of cells: each cell, row and unit count by its key
        key = ["setting", "r_train", "method"]
        self._cell_at: dict = {}
        for k, c in zip(self.cells[[*key, "metric"]].itertuples(index=False, name=None),
                        self.cells[["mean", "low", "high", "n"]].itertuples(index=False)):  # fmt: skip
            self._cell_at.setdefault(k, c)
        self._units_at = self.cells.groupby(key, sort=False)["n"].max().to_dict()
        self._summary_at: dict = {}
        for k, r in zip(self.summary[key].itertuples(index=False, name=None), self.summary.itertuples()):
            self._summary_at.setdefault(k, r)
        self.yardsticks = [m for m in dict.fromkeys(self.summary["method"]) if report.kind(m) == "yardstick"]
        self.analysis = Analysis(report)
        self.best, self.notes = self._best()
        self.suspect = report.suspect_fits()

    @classmethod
    def from_results(cls, results: pd.DataFrame, rule: str = "val") -> "Leaderboard":
        if results.empty:
            raise OodfsError("the results table is empty: nothing to rank")
        return cls(Report(results, rule))

    # -- numbers -------------------------------------------------------------------------
    def _best(self) -> tuple[dict, list[str]]:
        """Methods in the best set per (setting, r_train or "all", metric), and the sentences
        describing the rule: the analysis's (oodfs.report.analysis), which every output shares."""
        return self.analysis.best_sets(), self.analysis.best_notes()

    def _cell(self, setting, r_train, method, metric) -> tuple[str, bool]:
        c = self._cell_at.get((setting, r_train, method, metric))
        if c is None or c.n == 0:
            return "", False
        text = _fmt(c.mean) if c.n < 2 else f"{_fmt(c.mean)} [{_fmt(c.low)}, {_fmt(c.high)}]"
        return text, method in self.best.get((setting, r_train, metric), set())

    def _runs(self, setting, r_train, method) -> str:
        """Runs behind the row's cells, and its failed tasks if any."""
        units = self._units_at.get((setting, r_train, method))
        s = self._summary_at.get((setting, r_train, method))
        units = 0 if units is None else int(units)
        failed = int(s.failed) if s is not None else 0
        text = f"{units}"
        if self.report.unit == "environment" and r_train == "all":  # the units, then the runs behind them
            text += f" ({int(s.runs) if s is not None else 0} runs)"
        return text + (f" ({failed} failed tasks)" if failed else "")

    @property
    def _unit_column(self) -> str:
        """The column counting a row's units of replication, named by the unit the legend names."""
        return "environments (runs)" if self.report.unit == "environment" else "runs"

    # -- shared layout ------------------------------------------------------------------
    def _r_values(self, setting: str) -> list:
        rs = self.summary.loc[
            (self.summary["setting"] == setting) & (self.summary["r_train"] != "all"), "r_train"
        ]
        return sorted(set(rs), key=env_sort_key)

    def tables(self) -> list[tuple[str, list[str], list[list[tuple[str, bool]]]]]:
        """(title, header, rows of (text, is_best)) for every table, in display order."""
        out = []
        for setting in dict.fromkeys(self.summary["setting"]):
            methods = list(dict.fromkeys(self.summary.loc[self.summary["setting"] == setting, "method"]))
            rs = self._r_values(setting)
            label = (
                f"averaged over r_train ∈ {{{', '.join(str(r) for r in rs)}}}"
                if len(rs) > 1
                else f"r_train = {rs[0]}"
                if rs
                else ""
            )
            header = ["method", self._unit_column] + [f"{m.title} {m.arrow}" for m in self.metrics.values()]
            rows = [
                [(self._label(method, setting), False), (self._runs(setting, "all", method), False)]
                + [self._cell(setting, "all", method, m) for m in self.metrics]
                for method in methods
            ]
            out.append((f"Setting `{setting}`, {label}", header, rows))
            if len(rs) > 1:
                for metric, m in self.metrics.items():
                    header = ["method"] + [f"r_train={r}" for r in rs] + ["all"]
                    rows = [
                        [(self._label(method, setting), False)]
                        + [self._cell(setting, r, method, metric) for r in rs]
                        + [self._cell(setting, "all", method, metric)]
                        for method in methods
                    ]
                    out.append((f"Setting `{setting}`: {m.title} {m.arrow} by r_train", header, rows))
            out += self._real_data_tables(setting)
        return out

    def _label(self, method: str, setting: str) -> str:
        label = f"{method} (yardstick)" if method in self.yardsticks else method
        s = self.suspect[(self.suspect["setting"] == setting) & (self.suspect["method"] == method)]
        if len(s):  # the most flagged of its rules; "Weight diagnostics" lists each
            worst = s.loc[s["flagged"].idxmax()]
            label += f" (suspect: {worst['flagged']} of {worst['chosen']} fits)"
        return label

    def _real_data_tables(self, setting: str) -> list:
        """Against the yardstick, the loss per test environment, and what each method selected."""
        out = []
        task = self.report.task_type
        loss = task.metric("mean")  # the task's mean test loss: RMSE mean, log-loss mean
        tests = self.analysis.tests(setting, loss) if loss in self.metrics else None
        ref = self.analysis.family.reference
        if ref and tests is not None and len(tests):
            title = self.metrics[loss].title
            pairs = "environments" if self.report.unit == "environment" else "pairs"
            header = ["method", pairs, f"{title} − {ref} [95 % t]", "Wilcoxon p (Holm)", "verdict"]
            rows = []
            for r in tests.itertuples():
                p = "" if not np.isfinite(r.p_adjusted) else f"{r.p_adjusted:.3g}"
                diff = _interval(r.mean_diff, r.diff_low, r.diff_high, r.n_pairs, "{:+.3f}")
                label = r.method_a if r.family == "methods" else f"{r.method_a} (yardstick, own family)"
                rows.append([(label, False), (str(r.n_pairs), False), (diff, False), (p, False),
                             (r.verdict, False)])  # fmt: skip
            units = ", ".join(self.analysis.family.blocks)
            title = f"Setting `{setting}`: each method against {ref} (paired over {units})"
            out.append((title, header, rows))
        score = task.validation_loss
        pe = self._per_env
        pe = pe[pe["setting"] == setting] if len(pe) else pe
        if len(pe):
            envs = list(dict.fromkeys(pe["env"]))
            rows = []
            for method in dict.fromkeys(pe["method"]):
                g = pe[pe["method"] == method].set_index("env")
                cells = [
                    _interval(*g.loc[e, ["mean", "low", "high", "n"]]) if e in g.index else "" for e in envs
                ]
                rows.append([(self._label(method, setting), False)] + [(c, False) for c in cells])
            name = task.titles[score]
            title = f"Setting `{setting}`: {name} by test environment (mean over r_train and runs)"
            out.append((title, ["method"] + [f"{name} {e} ↓" for e in envs], rows))
        out += self._chosen_k_table(setting)
        freq = self._selection_frequency
        freq = freq[freq["setting"] == setting] if len(freq) else freq
        if len(freq):
            rows = []
            for method, g in freq.groupby("method", sort=False):
                items = [
                    f"{r.variable} {r.fits}/{r.n_fits}"
                    + (f" ({r.levels:.1f} levels)" if r.levels != 1 else "")
                    for r in g.itertuples()
                ]
                rows.append([(method, False), (", ".join(items), False)])
            order = {m: i for i, m in enumerate(dict.fromkeys(self.summary["method"]))}
            rows.sort(key=lambda r: order.get(r[0][0], len(order)))
            title = (
                f"Setting `{setting}`: what each method selected (chosen fits that kept each variable; "
                "one-hot levels grouped by variable)"
            )
            out.append((title, ["method", "variables"], rows))
        return out

    @cached_property
    def _per_env(self) -> pd.DataFrame:
        """The validation loss per test environment of every setting (computed once, not per setting)."""
        from oodfs.report import features

        return features.per_env_rmse(self.report, self.report.task_type.validation_loss)

    @cached_property
    def _selection_frequency(self) -> pd.DataFrame:
        from oodfs.report import features

        return features.selection_frequency(self.report)

    def _chosen_k_table(self, setting: str) -> list:
        """With a k grid (docs/PROTOCOL.md section 10, "The k grid"): per method, how often the rule
        chose each set size, and its own support where the grid holds "support" (a method without
        one skips it, said in its row); nothing when every method was evaluated at one size."""
        points, chosen = self.report.points, self.report.chosen
        if "k" not in points or "k" not in chosen:
            return []
        points = points[points["setting"] == setting]
        sizes = points.groupby("method", sort=False)["k"].nunique()
        if not (sizes > 1).any():
            return []
        own = points["params"].fillna("").str.contains(SUPPORT_MARK, regex=False)
        has_support = set(points.loc[own, "method"])
        rows = []
        for method, g in chosen[chosen["setting"] == setting].groupby("method", sort=False):
            if sizes.get(method, 1) < 2 and not (has_support and self.report.kind(method) != "yardstick"):
                continue
            at_support = g["params"].fillna("").str.contains(SUPPORT_MARK, regex=False)
            counts = g.loc[~at_support, "k"].value_counts().sort_index()
            text = ", ".join(f"{int(k)}: {n}/{len(g)}" for k, n in counts.items())
            if has_support:
                support = (
                    f"own support: {int(at_support.sum())}/{len(g)}"
                    + (f" (median k {g.loc[at_support, 'k'].median():g})" if at_support.any() else "")
                    if method in has_support
                    else "own support: none (the method yields no set; skipped)"
                )
                text = ", ".join(t for t in (text, support) if t)
            rows.append([(method, False), (text, False), (f"{g['k'].median():g}", False)])
        methods = points["method"].map(sizes) > 1
        if has_support:  # a method evaluated at the sizes and its support: its sizes are the grid's
            methods = points["method"].map(lambda m: self.report.kind(m) != "yardstick")
        grid = sorted({int(k) for k in points.loc[methods & ~own, "k"].dropna()})
        title = (
            f"Setting `{setting}`: the set size k the {self.rule.name} rule chose with each grid point "
            f"(k grid {', '.join(map(str, grid))}{', support' if has_support else ''})"
        )
        return [(title, ["method", "chosen k: fits", "median k"], rows)]

    def _reference_note(self) -> list[str]:
        """Which methods' rows were taken from shipped reference results (not run here)."""
        res = self.report.results
        if "origin" not in res or not (res["origin"] == "reference").any():
            return []
        methods = list(dict.fromkeys(res.loc[res["origin"] == "reference", "method"]))
        return [
            f"Rows of {', '.join(methods)} come from the reference results shipped with oodfs (not run here)."
        ]

    def _preamble(self, esc=str) -> list[str]:
        """The lines above the tables; ``esc``: how a name from the results is escaped."""
        return [esc(n) for n in self._reference_note()] + [
            f"Profile: **{esc(self.report.profile)}** — {PROFILES.get(self.report.profile, '')}.",
            f"Model selection: **{self.rule.label}** — {self.rule.description}.",
            self._downstream_note(),
            # how the test environments count (docs/PROTOCOL.md section 3): names from the data
            *[esc(n[0].upper() + n[1:] + ".") for n in self.report.env_notes()],
            self.analysis.family.describe(),
            # the note names settings: escaped as a whole (it has no markup of its own)
            *([esc(self.analysis.undecidable_note())] if self.analysis.undecidable_note() else []),
            f"Cells: mean over runs and its {stats.describe_interval(INTERVAL)}; an r_train = all cell "
            + (
                "is over the training environments, each the mean of its runs (the unit of replication: "
                "the column environments (runs) counts them, then the runs behind them)."
                if self.report.unit == "environment"
                else "averages each run over r_train first."
            )
            + f" ↓ lower is better, ↑ higher is better. **Bold**: {self.analysis.bold_text()} (below).",
        ]

    def _downstream_note(self) -> str:
        model = self.report.downstream
        others = [m for m in self.report.downstream_models if m != model]
        text = f"Downstream model: **{model}** — {DOWNSTREAM_MODELS.get(model, model)}."
        if others:
            text += (
                f" These results also hold {', '.join(others)} (`oodfs leaderboard DIR --downstream NAME`)."
            )
        if len(self.suspect):
            text += (
                " Rows marked (suspect: ... fits) are methods some of whose chosen fits meet a declared "
                "suspect rule of their diagnostics: read their numbers with care (what each rule says is "
                "under Weight diagnostics)."
            )
        if self.yardsticks:
            text += (
                f" Rows marked (yardstick) are references ({', '.join(self.yardsticks)}): never bold; "
                + "; ".join(YARDSTICK_TEXT[self.report.task].get(y, y) for y in self.yardsticks)
                + "."
            )
        return text

    def _failures(self, code=lambda t: f"`{t}`", esc=str) -> list[str]:
        """A line per method and setting with failed tasks; ``code``, ``esc``: how a name is
        put in a code span and how other text from the results is escaped."""
        failed = self.summary[(self.summary["failed"] > 0) & (self.summary["r_train"] == "all")]
        return [
            f"- {code(r.method)} ({esc(r.setting)}): {int(r.failed)} task(s) failed — {esc(r.error)}"
            + (f": {esc(cause)}" if (cause := failure_cause(r.error)) else "")
            for r in failed.itertuples()
        ]

    def _diagnostic_flags(self, code=lambda t: f"`{t}`", esc=str) -> list[str]:
        """Chosen grid points whose diagnostics meet their declared :class:`SuspectRule`."""
        return self.report.suspect_lines(code, esc)

    # -- formats ------------------------------------------------------------------------
    def to_markdown(self) -> str:
        """Names from the results are data: escaped as text or shown in code spans (escape.py)."""
        lines = [
            f"# oodfs leaderboard{f' — suite {md_code(self.suite)}' if self.suite else ''}",
            "",
        ] + self._preamble(md_text)
        for title, header, rows in self.tables():
            body = [
                [
                    f"**{md_text(t) if i == 0 else _md(t)}**"
                    if best and t
                    else md_text(t)
                    if i == 0
                    else _md(t)
                    for i, (t, best) in enumerate(row)
                ]
                for row in rows
            ]
            lines += [
                "",
                f"## {self._md_title(title)}",
                "",
                tabulate(
                    body, headers=[md_text(h) for h in header], tablefmt="github", disable_numparse=True
                ),
            ]
        lines += ["", "## Best sets", ""] + [f"- {md_text(n)}" for n in self.notes]
        flags = self._diagnostic_flags(md_code, md_text)
        if flags:
            lines += ["", "## Weight diagnostics", ""] + flags
        failures = self._failures(md_code, md_text)
        if failures:
            lines += ["", "## Failed tasks", ""] + failures
        return "\n".join(lines) + "\n"

    def _md_title(self, title: str) -> str:
        """A table title ("Setting `NAME`...") with its setting in a code span that holds any name."""
        settings = sorted(set(self.summary["setting"].astype(str)), key=len, reverse=True)
        for setting in settings:
            head = f"Setting `{setting}`"
            if title.startswith(head):
                return f"Setting {md_code(setting)}{md_text(title[len(head) :])}"
        return md_text(title)

    def to_csv(self) -> str:
        """The cells as a tidy table: mean, interval, n values, best-set membership, and the runs
        and failed tasks of each (setting, r_train, method) — a failed method keeps its row."""
        cells = self.cells.copy()
        cells["in_best_set"] = [
            m in self.best.get((s, r, k), set())
            for s, r, m, k in zip(cells["setting"], cells["r_train"], cells["method"], cells["metric"])
        ]
        counts = self.report.counts()[["setting", "r_train", "method", "runs", "failed", "error"]]
        cells = counts.merge(
            cells.astype({"r_train": object}), on=["setting", "r_train", "method"], how="left"
        )
        cells.insert(0, "profile", self.report.profile)
        cells.insert(1, "selection", self.rule.name)
        return csv_frame(cells).to_csv(index=False)  # a name is never a spreadsheet formula

    def to_latex(self) -> str:
        parts = [
            f"% oodfs leaderboard, profile: {_comment(self.report.profile)}, model selection: "
            f"{_comment(self.rule.label)} -- {_comment(self.rule.description)}"
        ]
        for title, header, rows in self.tables():
            body = [
                [_latex_escape(t) if not best else f"\\textbf{{{_latex_escape(t)}}}" for t, best in row]
                for row in rows
            ]
            parts += [
                f"% {_comment(title)}",
                tabulate(
                    body,
                    headers=[_latex_escape(h) for h in header],
                    tablefmt="latex_raw",
                    disable_numparse=True,
                ),
            ]
        parts += [f"% {_comment(n)}" for n in self.notes]
        return "\n".join(parts) + "\n"

    def to_html(self) -> str:
        """A page of its own holding the leaderboard of ``oodfs report``'s site, from the same
        template (oodfs/report/templates/leaderboard.html.j2): the two cannot disagree."""
        from oodfs.report.html import render_leaderboard

        return render_leaderboard(self)

    def render(self, fmt: str) -> str:
        """The leaderboard in the registered format ``fmt`` (the built-in ones are in
        oodfs/report/formats.py; a plugin adds its own with the ``oodfs_leaderboard_formats`` hook)."""
        from oodfs.contract.registry import registry

        return registry().get("format", fmt).render(self)


def _md(text) -> str:
    """Text for a markdown table or line: no HTML tag or entity, no line breaks, no table pipes.
    Only a "<" that could open a tag and an "&" that could start an entity are escaped, so that
    a label such as "<1950" reads as itself in a terminal."""
    text = " ".join(str(text).split())
    text = re.sub(r"&(?=#?\w+;)", "&amp;", text)
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text).replace("|", "\\|")


_comment = latex_comment
_latex_escape = latex
