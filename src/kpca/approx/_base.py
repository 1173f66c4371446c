"""Estimator base shared by :class:`NystromKernelPCA` and :class:`RandomFeatureKernelPCA`.

A subclass only builds its explicit feature map (``_build``) from a small
sample of the training rows; fitting, streaming, Dask input, centring,
component selection and ``transform`` live here (see :mod:`._feature_pca`).
"""

from __future__ import annotations

import logging
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._kernel_pca import FLOAT64_MAX_ROWS
from . import _feature_pca as fp

logger = logging.getLogger("kpca")

#: rows drawn to resolve gamma heuristics and to pick the accumulation shift
SAMPLE_ROWS = 2000
PRECISIONS = ("auto", "float32", "float64")


def _is_int(x: Any) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


def _is_real(x: Any) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


def take_rows(X, idx: np.ndarray):
    """Rows ``idx`` (sorted) of a numpy array, sparse matrix or dask array, in memory."""
    from ..distributed import is_dask_array

    if is_dask_array(X):
        from ..distributed import get_client

        rows = get_client().compute(X[np.sort(idx)]).result()
        _check_finite_chunk(rows)
        return rows
    return X[idx]


class FeatureKernelPCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Kernel PCA through an explicit finite feature map, streamed over row blocks.

    Subclasses implement ``_check_map_params()`` and ``_build(X, n, rng, dtype)``
    which returns ``(feature_map, W)``: a picklable callable giving the raw
    features of a block of rows, shape (b, p), and the ``p x q`` linear map
    applied after it (or ``None``).
    """

    # ------------------------------------------------------------------ validation
    def _check_common(self) -> None:
        nc = self.n_components
        if not (
            nc is None
            or (_is_int(nc) and nc >= 1)
            or (_is_real(nc) and not _is_int(nc) and 0 < nc < 1)
        ):
            raise ValueError(
                "n_components must be None, an integer >= 1, or a float in (0, 1) (fraction "
                f"of variance to explain); got {nc!r}."
            )
        bs = self.block_size
        if not (bs is None or (_is_int(bs) and bs >= 1)):
            raise ValueError(f"block_size must be None or an integer >= 1; got {bs!r}.")
        nj = self.n_jobs
        if not (nj is None or (_is_int(nj) and nj != 0)):
            raise ValueError(f"n_jobs must be None or a non-zero integer; got {nj!r}.")
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"precision must be one of {list(PRECISIONS)}; got {self.precision!r}."
            )

    def _compute_dtype(self, X, sample) -> np.dtype:
        """Dtype of the feature blocks: ``precision``; for ``'auto'``, float32 for
        float32 data or more than ``FLOAT64_MAX_ROWS`` rows, else float64.
        ``sample`` (rows of X) lets subclasses check that float32 is accurate enough."""
        if self.precision == "auto":
            if X.dtype == np.float32 or X.shape[0] > FLOAT64_MAX_ROWS:
                return np.dtype(np.float32)
            return np.dtype(np.float64)
        return np.dtype(self.precision)

    def _validate(self, X, *, reset: bool):
        """Validated numpy/sparse X, or a dask array (not materialised)."""
        from ..distributed import as_dask_array, get_client, is_dask_collection

        if is_dask_collection(X):
            get_client()  # chunk sizes / DataFrame lengths are computed on the cluster too
            X, names = as_dask_array(X)
            if X.ndim != 2:
                raise ValueError(f"Expected a 2-D dask array; got {X.ndim} dimensions.")
            if X.shape[0] < 1 or X.shape[1] < 1:
                raise ValueError(
                    f"Found array with shape {X.shape}; a minimum of 1 sample and 1 feature "
                    "is required."
                )
            if X.dtype not in (np.float32, np.float64):
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
            return X
        return validate_data(
            self,
            X,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            reset=reset,
            ensure_min_samples=1,
        )

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None):
        """Fit the model in one streamed pass over the rows of X.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, dask DataFrame} of shape (n_samples, n_features)
            Training data. A dask collection is processed chunk by chunk on the
            active ``distributed.Client`` (see :func:`kpca.distributed.get_client`).
        y : Ignored

        Returns
        -------
        self
        """
        from ..distributed import get_client, is_dask_array

        self._check_common()
        self._check_map_params()
        X = self._validate(X, reset=True)
        rng = check_random_state(self.random_state)
        n = X.shape[0]
        out_dtype = np.dtype(X.dtype)
        sample_idx = np.sort(rng.choice(n, size=min(n, SAMPLE_ROWS), replace=False))
        sample = take_rows(X, sample_idx)
        dtype = self._compute_dtype(X, sample)
        fmap, W = self._build(X, sample, rng, dtype)
        shift = np.asarray(fmap(sample), dtype=np.float64).mean(axis=0)
        p = shift.shape[0]
        if is_dask_array(X):
            stats = _dask_stats(X, fmap, shift, get_client())
        else:
            rows = fp.block_rows(p, dtype.itemsize, self.block_size)
            stats = fp.accumulate(fmap, X, shift, rows, self.n_jobs)
        nc = self.n_components
        top = min(int(nc), n) if _is_int(nc) else None
        res = fp.solve(stats, shift, W, top)
        k = fp.n_keep(self.n_components, res.covariance_eigenvalues, res.trace, n)
        lam = res.covariance_eigenvalues[:k]
        U = res.components[:, :k]
        self._feature_map = fmap
        self._block_dtype = dtype
        self.mean_ = res.mean
        self.components_ = U.T.astype(out_dtype)
        self._projection = U if W is None else W @ U  # P = W U, (p, k), float64
        self.eigenvalues_ = (n * lam).astype(out_dtype)
        self.explained_variance_ = lam.astype(out_dtype)
        ratio = lam / res.trace if res.trace > 0 else np.zeros_like(lam)
        self.explained_variance_ratio_ = ratio.astype(out_dtype)
        self.n_components_ = k
        self.n_samples_ = n
        logger.info("%s: n=%d, p=%d raw features, q=%d, k=%d", type(self).__name__, n, p,
                    res.components.shape[0], k)
        return self

    def fit_transform(self, X, y=None, **params):
        """Fit, then project the training rows (a second streamed pass).

        Returns
        -------
        X_new : ndarray (or dask array for dask input) of shape (n_samples, n_components_)
        """
        return self.fit(X).transform(X)

    # ------------------------------------------------------------------ transforming
    def transform(self, X):
        """Project X: ``y(t) = (phi(t) - mean phi) U``, with the training mean.

        See docs/math.md, "Centring in feature space" and "Large n: Nyström and
        random features".

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array, dask DataFrame} of shape (n_samples, n_features)

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components_)
            In X's float dtype. For dask input, a lazy dask array with the same row
            chunks (call ``.compute()``; it runs on the active client).
        """
        from ..distributed import is_dask_array

        check_is_fitted(self)
        X = self._validate(X, reset=False)
        dtype = np.dtype(X.dtype)
        if is_dask_array(X):
            import dask

            X = X.rechunk({1: -1})
            # the map and its coefficients enter the graph once, not once per chunk
            fmap, mean, P = (dask.delayed(a, pure=True) for a in
                             (self._feature_map, self.mean_, self._projection))
            return X.map_blocks(
                _project_dask_block, fmap, mean, P, dtype=dtype,
                meta=np.empty((0, 0), dtype), chunks=(X.chunks[0], (self.n_components_,)),
            )
        rows = fp.block_rows(self.mean_.shape[0], self._block_dtype.itemsize, self.block_size)
        out = np.empty((X.shape[0], self.n_components_), dtype=dtype)

        def work(start: int, stop: int) -> None:
            out[start:stop] = project_block(X[start:stop], self._feature_map, self.mean_,
                                            self._projection)

        fp.map_rows(work, X.shape[0], rows, self.n_jobs)
        return out

    # ------------------------------------------------------------------ sklearn glue
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    @property
    def _n_features_out(self) -> int:
        return self.n_components_


def project_block(Xb, fmap, mean: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Scores of one block: ``(f(Xb) - mean) @ P`` in Xb's float dtype, shape (b, k)."""
    dt = np.float32 if getattr(Xb, "dtype", None) == np.float32 else np.float64
    F = np.asarray(fmap(Xb))
    F = F - mean.astype(F.dtype)
    return np.asarray(F @ P.astype(F.dtype), dtype=dt)


def _check_finite_chunk(Xb) -> None:
    """In-memory inputs are validated whole; a dask chunk is checked on its worker."""
    values = Xb.data if sp.issparse(Xb) else Xb
    if not np.all(np.isfinite(values)):
        raise ValueError("Input X contains NaN or infinity (in a chunk of the dask array).")


def _project_dask_block(Xb, fmap, mean: np.ndarray, P: np.ndarray) -> np.ndarray:
    _check_finite_chunk(Xb)
    return project_block(Xb, fmap, mean, P)


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

