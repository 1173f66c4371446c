"""Independent reference implementations for the pre-image tests.

Everything here is plain NumPy on full matrices, written from the formulas of
(docs/math.md, "Pre-images and denoising") without any kpca code: the KPCA itself
(eigh of H K H), the expansion coefficients gamma, and per-point pre-image loops.
"""

from __future__ import annotations

import numpy as np


def kernel_matrix(name: str, A: np.ndarray, B: np.ndarray, gamma=1.0, degree=3, coef0=1.0):
    if name == "linear":
        return A @ B.T
    if name == "rbf":
        d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
        return np.exp(-gamma * d2)
    if name == "poly":
        return (gamma * (A @ B.T) + coef0) ** degree
    raise ValueError(name)


class NaiveKPCA:
    """KPCA by a full eigendecomposition of the centred Gram matrix."""

    def __init__(self, X, k, name, center=True, **kw):
        self.X, self.name, self.kw, self.center = X, name, kw, center
        n = X.shape[0]
        K = kernel_matrix(name, X, X, **kw)
        self.K = K
        H = np.eye(n) - np.ones((n, n)) / n if center else np.eye(n)
        mu, V = np.linalg.eigh(H @ K @ H)
        order = np.argsort(mu)[::-1][:k]
        self.mu, self.V = mu[order], V[:, order]
        self.A = self.V / np.sqrt(self.mu)

    def scores(self, T):
        n = self.X.shape[0]
        Kt = kernel_matrix(self.name, T, self.X, **self.kw)
        if self.center:
            one_m = np.ones((T.shape[0], n)) / n
            one_n = np.ones((n, n)) / n
            Kt = Kt - one_m @ self.K - Kt @ one_n + one_m @ self.K @ one_n
        return Kt @ self.A

    def gammas(self, Y):
        """Expansion coefficients of P phi(t) = sum_i gamma_i phi(x_i), one row per point."""
        G = Y @ self.A.T
        if self.center:
            n = self.X.shape[0]
            G = G + (1.0 - G.sum(axis=1, keepdims=True)) / n
        return G


def fixed_point_rbf_loop(X, G, Z0, gamma, n_iter, restart_to=None):
    """Mika et al. iteration, one point at a time, exactly ``n_iter`` steps.

    With ``restart_to`` (one training row index per point): the documented
    recovery rule. A step whose denominator vanishes (``|sum w| <= 1e-10 sum |w|``)
    restarts the point once from ``X[restart_to[a]]`` (the step counts); a second
    such step ends its iteration.
    """
    out = np.array(Z0, dtype=float, copy=True)
    for a in range(G.shape[0]):
        z = out[a]
        restarted = False
        for _ in range(n_iter):
            w = G[a] * np.exp(-gamma * ((X - z) ** 2).sum(axis=1))
            if restart_to is not None and not abs(w.sum()) > 1e-10 * np.abs(w).sum():
                if restarted:
                    break
                z, restarted = X[restart_to[a]], True
                continue
            z = w @ X / w.sum()
        out[a] = z
    return out


def feature_sqdist(K, G):
    """``||sum_i G[a, i] phi(x_i) - phi(x_j)||^2`` from the full Gram matrix, (m, n)."""
    return np.einsum("ai,ij,aj->a", G, K, G)[:, None] - 2 * G @ K + np.diag(K)[None, :]


def mds_loop(X, d2_input, neighbors):
    """Kwok & Tsang's closed form per point (classical formulas, column layout)."""
    out = np.empty((d2_input.shape[0], X.shape[1]))
    for a in range(d2_input.shape[0]):
        idx = neighbors[a]
        Xk = X[idx].T  # d x q
        xbar = Xk.mean(axis=1)
        Xc = Xk - xbar[:, None]
        U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
        keep = s > 1e-6 * s[0]
        U, s, Vt = U[:, keep], s[keep], Vt[keep]
        Zc = np.diag(s) @ Vt  # r x q local coordinates
        d0 = (Zc**2).sum(axis=0)
        z = -0.5 * np.diag(1.0 / s) @ Vt @ (d2_input[a][idx] - d0)
        out[a] = U @ z + xbar
    return out
