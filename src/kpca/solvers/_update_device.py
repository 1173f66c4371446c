"""Bringing top eigenpairs up to date on the arrays' device (incremental KPCA on PyTorch /
CuPy / array-api-strict arrays).

The algorithm of :mod:`kpca.solvers._update` (docs/math.md, "Incremental kernel PCA"),
step for step: the ``N x m`` blocks (Ritz vectors, their products, the new-row
directions, the refinement basis) and every product with the stored matrix stay on the
device in float64; the small matrices -- projected problems, Gram matrices of blocks,
their eigendecompositions, the residual norms -- go to the host, where the host
solver's own routines (:func:`kpca.solvers._update._ritz`) solve them. The host code is
not shared line by line so that NumPy input keeps its exact arithmetic (and speed).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .._array_api import from_host, to_host
from ._update import _metric_ritz, _pass_limits, _refine, _require_finite, _ritz, _scaled

logger = logging.getLogger("kpca")


def _dev(xp: Any, A: np.ndarray, like: Any) -> Any:
    return from_host(np.asarray(A, dtype=np.float64), xp, like.device)


def _col_norms(xp: Any, R: Any) -> np.ndarray:
    return np.sqrt(np.maximum(to_host(xp.sum(R * R, axis=0), np.float64), 0.0))


def _norms(xp: Any, R: Any, w: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Column norms of residual vectors over ``max(|theta_1|, floor)`` (host)."""
    scale = max(float(np.max(np.abs(w), initial=0.0)), floor, np.finfo(np.float64).tiny)
    return _col_norms(xp, R) / scale


def _take_cols(xp: Any, A: Any, idx: np.ndarray) -> Any:
    return xp.take(A, from_host(np.asarray(idx, dtype=np.int64), xp, A.device), axis=1)


def _gram_map(xp: Any, Z: Any, floor: float) -> np.ndarray:
    """``U_keep / sqrt(e_keep)`` from the eigendecomposition of ``Z^T Z`` (host)."""
    e, U = np.linalg.eigh(to_host(xp.matrix_transpose(Z) @ Z, np.float64))
    keep = e > floor**2
    return U[:, keep] / np.sqrt(e[keep])[None, :]


def orthonormal(xp: Any, Z: Any, floor: float) -> Any:
    """:func:`kpca.solvers._update._orthonormal` (columns normalised first) on the
    device."""
    norms = _col_norms(xp, Z)
    ok = np.isfinite(norms) & (norms > 0)
    Z = _take_cols(xp, Z, np.flatnonzero(ok)) / _dev(xp, norms[ok], Z)[None, :]
    for f in (floor, 0.5):
        Z = Z @ _dev(xp, _gram_map(xp, Z, f), Z)
    return Z


def _orthonormal_pair(xp: Any, Q: Any, KQ: Any, floor: float) -> tuple[Any, Any]:
    for f in (floor, 0.5):
        M = _dev(xp, _gram_map(xp, Q, f), Q)
        Q, KQ = Q @ M, KQ @ M
    return Q, KQ


def _center_cols(xp: Any, Z: Any) -> Any:
    return Z - xp.mean(Z, axis=0)[None, :]


def device_orthogonal_directions(xp: Any, Z: Any, Q: Any) -> Any:
    """:func:`kpca.solvers._update.orthogonal_directions` on the device."""
    norms = _col_norms(xp, Z)
    Z = _take_cols(xp, Z, np.flatnonzero(norms > 0)) / _dev(xp, norms[norms > 0], Z)[None, :]
    Z = _center_cols(xp, Z)
    Qt = xp.matrix_transpose(Q)
    for _ in range(2):
        Z = Z - Q @ (Qt @ Z)
    if Z.shape[1] == 0:
        return Z
    e, U = np.linalg.eigh(to_host(xp.matrix_transpose(Z) @ Z, np.float64))
    keep = e > 1e-12  # not rescaled: a small projected norm means "in the basis"
    Z = Z @ _dev(xp, U[:, keep] / np.sqrt(e[keep])[None, :], Z)
    if keep.any() and e[keep].min() < 1e-6:  # repair the amplified round-off
        Z = _center_cols(xp, Z)
        Z = Z - Q @ (Qt @ Z)
    e, U = np.linalg.eigh(to_host(xp.matrix_transpose(Z) @ Z, np.float64))
    keep = e > 0.25
    return Z @ _dev(xp, U[:, keep] / np.sqrt(e[keep])[None, :], Z)


def device_rayleigh_ritz(xp: Any, Q: Any, KQ: Any, m: int, extra: tuple[Any, Any] | None = None,
                  *, floor: float = 0.01, orthonormal: bool = False
                  ) -> tuple[np.ndarray, Any, Any]:
    """:func:`kpca.solvers.rayleigh_ritz` on the device: values on the host, vectors and
    products (float64) on the device."""
    if not orthonormal:
        Q, KQ = _orthonormal_pair(xp, _center_cols(xp, Q), KQ, 1e-6)
    if extra is not None and extra[0].shape[1]:
        P, KP = extra
        P = _center_cols(xp, P)
        norms = _col_norms(xp, P)
        ok = np.flatnonzero(np.isfinite(norms) & (norms > 0))
        inv = _dev(xp, 1.0 / norms[ok], P)[None, :]
        P, KP = _take_cols(xp, P, ok) * inv, _take_cols(xp, KP, ok) * inv
        Qt = xp.matrix_transpose(Q)
        for _ in range(2):  # against Q, twice (the products follow the same map)
            C = Qt @ P
            P = P - Q @ C
            KP = KP - KQ @ C
        P, KP = _orthonormal_pair(xp, P, KP, floor)
        Q, KQ = xp.concat([Q, P], axis=1), xp.concat([KQ, KP], axis=1)
    w, C = _ritz(to_host(xp.matrix_transpose(Q) @ KQ, np.float64), min(m, Q.shape[1]))
    Cd = _dev(xp, C, Q)
    return w, Q @ Cd, KQ @ Cd


