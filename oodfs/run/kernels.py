"""One set of numeric kernels on every machine (standard library only: it runs before numpy loads).

OpenBLAS, numba, torch and MKL each pick the kernels of the CPU they find. Kernels of different
CPUs add in different orders, so a least-squares solve or an MLP's training differs in its last
bits between machines, and a near tie can then turn: the same code gave an AUC 1e-4 apart and a
downstream MSE 4e-4 apart on two machines. oodfs asks every library for its AVX2 ("Haswell")
kernels, which every x86-64 CPU since 2013 runs, so that a run gives the same bits on any such
machine and a shipped reference replays bit for bit (docs/PROTOCOL.md section 6, "One result on
every machine"). The variables are set when oodfs is imported before numpy (the ``oodfs``
command, and every worker it starts, inherits them); a variable the user set is left as it is;
``OODFS_KERNELS=native`` leaves every library its own choice. What a process ran with is
recorded in each invocation's provenance (:func:`oodfs.results.provenance.numeric_platform`).
"""

from __future__ import annotations

import os
import platform
import sys

#: the variable that turns the pinning off (``native``)
SWITCH = "OODFS_KERNELS"
#: library -> the variable that pins its kernels to AVX2, read when the library loads
PINNED = {
    "OPENBLAS_CORETYPE": "Haswell",  # numpy's and scipy's BLAS and LAPACK
    "NUMBA_CPU_NAME": "haswell",  # the code numba compiles (the MLP kernel, the trees' builder)
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's vectorised operations
    # torch's BLAS (MKL): its conditional numerical reproducibility mode. COMPATIBLE is the one
    # branch MKL computes alike on Intel and non-Intel CPUs; its AVX2 branch runs on Intel CPUs
    # only (elsewhere MKL falls back to its automatic choice): docs/PROTOCOL.md section 6
    "MKL_CBWR": "COMPATIBLE",
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # torch's oneDNN primitives
}


def avx2_cpu() -> bool:
    """Whether this is a Linux x86-64 machine whose CPU has AVX2 and FMA (the pinned kernels' needs;
    elsewhere they would stop the process with an illegal instruction, so nothing is pinned)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return {"avx2", "fma"} <= flags
    except OSError:
        pass
    return False


def pin() -> bool:
    """Set :data:`PINNED` in this process's environment (what the user set stays) unless
    ``OODFS_KERNELS=native``, numpy is loaded already (its BLAS chose: too late) or the CPU cannot
    run them. Returns whether the kernels are pinned from here on."""
    if os.environ.get(SWITCH, "").lower() == "native" or "numpy" in sys.modules or not avx2_cpu():
        return False
    for name, value in PINNED.items():
        os.environ.setdefault(name, value)
    return True


def numeric_platform() -> dict:
    """What decides the last bits of a floating-point result besides the code: the CPU kind, the
    kernels each library runs and the variables that pinned them (docs/PROTOCOL.md section 6,
    "One result on every machine"). Loads numpy: call it once the run's libraries are loaded."""
    import numpy as np
    from threadpoolctl import threadpool_info

    blas = {str(p.get("architecture")) for p in threadpool_info() if p.get("user_api") == "blas"}
    try:
        simd = np.show_config(mode="dicts")["SIMD Extensions"]["found"]
    except (KeyError, TypeError):  # numpy before 1.26
        simd = None
    out = {
        "machine": platform.machine(),
        "blas": sorted(blas),
        "numpy_simd": simd,
        "variables": {v: os.environ[v] for v in (SWITCH, *PINNED) if v in os.environ},
    }
    if "torch" in sys.modules:
        out["torch"] = sys.modules["torch"].backends.cpu.get_cpu_capability()
    return out


pin()
