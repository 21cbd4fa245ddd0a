"""Reading the user's table: a CSV or parquet file into a DataFrame, every problem one clear line."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd

from oodfs.validation import OodfsError, check_limit

CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.zip", ".csv.xz", ".tsv", ".tsv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")


class TableWarning(UserWarning):
    """Something was done to the user's table, or is odd about it, that they should know about."""

    oodfs_label = "note"  # printed as `oodfs: note: ...` (oodfs.validation.one_line_warning)


# -- reading -------------------------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def table_format(path) -> str:
    """``"csv"``, ``"tsv"`` or ``"parquet"`` from the file name, or an OodfsError."""
    name = Path(path).name.lower()
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith((".tsv", ".tsv.gz")):
        return "tsv"
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    raise OodfsError(
        f"{path}: unknown table format {''.join(Path(path).suffixes) or '(no suffix)'!r}; "
        f"expected one of {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)}"
    )


def _header(path: Path, fmt: str) -> list:
    """The column names as written in the file (pandas renames a repeated CSV name ``a.1``),
    read with the standard library: pandas takes minutes and gigabytes for a header of 10**6
    names, this reads it in about a second."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    import csv

    with _open_text(path) as text:
        row = next(csv.reader(text, delimiter="\t" if fmt == "tsv" else ","), [])
    return [name for name in row if name]  # blank names become "Unnamed: i"


def _open_text(path: Path):
    """A CSV/TSV file as text, decompressed by its suffix as pandas does."""
    import bz2
    import gzip
    import io
    import lzma
    import zipfile

    name = path.name.lower()
    if name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    if name.endswith(".bz2"):
        return bz2.open(path, "rt", encoding="utf-8", newline="")
    if name.endswith(".xz"):
        return lzma.open(path, "rt", encoding="utf-8", newline="")
    if name.endswith(".zip"):
        archive = zipfile.ZipFile(path)
        members = archive.namelist()
        if len(members) != 1:
            raise OodfsError(f"{path}: a zip file must hold exactly one table, it holds {len(members)} files")
        return io.TextIOWrapper(archive.open(members[0]), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _repeated(names) -> list:
    """The names that appear more than once, in order (counted once: linear in the header)."""
    counts = Counter(names)
    return [n for n in counts if counts[n] > 1]


def read_table(path) -> pd.DataFrame:
    """A CSV/TSV or parquet file (chosen by suffix) as a DataFrame, or one clear OodfsError."""
    if "\0" in str(path):  # the system cannot open it: Path.exists would raise ValueError
        raise OodfsError(f"{str(path)!r}: a file name cannot hold a NUL character")
    path = Path(path)
    fmt = table_format(path)
    if not path.exists():
        raise OodfsError(f"{path} does not exist")
    if path.is_dir():
        raise OodfsError(f"{path} is a folder, not a table file")
    if not path.is_file():  # /dev/zero, /dev/urandom, a FIFO: no size to read, or no end
        raise OodfsError(f"{path} is not a regular file (a device or a pipe); give a table file")
    if path.stat().st_size == 0:
        raise OodfsError(f"{path} is empty (0 bytes)")
    try:
        header = _header(path, fmt)
        check_limit("columns", len(header), f"the number of columns of {path}")
        repeated = _repeated(header)
        if not repeated:
            if fmt == "parquet":
                df = pd.read_parquet(path)
            else:
                df = pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", low_memory=False)
    except OodfsError:
        raise
    except pd.errors.EmptyDataError:
        raise OodfsError(f"{path} is empty (no columns)") from None
    except UnicodeDecodeError:
        raise OodfsError(
            f"cannot parse {path} as {fmt.upper()}: it is not UTF-8 text (a binary file?)"
        ) from None
    except Exception as exc:  # parser errors, pyarrow errors, bad compression, ...
        raise OodfsError(f"cannot parse {path} as {fmt.upper()}: {_one_line(exc)}") from None
    if repeated:
        raise OodfsError(
            f"{path}: column name(s) {', '.join(map(repr, repeated))} appear more than once in the "
            "header; give every column its own name"
        )
    for column in [c for c in df.columns if pd.api.types.is_object_dtype(df[c])]:
        # pandas leaves an integer beyond float's range (a cell of 10**400) as a Python int in a
        # text column: it is a number too large, +-inf, which the checks of infinite values name
        if any(isinstance(v, int) and not isinstance(v, bool) for v in df[column]):
            numbers = _to_numeric(df[column])
            if numbers.notna().sum() == df[column].notna().sum():  # numbers only (not a text column)
                df[column] = numbers
    if df.shape[1] == 0:
        raise OodfsError(f"{path} has no columns")
    if df.shape[0] == 0:
        raise OodfsError(f"{path} has a header but no data rows")
    return df


def _beyond_float(v):
    """An integer too large for a float (a CSV cell of 10**400) as +-inf, which the checks of
    infinite values then name; anything else as it is."""
    if isinstance(v, int) and not isinstance(v, bool):
        try:
            return float(v)
        except OverflowError:
            return float("inf") if v > 0 else float("-inf")
    return v


def _to_numeric(s: pd.Series) -> pd.Series:
    """``pd.to_numeric(s, errors="coerce")``, also for a column holding an integer beyond float's
    range (pandas raises OverflowError there)."""
    try:
        return pd.to_numeric(s, errors="coerce")
    except OverflowError:
        return pd.to_numeric(s.map(_beyond_float), errors="coerce")


def _as_frame(data) -> tuple[pd.DataFrame, str]:
    """(DataFrame, a name for messages) from a DataFrame or a path."""
    if isinstance(data, pd.DataFrame):
        return data, "the table"
    if isinstance(data, (str, Path)):
        return read_table(data), str(data)
    raise OodfsError(f"expected a pandas DataFrame or a path to a table file, got {type(data).__name__}")
