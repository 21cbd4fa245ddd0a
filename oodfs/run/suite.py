"""Suites: environment settings x r_train x runs x methods x grid points, read from TOML."""

from __future__ import annotations

import sys
import warnings
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from oodfs.contract.downstream import DEFAULT_MODEL
from oodfs.contract.env_weights import check_env_weighting, check_min_env_rows
from oodfs.contract.profiles import check_profile
from oodfs.contract.seeds import derive_seed
from oodfs.contract.task import UNITS, DataKey, TaskKey, default_unit, env_sort_key
from oodfs.validation import OodfsError, check_limit, check_nesting, check_positive_int

if TYPE_CHECKING:
    from oodfs.contract.registry import SuitePlugins

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


#: the keys of a suite file, and of each of its settings (``[settings.NAME]``)
SUITE_KEYS = (
    "description",
    "environment",
    "settings",
    "r_train",
    "r_test",
    "runs",
    "n_train",
    "n_val",
    "n_test",
    "k",
    "k_grid",
    "methods",
    "selection",
    "curve",
    "seed",
    "profile",
    "quick",
    "downstream",
    "yardsticks",
    "card",
    "metrics",
    "unit",
    "task",
    "env_weighting",
    "min_env_rows",
    "feature_shift",
    "feature_shift_impute",
)
#: the keys a suite file must give (no default; docs/PROTOCOL.md section 8, "Suite files"); every
#: other key has one: runs 1, n_val 0, k 5, selection "val" (with n_val) or "default", seed 0,
#: downstream "mlp", no yardsticks, unit "resplit" on a table or "run"
REQUIRED_KEYS = ("environment", "settings", "r_train", "r_test", "n_train", "n_test", "methods")
#: the keys of a suite's data card (``[card]``), listed by ``oodfs suites``
CARD_KEYS = ("source", "licence", "rows", "environments", "target", "shift")
CURVE_KEYS = ("methods", "r_train")
#: what ``[quick]`` (``--quick``) may change
QUICK_KEYS = ("r_train", "r_test", "runs", "methods", "n_train", "n_val", "n_test", "k", "seed", "selection")
#: the largest number of rows a suite may draw at once (n_train + n_val, or n_test): a guard
#: against typos such as n_train = 100000000000; a real data set's n_test may exceed its rows
MAX_ROWS = 10_000_000
#: worker seconds per task of the synthetic suite's grid (1 190 tasks stored 4 956 worker seconds
#: with --jobs 2, 2026-11-30; docs/guide/results.md): the estimate a refused grid is told
SECONDS_PER_TASK = 4.2


def train_envs(r_train) -> tuple:
    """The environments one r_train entry trains on: ``(r,)`` for one environment, the members
    of a set such as ``(1.5, 2.0, 3.0)`` (pooled, with one environment label per row)."""
    return tuple(r_train) if isinstance(r_train, (list, tuple)) else (r_train,)


def _normalise_r_train(values) -> tuple:
    """r_train entries as hashable ids: a set of environments becomes a tuple in the environments'
    natural order (numbers as floats), so [3, 2] and [2.0, 3.0] are one set, with one seed, one key
    and the same results; a set named twice in r_train is then refused as a repetition."""
    return tuple(
        tuple(
            sorted(
                (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in r),
                key=env_sort_key,
            )
        )
        if isinstance(r, (list, tuple)) and _sortable(r)
        else r
        for r in values
    )


def _sortable(members) -> bool:
    """Members that can be put in order (numbers or names, not nested lists: _check_ids names those)."""
    return all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in members)


def check_environment_params(suite: "Suite", env_cls) -> None:
    """Every parameter a setting gives (``params``, ``run_params``) is one the environment
    declares in its constructor: one line naming the key and the valid ones, not a TypeError
    from deep inside the run."""
    try:
        declared = list(env_cls._get_param_names())  # scikit-learn's reading of __init__
    except (AttributeError, RuntimeError):  # not a BaseEstimator, or one taking **kwargs: anything goes
        return
    for setting in suite.settings:
        for key in (*setting.params, *setting.run_params):
            if key not in declared:
                raise OodfsError(
                    f"setting {setting.name!r} of suite {suite.name!r}: environment {suite.environment!r} "
                    f"has no parameter {key!r}; valid: {', '.join(declared) or '(none)'}"
                )


def with_task(suite: "Suite", registry) -> tuple["Suite", dict[str, str]]:
    """The suite with its task type read from the environment and the methods that do not declare
    it removed, and ``{method: why skipped}`` for those (:func:`resolve_suite`, for a caller that
    needs no more of the suite's plugins)."""
    suite, skipped, _ = resolve_suite(suite, registry)
    return suite, skipped


