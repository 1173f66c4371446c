"""Building the Gram matrix: threaded, in cache-sized row blocks, fused with row sums."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._config import get_config
from .._parallel import blas_threads, run_blocks
from ..kernels import Kernel


def n_threads(n_jobs: int | None) -> int:
    """Worker threads for ``n_jobs``: None or -1, all the cores this process may use
    (the ``n_cores`` setting: its CPU affinity and cgroup CPU quota); -2, all but one;
    otherwise ``n_jobs``, at most that many."""
    cores = get_config()["n_cores"]
    if n_jobs is None or n_jobs < 0:
        return max(1, cores + 1 + n_jobs) if n_jobs is not None and n_jobs < -1 else cores
    return max(1, min(cores, n_jobs))


def gram_matrix(
    kernel: Kernel, X: Any, *, dtype: Any, n_jobs: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The training Gram matrix ``K = k(X, X)`` and its row means.

    Row blocks are evaluated by ``n_jobs`` threads (NumPy's element-wise loops and
    BLAS release the GIL), each block sized to stay in cache, with BLAS limited to
    one thread per worker to avoid oversubscription.

    Parameters
    ----------
    kernel : Kernel
        A resolved kernel.
    X : array-like or sparse matrix of shape (n, d)
    dtype : float32 or float64
        Storage precision of ``K``.

    Returns
    -------
    K : ndarray of shape (n, n), dtype ``dtype``
    row_means : ndarray of shape (n,), float64
    """
    n = X.shape[0]
    sums = np.empty(n, dtype=np.float64)

    def row_sums(start: int, stop: int, blk: np.ndarray) -> None:
        # pairwise summation in the storage dtype (a float64 accumulator would force a
        # slow casting loop); its error, ~eps*log2(n), is below the storage round-off
        sums[start:stop] = blk.sum(axis=1)

    K = _evaluate_rows(kernel, X, X, dtype, n_jobs, diag_start=0, then=row_sums)
    return K, sums / n


