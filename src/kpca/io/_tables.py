"""Reading numeric tables (.csv, .tsv, .npy, .parquet) whole.

:func:`read_table` returns a float array and the column names (if the file has
them). CSV needs only the standard library and numpy; Parquet needs pyarrow
(``pip install kpca[io]``), imported only when a Parquet file is used. The
helpers here (format, header detection, cell and column checks) are shared with
the block-by-block readers of :mod:`._sources`; writing is in :mod:`._write`.

Every problem with the user's file is reported as a ``ValueError`` whose message
names the file and, where it applies, the row and column.
"""

from __future__ import annotations

import contextlib
import csv
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from .._files import PathLike

logger = logging.getLogger("kpca")

#: file extensions understood by :func:`read_table`, :func:`~kpca.io.open_rows` and
#: :func:`~kpca.io.write_table`
TABLE_FORMATS: dict[str, str] = {
    ".csv": "comma-separated text",
    ".tsv": "tab-separated text",
    ".npy": "NumPy array",
    ".parquet": "Apache Parquet (needs pyarrow: pip install kpca[io])",
}

_IO_EXTRA_HINT = "pip install kpca[io]"


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
    return _read_table(path, header=header)


def _read_table(path: PathLike, *, header: bool | None = None,
                finite: bool = False) -> tuple[np.ndarray, list[str] | None]:
    """:func:`read_table`; with ``finite``, a NaN or infinite value is a ``ValueError``
    naming the file, row and column, as the streamed readers give it (the command
    line's whole tables: :func:`kpca.io.read_data`)."""
    path = Path(path)
    ext = _format_of(path)
    _check_readable(path)
    lines = None  # CSV: the file line of each data row, which the messages give
    if ext in (".csv", ".tsv"):
        X, columns, lines = _read_delimited(path, "\t" if ext == ".tsv" else ",", header)
    elif ext == ".npy":
        X, columns = _read_npy(path), None
    else:
        X, columns = _read_parquet(path)
    if finite:
        check_finite(path, X, columns, rows=lines, row_word="row" if lines else "data row")
    logger.info("read %d x %d table from %s", X.shape[0], X.shape[1], path)
    return X, columns


