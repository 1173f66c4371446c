"""Kernel products in an Array API namespace (PyTorch, CuPy, ``array-api-strict``).

Every kernel evaluates its blocks through :meth:`Kernel.block` given the arrays'
namespace (docs/scaling.md, "GPU and the Array API"); :func:`device_block_product`
multiplies them, block by block, or, for the kernels that have one, through a fused
pass that never writes the kernel values: the plug-ins of :data:`_FUSED_PRODUCTS` (the
RBF kernel's Triton, CuPy and attention passes).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from .._array_api import device_namespace
from .._config import get_config
from ._base import Kernel
from ._standard import RBF

logger = logging.getLogger("kpca")


def device_block_product(kernel: Kernel, X: Any, Y: Any, C: Any, xp: Any, rows: int) -> Any:
    """``k(X, Y) @ C`` of shape (len(X), C.shape[1]), ``k(X, Y)`` evaluated by
    :meth:`Kernel.block` in blocks of ``rows`` rows of X (each block's kernel values
    exist only until multiplied), or, for a kernel with a fused pass (the RBF kernel on
    PyTorch tensors and CuPy arrays, as the setting ``device_rbf_product`` says), in
    one pass that never holds them (``rows`` unused).

    Parameters
    ----------
    kernel : Kernel
        A resolved kernel whose :meth:`Kernel.block` takes namespace ``xp``.
    X, Y : arrays of namespace ``xp``, shapes (m, d) and (n, d), same float dtype
    C : array of shape (n, c), X's dtype
    xp : namespace
    rows : int

    Returns
    -------
    array of shape (m, c)
    """
    m = X.shape[0]
    if m == 0 or C.shape[1] == 0:
        return xp.zeros((m, C.shape[1]), dtype=C.dtype, device=C.device)
    # the exact class: a subclass may change the function the fused pass evaluates
    fused = _FUSED_PRODUCTS.get(type(kernel))
    if fused is not None:
        out = fused(kernel, X, Y, C)
        if out is not None:
            return out
    return xp.concat([kernel.block(X[s : min(s + rows, m), ...], Y, xp=xp) @ C
                      for s in range(0, m, max(1, rows))], axis=0)


def _pad8(width: int) -> int:
    return -(-width // 8) * 8


def _fused_rbf_product(gamma: float, X: Any, Y: Any, C: Any) -> Any | None:
    """RBF ``k(X, Y) @ C`` in one fused pass that never writes the kernel values, or
    ``None`` where the tiles serve these arrays: the pass the setting
    ``device_rbf_product`` names (kpca._config; docs/scaling.md, "GPU and the Array
    API"). On PyTorch tensors:

    - ``'auto'``: kpca's Triton kernel (:mod:`._triton_rbf`) on float32 tensors of an
      NVIDIA CUDA device where the triton package is installed (should its program
      fail to build there, a warning names the error and attention serves), else
      PyTorch's attention (:func:`_attention_rbf_product`), else tiles;
    - ``'triton'``: the Triton kernel where it serves the tensors (float32; CUDA, or
      any device under ``TRITON_INTERPRET=1``), else tiles; an ImportError if triton
      is not installed;
    - ``'attention'``: attention where PyTorch has a fused kernel, else tiles;
    - ``'tiles'`` (and ``'cupy'``): ``None``.

    On CuPy arrays, ``'auto'`` and ``'cupy'`` run kpca's CUDA kernel
    (:mod:`._cupy_rbf`; float32 and float64; under ``'auto'`` a kernel that fails to
    build warns and the tiles serve). Arrays of other namespaces get ``None``
    (tiles) whatever the setting.
    """
    import array_api_compat

    cfg = get_config()
    path = cfg["device_rbf_product"]
    if array_api_compat.is_cupy_array(X):
        if path not in ("auto", "cupy"):
            return None
        from ._cupy_rbf import cupy_rbf_product, cupy_serves

        why_not = cupy_serves(X, Y, C, cfg)
        if why_not is not None:
            logger.debug("CuPy RBF product not used: %s", why_not)
            return None
        if path == "cupy":
            return cupy_rbf_product(gamma, X, Y, C)
        from cupy.cuda.memory import OutOfMemoryError

        return _unless_it_fails(lambda: cupy_rbf_product(gamma, X, Y, C), OutOfMemoryError,
                                "CuPy RBF kernel", "tiles serve instead (set "
                                "device_rbf_product='tiles' to skip it).")
    if not array_api_compat.is_torch_array(X) or path in ("tiles", "cupy"):
        return None
    if path in ("auto", "triton"):
        from ._triton_rbf import triton_importable, triton_rbf_product, triton_serves

        if path == "triton" and not triton_importable():
            raise ImportError("device_rbf_product='triton' needs the triton package "
                              "(pip install triton); 'auto' uses it where it is installed.")
        why_not = triton_serves(X, Y, C, cfg)
        if path == "auto" and why_not is None:
            import torch

            if X.device.type != "cuda" or torch.version.cuda is None:
                why_not = "'auto' uses Triton on NVIDIA CUDA devices only"
        if why_not is None and path == "triton":
            return triton_rbf_product(gamma, X, Y, C)
        if why_not is None:
            from torch.cuda import OutOfMemoryError

            out = _unless_it_fails(lambda: triton_rbf_product(gamma, X, Y, C),
                                   OutOfMemoryError, "Triton RBF product",
                                   "PyTorch's attention serves instead (set "
                                   "device_rbf_product='attention' to skip Triton).")
            if out is not None:
                return out
        else:
            logger.debug("Triton RBF product not used: %s", why_not)
            if path == "triton":
                return None
    return _attention_rbf_product(gamma, X, Y, C)


def _attention_rbf_product(gamma: float, X: Any, Y: Any, C: Any) -> Any | None:
    """RBF ``k(X, Y) @ C`` in one fused pass of PyTorch's scaled-dot-product attention,
    or ``None`` where no fused kernel serves these arrays (not PyTorch; float64 on a GPU).

    Attention evaluates ``exp(q_i . k_j)`` tile by tile, multiplies by the values while
    the tile is on chip and never writes the ``(m, n)`` matrix: the fused
    evaluate -> exp -> multiply pass of docs/scaling.md ("GPU and the Array API"). With
    ``c`` the mean of ``Y`` subtracted from both sets (as in :meth:`RBF.block`),

    - queries ``q_i = [x_i, 1, g|x_i|^2]``, keys ``k_j = [2g y_j, -g|y_j|^2, 0]``, so that
      ``q_i . k_j - g|x_i|^2 = -g|x_i - y_j|^2``;
    - one more "sink" key ``[0, 0, 1]`` with score ``g|x_i|^2`` and value ``e`` (a unit
      column beside ``C``).

    The softmax normaliser cancels in ``o_i[:c] / o_i[c] = sum_j k(x_i, y_j) C_j``, and
    since no score exceeds the sink's, ``o_i[c] >= 1 / (n + 1)``: nothing underflows.
    """
    import array_api_compat

    if not array_api_compat.is_torch_array(X):
        return None
    import torch
    import torch.nn.functional as F

    try:  # PyTorch >= 2.3
        from torch.cuda import OutOfMemoryError
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return None

    if X.device.type == "cuda":
        if X.dtype != torch.float32:  # the memory-efficient kernel has no float64
            return None
        backend, same_width = SDPBackend.EFFICIENT_ATTENTION, False
    elif X.device.type == "cpu":
        backend, same_width = SDPBackend.FLASH_ATTENTION, True  # needs equal widths
    else:
        return None
    d, c = X.shape[1], C.shape[1]
    e, w = _pad8(d + 2), _pad8(c + 1)  # aligned widths; zero columns change nothing
    if same_width:
        e = w = max(e, w)
    with torch.no_grad():
        q, k, v = sink_attention_inputs(gamma, X, Y, C, device_namespace(X), e, w)
        try:
            with sdpa_kernel([backend]):
                o = F.scaled_dot_product_attention(q[None, None], k[None, None],
                                                   v[None, None], scale=1.0)[0, 0]
        except OutOfMemoryError:
            raise
        except RuntimeError as exc:  # no fused kernel for this shape or build
            logger.debug("fused RBF product unavailable (%s): tiles instead", exc)
            return None
        return o[:, :c] / o[:, c : c + 1]


def _unless_it_fails(run: Any, out_of_memory: type, what: str, instead: str) -> Any | None:
    """``run()``, or ``None`` with a ``RuntimeWarning`` naming the error and what serves
    ``instead`` where a fused kernel of ``device_rbf_product='auto'`` fails to build or
    launch; running out of device memory is the caller's error and propagates."""
    try:
        return run()
    except Exception as exc:  # noqa: BLE001 - a build or launch failure
        if isinstance(exc, out_of_memory):
            raise
        warnings.warn(f"kpca's {what} failed ({type(exc).__name__}: {exc}); {instead}",
                      RuntimeWarning, stacklevel=4)
        return None


def sink_attention_inputs(gamma: float, X: Any, Y: Any, C: Any, xp: Any, e: int,
                          w: int) -> tuple[Any, Any, Any]:
    """Queries ``(m, e)``, keys ``(n + 1, e)`` and values ``(n + 1, w)`` whose softmax
    attention gives the RBF product: ``o = softmax(q k^T) v`` has
    ``o[:, :c] / o[:, c] = k(X, Y) @ C`` (see :func:`_fused_rbf_product`; ``e >= d + 2``
    and ``w >= c + 1``, the extra columns zero)."""
    (m, d), n, c = X.shape, Y.shape[0], C.shape[1]
    mu = xp.mean(Y, axis=0)
    Xc, Yc = X - mu, Y - mu
    q = xp.zeros((m, e), dtype=X.dtype, device=X.device)
    q[:, :d] = Xc
    q[:, d] = 1.0
    q[:, d + 1] = gamma * xp.sum(Xc * Xc, axis=1)
    k = xp.zeros((n + 1, e), dtype=X.dtype, device=X.device)
    k[:n, :d] = (2.0 * gamma) * Yc
    k[:n, d] = -gamma * xp.sum(Yc * Yc, axis=1)
    k[n, d + 1] = 1.0
    v = xp.zeros((n + 1, w), dtype=X.dtype, device=X.device)
    v[:n, :c] = C
    v[n, c] = 1.0
    return q, k, v


def _rbf_fused(kernel: Kernel, X: Any, Y: Any, C: Any) -> Any | None:
    return _fused_rbf_product(kernel.gamma_value(), X, Y, C)  # type: ignore[attr-defined]


#: the fused ``k(X, Y) @ C`` passes, by kernel class: each returns the product, or
#: ``None`` where it does not serve the arrays (then blocks of :meth:`Kernel.block`)
_FUSED_PRODUCTS: MappingProxyType[type[Kernel], Callable[[Kernel, Any, Any, Any], Any]] = (
    MappingProxyType({RBF: _rbf_fused}))
