"""KernelPCA: a drop-in replacement for ``sklearn.decomposition.KernelPCA``.

The estimator is a short composition: kernel (``kpca.kernels``) -> centred
operator (``kpca.operators``) -> top-k eigensolver (``kpca.solvers``) -> shared
post-processing. The notation is that of docs/math.md ("The eigenproblem"): ``mu_l``
are the eigenvalues of the centred Gram matrix ``K~`` (``eigenvalues_``), ``v_l`` its
unit eigenvectors (``eigenvectors_``), ``alpha_l = v_l / sqrt(mu_l)`` the dual
coefficients.
"""

from __future__ import annotations

import logging
import warnings
from contextlib import nullcontext
from dataclasses import dataclass, replace
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ._memory import default_memory_limit, format_bytes, parse_memory
from ._parallel import blas_threads, run_blocks
from .kernels import Kernel, Precomputed, check_gamma, make_kernel, resolve_gamma
from .operators import (
    Centering,
    DenseOperator,
    KernelOperator,
    TiledKernelOperator,
    center,
    float32_eigen_error,
    gram_matrix,
    n_threads,
)
from .preimage import PreimageMixin
from .solvers import (
    DENSE_MAX_ROWS,
    SOLVERS,
    EigenResult,
    choose_solver,
    eigsh_top,
    finalize,
    krylov_basis_size,
    krylov_block_size,
    krylov_start,
    nystrom_start,
    workspace_bytes,
)

logger = logging.getLogger("kpca")

#: bytes of kernel block evaluated at once by one ``transform`` thread (rows x n_train)
TRANSFORM_BLOCK_BYTES = 32 * 2**20
#: ARPACK fits up to this many rows run their BLAS on one thread (see _decompose)
ARPACK_SERIAL_ROWS = 1500
#: with ``precision='auto'``, float64 data keep a float64 Gram matrix up to this many rows
FLOAT64_MAX_ROWS = 4096
#: ... and beyond, float32 when its estimated eigenvalue error (relative to the
#: largest, :func:`kpca.operators.float32_eigen_error`) is at most this
FLOAT32_MAX_ERROR = 1e-7
PRECISIONS = ("auto", "float32", "float64")


@dataclass(frozen=True)
class _Plan:
    """What a fit will do: sizes, solver, storage precision and memory budget."""

    n: int
    k: int
    fraction: float | None
    solver: str
    dtype: np.dtype
    budget: int
    #: 'auto' chose the solver: an unconverged iterative solve falls back to dense
    auto: bool = False
    #: the whole n x n kernel matrix fits the budget (the dense solver is possible)
    dense_fits: bool = True


def _is_int(x: Any) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


def _is_real(x: Any) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


