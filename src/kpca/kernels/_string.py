"""String kernels: the p-spectrum (substring) kernel (docs/math.md, "Kernels").

The p-spectrum kernel of two strings counts their common substrings of length
``p`` (p-grams):

    k(s, t) = sum_u c_u(s) c_u(t),

where ``c_u(s)`` is the number of occurrences of the p-gram ``u`` in ``s``
(overlapping occurrences count). With ``normalize=True`` it is divided by
``sqrt(k(s, s) k(t, t))`` (the cosine of the count vectors), so every string
has unit norm in feature space and long documents do not dominate.

Evaluation is sparse: each block of strings becomes a sparse count matrix
(rows: strings, columns: p-grams of a vocabulary) and a block of the kernel is
one sparse product ``C_s C_t^T``. The vocabulary comes from the *column* side
(the training strings): a p-gram that does not occur in the training strings
contributes ``0 * c_u(t) = 0`` to every cross kernel value, so it may be
dropped; the diagonal ``k(t, t)`` of a new string is computed from its own
counts (:meth:`Spectrum.diag`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from ._base import Kernel


def as_strings(X: Any) -> np.ndarray:
    """Validate a collection of strings as a 1-D numpy object array.

    Parameters
    ----------
    X : list, tuple, or 1-D array of str (also an (n, 1) array or a pandas Series)

    Returns
    -------
    ndarray of shape (n,), dtype object
        Supports row slicing ``X[a:b]`` and ``X.shape[0]`` as the operators need.

    Raises
    ------
    ValueError
        Not a 1-D collection of strings, or empty.
    """
    if isinstance(X, str):
        raise ValueError(
            "expected a collection of strings (one per sample); got a single string."
        )
    if hasattr(X, "to_numpy") and not isinstance(X, np.ndarray):  # pandas / polars
        X = X.to_numpy()
    arr = np.asarray(X, dtype=object) if not isinstance(X, np.ndarray) else X
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(
            f"a string kernel needs a 1-D collection of strings; got an array of shape "
            f"{arr.shape}."
        )
    if arr.shape[0] == 0:
        raise ValueError("Found array with 0 sample(s) (shape=(0,)) while a minimum of 1 "
                         "is required.")
    out = np.empty(arr.shape[0], dtype=object)
    for i, s in enumerate(arr.tolist()):
        if not isinstance(s, str):
            raise ValueError(
                f"a string kernel needs strings; item {i} is {type(s).__name__} ({s!r:.40})."
            )
        out[i] = s
    return out


#: multipliers of the polynomial p-gram hash (odd 64-bit constants); a second one is
#: tried if two different p-grams of the same strings ever share a hash value
_MULTIPLIERS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9)


@dataclass(frozen=True)
class PgramVocabulary:
    """The distinct p-grams of a set of strings.

    Attributes
    ----------
    keys : ndarray of uint64, shape (V,)
        Sorted 64-bit polynomial hashes of the p-grams (column ``j`` is ``keys[j]``).
    grams : ndarray of uint32, shape (V, p)
        The code points of each p-gram, used to verify every hash match, so the
        counts are exact even if two p-grams ever shared a hash value.
    multiplier : int
        The hash multiplier used.
    """

    keys: np.ndarray
    grams: np.ndarray
    multiplier: int

    def __len__(self) -> int:
        return int(self.keys.shape[0])


def _windows(strings: Sequence[str], p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Code points, start positions of every p-gram and the string each belongs to."""
    lens = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    text = "".join(strings)
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    codes = codes.astype(np.uint64)
    ng = np.maximum(lens - p + 1, 0)
    ends = np.cumsum(lens)
    # position of the i-th p-gram of string r: start_r + i
    first = np.repeat(ends - lens, ng)
    rank = np.arange(int(ng.sum()), dtype=np.int64) - np.repeat(np.cumsum(ng) - ng, ng)
    pos = first + rank
    rows = np.repeat(np.arange(len(lens), dtype=np.int64), ng)
    return codes, pos, rows


def _hash(codes: np.ndarray, pos: np.ndarray, p: int, multiplier: int) -> np.ndarray:
    key = np.zeros(pos.shape[0], dtype=np.uint64)
    m = np.uint64(multiplier)
    with np.errstate(over="ignore"):
        for i in range(p):  # Horner's rule, wrapping modulo 2**64
            key *= m
            key += codes[pos + i]
    return key


def _same(codes: np.ndarray, pos: np.ndarray, grams: np.ndarray) -> np.ndarray:
    ok = np.ones(pos.shape[0], dtype=bool)
    for i in range(grams.shape[1]):
        ok &= codes[pos + i] == grams[:, i]
    return ok


