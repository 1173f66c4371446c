"""Learned pre-image (Bakir, Weston & Schoelkopf 2004): kernel ridge from scores to inputs."""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy import linalg

from .._array_api import device_namespace
from .._config import get_config
from .._parallel import sized_threads
from ..kernels import Anova, Kernel
from ._base import PreimageInfo
from ._geometry import HostSpace

logger = logging.getLogger("kpca")


def score_space_kernel(kernel: Kernel) -> Kernel:
    """The kernel used on the score space (k dims): the fitted one, minus any
    per-input-variable parameter (the ANOVA weights belong to the input space)."""
    if isinstance(kernel, Anova):
        return Anova(gamma=kernel.gamma)
    return kernel


_NON_FINITE = ("the learned pre-image kernel on the scores has non-finite values; "
               "scale the data or change the kernel parameters.")


def fit_ridge_preimage(
    kernel: Kernel, Y: np.ndarray, X, alpha: float
) -> np.ndarray:
    """Dual coefficients of the kernel ridge map ``scores -> inputs``.

    Parameters
    ----------
    kernel : Kernel
        Kernel on the score space.
    Y : ndarray of shape (n, k)
        Training scores. An Array API array (PyTorch, CuPy, ...): ``K_Y`` is formed
        and factored on its device (:func:`_fit_on_device`), and ``X`` must be an
        array of the same namespace, device and dtype.
    X : array-like or sparse of shape (n, d)
        Training inputs.
    alpha : float
        Ridge penalty.

    Returns
    -------
    dual_coef : ndarray of shape (n, d)
        Solves ``(K_Y + alpha I) C = X``; in Y's namespace and on its device for an
        Array API ``Y``.
    """
    xp = device_namespace(Y)
    if xp is not None:
        return _fit_on_device(kernel, Y, X, alpha, xp)
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
            raise ValueError(_NON_FINITE) from None
        return linalg.lstsq(K, Xd, check_finite=False)[0].astype(K.dtype, copy=False)


def _fit_on_device(kernel: Kernel, Y: Any, X: Any, alpha: float, xp: Any) -> Any:
    """:func:`fit_ridge_preimage` on Y's device: ``K_Y + alpha I`` formed there (one
    n x n array, never copied to the host) and solved by its Cholesky factor (PyTorch,
    CuPy) or the namespace's ``linalg.solve``; where the factorisation fails (``K_Y +
    alpha I`` is positive definite only in exact arithmetic: tiny ``alpha`` next to the
    kernel's scale) the minimum-norm least-squares solution from ``linalg.eigh``, with
    the host's ``lstsq`` cut-off (eps times the largest eigenvalue)."""
    X = xp.astype(X, Y.dtype)
    n = Y.shape[0]
    K = _add_to_diagonal(xp, kernel.block(Y, Y, xp=xp), alpha)
    if not bool(xp.all(xp.isfinite(K))):
        raise ValueError(_NON_FINITE)
    C = _solve_positive(xp, K, X)
    if C is not None:
        return C
    logger.debug("learned pre-image: K + alpha I not positive definite in %s; "
                 "least-squares solve (n = %d)", K.dtype, n)
    w, V = xp.linalg.eigh(K)
    cut = float(xp.finfo(K.dtype).eps) * float(xp.max(xp.abs(w)))
    keep = xp.abs(w) > cut
    one = xp.ones_like(w)
    winv = xp.where(keep, one / xp.where(keep, w, one), 0.0 * one)
    return V @ (winv[:, None] * (xp.matrix_transpose(V) @ X))


def _add_to_diagonal(xp: Any, K: Any, alpha: float) -> Any:
    """``K + alpha I``, in place where the library allows it (no second n x n array)."""
    import array_api_compat

    if array_api_compat.is_torch_array(K):
        K.diagonal().add_(alpha)
        return K
    if array_api_compat.is_cupy_array(K) and K.flags.c_contiguous:
        K.ravel()[:: K.shape[0] + 1] += alpha
        return K
    return K + alpha * xp.eye(K.shape[0], dtype=K.dtype, device=K.device)


