"""The plugin contract: discovery, listing, clashes, broken plugins, OODFS_LOAD_PLUGINS, --plugin."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oodfs
from oodfs import OodfsError
from oodfs.contract.registry import KINDS, PluginLoadWarning, Registry, registry

from .conftest import make_distribution
from .conftest import run_cli as run_here


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "oodfs.cli", *args], capture_output=True, text=True, env=env)


def make_selector_module(name: str, selector_name: str):
    import types

    module = types.ModuleType(name)

    class Sel(oodfs.Selector):
        """A test selector."""

        def _fit_scores(self, X, y, sw):
            return np.arange(X.shape[1], dtype=float)

    Sel.name = selector_name
    Sel.__module__ = name
    module.Sel = Sel
    module.oodfs_selectors = oodfs.hookimpl(lambda: [Sel])
    return module


def test_builtins_come_through_the_entry_point_group():
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group="oodfs") if ep.dist.name == "oodfs"}
    assert set(eps) >= {"independence", "baselines", "environments"}
    names = {(i.kind, i.name) for i in registry().all()}
    assert {("selector", "ols"), ("selector", "correlation"), ("environment", "synthetic")} <= names
    assert {("weighter", "dwr"), ("weighter", "srdo"), ("selector", "dwr"), ("selector", "srdo")} <= names


def test_plugins_json_lists_required_fields():
    proc = run_cli("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    entries = json.loads(proc.stdout)
    for e in entries:
        assert {"kind", "name", "package", "version", "description"} <= set(e)
        assert e["kind"] in KINDS
    assert {e["kind"] for e in entries} == set(KINDS)  # every kind is listed, each with a built-in
    by_name = {(e["kind"], e["name"]): e for e in entries}
    assert by_name[("selector", "ols")]["package"] == "oodfs"
    assert by_name[("environment", "synthetic")]["description"]
    assert by_name[("metric", "rank_avg")]["package"] == "oodfs"  # the built-in metrics are declarations too


@pytest.fixture(scope="module")
def plugins_table():
    """`oodfs plugins` once, in a new process, for the tests that read its table."""
    return run_cli("plugins")


def test_plugins_table(plugins_table):
    proc = plugins_table
    assert proc.returncode == 0
    assert "kind" in proc.stdout.splitlines()[0] and "synthetic" in proc.stdout


def test_plugins_lists_whole_descriptions(plugins_table):
    """A docstring summary wrapped over two lines is listed whole, not cut at the line break
    (oracle_ipw's once ended in "(V"); the selector made from a weighter adds its WLS step after it."""
    proc = plugins_table
    assert proc.returncode == 0, proc.stderr
    summary = "synthetic environment (V independent of the rest)"
    lines = {tuple(line.split()[:2]): line for line in proc.stdout.splitlines()[2:]}
    assert summary + "." in lines[("weighter", "oracle_ipw")]
    assert summary + " + weighted least squares" in lines[("selector", "oracle_ipw")]
    for info in registry().all():
        assert info.description.count("(") == info.description.count(")"), (
            info.kind,
            info.name,
            info.description,
        )
        assert "\n" not in info.description


def test_name_clash_names_both_providers():
    reg = Registry(load_entry_points=False)
    reg.register(make_selector_module("pkg_a", "dup"), name="a", package="pkg-a")
    reg.register(make_selector_module("pkg_b", "dup"), name="b", package="pkg-b")
    with pytest.raises(OodfsError, match=r"'dup'.*pkg-a.*pkg-b"):
        reg.get("selector", "dup")


def test_unknown_name_lists_valid_ones():
    with pytest.raises(OodfsError, match=r"unknown selector 'nope'; valid: .*ols"):
        registry().get("selector", "nope")


def test_register_and_unregister_at_run_time():
    reg = Registry(load_entry_points=False)
    reg.register(make_selector_module("mod_x", "xsel"), name="x")
    assert reg.names("selector") == ["xsel"]
    reg.unregister("x")
    assert reg.names("selector") == []


def test_broken_plugin_warns_and_the_rest_load(tmp_path, monkeypatch):
    site = make_distribution(
        tmp_path,
        "oodfs-broken",
        {"broken": "broken_plugin"},
        {"broken_plugin": "raise RuntimeError('no such backend')\n"},
    )
    monkeypatch.syspath_prepend(str(site))
    with pytest.warns(PluginLoadWarning, match=r"'broken'.*oodfs-broken.*no such backend"):
        reg = Registry()
    assert "ols" in reg.names("selector")


def test_hook_that_raises_is_skipped_with_a_warning():
    import types

    module = types.ModuleType("raising")

    @oodfs.hookimpl
    def oodfs_selectors():
        raise ValueError("bad hook")

    module.oodfs_selectors = oodfs_selectors
    reg = Registry()
    reg.register(module, name="raising")
    with pytest.warns(PluginLoadWarning, match="bad hook"):
        names = reg.names("selector")
    assert "ols" in names


def test_third_party_entry_point_and_load_filter(example_installed, monkeypatch):
    assert "covfilter" in Registry().names("selector")
    info = Registry().info("selector", "covfilter")
    assert (info.package, info.version) == ("oodfs-variance", "0.1.0")
    monkeypatch.setenv("OODFS_LOAD_PLUGINS", "")
    names = Registry().names("selector")
    assert "covfilter" not in names and "ols" in names  # built-ins always load
    monkeypatch.setenv("OODFS_LOAD_PLUGINS", "oodfs-variance")
    assert "covfilter" in Registry().names("selector")


def test_example_plugin_visible_in_cli(example_installed):
    import os

    proc = run_cli("plugins", "--json", env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    assert any(e["name"] == "covfilter" and e["package"] == "oodfs-variance" for e in json.loads(proc.stdout))


def test_plugin_option_registers_a_module_file(tmp_path, capsys):
    """(In this process: the option, not the program's start, is what is tested.)"""
    path = tmp_path / "myplug.py"
    path.write_text(
        textwrap.dedent('''
        import numpy as np, oodfs
        class Last(oodfs.Selector):
            """Prefers the last columns."""
            name = "last"
            def _fit_scores(self, X, y, sw):
                return np.arange(X.shape[1], dtype=float)
        @oodfs.hookimpl
        def oodfs_selectors():
            return [Last]
    ''')
    )
    code, out, err = run_here(capsys, "plugins", "--json", "--plugin", str(path))
    assert code == 0, err
    assert any(e["name"] == "last" for e in json.loads(out))
    code, _, err = run_here(capsys, "plugins", "--plugin", "no_such_module_xyz")
    assert code == 2 and "no_such_module_xyz" in err and "Traceback" not in err


def test_weighter_becomes_a_selector_with_its_grid():
    import types

    class Uniform(oodfs.Weighter):
        """Uniform weights."""

        name = "uniform"
        grid = {"scale": [1.0, 2.0]}

        def __init__(self, scale=1.0, random_state=None):
            self.scale = scale
            self.random_state = random_state

        def _fit_weights(self, X):
            return np.full(X.shape[0], self.scale)

    module = types.ModuleType("uni")
    module.oodfs_weighters = oodfs.hookimpl(lambda: [Uniform])
    reg = Registry(load_entry_points=False)
    reg.register(module, name="uni")
    cls = reg.get("selector", "uniform")
    assert cls.grid == {"scale": [1.0, 2.0]} and cls.default_params() == {"scale": 1.0}
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X @ [1.0, -2.0, 0.0] + 0.1 * rng.normal(size=200)
    sel = cls(scale=2.0, k=2).fit(X, y)
    assert sel.get_params()["scale"] == 2.0
    assert sel.get_support().tolist() == [True, True, False]
    np.testing.assert_allclose(
        sel.scores_, np.abs(np.linalg.lstsq(np.c_[X, np.ones(200)], y, rcond=None)[0][:3])
    )


def test_a_grid_naming_k_or_an_unknown_parameter_says_what_is_valid():
    """``k`` in a plugin's grid once failed with an empty list ("valid: "): the message says the run
    sets k, and a class without other parameters says there are none, and why."""

    class OnlyK(oodfs.Selector):
        """Scores = |X'y|."""

        name = "onlyk"
        grid = {"k": [3, 5]}

        def _fit_scores(self, X, y, sample_weight):
            return np.abs(X.T @ y)

    X, y = np.random.default_rng(0).normal(size=(30, 3)), np.random.default_rng(1).normal(size=30)
    with pytest.raises(OodfsError) as info:
        OnlyK.fit_grid(X, y, OnlyK.grid_points())
    message = str(info.value)
    assert "cannot set k (the run sets k from the suite" in message
    assert message.endswith("grid parameters: none (its __init__ has no other parameter with a default)")
    with pytest.raises(OodfsError, match=r"has no parameter\(s\) \['alpha'\]; valid: none \(its __init__"):
        OnlyK.fit_grid(X, y, [{"alpha": 1.0}])

    class WithCenter(OnlyK):
        """Scores = |X'y|, optionally centred."""

        name = "withcenter"
        grid = {"center": [True, False]}

        def __init__(self, center=True, k=5, random_state=None):
            self.center, self.k, self.random_state = center, k, random_state

    with pytest.raises(OodfsError, match=r"has no parameter\(s\) \['alpha'\]; valid: center$"):
        WithCenter.fit_grid(X, y, [{"alpha": 1.0}])
