"""Nyström kernel PCA (docs/math.md, "Large n: Nyström and random features")."""

from __future__ import annotations

import logging
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import extend_init, kernel_parameters
from .._config import get_config
from ..kernels import (
    KERNELS,
    Kernel,
    Precomputed,
    check_finite_kernel,
    make_kernel,
)
from ..operators import float32_eigen_error, n_threads
from . import _feature_pca as fp
from ._base import FeatureKernelPCA, FeatureMap, inverse_sqrt, take_rows

logger = logging.getLogger("kpca")

LANDMARKS = ("uniform", "kmeans", "leverage")
# the rows k-means clusters when ``landmarks='kmeans'``: the settings
# kmeans_rows_per_landmark and kmeans_max_rows (kpca._config)


class NystromMap:
    """Raw Nyström features of a block: ``k(X_block, Z)``, shape (b, m).

    Picklable (it is shipped to Dask workers); ``prep`` is the kernel's
    column-side state of the landmarks (:meth:`Kernel.prepare`).
    """

    def __init__(self, kernel: Kernel, landmarks: np.ndarray, dtype: Any):
        self.kernel = kernel
        self.landmarks = np.asarray(landmarks, dtype=dtype)
        self.prep = kernel.prepare(self.landmarks, np.dtype(dtype))

    def __call__(self, Xb) -> np.ndarray:
        if sp.issparse(Xb):  # prepared states are for dense rows
            return np.asarray(self.kernel.block(Xb, self.landmarks.astype(Xb.dtype)))
        return np.asarray(self.kernel.block_prepared(Xb, self.prep))


@extend_init(FeatureKernelPCA, n_landmarks=100, landmarks="uniform", kernel="rbf", gamma=None,
             degree=3, coef0=1, kernel_params=None, rcond=None)
