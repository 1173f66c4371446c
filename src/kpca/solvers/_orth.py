"""Orthonormalizing tall blocks in place (Cholesky QR), and projecting them off a basis.

A tall block ``W`` (n x b, n >> b) is orthonormalized by Cholesky QR: the Cholesky
factor ``R`` of the b x b Gram matrix ``W^T W``, then ``W <- W R^{-1}``. It is two
BLAS-3 products, against Householder QR's panel updates, and it works in place,
where a new n x b array costs fresh pages (as much as the arithmetic on the virtual
machines this project is measured on). It loses orthogonality like ``cond(W)^2 eps``,
so :func:`cholesky_qr` sweeps twice, and callers fall back to Householder QR when a
block is ill-conditioned (Fukaya et al., "CholeskyQR2", 2014). Measured at
n = 100,000, b = 24 on one thread: two sweeps ~12 ms, Householder QR with column pivoting 52 ms.

Every step is a sweep over the rows of ``W`` (and of the basis), ``orth_block_rows``
(a setting, kpca._config) at a time, that can also sum the small product the next step
needs (the Gram matrix of the updated rows), so each step reads the tall arrays once;
with ``workers > 1`` the rows are shared by that many threads (one BLAS thread each).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from scipy.linalg import cholesky, qr, solve_triangular
from scipy.linalg.lapack import dtrcon

from .._config import get_config
from .._parallel import run_blocks

# the settings of this module (kpca._config): orth_max_cond, the condition number below
# which a sweep is made, and orth_block_rows, the rows updated at a time (a small
# temporary, reused: no n x b array is allocated; the rows of the basis and of the
# block stay in cache between a step's products)


def row_sum(step: Callable[[int, int], np.ndarray | None], n: int,
            workers: int = 1) -> np.ndarray | None:
    """The sum of ``step(a, e)`` over the row ranges ``a:e`` of at most
    ``orth_block_rows`` rows (a setting) that cover ``0:n``, in contiguous groups of
    ranges, one a thread (one BLAS thread each): ``workers`` groups, fewer where ``n``
    has fewer than ``workers`` times ``orth_block_rows`` rows (one group runs in the
    calling thread, with its BLAS threads).

    Parameters
    ----------
    step : callable
        ``step(a, e)`` returns a new array (the first one returned becomes the
        accumulator) or None; it may update rows ``a:e`` of its arrays in place:
        each range is given to one thread only.
    n : int
    workers : int, default=1

    Returns
    -------
    ndarray or None
        None if every step returned None (or ``n`` is 0).
    """
    rows = get_config()["orth_block_rows"]
    groups = max(1, min(workers, n // rows))
    cuts = [n * i // groups for i in range(groups + 1)]

    def group(i: int) -> np.ndarray | None:
        total = None
        for a in range(cuts[i], cuts[i + 1], rows):
            part = step(a, min(a + rows, cuts[i + 1]))
            if part is not None:
                total = part if total is None else np.add(total, part, out=total)
        return total

    parts = [p for p in run_blocks(group, range(groups), groups) if p is not None]
    return functools.reduce(np.add, parts) if parts else None


def project_out(Q: np.ndarray, W: np.ndarray, workers: int = 1
                ) -> tuple[np.ndarray, np.ndarray]:
    """``W <- (I - Q Q^T) W`` in place, twice (classical Gram-Schmidt twice: orthogonal
    to ``Q`` to round-off), for a basis ``Q`` with orthonormal columns.

    Three sweeps over the rows: the coefficients; the first update and the second
    coefficients; the second update and the Gram matrix of the result (which
    :func:`cholesky_qr` then needs), each reading ``Q`` once.

    Parameters
    ----------
    Q : ndarray of shape (n, m), float64
    W : ndarray of shape (n, b), float64, C-contiguous
    workers : int, default=1
        Threads sharing the rows (see :func:`row_sum`).

    Returns
    -------
    C : ndarray of shape (m, b)
        ``Q^T W`` of the block given (both sweeps' coefficients).
    G : ndarray of shape (b, b)
        ``W^T W`` of the projected block.
    """
    n = W.shape[0]
    C = row_sum(lambda a, e: Q[a:e].T @ W[a:e], n, workers)

    def update(Cj: np.ndarray, gram: bool) -> Callable[[int, int], np.ndarray]:
        def step(a: int, e: int) -> np.ndarray:
            W[a:e] -= Q[a:e] @ Cj
            return W[a:e].T @ W[a:e] if gram else Q[a:e].T @ W[a:e]
        return step

    C2 = row_sum(update(C, gram=False), n, workers)
    G = row_sum(update(C2, gram=True), n, workers)
    return C + C2, G


def cholesky_sweep(W: np.ndarray, floor: float = 0.0, *, gram: np.ndarray | None = None,
                   workers: int = 1, gram_after: bool = True
                   ) -> tuple[np.ndarray, np.ndarray | None] | None:
    """``W <- W R^{-1}`` in place for the upper Cholesky factor ``R`` of ``W^T W``;
    returns ``R`` and, with ``gram_after``, the Gram matrix of the updated ``W``
    (summed in the same sweep; else None), or None (``W`` untouched) when the Gram
    matrix is not numerically positive definite, ``W`` is ill-conditioned
    (the setting ``orth_max_cond``) or a diagonal entry of ``R`` is at most ``floor``.

    Parameters
    ----------
    W : ndarray of shape (n, b), float64, C-contiguous
    floor : float, default=0.0
    gram : ndarray of shape (b, b), default=None
        ``W^T W`` where the caller has it (computed here otherwise).
    workers : int, default=1
        Threads sharing the rows (see :func:`row_sum`).
    gram_after : bool, default=True
        Whether to sum the Gram matrix of the updated block (the next sweep's).
    """
    n = W.shape[0]
    if gram is None:
        gram = row_sum(lambda a, e: W[a:e].T @ W[a:e], n, workers)
    try:
        R = cholesky(gram, lower=False, check_finite=False)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(R)):
        return None
    d = np.abs(np.diag(R))
    rcond = dtrcon(R, norm="1", uplo="U", diag="N")[0]
    if not (d.min() > floor and rcond * get_config()["orth_max_cond"] > 1.0):
        return None
    # products with the inverse of a well-conditioned factor: 3-4x faster here than
    # a triangular solve with n right-hand sides
    Rinv = solve_triangular(R, np.eye(len(d)), check_finite=False)

    def step(a: int, e: int) -> np.ndarray | None:
        W[a:e] = W[a:e] @ Rinv
        return W[a:e].T @ W[a:e] if gram_after else None

    return R, row_sum(step, n, workers)


def cholesky_qr(W: np.ndarray, floor: float = 0.0, *, gram: np.ndarray | None = None,
                workers: int = 1) -> np.ndarray | None:
    """``W = Q R`` with ``Q`` written over ``W`` (two :func:`cholesky_sweep`); returns
    ``R``, or None (``W`` untouched) when the first sweep is refused (see
    :func:`cholesky_sweep`; the caller falls back to Householder QR).

    Parameters
    ----------
    W : ndarray of shape (n, b), float64, C-contiguous
    floor : float, default=0.0
        For the first sweep.
    gram : ndarray of shape (b, b), default=None
        ``W^T W`` where the caller has it.
    workers : int, default=1
        Threads sharing the rows (see :func:`row_sum`).
    """
    first = cholesky_sweep(W, floor, gram=gram, workers=workers)
    if first is None:
        return None
    R, G = first
    second = cholesky_sweep(W, gram=G, workers=workers, gram_after=False)
    if second is None:  # cannot happen after a good first sweep (cond ~ 1); be safe
        Q, R2 = qr(W, mode="economic", check_finite=False)
        W[...] = Q
        return R2 @ R
    return second[0] @ R


def put_rows(dst: np.ndarray, src: np.ndarray, workers: int = 1) -> None:
    """``dst[...] = src`` (both n x b), the rows shared among ``workers`` threads as
    :func:`row_sum` shares them: a new block written into fresh columns of a basis
    touches its pages for the first time (at n = 100,000, b = 24: 19 MB a block, in
    one thread between the passes otherwise)."""
    def step(a: int, e: int) -> None:
        dst[a:e] = src[a:e]

    row_sum(step, src.shape[0], workers)
