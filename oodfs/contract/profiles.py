"""Profiles: named sets of the settings outside the grids (docs/PROTOCOL.md, "Profiles").

A suite runs under one profile; each method (its class's ``profiles``) and the downstream regressor
(:data:`oodfs.run.downstream.PROFILES`) say what the profile means for them.
"""

from __future__ import annotations

from collections.abc import Mapping

from oodfs.validation import OodfsError

#: the profiles a suite can run with (docs/PROTOCOL.md, "Profiles")
PROFILES = {
    "default": "oodfs's documented defaults for every setting outside the grids",
    "paper": "the paper's literal settings where it states them (Adam lr 0.001 for DWR, SRDO and the "
    "downstream MLP), documented choices where it is silent",
}


def check_profile(name: str) -> str:
    if name not in PROFILES:
        raise OodfsError(f"unknown profile {name!r}; valid: {', '.join(PROFILES)}")
    return name


class _DownstreamModels(Mapping):
    """``{name: description}`` of the registered downstream models (the registry is the one list;
    docs/PROTOCOL.md, "Downstream model")."""

    def _table(self) -> dict:
        from oodfs.contract.registry import registry

        return {name: info.description for name, info in registry().entries("downstream").items()}

    def __getitem__(self, name):
        return self._table()[name]

    def __iter__(self):
        return iter(self._table())

    def __len__(self):
        return len(self._table())


#: the downstream models a suite (``downstream = [...]``) or ``--downstream`` may name, each trained
#: on the selected features of every task: a read-only view of the registry
DOWNSTREAM_MODELS = _DownstreamModels()
