"""Command line: ``oodfs bench | leaderboard | compare | plot | report | merge | plugins |
select | suites | theory`` and the commands of installed plugins.

Commands are registered (hook ``oodfs_commands``; the built-in ones in :mod:`oodfs.commands`);
this module builds the parser from the registry and turns an
:class:`~oodfs.validation.OodfsError` into one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import signal
import sys
import warnings

from oodfs.validation import OodfsError, RunAborted, format_warning

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
    argv = sys.argv[1:] if argv is None else list(argv)
    # known before the parser exists: building it loads the plugins, whose warnings are one line too
    debug = "--debug" in argv
    if not debug:
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.formatwarning = _one_line_warning
    try:
        return _main(argv)
    finally:
        warnings.formatwarning = _default_formatwarning


def _main(argv: list[str]) -> int:
    try:
        parser = build_parser()
    except OodfsError as exc:  # two installed plugins offer one name: nothing can run
        print(f"oodfs: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if _main_thread() else None
    try:
        return commands()[args.command].run(args)
    except OodfsError as exc:
        if args.debug:
            raise
        from oodfs.report.escape import terminal

        print(f"oodfs: error: {terminal(exc)}", file=sys.stderr)  # a name's ESC sequence stays text
        return EXIT_ABORTED if isinstance(exc, RunAborted) else EXIT_USAGE
    except KeyboardInterrupt as exc:
        print("oodfs: interrupted; finished tasks are saved (continue with --resume)", file=sys.stderr)
        return 143 if isinstance(exc, _Terminated) else 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