def resolve_suite(
    suite: "Suite", registry, backend: str = "local"
) -> tuple["Suite", dict[str, str], SuitePlugins]:
    """Read the suite's plugins from ``registry`` at once (:meth:`Registry.suite_plugins`, with
    ``backend``), check the suite's names of plugins against them (:func:`check_plugin_names`),
    and return the suite with its task type read from the environment (its class tag ``task``),
    without the methods that do not declare that task, ``{method: why skipped}`` for those, and
    the plugins (:class:`SuitePlugins`), which a run hands on instead of asking the registry
    again. A suite file's ``task`` that contradicts the environment: one line naming both."""
    from oodfs.run.downstream_models import check_model

    def read(suite):
        return registry.suite_plugins(suite.environment, suite.selection, suite.methods, backend, suite.task)

    plugins = read(suite)
    check_plugin_names(suite, plugins)
    suite = _target_task(suite, plugins.environment.cls)
    if suite.environment != plugins.environment.name:  # the table's target named another environment
        plugins = read(suite)
    env_task = plugins.task.name
    if suite.task is not None and suite.task != env_task:
        raise OodfsError(
            f"suite {suite.name!r} says task = {suite.task!r}, but environment {suite.environment!r} "
            f"gives a {env_task} target"
        )
    for model in suite.downstream:
        check_model(model, env_task, plugins.downstream)
    skipped = {}
    for method in suite.methods:
        cls = plugins.selectors[method].cls
        if not cls.handles(env_task):
            skipped[method] = f"handles {' and '.join(cls.task_types)} targets only, not {env_task}"
    methods = tuple(m for m in suite.methods if m not in skipped)
    if suite.methods and not methods:  # nothing would run: the results table would be empty
        able = [
            n for n, i in plugins.selectors.items() if i.cls.handles(env_task) and i.cls.yardstick is None
        ]
        raise OodfsError(
            f"no method of suite {suite.name!r} handles its {env_task} target ("
            + "; ".join(f"{m} {why}" for m, why in skipped.items())
            + "); "
            + (
                f"methods that can: {', '.join(able)}"
                if able
                else f"no registered selector handles the task type {env_task!r}: a Selector subclass "
                f"(oodfs.plugin) takes it when its task_types include {env_task!r} "
                '(CONTRIBUTING.md, "Writing a plugin")'
            )
        )
    curve = tuple(m for m in suite.curve_methods if m not in skipped)
    return replace(suite, task=env_task, methods=methods, curve_methods=curve), skipped, plugins


def _target_task(suite: "Suite", env_cls) -> "Suite":
    """An environment that reads its task from its target (a table's ``suite_task``; docs/PROTOCOL.md
    section 8, "Task") decides it per setting, as ``oodfs select`` does: a two-level target makes
    the suite binary (environment ``binary_table``, its positive class named) unless the suite says
    ``task = "regression"``. The decision is a note; settings that disagree are one line."""
    decide = getattr(env_cls, "suite_task", None)
    if decide is None:
        return suite
    from oodfs.tables import TableWarning

    check_environment_params(suite, env_cls)  # a parameter it does not take: one line, not a TypeError
    decided = {s.name: decide(dict(s.params), suite.task) for s in suite.settings}
    kinds = {env for env, _, _ in decided.values()}
    if len(kinds) > 1:
        shown = "; ".join(f"{name}: {env}" for name, (env, _, _) in decided.items())
        raise OodfsError(
            f"the settings of suite {suite.name!r} give different tasks ({shown}); one suite has one task: "
            'set task = "regression" or "binary", or split it into two suites'
        )
    for note in dict.fromkeys(note for _, _, note in decided.values() if note):
        warnings.warn(note, TableWarning, stacklevel=3)
    settings = tuple(replace(s, params=decided[s.name][1]) for s in suite.settings)
    return replace(suite, environment=kinds.pop(), settings=settings)


def check_label_methods(suite: "Suite", selectors: dict) -> None:
    """A method that learns from environment labels needs every r_train entry to be a set of at
    least two environments with enough rows each: one line naming the method and the entry.
    ``selectors``: the registered selectors (:attr:`SuitePlugins.selectors`)."""
    for method in suite.methods:
        cls = selectors[method].cls
        if not cls.uses_groups:
            continue
        for r in suite.r_train:
            if len(train_envs(r)) < 2:
                raise OodfsError(
                    f"method {method!r} learns from environment labels, but r_train entry {r!r} is one "
                    "environment; train on several, e.g. r_train = [[1.5, 2.0, 3.0]]"
                )
        need = cls.min_group_rows
        for setting in suite.settings:
            n = setting.n_train or suite.n_train
            if n < need:
                raise OodfsError(
                    f"method {method!r} needs at least {need} training rows per environment; setting "
                    f"{setting.name!r} draws n_train = {n}"
                )


#: how a per-run environment parameter is set: to the run index, or to a seed derived from
#: (suite seed, setting name, run, parameter name)
RUN_PARAM_KINDS = ("run", "seed")


