"""Every numeric option is bounded before any work starts, in every command (`theory` included),
with its bound in `--help`: a value outside it is one line naming the option, exit status 2."""

import argparse
import time

import pytest

from oodfs.cli import build_parser
from oodfs.commands.options import available_cpus

from .conftest import TINY_SUITE_TOML, assert_one_line, run_cli


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SUITE_TOML.format(runs=1))
    return str(path)


def bench(suite, tmp_path, *extra):
    return ["bench", "--suite", suite, "--out", str(tmp_path / "out"), "--quiet", "--no-figures", *extra]


#: command line -> what the one line names
CASES = {
    "theory --jobs above the CPUs": (
        lambda s, t: ["theory", "--quick", "--out", str(t / "th"), "--jobs", str(available_cpus() + 1)],
        ["--force-jobs"],
    ),
    "theory --jobs 100000 --force-jobs": (
        lambda s, t: ["theory", "--quick", "--out", str(t / "th"), "--jobs", "100000", "--force-jobs"],
        ["--jobs is 100000", "limit of 1024", "OODFS_LIMITS=jobs="],
    ),
    "theory --replicates 1000000000": (
        lambda s, t: ["theory", "--quick", "--out", str(t / "th"), "--replicates", "1000000000"],
        ["--replicates is 1000000000", "limit of 10000", "OODFS_LIMITS=replicates="],
    ),
    "theory --replicates 0": (lambda s, t: ["theory", "--replicates", "0"], ["--replicates", "positive"]),
    "theory --seed -1": (lambda s, t: ["theory", "--seed", "-1"], ["--seed", "0 to 2**32-1"]),
    "theory --seed 2**32": (lambda s, t: ["theory", "--seed", str(2**32)], ["--seed", "0 to 2**32-1"]),
    "bench --seed -1": (lambda s, t: bench(s, t, "--seed", "-1"), ["--seed", "0 to 2**32-1"]),
    "select --seed -1": (
        lambda s, t: ["select", s, "--target", "y", "--method", "ols", "--seed", "-1"],
        ["--seed", "0 to 2**32-1"],
    ),
    "bench --jobs 100000 --force-jobs": (
        lambda s, t: bench(s, t, "--jobs", "100000", "--force-jobs"),
        ["--jobs is 100000", "limit of 1024"],
    ),
    "bench --progress-interval 1e308": (
        lambda s, t: bench(s, t, "--progress-interval", "1e308"),
        ["--progress-interval", "at most 2592000"],
    ),
    "bench --task-timeout 1e308": (
        lambda s, t: bench(s, t, "--task-timeout", "1e308"),
        ["--task-timeout", "at most 2592000"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_numeric_option_out_of_bounds_is_one_line_before_any_work(case, suite, tmp_path, capsys):
    argv, needles = CASES[case]
    start = time.perf_counter()
    assert_one_line(run_cli(capsys, *argv(suite, tmp_path)), *needles)
    assert time.perf_counter() - start < 30  # refused, not started
    assert not (tmp_path / "out").exists() and not (tmp_path / "th").exists()


def test_the_limit_is_raised_with_oodfs_limits(suite, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OODFS_LIMITS", "jobs=2000")
    argv = ["theory", "--out", str(tmp_path / "th"), "--jobs", "2000", "--force-jobs", "--methods", "nope"]
    assert_one_line(run_cli(capsys, *argv), "unknown method 'nope'")  # past the jobs bound


#: numeric options that are thresholds, not amounts of work: any positive value is harmless
THRESHOLDS = {
    ("select", "--max-levels"),
    ("select", "--min-level-rows"),
    ("select", "--min-env-rows"),  # one that leaves no test environment is refused in one line
    ("bench", "--min-env-rows"),
}
#: how --help states a bound
BOUND_WORDS = ("at most", "2**32-1", "number of variables", "the number of features")


def test_every_numeric_option_states_its_bound_in_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    numeric = []
    for name, command in sub.choices.items():
        for action in command._actions:
            kind = getattr(action.type, "__name__", "")
            if kind in ("int", "float", "positive_int", "positive_seconds", "seed") and action.option_strings:
                numeric.append((name, action.option_strings[0], action.help or ""))
    assert {("theory", "--jobs"), ("theory", "--replicates"), ("bench", "--progress-interval")} <= {
        (c, o) for c, o, _ in numeric
    }
    unbounded = [
        (c, o)
        for c, o, text in numeric
        if (c, o) not in THRESHOLDS and not any(word in text for word in BOUND_WORDS)
    ]
    assert unbounded == []
