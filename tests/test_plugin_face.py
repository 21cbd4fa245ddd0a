"""One public face for plugin authors (CONTRIBUTING.md, "Writing a plugin"): ``oodfs.plugin`` exports
the base class of every kind of the one table of kinds, a third-party package that imports from it
alone adds one of each kind and passes its kit checks, and the kit's checks of a metric, a task
type and a downstream model say what is missing."""

import ast
import sys
import types

import numpy as np
import pytest

import oodfs.plugin
from oodfs import testing as kit
from oodfs.contract import hookspecs
from oodfs.contract.registry import KINDS, Registry, registry
from oodfs.report.leaderboard import Leaderboard
from oodfs.report.report import Report

from .conftest import assert_one_line, make_distribution, run_cli

#: a third party's package: one plugin of each kind, for a task type of its own (a count target)
PACKAGE = '''"""A third party's plugin: one of each kind, imported from oodfs.plugin alone."""

import numpy as np

from oodfs.plugin import (
    Backend,
    BackendOption,
    Command,
    DownstreamModel,
    Environment,
    LeaderboardFormat,
    Metric,
    OodfsError,
    SelectionRule,
    Selector,
    TaskType,
    Weighter,
    hookimpl,
    task_metrics,
)


# -- the task type: a count target, scored by the mean absolute error --------------------------
def _check(y, who):
    try:
        values = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise OodfsError(f"{who} is not numeric: a count target needs counts") from None
    if (values < 0).any() or not np.all(values == np.round(values)):
        raise OodfsError(f"{who} is not a count (a whole number >= 0 in every row)")
    return values, None


def _scores(y, P):
    return {"mae": np.mean(np.abs(P - y[None, :]), axis=1)}


COUNT = TaskType(
    name="count",
    description="a count target; downstream mean absolute error in every test environment",
    scores=("mae",),
    titles={"mae": "MAE"},
    lower_is_better={"mae": True},
    headline=("rank_avg", "f1", "mae_mean"),
    check=_check,
    scorer=_scores,
)


# -- the environment: Poisson counts whose features shift ---------------------------------------
class Counts(Environment):
    """Poisson counts of two stable features; the spread of every feature shifts."""

    name = "counts"
    task = "count"
    settings = ("plain",)
    example_envs = (1.0, 2.0)
    invalid_envs = (0.0, -1.0)

    def __init__(self, setting="plain"):
        self.setting = setting

    @property
    def feature_names(self):
        return [f"x{j}" for j in range(6)]

    @property
    def stable_set(self):
        return (0, 1)

    def check_env(self, env):
        if not isinstance(env, (int, float)) or isinstance(env, bool) or env <= 0:
            raise OodfsError(f"environment {env!r}: the spread of the features, a number > 0")
        return env

    def sample(self, env, n, seed):
        self.check_env(env)
        if self.setting not in self.settings:
            raise OodfsError(f"unknown setting {self.setting!r}; valid: {', '.join(self.settings)}")
        if n < 1:
            raise OodfsError(f"n = {n}: draw at least one row")
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, 6)) * float(env)
        y = rng.poisson(np.exp(np.clip(0.4 * X[:, 0] - 0.3 * X[:, 1], -5, 3))).astype(float)
        return X, y


# -- a selector that takes the count target ---------------------------------------------------------
class CountCorrelation(Selector):
    """|correlation| of each feature with log(1 + y) (a count-aware filter)."""

    name = "countcorr"
    task_types = ("regression", "count")
    supports_sample_weight = False
    grid = {"shift": [1.0, 2.0]}

    def __init__(self, shift=1.0, k=5, random_state=None):
        self.shift = shift
        self.k = k
        self.random_state = random_state

    def _fit_scores(self, X, y, sample_weight):
        t = np.log(np.clip(y - y.min(), 0, None) + self.shift)
        Xc, tc = X - X.mean(axis=0), t - t.mean()
        sd = np.sqrt((Xc**2).mean(axis=0) * (tc**2).mean())
        return np.abs((Xc * tc[:, None]).mean(axis=0)) / np.where(sd > 0, sd, 1.0)


# -- a weighter: down-weights the rows that make the most correlated pair correlated --------------
class PairWeighter(Weighter):
    """Weights exp(-s r z_i z_j) for the most correlated pair (i, j), r its correlation."""

    name = "pairweights"
    grid = {"strength": [0.5, 1.0]}

    def __init__(self, strength=0.5, random_state=None):
        self.strength = strength
        self.random_state = random_state

    def _fit_weights(self, X):
        Z = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
        C = np.corrcoef(Z.T) if X.shape[1] > 1 else np.zeros((1, 1))
        np.fill_diagonal(C, 0.0)
        i, j = np.unravel_index(np.argmax(np.abs(C)), C.shape)
        w = np.exp(-self.strength * np.clip(C[i, j] * Z[:, i] * Z[:, j], -3, 3))
        return w / w.mean()


# -- a downstream model that predicts counts: least squares on the subset, clipped at 0 -----------
class ClippedLeastSquares(DownstreamModel):
    """Least squares on the subset's columns, predictions clipped at 0 (a count model)."""

    name = "clipped_ls"
    task_types = ("count",)

    def predict_subsets(self, X, y, subsets, seed, targets):
        out = [np.empty((len(subsets), T.shape[0])) for T in targets]
        for i, s in enumerate(subsets):
            A = np.column_stack([np.ones(len(y)), X[:, list(s)]])
            beta = np.linalg.lstsq(A, y, rcond=None)[0]
            for t, T in enumerate(targets):
                out[t][i] = np.clip(beta[0] + T[:, list(s)] @ beta[1:], 0.0, None)
        return out


# -- a metric of its own: the share of the stable set among the top k features ---------------------
def _stable_share(e):
    if e.stable_set is None:
        return None
    return len(set(e.ranking[: e.k].tolist()) & set(e.stable_set)) / e.k


STABLE_SHARE = Metric(
    "stable_share",
    "stable share",
    False,
    _stable_share,
    needs_stable_set=True,
    role="detail",
    description="share of the top-k features that are stable",
    task_types=None,
    bounds=(0.0, 1.0),
)


# -- a selection rule, a backend, a leaderboard format and a command -------------------------------
LOWEST_MEAN = SelectionRule(
    "lowest-mean", "the lowest mean test loss (an upper bound)", "mean", upper_bound=True
)


class InOrder(Backend):
    """every job in this process, in order (or last one first)"""

    name = "inorder"
    options = (BackendOption("reverse", "run the calls last first (yes or no)", lambda t: t == "yes"),)

    def run(self, fn, calls, *, jobs=1, reverse=False):
        for args in reversed(calls) if reverse else calls:
            yield fn(*args)


def _plain(text):
    return "".join(ch for ch in str(text) if ch.isprintable())


def _render(board):
    cells = board.cells
    rows = ["\\t".join(_plain(c) for c in cells.columns)]
    rows += ["\\t".join(_plain(v) for v in row) for row in cells.itertuples(index=False)]
    return "\\n".join(rows) + "\\n"


PLAIN = LeaderboardFormat("plain", "cells as plain text, tab-separated", "text", _render, ".txt")


def _hello_parser(sub):
    p = sub.add_parser("count-hello", help="say hello from the count plugin")
    p.add_argument("--who", default="world")


def _hello(args):
    print(f"hello {args.who}")
    return 0


HELLO = Command("count-hello", "say hello from the count plugin", _hello_parser, _hello)


@hookimpl
def oodfs_task_types():
    return [COUNT]


@hookimpl
def oodfs_environments():
    return [Counts]


@hookimpl
def oodfs_selectors():
    return [CountCorrelation]


@hookimpl
def oodfs_weighters():
    return [PairWeighter]


@hookimpl
def oodfs_downstream_models():
    return [ClippedLeastSquares]


@hookimpl
def oodfs_metrics():
    return [*task_metrics(COUNT), STABLE_SHARE]


@hookimpl
def oodfs_selection_rules():
    return [LOWEST_MEAN]


@hookimpl
def oodfs_backends():
    return [InOrder]


@hookimpl
def oodfs_leaderboard_formats():
    return [PLAIN]


@hookimpl
def oodfs_commands():
    return [HELLO]
'''

