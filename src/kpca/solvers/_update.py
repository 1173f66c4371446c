"""Bringing top eigenpairs up to date when rows are added (incremental KPCA).

The centred kernel matrix of ``N = n + b`` rows is decomposed starting from the top
``m`` eigenvectors ``V`` of the previous ``n``-row matrix (docs/math.md,
"Incremental kernel PCA"):

1. **Rayleigh-Ritz on span{[V; 0], [0; U]}**: the old directions, padded with
   zeros, plus new-row directions ``U``: every new row's coordinate vector for a
   small batch; for a larger one, span{K~_bn V, K~_bb K~_bn V} (the new rows' part
   of the wanted eigenvectors to second order) and a seeded random range sketch
   of ``K~_bb`` (structure the old directions do not see). No pass over ``K`` is
   needed: ``K~ [V; 0]`` follows from the kept products ``K~_old V`` and the new
   kernel rows, and the projected matrix takes the new columns ``E`` only through
   ``G = K~_bn V`` (its new rows) and ``E_bb``; the Ritz vectors' products need one
   product of ``E`` with ``m`` columns, so the step costs ``O(N m^2 + N b m)``. The basis is
   orthonormal up to centring, so the projected problem is a generalised one with
   a rank-one metric ``I - s s^T / N`` (``s``: the basis' column sums), solved in
   closed form.
2. **Block refinement**: while the residuals ``||K~ y - theta y|| / theta_1`` of the
   wanted pairs exceed the tolerance, the residual block is added to the basis and
   one pass computes its product; Rayleigh-Ritz runs on the whole basis (whose
   products are all known). The residual of a Ritz pair is exact at every step, so
   the stopping rule is the batch solvers' own.

Nothing is O(n^3): a step is a few products of ``N x m`` blocks, one of ``E`` with
``m`` columns and one ``(m + r)``-sized symmetric eigenproblem; a refinement pass is
one product with the stored matrix.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import eigh

from .._config import get_config
from .._parallel import sized_threads
from ..operators import KernelOperator, NewColumns

logger = logging.getLogger("kpca")

# tuning values (kpca._config): ``update_max_passes`` -- refinement passes before
# giving up (the caller warns); ``update_max_blocks`` -- the refinement basis restarts
# from the Ritz vectors beyond this many blocks of m columns


@dataclass(frozen=True)
class UpdatedPairs:
    """Top Ritz pairs of the grown matrix.

    Attributes
    ----------
    values : ndarray of shape (m,)
        Ritz values, descending.
    vectors : ndarray of shape (N, m)
        Orthonormal Ritz vectors, orthogonal to the constant vector.
    products : ndarray of shape (N, m)
        ``K~ @ vectors`` (exact up to the storage precision).
    residuals : ndarray of shape (m,)
        ``||K~ y - theta y|| / |theta_1|``.
    n_passes : int
        Passes over the stored matrix.
    converged : bool
        Whether the first ``k`` residuals met the tolerance.
    """

    values: np.ndarray
    vectors: np.ndarray
    products: np.ndarray
    residuals: np.ndarray
    n_passes: int
    converged: bool


def _ritz(A: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``m`` eigenpairs of a small symmetric matrix, descending.

    All pairs by LAPACK's divide and conquer (evd), the top ``m`` kept: for the
    projected matrices of an update (tens to a few hundred rows) it is faster than
    MRRR's (evr) subset of them (60 rows, 40 pairs: 0.5 against 1.2 ms; 370 rows: 13
    against 11 ms, a thick restart's size), and it converges on clusters of
    round-off-sized eigenvalues (a low-rank kernel's null space), where MRRR can fail.
    """
    A = 0.5 * (A + A.T)
    q = A.shape[0]
    m = min(m, q)
    # on BLAS threads sized by the reduction's 2 q^2 flops a column (one up to thousands
    # of rows: two threads made an 80-row problem 2.6x slower); the update itself runs
    # on one BLAS thread already, its other callers need not
    with sized_threads(2.0 * q * q):
        w, C = eigh(A, driver="evd", check_finite=False)
    return w[q - m:][::-1].copy(), C[:, q - m:][:, ::-1].copy()


