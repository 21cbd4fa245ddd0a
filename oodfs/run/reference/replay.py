"""Replaying a reference: one of its data sets fitted again with the code installed now, and every
stored value compared with the fresh one (docs/PROTOCOL.md section 6, "Replaying a reference").

A reference is true because it replays, not because a record says so. :func:`replay` draws one data
set of the reference's suite (the one the reference names in its replay record, else its cheapest
by stored seconds), runs every method the reference holds on it -- every grid point, every
downstream model the reference was made with, through the runner's own job function -- and
compares each stored row with the fresh one: the value, the scores, the trained subset, the
selected features, the status and the error. A method is reproduced when every value is equal bit
for bit, or within the tolerance :data:`TOLERANCE` declares for it (with the reason; PROTOCOL
lists the same table). :func:`stamp` writes the current identities and the replay record into a
reference, and refuses unless every method replayed.
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from oodfs.contract.task import DataKey, env_key
from oodfs.validation import OodfsError

#: the row coordinates a replayed row is matched on
ROW_KEY = ["setting", "r_train", "run", "method", "point", "metric", "env", "k", "downstream"]
#: the text columns compared exactly (scores: as numbers, within the method's tolerance)
EXACT = ["status", "error", "subset", "feature_names", "params", "is_default", "method_kind"]
#: columns a reference written before they existed holds as None (oodfs.run.reference.load_reference)
OPTIONAL = ("subset",)

#: below this magnitude two numbers are equal (a numerical zero: 1e-17 against 3e-17)
ABS_FLOOR = 1e-12
#: the relative difference any method's own numbers (its scores and diagnostics) may show on
#: another machine: another CPU's BLAS kernel and vector instructions sum in another order, and
#: last-bit differences, even amplified by an ill-conditioned solve, stay far below it
DEFAULT_RTOL = 1e-9
#: ``{method: (relative tolerance, reason)}``: methods whose own numbers may differ more than
#: :data:`DEFAULT_RTOL` on another machine, and why (docs/PROTOCOL.md section 6 lists the same)
METHOD_RTOL: dict[str, tuple[float, str]] = {}
#: ``{downstream model: (relative tolerance, reason)}``: the same for the scores a downstream model
#: gives a feature subset (the subset itself must be the same, exactly)
MODEL_RTOL: dict[str, tuple[float, str]] = {}


def tolerance(method: str, model: str | None = None) -> float:
    """The relative tolerance of ``method``'s own numbers, or with ``model`` of its downstream scores."""
    own = METHOD_RTOL.get(method, (DEFAULT_RTOL, ""))[0]
    return max(own, MODEL_RTOL.get(model, (DEFAULT_RTOL, ""))[0]) if model else own


@dataclass
class MethodReplay:
    """One method's comparison on the replayed data set."""

    rows: int = 0  # stored rows compared
    values: int = 0  # numbers compared (values and scores)
    differing: int = 0  # numbers not equal bit for bit
    max_rel: float = 0.0  # the largest relative difference
    worst: float = 0.0  # the largest relative difference as a share of its tolerance
    where: str = ""  # the number of the largest difference, or the first text that differs
    text_diffs: int = 0  # text columns that differ (subset, status, error, ...)
    missing: int = 0  # stored rows the replay did not make, and made rows not stored

    @property
    def ok(self) -> bool:
        return self.text_diffs == 0 and self.missing == 0 and self.worst <= 1.0

    def line(self) -> str:
        if self.ok:
            if self.differing == 0:
                return f"{self.values} numbers equal bit for bit"
            return (
                f"{self.values} numbers, {self.values - self.differing} bit for bit, the others within "
                f"their tolerance (largest relative difference {self.max_rel:.2g})"
            )
        parts = []
        if self.missing:
            parts.append(f"{self.missing} rows made on one side only")
        if self.text_diffs:
            parts.append(f"{self.text_diffs} texts differ")
        if self.worst > 1.0:
            parts.append(f"largest relative difference {self.max_rel:.3g}, {self.worst:.3g} x its tolerance")
        return "; ".join(parts) + (f" ({self.where})" if self.where else "")

    def record(self) -> dict:
        fields = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return fields | {"ok": self.ok, "summary": self.line()}


