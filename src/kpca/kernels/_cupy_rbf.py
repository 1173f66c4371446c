"""The RBF product ``k(X, Y) @ C`` on CuPy arrays in one fused CUDA kernel (a CuPy
``RawKernel``): the CuPy counterpart of the Triton program (:mod:`._triton_rbf`).

One thread per row of X holds that row (``2h (x - mu)``) and its ``h |x - mu|^2`` in
registers; a block of ``cupy_rbf_threads`` threads loops over Y in tiles of
``cupy_rbf_tile_rows`` rows that it copies to shared memory with their ``h |y - mu|^2``
and rows of C. For each row of the tile a thread forms the exponent
``s = (2h x) . y - h |x|^2 - h |y|^2`` with fused multiply-adds, clamps it at 0,
takes ``2^s`` and adds ``2^s C_j`` to its tile sum; each tile's sum joins the row's
total with Kahan's compensation (as the Triton program's blocks do). The arithmetic
is that of :func:`kpca.kernels._triton_rbf.rbf_product_reference` with
``precision='ieee'`` (float32 throughout, tiles in place of blocks), in float32 or
float64 (docs/math.md, "Kernels"; docs/scaling.md, "GPU and the Array API").

``cupy`` is imported only when a product runs on CuPy arrays.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from .._config import get_config

#: the CUDA source; D (features), W (columns of C per thread), TILE (rows of Y per
#: tile), THREADS (threads per block) and the real type are set by #defines before it
SOURCE = r"""
extern "C" __global__ void kpca_rbf_product(
    const real* __restrict__ xs, const real* __restrict__ nx,
    const real* __restrict__ y, const real* __restrict__ ny,
    const real* __restrict__ c, real* __restrict__ out,
    const long long m, const long long n, const long long width)
{
    __shared__ real ys[TILE * D];
    __shared__ real ns[TILE];
    __shared__ real cs[TILE * W];
    const long long i = (long long)blockIdx.x * THREADS + threadIdx.x;
    const long long col0 = (long long)blockIdx.y * W;
    const bool live = i < m;
    real x[D], acc[W], comp[W], part[W];
#pragma unroll
    for (int k = 0; k < D; ++k) x[k] = live ? xs[i * D + k] : (real)0;
    const real nxi = live ? nx[i] : (real)0;
#pragma unroll
    for (int k = 0; k < W; ++k) { acc[k] = (real)0; comp[k] = (real)0; }
    for (long long j0 = 0; j0 < n; j0 += TILE) {
        const int rows = (n - j0 < TILE) ? (int)(n - j0) : TILE;
        __syncthreads();  /* the previous tile is no longer read */
        for (int t = threadIdx.x; t < TILE * D; t += THREADS)
            ys[t] = t < rows * D ? y[j0 * D + t] : (real)0;
        for (int t = threadIdx.x; t < TILE * W; t += THREADS) {
            const int r = t / W;
            cs[t] = r < rows ? c[(j0 + r) * width + col0 + (t - r * W)] : (real)0;
        }
        for (int t = threadIdx.x; t < TILE; t += THREADS)
            ns[t] = t < rows ? ny[j0 + t] : (real)0;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < W; ++k) part[k] = (real)0;
        for (int r = 0; r < rows; ++r) {
            real s = (real)0;
#pragma unroll
            for (int k = 0; k < D; ++k) s = FMA(x[k], ys[r * D + k], s);
            const real p = EXP2(FMIN(s - nxi - ns[r], (real)0));
#pragma unroll
            for (int k = 0; k < W; ++k) part[k] = FMA(p, cs[r * W + k], part[k]);
        }
#pragma unroll
        for (int k = 0; k < W; ++k) {  /* Kahan: the tile's sum joins the total */
            const real term = part[k] - comp[k];
            const real total = acc[k] + term;
            comp[k] = (total - acc[k]) - term;
            acc[k] = total;
        }
    }
    if (live) {
#pragma unroll
        for (int k = 0; k < W; ++k) out[i * width + col0 + k] = acc[k];
    }
}
"""

#: the real type's name and math functions, per itemsize
_REAL = {4: ("float", "fmaf", "exp2f", "fminf"), 8: ("double", "fma", "exp2", "fmin")}


class CupyLayout(NamedTuple):
    """Sizes of one fused CuPy product (:func:`cupy_layout`)."""

    threads: int  # threads (rows of X) per block
    tile: int  # rows of Y per shared-memory tile
    features: int  # d
    width: int  # columns of C per thread
    groups: int  # column groups (blocks per row block)


def cupy_layout(d: int, c: int, itemsize: int,
                cfg: dict[str, Any] | None = None) -> CupyLayout | None:
    """Threads, tile and column groups of the product of data with ``d`` features by
    ``c`` columns, ``None`` where a thread could not hold a row in registers.

    A thread holds ``d`` values of its row and three per column of C (total,
    compensation, tile sum): at most ``cupy_rbf_max_values`` 4-byte values (half as
    many float64), so ``c`` runs in groups of ``(max - d) // 3`` columns.
    """
    cfg = get_config() if cfg is None else cfg
    budget = cfg["cupy_rbf_max_values"] * 4 // itemsize
    per_group = (budget - d) // 3
    if per_group < 1:
        return None
    groups = -(-c // per_group)
    width = -(-c // groups)  # groups of equal width: the padding is at most groups - 1
    return CupyLayout(cfg["cupy_rbf_threads"], cfg["cupy_rbf_tile_rows"], d, width, groups)


def cupy_source(lay: CupyLayout, itemsize: int) -> str:
    """The kernel's source for ``lay`` and the real type of ``itemsize`` bytes."""
    real, fma, exp2, fmin = _REAL[itemsize]
    defines = (f"#define real {real}\n#define FMA {fma}\n#define EXP2 {exp2}\n"
               f"#define FMIN {fmin}\n#define D {lay.features}\n#define W {lay.width}\n"
               f"#define TILE {lay.tile}\n#define THREADS {lay.threads}\n")
    return defines + SOURCE


