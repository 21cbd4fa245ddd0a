"""The `oodfs bench` use case: run one suite or a pool of them, store the results, write their outputs.

:func:`run_bench` takes one frozen :class:`BenchOptions` (``oodfs bench``'s options), makes every
check before anything is written -- the suite list (:func:`suite_entries`), each suite loaded,
customised and given its folder and its task type (:func:`plan_suites`), the options that go
together, the backend and ``--jobs``, the memory estimate (:func:`check_memory`), each suite against
the registered plugins (:func:`oodfs.run.runner.check_pool`) -- then runs the pool
(:func:`oodfs.run.runner.run_suites`) and writes what follows a run
(:func:`oodfs.report.bench.write_bench_outputs`: results.parquet, the leaderboards, the figures,
summary.md). It returns a :class:`BenchOutcome`; it prints nothing itself: ``oodfs bench`` prints
through the callbacks of the options (the run's notes, the leaderboard as soon as it is written).

This module is where a run meets its report: the one module of ``oodfs.run`` that imports
``oodfs.report`` (tests/test_layout.py).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from oodfs.results.outputs import check_output
from oodfs.run.progress import DEFAULT_INTERVAL, Steps
from oodfs.validation import OodfsError, check_jobs

#: options that name one suite's parts and so cannot apply to several suites at once
ONE_SUITE_OPTIONS = {"settings": "--settings", "r_train": "--r-train"}


def _print_note(line: str) -> None:
    print(f"oodfs: {line}", file=sys.stderr)


def _print_line(line: str) -> None:
    print(line, file=sys.stderr)


@dataclass(frozen=True)
class BenchOptions:
    """What ``oodfs bench`` runs and how (its options; each named by its flag in the messages).

    ``suite``: a suite name, a suite ``.toml`` path, a comma list of them, or ``all`` (the whole
    benchmark, :func:`oodfs.run.suite.whole_benchmark`); several suites run as one pool, each into
    ``out``/NAME (default results/NAME), one suite into ``out`` (default results/NAME). The suite's
    own values unless given: ``quick``, ``methods``, ``settings``, ``r_train``, ``runs``, ``seed``,
    ``selection``, ``profile``, ``downstream``, ``feature_shift``, ``feature_shift_impute``
    (:func:`oodfs.run.suite.customise`). ``reference``:
    None (no reference), ``""`` (the one shipped for the suite) or a reference ``.parquet`` path.
    ``plugins``: unpackaged plugin modules registered for the run. ``backend_options``:
    ``NAME=VALUE`` texts; ``scheduler``: the dask backend's ``scheduler`` option. ``check_memory``:
    refuse a run estimated to need more memory than the machine has (:func:`check_memory`).
    ``figures``: draw OUT/figures/. ``reference_verdicts``: when one shipped suite's run is too
    small to test, analyse the shipped reference's rows of its methods and settings
    (:func:`oodfs.report.analysis.shipped_verdicts`, :attr:`BenchSuite.reference_verdicts`). The
    rest is :class:`oodfs.run.runner.RunOptions`'.

    Said as it happens: ``notes`` (the run's one-line notes), ``say`` (lines said whatever
    ``notes`` is: a suite's outputs that could not be written among several, metrics that cannot
    be shown), ``inform`` (the figures written; quiet: a no-op), ``show`` (one suite's
    leaderboard, called as soon as it is written, before the figures). ``plugin_output_to_stderr``:
    what plugins and methods print while they load and run goes to standard error (at the
    file-descriptor level), so that standard output holds what ``show`` prints alone.
    """

    suite: str
    out: str | Path | None = None
    quick: bool = False
    tables_anywhere: bool = False
    jobs: int = 1
    force_jobs: bool = False
    methods: tuple | list | None = None
    settings: tuple | list | None = None
    r_train: tuple | list | None = None
    runs: int | None = None
    seed: int | None = None
    selection: str | None = None
    profile: str | None = None
    downstream: tuple | list | None = None
    #: how the test environments count in the statistics over them (None: the suite's own;
    #: docs/PROTOCOL.md section 3, "Weighting the test environments")
    env_weighting: str | None = None
    min_env_rows: int | None = None
    #: a feature shift of the test rows and its handling (oodfs.run.feature_shift; None: the suite's)
    feature_shift: str | None = None
    feature_shift_impute: str | None = None
    resume: bool = False
    force: tuple | list = ()
    reference: str | None = None
    reference_subsets: bool = True
    retry_failed: bool = False
    plugins: tuple | list = ()
    backend: str = "local"
    backend_options: tuple | list = ()
    scheduler: str | None = None
    task_timeout: float | None = None
    task_memory: str | None = None
    check_memory: bool = True
    isolate: bool = True
    progress: bool = True
    progress_interval: float = DEFAULT_INTERVAL
    figures: bool = True
    reference_verdicts: bool = True
    argv: tuple[str, ...] | None = None
    notes: Callable[[str], None] = _print_note
    say: Callable[[str], None] = _print_note
    inform: Callable[[str], None] = _print_line
    show: Callable[[str], None] | None = None
    plugin_output_to_stderr: bool = True


@dataclass
class Planned:
    """One suite of a ``bench`` run, checked and ready to run: its folder, what it takes from a
    reference, the methods it skips (they cannot handle its target)."""

    suite: object
    out: Path
    skipped: dict
    reference: object = None
    reference_methods: tuple | None = None
    force: tuple = ()
    #: each test environment's rows per data set (:func:`oodfs.run.dataset.test_env_rows`), read
    #: when the suite does not count every environment once (None: it does)
    env_rows: list | None = None
    #: the suite's plugins, read once when it was planned (:func:`oodfs.run.suite.resolve_suite`),
    #: handed to its checks, its identities, its store's record and the backend
    plugins: object = None


@dataclass
class BenchSuite:
    """One suite of a finished ``bench`` run: its plan, what the pool did
    (:class:`oodfs.run.runner.SuiteRun`: its store, the tasks run and taken) and what was written
    (:class:`oodfs.report.bench.SuiteOutputs`: its Report, leaderboard and figures, or the error
    that kept them from being written)."""

    planned: Planned
    run: object
    outputs: object
    #: the shipped reference's tested verdicts on this suite's methods and settings, when the run
    #: itself cannot test (:func:`oodfs.report.analysis.shipped_verdicts`); None otherwise
    reference_verdicts: dict | None = None

    @property
    def out(self) -> Path:
        return self.planned.out


@dataclass
class BenchOutcome:
    """What :func:`run_bench` did: each suite (:class:`BenchSuite`, in the order given), the
    summary of a pool of several (the text of ROOT/summary.md, None for one suite), the seconds
    from the end of the checks to the last output written, and the exit status (0, or 1 when a
    suite of a pool could not have its outputs written)."""

    suites: list[BenchSuite] = field(default_factory=list)
    root: Path | None = None
    summary: str | None = None
    seconds: float = 0.0

    @property
    def status(self) -> int:
        return 0 if all(s.outputs.error is None for s in self.suites) else 1


def run_bench(options: BenchOptions | None = None, **changes) -> BenchOutcome:
    """Run ``oodfs bench``: ``options`` (or keyword arguments naming its fields, ``suite`` among
    them): :class:`BenchOptions`. Every check is made before anything is written (one
    :class:`OodfsError` naming what is wrong); a storage error or a killed worker stops the run
    (:class:`oodfs.validation.RunAborted`). Returns a :class:`BenchOutcome`."""
    from oodfs.contract.registry import registry
    from oodfs.report.bench import write_bench_outputs
    from oodfs.run.runner import run_suites

    o = replace(options, **changes) if options is not None else BenchOptions(**changes)
    with _plugin_output(o):  # what a plugin prints at import never reaches the leaderboard's stdout
        reg = registry(tuple(o.plugins))  # a plugin may bring the rule, the backend or the methods named
    with warnings.catch_warnings(record=True) as held:
        # a table's notes are given once every suite is let through: a refused run is one line
        warnings.simplefilter("always")
        planned, root, entries = _checked(o, reg)
        start = time.perf_counter()
    with _plugin_output(o):  # what methods print never mixes into the leaderboard on stdout
        done = run_suites(entries, held=held)
    written = write_bench_outputs(
        [(p.suite, p.out, d, p.skipped, p.env_rows) for p, d in zip(planned, done)],
        root=root,
        figures=o.figures,
        started=start,
        show=o.show if root is None else None,
        say=o.say,
        inform=o.inform,
        # each step after the tasks said as it begins and while it lasts (docs/PROTOCOL.md section 20)
        steps=Steps(o.notes if o.progress else None, o.progress_interval),
    )
    suites = [BenchSuite(p, d, w) for p, d, w in zip(planned, done, written.suites)]
    if o.reference_verdicts and root is None:
        with Steps(o.notes if o.progress else None, o.progress_interval) as steps:  # said as the others
            suites[0].reference_verdicts = _reference_verdicts(suites[0], steps.step)
    return BenchOutcome(suites, root, written.summary, time.perf_counter() - start)


def _reference_verdicts(done: BenchSuite, step=None) -> dict | None:
    """The shipped reference's verdicts for a shipped suite whose run cannot test a setting (the
    quick job's one unit per comparison), read from the reference, never from the run."""
    from oodfs.report.analysis import shipped_verdicts
    from oodfs.run.reference import load_reference

    report, analysis = done.outputs.report, done.outputs.analysis  # the leaderboard's, tested once
    if analysis is None or not done.planned.suite.shipped or not analysis.undecidable_settings():
        return None
    with (step or (lambda text: contextlib.nullcontext()))("reading the shipped reference's verdicts"):
        try:
            reference = load_reference(report.suite, report.profile)
        except OodfsError:  # no reference for this suite and profile (or a damaged one: replay says so)
            return None
        return shipped_verdicts(report, reference)


