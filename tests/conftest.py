import os
import sys
import textwrap
from pathlib import Path

import pytest

from oodfs.cli import main
from oodfs.contract.registry import reset_registry
from oodfs.run.suite import suite_from_dict

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "oodfs-variance"

#: the smallest synthetic suite the command-line tests run (``.format(runs=N)``)
TINY_SUITE_TOML = """
environment = "synthetic"
r_train = [2.5]
r_test = [-2.0, 2.0]
runs = {runs}
n_train = 300
n_val = 100
n_test = 300
k = 5
methods = ["ols", "correlation"]
[settings.poly]
params = {{ setting = "poly" }}
"""


#: the smallest synthetic suite the runner tests run (``tiny(**changes)`` makes one)
TINY = {
    "description": "tiny test suite",
    "environment": "synthetic",
    "r_train": [2.5],
    "r_test": [-2.0, 2.0],
    "runs": 2,
    "n_train": 300,
    "n_val": 100,
    "n_test": 300,
    "k": 5,
    "methods": ["ols", "correlation"],
    "settings": {"poly": {"params": {"setting": "poly"}}},
}


def tiny(**changes):
    """The tiny suite with some of its keys changed."""
    return suite_from_dict("tiny", {**TINY, **changes})


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread, as the runner sets per worker: the torch-based plugins (stg, srdo) fit tiny
    networks, and on a busy machine several threads make each step 10-50x slower. A module uses it
    with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def fresh_registry():
    """Each test sees plugins as a new process would."""
    reset_registry()
    yield
    reset_registry()


def make_distribution(
    where: Path,
    dist: str,
    entry_points: dict[str, str],
    modules: dict[str, str] = None,
    version: str = "0.1.0",
) -> Path:
    """An installed-looking distribution (dist-info + modules) in ``where``, found via sys.path."""
    where.mkdir(parents=True, exist_ok=True)
    info = where / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "[oodfs]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    )
    for name, code in (modules or {}).items():
        (where / f"{name}.py").write_text(textwrap.dedent(code))
    return where


@pytest.fixture
def example_installed(tmp_path, monkeypatch):
    """The example third-party plugin, visible through the `oodfs` entry-point group."""
    site = make_distribution(tmp_path / "site", "oodfs-variance", {"variance": "oodfs_variance"})
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(site), str(EXAMPLE), os.environ.get("PYTHONPATH", "")])
    )
    sys.modules.pop("oodfs_variance", None)
    return site


def run_cli(capsys, *args) -> tuple[int, str, str]:
    """``oodfs ARGS`` in this process: (exit status, stdout, stderr)."""
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(result, *needles, code=2):
    """A :func:`run_cli` result that is one line on stderr naming every needle, with status ``code``."""
    status, _, err = result
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == code, (status, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err


def tables(text: str):
    """Every markdown table: (header cells, rows of cells)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and set(lines[i + 1]) <= set("|-: "):
            header = [c.strip() for c in lines[i].strip("|").split("|")]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            yield header, rows
        else:
            i += 1
