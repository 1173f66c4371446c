"""Top-k symmetric eigensolvers that see only a :class:`~kpca.operators.KernelOperator`.

Every solver returns an :class:`EigenResult`; :func:`finalize` is the one
post-processing step they share (order, signs, zero/negative eigenvalues).
"""

from __future__ import annotations

import logging

import numpy as np

from ..operators import KernelOperator
from ._arpack import ArpackNoConvergence, arpack_eigsh
from ._dense import dense_eigsh, top_eigh
from ._krylov import (
    krylov_basis_size,
    krylov_block_size,
    krylov_eigsh,
    krylov_start,
    krylov_workspace_columns,
)
from ._randomized import default_rtol, randomized_eigsh
from ._result import EigenResult, finalize, relative_residuals
from ._start import START_LANDMARKS, nystrom_start, start_landmarks
from ._update import UpdatedPairs, extend_eigenpairs

logger = logging.getLogger("kpca")

SOLVERS = {
    "dense": dense_eigsh,
    "arpack": arpack_eigsh,
    "randomized": randomized_eigsh,
    "krylov": krylov_eigsh,
}


#: 'auto' uses LAPACK's dense subset solver up to this many rows (it takes ~0.1 s at
#: n = 1,500, where a restarted block method is no faster, and 0.4 s at 2,500, where
#: block Lanczos and ARPACK take 0.05-0.6 s), and block Lanczos beyond
#: (docs/benchmarks.md, "Choosing a solver")
DENSE_MAX_ROWS = 2000
#: ... and within that range ARPACK on the stored matrix for k < ARPACK_MAX_K or
#: k * n <= ARPACK_MAX_KN: its ~5k products with a matrix that stays in cache beat
#: LAPACK's O(n^3) reduction there (measured on digits, solve only: n = 1,000, k = 32:
#: 16-87 ms against 38-42 ms dense; n = 1,500, k = 64: 117-241 ms against 115-123 ms)
ARPACK_MAX_K = 10
ARPACK_MAX_KN = 40_000
#: ... and for k < ARPACK_MAX_K up to this many rows, where the stored matrix is
#: float64 anyway (precision='auto' keeps float64 up to 4,096 rows, so block Lanczos
#: gets no float32 speed-up) and single-vector products converge in the fewest
#: (measured on digits, n = 3,500, k = 5: 0.25-0.32 s against 0.28-0.42 s)
ARPACK_MAX_ROWS = 4096
#: seconds per n^3 of LAPACK's subset eigensolver on this project's machine
#: (measured 1.7-2.3 s at n = 3,594); the 'auto' fallback's time budget
DENSE_SECONDS_PER_N3 = 5e-11


def choose_solver(n: int, k: int, *, dense_fits: bool = True, rank: int | None = None) -> str:
    """The ``'auto'`` rule (see docs/benchmarks.md for the measurements behind it).

    - ``'dense'`` when more than a fifth of the spectrum is wanted, or ``n`` is at
      most :data:`DENSE_MAX_ROWS`, ``k >= 10`` and ``k * n > 40,000``: LAPACK's
      subset solver is then as fast as any iterative one, and exact;
    - ``'arpack'`` on the stored matrix for fewer components of a small problem,
      and for ``k < 10`` up to :data:`ARPACK_MAX_ROWS` (single-vector Lanczos needs
      the fewest products, and a product is cheap);
    - ``'krylov'`` (thick-restart block Lanczos) otherwise, and whenever the whole
      matrix does not fit the memory budget (``dense_fits=False``).

    ``rank`` is a known bound on the kernel matrix's rank (the linear kernel's
    ``n_features``): when ARPACK's search space of ``2k + 1`` vectors covers it
    (``k < rank <= 2k + 1``), ARPACK converges in one sweep and is used up to
    :data:`DENSE_MAX_ROWS` (measured: n = 1,500, k = 32, rank 61: 37 ms against
    102 ms dense; beyond, block Lanczos needs only a few passes on a low-rank K).

    With ``'auto'``, an unconverged block Lanczos run falls back to the dense solver
    when the matrix fits (see :func:`dense_seconds`).
    """
    if not dense_fits:
        return "krylov"
    if k >= n / 5 or n <= 200:
        return "dense"
    if rank is not None and k < rank <= 2 * k + 1 and n <= DENSE_MAX_ROWS:
        return "arpack"
    if n <= DENSE_MAX_ROWS:
        return "arpack" if k < ARPACK_MAX_K or k * n <= ARPACK_MAX_KN else "dense"
    if n <= ARPACK_MAX_ROWS and k < ARPACK_MAX_K:
        return "arpack"
    return "krylov"


