"""Top-k symmetric eigensolvers that see only a :class:`~kpca.operators.KernelOperator`.

Every solver returns an :class:`EigenResult`; :func:`finalize` is the one
post-processing step they share (order, signs, zero/negative eigenvalues).
"""

from __future__ import annotations

from ..operators import KernelOperator
from ._arpack import arpack_eigsh
from ._dense import dense_eigsh
from ._krylov import krylov_block_size, krylov_eigsh, krylov_start
from ._randomized import default_rtol, randomized_eigsh
from ._result import EigenResult, finalize, relative_residuals

SOLVERS = {
    "dense": dense_eigsh,
    "arpack": arpack_eigsh,
    "randomized": randomized_eigsh,
    "krylov": krylov_eigsh,
}


def choose_solver(n: int, k: int) -> str:
    """The ``'auto'`` rule: a full LAPACK solve when it is cheap or most of the
    spectrum is wanted, block Krylov otherwise (each pass over the kernel matrix
    serves a whole block of vectors)."""
    if n <= 500 or k >= n / 5:
        return "dense"
    return "krylov"


def workspace_bytes(solver: str, n: int, k: int) -> int:
    """Bytes a solver needs besides the stored kernel (measured, with margin).

    Block Krylov: its float64 basis and images (2 x depth x b columns), Ritz
    vectors and Gram-Schmidt temporaries (~4 b columns), and the buffers of one
    operator pass (start block, per-thread accumulators, casts: ~8 b columns):
    about 180 bytes per row and block column in all.
    """
    if solver == "krylov":
        b = krylov_block_size(k)
        return 180 * n * b
    if solver == "randomized":
        return 4 * n * (k + 10) * 8
    if solver == "arpack":
        return n * (2 * k + 1) * 8 * 2
    return 0


def eigsh_top(op: KernelOperator, k: int, *, solver: str = "auto", **options) -> EigenResult:
    """Top-``k`` eigenpairs of ``op`` with the named solver (raw, before :func:`finalize`).

    Parameters
    ----------
    op : KernelOperator
    k : int
        Number of pairs, ``1 <= k <= n``.
    solver : {'auto', 'dense', 'arpack', 'randomized'}
    **options
        ``tol``, ``max_iter``, ``iterated_power``, ``random_state``: read by the
        solvers that use them.
    """
    if solver == "auto":
        solver = choose_solver(op.n, k)
    try:
        fn = SOLVERS[solver]
    except KeyError:
        raise ValueError(
            f"eigen_solver must be one of {['auto', *SOLVERS]}; got {solver!r}."
        ) from None
    return fn(op, k, **options)


__all__ = [
    "SOLVERS",
    "EigenResult",
    "arpack_eigsh",
    "choose_solver",
    "default_rtol",
    "krylov_block_size",
    "krylov_eigsh",
    "krylov_start",
    "dense_eigsh",
    "eigsh_top",
    "finalize",
    "randomized_eigsh",
    "workspace_bytes",
    "relative_residuals",
]
