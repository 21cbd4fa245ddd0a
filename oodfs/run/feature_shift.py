"""The feature-shift axis: features removed or corrupted in the test rows alone, after every fit.

A suite's ``feature_shift`` (or ``oodfs bench --feature-shift``) names one shift of the test
environments' feature values; the downstream models are trained as always, on unshifted training
rows, and score each selected subset a second time on the shifted test rows, with the declared
handling of a removed value (``feature_shift_impute``). The shifted losses are metrics of their own
(``rmse_fshift_mean``, ``rmse_fshift_increase``, ...; docs/PROTOCOL.md, "Feature shift"). Off by
default: then nothing here runs and no identity changes.

The shifts (every one of the test rows only; training and validation rows are never touched):

* ``missing:P`` -- each test cell is missing with probability P, independently;
* ``drop-top`` -- the top-ranked feature is missing in every test row;
* ``scale:C`` -- the top-ranked feature's test values are multiplied by C.

The top-ranked feature is the same for every method: the one with the largest absolute Pearson
correlation with the target on the training rows (ties: the first column). The handling of a
missing value: ``train-mean`` (the model trained on its subset, the value replaced by the feature's
mean on the training rows) or ``refit`` (``drop-top`` only: the model refitted on its subset without
the removed feature, the training mean when nothing is left).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oodfs.contract.seeds import derive_seed
from oodfs.validation import OodfsError

#: the shifts, as a suite file or ``--feature-shift`` spells them
SHIFTS = ("missing:P", "drop-top", "scale:C")
#: how a downstream model meets a removed value
HANDLINGS = ("train-mean", "refit")
DEFAULT_HANDLING = "train-mean"


@dataclass(frozen=True)
class FeatureShift:
    """One declared shift: ``kind`` ("missing", "drop-top", "scale"), its ``amount`` (the
    probability P, the factor C, None for drop-top) and the ``impute`` handling."""

    kind: str
    amount: float | None
    impute: str = DEFAULT_HANDLING

    @property
    def spec(self) -> str:
        return self.kind if self.amount is None else f"{self.kind}:{self.amount:g}"

    @property
    def removes_top(self) -> bool:
        return self.kind == "drop-top"


#: how the messages name the option: a suite file's key and bench's flag
SHIFT_NAME = "feature shift (feature_shift, --feature-shift)"
IMPUTE_NAME = "feature shift handling (feature_shift_impute, --feature-shift-impute)"


def _bad(value) -> OodfsError:
    return OodfsError(f"{SHIFT_NAME} {value!r} is not valid; valid: {', '.join(SHIFTS)}")


def parse_feature_shift(spec, impute=None) -> FeatureShift | None:
    """``"missing:0.3"``, ``"drop-top"`` or ``"scale:3"`` (None: no shift) with its handling
    (None: train-mean); one line naming the valid choices for anything else."""
    if spec is None:
        if impute is not None:
            raise OodfsError(f"{IMPUTE_NAME} {impute!r} needs a feature shift; valid: {', '.join(SHIFTS)}")
        return None
    if not isinstance(spec, str):
        raise _bad(spec)
    kind, _, amount = spec.strip().partition(":")
    if kind == "drop-top" and not amount:
        value = None
    elif kind in ("missing", "scale") and amount:
        try:
            value = float(amount)
        except ValueError:
            raise _bad(spec) from None
        if kind == "missing" and not 0 < value <= 1:
            raise OodfsError(f"{SHIFT_NAME} {spec!r}: the probability P of missing:P must be in (0, 1]")
        if kind == "scale" and not (np.isfinite(value) and value > 0 and value != 1):
            raise OodfsError(f"{SHIFT_NAME} {spec!r}: the factor C of scale:C must be finite, > 0 and not 1")
    else:
        raise _bad(spec)
    impute = DEFAULT_HANDLING if impute is None else impute
    if impute not in HANDLINGS:
        raise OodfsError(f"{IMPUTE_NAME} {impute!r} is not valid; valid: {', '.join(HANDLINGS)}")
    if impute == "refit" and kind != "drop-top":
        raise OodfsError(
            f"{IMPUTE_NAME} 'refit' refits without a removed feature: it needs the shift 'drop-top', "
            f"not {spec!r}; valid for {spec!r}: {DEFAULT_HANDLING}"
        )
    return FeatureShift(kind, value, impute)


def top_feature(X_train: np.ndarray, y_train: np.ndarray) -> int:
    """The column with the largest |Pearson correlation| with the target on the training rows
    (a constant column counts 0; ties: the first): the feature ``drop-top`` and ``scale`` shift,
    the same for every method (docs/PROTOCOL.md, "Feature shift")."""
    X = np.asarray(X_train, dtype=float)
    y = np.asarray(y_train, dtype=float)
    Xc = X - X.mean(axis=0)
    yc = y - y.mean()
    denom = np.sqrt((Xc**2).sum(axis=0) * (yc**2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(denom > 0, np.abs(Xc.T @ yc) / np.where(denom > 0, denom, 1.0), 0.0)
    return int(np.argmax(r))


def shift_rows(shift: FeatureShift, X: np.ndarray, train_mean: np.ndarray, top: int, seed: int) -> np.ndarray:
    """A shifted copy of one test environment's rows ``X`` (``seed``: its missing cells)."""
    out = np.array(X, dtype=float, copy=True)
    if shift.kind == "missing":
        missing = np.random.default_rng(seed).random(out.shape) < shift.amount
        out = np.where(missing, train_mean[None, :], out)
    elif shift.kind == "drop-top":
        out[:, top] = train_mean[top]
    else:  # scale
        out[:, top] = out[:, top] * shift.amount
    return out


def shifted_tests(shift: FeatureShift, X_train, y_train, tests, seeds) -> tuple[tuple, tuple[int, ...]]:
    """``(((env, X shifted, y), ...), removed columns)`` for the test environments ``tests``
    (``((env, X, y), ...)``), each shifted with its seed in ``seeds``; ``removed``: the column
    a ``refit`` leaves out (drop-top), else none. Training rows are read, never changed."""
    train_mean = np.asarray(X_train, dtype=float).mean(axis=0)
    top = top_feature(X_train, y_train)
    out = tuple((env, shift_rows(shift, X, train_mean, top, s), y) for (env, X, y), s in zip(tests, seeds))
    return out, ((top,) if shift.removes_top else ())


def missing_seed(test_seed: int) -> int:
    """The seed of a test environment's missing cells: from its draw's seed (the task's
    coordinates: suite seed, setting, run, test environment), the same for every method, every
    r_train and every P (the cells missing at P are among those missing at a larger P)."""
    return derive_seed(test_seed, "feature-shift")
