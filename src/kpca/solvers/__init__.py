"""Top-k symmetric eigensolvers that see only a :class:`~kpca.operators.KernelOperator`.

Every solver returns an :class:`EigenResult`; :func:`finalize` is the one
post-processing step they share (order, signs, zero/negative eigenvalues).
"""

from __future__ import annotations

import logging

import numpy as np

from .._config import get_config
from ..operators import KernelOperator
from ._arpack import ArpackNoConvergence, arpack_eigsh
from ._cost import (
    arpack_flops,
    arpack_max_iter,
    arpack_products,
    choose_solver,
    dense_flops,
    dense_threads,
    explain_choice,
    fallback_passes,
    kernel_value_flops,
    krylov_flops,
    krylov_pass_flops,
    krylov_passes,
    krylov_run_flops,
    machine_threads,
    primal_flops,
    solver_flops,
)
from ._dense import dense_eigsh, top_eigh
from ._krylov import (
    krylov_basis_size,
    krylov_block_size,
    krylov_eigsh,
    krylov_start,
    krylov_workspace_columns,
)
from ._primal import primal_eigsh
from ._randomized import default_rtol, randomized_eigsh
from ._result import EigenResult, finalize, relative_residuals
from ._start import device_nystrom_start, nystrom_start, start_landmarks
from ._update import UpdatedPairs, extend_eigenpairs, orthogonal_directions, rayleigh_ritz
from ._update_device import (
    device_extend_eigenpairs,
    device_orthogonal_directions,
    device_rayleigh_ritz,
)

logger = logging.getLogger("kpca")

SOLVERS = {
    "dense": dense_eigsh,
    "arpack": arpack_eigsh,
    "randomized": randomized_eigsh,
    "krylov": krylov_eigsh,
}


def workspace_bytes(solver: str, n: int, k: int, *, cheap_pass: bool = False) -> int:
    """Bytes a solver needs besides the stored kernel (with margin).

    Block Lanczos: its float64 basis, Ritz vectors and temporaries
    (:func:`krylov_workspace_columns`), LAPACK's QR workspace, and the buffers of
    one operator pass (the block cast to the storage dtype, the float64 accumulators of
    its tile groups, at most one block a thread, and their sum): ~8 blocks in all
    (measured with tracemalloc).
    """
    if solver == "krylov":
        b = krylov_block_size(k, cheap_pass)
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
        Fall back to the dense solver when an iterative one has not converged within
        the modelled cost of a dense solve (``auto_fallback_ratio`` times
        :func:`kpca.solvers.dense_flops`, converted into block Lanczos passes or
        ARPACK restarts: :func:`fallback_passes`, :func:`arpack_max_iter`), unless
        ``max_iter`` is given; ARPACK's non-convergence is then not an error. The
        budget is counted in work, never in seconds, so the result does not depend on
        how busy the machine is. Default: True for 'auto'. Only for operators whose
        dense matrix fits in memory.
    **options
        ``tol``, ``max_iter``, ``iterated_power``, ``random_state``, ``start``:
        read by the solvers that use them; ``time_limit`` (seconds, block Lanczos
        only) is an explicit user option that makes the result depend on the
        machine's speed and load: kpca never sets it.
    """
    if fallback is None:
        fallback = solver == "auto"
    itemsize = np.dtype(op.dtype).itemsize
    if getattr(op, "device", False):  # Array API arrays: the block algebra on the device
        return _device_eigsh_top(op, k, solver, fallback, itemsize, options)
    if solver == "auto":
        solver = choose_solver(op.n, k, itemsize=itemsize)
    try:
        fn = SOLVERS[solver]
    except KeyError:
        raise ValueError(
            f"eigen_solver must be one of {['auto', *SOLVERS]}; got {solver!r}."
        ) from None
    if not fallback or solver == "dense":
        return _check_count(fn(op, k, **options), k, op.n)
    if options.get("max_iter") is None:
        options["max_iter"] = _fallback_budget(op, k, solver, itemsize, options)
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


def _device_eigsh_top(op, k: int, solver: str, fallback: bool, itemsize: int,
                      options: dict) -> EigenResult:
    """:func:`eigsh_top` on a device operator: dense ``eigh`` or block Lanczos there
    (ARPACK's and the randomized solver's requests run block Lanczos), with the host's
    stopping rules, the fallback to the dense solver included (where ``K`` is stored on
    the device)."""
    from ._device import device_eigsh

    if solver == "auto":  # the host's rule, for the storage precision (as the host's)
        solver = choose_solver(op.n, k, itemsize=itemsize)
    fallback = fallback and solver != "dense" and op.stored
    if fallback and options.get("max_iter") is None:
        options["max_iter"] = _fallback_budget(op, k, "krylov", itemsize, options)
    result = device_eigsh(op, k, solver=solver, **options)
    if fallback and not result.converged:
        logger.info("device krylov stopped after %d operator columns (residuals up to "
                    "%.1e); falling back to the dense solver", result.n_matvec,
                    np.max(result.residuals))
        result = device_eigsh(op, k, solver="dense")
    return _check_count(result, k, op.n)


def _fallback_budget(op: KernelOperator, k: int, solver: str, itemsize: int,
                     options: dict) -> int | None:
    """``max_iter`` worth the modelled cost of a dense solve (``auto_fallback_ratio``
    times :func:`dense_flops`): block Lanczos passes of this operator (its block and
    basis, the kernel evaluations of a matrix-free pass) or ARPACK restarts."""
    n = op.n
    if solver == "arpack":
        budget = get_config()["auto_fallback_ratio"] * dense_flops(
            n, k, itemsize, threads=machine_threads())
        return arpack_max_iter(n, k, budget, itemsize)
    if solver != "krylov":
        return None
    start = options.get("start")
    b = start[0].shape[1] if start is not None else (
        options.get("block_size") or krylov_block_size(k))
    m = krylov_basis_size(k, b)
    base = getattr(op, "base", op)  # a centred wrapper: the operator it applies
    stored = float(getattr(base, "fraction_stored", 1.0))
    X = getattr(base, "X", None)
    eval_flops = kernel_value_flops(getattr(base, "kernel", None),
                                    X.shape[1] if getattr(X, "ndim", 0) == 2 else None)
    return fallback_passes(n, k, b, m, itemsize, eval_flops, stored)


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
    "SOLVERS",
    "EigenResult",
    "UpdatedPairs",
    "extend_eigenpairs",
    "orthogonal_directions",
    "rayleigh_ritz",
    "device_extend_eigenpairs",
    "device_orthogonal_directions",
    "device_rayleigh_ritz",
    "arpack_eigsh",
    "arpack_flops",
    "arpack_max_iter",
    "choose_solver",
    "dense_flops",
    "dense_threads",
    "fallback_passes",
    "kernel_value_flops",
    "krylov_flops",
    "primal_eigsh",
    "primal_flops",
    "solver_flops",
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
    "device_nystrom_start",
    "start_landmarks",
    "randomized_eigsh",
    "workspace_bytes",
    "relative_residuals",
    "explain_choice",
    "arpack_products",
    "krylov_passes",
    "krylov_pass_flops",
    "krylov_run_flops",
]
