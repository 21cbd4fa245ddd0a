"""What kind of shift a real-data suite holds: how much of the drop from its training to its test
environments comes from the change in X, and how much from the change in Y | X
(docs/PROTOCOL.md section 10, "Diagnosis"). The real-data report (benchmarks/real_data/realdata.py) and
the results page (``oodfs report``) show the same numbers from here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

#: cross-fitting folds of the domain classifier, and the clip of its probabilities
FOLDS = 5
CLIP = 0.01
#: training environments diagnosed per suite (evenly spaced among its r_train): a suite over 23
#: cities would otherwise fit 575 classifiers
MAX_DIAGNOSED = 5
#: below this overlap the shared covariates are too few rows to split the drop: the suite's test
#: rows lie mostly outside the training rows' range, and the split is not read as a verdict
MIN_OVERLAP = 0.1


#: the environments a diagnosis reads (a table; the loss follows the suite's task)
TABLE_ENVIRONMENTS = ("table", "binary_table")
#: the model on every feature whose loss is split, and the loss per row, by task
MODELS = {"regression": "ridge", "binary": "logistic"}
LOSS_NAMES = {"regression": "squared error", "binary": "log-loss"}


def table_environment(suite):
    """The suite (a shipped suite's name, or a :class:`~oodfs.run.suite.Suite`) and its table
    environment (the first setting's)."""
    from oodfs.contract.registry import registry
    from oodfs.run.suite import load_suite

    suite = load_suite(suite) if isinstance(suite, str) else suite
    return suite, registry().get("environment", suite.environment)(**suite.settings[0].environment_params(0))


def row_loss(task: str, prediction: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The loss of each row: squared error (regression), log-loss of the predicted probability
    clipped to [1e-15, 1 - 1e-15] (binary, as scikit-learn's ``log_loss``)."""
    if task == "binary":
        p = np.clip(prediction, 1e-15, 1 - 1e-15)
        return -(y * np.log(p) + (1 - y) * np.log(1 - p))
    return (prediction - y) ** 2


def shift_diagnosis(suite, seed: int = 0) -> dict:
    """How much of the drop from training to test environments comes from the change in X and how
    much from the change in Y | X: the decomposition of Cai, Namkoong and Yadlowsky (2023) that
    WhyShift (Liu et al., 2023) reports, for the suite's `all_features` model (ridge; logistic
    regression for a binary target).

    ``suite``: a shipped suite's name or a :class:`~oodfs.run.suite.Suite` on a table.
    Per (training environment, test environment): the model on every feature is fitted on the
    suite's n_train rows; its losses per row (squared error; log-loss for a binary target) are
    taken on the n_val held-out training rows (P) and on the test rows (Q). A domain classifier
    (scikit-learn HistGradientBoostingClassifier, classes balanced, cross-fitted over FOLDS folds)
    gives pi(x) = Q's share at x; the shared covariate distribution S has density ∝ p q / (p + q),
    so P's rows weigh pi and Q's rows 1 - pi. Then
    E_Q - E_P = [E_S(P's loss) - E_P] + [E_S(Q's loss) - E_S(P's loss)] + [E_Q - E_S(Q's loss)]: the
    outer two terms are the change in X, the middle one the change in Y | X on the covariates
    both environments share. Returns the means over the pairs (the loss's units: p, q, x_shift,
    y_shift, overlap), the drop q - p, the share of the drop that is Y | X, the task, and the pairs."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import cross_val_predict

    from oodfs.run.downstream_models import get_model

    suite, env = table_environment(suite)
    task = "binary" if suite.task == "binary" or suite.environment == "binary_table" else "regression"
    rows = []
    classifier = HistGradientBoostingClassifier
    chosen = [
        suite.r_train[i] for i in np.linspace(0, len(suite.r_train) - 1, MAX_DIAGNOSED).round().astype(int)
    ]
    model = get_model(MODELS[task], task)
    with threadpool_limits(1):  # OpenMP threads on a shared 2-core machine slow each fit many times over
        for r in dict.fromkeys(chosen):
            rows += _diagnose(suite, env, r, seed, model, classifier, cross_val_predict, task)
    df = pd.DataFrame(rows)

    mean = df[["p", "q", "x_shift", "y_shift", "overlap"]].mean()
    drop = mean["q"] - mean["p"]
    y_share = mean["y_shift"] / drop if drop > 0 else np.nan
    return dict(pairs=df, **mean.to_dict(), drop=drop, y_share=y_share, task=task)


def _diagnose(suite, env, r, seed, model, classifier, cross_val_predict, task="regression") -> list[dict]:
    """The decomposition's terms for training environment ``r`` against each test environment;
    ``model``: the downstream model (oodfs.run.downstream_models.get_model), on every feature."""
    from oodfs.run.suite import train_envs

    # a set of training environments pools each member's fit and held-out rows (n_train and n_val
    # are per environment, docs/PROTOCOL.md section 9)
    draws = [env.sample(e, suite.n_train + suite.n_val, seed) for e in train_envs(r)]
    Xf, yf = (np.concatenate([d[i][: suite.n_train] for d in draws]) for i in (0, 1))
    Xp, yp = (np.concatenate([d[i][suite.n_train :] for d in draws]) for i in (0, 1))
    tests = [(e, *env.sample(e, suite.n_test, seed)) for e in suite.r_test]
    return _decompose(r, Xf, yf, Xp, yp, tests, seed, model, classifier, cross_val_predict, task)


def _decompose(r, Xf, yf, Xp, yp, tests, seed, model, classifier, cross_val_predict, task) -> list[dict]:
    """The terms for the model on every feature fitted on ``(Xf, yf)``, P the held-out training rows
    ``(Xp, yp)``, against each test environment ``(name, Xq, yq)`` of ``tests``."""
    every = [tuple(range(Xf.shape[1]))]
    preds = model.predict_subsets(Xf, yf, every, seed, [Xp] + [Xq for _, Xq, _ in tests])
    loss_p = row_loss(task, preds[0][0], yp)
    rows = []
    for i, (e, Xq, yq) in enumerate(tests):
        loss_q = row_loss(task, preds[i + 1][0], yq)
        both = np.vstack([Xp, Xq])
        is_q = np.r_[np.zeros(len(Xp)), np.ones(len(Xq))]
        clf = classifier(class_weight="balanced", max_iter=50, random_state=seed)
        pi = cross_val_predict(clf, both, is_q, cv=FOLDS, method="predict_proba")[:, 1]
        pi = np.clip(pi, CLIP, 1 - CLIP)
        s_p = np.average(loss_p, weights=pi[: len(Xp)])  # P's loss on the shared covariates
        s_q = np.average(loss_q, weights=1 - pi[len(Xp) :])  # Q's loss on the shared covariates
        e_p, e_q = loss_p.mean(), loss_q.mean()
        rows.append(dict(r_train=r, env=e, p=e_p, q=e_q, x_shift=(s_p - e_p) + (e_q - s_q), y_shift=s_q - s_p,
                         overlap=float(np.mean(2 * np.minimum(pi, 1 - pi)))))  # fmt: skip
    return rows


def drop_kind(d: dict) -> str:
    """The diagnosis in words: no drop, unclear (too little overlap), mostly Y|X, mostly X, both."""
    if not np.isfinite(d["y_share"]):
        return "no drop"
    if d["overlap"] < MIN_OVERLAP:
        return f"unclear: overlap < {MIN_OVERLAP:g}"
    if d["y_share"] > 2 / 3:
        return "mostly Y∣X"
    if d["y_share"] < 1 / 3:
        return "mostly X"
    return "both"


#: simulated environments whose shift is known by construction: rows are selected on the features
#: alone (f(S) and the spurious V's) and the outcome is drawn after selection from S, so Y | X is the
#: same in every environment and the whole drop comes from the change in X (docs/PROTOCOL.md
#: section 1, and section 10, "Selection against the kind of shift")
KNOWN_SHIFT = {
    env: "known by construction: a change of X alone (rows are selected on f(S) and the spurious V's, the "
    "outcome is drawn from S after selection, so Y | X is the same in every environment): share of the drop "
    "due to Y | X = 0"
    for env in ("synthetic", "synthetic_binary")
}


def known_shift(suite) -> str | None:
    """The shift a simulated suite holds by construction, in words (:data:`KNOWN_SHIFT`), or None."""
    return KNOWN_SHIFT.get(suite.environment)


def diagnose_suite(suite) -> dict | None:
    """The diagnosis of a suite on a table (a shipped suite's name, a
    :class:`~oodfs.run.suite.Suite`, or the suite a run stored: ``Suite.to_dict``), numbers
    without the pairs, with its words and the loss it splits; None for a suite that is not on a
    table (synthetic data: its shift is known by design)."""
    from oodfs.run.suite import available_suites, load_suite, stored_suite

    if isinstance(suite, dict):
        suite = stored_suite(suite)
    if isinstance(suite, str):
        if suite not in available_suites():
            return None
        suite = load_suite(suite)
    if suite.environment not in TABLE_ENVIRONMENTS:
        return None
    d = shift_diagnosis(suite)
    d.pop("pairs")
    task = d.pop("task")
    d = {k: float(v) for k, v in d.items()}
    return dict(d, kind=drop_kind(d), task=task, loss=LOSS_NAMES[task], model=MODELS[task])


#: the share of the training rows `oodfs select --evaluate` holds out as P (the rest fits the model)
HELD_OUT_SHARE = 0.25


def diagnose_rows(X, y, env, train_envs, task: str = "regression", seed: int = 0) -> dict:
    """The diagnosis of ``oodfs select --evaluate``: the model on every feature (ridge; logistic for
    a binary target) fitted on the training environments' rows pooled but a seeded
    :data:`HELD_OUT_SHARE` of them, which are P, against each other environment (Q, all its rows):
    the same decomposition as :func:`shift_diagnosis`. Returns the means over the environments, the
    drop, the share of the drop that is Y | X, its words (:func:`drop_kind`), the loss and the model,
    ``pairs``: a row per held-out environment (env, p, q, x_shift, y_shift, overlap) in natural
    order, and ``small``: the environments of fewer than FOLDS rows, left out (docs/PROTOCOL.md
    section 8, "Evaluation"). A ValueError when nothing can be diagnosed."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import cross_val_predict

    from oodfs.contract.task import env_sort_key
    from oodfs.run.downstream_models import get_model

    env = np.asarray(env).astype(str)
    train = np.isin(env, [str(e) for e in train_envs])
    rows = np.flatnonzero(train)
    held = np.zeros(len(rows), dtype=bool)
    held[np.random.default_rng(seed).permutation(len(rows))[: int(round(HELD_OUT_SHARE * len(rows)))]] = True
    fit, p = rows[~held], rows[held]
    others = sorted((e for e in dict.fromkeys(env) if e not in set(env[train])), key=env_sort_key)
    # the domain classifier is cross-fitted over FOLDS folds: an environment of fewer rows is not split
    small = [e for e in others if (env == e).sum() < FOLDS]
    tests = [(e, X[env == e], y[env == e]) for e in others if e not in small]
    if not tests:
        raise ValueError(f"every held-out environment has fewer than {FOLDS} rows")
    model = get_model(MODELS[task], task)
    with threadpool_limits(1):
        pairs = _decompose(
            "training", X[fit], y[fit], X[p], y[p], tests, seed, model, HistGradientBoostingClassifier,
            cross_val_predict, task,
        )  # fmt: skip
    df = pd.DataFrame(pairs).drop(columns="r_train")
    mean = df[["p", "q", "x_shift", "y_shift", "overlap"]].mean()
    drop = mean["q"] - mean["p"]
    out = {k: float(v) for k, v in mean.items()}
    out.update(drop=float(drop), y_share=float(mean["y_shift"] / drop) if drop > 0 else float("nan"))
    return dict(
        out, kind=drop_kind(out), task=task, loss=LOSS_NAMES[task], model=MODELS[task], pairs=df, small=small
    )


def shift_sentence(d: dict, where: str = "the test environments") -> str:
    """The diagnosis in one sentence, as the results page words it (its numbers: :func:`diagnose_suite`
    or :func:`diagnose_rows`)."""
    share = f" ({100 * d['y_share']:.0f} % of the drop)" if np.isfinite(d["y_share"]) else ""
    return (
        f"the drop is {d['kind']}: the {d['loss']} of all_features under {d['model']} goes from {d['p']:.4g} "
        f"on held-out training rows to {d['q']:.4g} on {where}; {d['x_shift']:+.4g} of it from the change "
        f"in X and {d['y_shift']:+.4g} from the change in Y∣X{share}; covariate overlap {d['overlap']:.2f}. "
        "Selecting features can only repair the X part"
    )
