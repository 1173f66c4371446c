"""The ``'auto'`` policy's cost model: flops, never seconds (docs/math.md, "Choosing a
solver").

Every cost is counted in flops of a cache-blocked matrix product (BLAS-3); a flop of a
memory-bound matrix-vector product (BLAS-2) costs ``w = blas2_flop_cost`` of them, or
``w / 2`` while the matrix fits the last-level cache (``solver_cache_bytes``). The
counts of products and passes an iterative solver will need come from conservative
convergence bounds (``arpack_products_*``, ``krylov_columns_*``) that depend on ``k``
and the basis size only. So the choice, and the budget after which an iterative solve
falls back to the dense solver, depend on the data's shape, the parameters, the kernel
and the configuration: never on elapsed time or on how busy the machine is.

The model (``n`` rows, ``k`` wanted pairs):

* dense (LAPACK's tridiagonal reduction, then ``k`` vectors):
  ``(2/3) n^3 (1 + w/2) + 2 n^2 k + c n`` -- of the ``(4/3) n^3`` flops of the
  reduction, half are blocked updates and half symmetric matrix-vector products (which
  read half the matrix: ``w / 2``); ``2 n^2 k`` back-transforms the vectors; ``c``
  (``dense_column_flops``) is the fixed cost of a column;
* ARPACK: ``P (n^2 w + 4 n (k + ncv) w' + s)`` with ``P = a ncv + b`` products
  (``ncv = max(2k + 1, 20)``): each product is a symmetric matrix-vector product
  (BLAS's symv: ``2 n^2`` flops reading one triangle, ``n^2 / 2`` values, so half the
  weight of a product that reads the whole matrix), ``4 n (k + ncv)`` the
  Gram-Schmidt of a step against the basis (matrix-vector products with it: ``w'``
  is the weight for the basis's ``8 n ncv`` bytes) and ``s`` (``arpack_step_flops``)
  its call overhead;
* block Lanczos on a stored matrix: ``ceil((a' k + b') / b)`` passes, pass ``j`` costing
  ``2 n^2 b (s / 8) + 8 n m_j b + E(m_j) + 4 n b^2`` -- the product (float32 storage
  ``s = 4``: twice the flops per cycle), classical Gram-Schmidt twice against the
  ``m_j`` columns the basis has then, the Rayleigh-Ritz eigenproblem ``E(m_j)`` of that
  basis (the dense model with ``k = m_j``) and Cholesky QR -- plus ``2 n m p`` for each
  thick restart (the basis grows by ``b`` a pass and restarts from ``p`` Ritz
  vectors: :func:`krylov_basis_sizes`); a matrix-free pass also evaluates the
  ``n^2 / 2`` kernel values (``e`` flops each).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

from .._config import get_config
from .._parallel import call_threads

__all__ = [
    "arpack_flops",
    "arpack_max_iter",
    "arpack_products",
    "arpack_step_cost",
    "blas2_weight",
    "choose_solver",
    "dense_flops",
    "dense_threads",
    "explain_choice",
    "fallback_passes",
    "kernel_value_flops",
    "machine_threads",
    "krylov_basis_sizes",
    "krylov_flops",
    "krylov_pass_flops",
    "krylov_passes",
    "krylov_run_flops",
    "primal_flops",
    "solver_flops",
]


def blas2_weight(matrix_bytes: float, cfg: dict[str, Any] | None = None) -> float:
    """Cost of a matrix-vector flop on a matrix of ``matrix_bytes`` bytes, in units of
    a blocked-product flop: ``blas2_flop_cost``, halved when it fits the cache."""
    cfg = cfg or get_config()
    w = float(cfg["blas2_flop_cost"])
    return w / 2 if matrix_bytes <= cfg["solver_cache_bytes"] else w


def dense_threads(n: int, threads: int) -> int:
    """BLAS threads the dense solve of ``n`` rows runs on when ``threads`` cores are
    allowed: as kpca runs it (:func:`kpca.solvers.dense_eigsh`,
    ``KernelPCA._decompose``), one per ``blas_flops_per_thread`` of work between two
    synchronisation points of LAPACK's reduction, a matrix-vector product of ``2 n^2``
    flops a column (:func:`kpca._parallel.call_threads`: at the default, one thread up
    to n = 5,792, two up to 8,192). A pure function of ``n``, ``threads`` and the
    configuration (the BLAS state of the moment is not read)."""
    return call_threads(2.0 * n * n, max(1, threads))


def dense_flops(n: int, k: int, itemsize: int = 8, cfg: dict[str, Any] | None = None,
                threads: int = 1) -> float:
    """Modelled cost of LAPACK's top-``k`` solve of an ``n x n`` matrix with
    ``threads`` cores allowed; its blocked updates and back-transformation are shared
    by the BLAS threads the solve runs on (:func:`dense_threads`: fewer than
    ``threads`` for small ``n``), its matrix-vector half is bound by memory (not
    shared)."""
    cfg = cfg or get_config()
    w = blas2_weight(n * n * itemsize, cfg)
    blocked = (2.0 / 3.0) * n**3 + 2.0 * n * n * min(k, n)
    return (blocked / dense_threads(n, threads) + (2.0 / 3.0) * n**3 * w / 2.0
            + cfg["dense_column_flops"] * n)


def arpack_products(k: int, cfg: dict[str, Any] | None = None) -> int:
    """The conservative estimate of ARPACK's products for ``k`` pairs."""
    cfg = cfg or get_config()
    ncv = max(2 * k + 1, 20)
    return int(math.ceil(cfg["arpack_products_per_ncv"] * ncv + cfg["arpack_products_offset"]))


