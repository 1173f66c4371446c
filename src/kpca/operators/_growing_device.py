"""The kernel matrix of a growing set of rows on the arrays' device (incremental KPCA on
PyTorch / CuPy / array-api-strict arrays; docs/scaling.md, "GPU and the Array API").

:class:`DeviceGrowingGram` is :class:`~kpca.operators.GrowingGram` for rows of an Array
API namespace: a batch of ``b`` rows to an ``n``-row matrix evaluates its ``b (n + b)``
kernel values on the device, stores them (both triangles: a product is then one GEMM)
in a square buffer whose side grows geometrically, so that a stream of batches copies
the old values ``O(log N)`` times, not once per batch, and keeps the same *shifted*
values ``T_ij = K_ij - a_i - a_j`` (``a_i`` the row's mean at its arrival minus half the
grand mean, fixed then; centring removes any such shift exactly: docs/math.md,
"Incremental kernel PCA"). The centring statistics are kept on the device in float64;
only length-``N`` vectors and small blocks go to the host.

:class:`DeviceNewColumns` is :class:`~kpca.operators.NewColumns` on the device, and
:class:`DeviceCenteredGrowing` the centred matrix ``H T H`` as an operator for the
device solvers (:func:`kpca.solvers.device_eigsh` and the device update).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._array_api import float_dtype, to_host
from ._centering import Centering


class DeviceGrowingGram:
    """Shifted kernel matrix ``T = K - a 1^T - 1 a^T`` of a growing row set, on a device.

    Parameters
    ----------
    kernel : Kernel
        A resolved kernel whose :meth:`~kpca.kernels.Kernel.block` takes ``xp``.
    xp : namespace
    device : the arrays' device
    dtype : float32 or float64
        Storage precision of the kernel values (products accumulate in float64: their
        results are cast to it).
    memory_limit : int or None
        Bytes the buffer may take: its side grows geometrically up to what fits, then
        exactly to the rows kept.

    Attributes
    ----------
    X : array of shape (n, d)
        The rows, in the storage dtype, on the device.
    shift, row_sums : arrays of shape (n,), float64, on the device
        ``a`` and ``K 1`` (of the unshifted matrix).
    diag_k : ndarray of shape (n,)
        ``k(x_i, x_i)`` (float64, on the host).
    """

    #: the device solvers recognise a device operator by this flag
    device = True

    def __init__(self, kernel: Any, xp: Any, device: Any, dtype: Any,
                 memory_limit: int | None = None):
        self.kernel, self.xp, self.dev = kernel, xp, device
        self.dtype = np.dtype(dtype)
        self.memory_limit = memory_limit
        self._xdt = float_dtype(xp, self.dtype)
        self.X: Any = None
        self.K: Any = None  # the buffer, (cap, cap); T is its leading (n, n) block
        self.n = 0
        self.shift = xp.zeros((0,), dtype=xp.float64, device=device)
        self.row_sums = xp.zeros((0,), dtype=xp.float64, device=device)
        self.diag_k = np.zeros(0)
        #: the last Ritz pairs (V, K~ V) on the device, float64, for the next update
        self.ritz: tuple[Any, Any] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.n)

    @property
    def nbytes(self) -> int:
        return 0 if self.K is None else int(self.K.shape[0]) ** 2 * self.dtype.itemsize

    @staticmethod
    def bytes_for(n: int, itemsize: int, batch: int = 0) -> int:
        """Device bytes of an ``n``-row matrix (both triangles) and of a ``batch``-row
        block row in flight."""
        return (n * n + batch * n) * itemsize

    # ------------------------------------------------------------------ growth
    def _reserve(self, N: int) -> None:
        """A buffer of side at least ``N`` holding the current values: doubled (amortised
        O(1) copies per stored value) while twice the side fits ``memory_limit``."""
        cap = 0 if self.K is None else int(self.K.shape[0])
        if N <= cap:
            return
        new = max(N, 2 * cap)
        if self.memory_limit is not None:
            fits = math.isqrt(max(0, int(self.memory_limit) // self.dtype.itemsize))
            new = max(N, min(new, fits))
        xp = self.xp
        K = xp.empty((new, new), dtype=self._xdt, device=self.dev)
        if self.n:
            K[: self.n, : self.n] = self.K[: self.n, : self.n]
        self.K = K

    def append(self, Xb: Any, V: Any = None) -> tuple[Any, Any]:
        """Add the rows ``Xb`` (device, any float dtype): their kernel values against every
        row are evaluated on the device, shifted and stored.

        Parameters
        ----------
        Xb : array of shape (b, d)
        V : array of shape (n, q), float64, optional
            With it, ``T_bn V`` (the new rows' shifted values against the old rows, times
            ``V``) is returned too.

        Returns
        -------
        Tb : array of shape (b, n + b)
            The new rows as stored (a view of the buffer).
        TbV : array of shape (b, q), float64, or None

        Raises
        ------
        ValueError
            If a kernel value is not finite; nothing is stored then.
        """
        xp, n = self.xp, self.n
        Xb = xp.astype(Xb, self._xdt)
        b = Xb.shape[0]
        N = n + b
        X = Xb if self.X is None or n == 0 else xp.concat([self.X, Xb], axis=0)
        B = self.kernel.block(Xb, X, xp=xp)
        if B.dtype != self._xdt:
            B = xp.astype(B, self._xdt)
        new_sums = xp.sum(B, axis=1, dtype=xp.float64)
        # a non-finite value makes its row's float64 sum non-finite: checked before any
        # write
        if not bool(xp.all(xp.isfinite(new_sums))):
            raise ValueError(
                "the kernel values of this batch are not finite (overflow): check the "
                "kernel parameters (degree, gamma, coef0) or scale the data."
            )
        col_sums = xp.sum(B[:, :n], axis=0, dtype=xp.float64)
        row_sums = xp.concat([self.row_sums + col_sums, new_sums])
        grand = float(xp.sum(row_sums)) / (N * N)
        a_new = new_sums / N - grand / 2
        shift = xp.concat([self.shift, a_new])
        # a_i + a_j in one subtraction: the diagonal block stays exactly symmetric
        Tb = B - (xp.astype(a_new, self._xdt)[:, None] + xp.astype(shift, self._xdt)[None, :])
        D = Tb[:, n:]
        Tb[:, n:] = (D + xp.matrix_transpose(D)) * 0.5  # exactly symmetric
        TbV = None
        if V is not None and n:
            TbV = xp.astype(Tb[:, :n] @ xp.astype(V, self._xdt), xp.float64)
            if not bool(xp.all(xp.isfinite(TbV))):
                raise ValueError(
                    "the kernel values of this batch are not finite (overflow): check the "
                    "kernel parameters (degree, gamma, coef0) or scale the data."
                )
        diag = to_host(self.kernel.diag(Xb, xp=xp), np.float64)
        self._reserve(N)
        self.K[n:N, :N] = Tb
        if n:
            self.K[:n, n:N] = xp.matrix_transpose(Tb[:, :n])
        self.X, self.shift, self.row_sums, self.n = X, shift, row_sums, N
        self.diag_k = np.concatenate([self.diag_k, diag])
        return self.K[n:N, :N], TbV

    @classmethod
    def build(cls, kernel: Any, X: Any, xp: Any, *, dtype: Any, rows: int,
              memory_limit: int | None = None) -> DeviceGrowingGram:
        """The matrix of all rows of ``X`` (a batch fit), appended in block rows of
        ``rows`` rows (the buffer allocated once, at its final side)."""
        gram = cls(kernel, xp, X.device, dtype, memory_limit)
        gram._reserve(X.shape[0])
        N, rows = X.shape[0], max(1, rows)
        for s in range(0, N, rows):
            gram.append(X[s : min(s + rows, N), ...])
        return gram

    def copy(self) -> DeviceGrowingGram:
        """A new object sharing the buffer: an append writes only outside the leading
        ``n x n`` block, so appending to the copy leaves this one as it was (a failed
        update leaves the model's matrix intact)."""
        out = DeviceGrowingGram(self.kernel, self.xp, self.dev, self.dtype, self.memory_limit)
        out.X, out.K, out.n = self.X, self.K, self.n
        out.shift, out.row_sums, out.diag_k = self.shift, self.row_sums, self.diag_k
        out.ritz = self.ritz
        return out

    def astype(self, dtype: Any) -> DeviceGrowingGram:
        """The same matrix stored in ``dtype`` (a new buffer of side ``n``)."""
        xp = self.xp
        out = self.copy()
        out.dtype = np.dtype(dtype)
        out._xdt = float_dtype(xp, out.dtype)
        out.X = xp.astype(self.X, out._xdt)
        out.K = xp.astype(self.K[: self.n, : self.n], out._xdt)
        return out

    # ------------------------------------------------------------------ statistics
    def shifted_row_sums(self) -> Any:
        """``T 1 = K 1 - n a - (1^T a) 1`` (float64, on the device)."""
        return self.row_sums - self.n * self.shift - float(self.xp.sum(self.shift))

    def noise_floor(self) -> float:
        """``n eps max K_ii`` (as :meth:`GrowingGram.noise_floor`)."""
        return self.n * float(np.finfo(self.dtype).eps) * float(
            np.max(np.abs(self.diag_k), initial=0.0))

    def kernel_centering(self) -> Centering:
        """The centring statistics of ``K`` itself (host, for new rows' kernel values)."""
        r = to_host(self.row_sums, np.float64) / max(self.n, 1)
        return Centering(r, float(r.mean()) if r.size else 0.0)

    def matmat(self, V: Any) -> Any:
        """``T @ V`` (float64 on the device) for ``V`` of shape (n, q) on the device."""
        xp = self.xp
        out = self.K[: self.n, : self.n] @ xp.astype(V, self._xdt)
        return xp.astype(out, xp.float64)


class DeviceCenteredGrowing:
    """``K~ = H T H`` of a :class:`DeviceGrowingGram`, as an operator of the device
    solvers (``matmat`` of float64 device blocks, ``stored_matrix`` for a dense solve);
    each product is one GEMM with the stored ``T`` plus the rank-one centring terms."""

    device = True
    stored = True

    def __init__(self, gram: DeviceGrowingGram):
        xp = gram.xp
        self.gram, self.xp = gram, xp
        self.X, self.dtype, self.n = gram.X, gram.dtype, gram.n
        self.shape = (gram.n, gram.n)
        t = gram.shifted_row_sums()
        self.r = t / max(gram.n, 1)
        self.g = float(xp.mean(self.r)) if gram.n else 0.0
        self.n_passes = 0

    def centred(self, V: Any, TV: Any) -> Any:
        """``H T H V`` from ``T V`` (float64)."""
        xp = self.xp
        colsum = xp.sum(V, axis=0)[None, :]
        return (TV - (self.r[None, :] @ V) - self.r[:, None] * colsum + self.g * colsum)

    def matmat(self, V: Any) -> Any:
        """``K~ @ V`` (float64, on the device): one pass over the stored matrix."""
        V = self.xp.astype(V, self.xp.float64)
        self.n_passes += 1
        return self.centred(V, self.gram.matmat(V))

    def stored_matrix(self) -> Any:
        """The centred matrix (a new device array; the dense solve's temporary)."""
        xp, n = self.xp, self.n
        T = xp.astype(self.gram.K[:n, :n], xp.float64)
        return T - self.r[:, None] - self.r[None, :] + self.g


class DeviceNewColumns:
    """:class:`~kpca.operators.NewColumns` on the device: ``E = H (T_b^T - t 1^T / N)``
    (N x b) from the batch's stored rows ``Tb`` (b x N) and ``t = T 1`` (float64, device)
    after the append, through its products."""

    def __init__(self, Tb: Any, t: Any, xp: Any):
        self.Tb, self.t, self.xp = Tb, t, xp
        self.b, self.N = Tb.shape
        self.n = self.N - self.b
        self._col_means = (t[self.n:] - xp.mean(t)) / self.N

    def matmat(self, U: Any) -> Any:
        """``E @ U`` for ``U`` of shape (b, r) (float64): shape (N, r), float64."""
        xp = self.xp
        Y = xp.astype(xp.matrix_transpose(self.Tb) @ xp.astype(U, self.Tb.dtype), xp.float64)
        Y = Y - (self.t / self.N)[:, None] * xp.sum(U, axis=0)[None, :]
        return Y - (self._col_means[None, :] @ U)

    def new_block(self) -> Any:
        """``E[n:]``, the (b, b) block among the new rows (float64)."""
        xp = self.xp
        E = xp.astype(xp.matrix_transpose(self.Tb[:, self.n:]), xp.float64)
        return E - (self.t[self.n:] / self.N)[:, None] - self._col_means[None, :]
