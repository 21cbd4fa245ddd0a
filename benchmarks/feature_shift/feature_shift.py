"""Do selected sets degrade less than every feature when a feature goes missing at test time?

The feature-shift axis (docs/PROTOCOL.md, "Feature shift") on the synthetic suite and real suites:
each run below is ``oodfs bench`` with ``--feature-shift``, and the report is the analysis object's
paired tests (each method against ``all_features``, Wilcoxon signed-rank, Holm) on three metrics of
the suite's loss: unshifted (``<loss>_mean``), shifted (``<loss>_fshift_mean``) and the increase
from one to the other (``<loss>_fshift_increase``).

    python benchmarks/feature_shift/feature_shift.py run --root results/feature_shift
    python benchmarks/feature_shift/feature_shift.py report --root results/feature_shift
    python benchmarks/feature_shift/feature_shift.py tabfsbench --repo PATH

``run`` resumes (a finished task is kept); ``report`` writes VERDICTS.md beside this script;
``tabfsbench`` reads TabFSBench's ``run_experiment.py`` from PATH (a checkout, or a bare git
directory: read at its HEAD), never a copy of it, and writes TABFSBENCH.md: its "most relevant
feature removed" setting at degree 1 against oodfs's ``drop-top`` with ``train-mean`` on one data set
of the ``auto`` suite (which column, which imputed values, the ridge RMSE of both).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
#: the methods of every run: the yardstick, two stable-learning weighters, three baselines
METHODS = "all_features,correlation,lasso,rf,dwr,srdo"
#: (folder, suite, shift, handling, extra options): each run at most about 15 minutes on one core
RUNS = [
    # the synthetic suite: one setting, two training environments x 5 runs = 10 blocks; ridge
    # downstream (the suite's MLP at n = 10,000 is the expensive part and not the question here)
    ("synthetic-drop-top", "synthetic", "drop-top", "train-mean",
     dict(settings=("poly",), r_train=(2.5, 3.0), runs=5, downstream=("ridge",))),
    ("synthetic-missing0.3", "synthetic", "missing:0.3", "train-mean",
     dict(settings=("poly",), r_train=(2.5, 3.0), runs=5, downstream=("ridge",))),
    ("auto-drop-top", "auto", "drop-top", "train-mean", dict(downstream=("ridge",))),
    ("auto-drop-top-refit", "auto", "drop-top", "refit", dict(downstream=("ridge",))),
    ("auto-missing0.3", "auto", "missing:0.3", "train-mean", dict(downstream=("ridge",))),
    ("wage-drop-top", "wage", "drop-top", "train-mean", dict(downstream=("ridge",))),
    ("wagepan-drop-top", "wagepan", "drop-top", "train-mean", dict(downstream=("ridge",))),
    ("computers-drop-top", "computers", "drop-top", "train-mean", dict(downstream=("ridge",))),
    ("txhousing-drop-top", "txhousing", "drop-top", "train-mean", dict(downstream=("ridge",))),
    ("auto-scale3", "auto", "scale:3", "train-mean", dict(downstream=("ridge",))),
    ("wage-missing0.3", "wage", "missing:0.3", "train-mean", dict(downstream=("ridge",))),
    ("wagepan-missing0.3", "wagepan", "missing:0.3", "train-mean", dict(downstream=("ridge",))),
    ("computers-missing0.3", "computers", "missing:0.3", "train-mean", dict(downstream=("ridge",))),
    ("computers-scale3", "computers", "scale:3", "train-mean", dict(downstream=("ridge",))),
    # a binary suite: its unit is the training environment, two of them, so no verdict can be
    # reached (the run shows the binary path: log_loss_fshift_*)
    ("churn-drop-top", "churn", "drop-top", "train-mean", dict(downstream=("logistic",))),
]  # fmt: skip


def run(root: Path, only: list[str] | None, jobs: int) -> None:
    from oodfs.run.bench import run_bench

    for folder, suite, shift, impute, extra in RUNS:
        if only and folder not in only:
            continue
        t0 = time.perf_counter()
        run_bench(
            suite=suite,
            out=root / folder,
            methods=tuple(METHODS.split(",")),
            feature_shift=shift,
            feature_shift_impute=impute,
            resume=True,
            jobs=jobs,
            figures=False,
            progress=False,
            reference_verdicts=False,
            show=None,
            **extra,
        )
        print(f"{folder}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def _loss(report) -> str:
    return "log_loss" if report.task == "binary" else "rmse"


def verdicts(root: Path) -> pd.DataFrame:
    """Every method against all_features on the unshifted, shifted and increase metrics, per run."""
    from oodfs.report.analysis import Analysis
    from oodfs.report.report import Report

    frames = []
    for folder, suite, shift, impute, extra in RUNS:
        path = root / folder
        if not (path / "results.sqlite").exists() and not any(path.glob("*.sqlite")):
            continue
        base = Report.from_path(path, downstream=extra["downstream"][0])
        loss = _loss(base)
        metrics = [f"{loss}_mean", f"{loss}_fshift_mean", f"{loss}_fshift_increase"]
        report = Report.from_path(path, downstream=extra["downstream"][0], columns=metrics)
        analysis = Analysis(report)
        t = analysis.all_tests()
        t = t[t["family"] == "methods"]
        frames.append(
            t.assign(
                run=folder,
                suite=suite,
                shift=shift,
                handling=impute,
                downstream=report.downstream,
                unit=analysis.family.unit,
                mean_k=_mean_k(report),
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _mean_k(report) -> str:
    """Each method's mean chosen k (all_features: every feature), as one note per run."""
    chosen = report.chosen
    return ", ".join(f"{m} {g['k'].mean():.1f}" for m, g in chosen.groupby("method", sort=False))


