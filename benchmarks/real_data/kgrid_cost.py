"""What a suite's k grid costs: the downstream training of one data set's subsets at the fixed k
against at every size of the grid, measured side by side (alternating, median of several
repeats) with every method's fits replayed from stored results (docs/PROTOCOL.md section 10,
"The k grid"). The selectors' fits are the same either way and are not timed.

    python benchmarks/real_data/kgrid_cost.py --suite ames --stored results/realdata/ames --blocks 2 \
        --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))

from replay import replayed_fit_method  # noqa: E402

from oodfs.contract.registry import registry  # noqa: E402
from oodfs.results.store import load_results  # noqa: E402
from oodfs.run.dataset import make_dataset  # noqa: E402
from oodfs.run.downstream_models import DownstreamCache  # noqa: E402
from oodfs.run.evaluate import point_ks, subsets_needed  # noqa: E402
from oodfs.run.suite import load_suite, with_task  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="ames")
    p.add_argument("--stored", required=True, help="results of the suite (a folder or .parquet) to replay")
    p.add_argument("--blocks", type=int, default=2, help="data sets (r_train, run) timed")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    suite, _ = with_task(load_suite(args.suite), registry())
    fit_method = replayed_fit_method(load_results(args.stored))
    out = {}
    with threadpool_limits(1):
        for key in list(suite.data_keys())[: args.blocks]:
            data = make_dataset(suite, key)
            d = data.X_train.shape[1]
            fits = {m: fit_method(suite, key, m, data) for m in suite.methods}
            wanted = {
                "fixed": [s for f in fits.values() for s in subsets_needed(f, point_ks(suite, f, d)[:1])],
                "grid": [s for f in fits.values() for s in subsets_needed(f, point_ks(suite, f, d))],
            }
            for model in suite.downstream:
                times = {"fixed": [], "grid": []}
                for _ in range(args.repeats):
                    for which, subsets in wanted.items():  # alternated: the machine's load hits both
                        seed = key.seed(suite.seed, "downstream")
                        cache = DownstreamCache.for_profile(data, seed, suite.profile, model, suite.task)
                        t0 = time.perf_counter()
                        cache.evaluate(subsets)
                        times[which].append(time.perf_counter() - t0)
                fixed, grid = statistics.median(times["fixed"]), statistics.median(times["grid"])
                out[f"{key.r_train}/{key.run}/{model}"] = {
                    "subsets fixed": len(set(wanted["fixed"])),
                    "subsets grid": len(set(wanted["grid"])),
                    "seconds fixed": round(fixed, 3),
                    "seconds grid": round(grid, 3),
                    "ratio": round(grid / fixed, 2),
                }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
