"""ANOVA KPCA: which input variables matter (docs/math.md, "ANOVA KPCA")."""

from __future__ import annotations

import logging
import warnings
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval

from .._array_api import refuse_device
from .._base import N_COMPONENTS, extend_init
from .._config import get_config
from .._kernel_pca import KernelPCA
from ..kernels import Anova

logger = logging.getLogger("kpca")


def beta_update(a: np.ndarray, c: float | None = None) -> np.ndarray:
    """Maximiser of ``beta^T a`` subject to ``||beta||_2 = 1``, ``||beta||_1 <= c``, ``beta >= 0``.

    The solution is a normalised soft-thresholding of ``a`` (Witten, Tibshirani and
    Hastie 2009): ``beta = S(a+, D) / ||S(a+, D)||_2`` with ``D = 0`` if that already
    satisfies the L1 bound, otherwise the ``D`` (found by bisection) that makes
    ``||beta||_1 = c``. ``c <= 1`` keeps only the largest entry.

    Parameters
    ----------
    a : ndarray of shape (p,)
    c : float >= 1 or None
        L1 bound; ``None`` means no bound.
    """
    a = np.maximum(np.asarray(a, dtype=np.float64), 0.0)
    p = a.size
    top = float(a.max(initial=0.0))
    if top <= 0:
        return np.full(p, 1.0 / np.sqrt(p))
    b = a / np.linalg.norm(a)
    if c is None or b.sum() <= c:
        return b
    if c <= 1.0:
        out = np.zeros(p)
        out[int(np.argmax(a))] = 1.0
        return out
    lo, hi = 0.0, top
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        s = np.maximum(a - mid, 0.0)
        l1 = s.sum() / np.linalg.norm(s)
        if l1 > c:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * top:
            break
    s = np.maximum(a - hi, 0.0)
    return s / np.linalg.norm(s)


@extend_init(KernelPCA, drop=("kernel", "degree", "coef0", "kernel_params"), n_components=2,
             c=None,
             beta_tol=1e-6, beta_max_iter=100)
