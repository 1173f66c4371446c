"""Distance-based closed-form pre-image (Kwok & Tsang 2003).

1. Feature-space squared distances from ``P phi(t)`` to the training points,
   ``d~_j^2 = ||y||^2 - 2 y . s_j + K~_jj`` (scores only, see :mod:`._base`); keep
   the ``n_neighbors`` nearest (blocked running top-k).
2. Turn them into input-space squared distances through the kernel:

   * RBF: ``d^2 = -(1/g) log(1 - d~^2 / 2)`` (argument clipped to ``(0, 1]``);
   * linear: ``d^2 = d~^2``;
   * polynomial ``(g <x, y> + c)^p``: with ``k(z, z) ~ ||P phi(t)||^2`` the inner
     products ``k(z, x_j) = (||P phi(t)||^2 + K_jj - d~_j^2) / 2`` are inverted,
     ``<z, x_j> = (k^(1/p) - c) / g`` (real p-th root; negative values clipped to 0
     for even or fractional p), and ``d^2 = ||z||^2 + ||x_j||^2 - 2 <z, x_j>``.

3. MDS step: centre the neighbours ``N`` (k x d) on their mean, ``N_c = U S V^T``;
   neighbour j has local coordinates ``u_j S``, with squared norms ``d0_j^2``. The
   point whose squared distances to them are ``d_j^2`` has local coordinates
   ``-(1/2) S^-1 U^T (d^2 - d0^2)``; back in input space,
   ``z = mean(N) + (-(1/2) S^-1 U^T (d^2 - d0^2)) V^T``. Directions with singular
   values below ``rcond * s_max`` are left out (the pre-image stays in the
   neighbours' affine hull).

All points are solved at once with a batched SVD of shape (m, k, d) -- the
neighbours only, never (m, n, d).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array_api import device_namespace
from .._config import get_config
from ..kernels import RBF, Linear, Polynomial
from ..subspace import FittedSubspace
from ._base import PreimageInfo
from ._device import DeviceSpace, as_device_space
from ._geometry import HostSpace, host_space

#: kernels the distance-based pre-image supports (the distance map is invertible)
MDS_KERNELS = ("rbf", "poly", "linear")


def check_mds_kernel(kernel) -> None:
    """Raise ``ValueError`` unless the kernel's distance map can be inverted."""
    if not isinstance(kernel, (RBF, Polynomial, Linear)):
        raise ValueError(
            f"method='mds' supports the kernels {list(MDS_KERNELS)} (their feature-space "
            "distances determine input-space distances); got "
            f"{getattr(kernel, 'name', '') or type(kernel).__name__!r}. Use method='ridge' "
            "(fit with fit_inverse_transform=True) for other kernels."
        )


def _root(x: Any, p: float, xp: Any = np) -> Any:
    """Real ``x^(1/p)``: sign-preserving for odd integer ``p``, else ``max(x, 0)^(1/p)``."""
    if p == int(p) and int(p) % 2 == 1:
        return xp.sign(x) * xp.abs(x) ** (1.0 / p)
    return xp.clip(x, 0.0, None) ** (1.0 / p)


def input_sqdist(space: HostSpace | DeviceSpace, Y: Any, idx: Any, fd2: Any) -> Any:
    """Input-space squared distances from the pre-image to the neighbours ``idx``.

    Written once for the host and the device: ``space`` is a
    :class:`~kpca.preimage.HostSpace` with NumPy arrays, or a
    :class:`~kpca.preimage.DeviceSpace` with arrays of its namespace.

    Parameters
    ----------
    space : HostSpace or DeviceSpace
    Y : array of shape (m, k)
        Scores.
    idx : array of int, shape (m, q)
        Neighbour indices (training rows).
    fd2 : array of shape (m, q)
        Their feature-space squared distances to ``P phi(t)``.

    Returns
    -------
    array of shape (m, q), >= 0
    """
    xp = _namespace(space)
    kernel = space.kernel
    check_mds_kernel(kernel)
    if isinstance(kernel, Linear):
        return fd2 * 1.0  # (a new array)
    if isinstance(kernel, RBF):
        arg = xp.clip(1.0 - 0.5 * fd2, float(xp.finfo(fd2.dtype).smallest_normal), 1.0)
        return -xp.log(arg) / float(kernel.gamma)
    g, c, p = float(kernel.gamma), float(kernel.coef0), float(kernel.degree)
    N = xp.reshape(space.take(xp.reshape(idx, (-1,))), tuple(idx.shape) + (space.n_features,))
    xx = xp.sum(N * N, axis=2)
    kxx = (g * xx + c) ** p
    pn = space.proj_sqnorm(Y)
    inner = 0.5 * (pn[:, None] + kxx - fd2)
    zx = (_root(inner, p, xp) - c) / g
    zz = (_root(pn, p, xp) - c) / g
    return xp.clip(zz[:, None] + xx - 2.0 * zx, 0.0, None)