def _solve_positive(xp: Any, K: Any, B: Any) -> Any | None:
    """``K^-1 B`` for a symmetric positive definite ``K`` on its device, by a Cholesky
    factor where the library has a triangular solve (PyTorch; CuPy with cupyx), else by
    the standard ``linalg.solve``; ``None`` where the factorisation fails or the result
    is not finite."""
    import array_api_compat

    if array_api_compat.is_torch_array(K):
        import torch

        L, info = torch.linalg.cholesky_ex(K)
        if int(info) != 0:
            return None
        C = torch.cholesky_solve(B, L)
    elif array_api_compat.is_cupy_array(K):
        import cupy
        import cupyx
        from cupyx.scipy.linalg import solve_triangular

        try:
            with cupyx.errstate(linalg="raise"):  # (CuPy's default: NaNs, no error)
                L = cupy.linalg.cholesky(K)
        except np.linalg.LinAlgError:
            return None
        C = solve_triangular(L, solve_triangular(L, B, lower=True), lower=True, trans="T")
    else:
        try:
            C = xp.linalg.solve(K, B)
        except Exception:  # the namespace's own LinAlgError (singular in round-off)
            return None
    return C if bool(xp.all(xp.isfinite(C))) else None


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


def learned_preimage(space: Any, kernel: Kernel, Y: np.ndarray, Y_fit: np.ndarray,
                     dual_coef: np.ndarray, *, q: int | None = None,
                     return_info: bool = False, block_bytes: int | None = None):
    """The learned pre-image of NumPy scores ``Y`` from a fitted model (its
    ``inverse_transform(method='ridge')``): :func:`ridge_preimage` with the checks of
    its input, and with ``return_info`` the residual on the first ``q`` components.

    Parameters
    ----------
    space : FittedSubspace
        The model's ``subspace_`` (for the residual).
    kernel : Kernel
        The fitted kernel (``kernel_``); the score space's is :func:`score_space_kernel`.
    Y : ndarray of shape (m, k)
        Scores to invert, one column per fitted component.
    Y_fit : ndarray of shape (n, k)
        Training scores (``X_transformed_fit_``).
    dual_coef : ndarray of shape (n, d)
        From :func:`fit_ridge_preimage` (``dual_coef_``).
    q : int, default=None
        Components the residual is measured on (``denoise``; None: all ``k``).
    return_info : bool, default=False
        Also return a :class:`PreimageInfo`.
    block_bytes : int, default=None
        As :func:`ridge_preimage`'s.

    Returns
    -------
    Z : ndarray of shape (m, d)
    info : PreimageInfo
        Only with ``return_info=True``.
    """
    k = Y_fit.shape[1]
    if Y.ndim != 2 or Y.shape[1] != k:
        raise ValueError(
            f"inverse_transform expects scores of shape (n_samples, {k}); got shape "
            f"{Y.shape}.")
    if not np.all(np.isfinite(Y)):
        raise ValueError("inverse_transform: the scores contain NaN or infinity.")
    Z = ridge_preimage(score_space_kernel(kernel), Y, Y_fit, dual_coef, block_bytes)
    if not return_info:
        return Z
    q = k if q is None else q
    residual = HostSpace(space.truncate(q)).residual(np.asarray(Z, dtype=np.float64),
                                                     np.asarray(Y[:, :q], dtype=np.float64))
    return Z, PreimageInfo.closed_form("ridge", Z.shape[0], residual)


class RidgeGCV(NamedTuple):
    """A ridge pre-image map with an intercept, its penalty chosen by GCV.

    The pre-image of scores y is ``intercept + kernel.block(y, Y) @ dual_coef``.

    Attributes
    ----------
    dual_coef : ndarray of shape (m, d)
    intercept : ndarray of shape (d,)
        The training inputs' mean.
    alpha : float
        The chosen penalty.
    alphas : ndarray of shape (n_alphas,)
        The grid searched.
    gcv : ndarray of shape (n_alphas,)
        GCV(alpha) on the grid (``inf`` where the residual degrees of freedom vanish).
    """

    dual_coef: np.ndarray
    intercept: np.ndarray
    alpha: float
    alphas: np.ndarray
    gcv: np.ndarray


