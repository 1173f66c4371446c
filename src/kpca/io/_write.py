"""Writing numeric tables (.csv, .tsv, .npy, .parquet) atomically, whole or in blocks.

* :func:`write_table` writes an array;
* :func:`open_table_writer` writes a table block by block (:meth:`TableWriter.write`),
  and :func:`write_blocks` writes a function of each block of a row source,
  so that a streamed transform never holds its output whole: CSV/TSV rows are
  appended, Parquet goes through a ``pyarrow.parquet.ParquetWriter`` (one row
  group per block), ``.npy`` gets its header first and then the raw rows.

Either way the data go to a temporary file in the destination directory, which
replaces the destination (:func:`os.replace`) only once the last block is
written; on any error the temporary file is removed, so a failed write never
leaves a partial (or any) output file.
"""

from __future__ import annotations

import contextlib
import csv
import logging
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from .._config import get_config
from .._files import PathLike, atomic_write, check_writable
from .._rows import RowSource
from ._tables import _format_of, _import_pyarrow

logger = logging.getLogger("kpca")


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
    return check_writable(path)


class TableWriter:
    """Appends row blocks to an open table file (see :func:`open_table_writer`).

    Attributes
    ----------
    columns : list of str
        Column names.
    n_rows : int
        Rows written so far.
    """

    def __init__(self, fh: IO[Any], fmt: str, columns: list[str],
                 expected_rows: int | None) -> None:
        self._fh, self._fmt, self.columns = fh, fmt, columns
        self._expected = expected_rows
        self.n_rows = 0
        self._dtype: np.dtype | None = None
        self._parquet: Any = None
        self._csv: Any = None
        if fmt in (".csv", ".tsv"):
            self._csv = csv.writer(fh, delimiter="\t" if fmt == ".tsv" else ",",
                                   lineterminator="\n")
            self._csv.writerow(columns)

    def write(self, block: Any) -> None:
        """Append the rows of ``block``, an array of shape (b, len(columns)).

        Every block is converted to the dtype of the first one (the dtype of a
        ``.npy`` file or of the Parquet columns).
        """
        Z = np.asarray(block)
        if Z.ndim != 2 or Z.shape[1] != len(self.columns):
            raise ValueError(f"TableWriter: expected blocks of shape (b, {len(self.columns)}); "
                             f"got {Z.shape}.")
        if self._dtype is None:
            if Z.dtype.kind not in "biuf":
                raise ValueError(f"TableWriter: expected numbers; got {Z.dtype} values.")
            self._dtype = Z.dtype
            self._start()
        Z = Z.astype(self._dtype, copy=False)
        if self._csv is not None:
            _write_rows(self._csv, Z)
        elif self._fmt == ".npy":
            if self._expected is not None and self.n_rows + Z.shape[0] > self._expected:
                raise ValueError(f"TableWriter: more than the {self._expected} rows announced.")
            self._fh.write(np.ascontiguousarray(Z).tobytes())
        else:
            pa = _import_pyarrow("writing")
            self._parquet.write_table(pa.table(
                {name: Z[:, j] for j, name in enumerate(_unique(self.columns))}))
        self.n_rows += Z.shape[0]

    def _start(self) -> None:
        """Header of a binary file, once the dtype is known."""
        if self._fmt == ".npy":
            if self._expected is None:
                raise ValueError("TableWriter: a .npy file needs n_rows (its header comes "
                                 "first).")
            meta = np.lib.format.header_data_from_array_1_0(
                np.empty((0, len(self.columns)), self._dtype))
            meta["shape"] = (self._expected, len(self.columns))
            np.lib.format.write_array_header_1_0(self._fh, meta)
        elif self._fmt == ".parquet":
            pa = _import_pyarrow("writing")
            schema = pa.schema([(name, pa.from_numpy_dtype(self._dtype))
                                for name in _unique(self.columns)])
            self._parquet = pa.parquet.ParquetWriter(self._fh, schema)

    def _abort(self) -> None:
        """Release the Parquet writer of a failed write (its file is discarded)."""
        if self._parquet is not None:
            with contextlib.suppress(Exception):
                self._parquet.close()
            self._parquet = None

    def _finish(self) -> None:
        if self._dtype is None:  # no block: an empty table
            self._dtype = np.dtype("f8")
            self._start()
        if self._parquet is not None:
            self._parquet.close()
        if self._expected is not None and self.n_rows != self._expected:
            raise ValueError(f"TableWriter: {self.n_rows} rows written, "
                             f"{self._expected} announced.")


