"""Input files of the command line: data (tables or documents), labels, and the
checks that a file fits a saved model.

* :func:`read_data` -- a numeric table (whole, or as a row source for the
  streamed estimators), or a ``.txt`` file of documents for a string kernel;
* :func:`read_labels` / :func:`split_label_column` -- labels from a file or from a
  column of the table;
* :func:`read_model_input` / :func:`check_columns` -- the table has the model's
  columns (number, and names when both have them); :func:`check_vectors` -- the
  model maps back to vectors; :func:`input_names` -- the names of input space;
* :func:`fit_scaler` / :func:`standardized` -- ``--standardize``: a scaler fitted on
  DATA (a row source in one pass) and data scaled by it.

Every problem is a ``ValueError`` naming the file (and the model).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._config import get_config
from .._files import PathLike
from .._rows import RowSource
from ..kernels import KERNELS
from ._sources import open_rows
from ._tables import TABLE_FORMATS, _check_readable, _column_label, _read_table

logger = logging.getLogger("kpca")


def is_string_kernel(kernel: Any) -> bool:
    """True for a kernel on strings (spectrum), given by name, class or instance."""
    if isinstance(kernel, str):
        kernel = KERNELS.get(kernel)
    cls = kernel if isinstance(kernel, type) else type(kernel)
    return (cls is not None and not getattr(cls, "requires_vectors", True)
            and getattr(cls, "name", "") != "precomputed")


def fitted_on_strings(est: Any) -> bool:
    """True for a model whose kernel takes strings."""
    return is_string_kernel(getattr(est, "kernel_", getattr(est, "kernel", None)))


def read_strings(path: PathLike) -> np.ndarray:
    """Documents for a string kernel: a UTF-8 ``.txt`` file, one per non-blank line.

    Returns
    -------
    ndarray of object, shape (n_documents,)
    """
    path = Path(path)
    if path.suffix.lower() != ".txt":
        raise ValueError(f"{path}: a string kernel reads a .txt file with one document per "
                         f"line; got {path.suffix or 'no extension'!r}.")
    _check_readable(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text file ({exc.reason}).") from None
    docs = [ln for ln in text.splitlines() if ln.strip()]
    if not docs:
        raise ValueError(f"{path}: the file is empty (no document).")
    logger.info("read %d documents from %s", len(docs), path)
    return np.array(docs, dtype=object)


def read_data(path: PathLike, *, header: bool | None = None, strings: bool = False,
              stream: bool = False) -> tuple[Any, list[str] | None]:
    """DATA of a command: a numeric table, or documents for a string kernel.

    Parameters
    ----------
    path : str or path-like
    header : bool or None, default=None
        CSV/TSV: whether the first row holds column names (None: detect).
    strings : bool, default=False
        Read documents (a ``.txt`` file, one per line) instead of a table.
    stream : bool, default=False
        Return a :class:`~kpca._rows.RowSource` (:func:`open_rows`) instead of
        reading the table.

    Returns
    -------
    X : ndarray or RowSource
        A table read whole has only finite values; a row source checks each block
        as it is read.
    columns : list of str or None
        The column names, when the table has them.

    Raises
    ------
    ValueError
        The file cannot be read as DATA, or holds a NaN or infinite value (the
        message names the file, row and column, for a whole table and a row source
        alike).
    """
    if strings:
        return read_strings(path), None
    if Path(path).suffix.lower() == ".txt":
        raise ValueError(
            f"{path}: .txt files hold documents for a string kernel (--kernel spectrum); "
            f"numeric data must be one of {', '.join(TABLE_FORMATS)}."
        )
    if stream:
        source = open_rows(path, header=header)
        names = source.feature_names
        return source, None if names is None else [str(c) for c in names]
    # the estimators' own check would name no file, row or column
    return _read_table(path, header=header, finite=True)


def read_labels(path: PathLike, n: int) -> np.ndarray:
    """Labels from a text file: one per line; an extra first line is a header."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            lines = [ln.strip() for ln in fh if ln.strip()]
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file.") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text file ({exc.reason}).") from None
    if len(lines) == n + 1:
        lines = lines[1:]
    if len(lines) != n:
        raise ValueError(f"{path}: has {len(lines)} labels but the data have {n} rows.")
    return np.array(lines, dtype=object)


