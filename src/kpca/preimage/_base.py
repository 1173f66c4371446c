"""The result type of the pre-image algorithms (docs/math.md, "Pre-images and denoising").

The algorithms invert ``P phi(t) = theta + sum_l y_l f_l``, read from a
:class:`kpca.subspace.FittedSubspace` (its expansion ``sum_j G_j phi(z_j)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class PreimageInfo:
    """How a pre-image computation went, one entry per point.

    Attributes
    ----------
    method : str
        'ridge', 'fixed_point' or 'mds'.
    converged : ndarray of bool, shape (m,)
        Fixed point: the stopping rule was met within ``max_iter`` iterations.
        Closed-form methods (ridge, mds, and fixed point with the linear kernel):
        always True.
    n_iter : ndarray of int, shape (m,)
        Fixed-point iterations run for each point (0 for ridge and mds; 1 for
        the fixed point's single closed-form step with the linear kernel).
    restarted : ndarray of bool, shape (m,)
        Fixed point: the denominator ``sum_i gamma_i k(z, x_i)`` vanished (or the
        update was not finite) and the point was restarted from the training
        point nearest to ``P phi(t)`` in feature space.
    residual : ndarray of float, shape (m,) or None
        ``||phi(z) - P phi(t)||^2``, the feature-space error of the pre-image ``z``
        (the quantity every method tries to minimise); ``None`` when not computed.
    """

    method: str
    converged: np.ndarray
    n_iter: np.ndarray
    restarted: np.ndarray
    residual: np.ndarray | None = field(default=None)

    @classmethod
    def closed_form(cls, method: str, m: int, residual: np.ndarray | None = None) -> PreimageInfo:
        return cls(method, np.ones(m, bool), np.zeros(m, np.intp), np.zeros(m, bool), residual)
