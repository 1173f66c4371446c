"""Kernel objects: evaluate a block ``k(X1, X2)`` and ``diag(X)``.

A kernel object is a small parameter container (a scikit-learn style object, so
``get_params``/``set_params``/``clone`` and nested grid search such as
``kernel__gamma`` work) with three duties:

* :meth:`Kernel.block` evaluates the kernel between two blocks of rows, vectorised;
* :meth:`Kernel.diag` evaluates ``k(x, x)`` for every row without forming a block;
* :meth:`Kernel.block_bytes` says how much memory a block of a given size costs,
  so that operators can tile a computation under a memory budget.

Data-dependent parameters (``gamma=None``, ``'scale'``, ``'median'``) are fixed by
:meth:`Kernel.resolve`, which returns a new kernel with numbers only.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.extmath import row_norms, safe_sparse_dot


class Kernel(BaseEstimator):
    """Base class of all kernels.

    Subclasses implement :meth:`_block` (dense result of shape ``(n1, n2)``) and
    may override :meth:`diag`, :meth:`resolve` and :meth:`block_bytes`.
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

    def block(self, X: Any, Y: Any = None) -> np.ndarray:
        """Kernel matrix between the rows of ``X`` and of ``Y``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n1, d)
        Y : array-like or sparse matrix of shape (n2, d), default=None
            ``None`` means ``Y = X`` (a symmetric block).

        Returns
        -------
        K : ndarray of shape (n1, n2)
            In the floating dtype of the inputs (float32 stays float32).
        """
        return self._block(X, X if Y is None else Y, Y is None)

    def _block(self, X: Any, Y: Any, symmetric: bool) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - abstract

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
        K = self._block(X, prep, False)
        if out is None:
            return K
        out[...] = K
        return out

    def diag(self, X: Any) -> np.ndarray:
        """``k(x_i, x_i)`` for every row, shape (n,), without forming a block."""
        if self.constant_diag is not None:
            return np.full(X.shape[0], self.constant_diag, dtype=_float_dtype(X))
        # generic fallback: evaluate row by row in small blocks (O(n) memory)
        out = np.empty(X.shape[0], dtype=_float_dtype(X))
        for i in range(X.shape[0]):
            out[i] = self.block(X[i : i + 1])[0, 0]
        return out

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
        return self._copy()

    def _copy(self, **changes: Any) -> Kernel:
        params = self.get_params(deep=False)
        params.update(changes)
        return type(self)(**params)

    def block_bytes(self, n1: int, n2: int, dtype: Any = np.float64) -> int:
        """Peak bytes needed to evaluate one ``(n1, n2)`` block (result included)."""
        return int((1 + self.n_temporaries) * n1 * n2 * np.dtype(dtype).itemsize)

    def check_input(self, X: Any) -> None:
        """Hook for kernel-specific input checks (raise ``ValueError``)."""


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
