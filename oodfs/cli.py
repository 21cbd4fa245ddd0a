"""Command line: ``oodfs bench | leaderboard | compare | plot | report | merge | plugins |
select | theory``.

Each command is a module of :mod:`oodfs.commands`; this module builds the parser and turns an
:class:`~oodfs.validation.OodfsError` into one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import signal
import sys
import warnings

from oodfs.validation import OUTPUT_FAILURES, OodfsError, RunAborted, format_warning, write_failed

EXIT_USAGE = 2
EXIT_ABORTED = 1  # the run stopped for a reason other than the input (disk full, a killed worker)
COMMANDS = (
    "bench",
    "leaderboard",
    "compare",
    "plot",
    "report",
    "merge",
    "plugins",
    "select",
    "suites",
    "theory",
)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (no multi-line usage block): what is
    wrong and where to read more. Subcommand parsers inherit the class."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _command(name: str):
    return importlib.import_module(f".commands.{name}", __package__)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="oodfs",
        description="Benchmark feature selectors under covariate shift (DWR, SRDO and baselines).",
        epilog="Run `oodfs COMMAND --help` for the options of a command.",
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        _command(name).add_parser(sub)
    return parser


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C: workers and forked children are stopped on the way out."""


def _on_sigterm(signum, frame):
    raise _Terminated()


_one_line_warning = format_warning


_default_formatwarning = warnings.formatwarning


def main(argv=None) -> int:
    """Run ``oodfs ARGV`` and return its exit status. As the program (``argv`` None, the main
    thread), an interruption after the command has finished still exits with one line."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.debug:
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.formatwarning = _one_line_warning
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if _main_thread() else None
    _buffer_stdout()
    try:
        status = _command(args.command).run(args)
        sys.stdout.flush()  # a full disk or a file-size limit shows here, not silently at exit
        return status
    except OSError as exc:  # writing the output failed: stdout on a full disk, a figure past RLIMIT_FSIZE
        if args.debug or exc.errno not in OUTPUT_FAILURES:
            raise
        _discard_stdout()
        if isinstance(exc, BrokenPipeError):  # the reader left (`oodfs select ... | head`): nothing to say
            return EXIT_ABORTED
        return _one_line(write_failed(exc, "the output"))
    except OodfsError as exc:
        if args.debug:
            raise
        return _one_line(exc)
    except KeyboardInterrupt as exc:
        print("oodfs: interrupted; finished tasks are saved (continue with --resume)", file=sys.stderr)
        return 143 if isinstance(exc, _Terminated) else 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        warnings.formatwarning = _default_formatwarning
        if argv is None and _main_thread():
            _exit_quietly_on_signals()


def _one_line(exc: OodfsError) -> int:
    """Print the error as one line on stderr; return the exit status it calls for."""
    from oodfs.report.escape import terminal

    print(f"oodfs: error: {terminal(exc)}", file=sys.stderr)  # a name's ESC sequence stays text
    return EXIT_ABORTED if isinstance(exc, RunAborted) else EXIT_USAGE


def _buffer_stdout() -> None:
    """Under PYTHONUNBUFFERED, Python writes standard output straight to its file and drops what
    a short write left over (a file-size limit, a nearly full disk) without an error: a buffer
    in between writes the rest, and so gets the error."""
    if sys.stdout is sys.__stdout__ and isinstance(getattr(sys.stdout, "buffer", None), io.FileIO):
        out = sys.stdout
        sys.stdout = io.TextIOWrapper(
            io.BufferedWriter(out.buffer), encoding=out.encoding, errors=out.errors, line_buffering=True
        )


def _discard_stdout() -> None:
    """Point standard output at the null device, so that Python's flush at exit does not fail
    again with a second message."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # no real descriptor (tests, an embedding host)
        pass


def _interrupted_at_exit(signum, frame):
    print("oodfs: interrupted while exiting", file=sys.stderr)
    os._exit(130)


def _exit_quietly_on_signals() -> None:
    """Once main is done, Python still joins threads and runs the exit handlers of libraries
    (joblib's worker pool, dask): Ctrl-C or SIGTERM then ends the process with status 130 or 143
    and one line, instead of a ``threading._shutdown`` traceback and status 0."""
    signal.signal(signal.SIGINT, _interrupted_at_exit)
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(143))


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
