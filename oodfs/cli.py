"""Command line: ``oodfs bench | leaderboard | compare | plot | report | merge | plugins |
select | suites | theory`` and the commands of installed plugins.

Commands are registered (hook ``oodfs_commands``; the built-in ones in :mod:`oodfs.commands`);
this module builds the parser from the registry and turns an
:class:`~oodfs.validation.OodfsError` into one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import warnings

from oodfs.validation import OUTPUT_FAILURES, OodfsError, RunAborted, format_warning, write_failed

EXIT_USAGE = 2
EXIT_ABORTED = 1  # the run stopped for a reason other than the input (disk full, a killed worker)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (no multi-line usage block): what is
    wrong and where to read more. Subcommand parsers inherit the class."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def commands() -> dict:
    """The registered commands by name (:class:`oodfs.contract.extensions.Command`): the built-in
    ones first, in their order, then those of installed plugins."""
    from oodfs.commands import BUILTIN
    from oodfs.contract.registry import registry

    found = {name: info.cls for name, info in registry().entries("command").items()}
    return {**{n: found[n] for n in BUILTIN if n in found}, **dict(sorted(found.items()))}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="oodfs",
        description="Benchmark feature selectors under covariate shift (DWR, SRDO and baselines).",
        epilog="Run `oodfs COMMAND --help` for the options of a command.",
    )
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in commands().values():
        try:
            command.add_parser(sub)
        except Exception as exc:  # a plugin's broken parser must not take the program down
            if command.name in sub.choices:
                del sub.choices[command.name]
            from oodfs.contract.registry import PluginLoadWarning

            warnings.warn(
                f"oodfs: the command {command.name!r} failed to build its parser and was skipped: "
                f"{type(exc).__name__}: {exc}",
                PluginLoadWarning,
                stacklevel=2,
            )
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
    program = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    # known before the parser exists: building it loads the plugins, whose warnings are one line too
    debug = "--debug" in argv
    if not debug:
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.formatwarning = _one_line_warning
    _announce(argv)
    try:
        return _main(argv)
    finally:
        warnings.formatwarning = _default_formatwarning
        if program and _main_thread():
            _exit_quietly_on_signals()
            from oodfs.run.executors.local import stop_idle_workers

            stop_idle_workers()  # the prompt comes back with the last line, not seconds after it


def _announce(argv: list[str]) -> None:
    """``oodfs bench`` on a terminal says at once that it has begun: building the parser loads
    every plugin (scikit-learn, torch, numba), seconds of silence on a loaded machine
    (docs/PROTOCOL.md section 20). Not off a terminal, where bad input stays one line of error."""
    if argv[:1] != ["bench"] or {"--quiet", "-h", "--help"} & set(argv):
        return
    try:
        if sys.stderr.isatty():
            print("oodfs: bench: loading oodfs and its plugins ...", file=sys.stderr, flush=True)
    except (AttributeError, ValueError, OSError):  # no real stream (an embedding host): nothing to say
        pass


def _main(argv: list[str]) -> int:
    try:
        parser = build_parser()
    except OodfsError as exc:  # two installed plugins offer one name: nothing can run
        return _one_line(exc)
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if _main_thread() else None
    _buffer_stdout()
    try:
        status = commands()[args.command].run(args)
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