def pgram_counts(
    strings: Sequence[str], p: int, vocabulary: PgramVocabulary | None = None
) -> tuple[sp.csr_matrix, PgramVocabulary]:
    """Sparse matrix of p-gram counts, one row per string (vectorised, no Python loop
    over p-grams).

    Parameters
    ----------
    strings : sequence of str
    p : int
        Length of the substrings.
    vocabulary : PgramVocabulary, default=None
        Fixed vocabulary (columns); p-grams outside it are ignored. ``None``
        builds the vocabulary of ``strings``.

    Returns
    -------
    counts : csr_matrix of shape (n, len(vocabulary)), float64
        ``counts[r, j]`` is the number of (overlapping) occurrences of p-gram
        ``j`` in string ``r``.
    vocabulary : PgramVocabulary
    """
    n = len(strings)
    codes, pos, rows = _windows(strings, p)
    if vocabulary is None:
        for multiplier in _MULTIPLIERS:
            key = _hash(codes, pos, p, multiplier)
            uniq, first, cols = np.unique(key, return_index=True, return_inverse=True)
            grams = np.stack([codes[pos[first] + i] for i in range(p)], axis=1) if len(
                first) else np.zeros((0, p), dtype=np.uint64)
            if _same(codes, pos, grams[cols]).all():
                vocabulary = PgramVocabulary(uniq, grams.astype(np.uint32), multiplier)
                break
        else:  # pragma: no cover - needs three simultaneous 64-bit hash collisions
            raise RuntimeError("p-gram hashing failed: repeated hash collisions.")
    else:
        key = _hash(codes, pos, p, vocabulary.multiplier)
        V = len(vocabulary)
        cols = np.searchsorted(vocabulary.keys, key)
        found = cols < V
        found[found] = vocabulary.keys[cols[found]] == key[found]
        found[found] = _same(codes, pos[found], vocabulary.grams[cols[found]])
        rows, cols = rows[found], cols[found]
    C = sp.csr_matrix(
        (np.ones(rows.shape[0], dtype=np.float64), (rows, np.asarray(cols, dtype=np.int64))),
        shape=(n, len(vocabulary)),
    )
    C.sum_duplicates()  # repeated p-grams of a string become counts
    return C, vocabulary


