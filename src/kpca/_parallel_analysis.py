"""Parallel analysis (Horn) for kernel PCA: the pieces ``n_components='auto'`` uses.

The number of components is the number of leading eigenvalues of the centred kernel
matrix that exceed a quantile of the same eigenvalue on copies of the data whose
columns were permuted independently (docs/math.md, "Parallel analysis"). This module
holds what does not depend on the estimator: the permutations, the threshold and the
rule; :class:`kpca.KernelPCA` runs the fits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = [
    "ParallelAnalysis",
    "check_parallel_analysis",
    "leading_above",
    "null_threshold",
    "permute_columns",
    "permutation_rng",
]


@dataclass(frozen=True)
class ParallelAnalysis:
    """What parallel analysis found (``KernelPCA(n_components='auto').parallel_analysis_``).

    Attributes
    ----------
    eigenvalues : ndarray of shape (k,)
        The ``k`` largest eigenvalues ``mu_l`` of the data's centred kernel matrix,
        descending (``k`` candidates: every one that was compared).
    null_eigenvalues : ndarray of shape (n_permutations, k)
        The same eigenvalues of each column-permuted copy.
    threshold : ndarray of shape (k,)
        Per component, the ``ceil(quantile * (n_permutations + 1))``-th smallest null
        eigenvalue (at most the largest).
    quantile : float
    n_permutations : int
    n_components : int
        Leading eigenvalues above their threshold (0: none; the estimator then keeps 1).
    trace : float
        ``trace(K~)`` of the data: ``eigenvalues / trace`` are explained variance ratios,
        and ``null_eigenvalues / trace`` are on the same scale.
    gamma : float
        The kernel coefficient used for the data and every null copy (resolved once,
        on the data).
    """

    eigenvalues: np.ndarray
    null_eigenvalues: np.ndarray
    threshold: np.ndarray
    quantile: float
    n_permutations: int
    n_components: int
    trace: float
    gamma: float

    def table(self) -> str:
        """The comparison as a Markdown table: component, eigenvalue, null threshold."""
        q = f"{100 * self.quantile:g} %"
        lines = [f"| component | eigenvalue | null {q} | kept |", "|---|---|---|---|"]
        for i, (mu, t) in enumerate(zip(self.eigenvalues, self.threshold, strict=True)):
            kept = "yes" if i < self.n_components else ""
            lines.append(f"| {i + 1} | {mu:.6g} | {t:.6g} | {kept} |")
        return "\n".join(lines) + "\n"


def check_parallel_analysis(n_permutations: Any, quantile: Any) -> tuple[int, float]:
    """``(n_permutations, quantile)`` checked: an integer >= 1 and a number in (0, 1)."""
    if (isinstance(n_permutations, bool) or not isinstance(n_permutations, Integral)
            or n_permutations < 1):
        raise ValueError(
            f"n_permutations must be an integer >= 1 (the column-permuted copies of the "
            f"data); got {n_permutations!r}.")
    if isinstance(quantile, bool) or not isinstance(quantile, Real) or not 0 < quantile < 1:
        raise ValueError(
            f"quantile must be a number in (0, 1) (e.g. 0.95: the null's 95th "
            f"percentile); got {quantile!r}.")
    return int(n_permutations), float(quantile)


def permutation_rng(seed: int, b: int) -> np.random.Generator:
    """The generator of null copy ``b``: ``numpy.random.default_rng([seed, b])``.

    One independent stream per copy: copy ``b`` is the same whatever the number of
    copies or the order they are computed in.
    """
    return np.random.default_rng([int(seed), int(b)])


def permute_columns(X: Any, rng: np.random.Generator) -> Any:
    """A copy of ``X`` with each column permuted independently.

    Column ``j`` (in order ``j = 0, 1, ...``) gets ``X[rng.permutation(n), j]``.
    Each column keeps its values (its mean, variance, distribution); the dependence
    between columns is destroyed. ``X`` is not modified.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    rng : numpy.random.Generator

    Returns
    -------
    ndarray or CSR matrix of shape (n, d)
    """
    n, d = X.shape
    if sp.issparse(X):
        C = sp.csc_matrix(X, copy=True)
        C.sort_indices()
        for j in range(d):
            perm = rng.permutation(n)
            # new[i, j] = old[perm[i], j]: the stored row r moves to inv[r] = i
            inv = np.empty(n, dtype=C.indices.dtype)
            inv[perm] = np.arange(n, dtype=C.indices.dtype)
            lo, hi = C.indptr[j], C.indptr[j + 1]
            C.indices[lo:hi] = inv[C.indices[lo:hi]]
        C.has_sorted_indices = False
        return C.tocsr()
    X = np.asarray(X)
    out = np.empty_like(X)
    for j in range(d):
        out[:, j] = X[rng.permutation(n), j]
    return out


def null_threshold(null: np.ndarray, quantile: float) -> np.ndarray:
    """Per column of ``null`` (shape ``(B, k)``), its ``ceil(quantile (B + 1))``-th
    smallest value, at most the largest.

    ``mu > threshold`` then says that fewer than ``(1 - quantile) (B + 1)`` of the
    ``B + 1`` values (the data's and the ``B`` copies') are at least ``mu``: the
    Monte-Carlo permutation test of level ``1 - quantile`` (level ``1 / (B + 1)``
    when ``B`` is too small for that: the threshold is then the null's maximum).
    """
    null = np.asarray(null, dtype=np.float64)
    B = null.shape[0]
    # the small slack keeps 0.95 * 20 = 19 from rounding up to 20
    r = min(B, max(1, math.ceil(quantile * (B + 1) - 1e-9)))
    return np.sort(null, axis=0)[r - 1]


def leading_above(values: np.ndarray, threshold: np.ndarray) -> int:
    """How many leading ``values`` exceed their ``threshold`` (up to the first that does
    not)."""
    above = np.asarray(values, dtype=np.float64) > np.asarray(threshold, dtype=np.float64)
    return int(above.size if above.all() else np.argmin(above))
