"""Kernel rows times a matrix, ``k(X, Z) @ C``, by the compiled tile product's loop.

``transform`` multiplies kernel rows of new points by the coefficients of the fitted
subspace, in pieces of ``fused_cols`` expansion points so that each piece is
multiplied while it is in cache (:mod:`kpca.subspace`). For the float32 RBF kernel
the compiled tile product (:data:`kpca.operators._tiled.NATIVE`) has that loop over a
block's pieces in C (``rows_rbf``): each piece evaluated and multiplied as NumPy's
loop does, with the GIL released for the whole block.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _native
from ..kernels import RBF, Kernel, RBFPrepared, RBFRows
from . import _tiled


def compiled_rows(kernel: Kernel, prep: Any, C: np.ndarray, n_rows: int, piece_cols: int
                  ) -> Callable[[RBFRows, np.ndarray], None] | None:
    """The compiled product of a block of kernel rows and ``C``, or None where it does
    not apply.

    It applies to the RBF kernel with float32 coefficients whose columns the compiled
    loops read (:meth:`RBFPrepared.compiled <kpca.kernels.RBFPrepared.compiled>`), where
    the compiled tile product has its ``rows_rbf`` loop, and where the columns' panels
    are packed: they are packed here for at least ``native_rbf_pack_rows`` (a setting,
    read when the columns were prepared) rows to multiply; fewer do not pay for
    packing them, unless they are packed already (as ``RBF.block_prepared`` decides).

    Parameters
    ----------
    kernel : Kernel
    prep : object
        The columns ``Z`` as ``kernel.prepare`` made them (m of them).
    C : ndarray of shape (m, c)
        float32.
    n_rows : int
        Rows to multiply in all (whether packing the columns pays).
    piece_cols : int
        Columns of the pieces evaluated and multiplied in cache (the setting
        ``fused_cols``).

    Returns
    -------
    callable or None
        ``product(rows, acc)``: ``acc += k(rows, Z) @ C`` for a block of rows prepared
        by ``kernel.prepare_rows`` (an :class:`~kpca.kernels.RBFRows`) and ``acc`` of
        shape (rows, c), in one compiled call.
    """
    fns = _tiled._tileprod if _tiled.NATIVE else None
    if (getattr(fns, "rows_rbf", None) is None or C.dtype != np.float32
            or not isinstance(kernel, RBF) or not isinstance(prep, RBFPrepared)
            or not prep.compiled()):
        return None
    if n_rows >= prep.limits[1]:
        prep.pack()
    panels = prep.panels()
    if panels is None:
        return None
    rows_rbf, cols, C, sgemm = fns.rows_rbf, prep.aug, np.ascontiguousarray(C), _native.sgemm()
    # the portable variant's exponents by BLAS where a wider variant runs here
    # (kpca._native.blas_products)
    blas_block = _native.blas_products(fns)

    def product(rows: RBFRows, acc: np.ndarray) -> None:
        rows_rbf(rows.aug, cols, panels, rows.clamp, C, acc, piece_cols, sgemm, blas_block)

    return product