def _checked(o: BenchOptions, reg=None) -> tuple[list[Planned], Path | None, list]:
    """Every check of a run, in one place and this order, before anything is written: the
    suites (each loaded, customised, given its folder and task type), the options that go
    together, the backend and the jobs, the memory estimate, then each suite against the plugins
    (:func:`oodfs.run.runner.check_pool`). Returns the plans, the root folder of a pool (None for
    one suite) and the checked pool. ``reg``: the registry (default
    :func:`oodfs.contract.registry.registry`), read once per suite (:func:`plan_suites`)."""
    from oodfs.contract.extensions import parse_backend_options
    from oodfs.run.runner import RunOptions, check_pool

    planned = plan_suites(o, reg)
    many = len(planned) > 1
    root = Path(o.out or "results") if many else None
    if root is not None:
        check_output(root, "--out", inputs=bench_inputs(o), writes=["summary.md"])
    if o.methods is not None and not o.methods and o.reference is None:
        raise OodfsError("--methods is empty: give at least one selector (`oodfs plugins` lists them)")
    if not o.reference_subsets and o.reference is None:
        raise OodfsError("--no-reference-subsets needs --reference (it concerns the reference's subsets)")
    if o.scheduler and o.backend != "dask":
        raise OodfsError("--scheduler needs --backend dask")
    given = parse_backend_options(
        list(o.backend_options) + ([f"scheduler={o.scheduler}"] if o.scheduler else [])
    )
    executor = planned[0].plugins.backend()  # every suite's plugins hold the run's backend
    local = executor.uses_local_cpus(**executor.parse_options(given))
    check_jobs(o.jobs, o.force_jobs, local=local)
    if o.check_memory and local:
        check_memory([p.suite for p in planned], o.jobs, [p.plugins.environment.cls for p in planned])
    options = RunOptions(
        jobs=o.jobs,
        resume=o.resume or (many and bool(o.force)),
        plugin_modules=tuple(o.plugins),
        progress=o.progress,
        progress_interval=o.progress_interval,
        argv=o.argv,
        backend_name=o.backend,
        backend_options=tuple(given.items()),
        task_timeout=o.task_timeout,
        task_memory=o.task_memory,
        reference_subsets=o.reference_subsets,
        notes=o.notes,
        isolate=o.isolate,
        retry_failed=o.retry_failed,
    )
    runs = [
        (
            p.suite,
            p.out,
            replace(
                options,
                force=p.force,
                reference=p.reference,
                reference_methods=p.reference_methods,
                before_work=_undecidable(p),
            ),
            p.skipped,
            p.plugins,
        )
        for p in planned
    ]
    return planned, root, check_pool(runs)


