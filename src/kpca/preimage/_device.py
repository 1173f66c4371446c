"""Pre-images on a device: the fitted subspace's pre-image geometry in an Array API
namespace (PyTorch, CuPy, array-api-strict), and the fixed-point iteration there.

A fitted model keeps its attributes on the host (NumPy). A pre-image of device scores
uploads what the algorithms read -- the expansion points (m, d), the coefficients
(m, k), the centre and the expansion points' scores and squared norms, all O(m (d + k))
-- once per call, and computes on the scores' device; only per-point results of size
O(points) come back (the ``PreimageInfo`` fields). No (m, m) matrix crosses.

The algorithms are those of :mod:`._fixed_point` and :mod:`._mds` (docs/math.md,
"Pre-images and denoising"), with the same block budgets, stopping rule, restarts and
neighbour search, written in the standard's operations only: masks and gathers instead
of the host's fancy-index assignment (not in the standard), a running top-k by a stable
``argsort`` instead of ``argpartition``.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .._array_api import device_namespace, float_dtype, from_host, to_host
from .._config import get_config
from ..kernels import RBF, Linear, Polynomial, check_device_kernel
from ._base import PreimageInfo
from ._geometry import HostSpace, _SpaceBlocks

logger = logging.getLogger("kpca")


def device_space_supported(space: Any) -> bool:
    """Whether :class:`DeviceSpace` can hold the fitted subspace ``space``: dense
    expansion points of a kernel with a device implementation (a model fitted on device
    arrays always is), and their raw scores (for the neighbour search).

    Parameters
    ----------
    space : FittedSubspace or HostSpace

    Returns
    -------
    bool
    """
    if isinstance(space, HostSpace):
        space = space.space
    if not isinstance(space.basis, np.ndarray) or space.basis.dtype.kind not in "fiu":
        return False
    try:
        check_device_kernel(space.kernel)
    except ValueError:
        return False
    return space.basis_scores is not None


def as_device_space(space: Any, Y: Any) -> tuple[DeviceSpace | None, Any]:
    """``(device space, namespace)`` for device scores ``Y``, ``(None, None)`` for
    host scores. ``space`` may already be a :class:`DeviceSpace`."""
    if isinstance(space, DeviceSpace):
        return space, space.xp
    if isinstance(space, HostSpace):
        space = space.space
    xp = device_namespace(Y)
    if xp is None:
        return None, None
    dtype = np.float32 if Y.dtype == xp.float32 else np.float64
    return DeviceSpace(space, xp, Y.device, dtype), xp


class DeviceSpace(_SpaceBlocks):
    """The pre-image geometry of a :class:`kpca.subspace.FittedSubspace`, on a device.

    The methods mirror :class:`~kpca.preimage.HostSpace`'s (``coefficients``,
    ``proj_sqnorm``, ``nearest``, ``take``, ``residual``, and the same ``column_blocks``
    and ``row_chunk``), on arrays of namespace ``xp`` in the precision ``dtype``.

    Parameters
    ----------
    space : FittedSubspace or HostSpace
        With dense expansion points (:func:`device_space_supported`).
    xp : namespace
    device : device of ``xp``
    dtype : numpy float dtype
        float32 or float64: the precision of every device array.
    """

    def __init__(self, space: Any, xp: Any, device: Any, dtype: Any) -> None:
        if isinstance(space, HostSpace):
            space = space.space
        check_device_kernel(space.kernel)
        self.space = space
        self.kernel = space.kernel
        self.xp = xp
        self.device = device
        self.np_dtype = np.dtype(dtype)
        self.dtype = float_dtype(xp, dtype)
        up = self.upload
        self.basis = up(space.basis)
        self.coef = up(space.coef)
        self.center = None if space.center is None else up(space.center)
        self.offset = up(space.offset)
        self.center_sqnorm = float(space.center_sqnorm)
        self.basis_scores = up(space.basis_scores)
        # ||phi(z_j) - theta||^2 from the kernel diagonal, as FittedSubspace.basis_sqnorms
        d = self.kernel.diag(self.basis, xp=xp)
        if self.center is not None:
            d = d - 2.0 * up(space.center_products) + self.center_sqnorm
        self.basis_sqnorms = xp.clip(d, min=0.0)

    def upload(self, A: Any) -> Any:
        """A host array as a device array of this space's precision."""
        return from_host(np.asarray(A, dtype=self.np_dtype), self.xp, self.device)

    # ------------------------------------------------------------------ geometry
    def coefficients(self, Y: Any, j0: int, j1: int) -> Any:
        """Block ``G[:, j0:j1]`` of ``theta + sum_l y_l f_l = sum_j G_j phi(z_j)``."""
        G = Y @ self.xp.matrix_transpose(self.coef[j0:j1, ...])
        if self.center is not None:
            G = G + self.center[None, j0:j1]
        return G

    def proj_sqnorm(self, Y: Any) -> Any:
        """``||theta + sum_l y_l f_l||^2`` per row of scores."""
        out = self.xp.sum(Y * Y, axis=1)
        if self.center is not None:
            out = out + self.center_sqnorm + 2.0 * (Y @ self.offset)
        return out

    def take(self, idx: Any) -> Any:
        """Expansion points at (device) indices ``idx``, shape (len(idx), d)."""
        return self.xp.take(self.basis, idx, axis=0)

    def rows(self, j0: int, j1: int) -> Any:
        return self.basis[j0:j1, ...]

    def nearest(self, Y: Any, k: int, block_bytes: int | None = None) -> tuple[Any, Any]:
        """The ``k`` expansion points nearest to ``P phi(t)`` (indices, squared
        distances; nearest first), by a running top-k over column blocks."""
        xp = self.xp
        m = Y.shape[0]
        k = min(k, self.n)
        yy = xp.sum(Y * Y, axis=1)[:, None]
        best_d = xp.zeros((m, 0), dtype=self.dtype, device=self.device)
        best_i = xp.zeros((m, 0), dtype=xp.int64, device=self.device)
        for j0, j1 in self.column_blocks(m, block_bytes):
            S = self.basis_scores[j0:j1, ...]
            D = yy - 2.0 * (Y @ xp.matrix_transpose(S)) + self.basis_sqnorms[None, j0:j1]
            D = xp.clip(D, min=0.0)
            cols = xp.arange(j0, j1, dtype=xp.int64, device=self.device)
            D = xp.concat([best_d, D], axis=1)
            idx = xp.concat([best_i, xp.broadcast_to(cols[None, :], (m, j1 - j0))], axis=1)
            order = xp.argsort(D, axis=1, stable=True)[:, :k]
            best_d, best_i = _gather(xp, D, order), _gather(xp, idx, order)
        return best_i, best_d

    def residual(self, Z: Any, Y: Any, block_bytes: int | None = None) -> Any:
        """``||phi(z_a) - P phi(t_a)||^2`` per pre-image (clipped at 0), on the device."""
        xp = self.xp
        m = Z.shape[0]
        rows = self.row_chunk(block_bytes)
        parts = []
        for a0, a1 in _chunks(m, rows):
            Za, Ya = Z[a0:a1, ...], Y[a0:a1, ...]
            cross = xp.zeros(Za.shape[0], dtype=self.dtype, device=self.device)
            for j0, j1 in self.column_blocks(Za.shape[0], block_bytes):
                Kb = self.kernel.block(Za, self.rows(j0, j1), xp=xp)
                cross = cross + xp.sum(Kb * self.coefficients(Ya, j0, j1), axis=1)
            parts.append(cross)
        cross = xp.concat(parts) if parts else xp.zeros(0, dtype=self.dtype,
                                                         device=self.device)
        kzz = self.kernel.diag(Z, xp=xp)
        return xp.clip(kzz - 2.0 * cross + self.proj_sqnorm(Y), min=0.0)

    def data_scale(self) -> float:
        """``sqrt(trace Cov X)`` of the expansion points (1 if degenerate)."""
        xp = self.xp
        Xc = self.basis - xp.mean(self.basis, axis=0)
        s = float(np.sqrt(float(xp.sum(Xc * Xc)) / self.n))
        return s if np.isfinite(s) and s > 0 else 1.0


