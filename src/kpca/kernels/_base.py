"""Kernel objects: evaluate a block ``k(X1, X2)`` and ``diag(X)``.

A kernel object is a small parameter container (a scikit-learn style object, so
``get_params``/``set_params``/``clone`` and nested grid search such as
``kernel__gamma`` work) with three duties:

* :meth:`Kernel.block` evaluates the kernel between two blocks of rows, vectorised,
  in the arrays' own namespace (NumPy, or PyTorch, CuPy, ... through the Array API);
* :meth:`Kernel.diag` evaluates ``k(x, x)`` for every row without forming a block;
* :meth:`Kernel.block_bytes` says how much memory a block of a given size costs,
  so that operators can tile a computation under a memory budget.

Data-dependent parameters (``gamma=None``, ``'scale'``, ``'median'``) are fixed by
:meth:`Kernel.resolve`, which returns a new kernel with numbers only.

A kernel of one's own that runs on every backend overrides :meth:`Kernel.block` (and,
for speed, :meth:`Kernel.diag`) with the functions of the namespace ``xp`` it is
given (docs/guide.md, "A kernel of your own").
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.extmath import row_norms, safe_sparse_dot


def on_host(xp: Any) -> bool:
    """Whether ``xp`` (a namespace given to :meth:`Kernel.block`) means NumPy arrays:
    ``None``, NumPy itself or array-api-compat's wrapper of it."""
    return xp is None or getattr(xp, "__name__", None) in ("numpy", "array_api_compat.numpy")


def array_namespace(*arrays: Any) -> Any:
    """The Array API namespace to evaluate ``arrays`` with: array-api-compat's for a
    PyTorch tensor, a CuPy array or any array that declares one; for NumPy arrays,
    array-api-compat's wrapper of NumPy where it is installed, else NumPy itself (whose
    main namespace follows the standard from NumPy 2.0 on).

    For a :meth:`Kernel.block` written with ``xp`` functions: ``xp = array_namespace(X)
    if xp is None else xp``.
    """
    from .._array_api import device_namespace

    for a in arrays:
        xp = device_namespace(a)
        if xp is not None:
            return xp
    try:
        import array_api_compat.numpy as xp_numpy
    except ImportError:
        return np
    return xp_numpy