def _evaluate_rows(kernel: Kernel, X: Any, Y: Any, dtype: Any, n_jobs: int | None,
                   diag_start: int | None, then: Callable | None = None) -> np.ndarray:
    """``k(X, Y)`` in cache-sized row blocks on worker threads; ``then(start, stop,
    block)`` runs on each block while it is in cache. Row ``i`` of ``X`` is row
    ``diag_start + i`` of ``Y``: those entries get the kernel's constant diagonal
    exactly, whatever the round-off."""
    b, N = X.shape[0], Y.shape[0]
    dtype = np.dtype(dtype)
    prep = kernel.prepare(Y, dtype)
    out = np.empty((b, N), dtype=dtype)
    # row blocks small enough to stay in cache while the element-wise steps (clip, exp,
    # row sum) run over them: the setting gram_block_bytes
    block_bytes = get_config()["gram_block_bytes"]
    rows = int(max(8, min(max(b, 1), block_bytes // max(1, N * dtype.itemsize))))
    diag_value = kernel.constant_diag if diag_start is not None else None

    def work(start: int) -> None:
        stop = min(b, start + rows)
        blk = out[start:stop]
        kernel.block_prepared(X[start:stop], prep, out=blk)
        if diag_value is not None:
            idx = np.arange(start, stop)
            blk[idx - start, diag_start + idx] = diag_value
        if then is not None:
            then(start, stop, blk)

    run_blocks(work, range(0, b, rows), n_threads(n_jobs))
    return out


def kernel_rows(
    kernel: Kernel, X: Any, Y: Any, *, dtype: Any, n_jobs: int | None = None,
    diag_start: int | None = None,
) -> np.ndarray:
    """``k(X, Y)`` evaluated by ``n_jobs`` threads in cache-sized row blocks (as
    :func:`gram_matrix`), in ``dtype``.

    Parameters
    ----------
    kernel : Kernel
        A resolved kernel.
    X : array-like of shape (b, d)
    Y : array-like of shape (N, d)
    dtype : float32 or float64
    n_jobs : int or None
    diag_start : int, default=None
        Row ``i`` of ``X`` is row ``diag_start + i`` of ``Y``: those entries are set
        to the kernel's constant diagonal exactly, whatever the round-off.

    Returns
    -------
    ndarray of shape (b, N), dtype ``dtype`` (a new array)
    """
    return _evaluate_rows(kernel, X, Y, dtype, n_jobs, diag_start)


#: unit round-off of float32 (half the machine epsilon)
_U32 = float(np.finfo(np.float32).eps) / 2


def float32_eigen_error(
    kernel: Kernel,
    X: Any,
    *,
    center: bool = True,
    sample: int = 256,
    random_state: Any = None,
) -> float:
    """Estimated error of the top eigenvalues, relative to the largest one, when the
    (n x n) kernel matrix of ``X`` is evaluated and stored in float32.

    Rounding every entry to float32 perturbs ``K`` by ``E`` with ``|E_ij| <= u |K_ij|``
    (``u = 2**-24``); for errors of random sign ``||E||_2 ~ u max|K| sqrt(n)``, and by
    Weyl's inequality each eigenvalue moves by at most ``||E||_2``. What makes float32
    unsafe is centring that cancels most of ``K`` (data far from the origin with a
    linear or polynomial kernel, an RBF kernel much wider than the data): ``max|K|``
    is then large next to the centred eigenvalues. The largest centred eigenvalue is
    estimated from a random subsample of ``m`` rows, ``mu_1 ~ (n / m) mu_1(sample)``
    (the eigenvalues of ``K / n`` converge to those of the kernel's integral operator).

    Parameters
    ----------
    kernel : Kernel
        A resolved kernel.
    X : array-like, sparse matrix or 1-D object array of n rows
    center : bool, default=True
        Whether the eigenproblem is that of the centred matrix.
    sample : int, default=256
        Rows of the subsample (its kernel matrix is evaluated in float64).
    random_state : int, RandomState or None

    Returns
    -------
    float
        ``u max|K| sqrt(n) / mu_1``; ``inf`` when the sample's spectrum is zero.
    """
    from sklearn.utils import check_random_state

    n = X.shape[0]
    rng = check_random_state(random_state)
    idx = np.sort(rng.choice(n, size=sample, replace=False)) if n > sample else np.arange(n)
    Xs = X[idx]
    if hasattr(Xs, "dtype") and Xs.dtype == np.float32:
        Xs = Xs.astype(np.float64)
    # on one BLAS thread: a 256 x 256 problem gains nothing from more, and OpenBLAS
    # threads woken for it would spin for ~0.1 s against the fit that follows
    with blas_threads(1):
        K = np.asarray(kernel.block(Xs), dtype=np.float64)
        big = float(np.max(np.abs(K), initial=0.0))
        if center:
            K = K - K.mean(axis=0)[None, :]
            K -= K.mean(axis=1)[:, None]
        top = float(np.linalg.eigvalsh((K + K.T) / 2)[-1]) if K.size else 0.0
    if not (top > 0 and np.isfinite(top) and np.isfinite(big)):
        return float("inf")
    return _U32 * big * np.sqrt(n) / (top * n / len(idx))


def storage_dtype(precision: str, data_dtype: Any, n: int,
                  float32_error: Callable[[], float] | None = None) -> np.dtype:
    """The precision policy of every estimator: the dtype kernel values are stored in.

    ``precision`` other than ``'auto'`` is used as given. ``'auto'``: float32 for
    float32 data; float64 up to ``float64_max_rows`` rows (a setting, kpca._config);
    beyond, float32 (half the memory, passes twice as fast) unless ``float32_error()``
    -- an estimate of the eigenvalue error float32 would cause, e.g. from
    :func:`float32_eigen_error` -- exceeds the setting ``float32_max_error`` (centring
    that cancels most of K: a linear or polynomial kernel on data far from the origin).

    Parameters
    ----------
    precision : {'auto', 'float32', 'float64'}
    data_dtype : dtype of the data
    n : int
        Rows.
    float32_error : callable or None
        Called only when needed; ``None``: float32 is accurate enough.
    """
    if precision != "auto":
        return np.dtype(precision)
    if np.dtype(data_dtype) == np.float32:
        return np.dtype(np.float32)
    cfg = get_config()
    if n <= cfg["float64_max_rows"]:
        return np.dtype(np.float64)
    if float32_error is not None and float32_error() > cfg["float32_max_error"]:
        return np.dtype(np.float64)
    return np.dtype(np.float32)
