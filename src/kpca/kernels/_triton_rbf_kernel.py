"""The Triton program of the fused RBF product (imported only by :mod:`._triton_rbf`,
only when a product runs on it: it imports ``triton``, an optional dependency).

``TRITON_INTERPRET=1`` in the environment when this module is first imported makes
Triton run the program on the CPU, in NumPy (how it is tested without a GPU).
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def rbf_product_kernel(xs_ptr, nx_ptr, y_ptr, ny_ptr, c_ptr, out_ptr, n_pad, width,
                       D: tl.constexpr, W: tl.constexpr, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, PRECISION: tl.constexpr):
    """One program: rows ``[i BLOCK_M, (i + 1) BLOCK_M)`` of the product, columns
    ``[j W, (j + 1) W)`` of C (``i, j`` the program's ids), looping over all of Y.

    Inputs as :func:`kpca.kernels._triton_rbf.triton_inputs` lays them out (float32,
    C-contiguous, every size a multiple of its block, padding zero): ``xs`` (m_pad, D) the
    centred rows of X times ``2 h``, ``nx`` (m_pad,) ``h |x_i|^2``, ``y`` (n_pad, D) the
    centred rows of Y, ``ny`` (n_pad,) ``h |y_j|^2``, ``c`` (n_pad, width), ``out``
    (m_pad, width); ``h = gamma log2(e)``, so that ``2^(xs_i . y_j - nx_i - ny_j)`` is
    ``exp(-gamma |x_i - y_j|^2)``.
    """
    # block bases in 64 bits (a million rows of 32 features pass 2^31 elements); the
    # offsets inside a block stay 32-bit
    pid_m = tl.program_id(0).to(tl.int64)
    pid_w = tl.program_id(1).to(tl.int64)
    xs_ptr += pid_m * (BLOCK_M * D)
    nx_ptr += pid_m * BLOCK_M
    c_ptr += pid_w * W
    out_ptr += pid_m * BLOCK_M * width + pid_w * W
    r = tl.arange(0, BLOCK_M)
    f = tl.arange(0, D)
    j = tl.arange(0, BLOCK_N)
    w = tl.arange(0, W)
    x = tl.load(xs_ptr + r[:, None] * D + f[None, :])  # stays in registers
    nx = tl.load(nx_ptr + r)
    acc = tl.zeros((BLOCK_M, W), dtype=tl.float32)
    comp = tl.zeros((BLOCK_M, W), dtype=tl.float32)  # Kahan's compensation
    for _ in range(0, n_pad, BLOCK_N):
        yt = tl.load(y_ptr + j[None, :] * D + f[:, None])  # (D, BLOCK_N): Y's block, transposed
        ny = tl.load(ny_ptr + j)
        s = tl.dot(x, yt, input_precision=PRECISION)
        # -h |x - y|^2 <= 0; rounding may leave a tiny positive exponent where x = y
        p = tl.exp2(tl.minimum(s - nx[:, None] - ny[None, :], 0.0))
        cb = tl.load(c_ptr + j[:, None] * width + w[None, :])
        # each block's product added with Kahan's compensation: a plain float32 sum
        # over the n / BLOCK_N blocks (15,000 at a million rows) would lose about
        # sqrt(n / BLOCK_N) roundings of the sum; these four additions per value cost
        # little next to the block's exponentials and products
        term = tl.dot(p, cb, input_precision=PRECISION) - comp
        total = acc + term
        comp = (total - acc) - term
        acc = total
        y_ptr += BLOCK_N * D
        ny_ptr += BLOCK_N
        c_ptr += BLOCK_N * width
    tl.store(out_ptr + r[:, None] * width + w[None, :], acc)
