"""Row sources: data read in row blocks, never held in memory whole.

The streamed estimators (:class:`kpca.NystromKernelPCA`,
:class:`kpca.RandomFeatureKernelPCA`) accept a :class:`RowSource` wherever they
accept an array: ``fit`` draws its small samples with :meth:`RowSource.take` and
streams everything else with :meth:`RowSource.blocks`, so memory stays bounded
by the block size whatever the number of rows. :mod:`kpca.io` implements it for
CSV/TSV/Parquet/.npy files (:func:`kpca.io.open_rows`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

import numpy as np


class RowSource(ABC):
    """A 2-D float table read in row blocks.

    Attributes
    ----------
    shape : tuple of int
        ``(n_rows, n_columns)``; known before any block is read.
    dtype : numpy.dtype
        float32 or float64: the dtype of every block.
    feature_names : ndarray of str or None
        Column names, when the source has them.
    """

    shape: tuple[int, int]
    dtype: np.dtype
    feature_names: np.ndarray | None = None

    @property
    def ndim(self) -> int:
        return 2

    @abstractmethod
    def blocks(self, rows: int) -> Iterator[np.ndarray]:
        """Consecutive blocks of at most ``rows`` rows, in order, shape (b, n_columns).

        Each call starts a new pass from the first row. Every block is finite
        (a source raises ``ValueError`` naming the row otherwise).
        """

    @abstractmethod
    def take(self, indices: np.ndarray) -> np.ndarray:
        """The rows at sorted, distinct ``indices``, shape (len(indices), n_columns)."""
