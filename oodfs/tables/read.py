"""Reading the user's table: a CSV or parquet file into a DataFrame, every problem one clear line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from oodfs.validation import OodfsError

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
    """The column names as written in the file (pandas renames a repeated CSV name ``a.1``)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    row = pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", header=None, nrows=1, dtype=str)
    return [v for v in row.iloc[0].tolist() if isinstance(v, str)]  # blank names become "Unnamed: i"


def _repeated(names) -> list:
    return list(dict.fromkeys(n for n in names if list(names).count(n) > 1))


def read_table(path) -> pd.DataFrame:
    """A CSV/TSV or parquet file (chosen by suffix) as a DataFrame, or one clear OodfsError."""
    path = Path(path)
    fmt = table_format(path)
    if not path.exists():
        raise OodfsError(f"{path} does not exist")
    if path.is_dir():
        raise OodfsError(f"{path} is a folder, not a table file")
    if path.stat().st_size == 0:
        raise OodfsError(f"{path} is empty (0 bytes)")
    try:
        repeated = _repeated(_header(path, fmt))
        if not repeated:
            if fmt == "parquet":
                df = pd.read_parquet(path)
            else:
                df = pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", low_memory=False)
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
    if df.shape[1] == 0:
        raise OodfsError(f"{path} has no columns")
    if df.shape[0] == 0:
        raise OodfsError(f"{path} has a header but no data rows")
    return df


def _as_frame(data) -> tuple[pd.DataFrame, str]:
    """(DataFrame, a name for messages) from a DataFrame or a path."""
    if isinstance(data, pd.DataFrame):
        return data, "the table"
    if isinstance(data, (str, Path)):
        return read_table(data), str(data)
    raise OodfsError(f"expected a pandas DataFrame or a path to a table file, got {type(data).__name__}")