@dataclass(frozen=True)
class Setting:
    """One environment setting of a suite.

    ``params``: environment parameters, the same for every run. ``run_params``: environment
    parameters that change with the run, ``{name: "run" | "seed"}`` -- ``"run"`` sets the
    parameter to the run index (the synthetic ``mlp_seed``: run i uses the paper's i-th MLP),
    ``"seed"`` to ``derive_seed(suite seed, setting name, run, name)`` (the synthetic
    ``layout_seed``: a column order per run that also changes with the suite's seed).
    ``n_train``: this setting's training size, overriding the suite's.
    """

    name: str
    params: dict
    run_params: dict = field(default_factory=dict)
    n_train: int | None = None

    def environment_params(self, run: int, suite_seed: int = 0) -> dict:
        """The environment's constructor parameters for one run (``suite_seed``: the suite's ``seed``)."""
        params = dict(self.params)
        for key, kind in self.run_params.items():
            params[key] = run if kind == "run" else derive_seed(suite_seed, self.name, run, key)
        return params


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    environment: str
    settings: tuple[Setting, ...]
    r_train: tuple
    r_test: tuple
    runs: int
    n_train: int
    n_val: int
    n_test: int
    k: int
    methods: tuple[str, ...]
    selection: str = "val"
    #: the set sizes a method is evaluated at besides ``k`` (docs/PROTOCOL.md section 10, "The k
    #: grid"): positive integers and "all" (every feature); the rule then chooses (grid point, k)
    #: jointly. None: every method is evaluated at ``k`` alone (the synthetic suites)
    k_grid: tuple | None = None
    curve_methods: tuple[str, ...] = ()
    curve_r_train: tuple = ()
    seed: int = 0
    profile: str = "default"
    quick: dict = field(default_factory=dict, compare=False, repr=False)
    #: the models trained on each selected subset (oodfs.run.downstream_models.MODELS), each on
    #: the same fits; the first is the one a leaderboard shows unless told otherwise
    downstream: tuple[str, ...] = (DEFAULT_MODEL,)
    #: reference rows run beside the methods (``all_features``, ``mean``; docs/PROTOCOL.md,
    #: "Real data"); they are also in ``methods``, last
    yardsticks: tuple[str, ...] = ()
    #: the data card (CARD_KEYS), shown by ``oodfs suites``
    card: dict = field(default_factory=dict, compare=False, repr=False)
    #: the metrics its tables and tests show (empty: the headline metrics); not part of its
    #: identity: every metric is stored whatever the suite shows
    metrics: tuple[str, ...] = ()
    #: the unit of replication (UNITS); not part of the identity: it changes how the results are
    #: tested, not what is run. Default: ``resplit`` on a table, ``run`` on a data process
    unit: str = "run"
    #: the task type (oodfs.contract.task_types): the environment's (its class tag ``task``); a suite
    #: file may state it but not contradict it. None until the runner reads the environment's
    task: str | None = None
    #: True for a suite shipped with oodfs, loaded by its name; False for a suite file, even one
    #: named like a shipped suite: what oodfs keeps per shipped suite (its reference, its timings,
    #: its shift diagnosis) is never looked up for it by name
    shipped: bool = field(default=False, compare=False)
    #: how the test environments count in the statistics over them: "equal" or "rows", and the
    #: fewest test rows an environment needs to count (None: every one counts); not part of the
    #: identity: the report computes them from the stored per-environment values (docs/PROTOCOL.md
    #: section 3, "Weighting the test environments")
    env_weighting: str = "equal"
    min_env_rows: int | None = None
    #: a shift of the test rows' features (oodfs.run.feature_shift: "missing:P", "drop-top",
    #: "scale:C") and its handling ("train-mean", "refit"); None: none, the default, and then
    #: neither is part of the suite's dict or identity (docs/PROTOCOL.md, "Feature shift")
    feature_shift: str | None = None
    feature_shift_impute: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("quick")
        d.pop("card")
        if self.feature_shift is None:  # off: the dict (and identity) of every earlier suite
            d.pop("feature_shift")
            d.pop("feature_shift_impute")
        return d

    @property
    def shift(self):
        """The declared :class:`oodfs.run.feature_shift.FeatureShift`, or None."""
        from oodfs.run.feature_shift import parse_feature_shift

        return parse_feature_shift(self.feature_shift, self.feature_shift_impute)

    def data_keys(self):
        """Every data set of the suite, in a fixed order."""
        for setting in self.settings:
            for r in self.r_train:
                for run in range(self.runs):
                    yield DataKey(setting.name, r, run)

    def task_keys(self, methods=None) -> list[TaskKey]:
        """Every task of the suite (of ``methods``, default the suite's), in a fixed order."""
        return [
            key.task(m) for key in self.data_keys() for m in (self.methods if methods is None else methods)
        ]

    def setting(self, name: str) -> Setting:
        return next(s for s in self.settings if s.name == name)


def stored_suite(d: dict) -> Suite:
    """The suite a run stored with its invocation (``Suite.to_dict``), back as a Suite (its data
    card and quick version are not stored). Raises an OodfsError when ``d`` is not one."""
    from dataclasses import fields

    try:
        names = {f.name for f in fields(Suite)}
        values = {k: v for k, v in d.items() if k in names}
        values["settings"] = tuple(Setting(**s) for s in d["settings"])
        for k, v in values.items():
            if isinstance(v, list):  # JSON gave back the tuples as lists
                values[k] = tuple(tuple(e) if isinstance(e, list) else e for e in v)
        return Suite(**values)
    except (KeyError, TypeError) as exc:
        raise OodfsError(f"the stored suite cannot be read back: {exc}") from None


def available_suites() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("oodfs.suites").iterdir() if p.name.endswith(".toml"))


#: the methods of the paper-profile run of ``synthetic`` in the whole benchmark: the paper's ten
#: (benchmarks/reproduction/REPRODUCTION.md; SVI and SVIᵈ are left out)
PAPER_METHODS = ("dwr", "srdo", "mi", "correlation", "gb", "xgb", "rf", "ols", "lasso", "stg")


@dataclass(frozen=True)
class BenchmarkRun:
    """One run of the whole benchmark: a shipped suite, its profile, and the methods it runs
    (None: the suite's own)."""

    suite: str
    profile: str = "default"
    methods: tuple[str, ...] | None = None


def whole_benchmark() -> list[BenchmarkRun]:
    """The whole benchmark (``oodfs bench --suite all``; docs/PROTOCOL.md, "The whole benchmark in
    one command"): every shipped suite under the ``default`` profile, plus ``synthetic`` under
    ``paper`` with the paper's ten methods and ``svi`` under ``paper``. The one list of it:
    benchmarks/whole_benchmark/whole_benchmark.py reads it from here."""
    return [BenchmarkRun(name) for name in available_suites()] + [
        BenchmarkRun("synthetic", "paper", PAPER_METHODS),
        BenchmarkRun("svi", "paper"),
    ]