def check_finite(path: Path, X: np.ndarray, columns: Sequence[str] | None, *,
                 raw: np.ndarray | None = None, first_row: int = 0,
                 rows: Sequence[int] | None = None, row_word: str = "data row") -> None:
    """A ``ValueError`` naming the file, row and column of the first NaN or infinite
    value of the table (or block) ``X``; nothing when all are finite.

    Parameters
    ----------
    path : Path
        The file, for the message.
    X : ndarray of shape (n, d)
    columns : sequence of str or None
        The file's column names.
    raw : ndarray of shape (n, d), optional
        The values as the file holds them, when ``X`` is a conversion of them: a
        finite value that became infinite "does not fit" ``X``'s dtype.
    first_row : int, default=0
        Rows of ``X`` before this block, for the message's row (numbered from 1).
    rows : sequence of int, optional
        The number the message gives each row of ``X`` (CSV: its file line), instead.
    row_word : str, default="data row"
        How the message names a row.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # a quick sum first, as sklearn's
        if np.isfinite(X.sum()):
            return
    bad = np.argwhere(~np.isfinite(X))
    if not bad.size:  # the sum overflowed; every value is finite
        return
    i, j = (int(v) for v in bad[0])
    value = (X if raw is None else np.asarray(raw))[i, j]
    what = (f"value {value} does not fit in {X.dtype}" if np.isfinite(value)
            else f"non-finite value {value}")
    row = rows[i] if rows is not None else first_row + i + 1
    raise ValueError(f"{path}: {what} in {row_word} {row}, {_column_label(j, columns)}; "
                     "kernel PCA needs finite numbers.")


def _parse_float(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


@contextlib.contextmanager
def open_text(path: Path) -> Iterator[Any]:
    """A delimited text table opened for reading; a file that is not UTF-8 text, cannot
    be read or is not valid CSV gives a ``ValueError`` naming it."""
    try:
        # utf-8-sig drops the byte-order mark that spreadsheet programs write
        with open(path, newline="", encoding="utf-8-sig") as fh:
            yield fh
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text file ({exc.reason}).") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}.") from None
    except csv.Error as exc:
        raise ValueError(f"{path}: malformed CSV: {exc}.") from None


def _read_delimited(
    path: Path, delimiter: str, header: bool | None
) -> tuple[np.ndarray, list[str] | None, list[int]]:
    """The table, its column names and the file line of each data row."""
    with open_text(path) as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        rows: list[list[str]] = []
        lines: list[int] = []  # file line of each row, for messages
        for row in reader:
            if not row or all(not c.strip() for c in row):
                continue  # blank line
            rows.append(row)
            lines.append(reader.line_num)
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

    header = _detect_header(path, first, lines[0], header)
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
    return X, columns, data_lines


def _detect_header(path: Path, first: list[str], line: int, header: bool | None) -> bool:
    """Whether the first row ``first`` (file line ``line``) is a header.

    ``header`` given: that. ``None``: all cells non-numeric is a header, all
    numbers is data, a mix is a ``ValueError``.
    """
    if header is not None:
        return bool(header)
    numeric = [_parse_float(c) is not None for c in first]
    if all(numeric):
        return False
    if not any(numeric):
        return True
    bad = [c for c, ok in zip(first, numeric, strict=True) if not ok]
    raise ValueError(
        f"{path}: cannot tell whether row {line} is a header: it mixes numbers "
        f"and text ({', '.join(repr(c) for c in bad[:3])}); pass header=True/False "
        "(CLI: --header / --no-header)."
    )


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


def _load_npy(path: Path, mmap_mode: str | None = None) -> np.ndarray:
    """``np.load`` of a .npy file whose header :func:`_npy_header` has checked first;
    every failure a ``ValueError`` naming the file."""
    _npy_header(path)
    try:
        X = np.load(path, allow_pickle=False, mmap_mode=mmap_mode)
    except (ValueError, EOFError) as exc:
        raise ValueError(f"{path}: not a valid .npy file ({exc}).") from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc}.") from None
    if not isinstance(X, np.ndarray):  # pragma: no cover - np.load of a .npy is an array
        raise ValueError(f"{path}: not a .npy array file.")
    return X


#: the .npy format versions numpy.save writes for numeric arrays (3.0: structured
#: arrays only)
NPY_VERSIONS = ((1, 0), (2, 0))


def npy_array_header(fh: IO[bytes], version: tuple[int, int]
                     ) -> tuple[tuple[int, ...], np.dtype, int]:
    """The shape, dtype and data bytes declared by the header of the .npy stream ``fh``,
    read just after its magic string of ``version`` (one of :data:`NPY_VERSIONS`); no
    data is read. The bytes are counted in Python integers, which do not overflow: a
    header may declare any shape (the callers compare it with the bytes held).

    Raises ``ValueError`` (numpy's) for a malformed header."""
    fmt = np.lib.format
    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, _, dtype = read(fh)
    shape = tuple(int(s) for s in shape)
    nbytes = dtype.itemsize
    for s in shape:
        nbytes *= s
    return shape, dtype, nbytes


def _npy_header(path: Path) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype a .npy file declares, read from its header before any data.

    Checked before anything is allocated: the file starts with the .npy signature, its
    array is a non-empty 2-D array of real numbers (:func:`_check_npy`, no pickled
    objects), and the file holds the bytes the header declares (a 192-byte file whose
    header declares shape (10**9, 4) used to ask for 29.8 GiB). The in-memory and the
    streamed readers share it.

    Returns
    -------
    shape : tuple of int
    dtype : numpy.dtype
    """
    fmt = np.lib.format
    try:
        size = path.stat().st_size
        if size == 0:
            raise ValueError(f"{path}: the file is empty.")
        with open(path, "rb") as fh:
            try:
                version = fmt.read_magic(fh)
            except ValueError:
                raise ValueError(
                    f"{path}: not a .npy file (it does not start with the .npy signature "
                    "that numpy.save writes); a .npy file holds one array saved by "
                    "numpy.save, and a text table needs the extension .csv or .tsv."
                ) from None
            if version not in NPY_VERSIONS:
                raise ValueError(f"{path}: unsupported .npy format version "
                                 f"{version[0]}.{version[1]} (kpca reads 1.0 and 2.0, which "
                                 "numpy.save writes for numeric arrays).")
            try:
                shape, dtype, declared = npy_array_header(fh, version)
            except ValueError as exc:
                raise ValueError(f"{path}: not a valid .npy file ({exc}).") from None
            offset = fh.tell()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}.") from None
    if dtype.hasobject:
        raise ValueError(f"{path}: holds Python objects (pickled data), which are never "
                         "loaded; save a numeric array instead.")
    if any(s < 0 for s in shape):
        raise ValueError(f"{path}: not a valid .npy file (its header declares shape {shape}).")
    _check_npy(path, dtype, shape)
    held = size - offset
    if declared > held:
        raise ValueError(
            f"{path}: not a valid .npy file: its header declares shape {shape} of {dtype} "
            f"({declared:,} bytes), but the file holds {held:,} bytes of data (truncated "
            "or corrupt)."
        )
    return shape, dtype


def _check_npy(path: Path, dtype: np.dtype, shape: tuple[int, ...]) -> None:
    """A .npy array must be a non-empty 2-D array of real numbers."""
    if dtype.names is not None or not (
        np.issubdtype(dtype, np.number) or dtype == np.bool_
    ) or np.issubdtype(dtype, np.complexfloating):
        raise ValueError(f"{path}: holds {dtype} values; a real numeric array is needed.")
    if len(shape) != 2:
        raise ValueError(f"{path}: expected a 2-D array (rows x columns); got shape {shape}.")
    if 0 in shape:
        raise ValueError(f"{path}: the array is empty (shape {shape}).")


def _read_npy(path: Path) -> np.ndarray:
    X = _load_npy(path)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    return X


def _parquet_columns(path: Path, pa: Any, schema: Any) -> tuple[list[str], np.dtype]:
    """Column names of a Parquet schema, and the float dtype they are read as
    (float32 when every column is float32). Non-numeric columns are an error."""
    columns = [str(c) for c in schema.names]
    for j, field in enumerate(schema):
        t = field.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
            raise ValueError(
                f"{path}: {_column_label(j, columns)} has type {t}; all columns must be numeric."
            )
    single = len(columns) > 0 and all(pa.types.is_float32(f.type) for f in schema)
    return columns, np.dtype(np.float32 if single else np.float64)


def _parquet_column(path: Path, col: Any, j: int, columns: list[str], dtype: np.dtype,
                    first_row: int = 0) -> np.ndarray:
    """One Parquet column (chunked array) as a float array; nulls are an error that
    names the column and the first missing data row (counted from ``first_row``)."""
    if col.null_count:
        first = next(i for i, v in enumerate(col.is_null().to_pylist()) if v)
        raise ValueError(
            f"{path}: {_column_label(j, columns)} has {col.null_count} missing value(s) "
            f"(first in data row {first_row + first + 1})."
        )
    return np.asarray(col.to_numpy(zero_copy_only=False)).astype(dtype, copy=False)


def _read_parquet(path: Path) -> tuple[np.ndarray, list[str]]:
    pa = _import_pyarrow("reading")
    try:
        table = pa.parquet.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc}).") from None
    if table.num_rows == 0 or table.num_columns == 0:
        raise ValueError(f"{path}: the table is empty ({table.num_rows} rows).")
    columns, dtype = _parquet_columns(path, pa, table.schema)
    X = np.empty((table.num_rows, len(columns)), dtype=dtype)
    for j in range(len(columns)):
        X[:, j] = _parquet_column(path, table.column(j), j, columns, dtype)
    return X, columns
