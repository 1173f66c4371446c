"""Tiled symmetric backend: stored, matrix-free, or anything between.

``K = k(X, X)`` is cut into square tiles ``(I, J)``; only the lower triangle
``J <= I`` is ever evaluated (symmetry halves the kernel work and the memory).
Tiles that fit in the memory budget are computed once and kept (with
``partial=False``, as ``KernelPCA`` asks: only when all of them fit); the others are
recomputed on every pass and dropped at once, so memory stays bounded whatever
``n`` is. ``K @ V`` is accumulated tile by tile::

    W[I] += K_IJ @ V[J]        and, below the diagonal,   W[J] += K_IJ.T @ V[I]

by ``n_jobs`` worker threads, which take groups of tiles as they come free, each group
with its own accumulator, summed in a fixed order (:func:`tile_groups`; BLAS and NumPy
release the GIL). Centring (``center_inplace``) is applied to each product for kernels bounded by
their constant diagonal (RBF, Laplacian), else inside the tiles: kept tiles are
centred once, recomputed ones right after evaluation, which keeps float32 storage
accurate where centring cancels most of ``K``.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _native
from .._config import get_config
from .._parallel import run_blocks
from ..kernels import RBF, Kernel, RBFPrepared
from ._base import KernelOperator
from ._centering import Centering
from ._gram import n_threads

#: the optional compiled one-sweep product (or None)
_tileprod_ext = _native.optional(f"{__package__}._tileprod")

logger = logging.getLogger("kpca")

#: the variant of the compiled one-sweep product that runs (:mod:`kpca._native`: the
#: best this CPU runs, or the one ``KPCA_NATIVE`` names)
NATIVE_VARIANT = _native.select(_tileprod_ext, "tile product", _native.REQUEST)
#: its functions (``product``), or None: NumPy's products
_tileprod = NATIVE_VARIANT.functions
#: whether stored tiles use the compiled one-sweep product (:func:`native_tile_product`)
NATIVE = _tileprod is not None
#: the compiled kernel works on vectors of this many columns (the values
#: of one of the variant's vectors), by tile dtype
NATIVE_WIDTH = ({} if _tileprod is None else
                dict(zip((np.dtype(np.float32), np.dtype(np.float64)), _tileprod.widths,
                         strict=True)))


def native_columns(q: int, dtype: Any) -> int | None:
    """Columns to hand the compiled one-sweep product for a block of ``q`` (the block
    padded with zero columns to that many), or None where it does not run for
    ``dtype``: ``q`` where its last ``q mod width`` columns are cheaper in the
    kernel's dot-product form than the zero columns completing a vector
    (:func:`kpca._native.tail_is_cheap`), else the next multiple of the vector's
    :data:`NATIVE_WIDTH`.
    """
    width = NATIVE_WIDTH.get(np.dtype(dtype)) if NATIVE else None
    if width is None:
        return None
    return q if _native.tail_is_cheap(q, width) else -(-q // width) * width


# the sizes of pieces and slices are settings (kpca._config): fused_rows and fused_cols
# (``transform``'s pieces), l2_cache_bytes (the operator's pieces, :func:`fused_piece`)
# and slice_rows (the slices of a stored float32 tile, centred and multiplied while
# they are in cache)


#: SciPy's BLAS ``sgemm`` as a PyCapsule (:func:`kpca._native.sgemm`)
_sgemm = _native.sgemm


def fused_piece(itemsize: int) -> tuple[int, int]:
    """Rows and columns of the pieces in which recomputed tiles are evaluated and
    multiplied: the setting ``fused_cols`` columns and rows (a multiple of 128, 128 to
    1,024) for about half of a core's L2 cache (the setting ``l2_cache_bytes``). On a
    2 MB L2 at 40,000 rows (matrix-free, float32, 32 columns): 512 x 512 pieces 1.24 s
    a pass, 256 x 512 1.40 s."""
    cfg = get_config()
    cols = cfg["fused_cols"]
    rows = cfg["l2_cache_bytes"] // 2 // (cols * itemsize)
    return max(128, min(1024, rows // 128 * 128)), cols


def tile_size(n: int, itemsize: int, memory_limit: int | None = None, workers: int = 1) -> int:
    """Tile side: large enough for efficient BLAS, small enough (<= 16 MB) to keep
    per-thread workspace modest, and small enough that the workspace of all
    threads (two tile-sized temporaries each) takes at most a quarter of
    ``memory_limit``, so that a small budget means small tiles, not an error."""
    side = int(np.sqrt(16 * 2**20 / itemsize))  # 2048 for float32
    if memory_limit is not None:
        side = min(side, int(np.sqrt(memory_limit / (4 * 2 * workers * itemsize))))
    return max(16, min(n, side))


@dataclass(frozen=True)
class TileLayout:
    """How a :class:`TiledKernelOperator` cuts and keeps ``K`` (what it will hold)."""

    #: tile side and the number of lower-triangular tiles
    side: int
    n_tiles: int
    #: tiles kept (computed once, read by every pass); the others are recomputed
    n_keep: int
    #: threads that evaluate tiles, and the bytes of their temporaries
    workers: int
    workspace: int
    #: bytes of one (full) tile
    tile_bytes: int
    #: bytes of the kept tiles (those at the last rows and columns are smaller)
    stored_bytes: int = 0

    @property
    def fraction_stored(self) -> float:
        return self.n_keep / self.n_tiles

    @property
    def nbytes(self) -> int:
        """Bytes the operator holds at most: kept tiles and the workers' temporaries."""
        return self.stored_bytes + self.workspace


