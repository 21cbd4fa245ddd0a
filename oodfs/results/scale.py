"""What each method was measured to cost at the largest sizes it ran at, and the peak memory a run
is expected to need (docs/PROTOCOL.md, "Measured sizes and the memory estimate").

The facts are ``scale_facts.json`` beside this module, written by ``python benchmarks/scale/bench_scale.py
ship`` from the scale grid's measurements (benchmarks/scale/scale_results.jsonl, benchmarks/scale/SCALE.md);
nothing in it is typed by hand.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources

NOT_MEASURED = "not measured"
MB = 2**20


@lru_cache(maxsize=1)
def facts() -> dict:
    """The shipped facts: ``methods`` (name -> its largest measured sizes, the budget stops and the
    fitted memory curve), ``not_run`` (name -> why the scale grid does not run it), ``worker_mb``."""
    text = resources.files("oodfs.results").joinpath("scale_facts.json").read_text()
    return json.loads(text)


def method_scale(name: str) -> dict:
    """A method's measured sizes for ``oodfs plugins`` (JSON-ready): ``measured`` (bool), ``largest``
    (the sizes no other measured size exceeds in both n and d, each with its fit CPU seconds, peak
    memory and machine), ``stopped`` (larger sizes it was not run at, and why) or ``note``; these are
    for a numeric target, and ``binary`` holds the same two for a binary target where the method was
    measured on one (the synthetic binary generator)."""
    f = facts()
    entry = f["methods"].get(name)
    if entry is None:
        why = f["not_run"].get(name)
        return {"measured": False, "note": NOT_MEASURED + (f": {why}" if why else "")}
    out = {"measured": True, "largest": entry["largest"], "stopped": entry["stopped"]}
    if "binary" in entry:
        out["binary"] = {"largest": entry["binary"]["largest"], "stopped": entry["binary"]["stopped"]}
    return out


def describe(name: str) -> str:
    """One short phrase: the largest measured size(s) and their cost (then those on a binary
    target), or "not measured"."""
    s = method_scale(name)
    if not s["measured"]:
        return NOT_MEASURED

    def sizes(points):
        return "; ".join(
            f"n {p['n']:,} x d {p['d']}: {cpu_text(p['cpu_s'])} CPU s, {mb_text(p['peak_mb'])} MB"
            for p in points
        )

    binary = s.get("binary")
    return sizes(s["largest"]) + (f"; binary target: {sizes(binary['largest'])}" if binary else "")


def mb_text(mb: float) -> str:
    """A fit's peak memory growth in MB; below 1 it is the counter's noise (or a lower bound)."""
    return f"{mb:.0f}" if mb >= 1 else "< 1"


def cpu_text(seconds: float) -> str:
    return f"{seconds:.2f}" if seconds < 10 else f"{seconds:.0f}"


def machine_text(m: dict) -> str:
    return f"{m['cpu']}, {m['cpus']} CPUs, {m['memory_gib']:g} GiB, {m['system']}"


#: each size of the curves was measured once, and a fit's peak measured again can be higher (the
#: allocator's state differs from run to run): up to 1/0.88 of the raised curve, docs/PROTOCOL.md 21
MEMORY_MARGIN = 1.25


def fit_memory_mb(name: str, n: int, d: int) -> float | None:
    """A method's estimated fit peak memory in MB at (n, d), meant as an upper bound
    (docs/PROTOCOL.md, "Measured sizes and the memory estimate"): the method's declared bound
    (:data:`FIT_MEMORY_BOUNDS`) where it has one; else its curve log MB = a + b log n + c log d,
    which lies above every size it was fitted on, times :data:`MEMORY_MARGIN`, followed only
    within those sizes: below them it is taken at the smallest (memory does not shrink with the
    table), above them it grows at least in proportion to n and to d. None for a method without
    either (not measured)."""
    bound = FIT_MEMORY_BOUNDS.get(name)
    if bound is not None:
        return bound(n, d)
    entry = facts()["methods"].get(name)
    curve = entry and entry.get("memory_curve")
    if not curve:
        return None
    a, b, c = curve
    span = entry.get("memory_range") or {"n": [n, n], "d": [d, d]}
    (n_lo, n_hi), (d_lo, d_hi) = span["n"], span["d"]
    n_in, d_in = min(max(n, n_lo), n_hi), min(max(d, d_lo), d_hi)
    mb = MEMORY_MARGIN * math.exp(a + b * math.log(n_in) + c * math.log(d_in))
    return mb * max(1.0, n / n_in) ** max(b, 1.0) * max(1.0, d / d_in) ** max(c, 1.0)


def kerhrm_fit_mb(n: int, d: int) -> float:
    """KerHRM's fit peak memory in MB at its default ``width`` (1024) and the largest
    ``n_components`` of its grid (40), from the arrays its fit holds at once (docs/PROTOCOL.md,
    "Measured sizes and the memory estimate"): per row, the float32 tangent features (width (d +
    2) + 1 of them) while the SVD runs, or, once they are freed, the two float64 rows of width
    hidden units that the network's output and its input gradients take, whichever is more;
    beside them, per row, a few copies of the reduced features (float64, n_components wide), the
    SVD's float32 bases and the standardised inputs; once, the float64 block of 1024 rows x width
    x (d + 3) that the tangent features are written from, and 64 MB of compiled code and buffers."""
    width, k = 1024, 40
    per_row = max(4 * (width * (d + 2) + 1), 17 * width) + 64 * k + 16 * (k + 10) + 24 * d
    once = 8 * min(n, 1024) * width * (d + 3) + 64 * MB
    return (n * per_row + once) / MB


#: methods whose fit memory is a bound derived from the arrays the fit allocates rather than a
#: curve through measured sizes: their memory grows differently beyond the sizes measured
FIT_MEMORY_BOUNDS = {"kerhrm": kerhrm_fit_mb}


def data_mb(rows: int, d: int) -> float:
    """One float64 copy of ``rows`` x ``d`` feature values and their targets."""
    return rows * (d + 1) * 8 / MB


def estimate_peak_mb(methods, n_fit: int, d: int, rows: int, workers: int) -> dict:
    """The memory a run adds to the process that starts it, at its peak: for each of ``workers``
    jobs at once, one copy of the job's data (``rows`` x ``d``) and the largest fit of ``methods``
    at ``n_fit`` x ``d``; with more than one worker, each is a new process with its own memory
    (``worker_mb``; with one, the job runs in the starting process, already loaded). Returns
    ``total_mb``, ``method`` (the one needing most; None when no method has a curve), ``fit_mb``,
    ``data_mb``, ``worker_mb`` (0 with one worker) and ``unknown`` (methods without a curve, not
    counted)."""
    fits = {m: fit_memory_mb(m, n_fit, d) for m in dict.fromkeys(methods)}
    known = {m: v for m, v in fits.items() if v is not None}
    method = max(known, key=known.get) if known else None
    fit = known.get(method, 0.0)
    worker = float(facts()["worker_mb"]) if workers > 1 else 0.0
    data = data_mb(rows, d)
    return {
        "total_mb": workers * (worker + data + fit),
        "method": method,
        "fit_mb": fit,
        "data_mb": data,
        "worker_mb": worker,
        "unknown": [m for m, v in fits.items() if v is None],
    }


def available_mb() -> float | None:
    """Memory the machine can give without swapping: MemAvailable of /proc/meminfo (Linux), else
    psutil's ``available``, else None (no check)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    try:
        import psutil
    except ImportError:
        return None
    return psutil.virtual_memory().available / MB


def size_text(mb: float) -> str:
    return f"{mb / 1024:.1f} GiB" if mb >= 1024 else f"{mb:.0f} MiB" if mb >= 10 else f"{mb:.2f} MiB"