SUITE = """
environment = "counts"
r_train = [1.0]
r_test = [2.0, 3.0]
runs = 2
n_train = 200
n_val = 100
n_test = 200
k = 2
methods = {methods}
{downstream}
[settings.plain]
params = {{ setting = "plain" }}
"""


@pytest.fixture
def counts(tmp_path, monkeypatch):
    """The package above, installed (an entry point of a distribution on sys.path)."""
    site = make_distribution(
        tmp_path / "site", "oodfs-counts", {"counts": "oodfs_counts"}, {"oodfs_counts": PACKAGE}
    )
    monkeypatch.syspath_prepend(str(site))
    sys.modules.pop("oodfs_counts", None)
    import oodfs_counts

    yield oodfs_counts
    sys.modules.pop("oodfs_counts", None)


def module(name: str, source: str) -> types.ModuleType:
    """A plugin module made from ``source`` (after the package's own definitions)."""
    mod = types.ModuleType(name)
    exec(compile(PACKAGE.split("@hookimpl")[0] + source, name, "exec"), mod.__dict__)
    return mod


def only(*hooks: str) -> str:
    """The package's hooks named in ``hooks``, as source."""
    bodies = {
        "oodfs_task_types": "[COUNT]",
        "oodfs_environments": "[Counts]",
        "oodfs_selectors": "[CountCorrelation]",
        "oodfs_downstream_models": "[ClippedLeastSquares]",
        "oodfs_metrics": "[*task_metrics(COUNT), STABLE_SHARE]",
    }
    return "".join(f"\n@hookimpl\ndef {h}():\n    return {bodies[h]}\n" for h in hooks)


