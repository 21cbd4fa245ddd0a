"""oodfs's SVI, DWR and SRDO against the authors' public code, on the same data.

The reference code is never copied into oodfs: this script imports it from local checkouts::

    git clone https://github.com/h-yu16/Sparse_Variable_Independence        # SVI, community DWR
    git clone https://github.com/Silver-Shen/Stable_Linear_Model_Learning   # SRDO's official code
    python benchmarks/crosscheck/crosscheck_svi.py --repo PATH_TO_SVI --srdo-repo PATH_TO_SRDO

Data: the synthetic environment's ``svi`` setting (the SVI paper's collinear data: n = 2000,
r_train = 2.5, fixed column order S1..S5, V1..V5), one draw per data set. For every method two
implementations are run with two seeds each. The selection of a weighter is the top 5 of the
weighted-least-squares |coefficients| (oodfs's protocol); of SVI the set with gate ratio > 0.2.
Agreement between two selections is their Jaccard index |A & B| / |A | B|; the *floor* of an
implementation is the mean agreement of its own two seeds (1 for a deterministic one), and the
*cross* agreement is the mean over the four seed pairs. Cross agreement well below both floors
means the implementations select differently, not just noisily.

Parts (``--parts``): ``dwr`` (the community DWR of algorithm/DWR.py, its port
``dwr_community`` and oodfs's ``dwr``), ``srdo`` (official ``model.decorrelation`` against
oodfs's ``srdo``), ``gates`` (the STG step alone on the same round-1 weights: reference
``model/STG.py`` against SVI's two gate implementations), ``svi`` (the whole loop: the reference's
own ``exp_svi.py::main`` and, for SVI^d, ``exp_linear.py::main``, unchanged and with their argparse
defaults, on our draws, against oodfs's ``svi`` / ``svi_d`` under both profiles; selections, final
ratios and the test MSE of OLS on the selected set, on shared test draws at the ``svi`` suite's r).
Writes markdown to ``--out`` (default: stdout); ``--cache`` keeps the SVI part's fits between runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

S_TRUE = frozenset(range(5))


def jaccard(a, b) -> float:
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 1.0


def top5(X, y, w):
    from oodfs.numeric import weighted_least_squares

    coef = np.abs(weighted_least_squares(X, y, w))
    return frozenset(np.argsort(-coef, kind="stable")[:5].tolist())


def floor_and_cross(sel_a, sel_b, sim=jaccard):
    """sel_x[d] = list of selections (or ratio vectors, with ``sim`` = :func:`wjaccard`) per seed
    for data set d."""
    fa = (
        np.mean([sim(*pair) for s in sel_a for pair in itertools.combinations(s, 2)])
        if len(sel_a[0]) > 1
        else 1.0
    )
    fb = (
        np.mean([sim(*pair) for s in sel_b for pair in itertools.combinations(s, 2)])
        if len(sel_b[0]) > 1
        else 1.0
    )
    cross = np.mean([sim(a, b) for sa, sb in zip(sel_a, sel_b) for a in sa for b in sb])
    return float(fa), float(fb), float(cross)


def f1(sel) -> float:
    tp = len(set(sel) & S_TRUE)
    return 2 * tp / (len(sel) + len(S_TRUE)) if sel else 0.0


def _env():
    from oodfs_plugins.environments.synthetic import Synthetic

    return Synthetic(
        setting="svi",
        spurious=["V5"],
        exponent=5.0,
        noise_sd=0.3**0.5,
        clip=float("inf"),
        sampler="rejection",
    )


def data(n_sets: int, n: int = 2000, r: float = 2.5):
    env = _env()
    return [env.sample(r, n, 1000 + i) for i in range(n_sets)]


class _Quiet:
    def debug(self, *a):
        pass

    info = debug


def names(sel) -> str:
    labels = [f"S{i + 1}" for i in range(5)] + [f"V{i + 1}" for i in range(5)]
    return "{" + ",".join(labels[j] for j in sorted(sel)) + "}"


def part_dwr(sets, lines):
    import torch
    from algorithm.DWR import DWR as ref_dwr  # the reference repository (on sys.path)

    from oodfs_plugins.independence.dwr import DWRWeighter
    from oodfs_plugins.independence.dwr_community import community_dwr_weights

    lines += [
        "## DWR: the community DWR (algorithm/DWR.py) against its port and oodfs's `dwr`",
        "",
        "All three are deterministic (floor 1). Weights: max |w_ref - w_port| / max w_ref, ESS / n.",
        "",
        "| data set | reference top 5 | port top 5 | oodfs dwr top 5 | weight diff ref-port | ESS/n ref | "
        "ESS/n port | ESS/n oodfs | ref s | port s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    agree_port, agree_oodfs = [], []
    for i, (X, y) in enumerate(sets):
        torch.manual_seed(0)
        t0 = time.perf_counter()
        w_ref = ref_dwr(X, cov_mask=np.ones((X.shape[1],) * 2), num_steps=STEPS, logger=_Quiet())[:, 0]
        t_ref = time.perf_counter() - t0
        t0 = time.perf_counter()
        w_port, _, _ = community_dwr_weights(X, None, steps=STEPS)
        t_port = time.perf_counter() - t0
        w_oodfs = DWRWeighter().fit(X).weights_
        w_ref = w_ref / w_ref.mean()
        sel = [top5(X, y, w) for w in (w_ref, w_port, w_oodfs)]
        agree_port.append(jaccard(sel[0], sel[1]))
        agree_oodfs.append(jaccard(sel[0], sel[2]))
        ess = [w.sum() ** 2 / (w @ w) / w.size for w in (w_ref, w_port, w_oodfs)]
        diff = np.abs(w_ref - w_port).max() / w_ref.max()
        lines.append(
            f"| {i} | {names(sel[0])} | {names(sel[1])} | {names(sel[2])} | {diff:.1e} | {ess[0]:.3f} | "
            f"{ess[1]:.3f} | {ess[2]:.3f} | {t_ref:.1f} | {t_port:.1f} |"
        )
    lines += [
        "",
        f"Agreement (Jaccard of top 5) with the reference: port {np.mean(agree_port):.2f}, oodfs `dwr` "
        f"{np.mean(agree_oodfs):.2f}; floors 1 (deterministic). Steps: {STEPS}.",
        "",
    ]


def part_srdo(sets, lines, srdo_repo):
    import importlib.util
    from pathlib import Path

    # by path: the SVI repository has a package of the same name (model/)
    spec = importlib.util.spec_from_file_location("srdo_official_model", Path(srdo_repo) / "model.py")
    official = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(official)

    from oodfs_plugins.independence.srdo import SRDOWeighter

    sel_ref, sel_oodfs, f1s = [], [], ([], [])
    for X, y in sets:
        ref_s, ood_s = [], []
        for seed in (0, 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                w = official.decorrelation(X, random_state=seed)[:, 0]
                ref_s.append(top5(X, y, w))
                ood_s.append(top5(X, y, SRDOWeighter(random_state=seed).fit(X).weights_))
        sel_ref.append(ref_s)
        sel_oodfs.append(ood_s)
        f1s[0].extend(f1(s) for s in ref_s)
        f1s[1].extend(f1(s) for s in ood_s)
    fa, fb, cross = floor_and_cross(sel_ref, sel_oodfs)
    lines += [
        "## SRDO: official `model.decorrelation` against oodfs's `srdo` (gamma 10)",
        "",
        "| | official floor | oodfs floor | cross | F1 official | F1 oodfs |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| top-5 Jaccard | {fa:.2f} | {fb:.2f} | {cross:.2f} | {np.mean(f1s[0]):.2f} "
        f"| {np.mean(f1s[1]):.2f} |",
        "",
        "Selections (seed 0, seed 1): "
        + "; ".join(
            f"data set {i}: official {names(a[0])} {names(a[1])}, oodfs {names(b[0])} {names(b[1])}"
            for i, (a, b) in enumerate(zip(sel_ref, sel_oodfs))
        ),
        "",
    ]


def ref_stg_ratios(X, y, w, seed):
    import torch
    from model.STG import STG as RefSTG

    torch.manual_seed(seed)
    stg = RefSTG(X.shape[1], 1, sigma=0.1, lam=3)
    with contextlib.redirect_stdout(io.StringIO()):
        stg.train(X, y[:, None], W=(w / w.sum())[:, None], epochs=5000)
    return stg.get_ratios().detach().numpy().astype(float)


def part_gates(sets, lines):
    from oodfs_plugins.independence.dwr_community import community_dwr_weights
    from oodfs_plugins.independence.svi import SVI

    impls = {
        "reference model/STG.py": None,
        "svi gates='reference'": "reference",
        "svi gates='oodfs'": "oodfs",
    }
    sels = {k: [] for k in impls}
    for X, y in sets:
        w, _, _ = community_dwr_weights(X, None, steps=STEPS)
        for name, kind in impls.items():
            per_seed = []
            for seed in (0, 1):
                if kind is None:
                    r = ref_stg_ratios(X, y, w, seed)
                else:
                    s = SVI(gates=kind)._settings()
                    r = SVI._ratios(X, y, w, s, seed)
                per_seed.append(frozenset(np.nonzero(r > 0.2)[0].tolist()))
            sels[name].append(per_seed)
    lines += [
        "## The gate step alone: the same data and the same round-1 weights (community DWR)",
        "",
        "Selected = gate ratio > 0.2 after one weighted STG fit (SVI^d's selection).",
        "",
        "| implementation | floor | cross with reference | F1 | selections (data set: seed 0, seed 1) |",
        "| --- | --- | --- | --- | --- |",
    ]
    ref = sels["reference model/STG.py"]
    for name, s in sels.items():
        fa, _, cross = floor_and_cross(s, ref)
        detail = "; ".join(f"{i}: {names(a)} {names(b)}" for i, (a, b) in enumerate(s))
        lines.append(
            f"| {name} | {fa:.2f} | {cross:.2f} | {np.mean([f1(x) for p in s for x in p]):.2f} | {detail} |"
        )
    lines.append("")


def suite_r_test() -> list[float]:
    """The `svi` suite's test bias rates (the reference's r_list, in the suite's order)."""
    import tomllib

    import oodfs

    suite = tomllib.loads((Path(oodfs.__file__).parent / "suites" / "svi.toml").read_text())
    return [float(r) for r in suite["r_test"]]


