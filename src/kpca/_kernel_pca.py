"""KernelPCA: a drop-in replacement for ``sklearn.decomposition.KernelPCA``.

The estimator is a short composition of the fit pipeline (:mod:`kpca._fit`): plan ->
kernel operator -> centring -> eigensolver -> result -> one commit of every fitted
attribute. The notation is that of docs/math.md ("The eigenproblem"): ``mu_l`` are the
eigenvalues of the centred Gram matrix ``K~`` (``eigenvalues_``), ``v_l`` its unit
eigenvectors (``eigenvectors_``), ``alpha_l = v_l / sqrt(mu_l)`` the dual coefficients.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._array_api import device_memory_limit, device_namespace, from_host, refuse_device, to_host
from ._base import N_COMPONENTS, BaseKernelPCA
from ._fit import (
    Centring,
    FitResult,
    FitSettings,
    MeanCentring,
    commit,
    decompose,
    exact_result,
    is_precomputed,
    parallel_analysis,
    resolved_gamma,
    shape_plan,
)
from ._memory import parse_memory
from ._parallel import job_threads
from ._plan import FitPlan
from .diagnostics import Influence
from .kernels import (
    GAMMA_HEURISTICS,
    KERNELS,
    Kernel,
    Precomputed,
    as_strings,
    check_device_kernel,
    make_kernel,
)
from .preimage import HostSpace, PreimageInfo, ridge_preimage, score_space_kernel
from .solvers import SOLVERS


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

    #: how the fit centres and weights the kernel matrix (kpca._fit): a strategy type,
    #: made from the estimator's parameters; the robust estimators declare theirs
    _centring: ClassVar[type[Centring]] = MeanCentring

    def _make_kernel(self) -> Kernel:
        return make_kernel(self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                           kernel_params=self.kernel_params, n_jobs=self.n_jobs)

    def _validate_X(self, X: Any, *, reset: bool, kernel: Kernel) -> Any:
        return validate_rows(self, X, reset=reset, kernel=kernel)

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
        if isinstance(X, tuple):
            shape, dtype = tuple(int(s) for s in X), np.dtype(dtype or np.float64)
        else:
            shape, dtype = tuple(getattr(X, "shape", np.shape(X))), getattr(X, "dtype", None)
            dtype = np.dtype(dtype if dtype in (np.float32, np.float64) else np.float64)
        if not shape or shape[0] < 1:
            raise ValueError(f"X: expected data with at least one row; got shape {shape}.")
        return shape_plan(
            shape, dtype, self._make_kernel(), FitSettings.of(self),
            reweights=self._centring.reweights, auto=self._auto_components(),
            sparse=sp.issparse(X), distributed=is_dask_collection(X),
            device=None if device_namespace(X) is None else str(X.device),
            device_memory=None if device_namespace(X) is None
            or parse_memory(self.memory_limit) is not None else device_memory_limit(X))

    def _fit(self, X) -> Any:
        """The pipeline (kpca._fit): rows -> kernel -> decomposition -> result -> commit."""
        if self.fit_inverse_transform and self._is_precomputed():
            raise ValueError("Cannot fit_inverse_transform with a precomputed kernel.")
        auto = self._auto_components()
        X, device, distributed, rng = self._fit_rows(X, refuse="n_components='auto'" if auto
                                                     else None)
        settings, centring = FitSettings.of(self), self._centring.of(self)
        with self._threads():
            kernel, gamma = self._fit_kernel(X, rng)
            if auto:
                dec, found = parallel_analysis(X, kernel, settings, rng, distributed, gamma)
            else:
                dec = decompose(X, kernel, settings, centring, rng, distributed=distributed,
                                device=device)
        result = exact_result(X, kernel, gamma, dec, settings, centring, device_X=device)
        if auto:
            result.attributes["parallel_analysis_"] = found
        else:  # from an earlier 'auto' fit
            result = FitResult(result.attributes, result.output,
                               (*result.stale, "parallel_analysis_"))
        out = commit(self, result)
        return out if device is None else from_host(out, device_namespace(device),
                                                    device.device)

    def _fit_rows(self, X, refuse: str | None = None) -> tuple[Any, Any, bool, Any]:
        return fit_rows(self, X, refuse)

    def _fit_kernel(self, X, rng) -> tuple[Kernel, float]:
        """The kernel resolved on ``X`` and the ``gamma_`` reported. Without a
        random_state the median heuristic still gives the same value for the same data
        (kernels._gamma)."""
        heuristic_rng = None if self.random_state is None else rng
        kernel = self._make_kernel().resolve(X, random_state=heuristic_rng)
        return kernel, resolved_gamma(kernel, X, self.gamma, heuristic_rng)

    # ------------------------------------------------------------------ diagnostics
    def influence(self):
        """Empirical influence of each training point on the eigenvalues and eigenvectors.

        O(n k^2) from the fitted eigenpairs (no refit): see
        :class:`kpca.diagnostics.Influence`.
        """
        check_is_fitted(self)
        diag = self.subspace_.basis_sqnorms()
        s = self._centring.of(self).row_scale(self)
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
                f"{Y.shape}.")
        if not np.all(np.isfinite(Y)):
            raise ValueError("inverse_transform: the scores contain NaN or infinity.")
        Z = ridge_preimage(score_space_kernel(self.kernel_), Y, self.X_transformed_fit_,
                           self.dual_coef_,
                           block_bytes=self._block_bytes("preimage_block_bytes", 8))
        if not return_info:
            return Z
        q = k if q is None else q
        space = self.subspace_.truncate(q)
        residual = HostSpace(space).residual(np.asarray(Z, dtype=np.float64),
                                             np.asarray(Y[:, :q], dtype=np.float64))
        return Z, PreimageInfo.closed_form("ridge", Z.shape[0], residual)

    # ------------------------------------------------------------------ sklearn glue
    def _is_precomputed(self) -> bool:
        return is_precomputed(self.kernel)

    def _auto_components(self) -> bool:
        return isinstance(self.n_components, str) and self.n_components == "auto"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._is_precomputed()
        return tags


def validate_rows(est: KernelPCA, X: Any, *, reset: bool, kernel: Kernel) -> Any:
    """``est``'s input validation (``reset``: of training rows; strings for a string
    kernel, otherwise scikit-learn's ``validate_data``)."""
    if not getattr(kernel, "requires_vectors", True) and not isinstance(kernel, Precomputed):
        # objects that are not feature vectors (e.g. strings for kernel='spectrum'):
        # a 1-D object array, sliceable by rows like a matrix
        if reset and est.fit_inverse_transform:
            raise ValueError(
                f"fit_inverse_transform=True needs vector inputs; the {kernel.name!r} "
                "kernel works on strings, which have no pre-image map.")
        X = as_strings(X)
        if reset:
            X = X.copy() if est.copy_X else X
            for attr in ("n_features_in_", "feature_names_in_"):
                est.__dict__.pop(attr, None)
        kernel.check_input(X)
        return X
    X = validate_data(est, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                      copy=est.copy_X if reset else False, reset=reset,
                      ensure_min_samples=1)
    kernel.check_input(X)
    return X


def fit_rows(est: KernelPCA, X: Any, refuse: str | None = None) -> tuple[Any, Any, bool, Any]:
    """Validated host rows, the rows on their device (Array API input, in the host
    copy's float dtype; else None), whether they came as a dask collection, the RNG.

    On a device (docs/scaling.md, "GPU and the Array API") the operator and the
    solver's block algebra run there; the host copy gets the shared post-processing,
    so the fitted attributes are those (NumPy) of a NumPy fit. ``refuse``: what
    cannot run on a device (it raises there)."""
    from .distributed import is_dask_collection, materialize

    rng = check_random_state(est.random_state)
    xp = device_namespace(X)
    if xp is not None:
        if refuse:
            refuse_device(X, refuse)
        check_device_kernel(est._make_kernel())
        host = est._validate_X(to_host(X), reset=True, kernel=est._make_kernel())
        dt = xp.float32 if host.dtype == np.float32 else xp.float64
        return host, xp.astype(X, dt), False, rng
    distributed = is_dask_collection(X)
    if distributed:  # gather X (n x d); K @ V then runs on the cluster
        X = materialize(X)
    return est._validate_X(X, reset=True, kernel=est._make_kernel()), None, \
        distributed, rng