def _undecidable(p: Planned) -> tuple[str, ...]:
    """Said before any work (docs/PROTOCOL.md section 10): a run whose tests cannot reach alpha."""
    from oodfs.report.analysis import undecidable_before_run

    compared = tuple(dict.fromkeys((*(p.reference_methods or ()), *p.suite.methods)))
    said = undecidable_before_run(replace(p.suite, methods=compared))
    return (said,) if said else ()


def bench_inputs(o: BenchOptions) -> list:
    """The files ``bench`` reads that its outputs must never replace: the suite files, a given
    reference (with its .json) and plugin files."""
    files = [name.strip() for name in o.suite.split(",") if name.strip().endswith(".toml")]
    if o.reference:
        files += [o.reference, str(Path(o.reference).with_suffix(".json"))]
    return files + [p for p in o.plugins if p.endswith(".py")]


def check_reference_file(path: str) -> None:
    """``--reference FILE``: a regular .parquet file with its .json provenance beside it, in one
    line that says what a reference is (a run's results.parquet is not one)."""
    file = Path(path)
    if file.exists() and not file.is_file():
        raise OodfsError(f"--reference {path} is not a regular file (a folder, a device or a pipe)")
    if file.is_file() and not file.with_suffix(".json").is_file():
        raise OodfsError(
            f"--reference {path}: {file.with_suffix('.json')} is missing; a reference is a .parquet file "
            "with its .json provenance beside it, as shipped with oodfs (a run's results.parquet is not "
            "one: `oodfs merge` combines results folders)"
        )


