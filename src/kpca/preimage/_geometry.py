"""The pre-image geometry of a fitted subspace on the host: neighbour search in feature
space, residuals, and the blocks both are evaluated in (docs/math.md, "Pre-images and
denoising").

The algorithms invert ``P phi(t) = theta + sum_l y_l f_l = sum_j G_j phi(z_j)``. Its
closed forms from the scores alone (``G``, ``||P phi(t)||^2``, the distances to the
expansion points) are :class:`kpca.subspace.FittedSubspace`'s; what is evaluated here
against the expansion points, one block of them at a time, is the pre-images' own:
the ``k`` nearest points (:meth:`HostSpace.nearest`) and ``||phi(z) - P phi(t)||^2``
(:meth:`HostSpace.residual`). :class:`~kpca.preimage.DeviceSpace` is the same geometry
on a device, cut into the same blocks (:func:`column_blocks`, :func:`row_chunk`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._config import get_config

# the block budget is the setting preimage_block_bytes (kpca._config): one (points x
# expansion points) float64 block; a ``block_bytes`` of None below is the setting


def _budget(block_bytes: int | None) -> int:
    return get_config()["preimage_block_bytes"] if block_bytes is None else block_bytes


def column_blocks(n: int, n_features: int, m: int, block_bytes: int | None = None
                  ) -> Iterator[tuple[int, int]]:
    """``(j0, j1)`` ranges of ``n`` expansion points such that an (m, j1 - j0) float64
    block, two temporaries like it and the (j1 - j0, n_features) points themselves stay
    within ``block_bytes`` (default: the setting ``preimage_block_bytes``; at least 64
    points per block)."""
    block_bytes = _budget(block_bytes)
    cols = max(64, block_bytes // (8 * (3 * max(1, m) + max(1, n_features))))
    for j0 in range(0, n, cols):
        yield j0, min(n, j0 + cols)


def row_chunk(block_bytes: int | None = None) -> int:
    """Points processed together so that a block of the smallest width
    :func:`column_blocks` uses (64 points) and two temporaries fit ``block_bytes``
    (default: the setting ``preimage_block_bytes``)."""
    return max(1, _budget(block_bytes) // (3 * 8 * 64))


class _SpaceBlocks:
    """The sizes and memory blocks of a pre-image space (``self.space`` a
    :class:`~kpca.subspace.FittedSubspace`), shared by :class:`HostSpace` and
    :class:`~kpca.preimage.DeviceSpace`."""

    space: Any

    # ------------------------------------------------------------------ sizes, blocks
    @property
    def n(self) -> int:
        """Number of expansion points."""
        return self.space.n

    @property
    def k(self) -> int:
        """Number of directions."""
        return self.space.k

    @property
    def n_features(self) -> int:
        """Input dimension."""
        return self.space.n_features

    def column_blocks(self, m: int, block_bytes: int | None = None
                      ) -> Iterator[tuple[int, int]]:
        """``(j0, j1)`` ranges of the expansion points such that an (m, j1 - j0) float64
        block, two temporaries like it and the (j1 - j0, d) points themselves stay
        within ``block_bytes`` (default: the setting ``preimage_block_bytes``; at least
        64 points per block)."""
        return column_blocks(self.n, self.n_features, m, block_bytes)

    @staticmethod
    def row_chunk(block_bytes: int | None = None) -> int:
        """Points processed together so that a block of the smallest width
        :meth:`column_blocks` uses (64 points) and two temporaries fit ``block_bytes``
        (default: the setting ``preimage_block_bytes``)."""
        return row_chunk(block_bytes)


class HostSpace(_SpaceBlocks):
    """The pre-image geometry of a :class:`kpca.subspace.FittedSubspace`, in NumPy
    (float64).

    What the pre-image algorithms read: the subspace's closed forms
    (:meth:`coefficients`, :meth:`proj_sqnorm`, :meth:`feature_sqdist`, passed
    through), the expansion points as dense rows (:meth:`rows`, :meth:`take`), the
    neighbour search (:meth:`nearest`) and the residual (:meth:`residual`), in blocks
    of expansion points within a memory budget (:meth:`column_blocks`,
    :meth:`row_chunk`). :class:`kpca.preimage.DeviceSpace` has the same methods on a
    device.

    Parameters
    ----------
    space : FittedSubspace
        Expanded over input points (``space.basis`` not None).
    """

    def __init__(self, space: Any) -> None:
        self.space = space
        self.kernel = space.kernel
        self.basis = space.basis

    # ------------------------------------------------------------------ the subspace's closed forms
    def coefficients(self, Y: np.ndarray, j0: int, j1: int) -> np.ndarray:
        """:meth:`FittedSubspace.coefficients <kpca.subspace.FittedSubspace.coefficients>`."""
        return self.space.coefficients(Y, j0, j1)

    def proj_sqnorm(self, Y: np.ndarray) -> np.ndarray:
        """:meth:`FittedSubspace.proj_sqnorm <kpca.subspace.FittedSubspace.proj_sqnorm>`."""
        return self.space.proj_sqnorm(Y)

    def feature_sqdist(self, Y: np.ndarray, j0: int, j1: int, sqnorms: np.ndarray
                       ) -> np.ndarray:
        """:meth:`FittedSubspace.feature_sqdist
        <kpca.subspace.FittedSubspace.feature_sqdist>`."""
        return self.space.feature_sqdist(Y, j0, j1, sqnorms)

    # ------------------------------------------------------------------ expansion points
    def rows(self, j0: int, j1: int) -> np.ndarray:
        """Expansion points ``z_j0 .. z_{j1-1}`` as a dense float64 array."""
        return self.take(np.arange(j0, j1))

    def take(self, idx: np.ndarray) -> np.ndarray:
        """Expansion points at indices ``idx`` as a dense float64 array."""
        Xb = self.basis[np.asarray(idx, dtype=np.intp)]
        Xb = Xb.toarray() if sp.issparse(Xb) else Xb
        return np.asarray(Xb, dtype=np.float64)

    # ------------------------------------------------------------------ search, residual
    def nearest(self, Y: np.ndarray, k: int, block_bytes: int | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` expansion points nearest to ``P phi(t)`` in feature space.

        Evaluated in column blocks with a running top-k (memory O(m k + block)).

        Parameters
        ----------
        Y : ndarray of shape (m, k)
            Raw scores of the points ``P phi(t)``.
        k : int
            Neighbours per point (at most the expansion points).
        block_bytes : int, default=None
            Budget of one block (default: the setting ``preimage_block_bytes``).

        Returns
        -------
        idx : ndarray of int, shape (m, k)
            Indices of the points, nearest first.
        sqdist : ndarray of shape (m, k)
            Their squared feature-space distances ``||P phi(t) - phi(z_j)||^2``.
        """
        m = Y.shape[0]
        k = min(k, self.n)
        block_bytes = _budget(block_bytes)
        sqn = self.space.basis_sqnorms()
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
        """``||phi(z_a) - P phi(t_a)||^2`` for pre-images ``Z`` (m, d) of scores ``Y``
        (m, k), shape (m,).

        ``= k(z, z) - 2 sum_j G_j k(z, z_j) + ||P phi(t)||^2``, clipped at 0; in blocks
        of :meth:`row_chunk` points by :meth:`column_blocks` expansion points.
        """
        m = Z.shape[0]
        prep = self.kernel.prepare(self.basis, np.float64)
        cross = np.zeros(m)
        block_bytes = _budget(block_bytes)
        rows = self.row_chunk(block_bytes)
        for a0 in range(0, m, rows):
            Za, Ya = Z[a0 : a0 + rows], Y[a0 : a0 + rows]
            for j0, j1 in self.column_blocks(Za.shape[0], block_bytes):
                Kb = np.asarray(self.kernel.block_prepared(Za, prep[j0:j1]), dtype=np.float64)
                cross[a0 : a0 + rows] += np.einsum("ij,ij->i", Kb, self.coefficients(Ya, j0, j1))
        kzz = np.asarray(self.kernel.diag(Z), dtype=np.float64)
        return np.maximum(kzz - 2.0 * cross + self.proj_sqnorm(Y), 0.0)


def host_space(space: Any) -> HostSpace:
    """``space`` as a :class:`HostSpace` (a FittedSubspace is wrapped)."""
    return space if isinstance(space, HostSpace) else HostSpace(space)