class NystromKernelPCA(FeatureKernelPCA):
    """Kernel PCA with the Nyström approximation, streamed over row blocks.

    With ``m`` landmarks ``Z``, the approximate feature map is
    ``phi(x) = K_mm^{-1/2} k(Z, x)`` (so ``phi(x).phi(y) = k(x, Z) K_mm^+ k(Z, y)``,
    the Nyström kernel ``K ~ K_nm K_mm^+ K_mn``). ``K_mm^{-1/2}`` comes from an
    eigendecomposition of ``K_mm`` that drops eigenvalues below ``rcond`` times
    the largest. Centring subtracts the TRAINING mean of ``phi`` (for the fit
    and for new rows), which is exactly kernel PCA of the Nyström kernel matrix
    centred as in docs/math.md, "Centring in feature space". One pass over row
    blocks accumulates the mean and the ``m x m`` covariance (float64); the fit
    costs ``O(n m (d + m))`` time and ``O(m^2 + block)`` memory, ``transform``
    ``O(m (d + k))`` per row. A fit whose peak (seven to nine ``m x m`` float64
    matrices, more with many threads; ``landmarks='leverage'``: six of the kernel
    matrix of its pool of up to ``2 m`` rows) exceeds the memory budget of
    ``KernelPCA`` without ``memory_limit`` (the setting ``memory_budget``, by default a
    share of the machine's memory) is refused with a ``ValueError`` before anything is
    allocated.

    Pre-images (rbf, poly and linear kernels): :meth:`inverse_transform` and
    :meth:`denoise` invert ``P phi(t) = theta + sum_l y_l f_l``, expanded over the
    landmarks (``subspace_``; fixed point or MDS, docs/preimages.md), at ``O(m)``
    kernel evaluations per iteration and point.

    How far the fit is from exact kernel PCA: :meth:`estimate_error` (relative
    eigenvalue errors and subspace sines on an exact sub-problem); the number of
    landmarks for a tolerance: :func:`kpca.selection.landmarks_for_tolerance`.

    Parameters
    ----------
    n_components : int, float in (0, 1) or None, default=None
        Components kept. An int is clipped to the rank of the feature map; a float
        keeps the fewest components whose ``explained_variance_ratio_`` sums to at
        least that fraction; ``None`` keeps all with a non-zero eigenvalue.
    n_landmarks : int, default=100
        Number of landmarks ``m`` (clipped to ``n_samples``). More than fit the memory
        budget: ``ValueError`` naming the largest number that fits.
    landmarks : {'uniform', 'kmeans', 'leverage'}, default='uniform'
        'uniform': ``m`` training rows drawn without replacement. 'kmeans': the
        ``m`` k-means centres of a uniform subsample of ``min(n, 10 m, 20000)``
        rows (k-means++ seeding with one candidate per step, at most 30 Lloyd
        iterations; best accuracy per landmark for smooth kernels). 'leverage': rows
        drawn from a uniform pool of ``min(n, max(2 m, 1000))`` rows with
        probability proportional to their approximate ridge leverage scores in
        the pool, the ridge chosen so the effective dimension is ``m``.
    kernel : str, Kernel or callable, default='rbf'
        As :class:`kpca.KernelPCA` (any vector kernel; 'precomputed' is not
        available: the Nyström method needs ``k(Z, x)`` for any ``x``).
    gamma : float, 'scale', 'median' or None, default=None
        As :class:`kpca.KernelPCA`; heuristics are resolved on a uniform sample of
        2000 rows. The value used is stored in ``gamma_``.
    degree, coef0, kernel_params
        As :class:`kpca.KernelPCA`.
    rcond : float or None, default=None
        Relative cutoff for the eigenvalues of ``K_mm``. ``None``: 1e-10 for float64
        feature blocks, 1e-6 for float32 ones (the float32 error of a feature, amplified by
        ``1/sqrt(s)``, stays below the truncation error it replaces).
    block_size : int or None, default=None
        Rows per streamed block (``None``: blocks of about 64 MB of features).
    precision : {'auto', 'float32', 'float64'}, default='auto'
        Dtype of the feature blocks. ``'auto'``: float32 for float32 data, and for
        more than 4096 rows unless a sampled estimate says float32 kernel values would
        move the eigenvalues by more than 1e-7 (as :class:`kpca.KernelPCA`); float64
        otherwise.
        float32 blocks halve the time of the covariance update; the statistics are
        still accumulated in float64 about a shift (see :mod:`._feature_pca`), so
        eigenvalues stay within ~1e-6 relative of float64 ones; outputs keep the
        input's dtype.
    n_jobs : int or None, default=None
        Threads streaming the row blocks of ``fit`` and ``transform`` (``None`` or
        -1: all cores), each with single-threaded BLAS.
    random_state : int, RandomState instance or None, default=None
        Landmark sampling, k-means and the heuristics' subsample.
    contamination : 'auto' or float in (0, 0.5], default='auto'
        Threshold of the outlier detector (``predict``), as :class:`kpca.KernelPCA`;
        the cut-offs come from the fit's sample of at most 2,000 rows.

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (n_components_,)
        Eigenvalues ``mu_l`` of the centred Nyström kernel matrix (``n`` times the
        feature covariance eigenvalues): on the scale of ``KernelPCA.eigenvalues_``.
    explained_variance_ : ndarray of shape (n_components_,)
        ``mu_l / n``.
    explained_variance_ratio_ : ndarray of shape (n_components_,)
        ``mu_l / trace(K^~)`` where ``K^~`` is the centred Nyström kernel matrix of
        the training data (its trace is the total variance of ``phi``; it is at most
        ``trace(K~)`` of exact KPCA).
    components_ : ndarray of shape (n_components_, q)
        Principal axes in the whitened landmark basis (``q`` = landmarks kept by
        ``rcond``).
    mean_ : ndarray of shape (n_landmarks_,)
        Training mean of ``k(Z, x)``.
    landmarks_ : ndarray of shape (n_landmarks_, n_features)
    n_landmarks_ : int
    normalization_ : ndarray of shape (n_landmarks_, q)
        ``K_mm^{-1/2}`` (the kept part).
    n_components_ : int
    kernel_ : Kernel
    gamma_ : float or None
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from kpca import NystromKernelPCA
    >>> X, _ = make_circles(500, factor=0.3, noise=0.05, random_state=0)
    >>> est = NystromKernelPCA(2, n_landmarks=100, gamma=10, random_state=0).fit(X)
    >>> est.transform(X).shape
    (500, 2)
    """

    if TYPE_CHECKING:  # the signature extend_init generates at run time (see help())
        def __init__(self, *args: Any, **params: Any) -> None: ...

    _device_arrays = True

    _parameter_constraints: dict = {
        **FeatureKernelPCA._parameter_constraints,
        "n_landmarks": [Interval(Integral, 1, None, closed="left")],
        "landmarks": [StrOptions(set(LANDMARKS))],
        **kernel_parameters(set(KERNELS) - {"precomputed", "spectrum"}),
        "rcond": [Interval(Real, 0, 1, closed="left"), None],
    }

    def _build(self, X, sample, rng, dtype):
        kernel = make_kernel(self.kernel, gamma=self.gamma, degree=self.degree,
                             coef0=self.coef0, kernel_params=self.kernel_params)
        if not kernel.requires_vectors or isinstance(kernel, Precomputed):
            raise ValueError(
                f"NystromKernelPCA needs a vector kernel (it evaluates k(landmarks, x) for "
                f"every row); got {kernel!r}. Use kpca.KernelPCA."
            )
        n = X.shape[0]
        m = min(int(self.n_landmarks), n)
        self._check_memory(X, m, sample.shape[0], np.dtype(dtype).itemsize)
        kernel = kernel.resolve(sample, random_state=rng)
        Z = self._select(X, kernel, m, rng)
        if sp.issparse(Z):
            Z = Z.toarray()
        Z = np.asarray(Z, dtype=dtype)
        Kmm = check_finite_kernel(
            np.asarray(kernel.block(Z.astype(np.float64)), dtype=np.float64), "the landmarks")
        Kmm = 0.5 * (Kmm + Kmm.T)
        rcond = self.rcond
        if rcond is None:
            rcond = 1e-6 if dtype == np.float32 else 1e-10
        W, _, _ = inverse_sqrt(Kmm, rcond)
        logger.info("Nystrom: %d landmarks (%s), %d kept by rcond=%g", m, self.landmarks,
                    W.shape[1], rcond)
        return FeatureMap(NystromMap(kernel, Z, dtype), kernel, W, Z, Kmm,
                          {"landmarks_": Z, "n_landmarks_": m, "normalization_": W})

    def _check_memory(self, X, m: int, sample_rows: int, itemsize: int) -> None:
        """Refuse, before the landmarks are chosen, a fit of ``m`` landmarks whose peak
        exceeds the memory budget (:func:`kpca.approx._feature_pca.refuse_beyond_budget`):
        the larger of building the map (:func:`build_bytes`) and the streamed fit
        (:func:`kpca.approx._feature_pca.fit_bytes`, ``K_mm`` and ``K_mm^{-1/2}`` held
        beside the ``m x m`` covariance)."""
        # The model counts all m columns of K_mm^{-1/2} kept: measured (tracemalloc and
        # peak RSS, uniform/kmeans/leverage, 1 and 2 threads, k = 3 and all) it is within
        # a few percent of the peak where rcond keeps them all, and up to about twice it
        # where rcond drops most (a low-rank K_mm): it errs toward refusing.
        n, d = X.shape

        def need(v: int) -> int:
            return max(build_bytes(self.landmarks, n, d, v),
                       self._fit_bytes(X, v, sample_rows, itemsize, whitened=True))

        what = (f"a {m:,} x {m:,} float64 kernel matrix of the landmarks, its inverse "
                "square root, the feature covariance, their copies and eigendecompositions")
        if self.landmarks == "leverage" and m < n:
            r = _pool_rows(n, m)
            what += f"; landmarks='leverage': the {r:,} x {r:,} kernel matrix of its pool"
        if int(self.n_landmarks) > n:
            what += f"; n_landmarks={int(self.n_landmarks):,} is clipped to the {n:,} rows"
        otherwise = "less data"
        if self.landmarks == "leverage":  # its pool has min(n, 1000) rows or more, whatever m
            otherwise = "landmarks='uniform' or 'kmeans', or less data"
        fp.refuse_beyond_budget("n_landmarks", m, need, what, otherwise)

    def _approximate_features(self, rows: np.ndarray) -> np.ndarray:
        # phi^(x) = K_mm^{-1/2} k(Z, x), in float64 whatever the fit's blocks
        Z = np.asarray(self.landmarks_, dtype=np.float64)
        return np.asarray(self.kernel_.block(rows, Z), dtype=np.float64) @ self.normalization_

    def _float32_error(self, X, sample) -> float:
        """float32 kernel values can cost the eigenvalues more than 1e-7 where
        centring cancels most of K (e.g. a linear or polynomial kernel on data far
        from the origin): estimated on the sample, as :class:`kpca.KernelPCA`."""
        kernel = make_kernel(self.kernel, gamma=self.gamma, degree=self.degree,
                             coef0=self.coef0, kernel_params=self.kernel_params)
        if not kernel.requires_vectors:
            return 0.0  # _build raises its clear error
        kernel = kernel.resolve(sample, random_state=0)
        # the estimate scales like 1 / sqrt(rows): from the sample's rows to n
        return float32_eigen_error(kernel, sample, random_state=0) * np.sqrt(
            sample.shape[0] / X.shape[0])

    # ------------------------------------------------------------------ landmarks
    def _select(self, X, kernel, m: int, rng):
        n = X.shape[0]
        if m >= n:
            return take_rows(X, np.arange(n))
        if self.landmarks == "uniform":
            return take_rows(X, np.sort(rng.choice(n, size=m, replace=False)))
        if self.landmarks == "kmeans":
            from sklearn.cluster import KMeans, kmeans_plusplus

            s = _kmeans_rows(n, m)
            S = take_rows(X, np.sort(rng.choice(n, size=s, replace=False)))
            if s == m:
                return S
            seed = rng.randint(2**31 - 1)
            # k-means++ seeding with one candidate per step (sklearn's default of
            # 2 + log m candidates costs most of the time for m in the thousands)
            init, _ = kmeans_plusplus(S, m, random_state=seed, n_local_trials=1)
            km = KMeans(n_clusters=m, init=init, n_init=1, max_iter=30, tol=1e-4,
                        random_state=seed)
            km.fit(S)
            return km.cluster_centers_
        return self._leverage(X, kernel, m, rng)

    def _leverage(self, X, kernel, m: int, rng):
        """Approximate ridge-leverage-score sampling from a uniform pool."""
        n = X.shape[0]
        p = _pool_rows(n, m)
        pool = np.sort(rng.choice(n, size=p, replace=False))
        P = take_rows(X, pool)
        Kp = check_finite_kernel(
            np.asarray(kernel.block(P.astype(np.float64)), dtype=np.float64), "the landmarks")
        s, V = np.linalg.eigh(0.5 * (Kp + Kp.T))
        s = np.maximum(s, 0)
        lam = _ridge_for_dimension(s, m)
        lev = (V**2) @ (s / (s + lam))
        prob = np.maximum(lev, 1e-12)
        prob /= prob.sum()
        chosen = np.sort(rng.choice(p, size=m, replace=False, p=prob))
        return P[chosen]


