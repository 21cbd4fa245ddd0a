"""Comparing stored identities: whether two runs may share a folder, and why a task is stale.

How identities are computed is :mod:`oodfs.run.identity`; these functions read only what a
store holds, so merging and reporting need nothing of the run package.
"""

from __future__ import annotations

#: the parts of a task identity, in the order :func:`explain` names them
PARTS = ("package", "version", "class", "code", "grid", "profile", "data", "suite")


#: suite identity fields not compared as plain values: the settings (one by one) and the core's
#: digest (only when both sides record it)
UNCOMPARED = ("settings", "core")


def identity_conflicts(old: dict, new: dict) -> list[str]:
    """What differs between two suite identities in a way that would mix results: any field but
    the settings, and a setting of one name defined differently. A setting only one of them has
    is no conflict (a run narrowed with --settings, a suite that gained a setting)."""
    conflicts = sorted(k for k in set(old) | set(new) if k not in UNCOMPARED and old.get(k) != new.get(k))
    if "core" in old and "core" in new and old["core"] != new["core"]:  # not recorded by an older oodfs
        conflicts.append("core (its downstream regressor settings)")
    defined = {s["name"]: s for s in old.get("settings", [])}
    conflicts += [
        f"setting {s['name']!r}"
        for s in new.get("settings", [])
        if s["name"] in defined and defined[s["name"]] != s
    ]
    return conflicts


def combined_identity(old: dict, new: dict) -> dict:
    """``new`` with the settings of both (``old``'s first): what a folder holding both holds."""
    names = {s["name"] for s in old.get("settings", [])}
    settings = list(old.get("settings", [])) + [s for s in new.get("settings", []) if s["name"] not in names]
    return {**new, "settings": settings}


def explain(old: dict | None, new: dict) -> str:
    """Why a task's identity changed, e.g. ``"code changed"`` or
    ``"version (0.1.0 -> 0.2.0) and grid changed"``."""
    if not old:
        return "no identity recorded (stored by an older oodfs)"
    changed = []
    for part in PARTS:
        if old.get(part) != new.get(part):
            shown = part in ("package", "version", "class", "profile")
            changed.append(f"{part} ({old.get(part)} -> {new.get(part)})" if shown else part)
    if not changed:
        return "identity changed"
    names = changed[0] if len(changed) == 1 else f"{', '.join(changed[:-1])} and {changed[-1]}"
    return f"{names} changed"
