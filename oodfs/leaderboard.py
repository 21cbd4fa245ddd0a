"""Leaderboard: a report -> per-setting tables of the headline metrics (rank average, F1,
RMSE mean and RMSE sd for the built-in ones).

Each cell is mean ± sd over runs of the grid point chosen by the model-selection rule; the
"all" column averages each run over r_train first. The best value of each column is marked.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import pandas as pd
from tabulate import tabulate

from .report import Report
from .suite import PROFILES
from .validation import OodfsError

FORMATS = ("markdown", "csv", "latex", "html")


def summarize(results: pd.DataFrame, rule: str = "val") -> pd.DataFrame:
    """The leaderboard's numbers (see :meth:`oodfs.report.Report.wide_summary`)."""
    return Report(results, rule).wide_summary()


class Leaderboard:
    """Tables of a :class:`~oodfs.report.Report`: per setting, the headline metrics averaged
    over r_train, and each metric by r_train."""

    def __init__(self, report: Report):
        self.report = report
        self.rule = report.rule
        self.suite = report.suite
        self.metrics = {m: report.metrics[m] for m in report.headline}
        self.summary = report.wide_summary()

    @classmethod
    def from_results(cls, results: pd.DataFrame, rule: str = "val") -> "Leaderboard":
        if results.empty:
            raise OodfsError("the results table is empty: nothing to rank")
        return cls(Report(results, rule))

    # -- shared layout ------------------------------------------------------------------
    def _r_values(self, setting: str) -> list:
        rs = self.summary.loc[(self.summary["setting"] == setting) & (self.summary["r_train"] != "all"), "r_train"]
        return sorted(set(rs), key=lambda r: (isinstance(r, str), r))

    def _cell(self, row: pd.Series, metric: str) -> tuple[str, float]:
        if row["runs"] == 0:
            return "failed", np.nan
        value, sd = row[metric], row[f"{metric}_sd"]
        if pd.isna(value):
            return "", np.nan
        text = f"{value:.3f} ± {sd:.3f}" if pd.notna(sd) and row["runs"] > 1 else f"{value:.3f}"
        if row["failed"]:
            text += f" ({int(row['failed'])} failed)"
        return text, float(value)

    def tables(self) -> list[tuple[str, list[str], list[list[tuple[str, bool]]]]]:
        """(title, header, rows of (text, is_best)) for every table, in display order."""
        out = []
        for setting in dict.fromkeys(self.summary["setting"]):
            s = self.summary[self.summary["setting"] == setting]
            methods = list(dict.fromkeys(s["method"]))
            rs = self._r_values(setting)
            avg = s[s["r_train"] == "all"].set_index("method")
            label = f"averaged over r_train ∈ {{{', '.join(str(r) for r in rs)}}}" if len(rs) > 1 else f"r_train = {rs[0]}" if rs else ""
            header = ["method"] + [f"{m.title} {m.arrow}" for m in self.metrics.values()]
            out.append((f"Setting `{setting}`, {label}", header,
                        self._rows(methods, [(avg, m) for m in self.metrics])))
            if len(rs) > 1:
                by_r = {r: s[s["r_train"] == r].set_index("method") for r in rs}
                for metric, m in self.metrics.items():
                    header = ["method"] + [f"r_train={r}" for r in rs] + ["all"]
                    out.append((f"Setting `{setting}`: {m.title} {m.arrow} by r_train", header,
                                self._rows(methods, [(by_r[r], metric) for r in rs] + [(avg, metric)])))
        return out

    def _rows(self, methods, columns) -> list[list[tuple[str, bool]]]:
        cells = {}
        for j, (frame, metric) in enumerate(columns):
            low = self.metrics[metric].lower_is_better
            values = {}
            for m in methods:
                if m in frame.index:
                    cells[m, j], values[m] = self._cell(frame.loc[m], metric)
                else:
                    cells[m, j], values[m] = "", np.nan
            finite = [v for v in values.values() if np.isfinite(v)]
            best = (min if low else max)(finite) if finite else None
            for m in methods:
                cells[m, j] = (cells[m, j], best is not None and np.isfinite(values[m]) and np.isclose(values[m], best))
        return [[(m, False)] + [cells[m, j] for j in range(len(columns))] for m in methods]

    def _preamble(self) -> list[str]:
        return [
            f"Profile: **{self.report.profile}** — {PROFILES.get(self.report.profile, '')}.",
            f"Model selection: **{self.rule.label}** — {self.rule.description}.",
            "Cells: mean ± sd over runs; best value of each column in bold; ↓ lower is better, ↑ higher is better.",
        ]

    def _failures(self) -> list[str]:
        failed = self.summary[(self.summary["failed"] > 0) & (self.summary["r_train"] == "all")]
        return [f"- `{r.method}` ({r.setting}): {int(r.failed)} task(s) failed — {r.error}" for r in failed.itertuples()]

    # -- formats ------------------------------------------------------------------------
    def to_markdown(self) -> str:
        lines = [f"# oodfs leaderboard{f' — suite `{self.suite}`' if self.suite else ''}", ""] + self._preamble()
        for title, header, rows in self.tables():
            body = [[f"**{t}**" if best else t for t, best in row] for row in rows]
            lines += ["", f"## {title}", "", tabulate(body, headers=header, tablefmt="github", disable_numparse=True)]
        if self._failures():
            lines += ["", "## Failed tasks", ""] + self._failures()
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        return self.summary.to_csv(index=False)

    def to_latex(self) -> str:
        parts = [f"% oodfs leaderboard, profile: {self.report.profile}, model selection: {self.rule.label} -- {self.rule.description}"]
        for title, header, rows in self.tables():
            body = [[_latex_escape(t) if not best else f"\\textbf{{{_latex_escape(t)}}}" for t, best in row] for row in rows]
            parts += [f"% {title}", tabulate(body, headers=[_latex_escape(h) for h in header],
                                             tablefmt="latex_raw", disable_numparse=True)]
        return "\n".join(parts) + "\n"

    def to_html(self) -> str:
        css = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;"
               "margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}"
               "td:first-child,th:first-child{text-align:left}b{color:#064}")
        out = [f"<!doctype html><html><head><meta charset='utf-8'><title>oodfs leaderboard</title><style>{css}</style></head><body>",
               f"<h1>oodfs leaderboard{f' — suite {html.escape(self.suite)}' if self.suite else ''}</h1>"]
        out += [f"<p>{html.escape(p).replace('**', '')}</p>" for p in self._preamble()]
        for title, header, rows in self.tables():
            out.append(f"<h2>{html.escape(title.replace('`', ''))}</h2><table><tr>"
                       + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>")
            for row in rows:
                out.append("<tr>" + "".join(f"<td>{'<b>' + html.escape(t) + '</b>' if best else html.escape(t)}</td>" for t, best in row) + "</tr>")
            out.append("</table>")
        if self._failures():
            out.append("<h2>Failed tasks</h2><ul>" + "".join(f"<li>{html.escape(f[2:])}</li>" for f in self._failures()) + "</ul>")
        return "\n".join(out) + "</body></html>\n"

    def render(self, fmt: str) -> str:
        if fmt not in FORMATS:
            raise OodfsError(f"unknown leaderboard format {fmt!r}; valid: {', '.join(FORMATS)}")
        return {"markdown": self.to_markdown, "csv": self.to_csv, "latex": self.to_latex, "html": self.to_html}[fmt]()


def _latex_escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#"),
                 ("±", r"$\pm$"), ("↓", r"$\downarrow$"), ("↑", r"$\uparrow$"), ("`", ""), ("∈", r"$\in$")):
        text = text.replace(a, b)
    return text
