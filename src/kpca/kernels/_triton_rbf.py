"""The RBF product ``k(X, Y) @ C`` in one fused Triton program, and its NumPy twin.

:func:`triton_rbf_product` runs :mod:`._triton_rbf_kernel` on PyTorch tensors (float32,
on a CUDA device, or on any device under ``TRITON_INTERPRET=1``); ``triton`` is
imported only then. :func:`rbf_product_reference` does the same arithmetic in NumPy,
block by block, TF32 splitting included, so that the arithmetic is tested where
there is no GPU (docs/scaling.md, "GPU and the Array API").

The arithmetic (docs/math.md, "Kernels": the RBF kernel's expansion). With ``mu`` the
mean of Y subtracted from both sets (float32 then resolves data far from the origin)
and ``h = gamma log2(e)``,

    k(x, y) = exp(-gamma |x - y|^2) = 2^(s),  s = (2h x) . y - h |x|^2 - h |y|^2,

so one program holds ``block_rows`` rows of ``2h X`` and their ``h |x|^2``, and for each
block of ``block_cols`` rows of Y computes the scores ``s`` with one matrix product,
subtracts the two norm terms, clamps ``s`` at 0 (rounding can leave a tiny positive
exponent where ``x = y``), takes ``2^s`` and adds ``2^s @ C_block`` to a float32
accumulator with Kahan's compensation (a plain float32 sum over the n / block_cols
blocks would lose about the square root of their number of roundings: 1e-5 of the
sum at a million rows). The ``(m, n)`` kernel values never leave the chip. The norm terms are
subtracted in float32 rather than folded into the product (which would round them
to TF32 under 'tf32x3'), and not factored out as ``exp(-gamma |x|^2) sum_j ...``,
whose sum can overflow float32 once ``gamma |x|^2 > 88``.

The two products run in ``precision``:

- ``'ieee'``: float32 multiply-adds;
- ``'tf32x3'``: tensor cores. Each float32 operand ``a`` is split into ``hi`` (``a``
  rounded to TF32, 10 mantissa bits, to nearest, ties away from zero) and
  ``lo = a - hi`` (exact in float32; the tensor core reads it truncated to TF32), and
  ``a b = (lo_a hi_b + hi_a lo_b) + hi_a hi_b``: three TF32 products, summed in float32
  (Triton's 'tf32x3', the small terms first), the remainder x remainder product
  dropped.
"""

from __future__ import annotations

import importlib.util
import math
import os
from typing import Any, NamedTuple

import numpy as np

from .._config import get_config

#: the products' input precisions
PRECISIONS = ("tf32x3", "ieee")


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


class Layout(NamedTuple):
    """Block sizes and padded shapes of one fused product (:func:`layout`)."""

    block_rows: int  # rows of X per program
    block_cols: int  # rows of Y per loop step
    features: int  # d padded: a power of two >= 16 (the products' smallest side)
    width: int  # columns of C per program: a power of two >= 16
    groups: int  # column groups: programs per row block
    rows: int  # m padded to block_rows
    cols: int  # n padded to block_cols
    warps: int