def without(*left_out: str) -> Registry:
    """The built-in contract (no installed plugin) and the package's hooks but ``left_out``."""
    reg = Registry(load_entry_points=False)
    hooks = [
        h
        for h in (
            "oodfs_task_types",
            "oodfs_environments",
            "oodfs_selectors",
            "oodfs_downstream_models",
            "oodfs_metrics",
        )
        if h not in left_out
    ]
    reg.register(module("counts_part", only(*hooks)), name="counts_part")
    return reg


def count_target(n: int = 60) -> np.ndarray:
    return np.random.default_rng(0).poisson(2.0, n).astype(float)


# -- the public face ------------------------------------------------------------------------------------
def test_oodfs_plugin_exports_the_class_and_hook_of_every_kind_of_the_one_table():
    assert [k.name for k in oodfs.plugin.KINDS] == list(KINDS)  # the registry reads the same table
    for kind in oodfs.plugin.KINDS:
        assert getattr(oodfs.plugin, kind.base.__name__) is kind.base, kind.name
        assert callable(getattr(hookspecs, kind.hook)), kind.hook
        assert kind.hook == f"oodfs_{kind.name}s"  # one naming scheme: kind, hook, class
        assert kind.base.__name__ == "".join(w.capitalize() for w in kind.name.split("_"))
        assert kind.checks in kit.__all__ and kit.KIND_CHECKS[kind.name] is getattr(kit, kind.checks)
    assert oodfs.plugin.hookimpl is oodfs.hookimpl
    assert set(oodfs.plugin.__all__) <= set(dir(oodfs.plugin))


def test_the_old_names_still_work():
    from oodfs.contract.extensions import LeaderboardFormat, OutputFormat
    from oodfs.contract.registry import get_rule, get_task
    from oodfs.contract.selection import get_rule as old_get_rule
    from oodfs.contract.selection import rules
    from oodfs.contract.tasks import get_task as old_get_task

    assert OutputFormat is LeaderboardFormat and old_get_rule is get_rule and old_get_task is get_task
    assert list(rules())[:3] == ["val", "oracle", "default"]
    for old, new in (("rule", "selection_rule"), ("task", "task_type"), ("downstream", "downstream_model")):
        assert registry().entries(old) == registry().entries(new)
    assert registry().get("format", "csv") is registry().get("leaderboard_format", "csv")
    assert kit.check_output_format is kit.check_leaderboard_format


def test_the_package_imports_from_oodfs_plugin_alone():
    imported = {
        node.module
        for node in ast.walk(ast.parse(PACKAGE))
        if isinstance(node, ast.ImportFrom) and node.module
    } | {a.name for node in ast.walk(ast.parse(PACKAGE)) if isinstance(node, ast.Import) for a in node.names}
    assert {m for m in imported if m.split(".")[0] == "oodfs"} == {"oodfs.plugin"}