def _pool_rows(n: int, m: int) -> int:
    """Rows of the uniform pool that ``landmarks='leverage'`` draws ``m`` landmarks from."""
    return min(n, max(2 * m, 1000))


def _kmeans_rows(n: int, m: int) -> int:
    """Rows that ``landmarks='kmeans'`` clusters into ``m`` centres."""
    cfg = get_config()
    return min(n, max(m, min(cfg["kmeans_rows_per_landmark"] * m, cfg["kmeans_max_rows"])))


def build_bytes(landmarks: str, n: int, d: int, m: int) -> int:
    """Peak bytes of building the Nyström map of ``m`` landmarks from ``n`` rows of ``d``
    columns (:meth:`NystromKernelPCA._build`), the input rows not counted.

    The landmarks (as read, in float64 and in the blocks' dtype), and the largest of

    * ``K_mm`` and, in NumPy's ``eigh``, its copy, LAPACK ``syevd``'s ``2 m^2``
      workspace and the eigenvectors (then ``K_mm``, the eigenvectors and two ``m x q``
      copies of their kept columns): ``5 m^2`` values;
    * ``landmarks='leverage'``: the same for the kernel matrix of the pool
      (:func:`_pool_rows`, up to ``2 m`` rows), with its symmetrised copy: ``6 p^2``;
    * ``landmarks='kmeans'``: scikit-learn's copies of the clustered rows and each
      OpenMP thread's distances of a chunk of 256 rows to the ``m`` centres.

    Measured (tracemalloc, which misses NumPy's LAPACK buffers, and the peak RSS):
    within a few percent of ``5 m^2`` and ``6 p^2``.
    """
    sq = 8 * m * m
    peak = 5 * sq
    if m < n and landmarks == "leverage":
        p = _pool_rows(n, m)
        peak = max(peak, 6 * 8 * p * p)
    elif m < n and landmarks == "kmeans":
        s = _kmeans_rows(n, m)
        peak = max(peak, 8 * (3 * s * d + min(256, s) * m * n_threads(None)))
    return 3 * 8 * m * d + peak


def _ridge_for_dimension(s: np.ndarray, m: int) -> float:
    """Ridge ``lam`` with effective dimension ``sum s / (s + lam)`` close to ``m``."""
    smax = float(s.max()) if s.size else 0.0
    if smax <= 0:
        return 1.0
    lo, hi = smax * 1e-14, smax * 1e3
    for _ in range(100):
        mid = np.sqrt(lo * hi)
        if np.sum(s / (s + mid)) > m:
            lo = mid
        else:
            hi = mid
    return float(hi)