class KernelPCA(ClassNamePrefixFeaturesOutMixin, PreimageMixin, TransformerMixin, BaseEstimator):
    """Kernel principal component analysis.

    Same parameters, attributes and results as
    :class:`sklearn.decomposition.KernelPCA`; the additions are marked *kpca*.

    Parameters
    ----------
    n_components : int, float in (0, 1) or None, default=None
        Number of components. ``None`` keeps all components with a non-zero
        eigenvalue. An int larger than ``n_samples`` is clipped to ``n_samples``
        (as scikit-learn). *kpca*: a float in (0, 1) keeps the fewest components
        whose ``explained_variance_ratio_`` sums to at least that fraction.
    kernel : str, Kernel or callable, default='linear'
        'linear', 'poly', 'rbf', 'sigmoid', 'cosine', 'precomputed', and *kpca*:
        'laplacian', 'anova', a :class:`kpca.kernels.Kernel` instance (e.g.
        ``kpca.kernels.RBF(gamma=0.5)``), or a callable. A callable that accepts
        two 2-D blocks and returns their kernel matrix is evaluated block-wise;
        one that only takes two 1-D rows is evaluated per pair.
    gamma : float, 'scale', 'median' or None, default=None
        Coefficient of rbf, laplacian, poly, sigmoid and anova kernels. ``None``
        means ``1 / n_features`` (*kpca*: 1 for 'anova', whose terms each see one
        variable). *kpca*: ``'scale'`` is ``1 / (n_features *
        X.var())``; ``'median'`` the median heuristic (see :mod:`kpca.kernels`).
        The value used is stored in ``gamma_``.
    degree : float, default=3
        Degree of the poly kernel.
    coef0 : float, default=1
        Independent term of the poly and sigmoid kernels.
    kernel_params : dict, default=None
        Keyword arguments of a callable kernel; for named kernels (*kpca*), any
        other parameter of the kernel (e.g. ``{'beta': w}`` for 'anova').
    alpha : float, default=1.0
        Ridge penalty of the learned pre-image (``fit_inverse_transform=True``).
    fit_inverse_transform : bool, default=False
        Learn the inverse transform (kernel ridge from scores back to inputs).
    eigen_solver : {'auto', 'dense', 'arpack', 'randomized', 'krylov'}, default='auto'
        'dense' is LAPACK on the full centred Gram matrix (top-k subset),
        'arpack' implicitly restarted Lanczos, 'randomized' randomized subspace
        iteration, *kpca* 'krylov' thick-restart block Lanczos (one pass over the
        kernel matrix serves a block of vectors). 'auto' uses 'dense' when more
        than a fifth of the spectrum is wanted or ``n_samples <= 2000`` ('arpack'
        there for ``k < 10``, ``k * n_samples <= 40000`` or a kernel rank bound
        within ARPACK's ``2k + 1`` vectors, and for ``k < 10`` up to 4096 rows),
        'krylov' beyond or when the kernel matrix does not fit
        ``memory_limit``; an iterative solve that has not converged in the time a
        dense one would take falls back to 'dense' (docs/math.md, "Choosing a
        solver"). All solvers only see the centred-kernel operator.
    tol : float, default=0
        Convergence tolerance: arpack's relative accuracy (0: machine precision);
        for randomized and krylov the residual target ``||K~v - mu v|| / mu_1``
        (0: 1e-8 with float64 storage, 1e-5 with float32).
    max_iter : int, default=None
        Maximum iterations (arpack) or kernel passes (krylov, randomized).
    iterated_power : int >= 0 or 'auto', default='auto'
        Power iterations of the randomized solver.
    remove_zero_eig : bool, default=False
        Drop components with a zero eigenvalue (always done when
        ``n_components is None``).
    random_state : int, RandomState instance or None, default=None
        Seeds arpack's start vector, the randomized solver and the median
        heuristic's subsample.
    copy_X : bool, default=True
        Store a copy of the training data in ``X_fit_`` (otherwise a reference).
    n_jobs : int, default=None
        Threads for the linear algebra (``None``: the libraries' default; ``-1``:
        all cores), and processes for a per-pair callable kernel.
    center : bool, default=True
        *kpca*: centre in feature space (docs/math.md, "Centring in feature space").
        ``False`` gives uncentred kernel PCA (eigenvectors of ``K`` itself).
    memory_limit : int, str or None, default=None
        *kpca*: bytes the kernel matrix may occupy, as a number or a string such as
        ``"2GB"``. ``None``: half of the memory available when ``fit`` starts.
        Iterative solvers keep the lower-triangular tiles of ``K`` that fit and
        recompute the others on every pass (matrix-free), so any ``n`` fits; the
        dense solver needs the whole matrix and raises if it does not fit.
        ``transform`` works in row blocks of at most 32 MB per thread, smaller
        when ``memory_limit`` is.
    precision : {'auto', 'float32', 'float64'}, default='auto'
        *kpca*: storage precision of the kernel matrix. ``'auto'``: float32 data
        use float32; float64 data use float64 up to 4096 rows and float32 beyond
        (half the memory and passes twice as fast; products, projections and
        Rayleigh-Ritz stay in float64) when float32 keeps the eigenvalues within
        ~1e-7 of float64 ones relative to the largest -- estimated on a subsample,
        see :func:`kpca.operators.float32_eigen_error`; float64 otherwise (e.g. a
        linear or polynomial kernel on data far from the origin, where centring
        cancels most of the matrix). Outputs keep the input's dtype.

    Attributes
    ----------
    eigenvalues_ : ndarray of shape (n_components,)
        Eigenvalues ``mu_l`` of the centred kernel matrix, descending.
    eigenvectors_ : ndarray of shape (n_samples, n_components)
        Unit eigenvectors ``v_l`` of the centred kernel matrix.
    explained_variance_ : ndarray of shape (n_components,)
        *kpca*: variance of the data along each component in feature space,
        ``mu_l / n_samples`` (docs/math.md, "The eigenproblem"; scikit-learn's PCA
        divides by n-1).
    explained_variance_ratio_ : ndarray of shape (n_components,)
        *kpca*: ``mu_l / trace(K~)``: the fraction of the total feature-space
        variance. Equals ``PCA().explained_variance_ratio_`` for the linear kernel.
    dual_coef_ : ndarray of shape (n_samples, n_features)
        Inverse transform matrix (only with ``fit_inverse_transform=True``).
    X_transformed_fit_ : ndarray of shape (n_samples, n_components)
        Projection of the training data (only with ``fit_inverse_transform=True``).
    X_fit_ : ndarray of shape (n_samples, n_features)
        The training data.
    gamma_ : float
        Kernel coefficient actually used.
    kernel_ : Kernel
        *kpca*: the kernel object with every data-dependent parameter resolved.
    eigen_solver_ : str
        *kpca*: the solver that ran ('auto' resolved).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when X has string column names.

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from kpca import KernelPCA
    >>> X, y = make_circles(200, factor=0.3, noise=0.05, random_state=0)
    >>> Z = KernelPCA(n_components=2, kernel="rbf", gamma=10).fit_transform(X)
    >>> Z.shape
    (200, 2)
    """

    def __init__(
        self,
        n_components=None,
        *,
        kernel="linear",
        gamma=None,
        degree=3,
        coef0=1,
        kernel_params=None,
        alpha=1.0,
        fit_inverse_transform=False,
        eigen_solver="auto",
        tol=0,
        max_iter=None,
        iterated_power="auto",
        remove_zero_eig=False,
        random_state=None,
        copy_X=True,
        n_jobs=None,
        center=True,
        memory_limit=None,
        precision="auto",
    ):
        self.n_components = n_components
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.kernel_params = kernel_params
        self.alpha = alpha
        self.fit_inverse_transform = fit_inverse_transform
        self.eigen_solver = eigen_solver
        self.tol = tol
        self.max_iter = max_iter
        self.iterated_power = iterated_power
        self.remove_zero_eig = remove_zero_eig
        self.random_state = random_state
        self.copy_X = copy_X
        self.n_jobs = n_jobs
        self.center = center
        self.memory_limit = memory_limit
        self.precision = precision

    # ------------------------------------------------------------------ validation
    def _check_params(self) -> None:
        nc = self.n_components
        if not (
            nc is None
            or (_is_int(nc) and nc >= 1)
            or (_is_real(nc) and not _is_int(nc) and 0 < nc < 1)
        ):
            raise ValueError(
                "n_components must be None, an integer >= 1, or a float in (0, 1) (fraction "
                f"of variance to explain); got {nc!r}."
            )
        if not (isinstance(self.kernel, (str, Kernel)) or callable(self.kernel)):
            raise ValueError(
                "kernel must be a kernel name, a kpca.kernels.Kernel or a callable; "
                f"got {self.kernel!r}."
            )
        check_gamma(self.gamma)
        if not (_is_real(self.degree) and np.isfinite(self.degree) and self.degree >= 0):
            raise ValueError(f"degree must be a finite number >= 0; got {self.degree!r}.")
        if not (_is_real(self.coef0) and np.isfinite(self.coef0)):
            raise ValueError(f"coef0 must be a finite number; got {self.coef0!r}.")
        if self.kernel_params is not None and not isinstance(self.kernel_params, dict):
            raise ValueError(f"kernel_params must be a dict or None; got {self.kernel_params!r}.")
        if not (_is_real(self.alpha) and np.isfinite(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be a finite number >= 0; got {self.alpha!r}.")
        solvers = ["auto", *SOLVERS]
        if self.eigen_solver not in solvers:
            raise ValueError(f"eigen_solver must be one of {solvers}; got {self.eigen_solver!r}.")
        if not (_is_real(self.tol) and self.tol >= 0):
            raise ValueError(f"tol must be a number >= 0; got {self.tol!r}.")
        if not (self.max_iter is None or (_is_int(self.max_iter) and self.max_iter >= 1)):
            raise ValueError(f"max_iter must be None or an integer >= 1; got {self.max_iter!r}.")
        ip = self.iterated_power
        if not (ip == "auto" or (_is_int(ip) and ip >= 0)):
            raise ValueError(f"iterated_power must be 'auto' or an integer >= 0; got {ip!r}.")
        for name in ("fit_inverse_transform", "remove_zero_eig", "copy_X", "center"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False; got {getattr(self, name)!r}.")
        if not (self.n_jobs is None or (_is_int(self.n_jobs) and self.n_jobs != 0)):
            raise ValueError(f"n_jobs must be None or a non-zero integer; got {self.n_jobs!r}.")
        parse_memory(self.memory_limit)
        if self.precision not in PRECISIONS:
            raise ValueError(
                f"precision must be one of {list(PRECISIONS)}; got {self.precision!r}."
            )

    def _make_kernel(self) -> Kernel:
        return make_kernel(
            self.kernel,
            gamma=self.gamma,
            degree=self.degree,
            coef0=self.coef0,
            kernel_params=self.kernel_params,
            n_jobs=self.n_jobs,
        )

    def _validate_X(self, X: Any, *, reset: bool, kernel: Kernel) -> Any:
        from .distributed import is_dask_collection, materialize

        if is_dask_collection(X):  # gather X (n x d); K @ V then runs on the cluster
            X = materialize(X)
            self._distributed = True if reset else getattr(self, "_distributed", False)
        elif reset:
            self._distributed = False
        if not getattr(kernel, "requires_vectors", True) and not isinstance(kernel, Precomputed):
            # objects that are not feature vectors (e.g. strings for kernel='spectrum'):
            # a 1-D object array, sliceable by rows like a matrix
            from .kernels import as_strings

            if reset and self.fit_inverse_transform:
                raise ValueError(
                    f"fit_inverse_transform=True needs vector inputs; the {kernel.name!r} "
                    "kernel works on strings, which have no pre-image map."
                )
            X = as_strings(X)
            if reset:
                X = X.copy() if self.copy_X else X
                for attr in ("n_features_in_", "feature_names_in_"):
                    self.__dict__.pop(attr, None)
            kernel.check_input(X)
            return X
        X = validate_data(
            self,
            X,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            copy=self.copy_X if reset else False,
            reset=reset,
            ensure_min_samples=1,
        )
        kernel.check_input(X)
        return X

    def _threads(self):
        if self.n_jobs is None:
            return nullcontext()
        return blas_threads(None if self.n_jobs < 0 else self.n_jobs)

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None):
        """Fit the model from data in X.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; for ``kernel='precomputed'``, the (n_samples, n_samples)
            kernel matrix.
        y : Ignored

        Returns
        -------
        self : KernelPCA
        """
        self._fit(X)
        return self

    def fit_transform(self, X, y=None, **params):
        """Fit the model from data in X and return its projection (computed once).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            ``sqrt(mu_l) v_l``: the training scores, with no second kernel pass.
        """
        return self._fit(X)

    def _fit(self, X) -> np.ndarray:
        self._check_params()
        if self.fit_inverse_transform and self._is_precomputed():
            raise ValueError("Cannot fit_inverse_transform with a precomputed kernel.")
        kernel = self._make_kernel()
        X = self._validate_X(X, reset=True, kernel=kernel)
        rng = check_random_state(self.random_state)
        with self._threads():
            self.kernel_ = kernel.resolve(X, random_state=rng)
            self.gamma_ = self._resolved_gamma(X, rng)
            result, trace = self._decompose(X, rng)
        self.eigenvalues_ = result.values
        self.eigenvectors_ = result.vectors
        self.eigen_solver_ = result.solver
        n = X.shape[0]
        self.explained_variance_ = self.eigenvalues_ / n
        ratio = self.eigenvalues_ / trace if trace > 0 else np.zeros_like(self.eigenvalues_)
        self.explained_variance_ratio_ = ratio.astype(self.eigenvalues_.dtype, copy=False)
        self.X_fit_ = X
        X_transformed = self.eigenvectors_ * np.sqrt(self.eigenvalues_)
        if self.fit_inverse_transform:
            self._fit_inverse(X_transformed, X)
        return X_transformed

    def _is_precomputed(self) -> bool:
        return (isinstance(self.kernel, str) and self.kernel == "precomputed") or isinstance(
            self.kernel, Precomputed
        )

    def _resolved_gamma(self, X, rng) -> float:
        g = getattr(self.kernel_, "gamma", None)
        if g is not None and not isinstance(g, str):
            return float(g)
        if getattr(X, "ndim", 2) == 1:
            # non-vector objects (strings): there is no n_features and no distance
            # heuristic; a numeric gamma is reported as given, otherwise NaN
            return float(self.gamma) if _is_real(self.gamma) else float("nan")
        if self.gamma is None or isinstance(self.gamma, str):
            # kernels without gamma report what scikit-learn reports (1/n_features);
            # heuristics are resolved on squared distances
            return resolve_gamma(self.gamma, X, random_state=rng) if self.gamma else (
                1.0 / X.shape[1]
            )
        return float(self.gamma)

    def _precomputed_gram(self, X) -> np.ndarray:
        """The user's precomputed Gram matrix, copied and symmetrised (owned by the fit)."""
        if X.shape[0] != X.shape[1]:
            raise ValueError(
                "kernel='precomputed' needs the square (n_samples, n_samples) kernel "
                f"matrix; got shape {X.shape}."
            )
        K = X.toarray() if sp.issparse(X) else np.array(X, copy=True)
        if not np.allclose(K, K.T, rtol=1e-7, atol=1e-12 * max(1.0, np.abs(K).max())):
            warnings.warn(
                "the precomputed kernel matrix is not symmetric; its symmetric part "
                "(K + K.T) / 2 is used.",
                UserWarning,
                stacklevel=5,
            )
        K += K.T
        K *= 0.5
        return K

    def _n_requested(self, n: int) -> int:
        nc = self.n_components
        if nc is None:
            return n
        if _is_int(nc):
            return min(n, int(nc))
        return n  # fraction: decided after the spectrum is known

    def _storage_dtype(self, X, n: int) -> np.dtype:
        if self.precision != "auto":
            return np.dtype(self.precision)
        if X.dtype == np.float32:
            return np.dtype(np.float32)
        if self._is_precomputed():  # the user's matrix is used as given
            return np.dtype(np.float64)
        # float32 only where it keeps the top eigenvalues accurate: not when centring
        # cancels most of K (e.g. linear kernel, data far from the origin)
        if n > FLOAT64_MAX_ROWS and float32_eigen_error(
            self.kernel_, X, center=self.center, random_state=0
        ) <= FLOAT32_MAX_ERROR:
            return np.dtype(np.float32)
        return np.dtype(np.float64)

    def _plan(self, X) -> _Plan:
        """Resolve n_components, the solver, the storage precision and the budget."""
        n = X.shape[0]
        nc = self.n_components
        fraction = float(nc) if _is_real(nc) and not _is_int(nc) else None
        k = self._n_requested(n)
        limit = parse_memory(self.memory_limit)
        budget = default_memory_limit() if limit is None else limit
        dtype = self._storage_dtype(X, n)
        dense_fits = self._is_precomputed() or n * n * dtype.itemsize <= budget
        solver, auto = self.eigen_solver, self.eigen_solver == "auto"
        if auto and fraction is not None:
            # a variance fraction needs an unknown number of components: dense where
            # the whole spectrum is cheap, block Lanczos (growing k) beyond
            solver = "dense" if dense_fits and n <= DENSE_MAX_ROWS else "krylov"
        elif auto:
            # strings and precomputed kernels have no feature count
            rank = self.kernel_.rank_bound(X.shape[1]) if self.kernel_.requires_vectors else None
            solver = choose_solver(n, k, dense_fits=dense_fits, rank=rank)
        return _Plan(n, k, fraction, solver, dtype, budget, auto, dense_fits)

    def _decompose(self, X, rng) -> tuple[EigenResult, float]:
        """kernel -> operator -> centring -> solver -> shared post-processing."""
        plan = self._plan(X)
        self._gram_dtype = plan.dtype.name  # a string: model files hold only plain values
        # ARPACK on a small stored matrix makes thousands of products that each take
        # microseconds: waking a second BLAS thread for each costs more than it saves
        # (measured: n = 500-1,500, 1.4-2.4x faster fits on one thread; slower from
        # 2,000 rows on)
        serial = (plan.solver == "arpack" and self.n_jobs is None
                  and plan.n <= ARPACK_SERIAL_ROWS)
        with blas_threads(1 if serial else None):
            return self._decompose_planned(X, plan, rng)

    def _decompose_planned(self, X, plan: _Plan, rng) -> tuple[EigenResult, float]:
        op = self._kernel_operator(X, plan, rng)
        diag = op.diag()
        if not np.all(np.isfinite(diag)):
            raise ValueError(
                "the kernel matrix has non-finite values on its diagonal (overflow): check "
                "the kernel parameters (e.g. degree, gamma, coef0) or scale the data."
            )
        # eigenvalues below n * eps * max K_ii are indistinguishable from the
        # round-off of K itself (and of the centring that subtracts its means)
        noise = plan.n * np.finfo(plan.dtype).eps * float(np.max(np.abs(diag), initial=0.0))
        op, centering = self._center_operator(op)
        self._centering = centering
        trace = op.trace()
        if not (np.isfinite(trace) and np.all(np.isfinite(centering.row_means))):
            raise ValueError(
                "the kernel matrix overflows: its row sums or trace are not finite (the "
                f"largest diagonal entry is {float(np.max(diag)):.3g}). Scale the data or "
                "change the kernel parameters (degree, gamma, coef0)."
            )
        if trace <= noise:
            trace = 0.0
        final = self._solve(op, plan, trace, noise, rng)
        out_dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
        final = replace(
            final,
            values=final.values.astype(out_dtype, copy=False),
            vectors=final.vectors.astype(out_dtype, copy=False),
        )
        return final, trace

    def _kernel_operator(self, X, plan: _Plan, rng) -> KernelOperator:
        """The uncentred kernel matrix of the training data as an operator.

        Dense (stored, owned by the fit) for precomputed kernels and the dense
        solver; tiled (stored or matrix-free under the memory budget) otherwise.
        """
        n, k = plan.n, plan.k
        in_process = self._is_precomputed() or plan.solver == "dense" or (
            plan.solver == "arpack" and plan.dense_fits
        )
        if getattr(self, "_distributed", False) and not in_process:
            from .distributed import DaskKernelOperator

            return DaskKernelOperator(self.kernel_, X, dtype=plan.dtype)
        if in_process:
            # ARPACK's single-vector products are cheapest on one contiguous matrix
            need = n * n * plan.dtype.itemsize
            if need > plan.budget and not self._is_precomputed():
                raise ValueError(
                    f"eigen_solver='dense' needs the whole {n}x{n} kernel matrix "
                    f"({format_bytes(need)}) but memory_limit allows "
                    f"{format_bytes(plan.budget)}; use eigen_solver='krylov' (matrix-free) "
                    "or raise memory_limit."
                )
            return self._dense_operator(X, plan.dtype)
        # the budget covers the solver's float64 workspace too, not only K; a pass
        # over a fully stored K is cheap, so block Lanczos then takes narrow blocks
        stored = n * n * plan.dtype.itemsize <= plan.budget - workspace_bytes(
            plan.solver, n, k, cheap_pass=True)
        solver_bytes = workspace_bytes(plan.solver, n, k, cheap_pass=stored)
        kernel_budget = plan.budget - solver_bytes
        if kernel_budget < solver_bytes // 4:
            raise ValueError(
                f"memory_limit={plan.budget} bytes is too small for n_samples={n}: the "
                f"{plan.solver} solver alone needs about {solver_bytes} bytes; give at least "
                f"{solver_bytes + solver_bytes // 4} bytes."
            )
        # the construction pass (row sums for centring) also computes K @ Q0 for
        # the block Lanczos start, so the solver does not spend a pass on it
        probe = None
        b = krylov_block_size(k, cheap_pass=stored, n=n)
        if (plan.solver == "krylov" and plan.fraction is None
                and krylov_basis_size(k, b) < n // 2):
            probe = self._start_block(X, b, rng)
        return TiledKernelOperator(
            self.kernel_, X, dtype=plan.dtype, memory_limit=kernel_budget,
            n_jobs=self.n_jobs, probe=probe,
        )

    def _start_block(self, X, b: int, rng) -> np.ndarray | None:
        """Start block of the block Lanczos solver, shape (n, b), orthonormal, or None.

        Its product with ``K`` rides on the operator's construction pass.

        For vector kernels, the top Nyström directions
        (:func:`kpca.solvers.nystrom_start`): the solver then needs one pass over
        ``K~`` fewer than from a random block.
        """
        if getattr(self.kernel_, "requires_vectors", True) and not self._is_precomputed():
            return nystrom_start(self.kernel_, X, b, center=self.center, random_state=rng)
        return krylov_start(X.shape[0], b, rng)

    def _center_operator(self, op: KernelOperator) -> tuple[KernelOperator, Centering]:
        """Centre in feature space (docs/math.md, "Centring in feature space"), or not
        (``center=False``).

        Subclasses (robust KPCA) override this to centre on another point of
        feature space and/or rescale rows; they return the operator to
        decompose and the :class:`Centering` that maps new rows the same way.
        """
        if self.center:
            return center(op, inplace=True)
        return op, Centering.none(op.n)

    def _solve(self, op, plan: _Plan, trace: float, noise: float, rng) -> EigenResult:
        """Top eigenpairs of the centred operator, post-processed."""
        options = dict(
            tol=self.tol,
            max_iter=self.max_iter,
            iterated_power=self.iterated_power,
            random_state=rng,
            fallback=plan.auto and plan.dense_fits,
        )
        start = op.initial_block() if hasattr(op, "initial_block") else None
        if start is not None:
            options["start"] = start
        if plan.fraction is not None:
            return self._decompose_fraction(op, plan.solver, plan.fraction, trace, options,
                                            noise)
        result = eigsh_top(op, plan.k, solver=plan.solver, **options)
        if not result.converged:
            warnings.warn(
                f"eigen_solver={result.solver!r} stopped after {result.n_iter} iterations "
                f"with residuals up to {np.max(result.residuals):.2e} (relative to the "
                "largest eigenvalue) above its target; raise max_iter or tol.",
                ConvergenceWarning,
                stacklevel=4,
            )
        return finalize(
            result,
            remove_zero=bool(self.remove_zero_eig or self.n_components is None),
            drop_negative=self.n_components is None,
            noise_floor=noise,
        )

    def _dense_operator(self, X, dtype) -> DenseOperator:
        if self._is_precomputed():
            return DenseOperator(self._precomputed_gram(X), owned=True)
        K, _ = gram_matrix(self.kernel_, X, dtype=dtype, n_jobs=self.n_jobs)
        return DenseOperator(K, owned=True)

    def _decompose_fraction(
        self, op, solver: str, fraction: float, trace: float, options, noise: float
    ) -> EigenResult:
        """Fewest components whose eigenvalues sum to ``fraction * trace(K~)``."""
        n = op.n
        k = n if solver == "dense" else min(n, 16)
        while True:
            result = finalize(
                eigsh_top(op, k, solver=solver, **options),
                remove_zero=True,
                drop_negative=True,
                noise_floor=noise,
            )
            cum = np.cumsum(result.values, dtype=np.float64) / trace if trace > 0 else None
            if cum is not None and cum.size and cum[-1] >= fraction - 1e-12:
                m = int(np.searchsorted(cum, fraction - 1e-12) + 1)
                break
            if k >= n:
                m = result.values.size
                break
            k = min(n, 2 * k)
        return replace(
            result,
            values=result.values[:m],
            vectors=result.vectors[:, :m],
            residuals=None if result.residuals is None else result.residuals[:m],
        )

    # ------------------------------------------------------------------ transforming
    @property
    def _scaled_alphas(self) -> np.ndarray:
        """``alpha_l = v_l / sqrt(mu_l)`` (0 for a zero eigenvalue), shape (n, k)."""
        V, w = self.eigenvectors_, self.eigenvalues_
        A = np.zeros_like(V)
        nz = np.flatnonzero(w)
        A[:, nz] = V[:, nz] / np.sqrt(w[nz])
        return A

    def transform(self, X):
        """Project X on the components: ``y_l(t) = sum_i alpha_li K~_t[t, i]``.

        Evaluated in row blocks by ``n_jobs`` threads, so memory stays bounded
        (a few blocks of ``rows x n_train``) for any number of rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            For ``kernel='precomputed'``: the kernel between the new objects and
            the training objects, shape (n_samples, n_train).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        from .distributed import is_dask_collection, transform_dask

        if is_dask_collection(X):  # lazy dask array, transformed chunk by chunk
            return transform_dask(self, X, self.eigenvalues_.shape[0], self.eigenvectors_.dtype)
        X = self._validate_X(X, reset=False, kernel=self.kernel_)
        A = self._scaled_alphas
        return self._project(X, A)

    def _project(self, X, A: np.ndarray) -> np.ndarray:
        """``K~_t @ A`` for the rows of ``X``, blocked and threaded, in A's dtype."""
        n_train = self.X_fit_.shape[0]
        dtype = np.dtype(getattr(self, "_gram_dtype", A.dtype))
        workers = n_threads(self.n_jobs)
        # Each worker holds one kernel block and its cast to A's dtype; a user's
        # memory_limit smaller than the default block shrinks the blocks.
        limit = parse_memory(getattr(self, "memory_limit", None))
        block_bytes = TRANSFORM_BLOCK_BYTES if limit is None else min(
            TRANSFORM_BLOCK_BYTES, limit // (3 * workers))
        row_bytes = n_train * max(np.dtype(dtype).itemsize, A.dtype.itemsize)
        rows = max(1, block_bytes // max(1, row_bytes))
        out = np.empty((X.shape[0], A.shape[1]), dtype=A.dtype)
        precomputed = self._is_precomputed()
        prep = None if precomputed else self.kernel_.prepare(self.X_fit_, dtype)

        def work(start: int) -> None:
            Xb = X[start : start + rows]
            if precomputed:
                Kt = Xb.toarray() if sp.issparse(Xb) else np.asarray(Xb)
            else:
                Kt = self.kernel_.block_prepared(Xb, prep)
            Kt = np.asarray(Kt, dtype=A.dtype)
            out[start : start + rows] = self._centering.project(Kt, A)

        starts = range(0, X.shape[0], rows)
        # one block runs here, where n_jobs (if given) sets BLAS's own threads
        with self._threads() if len(starts) <= 1 or workers <= 1 else nullcontext():
            run_blocks(work, starts, workers)
        if not np.all(np.isfinite(out)):
            raise ValueError(
                "the kernel between these rows and the training rows overflows (non-finite "
                "values): scale the data or change the kernel parameters (degree, gamma, coef0)."
            )
        return out

    # ------------------------------------------------------------------ sklearn glue
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.input_tags.pairwise = self._is_precomputed()
        return tags

    @property
    def _n_features_out(self) -> int:
        """Number of transformed output features."""
        return self.eigenvalues_.shape[0]