# -- a third party adds each kind and passes its kit checks ---------------------------------------------
def test_a_third_party_adds_one_of_each_kind_and_each_passes_the_kit(counts, tmp_path):
    mine = {(i.kind, i.name) for i in registry().all() if i.package == "oodfs-counts"}
    assert {kind for kind, _ in mine} == set(KINDS), sorted(mine)
    assert ("selector", "pairweights") in mine  # a weighter is also a selector
    y = counts.Counts().sample(1.0, 60, 0)[1]
    options = {
        "environment": {},
        "task_type": {"y": y},
        "downstream_model": {"data": {"count": counts.Counts().sample(1.0, 200, 0)}},
        "leaderboard_format": {"leaderboard": Leaderboard(Report.from_path(kit.hostile_results(tmp_path)))},
    }
    checked = set()
    for info in registry().all():
        if info.package != "oodfs-counts" or (info.kind, info.name) == ("selector", "pairweights"):
            continue
        kit.KIND_CHECKS[info.kind](info.cls, **options.get(info.kind, {}))
        checked.add(info.kind)
    assert checked == set(KINDS)


def test_a_suite_of_the_third_party_task_type_runs_and_its_format_shows_it(counts, tmp_path, capsys):
    suite = tmp_path / "counts.toml"
    suite.write_text(SUITE.format(methods='["countcorr", "ols"]', downstream='downstream = ["clipped_ls"]'))
    code, out, err = run_cli(
        capsys, "bench", "--suite", str(suite), "--out", str(tmp_path / "o"), "--jobs", "1"
    )
    assert code == 0, err
    assert "- ols: handles regression and binary targets only, not count" in out
    code, out, err = run_cli(capsys, "leaderboard", str(tmp_path / "o"), "--format", "plain")
    assert code == 0, err
    assert out.splitlines()[0].split("\t")[:4] == ["setting", "r_train", "method", "metric"]
    assert "\tcountcorr\tmae_mean\t" in out
    assert run_cli(capsys, "count-hello", "--who", "you")[:2] == (0, "hello you\n")


# -- what a run says when a task type comes without its companions --------------------------------------
def test_a_run_of_a_task_type_without_a_downstream_model_says_what_to_add(tmp_path, capsys):
    plugin = tmp_path / "counts_only.py"
    plugin.write_text(PACKAGE.split("@hookimpl")[0] + only("oodfs_task_types", "oodfs_environments"))
    suite = tmp_path / "counts.toml"
    suite.write_text(SUITE.format(methods='["ols"]', downstream=""))
    result = run_cli(
        capsys, "bench", "--suite", str(suite), "--plugin", str(plugin), "--out", str(tmp_path / "o")
    )
    assert_one_line(
        result,
        "downstream model 'mlp' does not predict a count target",
        "no registered downstream model predicts the task type 'count'",
        "task_types = ('count',)",
        "oodfs_downstream_models",
    )


def test_a_run_of_a_task_type_no_method_handles_says_so(tmp_path, capsys):
    plugin = tmp_path / "counts_no_method.py"
    hooks = ("oodfs_task_types", "oodfs_environments", "oodfs_downstream_models", "oodfs_metrics")
    plugin.write_text(PACKAGE.split("@hookimpl")[0] + only(*hooks))
    suite = tmp_path / "counts.toml"
    suite.write_text(SUITE.format(methods='["ols"]', downstream='downstream = ["clipped_ls"]'))
    result = run_cli(
        capsys, "bench", "--suite", str(suite), "--plugin", str(plugin), "--out", str(tmp_path / "o")
    )
    assert_one_line(
        result,
        "no method of suite 'counts' handles its count target",
        "ols handles regression and binary targets only",
        "no registered selector handles the task type 'count'",
    )
    assert "results table is empty" not in result[2]


# -- the kit's new checks fail on a broken plugin, saying what is missing -------------------------------
def test_the_kit_finds_a_task_type_without_a_downstream_model():
    with pytest.raises(AssertionError) as info:
        kit.check_task_type(
            module("m", "").COUNT, y=count_target(), plugins=without("oodfs_downstream_models")
        )
    message = str(info.value)
    assert "1 check(s) failed" in message
    assert (
        "check_task_type_downstream_model failed: no registered downstream model predicts task type 'count'"
        in message
    )
    assert "task_types = ('count',)" in message and "oodfs_downstream_models hook" in message


def test_the_kit_finds_a_task_type_no_method_handles():
    with pytest.raises(
        AssertionError, match="check_task_type_method failed: no registered method handles task type 'count'"
    ):
        kit.check_task_type(module("m", "").COUNT, y=count_target(), plugins=without("oodfs_selectors"))