@dataclass
class Replay:
    name: str  # <suite>-<profile>
    data_set: tuple  # (setting, r_train text, run)
    methods: dict = field(default_factory=dict)  # {method: MethodReplay}
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(m.ok for m in self.methods.values())

    def failures(self) -> dict[str, str]:
        return {m: r.line() for m, r in self.methods.items() if not r.ok}

    def record(self, identity: dict) -> dict:
        from pathlib import Path

        from oodfs.results.provenance import git_state, package_versions
        from oodfs.run.kernels import numeric_platform

        return {
            "data_set": list(self.data_set),
            "when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "git": git_state(Path(__file__).parent),
            "versions": package_versions(),
            "platform": numeric_platform(),
            "core": identity.get("core"),
            "seconds": round(self.seconds, 1),
            "methods": {m: r.record() for m, r in self.methods.items()},
        }


def replay_suite(ref):
    """The suite ``ref`` was made with, as the runner reads it: its shipped (or given) suite under
    the reference's profile, with the task type read from the environment, and the downstream
    models the reference holds (a binary reference may hold its default model alone)."""
    from oodfs.contract.registry import registry
    from oodfs.run.suite import customise, load_suite, with_task

    suite_name, profile = ref.meta["suite"], ref.meta["profile"]
    suite, _ = with_task(customise(load_suite(suite_name), profile=profile), registry())
    made_with = [m for m in dict.fromkeys(ref.results["downstream"].dropna().astype(str))]
    models = tuple(m for m in suite.downstream if m in made_with)
    return replace(suite, downstream=models or suite.downstream, methods=tuple(ref.methods))


def declared_suite(ref):
    """:func:`replay_suite` with every method its suite declares (those the reference withholds too):
    the suite ``--reference`` serves."""
    from oodfs.contract.registry import registry
    from oodfs.run.suite import customise, load_suite, with_task

    declared, _ = with_task(customise(load_suite(ref.meta["suite"]), profile=ref.meta["profile"]), registry())
    return replace(replay_suite(ref), methods=declared.methods)


def chosen_data_set(ref) -> tuple:
    """The data set a replay fits: the one the reference's replay record names (so that every
    replay of a reference checks the same rows), else its cheapest by stored fit and downstream
    seconds (first in the suite's order on ties)."""
    named = (ref.meta.get("replay") or {}).get("data_set")
    if named:
        return (named[0], str(named[1]), int(named[2]))
    r = ref.results
    per_task = r.groupby(["setting", "r_train", "run", "method"], sort=False, observed=True).agg(
        fit=("fit_seconds", "first"), down=("downstream_seconds", "first")
    )
    per_set = (
        (per_task["fit"].fillna(0) + per_task["down"].fillna(0))
        .groupby(level=["setting", "r_train", "run"], sort=False, observed=True)
        .sum()
    )
    setting, r_train, run = per_set.idxmin()
    return (str(setting), str(r_train), int(run))


def _data_key(suite, data_set) -> DataKey:
    setting, r_train, run = data_set
    for key in suite.data_keys():
        if key.setting == setting and env_key(key.r_train) == r_train and key.run == run:
            return key
    raise OodfsError(f"the suite {suite.name!r} has no data set {setting}, r_train {r_train}, run {run}")


def fresh_rows(suite, key: DataKey, methods) -> pd.DataFrame:
    """Every method's rows on one data set, made now by the runner's job function."""
    from oodfs.run.identity import task_identities
    from oodfs.run.jobs import Job, WorkerContext, run_job

    context = WorkerContext(suite, None, identities=task_identities(suite, methods))
    rows = [row for result in run_job(context, Job(key, tuple(methods))) for row in result.rows]
    return pd.DataFrame(rows)


def _scores(text) -> list:
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return []
    return json.loads(text) if isinstance(text, str) else list(text)


