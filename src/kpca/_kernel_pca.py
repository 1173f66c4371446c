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
from dataclasses import dataclass, field, replace
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._array_api import (
    device_memory_limit,
    device_namespace,
    from_host,
    refuse_device,
    to_host,
)
from ._base import N_COMPONENTS, BaseKernelPCA
from ._config import get_config
from ._memory import parse_memory
from ._parallel import blas_threads, call_threads, job_threads
from ._parallel_analysis import (
    ParallelAnalysis,
    check_parallel_analysis,
    leading_above,
    null_threshold,
    permutation_rng,
    permute_columns,
)
from ._plan import FitPlan, on_device, plan_fit, requested_components
from .diagnostics import Influence, norm_floor, od_noise
from .kernels import (
    GAMMA_HEURISTICS,
    KERNELS,
    Kernel,
    Precomputed,
    as_strings,
    check_device_kernel,
    explicit_features,
    make_kernel,
    resolve_gamma,
)
from .operators import (
    Centering,
    DenseOperator,
    DeviceKernelOperator,
    KernelOperator,
    TiledKernelOperator,
    center,
    float32_eigen_error,
    gram_matrix,
)
from .preimage import PreimageInfo, fit_ridge_preimage, ridge_preimage, score_space_kernel
from .solvers import (
    SOLVERS,
    EigenResult,
    device_nystrom_start,
    eigsh_top,
    finalize,
    krylov_start,
    nystrom_start,
    primal_eigsh,
    start_landmarks,
)
from .subspace import FittedSubspace

logger = logging.getLogger("kpca")


#: the plan of a fit (kpca._plan.plan_fit): what the operator and the solver are built from
_Plan = FitPlan


@dataclass(frozen=True)
class _Decomposition:
    """What one eigendecomposition of a fit produced."""

    result: EigenResult
    trace: float
    centering: Centering
    plan: _Plan
    #: fitted attributes the centring step found (robust KPCA: weights, distances),
    #: set on the estimator only once the whole fit has succeeded
    fitted: dict = field(default_factory=dict)


def _padded(values: np.ndarray, k: int) -> np.ndarray:
    """``values`` as float64 of length ``k`` (zeros after those a solve returned)."""
    out = np.zeros(k)
    v = np.asarray(values, dtype=np.float64)[:k]
    out[: v.size] = v
    return out


