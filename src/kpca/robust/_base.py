"""Shared machinery of the robust estimators: the robust centre and row scaling."""

from __future__ import annotations

import logging
from abc import abstractmethod
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval

from .._base import N_COMPONENTS
from .._kernel_pca import KernelPCA
from ..diagnostics import norm_floor, od_noise
from ..operators import Centering, DenseOperator, KernelOperator, center, host_matmat

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


class ReweightedKernelPCA(KernelPCA):
    """Base of the estimators that decompose ``S K~ S`` for a centre and row weights
    they find first (robust KPCA, ROBPCA): solves on a wrapped operator."""

    #: robust fits make many passes over one operator (a solve per reweighting step):
    #: every tile the budget holds is kept, a saving in each of them
    _partial_storage = True

    def _start_block(self, X, kernel, b: int, rng, *, cheap_pass: bool,
                     device_X=None) -> None:
        # the operator decomposed is S K~ S, unknown until the robust centre is found:
        # a start block riding on the construction pass would be wasted columns
        return None

    def _solve_wrapped(self, op: KernelOperator, c: Centering, plan, rng):
        """Top eigenpairs of ``S K~ S`` for centring ``c``, leaving ``op`` untouched.

        Iterative solvers see a centred wrapper (no copy; on a device operator, its
        ``centered_view``); the dense solver works on one temporary copy that LAPACK
        may overwrite (on a device, the view's centred copy of the stored ``K``).
        """
        wrapped = center(op, centering=c)[0]
        if plan.solver == "dense" and not getattr(wrapped, "device", False):
            wrapped = DenseOperator(wrapped.to_dense(), owned=True)
        diag_w = np.asarray(wrapped.diag(), dtype=np.float64)
        noise = plan.n * np.finfo(plan.dtype).eps * float(np.max(np.abs(diag_w), initial=0.0))
        trace = float(diag_w.sum())
        return self._solve(wrapped, plan, trace if trace > noise else 0.0, noise, rng)


class RobustKernelPCA(ReweightedKernelPCA):
    """Base of the robust estimators: a robust centre and row scaling of ``K``.

    Subclasses implement ``_robust_centering(op, diag_k, plan, rng, floor, noise)``
    returning the :class:`Centering` (weights, scale) of the final operator and
    the fitted attributes found on the way (set when the fit succeeds); the
    base class applies it in place (dense or tiled) or as a wrapper, and the
    ordinary solver path of :class:`KernelPCA` decomposes it.
    """

    _parameter_constraints: dict = {
        **KernelPCA._parameter_constraints,
        "n_components": N_COMPONENTS,  # no parallel analysis ('auto') of robust fits
        "robust_tol": [Interval(Real, 0, None, closed="neither")],
        "robust_max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def _center_operator(self, op: KernelOperator, plan, rng
                         ) -> tuple[KernelOperator, Centering, dict]:
        diag_k = np.asarray(op.diag(), dtype=np.float64)
        c, fitted = self._robust_centering(op, diag_k, plan, rng,
                                           norm_floor(diag_k, op.dtype), od_noise(diag_k, op.dtype))
        return (*center(op, inplace=True, centering=c), fitted)

    @abstractmethod
    def _robust_centering(self, op, diag_k, plan, rng, floor: float, noise: float
                          ) -> tuple[Centering, dict]:
        """The robust centring and the fitted attributes it found."""