def _norm(value):
    """A stored text cell as compared: missing values alike, JSON text as its value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)  # a grid point or a k read back as a float
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def compare(stored: pd.DataFrame, fresh: pd.DataFrame, diagnostics=()) -> dict:
    """``{method: MethodReplay}``: every stored row of one data set against the fresh one.
    ``diagnostics``: the metrics that are a method's own numbers (not a downstream model's)."""

    def keyed(frame):
        frame = frame.copy()
        frame["r_train"] = [r if isinstance(r, str) else env_key(r) for r in frame["r_train"]]
        for c in ROW_KEY:
            frame[c] = [json.dumps(_norm(v), sort_keys=True) for v in frame[c].astype(object)]
        return frame.set_index(ROW_KEY)

    s, f = keyed(stored), keyed(fresh)
    out = {}
    for method in dict.fromkeys(stored["method"].astype(str)):
        m = out[method] = MethodReplay()
        sm = s[s.index.get_level_values("method") == json.dumps(method)]
        fm = f[f.index.get_level_values("method") == json.dumps(method)]
        both = sm.index.intersection(fm.index)
        m.rows = len(sm)
        only = list(sm.index.difference(fm.index)) + list(fm.index.difference(sm.index))
        m.missing = len(only)
        if only:
            side = "stored only" if only[0] in sm.index else "made now only"
            m.where = f"{_where(only[0])}: {side}"
        sm, fm = sm.loc[both], fm.loc[both]
        for c in EXACT:
            if c not in sm or c not in fm:
                continue
            a = [_norm(v) for v in sm[c].astype(object)]
            b = [_norm(v) for v in fm[c].astype(object)]
            # a column the reference was made without (its reader fills None) is not compared
            bad = [i for i, (x, y) in enumerate(zip(a, b)) if x != y and not (c in OPTIONAL and x is None)]
            m.text_diffs += len(bad)
            if bad and not m.where:
                m.where = f"{_where(both[bad[0]])}: {c} {a[bad[0]]!r} stored, {b[bad[0]]!r} now"
        metric = [json.loads(i[ROW_KEY.index("metric")]) for i in both]
        model = [json.loads(i[ROW_KEY.index("downstream")]) for i in both]
        value_tol = [tolerance(method, None if x in diagnostics else d) for x, d in zip(metric, model)]
        pairs = [
            (sm["value"].astype(float).to_numpy(), fm["value"].astype(float).to_numpy(), value_tol, both)
        ]
        for i, (x, y) in enumerate(zip(sm["scores"].astype(object), fm["scores"].astype(object))):
            x, y = _scores(x), _scores(y)
            if len(x) != len(y):
                m.text_diffs += 1
                m.where = m.where or f"{_where(both[i])}: {len(x)} scores stored, {len(y)} now"
            elif x:
                n = len(x)
                pairs.append(
                    (np.asarray(x, float), np.asarray(y, float), [tolerance(method)] * n, [both[i]] * n)
                )
        for x, y, tol, where in pairs:
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            m.values += len(x)
            m.differing += int((~same).sum())
            if same.all():
                continue
            with np.errstate(invalid="ignore"):
                diff = np.abs(x - y)
                rel = np.where(same | (diff <= ABS_FLOOR), 0.0, diff / np.maximum(np.abs(x), np.abs(y)))
            rel = np.where(np.isnan(rel), np.inf, rel)  # a NaN or inf on one side only
            share = rel / np.asarray(tol, float)
            m.max_rel = max(m.max_rel, float(rel.max()))
            i = int(np.argmax(share))
            if share[i] > m.worst:
                m.worst = float(share[i])
                if m.worst > 1.0 or not (m.missing or m.text_diffs):
                    m.where = f"{_where(where[i])}: {float(x[i])!r} stored, {float(y[i])!r} now"
    return out


def _where(index) -> str:
    names = dict(zip(ROW_KEY, (json.loads(v) for v in index)))
    shown = [f"{k} {names[k]}" for k in ("point", "metric", "env", "k", "downstream") if names[k] is not None]
    return ", ".join(shown)


def replay(ref, data_set: tuple | None = None) -> Replay:
    """Replay ``ref`` (a :class:`~oodfs.run.reference.Reference`) on ``data_set`` (default
    :func:`chosen_data_set`)."""
    import time

    suite = replay_suite(ref)
    data_set = data_set or chosen_data_set(ref)
    key = _data_key(suite, data_set)
    r = ref.results
    stored = r[
        (r["setting"] == data_set[0]) & (r["r_train"].astype(str) == data_set[1]) & (r["run"] == data_set[2])
    ]
    t0 = time.perf_counter()
    fresh = fresh_rows(suite, key, ref.methods)
    out = Replay(f"{ref.meta['suite']}-{ref.meta['profile']}", data_set)
    diagnostics = {m["name"] for m in ref.meta.get("metrics") or [] if m.get("role") == "diagnostic"}
    out.methods = compare(stored, fresh, diagnostics)
    out.seconds = time.perf_counter() - t0
    return out


def stamp(ref, result: Replay, withhold: bool = False) -> list[str]:
    """Write into ``ref``'s files ``result``'s record and, for every method it reproduced, its
    current task identities, and the current suite identity (the downstream models' settings among
    them: the replay trained them). A method that did not replay keeps its stored identity and
    its record says what differed, so that ``--reference`` runs it again and says why; with
    ``withhold`` its rows are taken out of the reference instead (``withheld`` in the provenance
    says which and why: a reference ships only numbers that replay). With no method reproduced,
    only the record is written. Returns the methods stamped."""
    from oodfs.run.identity import suite_identity, task_identities
    from oodfs.run.reference import ZSTD_LEVEL, _sha256

    passed = [m for m, r in result.methods.items() if r.ok]
    meta = dict(ref.meta)
    if not passed:
        meta["replay"] = result.record(meta.get("suite_identity") or {})
        ref.path.with_suffix(".json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        return []
    suite = replay_suite(ref)
    current = task_identities(suite, passed)
    frame = pd.read_parquet(ref.path)
    if withhold:
        failed = {m: r.line() for m, r in result.methods.items() if not r.ok}
        frame = _without(frame, meta, failed)
        result = replace(result, methods={m: r for m, r in result.methods.items() if r.ok})
    identity = frame["identity"].astype(object).to_numpy().copy()
    for i, (setting, method) in enumerate(zip(frame["setting"], frame["method"])):
        new = current.get((str(setting), str(method)))
        if new is not None:
            identity[i] = new.digest
    frame["identity"] = pd.Categorical(identity)
    frame.to_parquet(ref.path, index=False, compression="zstd", compression_level=ZSTD_LEVEL)
    used = set(identity)
    meta["identities"] = {d: p for d, p in meta["identities"].items() if d in used}
    meta["identities"].update({ident.digest: ident.parts for ident in current.values()})
    meta["suite_identity"] = suite_identity(suite)
    meta["replay"] = result.record(meta["suite_identity"])
    meta["sha256"] = _sha256(ref.path)
    ref.path.with_suffix(".json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return passed


def _without(frame: pd.DataFrame, meta: dict, failed: dict[str, str]) -> pd.DataFrame:
    """``frame`` without the rows of ``failed`` (``{method: what differed}``), and ``meta`` saying so."""
    frame = frame[~frame["method"].isin(failed)].reset_index(drop=True)
    for c in frame:  # the withheld methods' names leave the dictionaries too
        if isinstance(frame[c].dtype, pd.CategoricalDtype):
            frame[c] = frame[c].cat.remove_unused_categories()
    meta["withheld"] = {**meta.get("withheld", {}), **failed}
    meta["methods"] = [m for m in meta["methods"] if m not in failed]
    meta["rows"] = len(frame)
    meta["tasks"] = int(frame.drop_duplicates(["setting", "r_train", "run", "method"]).shape[0])
    replayed = (meta.get("replay") or {}).get("methods", {})
    if replayed:
        meta["replay"]["methods"] = {m: r for m, r in replayed.items() if m not in failed}
    return frame


def withhold_not_replayed(ref) -> list[str]:
    """Take out of ``ref``'s file the rows of the methods its last replay record says did not
    replay (no new replay: the record is the evidence), as ``stamp(..., withhold=True)`` does."""
    from oodfs.run.reference import ZSTD_LEVEL, _sha256, not_replayed

    failed = not_replayed(ref)
    if not failed:
        return []
    meta = dict(ref.meta)
    frame = _without(pd.read_parquet(ref.path), meta, failed)
    frame.to_parquet(ref.path, index=False, compression="zstd", compression_level=ZSTD_LEVEL)
    meta["sha256"] = _sha256(ref.path)
    ref.path.with_suffix(".json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    return sorted(failed)


def load_named(name: str):
    """A shipped reference by ``<suite>-<profile>``, or a reference ``.parquet`` file by path."""
    from pathlib import Path

    from oodfs.run.reference import load_reference

    if name.endswith(".parquet") or Path(name).exists():
        meta = Path(name).with_suffix(".json")
        if not meta.is_file():
            raise OodfsError(f"reference results file {meta} is missing")
        stored = json.loads(meta.read_text())
        return load_reference(stored.get("suite"), stored.get("profile"), name)
    suite, _, profile = name.rpartition("-")
    if not suite:
        raise OodfsError(f"reference {name!r} is not <suite>-<profile> nor a .parquet file")
    return load_reference(suite, profile)


def _replay_named(name: str) -> Replay:
    import warnings

    with warnings.catch_warnings():  # a method's fit warnings are its rows' business, not the replay's
        warnings.simplefilter("ignore")
        return replay(load_named(name))


def replay_many(names: list[str], jobs: int = 1):
    """``(name, Replay)`` of each reference, in the order given, ``jobs`` at once (each in a
    process of its own: a replay runs the runner's job, which sets its process's threads)."""
    if jobs <= 1 or len(names) <= 1:
        for name in names:
            yield name, _replay_named(name)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_replay_named, name) for name in names]
        for name, future in zip(names, futures):
            yield name, future.result()
