"""Reading and writing numeric tables (.csv, .tsv, .npy, .parquet) for the CLI.

* :func:`read_table` returns a float array and the column names (if the file
  has them). CSV needs only the standard library and numpy; Parquet needs
  pyarrow (``pip install kpca[io]``), imported only when a Parquet file is used.
* :func:`write_table` writes atomically: the data go to a temporary file in the
  destination directory, which then replaces the destination with
  :func:`os.replace`. On any error the temporary file is removed, so a failed
  write never leaves a partial (or any) output file.

Every problem with the user's file is reported as a ``ValueError`` whose message
names the file and, where it applies, the row and column.
"""

from __future__ import annotations

import contextlib
import csv
import logging
import os
import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

logger = logging.getLogger("kpca")

#: file extensions understood by :func:`read_table` and :func:`write_table`
TABLE_FORMATS: dict[str, str] = {
    ".csv": "comma-separated text",
    ".tsv": "tab-separated text",
    ".npy": "NumPy array",
    ".parquet": "Apache Parquet (needs pyarrow: pip install kpca[io])",
}

_IO_EXTRA_HINT = "pip install kpca[io]"

PathLike = str | os.PathLike


# ---------------------------------------------------------------------------- helpers
def _format_of(path: Path) -> str:
    ext = path.suffix.lower()
    if ext not in TABLE_FORMATS:
        valid = ", ".join(TABLE_FORMATS)
        shown = f"extension {ext!r}" if ext else "no extension"
        raise ValueError(f"{path}: unsupported file type ({shown}); use one of {valid}.")
    return ext


def _check_readable(path: Path) -> None:
    if not path.exists():
        raise ValueError(f"{path}: no such file.")
    if path.is_dir():
        raise ValueError(f"{path}: is a directory, not a data file.")


def _import_pyarrow(action: str) -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet  # noqa: F401  (registers pa.parquet)
    except ImportError as exc:
        raise ImportError(
            f"{action} Parquet files needs pyarrow, which is not installed: "
            f"{_IO_EXTRA_HINT}"
        ) from exc
    return pa


# ---------------------------------------------------------------------------- reading
def read_table(
    path: PathLike, *, header: bool | None = None
) -> tuple[np.ndarray, list[str] | None]:
    """Read a numeric table.

    Parameters
    ----------
    path : str or path-like
        A ``.csv``, ``.tsv``, ``.npy`` or ``.parquet`` file (chosen by extension).
    header : bool or None, default=None
        CSV/TSV only: whether the first row holds column names. ``None`` detects
        it: a first row whose cells are all non-numeric is a header, one whose
        cells are all numbers is data, and a mix of both is an error (say which
        with ``header=True`` or ``header=False``).

    Returns
    -------
    X : ndarray of shape (n_rows, n_columns)
        float64, or float32 when the file stores float32 (.npy, .parquet).
    columns : list of str or None
        Column names, or None when the file has none (.npy, CSV without header).

    Raises
    ------
    ValueError
        Missing or empty file, unknown extension, ragged CSV rows, non-numeric
        or missing cells (the message names the file, row and column).
    ImportError
        A Parquet file and pyarrow is not installed.
    """
    path = Path(path)
    ext = _format_of(path)
    _check_readable(path)
    if ext in (".csv", ".tsv"):
        X, columns = _read_delimited(path, "\t" if ext == ".tsv" else ",", header)
    elif ext == ".npy":
        X, columns = _read_npy(path), None
    else:
        X, columns = _read_parquet(path)
    logger.info("read %d x %d table from %s", X.shape[0], X.shape[1], path)
    return X, columns


