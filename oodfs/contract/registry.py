"""The plugin manager: entry-point discovery, name clashes, broken plugins, extra modules.

Plugins come from the ``oodfs`` entry-point group (the built-ins too, through oodfs's own
pyproject), plus modules named with ``--plugin`` for one run. ``OODFS_LOAD_PLUGINS`` (comma
separated distribution names) limits which third-party distributions load; the built-ins of
the ``oodfs`` distribution always load.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import warnings
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, entry_points, version
from pathlib import Path

import pluggy

from oodfs.contract import hookspecs, metrics, selection, task_types
from oodfs.contract.api import describe
from oodfs.contract.extensions import FORMAT_LANGUAGES
from oodfs.contract.kinds import BY_NAME, unknown_plugin
from oodfs.contract.kinds import KINDS as KIND_TABLE
from oodfs.contract.selection import SelectionRule
from oodfs.contract.task_types import TaskType
from oodfs.contract.wls import selector_for_weighter
from oodfs.validation import OodfsError

ENTRY_POINT_GROUP = "oodfs"
CORE_DISTRIBUTION = "oodfs"
#: kind -> (hook name, base class), read off the one table of kinds (oodfs.contract.kinds)
KINDS = {k.name: (k.hook, k.base) for k in KIND_TABLE}
#: the kinds whose hooks return declarations (objects with ``name`` and ``description``), not classes
DECLARED = tuple(k.name for k in KIND_TABLE if k.declared)


def kind_of(name: str) -> str:
    """The kind called ``name`` (an earlier name such as ``rule`` gives ``selection_rule``), or
    an OodfsError naming the valid kinds."""
    if name not in BY_NAME:
        raise OodfsError(f"unknown plugin kind {name!r}; valid: {', '.join(KINDS)}")
    return BY_NAME[name].name


class PluginLoadWarning(UserWarning):
    """A plugin could not be loaded; it was skipped and everything else loaded."""

    oodfs_label = "warning"  # printed as `oodfs: warning: ...` (oodfs.validation.one_line_warning)


@dataclass(frozen=True)
class PluginInfo:
    kind: str
    name: str
    cls: type
    package: str
    version: str
    description: str
    module: str

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "name": self.name,
            "package": self.package,
            "version": self.version,
            "description": self.description,
            "module": self.module,
            "class": type(self.cls).__qualname__ if self.kind in DECLARED else self.cls.__qualname__,
        }


def _core_version() -> str:
    try:
        return version(CORE_DISTRIBUTION)
    except PackageNotFoundError:
        return ""


def _import_module(spec: str):
    """Import a module by dotted name or from a path to a .py file."""
    path = Path(spec)
    if spec.endswith(".py") or path.exists():
        if not path.is_file():
            raise OodfsError(f"plugin file {spec!r} does not exist")
        mod_name = f"oodfs_extra_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(mod_name, path)
        if module_spec is None or module_spec.loader is None:
            raise OodfsError(f"plugin file {spec!r} is not a Python module (give a .py file)")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[mod_name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException as exc:  # noqa: BLE001 -- SyntaxError, SystemExit, anything at import
            sys.modules.pop(mod_name, None)
            raise OodfsError(f"plugin file {spec!r} failed to import: {_import_error(exc)}") from None
        return module
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name and spec.startswith(exc.name):
            raise OodfsError(
                f"plugin module {spec!r} not found (give an importable module name or a .py file)"
            ) from None
        raise OodfsError(f"plugin module {spec!r} failed to import: {_import_error(exc)}") from None
    except BaseException as exc:  # noqa: BLE001
        raise OodfsError(f"plugin module {spec!r} failed to import: {_import_error(exc)}") from None


def _import_error(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"it is not valid Python (line {exc.lineno}: {exc.msg})"
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    from oodfs.validation import error_message

    return error_message(exc)


class Registry:
    """All registered plugin classes, by kind and name."""

    def __init__(self, extra_modules: tuple[str, ...] = (), load_entry_points: bool = True):
        self.pm = pluggy.PluginManager("oodfs")
        self.pm.add_hookspecs(hookspecs)
        self._provenance: dict[str, tuple[str, str]] = {}  # pluggy plugin name -> (package, version)
        self._cache: dict[str, dict[str, PluginInfo]] | None = None
        self.extra_modules = tuple(extra_modules)
        self.register(metrics, name="oodfs:metrics", package=CORE_DISTRIBUTION, version=_core_version())
        self.register(task_types, name="oodfs:task_types", package=CORE_DISTRIBUTION, version=_core_version())
        self.register(selection, name="oodfs:selection", package=CORE_DISTRIBUTION, version=_core_version())
        if load_entry_points:
            self._load_entry_points()
        for spec in self.extra_modules:
            module = _import_module(spec)
            name = self.register(
                module, name=f"--plugin {spec}", package=spec, version=getattr(module, "__version__", "")
            )
            if not self.pm.get_hookcallers(self.pm.get_plugin(name)):  # `--plugin os`: nothing to register
                raise OodfsError(
                    f"--plugin {spec}: the module implements no oodfs hook (oodfs_selectors, "
                    "oodfs_environments, ...), so it registers nothing; see CONTRIBUTING.md, "
                    '"Writing a plugin"'
                )

    # -- loading -------------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        allowed = os.environ.get("OODFS_LOAD_PLUGINS")
        allowed_set = None if allowed is None else {a.strip() for a in allowed.split(",") if a.strip()}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist.name if ep.dist is not None else "unknown"
            version = ep.dist.version if ep.dist is not None else ""
            if allowed_set is not None and dist != CORE_DISTRIBUTION and dist not in allowed_set:
                continue
            name = f"{dist}:{ep.name}"
            if self.pm.has_plugin(name):
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # a broken plugin must not take the others down
                warnings.warn(
                    f"oodfs: plugin {ep.name!r} from {dist} failed to load and was skipped: "
                    f"{type(exc).__name__}: {exc}",
                    PluginLoadWarning,
                    stacklevel=2,
                )
                continue
            self.register(plugin, name=name, package=dist, version=version)

    def register(self, plugin, name: str | None = None, package: str = "", version: str = "") -> str:
        """Register a plugin object or module (a test or a notebook can use this directly)."""
        name = name or getattr(plugin, "__name__", None) or repr(plugin)
        self.pm.register(plugin, name=name)
        self._provenance[name] = (package or name, version)
        self._cache = None
        return name

    def unregister(self, name: str) -> None:
        self.pm.unregister(name=name)
        self._provenance.pop(name, None)
        self._cache = None

    # -- lookup --------------------------------------------------------------------------
    def _collect(self) -> dict[str, dict[str, PluginInfo]]:
        if self._cache is not None:
            return self._cache
        found: dict[str, dict[str, PluginInfo]] = {kind: {} for kind in KINDS}
        for kind, (hook_name, base) in KINDS.items():
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                package, version = self._provenance.get(impl.plugin_name, (impl.plugin_name, ""))
                try:
                    classes = list(impl.function() or [])
                except Exception as exc:
                    warnings.warn(
                        f"oodfs: plugin {impl.plugin_name!r} raised in {hook_name} and was skipped: "
                        f"{type(exc).__name__}: {exc}",
                        PluginLoadWarning,
                        stacklevel=2,
                    )
                    continue
                for cls in classes:
                    problem = _not_a_plugin(kind, cls, base)
                    if problem:
                        message = f"plugin {package!r}: {hook_name} returned {cls!r}, {problem}"
                        if impl.plugin_name.startswith("--plugin "):  # named for this run: an error
                            raise OodfsError(message)
                        # an installed plugin is skipped, as one that fails to load: the others work
                        warnings.warn(f"oodfs: {message}; skipped", PluginLoadWarning, stacklevel=2)
                        continue
                    if kind in DECLARED:
                        info = PluginInfo(
                            kind,
                            cls.name,
                            cls,
                            package,
                            version,
                            cls.description,
                            impl.plugin.__name__ if hasattr(impl.plugin, "__name__") else "",
                        )
                        self._add(found[kind], info)
                        continue
                    info = PluginInfo(kind, cls.name, cls, package, version, describe(cls), cls.__module__)
                    self._add(found[kind], info)
        # every weighter is also a selector: WLS on its weights (unless a selector takes the name)
        for info in found["weighter"].values():
            if info.name not in found["selector"]:
                cls = selector_for_weighter(info.cls)
                found["selector"][info.name] = PluginInfo(
                    "selector", info.name, cls, info.package, info.version, describe(cls), info.module
                )
        self._cache = found
        return found

    @staticmethod
    def _add(table: dict[str, PluginInfo], info: PluginInfo) -> None:
        other = table.get(info.name)
        if other is not None and other.cls is not info.cls:
            raise OodfsError(
                f"two plugins offer the {BY_NAME[info.kind].label} name {info.name!r}: "
                f"{other.package} ({other.module}.{getattr(other.cls, '__qualname__', other.name)}) and "
                f"{info.package} ({info.module}.{getattr(info.cls, '__qualname__', info.name)}); uninstall "
                f"one or limit plugins with OODFS_LOAD_PLUGINS"
            )
        table[info.name] = info

    def entries(self, kind: str) -> dict[str, PluginInfo]:
        """``{name: info}`` of one kind (its name in oodfs.contract.kinds, or an earlier name)."""
        return self._collect()[kind_of(kind)]

    def names(self, kind: str) -> list[str]:
        return sorted(self.entries(kind))

    def info(self, kind: str, name: str) -> PluginInfo:
        table = self.entries(kind)
        if name not in table:
            raise OodfsError(unknown_plugin(kind_of(kind), name, table))
        return table[name]

    def get(self, kind: str, name: str) -> type:
        return self.info(kind, name).cls

    def all(self) -> list[PluginInfo]:
        return [info for kind in KINDS for _, info in sorted(self.entries(kind).items())]

    def suite_plugins(
        self, environment: str, selection: str, methods=(), backend: str = "local", task: str | None = None
    ) -> SuitePlugins:
        """The plugins one suite runs with, read at once (:class:`SuitePlugins`): its environment
        and that environment's task type, its selection rule, its backend, and every registered
        selector, metric and downstream model. Each name given is checked, in this order: the rule
        (:func:`get_rule`'s line), the task type the suite names (``task``; None: it names none),
        the environment, the ``methods``, the backend (:meth:`info`'s line)."""
        rule = get_rule(selection, self)
        if task is not None:
            self.info("task_type", task)
        env = self.info("environment", environment)
        for method in methods:
            self.info("selector", method)
        return SuitePlugins(
            environment=env,
            task=get_task(env.cls.task, self),
            rule=rule,
            backend=self.get("backend", backend),
            selectors=dict(self.entries("selector")),
            metrics={name: info.cls for name, info in self.entries("metric").items()},
            downstream={name: info.cls for name, info in self.entries("downstream").items()},
            provenance=tuple(info.as_dict() for info in self.all()),
        )


@dataclass(frozen=True)
class SuitePlugins:
    """The plugins one suite runs with, read from the registry at once
    (:meth:`Registry.suite_plugins`) when the suite is planned, then handed to whatever needs them
    (the suite's checks, its identities, the progress weights, the store's record, the downstream
    models, the backend): a run asks the registry once per suite. ``environment``: the suite's
    (its PluginInfo); ``task``: that environment's task type; ``rule``: the suite's selection
    rule; ``backend``: the backend class; ``selectors`` (PluginInfo), ``metrics`` (declarations)
    and ``downstream`` (classes): every registered one by name, in the registry's order (a resume
    judges the stored methods too, and the store records every metric); ``provenance``: every
    registered plugin as a run's invocation records it (:meth:`PluginInfo.as_dict`). Read only."""

    environment: PluginInfo
    task: TaskType
    rule: SelectionRule
    backend: type
    selectors: dict[str, PluginInfo]
    metrics: dict[str, object]
    downstream: dict[str, type]
    provenance: tuple[dict, ...]


def _not_a_plugin(kind: str, obj, base) -> str | None:
    """Why ``obj`` (returned by a hook) cannot be registered, or None."""
    if kind in DECLARED:
        if not isinstance(obj, base):
            return f"not an {base.__module__}.{base.__name__}"
        if not isinstance(getattr(obj, "name", ""), str) or not obj.name:
            return "which has no `name`"
        if kind == "command" and not re.fullmatch(r"[a-z][a-z0-9-]*", obj.name):
            return "whose name is not a command name (lower-case letters, digits and '-')"
        if kind == "leaderboard_format" and obj.language not in FORMAT_LANGUAGES:
            return f"whose language {obj.language!r} is none of {', '.join(FORMAT_LANGUAGES)}"
        return None
    if not (isinstance(obj, type) and issubclass(obj, base)):
        return f"not a {base.__name__} subclass"
    if not isinstance(getattr(obj, "name", ""), str) or not getattr(obj, "name", ""):
        return "which has no `name`"
    return None


_REGISTRY: Registry | None = None


def registry(extra_modules: tuple[str, ...] | None = None) -> Registry:
    """The process-wide registry (built on first use). Passing ``extra_modules`` rebuilds it."""
    global _REGISTRY
    if _REGISTRY is None or (extra_modules is not None and tuple(extra_modules) != _REGISTRY.extra_modules):
        _REGISTRY = Registry(tuple(extra_modules or ()))
    return _REGISTRY


def reset_registry() -> None:
    global _REGISTRY
    _REGISTRY = None


# -- the lookups of the kinds the core reads by name ---------------------------------------------
# They live here, beside the registry, so that no module of oodfs.contract imports the registry
# back (tests/test_layout.py); their earlier homes (oodfs.contract.tasks.get_task,
# oodfs.contract.selection.get_rule and rules) still give them.
def get_task(name, reg: Registry | None = None) -> TaskType:
    """The registered task type called ``name`` (a TaskType is returned as it is; an unknown
    name is one OodfsError naming the valid ones). ``reg``: the registry (default :func:`registry`)."""
    if isinstance(name, TaskType):
        return name
    return (reg or registry()).get("task_type", name)


def rules(reg: Registry | None = None) -> dict[str, SelectionRule]:
    """Every registered selection rule by name: the built-in ones first, then those of plugins."""
    found = {name: info.cls for name, info in (reg or registry()).entries("selection_rule").items()}
    return {**{n: found[n] for n in selection.RULES if n in found}, **dict(sorted(found.items()))}


def get_rule(name: str, reg: Registry | None = None) -> SelectionRule:
    """The registered selection rule called ``name``, or an OodfsError naming the valid ones."""
    known = rules(reg)
    if name not in known:
        raise OodfsError(f"unknown model-selection rule {name!r}; valid: {', '.join(known)}")
    return known[name]