class KernelPCA(BaseKernelPCA):
    """Kernel principal component analysis.

    Same parameters, attributes and results as
    :class:`sklearn.decomposition.KernelPCA`; the additions are marked *kpca*.

    Parameters
    ----------
    n_components : int, float in (0, 1), 'auto' or None, default=None
        Number of components. ``None`` keeps all components with a non-zero
        eigenvalue. An int larger than ``n_samples`` is clipped to ``n_samples``
        (as scikit-learn). *kpca*: a float in (0, 1) keeps the fewest components
        whose ``explained_variance_ratio_`` sums to at least that fraction.
        *kpca*: ``'auto'`` chooses the number by parallel analysis: the leading
        components whose eigenvalue exceeds the ``parallel_analysis_quantile``
        (0.95) quantile of the same eigenvalue over ``parallel_analysis_permutations``
        (19) copies of X with each column permuted independently, the kernel
        (``gamma`` included) fixed on X (docs/math.md, "Parallel analysis";
        :func:`kpca.parallel_analysis`). Permutation ``b`` is drawn from
        ``numpy.random.default_rng([seed, b])``, ``seed`` being ``random_state``
        when it is an int. The comparison is in ``parallel_analysis_``.
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
        kernel matrix serves a block of vectors). 'auto' picks the one of least
        modelled cost in flops (a function of ``n_samples``, ``k``, the kernel and
        ``kpca.get_config()``, never of time or load): 'dense', 'arpack' or
        'krylov' when the kernel matrix fits ``memory_limit``, 'krylov'
        (matrix-free) when it does not; for the linear kernel and polynomial
        kernels of integer degree with few features, the primal route (the
        covariance of the explicit features, no kernel matrix; ``eigen_solver_``
        is then ``'primal'``) when that is cheaper. An iterative solve that has
        not converged within the modelled cost of a dense solve falls back to
        'dense' (docs/math.md, "Choosing a solver"). All solvers only see the
        centred-kernel operator.
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
        Threads for the linear algebra (``None``: the libraries' default, at most the
        cores this process may use, its CPU affinity and cgroup quota; ``-1``: all
        those cores), and processes for a per-pair callable kernel. A large BLAS or
        LAPACK call gets threads by its size, up to this (``blas_flops_per_thread``,
        docs/guide.md "Cores, memory and threads").
    center : bool, default=True
        *kpca*: centre in feature space (docs/math.md, "Centring in feature space").
        ``False`` gives uncentred kernel PCA (eigenvectors of ``K`` itself).
    memory_limit : int, str or None, default=None
        *kpca*: bytes the kernel matrix may occupy, as a number or a string such as
        ``"2GB"``. ``None``: half of the memory this process may use (physical, or a
        cgroup limit), halved while it exceeds the memory free when ``fit`` starts
        (docs/guide.md, "Cores, memory and threads").
        Iterative solvers keep the lower-triangular tiles of ``K`` when all of them
        fit, else recompute them on every pass (matrix-free), so any ``n`` fits; the
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
    contamination : 'auto' or float in (0, 0.5], default='auto'
        *kpca*: threshold of the outlier detector (``predict``,
        ``decision_function``): ``'auto'`` flags the rows beyond either cut-off of
        the outlier map (docs/math.md, "Robust KPCA and diagnostics"); a float
        flags that fraction of the training rows.

    Attributes
    ----------
    subspace_ : kpca.FittedSubspace
        *kpca*: the fitted centre and directions in feature space, which
        ``transform``, the pre-images, the diagnostics and model files read.
    n_components_ : int
        Number of components kept.
    parallel_analysis_ : kpca.ParallelAnalysis
        *kpca*, ``n_components='auto'`` only: the eigenvalues, the null eigenvalues
        and thresholds, and the number of components above them.
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
    fit_plan_ : kpca.FitPlan
        *kpca*: the plan the fit ran (:func:`kpca.plan_fit`): the solver and why,
        stored or matrix-free, precision, block and start, expected passes, modelled
        cost and peak memory; ``print(model.fit_plan_)`` describes it. Not kept in
        model files.
    score_distances_, orthogonal_distances_ : ndarray of shape (n_samples,)
        *kpca*: score and orthogonal distances of the training rows.
    sd_cutoff_, od_cutoff_ : float
        *kpca*: their 97.5 % cut-offs (the outlier map).
    offset_ : float
        *kpca*: ``decision_function = score_samples - offset_``.
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
        contamination="auto",
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
        self.contamination = contamination

    _parameter_constraints: dict = {
        **BaseKernelPCA._parameter_constraints,
        "n_components": [*N_COMPONENTS, StrOptions({"auto"})],
        "kernel": [StrOptions(set(KERNELS)), Kernel, callable],
        "gamma": [Interval(Real, 0, np.inf, closed="neither"), StrOptions(set(GAMMA_HEURISTICS)),
                  None],
        "degree": [Interval(Real, 0, np.inf, closed="left")],
        "coef0": [Interval(Real, -np.inf, np.inf, closed="neither")],
        "kernel_params": [dict, None],
        "alpha": [Interval(Real, 0, np.inf, closed="left")],
        "fit_inverse_transform": ["boolean"],
        "eigen_solver": [StrOptions({"auto", *SOLVERS})],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "iterated_power": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "remove_zero_eig": ["boolean"],
        "copy_X": ["boolean"],
        "center": ["boolean"],
        "memory_limit": [Interval(Real, 1, None, closed="left"), str, None],
    }
    #: scikit-learn's ``inverse_transform`` is the learned pre-image
    _default_inverse = "ridge"
    #: the plan describes a fit on this machine: not kept in model files
    _unsaved_attributes = ("fit_plan_",)

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
        if not getattr(kernel, "requires_vectors", True) and not isinstance(kernel, Precomputed):
            # objects that are not feature vectors (e.g. strings for kernel='spectrum'):
            # a 1-D object array, sliceable by rows like a matrix
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

    def _validate_new(self, X: Any) -> Any:
        # transform, inverse_transform and denoise take device arrays before this
        refuse_device(X, f"this method of {type(self).__name__}")
        return self._validate_X(X, reset=False, kernel=self.kernel_)

    def _training_rows(self) -> Any:
        return self.X_fit_

    def _training_kernel_diag(self) -> np.ndarray | None:
        return np.asarray(self.X_fit_.diagonal(), np.float64) if self._is_precomputed() else None

    def _threads(self):
        return job_threads(self.n_jobs)

    # ------------------------------------------------------------------ fitting
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the model from data in X.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            Training data; for ``kernel='precomputed'``, the (n_samples, n_samples)
            kernel matrix.
        y : Ignored

        Returns
        -------
        self : KernelPCA
        """
        with self._keeping_input_attributes():
            self._fit(X)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None, **params):
        """Fit the model from data in X and return its projection (computed once).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components_)
            The training scores (``sqrt(mu_l) v_l`` for KernelPCA), with no second
            kernel pass.
        """
        with self._keeping_input_attributes():
            return self._fit(X)

    def plan(self, X: Any, dtype: Any = None) -> FitPlan:
        """What ``fit(X)`` would do, without fitting: :class:`kpca.FitPlan`.

        Reads only the shape and dtype of ``X`` (no data, no kernel value): the
        solver and why, stored or matrix-free, precision, block and start, expected
        passes, modelled cost and peak memory. With ``precision='auto'`` and more
        than ``float64_max_rows`` float64 rows the precision is provisional (the fit
        checks float32's accuracy on a subsample). Data-dependent kernel parameters
        (``gamma='median'``) are left unresolved; no decision depends on their value.

        Parameters
        ----------
        X : array-like, sparse matrix, dask array, RowSource or tuple
            The training data, or its shape ``(n_samples, n_features)``.
        dtype : dtype, default=None
            The data's dtype when ``X`` is a shape (default float64).

        Returns
        -------
        FitPlan
        """
        from .distributed import is_dask_collection

        self._validate_params()
        if type(self)._fit is not KernelPCA._fit:
            raise ValueError(
                f"{type(self).__name__} fits by its own algorithm (several decompositions): "
                "plan() describes one kernel PCA fit (KernelPCA, WeightedKernelPCA, "
                "SphericalKernelPCA).")
        if isinstance(X, tuple):
            shape, dtype = tuple(int(s) for s in X), np.dtype(dtype or np.float64)
        else:
            shape, dtype = tuple(getattr(X, "shape", np.shape(X))), getattr(X, "dtype", None)
            dtype = np.dtype(dtype if dtype in (np.float32, np.float64) else np.float64)
        if not shape or shape[0] < 1:
            raise ValueError(f"X: expected data with at least one row; got shape {shape}.")
        kernel = self._make_kernel()
        n = shape[0]
        vectors = (len(shape) == 2 and getattr(kernel, "requires_vectors", True)
                   and not self._is_precomputed())
        xp = None if isinstance(X, tuple) else device_namespace(X)
        k = None
        if self._auto_components():  # the first round of parallel analysis
            d = shape[1] if vectors else None
            rank = kernel.rank_bound(d) if d else None
            k_max = max(1, min(n - 1 if self.center else n, rank if rank else n))
            k = min(k_max, get_config()["parallel_analysis_start_components"])
        return plan_fit(
            n, shape[1] if vectors else None, kernel, dtype=dtype,
            n_components=self.n_components,
            k=self._n_requested(n) if k is None else k, eigen_solver=self.eigen_solver,
            precision=self.precision, memory_limit=self.memory_limit, center=self.center,
            n_jobs=self.n_jobs, precomputed=self._is_precomputed(),
            sparse=sp.issparse(X), distributed=is_dask_collection(X),
            primal=self._primal_allowed(), partial_storage=self._partial_storage,
            device=None if xp is None else str(X.device),
            device_memory=None if xp is None or parse_memory(self.memory_limit) is not None
            else device_memory_limit(X))

    def _fit(self, X) -> Any:
        if self.fit_inverse_transform and self._is_precomputed():
            raise ValueError("Cannot fit_inverse_transform with a precomputed kernel.")
        xp = device_namespace(X)
        device = None
        auto = self._auto_components()
        if auto and xp is not None:
            refuse_device(X, "n_components='auto'")
        if xp is None:
            X, distributed, rng = self._prepare_fit(X)
        else:
            X, device = self._device_rows(X, xp)
            distributed, rng = False, check_random_state(self.random_state)
        with self._threads():
            # data-dependent kernel parameters: without a random_state the median
            # heuristic still gives the same value for the same data (kernels._gamma)
            heuristic_rng = None if self.random_state is None else rng
            kernel = self._make_kernel().resolve(X, random_state=heuristic_rng)
            gamma = self._resolved_gamma(kernel, X, heuristic_rng)
            if auto:
                dec, found = self._decompose_auto(X, kernel, rng, distributed, gamma)
            else:
                dec = self._decompose(X, kernel, rng, distributed, device)
        out = self._set_fitted(X, kernel, dec, gamma, device_X=device)
        if auto:
            self.parallel_analysis_ = found
        else:
            self.__dict__.pop("parallel_analysis_", None)  # from an earlier 'auto' fit
        return out if device is None else from_host(out, xp, device.device)

    def _device_rows(self, X: Any, xp: Any) -> tuple[np.ndarray, Any]:
        """The validated host copy of an Array API array ``X`` and ``X`` on its device in
        that copy's float dtype.

        On such arrays (docs/scaling.md, "GPU and the Array API") the operator and the
        solver's block algebra run on their device; the host copy of the n x d rows gets
        the shared post-processing, so the fitted attributes are those (NumPy) of a NumPy
        fit.
        """
        check_device_kernel(self._make_kernel())
        X_host = self._validate_X(to_host(X), reset=True, kernel=self._make_kernel())
        return X_host, xp.astype(X, xp.float32 if X_host.dtype == np.float32 else xp.float64)

    def _prepare_fit(self, X) -> tuple[Any, bool, np.random.RandomState]:
        """Validated training data, whether it came as a dask collection, the RNG."""
        from .distributed import is_dask_collection, materialize

        distributed = is_dask_collection(X)
        if distributed:  # gather X (n x d); K @ V then runs on the cluster
            X = materialize(X)
        X = self._validate_X(X, reset=True, kernel=self._make_kernel())
        return X, distributed, check_random_state(self.random_state)

    def _set_fitted(self, X, kernel: Kernel, dec: _Decomposition, gamma: float, *,
                    device_X: Any = None) -> np.ndarray:
        """Fitted attributes from a decomposition; returns ``fit_transform``'s output.

        ``device_X``: the training rows as an Array API array (``X`` their host copy),
        where the learned pre-image (``fit_inverse_transform``) is then fitted."""
        values, vectors = dec.result.values, dec.result.vectors
        n = X.shape[0]
        for name, value in dec.fitted.items():
            setattr(self, name, value)
        self.kernel_ = kernel
        self.gamma_ = gamma
        self.X_fit_ = X
        self.eigenvalues_ = values
        self.eigenvectors_ = vectors
        self.eigen_solver_ = dec.result.solver
        # the plan that ran, without the device array it held
        self.fit_plan_ = (dec.plan if dec.plan.device_X is None
                          else replace(dec.plan, device_X=None))
        self.n_components_ = values.shape[0]
        self.explained_variance_ = (values / self._variance_divisor(n)).astype(values.dtype)
        ratio = values / dec.trace if dec.trace > 0 else np.zeros_like(values)
        self.explained_variance_ratio_ = ratio.astype(values.dtype, copy=False)
        Z = vectors * np.sqrt(values)  # scores of the decomposed operator
        raw = self._raw_training_scores(Z, X, kernel, dec.centering, dec.plan.device_X)
        diag_k = (np.asarray(X.diagonal(), np.float64) if self._is_precomputed()
                  else np.asarray(kernel.diag(X), np.float64))
        nz = np.flatnonzero(values)
        A = np.zeros(vectors.shape)
        A[:, nz] = vectors[:, nz] / np.sqrt(values[nz].astype(np.float64))
        self.subspace_ = FittedSubspace.from_dual(
            kernel, X, A, dec.centering, basis_scores=raw,
            score_variance=self._score_variance(raw),
            normalize=self._normalized, norm_floor=norm_floor(diag_k, dec.plan.dtype),
            od_noise=od_noise(diag_k, dec.plan.dtype), rows_dtype=dec.plan.dtype.name,
        )
        sd, od = self.subspace_.distances(raw, self.subspace_.basis_sqnorms(diag_k))
        self._set_outlier_statistics(sd, od)
        out = Z if self._normalized else raw.astype(values.dtype, copy=False)
        if self.fit_inverse_transform:
            self.dual_coef_ = self._fit_ridge(score_space_kernel(kernel), out, X, device_X)
            self.X_transformed_fit_ = out
        return out

    def _fit_ridge(self, kernel: Kernel, Y: np.ndarray, X: Any, device_X: Any) -> np.ndarray:
        """The learned pre-image's dual coefficients (NumPy, as every fitted attribute):
        with ``device_X``, the n x n solve runs on its device and only the (n, d)
        coefficients come back (docs/preimages.md)."""
        if device_X is None:
            return fit_ridge_preimage(kernel, Y, X, self.alpha)
        xp = device_namespace(device_X)
        Yd = xp.astype(from_host(Y, xp, device_X.device), device_X.dtype)
        C = fit_ridge_preimage(kernel, Yd, device_X, self.alpha)
        return to_host(C, np.result_type(Y.dtype, X.dtype))

    #: ``transform`` divides the scores by ``||phi(t) - theta||`` (spherical KPCA)
    _normalized = False

    def _variance_divisor(self, n: int) -> float:
        """``explained_variance_ = eigenvalues_ / this``."""
        return n

    def _score_variance(self, raw: np.ndarray) -> np.ndarray:
        """Variance of the training scores along each direction (score-distance scale)."""
        return np.asarray(self.explained_variance_, dtype=np.float64)

    def _raw_training_scores(self, Z: np.ndarray, X, kernel: Kernel, c: Centering,
                             device_X: Any = None) -> np.ndarray:
        """``<phi(x_i) - theta, f_l>`` from the operator scores ``Z = sqrt(mu) v``.

        ``Z`` itself without row scales; with scales ``s`` (robust KPCA) ``Z / s``,
        or -- where ``s`` is tiny and dividing would amplify round-off -- the
        projection of those rows (their kernel rows evaluated on the device of
        ``device_X``, the training rows as an Array API array, where given).
        """
        s = c.scale
        if s is None:
            return Z
        out = np.asarray(Z, dtype=np.float64).copy()
        ok = s >= 0.01 * np.max(s)
        out[ok] /= s[ok, None]
        bad = np.flatnonzero(~ok)
        if bad.size:
            nz = Z.any(axis=0)
            A = np.zeros(Z.shape)
            A[:, nz] = self.eigenvectors_[:, nz] / np.sqrt(
                self.eigenvalues_[nz].astype(np.float64))
            space = FittedSubspace.from_dual(kernel, X, A, c, basis_scores=Z,
                                             score_variance=np.ones(Z.shape[1]))
            if device_X is not None:  # bad rows x n kernel values: on the device
                xp = device_namespace(device_X)
                rows = xp.take(device_X, from_host(bad, xp, device_X.device), axis=0)
                out[bad] = to_host(space.transform_device(rows, xp, dtype=np.float64, raw=True),
                                   np.float64)
            else:
                kd = np.zeros(bad.size)  # norms unused
                out[bad] = space.raw_projection(X[bad], kernel_diag=kd)[0]
        return out

    def _is_precomputed(self) -> bool:
        return (isinstance(self.kernel, str) and self.kernel == "precomputed") or isinstance(
            self.kernel, Precomputed
        )

    def _resolved_gamma(self, kernel: Kernel, X, rng) -> float:
        g = getattr(kernel, "gamma", None)
        if g is not None and not isinstance(g, str):
            return float(g)
        if getattr(X, "ndim", 2) == 1:
            # non-vector objects (strings): there is no n_features and no distance
            # heuristic; a numeric gamma is reported as given, otherwise NaN
            return float(self.gamma) if isinstance(self.gamma, Real) else float("nan")
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

    def _auto_components(self) -> bool:
        return isinstance(self.n_components, str) and self.n_components == "auto"

    def _n_requested(self, n: int) -> int:
        return requested_components(self.n_components, n)

    def _plan(self, X, kernel: Kernel, distributed: bool = False,
              k: int | None = None, device: Any = None) -> FitPlan:
        """The fit's plan (:func:`kpca._plan.plan_fit`): n_components, the solver, the
        storage precision, the budget, where K lives, the start, passes and memory.

        Under ``eigen_solver='auto'`` the solver is the one of least modelled cost
        (docs/math.md, "Choosing a solver"): a function of the data's shape, the
        parameters, the kernel and the configuration only, never of time or load. The
        only look at the data is the float32 accuracy check of ``precision='auto'``
        (:func:`kpca.operators.float32_eigen_error`, on a subsample, when needed).
        ``k``: the number of eigenpairs instead of ``n_components``' (what
        ``n_components='auto'`` asks for). ``device``: the rows as an Array API array
        (``X`` their host copy): the plan is for its device and memory.
        """
        n = X.shape[0]
        vectors = getattr(X, "ndim", 2) == 2 and getattr(kernel, "requires_vectors", True)

        def float32_error() -> float:
            return float32_eigen_error(kernel, X, center=self.center, random_state=0)

        dev, dev_memory = None, None
        if device is not None:
            dev = str(getattr(device, "device", "device"))
            if parse_memory(self.memory_limit) is None:
                dev_memory = device_memory_limit(device)
        return plan_fit(
            n, X.shape[1] if vectors and not self._is_precomputed() else None, kernel,
            dtype=X.dtype, n_components=self.n_components,
            k=self._n_requested(n) if k is None else k, eigen_solver=self.eigen_solver,
            precision=self.precision, memory_limit=self.memory_limit, center=self.center,
            n_jobs=self.n_jobs, precomputed=self._is_precomputed(),
            sparse=not isinstance(X, np.ndarray), distributed=distributed,
            primal=self._primal_allowed(), partial_storage=self._partial_storage,
            float32_error=float32_error, device=dev, device_memory=dev_memory)

    def _primal_allowed(self) -> bool:
        """Whether this estimator may take the primal route: subclasses that centre or
        rescale otherwise decompose another operator."""
        return not (type(self)._decompose_planned is not KernelPCA._decompose_planned
                    or type(self)._fit is not KernelPCA._fit
                    or type(self)._center_operator is not KernelPCA._center_operator)

    def _decompose(self, X, kernel: Kernel, rng, distributed: bool = False,
                   device: Any = None, plan: _Plan | None = None) -> _Decomposition:
        """kernel -> operator -> centring -> solver -> shared post-processing.

        ``device``: the training rows as an Array API array (``X`` is their host
        copy); the operator and the solver then run on its device. ``plan``: one
        made for other rows of the same shape and kernel (the null copies of
        ``n_components='auto'``), instead of planning again.
        """
        if plan is None:
            plan = self._plan(X, kernel, distributed, device=device)
        if device is not None:
            return self._decompose_planned(X, replace(plan, device_X=device), rng)
        # a tiled operator's passes run on worker threads (one BLAS thread each); the
        # small products and factorizations between them stay on this thread's one
        # BLAS thread too: OpenBLAS threads woken for them spin for ~0.1 s after each
        # call (its thread timeout) against the next pass's workers (measured at
        # n = 20,000, k = 10 on 2 cores: the fit 0.74 -> 0.66 s, the Nystrom start
        # 80 -> 50 ms). The iterative solvers' large block algebra, the Nystrom start's
        # large products and a dense fallback ask for the operator's threads explicitly
        # (KernelOperator.threads).
        tiled = not (plan.distributed or plan.in_process)
        # in this process, K's largest BLAS calls (LAPACK's tridiagonal reduction,
        # ARPACK's products) synchronise BLAS's threads once per 2 n^2 flops: threads
        # by that size (kpca._parallel.call_threads), not every core whatever the size;
        # the same rule keeps ARPACK's thousands of matrix-vector products on a small
        # matrix (2 n^2 flops each, microseconds) on one thread: one up to 5,792 rows
        # (measured: n = 500-1,500, 1.4-2.4x faster fits on one thread than two)
        local = None if plan.distributed else call_threads(2.0 * plan.n * plan.n)
        with blas_threads(1 if tiled else local):
            return self._decompose_planned(X, plan, rng)

    def _device_plan(self, plan: FitPlan, device: Any) -> FitPlan:
        """``plan`` for the rows ``device`` (an Array API array): the operator and the
        solver run on its device (:func:`kpca._plan.on_device`)."""
        memory = (device_memory_limit(device) if parse_memory(self.memory_limit) is None
                  else None)
        return replace(on_device(plan, str(getattr(device, "device", "device")), memory),
                       device_X=device)

    def _decompose_planned(self, X, plan: _Plan, rng) -> _Decomposition:
        if plan.solver == "primal":
            return self._decompose_primal(X, plan, rng)
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
        op, centering, fitted = self._center_operator(op, plan, rng)
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
        return _Decomposition(final, trace, centering, plan, fitted)

    def _decompose_auto(self, X, kernel: Kernel, rng, distributed: bool, gamma: float
                        ) -> tuple[_Decomposition, ParallelAnalysis]:
        """``n_components='auto'``: parallel analysis (docs/math.md, "Parallel analysis").

        The top ``k`` eigenvalues of X and of each column-permuted copy, under one
        plan (solver, storage precision, budget) and the kernel resolved on X; ``k``
        doubles while all ``k`` are above the null threshold. Returns the data's
        decomposition cut to the components kept, and the comparison.
        """
        if self._is_precomputed() or not getattr(kernel, "requires_vectors", True):
            raise ValueError(
                "n_components='auto' permutes the columns of X (parallel analysis): it "
                "needs feature vectors, not a precomputed kernel matrix or strings; give "
                "an integer n_components.")
        cfg = get_config()
        B, q = check_parallel_analysis(cfg["parallel_analysis_permutations"],
                                       cfg["parallel_analysis_quantile"])
        rs = self.random_state
        # the permutations' own streams: the same copies whatever the solver draws
        seed = (int(rs) if isinstance(rs, Integral) and not isinstance(rs, bool)
                else int(rng.randint(np.iinfo(np.int32).max)))
        n = X.shape[0]
        rank = kernel.rank_bound(X.shape[1])
        # centring removes one dimension: at most n - 1 (and rank) non-zero eigenvalues
        k_max = max(1, min(n - 1 if self.center else n, rank if rank else n))
        k = min(k_max, cfg["parallel_analysis_start_components"])
        while True:
            plan = self._plan(X, kernel, distributed, k=k)
            dec = self._decompose(X, kernel, rng, distributed, plan=plan)
            values = _padded(dec.result.values, k)
            null = np.zeros((B, k))
            for b in range(B):
                Xb = permute_columns(X, permutation_rng(seed, b))
                null[b] = _padded(self._decompose(Xb, kernel, rng, distributed,
                                                  plan=plan).result.values, k)
                logger.debug("n_components='auto': null copy %d of %d", b + 1, B)
            threshold = null_threshold(null, q)
            m = leading_above(values, threshold)
            if m < k or k >= k_max:
                break
            k = min(k_max, 2 * k)  # every candidate kept: look further
        logger.info("n_components='auto': %d of %d components above the null's %g "
                    "quantile (%d permutations)", m, k, q, B)
        if m == 0:
            warnings.warn(
                f"n_components='auto': no eigenvalue is above the {q:g} quantile of the "
                f"column-permuted null ({B} permutations); keeping 1 component. The "
                "columns look independent under this kernel (docs/math.md, 'Parallel "
                "analysis').", UserWarning, stacklevel=4)
        kept = max(1, m)
        r = dec.result
        cut = replace(r, values=r.values[:kept], vectors=r.vectors[:, :kept],
                      residuals=None if r.residuals is None else r.residuals[:kept])
        found = ParallelAnalysis(
            eigenvalues=values, null_eigenvalues=null, threshold=threshold, quantile=q,
            n_permutations=B, n_components=m, trace=float(dec.trace), gamma=float(gamma))
        return replace(dec, result=cut), found

    def _decompose_primal(self, X, plan: _Plan, rng) -> _Decomposition:
        """The primal route: the covariance of the explicit features (no ``K``).

        The same eigenvalues, dual eigenvectors, trace and centring statistics as the
        dual route (:func:`kpca.solvers.primal_eigsh`), and the same post-processing.
        """
        F = explicit_features(plan.kernel, X)
        diag = np.einsum("ij,ij->i", F, F)
        noise = plan.n * np.finfo(plan.dtype).eps * float(np.max(np.abs(diag), initial=0.0))
        if not (np.all(np.isfinite(F))):
            raise ValueError(
                "the kernel matrix has non-finite values on its diagonal (overflow): check "
                "the kernel parameters (e.g. degree, gamma, coef0) or scale the data."
            )
        # n_components=None keeps the non-zero eigenvalues: at most p of them
        k = min(plan.k, F.shape[1]) if self.n_components is None else plan.k
        sol = primal_eigsh(F, k, center=self.center, random_state=rng)
        del F
        centering = (Centering(sol.row_means, sol.grand_mean) if self.center
                     else Centering.none(plan.n))
        trace = sol.trace if sol.trace > noise else 0.0
        final = finalize(
            sol.result,
            remove_zero=bool(self.remove_zero_eig or self.n_components is None),
            drop_negative=self.n_components is None,
            noise_floor=noise,
        )
        out_dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
        final = replace(
            final,
            values=final.values.astype(out_dtype, copy=False),
            vectors=final.vectors.astype(out_dtype, copy=False),
        )
        return _Decomposition(final, trace, centering, plan)

    def _kernel_operator(self, X, plan: FitPlan, rng) -> KernelOperator:
        """The uncentred kernel matrix of the training data as the plan lays it out.

        Dense (stored, owned by the fit) for precomputed kernels and the dense
        solver; on a device, or tiled (stored or matrix-free under the memory budget)
        otherwise. The plan has already refused a budget they cannot run in.
        """
        probe = None
        if plan.start is not None:
            # the construction pass (row sums for centring) also computes K @ Q0 for
            # the block Lanczos start, so the solver does not spend a pass on it
            on = {} if plan.device_X is None else {"device_X": plan.device_X}
            probe = self._start_block(X, plan.kernel, plan.block, rng,
                                      cheap_pass=plan.cheap_pass, **on)
        if plan.device_X is not None:
            return DeviceKernelOperator(plan.kernel, plan.device_X,
                                        device_namespace(plan.device_X), dtype=plan.dtype,
                                        memory_limit=plan.budget, probe=probe)
        if plan.in_process:
            return self._dense_operator(X, plan)
        if plan.distributed:
            from .distributed import DaskKernelOperator

            return DaskKernelOperator(plan.kernel, X, dtype=plan.dtype)
        return TiledKernelOperator(
            plan.kernel, X, dtype=plan.dtype, memory_limit=plan.kernel_budget,
            n_jobs=plan.n_jobs, probe=probe, partial=plan.partial_storage,
        )

    #: keep part of K when not all of it fits the budget. Not for one fit's 3-6 passes:
    #: writing tiles into fresh memory cost more than the evaluations they saved
    #: (n = 40,000-100,000 under 3 GB, 13-85 % of K kept: 18-38 % slower; issue 17)
    _partial_storage = False

    def _start_block(self, X, kernel: Kernel, b: int, rng, *, cheap_pass: bool,
                     device_X: Any = None) -> Any:
        """Start block of the block Lanczos solver, shape (n, b), orthonormal, or None.

        Its product with ``K`` rides on the operator's construction pass.

        For vector kernels, the top Nyström directions
        (:func:`kpca.solvers.nystrom_start`), on as many landmarks as
        :func:`kpca.solvers.start_landmarks` gives for passes that read a stored ``K``
        (``cheap_pass``) or recompute it: the solver then needs a pass or two over
        ``K~`` fewer than from a random block. With ``device_X`` (the rows on their
        device, ``X`` their host copy), the same block computed there
        (:func:`kpca.solvers.device_nystrom_start`: the same landmarks).
        """
        if getattr(kernel, "requires_vectors", True) and not self._is_precomputed():
            m = start_landmarks(X.shape[0], cheap_pass, kernel.rank_bound(X.shape[1]))
            if device_X is not None:
                return device_nystrom_start(kernel, device_X, device_namespace(device_X), b,
                                            center=self.center, n_landmarks=m,
                                            random_state=rng)
            return nystrom_start(kernel, X, b, center=self.center, random_state=rng,
                                 n_landmarks=m, n_jobs=self.n_jobs)
        Q = krylov_start(X.shape[0], b, rng)
        if device_X is not None:
            return from_host(Q, device_namespace(device_X), device_X.device)
        return Q

    def _center_operator(self, op: KernelOperator, plan: _Plan, rng
                         ) -> tuple[KernelOperator, Centering, dict]:
        """Centre in feature space (docs/math.md, "Centring in feature space"), or not
        (``center=False``).

        Subclasses (robust KPCA) override this to centre on another point of
        feature space and/or rescale rows; they return the operator to
        decompose, the :class:`Centering` that maps new rows the same way, and the
        fitted attributes they found (set once the fit succeeds).
        """
        if self.center:
            return (*center(op, inplace=True), {})
        return op, Centering.none(op.n), {}

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

    def _dense_operator(self, X, plan: _Plan) -> DenseOperator:
        if self._is_precomputed():
            return DenseOperator(self._precomputed_gram(X), owned=True)
        K, _ = gram_matrix(plan.kernel, X, dtype=plan.dtype, n_jobs=self.n_jobs)
        return DenseOperator(K, owned=True)

    def _decompose_fraction(
        self, op, solver: str, fraction: float, trace: float, options, noise: float
    ) -> EigenResult:
        """Fewest components whose eigenvalues sum to ``fraction * trace(K~)``."""
        n = op.n
        k = n if solver == "dense" else min(n, 16)
        # the loop may solve again: no solve may decompose the stored matrix in place
        view = DenseOperator(op.A, owned=False) if isinstance(op, DenseOperator) else op
        while True:
            result = finalize(
                eigsh_top(view, k, solver=solver, **options),
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

    # ------------------------------------------------------------------ diagnostics
    def _row_scale(self) -> np.ndarray | None:
        """Scales ``s`` of the decomposed operator ``S K~ S`` (None: no scaling)."""
        return None

    def influence(self):
        """Empirical influence of each training point on the eigenvalues and eigenvectors.

        O(n k^2) from the fitted eigenpairs (no refit): see
        :class:`kpca.diagnostics.Influence`.
        """
        check_is_fitted(self)
        diag = self.subspace_.basis_sqnorms()
        s = self._row_scale()
        if s is not None:
            diag = diag * np.asarray(s, np.float64) ** 2
        return Influence.from_eigenpairs(self.eigenvalues_, self.eigenvectors_, diag)

    # ------------------------------------------------------------------ pre-images
    def _ridge_inverse(self, Y: np.ndarray, return_info: bool, q: int | None = None):
        """The learned pre-image (kernel ridge from scores to inputs, as scikit-learn)."""
        k = self.X_transformed_fit_.shape[1]
        if Y.ndim != 2 or Y.shape[1] != k:
            raise ValueError(
                f"inverse_transform expects scores of shape (n_samples, {k}); got shape "
                f"{Y.shape}."
            )
        if not np.all(np.isfinite(Y)):
            raise ValueError("inverse_transform: the scores contain NaN or infinity.")
        Z = ridge_preimage(score_space_kernel(self.kernel_), Y, self.X_transformed_fit_,
                           self.dual_coef_,
                           block_bytes=self._block_bytes("preimage_block_bytes", 8))
        if not return_info:
            return Z
        q = k if q is None else q
        space = self.subspace_.truncate(q)
        residual = space.residual(np.asarray(Z, dtype=np.float64),
                                  np.asarray(Y[:, :q], dtype=np.float64))
        return Z, PreimageInfo.closed_form("ridge", Z.shape[0], residual)

    # ------------------------------------------------------------------ sklearn glue
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._is_precomputed()
        return tags
