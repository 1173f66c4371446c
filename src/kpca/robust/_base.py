"""Shared machinery of the robust estimators: diagnostics mixin and fit hooks."""

from __future__ import annotations

import logging
from numbers import Integral, Real

import numpy as np

from .._kernel_pca import KernelPCA
from ..operators import CenteredOperator, Centering, DenseOperator, KernelOperator, center
from . import _diagnostics as diag

logger = logging.getLogger("kpca")


class DiagnosticsMixin:
    """Outlier and influence diagnostics as methods (see :mod:`kpca.robust`)."""

    def score_distance(self, X=None):
        """Kernelised Mahalanobis distance inside the subspace (training data if None)."""
        return diag.score_distance(self, X)

    def orthogonal_distance(self, X=None):
        """Feature-space distance to the fitted subspace (training data if None)."""
        return diag.orthogonal_distance(self, X)

    def outlier_map(self, X=None, *, quantile: float = diag.QUANTILE) -> diag.OutlierMap:
        """Score and orthogonal distances with their cut-offs and flags."""
        return diag.outlier_map(self, X, quantile=quantile)

    def outlier_scores(self, X=None, *, quantile: float = diag.QUANTILE) -> np.ndarray:
        """``max(SD / SD_cut, OD / OD_cut)`` per row: > 1 means flagged."""
        return diag.outlier_scores(self, X, quantile=quantile)

    def outliers(self, X=None, *, quantile: float = diag.QUANTILE) -> np.ndarray:
        """Boolean mask of the rows beyond either cut-off."""
        return diag.outliers(self, X, quantile=quantile)

    def influence(self) -> diag.Influence:
        """Empirical influence of each training point on the components."""
        return diag.influence(self)


def _is_int(x) -> bool:
    return isinstance(x, Integral) and not isinstance(x, bool)


def _is_real(x) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


def kernel_norm_floor(diag_k: np.ndarray, dtype) -> float:
    """Smallest feature-space distance treated as non-zero (protects 1 / ||.||)."""
    scale = float(np.sqrt(max(float(np.max(np.abs(diag_k), initial=0.0)), 0.0)))
    return max(np.sqrt(np.finfo(dtype).eps) * scale, np.finfo(np.float64).tiny)


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

    def prod(g):
        return np.asarray(op.matmat(g[:, None].astype(op.dtype)), dtype=np.float64).ravel()

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


class RobustKernelPCA(DiagnosticsMixin, KernelPCA):
    """Base of the robust estimators: a robust centre and row scaling of ``K``.

    Subclasses implement ``_robust_centering(op, diag_k, plan, rng)`` returning
    the :class:`Centering` (weights, scale) of the final operator; the base
    class applies it in place (dense or tiled) or as a wrapper, and the
    ordinary solver path of :class:`KernelPCA` decomposes it.
    """

    def _check_robust_params(self) -> None:
        if not (_is_real(self.robust_tol) and self.robust_tol > 0):
            raise ValueError(f"robust_tol must be a number > 0; got {self.robust_tol!r}.")
        if not (_is_int(self.robust_max_iter) and self.robust_max_iter >= 1):
            raise ValueError(
                f"robust_max_iter must be an integer >= 1; got {self.robust_max_iter!r}."
            )

    def _check_params(self) -> None:
        super()._check_params()
        self._check_robust_params()

    # the plan and random state of the running fit reach _center_operator through
    # these two hooks; they are removed at the end of the fit (not model state)
    def _plan(self, X):
        plan = super()._plan(X)
        self._fit_plan = plan
        return plan

    def _decompose(self, X, rng):
        self._fit_rng = rng
        try:
            return super()._decompose(X, rng)
        finally:
            self.__dict__.pop("_fit_rng", None)
            self.__dict__.pop("_fit_plan", None)

    def _start_block(self, X, b: int, rng) -> None:
        # the operator decomposed is S K~ S, unknown until the robust centre is found:
        # a start block riding on the construction pass would be wasted columns
        return None

    def _center_operator(self, op: KernelOperator) -> tuple[KernelOperator, Centering]:
        diag_k = np.asarray(op.diag(), dtype=np.float64)
        self._dist_floor = kernel_norm_floor(diag_k, op.dtype)
        self._od_noise = diag.od_noise(diag_k, op.dtype)
        c = self._robust_centering(op, diag_k, self._fit_plan, self._fit_rng)
        return center(op, inplace=True, centering=c)

    def _robust_centering(self, op, diag_k, plan, rng) -> Centering:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers
    def _solve_wrapped(self, op: KernelOperator, c: Centering, plan, rng):
        """Top eigenpairs of ``S K~ S`` for centring ``c``, leaving ``op`` untouched.

        Iterative solvers see a :class:`CenteredOperator` wrapper (no copy); the
        dense solver works on one temporary copy that LAPACK may overwrite.
        """
        wrapped = CenteredOperator(op, c)
        if plan.solver == "dense":
            wrapped = DenseOperator(wrapped.to_dense(), owned=True)
        diag_w = np.asarray(wrapped.diag(), dtype=np.float64)
        noise = plan.n * np.finfo(plan.dtype).eps * float(np.max(np.abs(diag_w), initial=0.0))
        trace = float(diag_w.sum())
        return self._solve(wrapped, plan, trace if trace > noise else 0.0, noise, rng)

    def _raw_training_scores(self, Z: np.ndarray) -> np.ndarray:
        """``<phi(x_i) - theta, f_l>`` from the operator scores ``Z = sqrt(mu) v``."""
        s = self._centering.scale
        if s is None:
            return Z
        out = np.empty_like(Z)
        ok = s >= 0.01 * np.max(s)
        out[ok] = Z[ok] / s[ok, None].astype(Z.dtype)
        bad = np.flatnonzero(~ok)
        if bad.size:  # tiny scale: divide would amplify round-off; project instead
            kd = np.zeros(bad.size) if self._is_precomputed() else None  # unused norms
            Y, _ = diag.raw_projection(self, self.X_fit_[bad], kernel_diag=kd)
            out[bad] = Y.astype(Z.dtype)
        return out

    def _robust_statistics(self, raw: np.ndarray, sqnorm: np.ndarray) -> None:
        """``score_variance_`` (set by the subclass) -> cut-offs on the training data."""
        sd, od = diag._distances_from(self, np.asarray(raw, np.float64), sqnorm)
        k = int(np.count_nonzero(self.score_variance_ > 0))
        self.sd_cutoff_ = diag.sd_cutoff(k)
        self.od_cutoff_ = diag.od_cutoff(od)
