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
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._array_api import refuse_device
from ._base import EXACT_FIT_CONSTRAINTS, BaseKernelPCA, kernel_parameters, memory_block_bytes
from ._fit import (
    Centring,
    FitSettings,
    MeanCentring,
    commit,
    data_plan,
    decompose,
    exact_result,
    fit_kernel,
    fit_rows,
    is_precomputed,
    parallel_analysis,
    validate_rows,
)
from ._parallel import job_threads
from ._plan import FitPlan
from .diagnostics import Influence
from .kernels import KERNELS, Kernel, make_kernel


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
        whose ``explained_variance_ratio_`` sums to at least that fraction; ``'auto'``
        the leading components above the null of column-permuted copies of X
        (parallel analysis, :func:`kpca.parallel_analysis`; docs/math.md).
    kernel : str, Kernel or callable, default='linear'
        'linear', 'poly', 'rbf', 'sigmoid', 'cosine', 'precomputed', and *kpca*:
        'laplacian', 'anova', a :class:`kpca.kernels.Kernel` instance (e.g.
        ``kpca.kernels.RBF(gamma=0.5)``), or a callable of two blocks of rows or of
        two rows (docs/guide.md, "A kernel of your own").
    gamma : float, 'scale', 'median' or None, default=None
        Coefficient of rbf, laplacian, poly, sigmoid and anova kernels. ``None``
        means ``1 / n_features`` (*kpca*: 1 for 'anova'). *kpca*: the heuristics
        ``'scale'`` and ``'median'`` (docs/guide.md, "Gamma heuristics"). 0 is
        ignored by the kernels without gamma, as in scikit-learn, and refused by
        those it would make constant (*kpca*).
    degree : float, default=3
        Degree of the poly kernel.
    coef0 : float, default=1
        Independent term of the poly and sigmoid kernels.
    kernel_params : dict, default=None
        Keyword arguments of a callable kernel; for named kernels (*kpca*), any
        parameter of the kernel (e.g. ``{'beta': w}`` for 'anova'), checked as the
        parameters of the same name; one that contradicts ``gamma``, ``degree`` or
        ``coef0`` given explicitly is a ``ValueError``.
    alpha : float, default=1.0
        Ridge penalty of the learned pre-image (``fit_inverse_transform=True``).
    fit_inverse_transform : bool, default=False
        Learn the inverse transform (kernel ridge from scores back to inputs).
    eigen_solver : {'auto', 'dense', 'arpack', 'randomized', 'krylov'}, default='auto'
        'dense': LAPACK on the centred Gram matrix, 'arpack': implicitly restarted
        Lanczos, 'randomized': randomized subspace iteration, *kpca* 'krylov':
        thick-restart block Lanczos. 'auto': the least modelled cost, never time or
        load (docs/math.md, "Choosing a solver"; ``fit_plan_`` says why).
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
        Threads for the linear algebra, processes for a per-pair callable kernel
        (``None``, ``-1``: the cores this process may use; docs/guide.md, "Cores,
        memory and threads").
    center : bool, default=True
        *kpca*: centre in feature space (docs/math.md, "Centring in feature space").
        ``False`` gives uncentred kernel PCA (eigenvectors of ``K`` itself).
    memory_limit : int, str or None, default=None
        *kpca*: bytes the kernel matrix may occupy, e.g. ``"2GB"``; ``None``: half of
        the memory this process may use, less when less is free (docs/guide.md,
        "Cores, memory and threads").
    precision : {'auto', 'float32', 'float64'}, default='auto'
        *kpca*: storage precision of the kernel matrix (outputs keep the input's
        dtype); ``'auto'``: the data's, or float32 beyond ``float64_max_rows`` rows
        where it is accurate (docs/math.md, "Backends").
    contamination : 'auto' or float in (0, 0.5], default='auto'
        *kpca*: threshold of the outlier detector (``predict``, ``decision_function``):
        ``'auto'`` flags the rows beyond either cut-off of the outlier map
        (docs/math.md, "Robust KPCA and diagnostics"); a float flags that fraction of
        the training rows.

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
        *kpca*: feature-space variance along each component, ``mu_l / n_samples``
        (docs/math.md, "The eigenproblem"; scikit-learn's PCA divides by n-1).
    explained_variance_ratio_ : ndarray of shape (n_components,)
        *kpca*: ``mu_l / trace(K~)``, the share of the feature-space variance (as
        ``PCA().explained_variance_ratio_`` for the linear kernel).
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
        *kpca*: the solver that ran ('auto' resolved; 'primal' for the primal route).
    fit_plan_ : kpca.FitPlan
        *kpca*: the plan the fit ran (:func:`kpca.plan_fit`); ``print(model.fit_plan_)``
        says what and why. Not kept in model files.
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
        **EXACT_FIT_CONSTRAINTS,
        **kernel_parameters(KERNELS),
        "alpha": [Interval(Real, 0, np.inf, closed="left")],
        "fit_inverse_transform": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "iterated_power": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "remove_zero_eig": ["boolean"],
        "copy_X": ["boolean"],
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

    def _validate_new(self, X: Any) -> Any:
        # transform, inverse_transform and denoise take device arrays before this
        refuse_device(X, f"this method of {type(self).__name__}")
        return validate_rows(self, X, reset=False, kernel=self.kernel_)

    def _block_bytes(self, setting: str, copies: int) -> int:
        return memory_block_bytes(self, setting, copies)

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
        """What ``fit(X)`` would do, without fitting: the :class:`kpca.FitPlan` that
        :func:`kpca.plan_fit` makes from the shape and dtype of ``X`` alone (no data
        read, no kernel value; see its docs and docs/guide.md, "The fit plan").

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
        self._validate_params()
        return data_plan(X, self._make_kernel(), FitSettings.of(self), dtype=dtype,
                         reweights=self._centring.reweights)

    def _fit(self, X) -> Any:
        """The pipeline (kpca._fit): rows -> kernel -> decomposition -> result -> commit."""
        auto = isinstance(self.n_components, str)  # 'auto', the only string it takes
        X, device, distributed, rng = fit_rows(self, X, self._make_kernel(),
                                               "n_components='auto'" if auto else None)
        settings, centring = FitSettings.of(self), self._centring.of(self)
        with job_threads(self.n_jobs):
            kernel, gamma = fit_kernel(self._make_kernel(), X, self.gamma, settings, rng)
            if auto:
                dec = parallel_analysis(X, kernel, settings, rng, distributed, gamma)
            else:
                dec = decompose(X, kernel, settings, centring, rng, distributed=distributed,
                                device=device)
        return commit(self, exact_result(X, kernel, gamma, dec, settings, centring,
                                         device_X=device), device_X=device)

    # ------------------------------------------------------------------ diagnostics
    def influence(self):
        """Empirical influence of each training point on the eigenvalues and eigenvectors:
        O(n k^2) from the fitted eigenpairs, no refit (:class:`kpca.diagnostics.Influence`).
        """
        check_is_fitted(self)
        return Influence.from_subspace(self.subspace_, self.eigenvalues_, self.eigenvectors_,
                                       self._centring.of(self).row_scale(self))

    # ------------------------------------------------------------------ sklearn glue
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = is_precomputed(self.kernel)
        return tags
