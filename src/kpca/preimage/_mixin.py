"""Pre-image methods shared by every KPCA estimator (a mixin).

The estimator provides, after ``fit``: ``kernel_`` (resolved kernel), ``X_fit_``,
``eigenvalues_``, ``eigenvectors_``, ``_centering`` (a
:class:`kpca.operators.Centering`), ``_scaled_alphas`` (dual coefficients
``alpha_l = v_l / sqrt(mu_l)``, shape (n, k)), ``_project(X, A)`` (blocked
``K~_t @ A``), and the parameters ``fit_inverse_transform`` and ``alpha``.
``_fit_inverse(X_transformed, X)`` is called by ``fit`` when
``fit_inverse_transform=True``.
"""

from __future__ import annotations

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ._ridge import fit_ridge_preimage, ridge_preimage, score_space_kernel


class PreimageMixin:
    """``inverse_transform``: maps from scores back to input space."""

    def _fit_inverse(self, X_transformed: np.ndarray, X) -> None:
        self._score_kernel = score_space_kernel(self.kernel_)
        self.dual_coef_ = fit_ridge_preimage(self._score_kernel, X_transformed, X, self.alpha)
        self.X_transformed_fit_ = X_transformed

    def inverse_transform(self, X):
        """Map scores back to input space with the learned (kernel ridge) pre-image.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        if not self.fit_inverse_transform:
            raise NotFittedError(
                "The fit_inverse_transform parameter was not set to True when instantiating "
                "and hence the inverse transform is not available."
            )
        check_is_fitted(self)
        Y = np.asarray(X)
        if Y.ndim != 2 or Y.shape[1] != self.X_transformed_fit_.shape[1]:
            raise ValueError(
                f"inverse_transform expects scores of shape (n_samples, "
                f"{self.X_transformed_fit_.shape[1]}); got shape {Y.shape}."
            )
        return ridge_preimage(self._score_kernel, Y, self.X_transformed_fit_, self.dual_coef_)

