"""Pre-image methods shared by every KPCA estimator (a mixin).

The estimator provides, after ``fit``: ``kernel_`` (resolved kernel), ``X_fit_``,
``eigenvalues_``, ``eigenvectors_``, ``_centering`` (a
:class:`kpca.operators.Centering`), ``_scaled_alphas`` (dual coefficients
``alpha_l = v_l / sqrt(mu_l)``, shape (n, k)), ``_project(X, A)`` (blocked
``K~_t @ A``), ``_validate_X(X, reset=False, kernel=...)``, ``_is_precomputed()``,
and the parameters ``fit_inverse_transform`` and ``alpha``.
``_fit_inverse(X_transformed, X)`` is called by ``fit`` when
``fit_inverse_transform=True``. ``_preimage_scores(X, A)`` (default:
``_project``) gives ``denoise`` the coordinates of new points to invert.

Methods (see docs/preimages.md):

* ``inverse_transform(Y, method='ridge')``: scikit-learn's learned pre-image;
  ``'fixed_point'`` and ``'mds'`` need no extra fitting.
* ``denoise(X, n_components=None, method='auto')``: project on the first
  components, then take the pre-image.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils.validation import check_is_fitted

from .._memory import parse_memory
from ..kernels import RBF, Linear, Polynomial
from ._base import BLOCK_BYTES, PreimageInfo, Subspace
from ._fixed_point import check_fixed_point_kernel, fixed_point_preimage
from ._mds import check_mds_kernel, mds_preimage
from ._ridge import fit_ridge_preimage, ridge_preimage, score_space_kernel

#: smallest block budget of the pre-image methods (bytes)
_MIN_BLOCK_BYTES = 2**16

#: values of ``method`` accepted by ``inverse_transform`` / ``denoise``
INVERSE_METHODS = ("ridge", "fixed_point", "mds")
DENOISE_METHODS = ("auto", *INVERSE_METHODS)

_NO_RIDGE = (
    "The fit_inverse_transform parameter was not set to True when instantiating "
    "and hence the inverse transform is not available."
)


def _check_options(n_neighbors: Any, max_iter: Any, tol: Any) -> None:
    if not (isinstance(n_neighbors, Integral) and not isinstance(n_neighbors, bool)
            and n_neighbors >= 1):
        raise ValueError(f"n_neighbors must be an integer >= 1; got {n_neighbors!r}.")
    if not (isinstance(max_iter, Integral) and not isinstance(max_iter, bool) and max_iter >= 1):
        raise ValueError(f"max_iter must be an integer >= 1; got {max_iter!r}.")
    if not (isinstance(tol, Real) and not isinstance(tol, bool) and tol >= 0
            and np.isfinite(tol)):
        raise ValueError(f"tol must be a finite number >= 0; got {tol!r}.")


def _check_finite_scores(Y: np.ndarray) -> None:
    if not np.all(np.isfinite(Y)):  # (as scikit-learn's check; never a silent NaN)
        raise ValueError("inverse_transform: the scores contain NaN or infinity.")


def _warn_not_converged(info: PreimageInfo, max_iter: int) -> None:
    bad = int((~info.converged).sum())
    if bad:
        import warnings

        warnings.warn(
            f"fixed-point pre-image: {bad} of {info.converged.size} point(s) did not meet "
            f"the stopping rule within max_iter={max_iter} iterations; raise max_iter or "
            "tol, or pass return_info=True to see which.",
            ConvergenceWarning,
            stacklevel=3,
        )


class PreimageMixin:
    """``inverse_transform`` and ``denoise``: maps from scores back to input space."""

    def _fit_inverse(self, X_transformed: np.ndarray, X) -> None:
        self._score_kernel = score_space_kernel(self.kernel_)
        self.dual_coef_ = fit_ridge_preimage(self._score_kernel, X_transformed, X, self.alpha)
        self.X_transformed_fit_ = X_transformed

    # ------------------------------------------------------------------ public API
    def inverse_transform(
        self,
        X,
        *,
        method: str = "ridge",
        n_neighbors: int = 10,
        max_iter: int = 100,
        tol: float = 1e-4,
        return_info: bool = False,
    ):
        """Map scores back to input space (pre-images).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)
            Scores. With ``method='fixed_point'`` or ``'mds'`` fewer columns than
            fitted components are allowed: the first ones are used (projection on
            the first components).
        method : {'ridge', 'fixed_point', 'mds'}, default='ridge'
            'ridge': learned pre-image (kernel ridge from scores to inputs,
            Bakir et al. 2004), as scikit-learn; needs ``fit_inverse_transform=True``.
            'fixed_point': Mika et al. (1999) iteration (rbf, poly, linear kernels),
            started from the 'mds' pre-image. 'mds': Kwok & Tsang (2003) closed
            form from distances to the ``n_neighbors`` nearest training points
            (rbf, poly, linear kernels). Both use the stored training data only.
        n_neighbors : int, default=10
            Neighbours of the 'mds' pre-image (also the fixed point's start).
        max_iter : int, default=100
            Maximum fixed-point iterations per point.
        tol : float, default=1e-4
            Fixed-point stopping rule: step ``<= tol * scale`` (RBF width, or the
            training data's spread for other kernels).
        return_info : bool, default=False
            Also return a :class:`kpca.preimage.PreimageInfo` (per-point
            ``converged``, ``n_iter``, ``restarted`` and the feature-space error
            ``residual = ||phi(z) - P phi(t)||^2``).

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        info : PreimageInfo
            Only with ``return_info=True``.
        """
        if method == "ridge":
            if not self.fit_inverse_transform:
                raise NotFittedError(_NO_RIDGE)
            check_is_fitted(self)
            Y = np.asarray(X)
            if Y.ndim != 2 or Y.shape[1] != self.X_transformed_fit_.shape[1]:
                raise ValueError(
                    f"inverse_transform expects scores of shape (n_samples, "
                    f"{self.X_transformed_fit_.shape[1]}); got shape {Y.shape}."
                )
            _check_finite_scores(Y)
            Z = ridge_preimage(self._score_kernel, Y, self.X_transformed_fit_, self.dual_coef_,
                               block_bytes=self._preimage_block_bytes())
            if not return_info:
                return Z
            return Z, self._ridge_info(Z, Y, Y.shape[1])
        if method not in INVERSE_METHODS:
            raise ValueError(f"method must be one of {list(INVERSE_METHODS)}; got {method!r}.")
        check_is_fitted(self)
        _check_options(n_neighbors, max_iter, tol)
        self._check_vector_kernel(method)
        Y = np.asarray(X, dtype=np.float64)
        k = self.eigenvalues_.shape[0]
        if Y.ndim != 2 or not 1 <= Y.shape[1] <= k:
            raise ValueError(
                f"inverse_transform(method={method!r}) expects scores of shape (n_samples, q) "
                f"with 1 <= q <= {k} (the fitted n_components); got shape {Y.shape}."
            )
        _check_finite_scores(Y)
        space = Subspace.from_estimator(self, Y.shape[1])
        Z0 = None
        if method == "fixed_point":
            Z0, _ = mds_preimage(space, Y, n_neighbors=n_neighbors,
                                 block_bytes=self._preimage_block_bytes())
        return self._solve_preimage(space, Y, method, Z0, n_neighbors, max_iter, tol,
                                    return_info)

    def denoise(
        self,
        X,
        *,
        n_components: int | None = None,
        method: str = "auto",
        n_neighbors: int = 10,
        max_iter: int = 100,
        tol: float = 1e-4,
        return_info: bool = False,
    ):
        """Denoise: project X on the first components, then take the pre-image.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Noisy inputs.
        n_components : int or None, default=None
            Components to project on (``None``: all fitted ones); at most the
            fitted number.
        method : {'auto', 'fixed_point', 'mds', 'ridge'}, default='auto'
            'auto': 'fixed_point' for the rbf and linear kernels, 'mds' for poly,
            'ridge' for any other kernel when the model was fitted with
            ``fit_inverse_transform=True``. 'fixed_point' starts from the noisy
            input itself (Mika et al. 1999). 'ridge' needs
            ``fit_inverse_transform=True``; with fewer components than fitted, the
            other scores are set to 0 before the learned map is applied.
        n_neighbors, max_iter, tol, return_info
            As in :meth:`inverse_transform`.

        Returns
        -------
        X_denoised : ndarray of shape (n_samples, n_features)
        info : PreimageInfo
            Only with ``return_info=True``.
        """
        check_is_fitted(self)
        if method not in DENOISE_METHODS:
            raise ValueError(f"method must be one of {list(DENOISE_METHODS)}; got {method!r}.")
        _check_options(n_neighbors, max_iter, tol)
        k = self.eigenvalues_.shape[0]
        q = k if n_components is None else n_components
        if not (isinstance(q, Integral) and not isinstance(q, bool) and 1 <= q <= k):
            raise ValueError(
                f"n_components must be None or an integer in [1, {k}] (the fitted number "
                f"of components); got {n_components!r}."
            )
        q = int(q)
        if method == "auto":
            method = self._auto_method()
        if method == "ridge" and not self.fit_inverse_transform:
            raise NotFittedError(
                "denoise(method='ridge') needs the learned pre-image: fit with "
                "fit_inverse_transform=True, or use method='fixed_point' or 'mds'."
            )
        self._check_vector_kernel(method)
        X = self._validate_X(X, reset=False, kernel=self.kernel_)
        A = self._scaled_alphas[:, :q]
        Y = np.asarray(self._preimage_scores(X, A), dtype=np.float64)
        if method == "ridge":
            Yr = np.zeros((Y.shape[0], k), dtype=self.X_transformed_fit_.dtype)
            Yr[:, :q] = Y
            Z = ridge_preimage(self._score_kernel, Yr, self.X_transformed_fit_, self.dual_coef_,
                               block_bytes=self._preimage_block_bytes())
            if not return_info:
                return Z
            return Z, self._ridge_info(Z, Y, q)
        space = Subspace.from_estimator(self, q)
        Z0 = None
        if method == "fixed_point":
            Z0 = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        return self._solve_preimage(space, Y, method, Z0, n_neighbors, max_iter, tol,
                                    return_info)

    # ------------------------------------------------------------------ helpers
    def _preimage_scores(self, X, A: np.ndarray) -> np.ndarray:
        """Coordinates ``y_l = <phi(t) - theta, f_l>`` of new points for ``denoise``.

        ``transform``'s projection by default. An estimator whose ``transform``
        rescales new points (spherical KPCA divides by ``||phi(t) - theta||``)
        overrides this with the unscaled coordinates, so that ``theta + sum_l y_l
        f_l`` is the projection of ``phi(t)`` itself.
        """
        return self._project(X, A)

    def _auto_method(self) -> str:
        kernel = self.kernel_
        if isinstance(kernel, (RBF, Linear)):
            return "fixed_point"
        if isinstance(kernel, Polynomial):
            return "mds"
        if self.fit_inverse_transform:
            return "ridge"
        name = getattr(kernel, "name", "") or type(kernel).__name__
        raise ValueError(
            f"denoise(method='auto'): no pre-image method without extra fitting supports "
            f"kernel {name!r} ('fixed_point' and 'mds' support 'rbf', 'poly' and 'linear'); "
            "fit with fit_inverse_transform=True to use the learned ('ridge') pre-image."
        )

    def _check_vector_kernel(self, method: str) -> None:
        if method == "ridge":
            return
        if self._is_precomputed():
            raise ValueError(
                f"method={method!r} needs input vectors: it is not available with "
                "kernel='precomputed'."
            )
        if method == "fixed_point":
            check_fixed_point_kernel(self.kernel_)
        elif method == "mds":
            check_mds_kernel(self.kernel_)

    def _preimage_block_bytes(self) -> int:
        """Bytes for one (points x training rows) block of the pre-image methods.

        ``BLOCK_BYTES`` (32 MiB), or an eighth of the estimator's ``memory_limit``
        when that is smaller (each block has a few temporaries of its size), so a
        model fitted matrix-free under a small budget is also inverted within it.
        """
        limit = parse_memory(getattr(self, "memory_limit", None))
        if limit is None:
            return BLOCK_BYTES
        return max(_MIN_BLOCK_BYTES, min(BLOCK_BYTES, limit // 8))

    def _solve_preimage(self, space, Y, method, Z0, n_neighbors, max_iter, tol, return_info):
        block_bytes = self._preimage_block_bytes()
        if method == "fixed_point":
            Z, info = fixed_point_preimage(space, Y, Z0, max_iter=max_iter, tol=tol,
                                           block_bytes=block_bytes)
            _warn_not_converged(info, max_iter)
        else:
            Z, info = mds_preimage(space, Y, n_neighbors=n_neighbors, block_bytes=block_bytes)
        out = Z.astype(self._output_dtype(), copy=False)
        if not return_info:
            return out
        return out, PreimageInfo(info.method, info.converged, info.n_iter, info.restarted,
                                 space.residual(Z, Y, block_bytes))

    def _ridge_info(self, Z: np.ndarray, Y: np.ndarray, q: int) -> PreimageInfo:
        residual = None
        if not self._is_precomputed():
            space = Subspace.from_estimator(self, q)
            residual = space.residual(np.asarray(Z, dtype=np.float64),
                                      np.asarray(Y[:, :q], dtype=np.float64),
                                      self._preimage_block_bytes())
        return PreimageInfo.closed_form("ridge", Z.shape[0], residual)

    def _output_dtype(self) -> np.dtype:
        dt = getattr(self.X_fit_, "dtype", np.float64)
        return np.dtype(dt) if dt in (np.float32, np.float64) else np.dtype(np.float64)
