"""The kernel matrix on the arrays' device, through the Array API (docs/scaling.md,
"GPU and the Array API").

:class:`DeviceKernelOperator` holds the training rows in their own namespace (PyTorch,
CuPy, ``array-api-strict``) and gives ``K @ V`` for blocks ``V`` of that namespace:
from a stored ``K`` when the whole matrix fits the memory budget (device memory on a
GPU), else matrix-free, recomputing row tiles of ``K`` and multiplying each by the
block while it is in device memory (for the RBF kernel on PyTorch tensors, one fused
pass that never writes a tile: :func:`kpca.kernels.device_block_product`). Centring
(docs/math.md, "Centring in feature space"; with a weighted centre and row scales for
robust KPCA, "Robust KPCA and diagnostics") is applied to the stored matrix once, or to
each product, never as an n x n copy (except the one a dense solve of a centred view
asks for: :meth:`DeviceKernelOperator.stored_matrix`). Only length-n statistics
(diagonal, row means) and the n x b blocks of :meth:`DeviceKernelOperator.matmat_host`
go to the host.
The construction pass (the row sums centring needs) also multiplies the solver's start
block, as :class:`~kpca.operators.TiledKernelOperator`'s does, so that block Lanczos
spends no pass of its own on it; every product is logged as a 'pass' event.
"""

from __future__ import annotations

import copy
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
        # the centring's row means m and scales s on the device; applied to each product
        # when ``_per_product`` (matrix-free, or a view of a stored uncentred K)
        self._r: Any = None
        self._s: Any = None
        self._per_product = False
        self._passes = [0]  # shared with the centred views: one count of passes over K
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
    def n_passes(self) -> int:
        """Passes over ``K`` so far (by this operator and its centred views)."""
        return self._passes[0]

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
        self._passes[0] += 1
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
        if not self._per_product:  # stored and centred in place, or not centred
            return self._product(V)
        # K* V = S (K - 1 m^T - m 1^T + c 1 1^T) S V, one pass over K
        s, c = self._s, self._centering
        if s is not None:
            V = V * s[:, None]
        out = self._product(V)
        if c.enabled:
            r = self._r
            colsum = xp.sum(V, axis=0)[None, :]
            out = out - (r[None, :] @ V) - r[:, None] * colsum + c.grand_mean * colsum
        return out if s is None else out * s[:, None]

    def matmat_host(self, M: np.ndarray) -> np.ndarray:
        """``K~ @ M`` for a host block ``M`` (n, b): the block goes to the device and
        its product comes back in float64 (n x b each way, never ``K``)."""
        Md = from_host(np.asarray(M, dtype=self.dtype), self.xp, self.X.device)
        return to_host(self.matmat(Md), np.float64)

    def diag(self) -> np.ndarray:
        d = to_host(self.kernel.diag(self.X, xp=self.xp), np.float64)
        if self._centering is not None:  # K*_ii = s_i^2 (K_ii - 2 m_i + c)
            d = self._centering.train_diag(d, scaled=True)
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

    def _set_centering(self, c: Centering) -> None:
        if self._centering is not None:
            raise ValueError("this device operator is centred already; centre (or view) "
                             "the uncentred operator.")
        xp, dev = self.xp, self.X.device
        self._centering = c
        self._r = (xp.asarray(np.asarray(c.row_means, dtype=self.dtype), device=dev)
                   if c.enabled else None)
        self._s = (None if c.scale is None
                   else xp.asarray(np.asarray(c.scale, dtype=self.dtype), device=dev))

    def _centred_rows(self, s: int, e: int) -> Any:
        """Rows ``s:e`` of ``S (K - 1 m^T - m 1^T + c 1 1^T) S`` from the stored ``K``."""
        c, r, sc = self._centering, self._r, self._s
        T = self.K[s:e, :]
        if c.enabled:
            T = T - r[s:e][:, None] - r[None, :] + c.grand_mean
        if sc is not None:
            T = T * sc[s:e][:, None] * sc[None, :]
        return T

    def center_inplace(self, c: Centering) -> None:
        """Centre with ``c`` (the training mean, or robust KPCA's weighted centre and row
        scales): the stored matrix once, else each product."""
        self._set_centering(c)
        if self.K is not None:  # in place, row tile by row tile: no n x n temporary
            for s in range(0, self.n, self.tile_rows):
                e = min(s + self.tile_rows, self.n)
                self.K[s:e, :] = self._centred_rows(s, e)
        else:
            self._per_product = True

    def centered_view(self, c: Centering) -> DeviceKernelOperator:
        """``S K~ S`` for centring ``c`` as another operator sharing this one's rows and
        stored ``K`` (left untouched): each product is centred (robust KPCA solves with
        many centrings of one ``K``, as :class:`~kpca.operators.CenteredOperator` does on
        the host)."""
        if self._centering is not None:
            raise ValueError("centered_view needs the uncentred operator.")
        view = copy.copy(self)
        view._probe = view._probe_product = None
        view._set_centering(c)
        view._per_product = True
        return view

    def initial_block(self) -> tuple[Any, Any] | None:
        """``(P, K~ P)`` (float64, on the device) for the ``probe`` given at
        construction, centred as the operator is; or None without a probe (or with
        row scales, which the construction pass did not apply)."""
        if self._probe is None:
            return None
        xp, P = self.xp, self._probe
        KP = xp.astype(self._probe_product, xp.float64)
        c = self._centering
        if c is None or not c.enabled and c.scale is None:
            return P, KP
        if c.scale is not None:
            return None
        # K~ P = K P - 1 (m^T P) - m (1^T P) + c 1 (1^T P)
        r = from_host(np.asarray(c.row_means, dtype=np.float64), xp, self.X.device)
        s = xp.sum(P, axis=0)[None, :]
        return P, KP - (r[None, :] @ P) - r[:, None] * s + c.grand_mean * s

    def stored_matrix(self) -> Any:
        """The stored (centred) matrix on the device, or ``None`` when matrix-free. For a
        centred view (:meth:`centered_view`) of a stored ``K``, a centred copy, made
        here (the dense solver's temporary, as on the host)."""
        if self.K is None or not self._per_product:
            return self.K
        out = self.xp.empty_like(self.K)
        for s in range(0, self.n, self.tile_rows):
            e = min(s + self.tile_rows, self.n)
            out[s:e, :] = self._centred_rows(s, e)
        return out
