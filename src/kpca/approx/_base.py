"""Estimator base shared by :class:`NystromKernelPCA` and :class:`RandomFeatureKernelPCA`.

A subclass only builds its explicit feature map (``_build``) from a small
sample of the training rows; fitting, streaming, Dask input, centring,
component selection and ``transform`` live here (see :mod:`._feature_pca`).
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from .._array_api import device_namespace, host_dtype, refuse_device, to_host
from .._base import BaseKernelPCA, outlier_statistics
from .._config import get_config
from .._fit import FitResult, commit
from .._rows import RowSource
from ..diagnostics import od_noise
from ..kernels import check_device_kernel
from ..operators import n_threads, storage_dtype
from ..subspace import FittedSubspace
from . import _feature_pca as fp
from ._error import ApproximationError, ExactReference, compare, exact_reference

logger = logging.getLogger("kpca")

# the rows drawn to resolve gamma heuristics, pick the accumulation shift and set the
# outlier cut-offs: the setting approx_sample_rows (kpca._config)


@dataclass(frozen=True)
class DeviceRows:
    """Training rows held as an Array API array (PyTorch, CuPy, ...) on their device.

    The streamed engine sees their shape and host dtype; samples and landmarks come to
    the host (:func:`take_rows`), the feature statistics are accumulated on the device
    (:func:`kpca.approx._feature_pca.accumulate_device`).
    """

    array: Any
    xp: Any

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.array.shape)

    @property
    def ndim(self) -> int:
        return 2

    @property
    def dtype(self) -> np.dtype:
        return host_dtype(self.xp, self.array.dtype)


def take_rows(X, idx: np.ndarray):
    """Rows ``idx`` (sorted) of an array, sparse matrix, dask array, RowSource or
    :class:`DeviceRows` (as a NumPy array)."""
    from ..distributed import is_dask_array

    idx = np.sort(idx)
    if isinstance(X, RowSource):
        return X.take(idx)
    if isinstance(X, DeviceRows):
        rows = X.xp.take(X.array, X.xp.asarray(idx, device=X.array.device), axis=0)
        return to_host(rows, X.dtype)
    if is_dask_array(X):
        from ..distributed import get_client

        rows = get_client().compute(X[idx]).result()
        _check_finite_chunk(rows)
        return rows
    return X[idx]


def row_blocks(X, rows: int):
    """Consecutive row blocks of an array, sparse matrix or RowSource."""
    if isinstance(X, RowSource):
        return X.blocks(rows)
    return (X[s : s + rows] for s in range(0, X.shape[0], rows))


@dataclass(frozen=True)
class FeatureMap:
    """What a subclass's ``_build`` returns.

    Attributes
    ----------
    raw : callable
        Raw features of a block of rows, shape (b, p); picklable, thread-safe.
    kernel : Kernel
        The resolved kernel.
    W : ndarray of shape (p, q) or None
        Linear map applied after ``raw`` (None: identity).
    landmarks : ndarray of shape (p, d) or None
        Expansion points when ``raw`` is ``k(., landmarks)`` (Nyström).
    landmark_kernel : ndarray of shape (p, p) or None
        ``k(landmarks, landmarks)`` (float64).
    fitted : dict
        Fitted attributes of the map (set once the whole fit has succeeded).
    """

    raw: Any
    kernel: Any
    W: np.ndarray | None = None
    landmarks: np.ndarray | None = None
    landmark_kernel: np.ndarray | None = None
    fitted: dict = field(default_factory=dict)


class FeatureKernelPCA(BaseKernelPCA):
    """Kernel PCA through an explicit finite feature map, streamed over row blocks.

    Subclasses declare their parameters (``_parameter_constraints``) and implement
    ``_build(X, sample, rng, dtype)``, which returns a :class:`FeatureMap`: the raw
    features of a block of rows and the linear map applied after them.
    """

    _parameter_constraints: dict = {
        **BaseKernelPCA._parameter_constraints,
        "block_size": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, n_components=None, *, block_size=None, precision="auto", n_jobs=None,
                 random_state=None, contamination="auto"):
        self.n_components = n_components
        self.block_size = block_size
        self.precision = precision
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.contamination = contamination

    #: the fit takes Array API arrays (landmark maps: the kernel against the landmarks is
    #: evaluated on the device); explicit random-feature maps run on NumPy
    _device_arrays = False

    def _validate_device(self, X, xp) -> DeviceRows:
        """An Array API array, checked as ``validate_data`` checks NumPy rows."""
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"Expected a 2-D array with at least 1 sample and 1 feature; got "
                             f"shape {tuple(X.shape)}.")
        self._check_device_rows(X, xp, width=X.shape[1])
        self.n_features_in_ = int(X.shape[1])
        self.__dict__.pop("feature_names_in_", None)
        if not xp.isdtype(X.dtype, "real floating"):
            X = xp.astype(X, xp.float64)
        return DeviceRows(X, xp)

    def _compute_dtype(self, X, sample) -> np.dtype:
        """Dtype of the feature blocks (:func:`kpca.operators.storage_dtype`, with the
        subclass's estimate of float32's eigenvalue error from ``sample``)."""
        return storage_dtype(self.precision, X.dtype, X.shape[0],
                             lambda: self._float32_error(X, sample))

    def _float32_error(self, X, sample) -> float:
        """Eigenvalue error float32 features would cause (0: negligible, as the
        Monte-Carlo error of random features dwarfs it)."""
        return 0.0

    def _validate(self, X, *, reset: bool):
        """Validated numpy/sparse X, a RowSource, or a dask array (not materialised)."""
        from ..distributed import as_dask_array, get_client, is_dask_collection

        if isinstance(X, RowSource):
            names = X.feature_names
        if is_dask_collection(X) or isinstance(X, RowSource):
            if not isinstance(X, RowSource):
                get_client()  # chunk sizes / DataFrame lengths are computed on the cluster
                X, names = as_dask_array(X)
            if X.ndim != 2:
                raise ValueError(f"Expected a 2-D dask array; got {X.ndim} dimensions.")
            if X.shape[0] < 1 or X.shape[1] < 1:
                raise ValueError(
                    f"Found array with shape {X.shape}; a minimum of 1 sample and 1 feature "
                    "is required."
                )
            if X.dtype not in (np.float32, np.float64):
                if isinstance(X, RowSource):
                    raise ValueError(f"a RowSource must give float32 or float64 rows; got "
                                     f"{X.dtype}.")
                X = X.astype(np.float64)
            if reset:
                self.n_features_in_ = X.shape[1]
                if names is not None:
                    self.feature_names_in_ = names
                elif hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
            elif X.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                    f"{self.n_features_in_} features as input."
                )
            elif (names is not None and hasattr(self, "feature_names_in_")
                  and list(names) != list(self.feature_names_in_)):
                raise ValueError(
                    f"The feature names should match those that were passed during fit: "
                    f"got {list(names)[:6]}, expected {list(self.feature_names_in_)[:6]}."
                )
            return X
        return validate_data(
            self,
            X,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            reset=reset,
            ensure_min_samples=1,
        )

    def _validate_new(self, X: Any) -> Any:
        if isinstance(X, RowSource):
            raise ValueError(
                f"{type(self).__name__} reads a RowSource in fit and transform; for the "
                "other methods pass the rows as an array (e.g. one block at a time)."
            )
        return self._validate(X, reset=False)

    # ------------------------------------------------------------------ fitting
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the model in one streamed pass over the rows of X.

        Parameters
        ----------
        X : {array-like, sparse matrix, RowSource, dask array, dask DataFrame} of shape \
(n_samples, n_features)
            Training data. A :class:`kpca.RowSource` (e.g. :func:`kpca.io.open_rows`)
            is read block by block, never whole; a dask collection is processed
            chunk by chunk on the active ``distributed.Client``.
        y : Ignored

        Returns
        -------
        self
        """
        with self._keeping_input_attributes():
            return self._fit(X)

    def _fit(self, X):
        from ..distributed import get_client, is_dask_array

        xp = device_namespace(X)
        if xp is not None and not self._device_arrays:
            refuse_device(X, f"{type(self).__name__}.fit")
        X = self._validate(X, reset=True) if xp is None else self._validate_device(X, xp)
        rng = check_random_state(self.random_state)
        n = X.shape[0]
        out_dtype = np.dtype(X.dtype)
        size = min(n, get_config()["approx_sample_rows"])
        sample = take_rows(X, rng.choice(n, size=size, replace=False))
        dtype = self._compute_dtype(X, sample)
        fmap = self._build(X, sample, rng, dtype)
        shift = np.asarray(fmap.raw(sample), dtype=np.float64).mean(axis=0)
        p = shift.shape[0]
        if isinstance(X, DeviceRows):
            check_device_kernel(fmap.kernel)
            rows = fp.block_rows(p, 8, self.block_size, d=X.shape[1])
            stats = fp.accumulate_device(fmap.kernel, fmap.landmarks, X, shift, dtype, rows)
        elif is_dask_array(X):
            stats = _dask_stats(X, fmap.raw, shift, get_client())
        else:
            # up to two blocks per thread are in flight (read ahead, being mapped)
            rows = fp.block_rows(p, dtype.itemsize, self.block_size, d=X.shape[1],
                                 workers=2 * n_threads(self.n_jobs))
            stats = fp.accumulate(fmap.raw, row_blocks(X, rows), shift, self.n_jobs)
        nc = self.n_components
        top = min(int(nc), n) if isinstance(nc, Integral) else None
        res = fp.solve(stats, shift, fmap.W, top)
        k = fp.n_keep(self.n_components, res.covariance_eigenvalues, res.trace, n)
        lam = res.covariance_eigenvalues[:k]
        U = res.components[:, :k]
        space = self._subspace(fmap, res.mean, U, lam, sample, dtype)
        sd, od = space.distances(*space.raw_projection(sample))
        g = getattr(fmap.kernel, "gamma", None)
        ratio = lam / res.trace if res.trace > 0 else np.zeros_like(lam)
        attrs = {
            **fmap.fitted, "kernel_": fmap.kernel, "gamma_": None if g is None else float(g),
            "mean_": res.mean, "components_": U.T.astype(out_dtype),
            "eigenvalues_": (n * lam).astype(out_dtype),
            "explained_variance_": lam.astype(out_dtype),
            "explained_variance_ratio_": ratio.astype(out_dtype), "n_components_": k,
            "n_samples_": n, "subspace_": space,
            **outlier_statistics(space, sd, od, self.contamination)}
        # the fit has succeeded: now the estimator changes, all at once
        commit(self, FitResult(attrs))
        logger.info("%s: n=%d, p=%d raw features, q=%d, k=%d", type(self).__name__, n, p,
                    res.components.shape[0], k)
        return self

    def _fit_bytes(self, X, p: int, sample_rows: int, itemsize: int, *,
                   whitened: bool = False) -> int:
        """:func:`kpca.approx._feature_pca.fit_bytes` of this fit of X with ``p`` raw
        features, streamed as :meth:`_fit` streams it."""
        from ..distributed import is_dask_array

        n, d = X.shape
        nc = self.n_components
        k = min(int(nc), n) if isinstance(nc, Integral) else None
        threads = n_threads(self.n_jobs)
        # up to two blocks per thread; dask chunks are mapped on the workers and device
        # rows on their device: only the summed scatter comes back
        rows = 0 if is_dask_array(X) or isinstance(X, DeviceRows) else fp.block_rows(
            p, itemsize, self.block_size, d=d, workers=2 * threads)
        return fp.fit_bytes(p, n, d, k, itemsize, rows=rows, threads=threads,
                            sample_rows=sample_rows, whitened=whitened)

    def _subspace(self, fmap: FeatureMap, mean: np.ndarray, U: np.ndarray, lam: np.ndarray,
                  sample, dtype: np.dtype) -> FittedSubspace:
        """The fitted subspace of PCA on ``phi = f W`` (docs/math.md, "The fitted subspace").

        Landmarks (``f = k(., Z)``): ``theta`` is the projection of the training mean
        of ``phi`` on ``span phi(Z)``, ``g = W W^T mean``, and ``C = W U``. An
        explicit map (``W = None``): ``g = mean`` and ``C = U`` over unit vectors.
        """
        kernel = fmap.kernel
        if fmap.landmarks is None:
            F = np.asarray(fmap.raw(sample), dtype=np.float64)
            return FittedSubspace(kernel, None, U, mean, mean, float(mean @ mean), lam,
                                  features=fmap.raw, rows_dtype=dtype.name,
                                  od_noise=od_noise(np.einsum("ij,ij->i", F, F), dtype))
        return landmark_subspace(kernel, fmap.landmarks, fmap.landmark_kernel, fmap.W, mean,
                                 U, lam, od_noise(kernel.diag(sample), dtype), dtype)

    def fit_transform(self, X, y=None, **params):
        """Fit, then project the training rows (a second streamed pass).

        Returns
        -------
        X_new : ndarray (or dask array for dask input) of shape (n_samples, n_components_)
        """
        return self.fit(X).transform(X)

    def transform(self, X):
        """Project X: ``y(t) = (phi(t) - theta) . f_l``, centred with the training mean.

        See docs/math.md, "Large n: Nyström and random features".

        Parameters
        ----------
        X : {array-like, sparse matrix, RowSource, dask array} of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components_)
            In the model's float dtype (that of the training data). For dask input,
            a lazy dask array with the same row chunks (call ``.compute()``; it runs
            on the active client).
        """
        if isinstance(X, RowSource):
            check_is_fitted(self)
            X = self._validate(X, reset=False)  # names and width; blocks are finite
            rows = fp.block_rows(self.subspace_.n, 8, self.block_size, d=X.shape[1])
            return np.concatenate([
                self.subspace_.transform(b, n_jobs=self.n_jobs, dtype=self.eigenvalues_.dtype,
                                         block_bytes=self._block_bytes("transform_block_bytes", 3))
                for b in X.blocks(rows)])
        return super().transform(X)

    # ------------------------------------------------------------------ error estimate
    def estimate_error(self, X, *, n_rows: int | None = None, random_state=0,
                       reference: ExactReference | None = None) -> ApproximationError:
        """Estimate how far this model is from exact kernel PCA of X.

        On ``s`` rows drawn uniformly from ``X`` (the training data, or rows from
        the same distribution), exact KPCA of the rows' centred kernel matrix is
        compared with PCA of the same rows' approximate features (this model's
        landmarks or random features), centred on the rows: the relative errors of
        the ``n_components_`` leading eigenvalues, the sines of the principal angles
        between the two score spaces, and the centred kernel matrix's relative
        error (docs/math.md, "How far from exact KPCA: the error estimate").

        The sub-problem has the same approximation as the fit (the same landmarks
        or features, rows from the same data), so its relative errors estimate the
        fit's; with ``s >= n_samples`` they are the fit's own (the rows are the
        training rows). Where the ``k``-th and ``(k+1)``-th exact eigenvalues are
        close, the exact subspace is itself ill-determined and the sines are
        noisier (docs/math.md).

        Cost, whatever ``n``: ``O(s^2 (d + q))`` for the exact and approximate
        ``s x s`` kernel matrices (``q`` landmarks kept or random features), then
        their ``k`` leading eigenpairs (Lanczos, ``O(s^2)`` a product, for a few
        pairs; LAPACK's ``4 s^3 / 3`` flops for many), and ``O(s^2)`` memory. With
        the default ``s`` (the setting ``approx_error_rows``, 1,000) about 0.1 to
        0.2 s of CPU: little next to a fit of ``n m (d + m)`` flops with ``n`` in
        the hundreds of thousands, more than a fit of a few thousand rows with
        tens of landmarks (pass a smaller ``n_rows`` there).

        Parameters
        ----------
        X : {array-like, sparse matrix, RowSource, dask array} of shape \
(n_samples, n_features)
            Rows to draw the sub-problem from; only the ``s`` drawn rows are read.
        n_rows : int or None, default=None
            ``s`` (clipped to ``n_samples``; at least 2). ``None``: the setting
            ``approx_error_rows``.
        random_state : int, RandomState instance or None, default=0
            The draw of the rows (the estimate is deterministic for an int).
        reference : ExactReference or None, default=None
            A sub-problem already solved (:meth:`error_reference`, of a model of the
            same kernel): compared with instead of drawing one from ``X`` (then
            ``X`` and ``n_rows`` are not read), so that models of several landmark
            counts are measured on the same rows.

        Returns
        -------
        ApproximationError
            ``eigenvalue_error`` (k,), ``subspace_sin`` (k,), ``kernel_error``,
            ``n_rows``; ``max_eigenvalue_error`` and ``max_subspace_sin``.
        """
        check_is_fitted(self)
        if reference is not None:
            if not isinstance(reference, ExactReference):
                raise TypeError("reference must be an ExactReference (from "
                                f"error_reference); got {type(reference).__name__}.")
            return compare(reference, self._approximate_features(reference.rows),
                           check_random_state(random_state))
        rng = check_random_state(random_state)
        ref = self.error_reference(X, n_rows=n_rows, random_state=rng)
        return compare(ref, self._approximate_features(ref.rows), rng)

    def error_reference(self, X, *, n_rows: int | None = None, random_state=0
                        ) -> ExactReference:
        """The exact sub-problem :meth:`estimate_error` compares with: ``s`` rows
        drawn from X, their centred kernel matrix (this model's kernel) and its
        ``n_components_`` leading eigenpairs.

        Parameters are those of :meth:`estimate_error`. Returns an
        :class:`~kpca.approx.ExactReference`, to pass as ``reference`` to the
        :meth:`estimate_error` of models of other landmark counts.
        """
        check_is_fitted(self)
        refuse_device(X, f"{type(self).__name__}.estimate_error")
        if n_rows is None:
            n_rows = get_config()["approx_error_rows"]
        if (not isinstance(n_rows, Integral) or isinstance(n_rows, bool)
                or n_rows < 2):
            raise ValueError(f"n_rows must be an integer >= 2 (rows of the exact "
                             f"sub-problem) or None; got {n_rows!r}.")
        X = self._validate(X, reset=False)
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"estimate_error needs at least 2 rows of X; got {n}.")
        rng = check_random_state(random_state)
        rows = take_rows(X, rng.choice(n, size=min(n, int(n_rows)), replace=False))
        rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
        return exact_reference(self.kernel_, rows, self.n_components_)

    @abstractmethod
    def _approximate_features(self, rows: np.ndarray) -> np.ndarray:
        """The fitted feature map ``phi^`` of ``rows`` (float64), shape (s, q)."""

    def _block_bytes(self, setting: str, copies: int) -> int:
        # blocks of ``block_size`` rows, or what fits the streaming block budget
        # (feature_block_bytes), whatever the budget asked for
        p = self.subspace_.n
        return fp.block_rows(p, 8, self.block_size) * p * 8


