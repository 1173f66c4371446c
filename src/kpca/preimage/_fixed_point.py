"""Fixed-point pre-image iteration (Mika et al. 1999), vectorised over many points.

The pre-image of ``P phi(t) = sum_i gamma_i phi(x_i)`` minimises
``rho(z) = k(z, z) - 2 sum_i gamma_i k(z, x_i)``. Setting the gradient to zero:

* RBF, ``k = exp(-g ||z - x||^2)`` (``k(z, z) = 1``)::

      z <- sum_i gamma_i k(z, x_i) x_i / sum_i gamma_i k(z, x_i)

* polynomial, ``k = (g <z, x> + c)^p``::

      z <- sum_i gamma_i (g <z, x_i> + c)^(p-1) x_i / (g ||z||^2 + c)^(p-1)

* linear (and polynomial of degree 1): ``z = sum_i gamma_i x_i`` in one step,
  which is exact: ``P phi(t)`` lies in input space.

The iteration runs for all points at once on an active set (converged points
stop), evaluating the kernel against the training rows in column blocks, so the
largest temporary is one (m, block) matrix: never (m, n, d). The expansion
coefficients ``gamma`` of a chunk of points are computed once and reused by every
iteration when they fit in one block (``chunk * n * 8 <= block_bytes``), else
recomputed per block.

Stopping rule: ``||z_new - z|| <= tol * scale`` with ``scale`` the kernel width
``sigma = 1/sqrt(2 g)`` for RBF (capped by the data's spread) and the data's
spread ``sqrt(trace Cov X)`` otherwise. When the denominator vanishes
(``|den| <= 1e-10 * sum_i |w_i|``, e.g. a start far from every training point,
where every ``k(z, x_i)`` underflows) or the update is not finite, the point is
restarted once from the training point nearest to ``P phi(t)`` in feature space;
if that fails too, it keeps its last finite iterate and is reported as not
converged. The result is never NaN.
"""

from __future__ import annotations

import logging

import numpy as np

from .._array_api import device_namespace, from_host
from .._config import get_config
from ..kernels import RBF, Linear, Polynomial
from ..subspace import FittedSubspace
from ._base import PreimageInfo
from ._device import DeviceSpace, as_device_space, fixed_point_device
from ._geometry import HostSpace, host_space

logger = logging.getLogger("kpca")

#: kernels the fixed-point iteration supports
FIXED_POINT_KERNELS = ("rbf", "poly", "linear")
_VANISH = 1e-10
# the points iterated together (each against column blocks of the training rows): the
# setting fixed_point_chunk_rows (kpca._config)


def check_fixed_point_kernel(kernel) -> None:
    """Raise ``ValueError`` unless the fixed-point iteration supports ``kernel``."""
    if not isinstance(kernel, (RBF, Polynomial, Linear)):
        raise ValueError(
            f"method='fixed_point' supports the kernels {list(FIXED_POINT_KERNELS)}; got "
            f"{getattr(kernel, 'name', '') or type(kernel).__name__!r}. Use method='ridge' "
            "(fit with fit_inverse_transform=True) for other kernels."
        )


def _data_scale(space: HostSpace, block_bytes: int | None = None) -> float:
    """``sqrt(trace Cov X)``: the spread of the training inputs (1 if degenerate)."""
    total = 0.0
    mean = np.zeros(space.n_features)
    blocks = list(space.column_blocks(1, block_bytes))
    for j0, j1 in blocks:
        mean += space.rows(j0, j1).sum(axis=0)
    mean /= space.n
    for j0, j1 in blocks:
        total += float(np.sum((space.rows(j0, j1) - mean) ** 2))
    s = np.sqrt(total / space.n)
    return s if np.isfinite(s) and s > 0 else 1.0


