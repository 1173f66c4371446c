"""The fitted subspace: the one object every estimator's fit produces.

Every kpca model -- exact, robust, ANOVA, Nyström, random features -- is the
same thing in the end (docs/math.md, "The fitted subspace"): a centre ``theta``
and ``k`` orthonormal directions ``f_l`` in the feature space of a kernel, both
expanded over ``m`` points ``z_j`` (the training rows, or the landmarks)::

    theta = sum_j g_j phi(z_j),        f_l = sum_j C_jl phi(z_j).

An object ``t`` then has raw scores and a squared distance to the centre

    y_l(t) = <phi(t) - theta, f_l> = k(t, Z) C_l - b_l,     b = C^T (K_ZZ g),
    ||phi(t) - theta||^2 = k(t, t) - 2 k(t, Z) g + g^T K_ZZ g,

so ``transform``, the pre-images, the outlier diagnostics and the model files
read nothing else. Random Fourier features are the case of an explicit map:
``phi(t) = z(t)`` in ``R^p``, the ``z_j`` are the unit vectors (``k(t, z_j) =
z(t)_j``), ``g`` is the training mean of ``z`` and ``C`` the principal axes.

Exact KPCA with dual coefficients ``A`` (``alpha_l = v_l / sqrt(mu_l)``), centre
weights ``g`` (``1/n`` for the mean) and row scales ``s`` (robust KPCA) has
``C = S A - g (1^T S A)``: :meth:`FittedSubspace.from_dual` builds it.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from . import _native
from ._config import get_config
from ._parallel import job_threads, run_blocks
from .kernels import FourierFeatures, Kernel, Precomputed
from .kernels import _standard as _rbf_kernels
from .operators import Centering, _tiled, n_threads

logger = logging.getLogger("kpca")

# block budgets (settings, kpca._config): transform_block_bytes, the kernel rows one
# ``transform`` thread evaluates at once (rows x m); fused_rows x fused_cols, the pieces
# of kernel rows that ``transform`` evaluates and multiplies in cache; and
# preimage_block_bytes, one (points x expansion points) float64 block of the pre-image
# methods. A ``block_bytes`` of None below is the setting.


def _budget(block_bytes: int | None, name: str) -> int:
    """``block_bytes``, or the setting ``name`` where it is None."""
    return get_config()[name] if block_bytes is None else block_bytes


@dataclass(frozen=True, eq=False)
class FittedSubspace:
    """Centre and unit directions of a fitted model, expanded over ``m`` points.

    Attributes
    ----------
    kernel : Kernel
        The resolved kernel (for random features, the kernel they approximate).
    basis : ndarray, sparse matrix, 1-D object array or None
        The expansion points ``z_j``, shape (m, d): training rows (exact and
        robust KPCA; for ``kernel='precomputed'`` the training kernel matrix),
        landmarks (Nyström), or ``None`` for an explicit feature map.
    coef : ndarray of shape (m, k)
        ``C``: ``f_l = sum_j C_jl phi(z_j)`` (float64).
    center : ndarray of shape (m,) or None
        ``g``: ``theta = sum_j g_j phi(z_j)``; ``None`` for ``theta = 0`` (uncentred).
    center_products : ndarray of shape (m,)
        ``K_ZZ g`` (``<phi(z_j), theta>``).
    center_sqnorm : float
        ``||theta||^2 = g^T K_ZZ g``.
    score_variance : ndarray of shape (k,)
        Variance ``lambda_l`` of the training scores along ``f_l``: the scale of the
        score distance.
    basis_scores : ndarray of shape (m, k) or None
        ``<phi(z_j) - theta, f_l>``: the raw scores of the expansion points (the
        pre-images' neighbour search); ``None`` for an explicit feature map.
    features : FourierFeatures or None
        The explicit feature map ``z(t)`` (random features), else ``None``.
    normalize : bool, default=False
        ``transform`` divides the scores by ``||phi(t) - theta||`` (spherical KPCA).
    norm_floor : float, default=0.0
        Floor of ``||phi(t) - theta||`` when normalising.
    od_noise : float, default=0.0
        Squared orthogonal distances at or below this round-off level are 0.
    rows_dtype : str, default='float64'
        Dtype in which kernel rows ``k(t, Z)`` are evaluated.
    """

    kernel: Kernel
    basis: Any
    coef: np.ndarray
    center: np.ndarray | None
    center_products: np.ndarray
    center_sqnorm: float
    score_variance: np.ndarray
    basis_scores: np.ndarray | None = None
    features: FourierFeatures | None = None
    normalize: bool = False
    norm_floor: float = 0.0
    od_noise: float = 0.0
    rows_dtype: str = "float64"

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dual(
        cls,
        kernel: Kernel,
        basis: Any,
        alphas: np.ndarray,
        centering: Centering,
        *,
        basis_scores: np.ndarray,
        score_variance: np.ndarray,
        **options: Any,
    ) -> FittedSubspace:
        """From dual coefficients ``A`` (n, k) on the centred, scaled training rows.

        ``f_l = sum_i A_il s_i (phi(x_i) - theta)`` with the centring's weights ``g``
        and scales ``s``, i.e. ``C = S A - g (1^T S A)``.
        """
        A = np.asarray(alphas, dtype=np.float64)
        if centering.scale is not None:
            A = A * np.asarray(centering.scale, dtype=np.float64)[:, None]
        n = A.shape[0]
        if centering.enabled:
            g = (np.full(n, 1.0 / n) if centering.weights is None
                 else np.asarray(centering.weights, dtype=np.float64))
            C = A - np.outer(g, A.sum(axis=0))
            m = np.asarray(centering.row_means, dtype=np.float64)
            c = float(centering.grand_mean)
        else:
            C, g, m, c = A, None, np.zeros(n), 0.0
        return cls(kernel, basis, C, g, m, c, np.asarray(score_variance, dtype=np.float64),
                   basis_scores=np.asarray(basis_scores, dtype=np.float64), **options)

    # ------------------------------------------------------------------ sizes
    @property
    def n(self) -> int:
        """Number of expansion points ``m``."""
        return self.coef.shape[0]

    @property
    def k(self) -> int:
        """Number of directions."""
        return self.coef.shape[1]

    @property
    def n_features(self) -> int:
        """Input dimension of the expansion points."""
        return self.basis.shape[1]

    @property
    def precomputed(self) -> bool:
        return isinstance(self.kernel, Precomputed)

    @property
    def offset(self) -> np.ndarray:
        """``b = <theta, f_l> = C^T K_ZZ g``, shape (k,)."""
        return self.coef.T @ self.center_products

    def truncate(self, q: int) -> FittedSubspace:
        """The subspace of the first ``q`` directions."""
        scores = None if self.basis_scores is None else self.basis_scores[:, :q]
        return replace(self, coef=self.coef[:, :q], score_variance=self.score_variance[:q],
                       basis_scores=scores)

    # ------------------------------------------------------------------ kernel rows
    def prepare(self, dtype: Any = None) -> Any:
        """The kernel's column-side state of the expansion points (see ``Kernel.prepare``)."""
        if self.features is not None or self.precomputed:
            return None
        return self.kernel.prepare(self.basis, np.dtype(dtype or self.rows_dtype))

    def kernel_rows(self, Xb: Any, prep: Any = None) -> np.ndarray:
        """``k(t, z_j)`` for a block of rows, shape (b, m), in :attr:`rows_dtype`."""
        if self.features is not None:
            return self.features(Xb)
        if self.precomputed:
            return Xb.toarray() if sp.issparse(Xb) else np.asarray(Xb)
        if sp.issparse(Xb) and sp.issparse(self.basis) and Xb.dtype != self.basis.dtype:
            Xb = Xb.astype(self.basis.dtype)  # the kernel's blocks need one dtype
        if sp.issparse(Xb) and not sp.issparse(self.basis):
            # prepared states are for rows of the basis' kind (dense landmarks)
            return np.asarray(self.kernel.block(Xb, self.basis.astype(Xb.dtype)))
        if prep is None:
            prep = self.prepare()
        return np.asarray(self.kernel.block_prepared(Xb, prep))

    def kernel_diag(self, X: Any) -> np.ndarray:
        """``k(t, t)`` per row (float64); needs vectors (not a precomputed kernel)."""
        if self.features is not None:
            F = np.asarray(self.features(X), dtype=np.float64)
            return np.einsum("ij,ij->i", F, F)
        if self.precomputed:
            raise ValueError(
                "kernel_diag: with kernel='precomputed', pass k(t, t) for each new object "
                "(the kernel diagonal is not part of the cross-kernel matrix)."
            )
        return np.asarray(self.kernel.diag(X), dtype=np.float64)

    def sqnorms(self, Kt: np.ndarray, diag_t: np.ndarray) -> np.ndarray:
        """``||phi(t) - theta||^2`` from kernel rows and ``k(t, t)``, clipped at 0."""
        d = np.asarray(diag_t, dtype=np.float64)
        if self.center is not None:
            d = d - 2.0 * np.asarray(Kt @ self.center.astype(Kt.dtype), dtype=np.float64)
            d += self.center_sqnorm
        return np.maximum(d, 0.0)

    def basis_sqnorms(self, diag: np.ndarray | None = None) -> np.ndarray:
        """``||phi(z_j) - theta||^2`` of the expansion points, shape (m,), from their
        kernel diagonal ``k(z_j, z_j)`` (computed when not given)."""
        if diag is not None:
            d = np.asarray(diag, dtype=np.float64)
        elif self.precomputed:
            d = np.asarray(self.basis.diagonal(), dtype=np.float64)
        else:
            d = self.kernel_diag(self.basis)
        if self.center is not None:
            d = d - 2.0 * self.center_products + self.center_sqnorm
        return np.maximum(d, 0.0)

    # ------------------------------------------------------------------ projections
    def transform(self, X: Any, *, n_jobs: int | None = None, dtype: Any = None,
                  block_bytes: int | None = None) -> np.ndarray:
        """Scores of the rows of ``X`` (validated), shape (m, k), in ``dtype`` (default:
        X's float dtype).

        Raw scores ``y_l(t)``, divided by ``||phi(t) - theta||`` when
        :attr:`normalize`. Dense rows of a vector kernel are evaluated and multiplied
        in cache-sized pieces (``fused_rows x fused_cols``, settings), each piece's product in
        the precision of the kernel values (:attr:`rows_dtype`) and summed in
        ``dtype``; other inputs in row blocks of at most ``block_bytes`` of kernel
        rows (default: the setting ``transform_block_bytes``). Either way on ``n_jobs``
        threads (one BLAS thread each).
        """
        if dtype is not None:
            dt = np.dtype(dtype)
        elif X.dtype in (np.float32, np.float64):
            dt = np.dtype(X.dtype)
        else:
            dt = np.dtype(np.float64)
        if self.precomputed and self.normalize:
            raise ValueError(
                "transform of a normalised (spherical) model with kernel='precomputed' needs "
                "k(t, t), which K_t does not hold: use raw_projection(X, kernel_diag=...)."
            )
        C = self.coef.astype(dt)
        b = self.offset.astype(dt)
        out = np.empty((X.shape[0], self.k), dtype=dt)
        workers = n_threads(n_jobs)
        if self._fusable(X):
            self._transform_fused(X, C, b, out, workers)
            return self._checked(out)
        row_bytes = self.n * max(np.dtype(self.rows_dtype).itemsize, dt.itemsize)
        rows = max(1, _budget(block_bytes, "transform_block_bytes") // max(1, row_bytes))
        prep = self.prepare()

        def work(start: int) -> None:
            Xb = X[start : start + rows]
            Kt = np.asarray(self.kernel_rows(Xb, prep), dtype=dt)
            Y = Kt @ C
            Y -= b
            if self.normalize:
                sq = self.sqnorms(Kt, self.kernel_diag(Xb))
                Y /= np.maximum(np.sqrt(sq), self.norm_floor).astype(dt)[:, None]
            out[start : start + rows] = Y

        starts = range(0, X.shape[0], rows)
        # one block runs here, where n_jobs (if given) sets BLAS's own threads
        single = len(starts) <= 1 or workers <= 1
        with job_threads(n_jobs) if single else nullcontext():
            run_blocks(work, starts, workers)
        return self._checked(out)

    @staticmethod
    def _checked(out: np.ndarray) -> np.ndarray:
        if not np.all(np.isfinite(out)):
            raise ValueError(
                "the kernel between these rows and the training rows overflows (non-finite "
                "values): scale the data or change the kernel parameters (degree, gamma, coef0)."
            )
        return out

    def _fusable(self, X: Any) -> bool:
        """Whether ``transform`` can evaluate kernel rows in cache-sized pieces: dense
        numeric rows against dense expansion points of a vector kernel."""
        return (self.features is None and not self.precomputed and isinstance(X, np.ndarray)
                and isinstance(self.basis, np.ndarray) and X.dtype.kind == "f"
                and self.basis.dtype.kind == "f" and X.shape[0] > 0)

    def _compiled_rows(self, prep: Any, Cr: np.ndarray, rows: int) -> Any:
        """The compiled loop over a block's pieces (``rows_rbf`` of the variant in use,
        :data:`kpca.operators._tiled.NATIVE`), or None where it does not apply: the RBF
        kernel in float32 with few enough features for its compiled block, and at
        least ``native_rbf_pack_rows`` (a setting, read when the columns were prepared)
        rows to transform (fewer do not pay for packing
        the expansion points, unless they are packed already: NumPy's path, as
        ``RBF.block_prepared`` decides). It evaluates and multiplies a block's pieces
        as the Python loop does, with the GIL released for the whole block."""
        fns = _tiled._tileprod if _tiled.NATIVE else None
        if (getattr(fns, "rows_rbf", None) is None or Cr.dtype != np.float32
                or not isinstance(self.kernel, _rbf_kernels.RBF)
                or not isinstance(prep, _rbf_kernels._RBFPrepared)
                or prep.aug.dtype != np.float32
                or not _rbf_kernels._native_width(prep.aug, prep.limits[0])):
            return None
        if rows >= prep.limits[1]:
            prep.pack()
        return fns if prep.panels() is not None else None

    def _transform_fused(self, X: np.ndarray, C: np.ndarray, b: np.ndarray,
                         out: np.ndarray, workers: int) -> None:
        """``transform`` in pieces of ``fused_rows x fused_cols`` kernel values, each
        evaluated and multiplied while it is in cache (a block of rows never goes to
        memory); with :attr:`normalize`, ``k(t, Z) @ center`` rides on the same
        product as one more column."""
        dt = out.dtype
        rows_dt = np.dtype(self.rows_dtype)
        k, m = self.k, self.n
        norm = self.normalize and self.center is not None
        Ca = np.hstack([C, self.center.astype(dt)[:, None]]) if norm else C
        # each piece's product in the precision of its kernel values (a float32 piece
        # times float64 coefficients would first be copied to float64), summed over
        # pieces in the output's
        Cr = Ca.astype(np.result_type(rows_dt, np.float32), copy=False)
        prep = self.prepare()
        cfg = get_config()
        piece_rows, piece_cols = cfg["fused_rows"], cfg["fused_cols"]
        fns = self._compiled_rows(prep, Cr, X.shape[0])
        if fns is not None:
            Cr, panels, sgemm = np.ascontiguousarray(Cr), prep.panels(), _tiled._sgemm()
            # the portable variant's exponents by BLAS where a wider variant runs here
            # (kpca._native.blas_products)
            blas_block = _native.blas_products(fns)

        def work(start: int) -> None:
            Xb = X[start : start + piece_rows]
            Xr = self.kernel.prepare_rows(Xb, prep)  # once for all column pieces
            r = Xb.shape[0]
            acc = np.zeros((r, Ca.shape[1]), dtype=dt)
            if fns is not None and isinstance(Xr, _rbf_kernels._RBFRows):
                # every piece in one compiled call, the GIL released throughout
                fns.rows_rbf(Xr.aug, prep.aug, panels, Xr.clamp, Cr, acc, piece_cols, sgemm,
                             blas_block)
            else:
                buf = np.empty(r * piece_cols, dtype=rows_dt)
                for c0 in range(0, m, piece_cols):
                    c1 = min(m, c0 + piece_cols)
                    P = buf[: r * (c1 - c0)].reshape(r, c1 - c0)
                    self.kernel.block_prepared(Xr, prep[c0:c1], out=P)
                    acc += P @ Cr[c0:c1]
            Y = acc[:, :k] - b
            if self.normalize:
                sq = np.asarray(self.kernel_diag(Xb), dtype=np.float64)
                if norm:
                    sq = sq - 2.0 * acc[:, k].astype(np.float64) + self.center_sqnorm
                sq = np.maximum(sq, 0.0)
                Y /= np.maximum(np.sqrt(sq), self.norm_floor).astype(dt)[:, None]
            out[start : start + r] = Y

        run_blocks(work, range(0, X.shape[0], piece_rows), workers)

    def transform_device(self, X: Any, xp: Any, *, dtype: Any,
                         block_bytes: int | None = None, raw: bool = False) -> Any:
        """Scores of the rows of an Array API array ``X``, computed on its device.

        The expansion points, coefficients and offset go to the device once per call;
        kernel rows are evaluated (in :attr:`rows_dtype`) and multiplied in row blocks
        of at most ``block_bytes`` (default: the setting ``transform_block_bytes``).
        Raw scores, divided by ``||phi(t) - theta||`` when :attr:`normalize` and not
        ``raw`` (``k(t, Z) g`` rides on the same product as one more column), of a vector
        kernel whose :meth:`~kpca.kernels.Kernel.block` takes ``xp``; the caller checks
        that. ``raw=True``: the raw scores ``<phi(t) - theta, f_l>`` whatever
        :attr:`normalize` (the pre-images' coordinates).

        Returns
        -------
        array of shape (m, k), namespace ``xp``, in ``dtype`` (a NumPy float dtype)
        """
        from ._array_api import float_dtype, from_host
        from .kernels import device_block_product

        dev = X.device
        rows_dt = float_dtype(xp, self.rows_dtype)
        out_dt = float_dtype(xp, dtype)
        k = self.k
        normalize = self.normalize and not raw
        norm = normalize and self.center is not None
        coef = np.hstack([self.coef, self.center[:, None]]) if norm else self.coef
        Z = from_host(np.asarray(self.basis, dtype=self.rows_dtype), xp, dev)
        C = from_host(coef.astype(self.rows_dtype), xp, dev)
        b = from_host(self.offset.astype(dtype), xp, dev)
        Xd = xp.astype(X, rows_dt)
        rows = max(1, _budget(block_bytes, "transform_block_bytes")
                   // max(1, self.n * np.dtype(self.rows_dtype).itemsize))
        KC = device_block_product(self.kernel, Xd, Z, C, xp, rows)
        out = xp.astype(KC[:, :k], out_dt) - b
        if normalize:  # ||phi(t) - theta||^2 = k(t, t) - 2 k(t, Z) g + ||theta||^2
            sq = xp.astype(self.kernel.diag(Xd, xp=xp), xp.float64)
            if norm:
                sq = sq - 2.0 * xp.astype(KC[:, k], xp.float64) + float(self.center_sqnorm)
            sq = xp.clip(sq, min=0.0)
            dist = xp.clip(xp.sqrt(sq), min=float(self.norm_floor))
            out = out / xp.astype(dist, out_dt)[:, None]
        if not bool(xp.all(xp.isfinite(out))):
            raise ValueError("transform produced non-finite scores: the kernel values "
                             "overflow; scale the data or change the kernel parameters.")
        return out

    def raw_projection(self, X: Any, *, kernel_diag: Any = None,
                       block_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Raw scores and squared distances to the centre, in float64, in one pass.

        Parameters
        ----------
        X : validated array of shape (m, d)
            For a precomputed kernel, the kernel against the training objects.
        kernel_diag : array-like of shape (m,), default=None
            ``k(t, t)``; needed for a precomputed kernel.

        Returns
        -------
        Y : ndarray of shape (m, k)
            ``y_l(t) = <phi(t) - theta, f_l>``.
        sqnorm : ndarray of shape (m,)
            ``||phi(t) - theta||^2`` (clipped at 0).
        """
        m = X.shape[0]
        if kernel_diag is None:
            kernel_diag = self.kernel_diag(X)
        else:
            kernel_diag = np.asarray(kernel_diag, dtype=np.float64).ravel()
            if kernel_diag.shape != (m,):
                raise ValueError(
                    f"kernel_diag must have shape ({m},); got {kernel_diag.shape}.")
            if not np.all(np.isfinite(kernel_diag)) or np.any(kernel_diag < 0):
                raise ValueError(
                    "kernel_diag must hold finite values >= 0 (k(t, t) of a positive "
                    "semi-definite kernel).")
        kernel_diag = np.asarray(kernel_diag, dtype=np.float64).ravel()
        rows = max(1, _budget(block_bytes, "preimage_block_bytes") // max(1, 8 * self.n))
        prep = self.prepare(np.float64)
        b = self.offset
        Y = np.empty((m, self.k))
        sq = np.empty(m)
        for start in range(0, m, rows):
            Kt = np.asarray(self.kernel_rows(X[start : start + rows], prep), dtype=np.float64)
            Y[start : start + rows] = Kt @ self.coef - b
            sq[start : start + rows] = self.sqnorms(Kt, kernel_diag[start : start + rows])
        return Y, sq

    def distances(self, Y: np.ndarray, sqnorm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Score and orthogonal distances from raw scores and squared norms.

        ``SD = sqrt(sum_l y_l^2 / lambda_l)`` over the directions with
        ``lambda_l > 0``; ``OD = sqrt(||phi - theta||^2 - sum_l y_l^2)``, 0 at the
        round-off level :attr:`od_noise`.
        """
        lam = self.score_variance
        keep = lam > 0
        sd = np.sqrt(np.sum(Y[:, keep] ** 2 / lam[keep], axis=1))
        od2 = sqnorm - np.sum(Y**2, axis=1)
        od = np.sqrt(np.where(od2 > self.od_noise, od2, 0.0))
        return sd, od

    # ------------------------------------------------------------------ pre-image geometry
    def coefficients(self, Y: np.ndarray, j0: int, j1: int) -> np.ndarray:
        """Block ``G[:, j0:j1]`` of ``theta + sum_l y_l f_l = sum_j G_j phi(z_j)``."""
        G = Y @ self.coef[j0:j1].T
        if self.center is not None:
            G += self.center[None, j0:j1]
        return G

    def proj_sqnorm(self, Y: np.ndarray) -> np.ndarray:
        """``||theta + sum_l y_l f_l||^2`` per row of scores, shape (m,)."""
        out = np.einsum("ij,ij->i", Y, Y)
        if self.center is not None:
            out += self.center_sqnorm + 2.0 * (Y @ self.offset)
        return out

    def column_blocks(self, m: int, block_bytes: int | None = None):
        """``(j0, j1)`` ranges of expansion points such that an (m, j1 - j0) float64
        block, two temporaries like it and the (j1 - j0, d) points themselves stay
        within ``block_bytes`` (default: the setting ``preimage_block_bytes``; at least
        64 points per block)."""
        block_bytes = _budget(block_bytes, "preimage_block_bytes")
        cols = max(64, block_bytes // (8 * (3 * max(1, m) + max(1, self.n_features))))
        for j0 in range(0, self.n, cols):
            yield j0, min(self.n, j0 + cols)

    @staticmethod
    def row_chunk(block_bytes: int | None = None) -> int:
        """Points processed together so that a block of the smallest width
        :meth:`column_blocks` uses (64 points) and two temporaries fit ``block_bytes``
        (default: the setting ``preimage_block_bytes``)."""
        return max(1, _budget(block_bytes, "preimage_block_bytes") // (3 * 8 * 64))

    def rows(self, j0: int, j1: int) -> np.ndarray:
        """Expansion points ``z_j0 .. z_{j1-1}`` as a dense float64 array."""
        return self.take(np.arange(j0, j1))

    def take(self, idx: np.ndarray) -> np.ndarray:
        """Expansion points at indices ``idx`` as a dense float64 array."""
        Xb = self.basis[np.asarray(idx, dtype=np.intp)]
        Xb = Xb.toarray() if sp.issparse(Xb) else Xb
        return np.asarray(Xb, dtype=np.float64)

    def feature_sqdist(self, Y: np.ndarray, j0: int, j1: int, sqnorms: np.ndarray) -> np.ndarray:
        """``||P phi(t_a) - phi(z_j)||^2`` for points ``j0..j1-1``, shape (m, j1 - j0).

        ``= ||y||^2 - 2 y . s_j + ||phi(z_j) - theta||^2`` (``s_j`` the points' raw
        scores), clipped at 0 (round-off).
        """
        D = Y @ self.basis_scores[j0:j1].T
        D *= -2.0
        D += np.einsum("ij,ij->i", Y, Y)[:, None]
        D += sqnorms[None, j0:j1]
        np.maximum(D, 0.0, out=D)
        return D

    def nearest(self, Y: np.ndarray, k: int, block_bytes: int | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` expansion points nearest to ``P phi(t)`` in feature space.

        Evaluated in column blocks with a running top-k (memory O(m k + block)).

        Returns
        -------
        idx : ndarray of int, shape (m, k)
            Indices of the points, nearest first.
        sqdist : ndarray of shape (m, k)
            Their squared feature-space distances ``||P phi(t) - phi(z_j)||^2``.
        """
        m = Y.shape[0]
        k = min(k, self.n)
        block_bytes = _budget(block_bytes, "preimage_block_bytes")
        sqn = self.basis_sqnorms()
        best_d = np.full((m, 0), np.inf)
        best_i = np.zeros((m, 0), dtype=np.intp)
        for j0, j1 in self.column_blocks(m, block_bytes):
            D = np.hstack([best_d, self.feature_sqdist(Y, j0, j1, sqn)])
            I = np.hstack([best_i, np.broadcast_to(np.arange(j0, j1), (m, j1 - j0))])
            if D.shape[1] > k:
                part = np.argpartition(D, k - 1, axis=1)[:, :k]
                D = np.take_along_axis(D, part, axis=1)
                I = np.take_along_axis(I, part, axis=1)
            best_d, best_i = D, I
        order = np.argsort(best_d, axis=1, kind="stable")
        return np.take_along_axis(best_i, order, axis=1), np.take_along_axis(best_d, order, axis=1)

    def residual(self, Z: np.ndarray, Y: np.ndarray, block_bytes: int | None = None
                 ) -> np.ndarray:
        """``||phi(z_a) - P phi(t_a)||^2`` for pre-images ``Z`` of scores ``Y``, shape (m,).

        ``= k(z, z) - 2 sum_j G_j k(z, z_j) + ||P phi(t)||^2``, clipped at 0.
        """
        m = Z.shape[0]
        prep = self.kernel.prepare(self.basis, np.float64)
        cross = np.zeros(m)
        block_bytes = _budget(block_bytes, "preimage_block_bytes")
        rows = self.row_chunk(block_bytes)
        for a0 in range(0, m, rows):
            Za, Ya = Z[a0 : a0 + rows], Y[a0 : a0 + rows]
            for j0, j1 in self.column_blocks(Za.shape[0], block_bytes):
                Kb = np.asarray(self.kernel.block_prepared(Za, prep[j0:j1]), dtype=np.float64)
                cross[a0 : a0 + rows] += np.einsum("ij,ij->i", Kb, self.coefficients(Ya, j0, j1))
        kzz = np.asarray(self.kernel.diag(Z), dtype=np.float64)
        return np.maximum(kzz - 2.0 * cross + self.proj_sqnorm(Y), 0.0)
