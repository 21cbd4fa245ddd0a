"""A static results site: one page (``index.html``) for one or more results folders of a suite.

Everything on the page comes from the same :class:`~oodfs.report.report.Report` objects the
other outputs read, rendered by Jinja2 templates (``templates/``, autoescaped). The page needs no
server and no network: CSS and JavaScript are inline (their hashes in its Content-Security-Policy,
so nothing else can run), figures are files beside it (SVG shown, PNG and PDF linked). Every
model-selection rule is rendered in advance and a switch shows one, so the page works from disk.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from oodfs.contract.selection import get_rule, rules
from oodfs.report import compare
from oodfs.report.figure_files import figure_formats
from oodfs.report.html import Cell, assets, environment, leaderboard_context, number_cell
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.plots import feature_rankings, figure1, ood_s_figure, summary_figure
from oodfs.report.report import Report, stored_unit
from oodfs.report.site_folder import check_out, staged
from oodfs.results.store import ResultStore, load_results
from oodfs.validation import OodfsError

#: figure files a site can keep beside its page (the page shows the SVG)
FIGURE_FILES = ("svg", "png", "pdf")


# -- the pieces of a run ------------------------------------------------------------------------


@dataclass
class Figure:
    title: str
    files: dict  # extension -> path relative to the page
    caption: str = ""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-.")[:40] or "x"


def _figure(paths: list[Path], where: _Where, title: str, caption: str = "") -> Figure | None:
    """A figure of the page, from the files a plot function wrote."""
    files = {p.suffix.lstrip("."): p.relative_to(where.site).as_posix() for p in paths if p.exists()}
    return Figure(title, files, caption) if files else None


@dataclass
class _Where:
    """Where a run's figures go: the site's folder and the run's figure folder."""

    site: Path
    fig_dir: Path


def comparisons(report: Report, where: _Where, tag: str, analysis=None) -> list[dict]:
    """``oodfs compare``'s comparisons (:func:`oodfs.report.compare.comparisons`, the tests of
    the report's analysis), each with its critical-difference diagram (files named by position:
    a setting's name may be anything)."""
    settings = {}
    out = []
    for c in compare.comparisons(report, analysis):
        i = settings.setdefault(c["setting"], len(settings))
        stem = where.fig_dir / f"cd-{i}-{_slug(c['metric'].name)}-{tag}"
        drawn = compare.cd_diagram(report, c, stem, analysis)
        figure = None
        if not isinstance(drawn, str):
            paths = [stem.with_name(f"{stem.name}.{ext}") for ext in FIGURE_FILES]
            figure = _figure(paths, where, "critical-difference diagram")
        out.append(
            {
                **c,
                "pairs": c["pairs"].to_dict("records"),
                "figure": figure,
                "cd_note": "" if figure else f"no critical-difference diagram: {drawn}",
            }
        )
    return out


def _top_k_shares(scores: np.ndarray, k: int) -> np.ndarray:
    """Each feature's chance to be in the top k when ties are broken at random (as the runner
    does): 1 above the k-th score, the remaining places shared among the features tied at it."""
    k = min(k, scores.size)
    if k <= 0:
        return np.zeros(scores.size)
    kth = np.sort(scores)[::-1][k - 1]
    above = scores > kth
    tied = scores == kth
    share = np.where(above, 1.0, 0.0)
    share[tied] = (k - above.sum()) / tied.sum()
    return share


def selected_features(report: Report) -> list[dict]:
    """Per setting and method: how often each feature was among the top k of the chosen fit,
    over every (r_train, run) of the setting, features named as the environment names them."""
    chosen = report.chosen
    if chosen.empty or "scores" not in chosen or chosen["scores"].isna().all():
        return []
    out = []
    for setting, gs in chosen.groupby("setting", sort=False):
        rows = []
        for method, g in gs.groupby("method", sort=False):
            share: dict[str, float] = {}
            fits = 0
            for scores, names, k in zip(g["scores"], g.get("feature_names", [None] * len(g)), g["k"]):
                if not isinstance(scores, str):
                    continue
                s = np.asarray(json.loads(scores), dtype=float)
                names = json.loads(names) if isinstance(names, str) else [f"X{j + 1}" for j in range(s.size)]
                k = int(k) if pd.notna(k) else s.size
                for name, p in zip(names, _top_k_shares(np.nan_to_num(s, nan=-np.inf), k)):
                    share[name] = share.get(name, 0.0) + p
                fits += 1
            if not fits:
                continue
            ranked = sorted(((v / fits, n) for n, v in share.items() if v > 0), key=lambda t: (-t[0], t[1]))
            rows.append(dict(method=method, fits=fits, features=ranked))
        if rows:
            out.append(
                dict(
                    setting=setting,
                    k=int(gs["k"].dropna().iloc[0]) if gs["k"].notna().any() else None,
                    rows=rows,
                )
            )
    return out