@contextlib.contextmanager
def open_table_writer(
    target: PathLike | IO[str], columns: Sequence[str], *, n_rows: int | None = None
) -> Iterator[TableWriter]:
    """Write a table block by block, atomically.

    Parameters
    ----------
    target : str, path-like or text stream
        Destination file (format by extension: .csv, .tsv, .npy, .parquet), or an
        open text stream such as ``sys.stdout`` (CSV, written as it comes).
    columns : sequence of str
        Column names (CSV header, Parquet column names; not stored by .npy).
    n_rows : int, default=None
        Rows that will be written: required for ``.npy`` (its header holds the
        shape), checked when given.

    Yields
    ------
    TableWriter
        Call :meth:`TableWriter.write` with each block; the file replaces
        ``target`` when the ``with`` block ends without an error, and is
        discarded otherwise.

    Examples
    --------
    >>> with open_table_writer("scores.csv", ["pc0", "pc1"]) as out:  # doctest: +SKIP
    ...     for block in blocks:
    ...         out.write(block)
    """
    columns = [str(c) for c in columns]
    if hasattr(target, "write"):
        writer = TableWriter(target, ".csv", columns, n_rows)  # type: ignore[arg-type]
        yield writer
        writer._finish()
        target.flush()  # type: ignore[union-attr]
        return
    path = Path(target)  # type: ignore[arg-type]
    fmt = _format_of(path)
    if fmt == ".npy" and n_rows is None:
        raise ValueError(f"{path}: writing .npy block by block needs n_rows.")
    if fmt == ".parquet":
        _import_pyarrow("writing")  # before the temporary file is created
    text = fmt in (".csv", ".tsv")
    kwargs: dict[str, Any] = dict(newline="", encoding="utf-8") if text else {}
    with atomic_write(path, "w" if text else "wb", **kwargs) as fh:
        writer = TableWriter(fh, fmt, columns, n_rows)
        try:
            yield writer
            writer._finish()
        except BaseException:
            writer._abort()
            raise
    logger.info("wrote %d x %d table to %s", writer.n_rows, len(columns), path)


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
    _format_of(path)
    Z = np.asarray(Z)
    if Z.ndim != 2:
        raise ValueError(f"write_table: expected a 2-D array; got shape {Z.shape}.")
    if columns is None:
        columns = [f"col{j}" for j in range(Z.shape[1])]
    if len(columns) != Z.shape[1]:
        raise ValueError(
            f"write_table: {len(columns)} column names for {Z.shape[1]} columns."
        )
    with open_table_writer(path, columns, n_rows=Z.shape[0]) as out:
        out.write(Z)


def write_blocks(target: PathLike | IO[str] | None, columns: Sequence[str], X: Any,
                 fn: Callable[[Any], Any] | None = None, *,
                 block_bytes: int | None = None) -> None:
    """Write ``fn`` of the rows of ``X``, atomically; a row source block by block.

    Parameters
    ----------
    target : str, path-like, text stream or None
        As :func:`open_table_writer`; ``None`` is standard output.
    columns : sequence of str
        Column names of the output.
    X : ndarray or RowSource
        A :class:`~kpca._rows.RowSource` is read in blocks of about ``block_bytes``
        of float64 input (at least 1024 rows), each written before the next is read,
        so memory does not grow with the number of rows; an array is done at once.
    fn : callable, default=None
        Block of input rows -> block of output rows (e.g. ``estimator.transform``);
        ``None`` writes ``X`` itself.
    block_bytes : int, default=None
        Default: the setting ``stream_block_bytes`` (kpca._config).
    """
    fn = fn or (lambda Z: Z)
    if block_bytes is None:
        block_bytes = get_config()["stream_block_bytes"]
    if isinstance(X, RowSource):
        blocks: Any = X.blocks(max(1024, block_bytes // (8 * X.shape[1])))
    else:
        blocks = [X]
    with open_table_writer(sys.stdout if target is None else target, columns,
                           n_rows=X.shape[0]) as out:
        for block in blocks:
            out.write(np.asarray(fn(block)))


def write_delimited(
    fh: IO[str], Z: np.ndarray, columns: Sequence[str], delimiter: str = ","
) -> None:
    """Write a header and the rows of ``Z`` to an open text file."""
    writer = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
    writer.writerow(columns)
    _write_rows(writer, np.asarray(Z))


def _write_rows(writer: Any, Z: np.ndarray) -> None:
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