class Kernel(BaseEstimator):
    """Base class of all kernels.

    A subclass overrides :meth:`block`, the one method that evaluates kernel values:
    written with the functions of the namespace ``xp`` it is given (``xp.exp``,
    ``xp.sum``, ``X @ xp.matrix_transpose(Y)``, ...), it evaluates NumPy arrays and the
    arrays of every Array API library (PyTorch, CuPy, ...) on their own device, and the
    estimators then fit such arrays with it. It may override :meth:`diag` (the default
    evaluates one row at a time), :meth:`resolve` (data-dependent parameters),
    :meth:`check_parameters` and :meth:`block_bytes`. A kernel for NumPy and SciPy
    sparse input only may implement ``_block(X, Y, symmetric)`` instead, as kpca's own
    string and precomputed kernels do. See docs/guide.md, "A kernel of your own".
    """

    #: name used in ``KernelPCA(kernel=<name>)`` and in saved model files
    name: ClassVar[str] = ""
    #: True when the kernel reads feature vectors (False for precomputed / strings)
    requires_vectors: ClassVar[bool] = True
    #: True when k(x, x) is the same constant for every x (RBF, Laplacian, ...)
    constant_diag: ClassVar[float | None] = None
    #: number of n1 x n2 temporaries a block evaluation needs besides its result
    n_temporaries: ClassVar[int] = 0

    def rank_bound(self, n_features: int) -> int | None:
        """An upper bound on the rank of any Gram matrix of this kernel on vectors
        of ``n_features`` features (the dimension of an explicit feature map), or
        None when the feature space is infinite or unknown."""
        return None

    # -- evaluation -----------------------------------------------------------------
    def __call__(self, X: Any, Y: Any = None) -> np.ndarray:
        return self.block(X, Y)

    def block(self, X: Any, Y: Any = None, xp: Any = None) -> Any:
        """Kernel matrix between the rows of ``X`` and of ``Y``.

        Parameters
        ----------
        X : array of shape (n1, d)
            A NumPy array (or SciPy sparse matrix), or an array of namespace ``xp``.
        Y : array of shape (n2, d), default=None
            As ``X``, in its namespace and dtype; ``None`` means ``Y = X`` (a
            symmetric block).
        xp : namespace, default=None
            The Array API namespace of ``X`` and ``Y`` (array-api-compat's, e.g. for
            PyTorch tensors); ``None`` for NumPy arrays and SciPy sparse matrices.

        Returns
        -------
        K : array of shape (n1, n2)
            In the namespace, on the device and in the floating dtype of the inputs
            (float32 stays float32).
        """
        if not on_host(xp):
            check_device_kernel(self)
        return self._block(X, X if Y is None else Y, Y is None)

    def _block(self, X: Any, Y: Any, symmetric: bool) -> np.ndarray:
        raise NotImplementedError(  # a subclass overrides block (or this)
            f"{type(self).__name__} evaluates no kernel values: override "
            "block(X, Y=None, xp=None) (docs/guide.md, 'A kernel of your own').")

    @classmethod
    def supports_array_api(cls) -> bool:
        """Whether :meth:`block` evaluates arrays of any Array API namespace (PyTorch,
        CuPy, ...): whether the class overrides it, the method given the namespace."""
        return cls.block is not Kernel.block

    # -- repeated blocks against the same columns (Gram builds, matrix-free passes) ---
    def prepare(self, Y: Any, dtype: Any = None) -> Any:
        """Column-side state for :meth:`block_prepared`, computed once per ``Y``.

        The returned object supports row slicing (``prep[j0:j1]`` is the state
        of ``Y[j0:j1]``). The default is ``Y`` itself, cast to ``dtype``.
        """
        if dtype is None or sp.issparse(Y):
            return Y
        return np.asarray(Y, dtype=dtype)

    def prepare_rows(self, X: Any, prep: Any) -> Any:
        """Row-side state of ``X`` for repeated :meth:`block_prepared` calls against
        ``prep`` (or its row slices), computed once: an operator's passes evaluate
        every row against every column piece, pass after pass.

        The returned object supports row slicing and is accepted by
        :meth:`block_prepared` as its ``X`` (with ``prep`` or slices of it only).
        The default is ``X`` itself.
        """
        return X

    def block_prepared(self, X: Any, prep: Any, out: np.ndarray | None = None) -> np.ndarray:
        """``k(X, Y)`` where ``prep = self.prepare(Y)``; written into ``out`` if given.
        ``X`` may be rows, or the result of :meth:`prepare_rows` (sliced)."""
        if not sp.issparse(X) and not sp.issparse(prep) and hasattr(prep, "dtype"):
            X = np.asarray(X, dtype=prep.dtype)
        K = self.block(X, prep)
        if out is None:
            return K
        out[...] = K
        return out

    def diag(self, X: Any, xp: Any = None) -> Any:
        """``k(x_i, x_i)`` for every row, shape (n,), without forming a block.

        ``X`` and ``xp`` as in :meth:`block`; the result in X's namespace, device and
        floating dtype. The default evaluates one row at a time through
        :meth:`block` (O(n) memory, one call per row): a kernel with a closed form
        overrides it.
        """
        if on_host(xp):
            if self.constant_diag is not None:
                return np.full(X.shape[0], self.constant_diag, dtype=_float_dtype(X))
            out = np.empty(X.shape[0], dtype=_float_dtype(X))
            for i in range(X.shape[0]):
                out[i] = self.block(X[i : i + 1])[0, 0]
            return out
        if self.constant_diag is not None:
            return xp.full(X.shape[0], self.constant_diag, dtype=X.dtype, device=X.device)
        if X.shape[0] == 0:
            return xp.zeros(0, dtype=X.dtype, device=X.device)
        return xp.concat([xp.reshape(self.block(X[i : i + 1, ...], xp=xp), (1,))
                          for i in range(X.shape[0])])

    # -- parameters -----------------------------------------------------------------
    def resolve(self, X: Any, random_state: Any = None) -> Kernel:
        """Return a copy whose data-dependent parameters are numbers.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Training data the heuristics look at.
        random_state : int, RandomState or None
            Used by heuristics that subsample (the median heuristic).
        """
        self.check_parameters()
        return self._copy()

    def check_parameters(self) -> None:
        """Raise ``ValueError`` naming a parameter whose value is invalid.

        The standard kernels check ``gamma``, ``degree`` and ``coef0`` as the
        estimators check their own parameters of these names; :meth:`resolve`,
        :func:`kpca.kernels.make_kernel` and :func:`kpca.plan_fit` call it. The default
        checks nothing.
        """

    def _copy(self, **changes: Any) -> Kernel:
        params = self.get_params(deep=False)
        params.update(changes)
        return type(self)(**params)

    def block_bytes(self, n1: int, n2: int, dtype: Any = np.float64) -> int:
        """Peak bytes needed to evaluate one ``(n1, n2)`` block (result included)."""
        return int((1 + self.n_temporaries) * n1 * n2 * np.dtype(dtype).itemsize)

    def check_input(self, X: Any) -> None:
        """Hook for kernel-specific input checks (raise ``ValueError``)."""