def weight_diagnostics(report: Report) -> dict:
    """The weighter methods' chosen fits: each diagnostic metric's median [min, max] (0/1
    metrics: how many of the fits) per setting and method, and the leaderboard's flags."""
    chosen = report.chosen
    diag = [
        n
        for n, m in report.metrics.items()
        if m.role == "diagnostic" and n in chosen and chosen[n].notna().any()
    ]
    weighters = (
        [m for m in dict.fromkeys(chosen["method"]) if report.kind(m) == "weighter"] if len(chosen) else []
    )
    rows = []
    for (setting, method), g in chosen[chosen["method"].isin(weighters)].groupby(
        ["setting", "method"], sort=False
    ):
        cells = []
        for n in diag:
            v = g[n].dropna()
            if v.empty:
                cells.append("")
            elif set(v.unique()) <= {0, 1}:
                cells.append(f"{int(v.sum())} of {len(v)}")
            else:
                cells.append(f"{v.median():.3g} [{v.min():.3g}, {v.max():.3g}]")
        rows.append(
            [Cell(str(setting)), Cell(str(method)), Cell(str(len(g)), sort=len(g))]
            + [number_cell(c, False) for c in cells]
        )
    header = ["setting", "method", "fits"] + [report.metrics[n].title for n in diag]
    descriptions = [(report.metrics[n].title, report.metrics[n].description) for n in diag]
    return dict(header=header, rows=rows, descriptions=descriptions)


# -- a results folder ----------------------------------------------------------------------------


@dataclass
class RunInfo:
    path: Path
    label: str
    results: pd.DataFrame
    metrics: list | None
    order: list | None
    invocations: list = field(default_factory=list)
    wall_seconds: float | None = None

    @property
    def unit(self) -> str | None:
        return stored_unit(self.invocations[-1]["suite"]) if self.invocations else None


def load_run(path) -> RunInfo:
    path = Path(path)
    if not path.exists():
        raise OodfsError(f"{path} does not exist")
    results = load_results(path)
    if results.empty:
        raise OodfsError(f"{path}: the results table is empty: nothing to report")
    store = ResultStore(path)
    metrics = order = None
    invocations, wall = [], None
    if path.is_dir() and store.exists():
        metrics = store.get_meta("metrics")
        invocations = store.invocations()
        order = list(invocations[-1]["suite"]["methods"]) if invocations else None
        order = order or None  # a run of reference methods only names none: their order of appearance
        try:
            wall = store.wall_seconds()
        except OodfsError:  # a store from before tasks recorded their origin: no wall time
            wall = None
    return RunInfo(path, path.name or str(path), results, metrics, order, invocations, wall)


def _fmt_seconds(s: float | None) -> str:
    if s is None:
        return "(not recorded)"
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def overview(run: RunInfo, report: Report) -> list[tuple[str, str]]:
    """(label, value) rows describing a run: what ran, how much, where and with what."""
    res = run.results
    tasks = report.tasks
    origin = (
        res.groupby(["setting", "r_train", "run", "method"], sort=False)["origin"].first()
        if "origin" in res
        else pd.Series(dtype=object)
    )
    n_ref = int((origin == "reference").sum())
    last = run.invocations[-1] if run.invocations else {}
    suite = last.get("suite", {})
    env = last.get("environment", {})
    git = env.get("oodfs_git") or {}
    versions = last.get("versions", {})
    r_values = sorted(
        {str(r) for r in tasks["r_train"]}, key=lambda r: (not _isfloat(r), float(r) if _isfloat(r) else 0, r)
    )
    rows = [
        ("suite", report.suite or "(not recorded)"),
        ("profile", report.profile),
        ("model selection the run was made with", suite.get("selection", "(not recorded)")),
        ("downstream model", _downstream(suite, report.profile)),
        ("settings", ", ".join(map(str, dict.fromkeys(tasks["setting"])))),
        ("r_train", ", ".join(r_values)),
        (
            "runs",
            ", ".join(
                str(n) for n in sorted(set(tasks.groupby(["setting", "r_train", "method"])["run"].nunique()))
            ),
        ),
        ("methods", ", ".join(map(str, dict.fromkeys(tasks["method"])))),
        (
            "tasks",
            f"{len(tasks)}: {int((tasks['status'] == 'ok').sum())} ok, "
            f"{int((tasks['status'] == 'failed').sum())} failed"
            + (f"; {n_ref} copied from the shipped reference results" if n_ref else ""),
        ),
        ("wall time", _fmt_seconds(run.wall_seconds)),
        ("invocations", str(len(run.invocations)) if run.invocations else "(not recorded)"),
        ("oodfs", versions.get("oodfs", "(not recorded)")),
        (
            "git",
            (
                f"{git.get('commit', '')[:12]}{' (uncommitted changes)' if git.get('dirty') else ''}"
                if git
                else "(not recorded)"
            ),
        ),
        (
            "versions",
            ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if k != "oodfs") or "(not recorded)",
        ),
        ("machine", _machine(last) or "(not recorded)"),
        ("command", " ".join(last.get("argv", [])) or "(not recorded)"),
    ]
    ref = last.get("reference")
    if ref:
        rows.append(("reference results", str(ref.get("label", ref) if isinstance(ref, dict) else ref)))
    return rows


