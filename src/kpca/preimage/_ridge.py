"""Learned pre-image (Bakir, Weston & Schoelkopf 2004): kernel ridge from scores to inputs."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy import linalg

from .._config import get_config
from ..kernels import Anova, Kernel


def score_space_kernel(kernel: Kernel) -> Kernel:
    """The kernel used on the score space (k dims): the fitted one, minus any
    per-input-variable parameter (the ANOVA weights belong to the input space)."""
    if isinstance(kernel, Anova):
        return Anova(gamma=kernel.gamma)
    return kernel


def fit_ridge_preimage(
    kernel: Kernel, Y: np.ndarray, X, alpha: float
) -> np.ndarray:
    """Dual coefficients of the kernel ridge map ``scores -> inputs``.

    Parameters
    ----------
    kernel : Kernel
        Kernel on the score space.
    Y : ndarray of shape (n, k)
        Training scores.
    X : array-like or sparse of shape (n, d)
        Training inputs.
    alpha : float
        Ridge penalty.

    Returns
    -------
    dual_coef : ndarray of shape (n, d)
        Solves ``(K_Y + alpha I) C = X``.
    """
    n = Y.shape[0]
    K = kernel.block(Y)
    K.flat[:: n + 1] += alpha
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    try:
        return linalg.solve(K, Xd, assume_a="pos", check_finite=False)
    except linalg.LinAlgError:
        # K + alpha*I is positive definite in exact arithmetic; Cholesky can still
        # fail when alpha is tiny next to the kernel's scale (e.g. a poly kernel on
        # large scores). A least-squares solve is then the stable answer.
        if not np.all(np.isfinite(K)):
            raise ValueError(
                "the learned pre-image kernel on the scores has non-finite values; "
                "scale the data or change the kernel parameters."
            ) from None
        return linalg.lstsq(K, Xd, check_finite=False)[0].astype(K.dtype, copy=False)


def ridge_preimage(kernel: Kernel, Y: np.ndarray, Y_fit: np.ndarray, dual_coef: np.ndarray,
                   block_bytes: int | None = None) -> np.ndarray:
    """Pre-images ``K(Y, Y_fit) @ dual_coef``.

    Parameters
    ----------
    kernel : Kernel
        Kernel on the score space.
    Y : ndarray of shape (m, k)
        Scores to invert.
    Y_fit : ndarray of shape (n, k)
        Training scores.
    dual_coef : ndarray of shape (n, d)
        From :func:`fit_ridge_preimage`.
    block_bytes : int, default=None
        Memory for one (points x training rows) kernel block; the points are
        processed in row blocks of that size (default: the setting
        ``preimage_block_bytes``, kpca._config).

    Returns
    -------
    ndarray of shape (m, d)
    """
    Y = np.asarray(Y, dtype=Y_fit.dtype)
    m, n = Y.shape[0], Y_fit.shape[0]
    if block_bytes is None:
        block_bytes = get_config()["preimage_block_bytes"]
    rows = max(1, block_bytes // (8 * max(1, n)))
    out = np.empty((m, dual_coef.shape[1]), dtype=np.result_type(Y_fit.dtype, dual_coef.dtype))
    for a0 in range(0, m, rows):
        out[a0 : a0 + rows] = kernel.block(Y[a0 : a0 + rows], Y_fit) @ dual_coef
    return out
