"""The streamed engine shared by the approximate estimators (docs/math.md, "Large n:
Nyström and random features").

Both Nyström and random-feature kernel PCA are ordinary PCA on an explicit,
finite feature map ``phi(x) = f(x) @ W``:

* ``f`` -- the *raw* features of a block of rows (``k(x, Z)`` against the
  landmarks for Nyström, ``sqrt(2/D) cos(x W_rff + b)`` for random features);
* ``W`` -- a fixed ``p x q`` linear map applied afterwards (``K_mm^{-1/2}`` for
  Nyström, the identity for random features).

One pass over row blocks accumulates, in float64, the count ``n``, the sum of
``f - s`` and the scatter ``sum (f - s)(f - s)^T`` where ``s`` is a fixed shift
(the mean raw feature of a small sample: it removes most of the cancellation in
``E[ff^T] - E[f]E[f]^T``, which matters for float32 blocks and for kernels whose
values are far from zero). Then

    mean   mu_f = s + sum(f - s) / n
    C_f    = scatter / n - (mu_f - s)(mu_f - s)^T          (centred covariance of f)
    C      = W^T C_f W                                     (covariance of phi)
    C U = U diag(lambda)                                   (eigh, q x q)

so that, with ``Phi~`` the centred ``n x q`` feature matrix of the training
rows and ``K^ = Phi~ Phi~^T`` the centred approximate kernel matrix, the
non-zero eigenvalues of ``K^`` are ``mu_l = n lambda_l`` (the scale of exact
KPCA's ``eigenvalues_``). New rows are centred with the TRAINING mean:
``y(t) = (phi(t) - mean phi) U = f(t) P - mu_f P`` with ``P = W U`` (``p x k``),
so transforming costs one raw-feature block and a ``p x k`` product per row.

Blocks can be numpy slices (in-process streaming, bounded memory) or the
chunks of a ``dask.array`` (each chunk's statistics computed on a worker,
summed by a tree reduction; see :mod:`kpca.distributed`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, eigsh

from .._config import get_config
from .._memory import default_memory_limit, format_bytes
from .._parallel import run_stream
from .._plan import arpack_bytes, lapack_bytes
from ..kernels import check_finite_kernel
from ..operators import n_threads
from ..solvers import EigenResult, finalize, top_eigh

logger = logging.getLogger("kpca")

# the settings feature_block_bytes (bytes of raw features the streamed blocks may
# hold) and feature_lanczos_min_size (covariances at least this large, with at most a
# tenth of their eigenpairs wanted, are decomposed by Lanczos, scipy's ARPACK, rather
# than LAPACK), kpca._config


@dataclass
class FeatureStats:
    """Additive sufficient statistics of a block of raw features (float64).

    Attributes
    ----------
    n : int
        Number of rows.
    total : ndarray of shape (p,)
        ``sum_i (f_i - s)``.
    scatter : ndarray of shape (p, p)
        ``sum_i (f_i - s)(f_i - s)^T``.
    """

    n: int
    total: np.ndarray
    scatter: np.ndarray

    def __add__(self, other: FeatureStats) -> FeatureStats:
        return FeatureStats(self.n + other.n, self.total + other.total,
                            self.scatter + other.scatter)

    @classmethod
    def of_block(cls, F: np.ndarray, shift: np.ndarray) -> FeatureStats:
        """Statistics of one block ``F`` of shape (b, p) about the shift ``s`` (p,).

        The scatter is one symmetric rank-b update (``A.T @ A`` is a BLAS syrk) in
        the block's dtype, added to the float64 accumulators.
        """
        A = F - shift.astype(F.dtype)
        S = A.T @ A
        return cls(F.shape[0], A.sum(axis=0, dtype=np.float64), S.astype(np.float64))

    @classmethod
    def zeros(cls, p: int) -> FeatureStats:
        return cls(0, np.zeros(p), np.zeros((p, p)))


def block_rows(p: int, itemsize: int, block_size: int | None = None,
               budget: int | None = None, *, d: int = 0, workers: int = 1) -> int:
    """Rows per streamed block: ``block_size`` if given, else what fits ``budget``
    bytes (default: the setting ``feature_block_bytes``) for all ``workers`` blocks in flight, each
    holding its ``d`` input columns (float64) and its raw features plus one
    temporary of the same size."""
    if block_size is not None:
        return int(block_size)
    budget = get_config()["feature_block_bytes"] if budget is None else budget
    return max(64, budget // max(1, max(1, workers) * (8 * d + 2 * p * itemsize)))


def fit_bytes(p: int, n: int, d: int, k: int | None, itemsize: int, *, rows: int,
              threads: int, sample_rows: int, whitened: bool = False) -> int:
    """Peak bytes of a fit of a feature map of ``p`` raw features, once the map is built,
    the input rows not counted: the largest of its phases, beside the map itself.

    * the map: its ``d x p`` float64 weights (or landmarks) and their copy in the
      blocks' dtype; ``whitened`` (Nyström, ``W = K_mm^{-1/2}``): also the ``p x p``
      ``K_mm`` and ``W`` (``q = p`` at most), held throughout;
    * the sample's raw features (for the shift, then the outlier cut-offs), in float64
      (from float32 blocks: and the float32 block);
    * :func:`accumulate`: the running ``p x p`` float64 scatter, the sum being formed
      and the scatters in flight (up to ``2 threads`` blocks are held, and the one
      last added; each running thread also has its product in the blocks' dtype and its
      raw block);
    * :func:`solve`: while centring, the scatter, the centred covariance and two
      temporaries (whitened: three, ``W^T C_f W`` being formed); then the scatter, the
      centred covariance, its symmetrised copy (decomposed in place) and the
      eigensolver's workspace, or the ``p x k`` eigenvectors and their three copies
      (reversed, :func:`kpca.solvers.finalize`'s);
    * the fitted subspace: the scatter, the components and the sample's features, or
      its scores (:meth:`kpca.subspace.FittedSubspace.raw_projection`: blocks of the
      sample's features of at most ``preimage_block_bytes``, each with a temporary and
      its scores before and after the offset).

    Parameters
    ----------
    p : int
        Raw features per row.
    n, d : int
        Training rows and input columns.
    k : int or None
        Eigenpairs solved for (``None``: all ``p``).
    itemsize : int
        Bytes of a value of the feature blocks (4 or 8).
    rows : int
        Rows per streamed block (0: the blocks are mapped elsewhere, e.g. on Dask
        workers, and only their summed scatter comes back).
    threads : int
        Threads streaming the blocks.
    sample_rows : int
        Rows of the fit's sample.
    whitened : bool, default=False
        The raw features are followed by a ``p x q`` map ``W`` (Nyström's
        ``K_mm^{-1/2}``, held with ``K_mm``); ``False``: an explicit map (``W = None``,
        ``q = p``).
    """
    sq = 8 * p * p
    kk = p if k is None else max(1, min(int(k), p))
    fixed = 8 * d * p + (itemsize * d * p if itemsize != 8 else 0) + 16 * p
    if whitened:
        fixed += 2 * sq
    sample = sample_rows * p * (8 + (itemsize if itemsize != 8 else 0))
    if rows > 0:
        n_blocks = -(-n // rows)
        held = min(n_blocks, 2 * threads) if threads > 1 else 1
        running = min(n_blocks, threads)
        block = min(rows, n)
        # the running total, the sum being formed (or the part last added: the loop
        # holds it while the next block is mapped) and the held scatters, each running
        # thread's product in the blocks' dtype (one thread too: tracemalloc showed it)
        stream = (sq * (2 + held) + itemsize * p * p * running
                  + block * (running * p * (8 + itemsize) + held * 8 * d))
    else:
        stream = sq
    workspace = lapack_bytes(p, kk, 8)
    if k is not None and p >= get_config()["feature_lanczos_min_size"] and kk <= p // 10:
        workspace = max(workspace, arpack_bytes(p, kk))
    centring = (5 if whitened else 4) * sq
    eigen = max(centring, 3 * sq + max(workspace, 4 * 8 * p * kk))
    # then the scatter is still held while the subspace maps and scores the sample
    b = min(sample_rows, max(1, get_config()["preimage_block_bytes"] // (8 * p)))
    scoring = 8 * (sample_rows * kk + 2 * b * (p + kk))
    subspace = sq + 4 * 8 * p * kk + max(sample, scoring)
    return int(fixed + max(sample, stream, eigen, subspace))


def refuse_beyond_budget(name: str, value: int, need: Callable[[int], int],
                         what: str, otherwise: str = "less data") -> None:
    """Raise a ``ValueError`` before the fit if ``need(value)`` bytes exceed the memory
    budget (:func:`kpca._memory.default_memory_limit`, as ``KernelPCA`` without
    ``memory_limit``), naming the parameter, the bytes, the budget and the largest value
    that fits.

    Parameters
    ----------
    name : str
        The parameter (``n_features``, ``n_landmarks``).
    value : int
        Its value, as the fit uses it.
    need : callable
        ``need(v) -> bytes`` of the fit with the parameter at ``v``; non-decreasing in
        ``v`` (the largest value that fits is found by bisection).
    what : str
        What the fit holds at ``value`` (in the message's parentheses).
    otherwise : str, default="less data"
        What to use where not even ``v = 1`` fits.
    """
    budget = default_memory_limit()
    needed = need(value)
    if needed <= budget:
        return
    lo, hi = 0, value  # the largest value that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if need(mid) <= budget else (lo, mid - 1)
    where = ("the setting memory_budget" if get_config()["memory_budget"] is not None
             else "the default memory budget, a share of this machine's (or its "
             "cgroup's) memory")
    smaller = f"a smaller {name} (at most {lo:,} fits)" if lo else otherwise
    raise ValueError(
        f"{name}={value:,} needs about {format_bytes(needed)} to fit ({what}), above "
        f"{where} ({format_bytes(budget)}). Use {smaller}, or raise the budget to at least "
        f"that with kpca.config_context(memory_budget=...) (bytes, or e.g. '32GB')."
    )


def accumulate(
    raw: Callable[[np.ndarray], np.ndarray],
    blocks: Iterable,
    shift: np.ndarray,
    n_jobs: int | None = 1,
) -> FeatureStats:
    """Sum the statistics of a stream of row blocks.

    Blocks are read lazily and processed on ``n_jobs`` threads (one BLAS thread
    each, so the element-wise kernel loops, which release the GIL, also run in
    parallel); their statistics are added in block order, so the result is
    deterministic. Memory: about ``2 n_jobs`` blocks and their ``p x p`` scatters.

    Parameters
    ----------
    raw : callable
        ``raw(X_block) -> F_block`` of shape (b, p). Must be thread-safe.
    blocks : iterable of ndarray or sparse matrix
        Row blocks, e.g. slices of an array or :meth:`kpca.RowSource.blocks`.
    shift : ndarray of shape (p,)
    n_jobs : int or None, default=1
        Threads (``None`` or -1: all cores; see :func:`kpca.operators.n_threads`).

    Returns
    -------
    FeatureStats
    """
    total = FeatureStats.zeros(shift.shape[0])
    for part in run_stream(lambda Xb: FeatureStats.of_block(raw(Xb), shift), blocks,
                           n_threads(n_jobs)):
        total = total + part
    return total


def accumulate_device(kernel, landmarks: np.ndarray, X, shift: np.ndarray, dtype: np.dtype,
                      rows: int) -> FeatureStats:
    """:func:`accumulate` for landmark features ``k(X, Z)`` of an Array API array,
    on its device.

    Parameters
    ----------
    kernel : Kernel
        One whose :meth:`~kpca.kernels.Kernel.block` takes ``xp``.
    landmarks : ndarray of shape (m, d)
    X : kpca.approx._base.DeviceRows
    shift : ndarray of shape (m,)
    dtype : numpy dtype
        Precision of the feature blocks and their scatter (float32 or float64).
    rows : int
        Rows per block.

    Returns
    -------
    FeatureStats
        On the host; the float64 sums are accumulated on the device.
    """
    from .._array_api import float_dtype, from_host, to_host

    xp, A = X.xp, X.array
    dev, n = A.device, A.shape[0]
    dt = float_dtype(xp, dtype)
    Z = from_host(np.asarray(landmarks, dtype=dtype), xp, dev)
    s = from_host(np.asarray(shift, dtype=dtype), xp, dev)
    m = Z.shape[0]
    total = xp.zeros(m, dtype=xp.float64, device=dev)
    scatter = xp.zeros((m, m), dtype=xp.float64, device=dev)
    for start in range(0, n, rows):
        F = kernel.block(xp.astype(A[start : min(start + rows, n), ...], dt), Z, xp=xp) - s
        scatter = scatter + xp.astype(xp.matrix_transpose(F) @ F, xp.float64)
        total = total + xp.sum(xp.astype(F, xp.float64), axis=0)
    return FeatureStats(n, to_host(total, np.float64), to_host(scatter, np.float64))


@dataclass(frozen=True)
class FeaturePCA:
    """Result of the eigendecomposition of the centred feature covariance.

    Attributes
    ----------
    n : int
        Training rows.
    mean : ndarray of shape (p,)
        Training mean of the raw features (float64).
    covariance_eigenvalues : ndarray of shape (q,)
        Eigenvalues ``lambda`` of ``C = W^T C_f W`` (all, or the top ``k``),
        descending, clipped at 0.
    components : ndarray of shape (q, q) or (q, k)
        Matching unit eigenvectors ``U`` (columns), sign-fixed.
    trace : float
        ``trace(C)``: the total variance of ``phi``.
    """

    n: int
    mean: np.ndarray
    covariance_eigenvalues: np.ndarray
    components: np.ndarray
    trace: float


def solve(stats: FeatureStats, shift: np.ndarray, W: np.ndarray | None,
          k: int | None = None) -> FeaturePCA:
    """Centred covariance of ``phi = f W`` from the statistics, then ``eigh``.

    Parameters
    ----------
    stats : FeatureStats
    shift : ndarray of shape (p,)
    W : ndarray of shape (p, q) or None (identity)
    k : int or None
        Only the top ``k`` eigenpairs are computed: Lanczos (ARPACK) for a few pairs
        of a large covariance, else LAPACK's ``syevx`` subset (``syevr`` is slow on
        the clustered zero eigenvalues of a rank-deficient covariance); ``None``
        computes all ``q``.

    Raises
    ------
    ValueError
        The covariance is not finite: the features overflow.
    """
    n = stats.n
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
        d = stats.total / n
        mean = shift + d
        Cf = stats.scatter / n - np.outer(d, d)
        Cf = 0.5 * (Cf + Cf.T)
        C = Cf if W is None else W.T @ Cf @ W
        C = 0.5 * (C + C.T)
    # features that overflow (e.g. an rbf block of rows near 1e200) would reach LAPACK
    # as NaN and fail there with an unrelated message
    check_finite_kernel(C, "the training rows and the landmarks (or random features)")
    q = C.shape[0]
    trace = float(max(np.trace(C), 0.0))
    lam = None
    lanczos_min = get_config()["feature_lanczos_min_size"]
    if k is not None and q >= lanczos_min and k <= q // 10 and trace > 0:
        # a few wanted pairs of a large covariance: Lanczos (O(q^2) per product)
        # instead of LAPACK's O(q^3) reduction (measured, q = 1000, k = 10: ~30 ms
        # against ~70 ms); LAPACK when ARPACK fails (e.g. a rank below k)
        try:
            v0 = np.random.default_rng(q).standard_normal(q)
            lam, U = eigsh(C, k=k, which="LA", v0=v0, tol=0)
            order = np.argsort(lam)
            lam, U = lam[order], U[:, order]
        except (ArpackError, ArpackNoConvergence):
            lam = None
    if lam is None:
        lam, U = top_eigh(C, q if k is None else k, overwrite=True, driver="evx")
    # C is PSD by construction: negative eigenvalues are round-off (float32 blocks
    # whitened by K_mm^{-1/2}); then the shared post-processing (descending order,
    # deterministic signs, tiny -> 0)
    lam = np.maximum(lam, 0.0)
    res = finalize(EigenResult(lam[::-1].copy(), U[:, ::-1].copy(), solver="eigh"))
    return FeaturePCA(n, mean, np.maximum(res.values, 0.0), res.vectors, trace)


def n_keep(n_components, lam: np.ndarray, trace: float, n: int) -> int:
    """Number of components kept: int (clipped), fraction of variance, or None.

    ``None`` keeps every component with a non-zero eigenvalue; an int is clipped to
    the number of features and of samples; a float in (0, 1) keeps the fewest
    components whose variance sums to at least that fraction of ``trace``.
    """
    q = lam.shape[0]
    positive = int(np.sum(lam > 0))
    if n_components is None:
        return max(1, positive)
    if isinstance(n_components, (int, np.integer)):
        return max(1, min(int(n_components), q, n))
    if trace <= 0 or positive == 0:
        return 1
    cum = np.cumsum(lam) / trace
    return int(min(np.searchsorted(cum, float(n_components) - 1e-12) + 1, max(1, positive)))


def iter_dask_blocks(X) -> Iterable:
    """Delayed row blocks of a 2-D dask array (one column chunk)."""
    X = X.rechunk({1: -1})
    return X.to_delayed().ravel()
