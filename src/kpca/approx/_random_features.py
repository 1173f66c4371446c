"""Random Fourier feature kernel PCA (docs/math.md, "Large n: Nyström and random features")."""

from __future__ import annotations

import logging
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import extend_init
from ..kernels import GAMMA_HEURISTICS, RBF, FourierFeatures, Laplacian, make_kernel
from . import _feature_pca as fp
from ._base import FeatureKernelPCA, FeatureMap

logger = logging.getLogger("kpca")

RFF_KERNELS = ("rbf", "laplacian")


@extend_init(FeatureKernelPCA, n_features=100, kernel="rbf", gamma=None)
class RandomFeatureKernelPCA(FeatureKernelPCA):
    """Kernel PCA with random Fourier features (Rahimi & Recht), streamed over row blocks.

    ``z(x) = sqrt(2/D) cos(W^T x + b)`` with ``b ~ U[0, 2 pi]`` and the columns of
    ``W`` drawn from the kernel's spectral density: ``N(0, 2 gamma I)`` for the RBF
    kernel ``exp(-gamma ||x - y||^2)``, i.i.d. Cauchy with scale ``gamma`` for the
    Laplacian kernel ``exp(-gamma ||x - y||_1)``; ``E[z(x).z(y)] = k(x, y)``. Then
    PCA of ``z`` centred with the TRAINING mean (docs/math.md, "Centring in feature
    space"), accumulated in
    one streamed pass (float64 ``D x D`` covariance): ``O(n D (d + D))`` time,
    ``O(D^2 + block)`` memory. A fit whose peak (four to seven ``D x D`` float64
    matrices, more with many threads) exceeds the memory budget of ``KernelPCA``
    without ``memory_limit`` (the setting ``memory_budget``, by default a share of the
    machine's memory) is refused with a ``ValueError`` before anything is allocated.

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
        below their Monte-Carlo error). Their cost and accuracy: as
        :class:`NystromKernelPCA`.
    n_jobs : int or None, default=None
        As :class:`NystromKernelPCA`.
    random_state : int, RandomState instance or None, default=None
    contamination : 'auto' or float in (0, 0.5], default='auto'
        Threshold of the outlier detector (``predict``), as :class:`NystromKernelPCA`.

    How far the fit is from exact kernel PCA: :meth:`estimate_error`, as
    :class:`NystromKernelPCA`.

    Pre-images: none. Random Fourier features are not expanded over input points,
    so ``inverse_transform`` and ``denoise`` raise an error naming
    :class:`NystromKernelPCA`, whose landmark pre-images apply at the same scale.

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

    if TYPE_CHECKING:  # the signature extend_init generates at run time (see help())
        def __init__(self, *args: Any, **params: Any) -> None: ...

    _parameter_constraints: dict = {
        **FeatureKernelPCA._parameter_constraints,
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "kernel": [StrOptions(set(RFF_KERNELS)), RBF, Laplacian],
        "gamma": [Interval(Real, 0, np.inf, closed="neither"), StrOptions(set(GAMMA_HEURISTICS)),
                  None],
    }

    def _build(self, X, sample, rng, dtype):
        self._check_memory(X, sample.shape[0], np.dtype(dtype).itemsize)
        kernel = make_kernel(self.kernel, gamma=self.gamma).resolve(sample, random_state=rng)
        g = float(kernel.gamma)
        d, D = X.shape[1], int(self.n_features)
        if isinstance(kernel, RBF):
            W = rng.normal(scale=np.sqrt(2.0 * g), size=(d, D))
        else:
            W = g * rng.standard_cauchy(size=(d, D))
        b = rng.uniform(0, 2 * np.pi, size=D)
        return FeatureMap(FourierFeatures(W, b, np.dtype(dtype).name), kernel,
                          fitted={"random_weights_": W, "random_offset_": b})

    def _check_memory(self, X, sample_rows: int, itemsize: int) -> None:
        """Refuse, before any ``n_features``-sized allocation, a fit whose peak
        (:func:`kpca.approx._feature_pca.fit_bytes`: the ``D x D`` float64 covariance
        and its copies, the eigensolver's workspace, the streamed blocks) exceeds the
        memory budget (:func:`kpca.approx._feature_pca.refuse_beyond_budget`)."""
        D = int(self.n_features)
        fp.refuse_beyond_budget(
            "n_features", D, lambda v: self._fit_bytes(X, v, sample_rows, itemsize),
            f"a {D:,} x {D:,} float64 feature covariance, its copies and its "
            "eigendecomposition")

    def _approximate_features(self, rows: np.ndarray) -> np.ndarray:
        return FourierFeatures(self.random_weights_, self.random_offset_, "float64")(rows)
