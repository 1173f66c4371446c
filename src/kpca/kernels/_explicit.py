"""Explicit finite feature maps of the linear and polynomial kernels (the primal route,
:func:`kpca.solvers.primal_eigsh`).

``k(x, y) = (gamma <x, y> + c)^q`` with an integer degree ``q >= 1`` and ``c >= 0`` is
``<phi(x), phi(y)>`` for the monomials of degree ``q`` in the ``d + 1`` numbers
``a = (sqrt(gamma) x_1, ..., sqrt(gamma) x_d, sqrt(c))``, each weighted by the square
root of its multinomial coefficient: ``phi_alpha(x) = sqrt(q! / alpha!) a^alpha``
(``|alpha| = q``). There are ``C(d + q, q)`` of them, ``C(d + q - 1, q)`` when
``c = 0``; the linear kernel is ``phi(x) = x``.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Any

import numpy as np

from ._standard import Linear, Polynomial

__all__ = ["explicit_features", "feature_dimension"]


def _poly_params(kernel: Any) -> tuple[int, float, float] | None:
    if type(kernel) is not Polynomial:
        return None
    degree, coef0, gamma = kernel.degree, kernel.coef0, kernel.gamma
    # NaN fails every comparison: only finite values reach int() and the tests below
    # (a kernel not checked yet, e.g. in a plan: Kernel.check_parameters refuses them)
    if (isinstance(gamma, str) or gamma is None
            or not np.all(np.isfinite([degree, coef0, gamma]))
            or float(degree) != int(degree) or int(degree) < 1 or coef0 < 0):
        return None
    return int(degree), float(coef0), float(gamma)


def feature_dimension(kernel: Any, n_features: int) -> int | None:
    """Dimension of the kernel's explicit feature map on ``n_features`` inputs, or None
    when it has none here (other kernels, a fractional degree, ``coef0 < 0``)."""
    if type(kernel) is Linear:
        return n_features
    params = _poly_params(kernel)
    if params is None:
        return None
    q, c, _ = params
    return math.comb(n_features + q, q) if c > 0 else math.comb(n_features + q - 1, q)


def explicit_features(kernel: Any, X: np.ndarray) -> np.ndarray:
    """``phi(X)``, shape (n, :func:`feature_dimension`), float64 (a new array)."""
    X = np.asarray(X, dtype=np.float64)
    if type(kernel) is Linear:
        return X.copy()
    params = _poly_params(kernel)
    if params is None:
        raise ValueError(f"the {getattr(kernel, 'name', kernel)!r} kernel has no explicit "
                         "feature map here")
    q, c, g = params
    n, d = X.shape
    A = np.empty((n, d + 1))
    np.multiply(X, math.sqrt(g), out=A[:, :d])
    A[:, d] = math.sqrt(c)
    cols = d + 1 if c > 0 else d
    combos = np.array(list(itertools.combinations_with_replacement(range(cols), q)),
                      dtype=np.intp).reshape(-1, q)
    coef = np.array([math.sqrt(math.factorial(q) / math.prod(
        math.factorial(m) for m in Counter(row).values())) for row in combos.tolist()])
    F = A[:, combos[:, 0]] * coef
    for j in range(1, q):
        F *= A[:, combos[:, j]]
    return F
