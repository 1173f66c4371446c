"""The evaluation engines of a fitted subspace: its scores for new rows.

:class:`~kpca.subspace.FittedSubspace` is the value (centre, directions, their closed
forms); these functions evaluate it on rows (docs/math.md, "The fitted subspace")::

    y_l(t) = k(t, Z) C_l - b_l,      ||phi(t) - theta||^2 = k(t, t) - 2 k(t, Z) g + ||theta||^2

* :func:`transform` -- NumPy rows on ``n_jobs`` threads: dense rows of a vector kernel
  by :func:`transform_fused` (kernel values evaluated and multiplied in cache-sized
  pieces, a compiled loop for the float32 RBF kernel), anything else in row blocks of
  kernel rows;
* :func:`transform_device` -- an Array API array (PyTorch, CuPy, ...) on its device;
* :func:`raw_projection` -- raw scores and squared distances in float64 (diagnostics,
  pre-images).

A Dask collection is transformed by :func:`kpca.distributed.transform_dask`, which maps
the estimator's NumPy ``transform`` (so :func:`transform`) over its row chunks.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import numpy as np

from .._config import get_config
from .._parallel import job_threads, run_blocks
from ..kernels import RBFRows, check_finite_kernel
from ..operators import compiled_rows, n_threads

if TYPE_CHECKING:
    from ._fitted import FittedSubspace

# block budgets (settings, kpca._config): transform_block_bytes, the kernel rows one
# ``transform`` thread evaluates at once (rows x m); fused_rows x fused_cols, the pieces
# of kernel rows that ``transform`` evaluates and multiplies in cache; and
# preimage_block_bytes, the (rows x m) float64 kernel rows of ``raw_projection``. A
# ``block_bytes`` of None below is the setting.


def budget(block_bytes: int | None, name: str) -> int:
    """``block_bytes``, or the setting ``name`` where it is None."""
    return get_config()[name] if block_bytes is None else block_bytes


def transform(space: FittedSubspace, X: Any, *, n_jobs: int | None = None, dtype: Any = None,
              block_bytes: int | None = None) -> np.ndarray:
    """:meth:`FittedSubspace.transform <kpca.subspace.FittedSubspace.transform>`: the
    scores of the rows of ``X`` (validated, NumPy or SciPy), shape (m, k), in ``dtype``
    (default: X's float dtype)."""
    if dtype is not None:
        dt = np.dtype(dtype)
    elif X.dtype in (np.float32, np.float64):
        dt = np.dtype(X.dtype)
    else:
        dt = np.dtype(np.float64)
    if space.precomputed and space.normalize:
        raise ValueError(
            "transform of a normalised (spherical) model with kernel='precomputed' needs "
            "k(t, t), which K_t does not hold: use raw_projection(X, kernel_diag=...)."
        )
    C = space.coef.astype(dt)
    b = space.offset.astype(dt)
    out = np.empty((X.shape[0], space.k), dtype=dt)
    workers = n_threads(n_jobs)
    if fusable(space, X):
        transform_fused(space, X, C, b, out, workers)
        return checked(out)
    row_bytes = space.n * max(np.dtype(space.rows_dtype).itemsize, dt.itemsize)
    rows = max(1, budget(block_bytes, "transform_block_bytes") // max(1, row_bytes))
    prep = space.prepare()

    def work(start: int) -> None:
        Xb = X[start : start + rows]
        Kt = np.asarray(space.kernel_rows(Xb, prep), dtype=dt)
        Y = Kt @ C
        Y -= b
        if space.normalize:
            sq = space.sqnorms(Kt, space.kernel_diag(Xb))
            Y /= np.maximum(np.sqrt(sq), space.norm_floor).astype(dt)[:, None]
        out[start : start + rows] = Y

    starts = range(0, X.shape[0], rows)
    # one block runs here, where n_jobs (if given) sets BLAS's own threads
    single = len(starts) <= 1 or workers <= 1
    with job_threads(n_jobs) if single else nullcontext():
        run_blocks(work, starts, workers)
    return checked(out)


def checked(out: np.ndarray) -> np.ndarray:
    """``out``, or a ValueError where it holds a non-finite score."""
    return check_finite_kernel(out, "these rows and the training rows")


def fusable(space: FittedSubspace, X: Any) -> bool:
    """Whether :func:`transform` can evaluate kernel rows in cache-sized pieces: dense
    numeric rows against dense expansion points of a vector kernel."""
    return (space.features is None and not space.precomputed and isinstance(X, np.ndarray)
            and isinstance(space.basis, np.ndarray) and X.dtype.kind == "f"
            and space.basis.dtype.kind == "f" and X.shape[0] > 0)


def transform_fused(space: FittedSubspace, X: np.ndarray, C: np.ndarray, b: np.ndarray,
                    out: np.ndarray, workers: int) -> None:
    """:func:`transform` in pieces of ``fused_rows x fused_cols`` kernel values, each
    evaluated and multiplied while it is in cache (a block of rows never goes to
    memory); with ``space.normalize``, ``k(t, Z) @ center`` rides on the same product
    as one more column. Each piece's product is in the precision of the kernel values
    (``space.rows_dtype``), summed in ``out``'s."""
    dt = out.dtype
    rows_dt = np.dtype(space.rows_dtype)
    k, m = space.k, space.n
    kernel = space.kernel
    norm = space.normalize and space.center is not None
    Ca = np.hstack([C, space.center.astype(dt)[:, None]]) if norm else C
    # each piece's product in the precision of its kernel values (a float32 piece
    # times float64 coefficients would first be copied to float64), summed over
    # pieces in the output's
    Cr = Ca.astype(np.result_type(rows_dt, np.float32), copy=False)
    prep = space.prepare()
    cfg = get_config()
    piece_rows, piece_cols = cfg["fused_rows"], cfg["fused_cols"]
    # the float32 RBF kernel: each block's pieces in one compiled call (the GIL released
    # throughout), where the compiled tile product has the loop
    compiled = compiled_rows(kernel, prep, Cr, X.shape[0], piece_cols)

    def work(start: int) -> None:
        Xb = X[start : start + piece_rows]
        Xr = kernel.prepare_rows(Xb, prep)  # once for all column pieces
        r = Xb.shape[0]
        acc = np.zeros((r, Ca.shape[1]), dtype=dt)
        if compiled is not None and isinstance(Xr, RBFRows):
            compiled(Xr, acc)
        else:
            buf = np.empty(r * piece_cols, dtype=rows_dt)
            for c0 in range(0, m, piece_cols):
                c1 = min(m, c0 + piece_cols)
                P = buf[: r * (c1 - c0)].reshape(r, c1 - c0)
                kernel.block_prepared(Xr, prep[c0:c1], out=P)
                acc += P @ Cr[c0:c1]
        Y = acc[:, :k] - b
        if space.normalize:
            sq = np.asarray(space.kernel_diag(Xb), dtype=np.float64)
            if norm:
                sq = sq - 2.0 * acc[:, k].astype(np.float64) + space.center_sqnorm
            sq = np.maximum(sq, 0.0)
            Y /= np.maximum(np.sqrt(sq), space.norm_floor).astype(dt)[:, None]
        out[start : start + r] = Y

    run_blocks(work, range(0, X.shape[0], piece_rows), workers)


def transform_device(space: FittedSubspace, X: Any, xp: Any, *, dtype: Any,
                     block_bytes: int | None = None, raw: bool = False) -> Any:
    """:meth:`FittedSubspace.transform_device
    <kpca.subspace.FittedSubspace.transform_device>`: the scores of the rows of an
    Array API array ``X``, computed on its device.

    Returns
    -------
    array of shape (m, k), namespace ``xp``, in ``dtype`` (a NumPy float dtype)
    """
    from .._array_api import float_dtype, from_host
    from ..kernels import device_block_product

    dev = X.device
    rows_dt = float_dtype(xp, space.rows_dtype)
    out_dt = float_dtype(xp, dtype)
    k = space.k
    normalize = space.normalize and not raw
    norm = normalize and space.center is not None
    coef = np.hstack([space.coef, space.center[:, None]]) if norm else space.coef
    Z = from_host(np.asarray(space.basis, dtype=space.rows_dtype), xp, dev)
    C = from_host(coef.astype(space.rows_dtype), xp, dev)
    b = from_host(space.offset.astype(dtype), xp, dev)
    Xd = xp.astype(X, rows_dt)
    rows = max(1, budget(block_bytes, "transform_block_bytes")
               // max(1, space.n * np.dtype(space.rows_dtype).itemsize))
    KC = device_block_product(space.kernel, Xd, Z, C, xp, rows)
    out = xp.astype(KC[:, :k], out_dt) - b
    if normalize:  # ||phi(t) - theta||^2 = k(t, t) - 2 k(t, Z) g + ||theta||^2
        sq = xp.astype(space.kernel.diag(Xd, xp=xp), xp.float64)
        if norm:
            sq = sq - 2.0 * xp.astype(KC[:, k], xp.float64) + float(space.center_sqnorm)
        sq = xp.clip(sq, min=0.0)
        dist = xp.clip(xp.sqrt(sq), min=float(space.norm_floor))
        out = out / xp.astype(dist, out_dt)[:, None]
    if not bool(xp.all(xp.isfinite(out))):
        raise ValueError("transform produced non-finite scores: the kernel values "
                         "overflow; scale the data or change the kernel parameters.")
    return out


def raw_projection(space: FittedSubspace, X: Any, *, kernel_diag: Any = None,
                   block_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`FittedSubspace.raw_projection
    <kpca.subspace.FittedSubspace.raw_projection>`: raw scores (m, k) and squared
    distances to the centre (m,), in float64, in row blocks of float64 kernel rows."""
    m = X.shape[0]
    if kernel_diag is None:
        kernel_diag = space.kernel_diag(X)
    else:
        kernel_diag = np.asarray(kernel_diag, dtype=np.float64).ravel()
        if kernel_diag.shape != (m,):
            raise ValueError(
                f"kernel_diag must have shape ({m},); got {kernel_diag.shape}.")
        if not np.all(np.isfinite(kernel_diag)) or np.any(kernel_diag < 0):
            raise ValueError(
                "kernel_diag must hold finite values >= 0 (k(t, t) of a positive "
                "semi-definite kernel).")
    kernel_diag = np.asarray(kernel_diag, dtype=np.float64).ravel()
    rows = max(1, budget(block_bytes, "preimage_block_bytes") // max(1, 8 * space.n))
    prep = space.prepare(np.float64)
    b = space.offset
    Y = np.empty((m, space.k))
    sq = np.empty(m)
    for start in range(0, m, rows):
        Kt = np.asarray(space.kernel_rows(X[start : start + rows], prep), dtype=np.float64)
        Y[start : start + rows] = Kt @ space.coef - b
        sq[start : start + rows] = space.sqnorms(Kt, kernel_diag[start : start + rows])
    return Y, sq
