"""A Nyström warm start for the exact iterative solvers.

The block Lanczos solver converges in fewer passes over the kernel matrix when its
start block already lies near the top eigenvectors. A pass over ``K~`` costs
``2 n^2 b`` flops (and a full kernel evaluation on the matrix-free path); the
top principal directions of ``m`` Nyström features cost ``O(n m (d + m))``, a
small fraction of one pass when ``m << n``. Measured on RBF data (n = 20,000,
k = 10): one pass fewer to the 1e-5 residual target, i.e. a sixth of the passes.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigh, qr
from sklearn.utils import check_random_state

from .._config import get_config
from .._parallel import blas_threads, run_blocks, sized_threads
from ..kernels import Kernel
from ..operators import n_threads
from ._dense import top_eigh
from ._orth import cholesky_qr

logger = logging.getLogger("kpca")

# the sizes of the start are settings (kpca._config): start_landmarks,
# stored_start_landmarks and stored_start_rows (landmarks), start_chunk_rows and
# start_min_chunk_rows (row chunks of the landmark kernel values)


def start_landmarks(n: int, cheap_pass: bool, rank: int | None = None) -> int:
    """Landmarks of the warm start for ``n`` rows: when a pass is a read of a stored
    ``K``, ``stored_start_landmarks`` from ``stored_start_rows`` rows on (below, passes
    are too cheap for a costlier start to pay: ``start_landmarks``; all three are
    settings, kpca._config), and ``n / start_rows_per_landmark`` (``start_landmarks``
    to ``max_start_landmarks``: n / 100, 128 to 512) when every pass recomputes the
    kernel matrix. Never more than a kernel of rank ``rank`` can
    use (a linear kernel: the number of features, plus one), nor fewer than
    ``start_landmarks``.

    The start costs ``O(n m^2)``; a better one can save a whole pass. Measured on
    Gaussian data (d = 20, k = 10, RBF, matrix-free): the residual of the start's Ritz
    pairs falls about as ``1 / m`` (13 / m at n = 40,000-100,000: 6.8e-2 at 200
    landmarks, 2.6e-2 at 512, 1.0e-2 at 1,024), and the residual after each pass in
    proportion; at n = 60,000, 300 landmarks (n / 200) made 4 passes (1.8e-5 after
    the third, target 1e-5) and 512 made 3 (8.7e-6): 21.9 s of CPU time against
    27.3 s. At n = 100,000, 500 landmarks started at 2.7e-2 and converged in 3
    passes. Stored, at n = 10,000 and 20,000, 256 landmarks saved one of 6 passes
    (0.39-0.41 s against 0.52-0.53 s; 1.24-1.26 s against 1.36-1.66 s); 512 saved no
    more than 256.

    Parameters
    ----------
    n : int
    cheap_pass : bool
        Whether ``K`` is stored.
    rank : int, default=None
        An upper bound on the rank of the kernel matrix (``Kernel.rank_bound``).
    """
    cfg = get_config()
    least = cfg["start_landmarks"]
    if cheap_pass:
        m = cfg["stored_start_landmarks"] if n >= cfg["stored_start_rows"] else least
    else:
        m = int(min(cfg["max_start_landmarks"], max(least, n // cfg["start_rows_per_landmark"])))
    if rank is not None:
        m = min(m, max(least, rank + 1))
    return m


def nystrom_start(
    kernel: Kernel,
    X: Any,
    b: int,
    *,
    center: bool = True,
    n_landmarks: int | None = None,
    random_state: Any = None,
    n_jobs: int | None = None,
) -> np.ndarray:
    """Orthonormal start block near the top eigenvectors of the (centred) kernel matrix.

    The top-``b`` principal directions of the Nyström features of ``X`` on
    ``n_landmarks`` uniformly drawn rows (centred by their mean when ``center``),
    completed by Gaussian columns when the features have rank below ``b``.

    Parameters
    ----------
    kernel : Kernel
        Resolved vector kernel (``kernel.requires_vectors``).
    X : ndarray or sparse matrix of shape (n, d)
    b : int
        Columns of the block, ``1 <= b <= n``.
    center : bool, default=True
        Whether the solver will see the centred kernel matrix.
    n_landmarks : int, default=None
        Default: the setting ``start_landmarks``.
    random_state : int, RandomState instance or None
    n_jobs : int or None, default=None
        Worker threads for the landmark rows and their products (None: all cores).

    Returns
    -------
    Q : ndarray of shape (n, b), float64, orthonormal columns.
    """
    cfg = get_config()
    m = min(X.shape[0], cfg["start_landmarks"] if n_landmarks is None else n_landmarks)
    # The O(n m^2) products run on the worker threads, one BLAS thread each; what runs
    # here is landmark-sized (m x m), on one BLAS thread: BLAS threads woken for it are
    # left spinning against the workers of the next step and of the construction pass
    # (at n = 20,000, m = 128: 48 ms on one thread, 52-238 ms on two on a shared
    # machine; on 16 cores the start's two steps took 4-11 times their work's share
    # while they did, docs/benchmarks.md, issue 31). The eigenproblems get threads by
    # their size, up to the workers (_whitening, _directions).
    workers = n_threads(n_jobs)
    with blas_threads(1):
        return _nystrom_start(kernel, X, b, center, m, random_state, workers)


def _sweep_workers(n: int, b: int, workers: int) -> int:
    """Threads sharing the rows of the block's Cholesky QR (kpca.solvers._orth): the
    workers from ``split_sweep_values`` values of the block on (a setting), else one."""
    return workers if n * b >= get_config()["split_sweep_values"] else 1


def _chunks(n: int, workers: int) -> list[int]:
    """Starts of the row chunks of the landmark rows: at most ``start_chunk_rows`` rows
    each (to within one), sizes differing by at most one row, and a multiple of
    ``workers`` of them when each gets at least ``start_min_chunk_rows`` rows (balanced
    threads; both are settings)."""
    cfg = get_config()
    count = max(1, -(-n // cfg["start_chunk_rows"]))
    if n >= workers * cfg["start_min_chunk_rows"]:
        count = workers * -(-count // workers)
    return [n * i // count for i in range(count)]


def _merge(a: tuple, b: tuple) -> tuple:
    """Two chunks' ``(rows, mean, scatter about the mean)`` as one (Chan et al.'s
    pairwise update: the scatter of the union adds the spread of the two means)."""
    ka, mua, Ma = a
    kb, mub, Mb = b
    k = ka + kb
    delta = mub - mua
    return k, mua + delta * (kb / k), Ma + Mb + (ka * kb / k) * np.outer(delta, delta)


def _landmark_rows(kernel: Kernel, X: Any, Z: np.ndarray, prep: Any,
                   buf: np.ndarray) -> np.ndarray:
    """``k(X, Z)`` in float64 (``prep``: ``Z`` prepared, or None for sparse ``X``),
    written into the front of ``buf`` (a float64 workspace of at least
    ``len(X) * len(Z)`` values) where ``prep`` is given."""
    if prep is None:
        return np.asarray(kernel.block(X, Z.astype(X.dtype)), dtype=np.float64)
    out = buf[: X.shape[0] * Z.shape[0]].reshape(X.shape[0], -1)
    return np.asarray(kernel.block_prepared(X, prep, out=out), dtype=np.float64)


def _workspace(bounds: list[tuple[int, int]], m: int) -> np.ndarray:
    """A float64 buffer for the landmark rows of the largest chunk: reused by a
    worker's chunks, so that each chunk does not take (and fault in) fresh pages."""
    return np.empty(max(hi - lo for lo, hi in bounds) * m)