def load_suite(name_or_path: str, tables_anywhere: bool = False, check_plugins: bool = True) -> Suite:
    """A shipped suite by name (``synthetic``) or a suite TOML file by path. In a suite file,
    a relative ``path`` in a setting's ``params`` (a table's file) is relative to the suite
    file's folder, wherever oodfs is run from, and must lie inside that folder (no ``../``, no
    absolute path or symbolic link leading out) unless ``tables_anywhere`` (``bench
    --tables-anywhere``): a suite file handed around reads no file of its reader's it does not
    name openly. ``check_plugins``: as :func:`validate_suite`'s."""
    path = Path(name_or_path)
    if name_or_path.endswith(".toml"):
        if "\0" in name_or_path:
            raise OodfsError(f"suite file {name_or_path!r}: a path cannot hold a NUL character")
        if not path.is_file():
            raise OodfsError(f"suite file {name_or_path!r} does not exist")
        check_limit("suite_bytes", path.stat().st_size, f"the size of suite file {name_or_path!r} in bytes")
        try:
            text, name = path.read_text(), path.stem
        except (OSError, UnicodeDecodeError) as exc:
            raise OodfsError(f"cannot read suite file {name_or_path!r}: {exc}") from None
    else:
        if name_or_path not in available_suites():
            raise OodfsError(
                f"unknown suite {name_or_path!r}; valid: {', '.join(available_suites())} (or a .toml path)"
            )
        text = resources.files("oodfs.suites").joinpath(f"{name_or_path}.toml").read_text()
        name = name_or_path
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise OodfsError(f"suite {name!r} is not valid TOML: {exc}") from None
    except RecursionError:  # arrays inside arrays hundreds deep: the parser recurses on each
        raise OodfsError(f"suite {name!r} nests arrays or tables too deeply to read") from None
    if name_or_path.endswith(".toml"):
        _resolve_paths(raw, path.parent, name, tables_anywhere)
        return suite_from_dict(name, raw, check_plugins)
    return replace(suite_from_dict(name, raw, check_plugins), shipped=True)


def _resolve_paths(raw: dict, folder: Path, name: str, anywhere: bool) -> None:
    settings = raw.get("settings")
    inside = folder.resolve()
    for sname, setting in settings.items() if isinstance(settings, dict) else ():
        params = setting.get("params") if isinstance(setting, dict) else None
        if not isinstance(params, dict) or not isinstance(params.get("path"), str):
            continue
        where = f"setting {sname!r} of suite {name!r}"
        if "\0" in params["path"]:
            raise OodfsError(f"{where}: path {params['path']!r} holds a NUL character")
        resolved = (folder / params["path"]).resolve()  # an absolute path stays itself; links followed
        if not anywhere and not resolved.is_relative_to(inside):
            raise OodfsError(
                f"{where}: path {params['path']!r} leads outside the suite file's folder ({inside}); "
                "put the table beside the suite file, or pass --tables-anywhere to allow it"
            )
        params["path"] = str(resolved)


def _check_keys(raw, valid, where: str) -> None:
    if not isinstance(raw, dict):
        raise OodfsError(f"{where} must be a table ({', '.join(valid)}), got {raw!r}")
    unknown = [k for k in raw if k not in valid]
    if unknown:
        raise OodfsError(f"{where} has the unknown key {unknown[0]!r}; valid: {', '.join(valid)}")


def check_suite_keys(name: str, raw: dict) -> None:
    """Unknown keys (a typo such as ``n_trian``) are refused, naming the valid ones."""
    _check_keys(raw, SUITE_KEYS, f"suite {name!r}")
    settings = raw.get("settings")
    if not isinstance(settings, dict) or not settings:
        raise OodfsError(
            f"suite {name!r}: settings must be a table of settings ([settings.NAME] with params = {{...}})"
        )
    for sname, setting in settings.items():  # their keys: see _setting
        if isinstance(setting, dict) and not isinstance(setting.get("params", {}), dict):
            raise OodfsError(
                f"setting {sname!r} of suite {name!r}: params must be a table, got {setting['params']!r}"
            )
    _check_keys(raw.get("curve", {}), CURVE_KEYS, f"[curve] of suite {name!r}")
    _check_keys(raw.get("quick", {}), QUICK_KEYS, f"[quick] of suite {name!r}")


def _setting(name: str, raw: dict) -> Setting:
    if not isinstance(raw, dict):
        raise OodfsError(
            f"setting {name!r} must be a table (params = {{...}}, run_params = {{...}}, n_train = ...)"
        )
    unknown = sorted(set(raw) - {"params", "run_params", "run_param", "n_train"})
    if unknown:
        raise OodfsError(
            f"setting {name!r} has the unknown key {unknown[0]!r}; valid: params, run_params, run_param, "
            "n_train"
        )
    run_params = dict(raw.get("run_params", {}))
    if raw.get("run_param"):  # the older spelling: one parameter set to the run index
        run_params.setdefault(raw["run_param"], "run")
    for key, kind in run_params.items():
        if kind not in RUN_PARAM_KINDS:
            raise OodfsError(
                f"setting {name!r}: run_params.{key} must be one of "
                f"{', '.join(map(repr, RUN_PARAM_KINDS))}, got {kind!r}"
            )
    n_train = raw.get("n_train")
    if n_train is not None:
        check_positive_int(n_train, f"n_train of setting {name!r}")
    features = raw.get("params", {}).get("features")
    if isinstance(features, str):  # one column name would silently be the only feature
        raise OodfsError(f"features of setting {name!r} must be a list of column names, e.g. [{features!r}]")
    return Setting(name, dict(raw.get("params", {})), run_params, n_train)


