"""Heuristics that choose ``gamma`` from the data.

* ``None``     : ``1 / n_features`` (scikit-learn's default); 1 for the ANOVA
  kernel, whose terms each compare one variable;
* ``'scale'``  : ``1 / (n_features * Var(X))``, Var over all entries (as in
  scikit-learn's SVC), so that ``gamma * ||x - y||^2`` is of order one
  (``1 / Var(X)`` for ANOVA);
* ``'median'`` : the median heuristic. For squared-distance kernels (RBF, ANOVA)
  ``sigma`` is the median pairwise distance and ``gamma = 1 / (2 sigma^2)``;
  for the Laplacian kernel ``gamma = 1 / median ||x - y||_1``. The median is taken
  over at most ``max_points`` randomly chosen rows, drawn with ``random_state``, or
  with the seed :data:`MEDIAN_SEED` when it is None: the same data always gets the
  same gamma (a parameter of the model is not a random draw).
"""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import pdist
from sklearn.utils import check_random_state

GAMMA_HEURISTICS = ("scale", "median")
#: the median heuristic's subsample seed when no random_state is given
MEDIAN_SEED = 0


def check_gamma(gamma: Any, name: str = "gamma", kernel: str | None = None) -> None:
    """Raise ``ValueError`` unless gamma is None, a heuristic name or a number > 0.

    Parameters
    ----------
    gamma : object
        The value to check.
    name : str, default='gamma'
        How the message names it (e.g. ``"The 'gamma' parameter of kernel_params"``).
    kernel : str, default=None
        The name of the kernel that uses it, for the message of ``gamma=0``.
    """
    if gamma is None or (isinstance(gamma, str) and gamma in GAMMA_HEURISTICS):
        return
    why = ""
    if isinstance(gamma, (Real, np.number)) and not isinstance(gamma, bool):
        if np.isfinite(gamma) and gamma > 0:
            return
        if gamma == 0:
            # scikit-learn accepts 0 and returns all-zero eigenvalues and scores
            what = "kernel" if kernel is None else f"{kernel} kernel"
            why = (f" (gamma=0 makes the {what} constant: its centred kernel matrix, every "
                   "eigenvalue and every score would be 0)")
    raise ValueError(
        f"{name} must be a positive finite number, None, 'scale' or 'median'; "
        f"got {gamma!r}{why}."
    )


def resolve_gamma(
    gamma: Any,
    X: Any,
    *,
    metric: str = "sqeuclidean",
    random_state: Any = None,
    max_points: int = 1000,
) -> float:
    """Turn ``gamma`` (number or heuristic name) into a positive float.

    Parameters
    ----------
    gamma : float, None, 'scale' or 'median'
    X : array-like or sparse matrix of shape (n, d)
    metric : {'sqeuclidean', 'cityblock', 'coordinate', 'dot'}
        What the kernel exponentiates, for the median heuristic: squared Euclidean
        distances (RBF), L1 distances (Laplacian) or squared per-coordinate
        differences (ANOVA); 'dot' (polynomial, sigmoid) has no median heuristic.
    """
    check_gamma(gamma)
    # the dimension of what the kernel compares: an ANOVA term sees one variable, so
    # scikit-learn's 1 / n_features convention gives 1 there (and 'scale' 1 / var)
    n_features = 1 if metric == "coordinate" else X.shape[1]
    if gamma is None:
        return 1.0 / n_features
    if not isinstance(gamma, str):
        return float(gamma)
    if gamma == "scale":
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            # out of float64's range: diagnosed below (_scale_failure), not warned
            if sp.issparse(X):
                mean = X.mean()
                var = X.multiply(X).mean() - mean**2
            else:
                var = np.asarray(X, dtype=np.float64).var()
            value = 1.0 / (n_features * float(var)) if var > 0 else 0.0
        if not 0 < value < np.inf:
            raise ValueError(_scale_failure(X, var))
        return value
    if metric == "dot":
        raise ValueError(
            "gamma='median' applies to distance kernels (rbf, laplacian, anova); for "
            "dot-product kernels use a number, None or 'scale'."
        )
    # median heuristic on a random subsample (reproducible without a random_state)
    rng = check_random_state(MEDIAN_SEED if random_state is None else random_state)
    n = X.shape[0]
    idx = rng.choice(n, size=max_points, replace=False) if n > max_points else np.arange(n)
    Xs = X[idx]
    Xs = Xs.toarray() if sp.issparse(Xs) else np.asarray(Xs, dtype=np.float64)
    if metric == "coordinate":
        i, j = np.triu_indices(len(Xs), 1)
        d = ((Xs[i] - Xs[j]) ** 2).ravel() if len(i) else np.empty(0)
        med = np.median(d[d > 0]) if np.any(d > 0) else 0.0
        value = 1.0 / (2.0 * med) if med > 0 else 0.0
    else:
        d = pdist(Xs, metric="cityblock" if metric == "cityblock" else "euclidean")
        d = d[d > 0]
        med = float(np.median(d)) if d.size else 0.0
        value = (1.0 / med if metric == "cityblock" else 1.0 / (2.0 * med**2)) if med > 0 else 0.0
    if not 0 < value < np.inf:
        raise ValueError(_median_failure(Xs, metric, n))
    return float(value)