def bench_writes(suite) -> list[str]:
    """The files ``bench`` writes into a suite's output folder."""
    from oodfs.results.store import WRITTEN

    return [*WRITTEN, *(f"leaderboard-{model}.md" for model in suite.downstream)]


def suite_entries(o: BenchOptions) -> list:
    """``suite``'s suites as :class:`oodfs.run.suite.BenchmarkRun` entries (a name or .toml path
    each, profile None: the suite's own or ``profile``): one name or path, a comma list of them, or
    ``all``, the whole benchmark (:func:`oodfs.run.suite.whole_benchmark`). A repeated suite,
    ``all`` beside others, an option that names one suite's parts given with several: one line."""
    from oodfs.run.suite import BenchmarkRun, available_suites, whole_benchmark

    names = [t.strip() for t in o.suite.split(",")]
    names = [n for n in names if n] if len(names) > 1 else names
    if o.suite.endswith(".toml") and Path(o.suite).is_file():  # a suite file with a comma in its path
        names = [o.suite]
    if not names or names == [""]:
        raise OodfsError("--suite is empty: name a suite, a comma list of suites or all")
    if "all" in names:
        if len(names) > 1:
            raise OodfsError("--suite all is the whole benchmark: give it alone, not in a list")
        if o.profile is not None:
            raise OodfsError(
                "--profile cannot go with --suite all: the whole benchmark runs each suite under its own "
                'profiles (docs/PROTOCOL.md, "The whole benchmark in one command")'
            )
        entries = whole_benchmark()
    else:
        repeated = [n for i, n in enumerate(names) if n in names[:i]]
        if repeated:
            raise OodfsError(f"--suite names {repeated[0]!r} twice; give each suite once")
        unknown = [n for n in names if not n.endswith(".toml") and n not in available_suites()]
        if unknown:
            raise OodfsError(
                f"unknown suite {unknown[0]!r}; valid: {', '.join(available_suites())}, all (the whole "
                "benchmark), or a .toml path"
            )
        entries = [BenchmarkRun(n, None) for n in names]
    if len(entries) > 1:
        for key, option in ONE_SUITE_OPTIONS.items():
            if getattr(o, key) is not None:
                raise OodfsError(
                    f"{option} names the parts of one suite; it cannot go with several suites (run that "
                    "suite on its own)"
                )
        if o.reference:
            raise OodfsError(
                f"--reference {o.reference} is one suite's reference; with several suites give "
                "--reference alone (each suite's shipped reference)"
            )
    return entries


def folder_name(suite, o: BenchOptions) -> str:
    """A suite's results folder: ``SUITE[-PROFILE][-MODEL...][-quick]`` (the profile when not
    ``default``; the models of ``downstream``)."""
    profile = "" if suite.profile == "default" else f"-{suite.profile}"
    profile += f"-{'-'.join(o.downstream)}" if o.downstream else ""
    if suite.feature_shift is not None:  # never beside an unshifted run's folder
        profile += f"-fshift-{suite.feature_shift.replace(':', '')}-{suite.feature_shift_impute}"
    return f"{suite.name}{profile}{'-quick' if o.quick else ''}"