def _theta_scale(w: np.ndarray, floor: float) -> float:
    """``max(|theta_1|, floor)``: what residual norms are relative to."""
    return max(float(np.max(np.abs(w), initial=0.0)), floor, np.finfo(np.float64).tiny)


def _norms(R: np.ndarray, w: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Column norms of residual vectors over ``max(|theta_1|, floor)``."""
    return np.linalg.norm(R, axis=0) / _theta_scale(w, floor)


def _residuals(Y: np.ndarray, KY: np.ndarray, w: np.ndarray, floor: float = 0.0
               ) -> np.ndarray:
    """``||K y - theta y|| / max(|theta_1|, floor)`` for each pair."""
    # by blocks of columns: one small temporary, reused, instead of two (N, m) ones
    # (fresh pages: 5 ms of a 10,500-row update)
    R = np.empty((Y.shape[0], max(1, min(8, Y.shape[1]))), order="F")
    out = np.empty(Y.shape[1])
    for j in range(0, Y.shape[1], R.shape[1]):
        e = min(Y.shape[1], j + R.shape[1])
        r = R[:, : e - j]
        np.multiply(Y[:, j:e], w[None, j:e], out=r)
        np.subtract(KY[:, j:e], r, out=r)
        out[j:e] = np.linalg.norm(r, axis=0)
    return out / _theta_scale(w, floor)


def _orthonormal(Z: np.ndarray, floor: float, normalize: bool = True) -> np.ndarray:
    """Orthonormal basis of the columns of ``Z`` whose singular values exceed
    ``floor``; with ``normalize``, each column is first scaled to unit norm (scale-
    free: dependent columns -- duplicates, round-off -- are dropped).

    From the Gram matrix (GEMM speed, unlike a Householder QR of a tall block), done
    twice: one pass leaves an orthogonality error of ``eps cond(Z)^2``, the second
    (on a basis whose condition number is then close to 1) removes it.
    """
    if normalize:
        norms = np.linalg.norm(Z, axis=0)
        ok = np.isfinite(norms) & (norms > 0)
        Z = Z[:, ok] / norms[ok][None, :]
    for f in (floor, 0.5):
        e, U = np.linalg.eigh(Z.T @ Z)
        keep = e > f**2
        Z = Z @ (U[:, keep] / np.sqrt(e[keep])[None, :])
    return Z


def rayleigh_ritz(Q: np.ndarray, KQ: np.ndarray, m: int,
                  extra: tuple[np.ndarray, np.ndarray] | None = None, *,
                  floor: float = 0.01, orthonormal: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top ``m`` Ritz pairs of a centred symmetric operator on ``span [Q, P]``.

    Parameters
    ----------
    Q : ndarray of shape (N, p)
        Orthonormal columns up to round-off (a column that centring removes, the
        constant vector, is dropped).
    KQ : ndarray of shape (N, p)
        ``op @ Q``.
    m : int
        Pairs returned (at most the dimension of the space).
    extra : (P, KP), optional
        More directions and their products. They are orthogonalized against ``Q``
        and each other, and a direction of ``P`` whose part outside the span before
        it is below ``floor`` (relative to the unit-normalised column) is dropped:
        that part's product is a difference of known products divided by its norm,
        so errors in the products (float32 storage) grow by at most ``1 / floor``.
    floor : float, default=0.01
    orthonormal : bool, default=False
        ``Q`` is orthonormal and orthogonal to the constant vector already (to
        round-off): it is used as it is.

    Returns
    -------
    values : ndarray of shape (m',), descending
    vectors : ndarray of shape (N, m'), orthonormal and orthogonal to the constant
        vector (``op 1 = 0``: centring a column leaves its product as it is)
    products : ndarray of shape (N, m'), ``op @ vectors``
    """
    if not orthonormal:
        Q, KQ = _orthonormal_pair(Q - Q.mean(axis=0)[None, :], KQ, 1e-6)
    if extra is not None and extra[0].shape[1]:
        P, KP = extra
        P = P - P.mean(axis=0)[None, :]
        norms = np.linalg.norm(P, axis=0)
        ok = np.isfinite(norms) & (norms > 0)
        P, KP = P[:, ok] / norms[ok], KP[:, ok] / norms[ok]
        for _ in range(2):  # against Q, twice (the products follow the same map)
            C = Q.T @ P
            P = P - Q @ C
            KP = KP - KQ @ C
        P, KP = _orthonormal_pair(P, KP, floor)
        Q, KQ = np.hstack([Q, P]), np.hstack([KQ, KP])
    w, C = _ritz(Q.T @ KQ, min(m, Q.shape[1]))
    return w, Q @ C, KQ @ C


def _orthonormal_pair(Q: np.ndarray, KQ: np.ndarray, floor: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_orthonormal` (columns not rescaled first) with the same maps applied to
    the products ``KQ``."""
    for f in (floor, 0.5):
        e, U = np.linalg.eigh(Q.T @ Q)
        keep = e > f**2
        M = U[:, keep] / np.sqrt(e[keep])[None, :]
        Q, KQ = Q @ M, KQ @ M
    return Q, KQ


def orthogonal_directions(Z: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Orthonormal directions of ``Z`` orthogonal to ``Q`` and to the constant vector.

    Columns are normalised first, so that a residual already (numerically) in the
    basis is recognised by its small projected norm (below 1e-6) and dropped rather
    than inflated from round-off into a direction that is not orthogonal to ``Q``.
    Projected twice, then orthonormalised by the Gram matrix twice
    (:func:`_orthonormal`); the first orthonormalization multiplies what round-off
    left along ``Q`` by up to ``1 / s_min`` of the projected block, so where that
    exceeds 1e3 the projection is repeated (below, the leak stays under 1e-13).
    """
    norms = np.linalg.norm(Z, axis=0)
    Z = Z[:, norms > 0] / norms[norms > 0][None, :]
    Z = Z - Z.mean(axis=0)[None, :]
    for _ in range(2):
        Z -= Q @ (Q.T @ Z)
    if Z.shape[1] == 0:
        return Z
    e, U = np.linalg.eigh(Z.T @ Z)
    keep = e > 1e-12  # not rescaled: a small projected norm means "in the basis"
    Z = Z @ (U[:, keep] / np.sqrt(e[keep])[None, :])
    if keep.any() and e[keep].min() < 1e-6:  # repair the amplified round-off
        Z -= Z.mean(axis=0)[None, :]
        Z -= Q @ (Q.T @ Z)
    e, U = np.linalg.eigh(Z.T @ Z)
    keep = e > 0.25
    return Z @ (U[:, keep] / np.sqrt(e[keep])[None, :])


def _pass_limits(max_passes: int | None) -> tuple[int, int]:
    """``(max_passes, max_blocks)`` of an update: the argument, or the settings."""
    config = get_config()
    max_passes = config["update_max_passes"] if max_passes is None else max_passes
    return max_passes, config["update_max_blocks"]


def _scaled(KV: Any, Ebb: Any, floor: float, top: float) -> tuple[Any, Any, float, float]:
    """``(KV, Ebb, floor)`` divided by their scale ``max(top, floor)``, and the scale.

    Everything is computed on the matrix divided by its scale: kernel values near the
    float64 range (a high polynomial degree) must not overflow in the products and
    norms of the update. ``top`` is the largest absolute value of ``KV`` and ``Ebb``;
    the arrays may be of any Array API namespace."""
    scale = max(top, float(floor), np.finfo(np.float64).tiny)
    _require_finite(np.isfinite(scale))
    return KV / scale, Ebb / scale, floor / scale, scale


def _require_finite(ok: bool) -> None:
    """Raise the overflow error of an update whose scale or residuals are not finite."""
    if not ok:
        raise ValueError("the kernel values are not finite (overflow): check the kernel "
                         "parameters (degree, gamma, coef0) or scale the data.")


def _metric_ritz(A: np.ndarray, s: np.ndarray, N: int, m: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Step 1's small problem: the top ``min(m, len(s))`` Ritz pairs of the projected
    matrix ``A = S^T K~ S`` in the metric ``S^T H S = I - s s^T / N`` (``s = S^T 1``).

    Returns ``(w, C)``, ``C`` the coefficients of ``S`` (host algebra, shared by the
    host and the device update)."""
    beta = float(s @ s) / N
    # M^{-1/2} = I + c u u^T for M = I - beta u u^T (u = s / ||s||)
    if beta > 0:
        u = s / np.sqrt(s @ s)
        c = 1.0 / np.sqrt(max(1.0 - beta, np.finfo(np.float64).eps)) - 1.0
        Au = A @ u
        uAu = float(u @ Au)
        # (I + c uu^T) A (I + c uu^T)
        A = A + c * (np.outer(Au, u) + np.outer(u, Au)) + (c * c * uAu) * np.outer(u, u)
    else:
        u, c = np.zeros(s.shape[0]), 0.0
    w, C = _ritz(A, min(m, s.shape[0]))
    return w, C + c * np.outer(u, u @ C)  # back to coefficients of S


def extend_eigenpairs(
    op: KernelOperator,
    V: np.ndarray,
    KV: np.ndarray,
    new: NewColumns,
    k: int,
    m: int,
    *,
    tol: float,
    floor: float = 0.0,
    max_passes: int | None = None,
) -> UpdatedPairs:
    """Top ``m`` eigenpairs of the grown centred matrix ``op`` (see the module text).

    Parameters
    ----------
    op : KernelOperator
        The centred kernel matrix of all ``N`` rows (``op @ 1 = 0``).
    V : ndarray of shape (n, q)
        Orthonormal start directions on the old rows, orthogonal to the constant
        vector (the previous Ritz vectors).
    KV : ndarray of shape (N, q)
        ``op @ [V; 0]``.
    new : NewColumns
        ``E = op @ [0; I_b]``, the centred kernel columns of the ``b = N - n`` new
        rows, through its products.
    k : int
        Pairs whose residuals must meet ``tol``.
    m : int
        Pairs returned (``k`` plus guard directions that speed up the next update).
    tol : float
        Residual target relative to the largest Ritz value.
    floor : float, default=0
        Eigenvalues at or below this are round-off of the matrix itself (e.g.
        ``N eps max K_ii``): residuals are measured relative to at least it, so a
        matrix that centring cancelled (constant rows) counts as converged.
    max_passes : int, default=None
        Refinement passes at most (None: the setting ``update_max_passes``).
    """
    max_passes, max_blocks = _pass_limits(max_passes)
    n, q = V.shape
    N = KV.shape[0]
    b = new.b
    Ebb = new.new_block()
    top = max(float(np.abs(KV).max(initial=0.0)), float(np.abs(Ebb).max(initial=0.0)))
    KV, Ebb, floor, scale = _scaled(KV, Ebb, floor, top)
    # K~_bn V = E^T [V; 0] is the new rows' part of K~ [V; 0]: known already
    G = KV[n:]
    if q and b > 2 * q:
        # the new rows' part of the wanted eigenvectors is, to first order,
        # K~_bn V c / mu (and K~_bb times that to second), plus whatever structure the
        # batch has on its own (a cluster far from the old rows that V does not
        # see): a seeded random range sketch of K~_bb finds that
        # (k sketch columns: measured on blobs and Gaussian data at 10,000 rows, k = 10,
        # q columns gave the same residuals in a larger projected problem)
        sketch = np.random.default_rng(N).standard_normal((b, max(1, min(q, k))))
        U = _orthonormal(np.hstack([G, Ebb @ G, sketch, Ebb @ sketch]), 1e-8)
    else:
        U = np.eye(b)
    r = U.shape[1]
    # step 1: generalised Rayleigh-Ritz on S = [[V, 0], [0, U]] with the metric
    # S^T H S = I - s s^T / N (s = S^T 1). Its blocks need no (N x r) product:
    # [V; 0]^T E U = G^T U and [0; U]^T E U = U^T E_bb U
    A = np.empty((q + r, q + r))
    A[:q, :q] = V.T @ KV[:n]
    A[:q, q:] = G.T @ U
    A[q:, :q] = A[:q, q:].T
    A[q:, q:] = U.T @ Ebb @ U
    w, C = _metric_ritz(A, np.concatenate([V.sum(axis=0), U.sum(axis=0)]), N, m)
    kk = min(k, w.shape[0])
    # Y and KY are made in the first columns of the refinement's basis and products
    # (Fortran order): copying them there took 7-9 ms of a 10,500-row update, most of
    # it first writes to fresh pages (about 3 us each on this project's virtual machine)
    p = C.shape[1]
    Q, KQ = (_HostSteps.buffer(N, _capacity(m, kk, max_blocks), V) for _ in range(2))
    Y, KY = Q[:, :p], KQ[:, :p]
    np.matmul(V, C[:q], out=Y[:n])
    UC = U @ C[q:]
    Y[n:] = UC
    Y -= Y.mean(axis=0)[None, :]  # H S C: orthonormal by construction
    # K~ S C = K~ [V; 0] C_V + E (U C_U): one product of E with m columns
    np.matmul(KV, C[:q], out=KY)
    KY = new.matmat(UC / scale, out=KY)
    R = KY[:, :kk] - Y[:, :kk] * w[None, :kk]
    res = _norms(R, w, floor)
    logger.debug("incremental update: first residual %.1e", float(res.max(initial=0.0)))
    passes = 0
    if res.max(initial=0.0) > tol and max_passes > 0:
        w, Y, KY, passes = _refine(op, Y, KY, w, R, res, m, tol, floor, scale, max_passes,
                                   max_blocks, basis=(Q, KQ))
    else:  # (their own arrays: the model keeps them, not the basis' unused columns)
        Y, KY = Y.copy(order="F"), KY.copy(order="F")
    res = _residuals(Y, KY, w, floor)
    _require_finite(np.all(np.isfinite(res)))
    converged = bool(res[:kk].max(initial=0.0) <= tol)
    logger.debug("incremental update: %d rows added, %d passes, residual %.1e",
                 b, passes, float(res[:kk].max(initial=0.0)))
    KY *= scale  # (KY is this function's own)
    return UpdatedPairs(w * scale, Y, KY, res, passes, converged)


class _HostSteps:
    """The array steps of :func:`_refine` on NumPy arrays (the device update passes its
    own, :class:`kpca.solvers._update_device._DeviceSteps`): the loop and its small
    projected algebra are written once."""

    label = "incremental update"

    @staticmethod
    def buffer(N: int, cap: int, like: np.ndarray) -> np.ndarray:
        # column-major: an update that converges in a pass or two touches only the pages
        # of the columns it uses (a row-major buffer would fault in all of them: ~2 ms
        # per MB on a fresh page of a virtual machine)
        return np.empty((N, cap), order="F")

    @staticmethod
    def directions(R: np.ndarray, wanted: np.ndarray, Q: np.ndarray) -> np.ndarray:
        return orthogonal_directions(R[:, wanted], Q)

    @staticmethod
    def product(op: KernelOperator, Z: np.ndarray) -> np.ndarray:
        return np.asarray(op.matmat(Z), dtype=np.float64)

    @staticmethod
    def coefficients(C: np.ndarray, like: np.ndarray) -> np.ndarray:
        return C

    @staticmethod
    def span(Q: np.ndarray, C: np.ndarray) -> np.ndarray:
        # in Fortran order, as the basis it comes from (the next update's blocks are)
        return np.matmul(Q, C, out=np.empty((Q.shape[0], C.shape[1]), order="F"))

    @staticmethod
    def cross(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return X.T @ Y

    @staticmethod
    def norms(R: np.ndarray, w: np.ndarray, floor: float) -> np.ndarray:
        return _norms(R, w, floor)


def _capacity(m: int, kk: int, max_blocks: int) -> int:
    """Columns of :func:`_refine`'s basis before a thick restart."""
    return (max_blocks + 1) * max(m, 1) + kk


def _refine(op: Any, Y: Any, KY: Any, w: np.ndarray, R: Any, res: np.ndarray, m: int,
            tol: float, floor: float, scale: float, max_passes: int, max_blocks: int,
            steps: Any = _HostSteps, basis: tuple[Any, Any] | None = None):
    """Step 2 of :func:`extend_eigenpairs`: block refinement from the Ritz pairs
    ``(w, Y, KY)`` of the matrix divided by ``scale``, until the residuals ``res``
    (norms of the residual vectors ``R``) of the first ``R.shape[1]`` pairs meet
    ``tol``. Returns ``(w, Y, KY, passes)``. ``steps`` does the array work
    (:class:`_HostSteps`, or the device update's steps on its arrays); the projected
    matrix and its eigenpairs are NumPy on the host either way.

    Each pass multiplies the residual block of the wanted pairs that have not
    converged (orthogonal to the basis and to 1): a narrower block makes a cheaper
    pass (measured at n = 10,500, float32: 35 ms for 16 columns, 55 ms for 30), and
    widening the first block to every kept pair saved no pass. The projected matrix
    grows by the new block's couplings only (the basis is orthonormal and ``Y^T K Y =
    diag(w)``); the wanted pairs' residual vectors are formed from the basis and its
    products each pass (exact, whatever the projected matrix's round-off), the other
    Ritz vectors once, at the end.

    ``basis``: the buffers ``(Q, KQ)`` (``steps.buffer``, :func:`_capacity` columns)
    whose first columns are ``Y`` and ``KY`` already (None: made here).
    """
    N, kk = Y.shape[0], R.shape[1]
    cap = _capacity(m, kk, max_blocks)
    p = Y.shape[1]
    if basis is None:
        Q, KQ = steps.buffer(N, cap, Y), steps.buffer(N, cap, Y)
        Q[:, :p], KQ[:, :p] = Y, KY
    else:
        Q, KQ = basis
    A = np.diag(w)
    C = np.eye(p)
    passes = 0
    while res.max(initial=0.0) > tol and passes < max_passes:
        Z = steps.directions(R, res > tol, Q[:, :p])
        if Z.shape[1] == 0:
            break
        KZ = steps.product(op, Z) / scale
        passes += 1
        z = Z.shape[1]
        if p + z > cap:  # thick restart from the Ritz vectors
            Cd = steps.coefficients(C, Q)
            Q[:, : C.shape[1]] = steps.span(Q[:, :p], Cd)
            KQ[:, : C.shape[1]] = steps.span(KQ[:, :p], Cd)
            p = C.shape[1]
            A, C = np.diag(w), np.eye(p)
        B = steps.cross(Q[:, :p], KZ)
        D = steps.cross(Z, KZ)
        A = np.block([[A, B], [B.T, 0.5 * (D + D.T)]])
        Q[:, p : p + z], KQ[:, p : p + z] = Z, KZ
        p += z
        w, C = _ritz(A, m)
        Ck = steps.coefficients(C[:, :kk], Q)
        R = KQ[:, :p] @ Ck - (Q[:, :p] @ Ck) * steps.coefficients(w[:kk], Q)[None, :]
        res = steps.norms(R, w, floor)
        logger.debug("%s: pass %d residual %.1e", steps.label, passes,
                     float(res.max(initial=0.0)))
    Cd = steps.coefficients(C, Q)
    return w, steps.span(Q[:, :p], Cd), steps.span(KQ[:, :p], Cd), passes