def dense_seconds(n: int) -> float:
    """Estimated seconds of a dense top-k solve at size ``n`` (the time budget that
    ``'auto'`` gives an iterative solver before falling back to it)."""
    return max(0.2, DENSE_SECONDS_PER_N3 * float(n) ** 3)


def workspace_bytes(solver: str, n: int, k: int, *, cheap_pass: bool = False) -> int:
    """Bytes a solver needs besides the stored kernel (with margin).

    Block Lanczos: its float64 basis, Ritz vectors and temporaries
    (:func:`krylov_workspace_columns`), LAPACK's QR workspace, and the buffers of
    one operator pass (the block cast to the storage dtype, one float64 accumulator
    per thread and their sum): ~8 blocks in all (measured with tracemalloc).
    """
    if solver == "krylov":
        b = krylov_block_size(k, cheap_pass, n)
        return 8 * n * (krylov_workspace_columns(k, b) + 8 * b)
    if solver == "randomized":
        return 4 * n * (k + 10) * 8
    if solver == "arpack":
        return n * (2 * k + 1) * 8 * 2
    return 0


def eigsh_top(
    op: KernelOperator, k: int, *, solver: str = "auto", fallback: bool | None = None,
    **options,
) -> EigenResult:
    """Top-``k`` eigenpairs of ``op`` with the named solver (raw, before :func:`finalize`).

    Parameters
    ----------
    op : KernelOperator
    k : int
        Number of pairs, ``1 <= k <= n``.
    solver : {'auto', 'dense', 'arpack', 'randomized', 'krylov'}
        'auto' applies :func:`choose_solver`.
    fallback : bool, default=None
        Fall back to the dense solver when an iterative one has not converged; block
        Lanczos then gets the time a dense solve would take (:func:`dense_seconds`),
        and ARPACK's non-convergence is not an error. Default: True for 'auto'. Only
        for operators whose dense matrix fits in memory.
    **options
        ``tol``, ``max_iter``, ``iterated_power``, ``random_state``, ``start``:
        read by the solvers that use them.
    """
    if getattr(op, "device", False):  # Array API arrays: the block algebra on the device
        from ._device import device_eigsh

        if solver == "auto":
            solver = choose_solver(op.n, k)
        return _check_count(device_eigsh(op, k, solver=solver, **options), k, op.n)
    if fallback is None:
        fallback = solver == "auto"
    if solver == "auto":
        solver = choose_solver(op.n, k)
    try:
        fn = SOLVERS[solver]
    except KeyError:
        raise ValueError(
            f"eigen_solver must be one of {['auto', *SOLVERS]}; got {solver!r}."
        ) from None
    if not fallback or solver == "dense":
        return _check_count(fn(op, k, **options), k, op.n)
    if solver == "krylov" and options.get("time_limit") is None:
        options["time_limit"] = dense_seconds(op.n)
    try:
        result = fn(op, k, **options)
    except ArpackNoConvergence as exc:
        logger.info("%s; falling back to the dense solver", exc)
        return _check_count(dense_eigsh(op, k), k, op.n)
    if result.converged and result.values.shape[0] == min(k, op.n):
        return result
    logger.info(
        "%s stopped after %d operator columns (residuals up to %.1e); falling back to "
        "the dense solver", solver, result.n_matvec,
        np.max(result.residuals) if result.residuals is not None else float("nan"),
    )
    return _check_count(dense_eigsh(op, k), k, op.n)


def _check_count(result: EigenResult, k: int, n: int) -> EigenResult:
    """Every solver returns exactly ``min(k, n)`` pairs: never a narrower result."""
    m = result.values.shape[0]
    if m != min(k, n) or result.vectors.shape[1] != m:
        raise ValueError(
            f"eigen_solver={result.solver!r} returned {m} of the {min(k, n)} eigenpairs asked "
            "for; try another eigen_solver (e.g. 'dense' when the matrix fits in memory)."
        )
    return result


__all__ = [
    "ARPACK_MAX_K",
    "ARPACK_MAX_KN",
    "ARPACK_MAX_ROWS",
    "DENSE_MAX_ROWS",
    "SOLVERS",
    "EigenResult",
    "UpdatedPairs",
    "extend_eigenpairs",
    "arpack_eigsh",
    "choose_solver",
    "dense_seconds",
    "default_rtol",
    "krylov_basis_size",
    "krylov_block_size",
    "krylov_eigsh",
    "krylov_start",
    "krylov_workspace_columns",
    "dense_eigsh",
    "top_eigh",
    "eigsh_top",
    "finalize",
    "nystrom_start",
    "start_landmarks",
    "START_LANDMARKS",
    "randomized_eigsh",
    "workspace_bytes",
    "relative_residuals",
]