def test_sets(i: int, r_list, n: int = 2000) -> dict:
    """Test data of data set i: one draw of n rows per r, shared by every implementation."""
    env = _env()
    return {r: env.sample(r, n, 5000 + 100 * i + j) for j, r in enumerate(r_list)}


class _Capture:
    """The reference's logger (its main logs the selection and the DWR progress through it)."""

    def __init__(self):
        self.lines: list[str] = []

    def debug(self, msg):
        self.lines.append(str(msg))

    info = debug


@contextlib.contextmanager
def _patched(module, **values):
    old = {k: getattr(module, k) for k in values}
    for k, v in values.items():
        setattr(module, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)


def _ref_args(module, r_list):
    """The script's own argparse defaults (exp_svi.py / exp_linear.py), DWR steps from --svi-steps."""
    argv = sys.argv
    sys.argv = [f"{module.__name__}.py", "--iters_balance", str(SVI_STEPS)]
    if module.__name__ == "exp_linear":  # the readme's SVI^d command line
        sys.argv += ["--reweighting", "DWR", "--paradigm", "fs"]
    try:
        args = module.get_args()
    finally:
        sys.argv = argv
    args.r_list = list(r_list)
    if args.r_train != R_TRAIN or args.n != N_TRAIN:
        raise SystemExit(f"crosscheck_svi: {module.__name__} defaults changed (r_train {args.r_train})")
    return args