def _parse_float(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _read_delimited(
    path: Path, delimiter: str, header: bool | None
) -> tuple[np.ndarray, list[str] | None]:
    try:
        # utf-8-sig drops the byte-order mark that spreadsheet programs write
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            rows: list[list[str]] = []
            lines: list[int] = []  # file line of each row, for messages
            for row in reader:
                if not row or all(not c.strip() for c in row):
                    continue  # blank line
                rows.append(row)
                lines.append(reader.line_num)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text file ({exc.reason}).") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}.") from None
    except csv.Error as exc:
        raise ValueError(f"{path}: malformed CSV: {exc}.") from None
    if not rows:
        raise ValueError(f"{path}: the file is empty (no rows).")

    first = rows[0]
    width = len(first)
    for row, line in zip(rows, lines, strict=True):
        if len(row) != width:
            raise ValueError(
                f"{path}: row {line} has {len(row)} fields but row {lines[0]} has {width}; "
                "every row needs the same number of columns."
            )

    if header is None:
        numeric = [_parse_float(c) is not None for c in first]
        if all(numeric):
            header = False
        elif not any(numeric):
            header = True
        else:
            bad = [c for c, ok in zip(first, numeric, strict=True) if not ok]
            raise ValueError(
                f"{path}: cannot tell whether row {lines[0]} is a header: it mixes numbers "
                f"and text ({', '.join(repr(c) for c in bad[:3])}); pass header=True/False "
                "(CLI: --header / --no-header)."
            )
    columns = [c.strip() for c in first] if header else None
    data, data_lines = (rows[1:], lines[1:]) if header else (rows, lines)
    if not data:
        raise ValueError(f"{path}: has a header row but no data rows.")

    try:
        X = np.array(data, dtype=np.float64)
    except ValueError:
        X = None
    if X is None or X.shape != (len(data), width):
        _raise_bad_cell(path, data, data_lines, columns)
        raise AssertionError("unreachable")  # pragma: no cover
    return X, columns


def _column_label(j: int, columns: Sequence[str] | None) -> str:
    if columns is not None:
        return f"column {columns[j]!r} (column {j + 1})"
    return f"column {j + 1}"


def _raise_bad_cell(
    path: Path, data: list[list[str]], lines: list[int], columns: list[str] | None
) -> None:
    """Locate the first cell that is not a number and raise a ValueError about it."""
    for row, line in zip(data, lines, strict=True):
        for j, cell in enumerate(row):
            if _parse_float(cell) is None:
                what = "empty cell" if not cell.strip() else f"non-numeric value {cell!r}"
                raise ValueError(
                    f"{path}: {what} in row {line}, {_column_label(j, columns)}; "
                    "all data cells must be numbers."
                )
    raise ValueError(f"{path}: could not parse the table as numbers.")  # pragma: no cover


def _read_npy(path: Path) -> np.ndarray:
    try:
        X = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise ValueError(
                f"{path}: holds Python objects (pickled data), which are never loaded; "
                "save a numeric array instead."
            ) from None
        raise ValueError(f"{path}: not a valid .npy file ({exc}).") from None
    except EOFError:
        raise ValueError(f"{path}: the file is empty.") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc}.") from None
    if not isinstance(X, np.ndarray):  # pragma: no cover - np.load of a .npy is an array
        raise ValueError(f"{path}: not a .npy array file.")
    if X.dtype.names is not None or not (
        np.issubdtype(X.dtype, np.number) or X.dtype == np.bool_
    ) or np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError(f"{path}: holds {X.dtype} values; a real numeric array is needed.")
    if X.ndim != 2:
        raise ValueError(
            f"{path}: expected a 2-D array (rows x columns); got shape {X.shape}."
        )
    if X.size == 0:
        raise ValueError(f"{path}: the array is empty (shape {X.shape}).")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    return X


def _read_parquet(path: Path) -> tuple[np.ndarray, list[str]]:
    pa = _import_pyarrow("reading")
    try:
        table = pa.parquet.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc}).") from None
    if table.num_rows == 0 or table.num_columns == 0:
        raise ValueError(f"{path}: the table is empty ({table.num_rows} rows).")
    columns = [str(c) for c in table.column_names]
    arrays = []
    for j in range(len(columns)):
        col = table.column(j)
        t = col.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
            raise ValueError(
                f"{path}: {_column_label(j, columns)} has type {t}; all columns must be numeric."
            )
        if col.null_count:
            first = next(i for i, v in enumerate(col.is_null().to_pylist()) if v)
            raise ValueError(
                f"{path}: {_column_label(j, columns)} has {col.null_count} missing value(s) "
                f"(first in data row {first + 1})."
            )
        arrays.append(np.asarray(col.to_numpy()))
    dtype = np.float32 if all(a.dtype == np.float32 for a in arrays) else np.float64
    X = np.column_stack([a.astype(dtype, copy=False) for a in arrays])
    return X, columns