def _unknown_column(column: str, columns: list[str] | None) -> str:
    """'no column named ...' with the close names and a few of the others, not all
    of them (a 64-column table made a message of 64 names)."""
    if columns is None:
        return (f"no column named {column!r}: the table has no header (give the column's "
                "1-based index, or a table with a header row).")
    import difflib

    close = difflib.get_close_matches(column, columns, n=3, cutoff=0.6)
    shown = columns[:5]  # a few names show what the header looks like
    more = f", ... ({len(columns)} columns)" if len(columns) > len(shown) else ""
    return (f"no column named {column!r}"
            + (f"; did you mean {' or '.join(map(repr, close))}?" if close else "")
            + f" (columns: {', '.join(map(repr, shown))}{more}; or a 1-based index "
            f"1..{len(columns)}).")


def split_label_column(X: np.ndarray, columns: list[str] | None, column: str,
                       path: PathLike) -> tuple[np.ndarray, np.ndarray, list[str] | None]:
    """Take the label column out of a table.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    columns : list of str or None
    column : str
        A column name, or a 1-based index.
    path : str or path-like
        The file, for messages.

    Returns
    -------
    X : ndarray of shape (n, d - 1)
    labels : ndarray of shape (n,)
        Integers when every value is integral.
    columns : list of str or None
    """
    if columns is not None and column in columns:
        j = columns.index(column)
    else:
        try:
            j = int(column) - 1
        except ValueError:
            raise ValueError(f"{path}: {_unknown_column(column, columns)}") from None
        if not 0 <= j < X.shape[1]:
            raise ValueError(f"{path}: column index {column} is out of range (1..{X.shape[1]}).")
    labels = X[:, j]
    labels = labels.astype(int) if np.all(labels == np.round(labels)) else labels
    X = np.delete(X, j, axis=1)
    if columns is not None:
        columns = columns[:j] + columns[j + 1:]
    if X.shape[1] == 0:
        raise ValueError(f"{path}: no feature column left besides the labels.")
    return X, labels, columns


def read_data_and_labels(
    path: PathLike, *, header: bool | None = None, strings: bool = False,
    labels: PathLike | None = None, label_column: str | None = None,
) -> tuple[Any, np.ndarray | None, list[str] | None]:
    """DATA and its labels: from the file ``labels``, or the column ``label_column``.

    Returns
    -------
    X : ndarray
    labels : ndarray or None
    columns : list of str or None
        The names of the feature columns.
    """
    X, columns = read_data(path, header=header, strings=strings)
    if label_column is not None:
        if strings:
            raise ValueError("--label-column needs a table; with documents use --labels FILE.")
        return split_label_column(X, columns, label_column, path)
    y = read_labels(labels, X.shape[0]) if labels else None
    return X, y, columns


def _names(values: Sequence[Any], limit: int = 6) -> str:
    shown = ", ".join(str(v) for v in list(values)[:limit])
    return shown + (", ..." if len(values) > limit else "")


def check_columns(est: Any, X: Any, columns: Sequence[str] | None, data: PathLike,
                  model: PathLike) -> None:
    """DATA must have the model's number of columns, and its names if both have names.

    Checked before the estimator sees the data, so that the message names the
    file and the model. Without a header (or for a model fitted without one) the
    columns are matched by position.

    Parameters
    ----------
    est : fitted estimator
    X : ndarray or RowSource
        The data (only its shape is used).
    columns : sequence of str or None
        The file's column names.
    data, model : str or path-like
        The data and model files, for messages.
    """
    n = getattr(est, "n_features_in_", None)
    if n is None or getattr(X, "ndim", 1) != 2:
        return  # strings: no columns
    names = getattr(est, "feature_names_in_", None)
    if X.shape[1] != n:
        if getattr(getattr(est, "kernel_", None), "name", getattr(est, "kernel", None)) == \
                "precomputed":
            what = f"{n} training samples (a precomputed kernel has one column per training sample)"
        else:
            what = f"{n} columns" + (f" ({_names(names)})" if names is not None else "")
        raise ValueError(
            f"{data}: has {X.shape[1]} columns but the model {model} was fitted on {what}."
        )
    if names is not None and columns is not None and [str(c) for c in names] != list(columns):
        raise ValueError(
            f"{data}: its columns ({_names(columns)}) are not those of the model {model} "
            f"({_names(names)}), in that order; rename or reorder them, or pass --no-header "
            "if the first row is data."
        )


def input_names(est: Any, columns: Sequence[str] | None = None) -> list[str]:
    """Names of the columns of input space (pre-images, denoised rows): the model's
    feature names, else ``columns`` (the input file's), else ``x0, x1, ...``."""
    names = getattr(est, "feature_names_in_", None)
    names = columns if names is None else names
    if names is None:
        return [f"x{j}" for j in range(est.n_features_in_)]
    return [str(c) for c in names]


