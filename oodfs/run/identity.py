"""What produced a result: the identity of a task.

A task (setting, r_train, run, method) is identified by everything that decides its numbers
besides its coordinates:

* ``package`` and ``version`` -- the distribution that registered the method, and its version;
* ``class`` -- the class the method's name stands for;
* ``code`` -- a hash of the method's source: the module of its class (and of its plugin base
  classes), and every module of the plugin's own package that these use (a class, function or
  module bound in them, or a module their source imports, inside a function too; followed on);
  for a selector made from a weighter, the weighter's modules too. A change anywhere in such a
  module (even a comment) counts as a change: the hash cannot tell which edits matter;
* ``grid`` -- the method's hyperparameter grid;
* ``profile`` -- the suite's profile and the method's settings under it;
* ``data`` -- the data the setting reads: the environment, its distribution and version, the
  setting's parameters, and the bytes of every file a parameter names (a table's CSV);
* ``suite`` -- the suite identity (environment, settings, test environments, sizes, k, seed,
  profile, the task type when it is not regression, and the feature shift with its handling when
  one is declared): what a resume must not change.

The core (downstream regressor, metrics) is not part of a task's identity; its version is in
every invocation's provenance, and the downstream models' settings are part of the suite
identity a folder and a reference record (:func:`core_identity`). ``--resume`` reruns a task
whose identity changed and says why (:func:`oodfs.results.identity.explain`); results of two
identities are never kept side by side for one task.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import importlib.util
import inspect
import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from oodfs.contract.api import _GridMixin
from oodfs.contract.downstream import DEFAULT_MODEL
from oodfs.contract.kinds import unknown_plugin
from oodfs.contract.registry import PluginInfo, SuitePlugins, registry
from oodfs.run.suite import Suite
from oodfs.validation import OodfsError

#: the suite fields a resume, a merge and a reference must agree on
SUITE_IDENTITY = (
    "environment",
    "settings",
    "r_test",
    "n_train",
    "n_val",
    "n_test",
    "k",
    "k_grid",
    "seed",
    "profile",
    "downstream",
    "task",
    "feature_shift",
    "feature_shift_impute",
)

#: how many hex digits of a SHA-256 are kept (64 bits: collisions are not a concern here)
DIGEST_CHARS = 16


def plain(value):
    """``value`` as plain JSON values (``json.dumps``'s ``default``): a dataclass as its fields, a
    numpy scalar or array as numbers; anything else is refused. An identity is a digest of declared
    values only: an object's ``repr`` depends on the library's version and settings, and a value
    computed with vector instructions can differ in its last bit between CPUs (np.logspace's 10^2.5
    did: docs/PROTOCOL.md section 6, "Identities"), so neither may decide an identity."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "tolist") and type(value).__module__ == "numpy":
        return value.tolist()
    raise TypeError(f"an identity holds plain values only, not {type(value).__name__}: {value!r:.80}")


def canonical(obj) -> str:
    """The canonical JSON text of ``obj``: sorted keys, plain values (:func:`plain`)."""
    return json.dumps(obj, sort_keys=True, default=plain)


def digest(obj) -> str:
    """A short SHA-256 of ``obj``'s canonical JSON (:func:`canonical`)."""
    return hashlib.sha256(canonical(obj).encode()).hexdigest()[:DIGEST_CHARS]


def file_digest(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:DIGEST_CHARS]


def suite_identity(suite: Suite, downstream: dict | None = None) -> dict:
    """The suite fields a resume must not change, as stored (tuples become lists), and ``core``:
    a digest of how oodfs's core trains the downstream models (:func:`core_identity`).
    ``downstream``: the registered models already read (:attr:`SuitePlugins.downstream`; None:
    the registry's)."""
    identity = {k: v for k, v in suite.to_dict().items() if k in SUITE_IDENTITY}
    # the MLP alone is the default: identities stored before the model was a choice still hold
    if list(identity.get("downstream", ())) == [DEFAULT_MODEL]:
        del identity["downstream"]
    # no k grid is the default: identities stored before suites had one still hold
    if identity.get("k_grid") is None:
        identity.pop("k_grid", None)
    # regression is the default: identities stored before task types existed still hold
    if identity.get("task") in (None, "regression"):
        identity.pop("task", None)
    identity["core"] = core_identity(suite, downstream)
    return json.loads(canonical(identity))


def core_identity(suite: Suite, downstream: dict | None = None) -> str:
    """A digest of the downstream models' settings under the suite's profile (the MLP's engine,
    optimiser and stopping rule; the scikit-learn models' parameters): core code that decides
    every task's RMSEs without being part of any method, so that a resume or a reference made
    with other settings is not mixed with this run's. Folders stored before oodfs recorded it
    have none, and are not compared on it. ``downstream``: as :func:`suite_identity`'s."""
    from oodfs.run.downstream_models import get_model

    task = suite.task or "regression"
    return digest(
        {name: get_model(name, task, suite.profile, downstream).identity() for name in suite.downstream}
    )


# -- code ---------------------------------------------------------------------------------
def module_source(name: str) -> bytes:
    """The source of module ``name``: the bytes of its file (read now, not a cached copy), else
    what its loader gives, else empty (a module without source cannot be tracked)."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if path and path.endswith(".py") and Path(path).is_file():
        return Path(path).read_bytes()
    loader = getattr(module, "__loader__", None)
    try:
        source = loader.get_source(name) if loader is not None else None
    except (ImportError, OSError):
        source = None
    return (source or "").encode()


def code_modules(cls: type) -> list[str]:
    """The modules whose source decides what ``cls`` computes: those of its plugin classes (the
    class and every base that is itself a plugin class, outside oodfs's core, or from the
    class's own package), then, sorted, every module of a plugin package that they use
    (:func:`_used_modules`) and, for a weighter-made selector, those of the weighter."""
    own_package = cls.__module__.split(".")[0]
    names = []
    for c in cls.__mro__:
        top = c.__module__.split(".")[0]
        plugin_base = issubclass(c, _GridMixin) and top != "oodfs"
        if plugin_base or (top == own_package and top != "oodfs"):
            names.append(c.__module__)
    names += sorted(_used_modules(names) - set(names))
    weighter = getattr(cls, "weighter_class", None)
    if weighter is not None:
        names += code_modules(weighter)
    return list(dict.fromkeys(names))


def _used_modules(start: list[str]) -> set[str]:
    """The modules of the packages of ``start`` (oodfs's core aside) that the modules ``start``
    use, followed on: each module a name of theirs is bound to, or that defines a class or
    function bound to one (SVI's use of STG, RSW's of HRM's Adam step), and each module their
    source imports, at the top or inside a function (the tree methods' ``cart``)."""
    packages = {name.split(".")[0] for name in start} - {"oodfs"}
    seen: set[str] = set()
    todo = list(start)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        used = [_module_of(value) for value in list(vars(sys.modules[name]).values())]
        used += _imported_names(name, packages)
        todo += [m for m in used if isinstance(m, str) and m.split(".")[0] in packages and _imported(m)]
    return seen


def _imported(name: str) -> bool:
    """Whether module ``name`` is imported, importing it if it is not yet (False when it cannot be,
    e.g. an optional module a ``try: import`` guards: code that cannot run decides no number)."""
    if name not in sys.modules:
        try:
            importlib.import_module(name)
        except ImportError:
            return False
    return True


def _module_of(value) -> str | None:
    try:
        return value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
    except Exception:  # a lazy proxy that fails on attribute access names no module
        return None


def _imported_names(name: str, packages: set[str]) -> list[str]:
    """The modules of ``packages`` that the source of module ``name`` imports, anywhere in it
    (``from .cart import X`` inside a function gives ``<package>.cart``, as ``from . import cart``
    does)."""
    package = sys.modules[name].__package__ or name.rpartition(".")[0]
    out = []
    for level, module, names in _import_statements(module_source(name)):
        if level == 0 and module is None:  # import a.b
            out += list(names)
            continue
        base = importlib.util.resolve_name("." * level + (module or ""), package)
        if base.split(".")[0] not in packages or not _imported(base):
            continue
        is_package = hasattr(sys.modules[base], "__path__")
        for alias in names:
            sub = f"{base}.{alias}"
            out.append(sub if is_package and importlib.util.find_spec(sub) else base)
    return [m for m in out if m.split(".")[0] in packages]


@lru_cache(maxsize=1024)
def _import_statements(source: bytes) -> tuple[tuple[int, str | None, tuple[str, ...]], ...]:
    """``(level, module, names)`` of every import statement of ``source`` (``import a.b``:
    ``(0, None, ("a.b",))``), parsed once per source text: the source is read afresh each time
    (an edit counts), the parse is not repeated for every method of every suite."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.append((0, None, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.ImportFrom):
            out.append((node.level, node.module, tuple(alias.name for alias in node.names)))
    return tuple(out)


def code_hash(cls: type) -> str:
    h = hashlib.sha256()
    for name in code_modules(cls):
        h.update(name.encode() + b"\0" + module_source(name) + b"\0")
    return h.hexdigest()[:DIGEST_CHARS]


# -- data ---------------------------------------------------------------------------------
def _files(value) -> list[str]:
    """Every string inside ``value`` (a parameter) that names an existing file."""
    if isinstance(value, str):
        try:
            return [value] if Path(value).is_file() else []
        except (OSError, ValueError):  # a name too long or with a NUL byte is not a file
            return []
    if isinstance(value, dict):
        return [f for v in value.values() for f in _files(v)]
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _files(v)]
    return []


def data_identity(suite: Suite, setting, env_info: PluginInfo) -> str:
    """A hash of the data a setting reads: the environment (name, distribution, version), the
    setting's parameters and the bytes of every file they name. A synthetic environment is
    determined by its parameters; a table by its file. An environment whose data come from
    elsewhere (a data package) can say what they are: a ``data_identity()`` method of the
    environment (built with the setting's parameters of run 0) returning any JSON-able value."""
    described = dataclasses.asdict(setting) if dataclasses.is_dataclass(setting) else dict(vars(setting))
    files = {f: file_digest(f) for f in dict.fromkeys(_files(described))}
    own = None
    if callable(getattr(env_info.cls, "data_identity", None)):
        own = env_info.cls(**setting.environment_params(0)).data_identity()
    return digest(
        {
            "environment": suite.environment,
            "package": _package(env_info),
            "version": env_info.version,
            "setting": described,
            "files": files,
            "own": own,
        }
    )


# -- tasks --------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskIdentity:
    """``digest`` identifies the task; ``parts`` (one short value per part of
    :data:`oodfs.results.identity.PARTS`)
    says what differs when two digests do."""

    digest: str
    parts: dict

    @classmethod
    def from_parts(cls, parts: dict) -> "TaskIdentity":
        return cls(digest(parts), dict(parts))


def _package(info: PluginInfo) -> str:
    """The distribution, or for a ``--plugin`` file its file name: the same file elsewhere (another
    folder, another machine) is the same plugin; its content is in the code hash."""
    package = info.package
    if package.endswith(".py") or "/" in package or "\\" in package:
        return Path(package).name
    return package


def method_parts(info: PluginInfo, profile: str) -> dict:
    cls = info.cls
    return {
        "package": _package(info),
        "version": info.version,
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "code": code_hash(cls),
        "grid": digest(getattr(cls, "grid", {})),
        "profile": f"{profile}:{digest(getattr(cls, 'profiles', {}).get(profile, {}))}",
    }


def task_identities(
    suite: Suite, methods=None, plugins: SuitePlugins | None = None
) -> dict[tuple[str, str], TaskIdentity]:
    """The identity of every (setting, method) of ``suite`` (all its tasks on that setting share
    it: r_train and run are coordinates). ``methods`` defaults to the suite's; an unknown one is
    one line naming the valid ones. ``plugins``: the suite's plugins already read
    (:class:`SuitePlugins`); None reads the registry's."""
    if plugins is None:
        reg = registry()
        env_info, selectors, downstream = (
            reg.info("environment", suite.environment),
            reg.entries("selector"),
            None,
        )
    else:
        env_info, selectors, downstream = plugins.environment, plugins.selectors, plugins.downstream
    # the suite's shared fields; a setting's own parameters are in its data part, so a task's
    # identity does not change when a run narrows the suite to some of its settings
    # (the core's part is compared per folder and per reference, not per task)
    shared = suite_identity(suite, downstream)
    suite_part = digest({k: v for k, v in shared.items() if k not in ("settings", "core")})
    data = {s.name: data_identity(suite, s, env_info) for s in suite.settings}
    out = {}
    for method in suite.methods if methods is None else methods:
        if method not in selectors:
            raise OodfsError(unknown_plugin("selector", method, selectors))
        parts = method_parts(selectors[method], suite.profile)
        for s in suite.settings:
            out[s.name, method] = TaskIdentity.from_parts(
                {**parts, "data": data[s.name], "suite": suite_part}
            )
    return out


def method_code_hashes(methods, selectors: dict | None = None) -> dict[str, str]:
    """``{method: code hash}`` for provenance (methods not registered are left out).
    ``selectors``: the registered selectors already read (:attr:`SuitePlugins.selectors`; None:
    the registry's)."""
    table = registry().entries("selector") if selectors is None else selectors
    return {m: code_hash(table[m].cls) for m in methods if m in table}