# ---------------------------------------------------------------------------- writing
def check_output_path(path: PathLike, *, table: bool = True) -> Path:
    """Fail early (before any computation) if ``path`` cannot be an output file.

    Parameters
    ----------
    path : str or path-like
    table : bool, default=True
        Also require a table extension understood by :func:`write_table`.

    Returns
    -------
    Path

    Raises
    ------
    ValueError
        Unknown extension, missing directory, or ``path`` is a directory.
    """
    path = Path(path)
    if table:
        _format_of(path)
    if path.is_dir():
        raise ValueError(f"{path}: is a directory.")
    if not path.parent.is_dir():
        raise ValueError(f"{path}: the directory {str(path.parent)!r} does not exist.")
    return path


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "wb", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; on success it replaces ``path``.

    The temporary file lives in the destination directory (so :func:`os.replace`
    is an atomic rename on the same file system) and is created with the usual
    permissions (``0o666`` minus the umask). If the body raises, the temporary
    file is removed and ``path`` is untouched.

    Parameters
    ----------
    path : str or path-like
        Destination.
    mode : {'wb', 'w'}
        Binary or text.
    **open_kwargs
        Passed to :func:`open` (e.g. ``newline=''``, ``encoding=``).

    Yields
    ------
    file object
    """
    path = check_output_path(path, table=False)
    directory = path.parent
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = directory / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, flags, 0o666)
            break
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
    else:  # pragma: no cover
        raise OSError(f"could not create a temporary file in {directory}")
    try:
        with os.fdopen(fd, mode, **open_kwargs) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_table(path: PathLike, Z: Any, columns: Sequence[str] | None = None) -> None:
    """Write a 2-D numeric array atomically as .csv, .tsv, .npy or .parquet.

    Parameters
    ----------
    path : str or path-like
        Destination; the format follows the extension.
    Z : array-like of shape (n_rows, n_columns)
    columns : sequence of str, default=None
        Column names (CSV header, Parquet column names; ignored for .npy).
        ``None`` means ``col0, col1, ...`` for CSV and Parquet.

    Notes
    -----
    Text formats write the shortest decimal that reads back to the same value,
    so float64 (and float32) values survive a round trip exactly.
    """
    path = Path(path)
    ext = _format_of(path)
    Z = np.asarray(Z)
    if Z.ndim != 2:
        raise ValueError(f"write_table: expected a 2-D array; got shape {Z.shape}.")
    if columns is None:
        columns = [f"col{j}" for j in range(Z.shape[1])]
    columns = [str(c) for c in columns]
    if len(columns) != Z.shape[1]:
        raise ValueError(
            f"write_table: {len(columns)} column names for {Z.shape[1]} columns."
        )
    if ext in (".csv", ".tsv"):
        delimiter = "\t" if ext == ".tsv" else ","
        with atomic_write(path, "w", newline="", encoding="utf-8") as fh:
            write_delimited(fh, Z, columns, delimiter)
    elif ext == ".npy":
        with atomic_write(path, "wb") as fh:
            np.save(fh, Z, allow_pickle=False)
    else:
        pa = _import_pyarrow("writing")
        table = pa.table({name: Z[:, j] for j, name in enumerate(_unique(columns))})
        with atomic_write(path, "wb") as fh:
            pa.parquet.write_table(table, fh)
    logger.info("wrote %d x %d table to %s", Z.shape[0], Z.shape[1], path)


def write_delimited(
    fh: IO[str], Z: np.ndarray, columns: Sequence[str], delimiter: str = ","
) -> None:
    """Write a header and the rows of ``Z`` to an open text file."""
    writer = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
    writer.writerow(columns)
    # numpy's str() of a float is the shortest string that reads back to the same
    # value (float32 stays short), so text output is exact and compact
    rows_per_chunk = max(1, 2**16 // max(1, Z.shape[1]))
    for start in range(0, Z.shape[0], rows_per_chunk):
        writer.writerows(Z[start : start + rows_per_chunk].astype(str).tolist())


def _unique(names: Sequence[str]) -> list[str]:
    """Make column names unique (Parquet needs distinct names)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if name in seen:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        seen.setdefault(name, 0)
        out.append(name)
    return out
