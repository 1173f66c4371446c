"""Tables read in row blocks: file-backed :class:`kpca._rows.RowSource` objects.

:func:`open_rows` opens a ``.csv``/``.tsv``, ``.parquet`` or ``.npy`` file
without reading its rows: the streamed estimators
(:class:`kpca.NystromKernelPCA`, :class:`kpca.RandomFeatureKernelPCA`) then read
it block by block, so memory is bounded by the block size whatever the number
of rows.

* CSV/TSV: one counting pass when opened (header detection, number of rows);
  each block is parsed with :func:`numpy.loadtxt` (the standard ``csv`` module
  locates the offending cell when a block does not parse).
* Parquet (pyarrow): ``ParquetFile.iter_batches`` with buffered column reads, so a
  large row group is not loaded whole.
* ``.npy``: the header gives the shape; blocks are plain file reads (a
  Fortran-ordered array is read through a memory map), :meth:`take` goes through
  a memory map.

Every block is checked: numbers only, no missing or non-finite value; the
``ValueError`` names the file, the row (the line of a CSV file, the data row of
the others) and the column, as :func:`kpca.io.read_table` does.

Each block read emits a DEBUG record on the ``kpca`` logger with
``kpca_event='rows'``, ``kpca_rows`` (rows read so far in this pass) and
``kpca_total``: the command line turns them into a progress bar.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import logging
from abc import abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._config import get_config
from .._files import PathLike
from .._rows import RowSource
from ._tables import (
    _check_readable,
    _detect_header,
    _format_of,
    _import_pyarrow,
    _load_npy,
    _parquet_column,
    _parquet_columns,
    _raise_bad_cell,
    check_finite,
    open_text,
)

logger = logging.getLogger("kpca")


def open_rows(path: PathLike, *, header: bool | None = None,
              dtype: Any = None) -> RowSource:
    """Open a table file for reading in row blocks.

    Parameters
    ----------
    path : str or path-like
        A ``.csv``, ``.tsv``, ``.npy`` or ``.parquet`` file (chosen by extension).
    header : bool or None, default=None
        CSV/TSV only: whether the first row holds column names; ``None`` detects
        it as :func:`kpca.io.read_table` does.
    dtype : {None, 'float32', 'float64'}, default=None
        Dtype of the blocks. ``None``: float32 when the file stores float32
        (.npy, Parquet), float64 otherwise.

    Returns
    -------
    RowSource
        ``shape``, ``dtype`` and ``feature_names`` (the header or Parquet column
        names, else None) are known at once; :meth:`~kpca._rows.RowSource.blocks`
        and :meth:`~kpca._rows.RowSource.take` read the file.

    Raises
    ------
    ValueError
        Missing or empty file, unknown extension, ragged rows, a non-numeric
        column (messages name the file, and the row and column where they apply).
        Bad cells further down are reported when the block holding them is read.
    ImportError
        A Parquet file and pyarrow is not installed.

    Examples
    --------
    >>> rows = open_rows("big.parquet")                 # doctest: +SKIP
    >>> NystromKernelPCA(10).fit(rows)                   # doctest: +SKIP
    >>> sum(len(b) for b in rows.blocks(10_000)) == rows.shape[0]  # doctest: +SKIP
    True
    """
    path = Path(path)
    ext = _format_of(path)
    _check_readable(path)
    if dtype is not None:
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"open_rows: dtype must be float32, float64 or None; got {dtype}.")
    if ext in (".csv", ".tsv"):
        source: _FileRows = _DelimitedRows(path, "\t" if ext == ".tsv" else ",", header,
                                           dtype)
    elif ext == ".npy":
        source = _NpyRows(path, dtype)
    else:
        source = _ParquetRows(path, dtype)
    logger.info("opened %d x %d table %s (read in row blocks)", *source.shape, path)
    return source


def _check_rows(rows: Any) -> int:
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 1:
        raise ValueError(f"blocks: rows must be an integer >= 1; got {rows!r}.")
    return int(rows)


class _FileRows(RowSource):
    """Shared part of the file sources: block checks, progress records, take."""

    #: how messages name a row: the file line ("row", CSV) or the position ("data row")
    _row_word = "data row"

    def __init__(self, path: Path, shape: tuple[int, int], dtype: np.dtype,
                 columns: list[str] | None) -> None:
        self.path = path
        self.shape = (int(shape[0]), int(shape[1]))
        self.dtype = np.dtype(dtype)
        self.columns = columns
        self.feature_names = None if columns is None else np.asarray(columns, dtype=object)

    def __repr__(self) -> str:
        return f"{type(self).__name__.lstrip('_')}({str(self.path)!r}, shape={self.shape})"

    # subclasses: consecutive raw blocks of `rows` rows (the last may be shorter), each
    # with the number messages give each row (CSV: its line), or None (its position)
    @abstractmethod
    def _read(self, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """Consecutive raw blocks (see the comment above)."""

    def blocks(self, rows: int) -> Iterator[np.ndarray]:
        """Consecutive blocks of at most ``rows`` rows, from the first row.

        Parameters
        ----------
        rows : int

        Yields
        ------
        ndarray of shape (b, n_columns)
            In ``dtype``; finite (a ``ValueError`` names the file, row and column
            of a missing, non-numeric or non-finite cell).
        """
        rows = _check_rows(rows)
        return self._blocks(rows, progress=True)

    def _blocks(self, rows: int, *, progress: bool) -> Iterator[np.ndarray]:
        start, n = 0, self.shape[0]
        for raw, lines in self._read(rows):
            block = self._checked(raw, start, lines)
            start += block.shape[0]
            if progress:
                logger.debug("%s: read rows %d-%d of %d", self.path.name,
                             start - block.shape[0] + 1, start, n,
                             extra={"kpca_event": "rows", "kpca_rows": start,
                                    "kpca_total": n, "kpca_source": str(self.path)})
            yield block
        if start != n:  # the file changed since it was opened
            raise ValueError(f"{self.path}: read {start} rows, expected {n}; was the file "
                             "modified while it was read?")

    def _checked(self, raw: np.ndarray, start: int, lines: np.ndarray | None) -> np.ndarray:
        with np.errstate(over="ignore"):  # an overflow to float32 is reported below
            block = np.asarray(raw).astype(self.dtype, copy=False)
        if block.shape[1:] != (self.shape[1],):
            raise ValueError(f"{self.path}: a block of shape {block.shape} does not have "
                             f"{self.shape[1]} columns.")
        check_finite(self.path, block, self.columns, raw=raw, first_row=start,
                     rows=lines, row_word=self._row_word)
        return block

    def take(self, indices: Any) -> np.ndarray:
        """The rows at sorted, distinct ``indices`` (one pass over the file).

        Parameters
        ----------
        indices : array-like of int

        Returns
        -------
        ndarray of shape (len(indices), n_columns)
        """
        idx = self._indices(indices)
        out = np.empty((idx.size, self.shape[1]), dtype=self.dtype)
        pos = start = 0
        rows = get_config()["take_block_rows"]
        for block in (self._blocks(rows, progress=False) if idx.size else ()):
            stop = start + block.shape[0]
            hi = int(np.searchsorted(idx, stop))
            out[pos:hi] = block[idx[pos:hi] - start]
            pos, start = hi, stop
            if pos == idx.size:
                break
        return out

    def _indices(self, indices: Any) -> np.ndarray:
        idx = np.asarray(indices)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise ValueError("take: indices must be a 1-D array of integers.")
        idx = idx.astype(np.int64)
        if idx.size and (idx[0] < 0 or idx[-1] >= self.shape[0] or np.any(np.diff(idx) <= 0)):
            raise ValueError(f"take: indices must be sorted, distinct and in [0, "
                             f"{self.shape[0]}).")
        return idx


# --------------------------------------------------------------------------- CSV / TSV
class _DelimitedRows(_FileRows):
    """A CSV/TSV file; blank lines are skipped, as by :func:`kpca.io.read_table`."""

    _row_word = "row"

    def __init__(self, path: Path, delimiter: str, header: bool | None,
                 dtype: np.dtype | None) -> None:
        self.path, self._delimiter = path, delimiter
        n = 0
        with self._open() as fh:
            first, self._first_line = self._first_record(fh)
            for text in fh:
                n += bool(text.strip())
        self._header = _detect_header(path, first, self._first_line, header)
        if self._header and n == 0:
            raise ValueError(f"{path}: has a header row but no data rows.")
        columns = [c.strip() for c in first] if self._header else None
        n += not self._header
        super().__init__(path, (n, len(first)), dtype or np.dtype(np.float64), columns)

    def _open(self):
        return open_text(self.path)

    def _first_record(self, fh: Any) -> tuple[list[str], int]:
        """The first non-blank record and its (last) line; ``fh`` is left after it."""
        reader = csv.reader(fh, delimiter=self._delimiter)
        for row in reader:
            if row and any(c.strip() for c in row):
                return row, reader.line_num
        raise ValueError(f"{self.path}: the file is empty (no rows).")

    def _lines(self) -> Iterator[tuple[int, str]]:
        """(file line, text) of every non-blank data line."""
        with self._open() as fh:
            head = list(itertools.islice(fh, self._first_line))
            if not self._header:
                yield self._first_line, head[-1]
            for num, text in enumerate(fh, start=self._first_line + 1):
                if text.strip():
                    yield num, text

    def _parse(self, texts: list[str], nums: list[int]) -> np.ndarray:
        width = self.shape[1]
        try:
            X = np.loadtxt(texts, delimiter=self._delimiter, quotechar='"', comments=None,
                           dtype=np.float64, ndmin=2)
            if X.shape == (len(texts), width):
                return X
        except ValueError:
            pass
        # locate the problem as read_table does (or parse what loadtxt refused)
        rows = [next(csv.reader([t], delimiter=self._delimiter), []) for t in texts]
        for row, num in zip(rows, nums, strict=True):
            if len(row) != width:
                raise ValueError(
                    f"{self.path}: row {num} has {len(row)} fields but row "
                    f"{self._first_line} has {width}; every row needs the same number of "
                    "columns.")
        try:
            return np.array(rows, dtype=np.float64)
        except ValueError:
            _raise_bad_cell(self.path, rows, nums, self.columns)
            raise  # pragma: no cover - _raise_bad_cell raises

    def _read(self, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        lines = self._lines()
        while chunk := list(itertools.islice(lines, rows)):
            nums, texts = zip(*chunk, strict=True)
            yield self._parse(list(texts), list(nums)), np.asarray(nums)

    def take(self, indices: Any) -> np.ndarray:
        """The rows at sorted, distinct ``indices``: one pass that parses only them."""
        idx = self._indices(indices)
        wanted, chosen = iter(idx.tolist()), []
        nxt = next(wanted, None)
        for i, (num, text) in enumerate(self._lines() if idx.size else ()):
            if i == nxt:
                chosen.append((num, text))
                nxt = next(wanted, None)
                if nxt is None:
                    break
        if not chosen:
            return np.empty((0, self.shape[1]), dtype=self.dtype)
        nums, texts = zip(*chosen, strict=True)
        raw = self._parse(list(texts), list(nums))
        return self._checked(raw, 0, np.asarray(nums))


# --------------------------------------------------------------------------- .npy
class _NpyRows(_FileRows):
    def __init__(self, path: Path, dtype: np.dtype | None) -> None:
        mm = _load_npy(path, mmap_mode="r")
        self._file_dtype = mm.dtype
        self._offset = int(mm.offset)
        self._fortran = bool(mm.flags.f_contiguous and not mm.flags.c_contiguous)
        natural = mm.dtype if mm.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        shape = mm.shape
        del mm
        super().__init__(path, shape, dtype or natural, None)

    def _read(self, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        n, d = self.shape
        if self._fortran:
            mm = np.load(self.path, mmap_mode="r", allow_pickle=False)
            for start in range(0, n, rows):
                yield np.array(mm[start:start + rows]), None
            return
        with open(self.path, "rb") as fh:
            fh.seek(self._offset)
            for start in range(0, n, rows):
                b = min(rows, n - start)
                block = np.fromfile(fh, dtype=self._file_dtype, count=b * d)
                if block.size != b * d:
                    raise ValueError(f"{self.path}: the file is truncated (data row "
                                     f"{start + block.size // d + 1} is missing).")
                yield block.reshape(b, d), None

    def take(self, indices: Any) -> np.ndarray:
        """The rows at sorted, distinct ``indices``, read through a memory map."""
        idx = self._indices(indices)
        mm = np.load(self.path, mmap_mode="r", allow_pickle=False)
        out = np.empty((idx.size, self.shape[1]), dtype=self.dtype)
        rows = get_config()["take_block_rows"]
        for s in range(0, idx.size, rows):  # positions in the messages
            part = idx[s:s + rows]
            out[s:s + part.size] = self._checked(np.asarray(mm[part]), 0, part + 1)
        return out


# --------------------------------------------------------------------------- Parquet
class _ParquetRows(_FileRows):
    # buffered reads of parquet_buffer_bytes (a setting) per column chunk: a row group
    # is never read whole

    def __init__(self, path: Path, dtype: np.dtype | None) -> None:
        self._pa = _import_pyarrow("reading")
        with self._file(path) as pf:
            columns, natural = _parquet_columns(path, self._pa, pf.schema_arrow)
            n = pf.metadata.num_rows
        if n == 0 or not columns:
            raise ValueError(f"{path}: the table is empty ({n} rows).")
        super().__init__(path, (n, len(columns)), dtype or natural, columns)

    @contextlib.contextmanager
    def _file(self, path: Path) -> Iterator[Any]:
        pa = self._pa
        try:
            buffer = get_config()["parquet_buffer_bytes"]
            with pa.parquet.ParquetFile(path, buffer_size=buffer, pre_buffer=False) as pf:
                yield pf
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{path}: not a readable Parquet file ({exc}).") from None

    def _read(self, rows: int) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        columns, start, pending = self.columns or [], 0, []
        with self._file(self.path) as pf:
            for batch in pf.iter_batches(batch_size=rows, use_threads=False):
                if batch.num_rows == 0:
                    continue
                block = np.empty((batch.num_rows, len(columns)), dtype=self.dtype)
                for j in range(len(columns)):
                    block[:, j] = _parquet_column(self.path, batch.column(j), j, columns,
                                                  self.dtype, first_row=start)
                start += batch.num_rows
                pending.append(block)
                # batches stop at row-group boundaries: regroup them into full blocks
                while sum(len(b) for b in pending) >= rows:
                    joined = np.concatenate(pending) if len(pending) > 1 else pending[0]
                    yield joined[:rows], None
                    pending = [joined[rows:]] if len(joined) > rows else []
        if pending:
            yield np.concatenate(pending), None
