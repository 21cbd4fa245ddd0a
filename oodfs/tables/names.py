"""Naming features in what oodfs says: one-hot levels (``column=level``), lists of names, and a
selector's "column 3" turned into the feature's name."""

from __future__ import annotations

import re

#: one-hot column name: ``column=level``
LEVEL_SEP = "="


def short_list(items, limit: int = 8) -> str:
    """``'a', 'b', 'c'``; a long list is cut after ``limit`` items: ``..., and 102 more``."""
    items = [i if isinstance(i, str) and i.startswith("'") else repr(i) for i in items]
    if len(items) <= limit:
        return ", ".join(items)
    return f"{', '.join(items[:limit])}, ... and {len(items) - limit} more"


def named_columns(message: str, names: list[str]) -> str:
    """A selector's message with column indices ("column 3") replaced by the feature names."""

    def name(m):
        j = int(m.group(1))
        return f"column {names[j]!r}" if j < len(names) else m.group(0)

    return re.sub(r"\bcolumn (\d+)\b", name, message)