def test_the_kit_finds_a_task_type_without_its_metrics():
    with pytest.raises(AssertionError) as info:
        kit.check_task_type(module("m", "").COUNT, y=count_target(), plugins=without("oodfs_metrics"))
    assert "has no registered metric 'mae_val' (the val selection rule), 'mae_mean'" in str(info.value)
    assert "task_metrics(<your TaskType>)" in str(info.value)


def test_the_kit_finds_a_task_type_whose_loss_is_not_a_loss_or_whose_check_is_not_one_line():
    m = module("m", "")
    import dataclasses

    higher = dataclasses.replace(m.COUNT, lower_is_better={"mae": False})
    with pytest.raises(
        AssertionError, match="check_task_type_metadata failed: its first score 'mae' is the validation loss"
    ):
        kit.check_task_type(higher, y=count_target(), plugins=without())
    raw = dataclasses.replace(m.COUNT, check=lambda y, who: (np.asarray(y, dtype=float), None))
    with pytest.raises(
        AssertionError,
        match="check_task_type_target failed: check_target.. of a target of three text levels: "
        "expected OodfsError",
    ):
        kit.check_task_type(raw, y=count_target(), plugins=without())


def test_the_kit_finds_a_broken_metric():
    m = module("m", "")
    import dataclasses

    text = dataclasses.replace(m.STABLE_SHARE, compute=lambda e: "half")
    with pytest.raises(
        AssertionError,
        match="check_metric_compute failed: compute.. on a regression evaluation is 'half', not a number",
    ):
        kit.check_metric(text)
    outside = dataclasses.replace(m.STABLE_SHARE, compute=lambda e: 2.0)
    with pytest.raises(AssertionError, match=r"is 2.0, outside its bounds \(0.0, 1.0\)"):
        kit.check_metric(outside)
    unknown = dataclasses.replace(m.STABLE_SHARE, task_types=("count",))
    with pytest.raises(AssertionError, match="computed for task type 'count', which is not registered"):
        kit.check_metric(unknown)
    kit.check_metric(unknown, task_types=[m.COUNT])  # given the task type, it passes
    role = dataclasses.replace(m.STABLE_SHARE, role="column")
    with pytest.raises(
        AssertionError, match="check_metric_metadata failed: role 'column' is none of headline"
    ):
        kit.check_metric(role)


def test_the_kit_finds_a_broken_downstream_model():
    m = module("m", "")
    data = {"count": (np.random.default_rng(0).normal(size=(200, 6)), count_target(200))}

    class Batched(m.ClippedLeastSquares):
        """noise drawn once per batch: a subset's predictions depend on the others"""

        name = "batched"

        def predict_subsets(self, X, y, subsets, seed, targets):
            rng = np.random.default_rng(seed)
            out = super().predict_subsets(X, y, subsets, seed, targets)
            return [P + rng.normal(size=P.shape) for P in out]

    with pytest.raises(
        AssertionError, match="a subset's predictions depend on the other subsets of the batch"
    ):
        kit.check_downstream_model(Batched, data=data, task_types=[m.COUNT])
    with pytest.raises(AssertionError) as info:
        kit.check_downstream_model(m.ClippedLeastSquares, data=data, plugins=without("oodfs_task_types"))
    assert "it predicts task type 'count', which no plugin registers" in str(info.value)
    assert "oodfs_task_types hook" in str(info.value)
    kit.check_downstream_model(m.ClippedLeastSquares, data=data, task_types=[m.COUNT])


def test_the_builtin_metrics_task_types_and_downstream_models_pass_the_new_checks():
    for info in registry().entries("metric").values():
        kit.check_metric(info.cls)
    for info in registry().entries("task_type").values():
        kit.check_task_type(info.cls)
    for name in ("ridge", "logistic", "gbm"):
        kit.check_downstream_model(registry().get("downstream_model", name))


def test_contributing_shows_the_table_of_kinds_as_it_is():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "CONTRIBUTING.md").read_text()
    section = text.split("## Writing a plugin", 1)[1].split("\n## ", 1)[0]
    rows = [
        [cell.strip().strip("`") for cell in line.strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith(("| kind", "| ---"))
    ]
    expected = [[k.name, k.hook, k.base.__name__, k.checks] for k in oodfs.plugin.KINDS]
    assert rows == expected