def suite_from_dict(name: str, raw: dict, check_plugins: bool = True) -> Suite:
    check_nesting(raw, f"suite {name!r}")
    check_suite_keys(name, raw)
    for key in ("r_train", "r_test", "methods"):  # a list: "ols" is not ["o", "l", "s"]
        if key in raw:
            _check_list(raw[key], key)
    if "methods" in raw and not raw["methods"]:
        raise OodfsError("methods is empty: give at least one selector")
    try:
        settings = tuple(_setting(sname, s) for sname, s in raw["settings"].items())
        curve = raw.get("curve", {})
        suite = Suite(
            name=name,
            description=raw.get("description", ""),
            environment=raw["environment"],
            settings=settings,
            r_train=_normalise_r_train(raw["r_train"]),
            r_test=tuple(raw["r_test"]),
            runs=raw.get("runs", 1),
            n_train=raw["n_train"],
            n_val=raw.get("n_val", 0),
            n_test=raw["n_test"],
            k=raw.get("k", 5),
            k_grid=_check_k_grid(raw["k_grid"], raw.get("k", 5)) if "k_grid" in raw else None,
            methods=tuple(raw["methods"]),
            # without validation data the `val` rule cannot choose: the default point instead
            selection=raw.get("selection", "val" if raw.get("n_val", 0) else "default"),
            curve_methods=tuple(_check_list(curve.get("methods", ()), "curve.methods")),
            curve_r_train=_normalise_r_train(_check_list(curve.get("r_train", ()), "curve.r_train")),
            seed=raw.get("seed", 0),
            profile=raw.get("profile", "default"),
            quick=dict(raw.get("quick", {})),
            downstream=_models(raw.get("downstream", DEFAULT_MODEL)),
            yardsticks=tuple(_check_list(raw.get("yardsticks", ()), "yardsticks")),
            card=_card(name, raw.get("card", {})),
            metrics=tuple(_check_list(raw.get("metrics", ()), "metrics")),
            unit=raw.get("unit", default_unit(raw["environment"])),
            task=raw.get("task"),
            env_weighting=raw.get("env_weighting", "equal"),
            min_env_rows=raw.get("min_env_rows"),
            feature_shift=raw.get("feature_shift"),
            feature_shift_impute=raw.get("feature_shift_impute"),
        )
        suite = replace(suite, methods=with_yardsticks(suite.methods, suite.yardsticks))
        suite = with_feature_shift(suite, suite.feature_shift, suite.feature_shift_impute)
    except KeyError as exc:
        key = exc.args[0]
        why = (
            ': name the selectors to run, e.g. methods = ["lasso", "dwr"] (oodfs plugins lists them)'
            if key == "methods"
            else f" (a suite file needs {', '.join(REQUIRED_KEYS)})"
        )
        raise OodfsError(f"suite {name!r} lacks the key {key!r}{why}; there is no default") from None
    validate_suite(suite, check_plugins)
    _check_curve(suite)
    return suite


def with_feature_shift(suite: Suite, spec, impute=None) -> Suite:
    """The suite with the feature shift ``spec`` (None: none) and its handling stated (None: the
    default, train-mean), so that the identity names the handling (docs/PROTOCOL.md, "Feature
    shift"); one line naming the valid choices for a bad one."""
    from oodfs.run.feature_shift import parse_feature_shift

    shift = parse_feature_shift(spec, impute)
    if shift is None:
        return replace(suite, feature_shift=None, feature_shift_impute=None)
    return replace(suite, feature_shift=shift.spec, feature_shift_impute=shift.impute)


def _models(value) -> tuple[str, ...]:
    """``"ridge"`` or ``["ridge", "mlp"]`` -> a tuple of model names (checked in validate_suite)."""
    return (value,) if isinstance(value, str) else tuple(_check_list(value, "downstream"))


def with_yardsticks(methods, yardsticks) -> tuple[str, ...]:
    """The methods, then every yardstick not among them: a yardstick row is in every table."""
    methods = tuple(methods)
    return methods + tuple(y for y in yardsticks if y not in methods)


def _card(name: str, raw) -> dict:
    _check_keys(raw, CARD_KEYS, f"[card] of suite {name!r}")
    for key, value in raw.items():
        if not isinstance(value, str):
            raise OodfsError(f"card.{key} of suite {name!r} must be text, got {value!r}")
    return dict(raw)


def _check_curve(suite: Suite) -> None:
    """A suite file's [curve] names methods it runs and r_train values it has (a command line that
    narrows --methods or --r-train may leave them out)."""
    for m in suite.curve_methods:
        if m not in suite.methods:
            raise OodfsError(
                f"[curve] methods names {m!r}, which suite {suite.name!r} does not run; its methods: "
                f"{', '.join(suite.methods)}"
            )
    known = {repr(float(r)) if isinstance(r, (int, float)) else r for r in suite.r_train}
    for r in suite.curve_r_train:
        if (repr(float(r)) if isinstance(r, (int, float)) and not isinstance(r, bool) else r) not in known:
            raise OodfsError(
                f"[curve] r_train names {r!r}, which suite {suite.name!r} does not have; its r_train: "
                f"{', '.join(map(str, suite.r_train))}"
            )


def _check_list(value, what: str):
    if not isinstance(value, (list, tuple)):
        raise OodfsError(f"{what} must be a list, e.g. [...], got {value!r}")
    return value


def _check_text(value, what: str) -> None:
    if not isinstance(value, str) or not value:
        raise OodfsError(f"{what} must be a non-empty string, got {value!r}")