def inverse_sqrt(K: np.ndarray, rcond: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``K^{-1/2}`` of a landmark kernel matrix on its eigenvalues above ``rcond``
    times the largest, shape (m, q), and the eigendecomposition ``(s, V)`` of ``K``.

    An all-zero ``K`` keeps one (null) direction, so that the feature map is never
    empty.
    """
    s, V = np.linalg.eigh(K)
    smax = float(s.max()) if s.size else 0.0
    keep = s > max(rcond * smax, np.finfo(np.float64).tiny)
    if not keep.any():
        keep = s >= s.max()  # all-zero kernel: one (null) direction
        s = np.where(keep, 1.0, s)
    return V[:, keep] / np.sqrt(s[keep])[None, :], s, V


def landmark_subspace(kernel, landmarks, Kmm: np.ndarray, W: np.ndarray, mean: np.ndarray,
                      U: np.ndarray, lam: np.ndarray, noise: float, dtype: np.dtype
                      ) -> FittedSubspace:
    """The fitted subspace of PCA on the landmark features ``phi = k(., Z) W``.

    ``theta`` is the projection of the mean of ``phi`` on ``span phi(Z)``,
    ``g = W W^T mean``, and ``C = W U`` (docs/math.md, "The fitted subspace").

    Parameters
    ----------
    landmarks : ndarray of shape (m, d)
    Kmm : ndarray of shape (m, m)
        ``k(Z, Z)`` (float64).
    W : ndarray of shape (m, q)
        ``K_mm^{-1/2}`` (its kept part).
    mean : ndarray of shape (m,)
        Mean of the raw features ``k(Z, x)``.
    U, lam : ndarray of shape (q, k), (k,)
        Principal axes (whitened basis) and variances.
    noise : float
        ``od_noise`` of the model.
    """
    P = W @ U
    g = W @ (W.T @ mean)
    m = Kmm @ g
    scores = Kmm @ P - P.T @ mean
    return FittedSubspace(kernel, landmarks, P, g, m, float(mean @ g), lam, basis_scores=scores,
                          od_noise=noise, rows_dtype=np.dtype(dtype).name)


def _check_finite_chunk(Xb) -> None:
    """In-memory inputs are validated whole; a dask chunk is checked on its worker."""
    values = Xb.data if sp.issparse(Xb) else Xb
    if not np.all(np.isfinite(values)):
        raise ValueError("Input X contains NaN or infinity (in a chunk of the dask array).")


def _block_stats(Xb, fmap, shift: np.ndarray) -> fp.FeatureStats:
    _check_finite_chunk(Xb)
    return fp.FeatureStats.of_block(np.asarray(fmap(Xb)), shift)


def _add(a: fp.FeatureStats, b: fp.FeatureStats) -> fp.FeatureStats:
    return a + b


def _dask_stats(X, fmap, shift: np.ndarray, client) -> fp.FeatureStats:
    """Per-chunk statistics on the workers, summed by a binary tree of tasks."""
    import dask

    blocks = list(fp.iter_dask_blocks(X))
    fmap_d = dask.delayed(fmap, pure=True)
    parts = [dask.delayed(_block_stats, pure=True)(b, fmap_d, shift) for b in blocks]
    while len(parts) > 1:
        parts = [
            dask.delayed(_add, pure=True)(parts[i], parts[i + 1]) if i + 1 < len(parts)
            else parts[i]
            for i in range(0, len(parts), 2)
        ]
    return client.compute(parts[0], retries=2).result()

