"""The one estimator contract every kpca model follows.

:class:`BaseKernelPCA` holds what all six estimators share: parameters declared as
data (scikit-learn's ``_parameter_constraints``, checked once by ``_fit_context``),
``transform`` through the fitted :class:`~kpca.subspace.FittedSubspace`
(``subspace_``), the outlier-detector API (``score_samples``,
``decision_function``, ``predict``) and its diagnostics, and the pre-images
(``inverse_transform``, ``denoise``). A subclass only fits: it validates its
input and computes ``subspace_``, the spectrum attributes and
:func:`outlier_statistics` into a :class:`kpca._fit.FitResult`, which
:func:`kpca._fit.commit` sets all at once.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from abc import ABCMeta, abstractmethod
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    RealNotInt,
    StrOptions,
)
from sklearn.utils.validation import check_array, check_is_fitted

from ._array_api import device_namespace, float_dtype, from_host, refuse_device, to_host
from ._config import get_config
from ._memory import parse_memory
from .diagnostics import QUANTILE, OutlierMap, od_cutoff, ratio, sd_cutoff
from .kernels import (
    GAMMA_HEURISTICS,
    KERNEL_PARAMETER_CONSTRAINTS,
    KERNELS,
    RBF,
    Kernel,
    Linear,
    Polynomial,
    check_device_kernel,
    device_block_product,
)
from .operators import n_threads
from .preimage import (
    DeviceSpace,
    HostSpace,
    PreimageInfo,
    check_fixed_point_kernel,
    check_mds_kernel,
    device_space_supported,
    fixed_point_preimage,
    learned_preimage,
    mds_preimage,
    score_space_kernel,
)
from .solvers import SOLVERS
from .subspace import FittedSubspace

#: the pre-image methods
INVERSE_METHODS = ("ridge", "fixed_point", "mds")
#: values of ``method`` accepted by ``inverse_transform`` / ``denoise``
PREIMAGE_METHODS = ("auto", *INVERSE_METHODS)

#: ``n_components`` as every estimator takes it
N_COMPONENTS = [
    Interval(Integral, 1, None, closed="left"),
    Interval(RealNotInt, 0, 1, closed="neither"),
    None,
]


#: the constraints of the exact fit's parameters that :func:`kpca.plan_fit` shares
#: with :class:`kpca.KernelPCA` (one definition for both)
EXACT_FIT_CONSTRAINTS: dict = {
    "n_components": [*N_COMPONENTS, StrOptions({"auto"})],
    "eigen_solver": [StrOptions({"auto", *SOLVERS})],
    "memory_limit": [Interval(Real, 1, None, closed="left"), str, None],
    "center": ["boolean"],
}


def kernel_parameters(kernels: Any = KERNELS) -> dict:
    """The constraints of the kernel parameters (``kernel``, ``gamma``, ``degree``,
    ``coef0``, ``kernel_params``) of an estimator that takes the named ``kernels``, a
    :class:`kpca.kernels.Kernel` or a callable (``_parameter_constraints``).

    ``gamma`` may be 0, as in scikit-learn, for the kernels that do not use it (linear,
    cosine, ...); :func:`kpca.kernels.make_kernel` refuses it for those that do, whose
    kernel it would make constant. ``degree`` and ``coef0`` are checked as
    :func:`~kpca.kernels.make_kernel` checks them in ``kernel_params``."""
    return {
        "kernel": [StrOptions(set(kernels)), Kernel, callable],
        "gamma": [Interval(Real, 0, np.inf, closed="left"), StrOptions(set(GAMMA_HEURISTICS)),
                  None],
        **KERNEL_PARAMETER_CONSTRAINTS,
        "kernel_params": [dict, None],
    }


def extend_init(base: type, *, drop: tuple[str, ...] = (), **extra: Any):
    """Class decorator: an ``__init__`` taking ``base``'s parameters plus ``extra``.

    The subclass declares only what it adds (``name=default`` in ``extra``,
    keyword-only, after the base's; a base parameter named there gets that
    default) and what it removes (``drop``); the generated
    ``__init__`` only stores its arguments, as scikit-learn requires, and carries an
    explicit signature, which ``get_params``, ``clone`` and ``help`` read.
    """
    params = [p.replace(default=extra.pop(name)) if name in extra else p
              for name, p in inspect.signature(base.__init__).parameters.items()
              if name not in drop]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
               for name, default in extra.items()]
    signature = inspect.Signature(params)

    def decorate(cls: type) -> type:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            for name, value in list(bound.arguments.items())[1:]:
                setattr(self, name, value)

        __init__.__signature__ = signature
        __init__.__qualname__ = f"{cls.__name__}.__init__"
        cls.__init__ = __init__
        return cls

    return decorate


def memory_block_bytes(est: Any, setting: str, copies: int) -> int:
    """The block budget ``setting`` (kpca._config) in bytes, less when ``est``'s
    ``memory_limit`` is smaller: at most ``1 / copies`` of it per thread (``n_jobs``),
    and at least the setting ``min_block_bytes``."""
    cfg = get_config()
    default = cfg[setting]
    limit = parse_memory(getattr(est, "memory_limit", None))
    if limit is None:
        return default
    per_thread = limit // (copies * n_threads(est.n_jobs))
    return max(cfg["min_block_bytes"], min(default, per_thread))


def is_fraction(n_components: Any) -> bool:
    """Whether ``n_components`` asks for a share of the variance (a float in (0, 1), the
    estimators validate the range) rather than a number of components."""
    return isinstance(n_components, Real) and not isinstance(n_components, Integral)


def floored_od_cutoff(od: np.ndarray, space: FittedSubspace,
                      quantile: float = QUANTILE) -> float:
    """The ROBPCA cut-off, at least the smallest orthogonal distance the model
    resolves (``sqrt(od_noise)``): when every training row lies in the subspace
    (constant data, a linear kernel with all components) the distances of new
    rows are then measured in units of the round-off level -- large, but finite."""
    return max(od_cutoff(od, quantile), float(np.sqrt(space.od_noise)))


def outlier_statistics(space: FittedSubspace, sd: np.ndarray, od: np.ndarray,
                       contamination: Any) -> dict[str, Any]:
    """The fitted attributes of the outlier detector, from the training rows' (or a
    sample's) score and orthogonal distances: ``score_distances_``,
    ``orthogonal_distances_``, ``sd_cutoff_``, ``od_cutoff_`` and ``offset_``."""
    k = int(np.count_nonzero(space.score_variance > 0))
    sd_cut, od_cut = sd_cutoff(k), floored_od_cutoff(od, space)
    if contamination == "auto":
        offset = -1.0
    else:
        score = -np.maximum(ratio(sd, sd_cut), ratio(od, od_cut))
        score = np.where(np.isfinite(score), score, np.finfo(np.float64).min)
        offset = float(np.percentile(score, 100.0 * contamination))
    return {"score_distances_": sd, "orthogonal_distances_": od, "sd_cutoff_": sd_cut,
            "od_cutoff_": od_cut, "offset_": offset}


class BaseKernelPCA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator,
                    metaclass=ABCMeta):
    """Base of every kpca estimator (not used directly).

    Fitted attributes every estimator sets: ``subspace_``, ``kernel_``,
    ``n_components_``, ``eigenvalues_``, ``explained_variance_``,
    ``explained_variance_ratio_``, ``n_features_in_``, ``score_distances_``,
    ``orthogonal_distances_``, ``sd_cutoff_``, ``od_cutoff_``, ``offset_``.
    """

    _parameter_constraints: dict = {
        "n_components": N_COMPONENTS,
        "n_jobs": [Interval(Integral, None, -1, closed="right"),
                   Interval(Integral, 1, None, closed="left"), None],
        "precision": [StrOptions({"auto", "float32", "float64"})],
        "contamination": [StrOptions({"auto"}), Interval(Real, 0, 0.5, closed="right")],
        "random_state": ["random_state"],
    }
    #: the ``method`` of ``inverse_transform`` when none is given
    _default_inverse = "auto"
    #: fitted attributes that :func:`kpca.save` does not write (caches the estimator
    #: rebuilds from the saved state when it needs them)
    _unsaved_attributes: tuple[str, ...] = ()

    def _validate_params(self) -> None:
        """scikit-learn's check of ``_parameter_constraints``, plus: a bool is not a
        number (``Interval(Integral, ...)`` alone would take ``True`` for 1)."""
        super()._validate_params()
        for name, value in self.get_params(deep=False).items():
            allowed = self._parameter_constraints.get(name, ["boolean"])
            if isinstance(value, (bool, np.bool_)) and "boolean" not in allowed:
                raise InvalidParameterError(
                    f"The {name!r} parameter of {type(self).__name__} must not be a bool "
                    f"(see the class docstring for its valid values); got {value!r}."
                )

    @contextlib.contextmanager
    def _keeping_input_attributes(self):
        """Input validation sets ``n_features_in_`` / ``feature_names_in_`` before a fit
        has succeeded: put them back if it fails, so a failed refit changes nothing."""
        names = ("n_features_in_", "feature_names_in_")
        saved = {k: self.__dict__[k] for k in names if k in self.__dict__}
        try:
            yield
        except BaseException:
            for k in names:
                self.__dict__.pop(k, None)
            self.__dict__.update(saved)
            raise

    # ------------------------------------------------------------------ subclass hooks
    @abstractmethod
    def _validate_new(self, X: Any) -> Any:
        """Validate rows to transform (``reset=False``)."""

    def _training_rows(self) -> Any:
        """The training rows for diagnostics with ``X=None``: ``X_fit_`` where it holds
        every row the model has seen (not landmarks: an approximate or bounded model)."""
        rows = getattr(self, "X_fit_", None)
        if rows is None or rows.shape[0] != getattr(self, "n_samples_seen_", rows.shape[0]):
            raise ValueError(
                f"{type(self).__name__} does not keep its training rows: pass X explicitly.")
        return rows

    def _training_kernel_diag(self) -> np.ndarray | None:
        """``k(x_i, x_i)`` of the training rows where the kernel cannot evaluate it: the
        diagonal of a precomputed training kernel matrix (the subspace's expansion)."""
        space = self.subspace_
        return np.asarray(space.basis.diagonal(), np.float64) if space.precomputed else None

    # ------------------------------------------------------------------ transforming
    def transform(self, X):
        """Project X on the fitted components.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            For ``kernel='precomputed'``: the kernel against the training objects.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components_)
            In the model's float dtype, that of the training data (a lazy dask array
            for dask input).
        """
        check_is_fitted(self)
        from .distributed import is_dask_collection, transform_dask

        xp = device_namespace(X)
        if xp is not None:  # PyTorch, CuPy, ...: computed on the array's device
            return self._transform_device(X, xp)
        if is_dask_collection(X):  # lazy, chunk by chunk on the cluster
            return transform_dask(self, X, self.n_components_, self.eigenvalues_.dtype)
        X = self._validate_new(X)
        # scores in the model's precision (as the eigenvalues), whatever the rows' dtype
        return self.subspace_.transform(X, n_jobs=self.n_jobs, dtype=self.eigenvalues_.dtype,
                                        block_bytes=self._block_bytes("transform_block_bytes", 3))

    def _transform_device(self, X: Any, xp: Any) -> Any:
        """``transform`` of an Array API array, on its device (docs/scaling.md)."""
        space = self.subspace_
        if space.features is not None or space.precomputed:
            refuse_device(X, f"{type(self).__name__}.transform")
        check_device_kernel(space.kernel)
        self._check_device_rows(X, xp)
        return space.transform_device(X, xp, dtype=self.eigenvalues_.dtype,
                                      block_bytes=self._block_bytes("transform_block_bytes", 3))

    def _check_device_rows(self, X: Any, xp: Any, width: int | None = None,
                           what: str = "features") -> None:
        """The checks ``validate_data`` makes on NumPy rows, for an Array API array."""
        width = self.n_features_in_ if width is None else width
        if X.ndim != 2:
            raise ValueError(f"Expected a 2-D array, got {X.ndim}-D of shape {tuple(X.shape)}.")
        if X.shape[1] != width:
            raise ValueError(f"X has {X.shape[1]} {what}, but {type(self).__name__} is "
                             f"expecting {width} {what} as input.")
        if not xp.isdtype(X.dtype, ("real floating", "integral")):
            raise ValueError(f"{type(self).__name__} needs real numbers; got dtype {X.dtype}.")
        if xp.isdtype(X.dtype, "real floating") and not bool(xp.all(xp.isfinite(X))):
            raise ValueError("Input X contains NaN or infinity.")

    @abstractmethod
    def _block_bytes(self, setting: str, copies: int) -> int:
        """Bytes of one block of the row-block work (transform, pre-images) that the
        block budget ``setting`` (kpca._config) sizes, ``copies`` such blocks per thread
        in flight: the exact estimators bound it by ``memory_limit``
        (:func:`memory_block_bytes`); the streaming ones by their ``block_size``."""

    @property
    def _n_features_out(self) -> int:
        return self.n_components_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    # ------------------------------------------------------------------ diagnostics
    def raw_projection(self, X=None, *, kernel_diag=None) -> tuple[np.ndarray, np.ndarray]:
        """Raw scores ``<phi(t) - theta, f_l>`` and ``||phi(t) - theta||^2`` (float64).

        Parameters
        ----------
        X : array-like of shape (m, n_features), default=None
            ``None``: the training rows (estimators that keep them).
        kernel_diag : array-like of shape (m,), default=None
            ``k(t, t)``; needed with ``kernel='precomputed'`` for new objects.

        Returns
        -------
        Y : ndarray of shape (m, n_components_)
        sqnorm : ndarray of shape (m,)
        """
        check_is_fitted(self)
        if X is None:
            X = self._training_rows()
            if kernel_diag is None:
                kernel_diag = self._training_kernel_diag()
        else:
            X = self._validate_new(X)
        return self.subspace_.raw_projection(X, kernel_diag=kernel_diag)

    def distances(self, X=None, *, kernel_diag=None) -> tuple[np.ndarray, np.ndarray]:
        """Score distance ``SD`` and orthogonal distance ``OD`` of each row.

        ``SD(t) = sqrt(sum_l y_l(t)^2 / lambda_l)``: the kernelised Mahalanobis
        distance inside the subspace; ``OD(t) = sqrt(||phi(t) - theta||^2 - sum_l
        y_l(t)^2)``: the distance to it (docs/math.md, "Robust KPCA and diagnostics").

        ``X=None``: the training rows' distances, computed by the fit (for the
        streamed estimators, of the fit's sample of at most 2,000 rows).

        Returns
        -------
        score_distance, orthogonal_distance : ndarray of shape (m,)
        """
        check_is_fitted(self)
        if X is None and kernel_diag is None:
            return self.score_distances_, self.orthogonal_distances_
        return self.subspace_.distances(*self.raw_projection(X, kernel_diag=kernel_diag))

    def score_distance(self, X=None, *, kernel_diag=None) -> np.ndarray:
        """Kernelised Mahalanobis distance inside the subspace (training data if None)."""
        return self.distances(X, kernel_diag=kernel_diag)[0]

    def orthogonal_distance(self, X=None, *, kernel_diag=None) -> np.ndarray:
        """Feature-space distance to the fitted affine subspace (training data if None)."""
        return self.distances(X, kernel_diag=kernel_diag)[1]

    def cutoffs(self, *, quantile: float = QUANTILE) -> tuple[float, float]:
        """``(score distance cut-off, orthogonal distance cut-off)`` at ``quantile``.

        ``sqrt(chi2_k.ppf(q))`` and the Wilson-Hilferty cut-off of the training
        rows' orthogonal distances (of the fit's row sample for the streamed
        estimators), as ROBPCA (Hubert, Rousseeuw and Vanden Branden 2005).
        """
        check_is_fitted(self)
        if not 0 < quantile < 1:
            raise ValueError(f"quantile must be in (0, 1); got {quantile!r}.")
        if quantile == QUANTILE:
            return float(self.sd_cutoff_), float(self.od_cutoff_)
        k = int(np.count_nonzero(self.subspace_.score_variance > 0))
        return sd_cutoff(k, quantile), self._od_cutoff(self.orthogonal_distances_, quantile)

    def outlier_map(self, X=None, *, quantile: float = QUANTILE, kernel_diag=None):
        """Distances, cut-offs, flags and categories: a :class:`kpca.robust.OutlierMap`."""
        sd_cut, od_cut = self.cutoffs(quantile=quantile)
        sd, od = self.distances(X, kernel_diag=kernel_diag)
        return OutlierMap.from_distances(sd, od, sd_cut, od_cut)

    def outlier_scores(self, X=None, *, quantile: float = QUANTILE, kernel_diag=None
                       ) -> np.ndarray:
        """``max(SD / SD_cut, OD / OD_cut)`` per row: larger is more outlying, > 1 flagged."""
        sd_cut, od_cut = self.cutoffs(quantile=quantile)
        sd, od = self.distances(X, kernel_diag=kernel_diag)
        return np.maximum(ratio(sd, sd_cut), ratio(od, od_cut))

    def outliers(self, X=None, *, quantile: float = QUANTILE, kernel_diag=None) -> np.ndarray:
        """Boolean mask of the rows beyond either cut-off."""
        return self.outlier_scores(X, quantile=quantile, kernel_diag=kernel_diag) > 1

    # ------------------------------------------------------------------ outlier detector
    def score_samples(self, X, *, kernel_diag=None):
        """Normality of each row: ``-max(SD / SD_cut, OD / OD_cut)``; higher is more normal.

        Rows beyond either cut-off of the outlier map score below -1.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        kernel_diag : array-like of shape (n_samples,), default=None
            ``k(t, t)`` of each row; needed with ``kernel='precomputed'``.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
        """
        return -self.outlier_scores(X, kernel_diag=kernel_diag)

    def decision_function(self, X, *, kernel_diag=None):
        """``score_samples(X) - offset_``: negative for outliers, non-negative for inliers.

        ``offset_`` is -1 (the outlier map's cut-offs) for ``contamination='auto'``,
        else the ``contamination`` quantile of the training rows' scores.
        """
        return self.score_samples(X, kernel_diag=kernel_diag) - self.offset_

    def predict(self, X, *, kernel_diag=None):
        """+1 for inliers, -1 for outliers (``decision_function(X) < 0``).

        Returns
        -------
        labels : ndarray of int, shape (n_samples,)
        """
        return np.where(self.decision_function(X, kernel_diag=kernel_diag) < 0, -1, 1)

    def _od_cutoff(self, od: np.ndarray, quantile: float = QUANTILE) -> float:
        return floored_od_cutoff(od, self.subspace_, quantile)

    # ------------------------------------------------------------------ pre-images
    def _check_vector_input(self) -> None:
        """Pre-images are points of input space: not for precomputed or string kernels."""
        if self.subspace_.precomputed or not getattr(self.kernel_, "requires_vectors", True):
            raise ValueError(
                "pre-images need input vectors: they are not available with "
                f"kernel={getattr(self.kernel_, 'name', 'precomputed')!r}."
            )

    def _preimage_space(self, q: int) -> FittedSubspace:
        """The subspace of the first ``q`` directions, expanded over input points."""
        space = self.subspace_
        if space.basis is None:
            raise ValueError(
                f"{type(self).__name__} has no pre-images: random Fourier features are not "
                "expanded over input points. Use NystromKernelPCA (landmark pre-images) or "
                "KernelPCA (method='fixed_point', 'mds' or 'ridge')."
            )
        self._check_vector_input()
        return space.truncate(q)

    def _auto_method(self) -> str:
        kernel = self.kernel_
        if isinstance(kernel, (RBF, Linear)):
            return "fixed_point"
        if isinstance(kernel, Polynomial):
            return "mds"
        if getattr(self, "fit_inverse_transform", False):
            return "ridge"
        name = getattr(kernel, "name", "") or type(kernel).__name__
        owner = (type(self).__name__ if "fit_inverse_transform" in self.get_params(deep=False)
                 else "KernelPCA")
        raise ValueError(
            f"{type(self).__name__}: no pre-image method without extra fitting supports kernel "
            f"{name!r} ('fixed_point' and 'mds' support 'rbf', 'poly' and 'linear'); use "
            f"{owner}(fit_inverse_transform=True) for the learned ('ridge') pre-image."
        )

    def _check_preimage_call(self, X: Any, method: str, n_neighbors: Any, max_iter: Any,
                             tol: Any) -> tuple[str, Any]:
        """What :meth:`inverse_transform` and :meth:`denoise` check first (a fitted
        model of input vectors, valid options, a method its kernel supports), and what
        they resolve: the method ('auto': by the kernel) and the Array API namespace of
        ``X`` (None: NumPy and sparse input)."""
        check_is_fitted(self)
        _check_options(n_neighbors, max_iter, tol)
        self._check_vector_input()
        if method not in PREIMAGE_METHODS:
            raise ValueError(f"method must be one of {list(PREIMAGE_METHODS)}; got {method!r}.")
        if method == "auto":
            method = self._auto_method()
        if method == "ridge" and not getattr(self, "fit_inverse_transform", False):
            if "fit_inverse_transform" in self.get_params(deep=False):
                raise NotFittedError(
                    "The fit_inverse_transform parameter was not set to True when "
                    "instantiating and hence the inverse transform is not available; "
                    "use method='fixed_point' or 'mds', which need no extra fitting."
                )
            raise ValueError(
                f"{type(self).__name__} has no learned ('ridge') pre-image; use "
                "method='fixed_point' or 'mds', or KernelPCA(fit_inverse_transform=True)."
            )
        if method == "fixed_point":
            check_fixed_point_kernel(self.kernel_)
        elif method == "mds":
            check_mds_kernel(self.kernel_)
        return method, device_namespace(X)

    def inverse_transform(self, X, *, method: str | None = None, n_neighbors: int = 10,
                          max_iter: int = 100, tol: float = 1e-4, return_info: bool = False):
        """Map scores back to input space (pre-images of ``theta + sum_l y_l f_l``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, q), 1 <= q <= n_components_
            Scores (``transform`` output). With fewer columns than components the
            projection on the first ``q`` is inverted ('ridge' needs all of them).
        method : {'ridge', 'fixed_point', 'mds', 'auto'}, default=None
            ``None``: 'ridge' for :class:`kpca.KernelPCA` (as scikit-learn), 'auto'
            otherwise. 'ridge': the learned pre-image (``fit_inverse_transform=True``,
            exact and robust estimators). 'fixed_point': Mika et al. (1999),
            started from the 'mds' pre-image. 'mds': Kwok & Tsang (2003) from the
            ``n_neighbors`` nearest expansion points. 'auto': 'fixed_point' for the
            rbf and linear kernels, 'mds' for poly, else 'ridge' (see docs/preimages.md).
        n_neighbors : int, default=10
        max_iter : int, default=100
            Fixed-point iterations per point.
        tol : float, default=1e-4
            Fixed-point stopping rule, relative to the RBF width / data spread.
        return_info : bool, default=False
            Also return a :class:`kpca.preimage.PreimageInfo`.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features_in_)
        info : PreimageInfo
            Only with ``return_info=True``.
        """
        method, xp = self._check_preimage_call(
            X, self._default_inverse if method is None else method, n_neighbors, max_iter, tol)
        if xp is not None and method == "ridge":
            return self._ridge_device(X, xp, return_info)
        if xp is None:
            # scikit-learn's input conventions (sparse scores accepted, as its
            # KernelPCA.inverse_transform does: n x q, densified); shape and finiteness
            # are checked below, with messages that name the scores
            X = check_array(X, accept_sparse=True, dtype="numeric", ensure_2d=False,
                            allow_nd=True, ensure_all_finite=False, ensure_min_samples=0,
                            input_name="X")
            X = X.toarray() if sp.issparse(X) else X
        Y = X if xp is not None else np.asarray(X, dtype=np.float64)
        k = self.n_components_
        if method == "ridge":
            return self._ridge_inverse(np.asarray(X), return_info)
        if Y.ndim != 2 or not 1 <= Y.shape[1] <= k:
            raise ValueError(
                f"inverse_transform(method={method!r}) expects scores of shape (n_samples, q) "
                f"with 1 <= q <= {k} (the fitted n_components_); got shape {tuple(Y.shape)}."
            )
        _check_finite_scores(Y, xp)
        space = self._preimage_space(Y.shape[1])
        if xp is not None:
            if not device_space_supported(space):
                # sparse expansion points (a host fit): on the host, the namespace out
                out = self.inverse_transform(to_host(X), method=method,
                                             n_neighbors=n_neighbors, max_iter=max_iter,
                                             tol=tol, return_info=return_info)
                return _in_namespace(out, xp, X.device)
            # on the scores' device, in the model's precision (docs/preimages.md)
            space = DeviceSpace(space, xp, X.device, self.eigenvalues_.dtype)
            Y = xp.astype(Y, space.dtype)
        Z0 = None
        if method == "fixed_point":
            Z0, _ = mds_preimage(space, Y, n_neighbors=n_neighbors,
                                 block_bytes=self._block_bytes("preimage_block_bytes", 8))
        return self._solve_preimage(space, Y, method, Z0, n_neighbors, max_iter, tol,
                                    return_info)

    def denoise(self, X, *, n_components: int | None = None, method: str = "auto",
                n_neighbors: int = 10, max_iter: int = 100, tol: float = 1e-4,
                return_info: bool = False):
        """Denoise: project X on the first components, then take the pre-image.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Noisy inputs ('fixed_point' starts from them).
        n_components : int or None, default=None
            Components to project on (``None``: all fitted ones).
        method : {'auto', 'fixed_point', 'mds', 'ridge'}, default='auto'
            As :meth:`inverse_transform`; 'ridge' sets the scores of the other
            components to 0 before the learned map is applied.
        n_neighbors, max_iter, tol, return_info
            As in :meth:`inverse_transform`.

        Returns
        -------
        X_denoised : ndarray of shape (n_samples, n_features)
        info : PreimageInfo
            Only with ``return_info=True``.
        """
        method, xp = self._check_preimage_call(X, method, n_neighbors, max_iter, tol)
        k = self.n_components_
        q = k if n_components is None else n_components
        if not (isinstance(q, Integral) and not isinstance(q, bool) and 1 <= q <= k):
            raise ValueError(
                f"n_components must be None or an integer in [1, {k}] (the fitted number "
                f"of components); got {n_components!r}."
            )
        q = int(q)
        if xp is not None:
            return self._denoise_device(X, xp, q, method, n_neighbors, max_iter, tol,
                                        return_info)
        if method == "ridge":
            Y = np.asarray(self.transform(X), dtype=np.float64)
            Y[:, q:] = 0.0
            return self._ridge_inverse(Y, return_info, q=q)
        space = self._preimage_space(q)
        Xv = self._validate_new(X)
        # raw coordinates <phi(t) - theta, f_l>: the point to invert is the projection
        # of phi(t) itself (a normalised transform has lost the distance to theta)
        Y = self.subspace_.raw_projection(Xv, kernel_diag=np.zeros(Xv.shape[0]))[0][:, :q]
        Z0 = None
        if method == "fixed_point":
            Z0 = Xv.toarray() if sp.issparse(Xv) else np.asarray(Xv, dtype=np.float64)
        return self._solve_preimage(space, Y, method, Z0, n_neighbors, max_iter, tol,
                                    return_info)

    def _denoise_device(self, X: Any, xp: Any, q: int, method: str, n_neighbors: int,
                        max_iter: int, tol: float, return_info: bool):
        """:meth:`denoise` of an Array API array, on its device, in the model's precision:
        the raw projection, then the pre-image (docs/preimages.md)."""
        k = self.n_components_
        if method == "ridge":
            Y = self.transform(X)  # on the device; the other components set to 0
            Y = xp.concat([Y[:, :q], xp.zeros((Y.shape[0], k - q), dtype=Y.dtype,
                                              device=Y.device)], axis=1)
            return self._ridge_device(Y, xp, return_info, q=q)
        space = self._preimage_space(q)
        if not device_space_supported(space):
            # sparse expansion points (a host fit): on the host, the namespace out
            out = self.denoise(to_host(X), n_components=q, method=method,
                               n_neighbors=n_neighbors, max_iter=max_iter, tol=tol,
                               return_info=return_info)
            return _in_namespace(out, xp, X.device)
        self._check_device_rows(X, xp)
        dtype = self.eigenvalues_.dtype
        ds = DeviceSpace(space, xp, X.device, dtype)
        # raw coordinates <phi(t) - theta, f_l> (as the host's raw_projection)
        Y = self.subspace_.transform_device(
            X, xp, dtype=dtype, block_bytes=self._block_bytes("transform_block_bytes", 3),
            raw=True)[:, :q]
        Z0 = xp.astype(X, ds.dtype) if method == "fixed_point" else None
        return self._solve_preimage(ds, Y, method, Z0, n_neighbors, max_iter, tol,
                                    return_info)

    def _ridge_inverse(self, Y: np.ndarray, return_info: bool, q: int | None = None):
        """The learned pre-image of NumPy scores ``Y`` (kernel ridge from scores to
        inputs, as scikit-learn): :func:`kpca.preimage.learned_preimage`."""
        return learned_preimage(self.subspace_, self.kernel_, Y, self.X_transformed_fit_,
                                self.dual_coef_, q=q, return_info=return_info,
                                block_bytes=self._block_bytes("preimage_block_bytes", 8))

    def _ridge_device(self, Y: Any, xp: Any, return_info: bool = False,
                      q: int | None = None) -> Any:
        """The learned pre-image of scores ``Y`` (an Array API array), on its device;
        with ``return_info`` its residual on the first ``q`` components too."""
        if not hasattr(self, "dual_coef_"):
            raise NotFittedError(
                "The fit_inverse_transform parameter was not set to True when fitting; "
                "the learned pre-image (method='ridge') is not available.")
        kernel = score_space_kernel(self.kernel_)
        Y_fit = self.X_transformed_fit_
        self._check_device_rows(Y, xp, width=Y_fit.shape[1], what="score columns")
        check_device_kernel(kernel)
        Yf = from_host(Y_fit, xp, Y.device)
        D = from_host(np.asarray(self.dual_coef_, dtype=Y_fit.dtype), xp, Y.device)
        rows = self._block_bytes("preimage_block_bytes", 8) // (8 * max(1, Y_fit.shape[0]))
        Yd = xp.astype(Y, float_dtype(xp, Y_fit.dtype))
        Z = device_block_product(kernel, Yd, Yf, D, xp, rows)
        if not return_info:
            return Z
        q = Y_fit.shape[1] if q is None else q
        space = self.subspace_.truncate(q)
        if device_space_supported(space):
            ds = DeviceSpace(space, xp, Y.device, Y_fit.dtype)
            residual = to_host(ds.residual(Z, Yd[:, :q]), np.float64)
        else:
            residual = HostSpace(space).residual(to_host(Z, np.float64),
                                                 to_host(Yd[:, :q], np.float64))
        return Z, PreimageInfo.closed_form("ridge", Z.shape[0], residual)

    def _solve_preimage(self, space, Y, method, Z0, n_neighbors, max_iter, tol, return_info):
        """``space``: a FittedSubspace (NumPy scores) or a DeviceSpace (device scores)."""
        block_bytes = self._block_bytes("preimage_block_bytes", 8)
        device = isinstance(space, DeviceSpace)
        if not device:
            space = HostSpace(space)
        if method == "fixed_point":
            Z, info = fixed_point_preimage(space, Y, Z0, max_iter=max_iter, tol=tol,
                                           block_bytes=block_bytes)
            _warn_not_converged(info, max_iter)
        else:
            Z, info = mds_preimage(space, Y, n_neighbors=n_neighbors, block_bytes=block_bytes)
        out = Z if device else Z.astype(self.eigenvalues_.dtype, copy=False)
        if not return_info:
            return out
        residual = space.residual(Z, Y, block_bytes)
        return out, PreimageInfo(info.method, info.converged, info.n_iter, info.restarted,
                                 to_host(residual, np.float64) if device else residual)


def _check_options(n_neighbors: Any, max_iter: Any, tol: Any) -> None:
    if not (isinstance(n_neighbors, Integral) and not isinstance(n_neighbors, bool)
            and n_neighbors >= 1):
        raise ValueError(f"n_neighbors must be an integer >= 1; got {n_neighbors!r}.")
    if not (isinstance(max_iter, Integral) and not isinstance(max_iter, bool) and max_iter >= 1):
        raise ValueError(f"max_iter must be an integer >= 1; got {max_iter!r}.")
    if not (isinstance(tol, Real) and not isinstance(tol, bool) and tol >= 0
            and np.isfinite(tol)):
        raise ValueError(f"tol must be a finite number >= 0; got {tol!r}.")


def _check_finite_scores(Y: Any, xp: Any = None) -> None:
    finite = np.all(np.isfinite(Y)) if xp is None else xp.all(xp.isfinite(Y))
    if not bool(finite):  # (as scikit-learn's check; never a silent NaN)
        raise ValueError("inverse_transform: the scores contain NaN or infinity.")


def _warn_not_converged(info: PreimageInfo, max_iter: int) -> None:
    bad = int((~info.converged).sum())
    if bad:
        warnings.warn(
            f"fixed-point pre-image: {bad} of {info.converged.size} point(s) did not meet "
            f"the stopping rule within max_iter={max_iter} iterations; raise max_iter or "
            "tol, or pass return_info=True to see which.",
            ConvergenceWarning,
            stacklevel=3,
        )


def _in_namespace(out: Any, xp: Any, device: Any) -> Any:
    """A host result (an array, or an ``(array, info)`` pair) as an ``xp`` array."""
    if isinstance(out, tuple):
        return (from_host(np.asarray(out[0]), xp, device), *out[1:])
    return from_host(np.asarray(out), xp, device)