def _check_ids(values, what: str, sets: bool = False) -> None:
    """Environment ids (numbers or names); with ``sets``, an entry may also be a set of at least
    two distinct ids trained on together (r_train = [[1.5, 2.0, 3.0]])."""
    _check_list(values, what)
    if not values:
        raise OodfsError(f"{what} is empty: give at least one environment")
    for v in values:
        if sets and isinstance(v, (list, tuple)):
            _check_ids(v, f"the environment set {list(v)!r} in {what}")
            if len(set(v)) < 2 or len(set(v)) != len(v):
                raise OodfsError(
                    f"the environment set {list(v)!r} in {what} must hold at least two distinct environments"
                )
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise OodfsError(
                f"{what} must hold numbers or names{' or sets of them' if sets else ''}, got {v!r}"
            )


def validate_suite(suite: Suite, check_plugins: bool = True) -> None:
    """Every field of a suite has the right type and a sensible size: one line naming the key.
    ``check_plugins``: also check the names of plugins it gives (rule, task type, downstream
    models, metrics) against the registry; False leaves them to :func:`resolve_suite`, which
    checks them against the plugins it reads (:func:`check_plugin_names`)."""
    from oodfs.contract.registry import get_rule

    _check_text(suite.environment, "environment")
    if not isinstance(suite.description, str):
        raise OodfsError(f"description must be a string, got {suite.description!r}")
    check_positive_int(suite.runs, "runs")
    check_positive_int(suite.n_train, "n_train")
    check_positive_int(suite.n_test, "n_test")
    check_positive_int(suite.k, "k")
    if isinstance(suite.n_val, bool) or not isinstance(suite.n_val, int) or suite.n_val < 0:
        raise OodfsError(f"n_val must be an integer >= 0, got {suite.n_val!r}")
    if isinstance(suite.seed, bool) or not isinstance(suite.seed, int) or not 0 <= suite.seed < 2**32:
        raise OodfsError(f"seed must be an integer from 0 to 2**32-1, got {suite.seed!r}")
    for what, rows in (("n_train + n_val", suite.n_train + suite.n_val), ("n_test", suite.n_test)):
        if rows > MAX_ROWS:
            raise OodfsError(f"{what} = {rows} is more than {MAX_ROWS} rows per draw; is it a typo?")
    if not suite.settings:
        raise OodfsError(f"suite {suite.name!r} has no settings")
    _check_sizes(suite)
    _check_ids(suite.r_train, "r_train", sets=True)
    _check_ids(suite.r_test, "r_test")
    _check_list(suite.methods, "methods")  # may be empty: every method then comes from reference results
    for m in (*suite.methods, *suite.curve_methods):
        _check_text(m, "a method name")
    _check_text(suite.selection, "selection")
    if check_plugins:
        _check_rule(suite, get_rule(suite.selection))
    check_profile(suite.profile)
    if suite.task is not None:
        from oodfs.contract.registry import get_task

        _check_text(suite.task, "task")
        if check_plugins:
            get_task(suite.task)
    from oodfs.run.downstream_models import check_model

    if not suite.downstream or len(set(suite.downstream)) != len(suite.downstream):
        raise OodfsError(f"downstream must name one or more different models, got {list(suite.downstream)}")
    if check_plugins:
        for model in suite.downstream:
            check_model(model, suite.task)  # None: the environment's task, checked by resolve_suite
    for m in suite.yardsticks:
        _check_text(m, "a yardstick name")
    if check_plugins:
        _check_metrics(suite.metrics)
    check_env_weighting(suite.env_weighting)
    check_min_env_rows(suite.min_env_rows)
    suite.shift  # noqa: B018 -- checked: one line naming the valid shifts or handlings
    if suite.unit not in UNITS:
        raise OodfsError(f"unit must be one of {', '.join(UNITS)}, got {suite.unit!r}")
    if suite.unit == "environment" and len(suite.r_train) < 2:
        raise OodfsError(
            "unit = 'environment' needs several r_train entries (each one unit); this suite has "
            f"{len(suite.r_train)}"
        )
    if suite.unit == "environment":
        _check_disjoint(suite.r_train, suite.r_test)
    named = (
        ("settings", [s.name for s in suite.settings]),
        ("methods", suite.methods),
        ("r_train", suite.r_train),
        ("r_test", suite.r_test),
    )
    for what, values in named:
        seen = set()
        for v in values:
            key = repr(float(v)) if isinstance(v, (int, float)) else v
            if key in seen and isinstance(v, tuple):
                raise OodfsError(
                    f"{what} names the environment set {list(v)!r} twice "
                    "(the same set in any order is one set)"
                )
            if key in seen:
                raise OodfsError(f"{what} names {v!r} twice")
            seen.add(key)
    # environment ids (e.g. |r| > 1 for bias rates) are checked by the environment plugin