def check_finite_kernel(K: np.ndarray, between: str) -> np.ndarray:
    """``K``, or a ValueError where a kernel value (or a value computed from kernel
    values) is not finite: a kernel that overflows.

    Parameters
    ----------
    K : ndarray
    between : str
        Which rows the kernel was evaluated between, for the message
        (e.g. ``'the landmarks'``).

    Returns
    -------
    ndarray
        ``K`` itself.
    """
    if not np.all(np.isfinite(K)):
        raise ValueError(
            f"the kernel between {between} overflows (non-finite values): scale the data "
            "or change the kernel parameters (degree, gamma, coef0)."
        )
    return K


def check_device_kernel(kernel: Kernel) -> None:
    """Refuse a kernel that evaluates NumPy arrays only (:meth:`Kernel.supports_array_api`
    is False), naming the alternatives, before a fit or transform of Array API arrays
    starts."""
    if not kernel.supports_array_api():
        name = getattr(kernel, "name", "") or type(kernel).__name__
        raise ValueError(
            f"the {name!r} kernel has no Array API (device) implementation; with PyTorch, "
            "CuPy or other Array API arrays use one of 'rbf', 'laplacian', 'poly', "
            "'linear', 'cosine', 'sigmoid', 'anova', a kpca.kernels.Kernel whose block() "
            "uses the namespace it is given (docs/guide.md, 'A kernel of your own'), or "
            "pass NumPy arrays (e.g. X.cpu().numpy())."
        )


def _float_dtype(*arrays: Any) -> np.dtype:
    """float32 if every input is float32, else float64."""
    dts = [np.dtype(getattr(a, "dtype", np.float64)) for a in arrays if a is not None]
    return np.dtype(np.float32) if dts and all(d == np.float32 for d in dts) else np.dtype(
        np.float64
    )


def dot_block(X: Any, Y: Any) -> np.ndarray:
    """Dense ``X @ Y.T`` for dense or sparse inputs, in the inputs' float dtype."""
    dtype = _float_dtype(X, Y)
    K = safe_sparse_dot(X, Y.T, dense_output=True)
    if sp.issparse(K):  # pragma: no cover - safe_sparse_dot densifies already
        K = K.toarray()
    return np.asarray(K, dtype=dtype)


def sq_euclidean_block(X: Any, Y: Any, symmetric: bool) -> np.ndarray:
    """Squared Euclidean distances ``||x - y||^2`` as ``||x||^2 + ||y||^2 - 2 x.y``.

    The matrix product runs in BLAS. To keep float32 accurate, dense inputs are
    first shifted by a common centre (distances are translation invariant, and
    the cancellation error of the expansion scales with ``||x|| ||y||``).
    The result is clipped at zero and, for a symmetric block, its diagonal is
    exactly zero.
    """
    dtype = _float_dtype(X, Y)
    if not (sp.issparse(X) or sp.issparse(Y)):
        X = np.asarray(X)
        Y = np.asarray(Y)
        centre = Y.mean(axis=0, dtype=np.float64).astype(dtype)
        X = X - centre
        Y = X if symmetric else Y - centre
    xx = row_norms(X, squared=True).astype(dtype, copy=False)
    yy = xx if symmetric else row_norms(Y, squared=True).astype(dtype, copy=False)
    D = dot_block(X, Y)
    D *= -2
    D += xx[:, None]
    D += yy[None, :]
    np.maximum(D, 0, out=D)
    if symmetric:
        np.fill_diagonal(D, 0)
    return D
