"""One result type for every eigensolver, and the post-processing they share."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np


@dataclass(frozen=True)
class EigenResult:
    """Top eigenpairs of a symmetric operator.

    Attributes
    ----------
    values : ndarray of shape (k,)
        Eigenvalues (descending after :func:`finalize`).
    vectors : ndarray of shape (n, k)
        Orthonormal eigenvectors in the same order.
    solver : str
        Name of the method that produced them.
    n_iter : int
        Iterations (restarts, power steps) the method used; 0 for dense.
    n_matvec : int
        Operator applications, counted in columns (``matmat`` of k columns = k).
    residuals : ndarray of shape (k,) or None
        ``||K v - mu v|| / |mu_1|`` for each pair, when the solver measured them.
    converged : bool
        Whether the stopping rule was met.
    """

    values: np.ndarray
    vectors: np.ndarray
    solver: str
    n_iter: int = 0
    n_matvec: int = 0
    residuals: np.ndarray | None = None
    converged: bool = True


def _thresholds(dtype: np.dtype) -> tuple[float, float, float]:
    """(significant negative ratio, significant negative value, small positive ratio).

    The same limits scikit-learn applies, so that results agree with it.
    """
    if np.dtype(dtype) == np.float32:
        return 5e-3, 1e-6, 2e-7
    return 1e-5, 1e-10, 1e-12


def _roundoff_ratio(values: np.ndarray, vectors: np.ndarray) -> float:
    """Eigenvalues up to this fraction of the largest are round-off of the solve itself.

    Every solver forms products ``K v`` (inner products of length n) and a small
    eigenproblem in the storage precision u. Their rounding errors act as a
    perturbation E of K with ``||E||_2 ~ sqrt(n) u ||K||_2`` (the probabilistic bound of
    inner products of length n, Higham & Mary 2019), so by Weyl's inequality an
    eigenvalue below ``sqrt(n) u mu_1`` cannot be told from 0 by any solver: the
    dense solver returns some of them as ~1.2 u mu_1, the randomized one as ~3.4 u mu_1
    (float32 data with duplicated rows, issue 33), and a component kept on such a value
    has ``v / sqrt(mu)`` dominated by noise (``transform(X)`` then differs from
    ``fit_transform(X)``). docs/math.md, "The eigenproblem".
    """
    kinds = [np.dtype(a.dtype) for a in (values, vectors) if np.dtype(a.dtype).kind == "f"]
    eps = max((float(np.finfo(d).eps) for d in kinds), default=float(np.finfo(float).eps))
    return float(np.sqrt(max(vectors.shape[0], 1))) * eps


def relative_residuals(op, values: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """``||K v_l - mu_l v_l|| / max|mu|`` for each column (one ``matmat``)."""
    R = op.matmat(vectors).astype(np.float64, copy=False) - vectors * values[None, :]
    scale = max(float(np.max(np.abs(values))), np.finfo(np.float64).tiny) if values.size else 1.0
    return np.linalg.norm(R, axis=0) / scale


def finalize(
    result: EigenResult,
    *,
    remove_zero: bool = False,
    drop_negative: bool = False,
    noise_floor: float = 0.0,
) -> EigenResult:
    """Shared post-processing of every solver's output.

    1. Non-finite eigenvalues raise (they mean a non-finite kernel matrix).
    2. Eigenvalues are checked as for a positive semi-definite matrix: if the
       smallest returned one is significantly negative, a ``ValueError`` is raised
       (or, with ``drop_negative``, those components are dropped with a warning);
       tiny negative and tiny positive values (round-off: below scikit-learn's ratios
       of the largest, or below ``sqrt(n) u`` of it, see :func:`_roundoff_ratio`) become
       exactly 0, whichever solver produced them.
    3. Signs: in each eigenvector the entry of largest magnitude is made positive
       (deterministic, and the rule scikit-learn uses).
    4. Pairs are sorted by descending eigenvalue.
    5. With ``remove_zero``, pairs whose eigenvalue is 0 are removed.

    Parameters
    ----------
    result : EigenResult
    remove_zero : bool
        Drop the null space (scikit-learn's ``remove_zero_eig``).
    drop_negative : bool
        Drop significantly negative eigenvalues instead of raising.
    noise_floor : float
        Eigenvalues with ``|mu| <= noise_floor`` are round-off of the matrix
        itself (e.g. ``n * eps * max K_ii`` for a centred kernel whose
        centring cancelled everything) and become exactly 0.
    """
    w = np.array(result.values, copy=True)
    V = np.array(result.vectors, copy=True)
    if not np.all(np.isfinite(w)):
        raise ValueError(
            "the eigensolver returned non-finite eigenvalues: the kernel matrix contains "
            "NaN or infinite values (check the kernel parameters, e.g. a large polynomial "
            "degree overflows)."
        )
    if noise_floor > 0:
        w[np.abs(w) <= noise_floor] = 0
    neg_ratio, neg_value, small_pos_ratio = _thresholds(w.dtype)
    max_eig = float(w.max()) if w.size else 0.0
    if w.size and max_eig <= 0 and np.any(w < -noise_floor):
        # (scikit-learn's message; with a maximum of 0 there is no positive eigenvalue to
        # measure the negative ones against either)
        what = "negative" if max_eig < 0 else "negative or zero"
        raise ValueError(
            f"All eigenvalues are {what} (maximum is {max_eig:g}). Either the matrix is not "
            "PSD, or there was an issue while computing the eigendecomposition of the matrix."
        )
    if w.size:
        min_eig = float(w.min())
        significant = (w < -neg_ratio * max_eig) & (w < -neg_value)
        if significant.any():
            msg = (
                f"There are significant negative eigenvalues ({-min_eig / max_eig:g} of the "
                "maximum positive). Either the matrix is not PSD, or there was an issue while "
                "computing the eigendecomposition of the matrix."
            )
            if not drop_negative:
                raise ValueError(
                    msg + f" Only {int(np.sum(w > 0))} of the {w.size} requested components have "
                    "a positive eigenvalue: ask for fewer components or use a positive "
                    "semi-definite kernel."
                )
            warnings.warn(msg + " Their components were dropped.", UserWarning, stacklevel=3)
            keep = ~significant
            w, V = w[keep], V[:, keep]
        w[w < 0] = 0
        w[(w > 0) & (w < small_pos_ratio * max_eig)] = 0
        w[(w > 0) & (w <= _roundoff_ratio(w, V) * max_eig)] = 0
    if V.shape[1]:
        rows = np.argmax(np.abs(V), axis=0)
        signs = np.sign(V[rows, np.arange(V.shape[1])])
        signs[signs == 0] = 1
        V *= signs[None, :]
    order = np.argsort(-w, kind="stable")
    w, V = w[order], V[:, order]
    residuals = result.residuals
    if residuals is not None and len(residuals) == len(order):
        residuals = residuals[order]
    elif residuals is not None:
        residuals = None
    if remove_zero:
        keep = w > 0
        w, V = w[keep], V[:, keep]
        if residuals is not None:
            residuals = residuals[keep]
    return replace(result, values=w, vectors=V, residuals=residuals)
