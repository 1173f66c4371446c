"""Shared machinery of the robust estimators: the kernel spatial median and the robust
centring strategy (:class:`RobustCentring`, a :class:`kpca._fit.Centring`)."""

from __future__ import annotations

import logging
from abc import abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval

from .._base import N_COMPONENTS
from .._fit import Centring
from .._kernel_pca import KernelPCA
from ..diagnostics import norm_floor, od_noise
from ..operators import Centering, KernelOperator, center, host_matmat

logger = logging.getLogger("kpca")


def spatial_median(
    op: KernelOperator, diag_k: np.ndarray, *, tol: float, max_iter: int, floor: float
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, int, bool]:
    """Kernel spatial median by Weiszfeld's iteration (docs/math.md, "Robust KPCA and
    diagnostics").

    ``theta = sum_i g_i phi(x_i)``, ``g = w / sum(w)``, ``w_i = 1 / ||phi(x_i) - theta||``,
    with ``||phi(x_i) - theta||^2 = K_ii - 2 (K g)_i + g^T K g``. Stops when the
    feature-space step ``||theta_new - theta|| = sqrt(dg^T K dg)`` is at most ``tol``
    times the mean distance (one ``K @ g`` product per iteration).

    Returns
    -------
    g, m, c, dist, n_iter, converged
        Centre weights, ``m = K g``, ``c = g^T K g``, distances ``||phi(x_i) - theta||``.
    """
    n = op.n
    d = np.asarray(diag_k, dtype=np.float64)

    def prod(g):  # on the operator's device where it has one: n values cross
        return host_matmat(op, g[:, None]).ravel()

    g = np.full(n, 1.0 / n)
    m = prod(g)
    c = float(g @ m)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (read after the loop)
        dist = np.sqrt(np.maximum(d - 2.0 * m + c, 0.0))
        w = 1.0 / np.maximum(dist, floor)
        g_new = w / w.sum()
        m_new = prod(g_new)
        dg = g_new - g
        step = float(np.sqrt(max(dg @ (m_new - m), 0.0)))
        g, m = g_new, m_new
        c = float(g @ m)
        if step <= tol * max(float(dist.mean()), floor):
            converged = True
            break
    dist = np.sqrt(np.maximum(d - 2.0 * m + c, 0.0))
    return g, m, c, dist, it, converged


class RobustCentring(Centring):
    """A robust centre and row scaling of ``K`` (spherical and weighted KPCA).

    Subclasses implement :meth:`robust_centering`, returning the :class:`Centering`
    (weights, scale) of the final operator and the fitted attributes found on the way
    (set when the fit succeeds); :meth:`centre` applies it in place (dense or tiled) or
    as a wrapper, and the pipeline's solver (:func:`kpca._fit.solve`) decomposes it.
    Solves on the way use :func:`kpca._fit.solve_centred`.
    """

    #: robust fits make many passes over one operator (a solve per reweighting step),
    #: and the operator decomposed, ``S K~ S``, is unknown until the centre is found
    reweights = True

    def centre(self, op: KernelOperator, plan, settings, rng
               ) -> tuple[KernelOperator, Centering, dict]:
        diag_k = np.asarray(op.diag(), dtype=np.float64)
        c, fitted = self.robust_centering(op, diag_k, plan, settings, rng,
                                          norm_floor(diag_k, op.dtype),
                                          od_noise(diag_k, op.dtype))
        return (*center(op, inplace=True, centering=c), fitted)

    @abstractmethod
    def robust_centering(self, op, diag_k, plan, settings, rng, floor: float, noise: float
                         ) -> tuple[Centering, dict]:
        """The robust centring and the fitted attributes it found."""


class RobustKernelPCA(KernelPCA):
    """Base of the estimators that centre robustly (:class:`RobustCentring`): their
    shared parameters (no parallel analysis; the robust iteration's tolerance and
    iterations)."""

    _parameter_constraints: dict = {
        **KernelPCA._parameter_constraints,
        "n_components": N_COMPONENTS,  # no parallel analysis ('auto') of robust fits
        "robust_tol": [Interval(Real, 0, None, closed="neither")],
        "robust_max_iter": [Interval(Integral, 1, None, closed="left")],
    }


class OwnAlgorithm(KernelPCA):
    """Base of the estimators that fit by an algorithm of several decompositions
    written with the pipeline's steps (:mod:`kpca._fit`: plan, operator, solves,
    one commit): kernel ROBPCA and ANOVA KPCA. They implement :meth:`_fit_algorithm`;
    ``plan`` (one kernel PCA fit) does not describe them."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the model from data in X (``kernel='precomputed'``: the kernel matrix)."""
        with self._keeping_input_attributes():
            self._fit_algorithm(X)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None, **params):
        """Fit and return the training rows' scores (computed once)."""
        with self._keeping_input_attributes():
            return self._fit_algorithm(X)

    def plan(self, X, dtype=None):
        """Refused: the fit runs several decompositions, which one plan does not describe."""
        raise ValueError(
            f"{type(self).__name__} fits by its own algorithm (several decompositions): "
            "plan() describes one kernel PCA fit (KernelPCA, WeightedKernelPCA, "
            "SphericalKernelPCA).")

    @abstractmethod
    def _fit_algorithm(self, X):
        """Fit (one commit of every fitted attribute); returns the training scores."""