def _chunks(m: int, size: int):
    """``(a0, a1)`` ranges of at most ``size`` of ``m`` rows (the standard leaves slices
    past the end unspecified)."""
    for a0 in range(0, m, size):
        yield a0, min(a0 + size, m)


def _gather(xp: Any, A: Any, idx: Any) -> Any:
    """``A[a, idx[a, j]]`` (``take_along_axis`` on axis 1, by a flat ``take`` where the
    namespace predates it)."""
    if hasattr(xp, "take_along_axis"):
        return xp.take_along_axis(A, idx, axis=1)
    m, w = A.shape
    base = xp.arange(m, dtype=idx.dtype, device=A.device)[:, None] * w
    flat = xp.reshape(idx + base, (-1,))
    return xp.reshape(xp.take(xp.reshape(A, (-1,)), flat), idx.shape)


def _expand(xp: Any, mask: Any, V: Any, A: Any) -> Any:
    """``A`` with the rows where ``mask`` holds replaced, in order, by the rows of ``V``
    (``A[mask] = V`` in the standard's operations: a cumulative sum gives each masked
    row its position in ``V``, a gather and a ``where`` do the rest)."""
    if V.shape[0] == 0:
        return A
    pos = xp.cumulative_sum(xp.astype(mask, xp.int64)) - 1
    pos = xp.clip(pos, min=0, max=V.shape[0] - 1)
    full = xp.take(V, pos, axis=0)
    sel = mask if A.ndim == 1 else xp.reshape(mask, (-1,) + (1,) * (A.ndim - 1))
    return xp.where(sel, full, A)


