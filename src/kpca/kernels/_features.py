"""Explicit random feature maps (docs/math.md, "Large n: Nyström and random features")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.utils.extmath import safe_sparse_dot


@dataclass(frozen=True, eq=False)
class FourierFeatures:
    """Random Fourier features ``z(x) = sqrt(2 / D) cos(x W + b)`` of a block of rows.

    ``E[z(x) . z(y)] = k(x, y)`` when the columns of ``W`` are drawn from the
    kernel's spectral density and ``b ~ U[0, 2 pi]`` (Rahimi & Recht).

    Attributes
    ----------
    weights : ndarray of shape (n_features_in, D)
    offset : ndarray of shape (D,)
    dtype : str
        Dtype of the features ('float32' or 'float64').
    """

    weights: np.ndarray
    offset: np.ndarray
    dtype: str = "float64"

    def __post_init__(self) -> None:
        dt = np.dtype(self.dtype)
        object.__setattr__(self, "weights", np.asarray(self.weights, dtype=dt))
        object.__setattr__(self, "offset", np.asarray(self.offset, dtype=dt))

    @property
    def n_features(self) -> int:
        """``D``."""
        return self.weights.shape[1]

    def __call__(self, X) -> np.ndarray:
        """``z(X)``, shape (b, D), in :attr:`dtype`."""
        Z = np.asarray(safe_sparse_dot(X, self.weights, dense_output=True))
        Z = Z.astype(self.weights.dtype, copy=False)
        Z += self.offset
        np.cos(Z, out=Z)
        Z *= Z.dtype.type(np.sqrt(2.0 / self.n_features))
        return Z