def _magnitude(X: Any) -> float:
    """The largest finite absolute entry of X (0 for an empty or all-zero X)."""
    data = X.data if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    data = np.abs(data[np.isfinite(data)])
    return float(data.max()) if data.size else 0.0


def _scale_failure(X: Any, var: float) -> str:
    """Why gamma='scale' has no positive finite value: X constant, or its variance (or
    1 / variance) outside float64's range. The variance of ``X / max|X|`` tells them
    apart: 0 only when X is constant."""
    top = _magnitude(X)
    scaled = X / top if top > 0 else X
    with np.errstate(under="ignore"):
        rel = (scaled.multiply(scaled).mean() - scaled.mean() ** 2 if sp.issparse(scaled)
               else np.asarray(scaled, dtype=np.float64).var())
    if not rel > 0:
        return "gamma='scale' needs data with non-zero variance; X is constant."
    exponent = np.log10(float(rel)) + 2 * np.log10(top)
    what = "overflows" if exponent > 0 else "underflows"
    return (f"gamma='scale': the variance of X {what} float64 (it is about 1e{exponent:.0f}, "
            f"the largest entry {top:.3g}), so 1 / variance is not a usable gamma. Scale "
            "the data (e.g. StandardScaler, or --standardize on the command line) or give "
            "gamma as a number.")


def _median_failure(Xs: np.ndarray, metric: str, n: int) -> str:
    """Why the median heuristic has no positive finite value: fewer than two distinct
    rows, or distances (or their inverse) outside float64's range. The distances of
    ``Xs / max|Xs|`` tell them apart."""
    top = _magnitude(Xs)
    scaled = Xs / top if top > 0 else Xs
    if metric == "coordinate":
        i, j = np.triu_indices(len(scaled), 1)
        rel = np.abs(scaled[i] - scaled[j]).ravel() if len(i) else np.empty(0)
    else:
        rel = pdist(scaled, metric="cityblock" if metric == "cityblock" else "euclidean")
    rel = rel[rel > 0]
    if not rel.size:
        return f"gamma='median' needs at least two distinct rows in X; got n_samples={n}."
    exponent = np.log10(float(np.median(rel))) + np.log10(top)
    what = "overflow" if exponent > 0 else "underflow"
    return (f"gamma='median': the distances between the rows of X {what} float64 (their "
            f"median is about 1e{exponent:.0f}), so no usable gamma follows from them. "
            "Scale the data (e.g. StandardScaler, or --standardize on the command line) or "
            "give gamma as a number.")