def layout(m: int, n: int, d: int, c: int, cfg: dict[str, Any] | None = None) -> Layout:
    """The blocks of the product of ``m`` rows against ``n`` (``d`` features, ``c``
    columns of C), from the settings ``triton_block_rows`` and ``triton_block_cols``.

    Rows per program: ``triton_block_rows``, or fewer for a small ``m`` (the power of two
    at or above it, at least 16); warps: one per 16 rows, at least 4 (a warp group).
    Columns of C per program: ``c`` rounded up to a power of two, at most
    ``triton_block_cols``; a wider C runs in column groups. Every side is a power of
    two of at least 16, as Triton's block products need; the padding is zero.

    Raises
    ------
    ValueError
        If a block setting is not a power of two.
    """
    cfg = get_config() if cfg is None else cfg
    for name in ("triton_block_rows", "triton_block_cols"):
        value = cfg[name]
        if value & (value - 1):
            raise ValueError(f"kpca setting {name!r} must be a power of two (16, 32, 64, "
                             f"128, ...); got {value!r}.")
    bm = min(cfg["triton_block_rows"], max(16, _pow2(m)))
    bn = cfg["triton_block_cols"]
    width = min(max(16, _pow2(c)), bn)
    groups = -(-c // width)
    return Layout(bm, bn, max(16, _pow2(d)), width, groups, -(-m // bm) * bm,
                  -(-n // bn) * bn, max(4, bm // 16))


# ------------------------------------------------------------------ NumPy reference


def tf32_round(a: np.ndarray) -> np.ndarray:
    """float32 ``a`` rounded to TF32 (10 mantissa bits), to nearest, ties away from zero
    (``cvt.rna.tf32.f32``, Triton's split): the low 13 bits cleared after adding half
    of their range to the magnitude."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def tf32_truncate(a: np.ndarray) -> np.ndarray:
    """float32 ``a`` truncated to TF32: the low 13 mantissa bits a tensor core ignores."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return (bits & np.uint32(0xFFFFE000)).view(np.float32)


def tf32x3_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` (float32) as Triton's 'tf32x3' computes it: ``hi`` rounded to TF32,
    ``lo = a - hi`` read truncated to TF32, ``(lo_a hi_b + hi_a lo_b) + hi_a hi_b`` with
    exact products and float32 sums."""
    a_hi, b_hi = tf32_round(a), tf32_round(b)
    a_lo, b_lo = tf32_truncate(a - a_hi), tf32_truncate(b - b_hi)
    return (a_lo @ b_hi + a_hi @ b_lo) + a_hi @ b_hi


def rbf_product_reference(gamma: float, X: np.ndarray, Y: np.ndarray, C: np.ndarray,
                          precision: str = "tf32x3",
                          cfg: dict[str, Any] | None = None) -> np.ndarray:
    """``k(X, Y) @ C`` in float32 with the arithmetic of the Triton program, block by
    block (module docstring): the CPU-tested twin of :func:`triton_rbf_product`.

    It differs from the GPU only in the order of the additions inside one block
    product and in ``exp2`` (NumPy's is correctly rounded, the GPU's ``ex2.approx``
    errs by about 2 ulp).

    Parameters
    ----------
    gamma : float
    X, Y : arrays of shapes (m, d) and (n, d)
    C : array of shape (n, c)
    precision : {'tf32x3', 'ieee'}
    cfg : dict, optional
        Settings (``get_config()`` where omitted) for :func:`layout`.

    Returns
    -------
    ndarray of shape (m, c), float32
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}; got {precision!r}.")
    f32 = np.float32
    X, Y, C = (np.asarray(A, dtype=f32) for A in (X, Y, C))
    (m, d), n, c = X.shape, Y.shape[0], C.shape[1]
    lay = layout(m, n, d, c, cfg)
    xs, nx, yp, ny, cp = _inputs_numpy(gamma, X, Y, C, lay)
    dot = tf32x3_dot if precision == "tf32x3" else np.matmul
    out = np.zeros((lay.rows, lay.groups * lay.width), dtype=f32)
    for i in range(0, lay.rows, lay.block_rows):
        x, nxi = xs[i:i + lay.block_rows], nx[i:i + lay.block_rows, None]
        acc = np.zeros((len(x), out.shape[1]), dtype=f32)
        comp = np.zeros_like(acc)
        for j in range(0, lay.cols, lay.block_cols):
            s = dot(x, yp[j:j + lay.block_cols].T) - nxi - ny[None, j:j + lay.block_cols]
            p = np.exp2(np.minimum(s, f32(0)))
            term = dot(p, cp[j:j + lay.block_cols]) - comp  # Kahan, as the program
            total = acc + term
            comp = (total - acc) - term
            acc = total
        out[i:i + lay.block_rows] = acc
    return out[:m, :c]


def _inputs_numpy(gamma: float, X: np.ndarray, Y: np.ndarray, C: np.ndarray,
                  lay: Layout) -> tuple[np.ndarray, ...]:
    """:func:`triton_inputs` in NumPy float32."""
    f32 = np.float32
    (m, d), n, c = X.shape, Y.shape[0], C.shape[1]
    h = f32(gamma / math.log(2.0))
    mu = Y.mean(axis=0, dtype=f32)
    Xc, Yc = X - mu, Y - mu
    xs = np.zeros((lay.rows, lay.features), dtype=f32)
    xs[:m, :d] = Xc * (f32(2) * h)
    nx = np.zeros(lay.rows, dtype=f32)
    nx[:m] = h * np.sum(Xc * Xc, axis=1, dtype=f32)
    yp = np.zeros((lay.cols, lay.features), dtype=f32)
    yp[:n, :d] = Yc
    ny = np.zeros(lay.cols, dtype=f32)
    ny[:n] = h * np.sum(Yc * Yc, axis=1, dtype=f32)
    cp = np.zeros((lay.cols, lay.groups * lay.width), dtype=f32)
    cp[:n, :c] = C
    return xs, nx, yp, ny, cp


# ------------------------------------------------------------------- PyTorch / Triton


def triton_importable() -> bool:
    """Whether the ``triton`` package is installed (without importing it)."""
    return importlib.util.find_spec("triton") is not None


def triton_interpreted() -> bool:
    """Whether Triton runs programs on the CPU (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on")


def triton_serves(X: Any, Y: Any, C: Any, cfg: dict[str, Any]) -> str | None:
    """``None`` where :func:`triton_rbf_product` serves these PyTorch tensors, else why
    not (float32 only; a CUDA device unless interpreted; at most
    ``triton_max_features`` features)."""
    import torch

    if not triton_importable():
        return "the triton package is not installed"
    if not all(A.dtype == torch.float32 for A in (X, Y, C)):
        return f"the Triton kernel is float32 only (got {X.dtype})"
    if X.device.type != "cuda" and not triton_interpreted():
        return f"Triton runs on CUDA devices (got {X.device.type}; TRITON_INTERPRET=1 " \
               "runs it on the CPU)"
    if max(16, _pow2(X.shape[1])) > cfg["triton_max_features"]:
        return (f"{X.shape[1]} features are more than triton_max_features="
                f"{cfg['triton_max_features']}")
    return None


def triton_inputs(gamma: float, X: Any, Y: Any, C: Any, lay: Layout) -> tuple[Any, ...]:
    """The program's inputs, padded to ``lay`` (zero padding changes nothing: padded
    rows of Y meet zero rows of C, padded rows of X are cut off): ``xs = 2h (X - mu)``,
    ``nx = h |X - mu|^2``, ``yp = Y - mu``, ``ny = h |Y - mu|^2``, ``cp = C``, with
    ``mu`` the mean of Y and ``h = gamma log2(e)``."""
    import torch

    (m, d), n, c = X.shape, Y.shape[0], C.shape[1]
    kw = dict(dtype=torch.float32, device=X.device)
    h = gamma / math.log(2.0)
    mu = torch.mean(Y, dim=0)
    Xc = X - mu
    Yc = Xc if Y is X else Y - mu
    xs = torch.zeros((lay.rows, lay.features), **kw)
    xs[:m, :d] = Xc * (2.0 * h)
    nx = torch.zeros(lay.rows, **kw)
    nx[:m] = h * torch.sum(Xc * Xc, dim=1)
    yp = torch.zeros((lay.cols, lay.features), **kw)
    yp[:n, :d] = Yc
    ny = torch.zeros(lay.cols, **kw)
    ny[:n] = h * torch.sum(Yc * Yc, dim=1)
    cp = torch.zeros((lay.cols, lay.groups * lay.width), **kw)
    cp[:n, :c] = C
    return xs, nx, yp, ny, cp


def triton_rbf_product(gamma: float, X: Any, Y: Any, C: Any,
                       precision: str | None = None) -> Any:
    """RBF ``k(X, Y) @ C`` of float32 PyTorch tensors in one Triton program (module
    docstring); the caller checks :func:`triton_serves` first.

    Parameters
    ----------
    gamma : float
    X, Y : tensors of shapes (m, d) and (n, d), float32, on one device
    C : tensor of shape (n, c), float32
    precision : {'tf32x3', 'ieee'}, optional
        The products' input precision; ``device_rbf_precision`` where omitted.
        'tf32x3' becomes 'ieee' on a CUDA device without TF32 (compute capability
        below 8.0).

    Returns
    -------
    tensor of shape (m, c), float32
    """
    import torch

    cfg = get_config()
    precision = cfg["device_rbf_precision"] if precision is None else precision
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}; got {precision!r}.")
    if (precision == "tf32x3" and X.device.type == "cuda"
            and torch.cuda.get_device_capability(X.device) < (8, 0)):
        precision = "ieee"  # no TF32 tensor cores before Ampere
    from ._triton_rbf_kernel import rbf_product_kernel

    (m, d), n, c = X.shape, Y.shape[0], C.shape[1]
    lay = layout(m, n, d, c, cfg)
    with torch.no_grad():
        xs, nx, yp, ny, cp = triton_inputs(gamma, X, Y, C, lay)
        out = torch.empty((lay.rows, lay.groups * lay.width), dtype=torch.float32,
                          device=X.device)
        grid = (lay.rows // lay.block_rows, lay.groups)
        args = (xs, nx, yp, ny, cp, out, lay.cols, lay.groups * lay.width)
        kw = dict(D=lay.features, W=lay.width, BLOCK_M=lay.block_rows,
                  BLOCK_N=lay.block_cols, PRECISION=precision, num_warps=lay.warps)
        if X.device.type == "cuda":
            with torch.cuda.device(X.device):  # Triton launches on the current device
                rbf_product_kernel[grid](*args, **kw)
        else:
            rbf_product_kernel[grid](*args, **kw)
        return out[:m, :c].contiguous()