def _step(ds: DeviceSpace, Z: Any, Y: Any | None, G: Any | None, block_bytes: int
          ) -> tuple[Any, Any, Any]:
    """One fixed-point update of the rows of ``Z``: numerator (m, d), denominator (m,),
    sum |w| (m,) (as :func:`._fixed_point._step`). ``G``: the rows' expansion
    coefficients, cached by the caller, else computed from ``Y`` per block."""
    xp, kernel = ds.xp, ds.kernel
    m = Z.shape[0]
    rbf = isinstance(kernel, RBF)
    poly = isinstance(kernel, Polynomial) and float(kernel.degree) != 1.0
    num = xp.zeros((m, ds.n_features), dtype=ds.dtype, device=ds.device)
    absw = xp.zeros(m, dtype=ds.dtype, device=ds.device)
    den = xp.zeros(m, dtype=ds.dtype, device=ds.device)
    for j0, j1 in ds.column_blocks(m, block_bytes):
        W = ds.coefficients(Y, j0, j1) if G is None else G[:, j0:j1]
        Xb = ds.rows(j0, j1)
        if rbf:
            W = W * kernel.block(Z, Xb, xp=xp)
        elif poly:
            B = float(kernel.gamma) * (Z @ xp.matrix_transpose(Xb)) + float(kernel.coef0)
            W = W * B ** (float(kernel.degree) - 1.0)
        num = num + W @ Xb
        absw = absw + xp.sum(xp.abs(W), axis=1)
        if rbf:
            den = den + xp.sum(W, axis=1)
    if poly:
        base = float(kernel.gamma) * xp.sum(Z * Z, axis=1) + float(kernel.coef0)
        den = base ** (float(kernel.degree) - 1.0)
        absw = xp.abs(den)
    elif not rbf:  # linear, poly of degree 1
        den = xp.ones(m, dtype=ds.dtype, device=ds.device)
        absw = den
    return num, den, absw