def write_verdicts(root: Path, out: Path) -> None:
    t = verdicts(root)
    if t.empty:
        raise SystemExit(f"no results under {root}: run `feature_shift.py run --root {root}` first")
    lines = [
        "# Feature shift: each method against all_features (generated)",
        "",
        "Written by `python benchmarks/feature_shift/feature_shift.py report --root ROOT`; the runs are "
        "`RUNS` in that script. Per run (suite, shift, handling, downstream model) and metric: the "
        "paired effect (method minus all_features, mean over units, with its 95 % interval), the "
        "Wilcoxon signed-rank p Holm-adjusted over the run's methods, and the verdict. A negative "
        "effect is a smaller loss (or a smaller increase) than all_features'.",
        "",
    ]
    for run_name, g in t.groupby("run", sort=False):
        first = g.iloc[0]
        lines += [
            f"## {run_name}",
            "",
            f"Suite `{first['suite']}`, shift `{first['shift']}`, handling `{first['handling']}`, "
            f"downstream `{first['downstream']}`, unit of replication `{first['unit']}`. Mean chosen "
            f"k: {first['mean_k']}.",
            "",
            "| metric | method | n | all_features | method | effect | 95 % interval | p (Holm) | verdict |",
            "| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | --- |",
        ]
        for _, r in g.iterrows():
            lines.append(
                f"| {r['metric']} | {r['method_a']} | {int(r['n_pairs'])} | {r['mean_b']:.4f} | "
                f"{r['mean_a']:.4f} | {r['mean_diff']:+.4f} | [{r['diff_low']:+.4f}, {r['diff_high']:+.4f}] "
                f"| {r['p_adjusted']:.3g} | {r['verdict']} |"
            )
        lines.append("")
    out.write_text("\n".join(lines))
    summary = t.pivot_table(index=["run", "method_a"], columns="metric", values="verdict", aggfunc="first")
    print(summary.to_string())


# -- TabFSBench ------------------------------------------------------------------------------
def _their_source(repo: Path) -> tuple[str, str]:
    """TabFSBench's run_experiment.py and the commit it was read at: from a checkout's work tree, or
    from a bare git directory's HEAD."""
    if (repo / "run_experiment.py").exists():
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        return (repo / "run_experiment.py").read_text(), commit or "work tree"
    git = ["git", "--git-dir", str(repo)]
    text = subprocess.run(
        [*git, "show", "HEAD:run_experiment.py"], capture_output=True, text=True, check=True
    )
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    return text.stdout, commit.stdout.strip()


