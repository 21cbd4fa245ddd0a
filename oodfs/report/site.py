"""A static results site: one page (``index.html``) for one or more results folders of a suite.

Everything on the page comes from the same :class:`~oodfs.report.report.Report` objects the
other outputs read, rendered by Jinja2 templates (``templates/``, autoescaped). The page needs no
server and no network: CSS and JavaScript are inline (their hashes in its Content-Security-Policy,
so nothing else can run), figures are files beside it (SVG shown, PNG and PDF linked). Every
model-selection rule is rendered in advance and a switch shows one, so the page works from disk.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from oodfs.contract.registry import get_rule, rules
from oodfs.report import compare
from oodfs.report.figure_files import figure_formats
from oodfs.report.html import Cell, assets, environment, leaderboard_context, number_cell
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.plots import feature_rankings, figure1, ood_s_figure, summary_figure
from oodfs.report.report import Report, stored_settings, stored_unit
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
                # too few units: the page says so once and shows no rows of "not distinguishable"
                "decided": analysis is None or analysis.decidable(c["setting"], c["metric"].name),
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
    descriptions = [
        (report.metrics[n].title, report.metrics[n].description, what_is_good(report.metrics[n]))
        for n in diag
    ]
    return dict(header=header, rows=rows, descriptions=descriptions)


#: how to read the diagnostics the built-in weighters report (docs/PROTOCOL.md, "The results
#: page"); a diagnostic not listed is read from its declaration (direction, suspect rule)
GOOD_VALUES = {
    "ess_fraction": "1 = uniform weights, every row counts fully; near 0 = a few rows carry the fit",
    "ess": "higher = more of the sample in use (n at most)",
    "max_abs_corr": (
        "0 = no correlation left between any two features, what independence weighting aims at; "
        "the closer to the unweighted data's largest correlation, the less the weights achieved"
    ),
    "corr_kept": "0 = the largest correlation removed; 1 = none of it removed",
    "max_weight": "near 1 = mild weights; in the hundreds = a few rows dominate (see ESS / n)",
    "converged": "n of n = every solution met its declared tolerance; fewer = read those fits with care",
    "objective": "lower = closer to independence; comparable only within one method on one data set",
    "n_iter": "none in itself; a fit that used its whole budget may have stopped before converging",
    "frac_clipped_low": "near 0 = the clip rarely binds; large = the clip, not the data, shapes the weights",
    "frac_clipped_high": "near 0 = the clip rarely binds; large = the clip, not the data, shapes the weights",
    # the headline metrics
    "rank_avg": (
        "the mean of 1..s for s stable features (3.0 with the paper's five) = every stable feature ranked "
        "above every other; a ranking of features, not the methods' rank among each other"
    ),
    "f1": "1 = the top k are exactly the stable features",
    "rmse_mean": "lower = better predictions on the test environments (0 at best)",
    "rmse_std": "lower = steadier across test environments; a spread alone, never a reason to call one best",
}


def what_is_good(metric) -> str:
    """One line on which values of a diagnostic are good: the page's reading guide, else its
    direction, and the value that makes a fit suspect."""
    parts = []
    if metric.name in GOOD_VALUES:
        parts.append(GOOD_VALUES[metric.name])
    elif metric.lower_is_better is not None:
        parts.append("lower is better" if metric.lower_is_better else "higher is better")
    rule = metric.suspect
    if rule is not None:
        where = " and ".join(
            t for t in (f"below {rule.below:g}" if rule.below is not None else "",
                        f"above {rule.above:g}" if rule.above is not None else "") if t
        )  # fmt: skip
        parts.append(f"suspect {where}: {rule.note}")
    return "; ".join(parts) or "none in itself: it describes the fit"


def verdicts(analysis) -> dict:
    """What the page opens with: the tested verdicts in words (the analysis's own sentences),
    the family they come from, and whether anything could be tested at all."""
    rows = analysis.verdict_sentences()
    decided = [r for r in rows if r["decided"]]
    return dict(
        rows=decided,
        settings=list(dict.fromkeys(r["setting"] for r in decided)),
        tested=analysis.test_text(),
        downstream=analysis.family.downstream,
        unit=analysis.family.unit,
        conditional=analysis.family.conditional,
        untested=analysis.undecidable_note(),
    )


def methods_by_need(report: Report) -> list[dict]:
    """The methods grouped by what they need besides the training table (nothing, environment
    labels, a reference environment), each with its family, from the methods' declarations."""
    from oodfs.report.analysis import NEEDS, NEEDS_TEXT, family_order, method_family, method_needs

    methods = list(dict.fromkeys(report.chosen["method"])) if len(report.chosen) else []
    groups = []
    for need in NEEDS:
        members = [m for m in methods if method_needs(m) == need]
        if not members:
            continue
        fams = {m: method_family(m, report.kind(m)) for m in members}
        members.sort(key=lambda m: (family_order(fams[m]), methods.index(m)))
        by_family = {}
        for m in members:
            by_family.setdefault(fams[m], []).append(m)
        groups.append(dict(need=need, text=NEEDS_TEXT[need], families=list(by_family.items())))
    return groups


def measured_sizes(methods: list[str]) -> dict:
    """The page's "Measured sizes" section: per method, the largest sizes (n rows x d features) at
    which its default grid point was measured and what one fit cost there, from the facts shipped
    with oodfs (oodfs/results/scale.py), or "not measured"; the machine once when it is one."""
    from oodfs.results.scale import NOT_MEASURED, cpu_text, machine_text, mb_text, method_scale

    rows, machines, loads = [], set(), []
    for m in methods:
        s = method_scale(m)
        if not s["measured"]:
            why = s["note"].removeprefix(NOT_MEASURED).lstrip(": ")
            rows.append(dict(method=m, points=[], stopped=why))
            continue
        # a numeric target's sizes, then a binary target's where the method was measured on one
        tasks = [("numeric", s)] + ([("binary", s["binary"])] if "binary" in s else [])
        points = [
            dict(
                target=target,
                size=f"{p['n']:,} × {p['d']}",
                cpu=cpu_text(p["cpu_s"]),
                mb=mb_text(p["peak_mb"]),
                machine=machine_text(p["machine"]),
            )
            for target, t in tasks
            for p in t["largest"]
        ]
        machines |= {pt["machine"] for pt in points}
        loads += [p["load"] for _, t in tasks for p in t["largest"] if p.get("load") is not None]
        stopped = "; ".join(
            ("binary target, " if target == "binary" else "") + f"{p['n']:,} × {p['d']}: {p['why']}"
            for target, t in tasks
            for p in t["stopped"]
        )
        rows.append(dict(method=m, points=points, stopped=stopped))
    one = machines.pop() if len(machines) == 1 else None
    load = f"{min(loads):.0f}-{max(loads):.0f}" if loads else None
    return dict(rows=rows, machine=one, load=load)


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

    @property
    def from_suite_file(self) -> bool:
        """Made from a suite file (not a suite shipped with oodfs), as stored with the run; a run
        stored before suites recorded it counts as shipped when its name is one, as then."""
        suite = self.invocations[-1].get("suite") if self.invocations else None
        return isinstance(suite, dict) and suite.get("shipped") is False


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
        ("wall time (run start to its last stored task)", _fmt_seconds(run.wall_seconds)),
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
        settings = stored_settings(run.invocations[-1]["suite"]) if run.invocations else None
        report = Report(
            run.results, rule, run.metrics, run.order, columns=columns, unit=run.unit, setting_order=settings
        )
    except OodfsError as exc:
        return dict(rule=get_rule(rule), error=str(exc))
    if report.points.empty:
        return dict(rule=get_rule(rule), error="no task succeeded: nothing to rank", report=report)
    board = Leaderboard(report)
    figures = [
        _figure(
            summary_figure(report, where.fig_dir, f"summary-{rule}"),
            where,
            "All settings at once: method rank",
            "Each method's mean rank among the methods (1 = best; a ranking of methods, not the rank-avg "
            "metric, which ranks features) in each setting and over all settings, 95 % percentile-"
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
    # one section per downstream model the run trained, the first (the page's figures) first
    models = [_model_view(board, where, rule)] + [
        _model_view(Leaderboard(other), where, f"{rule}-{_slug(other.downstream)}")
        for other in report.model_reports()[1:]
    ]
    return dict(
        rule=get_rule(rule),
        error=None,
        report=report,
        **models[0],
        models=models,
        figures=[f for f in figures if f],
        columns=[
            (f"{m.title} {m.arrow}", m.description, what_is_good(m))
            for m in (report.metrics[n] for n in report.headline)
        ],
        methods=methods_by_need(report),
        selected=selected_features(report),
        rankings=feature_rankings(report),
        weights=weight_diagnostics(report),
        cells=board.cells,
        best=board.best,
        metrics=board.metrics,
    )


def _model_view(board: Leaderboard, where: _Where, tag: str) -> dict:
    """One downstream model's leaderboard, tested verdicts and comparisons: its report's one
    analysis (the leaderboard's), as every output of that model reads it."""
    return dict(
        model=board.report.downstream,
        leaderboard=leaderboard_context(board),
        comparisons=comparisons(board.report, where, tag, board.analysis),
        family=board.analysis.family.describe(),
        undecidable=board.analysis.undecidable_note(),
        verdicts=verdicts(board.analysis),
        analysis=board.analysis,
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


def build_site(
    paths, out, selection: str | None = None, formats=FIGURE_FILES, columns=None, diagnose=None, answer=None
) -> Path:
    """Write the site of the results folders ``paths`` to ``out``; return its index.html.

    Folders of one suite: one page. Folders of several suites: a page per suite (``SUITE/``)
    and an index page across them, which opens with the verdict across suites (the suite as the
    unit, :func:`oodfs.report.analysis.across_suites`).

    ``selection``: the rule the page shows first (default: the rule the first folder was run with).
    ``formats``: the figure files kept beside the page (SVG always: the page shows it).
    ``columns``: the metrics tables, figures and tests show (default: the headline metrics).
    ``diagnose``: suite name -> its shift diagnosis (``oodfs.shift.diagnose_suite``: the command
    passes it, the report package never imports the runner) or None; shown on the suite's page.
    ``answer``: None, or a function of a figure folder that returns the answer across suites of
    selection against the kind of shift (dict: ``paragraph``, ``figure``: the SVG it wrote there,
    ``diagnoses``: a row per suite, ``report``: where the study lives; made by
    benchmarks/selection_vs_shift/selection_vs_shift.py's ``page_answer`` from
    :mod:`oodfs.report.across_shift`); shown after the verdicts of the first page.
    """
    if not paths:
        raise OodfsError("give at least one results folder")
    resolved = [Path(p).resolve() for p in paths]
    twice = next((p for p, r in zip(paths, resolved) if resolved.count(r) > 1), None)
    if twice is not None:
        raise OodfsError(f"the results folder {twice} is named twice; name each folder once")
    runs_info = [load_run(p) for p in paths]
    suites: dict[str, list[RunInfo]] = {}
    for r in runs_info:
        s = r.results["suite"].dropna()
        suites.setdefault(str(s.iloc[0]) if len(s) else "", []).append(r)
    _labels(runs_info)
    out = Path(out)
    check_out(out, [r.path for r in runs_info])
    get_rule(
        selection or _stored_rule(runs_info[0]) or "val"
    )  # an unknown name: one line naming the valid ones
    with staged(out) as tmp:
        across = _answer(answer, tmp)
        if len(suites) == 1:
            _suite_page(
                next(iter(suites)), runs_info, tmp, selection, formats, columns, diagnose, out, across=across
            )
        else:
            pages = []
            for i, (suite, infos) in enumerate(suites.items()):
                folder = tmp / f"{i + 1}-{_slug(suite or 'suite')}"
                folder.mkdir()
                page = _suite_page(
                    suite, infos, folder, selection, formats, columns, diagnose, out / folder.name
                )
                pages.append(page)
                pages[-1]["href"] = f"{folder.name}/index.html"
            _index_page(pages, tmp, out, across_shift=across)
    return out / "index.html"


def _answer(answer, tmp: Path) -> dict | None:
    """The answer across suites of selection against the kind of shift, its figure in the site."""
    if answer is None:
        return None
    fig_dir = tmp / "figures" / "across-shift"
    fig_dir.mkdir(parents=True)
    a = dict(answer(fig_dir))
    a["figure"] = _figure(
        [Path(a["figure"])],
        _Where(tmp, fig_dir),
        "Gain over all_features against the share of the drop due to Y ∣ X",
        "One point per (suite, method family), one panel per downstream model",
    )
    return a


def _suite_page(
    suite: str,
    runs_info: list[RunInfo],
    tmp: Path,
    selection,
    formats,
    columns,
    diagnose=None,
    page_dir: Path | None = None,
    across=None,
) -> dict:
    """Write the page of one suite's folders to ``tmp/index.html``; return what an index shows.
    ``page_dir``: where the page ends up (its links to the guide are relative to it; default ``tmp``)."""
    page_dir = tmp if page_dir is None else page_dir
    # a suite file is diagnosed from what its run stored (never as a shipped suite of its name)
    own = next((i for i in runs_info if i.from_suite_file), None)
    shift = _shift(suite if own is None else own.invocations[-1]["suite"], diagnose)
    first = selection or _stored_rule(runs_info[0]) or "val"
    known = rules()  # the built-in rules and those of plugins
    runs, page_methods = [], {}
    for i, info in enumerate(runs_info):
        fig_dir = tmp / "figures" / f"{i + 1}-{_slug(info.label)}"
        fig_dir.mkdir(parents=True)
        with figure_formats(set(formats) | {"svg"}):
            views = {rule: _rule_view(info, rule, _Where(tmp, fig_dir), columns) for rule in known}
        any_report = next((v["report"] for v in views.values() if v.get("report") is not None), None)
        if any_report is None:  # no rule applies at all: say why, once
            raise OodfsError(f"{info.path}: {views[first]['error']}")
        for m in dict.fromkeys(any_report.chosen["method"]) if len(any_report.chosen) else ():
            if any_report.kind(m) != "yardstick":
                page_methods[m] = None
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
        suite=suite,
        shift=shift,
        across_shift=across,
        runs=runs,
        overview_labels=list(dict.fromkeys(label for run in runs for label in run["overview"])),
        rules=[known[r] for r in usable],
        left_out=left_out,
        first=first,
        side_by_side={rule: _side_by_side(runs, rule) for rule in known} if len(runs) > 1 else {},
        scale=measured_sizes(list(page_methods)),
        version=_version(),
        guide=guide_link(page_dir),
        assets=assets(env),
    )
    (tmp / "index.html").write_text(html, encoding="utf-8")
    view = runs[0]["views"][first]
    return dict(
        suite=suite,
        rule=known[first],
        folders=[r["label"] for r in runs],
        verdicts=view.get("verdicts"),
        analysis=None if view.get("error") else view.get("analysis"),
        error=view.get("error"),
        shift=shift,
    )


def _shift(suite, diagnose) -> dict | None:
    """The suite's shift diagnosis, or why there is none; None when there is nothing to say
    (no diagnosis asked for, or a suite that is not real data). ``suite``: a shipped suite's name,
    or the suite a run of a suite file stored (a dict; a damaged one is said, not raised)."""
    if diagnose is None:
        return None
    try:
        return diagnose(suite)
    except Exception as exc:  # e.g. a table whose package is not installed: say so, the page goes on
        return dict(error=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")


def _index_page(
    pages: list[dict], tmp: Path, page_dir: Path | None = None, across_shift: dict | None = None
) -> None:
    """The index of a site over several suites: the verdict across suites (the suite as the
    unit), then each suite's page with its own verdicts. ``page_dir``: where it ends up."""
    page_dir = tmp if page_dir is None else page_dir
    from oodfs.report.analysis import REFERENCE, across_suites

    analyses = {p["suite"]: p["analysis"] for p in pages if p["analysis"] is not None}
    with_reference = {n: a for n, a in analyses.items() if a.family.reference}
    across, why_not = None, ""
    if len(with_reference) < 2:
        why_not = (
            f"A verdict across suites compares each method with {REFERENCE} over the suites; "
            f"{len(with_reference)} of these {len(pages)} suites hold {REFERENCE} (it needs two or more)."
        )
    else:
        res = across_suites(with_reference)
        across = dict(
            n=res["n_suites"],
            suites=list(with_reference),
            methods=res["methods"].to_dict("records") if len(res["methods"]) else [],
            families=res["families"].to_dict("records") if len(res["families"]) else [],
            pair=res["family_pair"],
            friedman=None
            if res["friedman"] is None
            else dict(
                statistic=res["friedman"][0], p=res["friedman"][1], ranks=list(res["friedman"][2].items())
            ),
        )
    env = environment()
    html = env.get_template("index.html.j2").render(
        pages=pages,
        across=across,
        why_not=why_not,
        across_shift=across_shift,
        reference=REFERENCE,
        version=_version(),
        guide=guide_link(page_dir),
        assets=assets(env),
    )
    (tmp / "index.html").write_text(html, encoding="utf-8")


#: how the user guide is built in oodfs's repository (CONTRIBUTING.md, "Documentation"), and where
GUIDE_COMMAND = "python -m sphinx -W -b html docs docs/_build/html"
GUIDE_BUILT = Path("docs") / "_build" / "html" / "guide" / "results.html"


def guide_link(page_dir: Path) -> dict:
    """The page's link to the user guide's "Results" page (how to read this page): relative, from
    the folder the page is written to, to where the documented build puts it in the repository
    this oodfs runs from; an installed oodfs, with no repository, names the page and the build."""
    repository = Path(__file__).resolve().parents[2]
    href = None
    if (repository / "docs" / "conf.py").is_file():
        href = Path(os.path.relpath(repository / GUIDE_BUILT, Path(page_dir).resolve())).as_posix()
    return dict(href=href, source="docs/guide/results.md", command=GUIDE_COMMAND)


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