def arpack_step_cost(n: int, k: int, ncv: int, itemsize: int = 8,
                      cfg: dict[str, Any] | None = None) -> float:
    """Modelled cost of one ARPACK step on a stored matrix: its symmetric
    matrix-vector product (:meth:`kpca.operators.DenseOperator.matvec`: ``2 n^2``
    flops reading one triangle of the matrix, at half the weight ``w`` of a product
    reading all of it), the Gram-Schmidt of the new vector against the ``k + ncv``
    columns of the basis (matrix-vector products with the basis: their flops weigh
    ``w`` too, for the basis's size) and the step's call overhead."""
    cfg = cfg or get_config()
    w = blas2_weight(n * n * itemsize, cfg)
    # ARPACK's Gram-Schmidt is matrix-vector products too (against its n x ncv basis)
    w_basis = blas2_weight(n * ncv * 8, cfg)
    return (n * n * w * (itemsize / 8.0) + 4.0 * n * (k + ncv) * w_basis
            + cfg["arpack_step_flops"])


def arpack_flops(n: int, k: int, itemsize: int = 8, cfg: dict[str, Any] | None = None
                 ) -> float:
    """Modelled cost of ARPACK (implicitly restarted Lanczos) on a stored matrix."""
    cfg = cfg or get_config()
    ncv = max(2 * k + 1, 20)
    if ncv >= n:  # ARPACK's basis would be the whole space: never cheaper than dense
        return math.inf
    return arpack_products(k, cfg) * arpack_step_cost(n, k, ncv, itemsize, cfg)