def cupy_serves(X: Any, Y: Any, C: Any, cfg: dict[str, Any]) -> str | None:
    """``None`` where :func:`cupy_rbf_product` serves these CuPy arrays, else why not."""
    import cupy

    if cupy.cuda.runtime.is_hip:
        return "the CuPy kernel is built for NVIDIA GPUs"
    if X.dtype != Y.dtype or X.dtype != C.dtype or X.dtype.itemsize not in _REAL:
        return f"the CuPy kernel takes float32 or float64 (got {X.dtype}, {C.dtype})"
    if X.dtype.kind != "f":
        return f"the CuPy kernel takes float32 or float64 (got {X.dtype})"
    if cupy_layout(X.shape[1], C.shape[1], X.dtype.itemsize, cfg) is None:
        return f"{X.shape[1]} features do not fit cupy_rbf_max_values"
    return None


def cupy_rbf_product(gamma: float, X: Any, Y: Any, C: Any) -> Any:
    """RBF ``k(X, Y) @ C`` of CuPy arrays in one fused kernel (module docstring); the
    caller checks :func:`cupy_serves` first.

    Parameters
    ----------
    gamma : float
    X, Y : arrays of shapes (m, d) and (n, d), float32 or float64, on one device
    C : array of shape (n, c), X's dtype

    Returns
    -------
    array of shape (m, c), X's dtype
    """
    import cupy

    (m, d), n, c = X.shape, Y.shape[0], C.shape[1]
    itemsize = X.dtype.itemsize
    lay = cupy_layout(d, c, itemsize)
    h = gamma / math.log(2.0)
    with cupy.cuda.Device(X.device.id):
        mu = cupy.mean(Y, axis=0)
        Xc = X - mu
        Yc = Xc if Y is X else Y - mu
        xs = cupy.ascontiguousarray(Xc * X.dtype.type(2.0 * h))
        nx = X.dtype.type(h) * cupy.sum(Xc * Xc, axis=1)
        yc = cupy.ascontiguousarray(Yc)
        ny = X.dtype.type(h) * cupy.sum(Yc * Yc, axis=1)
        width = lay.groups * lay.width
        if width == c:
            cp = cupy.ascontiguousarray(C)
        else:  # equal groups: zero columns after C's
            cp = cupy.zeros((n, width), dtype=X.dtype)
            cp[:, :c] = C
        out = cupy.empty((m, width), dtype=X.dtype)
        kernel = _kernel(cupy_source(lay, itemsize))
        grid = (-(-m // lay.threads), lay.groups)
        kernel(grid, (lay.threads,), (xs, nx, yc, ny, cp, out, cupy.int64(m),
                                      cupy.int64(n), cupy.int64(width)))
    return out if width == c else cupy.ascontiguousarray(out[:, :c])


def _kernel(source: str) -> Any:
    """The compiled kernel (CuPy caches the build per source, in memory and on disk)."""
    import cupy

    return cupy.RawKernel(source, "kpca_rbf_product")
