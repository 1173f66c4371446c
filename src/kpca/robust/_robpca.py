"""Kernel ROBPCA: ROBPCA (Hubert, Rousseeuw & Vanden Branden 2005) in feature space.

The kernel version follows Debruyne & Verdonck (2010); every step is written with
kernel values alone (docs/math.md, "Robust KPCA and diagnostics"). With the linear
kernel it reproduces ``rrcov::PcaHubert`` (projection-pursuit path).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, fields, replace
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from scipy import special, stats
from sklearn.covariance import MinCovDet
from sklearn.utils._param_validation import Interval

from .._base import N_COMPONENTS, extend_init, is_fraction, outlier_statistics
from .._config import get_config
from .._fit import (
    FitResult,
    FitSettings,
    build_operator,
    commit,
    device_plan,
    fit_kernel,
    fit_rows,
    make_plan,
    solve_centred,
)
from .._kernel_pca import KernelPCA
from .._parallel import job_threads
from ..diagnostics import norm_floor, od_noise
from ..kernels import Precomputed
from ..operators import Centering, host_matmat
from ..subspace import FittedSubspace
from ._base import OwnAlgorithm

#: rrcov's kmax: most components when ``n_components`` is None or a fraction
KMAX = 10


# ----------------------------------------------------------------------------- univariate
def _check_psd(K, diag: np.ndarray, scale2: float) -> None:
    """A precomputed kernel matrix must be positive semi-definite: non-negative
    squared feature-space distances ``K_ii + K_jj - 2 K_ij`` for every pair (in row
    blocks), and no significantly negative eigenvalue of the centred matrix."""
    from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

    K = K.toarray() if sp.issparse(K) else np.asarray(K, dtype=np.float64)
    n = K.shape[0]
    msg = "kernel='precomputed': the kernel matrix is not positive semi-definite ({})."
    if np.any(diag < -1e-10 * scale2):
        raise ValueError(msg.format("negative diagonal entries"))
    rows = max(1, get_config()["robpca_block_bytes"] // (8 * max(1, n)))
    for r0 in range(0, n, rows):
        d2 = diag[r0 : r0 + rows, None] + diag[None, :] - 2.0 * K[r0 : r0 + rows]
        if d2.min(initial=0.0) < -1e-8 * scale2:
            raise ValueError(msg.format(
                "a squared feature-space distance K_ii + K_jj - 2 K_ij is negative"))
    if n < 3:
        return
    mean = K.mean(axis=0)
    grand = float(mean.mean())

    def centred(v):
        v = np.asarray(v, dtype=np.float64).reshape(n, -1)
        s = v.sum(axis=0)
        return K @ v - np.outer(np.ones(n), mean @ v) - np.outer(mean, s) + grand * s

    op = LinearOperator((n, n), matvec=centred, matmat=centred, dtype=np.float64)
    try:
        low = float(eigsh(op, 1, which="SA", tol=1e-6, maxiter=50 * n,
                          v0=np.linspace(1.0, 2.0, n))[0][0])
    except ArpackNoConvergence:
        return
    if low < -1e-5 * scale2 * n:
        raise ValueError(msg.format(f"the centred matrix has the eigenvalue {low:.3g}"))


def h_alpha_n(alpha: float, n: int, k: int) -> int:
    """``robustbase::h.alpha.n``: the size of the h-subset for ``alpha``, ``n`` rows and
    ``k`` dimensions."""
    n2 = (n + k + 1) // 2
    return int(np.floor(2 * n2 - n + 2 * (n - n2) * alpha))


def unimcd(Y: np.ndarray, quan: int) -> tuple[np.ndarray, np.ndarray]:
    """Reweighted univariate MCD of each column of ``Y`` (``rrcov:::unimcd``).

    The contiguous window of ``quan`` sorted values with the least variance gives the
    raw location and scale (rescaled to be consistent at the normal); the points within
    ``sqrt(chi2_1(0.975))`` raw scales are then averaged. Returns the location and
    scale per column.
    """
    Y = np.asarray(Y, dtype=np.float64)
    n = Y.shape[0]
    if quan >= n:
        return Y.mean(axis=0), Y.std(axis=0, ddof=1)
    Ys = np.sort(Y - np.median(Y, axis=0), axis=0)  # shifted: better cumulative sums
    shift = np.median(Y, axis=0)
    zero = np.zeros((1, Y.shape[1]))
    c1 = np.vstack([zero, np.cumsum(Ys, axis=0)])
    c2 = np.vstack([zero, np.cumsum(Ys**2, axis=0)])
    s1 = c1[quan:] - c1[:-quan]  # window sums, (n - quan + 1, b)
    sq = c2[quan:] - c2[:-quan] - s1**2 / quan
    best = np.argmin(sq, axis=0)
    cols = np.arange(Y.shape[1])
    mean = s1[best, cols] / quan
    var = np.maximum(sq[best, cols], 0.0) / (quan - 1)
    res = (Ys - mean) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.sort(res, axis=0)[quan - 1] / var / stats.chi2.ppf(quan / n, 1)
        var = factor * var
        w = res / var < stats.chi2.ppf(0.975, 1)
    w = np.where(np.isfinite(var)[None, :] & (var > 0), w, np.abs(Ys - mean) == 0)
    m = np.maximum(w.sum(axis=0), 1)
    t = np.sum(Ys * w, axis=0) / m
    s = np.sqrt(np.sum((Ys - t) ** 2 * w, axis=0) / np.maximum(m - 1, 1))
    return t + shift, s


def od_cutoff_umcd(od: np.ndarray, quan: int, quantile: float = 0.975) -> float:
    """ROBPCA's orthogonal-distance cut-off with the univariate MCD of ``OD^(2/3)``
    (the h-subset refinement, ``rrcov:::.crit.od(method='umcd')``)."""
    t, s = unimcd(np.asarray(od, dtype=np.float64)[:, None] ** (2.0 / 3.0), quan)
    return float(max(t[0] + s[0] * stats.norm.ppf(quantile), 0.0) ** 1.5)


# ----------------------------------------------------------------------------- MCD
def mcd_consistency(p: int, alpha: float) -> float:
    """``robustbase:::.MCDcons``: consistency factor of the MCD covariance at the normal."""
    q = stats.chi2.ppf(alpha, p)
    return float(alpha / special.gammainc(p / 2.0 + 1.0, q / 2.0))


def _small_sample(p: int, n: int, alpha: float, reweighted: bool) -> float:
    """``robustbase:::.MCDcnp2`` (raw) / ``.MCDcnp2.rew`` (reweighted): Pison et al.
    (2002)'s small-sample correction factors (their interpolation in ``alpha``)."""
    if p > 2:
        if reweighted:
            c875 = ((-0.544482443573914, 1.25994483222292, 2),
                    (-0.343791072183285, 1.25159004257133, 3))
            c500 = ((-1.02842572724793, 1.67659883081926, 2),
                    (-0.26800273450853, 1.35968562893582, 3))
        else:
            c875 = ((-0.455179464070565, 1.11192541278794, 2),
                    (-0.294241208320834, 1.09649329149811, 3))
            c500 = ((-1.42764571687802, 1.26263336932151, 2),
                    (-1.06141115981725, 1.28907991440387, 3))

        def fp(coef):
            y = np.array([np.log(-a / p**b) for a, b, _ in coef])
            A = np.array([[1.0, -np.log(c * p**2)] for _, _, c in coef])
            a0, a1 = np.linalg.solve(A, y)
            return 1.0 - np.exp(a0) / n**a1

        f500, f875 = fp(c500), fp(c875)
    else:
        table = {  # (p, reweighted): ((log a, b) at alpha 0.5, at 0.875)
            (2, False): ((0.673292623522027, 0.691365864961895),
                         (0.446537815635445, 1.06690782995919)),
            (1, False): ((0.262024211897096, 0.604756680630497),
                         (-0.351584646688712, 1.01646567502486)),
            (2, True): ((3.11101712909049, 1.91401056721863),
                        (0.79473550581058, 1.10081930350091)),
            (1, True): ((1.11098143415027, 1.5182890270453),
                        (-0.66046776772861, 0.88939595831888)),
        }[(p, reweighted)]
        f500 = 1.0 - np.exp(table[0][0]) / n ** table[0][1]
        f875 = 1.0 - np.exp(table[1][0]) / n ** table[1][1]
    if alpha <= 0.875:
        f = f500 + (f875 - f500) / 0.375 * (alpha - 0.5)
    else:
        f = f875 + (1.0 - f875) / 0.125 * (alpha - 0.875)
    return float(1.0 / f)