def arpack_max_iter(n: int, k: int, budget: float, itemsize: int = 8,
                    cfg: dict[str, Any] | None = None) -> int:
    """ARPACK's ``maxiter`` (restarts) worth ``budget`` flops: after its first ``ncv``
    products, each restart makes ``ncv - k`` more."""
    cfg = cfg or get_config()
    ncv = min(max(2 * k + 1, 20), n - 1)
    products = budget / arpack_step_cost(n, k, ncv, itemsize, cfg)
    return max(1, int((products - ncv) // max(1, ncv - k)) + 1)


def kernel_value_flops(kernel: Any, n_features: int | None) -> float:
    """Flops of one kernel value: an inner product (``2 d``) plus, for kernels other
    than the linear one, an element-wise function (~20 flops: an exponential or
    a power)."""
    d = n_features or 1
    return 2.0 * d + (0.0 if getattr(kernel, "name", "") == "linear" else 20.0)


def krylov_pass_flops(n: int, k: int, b: int, m: int, itemsize: int = 8,
                      eval_flops: float = 0.0, stored: float = 1.0,
                      cfg: dict[str, Any] | None = None, threads: int = 1) -> float:
    """Modelled cost of one block Lanczos pass of ``b`` columns and the algebra after
    it, with a basis of ``m`` columns then; ``stored`` is the fraction of the kernel
    matrix kept (the rest is evaluated again, ``eval_flops`` per value). The pass's
    tiles are shared by ``threads`` worker threads (compute-bound: it scales with
    them); the algebra between passes (Gram-Schmidt twice against the basis,
    ``8 n m b``; Cholesky QR; the Rayleigh-Ritz problem of the basis) is counted on
    one."""
    product = 2.0 * n * n * b * (itemsize / 8.0)
    evaluation = (1.0 - stored) * 0.5 * n * n * eval_flops
    algebra = 8.0 * n * m * b + 4.0 * n * b * b + _eigh_flops(m, cfg)
    return (product + evaluation) / max(1, threads) + algebra


def _eigh_flops(m: int, cfg: dict[str, Any] | None) -> float:
    """The Rayleigh-Ritz problem: a full eigendecomposition of an ``m x m`` matrix
    (reduction, and ``4 m^3`` for the vectors of all pairs)."""
    return dense_flops(m, m, cfg=cfg) + 4.0 * m**3


def krylov_passes(k: int, b: int, cfg: dict[str, Any] | None = None) -> int:
    """The conservative estimate of block Lanczos's passes for ``k`` pairs."""
    cfg = cfg or get_config()
    columns = cfg["krylov_columns_per_k"] * k + cfg["krylov_columns_offset"]
    return max(1, int(math.ceil(columns / b)))


def krylov_basis_sizes(k: int, b: int, mmax: int) -> Iterator[tuple[int, int]]:
    """The basis of block Lanczos pass after pass, as the solver grows and restarts it
    (:class:`kpca.solvers._krylov.ProjectedProblem`, from a start block): for each
    pass, the columns of the basis its Rayleigh-Ritz problem projects on, and the
    flops per row of the thick restart before it (``2 m p``: ``p`` Ritz vectors from a
    basis of ``m``; 0 when there was none). The basis grows by ``b`` a pass up to
    ``mmax`` columns, then restarts from the best ``p`` Ritz vectors."""
    from ._krylov import _keep

    keep, m = _keep(k, b, mmax), b
    while True:
        rotation = 0
        if m + b > mmax:
            p = min(keep, m - b)
            rotation, m = 2 * m * p, p
        m += b
        yield m, rotation


def _krylov_pass_costs(n: int, k: int, b: int, mmax: int, itemsize: int,
                       eval_flops: float, stored: float, cfg: dict[str, Any] | None,
                       threads: int) -> Iterator[float]:
    """The modelled cost of each pass in turn (:func:`krylov_pass_flops` at the basis
    it has then, plus the thick restart before it, if any)."""
    for m, rotation in krylov_basis_sizes(k, b, mmax):
        yield (krylov_pass_flops(n, k, b, m, itemsize, eval_flops, stored, cfg, threads)
               + float(n) * rotation)


def krylov_run_flops(n: int, k: int, b: int, mmax: int, passes: int, itemsize: int = 8,
                     eval_flops: float = 0.0, stored: float = 1.0,
                     cfg: dict[str, Any] | None = None, threads: int = 1) -> float:
    """Modelled cost of ``passes`` block Lanczos passes with a basis of at most ``mmax``
    columns: each pass at the basis it has then (:func:`krylov_basis_sizes`: small
    while it grows, so the first passes' algebra is cheap), plus each thick restart's
    rotation."""
    costs = _krylov_pass_costs(n, k, b, mmax, itemsize, eval_flops, stored, cfg, threads)
    return float(sum(itertools.islice(costs, passes)))


def krylov_flops(n: int, k: int, itemsize: int = 8, cfg: dict[str, Any] | None = None,
                 threads: int = 1, **pass_options: Any) -> float:
    """Modelled cost of block Lanczos on a stored matrix (its default block and basis,
    :func:`krylov_passes` passes)."""
    from ._krylov import krylov_basis_size, krylov_block_size

    b = krylov_block_size(k, True)
    m = krylov_basis_size(k, b)
    if m >= n // 2:  # the solver itself would use the dense one
        return math.inf
    return krylov_run_flops(n, k, b, m, krylov_passes(k, b, cfg), itemsize, cfg=cfg,
                            threads=threads, **pass_options)


def solver_flops(n: int, k: int, itemsize: int = 8, cfg: dict[str, Any] | None = None,
                 threads: int = 1) -> dict[str, float]:
    """Modelled cost of each exact solver on a stored ``n x n`` matrix with ``threads``
    worker threads (ARPACK's memory-bound products do not scale with them)."""
    cfg = cfg or get_config()
    return {
        "dense": dense_flops(n, k, itemsize, cfg, threads),
        "arpack": arpack_flops(n, k, itemsize, cfg),
        "krylov": krylov_flops(n, k, itemsize, cfg, threads),
    }


def machine_threads() -> int:
    """Cores the cost model assumes: those this process may use (the ``n_cores``
    setting: affinity and cgroup quota), not ``n_jobs``, so that every ``n_jobs``
    makes the same choice. A tiled pass's workers use them all; a dense solve uses
    :func:`dense_threads` of them (as it runs)."""
    from ..operators import n_threads

    return n_threads(None)


def choose_solver(n: int, k: int, *, dense_fits: bool = True, rank: int | None = None,
                  itemsize: int = 8, threads: int | None = None) -> str:
    """The ``'auto'`` rule: the exact solver of least modelled cost.

    ``'krylov'`` (block Lanczos, matrix-free if need be) whenever the whole matrix does
    not fit the memory budget (``dense_fits=False``); otherwise the cheapest of
    ``'dense'``, ``'arpack'`` and ``'krylov'`` by :func:`solver_flops` (ties: the
    first of that order); always ``'dense'`` up to ``dense_small_rows`` rows.
    ``rank``: a known bound on the kernel matrix's rank (the linear kernel's
    ``n_features``); when ``k < rank <= ncv`` ARPACK's first ``ncv``
    products span the whole range, so it is costed at those (no restart).
    :func:`explain_choice` gives the same choice with its reason and costs.
    """
    return explain_choice(n, k, dense_fits=dense_fits, rank=rank, itemsize=itemsize,
                          threads=threads)[0]


def explain_choice(n: int, k: int, *, dense_fits: bool = True, rank: int | None = None,
                   itemsize: int = 8, threads: int | None = None
                   ) -> tuple[str, str, dict[str, float]]:
    """:func:`choose_solver`'s choice, the rule that made it (a sentence) and the
    modelled flops of each candidate it compared (empty when a rule decided alone)."""
    if not dense_fits:
        return ("krylov", "the whole kernel matrix does not fit the memory budget: block "
                "Lanczos, the only exact solver that runs without it", {})
    cfg = get_config()
    if n <= cfg["dense_small_rows"]:
        return ("dense", f"n_samples={n} <= dense_small_rows={cfg['dense_small_rows']}: "
                "the dense solve is cheap at this size", {})
    threads = machine_threads() if threads is None else threads
    costs = solver_flops(n, k, itemsize, cfg, threads)
    ncv = max(2 * k + 1, 20)
    note = ""
    if rank is not None and k < rank <= ncv < n:
        # one sweep of ncv products: no restart
        costs["arpack"] = ncv * arpack_step_cost(n, k, ncv, itemsize, cfg)
        note = f" (the kernel's rank <= {rank}: ARPACK costed at one sweep of {ncv} products)"
    best = min(costs, key=costs.__getitem__)
    listed = ", ".join(f"{name} {flops:.3g}" for name, flops in costs.items())
    # the cache the matrix-vector weights assumed (a VM's share, not its host's cache)
    cache = f"{cfg['solver_cache_bytes'] / 2**20:.3g} MiB"
    return (best, f"least modelled cost in flops on {threads} core(s), {cache} of cache: "
            f"{listed}{note}", costs)


def fallback_passes(n: int, k: int, b: int, m: int, itemsize: int = 8,
                    eval_flops: float = 0.0, stored: float = 1.0,
                    threads: int | None = None) -> int:
    """Passes block Lanczos (basis of at most ``m`` columns) may make under ``'auto'``
    before the dense solver runs instead: as many as fit in ``auto_fallback_ratio``
    times the dense solve's modelled cost, pass after pass as in
    :func:`krylov_run_flops` (at least one). A pure function of its arguments and the
    configuration."""
    cfg = get_config()
    threads = machine_threads() if threads is None else threads
    budget = cfg["auto_fallback_ratio"] * dense_flops(n, k, itemsize, cfg, threads)
    # passes while the running total stays within the budget (each pass costs at least
    # its product: the loop ends)
    spent = itertools.accumulate(_krylov_pass_costs(n, k, b, m, itemsize, eval_flops,
                                                    stored, cfg, threads))
    return max(1, sum(1 for _ in itertools.takewhile(lambda t: t <= budget, spent)))


def primal_flops(n: int, p: int, k: int, degree: int = 1,
                 cfg: dict[str, Any] | None = None) -> float:
    """Modelled cost of the primal route for an explicit feature map of dimension
    ``p``: the features (``n p degree``), their covariance (``2 n p^2``), its top-``k``
    pairs and the scores (``2 n p k``)."""
    return (float(n) * p * degree + 2.0 * n * p * p + dense_flops(p, min(k, p), cfg=cfg)
            + 2.0 * n * p * k)
