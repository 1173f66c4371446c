"""ANOVA KPCA: which input variables matter (docs/math.md, "ANOVA KPCA")."""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval

from .._base import N_COMPONENTS, extend_init
from .._fit import (
    FitSettings,
    KernelStrategy,
    MeanCentring,
    alternate,
    commit,
    exact_result,
    fit_rows,
    resolved_gamma,
)
from .._kernel_pca import KernelPCA
from .._parallel import job_threads
from ..kernels import Anova
from ..solvers import EigenResult
from ._base import OwnAlgorithm

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


def device_variable_terms(X: Any, V: np.ndarray, gamma: float, xp: Any,
                          budget: int) -> np.ndarray:
    """``a_j = sum_l v_l^T K_j v_l`` for every variable ``j``, on the device of ``X``:
    :meth:`kpca.kernels.Anova.term_traces` of the ANOVA kernel with ``gamma``, within
    ``budget`` bytes (namespace ``xp``)."""
    return Anova(gamma=gamma).term_traces(X, V, xp=xp, budget_bytes=budget)


@dataclass
class AnovaWeights(KernelStrategy):
    """ANOVA KPCA's kernel strategy: learn the per-variable weights ``beta`` of the
    :class:`kpca.kernels.Anova` kernel (docs/math.md, "ANOVA KPCA").

    Each :meth:`update` takes the eigenvectors ``V`` of ``K~_beta``, records the
    objective (the sum of the positive eigenvalues) and ``beta``, and computes the
    next weights, :func:`beta_update` of ``a_j = trace(V^T K~_j V)``
    (:meth:`kpca.kernels.Anova.term_traces` of the centred ``V``); the fit is done
    when they move by at most ``tol`` (``converged``) or after ``max_iter``
    decompositions. It keeps the state of one fit: a fit makes its own.

    Parameters
    ----------
    gamma : float, 'scale', 'median' or None
        As AnovaKernelPCA's; resolved once, by :meth:`start`.
    c : float or None
        L1 bound of :func:`beta_update`.
    tol : float
        Largest Euclidean step of ``beta`` of a converged fit.
    max_iter : int
        Most decompositions.
    """

    gamma: Any = None
    c: float | None = None
    tol: float = 1e-6
    max_iter: int = 100
    #: the resolved gamma (:meth:`start`)
    gamma_value: float | None = field(default=None, init=False)
    #: the weights of the next kernel (None: equal weights)
    beta: np.ndarray | None = field(default=None, init=False)
    #: the objective and the weights of each decomposition
    objective: list[float] = field(default_factory=list, init=False)
    path: list[np.ndarray] = field(default_factory=list, init=False)
    converged: bool = field(default=False, init=False)

    def start(self, X, settings, rng):
        # resolved once (a heuristic draws a subsample): every iteration then
        # maximises the same objective, which never decreases
        self.gamma_value = Anova(gamma=self.gamma).resolve(
            X, random_state=None if settings.random_state is None else rng).gamma

    def kernel(self, X, rng):
        return Anova(gamma=self.gamma_value, beta=self.beta).resolve(X, random_state=rng)

    def update(self, X, kernel, dec, settings):
        beta = kernel.weights(X.shape[1])
        values = dec.result.values
        self.objective.append(float(np.sum(values[values > 0])))
        self.path.append(beta)
        a = self.terms(kernel, X, dec.result, settings.center, dec.plan.device_X,
                       dec.plan.budget)
        new = beta_update(a, self.c)
        step = float(np.linalg.norm(new - beta))
        logger.info("anova kpca iteration %d: objective %.6g, step %.3g",
                    len(self.objective) - 1, self.objective[-1], step)
        if step <= self.tol:
            self.converged = True
            return True
        self.beta = new
        return len(self.objective) >= self.max_iter

    def fitted(self):
        return dict(beta_=self.path[-1], objective_=np.asarray(self.objective),
                    beta_path_=np.asarray(self.path), n_iter_=len(self.objective),
                    converged_=self.converged)

    @staticmethod
    def terms(kernel: Anova, X: Any, result: EigenResult, center: bool, device_X: Any = None,
              budget: int | None = None) -> np.ndarray:
        """``a_j = trace(V^T K~_j V)`` for every variable, ``V`` the eigenvectors of
        ``result`` with positive eigenvalues (``K~_j``: ``K_j`` centred where ``center``).

        ``device_X``: the training rows as an Array API array (``X`` their host copy):
        the terms are then evaluated on its device, within ``budget`` bytes.

        Returns
        -------
        ndarray of shape (n_features,), float64
        """
        keep = result.values > 0
        V = np.asarray(result.vectors[:, keep], dtype=np.float64)
        if center:  # trace(V^T H K_j H V) = trace((H V)^T K_j (H V))
            V = V - V.mean(axis=0)
        return kernel.term_traces(X if device_X is None else device_X, V,
                                  budget_bytes=budget)


@extend_init(KernelPCA, drop=("kernel", "degree", "coef0", "kernel_params"), n_components=2,
             c=None,
             beta_tol=1e-6, beta_max_iter=100)
class AnovaKernelPCA(OwnAlgorithm):
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
    remove_zero_eig, random_state, copy_X, n_jobs, center, memory_limit, precision,
    contamination
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

    def _variable_terms(self, X, result, gamma: float, device_X: Any = None,
                        budget: int | None = None) -> np.ndarray:
        """``a_j = trace(V^T K~_j V)`` of a fitted ``result`` (:meth:`AnovaWeights.terms`
        with this model's ``center``)."""
        return AnovaWeights.terms(Anova(gamma=gamma), X, result, self.center, device_X,
                                  budget)

    def _fit_algorithm(self, X) -> Any:
        """Alternate KPCA of ``K~_beta`` and the ``beta`` step (:class:`AnovaWeights`; on
        a device array's device throughout, docs/scaling.md); one commit at the end."""
        X, device, distributed, rng = fit_rows(self, X, self._make_kernel())
        settings, mean = FitSettings.of(self), MeanCentring()
        weights = AnovaWeights(gamma=self.gamma, c=None if self.c is None else float(self.c),
                               tol=self.beta_tol, max_iter=self.beta_max_iter)
        with job_threads(self.n_jobs):
            kernel, dec = alternate(X, weights, settings, mean, rng, distributed=distributed,
                                    device=device, primal=False)
            gamma_used = resolved_gamma(kernel, X, self.gamma, rng)
        if not weights.converged:
            warnings.warn(f"AnovaKernelPCA: beta did not converge in {self.beta_max_iter} "
                          "iterations; raise beta_max_iter or beta_tol.", ConvergenceWarning,
                          stacklevel=3)
        result = exact_result(X, kernel, gamma_used, dec, settings, mean, device_X=device)
        result.attributes.update(weights.fitted())
        return commit(self, result, device_X=device)