def plan_suites(o: BenchOptions, reg=None) -> list[Planned]:
    """Every suite of the run loaded, customised by the options, given its folder, its task type
    and its plugins (read once from ``reg``, default :func:`oodfs.contract.registry.registry`:
    :func:`oodfs.run.suite.resolve_suite`, which checks the names of plugins the suite gives) and
    checked, before anything is written: one suite's folder is ``out`` (default results/NAME);
    several suites' folders are ``out``/NAME (default results/NAME)."""
    from oodfs.contract.registry import registry
    from oodfs.run.suite import customise, load_suite, resolve_suite

    entries = suite_entries(o)
    many = len(entries) > 1
    reg = reg or registry()
    inputs = bench_inputs(o)
    planned = []
    for entry in entries:
        changes = dict(
            check_plugins=False,
            quick=o.quick,
            settings=o.settings,
            r_train=o.r_train,
            runs=o.runs,
            seed=o.seed,
            selection=o.selection,
            profile=o.profile or entry.profile,
            downstream=o.downstream,
            env_weighting=o.env_weighting,
            min_env_rows=o.min_env_rows,
            feature_shift=o.feature_shift,
            feature_shift_impute=o.feature_shift_impute,
        )
        # the names of plugins it gives are checked against the plugins resolve_suite reads
        loaded = load_suite(entry.suite, o.tables_anywhere, check_plugins=False)
        methods = o.methods if o.methods is not None else entry.methods
        suite = customise(loaded, methods=methods, **changes)
        name = folder_name(suite, o)
        out = Path(o.out or "results") / name if many else Path(o.out or f"results/{name}")
        if any(p.out == out for p in planned):
            raise OodfsError(
                f"--suite names suite {suite.name!r} twice (both would write {out}); give each suite once"
            )
        check_output(out, "--out", inputs=inputs, writes=bench_writes(suite))
        reference = reference_methods = None
        if o.reference is not None:  # read and checked before anything is written
            from oodfs.run.reference import load_reference

            if o.reference:
                check_reference_file(o.reference)
            elif not suite.shipped:  # a suite file named like a shipped suite is not that suite
                raise OodfsError(
                    f"--reference without a file reads the reference shipped for a suite of oodfs, and "
                    f"suite file {entry.suite!r} is not one; give its reference file (--reference FILE)"
                )
            reference = load_reference(suite.name, suite.profile, o.reference or None)
            # the suite's methods, before --methods (the suite as loaded: read once)
            reference_methods = customise(loaded, methods=entry.methods, **changes).methods
            if o.methods is None:
                suite = customise(suite, methods=[], check_plugins=False)
        suite, skipped, plugins = resolve_suite(suite, reg, o.backend)
        unable = [m for m in o.methods or () if m in skipped]
        if unable:  # asked for by name: refused; a suite's own list: skipped with the reason shown
            able = [
                n for n, i in plugins.selectors.items() if i.cls.handles(suite.task) and not i.cls.yardstick
            ]
            where = f"suite {suite.name}'s" if many else "this suite's"
            raise OodfsError(
                f"--methods names methods that cannot handle {where} {suite.task} target "
                f"({', '.join(unable)}); methods that can: {', '.join(able)}"
            )
        force = tuple(m for m in o.force if m in suite.methods) if many else tuple(o.force)
        env_rows = checked_env_rows(suite, f" of suite {suite.name}" if many else "")
        planned.append(Planned(suite, out, skipped, reference, reference_methods, force, env_rows, plugins))
    if many:
        named = {m for p in planned for m in p.suite.methods}
        unknown = [m for m in o.force if m not in named]
        if unknown:
            raise OodfsError(f"--force names {unknown[0]!r}, which none of these suites includes")
    return planned


def checked_env_rows(suite, where: str = "") -> list | None:
    """Each test environment's rows per data set when ``suite`` does not count every test
    environment once (None when it does), checked: a minimum size must leave a test environment in
    every data set (docs/PROTOCOL.md section 3, "Weighting the test environments")."""
    from oodfs.contract.env_weights import EnvWeighting
    from oodfs.run.dataset import test_env_rows

    weighting = EnvWeighting(suite.env_weighting, suite.min_env_rows)
    if weighting.is_default:
        return None
    try:
        rows = test_env_rows(suite)
    except OodfsError:
        raise
    except Exception as exc:  # the environment cannot draw its test rows: the run's checks name why
        raise OodfsError(f"cannot count the test rows of suite {suite.name}: {exc}") from None
    for setting in suite.settings:
        for run in range(suite.runs):
            weighting.check_leaves_some(
                {r["env"]: r["rows"] for r in rows if r["setting"] == setting.name and r["run"] == run}, where
            )
    return rows


