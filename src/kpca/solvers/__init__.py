"""Top-k symmetric eigensolvers that see only a :class:`~kpca.operators.KernelOperator`.

Every solver returns an :class:`EigenResult`; :func:`finalize` is the one
post-processing step they share (order, signs, zero/negative eigenvalues).
"""

from __future__ import annotations

from ..operators import KernelOperator
from ._arpack import arpack_eigsh
from ._dense import dense_eigsh
from ._randomized import randomized_eigsh
from ._result import EigenResult, finalize, relative_residuals

SOLVERS = {
    "dense": dense_eigsh,
    "arpack": arpack_eigsh,
    "randomized": randomized_eigsh,
}


def choose_solver(n: int, k: int) -> str:
    """The ``'auto'`` rule: a full LAPACK solve when it is cheap or most of the
    spectrum is wanted, Lanczos otherwise."""
    if n <= 500 or k >= n / 5:
        return "dense"
    return "arpack"


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
    "dense_eigsh",
    "eigsh_top",
    "finalize",
    "randomized_eigsh",
    "relative_residuals",
]
