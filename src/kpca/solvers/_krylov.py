"""Thick-restart block Lanczos eigensolver (kpca's own, ``eigen_solver='krylov'``).

Why a block method: a pass over the kernel matrix (stored or recomputed) is the
dominant cost at large ``n``, and applying it to a block of ``b`` vectors costs
little more than to one. Why Lanczos with a deep basis and thick restarts
(docs/math.md, "The eigenproblem"): convergence is governed by the dimension of
the search space, not by the block alone. A basis of only ``k + 20`` vectors
converges like subspace iteration, at the rate ``mu_{b+1} / mu_k`` per pass,
which is close to 1 on the slowly decaying, clustered spectra of real kernels
(measured on digits, RBF: 300 passes without converging). Here the basis grows
block by block to ``max_basis`` columns; the projected matrix ``T = Q^T K Q`` is
assembled from the Gram-Schmidt coefficients, so Rayleigh-Ritz after every pass
costs no pass; the residual of every Ritz pair comes for free from the last
block's coupling (``||K v - theta v|| = ||R_{j+1} y_j||``); when the basis is
full it restarts from its best ``keep`` Ritz vectors plus the newest block, which
loses none of the information that matters for the wanted pairs.

Precision: the basis, the projections and the Rayleigh-Ritz problem are float64;
only the operator product runs in the operator's dtype (float32 storage is fine).
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import numpy as np
from scipy.linalg import eigh, qr
from sklearn.utils import check_random_state

from .._array_api import from_host, to_host
from .._config import get_config
from .._parallel import blas_threads, sized_threads
from ..operators import KernelOperator
from ._dense import dense_eigsh
from ._orth import cholesky_qr, project_out, put_rows
from ._randomized import default_rtol
from ._result import EigenResult

logger = logging.getLogger("kpca")

# the shape of the basis is set by the settings krylov_depth (blocks in a full basis)
# and krylov_min_basis (its fewest columns), kpca._config. On digits: at n =
# 1,500-3,594, 6 blocks needed 1.2-2x fewer passes than 4 and 2-5x fewer than 3


def krylov_block_size(k: int, cheap_pass: bool = False, *, device_rows: int | None = None
                      ) -> int:
    """Default block: when a pass recomputes kernel tiles (matrix-free), ``k + 9`` to
    ``k + 16`` columns, a multiple of 8 (24 for k = 10); when a pass is cheap (``K``
    stored), 16 columns, except on a device (``device_rows``: the operator's rows)
    below ``device_wide_block_rows`` rows (a setting), where it is ``k + 17`` to
    ``k + 24`` columns (a multiple of 8) but at most 32.

    A matrix-free pass evaluates every kernel value once and multiplies it by the
    block twice: with the evaluation in cache-sized pieces, the product is about half
    of the pass at 32 columns. Measured on Gaussian data (d = 20, RBF), 24 columns
    for k = 10 and 48 for k = 32 made the same passes as 32 and 56, 7-13 % faster
    each (n = 40,000 and 100,000, matrix-free). When ``K`` is stored, a pass is one
    product with it, whose cost grows with ``b``, and narrow blocks in a basis of at
    least ``krylov_min_basis`` columns reach a given Krylov dimension with the fewest
    columns: counted over digits (RBF gamma 1e-3 and 1e-2, standardised) and Gaussian
    data at n = 1,500-5,000, k = 5-128 (benchmarks/bench_solver_counts.py: counts
    depend on the spectrum only), 16 columns needed 0.55-0.93 of the operator columns
    of 32 for 1.0-1.8x the passes, and the Rayleigh-Ritz problem of a pass (the part
    that does not grow with ``b``) is the same for both, as the basis is. Timed at
    n = 600-5,000 (docs/benchmarks.md, "Narrow blocks, ARPACK's symmetric product and
    'auto' read from counts"), 16 columns were faster in 79 of 85 cells (median 0.8x
    the time) and at most 1.24x slower in the others (k = 5 and 128).
    A multiple of 8 matters: OpenBLAS's kernels work on column panels of 8 or 16.
    """
    if not cheap_pass:
        return 8 * ((k + 16) // 8)
    if device_rows is not None and device_rows < get_config()["device_wide_block_rows"]:
        return min(8 * ((k + 24) // 8), 32)
    return 16


def krylov_basis_size(k: int, b: int, depth: int | None = None) -> int:
    """Columns of a full basis: ``depth`` blocks (default: the setting
    ``krylov_depth``) and at least ``krylov_min_basis`` (a setting), at least three
    times the wanted pairs plus a block (the search space ARPACK's ``ncv = 2k + 1``
    would give, with room for a block method's slower growth), and room for ``k`` kept
    Ritz vectors plus two new blocks."""
    cfg = get_config()
    depth = cfg["krylov_depth"] if depth is None else depth
    return max(cfg["krylov_min_basis"], depth * b, 3 * k + b, k + 2 * b)


def krylov_workspace_columns(k: int, b: int, depth: int | None = None) -> int:
    """float64 columns of length ``n`` the solver holds at its peak: the basis, the
    restart's Ritz vectors, the newest image, its Gram-Schmidt copy and new block,
    and the returned vectors."""
    mmax = krylov_basis_size(k, b, depth)
    return mmax + _keep(k, b, mmax) + 3 * b + k


def _keep(k: int, b: int, mmax: int) -> int:
    """Ritz vectors kept at a restart: the ``k`` wanted and half the rest of the
    room, so the next cycle still adds at least one block."""
    return min(mmax - b, k + max(0, (mmax - b - k) // 2))


class ProjectedProblem:
    """The host side of thick-restart block Lanczos (:func:`block_lanczos`, the loop of
    every backend).

    The loop keeps the tall ``n x m`` basis and its products where the rows live
    (through a :class:`BlockAlgebra`: NumPy, or an Array API namespace on the rows'
    device); this object holds
    what is small and decides: the projected matrix ``T = Q^T K Q`` (float64, ``mmax``
    square), the basis width ``m``, the pass and restart counts, the Ritz pairs and
    their residuals, and the stopping rules (docs/math.md, "The eigenproblem"). One
    object, so that the host and the device stop after the same passes on the same
    problem.

    Parameters
    ----------
    k, b, mmax : int
        Wanted pairs, block columns, columns of a full basis.
    rtol : float
        Residual target (:func:`kpca.solvers.default_rtol`).
    max_pass : int
        Most operator passes (at least those that grow the basis to ``k`` columns).
    n_pass : int
        Passes already made for the first block (0 when its image came with it).
    name : str
        Prefix of the log records.
    """

    def __init__(self, k: int, b: int, mmax: int, rtol: float, max_pass: int, *,
                 n_pass: int, name: str = "krylov"):
        self.k, self.b, self.mmax = k, b, mmax
        self.rtol, self.max_pass, self.name = rtol, max_pass, name
        self.p_keep = _keep(k, b, mmax)
        self.T = np.zeros((mmax, mmax))
        self.m, self.n_pass, self.restarts = b, n_pass, 0
        self.theta = self.Y = self.res = None
        self.converged = False

    def couple(self, C: np.ndarray) -> float:
        """Store the newest block's coefficients ``C = Q^T W`` (shape (m, b)) as the
        last column block of ``T``; returns the largest entry of ``T``'s used part
        (the scale below which a new direction counts as lost)."""
        m, b, T = self.m, self.b, self.T
        T[:m, m - b : m] = C
        T[m - b : m, :m] = C.T
        return float(np.abs(T[:m, :m]).max())

    def ritz(self, R: np.ndarray) -> np.ndarray:
        """Rayleigh-Ritz on ``T`` and the residual of every wanted Ritz pair, from the
        coupling ``R`` (b x b) of the next block: ``K (Q y) - theta (Q y) = Q_{j+1} R
        y_last``. Sets ``theta``, ``Y`` (descending), ``res`` (relative to the
        largest Ritz value) and ``converged``; logs a 'residual' event. Returns ``Y``.
        """
        m, b, k = self.m, self.b, self.k
        # on threads sized by the reduction's per-column synchronisation (2 m^2 flops:
        # one thread for any basis here), not the tall products' threads (the caller's
        # block algebra may run on the operator's)
        with sized_threads(2.0 * m * m):
            theta, Y = eigh(self.T[:m, :m], check_finite=False)
        self.theta, self.Y = theta[::-1], Y[:, ::-1]
        scale = max(float(np.max(np.abs(self.theta))), np.finfo(np.float64).tiny)
        self.res = np.linalg.norm(R @ self.Y[m - b : m, :k], axis=0) / scale
        # a basis narrower than k cannot hold the answer yet, whatever the limits
        self.converged = self.full and bool(np.all(self.res <= self.rtol))
        logger.info(
            "%s: %d passes, basis %d, max residual %.2e (target %.0e)",
            self.name, self.n_pass, m, self.res.max(), self.rtol,
            extra={"kpca_event": "residual", "kpca_residual": float(self.res.max())},
        )
        return self.Y

    @property
    def full(self) -> bool:
        """Whether the basis holds at least ``k`` columns."""
        return self.m >= self.k

    def stop(self, out_of_time: bool = False) -> bool:
        """The stopping rules: converged, or (once the basis holds ``k`` columns)
        ``max_pass`` passes made or the caller's time limit reached."""
        return self.converged or (self.full and (self.n_pass >= self.max_pass
                                                 or out_of_time))

    def restart(self) -> int:
        """Before a new block: when it would overflow the basis, a thick restart from
        the best ``p`` Ritz vectors (``T`` becomes their diagonal); returns ``p``, the
        caller then writes ``Q[:, :p] = Q[:, :m] Y[:, :p]`` (from the basis before the
        call), or 0 (no restart)."""
        m, b = self.m, self.b
        if m + b <= self.mmax:
            return 0
        p = min(self.p_keep, m - b)
        self.T[:p, :p] = np.diag(self.theta[:p])
        self.m, self.restarts = p, self.restarts + 1
        return p

    def grow(self) -> int:
        """Account for a new block at columns ``m:m+b`` and the pass that multiplies it;
        returns its first column."""
        self.m += self.b
        self.n_pass += 1
        return self.m - self.b

    def result(self, vectors: np.ndarray, solver: str = "krylov") -> EigenResult:
        """The :class:`EigenResult` of the last Rayleigh-Ritz, with ``vectors`` (the
        Ritz vectors ``Q Y[:, :k]`` on the host)."""
        k = self.k
        return EigenResult(self.theta[:k].copy(), vectors, solver, n_iter=self.restarts,
                           n_matvec=self.n_pass * self.b, residuals=self.res,
                           converged=self.converged)


def krylov_start(n: int, b: int, random_state=None) -> np.ndarray:
    """Orthonormal Gaussian start block of shape (n, b)."""
    rng = check_random_state(random_state)
    return qr(rng.standard_normal((n, b)), mode="economic")[0]


class BlockAlgebra(ABC):
    """The tall-block algebra of block Lanczos, written against an array namespace.

    :func:`block_lanczos` (the one loop, for every backend) keeps the ``n x m`` basis
    and its products as arrays of namespace ``xp`` on ``device`` and asks this object
    for every operation on them; what is small (coefficients, the new block's ``R``,
    the Ritz vectors ``Y``) it gets or gives as float64 NumPy arrays. This class is
    the Array API version (PyTorch, CuPy, ``array-api-strict``: the algebra runs on the
    arrays' device; Householder QR of each block); :class:`HostAlgebra` plugs NumPy's
    speed-ups into the same operations.

    Parameters
    ----------
    xp : namespace
    device : device, default=None
        Where the basis lives (the operator's rows' device).
    name : str, default='krylov'
        Prefix of the solver's log records.
    """

    def __init__(self, xp: Any, device: Any = None, name: str = "krylov"):
        self.xp, self.device, self.name = xp, device, name

    # --------------------------------------------------------------- arrays
    def basis(self, n: int, mmax: int) -> Any:
        """The preallocated float64 basis, shape (n, mmax)."""
        return self.xp.zeros((n, mmax), dtype=self.xp.float64, device=self.device)

    def asarray(self, A: np.ndarray) -> Any:
        """A small host array (float64) as an array of the basis's namespace."""
        return from_host(np.asarray(A, dtype=np.float64), self.xp, self.device)

    def to_host(self, V: Any) -> np.ndarray:
        """The result's vectors on the host, float64."""
        return to_host(V, np.float64)

    def image(self, A: Any) -> Any:
        """A float64 block the loop may overwrite: the image given with a start block."""
        return self.xp.astype(A, self.xp.float64)

    def cast(self, A: Any) -> Any:
        """A block to write into the basis (the start block), as the basis's dtype."""
        return self.xp.astype(A, self.xp.float64)

    def product(self, op: Any, V: Any) -> Any:
        """``K V`` in float64: one operator pass."""
        return self.image(op.matmat(V))

    def random_block(self, rng: np.random.RandomState, n: int, b: int) -> Any:
        """An orthonormal Gaussian block (host draws, as :func:`krylov_start`'s)."""
        return self.xp.linalg.qr(self.asarray(rng.standard_normal((n, b))))[0]

    # --------------------------------------------------------------- algebra
    def step(self, n: int, m: int, b: int) -> AbstractContextManager:
        """The context of one iteration's block algebra (basis of ``m`` columns)."""
        return nullcontext()

    def project_out(self, Q: Any, W: Any) -> tuple[Any, np.ndarray, np.ndarray | None]:
        """``W <- (I - Q Q^T) W`` twice (orthogonal to ``Q`` to round-off); returns the
        new ``W``, the coefficients ``Q^T W`` of the block given (host, (m, b)) and
        ``W^T W`` of the result where it comes for free (else None)."""
        xp = self.xp
        Qt = xp.matrix_transpose(Q)
        C = Qt @ W
        W = W - Q @ C
        C2 = Qt @ W
        W = W - Q @ C2
        return W, to_host(C + C2, np.float64), None

    def orthonormalize(self, W: Any, t_scale: float, gram: np.ndarray | None
                       ) -> tuple[Any, np.ndarray, np.ndarray]:
        """``W = Qn R``: the orthonormal ``Qn``, ``R`` (host, (b, b)) with the rows of
        lost directions (negligible against ``t_scale``, the projected matrix's
        scale) set to zero, and which columns they are (host bool (b,))."""
        Qn, R = self.xp.linalg.qr(W)
        Rh = to_host(R, np.float64)
        lost = np.abs(np.diag(Rh)) <= 1e-12 * max(float(np.abs(Rh).max(initial=0.0)),
                                                  t_scale)
        Rh[lost] = 0
        return Qn, Rh, lost

    def replace_lost(self, rng: np.random.RandomState, Qn: Any, lost: np.ndarray,
                     Q: Any) -> Any:
        """``Qn`` with its ``lost`` columns replaced by orthonormal Gaussian ones
        orthogonal to ``Q`` and to the columns kept."""
        xp = self.xp
        keep = np.flatnonzero(~lost)
        kept = xp.take(Qn, xp.asarray(keep, device=self.device), axis=1)
        G = self.asarray(rng.standard_normal((Qn.shape[0], int(lost.sum()))))
        for _ in range(2):
            for B in (Q, kept):
                if B.shape[1]:
                    G = G - B @ (xp.matrix_transpose(B) @ G)
        fresh = xp.linalg.qr(G)[0]
        cols = [None] * Qn.shape[1]
        for j, i in enumerate(keep):
            cols[i] = kept[:, j : j + 1]
        for j, i in enumerate(np.flatnonzero(lost)):
            cols[i] = fresh[:, j : j + 1]
        return xp.concat(cols, axis=1)

    def store(self, Q: Any, j: int, Qn: Any) -> None:
        """Write the new block ``Qn`` into columns ``j:j+b`` of the basis ``Q``."""
        Q[:, j : j + Qn.shape[1]] = Qn

    def rotate(self, Q: Any, Y: np.ndarray) -> Any:
        """``Q Y`` for host coefficients ``Y`` (Ritz vectors, thick restart)."""
        return Q @ self.asarray(np.ascontiguousarray(Y))

    @abstractmethod
    def dense(self, op: Any, k: int) -> EigenResult:
        """The dense solver of this backend (a full basis would cover half the space)."""


class HostAlgebra(BlockAlgebra):
    """:class:`BlockAlgebra` on NumPy arrays, with the host's speed-ups plugged in.

    A column-major basis (each block's columns contiguous, so a fit whose basis never
    fills touches only the pages it uses: at n = 100,000 a row-major basis cost 95 ms
    of page faults on its first write); Gram-Schmidt, Cholesky QR and the writing of
    each new block as row sweeps that share the rows among the operator's threads
    from ``small_algebra_flops`` flops or ``split_sweep_values`` values on
    (:mod:`kpca.solvers._orth`), with Householder QR with column pivoting for the
    blocks they refuse; the iteration's BLAS threads sized by its work.

    Parameters
    ----------
    op : KernelOperator
        Whose ``threads`` the large products may use.
    """

    def __init__(self, op: KernelOperator):
        super().__init__(np, None, "krylov")
        self.threads = op.threads
        self.small_flops = get_config()["small_algebra_flops"]
        self.split_values = get_config()["split_sweep_values"]
        self.workers = 1

    def basis(self, n: int, mmax: int) -> np.ndarray:
        return np.empty((n, mmax), order="F")

    def asarray(self, A: np.ndarray) -> np.ndarray:
        return A

    def to_host(self, V: np.ndarray) -> np.ndarray:
        return V

    def image(self, A: Any) -> np.ndarray:
        return np.array(A, dtype=np.float64)  # a copy: Gram-Schmidt overwrites it

    def cast(self, A: Any) -> Any:
        return A  # the assignment into the basis converts it

    def product(self, op: Any, V: np.ndarray) -> np.ndarray:
        return np.asarray(op.matmat(V), dtype=np.float64)

    def random_block(self, rng: np.random.RandomState, n: int, b: int) -> np.ndarray:
        return krylov_start(n, b, rng)

    @contextmanager
    def step(self, n: int, m: int, b: int) -> Iterator[None]:
        # the solver's own block algebra runs on one BLAS thread: BLAS threads woken
        # between kernel passes spin against the pass's worker threads (measured at
        # n = 10,000, k = 32: the fit 1.3x slower with two threads here than with one);
        # from n m b = small_algebra_flops on (2^28: n = 100,000, k = 10), its products
        # are worth the operator's threads (its caller may hold BLAS to one thread
        # between passes): the tall ones (Gram-Schmidt, Cholesky QR) share their rows
        # among that many workers, one BLAS thread each
        large = n * m * b >= self.small_flops
        # (the row sweeps also share their rows from split_sweep_values values read on:
        # worker threads with one BLAS thread each do not spin; at n = 100,000, k = 10
        # on 16 cores the algebra between the passes took 0.2 s, all on one thread)
        self.workers = (self.threads or 1) if large or n * (m + b) >= self.split_values else 1
        with blas_threads(self.threads if large else 1):
            yield

    def project_out(self, Q: np.ndarray, W: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # three sweeps over the rows, the last also summing the Gram matrix that
        # Cholesky QR needs (at n = 20,000, k = 10: the algebra between passes ~55 ->
        # ~45 ms a fit)
        W = np.ascontiguousarray(W)
        C, G = project_out(Q, W, self.workers)
        return W, C, G

    def orthonormalize(self, W: np.ndarray, t_scale: float, gram: np.ndarray | None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return _orthonormalize(W, t_scale, gram, self.workers)

    def replace_lost(self, rng: np.random.RandomState, Qn: np.ndarray, lost: np.ndarray,
                     Q: np.ndarray) -> np.ndarray:
        Qn[:, lost] = _orthogonal_random(rng, int(lost.sum()), Q, Qn[:, ~lost])
        return Qn

    def store(self, Q: np.ndarray, j: int, Qn: np.ndarray) -> None:
        # fresh pages: written by the workers
        put_rows(Q[:, j : j + Qn.shape[1]], Qn, self.workers)

    def rotate(self, Q: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return Q @ Y

    def dense(self, op: Any, k: int) -> EigenResult:
        return dense_eigsh(op, k)


def krylov_eigsh(
    op: KernelOperator,
    k: int,
    *,
    tol: float = 0.0,
    max_iter: int | None = None,
    random_state=None,
    block_size: int | None = None,
    depth: int | None = None,
    callback=None,
    start: tuple[Any, Any] | None = None,
    time_limit: float | None = None,
    max_basis: int | None = None,
    algebra: BlockAlgebra | None = None,
    **_: object,
) -> EigenResult:
    """Largest-algebraic ``k`` eigenpairs by thick-restart block Lanczos.

    Parameters
    ----------
    op : KernelOperator
        Symmetric operator of size ``n``.
    k : int
        Number of pairs, ``1 <= k <= n``.
    tol : float
        Stopping rule: every wanted pair has ``||K v - mu v|| <= rtol * |mu_1|``
        (see :func:`kpca.solvers.default_rtol`: 1e-8 for float64 operators and
        1e-5 for float32 when ``tol=0``).
    max_iter : int, default=None
        Maximum number of operator passes (default 300); at least the passes that
        grow the basis to ``k`` columns are made.
    block_size : int, default=None
        Columns per pass; default :func:`krylov_block_size`.
    depth : int, default=None
        Blocks in a full basis (see :func:`krylov_basis_size`; default: the setting
        ``krylov_depth``).
    callback : callable, default=None
        Called as ``callback(n_pass, residuals)`` after each pass (progress).
    start : (Q0, K Q0), default=None
        An orthonormal start block and its known image (e.g. computed during the
        operator's construction pass); saves the first pass.
    max_basis : int, default=None
        Columns of a full basis (ARPACK's ``ncv``); default
        :func:`krylov_basis_size`. At least ``k + 2 * block_size``.
    time_limit : float, default=None
        Seconds after which the solver stops (unconverged) at the end of a pass:
        ``eigen_solver='auto'`` gives it the time a dense solve would take, then
        falls back to the dense solver.
    algebra : BlockAlgebra, default=None
        Where the basis lives and how its blocks are multiplied: default
        :class:`HostAlgebra` (NumPy); a device operator's solver
        (:func:`kpca.solvers._device.device_eigsh`) passes its namespace's, and
        ``start`` and ``op.matmat`` then take and give arrays of that namespace.

    Returns
    -------
    EigenResult
        ``n_iter`` counts restarts, ``n_matvec`` operator columns; ``residuals`` are
        the Lanczos residual norms relative to the largest Ritz value. On the host
        whatever the algebra.
    """
    n = op.n
    alg = HostAlgebra(op) if algebra is None else algebra
    b = start[0].shape[1] if start is not None else (block_size or krylov_block_size(k))
    mmax = krylov_basis_size(k, b, depth) if max_basis is None else max(max_basis, k + 2 * b)
    if mmax >= n // 2 or k >= n:
        logger.info("krylov: a full basis would cover half the space (n=%d); using dense", n)
        return alg.dense(op, k)
    rng = check_random_state(random_state)
    rtol = default_rtol(tol, op.dtype)
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    return block_lanczos(op, k, b, mmax, alg, rtol=rtol, max_pass=max_iter or 300,
                         rng=rng, start=start, callback=callback, deadline=deadline)


def block_lanczos(op: Any, k: int, b: int, mmax: int, alg: BlockAlgebra, *, rtol: float,
                  max_pass: int, rng: np.random.RandomState,
                  start: tuple[Any, Any] | None = None, callback=None,
                  deadline: float | None = None) -> EigenResult:
    """The thick-restart block Lanczos loop (docs/math.md, "The eigenproblem"), one for
    every backend: the tall blocks through ``alg`` (:class:`BlockAlgebra`), the
    projected problem and the stopping rules in a :class:`ProjectedProblem` (host).

    Parameters
    ----------
    op : operator
        ``op.matmat`` takes and gives blocks of ``alg``'s namespace.
    k, b, mmax : int
        Wanted pairs, block columns, columns of a full basis (``k + 2 b <= mmax``).
    alg : BlockAlgebra
    rtol : float
        Residual target.
    max_pass : int
        Most operator passes.
    rng : numpy.random.RandomState
        Draws the start block (without ``start``) and directions replacing lost ones.
    start, callback
        As :func:`krylov_eigsh`.
    deadline : float, default=None
        ``time.perf_counter()`` value after which the loop stops at the end of a pass
        (the caller's explicit time limit).

    Returns
    -------
    EigenResult
        On the host.
    """
    n = op.n
    # the basis is preallocated (float64), so the solver's memory is fixed up front
    # (see krylov_workspace_columns); the projected matrix T = Q^T K Q and the
    # stopping rules are the ProjectedProblem's
    Q = alg.basis(n, mmax)
    if start is not None:
        Q[:, :b] = alg.cast(start[0])
        W = alg.image(start[1])  # overwritten by Gram-Schmidt
        n_pass = 0
    else:
        Q[:, :b] = alg.random_block(rng, n, b)
        W = alg.product(op, Q[:, :b])
        n_pass = 1
    proj = ProjectedProblem(k, b, mmax, rtol, max_pass, n_pass=n_pass, name=alg.name)
    while True:
        with alg.step(n, proj.m, b):
            Qm = Q[:, : proj.m]
            # newest image against the whole basis, twice (orthogonal to round-off);
            # the coefficients are the last column block of T
            W, C, G = alg.project_out(Qm, W)
            Qn, R, lost = alg.orthonormalize(W, proj.couple(C), G)
            del W
            Y = proj.ritz(R)
            if callback is not None:
                callback(proj.n_pass, proj.res)
            out_of_time = deadline is not None and time.perf_counter() > deadline
            if proj.stop(out_of_time):
                V = alg.rotate(Qm, Y[:, :k])
                break
            # directions the new block lost (an invariant subspace was found):
            # random ones orthogonal to the basis, not coupled to it (R row = 0)
            if lost.any():
                Qn = alg.replace_lost(rng, Qn, lost, Qm)
            p = proj.restart()  # thick restart from the best Ritz vectors
            if p:
                Q[:, :p] = alg.rotate(Qm, Y[:, :p])
            j = proj.grow()
            alg.store(Q, j, Qn)
            del Qn, R, Y
        W = alg.product(op, Q[:, j : j + b])
    return proj.result(alg.to_host(V))


def _orthonormalize(W: np.ndarray, t_scale: float, gram: np.ndarray | None = None,
                    workers: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``W = Qn R`` with orthonormal ``Qn`` (n, b) and the columns of ``W`` that were
    lost (an invariant subspace found: negligible rows of ``R``, set to zero). ``W``
    (C-contiguous float64) is overwritten; ``gram`` is ``W^T W`` where the caller has
    it, ``workers`` the threads sharing the rows of the Cholesky sweeps.

    Cholesky QR twice (:mod:`kpca.solvers._orth`) when the block is well conditioned
    and not negligible against the projected matrix (scale ``t_scale``); otherwise
    Householder QR with column pivoting, which puts the lost directions last, where
    they can be replaced without spoiling ``Z = Q_{j+1} R`` (the residuals of the
    caller).
    """
    # a block near round-off of the projected matrix goes to pivoted QR, which
    # decides which of its directions are lost
    R = cholesky_qr(W, floor=1e-8 * t_scale, gram=gram, workers=workers)
    if R is not None:
        return W, R, np.zeros(W.shape[1], dtype=bool)
    Qn, Rp, piv = qr(W, mode="economic", pivoting=True, overwrite_a=True,
                     check_finite=False)
    R = np.empty_like(Rp)
    R[:, piv] = Rp
    lost = np.abs(np.diag(Rp)) <= 1e-12 * max(float(np.abs(Rp).max()), t_scale)
    R[lost] = 0
    return Qn, R, lost


def _orthogonal_random(rng, count: int, *bases: np.ndarray) -> np.ndarray:
    """``count`` orthonormal Gaussian columns orthogonal to every basis given."""
    G = rng.standard_normal((bases[0].shape[0], count))
    for _ in range(2):
        for B in bases:
            if B.shape[1]:
                G -= B @ (B.T @ G)
    return qr(G, mode="economic")[0]
