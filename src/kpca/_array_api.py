"""Arrays of other libraries (PyTorch, CuPy, ``array-api-strict``) through the Array API.

kpca's estimators accept NumPy arrays, SciPy sparse matrices and dask arrays on their
own paths; this module recognises every other array that follows the Python Array API
standard (through ``array-api-compat``, imported only when such an array is seen) and
moves small results between it and the host. See docs/scaling.md, "GPU and the Array
API".
"""

from __future__ import annotations

from typing import Any

import numpy as np


def device_namespace(X: Any) -> Any:
    """The Array API namespace of ``X``, or ``None`` for NumPy and other host inputs.

    ``None`` for NumPy arrays and scalars, lists, SciPy sparse matrices, pandas and
    polars frames and dask collections (the host paths); the namespace (wrapped by
    ``array-api-compat``) for a PyTorch tensor, a CuPy array, an ``array-api-strict``
    array or any other object that declares ``__array_namespace__``.
    """
    if isinstance(X, (np.ndarray, np.generic, list, tuple)) or X is None:
        return None
    module = type(X).__module__.partition(".")[0]
    if module in ("numpy", "scipy", "pandas", "polars", "dask", "pyarrow"):
        return None
    if not (hasattr(X, "__array_namespace__") or module in ("torch", "cupy", "jax", "jaxlib")):
        return None
    try:
        import array_api_compat
    except ImportError:  # pragma: no cover - only without the 'array' extra
        raise ImportError(
            f"{type(X).__module__}.{type(X).__name__} input needs array-api-compat: "
            "pip install 'kpca[array]' (or pass a NumPy array)."
        ) from None
    xp = array_api_compat.array_namespace(X)
    return None if array_api_compat.is_numpy_namespace(xp) else xp


def device_of(X: Any) -> Any:
    """The device ``X`` lives on (``array_api_compat.device``)."""
    import array_api_compat

    return array_api_compat.device(X)


def to_host(X: Any, dtype: Any = None) -> np.ndarray:
    """A NumPy copy of an Array API array (moved to the CPU first when it is not there)."""
    import array_api_compat

    if array_api_compat.is_torch_array(X):
        out = X.detach().cpu().numpy()
    elif array_api_compat.is_cupy_array(X):
        out = X.get()
    else:
        try:
            out = np.from_dlpack(X)
        except (TypeError, RuntimeError, BufferError, AttributeError):
            out = np.asarray(X)
    return np.array(out, dtype=dtype, copy=True)


def from_host(A: np.ndarray, xp: Any, device: Any) -> Any:
    """``A`` as an array of namespace ``xp`` on ``device``."""
    return xp.asarray(np.ascontiguousarray(A), device=device)


def float_dtype(xp: Any, dtype: Any) -> Any:
    """The float dtype of ``xp`` with NumPy dtype ``dtype``'s precision."""
    return xp.float32 if np.dtype(dtype) == np.float32 else xp.float64


def host_dtype(xp: Any, dtype: Any) -> np.dtype:
    """The NumPy dtype of an ``xp`` dtype (float32 or float64; others: float64)."""
    return np.dtype(np.float32) if dtype == xp.float32 else np.dtype(np.float64)


def device_memory_limit(X: Any) -> int | None:
    """Default budget on X's device: half its free memory for a CUDA array, ``None``
    (the host default) for arrays in host memory."""
    import array_api_compat

    if array_api_compat.is_torch_array(X) and X.device.type == "cuda":
        import torch

        return int(torch.cuda.mem_get_info(X.device)[0]) // 2
    if array_api_compat.is_cupy_array(X):
        import cupy

        return int(cupy.cuda.runtime.memGetInfo()[0]) // 2
    return None


def refuse_device(X: Any, what: str) -> None:
    """A clear error for an Array API array where only NumPy input is supported.

    Parameters
    ----------
    X : any
    what : str
        The refusing method, e.g. ``'RandomFeatureKernelPCA.fit'``.
    """
    if device_namespace(X) is not None:
        kind = f"{type(X).__module__.partition('.')[0]} arrays"
        raise ValueError(
            f"{what} does not take {kind}; pass NumPy arrays (e.g. X.cpu().numpy()). On "
            "Array API arrays (PyTorch, CuPy, array-api-strict), the fit, fit_transform, "
            "transform, inverse_transform and denoise of kpca.KernelPCA, "
            "kpca.NystromKernelPCA, kpca.SphericalKernelPCA, kpca.WeightedKernelPCA, "
            "kpca.KernelROBPCA and kpca.AnovaKernelPCA run on the arrays' device."
        )
