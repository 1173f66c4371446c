"""The kernel matrix on the arrays' device, through the Array API (docs/scaling.md,
"GPU and the Array API").

:class:`DeviceKernelOperator` holds the training rows in their own namespace (PyTorch,
CuPy, ``array-api-strict``) and gives ``K @ V`` for blocks ``V`` of that namespace:
from a stored ``K`` when the whole matrix fits the memory budget (device memory on a
GPU), else matrix-free, recomputing row tiles of ``K`` and multiplying each by the
block while it is in device memory (for the RBF kernel on PyTorch tensors, one fused
pass that never writes a tile: :func:`kpca.kernels.device_block_product`). Centring
(docs/math.md, "Centring in feature space") is applied to the stored matrix once, or to
each product, never as an n x n copy. Only length-n statistics (diagonal, row means) go to the host.
The construction pass (the row sums centring needs) also multiplies the solver's start
block, as :class:`~kpca.operators.TiledKernelOperator`'s does, so that block Lanczos
spends no pass of its own on it; every product is logged as a 'pass' event.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .._array_api import float_dtype, from_host, to_host
from .._config import get_config
from ..kernels import device_block_product
from ._base import KernelOperator
from ._centering import Centering

logger = logging.getLogger("kpca")


class DeviceKernelOperator(KernelOperator):
    """``K`` (then ``K~``) of rows ``X`` of an Array API namespace, on their device.

    Parameters
    ----------
    kernel : Kernel
        A resolved kernel whose :meth:`~kpca.kernels.Kernel.block` takes ``xp``.
    X : array of shape (n, d), namespace ``xp``
    xp : namespace
    dtype : numpy dtype
        float32 or float64: the precision of the kernel values and products.
    memory_limit : int
        Bytes of device memory for kernel values: ``K`` is stored when it takes at most
        half (:meth:`stores`), else tiles of rows (an eighth each, with room for their
        temporaries) are recomputed for each product.
    probe : array of shape (n, b), namespace ``xp``, default=None
        A block (the solver's start) whose product with ``K`` is made in the
        construction pass, with the row sums: :meth:`initial_block`.
    """

    #: solvers recognise a device operator by this flag (``matmat`` takes xp arrays)
    device = True

    def __init__(self, kernel: Any, X: Any, xp: Any, *, dtype: Any, memory_limit: int,
                 probe: Any = None):
        self.kernel, self.xp = kernel, xp
        self.dtype = np.dtype(dtype)
        self.X = xp.astype(X, float_dtype(xp, self.dtype))
        n = X.shape[0]
        self.shape = (n, n)
        itemsize = self.dtype.itemsize
        self.stored = self.stores(n, self.dtype, memory_limit)
        # a tile of rows x n values and its temporaries (about three more of its size)
        # take half of the budget; building a stored K needs no large tiles
        tile_bytes = memory_limit // 8
        if self.stored:
            tile_bytes = min(tile_bytes, get_config()["device_tile_bytes"])
        self.tile_rows = max(1, min(n, tile_bytes // max(1, n * itemsize)))
        self.K = None
        self._centering: Centering | None = None
        self._r: Any = None  # row means on the device, once centred (matrix-free)
        self.n_passes = 0
        self._row_sums: np.ndarray | None = None
        self._probe, self._probe_product = probe, None
        if self.stored:  # filled tile by tile: no second n x n copy
            self.K = xp.empty((n, n), dtype=self.X.dtype, device=self.X.device)
            for s in range(0, n, self.tile_rows):
                self.K[s : min(s + self.tile_rows, n), :] = self._tile(s)
        logger.info("device operator: n=%d, %s, %s", n, self.dtype.name,
                    "stored" if self.stored else f"matrix-free, tiles of {self.tile_rows} rows")
        if probe is not None:  # the construction pass: K [1, P]
            ones = xp.ones((n, 1), dtype=self.X.dtype, device=self.X.device)
            out = self._product(xp.concat([ones, xp.astype(probe, self.X.dtype)], axis=1))
            self._row_sums = to_host(out[:, 0], np.float64)
            self._probe_product = out[:, 1:]

    @staticmethod
    def stores(n: int, dtype: Any, memory_limit: int) -> bool:
        """Whether an operator of ``n`` rows in ``dtype`` under ``memory_limit`` stores
        ``K`` (its passes are then products with a stored matrix, cheap)."""
        return n * n * np.dtype(dtype).itemsize <= memory_limit // 2

    def _tile(self, start: int) -> Any:
        stop = min(start + self.tile_rows, self.n)
        return self.kernel.block(self.X[start:stop, ...], self.X, xp=self.xp)

    @property
    def fraction_stored(self) -> float:
        """1 when ``K`` is stored, 0 when every pass recomputes it (the fallback
        budget's cost model reads it, as the tiled operator's)."""
        return 1.0 if self.stored else 0.0

    @property
    def nbytes(self) -> int:
        return self.n * self.n * self.dtype.itemsize if self.stored else 0

    # ------------------------------------------------------------------ products
    def _product(self, V: Any) -> Any:
        """Uncentred ``K @ V`` on the device: one pass (logged as a 'pass' event)."""
        self.n_passes += 1
        logger.info("device kernel pass %d: %d columns, %s", self.n_passes, V.shape[1],
                    "stored" if self.K is not None else "matrix-free",
                    extra={"kpca_event": "pass"})
        if self.K is not None:
            return self.K @ V
        return device_block_product(self.kernel, self.X, self.X, V, self.xp, self.tile_rows)

    def matmat(self, V: Any) -> Any:
        """``K @ V`` (``K~ @ V`` once centred) for ``V`` of shape (n, b) on the device."""
        xp = self.xp
        V = xp.astype(V, self.X.dtype)
        if self._r is None:  # stored and centred in place, or not centred
            return self._product(V)
        # K~ V = K V - 1 (r^T V) - r (1^T V) + g 1 (1^T V), one pass over K
        r, g = self._r, self._centering.grand_mean
        s = xp.sum(V, axis=0)[None, :]
        return self._product(V) - (r[None, :] @ V) - r[:, None] * s + g * s

    def diag(self) -> np.ndarray:
        d = to_host(self.kernel.diag(self.X, xp=self.xp), np.float64)
        if self._centering is not None:  # K~_ii = K_ii - 2 r_i + g
            d = d - 2 * self._centering.row_means + self._centering.grand_mean
        return d

    def row_means(self) -> np.ndarray:
        """``K 1 / n`` (float64, on the host): one pass over ``K`` (none where the
        construction pass made it)."""
        xp = self.xp
        if self._row_sums is not None:
            return self._row_sums / self.n
        if self.K is not None:
            r = xp.sum(self.K, axis=1)
        else:  # K 1: the product's own (possibly fused) pass
            r = self._product(xp.ones((self.n, 1), dtype=self.X.dtype,
                                      device=self.X.device))[:, 0]
        return to_host(r, np.float64) / self.n

    def center_inplace(self, c: Centering) -> None:
        """Centre with ``c`` (the training mean): the stored matrix once, else each
        product."""
        if not c.enabled or c.weights is not None or c.scale is not None:
            raise ValueError("the device operator centres on the training mean only; "
                             "robust centrings run on NumPy arrays.")
        xp = self.xp
        r = xp.asarray(np.asarray(c.row_means, dtype=self.dtype), device=self.X.device)
        self._centering = c
        if self.K is not None:  # in place, row tile by row tile: no n x n temporary
            for s in range(0, self.n, self.tile_rows):
                e = min(s + self.tile_rows, self.n)
                self.K[s:e, :] = self.K[s:e, :] - r[s:e][:, None] - r[None, :] + c.grand_mean
        else:
            self._r = r

    def initial_block(self) -> tuple[Any, Any] | None:
        """``(P, K~ P)`` (float64, on the device) for the ``probe`` given at
        construction, centred as the operator is; or None without a probe."""
        if self._probe is None:
            return None
        xp, P = self.xp, self._probe
        KP = xp.astype(self._probe_product, xp.float64)
        c = self._centering
        if c is None:
            return P, KP
        # K~ P = K P - 1 (r^T P) - r (1^T P) + g 1 (1^T P)
        r = from_host(np.asarray(c.row_means, dtype=np.float64), xp, self.X.device)
        s = xp.sum(P, axis=0)[None, :]
        return P, KP - (r[None, :] @ P) - r[:, None] * s + c.grand_mean * s

    def stored_matrix(self) -> Any:
        """The stored (centred) matrix on the device, or ``None`` when matrix-free."""
        return self.K