def _step(space: HostSpace, prep, Z: np.ndarray, Y: np.ndarray, block_bytes: int,
          G: np.ndarray | None = None, rows: np.ndarray | None = None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One update for the rows of ``Z``: numerator (m, d), denominator (m,), sum |w| (m,).

    ``G`` (optional): the expansion coefficients ``Gamma`` of a whole chunk of
    points, cached by the caller; ``Z`` and ``Y`` are then its rows ``rows``.
    Without it ``Gamma`` is recomputed block by block (``Y (SA)^T``: m x k x n
    flops, more than the kernel itself when k exceeds the input dimension).
    """
    kernel = space.kernel
    m = Z.shape[0]
    num = np.zeros((m, space.n_features))
    absw = np.zeros(m)
    den = np.zeros(m)
    rbf = isinstance(kernel, RBF)
    poly = isinstance(kernel, Polynomial)
    for j0, j1 in space.column_blocks(m, block_bytes):
        # (a copy: W is scaled in place below)
        W = space.coefficients(Y, j0, j1) if G is None else G[rows, j0:j1]
        Xb = space.rows(j0, j1)
        if rbf:
            W *= kernel.block_prepared(Z, prep[j0:j1])
        elif poly and float(kernel.degree) != 1.0:
            B = Z @ Xb.T
            B *= float(kernel.gamma)
            B += float(kernel.coef0)
            with np.errstate(all="ignore"):
                np.power(B, float(kernel.degree) - 1.0, out=B)
            W *= B
        num += W @ Xb
        absw += np.abs(W).sum(axis=1)
        if rbf:
            den += W.sum(axis=1)
    if poly and float(kernel.degree) != 1.0:
        base = float(kernel.gamma) * np.einsum("ij,ij->i", Z, Z) + float(kernel.coef0)
        with np.errstate(all="ignore"):
            den = np.power(base, float(kernel.degree) - 1.0)
        absw = np.abs(den)  # the test below then only rejects den == 0 / non-finite
    elif not rbf:  # linear, poly of degree 1
        den = np.ones(m)
        absw = np.ones(m)
    return num, den, absw


def fixed_point_preimage(
    space: FittedSubspace | HostSpace | DeviceSpace,
    Y: np.ndarray,
    Z0: np.ndarray,
    *,
    max_iter: int = 100,
    tol: float = 1e-4,
    block_bytes: int | None = None,
) -> tuple[np.ndarray, PreimageInfo]:
    """Pre-images by fixed-point iteration.

    Parameters
    ----------
    space : FittedSubspace, HostSpace or DeviceSpace
        The fitted subspace (kernel, expansion points, coefficients, centre), or its
        pre-image geometry on the host or a device.
    Y : array of shape (m, k)
        Scores on the ``space.k`` components (the points ``P phi(t)`` to invert). An
        Array API array (PyTorch, CuPy, ...): the iteration runs on its device, in its
        precision, and ``Z`` is returned there (:mod:`._device`).
    Z0 : array of shape (m, d)
        Start points: the noisy input itself when denoising, otherwise e.g. the
        MDS pre-image or the nearest training point.
    max_iter : int, default=100
        Maximum iterations per point.
    tol : float, default=1e-4
        Stop when the step ``||z_new - z||`` is at most ``tol * scale`` (see the
        module docstring: ``scale`` is the RBF width or the data's spread).
    block_bytes : int, default=None
        Memory for one (points x training rows) block (default: the setting
        ``preimage_block_bytes``, kpca._config).

    Returns
    -------
    Z : array of shape (m, d)
        float64 NumPy for NumPy scores, else Y's namespace, device and precision.
    info : PreimageInfo
        ``converged``, ``n_iter``, ``restarted`` per point (``residual`` is None).
    """
    check_fixed_point_kernel(space.kernel)
    ds, xp = as_device_space(space, Y)
    if ds is not None:
        if device_namespace(Z0) is None:
            Z0 = from_host(np.asarray(Z0, dtype=ds.np_dtype), xp, ds.device)
        return fixed_point_device(
            ds, Y, Z0, max_iter=max_iter, tol=tol, vanish=_VANISH,
            block_bytes=get_config()["preimage_block_bytes"] if block_bytes is None
            else block_bytes)
    space = host_space(space)
    Y = np.asarray(Y, dtype=np.float64)
    Z = np.array(Z0, dtype=np.float64, copy=True)
    m = Y.shape[0]
    converged = np.zeros(m, bool)
    n_iter = np.zeros(m, np.intp)
    restarted = np.zeros(m, bool)
    # points per chunk: their (chunk, 64)-column blocks also fit in block_bytes
    cfg = get_config()
    if block_bytes is None:
        block_bytes = cfg["preimage_block_bytes"]
    chunk = min(cfg["fixed_point_chunk_rows"], space.row_chunk(block_bytes))
    if isinstance(space.kernel, Linear) or (
        isinstance(space.kernel, Polynomial) and float(space.kernel.degree) == 1.0
    ):
        # closed form: P phi(t) = sum_i gamma_i x_i lies in input space (max_iter ignored)
        for a0 in range(0, m, chunk):
            sl = slice(a0, a0 + chunk)
            Z[sl] = _step(space, None, Z[sl], Y[sl], block_bytes)[0]
        return Z, PreimageInfo("fixed_point", np.ones(m, bool), np.ones(m, np.intp), restarted)
    prep = space.kernel.prepare(space.basis, np.float64) if isinstance(space.kernel, RBF) \
        else None
    scale = _data_scale(space, block_bytes)
    if isinstance(space.kernel, RBF):
        scale = min(scale, 1.0 / np.sqrt(2.0 * float(space.kernel.gamma)))
    thresh = tol * scale
    for a0 in range(0, m, chunk):
        idx = np.arange(a0, min(m, a0 + chunk))
        # Gamma does not change between iterations: cache it for the chunk when
        # it fits in one block (it is then gathered per active row and column block)
        G = None
        if idx.size * space.n * 8 <= block_bytes:
            G = np.empty((idx.size, space.n))
            for j0, j1 in space.column_blocks(idx.size, block_bytes):
                G[:, j0:j1] = space.coefficients(Y[idx], j0, j1)
        active = np.arange(idx.size)
        for _ in range(max_iter):
            if active.size == 0:
                break
            rows = idx[active]
            Za = Z[rows]
            num, den, absw = _step(space, prep, Za, Y[rows], block_bytes, G, active)
            with np.errstate(all="ignore"):
                Znew = num / den[:, None]
            bad = ~(np.abs(den) > _VANISH * absw) | ~np.all(np.isfinite(Znew), axis=1)
            n_iter[rows] += 1
            stuck = np.zeros(active.size, bool)
            if bad.any():
                bad_rows = rows[bad]
                fresh = ~restarted[bad_rows]
                if fresh.any():
                    nn, _ = space.nearest(Y[bad_rows[fresh]], 1, block_bytes)
                    Z[bad_rows[fresh]] = space.take(nn[:, 0])
                    restarted[bad_rows[fresh]] = True
                    logger.debug("fixed point: %d point(s) restarted (vanishing denominator)",
                                 int(fresh.sum()))
                # a point failing again after its restart keeps its last finite iterate
                stuck[np.flatnonzero(bad)[~fresh]] = True
            good = ~bad
            step = np.sqrt(np.sum((Znew[good] - Za[good]) ** 2, axis=1))
            Z[rows[good]] = Znew[good]
            done = np.zeros(active.size, bool)
            done[np.flatnonzero(good)[step <= thresh]] = True
            converged[rows[done]] = True
            active = active[~(done | stuck)]
    if not converged.all():
        logger.info("fixed point: %d of %d point(s) did not converge in %d iterations",
                    int((~converged).sum()), m, max_iter)
    return Z, PreimageInfo("fixed_point", converged, n_iter, restarted)