def _landmark_sample(n: int, m: int, rng: np.random.RandomState) -> np.ndarray:
    """Sorted indices of ``m`` landmarks drawn uniformly without replacement (the host
    and the device draw the same ones from the same random state)."""
    return np.sort(rng.choice(n, size=m, replace=False))


def _whitening(Kmm: np.ndarray, threads: int | None = None
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """``S = V / sqrt(s)`` on the numerically positive eigenpairs of the landmark
    kernel matrix (float64, m x m; the Nystrom features are ``F = C S``) and the mask of
    the pairs kept, or None when ``Kmm`` is not finite. ``threads``: the most BLAS
    threads its eigendecomposition may use (None: those BLAS has now)."""
    if not np.all(np.isfinite(Kmm)):
        return None
    # LAPACK's reduction of an m x m matrix synchronises its threads once a column
    # (2 m^2 flops): threads sized by that (kpca._parallel.call_threads, one up to
    # m = 5,792), not by the start's n m^2 products. At m = 500 with two BLAS threads on
    # a busy 2-core machine: 3-7 s wall against 0.2 s on one
    with sized_threads(2.0 * len(Kmm) ** 2, threads):
        s, V = eigh(0.5 * (Kmm + Kmm.T), driver="evd")
    keep = s > 1e-10 * max(float(s.max()), 0.0)
    return V[:, keep] / np.sqrt(s[keep]), keep


def _directions(S: np.ndarray, mean: np.ndarray, CtC: np.ndarray, n: int, b: int,
                center: bool, threads: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The top ``b`` principal directions of the Nystrom features from the landmark
    rows' mean and scatter about it (summed over the rows' chunks, :func:`_merge`);
    ``threads`` as :func:`_whitening`.

    Returns ``(A, shift, norms)``: the start block is ``P = (C A - 1 shift^T) / norms``
    (orthonormal columns to round-off), or None where the features have no direction
    (then the caller's start is Gaussian)."""
    if not center:  # C^T C
        CtC = CtC + n * np.outer(mean, mean)
    G = S.T @ CtC @ S
    if not (S.shape[1] and np.all(np.isfinite(G))):
        return None
    # only the top b pairs are used (LAPACK's subset driver: about half the time of
    # all 256 at b = 16)
    with sized_threads(2.0 * len(G) ** 2, threads):  # as the eigh of K_mm (_whitening)
        w, U = top_eigh(0.5 * (G + G.T), b)
    top = np.argsort(-w, kind="stable")[:b]
    top = top[w[top] > 1e-12 * max(float(w.max()), 0.0)]
    A = S @ U[:, top]  # P = (C - 1 c^T) A: the top centred directions
    shift = mean @ A if center else np.zeros(A.shape[1])
    # P^T P = U^T G U = diag(w): orthogonal columns of norms sqrt(w), to round-off
    return A, shift, np.sqrt(w[top])


def _nystrom_start(kernel: Kernel, X: Any, b: int, center: bool, m: int,
                   random_state: Any, workers: int = 1) -> np.ndarray:
    rng = check_random_state(random_state)
    n = X.shape[0]
    Z = X[_landmark_sample(n, m, rng)]
    Z = Z.toarray() if sp.issparse(Z) else np.asarray(Z)
    P = np.empty((n, 0))
    starts = _chunks(n, workers)
    bounds = list(zip(starts, starts[1:] + [n], strict=True))
    with np.errstate(all="ignore"):
        white = _whitening(np.asarray(kernel.block(Z.astype(np.float64)), dtype=np.float64),
                           workers)
        if white is not None:
            # the Nystrom features F = C K_mm^{-1/2}, C = k(X, Z) (docs/math.md,
            # "Nyström"): their covariance F^T H F = S^T (C^T H C) S from sums over row
            # chunks of C, with S = V / sqrt(s)
            S, keep = white
            prep = None if sp.issparse(X) else kernel.prepare(Z, np.dtype(np.float64))

            def scatter(w: int) -> tuple:
                # each chunk around its own mean row, so that the centred sum does not
                # cancel (a linear kernel of data far from the origin: C^T C - n c c^T
                # lost the covariance's small eigenvalues), merged into the worker's
                # running sums at once (O(m^2) memory a worker, whatever n is)
                total, buf = None, bufs[w]
                for lo, hi in groups[w]:
                    C = _landmark_rows(kernel, X[lo:hi], Z, prep, buf)
                    mu = C.mean(axis=0)
                    C -= mu
                    part = (len(C), mu, C.T @ C)  # (syrk, half the flops: 2x slower)
                    total = part if total is None else _merge(total, part)
                return total

            per = -(-len(bounds) // workers)  # contiguous groups of chunks, one a worker
            groups = [bounds[i : i + per] for i in range(0, len(bounds), per)]
            # one buffer a worker, for its chunks of both sweeps
            bufs = [_workspace(g, m) for g in groups]
            parts = run_blocks(scatter, range(len(groups)), workers)
            _, mean, CtC = functools.reduce(_merge, parts)
            found = (_directions(S, mean, CtC, n, b, center, workers) if keep.any()
                     else None)
            if found is not None:
                A, shift, norms = found
                P = np.empty((n, A.shape[1]))

                def project(w: int) -> bool:
                    # orthogonal columns: normalized here, Cholesky QR makes them
                    # orthonormal; each worker checks its own rows (no serial sweeps)
                    finite = True
                    for lo, hi in groups[w]:
                        C = _landmark_rows(kernel, X[lo:hi], Z, prep, bufs[w])
                        np.subtract(C @ A, shift, out=P[lo:hi])
                        P[lo:hi] /= norms
                        finite = finite and bool(np.all(np.isfinite(P[lo:hi])))
                    return finite

                if not all(run_blocks(project, range(len(groups)), workers)):
                    P = np.empty((n, 0))
    logger.debug("nystrom start: %d landmarks, %d Nystrom directions", m, P.shape[1])
    if P.shape[1] < b:  # rank-deficient features (or a kernel that overflows): complete
        P = np.hstack([P, rng.standard_normal((n, b - P.shape[1]))])
    elif cholesky_qr(P, workers=_sweep_workers(n, b, workers)) is not None:
        return P
    return qr(P, mode="economic")[0]


def device_nystrom_start(kernel: Kernel, X: Any, xp: Any, b: int, *, center: bool = True,
                         n_landmarks: int | None = None, random_state: Any = None) -> Any:
    """:func:`nystrom_start` for rows ``X`` of an Array API namespace ``xp``, on their
    device: the same landmarks (the same draws from ``random_state``), the same
    directions, the block on the device.

    The landmark kernel rows ``C = k(X, Z)`` are evaluated on the device in float64,
    chunk by chunk (``device_tile_bytes`` of them at a time, a setting, kpca._config),
    twice: once for their mean and scatter, once for the projection. Only the
    landmark-sized algebra goes to the host (``K_mm``, each chunk's mean and m x m
    scatter, the directions ``A``: at most ``max_start_landmarks`` square).

    Parameters
    ----------
    kernel, X, xp
        As :class:`kpca.operators.DeviceKernelOperator`.
    b, center, n_landmarks, random_state
        As :func:`nystrom_start`.

    Returns
    -------
    Q : array of shape (n, b), float64, orthonormal columns, on X's device.
    """
    from .._array_api import from_host, to_host

    cfg = get_config()
    rng = check_random_state(random_state)
    n, dev = X.shape[0], X.device
    m = min(n, cfg["start_landmarks"] if n_landmarks is None else n_landmarks)
    X64 = xp.astype(X, xp.float64)
    Z = xp.take(X64, from_host(_landmark_sample(n, m, rng), xp, dev), axis=0)
    rows = max(1, cfg["device_tile_bytes"] // (8 * m))
    bounds = [(lo, min(lo + rows, n)) for lo in range(0, n, rows)]
    P = None
    white = _whitening(to_host(kernel.block(Z, Z, xp=xp), np.float64))
    if white is not None and white[1].any():
        S = white[0]
        parts = []
        for lo, hi in bounds:  # each chunk about its own mean (see _nystrom_start)
            C = kernel.block(X64[lo:hi, ...], Z, xp=xp)
            mu = xp.mean(C, axis=0)
            C = C - mu[None, :]
            parts.append((hi - lo, to_host(mu, np.float64),
                          to_host(xp.matrix_transpose(C) @ C, np.float64)))
        _, mean, CtC = functools.reduce(_merge, parts)
        found = _directions(S, mean, CtC, n, b, center) if np.all(np.isfinite(mean)) else None
        if found is not None:
            A, shift, norms = (from_host(a, xp, dev) for a in found)
            P = xp.concat([(kernel.block(X64[lo:hi, ...], Z, xp=xp) @ A
                            - shift[None, :]) / norms[None, :] for lo, hi in bounds],
                          axis=0)
            if not bool(xp.all(xp.isfinite(P))):
                P = None
    r = 0 if P is None else P.shape[1]
    logger.debug("device nystrom start: %d landmarks, %d Nystrom directions", m, r)
    if r < b:  # rank-deficient features (or a kernel that overflows): complete
        G = from_host(rng.standard_normal((n, b - r)), xp, dev)
        P = G if P is None else xp.concat([P, G], axis=1)
    return xp.linalg.qr(P)[0]