def gcv_ridge_preimage(kernel: Kernel, Y: np.ndarray, X: np.ndarray,
                       alpha: float | None = None) -> RidgeGCV:
    """The learned pre-image with an intercept, its penalty chosen by generalized
    cross-validation (docs/math.md, "Choosing gamma and the kernel without labels").

    Solves ``(K_Y + alpha I) C = X - mean(X)`` with ``K_Y = kernel.block(Y)``, alpha
    minimising ``GCV(alpha) = m ||(I - H) Xc||^2 / (tr(I - H) - 1)^2`` (Golub, Heath &
    Wahba 1979; ``H = K_Y (K_Y + alpha I)^-1``, the intercept counted as one degree of
    freedom) over a log grid from ``sqrt(eps) * max eigenvalue`` (K_Y + alpha I then
    has a condition number <= 1/sqrt(eps)) to 10 times their mean, with the setting
    ``preimage_gcv_points_per_decade`` points a decade. One eigendecomposition of K_Y
    gives GCV at every alpha and the coefficients at the chosen one.

    Parameters
    ----------
    kernel : Kernel
        Kernel on the score space (:func:`score_space_kernel`).
    Y : ndarray of shape (m, k)
        Training scores.
    X : ndarray of shape (m, d)
        Training inputs.
    alpha : float, default=None
        A fixed penalty instead of GCV's (``gcv`` is then GCV at that alpha).

    Returns
    -------
    RidgeGCV
    """
    m = Y.shape[0]
    Xd = np.asarray(X, dtype=np.float64)
    K = np.asarray(kernel.block(np.asarray(Y, dtype=np.float64)), dtype=np.float64)
    if not np.all(np.isfinite(K)):
        raise ValueError("the learned pre-image kernel on the scores has non-finite values; "
                         "scale the data or change the kernel parameters.")
    # the tridiagonal reduction's matrix-vector products are the synchronisation
    # points: threads sized by their 2 m^2 flops (one thread up to m ~ 5,800)
    with sized_threads(2.0 * m * m):
        s, V = linalg.eigh(K, driver="evd", check_finite=False)
    s = np.maximum(s, 0.0)  # K_Y is positive semi-definite: negatives are rounding
    intercept = Xd.mean(axis=0)
    Q = V.T @ (Xd - intercept)
    q2 = np.einsum("ij,ij->i", Q, Q)
    if alpha is None:
        mean_eig = s.sum() / m
        # K_Y + alpha I keeps a condition number <= 1/sqrt(eps): C, and the criterion,
        # are then reproducible to ~sqrt(eps) whatever rounding the scores carry (at
        # the rounding level m eps s_max they moved by 1e-3 between two eigensolvers)
        low = max(np.sqrt(np.finfo(np.float64).eps) * s.max(initial=0.0), 1e-300)
        high = max(10.0 * mean_eig, 10.0 * low)
        per = get_config()["preimage_gcv_points_per_decade"]
        alphas = np.geomspace(low, high, int(np.ceil(per * np.log10(high / low))) + 1)
    else:
        alphas = np.array([float(alpha)])
    with np.errstate(divide="ignore", invalid="ignore"):
        F = alphas[:, None] / (s[None, :] + alphas[:, None])  # eigenvalues of I - H
        rss = (F * F) @ q2
        dof = F.sum(axis=1) - 1.0
        gcv = np.where(dof > 0, m * rss / np.where(dof > 0, dof, 1.0) ** 2, np.inf)
    best = int(np.argmin(gcv)) if alpha is None else 0
    a = float(alphas[best])
    with np.errstate(divide="ignore"):
        inv = np.where(s + a > 0, 1.0 / (s + a), 0.0)
    return RidgeGCV(V @ (Q * inv[:, None]), intercept, a, alphas, gcv)
