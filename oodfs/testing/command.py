"""The checks of a command of the oodfs program (oodfs.testing.check_command)."""

from __future__ import annotations

from oodfs.testing._core import _declared, _ensure, _kind_check


def check_command(command) -> None:
    """Check an :class:`oodfs.contract.extensions.Command`: its name is a command name, it adds a
    parser of that name to a sub-parsers action, and ``oodfs NAME --help`` exits 0."""
    import argparse
    import contextlib
    import io
    import re

    from oodfs.contract.extensions import Command

    def metadata():
        _declared(command)
        _ensure(isinstance(command, Command), "not an oodfs.contract.extensions.Command")
        _ensure(re.fullmatch(r"[a-z][a-z0-9-]*", command.name), f"{command.name!r} is not a command name")
        _ensure(callable(command.run), "run is not callable")

    def parser():
        top = argparse.ArgumentParser(prog="oodfs")
        sub = top.add_subparsers(dest="command")
        command.add_parser(sub)
        _ensure(
            list(sub.choices) == [command.name],
            f"add_parser added {list(sub.choices)}, not [{command.name!r}]",
        )
        with contextlib.redirect_stdout(io.StringIO()) as out:
            try:
                top.parse_args([command.name, "--help"])
            except SystemExit as exc:
                _ensure(exc.code in (0, None), f"`oodfs {command.name} --help` exited with {exc.code}")
        _ensure(command.name in out.getvalue(), "the help does not name the command")

    _kind_check(
        f"command {getattr(command, 'name', command)!r}",
        {"check_command_metadata": metadata, "check_command_parser": parser},
    )
