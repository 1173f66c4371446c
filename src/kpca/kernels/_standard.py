"""The standard kernels (docs/math.md, "Kernels"), vectorised over blocks."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable as CallableT
from collections.abc import Mapping
from numbers import Real
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.metrics.pairwise import manhattan_distances, pairwise_kernels
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    validate_parameter_constraints,
)
from sklearn.utils.extmath import row_norms

from .. import _native
from .._array_api import device_namespace, from_host, to_host
from .._config import get_config
from ._base import Kernel, _float_dtype, dot_block, on_host, sq_euclidean_block
from ._gamma import check_gamma, resolve_gamma

#: the optional compiled RBF block (or None)
_rbfexp_ext = _native.optional(f"{__package__}._rbfexp")

logger = logging.getLogger("kpca")

#: the variant of the compiled RBF block that runs (:mod:`kpca._native`: the best this
#: CPU runs, or the one ``KPCA_NATIVE`` names)
NATIVE_RBF_VARIANT = _native.select(_rbfexp_ext, "RBF block", _native.REQUEST)
#: its functions (``block``, ``pack_panels``), or None: NumPy's product and exp
_rbfexp = NATIVE_RBF_VARIANT.functions
#: whether float32 RBF blocks use the compiled one-sweep evaluation (exponent and
#: exponential register by register, :func:`_native_rbf`)
NATIVE_RBF = _rbfexp is not None
# the compiled block's limits (most features; rows from which a block packs its
# columns) are the settings native_rbf_max_features and native_rbf_pack_rows
# (kpca._config), read when the columns are prepared


#: the valid values of the named kernels' ``degree`` and ``coef0``, wherever they are
#: given: as estimator parameters (kpca._base.kernel_parameters declares these), in
#: ``kernel_params`` or to a kernel object; ``gamma`` has :func:`check_gamma`
KERNEL_PARAMETER_CONSTRAINTS: dict[str, list] = {
    "degree": [Interval(Real, 0, np.inf, closed="left")],
    "coef0": [Interval(Real, -np.inf, np.inf, closed="neither")],
}
#: make_kernel's (and every estimator's) defaults of the named kernels' parameters
_DEFAULTS: dict[str, Any] = {"gamma": None, "degree": 3, "coef0": 1.0}


def check_kernel_parameters(params: Mapping[str, Any], owner: str, kernel: str) -> None:
    """Check the ``gamma``, ``degree`` and ``coef0`` in ``params`` (other keys are not
    looked at) as the estimators check their parameters of these names.

    Parameters
    ----------
    params : mapping
        Parameter names and values.
    owner : str
        Who takes them, for the message (``'kernel_params'``, ``'Polynomial'``, ...).
    kernel : str
        The kernel's name, for the message of ``gamma=0``.

    Raises
    ------
    ValueError
        Naming the parameter and its valid values (scikit-learn's
        ``InvalidParameterError`` for ``degree`` and ``coef0``).
    """
    numeric = {k: params[k] for k in KERNEL_PARAMETER_CONSTRAINTS if k in params}
    for key, value in numeric.items():
        if isinstance(value, (bool, np.bool_)):  # an Interval of Real takes True for 1
            raise InvalidParameterError(
                f"The {key!r} parameter of {owner} must not be a bool; got {value!r}.")
    validate_parameter_constraints(KERNEL_PARAMETER_CONSTRAINTS, numeric, caller_name=owner)
    if "gamma" in params:
        check_gamma(params["gamma"], f"The 'gamma' parameter of {owner}", kernel)


class _GammaMixin:
    """Resolution of ``gamma`` shared by the kernels that have one."""

    _gamma_metric: ClassVar[str] = "sqeuclidean"

    def check_parameters(self) -> None:
        check_kernel_parameters(self.get_params(deep=False),  # type: ignore[attr-defined]
                                type(self).__name__, self.name)  # type: ignore[attr-defined]

    def resolve(self, X: Any, random_state: Any = None) -> Kernel:
        self.check_parameters()
        g = resolve_gamma(
            self.gamma,  # type: ignore[attr-defined]
            X,
            metric=self._gamma_metric,
            random_state=random_state,
        )
        return self._copy(gamma=g)  # type: ignore[attr-defined]

    def gamma_value(self) -> float:
        """``gamma`` as a number; a ``ValueError`` while it is data-dependent (``None``,
        ``'scale'``, ``'median'``: :meth:`resolve` fixes it)."""
        if self.gamma is None or isinstance(self.gamma, str):  # type: ignore[attr-defined]
            raise ValueError(
                f"{type(self).__name__}.gamma={self.gamma!r} is data-dependent; "  # type: ignore[attr-defined]
                "call resolve(X) first or give a number."
            )
        return float(self.gamma)  # type: ignore[attr-defined]


class Linear(Kernel):
    """Linear kernel ``k(x, y) = <x, y>``; KPCA with it is ordinary PCA."""

    name = "linear"

    def block(self, X, Y=None, xp=None):
        if on_host(xp):
            return super().block(X, Y)
        return _xp_dot(xp, X, X if Y is None else Y)

    def _block(self, X, Y, symmetric):
        return dot_block(X, Y)

    def diag(self, X, xp=None):
        if on_host(xp):
            return row_norms(X, squared=True).astype(_float_dtype(X), copy=False)
        return xp.sum(X * X, axis=1)

    def rank_bound(self, n_features: int) -> int:
        return n_features


class Polynomial(_GammaMixin, Kernel):
    """Polynomial kernel ``k(x, y) = (gamma <x, y> + coef0) ** degree``."""

    name = "poly"
    _gamma_metric = "dot"

    def __init__(self, gamma: float | str | None = None, degree: float = 3, coef0: float = 1.0):
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0

    def block(self, X, Y=None, xp=None):
        if on_host(xp):
            return super().block(X, Y)
        return (self.gamma_value() * _xp_dot(xp, X, X if Y is None else Y)
                + self.coef0) ** self.degree

    def _block(self, X, Y, symmetric):
        K = dot_block(X, Y)
        K *= self.gamma_value()
        K += self.coef0
        # an overflow to inf is reported by the callers as a clear error (the kernel
        # values are checked), not as NumPy's RuntimeWarning
        with np.errstate(over="ignore"):
            np.power(K, self.degree, out=K)
        if float(self.degree) != int(self.degree) and np.isnan(K).any():
            raise ValueError(
                f"poly kernel: degree={self.degree} is not an integer and "
                "gamma*<x, y> + coef0 is negative for some pairs, which gives NaN; "
                "use an integer degree or a larger coef0."
            )
        return K

    def diag(self, X, xp=None):
        if not on_host(xp):
            return (self.gamma_value() * xp.sum(X * X, axis=1) + self.coef0) ** self.degree
        d = Linear().diag(X) * self.gamma_value() + self.coef0
        return np.power(d, self.degree).astype(_float_dtype(X), copy=False)


class RBFPrepared:
    """Column-side state of the RBF kernel: ``[2 g (y - c), -g ||y - c||^2, -g]``.

    What :meth:`RBF.prepare` returns (``aug``, shape (m, d + 2), in the block's dtype);
    a slice ``prep[j0:j1]`` is the state of those columns. Compiled loops outside the
    kernels (the tiled operator's passes, the fused ``transform``) read ``aug`` and
    :meth:`panels` where :meth:`compiled` holds.

    With the row side ``[x - c, 1, ||x - c||^2]`` one matrix product gives the
    exponent ``-g ||x - y||^2`` directly (no separate norm passes over the block).
    Shifting by the common centre ``c`` (float64, subtracted before any cast to
    float32) keeps the expansion accurate in float32.

    The compiled block reads the columns in panels of 16 (:meth:`pack`); they are
    made once, on the first block of enough rows, by the prepared columns a slice
    comes from (its ``root``), and shared by every slice that starts on a panel.
    """

    def __init__(self, centre: np.ndarray, aug: np.ndarray, gamma: float,
                 g_sq_max: float | None = None, root: RBFPrepared | None = None,
                 offset: int = 0, limits: tuple[int, int] | None = None):
        self.centre = centre
        self.aug = aug
        self.gamma = gamma
        self.dtype = aug.dtype
        self.shape = (aug.shape[0], aug.shape[1] - 2)
        # g max ||y - c||^2 over the prepared rows (a slice keeps its parent's: an
        # upper bound), for the round-off bound of prepare_rows
        self.g_sq_max = (float(-aug[:, -2].min(initial=0.0)) if g_sq_max is None
                         else g_sq_max)
        # a contiguous slice keeps the prepared columns it comes from and its first
        # column there, to share their panels; anything else is its own root
        self._root = self if root is None else root
        self._offset = offset
        self._panels: np.ndarray | None = None  # on a root only
        # (native_rbf_max_features, native_rbf_pack_rows), read once here, not per block
        if limits is None:
            cfg = get_config()
            limits = (cfg["native_rbf_max_features"], cfg["native_rbf_pack_rows"])
        self.limits = limits

    def __getstate__(self) -> dict:
        # the panels are a cache of aug, as large as it: not shipped (to Dask
        # workers, which may lack the kernel), nor a slice's root
        return {**self.__dict__, "_panels": None, "_root": None, "_offset": 0}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._root = self
        if "limits" not in state:  # pickled by a kpca whose limits were constants
            cfg = get_config()
            self.limits = (cfg["native_rbf_max_features"], cfg["native_rbf_pack_rows"])

    def __getitem__(self, rows) -> RBFPrepared:
        if isinstance(rows, slice):
            start, _, step = rows.indices(len(self.aug))
            if step == 1:
                return RBFPrepared(self.centre, self.aug[rows], self.gamma, self.g_sq_max,
                                    self._root, self._offset + start, self.limits)
        return RBFPrepared(self.centre, self.aug[rows], self.gamma, self.g_sq_max,
                            limits=self.limits)

    def pack(self) -> None:
        """Make the root's panels (:data:`NATIVE_RBF`, float32, few enough features),
        once: ``pack_panels`` of all its columns (18 us of a 146 us block of
        128 x 2,048 when each block packed its own). Two threads may both make them
        on a first call; either result is the same."""
        root = self._root
        if root._panels is None and NATIVE_RBF and root.aug.dtype == np.float32 and (
                _native_width(root.aug, root.limits[0]) and root.aug.flags.c_contiguous):
            panels = np.empty((-(-len(root.aug) // 16), root.aug.shape[1], 16), np.float32)
            _rbfexp.pack_panels(root.aug, panels)
            root._panels = panels

    def compiled(self) -> bool:
        """Whether kpca's compiled RBF loops read these columns: float32, with at most
        the setting ``native_rbf_max_features`` features (read when they were
        prepared)."""
        return self.aug.dtype == np.float32 and _native_width(self.aug, self.limits[0])

    def panels(self) -> np.ndarray | None:
        """This slice's columns in panels of 16 (a view of the root's), or None: not
        packed yet, or the slice does not start on a panel. Its last panel may hold
        the root's next columns: the kernel stores only ``out``'s columns."""
        panels = self._root._panels
        if panels is None or self._offset % 16 or not len(self.aug):
            return None
        return panels[self._offset // 16 : -(-(self._offset + len(self.aug)) // 16)]

    def rows_side(self, X) -> np.ndarray:
        # shift before casting: float32 cannot resolve the spread of data that sit
        # far from the origin (at 1000 its spacing is 6e-5), the shifted data it can
        X = np.asarray(X)
        Xc = (X - self.centre.astype(X.dtype)).astype(self.dtype, copy=False)
        xx = np.einsum("ij,ij->i", Xc, Xc)
        return np.ascontiguousarray(
            np.hstack([Xc, np.ones((Xc.shape[0], 1), self.dtype), xx[:, None]]))


class RBFRows:
    """Row-side state of the RBF kernel, ``[x - c, 1, ||x - c||^2]`` (see
    :class:`RBFPrepared`), for rows evaluated again and again against the same
    prepared columns (an operator's passes), and whether the exponent must be
    clamped at 0 (``clamp``): what :meth:`RBF.prepare_rows` returns (``aug``, shape
    (m, d + 2))."""

    def __init__(self, aug: np.ndarray, clamp: bool):
        self.aug = aug
        self.clamp = clamp
        self.shape = (aug.shape[0], aug.shape[1] - 2)

    def __getitem__(self, rows) -> RBFRows:
        return RBFRows(self.aug[rows], self.clamp)


# the largest round-off of an RBF exponent above 0 for which prepared rows skip the
# clamp at 0 is the setting rbf_clamp_free_error (a worst-case allowance: on data near
# their centre the bound is ~1e-5 in float32)


class RBF(_GammaMixin, Kernel):
    """Gaussian (RBF) kernel ``k(x, y) = exp(-gamma ||x - y||^2)``, gamma = 1/(2 sigma^2)."""

    name = "rbf"
    constant_diag = 1.0

    def __init__(self, gamma: float | str | None = None):
        self.gamma = gamma

    def prepare(self, Y, dtype=None):
        if sp.issparse(Y):
            return Y
        Y = np.asarray(Y)
        dtype = np.dtype(dtype or _float_dtype(Y))
        g = self.gamma_value()
        centre = Y.mean(axis=0, dtype=np.float64)  # kept in float64: see rows_side
        Yc = (Y - centre.astype(Y.dtype)).astype(dtype, copy=False)
        yy = np.einsum("ij,ij->i", Yc, Yc)
        aug = np.hstack([(2 * g) * Yc, (-g * yy)[:, None], np.full((len(Yc), 1), -g, dtype)])
        # C order whatever the data's (np.hstack keeps Fortran order): blocks read it
        # row by row, and the compiled kernel needs it
        return RBFPrepared(centre, np.ascontiguousarray(aug, dtype=dtype), g)

    def prepare_rows(self, X, prep):
        """Rows prepared once (recomputed for each piece, their side cost ~7 % of an
        evaluation), and the clamp of the exponent at 0 skipped (~14 %: measured
        together, a matrix-free pass at 40,000 rows 0.84 s against 0.99-1.01 s;
        docs/benchmarks.md, issue 17) where round-off cannot lift it above
        the setting ``rbf_clamp_free_error``.

        The bound: the product ``q . k`` of the rows' ``q = [x', 1, |x'|^2]`` and the
        columns' ``k = [2 g y', -g |y'|^2, -g]`` (``'``: shifted by the centre) errs
        by at most ``(d + 2) eps sum |q_i k_i| <= 2 (d + 2) eps g (|x'|^2 + |y'|^2)``,
        doubled here for the rounding of the inputs.
        """
        if not isinstance(prep, RBFPrepared) or sp.issparse(X):
            return X
        aug = prep.rows_side(X)
        d = aug.shape[1] - 2
        g_rows = prep.gamma * float(aug[:, d + 1].max(initial=0.0))
        error = 4 * (d + 2) * np.finfo(aug.dtype).eps * (g_rows + prep.g_sq_max)
        return RBFRows(aug, clamp=not error <= get_config()["rbf_clamp_free_error"])

    def block_prepared(self, X, prep, out=None):
        if not isinstance(X, RBFRows):
            if not isinstance(prep, RBFPrepared) or sp.issparse(X):
                return super().block_prepared(X, prep, out)
            # rows used once: clamped, as round-off can make -g||x - y||^2 positive
            X = RBFRows(prep.rows_side(X), clamp=True)
        if NATIVE_RBF and _native_rbf(X.aug, prep.aug, out, prep.limits[0]):
            if _native.blas_products(_rbfexp):
                # the portable variant where the CPU runs a wider one: the exponents
                # by BLAS, the exponential in C (kpca._native.blas_products); no panels
                if out is None:
                    out = np.empty((X.aug.shape[0], prep.aug.shape[0]), np.float32)
                _rbfexp.block(X.aug, prep.aug, X.clamp, out, _native.sgemm())
                return out
            if len(X.aug) >= prep.limits[1]:
                prep.pack()
            panels = prep.panels()
            # a block of few rows does not pay for packing its columns: NumPy's
            if panels is not None or len(X.aug) >= prep.limits[1]:
                if out is None:
                    out = np.empty((X.aug.shape[0], prep.aug.shape[0]), np.float32)
                _rbfexp.block(X.aug, prep.aug if panels is None else panels, X.clamp, out)
                return out
        out = np.matmul(X.aug, prep.aug.T, out=out)
        if X.clamp:
            np.minimum(out, 0, out=out)
        np.exp(out, out=out)
        return out

    def block(self, X, Y=None, xp=None):
        if on_host(xp):
            return super().block(X, Y)
        Y = X if Y is None else Y
        # shifted by Y's mean before the expansion ||x||^2 + ||y||^2 - 2<x, y>, as the
        # NumPy block is, so that float32 resolves data far from the origin
        g = self.gamma_value()
        c = xp.mean(Y, axis=0)
        Xc, Yc = X - c, Y - c
        D = _xp_dot(xp, Xc, Yc)  # in-place updates: one (m, n) temporary besides the result
        D *= 2.0 * g
        D -= g * xp.sum(Xc * Xc, axis=1)[:, None]
        D -= g * xp.sum(Yc * Yc, axis=1)[None, :]
        return xp.exp(xp.clip(D, max=0.0))

    def _block(self, X, Y, symmetric):
        if sp.issparse(X) or sp.issparse(Y):
            K = sq_euclidean_block(X, Y, symmetric)
            K *= -self.gamma_value()
            np.exp(K, out=K)
            return K
        K = self.block_prepared(X, self.prepare(Y, _float_dtype(X, Y)))
        if symmetric:
            np.fill_diagonal(K, 1.0)
        return K


def _native_rbf(rows: np.ndarray, cols: np.ndarray, out: np.ndarray | None,
                max_features: int) -> bool:
    """Whether the compiled kernel makes this RBF block: float32 rows, columns and
    output, each C-contiguous, ``out`` (if given) of the block's shape, at most
    ``max_features`` features (the setting ``native_rbf_max_features``; anything
    else: NumPy's product and ``exp``, which also raise for a wrong ``out``).

    It computes each 16 exponents in registers, exponentiates and stores them once,
    where NumPy writes the exponents and rereads them (and its BLAS product, with an
    inner dimension of only d + 2, runs far below its peak): a 128 x 2,048 block at
    d = 20 in 128 us (its columns packed once; 146 us packing them) against 264 us on
    one core of this project's machine, as accurate (exp within 2 ulp).

    Parameters
    ----------
    rows : ndarray of shape (m, d + 2)
        The rows prepared (``RBFRows.aug``).
    cols : ndarray of shape (c, d + 2)
        The columns prepared (``RBFPrepared.aug``).
    out : ndarray of shape (m, c) or None
    """
    return (rows.dtype == np.float32 and cols.dtype == np.float32
            and _native_width(rows, max_features)
            and rows.flags.c_contiguous and cols.flags.c_contiguous
            and (out is None or (out.dtype == np.float32 and out.flags.c_contiguous
                                 and out.shape == (rows.shape[0], cols.shape[0]))))


def _native_width(aug: np.ndarray, max_features: int) -> bool:
    """Whether prepared rows or columns (d + 2 of them) have at most ``max_features``
    features, for the compiled block."""
    return aug.shape[1] <= max_features + 2


class Laplacian(_GammaMixin, Kernel):
    """Laplacian kernel ``k(x, y) = exp(-gamma ||x - y||_1)``."""

    name = "laplacian"
    constant_diag = 1.0
    _gamma_metric = "cityblock"

    def __init__(self, gamma: float | str | None = None):
        self.gamma = gamma

    def block(self, X, Y=None, xp=None):
        if on_host(xp):
            return super().block(X, Y)
        Y = X if Y is None else Y
        D = xp.zeros((X.shape[0], Y.shape[0]), dtype=X.dtype, device=X.device)
        for j in range(X.shape[1]):  # one feature at a time: no (m, n, d) temporary
            D = D + xp.abs(X[:, j][:, None] - Y[:, j][None, :])
        return xp.exp(-self.gamma_value() * D)

    def _block(self, X, Y, symmetric):
        K = np.asarray(
            manhattan_distances(_int32_indices(X), _int32_indices(Y)), dtype=_float_dtype(X, Y)
        )
        K *= -self.gamma_value()
        np.exp(K, out=K)
        return K


def _int32_indices(X):
    """scikit-learn's sparse L1 distances need 32-bit indices; convert when they fit."""
    if sp.issparse(X) and X.indices.dtype != np.int32 and X.nnz < 2**31 - 1:
        X = sp.csr_matrix(X)
        X = sp.csr_matrix(
            (X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape
        )
    return X


class Sigmoid(_GammaMixin, Kernel):
    """Sigmoid kernel ``k(x, y) = tanh(gamma <x, y> + coef0)``.

    Not positive semi-definite in general: the eigenvalue post-processing of
    :mod:`kpca.solvers` reports or rejects the negative part of its spectrum.
    """

    name = "sigmoid"
    _gamma_metric = "dot"

    def __init__(self, gamma: float | str | None = None, coef0: float = 1.0):
        self.gamma = gamma
        self.coef0 = coef0

    def block(self, X, Y=None, xp=None):
        if on_host(xp):
            return super().block(X, Y)
        return xp.tanh(self.gamma_value() * _xp_dot(xp, X, X if Y is None else Y)
                       + self.coef0)

    def _block(self, X, Y, symmetric):
        K = dot_block(X, Y)
        K *= self.gamma_value()
        K += self.coef0
        np.tanh(K, out=K)
        return K

    def diag(self, X, xp=None):
        if not on_host(xp):
            return xp.tanh(self.gamma_value() * xp.sum(X * X, axis=1) + self.coef0)
        d = np.tanh(Linear().diag(X) * self.gamma_value() + self.coef0)
        return d.astype(_float_dtype(X), copy=False)


class Cosine(Kernel):
    """Cosine kernel ``k(x, y) = <x, y> / (||x|| ||y||)``.

    A zero vector has no direction: by definition its kernel value with every
    object, itself included, is 0 (as in scikit-learn's ``cosine_similarity``).
    """

    name = "cosine"

    def block(self, X, Y=None, xp=None):
        if on_host(xp):
            return super().block(X, Y)
        Y = X if Y is None else Y
        return (_xp_dot(xp, X, Y) * _xp_inv_norms(xp, X)[:, None]
                * _xp_inv_norms(xp, Y)[None, :])

    def _block(self, X, Y, symmetric):
        K = dot_block(X, Y)
        nx = _safe_inv_norm(X)
        ny = nx if symmetric else _safe_inv_norm(Y)
        K *= nx[:, None]
        K *= ny[None, :]
        return K

    def diag(self, X, xp=None):
        if not on_host(xp):
            return xp.astype(xp.sum(X * X, axis=1) > 0, X.dtype)
        return (row_norms(X) > 0).astype(_float_dtype(X))


def _xp_dot(xp, X, Y):
    """``X @ Y.T`` in namespace ``xp``."""
    return X @ xp.matrix_transpose(Y)


def _xp_inv_norms(xp, X):
    """``1 / ||x||`` per row in namespace ``xp``, 0 for a zero row."""
    norms = xp.sqrt(xp.sum(X * X, axis=1))
    safe = xp.where(norms > 0, norms, xp.ones_like(norms))
    return xp.where(norms > 0, 1.0 / safe, xp.zeros_like(norms))


def _safe_inv_norm(X):
    norms = row_norms(X).astype(_float_dtype(X), copy=False)
    out = np.zeros_like(norms)
    np.divide(1, norms, out=out, where=norms > 0)
    return out


class Anova(_GammaMixin, Kernel):
    """ANOVA (additive RBF) kernel ``k(x, y) = sum_j beta_j exp(-gamma (x_j - y_j)^2)``.

    Parameters
    ----------
    gamma : float, None, 'scale' or 'median'
    beta : array-like of shape (n_features,), default=None
        Non-negative weight of each input variable; ``None`` means equal weights
        of unit Euclidean norm, ``1 / sqrt(n_features)`` (docs/math.md, "ANOVA KPCA").
    """

    name = "anova"
    _gamma_metric = "coordinate"
    n_temporaries = 1

    def __init__(self, gamma: float | str | None = None, beta: Any = None):
        self.gamma = gamma
        self.beta = beta

    def weights(self, n_features: int) -> np.ndarray:
        """The weight of each input variable: ``beta``, or the equal weights of unit
        Euclidean norm where it is ``None``.

        Parameters
        ----------
        n_features : int
            Number of input variables ``p``.

        Returns
        -------
        ndarray of shape (n_features,), float64

        Raises
        ------
        ValueError
            If ``beta`` is not ``n_features`` non-negative finite numbers.
        """
        d = n_features
        if self.beta is None:
            return np.full(d, 1.0 / np.sqrt(d))
        beta = np.array(self.beta, dtype=np.float64).ravel()  # a copy: the caller may write it
        if beta.shape != (d,) or np.any(beta < 0) or not np.all(np.isfinite(beta)):
            raise ValueError(
                f"anova kernel: beta must be {d} non-negative finite weights (one per "
                f"input variable); got shape {beta.shape}."
            )
        return beta

    def check_input(self, X):
        self.weights(X.shape[1])

    def block(self, X, Y=None, xp=None):
        if on_host(xp):
            return super().block(X, Y)
        Y = X if Y is None else Y
        beta, g = self.weights(X.shape[1]), self.gamma_value()
        K = xp.zeros((X.shape[0], Y.shape[0]), dtype=X.dtype, device=X.device)
        for j in np.flatnonzero(beta):  # one pass per variable; zero weights cost nothing
            T = X[:, int(j)][:, None] - Y[:, int(j)][None, :]
            K = K + float(beta[j]) * xp.exp(-g * (T * T))
        return K

    def _block(self, X, Y, symmetric):
        dtype = _float_dtype(X, Y)
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        Y = Y.toarray() if sp.issparse(Y) else np.asarray(Y)
        beta = self.weights(X.shape[1]).astype(dtype)
        g = dtype.type(-self.gamma_value())
        K = np.zeros((X.shape[0], Y.shape[0]), dtype=dtype)
        T = np.empty_like(K)
        for j in np.flatnonzero(beta):  # one pass per variable; zero weights cost nothing
            np.subtract(X[:, j, None], Y[None, :, j], out=T)
            np.square(T, out=T)
            T *= g
            np.exp(T, out=T)
            T *= beta[j]
            K += T
        return K

    def diag(self, X, xp=None):
        total = float(self.weights(X.shape[1]).sum())
        if not on_host(xp):
            return xp.full(X.shape[0], total, dtype=X.dtype, device=X.device)
        return np.full(X.shape[0], total, dtype=_float_dtype(X))

    def term_traces(self, X: Any, V: np.ndarray, xp: Any = None,
                    budget_bytes: int | None = None) -> np.ndarray:
        """``a_j = trace(V^T K_j V)`` for each variable's term
        ``K_j = exp(-gamma (x_j - y_j)^2)`` of the kernel, unweighted (docs/math.md,
        "ANOVA KPCA"): the data of the ANOVA weight update, where ``V`` are the
        centred eigenvectors ``H V`` (so that ``a_j = trace(V^T H K_j H V)``).

        Each ``K_j`` is evaluated in blocks and never stored. On the host (NumPy
        or SciPy sparse ``X``), blocks of rows of one variable take at most the
        setting ``anova_block_bytes`` (and ``budget_bytes``). On a device (``X`` an
        Array API array, or ``xp`` its namespace), tiles of (variables, rows, n)
        float64 terms are made and multiplied by ``V`` there: a tile takes at most
        an eighth of ``budget_bytes`` (with its exponential, a quarter: the device
        operator's tiles' share) and at most the setting ``device_tile_bytes``; the
        p sums stay on the device, so the only traffic is ``V`` going in and the p
        terms coming back. Both paths sum in float64 whatever ``X``'s dtype
        (``beta`` moves by about the terms' relative error: float32 terms would
        move it by about the default ``beta_tol`` of AnovaKernelPCA).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n, p), or Array API array
            The rows the eigenvectors belong to.
        V : ndarray of shape (n, k)
            The vectors (NumPy).
        xp : namespace, default=None
            ``X``'s Array API namespace; None: found from ``X`` (NumPy: the host).
        budget_bytes : int, default=None
            Bytes the evaluation may use; None: only the settings bound it.

        Returns
        -------
        ndarray of shape (p,), float64
        """
        if xp is None:
            xp = device_namespace(X)
        if not on_host(xp):
            return self._device_term_traces(X, V, xp, budget_bytes)
        X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        V = np.asarray(V, dtype=np.float64)
        n, p = X.shape
        g = self.gamma_value()
        cap = get_config()["anova_block_bytes"]
        cap = cap if budget_bytes is None else min(cap, budget_bytes)
        rows = max(1, cap // (8 * max(1, n)))
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

    def _device_term_traces(self, X: Any, V: np.ndarray, xp: Any,
                            budget_bytes: int | None) -> np.ndarray:
        """:meth:`term_traces` on the device of ``X`` (namespace ``xp``)."""
        n, p = X.shape
        Xt = xp.permute_dims(xp.astype(X, xp.float64), (1, 0))  # (p, n): a variable's values
        Vd = from_host(np.asarray(V, dtype=np.float64), xp, X.device)
        share = get_config()["device_tile_bytes"]
        share = share if budget_bytes is None else min(share, budget_bytes // 8)
        tile = max(1, share // 8)  # values
        rows = max(1, min(n, tile // max(1, n)))
        per = max(1, min(p, tile // max(1, rows * n)))  # variables of one tile
        g = -self.gamma_value()
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


class Precomputed(Kernel):
    """The user passes the kernel matrix itself: rows of ``K`` (train) or ``K_t`` (test)."""

    name = "precomputed"
    requires_vectors = False

    def _block(self, X, Y, symmetric):
        if not symmetric:
            raise ValueError(
                "a precomputed kernel cannot be evaluated between two sets of objects; "
                "pass the kernel matrix between them instead."
            )
        K = X.toarray() if sp.issparse(X) else X
        return np.array(K, dtype=_float_dtype(X), copy=True)

    def diag(self, X, xp=None):
        return np.asarray(X.diagonal()).astype(_float_dtype(X))

    def block_bytes(self, n1, n2, dtype=np.float64):
        return 0


class Callable(Kernel):
    """A user function as a kernel.

    Parameters
    ----------
    func : callable
        Either vectorised, ``func(X, Y, **params) -> (n1, n2) array``, or per pair,
        ``func(x, y, **params) -> float`` with 1-D rows.
    params : dict, default=None
        Extra keyword arguments passed to ``func`` (``kernel_params``).
    vectorized : bool or 'auto', default='auto'
        ``'auto'`` probes ``func`` once on a 2x3 block and uses block evaluation
        when it returns a (2, 3) array equal to the per-pair values; otherwise
        each pair is evaluated separately (as scikit-learn always does).
    n_jobs : int, default=None
        Processes/threads for per-pair evaluation.
    """

    name = "callable"

    def __init__(
        self,
        func: CallableT[..., Any] | None = None,
        params: dict | None = None,
        vectorized: bool | str = "auto",
        n_jobs: int | None = None,
    ):
        self.func = func
        self.params = params
        self.vectorized = vectorized
        self.n_jobs = n_jobs

    def resolve(self, X, random_state=None):
        if not callable(self.func):
            raise ValueError(f"Callable kernel: func must be callable; got {self.func!r}.")
        vec = self.vectorized
        if vec == "auto":
            vec = self._probe(X)
        return self._copy(vectorized=bool(vec))

    def _probe(self, X) -> bool:
        """True when ``func`` evaluates whole blocks correctly; False when it is a
        per-pair function; a ``ValueError`` naming the shapes when it is neither."""
        n = X.shape[0]
        A, B = X[: min(2, n)], X[: min(3, n)]
        block = None
        if n >= 2:
            try:
                with np.errstate(all="ignore"):
                    block = np.asarray(self.func(A, B, **(self.params or {})))
            except Exception:  # a per-pair function may fail on 2-D input: that is the answer
                block = None
            if block is not None and block.shape == (A.shape[0], B.shape[0]):
                try:
                    Kp = self._pairwise(A, B)
                except Exception:  # only takes blocks: the block answer is the only answer
                    return True
                return bool(np.allclose(block, Kp, rtol=1e-6, atol=1e-12, equal_nan=False))
        self._check_pair(A, B, block)
        return False

    def _check_pair(self, A, B, block) -> None:
        """A per-pair function must return one number for two 1-D rows."""
        if sp.issparse(A):
            return  # rows of a sparse matrix are passed as given (scikit-learn's rule)
        try:
            with np.errstate(all="ignore"):
                value = np.asarray(self.func(A[0], B[0], **(self.params or {})))
        except Exception as exc:
            if block is None:
                raise ValueError(
                    "the kernel callable fails both on blocks of rows (2-D arrays, expected "
                    "to return their (n1, n2) kernel matrix) and on a pair of 1-D rows "
                    f"(expected to return a number): {type(exc).__name__}: {exc}"
                ) from None
            value = None
        if value is None or value.size != 1:
            got = "an error" if value is None else f"shape {value.shape}"
            blk = "an error" if block is None else f"shape {block.shape}"
            raise ValueError(
                f"the kernel callable returned {blk} for blocks of {A.shape[0]} and "
                f"{B.shape[0]} rows (expected ({A.shape[0]}, {B.shape[0]})) and {got} for "
                "one pair of rows (expected a number)."
            )

    def _pairwise(self, X, Y):
        return pairwise_kernels(
            X, Y, metric=self.func, filter_params=False, n_jobs=self.n_jobs, **(self.params or {})
        )

    def _block(self, X, Y, symmetric):
        dtype = _float_dtype(X, Y)
        if self.vectorized is True:
            K = np.asarray(self.func(X, Y, **(self.params or {})), dtype=dtype)
            if K.shape != (X.shape[0], Y.shape[0]):
                raise ValueError(
                    f"kernel callable returned shape {K.shape}; expected "
                    f"{(X.shape[0], Y.shape[0])}. Pass vectorized=False for a per-pair function."
                )
        else:
            K = np.asarray(self._pairwise(X, Y), dtype=dtype)
        if not np.all(np.isfinite(K)):
            raise ValueError("the kernel callable returned NaN or infinite values.")
        return K


#: kernels by the names accepted in ``KernelPCA(kernel=...)``
KERNELS: dict[str, type[Kernel]] = {
    cls.name: cls for cls in (Linear, Polynomial, RBF, Laplacian, Sigmoid, Cosine, Anova,
                              Precomputed)
}
KERNELS["gaussian"] = RBF
KERNELS["polynomial"] = Polynomial


def make_kernel(
    kernel: Any,
    *,
    gamma: Any = _DEFAULTS["gamma"],
    degree: float = _DEFAULTS["degree"],
    coef0: float = _DEFAULTS["coef0"],
    kernel_params: dict | None = None,
    n_jobs: int | None = None,
) -> Kernel:
    """Build a kernel object from the scikit-learn style arguments.

    ``kernel`` may be a name from :data:`KERNELS`, a :class:`Kernel` instance
    (used as given, its parameters checked) or a callable. For named kernels,
    ``gamma``/``degree``/``coef0`` are taken where the kernel has them and
    ``kernel_params`` may set any of its parameters (e.g. ``beta`` of the ANOVA
    kernel), checked as the arguments of these names are.

    Raises
    ------
    ValueError
        For an unknown kernel or parameter name, an invalid value (naming where it
        was given), ``gamma=0`` for a kernel that uses gamma, and a ``kernel_params``
        value that contradicts one of ``gamma``/``degree``/``coef0`` given explicitly
        (not at its default).
    """
    if isinstance(kernel, Kernel):
        kernel.check_parameters()
        return kernel
    if isinstance(kernel, str):
        try:
            cls = KERNELS[kernel]
        except KeyError:
            raise ValueError(
                f"kernel must be one of {sorted(KERNELS)}, a kpca.kernels.Kernel or a callable; "
                f"got {kernel!r}."
            ) from None
        # named parameters only: a kernel without an __init__ of its own inherits
        # object's (*args, **kwargs), which are not parameters a user can pass
        accepted = {
            name for name, p in inspect.signature(cls.__init__).parameters.items()
            if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        }
        given = dict(kernel_params or {})
        for key in given:
            if key not in accepted:
                raise ValueError(
                    f"kernel_params: {kernel!r} kernel has no parameter {key!r}; "
                    f"valid: {sorted(accepted) or 'none'}."
                )
        check_kernel_parameters(given, "kernel_params", cls.name)
        candidates = {"gamma": gamma, "degree": degree, "coef0": coef0}
        params = {k: v for k, v in candidates.items() if k in accepted}
        check_kernel_parameters(params, f"the {cls.name} kernel", cls.name)
        for key, value in given.items():
            # an explicit argument (not its default) that kernel_params contradicts:
            # neither silently wins (scalars, checked above: == compares them)
            if key in params and params[key] != _DEFAULTS[key] and params[key] != value:
                raise ValueError(
                    f"{key}={params[key]!r} and kernel_params={{{key!r}: {value!r}}} give "
                    f"the {kernel!r} kernel two values of {key!r}; give it once."
                )
        params.update(given)
        return cls(**params)
    if callable(kernel):
        return Callable(kernel, params=kernel_params, n_jobs=n_jobs)
    raise ValueError(
        f"kernel must be one of {sorted(KERNELS)}, a kpca.kernels.Kernel or a callable; "
        f"got {kernel!r}."
    )
