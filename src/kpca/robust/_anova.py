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

from .._array_api import device_namespace, from_host, to_host
from .._base import N_COMPONENTS, extend_init
from .._config import get_config
from .._fit import FitSettings, MeanCentring, commit, decompose, exact_result, resolved_gamma
from .._kernel_pca import KernelPCA
from ..kernels import Anova
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
    """``a_j = sum_l v_l^T K_j v_l`` for every variable ``j``, on the device of ``X``
    (docs/math.md, "ANOVA KPCA"): ``K_j = exp(-gamma (x_j - y_j)^2)``.

    The device counterpart of the host loop of :meth:`AnovaKernelPCA._variable_terms`,
    in float64 as there (``beta_tol`` is 1e-6 by default: float32 terms would move
    ``beta`` by about that much). Tiles of (variables, rows, n) kernel terms are made
    and multiplied by ``V`` on the device; the p sums stay there until the end, so
    the only host traffic is ``V`` going in and the p terms coming back.

    Parameters
    ----------
    X : array of shape (n, p), namespace ``xp``
        The training rows on their device (any float dtype).
    V : ndarray of shape (n, k)
        The (centred) eigenvectors.
    gamma : float
    xp : namespace
    budget : int
        Bytes of device memory the fit may use: a tile of float64 terms takes at most
        an eighth of it (with its exponential, a quarter: the device operator's tiles'
        share) and at most the setting ``device_tile_bytes``.

    Returns
    -------
    ndarray of shape (p,), float64
    """
    n, p = X.shape
    Xt = xp.permute_dims(xp.astype(X, xp.float64), (1, 0))  # (p, n): a variable's values
    Vd = from_host(np.asarray(V, dtype=np.float64), xp, X.device)
    tile = max(1, min(get_config()["device_tile_bytes"], budget // 8) // 8)  # values
    rows = max(1, min(n, tile // max(1, n)))
    per = max(1, min(p, tile // max(1, rows * n)))  # variables of one tile
    g = -float(gamma)
    logger.info("anova kpca variable terms on device %s: %d variables, tiles of %d "
                "variables x %d rows", X.device, p, per, rows)
    parts = []
    for j in range(0, p, per):
        J = min(j + per, p)
        acc = xp.zeros(J - j, dtype=xp.float64, device=X.device)
        for s in range(0, n, rows):
            e = min(s + rows, n)
            # the host loop's arithmetic, in place where the namespace allows
            T = Xt[j:J, s:e, None] - Xt[j:J, None, :]  # (variables, rows, n)
            T *= T
            T *= g
            T = xp.exp(T)
            acc = acc + xp.sum(Vd[None, s:e, :] * (T @ Vd), axis=(1, 2))
        parts.append(acc)
    return to_host(xp.concat(parts), np.float64)


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
        """``a_j = trace(V^T K_j H V)`` for every variable (blocks of rows).

        ``device_X``: the training rows as an Array API array (``X`` their host copy):
        the terms are then evaluated on its device within ``budget`` bytes
        (:func:`device_variable_terms`)."""
        keep = result.values > 0
        V = np.asarray(result.vectors[:, keep], dtype=np.float64)
        if self.center:
            V = V - V.mean(axis=0)
        if device_X is not None:
            return device_variable_terms(device_X, V, gamma, device_namespace(device_X),
                                         budget)
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

    def _fit_algorithm(self, X) -> Any:
        """Alternate KPCA of ``K~_beta`` and the ``beta`` step (on a device array's device
        throughout, docs/scaling.md); one commit at the end."""
        X, device, distributed, rng = self._fit_rows(X)
        settings, mean = FitSettings.of(self), MeanCentring()
        objective, path = [], []
        converged, beta = False, None
        with self._threads():
            # gamma is resolved once (a heuristic draws a subsample): every iteration
            # then maximises the same objective, which never decreases
            gamma = Anova(gamma=self.gamma).resolve(
                X, random_state=None if self.random_state is None else rng).gamma
            for it in range(self.beta_max_iter):
                kernel = Anova(gamma=gamma, beta=beta).resolve(X, random_state=rng)
                dec = decompose(X, kernel, settings, mean, rng, distributed=distributed,
                                device=device, primal=False)
                beta = kernel._beta(X.shape[1])
                values = dec.result.values
                objective.append(float(np.sum(values[values > 0])))
                path.append(beta)
                a = self._variable_terms(X, dec.result, kernel.gamma, device, dec.plan.budget)
                new = beta_update(a, None if self.c is None else float(self.c))
                step = float(np.linalg.norm(new - beta))
                logger.info("anova kpca iteration %d: objective %.6g, step %.3g",
                            it, objective[-1], step)
                if step <= self.beta_tol:
                    converged = True
                    break
                beta = new
            gamma_used = resolved_gamma(kernel, X, self.gamma, rng)
        if not converged:
            warnings.warn(f"AnovaKernelPCA: beta did not converge in {self.beta_max_iter} "
                          "iterations; raise beta_max_iter or beta_tol.", ConvergenceWarning,
                          stacklevel=3)
        result = exact_result(X, kernel, gamma_used, dec, settings, mean, device_X=device)
        result.attributes.update(beta_=path[-1], objective_=np.asarray(objective),
                                 beta_path_=np.asarray(path), n_iter_=len(objective),
                                 converged_=converged)
        Z = commit(self, result)
        return Z if device is None else from_host(Z, device_namespace(device), device.device)