def _isfloat(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _downstream(suite: dict, profile: str) -> str:
    d = suite.get("downstream")
    if d:  # a suite that names its downstream model
        return d if isinstance(d, str) else json.dumps(d, sort_keys=True)
    return f"MLP (5, 5), ReLU, Adam: the paper's, trained under profile {profile} (docs/PROTOCOL.md)"


def _machine(prov: dict) -> str:
    env = prov.get("environment", {})
    parts = [
        prov.get("host"),
        env.get("platform"),
        f"{env['usable_cpus']} usable CPUs" if env.get("usable_cpus") else None,
        f"--jobs {prov['jobs']}" if prov.get("jobs") else None,
        f"backend {prov['backend']}" if prov.get("backend") else None,
    ]
    return "; ".join(str(p) for p in parts if p)


# -- the site --------------------------------------------------------------------------------


def _rule_view(run: RunInfo, rule: str, where: _Where, columns=None) -> dict:
    try:
        report = Report(run.results, rule, run.metrics, run.order, columns=columns, unit=run.unit)
    except OodfsError as exc:
        return dict(rule=get_rule(rule), error=str(exc))
    if report.points.empty:
        return dict(rule=get_rule(rule), error="no task succeeded: nothing to rank", report=report)
    board = Leaderboard(report)
    figures = [
        _figure(
            summary_figure(report, where.fig_dir, f"summary-{rule}"),
            where,
            "All settings at once: mean rank",
            "Each method's mean rank (1 = best) in each setting and over all settings, 95 % percentile-"
            "bootstrap interval over the (r_train, run) blocks; ranks within a block, complete blocks only.",
        ),
        _figure(
            figure1(report, where.fig_dir, f"figure1-{rule}"),
            where,
            "Figure 1: headline metrics against r_train",
        ),
        _figure(
            ood_s_figure(report, where.fig_dir, f"ood_s-{rule}"),
            where,
            "Figure ood-S: RMSE against the number k of selected features",
        ),
    ]
    return dict(
        rule=get_rule(rule),
        error=None,
        report=report,
        leaderboard=leaderboard_context(board),
        figures=[f for f in figures if f],
        comparisons=comparisons(report, where, rule, board.analysis),
        family=board.analysis.family.describe(),
        undecidable=board.analysis.undecidable_note(),
        selected=selected_features(report),
        rankings=feature_rankings(report),
        weights=weight_diagnostics(report),
        cells=board.cells,
        best=board.best,
        metrics=board.metrics,
    )


def _failed_tasks(report: Report) -> list[dict]:
    t = report.tasks[report.tasks["status"] == "failed"]
    return t[["setting", "r_train", "run", "method", "error"]].to_dict("records")


def _side_by_side(runs: list[dict], rule: str) -> list[dict]:
    """Per setting: each method's averaged cells of every run, in one table (runs as column groups)."""
    views = [(r["label"], r["views"][rule]) for r in runs]
    views = [(label, v) for label, v in views if not v.get("error")]
    if len(views) < 2:
        return []
    metrics = {}
    for _, v in views:
        for m, info in v["metrics"].items():
            metrics.setdefault(m, info)
    settings = list(dict.fromkeys(s for _, v in views for s in v["cells"]["setting"]))
    out = []
    for setting in settings:
        methods = list(
            dict.fromkeys(
                m for _, v in views for m in v["cells"].loc[v["cells"]["setting"] == setting, "method"]
            )
        )
        header = ["method"] + [f"{info.title} {info.arrow}" for _ in views for info in metrics.values()]
        groups = [(label, len(metrics)) for label, _ in views]
        rows = []
        for method in methods:
            row = [Cell(str(method))]
            for _, v in views:
                c = v["cells"]
                for m in metrics:
                    x = c[
                        (c["setting"] == setting)
                        & (c["r_train"] == "all")
                        & (c["method"] == method)
                        & (c["metric"] == m)
                    ]
                    if x.empty or x["n"].iloc[0] == 0:
                        row.append(Cell(""))
                        continue
                    x = x.iloc[0]
                    text = (
                        f"{x['mean']:.3f}"
                        if x["n"] < 2
                        else f"{x['mean']:.3f} [{x['low']:.3f}, {x['high']:.3f}]"
                    )
                    row.append(
                        Cell(text, method in v["best"].get((setting, "all", m), set()), float(x["mean"]))
                    )
            rows.append(row)
        out.append(dict(setting=setting, header=header, groups=groups, rows=rows))
    return out


def build_site(paths, out, selection: str | None = None, formats=FIGURE_FILES, columns=None) -> Path:
    """Write the site of the results folders ``paths`` (one suite) to ``out``; return index.html.

    ``selection``: the rule the page shows first (default: the rule the first folder was run with).
    ``formats``: the figure files kept beside the page (SVG always: the page shows it).
    ``columns``: the metrics tables, figures and tests show (default: the headline metrics).
    """
    if not paths:
        raise OodfsError("give at least one results folder")
    runs_info = [load_run(p) for p in paths]
    suites = {}
    for r in runs_info:
        s = r.results["suite"].dropna()
        suites.setdefault(str(s.iloc[0]) if len(s) else "", []).append(str(r.path))
    if len(suites) > 1:
        raise OodfsError(
            "one page shows one suite; these folders hold "
            + "; ".join(f"suite {s or '(none)'!r}: {', '.join(p)}" for s, p in suites.items())
        )
    _labels(runs_info)
    out = Path(out)
    check_out(out, [r.path for r in runs_info])
    first = selection or _stored_rule(runs_info[0]) or "val"
    known = rules()  # the built-in rules and those of plugins
    get_rule(first)  # an unknown name: one line naming the valid ones
    with staged(out) as tmp:
        runs = []
        for i, info in enumerate(runs_info):
            fig_dir = tmp / "figures" / f"{i + 1}-{_slug(info.label)}"
            fig_dir.mkdir(parents=True)
            with figure_formats(set(formats) | {"svg"}):
                views = {rule: _rule_view(info, rule, _Where(tmp, fig_dir), columns) for rule in known}
            any_report = next((v["report"] for v in views.values() if v.get("report") is not None), None)
            if any_report is None:  # no rule applies at all: say why, once
                raise OodfsError(f"{info.path}: {views[first]['error']}")
            runs.append(
                dict(
                    id=f"run{i + 1}",
                    label=info.label,
                    path=str(info.path),
                    views=views,
                    overview=dict(overview(info, any_report)),
                    failed=_failed_tasks(any_report),
                    invocations=info.invocations,
                )
            )
        # a rule no folder can use (the environment-aware ones on one training environment) is left
        # off the switch, and the page says why
        usable = [r for r in known if any(_applies(run["views"][r]) for run in runs)]
        left_out = [(known[r], runs[0]["views"][r]["error"]) for r in known if r not in usable]
        if first not in usable:
            raise OodfsError(f"selection {first!r} applies to none of these folders: {left_out[0][1]}")
        env = environment()
        html = env.get_template("site.html.j2").render(
            suite=next(iter(suites)),
            runs=runs,
            overview_labels=list(dict.fromkeys(label for run in runs for label in run["overview"])),
            rules=[known[r] for r in usable],
            left_out=left_out,
            first=first,
            side_by_side={rule: _side_by_side(runs, rule) for rule in known} if len(runs) > 1 else {},
            version=_version(),
            assets=assets(env),
        )
        (tmp / "index.html").write_text(html, encoding="utf-8")
    return out / "index.html"


def _applies(view: dict) -> bool:
    """A rule applies to a folder when it chose points there, or only failed tasks kept it from it."""
    return "error" not in view or view.get("report") is not None


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("oodfs")
    except PackageNotFoundError:
        return "(not installed)"


def _stored_rule(run: RunInfo) -> str | None:
    if run.invocations:
        return run.invocations[-1].get("suite", {}).get("selection")
    return None


def _labels(runs: list[RunInfo]) -> None:
    """A short, distinct label per folder: its name, or more of its path where names repeat."""
    for depth in range(1, 6):
        labels = ["/".join(Path(r.path).resolve().parts[-depth:]) for r in runs]
        if len(set(labels)) == len(labels):
            break
    for r, label in zip(runs, labels):
        r.label = label