def fixed_point_device(ds: DeviceSpace, Y: Any, Z0: Any, *, max_iter: int, tol: float,
                       block_bytes: int, vanish: float) -> tuple[Any, PreimageInfo]:
    """:func:`kpca.preimage.fixed_point_preimage` on ``ds``'s device.

    The same chunks, cached coefficients, stopping rule and restarts; the active set is
    a mask of the chunk's points, its rows gathered for each iteration and scattered
    back by :func:`_expand`.

    Returns
    -------
    Z : array of shape (m, d), namespace ``ds.xp``, precision ``ds.dtype``
    info : PreimageInfo (host arrays)
    """
    xp = ds.xp
    Y = xp.astype(Y, ds.dtype)
    Z = xp.astype(Z0, ds.dtype, copy=True)
    m = Y.shape[0]
    cfg = get_config()
    chunk = min(cfg["fixed_point_chunk_rows"], ds.row_chunk(block_bytes))
    kernel = ds.kernel
    if isinstance(kernel, Linear) or (isinstance(kernel, Polynomial)
                                      and float(kernel.degree) == 1.0):
        # closed form: P phi(t) = sum_i gamma_i x_i lies in input space
        parts = [_step(ds, Z[a0:a1, ...], Y[a0:a1, ...], None, block_bytes)[0]
                 for a0, a1 in _chunks(m, chunk)]
        Z = xp.concat(parts, axis=0) if parts else Z
        return Z, PreimageInfo("fixed_point", np.ones(m, bool), np.ones(m, np.intp),
                               np.zeros(m, bool))
    scale = ds.data_scale()
    if isinstance(kernel, RBF):
        scale = min(scale, 1.0 / np.sqrt(2.0 * float(kernel.gamma)))
    thresh = float(tol * scale)
    out, conv_parts, iter_parts, rest_parts = [], [], [], []
    for a0, a1 in _chunks(m, chunk):
        Yc, Zc = Y[a0:a1, ...], Z[a0:a1, ...]
        c = Yc.shape[0]
        G = None
        if c * ds.n * 8 <= block_bytes:  # Gamma fits one block: cached for the chunk
            G = ds.coefficients(Yc, 0, ds.n)
        false = xp.zeros(c, dtype=xp.bool, device=ds.device)
        active, converged, restarted = ~false, false, false
        n_iter = xp.zeros(c, dtype=xp.int64, device=ds.device)
        for _ in range(max_iter):
            idx = xp.nonzero(active)[0]
            if idx.shape[0] == 0:
                break
            Za = xp.take(Zc, idx, axis=0)
            Ga = None if G is None else xp.take(G, idx, axis=0)
            Ya = xp.take(Yc, idx, axis=0) if G is None else None
            num, den, absw = _step(ds, Za, Ya, Ga, block_bytes)
            # (a zero denominator fails the test below anyway: divide by 1 there, no
            # floating-point warning from NumPy-backed namespaces)
            Znew = num / xp.where(den == 0, xp.ones_like(den), den)[:, None]
            bad_a = ~(xp.abs(den) > vanish * absw) | ~xp.all(xp.isfinite(Znew), axis=1)
            step_a = xp.sqrt(xp.sum((Znew - Za) ** 2, axis=1))
            bad = _expand(xp, active, bad_a, false)
            n_iter = n_iter + xp.astype(active, xp.int64)
            fresh = bad & ~restarted
            stuck = bad & restarted  # failing again after its restart: keeps its iterate
            good = active & ~bad
            Zc = _expand(xp, good, xp.take(Znew, xp.nonzero(~bad_a)[0], axis=0), Zc)
            if bool(xp.any(fresh)):
                rows = xp.nonzero(fresh)[0]
                nn, _ = ds.nearest(xp.take(Yc, rows, axis=0), 1, block_bytes)
                Zc = _expand(xp, fresh, ds.take(nn[:, 0]), Zc)
                restarted = restarted | fresh
                logger.debug("fixed point: %d point(s) restarted (vanishing denominator)",
                             int(rows.shape[0]))
            done_a = ~bad_a & (step_a <= thresh)
            done = _expand(xp, active, done_a, false)
            converged = converged | done
            active = active & ~(done | stuck)
        out.append(Zc)
        conv_parts.append(converged)
        iter_parts.append(n_iter)
        rest_parts.append(restarted)
    if not out:
        return Z, PreimageInfo("fixed_point", np.zeros(0, bool), np.zeros(0, np.intp),
                               np.zeros(0, bool))
    Z = xp.concat(out, axis=0)
    info = PreimageInfo("fixed_point", to_host(xp.concat(conv_parts)).astype(bool),
                        to_host(xp.concat(iter_parts)).astype(np.intp),
                        to_host(xp.concat(rest_parts)).astype(bool))
    if not info.converged.all():
        logger.info("fixed point: %d of %d point(s) did not converge in %d iterations",
                    int((~info.converged).sum()), m, max_iter)
    return Z, info
