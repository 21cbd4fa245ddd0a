"""The extension points around the methods: execution backends, leaderboard formats, commands.

Each is a plugin kind with its own hook (:mod:`oodfs.contract.hookspecs`), registered, listed by
``oodfs plugins`` and checked by the conformance kit (:mod:`oodfs.testing`) like the methods.
Selection rules, the fourth such kind, are declared in :mod:`oodfs.contract.selection`.

* A **backend** is a :class:`Backend` subclass: where a run's jobs execute. It declares the
  options it takes (``oodfs bench --backend NAME --backend-option KEY=VALUE``), so that no
  backend's option is an option of every run.
* A **leaderboard format** is a :class:`LeaderboardFormat` declaration (an object): a name, the
  language of its text (which decides the escaping it must do) and a function from a
  :class:`oodfs.report.leaderboard.Leaderboard` to text.
* A **command** is a :class:`Command` declaration: ``oodfs NAME ...`` with its argument parser
  and the function that runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from oodfs.validation import OodfsError

#: the languages a leaderboard format may declare: each has its escaping test in the conformance
#: kit (oodfs.testing.check_output_format), run on hostile method and setting names
FORMAT_LANGUAGES = ("markdown", "html", "csv", "latex", "text")


@dataclass(frozen=True)
class BackendOption:
    """One option of a backend: ``--backend-option NAME=VALUE`` on the command line."""

    name: str
    help: str
    parse: Callable[[str], object] = str  # the text -> the value (raise ValueError when invalid)


class Backend:
    """Base class of an execution backend: where the jobs of a run execute.

    Subclasses set ``name`` (and a docstring whose first line describes them), ``options`` (the
    :class:`BackendOption` s they accept) and ``commits_in_worker``, and implement :meth:`run`.
    Every job is independent and seeded by its own coordinates, so a backend never changes a
    number: it only decides where and in which order the jobs run.

    A backend that sets ``reports_progress`` receives ``progress=receive`` in :meth:`run` when the
    run shows its progress: it runs each call inside ``oodfs.contract.progress.outlet(deliver)``
    and has ``deliver`` bring each message the job sends to ``receive(message)`` in this process
    while the job runs (messages are short lists of strings and numbers). Without it, a run's
    progress advances only as jobs finish.
    """

    name: str = ""
    #: True when the workers share this machine's results folder and commit their own tasks;
    #: False when the results come back to this process to be committed (a remote cluster)
    commits_in_worker: bool = True
    options: tuple[BackendOption, ...] = ()
    #: whether :meth:`run` takes ``progress`` and carries the jobs' progress messages (see above)
    reports_progress: bool = False

    def run(self, fn: Callable, calls: Sequence[tuple], *, jobs: int, **options) -> Iterator:
        """Call ``fn(*args)`` for each ``args`` in ``calls`` with ``jobs`` workers and yield the
        results in the order they finish. ``options``: the parsed values of :attr:`options`
        given for this run (absent ones are not passed)."""
        raise NotImplementedError

    def uses_local_cpus(self, **options) -> bool:
        """Whether the ``jobs`` workers run on this machine's CPUs (then ``--jobs`` is capped at
        their number unless forced); False for a cluster elsewhere."""
        return True

    @classmethod
    def parse_options(cls, given: dict[str, str]) -> dict:
        """``{name: text}`` -> ``{name: value}``, or an OodfsError naming the option and the valid ones."""
        declared = {o.name: o for o in cls.options}
        parsed = {}
        for name, text in given.items():
            if name not in declared:
                valid = ", ".join(declared) or "none"
                raise OodfsError(
                    f"--backend-option {name}: the {cls.name} backend has no such option; valid: {valid}"
                )
            try:
                parsed[name] = declared[name].parse(text)
            except (TypeError, ValueError) as exc:
                raise OodfsError(f"--backend-option {name}={text!r} for {cls.name}: {exc}") from None
        return parsed


@dataclass(frozen=True)
class LeaderboardFormat:
    """A leaderboard format: ``oodfs leaderboard --format NAME``.

    ``render`` takes a :class:`oodfs.report.leaderboard.Leaderboard` and returns the text.
    Method and setting names are data that may hold markup: ``language`` (one of
    :data:`FORMAT_LANGUAGES`) names the escaping the text must have, and the conformance kit
    renders a leaderboard of hostile names to check it.
    """

    name: str
    description: str
    language: str
    render: Callable[[object], str]
    suffix: str = ".txt"  # the file suffix of a leaderboard in this format


#: the earlier name of :class:`LeaderboardFormat` (the kind is ``leaderboard_format``), kept for the
#: plugins that import it
OutputFormat = LeaderboardFormat


@dataclass(frozen=True)
class Command:
    """A command of the ``oodfs`` program: ``oodfs NAME ...``.

    ``add_parser(subparsers)`` adds the command's parser (``subparsers.add_parser(NAME, ...)``,
    an :mod:`argparse` sub-parsers action) with its arguments; ``run(args)`` runs it and returns
    the exit status. Bad input raises :class:`oodfs.OodfsError`, which the program prints as one
    line (exit status 2).
    """

    name: str
    description: str
    add_parser: Callable[[object], object]
    run: Callable[[object], int]


def parse_backend_options(pairs: Sequence[str]) -> dict[str, str]:
    """``["scheduler=tcp://h:8786", ...]`` (``--backend-option``) -> ``{"scheduler": "tcp://h:8786"}``."""
    given = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise OodfsError(f"--backend-option: expected NAME=VALUE, got {pair!r}")
        given[name.strip()] = value.strip()
    return given
