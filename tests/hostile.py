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


_CASES_SCRIPT = """
import contextlib, io, json, sys
from oodfs.cli import main
from oodfs.contract.registry import reset_registry
results = {}
for name, argv in json.loads(sys.stdin.read()).items():
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except BaseException as exc:  # what the test reports: the case escaped the command line
            code, err = "escaped", io.StringIO(f"{type(exc).__name__}: {str(exc)[:300]}")
    reset_registry()
    results[name] = [code, err.getvalue()[-3000:]]
print(json.dumps(results))
"""


def run_cases(cases: dict, *, memory: int = MEMORY_LIMIT, timeout: float = 600, env=None) -> dict:
    """Every ``{name: argv}`` case run by ``oodfs.cli.main`` in ONE new process under ``memory``
    bytes of address space (one import of oodfs for them all): ``{name: (exit status, stderr)}``.
    A case that runs away (memory, time) fails the whole call, naming no case: run it alone."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    import json

    proc = subprocess.run(
        [sys.executable, "-c", _CASES_SCRIPT],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=timeout,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {name: tuple(value) for name, value in json.loads(proc.stdout.splitlines()[-1]).items()}