class AnovaKernelPCA(KernelPCA):
    """Kernel PCA with an ANOVA kernel whose per-variable weights are learned.

    ``K_beta(x, y) = sum_j beta_j exp(-gamma (x_j - y_j)^2)``. The fit maximises the
    variance captured by the ``k`` fitted components,
    ``J(beta) = sum_{l <= k} sum_i f_l(x_i)^2 = sum_{l <= k} mu_l(K~_beta)`` (unit
    feature-space directions ``f_l``), subject to ``||beta||_1 <= c``,
    ``||beta||_2 = 1``, ``beta >= 0``, alternating

    (a) ``beta`` fixed: ordinary KPCA of ``K~_beta`` (eigenvectors ``V``);
    (b) ``V`` fixed: ``max_beta sum_j beta_j a_j`` with ``a_j = trace(V^T K~_j V)``
        under the constraints, solved exactly by :func:`beta_update`.

    ``J(beta, V) = trace(V^T K~_beta V)`` is maximised over ``V`` by (a) (Ky Fan)
    and over ``beta`` by (b), so ``objective_`` never decreases after the first
    update. ``beta_`` ranks the input variables; a smaller ``c`` makes it sparser
    (``c = 1``: one variable; ``c >= sqrt(n_features)``: no L1 constraint).

    Parameters
    ----------
    n_components : int, default=2
        Components fitted and used in the objective. (``None`` or a fraction are
        accepted; ``None`` makes the objective the total variance.)
    gamma : float, 'scale', 'median' or None, default=None
        Per-variable RBF coefficient (as the 'anova' kernel of :class:`kpca.KernelPCA`;
        None is 1: scikit-learn's ``1 / n_features`` convention applied to each
        one-variable term). Which variables win depends on it: set it to the
        scale of the structure sought or tune it by cross-validation. Too small a
        value makes wide noise variables look like low-rank, high-variance terms
        (on the seed example, x1, x2 on unit circles and eight N(0, 3.5^2) noise
        variables, gamma 0.1 and 0.5 put beta on the noise, 1-2 (the default 1
        included) on x1, x2; docs/robust.md).
    c : float >= 1 or None, default=None
        L1 bound on ``beta``; None: no bound (then no weight is exactly 0).
        ``c`` slightly above ``sqrt(m)`` allows about ``m`` equal non-zero weights.
    beta_tol : float, default=1e-6
        Stop when ``||beta_new - beta||_2 <= beta_tol``.
    beta_max_iter : int, default=100
        Maximum alternations (a ``ConvergenceWarning`` is issued if reached).
    alpha, fit_inverse_transform, eigen_solver, tol, max_iter, iterated_power,
    remove_zero_eig, random_state, copy_X, n_jobs, center, memory_limit, precision
        As in :class:`kpca.KernelPCA`.

    Attributes
    ----------
    beta_ : ndarray of shape (n_features,)
        Weight of each input variable (unit Euclidean norm).
    objective_ : ndarray of shape (n_iter_,)
        ``J(beta)`` at each iteration (iteration 0: uniform ``beta``).
    beta_path_ : ndarray of shape (n_iter_, n_features)
        ``beta`` at each iteration.
    n_iter_ : int
    converged_ : bool
    Also every attribute of :class:`kpca.KernelPCA`; ``kernel_`` is the
    :class:`kpca.kernels.Anova` kernel with ``beta_``.
    """

    if TYPE_CHECKING:  # the signature extend_init generates at run time (see help())
        def __init__(self, *args: Any, **params: Any) -> None: ...

    #: fixed kernel (not a parameter): read by the shared KernelPCA code
    kernel = "anova"
    degree = 3
    coef0 = 1
    kernel_params = None

    _parameter_constraints: dict = {
        **{k: v for k, v in KernelPCA._parameter_constraints.items()
           if k not in ("kernel", "degree", "coef0", "kernel_params")},
        "n_components": N_COMPONENTS,  # no parallel analysis ('auto') here
        "c": [Interval(Real, 1, np.inf, closed="left"), None],
        "beta_tol": [Interval(Real, 0, None, closed="neither")],
        "beta_max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def _make_kernel(self, beta: np.ndarray | None = None) -> Anova:
        return Anova(gamma=self.gamma, beta=beta)

    def _variable_terms(self, X, result, gamma: float) -> np.ndarray:
        """``a_j = trace(V^T K_j H V)`` for every variable (blocks of rows)."""
        keep = result.values > 0
        V = np.asarray(result.vectors[:, keep], dtype=np.float64)
        if self.center:
            V = V - V.mean(axis=0)
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        n, p = X.shape
        g = float(gamma)
        rows = max(1, get_config()["anova_block_bytes"] // (8 * max(1, n)))
        a = np.zeros(p)
        T = np.empty((min(rows, n), n))
        for j in range(p):
            col = X[:, j]
            for s in range(0, n, rows):
                blk = T[: min(rows, n - s)]
                np.subtract(col[s : s + rows, None], col[None, :], out=blk)
                np.square(blk, out=blk)
                blk *= -g
                np.exp(blk, out=blk)
                a[j] += float(np.sum(V[s : s + rows] * (blk @ V)))
        return a

    def _fit(self, X) -> np.ndarray:
        refuse_device(X, f"{type(self).__name__}.fit")
        X, distributed, rng = self._prepare_fit(X)
        objective, path = [], []
        converged, beta = False, None
        with self._threads():
            # gamma is resolved once (a heuristic draws a subsample): every iteration
            # then maximises the same objective, which never decreases
            gamma = self._make_kernel().resolve(
                X, random_state=None if self.random_state is None else rng).gamma
            for it in range(self.beta_max_iter):
                kernel = Anova(gamma=gamma, beta=beta).resolve(X, random_state=rng)
                dec = self._decompose(X, kernel, rng, distributed)
                beta = kernel._beta(X.shape[1])
                values = dec.result.values
                objective.append(float(np.sum(values[values > 0])))
                path.append(beta)
                a = self._variable_terms(X, dec.result, kernel.gamma)
                new = beta_update(a, None if self.c is None else float(self.c))
                step = float(np.linalg.norm(new - beta))
                logger.info("anova kpca iteration %d: objective %.6g, step %.3g",
                            it, objective[-1], step)
                if step <= self.beta_tol:
                    converged = True
                    break
                beta = new
            gamma_used = self._resolved_gamma(kernel, X, rng)
        if not converged:
            warnings.warn(
                f"AnovaKernelPCA: beta did not converge in {self.beta_max_iter} iterations; "
                "raise beta_max_iter or beta_tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        Z = self._set_fitted(X, kernel, dec, gamma_used)
        self.beta_ = path[-1]
        self.objective_ = np.asarray(objective)
        self.beta_path_ = np.asarray(path)
        self.n_iter_ = len(objective)
        self.converged_ = converged
        return Z
