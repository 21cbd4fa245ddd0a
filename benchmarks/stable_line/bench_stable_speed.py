"""HRM's and RSW's compiled training loops against the numpy loops they replaced, in one process.

    python benchmarks/stable_line/bench_stable_speed.py [--repeats 3] [--short] [--old-commit c2dfd7a] \
        [--out FILE.md]

The numpy implementation is read from git (``plugins/independence/{hrm,rsw}.py`` at
``--old-commit``, the last commit before the numba kernels) into throwaway modules; the current
one is the installed plugin. Data: the markov suite's process (markov_boundary environment,
poly, r = 2.5, d = 13) at n = 500, the suite's ``n500`` setting. One fit = the method at one
grid point (the default one, and RSW's most expensive, 8 weightings), ``random_state`` 0, with
BLAS held to one thread (threadpoolctl) for both: the numpy RSW loop's ``w @ F`` product is a
BLAS call whose threads stall when the cores are shared, which would inflate the ratio (the
compiled RSW loop makes the same product, held to one thread itself). Times are medians of
``--repeats`` runs, old and new alternated; the ratio is what carries over to another machine.
``max |diff|`` is the largest difference of the two implementations' gate means (the scores).

With ``--out`` the section "Compiled HRM and RSW" of that file is replaced (or appended).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from oodfs_plugins.environments.markov import MarkovBoundaryEnv
from oodfs_plugins.independence.hrm import HRM
from oodfs_plugins.independence.rsw import RSW

ROOT = Path(__file__).resolve().parents[2]
HEADING = "## Compiled HRM and RSW: the numba loops against the numpy loops they replaced"
CASES = [
    ("hrm", {}),
    ("rsw", {}),
    ("rsw", {"alpha": 1e8, "n_envs": 8}),
]
#: ``--short``: one of HRM's five rounds (each round runs the same 9 000 Adam steps and a fresh
#: clustering) and RSW's 2 000 pretraining steps with 2 000 of its 6 000 weighted steps
SHORT = {"hrm": {"outer_iters": 1}, "rsw": {"epochs": 2000}}


def old_modules(commit):
    """The numpy implementation of ``commit`` as modules ``old_hrm`` and ``old_rsw``."""
    folder = Path(tempfile.mkdtemp(prefix="oodfs-old-stable-"))
    for name in ("hrm", "rsw"):
        text = subprocess.run(
            ["git", "show", f"{commit}:plugins/independence/{name}.py"],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        (folder / f"old_{name}.py").write_text(text.replace("from .hrm import", "from old_hrm import"))
    sys.path.insert(0, str(folder))
    mods = {}
    for name in ("hrm", "rsw"):
        spec = importlib.util.spec_from_file_location(f"old_{name}", folder / f"old_{name}.py")
        mods[name] = importlib.util.module_from_spec(spec)
        sys.modules[f"old_{name}"] = mods[name]
        spec.loader.exec_module(mods[name])
    return mods["hrm"].HRM, mods["rsw"].RSW


def timed(cls, params, X, y):
    t0 = time.perf_counter()
    with threadpool_limits(1):
        values = cls(**params, random_state=0)._fit_detailed(X, y).values
    return time.perf_counter() - t0, values


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old-commit", default="c2dfd7a")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--short", action="store_true", help="a shorter schedule (see SHORT)")
    args = ap.parse_args(argv)
    old = dict(zip(("hrm", "rsw"), old_modules(args.old_commit)))
    new = {"hrm": HRM, "rsw": RSW}
    X, y = MarkovBoundaryEnv().sample(2.5, 500, 0)
    for name, cls in new.items():  # compile (numba caches the kernels on disk)
        cls(pretrain_epochs=2, epochs=2, random_state=0).fit(X, y)
    rows = []
    for name, params in CASES:
        params = {**params, **(SHORT[name] if args.short else {})}
        t_old, t_new, diff = [], [], 0.0
        for _ in range(args.repeats):
            s_new, v_new = timed(new[name], params, X, y)
            s_old, v_old = timed(old[name], params, X, y)
            t_new.append(s_new), t_old.append(s_old)
            diff = max(diff, float(np.abs(v_new - v_old).max()))
        row = (name, params, statistics.median(t_old), statistics.median(t_new), diff)
        rows.append(row)
        print(row, flush=True)
    lines = [
        HEADING,
        "",
        f"`python benchmarks/stable_line/bench_stable_speed.py --repeats {args.repeats} --old-commit "
        f"{args.old_commit}" + (" --short" if args.short else "") + "` "
        "(its docstring says what is timed): seconds per fit at n = 500, d = 13 (median), the speed-up "
        "of the compiled loop, and the largest difference of the gate means (the scores).",
        "",
        "| method | point | numpy s | numba s | speed-up | max abs diff of the scores |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, params, s_old, s_new, diff in rows:
        point = ", ".join(f"{k} {v:g}" for k, v in params.items()) or "default"
        lines.append(f"| {name} | {point} | {s_old:.2f} | {s_new:.2f} | {s_old / s_new:.1f}x | {diff:.1e} |")
    section = "\n".join(lines) + "\n"
    print(section)
    if args.out:
        text = args.out.read_text() if args.out.exists() else ""
        if HEADING in text:
            head, rest = text.split(HEADING, 1)
            tail = rest[rest.find("\n## ") :] if "\n## " in rest else ""
            text = head + section + tail
        else:
            text = text.rstrip("\n") + "\n\n" + section
        args.out.write_text(text)


if __name__ == "__main__":
    main()