def tile_layout(n: int, itemsize: int, memory_limit: int | None = None,
                n_jobs: int | None = None, *, n_temporaries: int = 0, partial: bool = True,
                tile: int | None = None) -> TileLayout:
    """The tiles of an ``n``-row operator under ``memory_limit``: their side
    (:func:`tile_size`), how many are kept and the workers' workspace; the operator is
    built by this rule, and a fit's plan (:mod:`kpca._plan`) reads it without building.

    Raises ValueError when ``memory_limit`` is below the workspace of the threads.
    """
    cores = n_threads(n_jobs)
    side = tile or tile_size(n, itemsize, memory_limit, cores)
    nb = -(-n // side)
    n_tiles = nb * (nb + 1) // 2
    # one tile: threads would only add overhead
    workers = cores if n_tiles > 1 else 1
    tile_bytes = side * side * itemsize
    workspace = workers * tile_bytes * (1 + n_temporaries)
    if memory_limit is None:
        n_keep = n_tiles
    else:
        n_keep = int(max(0, memory_limit - workspace) // max(1, tile_bytes))
        if memory_limit < workspace:
            raise ValueError(
                f"memory_limit={memory_limit} bytes is below the workspace of "
                f"{workers} thread(s) x one {side}x{side} tile ({workspace} bytes); "
                "raise memory_limit or lower n_jobs."
            )
    if not partial and n_keep < n_tiles:
        n_keep = 0
    n_keep = min(n_keep, n_tiles)
    return TileLayout(side, n_tiles, n_keep, workers, workspace, tile_bytes,
                      _kept_bytes(n, side, n_keep, itemsize))


def _kept_bytes(n: int, side: int, n_keep: int, itemsize: int) -> int:
    """Bytes of the first ``n_keep`` lower-triangular tiles, in the operator's order
    (row of tiles ``i``, then column ``j <= i``)."""
    if n_keep <= 0:
        return 0
    sizes = [min(side, n - s) for s in range(0, n, side)]
    total, t = 0, 0
    for i, si in enumerate(sizes):
        row = si * sum(sizes[: i + 1])
        if t + i + 1 <= n_keep:  # the whole row of tiles is kept
            total, t = total + row, t + i + 1
            continue
        total += si * sum(sizes[: n_keep - t])
        break
    return total * itemsize


def native_tile_product(T: np.ndarray, diagonal: bool, V: np.ndarray, W: np.ndarray,
                        r0: int, c0: int, lead: int = 0,
                        fill: Callable[[int, int], None] | None = None) -> None:
    """``W[I, lead:] += T V[J]`` and, below the diagonal, ``W[J, lead:] += T^T V[I]``
    for a stored tile ``T = K[I, J]`` (rows from ``r0``, columns from ``c0``), by the
    compiled kernel (:data:`NATIVE`), which reads each value once for both products;
    with ``lead = 1``, ``W[:, 0]`` gets the tile's row and column sums too.

    With ``fill``, the tile is being built: ``fill(a, e)`` writes its rows ``a:e``,
    ``slice_rows`` (a setting) at a time, and each slice is multiplied while it is still in
    cache (one sweep over the tile's memory, not three: evaluation, exponential and
    product; at 20,000 rows, float32, the construction pass 0.28 s against 0.31 s).

    Each tile's products are summed in the tile's dtype (as a BLAS ``gemm`` would)
    and added to ``W`` (float64). Measured on this project's 2-core machine, 16
    columns: a pass over the stored float32 K of 20,000 rows in 0.065-0.07 s, against
    0.15 s for NumPy's two products per slice
    (:meth:`TiledKernelOperator._tile_product`).

    Parameters
    ----------
    T : ndarray of shape (m, c), float32 or float64, C-contiguous
    diagonal : bool
        ``T`` is a diagonal tile (square and symmetric: one product).
    V : ndarray of shape (n, b), ``T``'s dtype, C-contiguous
        Any ``b``: whole vectors of :data:`NATIVE_WIDTH` columns for that dtype, the
        rest in the kernel's dot-product form (:func:`native_columns`).
    W : ndarray of shape (n, lead + b), float64
        Accumulated in place.
    """
    m, c = T.shape
    b = V.shape[1]
    WI = np.zeros((m, b), dtype=T.dtype)
    # (not written on a diagonal tile, which is square: WI serves)
    WJ = WI if diagonal else np.zeros((c, b), dtype=T.dtype)
    rs = np.zeros(m, dtype=T.dtype) if lead else None
    cs = np.zeros(c, dtype=T.dtype) if lead and not diagonal else None
    VJ, VI = V[c0 : c0 + c], V[r0 : r0 + m]
    step = get_config()["slice_rows"]
    # the portable variant's float32 products by BLAS, slice by slice in cache, where
    # the CPU runs a wider variant (kpca._native.blas_products)
    blas = ((_sgemm(), step) if T.dtype == np.float32 and _native.blas_products(_tileprod)
            else ())
    if fill is None:
        _tileprod.product(T, VJ, VI, WI, WJ, not diagonal, rs, cs, *blas)
    else:  # the kernel adds into WJ and cs, so slices accumulate
        for a in range(0, m, step):
            e = min(m, a + step)
            fill(a, e)
            _tileprod.product(T[a:e], VJ, VI[a:e], WI[a:e], WJ, not diagonal,
                              None if rs is None else rs[a:e], cs, *blas)
    W[r0 : r0 + m, lead:] += WI
    if lead:
        W[r0 : r0 + m, 0] += rs
    if not diagonal:
        W[c0 : c0 + c, lead:] += WJ
        if lead:
            W[c0 : c0 + c, 0] += cs


def compiled_rbf(kernel: Kernel, prep: Any, dtype: Any) -> Any:
    """The compiled loops over a tile's pieces or slices (the functions of the variant
    in use, :data:`NATIVE`: ``fused_rbf``, ``build_rbf``), or None where they do not
    apply: the RBF kernel in float32 with few enough features for its compiled block
    (``prep``: the columns as ``kernel.prepare`` made them; their panels are packed
    here, once)."""
    fns = _tileprod if NATIVE else None
    if (getattr(fns, "fused_rbf", None) is None or getattr(fns, "build_rbf", None) is None
            or np.dtype(dtype) != np.float32
            or not isinstance(kernel, RBF) or not isinstance(prep, RBFPrepared)
            or not prep.compiled()):
        return None
    prep.pack()  # the columns' panels, once (where the kernels' block is compiled)
    return fns


def compiled_build(fns: Any, X_rows: Any, cols: Any, T: np.ndarray, V: np.ndarray,
                   W: np.ndarray, r0: int, c0: int, diagonal: bool, diag_value: Any,
                   lead: bool) -> None:
    """Tile ``T = k(rows, cols)`` (rows from ``r0``, columns from ``c0``) evaluated into
    ``T`` ``slice_rows`` (a setting) rows at a time by ``fns.build_rbf``
    (:func:`compiled_rbf`), each slice multiplied by ``V`` into ``W`` while it is in
    cache, as :func:`native_tile_product`; ``lead``: ``W``'s first column gets the
    tile's row (and column) sums. ``X_rows``: the rows prepared
    (``kernel.prepare_rows``); ``cols``: the columns' prepared slice."""
    fns.build_rbf(X_rows.aug, cols.aug, cols.panels(), X_rows.clamp, T, V, W, r0, c0,
                  diagonal, get_config()["slice_rows"], diag_value, bool(lead),
                  _sgemm() if _native.blas_products(fns) else None)


@dataclass(frozen=True)
class _TileGroup:
    """Tiles a pass hands to one thread at a time, with their own accumulator: those
    of tile rows ``I`` and tile columns ``J`` of two runs of tile rows (one run on the
    diagonal). Only the rows of ``K`` the two runs hold are touched, so the group's
    ``V`` and accumulator are those rows, gathered (``segments``: ``(first, end,
    position)``, each run's rows of ``K`` and where they start in the group's)."""

    #: ``(t, (i, j))``: each tile's index and its tile row and column
    tiles_at: tuple[tuple[int, tuple[int, int]], ...]
    segments: tuple[tuple[int, int, int], ...]

    @property
    def n_rows(self) -> int:
        return sum(a1 - a0 for a0, a1, _ in self.segments)

    def local(self, row: int) -> int:
        """Where row ``row`` of ``K`` is in the group's rows."""
        for a0, a1, at in self.segments:
            if a0 <= row < a1:
                return at + row - a0
        raise IndexError(row)

    def gather(self, V: np.ndarray) -> np.ndarray:
        """The group's rows of ``V`` (a view where they are one run, C-contiguous)."""
        if len(self.segments) == 1:
            a0, a1, _ = self.segments[0]
            return V if (a0, a1) == (0, len(V)) else V[a0:a1]
        return np.concatenate([V[a0:a1] for a0, a1, _ in self.segments])

    def work(self, bounds: list[int], store: dict, build: bool) -> float:
        """Modelled work of a pass over the group: its tiles' areas (half on the
        diagonal), a tenth for a kept tile read (not evaluated) outside the
        construction pass."""
        total = 0.0
        for t, (i, j) in self.tiles_at:
            area = (bounds[i + 1] - bounds[i]) * (bounds[j + 1] - bounds[j])
            total += area * (0.5 if i == j else 1.0) * (0.1 if not build and t in store
                                                          else 1.0)
        return total


def tile_groups(nb: int, bounds: list[int], workers: int) -> list[_TileGroup]:
    """The groups of the lower-triangular tiles of ``nb`` tile rows (``bounds``: their
    first rows, then ``n``) that a pass hands to ``workers`` threads.

    The tile rows are cut into ``s`` runs of near-equal length, and each pair of runs
    ``p >= q`` is a group (``s (s + 1) / 2`` of them), with ``s`` the least for which
    there are ``pass_groups_per_worker`` (a setting) groups a worker, at most one run a
    worker and a tile row a run; one group with a single worker. The pool's threads
    take the groups as they come free, largest first, so that a slow or shared core
    delays the pass by one small group, not by a fixed share of the tiles; each group
    adds into its own accumulator and the pass sums them in the groups' order
    (:meth:`TiledKernelOperator._sum_parts`), so the result does not depend on which
    thread ran which group. The accumulators hold ``s n`` rows in all: at most ``n``
    a worker."""
    if workers <= 1 or nb <= 1:
        runs = [(0, nb)]
    else:
        want = get_config()["pass_groups_per_worker"] * workers
        s = 1
        while s < min(nb, workers) and s * (s + 1) // 2 < want:
            s += 1
        runs = [(nb * r // s, nb * (r + 1) // s) for r in range(s)]
    groups = []
    for p, (pi0, pi1) in enumerate(runs):
        for q, (qj0, qj1) in enumerate(runs[: p + 1]):
            # tile (i, j) is the (i (i + 1) / 2 + j)-th of the operator's tiles
            tiles = tuple((i * (i + 1) // 2 + j, (i, j)) for i in range(pi0, pi1)
                          for j in range(qj0, min(qj1, i + 1)))
            rows_p = (bounds[pi0], bounds[pi1])
            if p == q:
                segments = ((rows_p[0], rows_p[1], 0),)
            else:
                segments = ((rows_p[0], rows_p[1], 0),
                            (bounds[qj0], bounds[qj1], rows_p[1] - rows_p[0]))
            groups.append(_TileGroup(tiles, segments))
    return groups


class TiledKernelOperator(KernelOperator):
    """Symmetric kernel matrix in lower-triangular tiles under a memory budget.

    Parameters
    ----------
    kernel : Kernel
        Resolved kernel.
    X : array-like or sparse of shape (n, d)
        Training rows.
    dtype : float32 or float64
        Precision of the tiles (products are accumulated in float64).
    memory_limit : int or None
        Bytes the operator may hold: kept tiles plus the workspace of the
        threads. ``None``: keep every tile.
    n_jobs : int or None
        Worker threads (None: all cores).
    tile : int, default=None
        Tile side (default :func:`tile_size`). Tests pass a tiny value to force
        many tiles.
    progress : callable, default=None
        ``progress(event, info)`` after each pass (logging/progress bars).
    probe : ndarray of shape (n, b), default=None
        A block whose product with ``K`` is computed in the construction pass
        (fused with the row sums), for :meth:`initial_block`: an iterative solver
        then starts without spending a pass of its own.
    piece : (int, int), default=None
        Rows and columns of the pieces in which a tile that is not stored is
        evaluated and multiplied (default :func:`fused_piece`). Tests pass
        tiny values to force many pieces.
    partial : bool, default=True
        Keep as many tiles as the budget holds. ``False``: all of them or none
        (``KernelPCA``'s choice; the robust estimators, which make many passes, keep
        what fits: writing a kept tile into fresh memory costs more than
        the evaluations it saves in the few passes of a fit, unless every pass
        becomes a read; docs/benchmarks.md, issue 17).

    Notes
    -----
    Construction makes one pass over all tiles: it stores those that fit and
    accumulates the row sums ``K 1`` that centring needs.
    """

    def __init__(
        self,
        kernel: Kernel,
        X: Any,
        *,
        dtype: Any = np.float64,
        memory_limit: int | None = None,
        n_jobs: int | None = None,
        tile: int | None = None,
        progress=None,
        probe: np.ndarray | None = None,
        piece: tuple[int, int] | None = None,
        partial: bool = True,
    ):
        self.kernel = kernel
        self.X = X
        n = X.shape[0]
        self.shape = (n, n)
        self.dtype = np.dtype(dtype)
        self.progress = progress
        self.piece = piece or fused_piece(self.dtype.itemsize)
        cores = n_threads(n_jobs)
        lay = tile_layout(n, self.dtype.itemsize, memory_limit, n_jobs,
                          n_temporaries=kernel.n_temporaries, partial=partial, tile=tile)
        side = lay.side
        self.bounds = list(range(0, n, side)) + [n]
        nb = len(self.bounds) - 1
        self.tiles = [(i, j) for i in range(nb) for j in range(i + 1)]
        # one tile: threads would only add overhead
        self.workers = lay.workers
        self.threads = cores
        self._prep = kernel.prepare(X, self.dtype)
        self.centering: Centering | None = None
        # centred in each product rather than in the tiles (center_inplace)
        self._deferred = False
        self._keep = set(range(lay.n_keep))
        self._store: dict[int, np.ndarray] = {}
        # the passes' groups of tiles and their accumulators, kept from pass to pass
        self._groups = tile_groups(nb, self.bounds, self.workers)
        self._acc: list[np.ndarray | None] = [None] * len(self._groups)
        self.n_passes = 0
        first = np.ones((n, 1)) if probe is None else np.hstack([np.ones((n, 1)), probe])
        out = self._pass(first, build=True, ones_first=True)
        self._row_sums = out[:, 0].copy()
        self._probe = probe
        self._probe_product = None if probe is None else out[:, 1:]

    def initial_block(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(P, K~ P)`` for the ``probe`` given at construction (centred if the
        operator is), or None."""
        if self._probe is None:
            return None
        P, KP = self._probe, self._probe_product
        c = self.centering
        if c is None:
            return P, KP.copy()
        if c.scale is not None or not c.enabled:
            return None  # K* P = S K~ S P is not a function of K P
        colsum = P.sum(axis=0)
        return P, KP - (c.row_means @ P)[None, :] - np.outer(c.row_means, colsum) + (
            c.grand_mean * colsum
        )[None, :]

    # ------------------------------------------------------------------ tiles
    @property
    def fraction_stored(self) -> float:
        return len(self._keep) / len(self.tiles)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self._store.values())

    def _center_tile(self, t: int, T: np.ndarray, shift=None) -> None:
        """Centre tile ``t`` in place, slice by slice of ``slice_rows`` rows (a setting):
        one sweep over memory for all of the block's updates."""
        i, j = self.tiles[t]
        r0, c0 = self.bounds[i], self.bounds[j]
        cols = slice(c0, self.bounds[j + 1])
        shift = self._centering_rows() if shift is None else shift
        step = get_config()["slice_rows"]
        for a in range(0, T.shape[0], step):
            S = T[a : a + step]
            self._center_block(S, slice(r0 + a, r0 + a + S.shape[0]), cols, shift)

    @staticmethod
    def _center_block(T: np.ndarray, rows: slice, cols: slice, shift) -> None:
        """Centre (and scale) the block ``rows x cols`` of ``K`` in place, with the
        vectors of :meth:`_centering_rows`."""
        r, rg, sc = shift
        if r is not None:
            # two sweeps over the block, not three: the grand mean joins the column term
            T -= r[rows, None]
            T -= rg[None, cols]
        if sc is not None:  # robust KPCA: S K~ S
            T *= sc[rows, None]
            T *= sc[None, cols]

    def _tile(self, t: int) -> np.ndarray:
        """Tile ``t`` of the (centred) matrix: the stored one, or evaluated now."""
        T = self._store.get(t)
        if T is not None and not self._deferred:
            return T
        T = self._compute_tile(t) if T is None else T.copy()
        if self.centering is not None:
            self._center_tile(t, T)
        return T

    # ------------------------------------------------------------------ products
    def _pass(self, V: np.ndarray, build: bool = False, ones_first: bool = False) -> np.ndarray:
        """``K V`` (centred when the operator is), float64. ``build``: the construction
        pass, which stores the kept tiles; ``ones_first``: ``V``'s first column is all
        ones (the row sums), which the compiled kernel adds as sums."""
        V = np.ascontiguousarray(V, dtype=self.dtype)
        b = V.shape[1]
        lead = int(ones_first)
        if ones_first and not np.all(V[:, 0] == 1):
            raise ValueError("ones_first: the block's first column must be all ones")
        # the compiled one-sweep product for stored tiles (if any), on the columns after
        # the ones, where they fill whole vectors but for a cheap tail (native_columns:
        # KernelPCA's matrix-free blocks of 24 and 40 columns are avx512's vectors of
        # 16 and 8 columns in the dot-product form); other widths by NumPy's products
        native = (NATIVE and bool(self._keep) and self.dtype in NATIVE_WIDTH
                  and native_columns(b - lead, self.dtype) == b - lead)
        shift = None if self._deferred else self._centering_rows()
        # (a pass over stored tiles alone evaluates nothing)
        fused = (self._compiled_pieces(shift) if build or len(self._store) < len(self.tiles)
                 else None)
        # the compiled pieces take the ones as sums too: the products then see the
        # block's own columns (24 for k = 10, not 25: a multiple of the avx2 variant's
        # vector, so the one-sweep product rather than BLAS's; at n = 100,000 the
        # construction pass cost 10-25 % more CPU time than a 24-column pass)
        Vn = np.ascontiguousarray(V[:, lead:]) if native or (fused is not None and lead) else None
        start = time.perf_counter()
        groups = self._groups
        # largest modelled work first (a kept tile is read, not evaluated); the pool's
        # threads take the groups in this order as they come free
        order = sorted(range(len(groups)), key=lambda g: -groups[g].work(
            self.bounds, self._store, build))

        def work(g: int) -> np.ndarray:
            grp = groups[g]
            W = self._accumulator(g, grp.n_rows, b)  # zeroed here, in this thread
            Vg = grp.gather(V)
            Vng = None if Vn is None else grp.gather(Vn)
            buf = None
            rows = (-1, None)  # the last tile row prepared, reused by its next tiles
            for t, (i, j) in grp.tiles_at:
                at = (grp.local(self.bounds[i]), grp.local(self.bounds[j]))
                T = self._store.get(t)
                if T is None and rows[0] != i:  # evaluated in this pass
                    rows = (i, self._tile_rows(i))
                if T is None and not (build and t in self._keep):
                    # recomputed: evaluated and multiplied piece by piece in cache
                    if fused is not None:  # every piece in one compiled call
                        if lead:
                            self._compiled_tile(fused, t, Vng, W, rows[1], lead=True, at=at)
                        else:
                            self._compiled_tile(fused, t, Vg, W, rows[1], at=at)
                        continue
                    if buf is None:
                        buf = np.empty(self.piece[0] * max(self.piece), dtype=self.dtype)
                    self._fused_tile(t, Vg, W, buf, shift, rows[1], at=at)
                    continue
                if T is None and native:  # kept, built and multiplied slice by slice
                    T = self._store[t] = self._new_tile(t)
                    if fused is not None:  # the slices' loop in one compiled call
                        self._compiled_build(fused, t, T, Vng, W, lead, rows[1], at=at)
                        continue
                    native_tile_product(
                        T, i == j, Vng, W, *at, lead,
                        fill=functools.partial(self._evaluate_rows, t, T, rows[1]))
                    continue
                if T is None:  # kept, built in this pass
                    T = self._store[t] = self._compute_tile(t, rows[1])
                if native:
                    native_tile_product(T, i == j, Vng, W, *at, lead)
                else:
                    self._tile_product(T, i == j, Vg, W, *at)
            return W

        done = self._parallel(work, order)
        parts: list[np.ndarray] = [None] * len(groups)  # type: ignore[list-item]
        for g, W in zip(order, done, strict=True):
            parts[g] = W
        terms = None
        if self._deferred:  # K~ V = K V - r (1^T V) - 1 ((r - g)^T V)
            r, rg, _ = self._centering_rows(np.float64)
            terms = (r, V.sum(axis=0, dtype=np.float64), rg @ V)
        out = self._sum_parts(parts, terms)
        self.n_passes += 1
        elapsed = time.perf_counter() - start
        logger.info(
            "kernel pass %d: %d columns, %d tiles (%.0f%% kept), %.2f s",
            self.n_passes, b, len(self.tiles), 100 * self.fraction_stored, elapsed,
            extra={"kpca_event": "pass", "kpca_seconds": elapsed},
        )
        if self.progress is not None:
            self.progress("pass", {"n_pass": self.n_passes, "seconds": elapsed})
        return out

    def _accumulator(self, g: int, rows: int, b: int) -> np.ndarray:
        """Tile group ``g``'s accumulator of a pass, ``(rows, b)`` float64 (the rows its
        tiles touch, :class:`_TileGroup`), zeroed: a view of a buffer the operator keeps
        from pass to pass (so that each pass does not take fresh pages: at n = 100,000
        and 16 workers, 11 n rows, 220 MB at 25 columns), grown when a pass is wider.
        Called in the thread that runs the group, which writes its pages first."""
        buf = self._acc[g]  # (each group its own slot, run by one thread at a time)
        if buf is None or buf.size < rows * b:
            buf = self._acc[g] = np.empty(rows * b)
        W = buf[: rows * b].reshape(rows, b)
        W.fill(0.0)
        return W

    def _sum_parts(self, parts: list[np.ndarray], terms: tuple | None = None) -> np.ndarray:
        """The sum of the tile groups' accumulators (:class:`_TileGroup`), a new array:
        each row adds the groups that touch it in the groups' order, whichever thread
        ran them (the same bits for the same ``n_jobs``), less the centring ``terms``
        ``(r, 1^T V, (r - g)^T V)`` where given: ``- r (1^T V)``, then ``- 1 ((r - g)^T
        V)``. The rows are shared among the workers where the sum is large (the setting
        ``split_sweep_values``): with 16 workers at n = 100,000 one thread added 36
        million values a pass between the workers' passes."""
        n, b = self.n, parts[0].shape[1]
        out = np.empty((n, b))
        read = sum(p.size for p in parts)
        chunks = max(1, min(self.workers, read // get_config()["split_sweep_values"]))
        cuts = [n * c // chunks for c in range(chunks + 1)]
        groups = self._groups

        def add(c: int) -> None:
            lo, hi = cuts[c], cuts[c + 1]
            out[lo:hi] = 0.0
            for grp, part in zip(groups, parts, strict=True):
                for a0, a1, at in grp.segments:
                    a, e = max(lo, a0), min(hi, a1)
                    if a < e:
                        out[a:e] += part[at + a - a0 : at + e - a0]
            if terms is not None:
                r, colsum, rgV = terms
                out[lo:hi] -= np.outer(r[lo:hi], colsum)
                out[lo:hi] -= rgV[None, :]

        self._parallel(add, list(range(chunks)))
        return out

    def _compute_tile(self, t: int, X_rows: Any = None) -> np.ndarray:
        """Evaluate tile ``t``, written straight into a new array of the storage
        dtype (``X_rows``: its rows prepared, :meth:`_tile_rows`, if at hand)."""
        T = self._new_tile(t)
        X_rows = self._tile_rows(self.tiles[t][0]) if X_rows is None else X_rows
        self._evaluate_rows(t, T, X_rows, 0, T.shape[0])
        return T

    def _new_tile(self, t: int) -> np.ndarray:
        """An uninitialized array of tile ``t``'s shape, in the storage dtype."""
        i, j = self.tiles[t]
        return np.empty((self.bounds[i + 1] - self.bounds[i],
                         self.bounds[j + 1] - self.bounds[j]), dtype=self.dtype)

    def _evaluate_rows(self, t: int, T: np.ndarray, X_rows: Any, a: int, e: int) -> None:
        """Rows ``a:e`` of tile ``t``, written into ``T[a:e]`` (``X_rows``: the tile's
        rows prepared, :meth:`_tile_rows`)."""
        i, j = self.tiles[t]
        c0, c1 = self.bounds[j], self.bounds[j + 1]
        self.kernel.block_prepared(X_rows[a:e], self._prep[c0:c1], out=T[a:e])
        if i == j and self.kernel.constant_diag is not None:
            diag = np.arange(a, e)  # a diagonal tile is square
            T[diag, diag] = self.kernel.constant_diag

    @staticmethod
    def _tile_product(T: np.ndarray, diagonal: bool, V: np.ndarray, W: np.ndarray,
                      r0: int, c0: int) -> None:
        """``W[I] += T V[J]`` and, below the diagonal, ``W[J] += T^T V[I]``; a float32
        tile slice by slice of ``slice_rows`` rows (a setting), each slice serving both
        products while it is in cache, so that the tile is read from memory once per
        pass, not twice (at 20,000 rows, 16 columns: 0.12 s a pass against 0.15 s;
        float64 tiles were measured no faster in slices)."""
        m, c = T.shape
        if diagonal or T.dtype != np.float32:
            W[r0 : r0 + m] += T @ V[c0 : c0 + c]
            if not diagonal:
                W[c0 : c0 + c] += T.T @ V[r0 : r0 + m]
            return
        VJ = V[c0 : c0 + c]
        acc = np.zeros((c, V.shape[1]), dtype=np.result_type(T.dtype, V.dtype))
        step = get_config()["slice_rows"]
        for a in range(0, m, step):
            S = T[a : a + step]
            rows = slice(r0 + a, r0 + a + S.shape[0])
            W[rows] += S @ VJ
            acc += S.T @ V[rows]
        W[c0 : c0 + c] += acc

    def _centering_rows(self, dtype: Any = None):
        """``(r, r - g, s)`` in ``dtype`` (default: the storage dtype) for centring
        tiles and pieces (``None`` where there is no centring or no scale)."""
        c = self.centering
        if c is None:
            return None
        dtype = self.dtype if dtype is None else dtype
        r = c.row_means.astype(dtype) if c.enabled else None
        rg = (c.row_means - c.grand_mean).astype(dtype) if c.enabled else None
        sc = c.scale.astype(dtype) if c.scale is not None else None
        return r, rg, sc

    def _tile_rows(self, i: int) -> Any:
        """The rows of tile row ``i`` prepared for repeated evaluation
        (``Kernel.prepare_rows``): once per tile row and worker, not per piece (for
        the RBF kernel, their side ``[x - c, 1, ||x - c||^2]`` cost ~7 % of an
        evaluation when recomputed per piece), and not kept for the operator's life
        (an n x (d + 2) array the memory limit would have to count)."""
        r0, r1 = self.bounds[i], self.bounds[i + 1]
        return self.kernel.prepare_rows(self.X[r0:r1], self._prep)

    def _compiled_pieces(self, shift) -> Any:
        """The compiled loops over a tile's pieces or slices (the functions of the
        variant in use, :data:`NATIVE`: ``fused_rbf`` for a recomputed tile,
        ``build_rbf`` for a kept tile in the construction pass), or None where they do
        not apply: the RBF kernel in float32 with few enough features for its compiled
        block, and no centring inside the pieces (``shift``; the RBF kernel's centring
        is deferred to the products). They make the pieces of :meth:`_fused_tile` and
        the slices of :func:`native_tile_product`, in the same order, with the GIL
        released for the whole tile, where the Python loops made several Python-level
        calls per piece or slice: with many worker threads these queued on the GIL
        (docs/benchmarks.md, issue 31)."""
        return None if shift is not None else compiled_rbf(self.kernel, self._prep, self.dtype)

    def _compiled_tile(self, fns: Any, t: int, V: np.ndarray, W: np.ndarray,
                       X_rows: Any, lead: bool = False,
                       at: tuple[int, int] | None = None) -> None:
        """:meth:`_fused_tile` in one compiled call (``fns.fused_rbf``,
        :meth:`_compiled_pieces`). Each piece's two products: by the one-sweep tile
        product where the variant is the widest this CPU runs and the block is whole
        vectors and at most half a vector more (:func:`kpca._native.sweeps_in_cache`,
        :func:`kpca._native.tail_is_cheap`), else by BLAS's
        ``sgemm`` (:func:`_sgemm`), whose kernels are the widest the CPU runs. With
        ``lead``, ``W`` has a first column more than ``V``, which gets the tile's row
        (and column) sums: the products of a column of ones. ``at``: the rows of ``V``
        and ``W`` that stand for the tile's first row and column (default: theirs in
        ``K``; a tile group's gathered rows, :class:`_TileGroup`)."""
        i, j = self.tiles[t]
        r0, c0, c1 = self.bounds[i], self.bounds[j], self.bounds[j + 1]
        cols = self._prep[c0:c1]
        if at is not None:
            r0, c0 = at
        sweep = _native.sweeps_in_cache(fns, V.shape[1])
        args = (X_rows.aug, cols.aug, cols.panels(), X_rows.clamp, V, W, r0, c0, i == j,
                self.piece[0], self.piece[1], self.kernel.constant_diag,
                None if sweep else _sgemm())
        if lead:  # (an optional last argument: the call is unchanged without it)
            fns.fused_rbf(*args, True)
        else:
            fns.fused_rbf(*args)

    def _compiled_build(self, fns: Any, t: int, T: np.ndarray, V: np.ndarray, W: np.ndarray,
                        lead: int, X_rows: Any, at: tuple[int, int] | None = None) -> None:
        """:func:`native_tile_product` with ``fill`` in one compiled call
        (``fns.build_rbf``, :meth:`_compiled_pieces`): tile ``t`` evaluated into ``T``
        ``slice_rows`` (a setting) rows at a time, each slice multiplied by ``V`` (the block's
        columns after the ``lead`` column of ones, whose products are the row sums)
        while it is in cache. ``at``: as :meth:`_compiled_tile`."""
        i, j = self.tiles[t]
        cols = self._prep[self.bounds[j] : self.bounds[j + 1]]
        r0, c0 = (self.bounds[i], self.bounds[j]) if at is None else at
        compiled_build(fns, X_rows, cols, T, V, W, r0, c0, i == j,
                       self.kernel.constant_diag, bool(lead))

    def _fused_tile(self, t: int, V: np.ndarray, W: np.ndarray, buf: np.ndarray,
                    shift, X_rows: Any, at: tuple[int, int] | None = None) -> None:
        """``W += K_IJ V_J`` (and ``K_IJ^T V_I`` below the diagonal) for a tile that
        is not stored (``X_rows``: its rows prepared, :meth:`_tile_rows`), in pieces
        of ``piece`` rows and columns (square ones of ``piece[0]`` on a diagonal tile,
        whose pieces above the diagonal are the mirrors of those below): each piece is
        evaluated, exponentiated, centred and multiplied while it is in cache, in one
        buffer reused for the whole pass (no tile-sized temporaries, no fresh
        pages). ``at``: as :meth:`_compiled_tile`."""
        i, j = self.tiles[t]
        r0, r1 = self.bounds[i], self.bounds[i + 1]
        c0, c1 = self.bounds[j], self.bounds[j + 1]
        # what to add to a row of I and to a row of J to find it in V and W
        di, dj = (0, 0) if at is None else (at[0] - r0, at[1] - c0)
        rows, cols = self.piece
        for a0 in range(r0, r1, rows):
            a1 = min(r1, a0 + rows)
            I = slice(a0 + di, a1 + di)  # noqa: E741
            if i != j:
                for e0 in range(c0, c1, cols):
                    e1 = min(c1, e0 + cols)
                    P = self._piece(X_rows[a0 - r0 : a1 - r0], a0, a1, e0, e1, buf, shift)
                    W[I] += P @ V[e0 + dj : e1 + dj]
                    W[e0 + dj : e1 + dj] += P.T @ V[I]
                continue
            for e0 in range(r0, a0 + 1, rows):
                e1 = min(r1, e0 + rows)
                P = self._piece(X_rows[a0 - r0 : a1 - r0], a0, a1, e0, e1, buf, shift)
                W[I] += P @ V[e0 + di : e1 + di]
                if e0 != a0:
                    W[e0 + di : e1 + di] += P.T @ V[I]

    def _piece(self, rows: Any, a0: int, a1: int, e0: int, e1: int, buf: np.ndarray,
               shift) -> np.ndarray:
        """Rows ``a0:a1``, columns ``e0:e1`` of the (centred) kernel matrix, written
        into ``buf``; ``rows``: rows ``a0:a1`` prepared (:meth:`_tile_rows`)."""
        P = buf[: (a1 - a0) * (e1 - e0)].reshape(a1 - a0, e1 - e0)
        self.kernel.block_prepared(rows, self._prep[e0:e1], out=P)
        if a0 == e0 and self.kernel.constant_diag is not None:
            np.fill_diagonal(P, self.kernel.constant_diag)
        if shift is not None:
            self._center_block(P, slice(a0, a1), slice(e0, e1), shift)
        return P

    def matmat(self, V):
        V = np.asarray(V)
        if V.ndim == 1:
            return self._pass(V[:, None]).astype(self.dtype, copy=False).ravel()
        return self._pass(V).astype(self.dtype, copy=False)

    def row_means(self):
        if self.centering is not None:
            return np.zeros(self.n)
        return self._row_sums / self.n

    def diag(self):
        d = np.asarray(self.kernel.diag(self.X), dtype=np.float64)
        if self.centering is not None:
            d = self.centering.train_diag(d, scaled=True)
        return d.astype(self.dtype)

    def center_inplace(self, centering: Centering) -> None:
        """Centre the operator: in each product for a kernel whose values are bounded
        by its constant diagonal (RBF, Laplacian), else in every tile (kept ones now,
        recomputed ones when evaluated).

        The bounded kernels' entries and their centred entries have the same scale,
        so the float32 products of the uncentred tiles lose no accuracy, and two
        sweeps over every stored value or recomputed piece per fit or pass are saved
        (docs/benchmarks.md, issue 17). Other kernels (a linear kernel of data far
        from the origin: a large constant part) keep their tiles centred.
        """
        if self.centering is not None:
            raise RuntimeError("operator is already centred")
        self.centering = centering
        if (centering.enabled and centering.scale is None
                and self.kernel.constant_diag is not None):
            self._deferred = True
            return
        shift = self._centering_rows()  # cast once, not once per tile
        self._parallel(lambda item: self._center_tile(*item, shift), list(self._store.items()))

    def _parallel(self, fn, items: list) -> list:
        """``[fn(x) for x in items]`` on the worker threads (BLAS limited to one each)."""
        return run_blocks(fn, items, self.workers)

    def to_dense(self):
        n = self.n
        A = np.empty((n, n), dtype=self.dtype)
        for t in range(len(self.tiles)):
            i, j = self.tiles[t]
            r0, r1 = self.bounds[i], self.bounds[i + 1]
            c0, c1 = self.bounds[j], self.bounds[j + 1]
            T = self._tile(t)
            A[r0:r1, c0:c1] = T
            if i != j:
                A[c0:c1, r0:r1] = T.T
        return A