def read_model_input(path: PathLike, est: Any, model: PathLike, *, header: bool | None = None,
                     stream: bool = False, check: bool = True) -> tuple[Any, list[str] | None]:
    """DATA for a fitted model: documents if its kernel takes strings, else a table
    (a row source with ``stream``) whose columns, with ``check``, are the model's
    (:func:`check_columns`).

    Returns
    -------
    X : ndarray or RowSource
    columns : list of str or None
    """
    strings = fitted_on_strings(est)
    X, columns = read_data(path, header=header, strings=strings, stream=stream and not strings)
    if check:
        check_columns(est, X, columns, path, model)
    return X, columns


def check_scores(est: Any, Y: Any, data: PathLike, model: PathLike) -> None:
    """SCORES (input of a pre-image) need one column per component of the model."""
    k = len(est.eigenvalues_)
    if Y.shape[1] != k:
        raise ValueError(f"{data}: has {Y.shape[1]} columns but the model {model} has {k} "
                         "components; SCORES needs one column per component.")


def check_vectors(est: Any, model: PathLike, command: str) -> None:
    """``command`` maps back to input vectors: refuse a model fitted on strings."""
    if fitted_on_strings(est):
        raise ValueError(
            f"{model}: the model was fitted on strings ({type(est.kernel_).__name__} kernel); "
            f"'kpca {command}' maps back to input vectors, which strings do not have."
        )



# ------------------------------------------------------------------ standardized inputs
class _ScaledRows(RowSource):
    """A row source whose blocks are standardized by a fitted scaler."""

    def __init__(self, source: RowSource, scaler: Any) -> None:
        self.source, self.scaler = source, scaler
        self.shape, self.dtype = source.shape, source.dtype
        self.feature_names = source.feature_names

    def __repr__(self) -> str:
        return f"standardized({self.source!r})"

    def blocks(self, rows: int) -> Iterator[np.ndarray]:
        for block in self.source.blocks(rows):
            yield self.scaler.transform(block)

    def take(self, indices: np.ndarray) -> np.ndarray:
        return self.scaler.transform(self.source.take(indices))


def fit_scaler(X: Any, data: PathLike, columns: Sequence[str] | None = None) -> Any:
    """A :class:`~sklearn.preprocessing.StandardScaler` fitted on DATA (``--standardize``).

    Parameters
    ----------
    X : ndarray or RowSource
        A row source is read once, block by block (``partial_fit``).
    data : str or path-like
        The file, for messages.
    columns : sequence of str, optional
        The column names, for messages (a row source's own names otherwise).

    Returns
    -------
    StandardScaler
        Fitted; a constant column keeps scale 1 (it is centred only).

    Raises
    ------
    ValueError
        A column's mean or variance overflows float64 (values near 1e154 and above):
        scikit-learn's scaler would leave it unscaled (infinite variance) or NaN.
    """
    from sklearn.preprocessing import StandardScaler

    if X.ndim != 2 or isinstance(X, np.ndarray) and X.dtype.kind not in "fiub":
        raise ValueError(f"{data}: --standardize needs a numeric table, one row per "
                         "sample; a string kernel's documents have no columns to scale.")
    scaler = StandardScaler()
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
        if isinstance(X, RowSource):
            block_bytes = get_config()["stream_block_bytes"]
            for block in X.blocks(max(1024, block_bytes // (8 * max(1, X.shape[1])))):
                scaler.partial_fit(block)
            columns = columns if columns is not None else X.feature_names
        else:
            scaler.fit(X)
    bad = np.flatnonzero(~(np.isfinite(scaler.mean_) & np.isfinite(scaler.var_)))
    if bad.size:
        raise ValueError(
            f"{data}: --standardize: the values of {_column_label(int(bad[0]), columns)} "
            "are too large to standardize in float64 (their mean or variance overflows); "
            "divide that column by a power of ten first."
        )
    return scaler


def standardized(X: Any, scaler: Any) -> Any:
    """``X`` standardized by ``scaler`` (``None``: ``X`` itself); never in place.

    Parameters
    ----------
    X : ndarray or RowSource
    scaler : fitted StandardScaler or None

    Returns
    -------
    ndarray or RowSource
        A new array, or a row source that scales each block as it is read.
    """
    if scaler is None:
        return X
    if isinstance(X, RowSource):
        return _ScaledRows(X, scaler)
    return scaler.transform(X)
