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

import numpy as np
from scipy.linalg import eigh, qr
from sklearn.utils import check_random_state

from .._config import get_config
from .._parallel import blas_threads, sized_threads
from ..operators import KernelOperator
from ._dense import dense_eigsh
from ._orth import cholesky_qr, project_out, put_rows
from ._randomized import default_rtol
from ._result import EigenResult

logger = logging.getLogger("kpca")

# the shape of the basis is set by the settings krylov_depth (blocks in a full basis),
# krylov_min_basis (its fewest columns) and narrow_block_rows (on a stored K, blocks of
# at most 32 columns below this many rows and 16 from it on), kpca._config. On digits:
# at n = 1,500-3,594, 6 blocks needed 1.2-2x fewer passes than 4 and 2-5x fewer than 3;
# at n = 3,500, 32 columns were 1.1-1.4x faster than 16, at n = 10,000 16 columns
# 1.1-1.5x faster than 32


def krylov_block_size(k: int, cheap_pass: bool = False, n: int = 0) -> int:
    """Default block: when a pass recomputes kernel tiles (matrix-free), ``k + 9`` to
    ``k + 16`` columns, a multiple of 8 (24 for k = 10); when a pass is cheap (``K``
    stored), ``k + 17`` to ``k + 24`` (a multiple of 8) but at most 32, and at most 16
    from ``narrow_block_rows`` rows on (a setting, kpca._config).

    A matrix-free pass evaluates every kernel value once and multiplies it by the
    block twice: with the evaluation in cache-sized pieces, the product is about half
    of the pass at 32 columns. Measured on Gaussian data (d = 20, RBF), 24 columns
    for k = 10 and 48 for k = 32 made the same passes as 32 and 56, 7-13 % faster
    each (n = 40,000 and 100,000, matrix-free). When ``K`` is stored, a
    pass is one product with it, whose cost grows with ``b``, and narrow blocks in a
    deep basis reach a given Krylov dimension with the fewest columns (measured on
    digits: at n = 3,594, k = 128, 32 columns 4x faster than 152; at n = 10,000 with
    a flat spectrum, 16 columns 1.1-1.5x faster than 32). The multiple of 8 matters:
    OpenBLAS's single-precision kernels work on column panels of 8 or 16, and a
    32-column product with a tile runs ~25 % faster per column than a 30- or
    31-column one (measured on this project's 2-core x86-64 machine).
    """
    if not cheap_pass:
        return 8 * ((k + 16) // 8)
    return min(8 * ((k + 24) // 8), 16 if n >= get_config()["narrow_block_rows"] else 32)


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
    """The host side of thick-restart block Lanczos, shared by every backend's loop.

    The loops (NumPy here, Array API arrays in :mod:`kpca.solvers._device`) keep the
    tall ``n x m`` basis and their products where the rows live; this object holds
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
    start: tuple[np.ndarray, np.ndarray] | None = None,
    time_limit: float | None = None,
    max_basis: int | None = None,
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

    Returns
    -------
    EigenResult
        ``n_iter`` counts restarts, ``n_matvec`` operator columns; ``residuals`` are
        the Lanczos residual norms relative to the largest Ritz value.
    """
    n = op.n
    b = start[0].shape[1] if start is not None else (block_size or krylov_block_size(k))
    mmax = krylov_basis_size(k, b, depth) if max_basis is None else max(max_basis, k + 2 * b)
    if mmax >= n // 2 or k >= n:
        logger.info("krylov: a full basis would cover half the space (n=%d); using dense", n)
        return dense_eigsh(op, k)
    rng = check_random_state(random_state)
    rtol = default_rtol(tol, op.dtype)
    max_pass = max_iter or 300
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    # the basis is preallocated (float64), so the solver's memory is fixed up front
    # (see krylov_workspace_columns); the projected matrix T = Q^T K Q and the stopping
    # rules are the ProjectedProblem's (shared with the device loop). Column-major:
    # each block's columns are contiguous, so a fit whose basis never fills touches
    # only the pages it uses (at n = 100,000 a row-major basis cost 95 ms of page
    # faults on its first write); a block of its rows is a column-major operand of
    # the products (leading dimension n)
    Q = np.empty((n, mmax), order="F")
    if start is not None:
        Q[:, :b] = start[0]
        W = np.array(start[1], dtype=np.float64)  # overwritten by Gram-Schmidt
        n_pass = 0
    else:
        Q[:, :b] = krylov_start(n, b, rng)
        W = np.asarray(op.matmat(Q[:, :b]), dtype=np.float64)
        n_pass = 1
    proj = ProjectedProblem(k, b, mmax, rtol, max_pass, n_pass=n_pass)
    small_flops = get_config()["small_algebra_flops"]
    split_values = get_config()["split_sweep_values"]
    while True:
        m = proj.m
        # the solver's own block algebra runs on one BLAS thread: BLAS threads woken
        # between kernel passes spin against the pass's worker threads (measured at
        # n = 10,000, k = 32: the fit 1.3x slower with two threads here than with one);
        # from n m b = small_algebra_flops on (2^28: n = 100,000, k = 10), its products
        # are worth the operator's threads (its caller may hold BLAS to one thread between passes):
        # the tall ones (Gram-Schmidt, Cholesky QR) share their rows among that many
        # workers, one BLAS thread each
        large = n * m * b >= small_flops
        # (the row sweeps also share their rows from split_sweep_values values read on:
        # worker threads with one BLAS thread each do not spin; at n = 100,000, k = 10
        # on 16 cores the algebra between the passes took 0.2 s, all on one thread)
        split = (op.threads or 1) if large or n * (m + b) >= split_values else 1
        with blas_threads(op.threads if large else 1):
            Qm = Q[:, :m]
            # newest image against the whole basis, twice (orthogonal to round-off);
            # the coefficients are the last column block of T. Three sweeps over the
            # rows, the last also summing the Gram matrix that Cholesky QR needs (at
            # n = 20,000, k = 10: the algebra between passes ~55 -> ~45 ms a fit)
            W = np.ascontiguousarray(W)
            C, G = project_out(Qm, W, split)
            Qn, R, lost = _orthonormalize(W, proj.couple(C), G, split)
            del W
            Y = proj.ritz(R)
            if callback is not None:
                callback(proj.n_pass, proj.res)
            out_of_time = deadline is not None and time.perf_counter() > deadline
            if proj.stop(out_of_time):
                V = Qm @ Y[:, :k]
                break
            # directions the new block lost (an invariant subspace was found):
            # random ones orthogonal to the basis, not coupled to it (R row = 0)
            if lost.any():
                Qn[:, lost] = _orthogonal_random(rng, int(lost.sum()), Qm, Qn[:, ~lost])
            p = proj.restart()  # thick restart from the best Ritz vectors
            if p:
                Q[:, :p] = Qm @ Y[:, :p]
            j = proj.grow()
            put_rows(Q[:, j : j + b], Qn, split)  # (fresh pages: written by the workers)
            del Qn, R, Y
        W = np.asarray(op.matmat(Q[:, j : j + b]), dtype=np.float64)
    return proj.result(V)


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