def mds_from_distances(N: Any, d2: Any, rcond: float = 1e-6) -> Any:
    """Points whose squared distances to the rows of each ``N[a]`` are ``d2[a]``.

    Parameters
    ----------
    N : array of shape (m, q, d)
        Neighbours of each point (NumPy, or any Array API namespace).
    d2 : array of shape (m, q)
        Squared input-space distances to them.
    rcond : float
        Relative cut-off on the neighbours' singular values.

    Returns
    -------
    array of shape (m, d), N's namespace
    """
    xp = device_namespace(N) or np
    mean = xp.mean(N, axis=1)
    Nc = N - mean[:, None, :]
    U, s, Vt = xp.linalg.svd(Nc, full_matrices=False)  # (m,q,r), (m,r), (m,r,d)
    d02 = xp.sum(U * U * (s * s)[:, None, :], axis=2)  # ||u_j S||^2
    keep = s > rcond * s[:, :1]
    one = xp.ones_like(s)
    inv = xp.where(keep, one / xp.where(keep, s, one), 0.0 * one)
    local = -0.5 * inv * xp.sum(U * (d2 - d02)[:, :, None], axis=1)  # (m, r)
    return mean + xp.sum(local[:, :, None] * Vt, axis=1)


def _namespace(space: Any) -> Any:
    """The namespace of the pre-image geometry ``space`` (NumPy for a HostSpace)."""
    return space.xp if isinstance(space, DeviceSpace) else np


def mds_preimage(
    space: FittedSubspace | HostSpace | DeviceSpace,
    Y: np.ndarray,
    *,
    n_neighbors: int = 10,
    rcond: float = 1e-6,
    block_bytes: int | None = None,
) -> tuple[np.ndarray, PreimageInfo]:
    """Distance-based pre-images (Kwok & Tsang 2003).

    Parameters
    ----------
    space : FittedSubspace, HostSpace or DeviceSpace
        The fitted subspace, or its pre-image geometry on the host or a device.
    Y : array of shape (m, k)
        Scores on the ``space.k`` components. An Array API array (PyTorch, CuPy, ...):
        computed on its device, in its precision, and returned there.
    n_neighbors : int, default=10
        Training points used to locate each pre-image (clipped to ``n``). The
        result lies in their affine hull: for exact recovery of a d-dimensional
        point, at least ``d + 1`` neighbours in general position are needed.
    rcond : float, default=1e-6
        Singular values of the centred neighbours below ``rcond * s_max`` are
        treated as zero.
    block_bytes : int, default=None
        Memory for one (points x training rows) block of the neighbour search
        (default: the setting ``preimage_block_bytes``, kpca._config).

    Returns
    -------
    Z : array of shape (m, d)
        float64 NumPy for NumPy scores, else Y's namespace, device and precision.
    info : PreimageInfo
    """
    check_mds_kernel(space.kernel)
    ds, xp = as_device_space(space, Y)
    d = space.n_features
    if ds is None:
        space = host_space(space)
        Y = np.asarray(Y, dtype=np.float64)
        Z = np.empty((Y.shape[0], d))
        xp = np
    else:  # on Y's device (docs/scaling.md), in its precision
        space, Y = ds, xp.astype(Y, ds.dtype)
        Z = xp.empty((Y.shape[0], d), dtype=ds.dtype, device=ds.device)
    m = Y.shape[0]
    q = min(int(n_neighbors), space.n)
    if block_bytes is None:
        block_bytes = get_config()["preimage_block_bytes"]
    # neighbour tensors (rows, q, d) and the search's (rows, block) blocks are kept
    # near block_bytes
    rows = max(1, min(block_bytes // (8 * q * max(d, 1) * 3), space.row_chunk(block_bytes)))
    for a0 in range(0, m, rows):
        Ya = Y[a0 : min(a0 + rows, m), ...]
        idx, fd2 = space.nearest(Ya, q, block_bytes)
        d2 = input_sqdist(space, Ya, idx, fd2)
        N = xp.reshape(space.take(xp.reshape(idx, (-1,))), tuple(idx.shape) + (d,))
        Z[a0 : min(a0 + rows, m), ...] = mds_from_distances(N, d2, rcond)
    return Z, PreimageInfo.closed_form("mds", m)
