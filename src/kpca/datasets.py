"""Small synthetic data sets for examples and the ``kpca demo`` command.

The generators are scikit-learn's (:func:`sklearn.datasets.make_circles`,
:func:`sklearn.datasets.make_moons`), with the settings of the examples in
SPEC section 8 as defaults.
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_circles, make_moons

__all__ = ["concentric_circles", "make_circles", "make_moons"]


def concentric_circles(
    n_samples: int = 400,
    factor: float = 0.3,
    noise: float = 0.05,
    random_state: int | np.random.RandomState | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Two concentric noisy circles in the plane: not linearly separable.

    The classic kernel PCA example: linear PCA cannot separate the two
    circles, RBF kernel PCA (gamma around 10) can.

    Parameters
    ----------
    n_samples : int, default=400
        Total number of points (split evenly between the circles).
    factor : float, default=0.3
        Radius of the inner circle relative to the outer one (which has radius 1).
    noise : float, default=0.05
        Standard deviation of the Gaussian noise added to the points.
    random_state : int, RandomState or None, default=0
        Seed; the default gives the same data on every call.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,)
        0 for the outer circle, 1 for the inner one.

    Examples
    --------
    >>> from kpca.datasets import concentric_circles
    >>> X, y = concentric_circles()
    >>> X.shape, sorted(set(y.tolist()))
    ((400, 2), [0, 1])
    """
    return make_circles(
        n_samples=n_samples, factor=factor, noise=noise, random_state=random_state
    )