def _env_key(v) -> str:
    """One spelling of an environment id: 3 and 3.0 are one environment."""
    return repr(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def _check_disjoint(r_train, r_test) -> None:
    """With ``unit = "environment"`` every r_train entry is one independent unit (docs/PROTOCOL.md
    section 10): no environment (so, on a table, no row) may be in two entries, nor in r_test."""
    owner = {}
    for entry in r_train:
        for e in train_envs(entry):
            first = owner.setdefault(_env_key(e), entry)
            if first != entry:
                raise OodfsError(
                    f"r_train entries must be disjoint with unit = 'environment' (each entry is one "
                    f"independent unit): environment {e!r} is in {_shown(first)} and {_shown(entry)}"
                )
    for e in r_test:
        if _env_key(e) in owner:
            raise OodfsError(
                f"r_test names {e!r}, which r_train entry {_shown(owner[_env_key(e)])} trains on; with "
                "unit = 'environment' test environments must be disjoint from every training entry"
            )


def _shown(entry) -> str:
    return repr(list(entry)) if isinstance(entry, tuple) else repr(entry)


def _check_sizes(suite: Suite) -> None:
    """The sizes of a suite within the limits (oodfs.validation.LIMITS), before any work: the
    counts first, then the grid they make, with an estimate of its time."""
    check_limit("settings", len(suite.settings), f"the number of settings of suite {suite.name!r}")
    for key in ("r_train", "r_test"):
        check_limit(key, len(_check_list(getattr(suite, key), key)), f"the number of {key} values")
    for r in suite.r_train:
        if isinstance(r, (list, tuple)):
            check_limit("set_members", len(r), f"the number of environments in the r_train set {r[:3]!r}...")
    check_limit("runs", suite.runs, "runs")
    tasks = len(suite.settings) * len(suite.r_train) * suite.runs * max(len(suite.methods), 1)
    hours = tasks * SECONDS_PER_TASK / 3600
    estimate = f" (about {hours:,.0f} worker hours at the synthetic grid's {SECONDS_PER_TASK} s a task)"
    check_limit("tasks", tasks, "the number of tasks (settings x r_train x runs x methods)", estimate)
    check_limit(
        "evaluations",
        tasks * len(suite.r_test),
        "the number of test evaluations (tasks x r_test values)",
        estimate,
    )


def _check_rule(suite: Suite, rule) -> None:
    """What the suite's selection rule needs of it (validation data, several training environments)."""
    from oodfs.contract.selection import ENV_QUANTITIES, VALIDATION_QUANTITIES

    if rule.quantity in VALIDATION_QUANTITIES and not suite.n_val:
        raise OodfsError(
            f"selection {suite.selection!r} needs validation data: set n_val > 0, or choose selection "
            "'default' or 'oracle'"
        )
    if rule.quantity in ENV_QUANTITIES and not all(len(train_envs(r)) > 1 for r in suite.r_train):
        raise OodfsError(
            f"selection {suite.selection!r} needs several training environments in every r_train entry, "
            "e.g. r_train = [[1.5, 2.0, 3.0]]"
        )


def check_plugin_names(suite: Suite, plugins: SuitePlugins) -> None:
    """The checks of :func:`validate_suite` that read plugins, against the suite's ``plugins``
    already read (:meth:`oodfs.contract.registry.Registry.suite_plugins` has checked that the
    rule and a task type the suite names exist): what its rule needs, its downstream models, its
    metrics."""
    from oodfs.run.downstream_models import check_model

    _check_rule(suite, plugins.rule)
    for model in suite.downstream:
        check_model(model, suite.task, plugins.downstream)
    _check_metrics(suite.metrics, plugins.metrics)


def _check_metrics(names, declared: dict | None = None) -> None:
    """A suite's table metrics: declared, one value per task (not per environment), with a
    direction. ``declared``: ``{name: declaration}`` already read (:attr:`SuitePlugins.metrics`;
    None: the registry's)."""
    if declared is None:
        from oodfs.contract.registry import registry

        declared = {name: info.cls for name, info in registry().entries("metric").items()}
    usable = [n for n, m in declared.items() if m.comparable]
    for name in names:
        _check_text(name, "a metric name")
        if name not in usable:
            raise OodfsError(
                f"metrics names {name!r}, which is no metric a table can show; valid: {', '.join(usable)}"
            )
    if len(set(names)) < len(names):
        raise OodfsError(f"metrics names a metric twice: {', '.join(names)}")


def check_training_rows(suite: Suite, setting: Setting, env) -> None:
    """A finite table (an environment with ``labels``) must hold n_train + n_val rows in each
    training environment: a run would otherwise train on fewer rows than the suite says. Test
    environments may hold fewer than n_test (then every row is used, as the shipped suites say)."""
    if env.labels is None:  # drawn, not read: any size
        return
    wanted = (setting.n_train or suite.n_train) + suite.n_val  # per environment of a set too
    for r in dict.fromkeys(e for r_train in suite.r_train for e in train_envs(r_train)):
        have = len(env.sample(r, wanted, 0)[1])
        if have < wanted:
            raise OodfsError(
                f"n_train + n_val = {wanted} is more than the {have} rows of training environment {r!r} "
                f"(setting {setting.name!r}); lower n_train or n_val"
            )
        if suite.task == "binary":  # every task would fail: a classifier is not trained on one class
            import numpy as np

            y = np.asarray(env.sample(r, sys.maxsize, 0)[1], dtype=float)  # (every row of the environment)
            classes = np.unique(y[~np.isnan(y)])
            if classes.size < 2:
                raise OodfsError(
                    f"training environment {r!r} (setting {setting.name!r}) holds one class of the binary "
                    f"target only ({', '.join(f'{c:g}' for c in classes) or 'no rows'}); a classifier "
                    "needs both: train on other environments"
                )


def check_suite_plugins(suite: Suite, plugins: SuitePlugins | None = None) -> None:
    """Fail early, with the list of valid names, on unknown methods/environments/settings, and
    make the suite's other checks against its plugins (its settings' parameters, its training
    rows, the methods that learn from environment labels): a run asks for them in one call.
    ``plugins``: the suite's plugins already read (:func:`resolve_suite`, which checked its
    environment and methods exist); None reads them from the registry."""
    if plugins is None:
        from oodfs.contract.registry import registry

        plugins = registry().suite_plugins(suite.environment, suite.selection, suite.methods, task=suite.task)
    env_cls = plugins.environment.cls
    valid_settings = env_cls.settings
    check_environment_params(suite, env_cls)
    for s in suite.settings:
        name = s.params.get("setting")
        if valid_settings and name is not None and name not in valid_settings:
            raise OodfsError(
                f"unknown setting {name!r} for environment {suite.environment!r}; "
                f"valid: {', '.join(valid_settings)}"
            )
        # (what loading a table notes, run_suites holds until every suite is let through)
        env = env_cls(**s.environment_params(0, suite.seed))
        for e in [x for r in suite.r_train for x in train_envs(r)] + list(suite.r_test):
            env.check_env(e)
        check_training_rows(suite, s, env)
        try:
            d = len(env.feature_names)
        except (AttributeError, TypeError, NotImplementedError):  # an environment that names no columns
            continue
        if suite.k > d:
            raise OodfsError(f"k = {suite.k} is more than the {d} features of setting {s.name!r}")
        too_big = [e for e in suite.k_grid or () if isinstance(e, int) and e > d]
        if too_big:
            raise OodfsError(
                f'k_grid entry {too_big[0]} is more than the {d} features of setting {s.name!r}; use "all"'
            )
    check_label_methods(suite, plugins.selectors)


#: the k grid entry that makes each method's own support a candidate (docs/PROTOCOL.md section 10)
SUPPORT = "support"


def _check_k_grid(grid, k) -> tuple:
    """A suite's ``k_grid``: a list of distinct positive integers, "all" and "support" that holds ``k``."""
    if not isinstance(grid, list) or not grid:
        raise OodfsError(
            f'k_grid must be a non-empty list of positive integers, "all" and "{SUPPORT}", got {grid!r}'
        )
    for entry in grid:
        size = isinstance(entry, int) and not isinstance(entry, bool) and entry > 0
        if entry not in ("all", SUPPORT) and not size:
            raise OodfsError(
                f'k_grid entries must be positive integers, "all" (every feature) or "{SUPPORT}" (each '
                f"method's own selected set), got {entry!r}"
            )
    if len(set(grid)) < len(grid):
        raise OodfsError(f"k_grid names a size twice: {grid!r}")
    if k not in grid:
        raise OodfsError(
            f"k_grid {grid!r} must hold the suite's k ({k!r}): the `default` rule and the fixed-k "
            "verdicts read that size"
        )
    return tuple(grid)


def grid_ks(suite: Suite, n_features: int) -> list[int]:
    """The set sizes every method's grid points are evaluated at: the suite's k first, then the
    rest of its ``k_grid`` in increasing order ("all": ``n_features``; sizes above it are cut
    to it, duplicates dropped; "support" is no size: :func:`wants_support`). Point ``j * (grid
    points) + i`` of a method is grid point ``i`` at the ``j``-th size (docs/PROTOCOL.md section 10,
    "The k grid")."""
    fixed = min(suite.k, n_features)
    grid = [e for e in suite.k_grid or () if e != SUPPORT]
    sizes = {n_features if e == "all" else min(int(e), n_features) for e in grid}
    return [fixed] + sorted(sizes - {fixed})


def wants_support(suite: Suite) -> bool:
    """Whether the suite's k grid makes each method's own support one more candidate (entry "support")."""
    return SUPPORT in (suite.k_grid or ())


def customise(
    suite: Suite,
    *,
    quick: bool = False,
    methods=None,
    settings=None,
    r_train=None,
    runs=None,
    seed=None,
    selection=None,
    profile=None,
    downstream=None,
    env_weighting=None,
    min_env_rows=None,
    feature_shift=None,
    feature_shift_impute=None,
    check_plugins: bool = True,
) -> Suite:
    """Apply ``--quick`` and command-line overrides to a suite (each checked; ``check_plugins``:
    as :func:`validate_suite`'s)."""
    if quick:
        overrides = dict(suite.quick)
        for key in ("r_train", "r_test", "methods"):
            if key in overrides:
                overrides[key] = (
                    _normalise_r_train(overrides[key]) if key == "r_train" else tuple(overrides[key])
                )
        suite = replace(suite, **overrides)
        suite = replace(suite, methods=with_yardsticks(suite.methods, suite.yardsticks))
    if settings is not None:
        known = {s.name: s for s in suite.settings}
        unknown = [s for s in settings if s not in known]
        if unknown:
            raise OodfsError(
                f"unknown setting {unknown[0]!r} for suite {suite.name!r}; valid: {', '.join(known)}"
            )
        suite = replace(suite, settings=tuple(known[s] for s in settings))
    if methods is not None:
        suite = replace(suite, methods=with_yardsticks(methods, suite.yardsticks))
    if r_train is not None:
        suite = replace(suite, r_train=_normalise_r_train(r_train))
    if runs is not None:
        suite = replace(suite, runs=runs)
    if seed is not None:
        suite = replace(suite, seed=seed)
    if selection is not None:
        suite = replace(suite, selection=selection)
    if profile is not None:
        suite = replace(suite, profile=profile)
    if downstream is not None:
        suite = replace(suite, downstream=_models(downstream))
    if env_weighting is not None:
        suite = replace(suite, env_weighting=check_env_weighting(env_weighting, "--env-weighting"))
    if min_env_rows is not None:
        suite = replace(suite, min_env_rows=check_min_env_rows(min_env_rows, "--min-env-rows"))
    if feature_shift is not None or feature_shift_impute is not None:
        suite = with_feature_shift(
            suite,
            feature_shift if feature_shift is not None else suite.feature_shift,
            feature_shift_impute if feature_shift_impute is not None else None,
        )
    validate_suite(suite, check_plugins)
    return suite