def device_extend_eigenpairs(op: Any, V: Any, KV: Any, new: Any, k: int, m: int, *,
                             tol: float, floor: float = 0.0, max_passes: int | None = None
                             ) -> tuple[np.ndarray, Any, Any, np.ndarray, int, bool]:
    """:func:`kpca.solvers.extend_eigenpairs` on the device.

    Parameters
    ----------
    op : DeviceCenteredGrowing
        The centred matrix of all ``N`` rows.
    V : array of shape (n, q), float64, device
    KV : array of shape (N, q), float64, device
        ``op @ [V; 0]``.
    new : DeviceNewColumns
    k, m, tol, floor, max_passes
        As :func:`kpca.solvers.extend_eigenpairs`.

    Returns
    -------
    values : ndarray of shape (m,) (host)
    vectors, products : arrays of shape (N, m), float64, device
    residuals : ndarray of shape (m,) (host)
    n_passes : int
    converged : bool
    """
    xp = op.xp
    max_passes, max_blocks = _pass_limits(max_passes)
    n, q = V.shape
    N = KV.shape[0]
    b = new.b
    Ebb = new.new_block()
    # on the matrix divided by its scale, as on the host (no overflow in the norms)
    top = max(float(xp.max(xp.abs(KV))) if KV.shape[1] else 0.0,
              float(xp.max(xp.abs(Ebb))))
    KV, Ebb, floor, scale = _scaled(KV, Ebb, floor, top)
    G = KV[n:, ...]
    if q and b > 2 * q:
        # the host's directions: K~_bn V, K~_bb K~_bn V and the same seeded sketch
        sketch = _dev(xp, np.random.default_rng(N).standard_normal((b, max(1, min(q, k)))),
                      KV)
        U = orthonormal(xp, xp.concat([G, Ebb @ G, sketch, Ebb @ sketch], axis=1), 1e-8)
    else:
        U = xp.eye(b, dtype=xp.float64, device=KV.device)
    r = U.shape[1]
    Vt, Ut = xp.matrix_transpose(V), xp.matrix_transpose(U)
    A = np.empty((q + r, q + r))
    A[:q, :q] = to_host(Vt @ KV[:n, ...], np.float64)
    A[:q, q:] = to_host(xp.matrix_transpose(G) @ U, np.float64)
    A[q:, :q] = A[:q, q:].T
    A[q:, q:] = to_host(Ut @ (Ebb @ U), np.float64)
    s = np.concatenate([to_host(xp.sum(V, axis=0), np.float64),
                        to_host(xp.sum(U, axis=0), np.float64)])
    w, C = _metric_ritz(A, s, N, m)  # the metric I - s s^T / N, as on the host
    Cv, Cu = _dev(xp, C[:q], KV), _dev(xp, C[q:], KV)
    UC = U @ Cu
    Y = _center_cols(xp, xp.concat([V @ Cv, UC], axis=0))
    KY = KV @ Cv + new.matmat(UC) / scale
    kk = min(k, w.shape[0])
    wk = _dev(xp, w[:kk], KV)[None, :]
    R = KY[:, :kk] - Y[:, :kk] * wk
    res = _norms(xp, R, w, floor)
    passes = 0
    if res.max(initial=0.0) > tol and max_passes > 0:
        w, Y, KY, passes = _refine(op, Y, KY, w, R, res, m, tol, floor, scale, max_passes,
                                   max_blocks, _DeviceSteps(xp))
    res = _norms(xp, KY - Y * _dev(xp, w, KV)[None, :], w, floor)
    _require_finite(np.all(np.isfinite(res)))
    converged = bool(res[:kk].max(initial=0.0) <= tol)
    logger.debug("device incremental update: %d rows added, %d passes, residual %.1e",
                 b, passes, float(res[:kk].max(initial=0.0)))
    return w * scale, Y, KY * scale, res, passes, converged


class _DeviceSteps:
    """The array steps of :func:`kpca.solvers._update._refine` on the device: the basis
    and its products stay there, the projected matrix goes to the host."""

    label = "device incremental update"

    def __init__(self, xp: Any) -> None:
        self.xp = xp

    def buffer(self, N: int, cap: int, like: Any) -> Any:
        return self.xp.zeros((N, cap), dtype=self.xp.float64, device=like.device)

    def directions(self, R: Any, wanted: np.ndarray, Q: Any) -> Any:
        return device_orthogonal_directions(self.xp, _take_cols(self.xp, R,
                                                                np.flatnonzero(wanted)), Q)

    def product(self, op: Any, Z: Any) -> Any:
        return op.matmat(Z)

    def coefficients(self, C: np.ndarray, like: Any) -> Any:
        return _dev(self.xp, C, like)

    def span(self, Q: Any, C: Any) -> Any:
        return Q @ C

    def cross(self, X: Any, Y: Any) -> np.ndarray:
        return to_host(self.xp.matrix_transpose(X) @ Y, np.float64)

    def norms(self, R: Any, w: np.ndarray, floor: float) -> np.ndarray:
        return _norms(self.xp, R, w, floor)
