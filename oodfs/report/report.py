"""A report: the results of a run with one model-selection rule applied, built once.

The leaderboard, the statistics and the figures all read a :class:`Report`, and a report reads
only the results table (and the metric declarations stored with it): a results folder renders
the same on any machine, with or without the plugins that produced it.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from oodfs.contract.downstream import DEFAULT_MODEL
from oodfs.contract.env_weights import ENV_ROWS_COLUMNS, EnvWeighting, reweighted
from oodfs.contract.metrics import BUILTIN_METRICS, Metric
from oodfs.contract.registry import get_rule, get_task
from oodfs.contract.selection import SelectionRule
from oodfs.contract.task import TASK_KEY, default_unit, env_sort_key
from oodfs.validation import OodfsError

POINT_INFO = [
    "params",
    "is_default",
    "scores",
    "feature_names",
    "method_kind",
    "fit_seconds",
    "downstream_seconds",
    "seed",
]


def _declarations(stored: list[dict] | None) -> dict[str, Metric]:
    if not stored:
        return {m.name: m for m in BUILTIN_METRICS}
    declared = {d["name"]: Metric(compute=None, **d) for d in stored}
    if any("suspect" not in d for d in stored):  # stored before diagnostics declared their rules
        from oodfs.contract.registry import registry

        current = {name: info.cls for name, info in registry().entries("metric").items()}
        for name, m in declared.items():
            if m.suspect is None and name in current and current[name].suspect is not None:
                declared[name] = replace(m, suspect=current[name].suspect)
    return declared


def _one_downstream(results: pd.DataFrame, downstream: str | None):
    """The rows of one downstream model (default: the run's first), its name, and every model the
    results hold. Rows stored before the model was a choice are the MLP's; a failed task's row
    (no model) is kept."""
    if "downstream" not in results:
        results = results.assign(downstream=np.nan)
    # as objects: a shipped reference stores the column as categorical, and a failed task's row
    # (no model) would need a category the column does not have
    downstream_of = results["downstream"].astype(object)
    model = downstream_of.where(downstream_of.notna(), DEFAULT_MODEL)
    ok = results["status"] == "ok"
    models = list(dict.fromkeys(model[ok])) or [DEFAULT_MODEL]
    chosen = models[0] if downstream is None else downstream
    if chosen not in models:
        raise OodfsError(
            f"these results hold no rows of downstream model {chosen!r}; they have: {', '.join(models)}"
        )
    return results[~ok | (model == chosen)], chosen, models


def stored_unit(suite: dict) -> str:
    """The unit of replication of a stored suite. A suite stored before suites declared one: the
    unit its shipped file declares, else its environment's default (docs/PROTOCOL.md section 10)."""
    return suite.get("unit") or suite_file_unit(suite.get("name")) or default_unit(suite.get("environment"))


def stored_settings(suite: dict) -> list[str]:
    """The setting names of a stored suite, in its order (tables list its settings so)."""
    return [s["name"] if isinstance(s, dict) else str(s) for s in suite.get("settings") or []]


def stored_env_weighting(suite: dict) -> EnvWeighting:
    """How a stored suite counts its test environments (a suite stored before the choice existed:
    every one once, none left out)."""
    return EnvWeighting(suite.get("env_weighting") or "equal", suite.get("min_env_rows"))


def suite_file_unit(name) -> str | None:
    """The unit the shipped suite ``name`` declares in its file (its environment's default when the
    file says none); None for a suite oodfs does not ship."""
    from importlib import resources

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    path = resources.files("oodfs.suites") / f"{name}.toml"
    if not isinstance(name, str) or not path.is_file():
        return None
    raw = tomllib.loads(path.read_text())
    return raw.get("unit") or default_unit(raw.get("environment"))


def results_unit(results: pd.DataFrame) -> str:
    """The unit of results stored without their suite (a results file, a reference): the one their
    shipped suite's file declares, else ``run``."""
    names = results["suite"].dropna().unique() if "suite" in results else []
    return (suite_file_unit(str(names[0])) if len(names) == 1 else None) or "run"


def task_of_results(results: pd.DataFrame) -> str:
    """The task type whose mean test loss these results hold (regression when none does: results
    stored before task types existed are regression's)."""
    from oodfs.contract.task_types import BUILTIN_TASKS

    metrics = set(results["metric"].dropna()) if "metric" in results else set()
    for task in BUILTIN_TASKS:
        if task.metric("mean") in metrics:
            return task.name
    return "regression"


#: the columns that order a results frame's rows, after method and setting: the unit keys
#: (r_train, run), then which fit, metric, test environment and set size a row holds
_ROW_ORDER = ["r_train", "run", "downstream", "point", "metric", "env", "k"]


def _value_key(value) -> tuple:
    """A total order over the values of one key column: missing first, then numbers by value and
    labels in their natural order (:func:`oodfs.contract.task.env_sort_key`), then as text."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return (0,)
    return (1, env_sort_key(value), type(value).__name__, str(value))


def _ranks(values: pd.Series, first: list | None = None) -> np.ndarray:
    """Each value's place in the canonical order of the column: those of ``first`` in its order,
    then the others by :func:`_value_key`."""
    values = values.astype(object).where(values.notna(), None)
    present = set(values.unique())
    given = [v for v in dict.fromkeys(first or []) if v in present]
    rest = sorted(present - set(given), key=_value_key)
    rank = {v: i for i, v in enumerate(given + rest)}
    return values.map(rank).to_numpy()


def canonical_rows(
    results: pd.DataFrame, method_order: list | None = None, setting_order: list | None = None
) -> pd.DataFrame:
    """``results`` in one canonical row order: by method (``method_order`` first, then the others
    sorted), setting (likewise), then r_train, run, downstream model, grid point, metric, test
    environment and k, each in its natural order. Any order of the same rows gives the same frame
    (up to its index), so every mean, seeded bootstrap and table built from it is bit for bit the
    same whatever order the tasks were committed in (docs/PROTOCOL.md section 10, "Intervals")."""
    keys = [_ranks(results["method"], method_order), _ranks(results["setting"], setting_order)]
    keys += [_ranks(results[c]) for c in _ROW_ORDER if c in results]
    return results.iloc[np.lexsort(keys[::-1])]


class Report:
    """``points``: one row per evaluated grid point (metrics at the task's k as columns);
    ``chosen``: the point the rule picks per task; ``tasks``: status and error per task;
    ``curves`` and ``per_env``: the chosen points' values per k and per test environment."""

    def __init__(
        self,
        results: pd.DataFrame,
        rule: str | SelectionRule = "val",
        metrics: list[dict] | None = None,
        method_order: list[str] | None = None,
        downstream: str | None = None,
        columns: list[str] | None = None,
        unit: str | None = None,
        task: str | None = None,
        env_weighting: EnvWeighting | None = None,
        env_rows: pd.DataFrame | None = None,
        setting_order: list[str] | None = None,
    ):
        if results.empty:
            raise OodfsError("the results table is empty: nothing to report")
        # what for_model builds another downstream model's report from
        self._given = dict(
            results=results,
            rule=rule,
            metrics=metrics,
            method_order=method_order,
            unit=unit,
            task=task,
            env_weighting=env_weighting,
            env_rows=env_rows,
            setting_order=setting_order,
        )
        results, self.downstream, self.downstream_models = _one_downstream(results, downstream)
        # rows in one canonical order (methods and settings in the suite's order, then every unit
        # key sorted): every table, interval and test reads the same values in the same order
        # whatever order the tasks finished in (docs/PROTOCOL.md section 10, "Intervals")
        results = canonical_rows(results, method_order, setting_order)
        self.results = results
        # a rule already looked up (bench: once per suite) is taken as it is
        self.rule = rule if isinstance(rule, SelectionRule) else get_rule(rule)
        self.metrics = _declarations(metrics)
        self.suite = str(results["suite"].dropna().iloc[0]) if results["suite"].notna().any() else ""
        #: the suite's unit of replication (oodfs.contract.task.UNITS), which the analysis tests over;
        #: results stored before suites declared one: each (r_train, run) block, as then
        self.unit = unit or results_unit(results)
        profiles = sorted(set(results["profile"].dropna())) if "profile" in results else []
        if len(profiles) > 1:
            raise OodfsError(f"these results mix profiles {', '.join(profiles)}; report each separately")
        self.profile = profiles[0] if profiles else "default"
        self.tasks = (
            results.groupby(TASK_KEY, sort=False)
            .agg(status=("status", "first"), error=("error", "first"))
            .reset_index()
        )
        ok = results[results["status"] == "ok"]
        #: the task type of the run (oodfs.contract.task_types): stored with the run, else read off its
        #: metrics
        self.task = task or task_of_results(ok)
        #: its TaskType (looked up once: the reweighting, the rule and the tables read it)
        self.task_type = get_task(self.task)
        #: how the test environments count in the statistics over them (docs/PROTOCOL.md section 3,
        #: "Weighting the test environments"): the stored statistics are the default's; another
        #: weighting computes them again from the stored per-environment rows (``env_rows``: each
        #: test environment's rows per data set), and ``env_left_out`` names the environments it
        #: left out ({environment: rows})
        self.env_weighting = env_weighting or EnvWeighting()
        self._stored_ok = ok  # the curves' extra k have no per-environment rows: they stay as stored
        empty = pd.DataFrame(columns=ENV_ROWS_COLUMNS)
        ok, self.env_left_out = reweighted(
            ok,
            self.task_type,
            env_rows if env_rows is not None else empty,
            self.env_weighting,
            TASK_KEY + ["point", "k", "downstream"],
        )
        self._ok = ok
        self.points = self._points(ok)
        self.chosen = self.rule.choose(self.points, ok, self.task_type) if len(self.points) else self.points
        # (a run where every task failed has no values to check them against, and no columns)
        self._columns = None if columns is None or self.points.empty else self._checked_columns(list(columns))

    def _checked_columns(self, columns: list[str]) -> list[str]:
        """The metrics asked for as table columns, each a stored metric with a direction."""
        if not columns:
            raise OodfsError("the list of metrics to show is empty; name at least one")
        usable = [
            n
            for n, m in self.metrics.items()
            if m.comparable and n in self.points and self.points[n].notna().any()
        ]
        for name in columns:
            if name not in usable:
                valid = ", ".join(usable) or "none (no comparable metric has a value in these results)"
                raise OodfsError(f"metric {name!r} has no values to compare in these results; valid: {valid}")
        if len(set(columns)) < len(columns):
            raise OodfsError(f"the metrics to show name one twice: {', '.join(columns)}")
        return columns

    def for_model(self, model: str) -> "Report":
        """The report of the same results for another downstream model the run trained (same rule,
        metrics, unit and task; docs/PROTOCOL.md section 18, "Every downstream model is shown")."""
        if model == self.downstream:
            return self
        return Report(**self._given, downstream=model, columns=self._columns)

    def model_reports(self) -> list["Report"]:
        """This report, then one per other downstream model the run trained, in the suite's order."""
        return [self] + [self.for_model(m) for m in self.downstream_models if m != self.downstream]

    @classmethod
    def from_path(
        cls,
        path,
        rule: str | None = None,
        downstream: str | None = None,
        columns: list[str] | None = None,
        unit: str | None = None,
    ) -> "Report":
        """A report of a results folder (or a results .parquet/.csv file). ``rule``: the model-
        selection rule; by default the one the folder was last run with, else ``val``. ``columns``:
        the metrics tables and tests show (default: the headline metrics). ``unit``: the unit of
        replication, for a results file that does not store its suite (default: the stored one)."""
        from oodfs.results.store import ResultStore, load_results

        store = ResultStore(path)
        stored = order = stored_rule = stored_columns = stored_task = settings = None
        weighting, env_rows = None, None
        if Path(path).is_dir() and store.exists():
            stored = store.get_meta("metrics")
            runs = store.invocations()
            if runs:
                order = list(runs[-1]["suite"]["methods"])
                stored_rule = runs[-1]["suite"].get("selection")
                stored_columns = list(runs[-1]["suite"].get("metrics") or []) or None
                unit = unit or stored_unit(runs[-1]["suite"])
                stored_task = runs[-1]["suite"].get("task")
                weighting = stored_env_weighting(runs[-1]["suite"])
                settings = stored_settings(runs[-1]["suite"])
            if weighting is not None and not weighting.is_default:
                env_rows = pd.DataFrame(store.get_meta("test_rows") or [], columns=ENV_ROWS_COLUMNS)
        return cls(
            load_results(path),
            rule or stored_rule or "val",
            stored,
            order,
            downstream,
            columns if columns is not None else stored_columns,
            unit=unit,
            task=stored_task,
            env_weighting=weighting,
            env_rows=env_rows,
            setting_order=settings,
        )

    # -- building ------------------------------------------------------------------------
    def _points(self, ok: pd.DataFrame) -> pd.DataFrame:
        if ok.empty:  # every task failed: no point, with the key columns' types (figures merge on them)
            return ok[TASK_KEY + ["point"]].reset_index(drop=True)
        keys = TASK_KEY + ["point"]
        flat = ok[ok["env"].isna()]
        # a point's k: the k of its rows that are not on a curve (stored at that k only); with a
        # k grid each size is a point of its own (docs/PROTOCOL.md section 10, "The k grid")
        curve = [n for n, m in self.metrics.items() if m.curve]
        task_k = (
            # per-environment rows count: a real table's selector may have no other non-curve row
            ok[~ok["metric"].isin(curve)].groupby(keys, sort=False)["k"].first().rename("_task_k")
        )
        at_k = flat.join(task_k, on=keys)
        at_k = at_k[(at_k["k"] == at_k["_task_k"]) | at_k["_task_k"].isna()]
        wide = at_k.pivot_table(index=keys, columns="metric", values="value", aggfunc="first")
        wide.columns.name = None
        info = ok.groupby(keys, sort=False)[[c for c in POINT_INFO if c in ok]].first()
        if "subset" in at_k:  # the features the downstream model was trained on, at the task's k
            info = info.join(at_k.groupby(keys, sort=False)["subset"].first())
        return wide.join(info).join(task_k).rename(columns={"_task_k": "k"}).reset_index()

    def _of_chosen(self, rows: pd.DataFrame) -> pd.DataFrame:
        keys = TASK_KEY + ["point"]
        return rows.merge(self.chosen[keys], on=keys)[TASK_KEY + ["metric", "env", "k", "value"]]

    @cached_property
    def curves(self) -> pd.DataFrame:
        """Chosen points' curve metrics at every k (only for tasks evaluated at several k)."""
        curve = [n for n, m in self.metrics.items() if m.curve]
        stored = self._stored_ok
        rows = self._of_chosen(stored[stored["env"].isna() & stored["metric"].isin(curve)])
        many = rows.groupby(TASK_KEY)["k"].transform("nunique") > 1
        return rows[many].reset_index(drop=True)

    @cached_property
    def per_env(self) -> pd.DataFrame:
        return self._of_chosen(self._ok[self._ok["env"].notna()])

    def env_notes(self) -> list[str]:
        """What the outputs say about how the test environments count (none under the default)."""
        return self.env_weighting.notes(self.env_left_out)

    # -- what tables and tests read ------------------------------------------------------
    @property
    def headline(self) -> list[str]:
        """The metrics tables and tests show: those asked for, else the headline metrics present
        in these results, in declaration order."""
        if self._columns is not None:
            return self._columns
        return [
            n
            for n, m in self.metrics.items()
            if m.role == "headline" and n in self.points and self.points[n].notna().any()
        ]

    def kind(self, method: str) -> str:
        """``"weighter"`` (a weighter followed by weighted least squares) or ``"selector"``."""
        kinds = (
            self.points.loc[self.points["method"] == method, "method_kind"]
            if "method_kind" in self.points
            else []
        )
        return str(kinds.iloc[0]) if len(kinds) and pd.notna(kinds.iloc[0]) else "selector"

    def suspect_fits(self) -> pd.DataFrame:
        """The chosen fits whose diagnostics meet a declared suspect rule
        (:class:`oodfs.contract.metrics.SuspectRule`): one row per (setting, method, rule) with the
        rule's ``note``, the fits it ``flagged`` and the ``chosen`` fits of that method there. Every
        output that marks a suspect method (leaderboard, compare, the page) reads this."""
        rows = []
        chosen = self.chosen
        for m in self.metrics.values():
            values = None if m.suspect is None or chosen.empty else m.suspect.values(chosen, m.name)
            if values is None:
                continue
            bad = chosen[m.suspect.flags(values)]
            for (setting, method), g in bad.groupby(["setting", "method"], sort=False):
                of = int(((chosen["setting"] == setting) & (chosen["method"] == method)).sum())
                rows.append((setting, method, m.suspect.note, len(g), of))
        return pd.DataFrame(rows, columns=["setting", "method", "note", "flagged", "chosen"])

    def suspect_lines(self, code=lambda t: f"`{t}`", esc=str) -> list[str]:
        """A list item per row of :meth:`suspect_fits`; ``code``, ``esc``: how a name is put in a
        code span and how other text from the results is escaped."""
        return [
            f"- {code(r.method)} ({esc(r.setting)}): {esc(r.note)} in {r.flagged} of {r.chosen} chosen fits"
            for r in self.suspect_fits().itertuples()
        ]

    def per_run(self) -> pd.DataFrame:
        """Chosen values per (setting, r_train, run, method), and r_train = "all": each run
        averaged over r_train first. Columns: TASK_KEY + headline metrics."""
        cols = TASK_KEY + self.headline
        chosen = self.chosen[cols].astype({"r_train": object})
        per_run_all = (
            chosen.groupby(["setting", "method", "run"], sort=False)[self.headline].mean().reset_index()
        )
        per_run_all["r_train"] = "all"
        return pd.concat([chosen, per_run_all[cols]], ignore_index=True)

    def cells(self, interval: str = "bootstrap") -> pd.DataFrame:
        """What every table cell and figure point shows: one row per (setting, r_train, method,
        headline metric) with the mean over runs, its 95 % ``interval`` (:func:`stats.cell_summary`;
        the percentile bootstrap stays inside the metric's range) and the count; r_train = "all"
        averages each run over r_train first, or, with the ``environment`` unit, is over the
        training environments (each its runs' mean)."""
        from oodfs.report.stats import cell_summary

        per_run = self.per_run()
        if self.unit == "environment":  # the "all" cell: over the environments, each its runs' mean
            by_env = per_run[per_run["r_train"] != "all"]
            means = by_env.groupby(["setting", "r_train", "method"], sort=False)[self.headline].mean()
            per_run = pd.concat([by_env, means.reset_index().assign(r_train="all")], ignore_index=True)
        rows = []
        for (setting, r_train, method), g in per_run.groupby(["setting", "r_train", "method"], sort=False):
            for m in self.headline:
                c = cell_summary(g[m], method=interval)
                rows.append(
                    dict(
                        setting=setting,
                        r_train=r_train,
                        method=method,
                        metric=m,
                        mean=c.mean,
                        low=c.low,
                        high=c.high,
                        n=c.n,
                    )
                )
        return pd.DataFrame(
            rows, columns=["setting", "r_train", "method", "metric", "mean", "low", "high", "n"]
        )

    def summary(self) -> pd.DataFrame:
        """Tidy: one row per (setting, r_train, method, metric): mean, sd (ddof 1), n runs."""
        long = (
            self.per_run()
            .melt(id_vars=TASK_KEY, var_name="metric", value_name="value")
            .dropna(subset=["value"])
        )
        g = long.groupby(["setting", "r_train", "method", "metric"], sort=False)["value"]
        out = pd.concat([g.mean().rename("mean"), g.std(ddof=1).rename("sd"), g.count().rename("n")], axis=1)
        return out.reset_index()

    def counts(self) -> pd.DataFrame:
        """Successful and failed runs per (setting, r_train, method), and r_train = "all"."""
        t = self.tasks.assign(failed=self.tasks["status"] == "failed", ok=self.tasks["status"] == "ok")
        first_error = ("error", lambda e: next((x for x in e if isinstance(x, str) and x), None))
        by_r = (
            t.groupby(["setting", "r_train", "method"], sort=False)
            .agg(runs=("ok", "sum"), failed=("failed", "sum"), error=first_error)
            .reset_index()
        )
        overall = (
            t.groupby(["setting", "method"], sort=False)
            .agg(runs=("ok", "sum"), failed=("failed", "sum"), error=first_error)
            .reset_index()
        )
        overall["r_train"] = "all"
        return pd.concat([by_r, overall], ignore_index=True).astype({"r_train": object})

    def wide_summary(self) -> pd.DataFrame:
        """One row per (setting, r_train, method): <metric>, <metric>_sd for each headline
        metric, runs (successful), failed (failed runs), error (a failure message, if any)."""
        s = self.summary()
        cols = ["setting", "r_train", "method"]
        wide = s.pivot_table(index=cols, columns="metric", values=["mean", "sd"], aggfunc="first", sort=False)
        out = pd.DataFrame(index=wide.index)
        for m in self.headline:
            out[m] = wide[("mean", m)] if ("mean", m) in wide else np.nan
            sd = wide[("sd", m)] if ("sd", m) in wide else np.nan
            out[f"{m}_sd"] = sd
        out = out.reset_index().astype({"r_train": object})
        counts = self.counts()
        merged = counts.merge(out, on=cols, how="left")
        # one run: no spread (0.0, as before); no run: NaN
        for m in self.headline:
            merged[f"{m}_sd"] = np.where(merged[m].notna() & merged[f"{m}_sd"].isna(), 0.0, merged[f"{m}_sd"])
        merged.insert(3, "selection", self.rule.name)
        metric_cols = [c for m in self.headline for c in (m, f"{m}_sd")]
        return merged[cols + ["selection"] + metric_cols + ["runs", "failed", "error"]]