def reweighted_mcd(Y: np.ndarray, h: int, alpha: float, random_state
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Reweighted MCD location and covariance of the rows of ``Y`` (n, k), scaled as
    ``robustbase::covMcd`` (consistency and small-sample factors).

    The raw h-subset is found by scikit-learn's FAST-MCD; the raw covariance of the
    h-subset (divisor ``h - 1``) times ``.MCDcons(k, h/n) .MCDcnp2(k, n, alpha)``
    decides the reweighting (Mahalanobis distance ``<= chi2_k(0.975)``); the
    reweighted covariance (divisor ``m - 1``) is multiplied by
    ``.MCDcons(k, m/n) .MCDcnp2.rew(k, n, alpha)``.

    Raises ``ValueError`` when the MCD covariance is singular (``h`` rows with the
    same scores, relative to the scale of the others).
    """
    n, k = Y.shape
    # FAST-MCD's h-subset is affine equivariant, so it is searched on columns scaled to
    # unit root mean square: scikit-learn's test of a zero covariance (absolute, 1e-8)
    # then holds relative to the scores, whatever the scale of the kernel
    scale = np.sqrt(np.mean(Y**2, axis=0))
    scale = np.where(scale > 0, scale, 1.0)
    try:
        mcd = MinCovDet(support_fraction=(h + 0.5) / n,
                        random_state=random_state).fit(Y / scale)
    except ValueError as exc:
        # scikit-learn's message: "The covariance matrix of the support data is equal
        # to 0, ..."; any other error is passed on as it is
        if not np.all(np.isfinite(Y)) or "covariance" not in str(exc):
            raise
        raise ValueError(
            f"KernelROBPCA: the robust (MCD) covariance of the {k}-dimensional scores is "
            f"singular: h={h} of the n_samples={n} rows have the same scores up to "
            "round-off, relative to the others. This happens when the kernel matrix is "
            "nearly the identity (e.g. an rbf or laplacian kernel with a large gamma, or "
            "unscaled data): every row is then isolated in feature space. Use a smaller "
            "gamma (or scale the data), fewer n_components, or a larger support_fraction "
            "(or h)."
        ) from exc
    S = mcd.raw_support_
    loc = Y[S].mean(axis=0)
    cov = np.atleast_2d(np.cov(Y[S], rowvar=False, ddof=1))
    cov = cov * mcd_consistency(k, h / n) * _small_sample(k, n, alpha, reweighted=False)
    D = Y - loc
    mah = np.einsum("ij,ij->i", D @ np.linalg.pinv(cov), D)
    w = mah <= stats.chi2.ppf(0.975, k)
    m = int(w.sum())
    loc = Y[w].mean(axis=0)
    cov = np.atleast_2d(np.cov(Y[w], rowvar=False, ddof=1))
    cov = cov * mcd_consistency(k, m / n) * _small_sample(k, n, alpha, reweighted=True)
    return loc, cov


# ----------------------------------------------------------------------------- strategy
@dataclass(frozen=True)
class HSubsetReweighting:
    """ROBPCA's estimate from a kernel operator (the strategy of :class:`KernelROBPCA`):
    Stahel-Donoho outlyingness, the h-subset and its refinement, C-steps and the
    reweighted MCD of the scores (docs/math.md, "Robust KPCA and diagnostics").

    Its solves are the pipeline's (:func:`kpca._fit.solve_centred` on the h-subset's
    weighted centring), on one operator built without a start block and keeping the
    tiles that fit (:func:`kpca._fit.make_plan` with ``reweights=True``).
    """

    n_components: Any = None
    support_fraction: float = 0.75
    h: int | None = None
    n_directions: int = 250

    @classmethod
    def of(cls, est: Any) -> HSubsetReweighting:
        return cls(**{f.name: getattr(est, f.name) for f in fields(cls)})

    def components(self, n: int) -> int:
        """Eigenpairs the subset fits ask for (rrcov's kmax for None or a fraction)."""
        nc = self.n_components
        if nc is None or is_fraction(nc):
            return max(1, min(KMAX, n - 1))
        return int(nc)

    def _subset_size(self, n: int, k: int) -> int:
        if self.h is not None:
            if self.h > n:
                raise ValueError(
                    f"h={self.h} is larger than the number of rows n_samples={n}: the "
                    "h-subset must be at most n_samples (or give support_fraction instead).")
            if self.h <= k:
                raise ValueError(
                    f"h={self.h} must be larger than the number of components ({k}).")
            return int(self.h)
        return min(n, h_alpha_n(self.support_fraction, n, k))

    def sizes(self, n: int) -> tuple[int, int]:
        """The components asked for and ``h``, or the error of too few rows."""
        k_req = self.components(n)
        chosen = self.n_components is None or is_fraction(self.n_components)
        if chosen and self.h is not None and 1 < self.h <= n:
            k_req = min(k_req, self.h - 1)  # ROBPCA's own k fits the h-subset
        if n < 3 or k_req >= n - 1 and not chosen:
            raise ValueError(
                f"n_components={self.n_components!r} is too large for n_samples={n}: "
                "ROBPCA needs more than n_components + 1 rows (h-subset fits).")
        return k_req, self._subset_size(n, k_req)

    def run(self, X, kernel, op, plan, settings, h: int, k_req: int, rng) -> dict:
        """Steps 1-3 of :class:`KernelROBPCA` on the kernel operator ``op``: the centre
        weights, directions, scores and variances (and what step 1 found)."""
        n = op.n
        diag = np.asarray(op.diag(), dtype=np.float64)
        scale2 = max(float(np.max(np.abs(diag), initial=0.0)), np.finfo(float).tiny)
        if not np.all(np.isfinite(diag)):
            raise ValueError("the kernel matrix has non-finite values on its diagonal: scale "
                             "the data or change the kernel parameters.")
        precomputed = isinstance(kernel, Precomputed)
        if precomputed:
            _check_psd(X, diag, scale2)

        def prod(M: np.ndarray) -> np.ndarray:
            # a pass over K (on the operator's device where it has one: the n x b
            # blocks cross, the univariate MCDs and C-steps below stay in NumPy)
            return host_matmat(op, M)

        # a permutation-invariant order of the rows (row sums, then the diagonal):
        # the direction sample and FAST-MCD see the rows in this order
        rowsum = prod(np.ones((n, 1)))[:, 0]
        order = np.lexsort((diag, rowsum))
        outl = self._outlyingness(prod, diag, order, h, rng, precomputed, scale2)
        # the subset fits' eigensolvers draw from a copy of the stream: how many numbers
        # they draw (which differs between solvers, and between the host and a device)
        # does not change the subsets FAST-MCD draws below
        solver_rng = copy.deepcopy(rng)
        H0 = np.sort(order[np.argsort(outl[order], kind="stable")[:h]])

        rank = n - 1
        if getattr(kernel, "requires_vectors", True) and not precomputed:
            bound = kernel.rank_bound(X.shape[1])
            rank = min(rank, bound) if bound is not None else rank
        g, C, ev, ev_all, tot0 = self._subset_pca(op, prod, diag, H0, k_req, plan,
                                                  settings, solver_rng)

        def degenerate(g):  # the subset is one point of feature space: no directions
            k = min(k_req, n - 1) if self.n_components is not None and not is_fraction(
                self.n_components) else 1
            C, lam, Y = np.zeros((n, k)), np.zeros(k), np.zeros((n, k))
            return dict(g=g, C=C, Kg=prod(g[:, None])[:, 0], lam=lam, Y=Y, diag=diag,
                        outl=outl, H0=H0, h=h, n_iter=0, ratio=np.zeros(k))

        if ev.size == 0:
            return degenerate(g)
        k = self._choose_k(ev_all, tot0, k_req)
        C, ev = C[:, :k], ev[:k]
        if k < rank:  # ROBPCA's refinement of the h-subset by orthogonal distances
            Y, sq = self._scores(prod, diag, g, C)
            od = np.sqrt(np.maximum(sq - np.sum(Y**2, axis=1), 0.0))
            keep = np.flatnonzero(od <= od_cutoff_umcd(od, h))
            g, C, ev, _, _ = self._subset_pca(op, prod, diag, keep, k, plan, settings,
                                                  solver_rng)
            k = min(k, ev.size)
            C, ev = C[:, :k], ev[:k]
            if k == 0:
                return degenerate(g)
        Y, _ = self._scores(prod, diag, g, C)
        g, C, Y, k, n_iter = self._csteps(Y, ev, g, C, h)
        alpha = h / n if self.h is not None else float(self.support_fraction)
        loc, cov = reweighted_mcd(Y[order], h, alpha, rng)
        lam, P = np.linalg.eigh(cov)
        lam, P = lam[::-1], P[:, ::-1]
        g = g + C @ loc
        C = C @ P
        Y = (Y - loc) @ P
        # a deterministic sign: the largest |score| of each component is positive
        big = np.argmax(np.abs(Y), axis=0)
        signs = np.where(Y[big, np.arange(k)] < 0, -1.0, 1.0)
        C, Y = C * signs, Y * signs
        Kg = prod(g[:, None])[:, 0]
        ev_rest = max(tot0 - float(np.sum(ev_all[:k])), 0.0)
        return dict(g=g, C=C, Kg=Kg, lam=lam, Y=Y, diag=diag, outl=outl, H0=H0, h=h, n_iter=n_iter,
                    ratio=lam / (lam.sum() + ev_rest))

    def _outlyingness(self, prod, diag, order, h: int, rng, precomputed: bool,
                      scale2: float) -> np.ndarray:
        """Step 1: ``max_d |y_d - t_d| / s_d`` over directions through pairs of rows."""
        n = diag.size
        n_pairs = n * (n - 1) // 2
        if n_pairs <= self.n_directions:
            i, j = np.triu_indices(n, 1)
        else:
            i = rng.randint(0, n, size=self.n_directions)
            j = (i + rng.randint(1, n, size=self.n_directions)) % n  # j != i
        i, j = order[i], order[j]
        outl = np.zeros(n)
        block = max(1, min(i.size, get_config()["robpca_block_bytes"] // (8 * 4 * n)))
        tiny = 1e-24 * scale2
        for b0 in range(0, i.size, block):
            ib, jb = i[b0 : b0 + block], j[b0 : b0 + block]
            cols = np.arange(ib.size)
            E = np.zeros((n, ib.size))
            E[ib, cols] += 1.0
            E[jb, cols] -= 1.0
            P = prod(E)  # K_:i - K_:j
            norm2 = P[ib, cols] - P[jb, cols]  # K_ii + K_jj - 2 K_ij
            if precomputed and np.any(norm2 < -1e-8 * scale2):
                raise ValueError(
                    "kernel='precomputed': the kernel matrix is not positive semi-definite "
                    "(a squared feature-space distance K_ii + K_jj - 2 K_ij is negative).")
            ok = norm2 > tiny
            if not np.any(ok):
                continue
            Yd = P[:, ok] / np.sqrt(norm2[ok])
            t, s = unimcd(Yd, h)
            good = s > 1e-12 * np.sqrt(scale2)
            if np.any(good):
                Z = np.abs(Yd[:, good] - t[good]) / s[good]
                outl = np.maximum(outl, Z.max(axis=1))
        return outl

    def _subset_pca(self, op, prod, diag, rows: np.ndarray, k: int, plan, settings, rng):
        """Classical KPCA of ``rows``: centre weights, directions ``C`` (n, r), the
        variances (divisor ``m - 1``) of the first ``min(k, rank)`` components, all
        those computed, and the subset's total variance."""
        n = op.n
        w = np.zeros(n)
        w[rows] = 1.0
        m = rows.size
        g = w / m
        Kg = prod(g[:, None])[:, 0]
        c = float(g @ Kg)
        cen = Centering(Kg, c, weights=g, scale=w)
        kk = max(1, min(k, m - 1))
        res = solve_centred(op, cen, replace(plan, k=kk), settings, rng)
        mu = np.asarray(res.values, dtype=np.float64)
        V = np.asarray(res.vectors, dtype=np.float64)
        tot = float(np.sum(diag[rows]) - m * c) / (m - 1)
        noise = m * od_noise(diag[rows], op.dtype)  # round-off of the centred subset
        keep = mu > max(noise, 1e-12 * float(np.max(mu, initial=0.0)))
        mu, V = mu[keep], V[:, keep]
        A = V * w[:, None] / np.sqrt(mu)
        C = A - np.outer(g, A.sum(axis=0))
        ev = mu / (m - 1)
        return g, C, ev, ev, tot

    def _choose_k(self, ev: np.ndarray, tot: float, k_req: int) -> int:
        """rrcov's choice of ``k`` for ``n_components`` None (80 %) or a fraction."""
        nc = self.n_components
        if nc is not None and not is_fraction(nc):
            return min(int(nc), ev.size)
        frac = 0.8 if nc is None else float(nc)
        small = np.flatnonzero(ev / ev[0] <= 1e-3)
        k = min(ev.size, int(small[0]) + 1) if small.size else ev.size
        cum = np.cumsum(ev[:k]) / tot if tot > 0 else np.ones(k)
        if cum[-1] >= frac:
            k = int(np.searchsorted(cum, frac - 1e-12) + 1)
        return max(1, min(k, ev.size))

    @staticmethod
    def _scores(prod, diag, g, C) -> tuple[np.ndarray, np.ndarray]:
        """Raw scores ``<phi(x_i) - theta, f_l>`` and ``||phi(x_i) - theta||^2``."""
        KM = prod(np.column_stack([C, g]))
        Kg = KM[:, -1]
        Y = KM[:, :-1] - Kg @ C
        return Y, np.maximum(diag - 2.0 * Kg + float(g @ Kg), 0.0)

    @staticmethod
    def _csteps(Y, ev, g, C, h: int, niter: int = 100):
        """rrcov's ``projectMCD`` C-steps in the k-dimensional score space."""
        k = Y.shape[1]
        mah = np.sum(Y**2 / ev[:k], axis=1)
        old = float(np.prod(ev[:k]))
        it = 0
        for it in range(1, niter + 1):  # noqa: B007 (read after the loop)
            sub = Y[np.argsort(mah, kind="stable")[:h]]
            mu = sub.mean(axis=0)
            U, s, Vt = np.linalg.svd(sub - mu, full_matrices=False)
            e = s**2 / (h - 1)
            if s.size == 0 or not s[0] > 0:
                break
            r = int(np.count_nonzero(s > max(sub.shape) * np.finfo(float).eps * s[0]))
            L = Vt[:r].T
            e = e[:r]
            obj = float(np.prod(e))
            Y = (Y - mu) @ L
            g = g + C @ mu
            C = C @ L
            mah = np.sum(Y**2 / e, axis=1)
            if r == k and abs(old - obj) <= 1e-12 * abs(old):
                break
            old = obj
            k = r
        return g, C, Y, k, it

    def result(self, X, kernel, gamma: float, plan, s: dict, contamination) -> FitResult:
        """Every fitted attribute (set by one commit once the whole fit has succeeded)."""
        g, C, lam, Y = s["g"], s["C"], s["lam"], s["Y"]
        out_dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
        space = FittedSubspace(
            kernel, X, C, g, s["Kg"], float(g @ s["Kg"]), lam, basis_scores=Y,
            norm_floor=norm_floor(s["diag"], plan.dtype),
            od_noise=od_noise(s["diag"], plan.dtype), rows_dtype=plan.dtype.name)
        attrs = dict(
            kernel_=kernel, gamma_=gamma, X_fit_=X, subspace_=space,
            eigenvalues_=lam.astype(out_dtype), explained_variance_=lam.astype(out_dtype),
            explained_variance_ratio_=s["ratio"].astype(out_dtype), score_variance_=lam,
            n_components_=int(lam.size), eigen_solver_=plan.solver,
            outlyingness_=s["outl"], h_=int(s["h"]), h_subset_=s["H0"], center_weights_=g,
            n_iter_=int(s["n_iter"]))
        sd, od = space.distances(Y, space.basis_sqnorms())
        attrs.update(outlier_statistics(space, sd, od, contamination))
        return FitResult(attrs, Y.astype(out_dtype))


# ----------------------------------------------------------------------------- estimator
@extend_init(KernelPCA, drop=("alpha", "fit_inverse_transform"), support_fraction=0.75, h=None,
             n_directions=250)
class KernelROBPCA(OwnAlgorithm):
    """Kernel ROBPCA (docs/math.md, "Robust KPCA and diagnostics"; docs/robust.md).

    ROBPCA of Hubert, Rousseeuw & Vanden Branden (2005), in feature space as in
    Debruyne & Verdonck (2010), from kernel values alone:

    1. Stahel-Donoho outlyingness of every row over the directions
       ``phi(x_i) - phi(x_j)`` through pairs of rows: the projection of ``phi(x_k)`` is
       ``(K_ki - K_kj) / sqrt(K_ii + K_jj - 2 K_ij)``; its location and scale are the
       reweighted univariate MCD of the ``h`` most concentrated projections. All pairs
       are used when there are at most ``n_directions`` of them, otherwise
       ``n_directions`` pairs drawn with ``random_state``.
    2. The ``h`` least outlying rows (``h = h.alpha.n(support_fraction, n, k)`` as rrcov, about
       ``support_fraction n``) give a first subspace: classical KPCA on them. Rows whose
       orthogonal distance to it is within the univariate-MCD cut-off of
       ``OD^(2/3)`` form the refined set, and KPCA on that set gives the
       ``k``-dimensional subspace.
    3. In that subspace: C-steps (the ``h`` rows of smallest score distance, until
       the determinant stops decreasing), then the reweighted MCD of the scores
       (scikit-learn's FAST-MCD for the h-subset, robustbase's consistency and
       small-sample factors). Its eigenvectors are the directions ``f_l``, its
       eigenvalues ``score_variance_``, its centre the centre ``theta``.
    4. Score and orthogonal distances of the training rows give ROBPCA's cut-offs
       (``sqrt(chi2_k(0.975))``; Wilson-Hilferty with median/MAD), which
       ``score_samples``, ``predict`` and the outlier map use.

    With ``kernel='linear'`` this is ``rrcov::PcaHubert(x, k, alpha)`` (loadings up to
    sign, eigenvalues, centre, distances, cut-offs); deviations: rrcov runs a plain
    MCD instead of step 1-3 when ``n_features <= min(n/5, 10)``, and samples pairs
    with its own generator in the row order (here: ``random_state``, in a
    permutation-invariant order of the rows).

    Memory: the kernel operator of :class:`kpca.KernelPCA` (tiled / matrix-free under
    ``memory_limit``); directions are processed in blocks of kernel columns, and the
    subset fits use the operator through a weighted centring (the dense solver
    decomposes one temporary copy, as the other robust estimators).

    Parameters
    ----------
    n_components : int, float in (0, 1) or None, default=None
        ``k``. ``None``: rrcov's choice (at most 10 components, the fewest
        explaining 80 % of the h-subset's variance); a float: the fewest explaining
        that fraction (at most 10).
    support_fraction : float in (0.5, 1], default=0.75
        Fraction of rows the estimate is based on (robustness: about ``1 - support_fraction``
        of the rows may be outliers).
    h : int or None, default=None
        Size of the h-subset, instead of ``support_fraction`` (``k < h <= n_samples``).
    n_directions : int, default=250
        Most directions through pairs of rows in step 1 (rrcov's ``maxdir``).
    kernel, gamma, degree, coef0, kernel_params, eigen_solver, tol, max_iter,
    iterated_power, remove_zero_eig, random_state, copy_X, n_jobs, center,
    memory_limit, precision, contamination
        As in :class:`kpca.KernelPCA` (``center=False`` is ignored: ROBPCA's centre
        is part of the estimate). ``random_state`` seeds the direction sample and
        FAST-MCD (the eigensolvers draw from a copy of the stream: FAST-MCD draws
        the same subsets whichever solver ran, on the host or a device).

    Attributes
    ----------
    score_variance_ : ndarray of shape (n_components,)
        ROBPCA's eigenvalues (the robust variances along ``f_l``); also
        ``eigenvalues_`` and ``explained_variance_``.
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``score_variance_`` over itself plus the h-subset's variance outside its
        first ``k`` components.
    outlyingness_ : ndarray of shape (n_samples,)
        Stahel-Donoho outlyingness of step 1.
    h_ : int
        Size of the h-subset.
    h_subset_ : ndarray of int
        The ``h`` least outlying rows (step 1), ascending.
    center_weights_ : ndarray of shape (n_samples,)
        ``g``: the centre is ``sum_i g_i phi(x_i)``.
    n_iter_ : int
        C-steps of step 3.
    sd_cutoff_, od_cutoff_ : float
        ROBPCA's cut-offs (97.5 %).
    Also ``subspace_``, ``kernel_``, ``n_components_``, ``X_fit_``, ``gamma_``, the
    training distances and ``offset_``, as every kpca estimator.

    Examples
    --------
    >>> from sklearn.datasets import make_blobs
    >>> from kpca import KernelROBPCA
    >>> X, _ = make_blobs(200, n_features=4, centers=1, random_state=0)
    >>> X[:5] += 8  # five outliers
    >>> model = KernelROBPCA(n_components=2, kernel="rbf", gamma=0.1).fit(X)
    >>> model.predict(X[:7])  # -1: beyond ROBPCA's cut-offs
    array([-1, -1, -1, -1, -1,  1,  1])
    """

    if TYPE_CHECKING:  # the signature extend_init generates at run time (see help())
        def __init__(self, *args: Any, **params: Any) -> None: ...

    _parameter_constraints: dict = {
        **{k: v for k, v in KernelPCA._parameter_constraints.items()
           if k not in ("alpha", "fit_inverse_transform")},
        "n_components": N_COMPONENTS,  # no parallel analysis ('auto') here
        "support_fraction": [Interval(Real, 0.5, 1, closed="right")],
        "h": [Interval(Integral, 1, None, closed="left"), None],
        "n_directions": [Interval(Integral, 1, None, closed="left")],
    }
    #: no learned pre-image (no ridge ``alpha``, no ``fit_inverse_transform``)
    fit_inverse_transform = False
    _default_inverse = "auto"

    def _fit_algorithm(self, X) -> Any:
        """ROBPCA (:class:`HSubsetReweighting`) on the pipeline's operator; returns the
        raw training scores ``<phi(x_i) - theta, f_l>``."""
        X, device, _, rng = fit_rows(self, X, self._make_kernel())  # device: passes there
        settings, robpca = FitSettings.of(self), HSubsetReweighting.of(self)
        with job_threads(self.n_jobs):
            kernel, gamma = fit_kernel(self._make_kernel(), X, self.gamma, settings, rng)
            k_req, h = robpca.sizes(X.shape[0])
            # many solves over one operator: keep the tiles that fit, no start block
            plan = replace(make_plan(X, kernel, settings, reweights=True,
                                     k=robpca.components(X.shape[0])), fraction=None)
            if device is not None:
                plan = device_plan(plan, device, settings)
            op = build_operator(X, plan, settings, rng, start=False)
            state = robpca.run(X, kernel, op, plan, settings, h, k_req, rng)
        return commit(self, robpca.result(X, kernel, gamma, plan, state, self.contamination),
                      device_X=device)

    def influence(self):
        """Refused: the empirical influence (:class:`kpca.diagnostics.Influence`) is
        that of the eigenvectors of a kernel matrix, and ROBPCA's directions are those
        of an MCD scatter of subset scores, whose influence is bounded by design."""
        raise TypeError(
            "influence needs components that are eigenvectors of the training kernel "
            "matrix (KernelPCA, SphericalKernelPCA, WeightedKernelPCA, AnovaKernelPCA); "
            "KernelROBPCA's come from an MCD of the h-subset's scores: use its outlier map "
            "(outlier_map, score_samples) instead.")