def pgram_counts_lookup(
    vocab: PgramVocabulary, target: PgramVocabulary
) -> tuple[np.ndarray, np.ndarray]:
    """Column of each p-gram of ``vocab`` in ``target`` (-1 when absent).

    Returns
    -------
    ids : ndarray of int64, shape (len(vocab),)
    found : ndarray of bool, shape (len(vocab),)
    """
    if vocab.multiplier != target.multiplier:
        # rehash vocab's p-grams with the target's multiplier
        g = vocab.grams.astype(np.uint64)
        key = np.zeros(len(vocab), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for i in range(g.shape[1]):
                key *= np.uint64(target.multiplier)
                key += g[:, i]
    else:
        key = vocab.keys
    V = len(target)
    ids = np.searchsorted(target.keys, key).astype(np.int64)
    found = ids < V
    found[found] = target.keys[ids[found]] == key[found]
    found[found] = np.all(target.grams[ids[found]] == vocab.grams[found], axis=1)
    ids[~found] = -1
    return ids, found


def _product(A: sp.csr_matrix, B: sp.csr_matrix) -> np.ndarray:
    """Dense ``A @ B.T`` of two count matrices (dense BLAS when they are dense enough)."""
    cells = A.shape[0] * A.shape[1] + B.shape[0] * B.shape[1]
    if A.nnz + B.nnz > 0.05 * cells and cells <= 2**26:
        return A.toarray() @ B.toarray().T
    return np.asarray((A @ B.T).toarray(), dtype=np.float64)


class _SpectrumPrepared:
    """Column side of the spectrum kernel: vocabulary, counts and norms.

    It also remembers the array it was prepared from (``source``) with the counts
    of all its strings, so that row blocks of that same array (the tiles of a Gram
    matrix) are not counted again.
    """

    def __init__(self, counts: sp.csr_matrix, vocab: PgramVocabulary, norms: np.ndarray,
                 dtype: np.dtype, source: np.ndarray, all_counts: sp.csr_matrix,
                 all_norms: np.ndarray):
        self.counts = counts
        self.vocab = vocab
        self.norms = norms  # sqrt(k(y, y)) for each column string
        self.dtype = dtype
        self.shape = (counts.shape[0],)
        self.source = source
        self.all_counts = all_counts
        self.all_norms = all_norms

    def __getitem__(self, rows: slice) -> _SpectrumPrepared:
        return _SpectrumPrepared(self.counts[rows], self.vocab, self.norms[rows], self.dtype,
                                 self.source, self.all_counts, self.all_norms)

    def rows_of_source(self, X: Any) -> slice | None:
        """The slice of ``source`` that ``X`` is a view of, or None."""
        src = self.source
        if not (isinstance(X, np.ndarray) and X.ndim == 1 and X.dtype == object):
            return None
        if X.base is not (src if src.base is None else src.base) and X is not src:
            return None
        if X.strides != src.strides:
            return None
        delta = X.__array_interface__["data"][0] - src.__array_interface__["data"][0]
        start, rem = divmod(delta, src.itemsize)
        if rem or start < 0 or start + X.shape[0] > src.shape[0]:
            return None
        return slice(start, start + X.shape[0])


def _inverse(norms: np.ndarray) -> np.ndarray:
    out = np.zeros_like(norms)
    np.divide(1.0, norms, out=out, where=norms > 0)
    return out


def _row_sq(C: sp.csr_matrix) -> np.ndarray:
    return np.asarray(C.multiply(C).sum(axis=1), dtype=np.float64).ravel()


class Spectrum(Kernel):
    """p-spectrum (substring) kernel for strings: ``k(s, t) = sum_u c_u(s) c_u(t)``.

    Parameters
    ----------
    p : int, default=3
        Length of the substrings (p-grams) that are counted.
    normalize : bool, default=True
        Divide by ``sqrt(k(s, s) k(t, t))``. A string shorter than ``p`` has no
        p-gram: its (normalised) kernel value with every string, itself
        included, is 0.

    Notes
    -----
    Use it as ``KernelPCA(kernel="spectrum")`` (or ``kernel=Spectrum(p=4)``) on
    a list or 1-D array of strings. The kernel is positive semi-definite (an
    inner product of count vectors). Counting is case sensitive and keeps every
    character; normalise the text first if that is not wanted.

    Examples
    --------
    >>> from kpca.kernels import Spectrum
    >>> Spectrum(p=2, normalize=False)(["abab"], ["ab"])
    array([[2.]])
    """

    name = "spectrum"
    requires_vectors: ClassVar[bool] = False

    def __init__(self, p: int = 3, normalize: bool = True):
        self.p = p
        self.normalize = normalize

    def _p(self) -> int:
        p = self.p
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
            raise ValueError(f"spectrum kernel: p must be an integer >= 1; got {p!r}.")
        return int(p)

    def check_input(self, X: Any) -> None:
        self._p()

    def prepare(self, Y: Any, dtype: Any = None) -> _SpectrumPrepared:
        Y = Y if isinstance(Y, np.ndarray) and Y.ndim == 1 and Y.dtype == object else (
            as_strings(Y))
        C, vocab = pgram_counts(Y, self._p())
        norms = np.sqrt(_row_sq(C))
        return _SpectrumPrepared(C, vocab, norms, np.dtype(dtype or np.float64), Y, C, norms)

    def block_prepared(self, X: Any, prep: Any, out: np.ndarray | None = None) -> np.ndarray:
        if not isinstance(prep, _SpectrumPrepared):
            prep = self.prepare(prep)
        rows = prep.rows_of_source(X)
        if rows is not None:  # a block of the prepared strings: counted already
            Cx, x_norms = prep.all_counts[rows], prep.all_norms[rows]
        else:
            # count X once with its own vocabulary (gives k(x, x)), then map its p-grams
            # to the columns of prep's vocabulary; p-grams prep does not have contribute 0
            Cx, vx = pgram_counts(as_strings(X), self._p())
            x_norms = np.sqrt(_row_sq(Cx))
            ids, _ = pgram_counts_lookup(vx, prep.vocab)
            keep = ids >= 0
            P = sp.csr_matrix(
                (np.ones(int(keep.sum())), (np.flatnonzero(keep), ids[keep])),
                shape=(len(vx), len(prep.vocab)),
            )
            Cx = Cx @ P
        K = _product(Cx, prep.counts)
        if self.normalize:
            K *= _inverse(x_norms)[:, None]
            K *= _inverse(prep.norms)[None, :]
        K = K.astype(prep.dtype, copy=False)
        if out is None:
            return K
        out[...] = K
        return out

    def _block(self, X: Any, Y: Any, symmetric: bool) -> np.ndarray:
        prep = self.prepare(Y)
        K = self.block_prepared(X, prep)
        if symmetric and self.normalize:
            np.fill_diagonal(K, (prep.norms > 0).astype(K.dtype))
        return K

    def diag(self, X: Any, xp: Any = None) -> np.ndarray:
        X = as_strings(X)
        if self.normalize:  # 1, or 0 for a string without any p-gram
            lens = np.fromiter(map(len, X), dtype=np.int64, count=X.shape[0])
            return (lens >= self._p()).astype(np.float64)
        return _row_sq(pgram_counts(X, self._p())[0])
