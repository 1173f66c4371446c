"""Random Fourier feature kernel PCA (docs/math.md, "Large n: Nyström and random features")."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from sklearn.utils.extmath import safe_sparse_dot

from ..kernels import RBF, Laplacian, check_gamma, make_kernel
from ._base import FeatureKernelPCA, _is_int

logger = logging.getLogger("kpca")

RFF_KERNELS = ("rbf", "laplacian")


class FourierMap:
    """``z(x) = sqrt(2 / D) cos(x W + b)`` for a block of rows, shape (b, D). Picklable."""

    def __init__(self, weights: np.ndarray, offset: np.ndarray, dtype: Any):
        self.weights = np.asarray(weights, dtype=dtype)
        self.offset = np.asarray(offset, dtype=dtype)
        self.scale = np.sqrt(2.0 / weights.shape[1])

    def __call__(self, Xb) -> np.ndarray:
        Z = np.asarray(safe_sparse_dot(Xb, self.weights, dense_output=True))
        Z = Z.astype(self.weights.dtype, copy=False)
        Z += self.offset
        np.cos(Z, out=Z)
        Z *= Z.dtype.type(self.scale)
        return Z


class RandomFeatureKernelPCA(FeatureKernelPCA):
    """Kernel PCA with random Fourier features (Rahimi & Recht), streamed over row blocks.

    ``z(x) = sqrt(2/D) cos(W^T x + b)`` with ``b ~ U[0, 2 pi]`` and the columns of
    ``W`` drawn from the kernel's spectral density: ``N(0, 2 gamma I)`` for the RBF
    kernel ``exp(-gamma ||x - y||^2)``, i.i.d. Cauchy with scale ``gamma`` for the
    Laplacian kernel ``exp(-gamma ||x - y||_1)``; ``E[z(x).z(y)] = k(x, y)``. Then
    PCA of ``z`` centred with the TRAINING mean (docs/math.md, "Centring in feature
    space"), accumulated in
    one streamed pass (float64 ``D x D`` covariance): ``O(n D (d + D))`` time,
    ``O(D^2 + block)`` memory.

    Parameters
    ----------
    n_components : int, float in (0, 1) or None, default=None
        As :class:`NystromKernelPCA`.
    n_features : int, default=100
        Number of random features ``D``.
    kernel : {'rbf', 'laplacian'} or kpca.kernels.RBF / Laplacian, default='rbf'
    gamma : float, 'scale', 'median' or None, default=None
        As :class:`kpca.KernelPCA` (heuristics on a 2000-row sample); stored in ``gamma_``.
    block_size : int or None, default=None
        Rows per streamed block.
    precision : {'auto', 'float32', 'float64'}, default='auto'
        Dtype of the feature blocks. ``'auto'``: float32 for float32 data and for
        more than 4096 rows, float64 otherwise (float32 rounding of the features is far
        below their Monte-Carlo error).
        float32 blocks halve the time of the covariance update; the statistics are
        still accumulated in float64 about a shift (see :mod:`._feature_pca`), so
        eigenvalues stay within ~1e-6 relative of float64 ones; outputs keep the
        input's dtype.
    n_jobs : int or None, default=None
        Threads streaming the row blocks of ``fit`` and ``transform`` (``None`` or
        -1: all cores), each with single-threaded BLAS.
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (n_components_,)
        ``n`` times the eigenvalues of the centred feature covariance: the eigenvalues
        of the centred random-feature kernel matrix ``Z~ Z~^T`` (scale of
        ``KernelPCA.eigenvalues_``).
    explained_variance_, explained_variance_ratio_ : ndarray of shape (n_components_,)
        As :class:`NystromKernelPCA` (ratio to the trace of the centred random-feature
        kernel matrix).
    components_ : ndarray of shape (n_components_, n_features)
    mean_ : ndarray of shape (n_features,)
        Training mean of ``z``.
    random_weights_ : ndarray of shape (n_features_in_, n_features)
    random_offset_ : ndarray of shape (n_features,)
    n_components_ : int
    kernel_ : Kernel
    gamma_ : float
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    """

    def __init__(
        self,
        n_components=None,
        *,
        n_features=100,
        kernel="rbf",
        gamma=None,
        block_size=None,
        precision="auto",
        n_jobs=None,
        random_state=None,
    ):
        self.n_components = n_components
        self.n_features = n_features
        self.kernel = kernel
        self.gamma = gamma
        self.block_size = block_size
        self.precision = precision
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _check_map_params(self) -> None:
        if not (_is_int(self.n_features) and self.n_features >= 1):
            raise ValueError(f"n_features must be an integer >= 1; got {self.n_features!r}.")
        ok = (isinstance(self.kernel, str) and self.kernel in RFF_KERNELS) or isinstance(
            self.kernel, (RBF, Laplacian)
        )
        if not ok:
            raise ValueError(
                f"kernel must be one of {list(RFF_KERNELS)} (or a kpca.kernels.RBF / "
                f"Laplacian) for random Fourier features; got {self.kernel!r}."
            )
        check_gamma(self.gamma)

    def _build(self, X, sample, rng, dtype):
        kernel = make_kernel(self.kernel, gamma=self.gamma)
        self.kernel_ = kernel.resolve(sample, random_state=rng)
        g = float(self.kernel_.gamma)
        self.gamma_ = g
        d, D = X.shape[1], int(self.n_features)
        if isinstance(self.kernel_, RBF):
            W = rng.normal(scale=np.sqrt(2.0 * g), size=(d, D))
        else:
            W = g * rng.standard_cauchy(size=(d, D))
        b = rng.uniform(0, 2 * np.pi, size=D)
        self.random_weights_ = W
        self.random_offset_ = b
        return FourierMap(W, b, dtype), None