def run_memory_estimate(suites, jobs: int, environments=None) -> dict | None:
    """The estimated memory that running ``suites`` (one suite, or the list of a pool) with
    ``jobs`` local workers adds to this process, at the largest setting of any of them
    (docs/PROTOCOL.md, "Measured sizes and the memory estimate"): per setting, its n and d, the
    methods' fit estimates (:func:`oodfs.results.scale.fit_memory_mb`), one copy of a job's data
    per worker, a worker's own memory; as many workers as the pool has data sets, at most
    ``jobs``, each assumed to hold a job of that setting. :func:`oodfs.results.scale.estimate_peak_mb`'s
    fields plus ``suite``, ``setting``, ``n``, ``d`` and ``workers``; None when no setting names
    its columns before it is drawn. ``environments``: each suite's environment class, already read
    (:attr:`oodfs.contract.registry.SuitePlugins.environment`); None reads the registry's."""
    from oodfs.contract.registry import registry
    from oodfs.results.scale import estimate_peak_mb
    from oodfs.run.suite import train_envs

    suites = [suites] if not isinstance(suites, list | tuple) else list(suites)
    if environments is None:
        environments = [registry().get("environment", s.environment) for s in suites]
    data_sets = sum(len(s.settings) * len(s.r_train) * s.runs for s in suites)
    workers = min(jobs, data_sets)
    worst = None
    for suite, env_cls in zip(suites, environments):
        members = max(len(train_envs(r)) for r in suite.r_train)
        for setting in suite.settings:
            try:
                with warnings.catch_warnings():  # a table's notes are the run's to give, once
                    warnings.simplefilter("ignore")
                    d = len(env_cls(**setting.environment_params(0, suite.seed)).feature_names)
            except Exception:  # names no columns, or a bad setting: the run's own checks name it
                continue
            n_train = setting.n_train or suite.n_train
            rows = (n_train + suite.n_val) * members + suite.n_test * len(suite.r_test)
            est = estimate_peak_mb(suite.methods, n_train * members, d, rows, workers)
            if worst is None or est["total_mb"] > worst["total_mb"]:
                n = n_train * members
                worst = dict(est, suite=suite.name, setting=setting.name, n=n, d=d, workers=workers)
    return worst


def check_memory(suites, jobs: int, environments=None) -> None:
    """Refuse, in one line, a run (one suite or a pool of them) whose estimated peak memory
    exceeds what this machine has available (:func:`run_memory_estimate`, with ``environments``)."""
    from oodfs.results.scale import available_mb, size_text

    have = available_mb()
    if have is None:  # neither /proc/meminfo nor psutil: nothing to compare with
        return
    several = isinstance(suites, list | tuple) and len(suites) > 1
    est = run_memory_estimate(suites, jobs, environments)
    if est is None or est["total_mb"] <= have:
        return
    workers = est["workers"]
    need = (
        f"{est['method']}'s fit needs most ({size_text(est['fit_mb'])})"
        if est["method"]
        else "no method of the run has a measured memory curve"
    )
    where = f"suite {est['suite']}, setting {est['setting']!r}" if several else f"setting {est['setting']!r}"
    raise OodfsError(
        f"this run is estimated to need {size_text(est['total_mb'])} of memory at its peak ({where}: "
        f"n = {est['n']:,}, d = {est['d']}, {workers} job{'s' * (workers != 1)} at once, "
        f"each holding {size_text(est['data_mb'])} of data; {need}), more than the {size_text(have)} this "
        "machine has available; lower n_train, --jobs or --methods, or pass --ignore-memory-estimate to run "
        "anyway"
    )


def _plugin_output(o: BenchOptions):
    return plugin_output_to_stderr() if o.plugin_output_to_stderr else contextlib.nullcontext()


@contextlib.contextmanager
def plugin_output_to_stderr():
    """Send this process's standard output, and that of the worker processes it starts, to
    standard error (at the file-descriptor level, so output of C code and of children too)."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):  # no real descriptors (an embedding host): leave them
        yield
        return
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        # what plugins print from their exit handlers goes to stderr too: registered after theirs,
        # this handler runs before them (atexit runs the last registered first)
        atexit.unregister(_stdout_to_stderr)
        atexit.register(_stdout_to_stderr)


def _stdout_to_stderr() -> None:
    try:
        sys.stdout.flush()
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):
        pass