def run_reference(module, X, y, tests, k):
    """``module.main(args, k, logger)`` of exp_svi.py or exp_linear.py, unchanged, on our data.

    Glue only: the data generator returns our draws (train for r_train, test per r); the STG
    class and get_cov_mask are wrapped to record the gate ratios and the moving average that
    main computes (it returns only the test MSEs); the DWR is wrapped to record whether it ran
    all its steps. k is main's ``round``: the torch/numpy seed is the script's seed (3) + k.
    """
    import torch

    def gen(opts):
        Xr, yr = (X, y) if opts["r"] == R_TRAIN else tests[opts["r"]]
        # (X, S, V, f(S), Y); f(S) feeds only a logged variance (calc_var), so Y stands in for it
        return Xr, Xr[:, :5], Xr[:, 5:], yr[:, None], yr[:, None]

    rec = {"ratios": [], "ma": [], "full_steps": [], "steps": [], "ess": []}
    log = _Capture()
    orig_mask, orig_dwr = module.get_cov_mask, module.DWR

    class STG(module.STG):
        def train(self, *a, **kw):  # train logs get_ratios every 1000 epochs: record the end only
            super().train(*a, **kw)
            rec["ratios"].append(self.get_ratios().detach().numpy().astype(float).copy())

    def get_cov_mask(select_ratio):
        rec["ma"].append(np.asarray(select_ratio, dtype=float).ravel().copy())
        return orig_mask(select_ratio)

    def DWR(X_, cov_mask=None, num_steps=5000, **kw):
        start = len(log.lines)
        if REF_DWR == "port":
            from oodfs_plugins.independence.dwr_community import community_dwr_weights

            w, steps, _ = community_dwr_weights(X_, cov_mask, steps=num_steps)
            W = (w / w.sum())[:, None]
            rec["full_steps"].append(steps == num_steps)
            rec["steps"].append(steps)
        else:
            W = orig_dwr(X_, cov_mask=cov_mask, num_steps=num_steps, **kw)
            rec["full_steps"].append(any(s.startswith(f"iter {num_steps}:") for s in log.lines[start:]))
            # it logs every 500 steps: the last logged step is the steps run, rounded down to 500
            logged = [int(s.split()[1].rstrip(":")) for s in log.lines[start:] if s.startswith("iter ")]
            rec["steps"].append(max(logged, default=0))
        rec["ess"].append(float(W.sum() ** 2 / (W**2).sum() / W.size))
        return W

    args = _ref_args(module, tests)
    with (
        _patched(module, gen_selection_bias_data=gen, STG=STG, DWR=DWR),
        _patched(module, get_cov_mask=get_cov_mask)
        if hasattr(module, "get_cov_mask")
        else contextlib.nullcontext(),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        torch.set_num_threads(1)
        out = module.main(args, k, log)
    final = rec["ma"][-1] if module.__name__ == "exp_svi" else rec["ratios"][-1]
    return {
        "ratio": final.tolist(),
        "mse": {str(r): float(v) for r, v in out["RMSE"].items()},
        "rounds": [r.tolist() for r in rec["ratios"]],
        "full_steps": rec["full_steps"],
        "dwr_steps": rec["steps"],
        "ess": rec["ess"],
    }


def run_oodfs(cls, params, X, y, tests, k):
    """One oodfs fit; SVI's per-round gate ratios and weights' ESS recorded by wrapping ``_ratios``,
    the community DWR's steps by wrapping it."""
    from oodfs_plugins.independence import svi as svi_module
    from oodfs_plugins.independence.svi import SVI

    rounds, ess = [], []
    orig = SVI.__dict__["_ratios"]

    def _ratios(X_, y_, w, s, seed):
        r = orig.__func__(X_, y_, w, s, seed)
        rounds.append(np.asarray(r, dtype=float).tolist())
        ess.append(float(w.sum() ** 2 / (w @ w) / w.size))
        return r

    steps = []
    orig_dwr = svi_module.community_dwr_weights

    def community_dwr_weights(*a, **kw):
        out = orig_dwr(*a, **kw)
        steps.append(int(out[1]))
        return out

    SVI._ratios = staticmethod(_ratios)
    svi_module.community_dwr_weights = community_dwr_weights
    try:
        est = cls(**params, dwr_steps=SVI_STEPS, random_state=k).fit(X, y)
    finally:
        SVI._ratios = orig
        svi_module.community_dwr_weights = orig_dwr
    sel = np.asarray(est.selected_, dtype=bool)
    if not np.array_equal(sel, np.asarray(est.scores_) > 0.2):
        raise SystemExit(f"crosscheck_svi: {cls.name} selected_ is not scores_ > 0.2")
    mse = {str(r): float(np.mean((yt - Xt @ est.coef_) ** 2)) for r, (Xt, yt) in tests.items()}
    return {
        "ratio": np.asarray(est.scores_, dtype=float).tolist(),
        "mse": mse,
        "rounds": rounds,
        "ess": ess,
        "dwr_steps": steps,
    }


def wjaccard(a, b) -> float:
    """Weighted Jaccard sum_j min(a_j, b_j) / sum_j max(a_j, b_j) of two ratio vectors in [0, 1]."""
    a, b = np.asarray(a), np.asarray(b)
    den = np.maximum(a, b).sum()
    return float(np.minimum(a, b).sum() / den) if den > 0 else 1.0


def _mse_summary(fits, r_list):
    """SVI's summaries: the mean, sd (ddof 0) and max over r of the MSE averaged over runs."""
    per_r = np.array([[f["mse"][str(r)] for r in r_list] for f in fits]).mean(axis=0)
    return per_r, float(per_r.mean()), float(per_r.std()), float(per_r.max())


def part_svi(sets, lines, cache_path):
    import exp_linear
    import exp_svi

    from oodfs_plugins.independence.svi import SVI, SVID

    r_list = suite_r_test()
    paper = SVI.profiles["paper"]
    groups = {
        "SVI": {
            "reference exp_svi.py main": ("ref", exp_svi),
            "oodfs svi, profile paper": ("oodfs", SVI, paper),
            "oodfs svi, default profile": ("oodfs", SVI, {}),
            # the default profile's two blocks one at a time: which of them moves the selection
            "oodfs svi, dwr 'oodfs' + gates 'reference'": ("oodfs", SVI, {"gates": "reference"}),
            "oodfs svi, dwr 'community' + gates 'oodfs'": ("oodfs", SVI, {"dwr": "community"}),
        },
        "SVI^d": {
            "reference exp_linear.py main (DWR, fs)": ("ref", exp_linear),
            "oodfs svi_d, profile paper": ("oodfs", SVID, paper),
            "oodfs svi_d, default profile": ("oodfs", SVID, {}),
            "oodfs svi_d, dwr 'oodfs' + gates 'reference'": ("oodfs", SVID, {"gates": "reference"}),
            "oodfs svi_d, dwr 'community' + gates 'oodfs'": ("oodfs", SVID, {"dwr": "community"}),
        },
    }
    cache = json.loads(Path(cache_path).read_text()) if cache_path and Path(cache_path).exists() else {}
    fits = {name: [] for g in groups.values() for name in g}
    times = {name: [] for name in fits}
    for i, (X, y) in enumerate(sets):
        tests = test_sets(i, r_list)
        for g in groups.values():
            for name, spec in g.items():
                per_seed = []
                for k in (0, 1):
                    key = f"{name}|{i}|{k}|{SVI_STEPS}|{REF_DWR if spec[0] == 'ref' else ''}"
                    community = spec[0] == "ref" or spec[2].get("dwr") == "community"
                    stale = key in cache and community and "dwr_steps" not in cache[key]
                    if key not in cache or stale:
                        t0 = time.perf_counter()
                        if spec[0] == "ref":
                            cache[key] = run_reference(spec[1], X, y, tests, k)
                        else:
                            cache[key] = run_oodfs(spec[1], spec[2], X, y, tests, k)
                        cache[key]["time"] = time.perf_counter() - t0
                        if cache_path:
                            Path(cache_path).write_text(json.dumps(cache))
                    per_seed.append(cache[key])
                    times[name].append(cache[key]["time"])
                fits[name].append(per_seed)
                sel = [names(np.nonzero(np.array(f["ratio"]) > 0.2)[0]) for f in per_seed]
                print(i, name, sel, [round(f["time"]) for f in per_seed], flush=True, file=sys.stderr)

    def selections(name):
        return [
            [frozenset(np.nonzero(np.array(f["ratio"]) > 0.2)[0].tolist()) for f in p] for p in fits[name]
        ]

    def ratios(name):
        return [[np.array(f["ratio"]) for f in p] for p in fits[name]]

    ref_dwr = "its own torch code" if REF_DWR == "torch" else PORT_NOTE
    lines += [
        "## The whole SVI loop: the reference's `main` against oodfs's `svi` and `svi_d`",
        "",
        f"{len(sets)} data sets × 2 seeds. The reference is `exp_svi.py::main(args, k, logger)` (and, for "
        "SVIᵈ, `exp_linear.py::main` with the readme's SVIᵈ options `--reweighting DWR --paradigm fs`), "
        "run unchanged with the scripts' own argparse defaults otherwise: DWR "
        f"`--iters_balance` {SVI_STEPS} steps per round (DWR: {ref_dwr}), STG `lam_STG` 3, `sigma_STG` 0.1, "
        "5 000 epochs after 3 000 pretraining steps, `epoch_algorithm` 10 rounds, `period_MA` 3, "
        "`mask_threshold` 0.2, seed 3 + k for k = 0, 1 (its repeats 0 and 1); only its data generator "
        "is replaced by our draws. oodfs: `svi` / `svi_d` with `random_state` k, paper profile "
        f"({', '.join(f'{a} = {b!r}' for a, b in paper.items())}) and default profile, "
        f"`dwr_steps` {SVI_STEPS}; two more oodfs rows change one block of the default profile at a time "
        "(`gates = 'reference'` with oodfs's DWR, `dwr = 'community'` with oodfs's STG). "
        "Selection = final ratio > 0.2 (oodfs's `selected_`, tested equal); "
        "ratio agreement = weighted Jaccard Σ min(a, b) / Σ max(a, b) of the final ratio vectors.",
        "",
    ]
    for gname, g in groups.items():
        ref_name = next(iter(g))
        lines += [
            f"### {gname}: selections and ratios",
            "",
            "| implementation | selection floor | selection cross | ratio floor | ratio cross | F1 | "
            "median s per fit | selections (data set: seed 0, seed 1) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name in g:
            fa, _, cross = floor_and_cross(selections(name), selections(ref_name))
            ra, _, rcross = floor_and_cross(ratios(name), ratios(ref_name), sim=wjaccard)
            detail = "; ".join(f"{i}: {names(a)} {names(b)}" for i, (a, b) in enumerate(selections(name)))
            f1s = np.mean([f1(x) for p in selections(name) for x in p])
            lines.append(
                f"| {name} | {fa:.2f} | {cross:.2f} | {ra:.2f} | {rcross:.2f} | {f1s:.2f} | "
                f"{np.median(times[name]):.0f} | {detail} |"
            )
        lines += [
            "",
            f"### {gname}: OLS on the selected set, test MSE (the reference's 'RMSE')",
            "",
            "MSE of least squares without intercept on the selected columns of the training data, on the "
            "same test draws (2 000 rows per r); per r the mean over the fits, then the mean / sd / max over "
            "r as the reference prints them. Seed spread: mean over data sets of |MSE average of seed 0 − "
            "seed 1|; vs reference: mean over data sets and seed pairs of |MSE average − the reference's|.",
            "",
            "| implementation | MSE average | MSE sd | MSE max | seed spread | vs reference | "
            + " | ".join(f"r = {r:g}" for r in r_list)
            + " |",
            "| --- " * (6 + len(r_list)) + "|",
        ]
        avg = {n: [[np.mean(list(f["mse"].values())) for f in p] for p in fits[n]] for n in g}
        for name in g:
            per_r, m, sd, mx = _mse_summary([f for p in fits[name] for f in p], r_list)
            spread = np.mean([abs(a - b) for a, b in avg[name]])
            vs = np.mean([abs(a - b) for pa, pb in zip(avg[name], avg[ref_name]) for a in pa for b in pb])
            lines.append(
                f"| {name} | {m:.3f} | {sd:.3f} | {mx:.3f} | {spread:.3f} | {vs:.3f} | "
                + " | ".join(f"{v:.3f}" for v in per_r)
                + " |"
            )
        lines.append("")
    ref_svi = [f for p in fits["reference exp_svi.py main"] for f in p]
    ref_d = [f for p in fits["reference exp_linear.py main (DWR, fs)"] for f in p]
    same = max(np.abs(np.array(a["rounds"][0]) - np.array(b["ratio"])).max() for a, b in zip(ref_svi, ref_d))
    full = [x for f in ref_svi + ref_d for x in f["full_steps"]]
    lines += [
        "### SVI: the ten rounds",
        "",
        "Every gate fit of every round (data sets × seeds × 10): how often one fit closes a stable "
        "variable (some S ratio ≤ 0.2; with S1..S5 correlated 0.9 one of them can stand in for another) "
        "or opens a V (some V ratio > 0.2), how often the final set differs from S1..S5, and the "
        "ESS / n of the round's weights (mean over fits).",
        "",
        "| implementation | gate fits | closes an S | opens a V | final set ≠ S1..S5 | ESS/n round 1 "
        "| ESS/n round 2 | ESS/n round 10 | community DWR steps, round 1 | rounds 2-10 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in groups["SVI"]:
        fl = [f for p in fits[name] for f in p]
        rr = np.array([r for f in fl for r in f["rounds"]])
        ess = np.array([f["ess"] for f in fl])
        off = sum(set(np.nonzero(np.array(f["ratio"]) > 0.2)[0]) != S_TRUE for f in fl)
        st = np.array([f["dwr_steps"] for f in fl]) if all(f.get("dwr_steps") for f in fl) else None
        steps = (
            f"{int(st[:, 0].min())}-{int(st[:, 0].max())} | {int(st[:, 1:].min())}-{int(st[:, 1:].max())} "
            f"(median {int(np.median(st[:, 1:]))})"
            if st is not None
            else "— | —"
        )
        lines.append(
            f"| {name} | {len(rr)} | {int((rr[:, :5].min(axis=1) <= 0.2).sum())} | "
            f"{int((rr[:, 5:].max(axis=1) > 0.2).sum())} | {off} of {len(fl)} | {ess[:, 0].mean():.3f} | "
            f"{ess[:, 1].mean():.3f} | {ess[:, -1].mean():.3f} | {steps} |"
        )
    lines += [
        "",
        "Reference internals: round 1 of `exp_svi.py` against `exp_linear.py`'s SVIᵈ ratios, "
        f"max |difference| {same:.1e} (same seed, same code path); the reference DWR ran all its steps "
        f"in {sum(full)} of its {len(full)} calls (in the others its only live stop, decorrelation term "
        "≤ 0.001, fired). The torch DWR logs every 500 steps, so its step counts are rounded down to 500.",
        "",
    ]


STEPS = 5000
SVI_STEPS = 20000
R_TRAIN, N_TRAIN = 2.5, 2000
REF_DWR = "torch"
PORT_NOTE = "the float64 port `dwr_community` (the same loss and gradient, see the DWR part), for time."


def main(argv=None) -> int:
    global STEPS, SVI_STEPS, REF_DWR
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True, help="checkout of h-yu16/Sparse_Variable_Independence")
    ap.add_argument("--srdo-repo", help="checkout of Silver-Shen/Stable_Linear_Model_Learning (part srdo)")
    ap.add_argument("--parts", default="dwr,srdo,gates,svi")
    ap.add_argument("--datasets", type=int, default=3)
    ap.add_argument("--svi-datasets", type=int, default=2)
    ap.add_argument(
        "--dwr-steps", type=int, default=5000, help="community DWR steps (reference default 5000)"
    )
    ap.add_argument(
        "--ref-dwr",
        choices=["torch", "port"],
        default="torch",
        help="in the SVI part, the reference loop's DWR: its torch code or the float64 port",
    )
    ap.add_argument(
        "--svi-steps", type=int, default=20000, help="DWR steps per SVI round (exp_svi.py's default 20000)"
    )
    ap.add_argument(
        "--cache", help="JSON file keeping every SVI-part fit, so a rerun only adds what is missing"
    )
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if min(args.datasets, args.svi_datasets, args.dwr_steps, args.svi_steps) < 1:
        print(
            "crosscheck_svi: --datasets, --svi-datasets, --dwr-steps and --svi-steps must be positive",
            file=sys.stderr,
        )
        return 2
    STEPS, SVI_STEPS, REF_DWR = args.dwr_steps, args.svi_steps, args.ref_dwr
    sys.path.insert(0, args.repo)
    parts = args.parts.split(",")
    unknown = [p for p in parts if p not in ("dwr", "srdo", "gates", "svi")]
    if unknown:
        print(f"crosscheck_svi: unknown part {unknown[0]!r}; valid: dwr, srdo, gates, svi", file=sys.stderr)
        return 2
    if "srdo" in parts and not args.srdo_repo:
        print("crosscheck_svi: part srdo needs --srdo-repo", file=sys.stderr)
        return 2
    sets = data(max(args.datasets, args.svi_datasets))
    lines = [
        "# Cross-checks against the authors' code",
        "",
        f"`python benchmarks/crosscheck/crosscheck_svi.py --parts {args.parts} --datasets {args.datasets} "
        f"--svi-datasets {args.svi_datasets} --dwr-steps {args.dwr_steps} --svi-steps {args.svi_steps} "
        f"--ref-dwr {args.ref_dwr}` "
        "(data: the `svi` setting, n = 2000, r_train = 2.5; two seeds per implementation).",
        "",
    ]
    warnings.simplefilter("ignore")
    steps = {
        "dwr": lambda: part_dwr(sets[: args.datasets], lines),
        "srdo": lambda: part_srdo(sets[: args.datasets], lines, args.srdo_repo),
        "gates": lambda: part_gates(sets[: args.datasets], lines),
        "svi": lambda: part_svi(sets[: args.svi_datasets], lines, args.cache),
    }
    for part in parts:
        steps[part]()
        if args.out:  # after every part: a long run keeps what it has
            with open(args.out, "w") as fh:
                fh.write("\n".join(lines) + "\n")
    if not args.out:
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
