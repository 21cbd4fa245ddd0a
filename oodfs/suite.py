"""Suites: environment settings x r_train x runs x methods x grid points, read from TOML."""
from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path

from .seeds import derive_seed
from .validation import OodfsError, check_positive_int

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


#: the profiles a suite can run with (docs/PROTOCOL.md, "Profiles")
PROFILES = {
    "default": "oodfs's documented defaults for every setting outside the grids",
    "paper": "the paper's literal settings where it states them (Adam lr 0.001 for DWR, SRDO and the downstream "
             "MLP), documented choices where it is silent",
}


def check_profile(name: str) -> str:
    if name not in PROFILES:
        raise OodfsError(f"unknown profile {name!r}; valid: {', '.join(PROFILES)}")
    return name


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
    curve_methods: tuple[str, ...] = ()
    curve_r_train: tuple = ()
    seed: int = 0
    profile: str = "default"
    quick: dict = field(default_factory=dict, compare=False, repr=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("quick")
        return d

    def task_keys(self):
        """Every (setting, r_train, run) data set of the suite, in a fixed order."""
        for setting in self.settings:
            for r in self.r_train:
                for run in range(self.runs):
                    yield setting, r, run


def available_suites() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("oodfs.suites").iterdir() if p.name.endswith(".toml"))


def load_suite(name_or_path: str) -> Suite:
    """A shipped suite by name (``synthetic``) or a suite TOML file by path."""
    path = Path(name_or_path)
    if name_or_path.endswith(".toml"):
        if not path.is_file():
            raise OodfsError(f"suite file {name_or_path!r} does not exist")
        text, name = path.read_text(), path.stem
    else:
        if name_or_path not in available_suites():
            raise OodfsError(f"unknown suite {name_or_path!r}; valid: {', '.join(available_suites())} (or a .toml path)")
        text = resources.files("oodfs.suites").joinpath(f"{name_or_path}.toml").read_text()
        name = name_or_path
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise OodfsError(f"suite {name!r} is not valid TOML: {exc}") from None
    return suite_from_dict(name, raw)


def _setting(name: str, raw: dict) -> Setting:
    if not isinstance(raw, dict):
        raise OodfsError(f"setting {name!r} must be a table (params = {{...}}, run_params = {{...}}, n_train = ...)")
    unknown = sorted(set(raw) - {"params", "run_params", "run_param", "n_train"})
    if unknown:
        raise OodfsError(f"setting {name!r} has the unknown key {unknown[0]!r}; valid: params, run_params, run_param, n_train")
    run_params = dict(raw.get("run_params", {}))
    if raw.get("run_param"):  # the older spelling: one parameter set to the run index
        run_params.setdefault(raw["run_param"], "run")
    for key, kind in run_params.items():
        if kind not in RUN_PARAM_KINDS:
            raise OodfsError(f"setting {name!r}: run_params.{key} must be one of {', '.join(map(repr, RUN_PARAM_KINDS))}, got {kind!r}")
    n_train = raw.get("n_train")
    if n_train is not None:
        check_positive_int(n_train, f"n_train of setting {name!r}")
    return Setting(name, dict(raw.get("params", {})), run_params, n_train)


def suite_from_dict(name: str, raw: dict) -> Suite:
    try:
        settings = tuple(_setting(sname, s) for sname, s in raw["settings"].items())
        curve = raw.get("curve", {})
        suite = Suite(
            name=name,
            description=raw.get("description", ""),
            environment=raw["environment"],
            settings=settings,
            r_train=tuple(raw["r_train"]),
            r_test=tuple(raw["r_test"]),
            runs=raw.get("runs", 1),
            n_train=raw["n_train"],
            n_val=raw.get("n_val", 0),
            n_test=raw["n_test"],
            k=raw.get("k", 5),
            methods=tuple(raw["methods"]),
            selection=raw.get("selection", "val"),
            curve_methods=tuple(curve.get("methods", ())),
            curve_r_train=tuple(curve.get("r_train", ())),
            seed=raw.get("seed", 0),
            profile=raw.get("profile", "default"),
            quick=dict(raw.get("quick", {})),
        )
    except KeyError as exc:
        raise OodfsError(f"suite {name!r} lacks the key {exc.args[0]!r}") from None
    validate_suite(suite)
    return suite


def validate_suite(suite: Suite) -> None:
    check_positive_int(suite.runs, "runs")
    check_positive_int(suite.n_train, "n_train")
    check_positive_int(suite.n_test, "n_test")
    check_positive_int(suite.k, "k")
    if suite.n_val < 0:
        raise OodfsError(f"n_val must be >= 0, got {suite.n_val}")
    if not suite.settings:
        raise OodfsError(f"suite {suite.name!r} has no settings")
    if not suite.r_train:
        raise OodfsError("no r_train values")
    check_profile(suite.profile)
    # environment ids (e.g. |r| > 1 for bias rates) are checked by the environment plugin


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
) -> Suite:
    """Apply ``--quick`` and command-line overrides to a suite (each checked)."""
    if quick:
        overrides = dict(suite.quick)
        for key in ("r_train", "r_test", "methods"):
            if key in overrides:
                overrides[key] = tuple(overrides[key])
        suite = replace(suite, **overrides)
    if settings is not None:
        known = {s.name: s for s in suite.settings}
        unknown = [s for s in settings if s not in known]
        if unknown:
            raise OodfsError(f"unknown setting {unknown[0]!r} for suite {suite.name!r}; valid: {', '.join(known)}")
        suite = replace(suite, settings=tuple(known[s] for s in settings))
    if methods is not None:
        suite = replace(suite, methods=tuple(methods))
    if r_train is not None:
        suite = replace(suite, r_train=tuple(r_train))
    if runs is not None:
        suite = replace(suite, runs=runs)
    if seed is not None:
        suite = replace(suite, seed=seed)
    if selection is not None:
        suite = replace(suite, selection=selection)
    if profile is not None:
        suite = replace(suite, profile=profile)
    validate_suite(suite)
    return suite
