"""Reference results: a suite's full-grid results shipped with oodfs, to compare a new method
with every other method of the suite in the time of that method alone.

A reference is two files in this package (or anywhere, given by path): ``<suite>-<profile>.parquet``,
the results rows of every task (zstd-compressed; columns the reports do not read are left out,
text columns dictionary-encoded) and ``<suite>-<profile>.json``, their provenance: the suite
identity, the metric declarations, the identity of every task (:mod:`oodfs.run.identity`), the
invocations that made them and the SHA-256 of the parquet file (a changed byte is caught).

``oodfs bench --suite S --methods mine --reference`` runs ``mine`` and copies every other method
of the suite from the reference into its results folder (``origin = 'reference'``), unless the
method's identity (code, version, grid, profile, data, suite) differs from the reference's:
then that method is run too, and the run says why. :func:`write_reference` makes the files
from a results folder.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

import pandas as pd

from oodfs.contract.downstream import DEFAULT_MODEL
from oodfs.contract.task import TASK_KEY
from oodfs.results.identity import explain, identity_conflicts
from oodfs.results.store import RESULT_COLUMNS, TASK_COLUMNS, ResultStore
from oodfs.run.identity import suite_identity
from oodfs.validation import OodfsError

FORMAT = 1
#: result columns a reference leaves out: no report reads them (versions are in the provenance)
DROPPED = ("seed", "data_seconds", "oodfs_version", "versions", "origin")
COLUMNS = [c for c in RESULT_COLUMNS if c not in DROPPED]
#: zstd level of the parquet file (19 of 22: small files, still fast to read)
ZSTD_LEVEL = 19


def shipped_dir() -> Path:
    return Path(str(resources.files(__name__)))


def available() -> list[str]:
    """``<suite>-<profile>`` of every reference shipped with oodfs."""
    return sorted(p.name[: -len(".parquet")] for p in shipped_dir().glob("*.parquet"))


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class Reference:
    path: Path  # the parquet file
    meta: dict  # the provenance file
    results: pd.DataFrame  # rows as stored (r_train as text), COLUMNS

    @property
    def label(self) -> str:
        made = self.meta.get("created", "")[:10]
        return f"{self.path.name} (oodfs {self.meta.get('oodfs_version', '?')}, {made})"

    @property
    def methods(self) -> list[str]:
        return list(self.meta.get("methods", []))

    @cached_property
    def tasks(self) -> pd.DataFrame:
        """One row per task: TASK_COLUMNS, origin 'reference'."""
        t = (
            self.results.groupby(TASK_KEY, sort=False)
            .agg(status=("status", "first"), error=("error", "first"), identity=("identity", "first"))
            .reset_index()
        )
        parts = self.meta.get("identities", {})
        t["parts"] = [json.dumps(parts[i], sort_keys=True) if i in parts else None for i in t["identity"]]
        t["finished_at"] = None
        t["origin"] = "reference"
        return t[TASK_COLUMNS]


def load_reference(suite: str, profile: str, path: str | Path | None = None) -> Reference:
    """The reference results of ``suite`` under ``profile`` shipped with oodfs, or those at
    ``path`` (a ``.parquet`` file with its ``.json`` beside it). Missing or corrupt files: an
    :class:`OodfsError` naming them."""
    if path is None:
        path = shipped_dir() / f"{suite}-{profile}.parquet"
        if not path.is_file():
            have = ", ".join(available()) or "none"
            raise OodfsError(f"suite {suite!r} (profile {profile}) has no reference results; shipped: {have}")
    path = Path(path)
    meta_path = path.with_suffix(".json")
    for p in (path, meta_path):
        if not p.is_file():
            raise OodfsError(f"reference results file {p} is missing")
    try:
        meta = json.loads(meta_path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise OodfsError(f"reference results file {meta_path} is corrupt (not JSON: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or "sha256" not in meta:
        raise OodfsError(
            f"reference results file {meta_path} is corrupt (not an oodfs reference provenance file)"
        )
    if _sha256(path) != meta["sha256"]:
        raise OodfsError(
            f"reference results file {path} is corrupt (its SHA-256 differs from the one in {meta_path.name})"
        )
    try:
        results = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise OodfsError(f"reference results file {path} is corrupt ({type(exc).__name__}: {exc})") from None
    if "downstream" not in results:  # written before the downstream model was a choice: the MLP
        results["downstream"] = DEFAULT_MODEL
    if "subset" not in results:  # written before the trained subset was stored with each row
        results["subset"] = None
    missing = [c for c in COLUMNS if c not in results]
    if missing:
        raise OodfsError(f"reference results file {path} lacks the columns {', '.join(missing)}")
    results = results[COLUMNS].astype(
        {c: object for c in COLUMNS if isinstance(results[c].dtype, pd.CategoricalDtype)}
    )
    results["origin"] = "reference"
    return Reference(path, meta, results)


def not_replayed(ref: Reference) -> dict[str, str]:
    """``{method: what differed}`` of the methods whose rows the reference's last replay did not
    reproduce (docs/PROTOCOL.md section 6, "Replaying a reference")."""
    methods = (ref.meta.get("replay") or {}).get("methods", {})
    return {m: r.get("summary", "its rows differ") for m, r in methods.items() if not r.get("ok", True)}


def suite_conflicts(ref: Reference, suite) -> list[str]:
    """What differs between the suite identity of ``ref`` and ``suite``'s (empty: none). A run may
    use some of the reference's settings (--settings): each must be the reference's own."""
    current_suite = suite_identity(suite)
    old = ref.meta.get("suite_identity") or {}
    old_settings = {json.dumps(s, sort_keys=True) for s in old.get("settings", [])}
    other_settings = [
        s for s in current_suite.get("settings", []) if json.dumps(s, sort_keys=True) not in old_settings
    ]
    diff = [c for c in identity_conflicts(old, current_suite) if not c.startswith("setting ")]
    return diff + (["settings"] if other_settings else [])


def take(
    ref: Reference, suite, methods, identities: dict
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, str]]:
    """The reference's tasks of ``methods`` on ``suite``'s selection (settings x r_train x runs),
    as ``(tasks, results)``, and ``{method: why not}`` for each method that cannot be taken:
    the reference has a different suite identity, lacks some of its tasks, or holds them under
    another identity than ``identities`` (``{(setting, method): TaskIdentity}``, the current)."""
    empty = ref.tasks.iloc[:0], ref.results.iloc[:0]
    diff = suite_conflicts(ref, suite)
    if diff:
        return (*empty, {m: f"the reference was made with a different {', '.join(diff)}" for m in methods})
    tasks = ref.tasks.set_index(TASK_KEY)
    parts = ref.meta.get("identities", {})
    differs = not_replayed(ref)
    refused, taken = {}, []
    withheld = ref.meta.get("withheld", {})
    for m in methods:
        if m in withheld:
            refused[m] = f"withheld from the reference: its rows did not replay ({withheld[m]})"
            continue
        if m not in ref.methods:
            refused[m] = "the reference does not hold it"
            continue
        if m in differs:
            refused[m] = f"its rows in the reference did not replay ({differs[m]})"
            continue
        needed = suite.task_keys([m])
        present = [k for k in needed if k in tasks.index]
        stale = [k for k in present if tasks.at[k, "identity"] != identities[k[0], m].digest]
        if stale:
            k = stale[0]
            refused[m] = explain(parts.get(tasks.at[k, "identity"]), identities[k[0], m].parts)
            continue
        taken += present
        if len(present) < len(needed):  # the rest is run (the method joins the run; present tasks are kept)
            s, r, run, _ = next(k for k in needed if k not in tasks.index)
            refused[m] = (
                f"the reference holds {len(present)} of the {len(needed)} tasks this run needs (e.g. not "
                f"setting {s}, r_train {r}, run {run}); the other {len(needed) - len(present)} are run"
            )
    if not taken:
        return (*empty, refused)
    chosen = tasks.loc[taken].reset_index()[TASK_COLUMNS]
    rows = ref.results.merge(chosen[TASK_KEY], on=TASK_KEY)
    return chosen, rows, refused


def trained_subsets(ref: Reference, suite, data_digests: dict[str, str]) -> tuple[dict, str | None]:
    """The downstream scores the reference stored for every feature subset it trained, per data set
    and model, so that a run takes them instead of training the subset again (a subset's model is
    seeded by data set and subset only: the numbers are the same; docs/PROTOCOL.md section 6).

    Returns ``({(setting, r_train text, run): {model: {sorted subset: scores}}}, why_not)``, where
    ``scores`` is ``{"val": {score: v}, "test": {env: {score: v}}, "val_envs": {env: {score: v}}}``
    (:meth:`oodfs.run.downstream_models.DownstreamCache.add_stored` reads it), and ``why_not`` says
    why nothing is taken (else None). Taken only where the suite identity (downstream models, their
    settings, sizes, seed) is the reference's and a task's data identity is the current one of its
    setting (``data_digests``: ``{setting: data digest}``); only subsets stored with every test
    environment's scores (a curve's extra sizes store summaries only) and with one value per
    quantity."""
    from oodfs.contract.tasks import get_task

    diff = suite_conflicts(ref, suite)
    if diff:
        return {}, f"the reference was made with a different {', '.join(diff)}"
    task = get_task(suite.task or "regression")
    val, val_env = task.metric("val"), task.metric("val_env")
    parts = ref.meta.get("identities", {})
    r = ref.results
    r = r[~r["method"].isin(not_replayed(ref))]  # a method's rows that did not replay give no scores
    same_data = [
        (parts.get(i) or {}).get("data") == data_digests.get(s) for s, i in zip(r["setting"], r["identity"])
    ]
    r = r[
        pd.Series(same_data, index=r.index)
        & (r["status"] == "ok")
        & r["subset"].notna()
        & r["downstream"].isin(list(suite.downstream))
        & r["metric"].isin([*task.scores, val, val_env])
    ]
    if r.empty:
        return {}, "the reference stores no downstream scores of this run's data sets and models"
    key = ["setting", "r_train", "run", "downstream", "subset_key"]
    sorted_subset = {t: tuple(sorted(json.loads(t))) for t in r["subset"].unique()}
    r = r.assign(subset_key=r["subset"].map(sorted_subset), env=r["env"].fillna(""))
    r = r.drop_duplicates(key + ["metric", "env", "value"])
    # a subset stored with two values of one quantity is not trusted (it cannot happen in one run)
    clash = r.duplicated(key + ["metric", "env"], keep=False)
    bad = set(r.loc[clash, key].itertuples(index=False, name=None))
    per_env = r["metric"].isin(task.scores) & (r["env"] != "")
    complete = set(r.loc[per_env, key].itertuples(index=False, name=None))
    out: dict = {}
    for (setting, r_train, run, model, subset, metric, env), value in zip(
        r[key + ["metric", "env"]].itertuples(index=False, name=None), r["value"]
    ):
        k = (setting, r_train, run, model, subset)
        if k in bad or k not in complete:
            continue
        scores = out.setdefault((setting, r_train, int(run)), {}).setdefault(model, {})
        scores = scores.setdefault(subset, {"val": {}, "test": {}, "val_envs": {}})
        if metric == val:
            scores["val"][task.validation_loss] = value
        elif metric == val_env:
            scores["val_envs"].setdefault(env, {})[task.validation_loss] = value
        else:
            scores["test"].setdefault(env, {})[metric] = value
    return out, None


def _write_atomic(target: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)  # package data: readable by all (mkstemp makes it private)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_reference(results_dir: str | Path, out_path: str | Path) -> tuple[Path, Path]:
    """Write the results of ``results_dir`` as reference results: ``out_path`` (a ``.parquet``
    file, e.g. ``oodfs/reference/synthetic-default.parquet``) and its provenance beside it
    (``.json``). Each file is written to a temporary name and renamed. Returns both paths."""
    store = ResultStore(results_dir)
    if not store.exists():
        raise OodfsError(f"no results in {results_dir} (expected {store.path.name})")
    identity = store.get_meta("suite_identity")
    if identity is None:
        raise OodfsError(f"{results_dir} has no suite identity (written by an older oodfs): rerun it")
    tasks, results = store.tables()
    if results.empty:
        raise OodfsError(f"{results_dir} holds no results")
    if tasks["identity"].isna().any():
        raise OodfsError(
            f"{int(tasks['identity'].isna().sum())} tasks in {results_dir} have no identity "
            "(written by an older oodfs): rerun them with --resume"
        )
    out_path = Path(out_path)
    if out_path.suffix != ".parquet":
        raise OodfsError(f"reference output {out_path} must be a .parquet file")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    suites, profiles = sorted(set(results["suite"].dropna())), sorted(set(results["profile"].dropna()))
    frame = results[COLUMNS].sort_values(
        TASK_KEY + ["point", "metric", "env", "k"], kind="stable", na_position="first"
    )
    text = [c for c in COLUMNS if not pd.api.types.is_numeric_dtype(frame[c])]
    frame = frame.astype({c: "category" for c in text})  # dictionary-encoded in the file and in memory
    _write_atomic(
        out_path, lambda p: frame.to_parquet(p, index=False, compression="zstd", compression_level=ZSTD_LEVEL)
    )
    invocations = [
        {k: inv.get(k) for k in ("argv", "backend", "jobs", "versions", "resume", "kernels")}
        | {
            "git": (inv.get("environment") or {}).get("oodfs_git"),
            "method_code": (inv.get("environment") or {}).get("method_code"),
        }
        for inv in store.invocations()
    ]
    parts = {i: json.loads(p) for i, p in zip(tasks["identity"], tasks["parts"]) if p}
    meta = {
        "format": FORMAT,
        "suite": suites[0] if len(suites) == 1 else suites,
        "profile": profiles[0] if len(profiles) == 1 else profiles,
        "suite_identity": identity,
        "metrics": store.get_meta("metrics"),
        "methods": list(dict.fromkeys(results["method"])),
        "tasks": int(len(tasks)),
        "rows": int(len(frame)),
        "failed_tasks": int((tasks["status"] != "ok").sum()),
        "identities": parts,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "oodfs_version": (
            results["oodfs_version"].dropna().iloc[0] if results["oodfs_version"].notna().any() else ""
        ),
        "invocations": invocations,
        "sha256": _sha256(out_path),
    }
    meta_path = out_path.with_suffix(".json")
    _write_atomic(
        meta_path, lambda p: p.write_text(json.dumps(meta, indent=1, sort_keys=True, default=str) + "\n")
    )
    return out_path, meta_path
