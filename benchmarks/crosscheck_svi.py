"""oodfs's SVI, DWR and SRDO against the authors' public code, on the same data.

The reference code is never copied into oodfs: this script imports it from local checkouts::

    git clone https://github.com/h-yu16/Sparse_Variable_Independence        # SVI, community DWR
    git clone https://github.com/Silver-Shen/Stable_Linear_Model_Learning   # SRDO's official code
    python benchmarks/crosscheck_svi.py --repo PATH_TO_SVI --srdo-repo PATH_TO_SRDO

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
``model/STG.py`` against SVI's two gate implementations), ``svi`` (whole SVI).
Writes markdown to ``--out`` (default: stdout).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import sys
import time
import warnings

import numpy as np

S_TRUE = frozenset(range(5))


def jaccard(a, b) -> float:
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 1.0


def top5(X, y, w):
    from oodfs.numeric import weighted_least_squares

    coef = np.abs(weighted_least_squares(X, y, w))
    return frozenset(np.argsort(-coef, kind="stable")[:5].tolist())


def floor_and_cross(sel_a, sel_b):
    """sel_x[d] = list of selections per seed for data set d."""
    fa = (
        np.mean([jaccard(*pair) for s in sel_a for pair in itertools.combinations(s, 2)])
        if len(sel_a[0]) > 1
        else 1.0
    )
    fb = (
        np.mean([jaccard(*pair) for s in sel_b for pair in itertools.combinations(s, 2)])
        if len(sel_b[0]) > 1
        else 1.0
    )
    cross = np.mean([jaccard(a, b) for sa, sb in zip(sel_a, sel_b) for a in sa for b in sb])
    return float(fa), float(fb), float(cross)


def f1(sel) -> float:
    tp = len(set(sel) & S_TRUE)
    return 2 * tp / (len(sel) + len(S_TRUE)) if sel else 0.0


def data(n_sets: int, n: int = 2000, r: float = 2.5):
    from oodfs_plugins.environments.synthetic import Synthetic

    env = Synthetic(
        setting="svi",
        spurious=["V5"],
        exponent=5.0,
        noise_sd=0.3**0.5,
        clip=float("inf"),
        sampler="rejection",
    )
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


def ref_svi(X, y, seed):
    """exp_svi.py's loop, calling the reference's own DWR, STG and get_cov_mask."""
    import torch
    from algorithm.DWR import DWR as ref_dwr
    from utils import get_cov_mask

    from oodfs_plugins.independence.dwr_community import community_dwr_weights

    torch.manual_seed(seed)
    p = X.shape[1]
    cov_mask = get_cov_mask(np.zeros(p))
    history = []
    for _ in range(10):
        if REF_DWR == "torch":
            W = ref_dwr(X, cov_mask=cov_mask, num_steps=STEPS, logger=_Quiet())[:, 0]
        else:
            W = community_dwr_weights(X, cov_mask, steps=STEPS)[0]
        ratio = ref_stg_ratios(X, y, W, int(torch.randint(0, 2**31 - 1, (1,))))
        history = (history + [ratio])[-3:]
        select_ratio = sum(history) / len(history)
        cov_mask = get_cov_mask(select_ratio)
    return frozenset(np.nonzero(select_ratio > 0.2)[0].tolist())


def part_svi(sets, lines):
    from oodfs_plugins.independence.svi import SVI

    impls = {
        "reference exp_svi.py loop": None,
        "oodfs svi, profile paper": dict(dwr="community", gates="reference"),
        "oodfs svi, default": {},
    }
    sels = {k: [] for k in impls}
    times = {k: [] for k in impls}
    for X, y in sets:
        for name, params in impls.items():
            per_seed = []
            for seed in (0, 1):
                t0 = time.perf_counter()
                if params is None:
                    per_seed.append(ref_svi(X, y, seed))
                else:
                    est = SVI(**params, dwr_steps=STEPS, random_state=seed).fit(X, y)
                    per_seed.append(frozenset(np.nonzero(est.selected_)[0].tolist()))
                times[name].append(time.perf_counter() - t0)
            sels[name].append(per_seed)
            print(name, [names(s) for s in per_seed], flush=True, file=sys.stderr)
    lines += [
        "## SVI: the reference loop (exp_svi.py) against oodfs's `svi`",
        "",
        f"DWR steps per round: {STEPS} on both sides (exp_svi.py passes 20 000); the reference loop's DWR: "
        + ("its own torch code." if REF_DWR == "torch" else PORT_NOTE),
        "",
        "| implementation | floor | cross with reference | F1 | median s per fit "
        "| selections (data set: seed 0, seed 1) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    ref = sels["reference exp_svi.py loop"]
    for name, s in sels.items():
        fa, _, cross = floor_and_cross(s, ref)
        detail = "; ".join(f"{i}: {names(a)} {names(b)}" for i, (a, b) in enumerate(s))
        lines.append(
            f"| {name} | {fa:.2f} | {cross:.2f} | {np.mean([f1(x) for p in s for x in p]):.2f} | "
            f"{np.median(times[name]):.0f} | {detail} |"
        )
    lines.append("")


STEPS = 5000
REF_DWR = "torch"
PORT_NOTE = "the float64 port `dwr_community` (the same loss and gradient, see the DWR part), for time."


def main(argv=None) -> int:
    global STEPS, REF_DWR
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
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.datasets < 1 or args.svi_datasets < 1 or args.dwr_steps < 1:
        print("crosscheck_svi: --datasets, --svi-datasets and --dwr-steps must be positive", file=sys.stderr)
        return 2
    STEPS, REF_DWR = args.dwr_steps, args.ref_dwr
    sys.path.insert(0, args.repo)
    parts = args.parts.split(",")
    unknown = [p for p in parts if p not in ("dwr", "srdo", "gates", "svi")]
    if unknown:
        print(f"crosscheck_svi: unknown part {unknown[0]!r}; valid: dwr, srdo, gates, svi", file=sys.stderr)
        return 2
    if "srdo" in parts and not args.srdo_repo:
        print("crosscheck_svi: part srdo needs --srdo-repo", file=sys.stderr)
        return 2
    sets = data(args.datasets)
    lines = [
        "# Cross-checks against the authors' code",
        "",
        f"`python benchmarks/crosscheck_svi.py --parts {args.parts} --datasets {args.datasets} "
        f"--svi-datasets "
        f"{args.svi_datasets} --dwr-steps {args.dwr_steps} --ref-dwr {args.ref_dwr}` "
        "(data: the `svi` setting, n = 2000, r_train = 2.5; two seeds per implementation).",
        "",
    ]
    warnings.simplefilter("ignore")
    steps = {
        "dwr": lambda: part_dwr(sets, lines),
        "srdo": lambda: part_srdo(sets, lines, args.srdo_repo),
        "gates": lambda: part_gates(sets, lines),
        "svi": lambda: part_svi(sets[: args.svi_datasets], lines),
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
