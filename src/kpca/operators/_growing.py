"""The kernel matrix of a growing set of rows (incremental KPCA).

Rows arrive in batches. Each batch adds one *block row*: its kernel values against
every row seen so far, itself included (the lower triangle of ``K`` by blocks), so a
batch of ``b`` rows to an ``n``-row matrix stores only the ``b (n + b)`` new values
and never moves the old ones. Small batches are merged into the last block row
while it is short, so a stream of single rows does not become thousands of tiles.
A block row is kept as contiguous tiles (bands of at most ``growing_tile_cols`` rows
and columns), which products multiply with the compiled one-sweep tile kernel, as
KernelPCA's stored tiles.

Stored values are *shifted*: ``T_ij = K_ij - a_i - a_j``, with ``a_i`` fixed when
row ``i`` arrives. Centring removes any such shift exactly (``H T H = H K H`` for
``H = I - 11^T/n``, whatever ``a``). :meth:`GrowingGram.append` takes ``a_i`` = the
row's mean at that time minus half the grand mean, so that the shifted values are
close to the centred ones and products with them lose little to cancellation;
:meth:`GrowingGram.append_kernel` and :meth:`GrowingGram.build` (kernels bounded by
their constant diagonal, whose centred values have the scale of the raw ones) store
``a_i = 0`` and evaluate, sum and multiply each block row in one sweep; ``build``
with ``center`` shifts to the exact centring afterwards (docs/math.md, "Incremental
kernel PCA").
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dgemm

from .._config import get_config
from .._parallel import blas_threads, run_blocks
from ..kernels import Kernel
from . import _tiled
from ._base import KernelOperator
from ._centering import Centering
from ._gram import n_threads

# tuning values (kpca._config): ``growing_min_block_rows`` -- a block row shorter than
# it absorbs the next batch; ``growing_piece_bytes`` -- bytes of one chunk of a block
# row while it is evaluated or shifted; ``growing_tile_cols`` -- the side of the stored
# tiles (a product's float32 sums run over at most this many values)


class GrowingGram(KernelOperator):
    """Shifted kernel matrix ``T = K - a 1^T - 1 a^T`` of a growing row set.

    Each block row is stored as tiles: bands of at most ``growing_tile_cols`` rows (a
    setting), each cut into contiguous tiles of at most that many columns below its
    own square diagonal tile. A product then multiplies each tile by kpca's compiled
    one-sweep kernel (:func:`kpca.operators._tiled.native_tile_product`: both of a
    tile's products, ``T V`` and ``T^T V``, from one read), as KernelPCA's stored
    tiles are, and its float32 sums run over at most a tile's side, as theirs do.

    Parameters
    ----------
    dtype : float32 or float64
        Storage precision (products accumulate in float64).
    n_jobs : int or None
        Worker threads of a product.

    Attributes
    ----------
    shift : ndarray of shape (n,)
        ``a`` (float64).
    row_sums : ndarray of shape (n,)
        ``K 1`` of the unshifted matrix (float64, from the kernel values as
        evaluated).
    diag_k : ndarray of shape (n,)
        ``k(x_i, x_i)`` (float64).
    """

    def __init__(self, dtype=np.float64, n_jobs: int | None = None):
        self.dtype = np.dtype(dtype)
        self.n_jobs = n_jobs
        self.shape = (0, 0)
        #: bands (first row a, tiles): tiles [(first column c0, tile)] of shape (h, c)
        #: covering the columns 0:a + h, the last one the square diagonal tile (c0 = a)
        self.bands: list[tuple[int, list[tuple[int, np.ndarray]]]] = []
        self.shift = np.zeros(0)
        self.row_sums = np.zeros(0)
        self.diag_k = np.zeros(0)

    @property
    def blocks(self) -> list[tuple[int, np.ndarray]]:
        """The stored bands as ``(first row a, rows)``, each of shape ``(h, a + h)``: the
        lower triangle by bands (copies, for inspection)."""
        return [(a, _join(tiles)) for a, tiles in self.bands]

    @property
    def threads(self) -> int:  # type: ignore[override]
        """BLAS threads for a solver's large products between passes (``n_jobs``)."""
        return n_threads(self.n_jobs)

    # ------------------------------------------------------------------ growth
    def append(self, B: np.ndarray, V: np.ndarray | None = None,
               out: np.ndarray | None = None, probe: np.ndarray | None = None,
               probe_out: np.ndarray | None = None) -> np.ndarray:
        """Add ``b`` rows given their kernel values ``B = k(X_new, X_all)``.

        Work is done by row blocks on worker threads, in two reads of ``B``: the
        sums, then the shift (and the products with ``V`` and ``probe``) while each
        block is in cache.

        Parameters
        ----------
        B : ndarray of shape (b, n + b)
            Kernel values of the new rows against all rows, old ones first, the new
            ones last. Overwritten: it becomes the shifted block (in the storage
            dtype when it is given in it, which saves a copy).
        V : ndarray of shape (n, q), optional
            With ``out``: ``T_bn V``, the new rows' shifted values against the old
            rows times ``V``, is written into ``out`` (float64, shape (b, q)).
        out : ndarray of shape (b, q), optional
        probe : ndarray of shape (n + b, p), optional
            With ``probe_out``: the new block row's part of ``T @ probe`` is added to
            ``probe_out`` (float64, shape (n + b, p)): ``T_b probe`` to its last ``b``
            rows and ``T_bn^T probe_new`` to the first ``n``. Summed over the block
            rows of a matrix built by appends, that is ``T @ probe`` without a pass
            (the construction pass of a batch fit).
        probe_out : ndarray of shape (n + b, p), optional

        Returns
        -------
        Tb : ndarray of shape (b, n + b)
            The shifted values of the new rows, ``B - a_new 1^T - 1 a^T``, as stored.

        Raises
        ------
        ValueError
            If a kernel value is not finite; nothing is stored then.
        """
        n = self.n
        b, N = B.shape
        if N != n + b:
            raise ValueError(f"append: expected {n + b} columns, got {N}")
        if B.dtype != self.dtype:
            B = B.astype(self.dtype)
        rows = int(max(8, get_config()["growing_piece_bytes"] // max(1, N * B.itemsize)))
        starts = range(0, b, rows)
        workers = min(n_threads(self.n_jobs), len(starts))
        new_sums = np.empty(b)

        def sums(r0: int) -> np.ndarray:
            blk = B[r0 : r0 + rows]
            new_sums[r0 : r0 + rows] = blk.sum(axis=1, dtype=np.float64)
            return blk[:, :n].sum(axis=0, dtype=np.float64)

        col_sums = np.zeros(n)
        for part in run_blocks(sums, starts, workers):
            col_sums += part
        # a non-finite value makes its row's float64 sum non-finite (a float32 or
        # float64 kernel value cannot overflow it otherwise): checked before any write
        if not np.all(np.isfinite(new_sums)):
            raise ValueError(
                "the kernel values of this batch are not finite (overflow): check the "
                "kernel parameters (degree, gamma, coef0) or scale the data."
            )
        row_sums = np.concatenate([self.row_sums + col_sums, new_sums])
        grand = row_sums.sum() / (N * N)
        a_new = new_sums / N - grand / 2
        shift = np.concatenate([self.shift, a_new])
        diag = np.diagonal(B[:, n:]).astype(np.float64)
        a_cast, shift_cast = a_new.astype(self.dtype), shift.astype(self.dtype)
        Vs = None if V is None or out is None else np.asarray(V, dtype=self.dtype)
        Ps = None if probe is None or probe_out is None else np.ascontiguousarray(
            probe, dtype=self.dtype)

        def finish(group: list[int]) -> np.ndarray | None:
            # T_bn^T probe_new of this worker's blocks (summed in a fixed order below)
            acc = None if Ps is None else np.zeros((n, Ps.shape[1]))
            for r0 in group:
                blk = B[r0 : r0 + rows]
                blk -= a_cast[r0 : r0 + rows, None]
                blk -= shift_cast[None, :]
                if Vs is not None:
                    out[r0 : r0 + rows] = blk[:, :n] @ Vs
                if Ps is not None:
                    r1 = n + r0 + blk.shape[0]
                    probe_out[n + r0 : r1] += blk[:, :n] @ Ps[:n]
                    acc += blk[:, :n].T @ Ps[n + r0 : r1]
            return acc

        groups = [list(starts)[w::workers] for w in range(workers)]
        parts = run_blocks(finish, [g for g in groups if g], workers)
        # the new rows' own block: exactly symmetric, whatever the rounding order
        # (after the product: it touches only the new columns)
        D = B[:, n:]
        D += D.T.copy()
        D *= 0.5
        if Ps is not None:
            for part in parts:
                probe_out[:n] += part
            probe_out[n:] += D @ Ps[n:]
        self._store(B, shift, row_sums, diag)
        return B

    def append_kernel(self, kernel: Kernel, X_new, X_all, V: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray | None]:
        """Add the rows ``X_new`` (the last rows of ``X_all``), evaluating their kernel
        values here: :meth:`append` in one sweep.

        Each cache-sized chunk of the new block row is evaluated, summed and
        multiplied (``T_bn V``) while it is in cache, on worker threads. The new rows'
        shift is 0 (the values are stored as evaluated, minus the old rows' shifts),
        for kernels bounded by their constant diagonal, whose centred values have the
        scale of the raw ones (as :meth:`build`); others take :meth:`append`.

        Returns
        -------
        Tb : ndarray of shape (b, n + b)
            The new rows as stored.
        TbV : ndarray of shape (b, q) or None
            ``T_bn V`` (float64), without ``V``: None.

        Raises
        ------
        ValueError
            If a kernel value is not finite; nothing is stored then.
        """
        n = self.n
        b, N = X_new.shape[0], X_all.shape[0]
        if N != n + b:
            raise ValueError(f"append_kernel: expected {n + b} rows in all, got {N}")
        prep = kernel.prepare(X_all, self.dtype)
        P = None if V is None else np.ascontiguousarray(V, dtype=self.dtype)
        shift = self.shift if np.any(self.shift) else None
        Tb, new_sums, col_sums, TbV, _ = _block_row(
            kernel, kernel.prepare_rows(X_new, prep), prep, n, N, self.dtype,
            n_threads(self.n_jobs), P, shift)
        if not (np.all(np.isfinite(new_sums)) and (TbV is None or np.all(np.isfinite(TbV)))):
            raise ValueError(
                "the kernel values of this batch are not finite (overflow): check the "
                "kernel parameters (degree, gamma, coef0) or scale the data."
            )
        # K 1 from T 1: the new rows' shift is 0, the old rows' a_j were subtracted
        row_sums = np.concatenate([self.row_sums + col_sums + b * self.shift,
                                   new_sums + self.shift.sum()])
        self._store(Tb, np.concatenate([self.shift, np.zeros(b)]), row_sums,
                    np.diagonal(Tb[:, n:]).astype(np.float64))
        return Tb, TbV

    def _store(self, Tb: np.ndarray, shift: np.ndarray, row_sums: np.ndarray,
               diag: np.ndarray) -> None:
        """Keep the new block row ``Tb`` as tiles (merged into a short last band) and the
        grown bookkeeping."""
        n = self.n
        b, N = Tb.shape
        if self.bands and _height(self.bands[-1]) < get_config()["growing_min_block_rows"]:
            r0, tiles = self.bands.pop()
            T = _join(tiles)
            merged = np.empty((T.shape[0] + b, N), dtype=self.dtype)
            merged[: T.shape[0], :n] = T
            merged[: T.shape[0], n:] = Tb[:, r0:n].T
            merged[T.shape[0]:] = Tb
            self.bands.extend(_split(merged, r0))
        else:
            self.bands.extend(_split(Tb, n))
        self.shift = shift
        self.row_sums = row_sums
        self.diag_k = np.concatenate([self.diag_k, diag])
        self.shape = (N, N)

    @classmethod
    def build(cls, kernel: Kernel, X: np.ndarray, *, dtype, rows: int,
              n_jobs: int | None = None, probe: np.ndarray | None = None,
              center: bool = False) -> tuple[GrowingGram, np.ndarray | None]:
        """The matrix of all rows of ``X`` at once (a batch fit): one sweep.

        Block rows of ``rows`` rows are evaluated in cache-sized chunks on worker
        threads, and each chunk's row and column sums (float64) and its products with
        ``probe`` are made while it is in cache -- the construction pass of
        :class:`TiledKernelOperator`, not :meth:`append`'s three reads of every new
        block. The values are stored unshifted (``a = 0``: for kernels bounded by their
        constant diagonal, the centred values have the scale of the raw ones, as the
        tiled operator relies on too); with ``center``, shifted afterwards to the
        exact centring (``a = r / N - g / 2``: ``T = K~``), one more sweep, for
        kernels with a large constant part (linear, polynomial).

        Parameters
        ----------
        kernel : Kernel
            A resolved vector kernel.
        X : ndarray of shape (N, d)
        dtype : float32 or float64
            Storage precision.
        rows : int
            Rows per block row (those of a stream of batches of ``rows`` rows).
        n_jobs : int or None
        probe : ndarray of shape (N, p), optional
        center : bool, default=False

        Returns
        -------
        gram : GrowingGram
        TP : ndarray of shape (N, p) or None
            ``T @ probe`` for the stored ``T`` (float64), or None without a probe.
        """
        # the sweep runs on worker threads, one BLAS thread each; the small products
        # between block rows on this thread's one: BLAS threads woken for them would
        # spin against the next block row's workers (as in KernelPCA's tiled fit)
        with blas_threads(1):
            return cls._build(kernel, X, dtype, rows, n_jobs, probe, center)

    @classmethod
    def _build(cls, kernel: Kernel, X: np.ndarray, dtype, rows: int, n_jobs: int | None,
               probe: np.ndarray | None, center: bool
               ) -> tuple[GrowingGram, np.ndarray | None]:
        N = X.shape[0]
        gram = cls(dtype, n_jobs)
        dtype = gram.dtype
        prep = kernel.prepare(X, dtype)
        fns = None if center else _tiled.compiled_rbf(kernel, prep, dtype)
        if fns is not None:
            return gram._build_compiled(fns, kernel, X, prep, rows, probe)
        P = None if probe is None else np.ascontiguousarray(probe, dtype=dtype)
        TP = None if probe is None else np.zeros((N, probe.shape[1]))
        sums = np.zeros(N)  # K 1, accumulated in float64
        diag_k = np.empty(N)
        workers = n_threads(n_jobs)
        for s in range(0, N, rows):
            e = min(N, s + rows)
            T, row, col, TPr, TPc = _block_row(kernel, kernel.prepare_rows(X[s:e], prep), prep,
                                               s, e, dtype, workers, P, transposed=True)
            sums[:s] += col
            sums[s:e] = row
            diag_k[s:e] = np.diagonal(T[:, s:])
            if P is not None:
                TP[s:e] = TPr + T[:, s:] @ P[s:e]
                TP[:s] += TPc
            gram.bands.extend(_split(T, s))
            del T  # (kept only through its tiles)
        if not (np.all(np.isfinite(sums)) and (TP is None or np.all(np.isfinite(TP)))):
            raise ValueError(
                "the kernel values are not finite (overflow): check the kernel parameters "
                "(degree, gamma, coef0) or scale the data."
            )
        gram.row_sums, gram.diag_k, gram.shape = sums, diag_k, (N, N)
        gram.shift = np.zeros(N)
        if center:
            a = sums / N - sums.sum() / (2.0 * N * N)
            gram._shift_by(a, workers)
            if TP is not None:  # (T - a 1^T - 1 a^T) P
                TP -= np.outer(a, probe.sum(axis=0)) + (a @ probe)[None, :]
        return gram, TP

    def _build_compiled(self, fns, kernel: Kernel, X: np.ndarray, prep, rows: int,
                        probe: np.ndarray | None) -> tuple[GrowingGram, np.ndarray | None]:
        """:meth:`build` by KernelPCA's compiled construction sweep (the RBF kernel in
        float32, :func:`kpca.operators._tiled.compiled_rbf`): each tile evaluated into
        its storage a slice at a time, each slice multiplied by the probe and summed
        while in cache, in one call that releases the GIL (where the NumPy chunks of
        :func:`_block_row` read every block three times, with several Python-level
        calls per chunk). The tiles are those of :meth:`_split` of block rows of
        ``rows`` rows; the workers take them largest first, each summing into its own
        accumulator, added in a fixed order (the same result for the same
        ``n_jobs``). The diagonal tiles are then made exactly symmetric, and the
        probe's product corrected by the (round-off sized) change."""
        N = X.shape[0]
        width = _tiled.NATIVE_WIDTH[self.dtype]
        p = 0 if probe is None else probe.shape[1]
        V = np.zeros((N, max(width, -(-p // width) * width)), dtype=self.dtype)
        if p:
            V[:, :p] = probe
        side = max(1, int(get_config()["growing_tile_cols"]))
        tiles = []  # (band's first row, its rows, first column, tile)
        for s in range(0, N, rows):
            e = min(N, s + rows)
            for a in range(s, e, side):
                h = min(e, a + side) - a
                band = [(c0, np.empty((h, min(a, c0 + side) - c0), dtype=self.dtype))
                        for c0 in range(0, a, side)]
                band.append((a, np.empty((h, h), dtype=self.dtype)))
                tiles.extend((a, h, c0, T) for c0, T in band)
                self.bands.append((a, band))
        workers = min(n_threads(self.n_jobs), len(tiles))
        groups: list[list[tuple[int, int, int, np.ndarray]]] = [[] for _ in range(workers)]
        load = [0] * workers
        for tile in sorted(tiles, key=lambda t: -t[3].size):  # (a stable sort)
            w = load.index(min(load))
            groups[w].append(tile)
            load[w] += tile[3].size
        diag_value = kernel.constant_diag

        def work(group) -> np.ndarray:
            W = np.zeros((N, 1 + V.shape[1]))
            prepared = (-1, None)  # the last band's rows prepared, reused by its tiles
            for a, h, c0, T in sorted(group, key=lambda t: (t[0], t[2])):
                if prepared[0] != a:
                    prepared = (a, kernel.prepare_rows(X[a : a + h], prep))
                _tiled.compiled_build(fns, prepared[1], prep[c0 : c0 + T.shape[1]], T, V,
                                      W, a, c0, c0 == a, diag_value, True)
            return W

        parts = run_blocks(work, [g for g in groups if g], workers)
        W = parts[0]
        for part in parts[1:]:
            W += part
        # the diagonal tiles exactly symmetric, whatever the rounding order of the
        # evaluation; T P corrected by the change (a float32 rounding's size)
        for a, band in self.bands:
            D = band[-1][1]
            before = D.copy()
            D += D.T.copy()
            D *= 0.5
            # exact in float32 (Sterbenz: a value and its pair's mean are within a
            # factor 2 of each other), and a float32 product of round-off-sized values
            change = D - before
            h = D.shape[0]
            W[a : a + h, 0] += change.sum(axis=1, dtype=np.float64)
            if p:
                W[a : a + h, 1:1 + p] += change @ V[a : a + h, :p]
        sums = W[:, 0].copy()
        TP = None if probe is None else np.ascontiguousarray(W[:, 1:1 + p])
        if not (np.all(np.isfinite(sums)) and (TP is None or np.all(np.isfinite(TP)))):
            raise ValueError(
                "the kernel values are not finite (overflow): check the kernel parameters "
                "(degree, gamma, coef0) or scale the data."
            )
        self.row_sums, self.shape = sums, (N, N)
        self.diag_k = np.concatenate([np.diagonal(band[-1][1]) for _, band in self.bands]
                                     ).astype(np.float64)
        self.shift = np.zeros(N)
        return self, TP

    def _shift_by(self, a: np.ndarray, workers: int) -> None:
        """``T -= a 1^T + 1 a^T`` in place (``a`` added to the stored shift)."""
        a_cast = a.astype(self.dtype)

        def work(band: tuple[int, list[tuple[int, np.ndarray]]]) -> None:
            # a_i + a_j in one subtraction, a few rows at a time: the diagonal tiles
            # stay exactly symmetric (the sum commutes; two subtractions would not)
            r0, tiles = band
            for c0, T in tiles:
                step = max(1, get_config()["growing_piece_bytes"] // max(1, T[0].nbytes))
                cols = a_cast[None, c0 : c0 + T.shape[1]]
                for i in range(0, T.shape[0], step):
                    rows = T[i : i + step]
                    rows -= a_cast[r0 + i : r0 + i + rows.shape[0], None] + cols

        run_blocks(work, self.bands, workers)
        self.shift = self.shift + a

    def copy(self) -> GrowingGram:
        """A new object sharing the stored blocks: they are never written after being
        added, so appending to the copy leaves this one as it was."""
        out = GrowingGram(self.dtype, self.n_jobs)
        out.bands = list(self.bands)
        out.shift, out.row_sums, out.diag_k = self.shift, self.row_sums, self.diag_k
        out.shape = self.shape
        return out

    def astype(self, dtype) -> GrowingGram:
        """The same matrix stored in ``dtype`` (a new object; used when a stream grows
        past the rows where float64 storage is the default)."""
        out = self.copy()
        out.dtype = np.dtype(dtype)
        out.bands = [(r0, [(c0, T.astype(dtype)) for c0, T in tiles])
                     for r0, tiles in self.bands]
        return out

    # ------------------------------------------------------------------ statistics
    def shifted_row_sums(self) -> np.ndarray:
        """``T 1 = K 1 - n a - (1^T a) 1`` (float64)."""
        return self.row_sums - self.n * self.shift - self.shift.sum()

    def noise_floor(self) -> float:
        """``n eps max K_ii``: eigenvalues of this size are round-off of the stored
        matrix itself (the level the batch fit's post-processing sets to 0)."""
        return self.n * float(np.finfo(self.dtype).eps) * float(
            np.max(np.abs(self.diag_k), initial=0.0))

    def centering(self) -> Centering:
        """The centring of ``T`` (which is the centring of ``K``: ``H T H = H K H``)."""
        t = self.shifted_row_sums() / max(self.n, 1)
        return Centering(t, float(t.mean()) if t.size else 0.0)

    def kernel_centering(self) -> Centering:
        """The centring statistics of ``K`` itself (for new rows' kernel values)."""
        r = self.row_sums / max(self.n, 1)
        return Centering(r, float(r.mean()) if r.size else 0.0)

    # ------------------------------------------------------------------ operator
    def diag(self) -> np.ndarray:
        return (self.diag_k - 2 * self.shift).astype(self.dtype)

    def row_means(self) -> np.ndarray:
        return self.shifted_row_sums() / max(self.n, 1)

    @property
    def nbytes(self) -> int:
        return sum(T.nbytes for _, tiles in self.bands for _, T in tiles)

    @staticmethod
    def bytes_for(n: int, itemsize: int, batch: int = 0) -> int:
        """Bytes of the stored lower block rows of an ``n``-row matrix (about n^2 / 2;
        a block row stores its full diagonal block), plus the new kernel values of a
        ``batch``-row append in flight."""
        diag = max(batch, get_config()["growing_min_block_rows"])
        return (n * (n + 1) // 2 + diag * n + batch * n) * itemsize

    def matmat(self, V: np.ndarray) -> np.ndarray:
        """``T @ V`` (float64 accumulation across tiles; returned in float64).

        One read of each stored tile for both of its products: kpca's compiled kernel
        where this CPU has one (``V``'s columns padded to whole vectors only past half
        a vector, :func:`kpca.operators._tiled.native_columns`),
        else NumPy's products slice by slice
        (:meth:`TiledKernelOperator._tile_product`). The tiles are shared between the
        workers, largest first, each worker summing into its own accumulator; the
        accumulators are added in a fixed order (the same result for the same
        ``n_jobs``)."""
        V = np.asarray(V)
        vec = V.ndim == 1
        V = V.reshape(self.n, -1)
        q = V.shape[1]
        width = _tiled.native_columns(q, self.dtype)
        if width is not None and width != q:
            Vs = np.zeros((self.n, width), dtype=self.dtype)
            Vs[:, :q] = V
        else:
            Vs = np.ascontiguousarray(V, dtype=self.dtype)
        tiles = [(a, c0, T) for a, band in self.bands for c0, T in band]
        workers = min(n_threads(self.n_jobs), len(tiles))
        groups: list[list[tuple[int, int, np.ndarray]]] = [[] for _ in range(workers)]
        load = [0] * workers
        for tile in sorted(tiles, key=lambda t: -t[2].size):  # (a stable sort)
            w = load.index(min(load))
            groups[w].append(tile)
            load[w] += tile[2].size

        def work(group) -> np.ndarray:
            W = np.zeros((self.n, Vs.shape[1]), dtype=np.float64)
            for a, c0, T in group:
                if width:
                    _tiled.native_tile_product(T, c0 == a, Vs, W, a, c0)
                else:
                    _tiled.TiledKernelOperator._tile_product(T, c0 == a, Vs, W, a, c0)
            return W

        parts = run_blocks(work, [g for g in groups if g], workers)
        out = parts[0] if parts else np.zeros((self.n, Vs.shape[1]))
        for p in parts[1:]:
            out += p
        out = out[:, :q] if out.shape[1] != q else out
        return out.ravel() if vec else out

    def to_dense(self) -> np.ndarray:
        A = np.empty(self.shape, dtype=self.dtype)
        for r0, tiles in self.bands:
            for c0, T in tiles:
                h, c = T.shape
                A[r0 : r0 + h, c0 : c0 + c] = T
                if c0 != r0:
                    A[c0 : c0 + c, r0 : r0 + h] = T.T
        return A


def _height(band: tuple[int, list[tuple[int, np.ndarray]]]) -> int:
    return band[1][-1][1].shape[0]


def _join(tiles: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """A band's rows from its tiles (a new array)."""
    return np.hstack([T for _, T in tiles])


def _split(T: np.ndarray, r0: int) -> list[tuple[int, list[tuple[int, np.ndarray]]]]:
    """The block row ``T`` (rows ``r0:r0 + m`` against columns ``0:r0 + m``) as bands of
    contiguous tiles of at most ``growing_tile_cols`` (a setting) rows and columns
    (copies, except a block row of the first rows that is one tile: ``T`` itself); the
    diagonal tile of a band is square and as symmetric as ``T``."""
    side = max(1, int(get_config()["growing_tile_cols"]))
    m = T.shape[0]
    bands = []
    for s in range(0, m, side):
        e = min(m, s + side)
        a = r0 + s
        rows = T[s:e]
        tiles = [(c0, np.ascontiguousarray(rows[:, c0 : min(a, c0 + side)]))
                 for c0 in range(0, a, side)]
        tiles.append((a, np.ascontiguousarray(rows[:, a : r0 + e])))
        bands.append((a, tiles))
    return bands


def _block_row(kernel: Kernel, X_rows, prep, s: int, e: int, dtype: np.dtype, workers: int,
               P: np.ndarray | None = None, shift: np.ndarray | None = None,
               transposed: bool = False):
    """Rows ``s:e`` of the kernel matrix against columns ``0:e`` (a new block row),
    evaluated in cache-sized chunks on worker threads; each chunk's float64 sums and
    products are made while it is in cache, then the diagonal block is made exactly
    symmetric.

    Parameters
    ----------
    X_rows : the rows ``s:e`` prepared (``kernel.prepare_rows``)
    prep : the columns ``0:`` prepared (``kernel.prepare``; at least ``e`` of them)
    P : ndarray of shape (>= s, p), optional, in ``dtype``
        The block row's old columns' products ``T[:, :s] @ P[:s]`` and (with
        ``transposed``) ``T[:, :s]^T @ P[s:e]``.
    shift : ndarray of shape (s,), optional
        The old rows' shifts, subtracted from their columns (the new rows' own is 0).

    Returns
    -------
    T : ndarray of shape (e - s, e), the stored block row
    row_sums : ndarray of shape (e - s,), ``T 1`` over the block row (float64)
    col_sums : ndarray of shape (s,), ``T[:, :s]^T 1`` (float64)
    TP_rows : ndarray of shape (e - s, p) or None
    TP_cols : ndarray of shape (s, p) or None (with ``transposed``)
    """
    T = np.empty((e - s, e), dtype=dtype)
    step = int(max(8, get_config()["growing_piece_bytes"] // max(1, e * T.itemsize)))
    chunks = list(range(0, e - s, step))
    groups = [chunks[w::workers] for w in range(min(workers, len(chunks)))]
    rows = np.empty(e - s)
    TP_rows = None if P is None else np.empty((e - s, P.shape[1]))
    diag_value = kernel.constant_diag
    shift_cast = None if shift is None else shift.astype(dtype)
    # float32 storage: the old columns' row sums ride as a column of ones in the
    # product with P (BLAS's float32 sums over the block row, as a tile product's),
    # the column sums as a product with ones over the chunk's few rows (float32),
    # accumulated in float64 across chunks: the float64 reductions of the float32
    # values cost a quarter of an update's kernel values (issue 31)
    blas_sums = dtype == np.float32
    P1 = None
    if P is not None and blas_sums:
        P1 = np.empty((s, P.shape[1] + 1), dtype=dtype)
        P1[:, :-1] = P[:s]
        P1[:, -1] = 1
    ones = np.ones(step, dtype=dtype) if blas_sums else None

    def work(group: list[int]):
        # column sums and T^T P of this worker's chunks (summed in a fixed order
        # below); the chunks' own rows are written in place
        col = np.zeros(s)
        acc = np.zeros((s, P.shape[1])) if transposed and P is not None else None
        for a0 in group:
            a1 = min(e - s, a0 + step)
            blk = T[a0:a1]
            kernel.block_prepared(X_rows[a0:a1], prep[:e], out=blk)
            if diag_value is not None:
                i = np.arange(a0, a1)
                blk[i - a0, s + i] = diag_value
            if shift_cast is not None:
                blk[:, :s] -= shift_cast[None, :]
            if P1 is not None:
                out = blk[:, :s] @ P1
                TP_rows[a0:a1] = out[:, :-1]
                rows[a0:a1] = out[:, -1]
                rows[a0:a1] += blk[:, s:].sum(axis=1, dtype=np.float64)
            else:
                rows[a0:a1] = blk.sum(axis=1, dtype=np.float64)
                if P is not None:
                    TP_rows[a0:a1] = blk[:, :s] @ P[:s]
            if ones is not None:
                col += ones[: a1 - a0] @ blk[:, :s]
            else:
                col += blk[:, :s].sum(axis=0, dtype=np.float64)
            if acc is not None:
                acc += blk[:, :s].T @ P[s + a0 : s + a1]
        return col, acc

    col_sums = np.zeros(s)
    TP_cols = np.zeros((s, P.shape[1])) if transposed and P is not None else None
    for col, acc in run_blocks(work, groups, len(groups)):
        col_sums += col
        if acc is not None:
            TP_cols += acc
    D = T[:, s:]
    D += D.T.copy()  # exactly symmetric, whatever the rounding order
    D *= 0.5
    return T, rows, col_sums, TP_rows, TP_cols


class NewColumns:
    """The centred kernel columns of the rows a batch added, ``E = K~[:, new]``.

    ``E = H (T_b^T - t 1^T / N)`` (N x b), from the batch's shifted rows ``T_b``
    (b x N) and the row sums ``t = T 1`` of the grown matrix, never formed: the
    update needs only its products (docs/math.md, "Incremental kernel PCA").

    Parameters
    ----------
    Tb : ndarray of shape (b, N)
        The new rows as :meth:`GrowingGram.append` returned them.
    t : ndarray of shape (N,)
        :meth:`GrowingGram.shifted_row_sums` after the append.
    """

    def __init__(self, Tb: np.ndarray, t: np.ndarray):
        self.Tb = Tb
        self.t = np.asarray(t, dtype=np.float64)
        self.b, self.N = Tb.shape
        self.n = self.N - self.b
        # column means of T_b^T - t 1^T / N (the part H removes); T_b 1 = t[n:]
        self._col_means = (self.t[self.n:] - self.t.mean()) / self.N

    def _cast(self, A: np.ndarray) -> np.ndarray:
        return np.asarray(A, dtype=self.Tb.dtype)

    def matmat(self, U: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``E @ U`` for ``U`` of shape (b, r): shape (N, r), float64, Fortran order.

        With ``out`` (float64, shape (N, r), Fortran-contiguous), ``E @ U`` is added
        to it in place and ``out`` is returned: no float64 (N, r) result of its own
        (first writes to fresh pages cost about 3 us per 4 KiB on a virtual machine:
        3.4 MB of them at 10,500 x 40).

        Raises
        ------
        ValueError
            If ``out`` is not a Fortran-contiguous float64 array of shape (N, r).
        """
        if out is not None and (out.dtype != np.float64 or not out.flags.f_contiguous
                                or out.shape != (self.N, U.shape[1])):
            raise ValueError(
                f"NewColumns.matmat: out must be a Fortran-contiguous float64 array of "
                f"shape {(self.N, U.shape[1])}; got {out.dtype} {out.shape}"
                f"{'' if out.flags.f_contiguous else ', not Fortran-contiguous'}")
        # (U^T T_b)^T: one product over T_b as stored (b x N, C order), whose transpose
        # is the (N, r) product in Fortran order. (T_b^T's rows split over two worker
        # threads, each a product with a strided slice, took 10 ms at 6,500 rows,
        # 500 x 40; this form 4.8 ms on one BLAS thread, as in an update, 2.7 on two.)
        P = (self._cast(U).T @ self.Tb).T
        if out is None:
            out = np.asarray(P, dtype=np.float64, order="F")
        else:
            out += P
        # out -= [t / N, 1] [1^T U; m^T U]: a rank-two product added in place (BLAS's
        # beta = 1), one sweep (a NumPy broadcast made two (N, r) temporaries: 6 ms of
        # a 10,500-row update's, against 0.2 ms). On the caller's BLAS threads: an
        # update holds them to one (two-thread BLAS left spinning slows its passes)
        L = np.empty((self.N, 2), order="F")
        L[:, 0] = self.t / self.N
        L[:, 1] = 1.0
        return _subtract_product(out, L, np.stack([U.sum(axis=0), self._col_means @ U]))

    def start_products(self, KV_old: np.ndarray, t_old: np.ndarray, V: np.ndarray,
                       TbV: np.ndarray) -> np.ndarray:
        """``K~ [V; 0]``, the grown centred matrix times old directions padded with zeros,
        from what is known without a pass (docs/math.md, "Incremental kernel PCA").

        Parameters
        ----------
        KV_old : ndarray of shape (n, q)
            ``K~_old V``, the old centred matrix's products (``V`` orthogonal to 1).
        t_old : ndarray of shape (n,)
            The old shifted row sums (:meth:`GrowingGram.shifted_row_sums` before the
            append).
        V : ndarray of shape (n, q)
        TbV : ndarray of shape (b, q)
            ``T_bn V``, the new rows' shifted values times ``V``.

        Returns
        -------
        ndarray of shape (N, q), float64, Fortran order (the update's blocks' order)
        """
        n, N = self.n, self.N
        TV = np.empty((N, V.shape[1]), order="F")
        # T_old V = K~_old V + 1 (t_old^T V) / n; then H (T [V; 0] - t (1^T V) / N)
        np.add(KV_old, ((t_old @ V) / n)[None, :], out=TV[:n])
        TV[n:] = TbV
        _subtract_product(TV, self.t[:, None] / N, V.sum(axis=0)[None, :])
        TV -= TV.mean(axis=0)[None, :]
        return TV

    def new_block(self) -> np.ndarray:
        """``E[n:]``, the (b, b) block among the new rows (float64)."""
        E = self.Tb[:, self.n:].T.astype(np.float64)
        E -= (self.t[self.n:] / self.N)[:, None]
        E -= self._col_means[None, :]
        return E


def _subtract_product(out: np.ndarray, L: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``out -= L @ M`` in place for a Fortran-contiguous float64 ``out`` (BLAS's
    ``dgemm`` with beta = 1: one sweep of ``out``, no temporary of its shape, on the
    caller's BLAS threads); returns ``out``."""
    if out.size:
        dgemm(-1.0, L, M, beta=1.0, c=out, overwrite_c=True)
    return out
