"""Profiles: named sets of the settings outside the grids (docs/PROTOCOL.md, "Profiles").

A suite runs under one profile; each method (its class's ``profiles``) and the downstream regressor
(:data:`oodfs.run.downstream.PROFILES`) say what the profile means for them.
"""

from __future__ import annotations

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


#: the downstream models a suite (``downstream = [...]``) or ``--downstream`` may name, each trained
#: on the selected features of every task (docs/PROTOCOL.md, "Real data"); the models themselves
#: are in oodfs.run.downstream (mlp) and oodfs.run.downstream_models (ridge, gbm)
DOWNSTREAM_MODELS = {
    "mlp": "the paper's MLP (hidden layers 5 and 5, ReLU, Adam)",
    "ridge": "scikit-learn RidgeCV on standardised features (alpha 1e-3 .. 1e3 by leave-one-out)",
    "gbm": "scikit-learn HistGradientBoostingRegressor with its defaults",
}