def _their_functions(source: str) -> dict:
    """TabFSBench's ``pearson`` and ``split_dataset``, compiled from their file as it is (the module
    itself imports their model zoo, which this comparison does not need)."""
    import itertools
    import math

    from sklearn.model_selection import train_test_split

    tree = ast.parse(source)
    wanted = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in ("pearson", "split_dataset")
    ]
    namespace = {
        "pd": pd,
        "np": np,
        "train_test_split": train_test_split,
        "itertools": itertools,
        "math": math,
    }
    exec(compile(ast.Module(body=wanted, type_ignores=[]), "run_experiment.py", "exec"), namespace)
    return namespace


def tabfsbench(repo: Path, out: Path) -> None:
    import os
    import tempfile

    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from oodfs.run.dataset import make_dataset
    from oodfs.run.feature_shift import parse_feature_shift, shift_rows, top_feature
    from oodfs.run.suite import load_suite
    from oodfs_plugins.downstream import RIDGE_ALPHAS

    source, commit = _their_source(repo)
    theirs = _their_functions(source)
    suite = load_suite("auto")
    key = next(iter(suite.data_keys()))
    data = make_dataset(suite, key)
    names = list(data.feature_names)
    # one table: the data set's training rows and its first test environment's rows, target last
    _, X_test, y_test = data.tests[0]
    X = np.vstack([data.X_train, X_test])
    y = np.concatenate([data.y_train, y_test])
    df = pd.DataFrame(X, columns=names).assign(target=y)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "dataset" / "oodfs").mkdir(parents=True)
        df.to_csv(Path(tmp) / "dataset" / "oodfs" / "oodfs.csv", index=False)
        here = os.getcwd()
        os.chdir(tmp)
        try:  # their split (80 / 20, random_state 42); "single": one column removed at a time
            train_set, test_sets = theirs["split_dataset"]("oodfs", "single", "all")
            _, most_sets = theirs["split_dataset"]("oodfs", "most", "all")
            their_order = list(theirs["pearson"](pd.read_csv("dataset/oodfs/oodfs.csv"), ascending=False))
        finally:
            os.chdir(here)
    # "single" removes the columns in ascending |r| order, entry i (from 1) the i-th: the last entry
    # is the most relevant column removed alone, their `most` setting at degree 1
    test_set, their_shifted = test_sets[0], test_sets[len(names)]
    # their `most` list appends one DataFrame, changed in place, once per degree: every entry is
    # the same object, with every column removed when the function returns
    most_aliased = all(t is most_sets[1] for t in most_sets[1:])
    most_changed = [
        c for c in names if not np.array_equal(most_sets[1][c].to_numpy(float), test_set[c].to_numpy(float))
    ]
    Xtr, ytr = train_set[names].to_numpy(float), train_set["target"].to_numpy(float)
    Xte, yte = test_set[names].to_numpy(float), test_set["target"].to_numpy(float)
    # oodfs's definition on the same split: the column most correlated on the training rows alone
    ours_top = top_feature(Xtr, ytr)
    ours = shift_rows(parse_feature_shift("drop-top"), Xte, Xtr.mean(axis=0), ours_top, seed=0)
    theirs_X = their_shifted[names].to_numpy(float)
    their_top = [j for j in range(len(names)) if not np.array_equal(theirs_X[:, j], Xte[:, j])]
    same_matrix = np.array_equal(ours, theirs_X)
    max_diff = float(np.max(np.abs(ours - theirs_X)))
    # the same downstream model (oodfs's ridge) on every feature, scored on both shifted test sets
    model = make_pipeline(StandardScaler(), RidgeCV(alphas=RIDGE_ALPHAS)).fit(Xtr, ytr)

    def rmse(M):
        return float(np.sqrt(np.mean((model.predict(M) - yte) ** 2)))

    # on oodfs's own split (training rows vs a test environment), which column each definition takes
    r_train_top = top_feature(data.X_train, data.y_train)
    full = pd.DataFrame(np.vstack([data.X_train, X_test]), columns=names).assign(target=y)
    their_on_ours = list(theirs["pearson"](full, ascending=False))[0]
    lines = [
        "# TabFSBench's feature shift against oodfs's (generated)",
        "",
        f"Written by `python benchmarks/feature_shift/feature_shift.py tabfsbench --repo PATH`, reading "
        f"TabFSBench's `run_experiment.py` at commit `{commit}` (its functions `pearson` and "
        "`split_dataset`, compiled from that file; nothing of it is kept in oodfs). Data: the first data "
        f"set of the `auto` suite ({key.setting}, r_train {key.r_train}, run {key.run}): its "
        f"{len(data.y_train)} training rows and the {len(y_test)} rows of test environment "
        f"{data.tests[0][0]!r}, one table of {len(names)} features and the target.",
        "",
        "Their setting: the most relevant feature removed alone (the one feature with the largest "
        "|Pearson r| with the target, its test values replaced by the training mean; a categorical one "
        "by the training mode), read from their `single` test sets (one column removed at a time, in "
        "ascending |r| order: the last is the most relevant). oodfs's: `--feature-shift drop-top "
        "--feature-shift-impute train-mean`.",
        "",
        f"Their `most` test sets, which should remove 1, 2, ... of the most relevant columns: every "
        f"entry the same DataFrame object: {'yes' if most_aliased else 'no'}; columns changed in its "
        f"degree-1 entry when `split_dataset` returns: {len(most_changed)} of {len(names)} "
        "(the list appends one DataFrame changed in place, so each degree reads as the last). That is why "
        "the comparison reads `single`, not `most`.",
        "",
        "| on TabFSBench's split (80 / 20, random_state 42) | value |",
        "| --- | --- |",
        f"| TabFSBench's removed column (ranked on every row of the table, test rows included) | "
        f"`{their_order[0]}` (changed columns: {', '.join(names[j] for j in their_top)}) |",
        f"| oodfs's removed column (ranked on the training rows alone) | `{names[ours_top]}` |",
        f"| shifted test matrices equal, cell for cell | {'yes' if same_matrix else 'no'} "
        f"(largest difference {max_diff:.3g}) |",
        f"| ridge on every feature, RMSE unshifted | {rmse(Xte):.6f} |",
        f"| ridge, RMSE with TabFSBench's shift | {rmse(theirs_X):.6f} |",
        f"| ridge, RMSE with oodfs's shift | {rmse(ours):.6f} |",
        "",
        "On oodfs's own split (training rows against the test environment), the column oodfs removes "
        f"is `{names[r_train_top]}`; TabFSBench's ranking on the pooled table (test rows included) "
        f"would remove `{their_on_ours}`.",
        "",
    ]
    out.write_text("\n".join(lines))
    print("\n".join(lines))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--root", type=Path, default=Path("results/feature_shift"))
    r.add_argument("--only", nargs="*", help="run these folders of RUNS only")
    r.add_argument("--jobs", type=int, default=1)
    rep = sub.add_parser("report")
    rep.add_argument("--root", type=Path, default=Path("results/feature_shift"))
    rep.add_argument("--out", type=Path, default=HERE / "VERDICTS.md")
    t = sub.add_parser("tabfsbench")
    t.add_argument("--repo", type=Path, required=True, help="a TabFSBench checkout or bare git directory")
    t.add_argument("--out", type=Path, default=HERE / "TABFSBENCH.md")
    args = p.parse_args(argv)
    if args.command == "run":
        run(args.root, args.only, args.jobs)
    elif args.command == "report":
        write_verdicts(args.root, args.out)
    else:
        tabfsbench(args.repo, args.out)


if __name__ == "__main__":
    main()
