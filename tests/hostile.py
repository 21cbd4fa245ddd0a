"""Running a command the way a hostile input or a failing machine would meet it: in a new process,
under a memory limit (a regression that allocates without bound fails the test, it does not
take the machine down), optionally under a file-size limit."""

import resource
import subprocess
import sys

#: address space a command may use in these tests: oodfs with torch imported needs well under it
MEMORY_LIMIT = 3 << 30


def run_limited(
    *args, memory: int = MEMORY_LIMIT, file_size: int | None = None, timeout: float = 300, **kw
) -> subprocess.CompletedProcess:
    """``oodfs ARGS`` in a new process under ``memory`` bytes of address space (and ``file_size``
    bytes per written file); stdout and stderr captured as text unless ``stdout`` is given."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    kw.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(
        [sys.executable, "-m", "oodfs.cli", *args],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
        timeout=timeout,
        **kw,
    )
