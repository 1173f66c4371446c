"""IncrementalKernelPCA: kernel PCA fitted batch by batch (docs/math.md, "Incremental
kernel PCA").

Two modes, as scikit-learn's ``IncrementalPCA`` has one:

* **exact**: the model after any sequence of batches is batch kernel PCA of every
  row seen so far, to the batch solvers' tolerance. A batch of ``b`` rows to an
  ``n``-row model evaluates only the ``b (n + b)`` new kernel values
  (:class:`kpca.operators.GrowingGram`), updates the centring in ``O(n b)`` and
  brings the eigenpairs up to date from the previous ones
  (:func:`kpca.solvers.extend_eigenpairs`): no pass over the old kernel values
  unless the residual test asks for one, and no ``O(n^3)`` work past the sizes
  where KernelPCA would itself solve a stored matrix with LAPACK or ARPACK (there
  the stored values are solved the same way: faster than update passes). ``fit``
  on rows in memory is a batch fit: the kernel matrix evaluated once, KernelPCA's
  solver for its size, plus the guard pairs the next update starts from.
* **bounded**: a fixed number of landmark rows and the running mean and scatter
  of their kernel features -- streaming Nyström kernel PCA, with memory that stays
  flat however many rows arrive. Landmarks are swapped in when new rows lie far
  from their span (swaps that enlarge ``det k(Z, Z)`` by a margin), so the model
  follows a drifting stream; the statistics of rows seen before a landmark arrived
  use their Nyström projection on the landmarks of that time.

On Array API arrays (PyTorch, CuPy, array-api-strict) both modes compute on the arrays'
device (docs/scaling.md, "GPU and the Array API"): the exact mode's kernel values are
stored there (:class:`kpca.operators.DeviceGrowingGram`) and the batch fit and updates
run there (:mod:`kpca.solvers._update_device`, the shared device block Lanczos); the
bounded mode's batch kernel values against the landmarks and their scatter are made
there. The fitted attributes are NumPy, as KernelPCA's.
"""

from __future__ import annotations

import logging
import warnings
from contextlib import nullcontext
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from ._array_api import device_memory_limit, device_namespace, float_dtype, from_host, to_host
from ._base import (
    BaseKernelPCA,
    extend_init,
    kernel_parameters,
    memory_block_bytes,
    outlier_statistics,
)
from ._config import get_config
from ._fit import FitResult, commit
from ._kernel_pca import KernelPCA
from ._memory import default_memory_limit, format_bytes, parse_memory
from ._parallel import blas_threads, job_threads, sized_threads
from ._rows import RowSource
from .approx import FeatureStats, accumulate, inverse_sqrt, landmark_subspace, row_blocks
from .approx import solve as feature_solve
from .diagnostics import norm_floor, od_noise
from .kernels import KERNELS, Kernel, Precomputed, make_kernel
from .operators import (
    CenteredOperator,
    DenseOperator,
    DeviceCenteredGrowing,
    DeviceGrowingGram,
    DeviceNewColumns,
    GrowingGram,
    NewColumns,
    float32_eigen_error,
    kernel_rows,
    storage_dtype,
)
from .solvers import (
    EigenResult,
    choose_solver,
    default_rtol,
    device_extend_eigenpairs,
    device_nystrom_start,
    device_orthogonal_directions,
    device_rayleigh_ritz,
    eigsh_top,
    extend_eigenpairs,
    finalize,
    krylov_basis_size,
    krylov_block_size,
    nystrom_start,
    orthogonal_directions,
    rayleigh_ritz,
    start_landmarks,
)
from .subspace import FittedSubspace

logger = logging.getLogger("kpca")

# tuning values (kpca._config): ``incremental_landmarks`` (bounded mode without
# max_rows), ``incremental_outlier_sample`` (rows that set the bounded mode's outlier
# cut-offs), ``incremental_swap_threshold`` / ``incremental_swap_margin`` /
# ``incremental_max_swap_fraction`` (landmark swaps), ``incremental_rebuild_rows``
# (block rows of a whole kernel matrix evaluated at once), ``incremental_guard_factor``
# / ``incremental_guard_extra`` (guard Ritz pairs)


def _stale(est: Any, fitted: dict) -> tuple[str, ...]:
    """The fitted attributes of ``est`` that the new state ``fitted`` does not have
    (the input validation's ``n_features_in_`` and ``feature_names_in_`` stay)."""
    return tuple(k for k in est.__dict__ if k.endswith("_") and k not in fitted
                 and k not in ("n_features_in_", "feature_names_in_"))


def guard_vectors(k: int) -> int:
    """Ritz pairs kept beyond the ``k`` wanted ones: the next update starts from them
    (``incremental_guard_factor * k + incremental_guard_extra``: at k = 10, 30)."""
    config = get_config()
    return int(config["incremental_guard_factor"] * k + config["incremental_guard_extra"])


#: parameters that define a stream: changing one needs a new ``fit``
_STREAM_PARAMS = ("n_components", "kernel", "gamma", "degree", "coef0", "kernel_params",
                  "mode", "max_rows", "precision")


@extend_init(KernelPCA, drop=("alpha", "fit_inverse_transform", "eigen_solver", "max_iter",
                              "iterated_power", "remove_zero_eig", "copy_X", "center"),
             n_components=10, kernel="rbf", batch_size=None, mode="auto", max_rows=None)
class IncrementalKernelPCA(BaseKernelPCA):
    """Kernel PCA fitted incrementally, batch by batch (``partial_fit``).

    Follows :class:`sklearn.decomposition.IncrementalPCA`: ``partial_fit(X)`` adds
    a batch, ``fit(X)`` starts afresh (a batch fit where the exact mode keeps every
    row of X; else X is fed in batches of ``batch_size`` rows), ``n_samples_seen_``
    counts the rows. Everything a fitted kpca model does
    (``transform``, ``inverse_transform``, ``denoise``, the outlier API,
    :func:`kpca.save`) works after any batch; a loaded model can be updated further.

    Parameters
    ----------
    n_components : int, default=10
        Number of components. While fewer rows than that have been seen, the model
        has ``n_samples_seen_`` components (as :class:`kpca.KernelPCA` clips).
    kernel : str, Kernel or callable, default='rbf'
        Any vector kernel of :class:`kpca.KernelPCA` ('precomputed' and the string
        kernels are not available: a batch needs kernel values against every
        earlier row).
    gamma : float, 'scale', 'median' or None, default=None
        As :class:`kpca.KernelPCA`; a heuristic is resolved on the first batch and
        then kept (the kernel cannot change in the middle of a stream).
    degree, coef0, kernel_params
        As :class:`kpca.KernelPCA`.
    batch_size : int or None, default=None
        Rows per batch where ``fit`` streams its input (``None``: 500), the rows a gamma
        heuristic sees, and the block rows of a batch fit's stored matrix (as a stream
        of such batches would store it). ``partial_fit`` takes batches of any size.
    mode : {'auto', 'exact', 'bounded'}, default='auto'
        'exact' keeps every row and its kernel values and equals batch KPCA;
        'bounded' keeps ``max_rows`` landmarks (streaming Nyström KPCA); 'auto' is
        exact while the rows seen fit ``max_rows`` and the kernel values fit
        ``memory_limit``, and switches to bounded (once, logged) beyond. 'exact'
        raises instead of switching.
    max_rows : int or None, default=None
        Rows the model keeps: beyond, 'auto' switches to the bounded mode with
        ``max_rows`` landmarks (``None``: no row limit in the exact mode, 1000
        landmarks in the bounded mode). ``n_components`` larger than the landmarks
        kept is a ``ValueError`` in the 'bounded' and 'auto' modes: their feature
        map has no more directions (the rest would be zero padding).
    tol : float, default=0
        Residual target ``||K~v - mu v|| / mu_1`` of an update (0: 1e-8 with float64
        storage, 1e-5 with float32, as the batch solvers).
    memory_limit : int, str or None, default=None
        Bytes the stored kernel values may occupy (``None``: the default budget at the
        first batch, as :class:`kpca.KernelPCA`'s).
    precision : {'auto', 'float32', 'float64'}, default='auto'
        Storage of the kernel values, as :class:`kpca.KernelPCA` decides it for the
        rows seen: 'auto' stores float64 up to 4096 rows and float32 beyond when a
        sampled estimate says it keeps the eigenvalues within ~1e-7 (the stored
        values are converted once, when the stream grows past 4096 rows).
    n_jobs : int or None, default=None
        Threads of the kernel products and of ``transform``.
    random_state : int, RandomState instance or None, default=None
        The gamma heuristics' subsample and the bounded mode's first landmarks.
    contamination : 'auto' or float in (0, 0.5], default='auto'
        Threshold of the outlier detector, as :class:`kpca.KernelPCA`.

    Attributes
    ----------
    n_samples_seen_ : int
    mode_ : {'exact', 'bounded'}
    X_fit_ : ndarray of shape (n_kept, n_features)
        The rows kept: every row (exact) or the landmarks (bounded).
    eigenvalues_ : ndarray of shape (n_components_,)
        Eigenvalues of the centred kernel matrix of all rows seen (bounded: of
        its Nyström approximation).
    eigenvectors_ : ndarray of shape (n_samples_seen_, n_components_)
        Exact mode only: unit eigenvectors of the centred kernel matrix.
    explained_variance_, explained_variance_ratio_ : ndarray of shape (n_components_,)
        ``mu_l / n`` and ``mu_l / trace``.
    n_components_ : int
    subspace_ : kpca.FittedSubspace
    kernel_ : Kernel
    gamma_ : float
    n_passes_ : int
        Passes over the stored kernel values made by the last update, or by the
        batch solve of ``fit`` or a first batch (exact mode).
    n_features_in_, feature_names_in_
        As every scikit-learn estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from kpca import IncrementalKernelPCA
    >>> X = np.random.default_rng(0).normal(size=(300, 4))
    >>> model = IncrementalKernelPCA(n_components=3, gamma=0.25)
    >>> for batch in np.array_split(X, 3):
    ...     model = model.partial_fit(batch)
    >>> model.n_samples_seen_, model.transform(X[:2]).shape
    (300, (2, 3))
    """

    if TYPE_CHECKING:  # the signature extend_init generates at run time (see help())
        def __init__(self, *args: Any, **params: Any) -> None: ...

    _parameter_constraints: dict = {
        **BaseKernelPCA._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        **kernel_parameters(set(KERNELS) - {"precomputed"}),
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "mode": [StrOptions({"auto", "exact", "bounded"})],
        "max_rows": [Interval(Integral, 2, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "memory_limit": [Interval(Real, 1, None, closed="left"), str, None],
    }
    #: kept in memory but not written by :func:`kpca.save` (rebuilt from ``X_fit_``
    #: once, at the first update after loading)
    _unsaved_attributes = ("gram_",)

    # ------------------------------------------------------------------ public API
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit from scratch.

        Rows in memory (an array, sparse matrix or DataFrame) that the exact mode can
        keep (``max_rows``, ``memory_limit``) are fitted at once, as
        :class:`kpca.KernelPCA` fits them: the kernel matrix is evaluated once and
        decomposed by KernelPCA's solver for its size (block Lanczos from a Nyström
        start beyond a few thousand rows), plus the guard pairs that the next
        ``partial_fit`` starts from. The model is the one feeding X batch by batch
        would give, to the solvers' tolerance (a gamma heuristic is resolved on the
        first ``batch_size`` rows in both). Otherwise -- ``mode='bounded'``, ``'auto'``
        beyond the limits (it switches to the bounded mode on the way), a
        :class:`kpca.RowSource` or a dask collection -- X is fed in batches of
        ``batch_size`` rows.

        Parameters
        ----------
        X : {array-like, sparse matrix, RowSource, dask array} of shape (n_samples, \
n_features)
            A :class:`kpca.RowSource` is read block by block; a dask array chunk by
            chunk, in order. An Array API array (PyTorch, CuPy, ...) is fitted on its
            device (the kernel values stored there, the solve and later updates run
            there); the fitted attributes are NumPy, as KernelPCA's on such arrays.
        y : Ignored

        Returns
        -------
        self
        """
        from .distributed import is_dask_collection

        self._validate_params()
        self._check_landmark_count()
        if (self.mode != "bounded" and not isinstance(X, RowSource)
                and not is_dask_collection(X) and self._fit_whole(X)):
            return self
        return self._stream(X, reset=True)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Add a batch of rows to the model.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            The batch (a dask array is added chunk by chunk, in order; an Array API
            array is added on its device: its kernel values, the centring and the
            eigenpair update are computed there, and the stored kernel values move
            there first if earlier batches were NumPy arrays or the model was
            loaded). It must have the width (and feature names)
            of the first batch and finite values; on any error the model is left as
            it was.
        y : Ignored

        Returns
        -------
        self
        """
        from .distributed import is_dask_collection

        self._check_landmark_count()
        if is_dask_collection(X) or isinstance(X, RowSource):
            return self._stream(X, reset=False)
        self._partial_fit(X)
        return self

    def _stream(self, X, *, reset: bool):
        """Feed X batch by batch; on any error the model is left as it was.

        The batches update a working copy of the model (the same parameters, the
        fitted state so far); its state is committed on this one once every batch has
        been added, all at once (:func:`kpca._fit.commit`)."""
        work = object.__new__(type(self))
        work.__dict__.update(self.__dict__)
        if reset:
            for name in [k for k in work.__dict__ if k.endswith("_")]:
                del work.__dict__[name]
        fed = 0
        for batch in work._batches(X):
            work._partial_fit(batch)
            fed += 1
        if reset and not fed:
            raise ValueError("Found array with 0 sample(s) while a minimum of 1 is "
                             "required by IncrementalKernelPCA.")
        fitted = {k: v for k, v in work.__dict__.items() if k.endswith("_")}
        commit(self, FitResult(fitted, stale=tuple(k for k in self.__dict__
                                                   if k.endswith("_") and k not in fitted)))
        return self

    def _fit_whole(self, X) -> bool:
        """Fit all rows of X at once in the exact mode; False (and the model as it
        was) where the exact mode cannot keep them and ``mode='auto'`` would switch to
        the bounded mode: ``fit`` then streams X. On any error the model is left as
        it was."""
        saved = dict(self.__dict__)
        try:
            with self._keeping_input_attributes():
                Xv, dev = self._validate_rows(X, first=True)
                # the model keeps its own rows, never the caller's array
                Xv = Xv.toarray() if sp.issparse(Xv) else np.array(Xv, copy=True)
                with job_threads(self.n_jobs):
                    # a gamma heuristic sees the first batch, as when X is streamed
                    state = self._first_state(Xv[: int(self.batch_size or 500)], dev)
                    dev = _device_rows(dev, state["kernel_"])
                    with nullcontext() if dev is None else blas_threads(1):
                        fitted = self._exact_fit(state, Xv, dev)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        if fitted is None:
            self.__dict__.clear()
            self.__dict__.update(saved)
            return False
        # the fit has succeeded: every fitted attribute at once, the earlier fit's
        # others (a bounded stream's landmarks) gone
        commit(self, FitResult(fitted, stale=_stale(self, fitted)))
        return True

    # ------------------------------------------------------------------ batches
    def _batches(self, X):
        """Row batches of X, in order, each as an array, sparse matrix or DataFrame."""
        from .distributed import is_dask_array, is_dask_collection

        size = int(self.batch_size or 500)
        if isinstance(X, RowSource):
            yield from row_blocks(X, size)
            return
        if is_dask_collection(X):
            if is_dask_array(X):
                X = X.rechunk({1: -1})
            # partitions in order, computed one at a time (a DataFrame's partitions
            # are pandas frames: the column names reach validation)
            for block in X.to_delayed().ravel() if is_dask_array(X) else X.to_delayed():
                chunk = block.compute()
                take = chunk.iloc if hasattr(chunk, "iloc") else chunk
                for s in range(0, chunk.shape[0], size):
                    yield take[s : s + size]
            return
        if device_namespace(X) is not None and X.ndim == 2:
            # (the Array API specifies no slice past the end)
            yield from (X[s : min(s + size, X.shape[0]), ...] for s in range(0, X.shape[0], size))
            return
        if sp.issparse(X):
            X = X.tocsr()  # COO, DIA, BSR ... cannot be sliced by rows
        elif not hasattr(X, "shape"):
            X = np.asarray(X)
        if getattr(X, "ndim", 2) != 2 or X.shape[0] == 0:
            yield X  # validation raises the usual error
            return
        yield from row_blocks(X, size)  # a DataFrame slices its rows by position too

    def _check_landmark_count(self) -> None:
        """The bounded mode keeps L landmark rows, whose feature map has at most L
        directions: more components than L would be zero padding (NystromKernelPCA
        clips to its landmarks' rank instead; a stream keeps one width, so here the
        parameters are refused before the first row)."""
        if self.mode == "exact":
            return
        L = self._n_landmarks()
        if int(self.n_components) <= L:
            return
        limit = (f"max_rows={self.max_rows}" if self.max_rows is not None
                 else f"the incremental_landmarks setting ({L})")
        raise ValueError(
            f"n_components={self.n_components} exceeds {limit}: mode={self.mode!r} can keep "
            f"{L} landmark rows, whose feature map has at most {L} directions, so at most "
            f"{L} components (the others would be zero padding). Lower n_components to "
            f"{L} or below, raise max_rows, or use mode='exact'."
        )

    def _check_stream_params(self) -> None:
        """``partial_fit`` continues a stream: its defining parameters must not change."""
        start = getattr(self, "stream_params_", None)
        if start is None:
            return
        now = self.get_params(deep=False)
        # max_rows only says when to stop keeping every row: it may change (be raised)
        # while every row is still kept
        names = [k for k in _STREAM_PARAMS
                 if not (k == "max_rows" and getattr(self, "mode_", None) == "exact")]
        changed = [k for k in names if not _same(start.get(k), now.get(k))]
        if changed:
            detail = ", ".join(f"{k}: {start.get(k)!r} -> {now.get(k)!r}" for k in changed)
            raise ValueError(
                f"partial_fit: parameter(s) changed since the first batch ({detail}); a "
                "stream keeps the parameters it started with. Set them back, or call fit() "
                "to start a new model."
            )

    def _validate_rows(self, X, first: bool) -> tuple[Any, Any]:
        """The validated host rows of a batch, and the batch on its device in their float
        dtype where it is an Array API array (PyTorch, CuPy, ...; else None): the model
        keeps the host copy (its fitted attributes are NumPy, as KernelPCA's on such
        arrays) and computes the update on the device."""
        xp = device_namespace(X)
        if xp is None:
            return self._validate_batch(X, first), None
        Xh = self._validate_batch(to_host(X), first)
        return Xh, xp.astype(X, float_dtype(xp, Xh.dtype))

    def _validate_batch(self, X, first: bool):
        return validate_data(self, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                             reset=first, ensure_min_samples=1)

    def _validate_new(self, X: Any) -> Any:
        if isinstance(X, RowSource):
            raise ValueError("IncrementalKernelPCA reads a RowSource in fit and partial_fit; "
                             "for the other methods pass the rows as an array.")
        return self._validate_batch(X, first=False)

    def _block_bytes(self, setting: str, copies: int) -> int:
        return memory_block_bytes(self, setting, copies)

    def _make_kernel(self) -> Kernel:
        kernel = make_kernel(self.kernel, gamma=self.gamma, degree=self.degree,
                             coef0=self.coef0, kernel_params=self.kernel_params,
                             n_jobs=self.n_jobs)
        if not getattr(kernel, "requires_vectors", True) or isinstance(kernel, Precomputed):
            raise ValueError(
                f"IncrementalKernelPCA needs a vector kernel (every batch is evaluated "
                f"against the earlier rows); got kernel={self.kernel!r}. Use kpca.KernelPCA."
            )
        return kernel

    # ------------------------------------------------------------------ one batch
    def _partial_fit(self, X) -> None:
        first = not hasattr(self, "n_samples_seen_")
        if not first:
            self._check_stream_params()
        with self._keeping_input_attributes():  # a failed batch changes nothing
            Xb, dev = self._validate_rows(X, first)
            if sp.issparse(Xb):
                Xb = Xb.toarray()  # rows are stacked and evaluated dense
            with job_threads(self.n_jobs):
                state = self._first_state(Xb, dev) if first else self._current_state()
                fitted = self._update(state, Xb, _device_rows(dev, state["kernel_"]))
        # the whole update succeeded: now the model changes, all at once (state the new
        # one does not have -- the exact mode's kernel values after a switch to bounded
        # -- goes)
        commit(self, FitResult(fitted, stale=_stale(self, fitted)))

    def _first_state(self, Xb, dev: Any = None) -> dict:
        rng = check_random_state(self.random_state)
        # (without a random_state the median heuristic is still reproducible)
        kernel = self._make_kernel().resolve(
            Xb, random_state=None if self.random_state is None else rng)
        # as scikit-learn's KernelPCA (and kpca's): the kernel's gamma, else the
        # parameter when a number is given (a kernel without gamma ignores it), else
        # 1 / n_features
        g = getattr(kernel, "gamma", None)
        if not isinstance(g, Real) and isinstance(self.gamma, Real) \
                and not isinstance(self.gamma, bool):
            g = self.gamma
        gamma = float(g) if isinstance(g, Real) else 1.0 / Xb.shape[1]
        mode = "bounded" if self.mode == "bounded" else "exact"
        seed = (int(self.random_state) if isinstance(self.random_state, Integral)
                else int(rng.randint(2**31 - 1)))
        return {
            "kernel_": kernel, "gamma_": gamma, "mode_": mode, "n_samples_seen_": 0,
            # the default budget is fixed when the stream starts; an explicit
            # memory_limit is read at every batch (it may be raised)
            # (on a GPU: half the device's free memory, as KernelPCA's budget there)
            "memory_budget_": int(default_memory_limit() if dev is None
                                  or device_memory_limit(dev) is None
                                  else device_memory_limit(dev)),
            "stream_seed_": seed,
            "stream_params_": {k: self.get_params(deep=False)[k] for k in _STREAM_PARAMS},
            "X_fit_": Xb[:0].copy(),
        }

    def _current_state(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k.endswith("_")}

    def _update(self, state: dict, Xb, dev: Any = None) -> dict:
        """The fitted attributes after adding the batch ``Xb`` (nothing is set here);
        ``dev``: the batch on its device (an Array API array), where the update is then
        computed."""
        state = dict(state)
        if state["mode_"] == "exact":
            N = state["n_samples_seen_"] + Xb.shape[0]
            reason = self._exact_limit(N, state, device=dev is not None)
            if reason is None:
                return self._exact_update(state, Xb, dev)
            if self.mode == "exact":
                raise ValueError(_exact_refusal(N, reason))
            logger.info("IncrementalKernelPCA: %s; switching to the bounded mode", reason)
            state = (self._to_bounded(state) if state["n_samples_seen_"]
                     else {**state, "mode_": "bounded"})
        return self._bounded_update(state, Xb, dev)

    # ------------------------------------------------------------------ exact mode
    def _exact_limit(self, N: int, state: dict, dtype: np.dtype | None = None,
                     batch: int | None = None, device: bool = False) -> str | None:
        """Why ``N`` rows cannot be kept exactly (None: they can), with ``batch`` rows'
        kernel values in flight (default: the rows added to the state) stored in
        ``dtype`` (default: the state's); ``device``: stored on a device (both
        triangles)."""
        if self.max_rows is not None and N > self.max_rows:
            return f"{N} rows exceed max_rows={self.max_rows}"
        if dtype is None:
            gram = state.get("gram_")
            dtype = gram.dtype if gram is not None else np.dtype(np.float64)
        b = N - state["n_samples_seen_"] if batch is None else batch
        need = (DeviceGrowingGram if device else GrowingGram).bytes_for(N, dtype.itemsize, b)
        limit = parse_memory(self.memory_limit)
        budget = state["memory_budget_"] if limit is None else int(limit)
        if need > budget:
            what = "the memory budget" if limit is None else "memory_limit"
            return (f"their kernel values need {format_bytes(need)}, above {what} "
                    f"({format_bytes(budget)})")
        return None

    def _storage(self, X, N: int, kernel: Kernel, current) -> np.dtype:
        """The storage dtype for ``N`` rows (decided once past 4096 rows, then kept)."""
        top = get_config()["float64_max_rows"]
        if current is not None and (self.precision != "auto" or N > top and current.n > top):
            return current.dtype
        return storage_dtype(self.precision, X.dtype, N, lambda: float32_eigen_error(
            kernel, X, random_state=0))

    def _sizes(self, N: int) -> tuple[int, int]:
        """Components ``k`` and Ritz pairs kept ``m`` (k plus guard pairs) at ``N`` rows."""
        nc = int(self.n_components)
        return min(nc, N), min(nc + guard_vectors(nc), max(N - 1, 0))

    def _exact_fit(self, state: dict, X, dev: Any = None) -> dict | None:
        """The exact mode's fitted attributes for all rows of ``X`` at once (a batch
        fit: the kernel matrix evaluated once, then :meth:`_batch_solve`); None where
        ``mode='auto'`` would not keep them all."""
        kernel = state["kernel_"]
        N = X.shape[0]
        dtype = self._storage(X, N, kernel, None)
        # block rows of batch_size rows: the stored matrix, and the memory it needs, are
        # those of a stream of such batches
        rows = min(N, int(self.batch_size or 500))
        reason = self._exact_limit(N, state, dtype, rows, device=dev is not None)
        if reason is not None:
            if self.mode == "exact":
                raise ValueError(_exact_refusal(N, reason))
            return None
        return self._fit_rows(state, X, dtype, rows, dev)

    def _fit_rows(self, state: dict, X, dtype: np.dtype, rows: int, dev: Any = None) -> dict:
        """The exact mode's attributes for the rows ``X`` from scratch (a batch fit, or
        the first batch of a stream): the kernel matrix evaluated once, in block rows
        of ``rows`` rows, then :meth:`_batch_solve` (with ``dev``, the rows on their
        device: :meth:`_device_fit_rows`)."""
        if dev is not None:
            return self._device_fit_rows(state, X, dev, dtype, rows)
        kernel = state["kernel_"]
        N = X.shape[0]
        k, m = self._sizes(N)
        rule = choose_solver(N, k)
        # the solver's start block is multiplied while the kernel values are evaluated
        # (as KernelPCA's construction pass does): no pass of its own
        probe = self._start_block(X, kernel, k, rule)
        gram, TP = self._whole_gram(kernel, X, dtype, probe, rows)
        values, vectors, products, passes, ok = self._batch_solve(
            gram, X, kernel, k, m if rule == "krylov" else min(k, m), rule,
            None if probe is None else (probe, TP))
        self._warn_unconverged(ok, default_rtol(self.tol, dtype), passes)
        return self._exact_attributes(state, X, gram, kernel, values, vectors, products,
                                      passes, k)

    def _warn_unconverged(self, ok: bool, tol: float, passes: int) -> None:
        if not ok:
            warnings.warn(
                f"IncrementalKernelPCA: the update did not reach the residual target {tol:g} "
                f"in {passes} passes; raise tol.", ConvergenceWarning, stacklevel=6)

    def _exact_update(self, state: dict, Xb, dev: Any = None) -> dict:
        n, b = state["X_fit_"].shape[0], Xb.shape[0]
        N = n + b
        k, m = self._sizes(N)
        rule = choose_solver(N, k)
        if dev is not None:
            rule = _device_rule(rule)
        # the first batch; or a problem so small that KernelPCA itself would take
        # LAPACK or ARPACK on the stored matrix: solving the stored matrix the same way
        # then beats an update (measured on digits, 1,100 rows, k = 32 / 64: refits of
        # 26 / 119 ms against updates of 100 / 386 ms; docs/scaling.md)
        batch = n == 0 or m == 0 or state.get("ritz_vectors_") is None or rule != "krylov"
        # an update's own algebra runs on one BLAS thread, its kernel values and pass
        # on worker threads: BLAS threads left spinning by a two-thread call slow the
        # workers (at n = 10,000 a pass took 66-80 ms after two-thread algebra and
        # 33-45 ms after one-thread, the batch's kernel values 31 ms against 6-10 ms)
        if dev is not None:
            # the host's share of a device update is small matrices (projected problems,
            # Gram matrices of blocks): one BLAS thread; threads woken for them spin
            # against the device library's own (torch CPU: 0.4 s per 100 x 100 eigh on a
            # loaded 2-core machine, against milliseconds)
            with blas_threads(1):
                return self._device_step(state, Xb, dev, k, m, rule, batch)
        with nullcontext() if batch else blas_threads(1):
            return self._exact_step(state, Xb, k, m, rule, batch)

    @staticmethod
    def _step_rows(state: dict, Xb) -> tuple[Kernel, int, np.ndarray]:
        """``(kernel, n, X)`` of an exact step (host or device): the kept rows' kernel and
        count, and all rows, the kept ones then the batch ``Xb`` in their dtype (for the
        first batch, ``n = 0``: a copy of the batch)."""
        X_old = state["X_fit_"]
        n = X_old.shape[0]
        X = Xb.copy() if n == 0 else np.concatenate([X_old, Xb.astype(X_old.dtype, copy=False)])
        return state["kernel_"], n, X

    def _exact_step(self, state: dict, Xb, k: int, m: int, rule: str, batch: bool) -> dict:
        kernel, n, X = self._step_rows(state, Xb)
        N = X.shape[0]
        if n == 0:  # the first batch: evaluated and solved as a batch fit
            return self._fit_rows(state, X, self._storage(X, N, kernel, None), N)
        X_old = X[:n]
        gram = state.get("gram_")
        if isinstance(gram, DeviceGrowingGram):  # the stream went on from device batches
            gram = None
        if gram is None:  # after loading a saved model
            gram, _ = self._whole_gram(kernel, X_old, self._storage(X_old, n, kernel, None))
            logger.info("IncrementalKernelPCA: kernel values of %d rows recomputed", n)
        dtype = self._storage(X, N, kernel, gram)
        t_old = gram.shifted_row_sums()
        gram = gram.copy()  # the model is unchanged until the update succeeds
        if gram.dtype != dtype:
            gram = gram.astype(dtype)
        tol = default_rtol(self.tol, dtype)
        V = None if batch else state["ritz_vectors_"]
        # the new kernel values, evaluated in the storage precision (as a batch fit's),
        # and T_bn V; checked to be finite before anything is stored
        Tb, TbV = self._append(gram, kernel, X[n:], X, V)
        if batch:
            # (guard pairs only for a stream that goes on with updates)
            values, vectors, products, passes, ok = self._batch_solve(
                gram, X, kernel, k, m if rule == "krylov" else min(k, m), rule)
        else:
            new = NewColumns(Tb, gram.shifted_row_sums())
            TV = new.start_products(state["ritz_products_"], t_old, V, TbV)
            op = CenteredOperator(gram, gram.centering())
            res = extend_eigenpairs(op, V, TV, new, k, m, tol=tol, floor=gram.noise_floor())
            values, vectors, products, passes, ok = (res.values, res.vectors, res.products,
                                                     res.n_passes, res.converged)
        self._warn_unconverged(ok, tol, passes)
        return self._exact_attributes(state, X, gram, kernel, values, vectors, products,
                                      passes, k)

    # ------------------------------------------------------------------ exact mode on a device
    def _device_budget(self, state: dict) -> int:
        limit = parse_memory(self.memory_limit)
        return state["memory_budget_"] if limit is None else int(limit)

    def _device_fit_rows(self, state: dict, X, dev: Any, dtype: np.dtype, rows: int) -> dict:
        """:meth:`_fit_rows` on the device of ``dev`` (the rows ``X`` there): the kernel
        matrix evaluated and stored on the device (:class:`DeviceGrowingGram`), the
        Nyström start made there, block Lanczos by the shared device loop
        (:func:`kpca.solvers._device.device_eigsh`, the host loop's stopping rules) and
        the guard pairs' Rayleigh-Ritz on the device. The fitted attributes are NumPy,
        as KernelPCA's on such arrays; the Ritz pairs stay on the device too, for the
        next update."""
        xp = device_namespace(dev)
        kernel = state["kernel_"]
        N = X.shape[0]
        k, m = self._sizes(N)
        rule = _device_rule(choose_solver(N, k))
        probe = self._device_start_block(dev, xp, kernel, k, rule)
        gram = DeviceGrowingGram.build(kernel, dev, xp, dtype=dtype, rows=rows,
                                       memory_limit=self._device_budget(state))
        # (T P: the host sweep makes it while evaluating the kernel values, uncounted;
        # here one GEMM with the stored matrix, uncounted alike)
        start = None if probe is None else (probe, gram.matmat(probe))
        values, Y, KY, passes, ok = self._device_batch_solve(
            gram, kernel, k, m if rule == "krylov" else min(k, m), rule, start)
        gram.ritz = (Y, KY)
        self._warn_unconverged(ok, default_rtol(self.tol, dtype), passes)
        return self._exact_attributes(state, X, gram, kernel, values, to_host(Y, np.float64),
                                      to_host(KY, np.float64), passes, k)

    def _device_step(self, state: dict, Xb, dev: Any, k: int, m: int, rule: str,
                     batch: bool) -> dict:
        """:meth:`_exact_step` on the device of the batch ``dev`` (``Xb``: its host
        copy): the new kernel values, the centring and the update
        (:func:`kpca.solvers._update_device.device_extend_eigenpairs`) there."""
        xp = device_namespace(dev)
        kernel, n, X = self._step_rows(state, Xb)
        N = X.shape[0]
        if n == 0:  # the first batch: evaluated and solved as a batch fit
            return self._device_fit_rows(state, X, dev, self._storage(X, N, kernel, None), N)
        X_old = X[:n]
        gram = state.get("gram_")
        if not (isinstance(gram, DeviceGrowingGram) and gram.xp is xp
                and gram.dev == dev.device):
            # after loading, after host batches or from another device: the kept rows'
            # kernel values evaluated on this device
            gram = DeviceGrowingGram.build(
                kernel, from_host(X_old, xp, dev.device), xp,
                dtype=self._storage(X_old, n, kernel, None),
                rows=int(get_config()["incremental_rebuild_rows"]),
                memory_limit=self._device_budget(state))
            logger.info("IncrementalKernelPCA: kernel values of %d rows evaluated on %s", n,
                        dev.device)
        dtype = self._storage(X, N, kernel, gram)
        ritz = gram.ritz
        t_old = gram.shifted_row_sums()
        gram = gram.copy()  # the model is unchanged until the update succeeds
        if gram.dtype != dtype:
            gram = gram.astype(dtype)
        tol = default_rtol(self.tol, dtype)
        if batch:
            gram.append(dev)
            values, Y, KY, passes, ok = self._device_batch_solve(
                gram, kernel, k, m if rule == "krylov" else min(k, m), rule)
        else:
            if ritz is None:
                ritz = (from_host(state["ritz_vectors_"], xp, dev.device),
                        from_host(state["ritz_products_"], xp, dev.device))
            V, KV_old = ritz
            Tb, TbV = gram.append(dev, V)
            # T_old V = K~_old V + 1 (t_old^T V) / n, then K~ [V; 0] = H (T [V; 0] - t (1^T V) / N)
            TV = xp.concat([KV_old + (t_old[None, :] @ V) / n, TbV], axis=0)
            t = gram.shifted_row_sums()
            TV = TV - t[:, None] * (xp.sum(V, axis=0) / N)[None, :]
            TV = TV - xp.mean(TV, axis=0)[None, :]
            values, Y, KY, _, passes, ok = device_extend_eigenpairs(
                DeviceCenteredGrowing(gram), V, TV, DeviceNewColumns(Tb, t, xp), k, m,
                tol=tol, floor=gram.noise_floor())
        gram.ritz = (Y, KY)
        self._warn_unconverged(ok, tol, passes)
        return self._exact_attributes(state, X, gram, kernel, values, to_host(Y, np.float64),
                                      to_host(KY, np.float64), passes, k)

    def _device_start_block(self, X: Any, xp: Any, kernel: Kernel, k: int, rule: str) -> Any:
        """:meth:`_start_block` for rows ``X`` on their device
        (:func:`kpca.solvers.device_nystrom_start`: the same landmarks and directions)."""
        N = X.shape[0]
        b = self._lanczos(N, k, rule)
        if not b:
            return None
        landmarks = start_landmarks(N, True, kernel.rank_bound(X.shape[1]))
        return device_nystrom_start(kernel, X, xp, b, center=True, n_landmarks=landmarks,
                                    random_state=0)

    def _device_batch_solve(self, gram: DeviceGrowingGram, kernel: Kernel, k: int, m: int,
                            rule: str, start: tuple[Any, Any] | None = None):
        """:meth:`_batch_solve` on the device: block Lanczos by the shared device loop
        at its sizes (ARPACK's included: :func:`_device_rule`), else ``eigh`` of the
        stored centred matrix on the device (in float64). Returns ``(values (host),
        vectors, products (device, float64), passes, converged)``."""
        xp, N = gram.xp, gram.n
        op = DeviceCenteredGrowing(gram)
        if m == 0:
            Z = xp.zeros((N, 0), dtype=xp.float64, device=gram.dev)
            return np.zeros(0), Z, Z, 0, True
        b = self._lanczos(N, k, rule)
        if b:
            passes = 0
            if start is None:
                P = self._device_start_block(gram.X, xp, kernel, k, rule)
                start, passes = (P, gram.matmat(P)), 1
            w, Y, KY, more, ok = self._device_lanczos_solve(op, k, m, b, *start)
            return w, Y, KY, passes + more, ok
        w, U = xp.linalg.eigh(op.stored_matrix())
        idx = xp.flip(xp.arange(N - m, N, device=gram.dev))
        V = xp.take(U, idx, axis=1)
        V = V - xp.mean(V, axis=0)[None, :]
        w, Y, KY = device_rayleigh_ritz(xp, V, op.matmat(V), m)
        return w, Y, KY, 0, True

    def _device_lanczos_solve(self, op: DeviceCenteredGrowing, k: int, m: int, b: int, P: Any,
                              TP: Any):
        """:meth:`_lanczos_solve` on the device (the same steps)."""
        xp = op.xp
        P = xp.astype(P, xp.float64)
        KP = op.centred(P, TP)
        tol = default_rtol(self.tol, op.dtype)
        # the shared device block Lanczos (kpca.solvers._device), as the host's call
        res = eigsh_top(op, k, solver="krylov", tol=tol, random_state=0, fallback=False,
                        start=(P[:, :b], KP[:, :b]))
        V = from_host(res.vectors, xp, P.device)
        V = V - xp.mean(V, axis=0)[None, :]
        w0, Y0, KY0 = device_rayleigh_ritz(xp, P, KP, P.shape[1], orthonormal=True)
        basis = xp.concat([V, device_orthogonal_directions(xp, P, V)], axis=1)
        resid = KY0 - Y0 * from_host(w0, xp, P.device)[None, :]
        Z = xp.concat([V, device_orthogonal_directions(xp, resid, basis)], axis=1)
        KZ = op.matmat(Z)
        w, Y, KY = device_rayleigh_ritz(xp, Z, KZ, m, (P, KP), orthonormal=True)
        return w, Y, KY, 1 + res.n_matvec // b, res.converged

    def _lanczos(self, N: int, k: int, rule: str) -> int:
        """Block size of the block Lanczos solve of a batch fit at ``N`` rows, or 0
        where the batch fit takes LAPACK or ARPACK (KernelPCA's rule), or a Lanczos
        basis would cover half the space (block Lanczos then takes LAPACK too)."""
        b = krylov_block_size(k, cheap_pass=True)
        # (past float64_max_rows the stored matrix is not made dense, whatever the rule)
        lanczos = rule == "krylov" or N > get_config()["float64_max_rows"]
        return b if lanczos and krylov_basis_size(k, b) < N // 2 else 0

    def _start_block(self, X, kernel: Kernel, k: int, rule: str) -> np.ndarray | None:
        """The start block of a block Lanczos batch solve (None where there is none):
        KernelPCA's, the top Nyström directions of ``X`` on as many landmarks as a
        stored fit takes (a wider block, for the guard pairs, changed no update's
        passes: at 6,000-10,000 rows, 30 columns against 16)."""
        N = X.shape[0]
        b = self._lanczos(N, k, rule)
        if not b:
            return None
        landmarks = start_landmarks(N, True, kernel.rank_bound(X.shape[1]))
        return nystrom_start(kernel, X, b, center=True,
                             n_landmarks=landmarks, random_state=0, n_jobs=self.n_jobs)

    def _append(self, gram: GrowingGram, kernel: Kernel, Xb, X, V: np.ndarray | None):
        """Add the batch ``Xb`` (the last rows of ``X``) to ``gram``; returns the new
        block row as stored and ``T_bn V`` (None without ``V``). Kernels bounded by a
        constant diagonal are evaluated, summed and multiplied in one sweep
        (:meth:`GrowingGram.append_kernel`); the others are evaluated, then shifted
        (:meth:`GrowingGram.append`: their constant part would cancel in float32)."""
        if kernel.constant_diag is not None:
            return gram.append_kernel(kernel, Xb, X, V)
        B = kernel_rows(kernel, Xb, X, dtype=gram.dtype, n_jobs=self.n_jobs,
                        diag_start=gram.n)
        if V is None:
            return gram.append(B), None
        TbV = np.empty((Xb.shape[0], V.shape[1]))
        return gram.append(B, V, out=TbV), TbV

    def _batch_solve(self, gram: GrowingGram, X, kernel: Kernel, k: int, m: int, rule: str,
                     start: tuple[np.ndarray, np.ndarray] | None = None):
        """Top ``m`` pairs of the centred matrix from scratch (the first ``k`` to the
        tolerance), with KernelPCA's solver ``rule`` for this size.

        'dense' (LAPACK) or 'arpack': on the stored matrix made contiguous, as a refit
        would do but without re-evaluating the kernel. 'krylov': KernelPCA's block
        Lanczos over the stored blocks, from the Nyström start ``start = (P, T P)``
        (:meth:`_start_block`; made here, with a pass, when not given), for the ``k``
        wanted pairs only (:meth:`_lanczos_solve`). Returns ``(values, vectors,
        products, passes, converged)``.
        """
        N = gram.n
        if m == 0:
            return np.zeros(0), np.zeros((N, 0)), np.zeros((N, 0)), 0, True
        op = CenteredOperator(gram, gram.centering())
        b = self._lanczos(N, k, rule)
        if b:
            passes = 0
            if start is None:
                P = self._start_block(X, kernel, k, rule)
                start, passes = (P, gram.matmat(P)), 1
            with blas_threads(1):  # the passes' workers take the cores (as KernelPCA)
                w, Y, KY, more, ok = self._lanczos_solve(op, k, m, b, *start)
            return w, Y, KY, passes + more, ok
        dense = op.to_dense().astype(np.float64, copy=False)
        if rule == "krylov":  # a Lanczos basis would cover half the space: LAPACK
            rule = "dense"
        # ARPACK's many small products on BLAS threads sized by their 2 N^2 flops, as
        # in KernelPCA (kpca._parallel.call_threads: one thread up to 5,792 rows)
        with sized_threads(2.0 * N * N):
            # the solver may decompose the matrix in place: it is ours
            res = eigsh_top(DenseOperator(dense, owned=True), m, solver=rule,
                            random_state=0, fallback=rule == "arpack")
        # every direction orthogonal to the constant vector (the null direction of K~),
        # then Rayleigh-Ritz on them with their exact products
        V = res.vectors - res.vectors.mean(axis=0)[None, :]
        KV = np.asarray(op.matmat(V), dtype=np.float64)
        w, Y, KY = rayleigh_ritz(V, KV, m)
        return w, Y, KY, 0, res.converged

    def _lanczos_solve(self, op: CenteredOperator, k: int, m: int, b: int, P: np.ndarray,
                       TP: np.ndarray):
        """:meth:`_batch_solve` by KernelPCA's block Lanczos, from the start block
        ``P`` (``TP``: its product with the stored, uncentred matrix).

        Lanczos converges the ``k`` wanted pairs only. The ``m - k`` guard pairs that
        the next update starts from then cost one pass, shared with the products of
        the converged vectors: the residuals of the Ritz pairs in ``span P`` (whose
        products are known) join the converged vectors, one pass multiplies both, and
        Rayleigh-Ritz on all of them (with ``P``) gives ``m`` pairs, the first ``k``
        at least as accurate as Lanczos's (a larger space).
        """
        KP = _centred_product(op, P, TP)
        tol = default_rtol(self.tol, op.dtype)
        res = eigsh_top(op, k, solver="krylov", tol=tol, random_state=0, fallback=False,
                        start=(P[:, :b], KP[:, :b]))
        V = res.vectors - res.vectors.mean(axis=0)[None, :]
        # the residual directions of the Ritz pairs of span P (orthonormal: no
        # re-orthonormalization), outside span [V, P]
        w0, Y0, KY0 = rayleigh_ritz(P, KP, P.shape[1], orthonormal=True)
        basis = np.hstack([V, orthogonal_directions(P, V)])
        Z = np.hstack([V, orthogonal_directions(KY0 - Y0 * w0[None, :], basis)])
        KZ = np.asarray(op.matmat(Z), dtype=np.float64)
        # [V, residuals] (orthonormal) have their own products; P joins where it is not
        # (nearly) in their span, so that float32 products are not amplified
        w, Y, KY = rayleigh_ritz(Z, KZ, m, (P, KP), orthonormal=True)
        return w, Y, KY, 1 + res.n_matvec // b, res.converged

    def _whole_gram(self, kernel: Kernel, X, dtype: np.dtype, probe: np.ndarray | None = None,
                    rows: int | None = None) -> tuple[GrowingGram, np.ndarray | None]:
        """The stored kernel values of all rows of ``X``, evaluated at once
        (:meth:`kpca.operators.GrowingGram.build`) in block rows of ``rows`` rows (a
        batch fit; default ``incremental_rebuild_rows``: a loaded model); and
        ``T @ probe``, made on the way (None without a probe). Kernels not bounded by
        a constant diagonal are stored centred (their constant part would cancel in
        float32 products)."""
        if rows is None:
            rows = int(get_config()["incremental_rebuild_rows"])
        return GrowingGram.build(kernel, X, dtype=dtype, rows=max(1, rows), n_jobs=self.n_jobs,
                                 probe=probe, center=kernel.constant_diag is None)

    def _exact_attributes(self, state, X, gram, kernel, values, vectors, products, passes,
                          k) -> dict:
        N = X.shape[0]
        dtype = gram.dtype
        out_dtype = X.dtype
        res = finalize(EigenResult(values[:k].copy(), vectors[:, :k].copy(), "incremental"),
                       noise_floor=gram.noise_floor())
        w, V = res.values, res.vectors
        if w.shape[0] < k:  # fewer rows than components: the null direction completes them
            extra = k - w.shape[0]
            w = np.concatenate([w, np.zeros(extra)])
            null = np.zeros((N, extra))
            null[:, 0] = 1 / np.sqrt(N)
            V = np.hstack([V, null])
        diag_k = gram.diag_k
        centering = gram.kernel_centering()
        trace = max(float(np.sum(centering.train_diag(diag_k))), 0.0)  # trace of K~
        nz = np.flatnonzero(w)
        A = np.zeros(V.shape)
        A[:, nz] = V[:, nz] / np.sqrt(w[nz])
        raw = V * np.sqrt(w)
        space = FittedSubspace.from_dual(
            kernel, X, A, centering, basis_scores=raw, score_variance=w / N,
            norm_floor=norm_floor(diag_k, dtype), od_noise=od_noise(diag_k, dtype),
            rows_dtype=dtype.name,
        )
        fitted = dict(state)
        fitted.update({
            "X_fit_": X, "gram_": gram, "n_samples_seen_": N, "mode_": "exact",
            "ritz_values_": values, "ritz_vectors_": vectors, "ritz_products_": products,
            "eigenvalues_": w.astype(out_dtype), "eigenvectors_": V.astype(out_dtype),
            "n_components_": k, "n_passes_": int(passes),
            "explained_variance_": (w / N).astype(out_dtype),
            "explained_variance_ratio_": (w / trace if trace > 0 else 0 * w).astype(out_dtype),
            "subspace_": space,
        })
        sd, od = space.distances(raw, space.basis_sqnorms(diag_k))
        fitted.update(outlier_statistics(space, sd, od, self.contamination))
        return fitted

    # ------------------------------------------------------------------ bounded mode
    def _n_landmarks(self) -> int:
        if self.max_rows is not None:
            return int(self.max_rows)
        return int(get_config()["incremental_landmarks"])

    def _to_bounded(self, state: dict) -> dict:
        """From the exact mode's rows to landmarks and feature statistics (exact
        Nyström statistics of every row kept so far)."""
        X = state["X_fit_"]
        kernel = state["kernel_"]
        L = min(self._n_landmarks(), X.shape[0])
        rng = check_random_state(self.random_state)
        idx = np.sort(rng.choice(X.shape[0], size=L, replace=False))
        Z = X[idx].copy()
        out = {k: v for k, v in state.items()
               if k not in ("gram_", "ritz_values_", "ritz_vectors_", "ritz_products_",
                            "eigenvectors_")}
        Kzz = _sym(np.asarray(kernel.block(Z), dtype=np.float64))
        W0, red0 = _whiten(Kzz)
        shift = Kzz.mean(axis=0)
        stats = accumulate(lambda Xb: np.asarray(kernel.block(Xb, Z), dtype=np.float64),
                           row_blocks(X, 4096), shift, self.n_jobs)
        keep = rng.choice(X.shape[0], size=min(get_config()["incremental_outlier_sample"],
                                               X.shape[0]), replace=False)
        out["outlier_sample_"] = X[np.sort(keep)].copy()
        out.update({"mode_": "bounded", "X_fit_": Z, "landmark_kernel_": Kzz,
                    "normalization_": W0, "landmark_redundancy_": red0,
                    "feature_shift_": shift, "feature_total_": stats.total,
                    "feature_scatter_": stats.scatter, "n_swaps_": 0})
        return out

    def _bounded_update(self, state: dict, Xb, dev: Any = None) -> dict:
        """The bounded mode's attributes after the batch ``Xb``. With ``dev`` (the batch
        on its device), the batch's kernel values against the landmarks, their scatter
        and the landmark swaps' residuals are computed there; the landmark-sized
        statistics and their solve stay on the host (L x L, as the NumPy model's)."""
        kernel = state["kernel_"]
        Z = state["X_fit_"]
        L = self._n_landmarks()
        b = Xb.shape[0]
        xp = None if dev is None else device_namespace(dev)
        Fd = None  # the batch's kernel values against the landmarks, on the device
        if Z.shape[0] == 0:  # bounded from the first batch
            take = min(L, b)
            rng = check_random_state(self.random_state)
            Z = Xb[np.sort(rng.choice(b, size=take, replace=False))].copy()
            if dev is None:
                Kzz = _sym(np.asarray(kernel.block(Z), dtype=np.float64))
            else:
                Zd = _on_device(Z, dev)
                Kzz = _sym(to_host(kernel.block(Zd, xp=xp), np.float64))
            shift, total, scatter = Kzz.mean(axis=0), np.zeros(take), np.zeros((take, take))
            (W, red), swaps = _whiten(Kzz), 0
        else:
            Z, Kzz, W = state["X_fit_"], state["landmark_kernel_"], state["normalization_"]
            red = state["landmark_redundancy_"]
            shift, total, scatter = (state["feature_shift_"], state["feature_total_"],
                                     state["feature_scatter_"])
            rng = np.random.default_rng([state["stream_seed_"], state["n_samples_seen_"], 1])
            Z_before = Z
            Z, Kzz, W, red, shift, total, scatter, swaps, Fd = self._swap_landmarks(
                kernel, Xb, Z, Kzz, W, red, shift, total, scatter, L, rng, dev)
            if Z is not Z_before:
                Fd = None  # the landmarks changed: their kernel values are evaluated anew
        if not np.all(np.isfinite(Kzz)):
            raise ValueError("the kernel values of this batch are not finite (overflow): check "
                             "the kernel parameters or scale the data.")
        if dev is None:
            F = np.asarray(kernel.block(Xb, Z), dtype=np.float64)
            if not np.all(np.isfinite(F)):
                raise ValueError("the kernel values of this batch are not finite (overflow): "
                                 "check the kernel parameters or scale the data.")
            block = FeatureStats.of_block(F, shift)
        else:
            if Fd is None:
                Fd = xp.astype(kernel.block(dev, _on_device(Z, dev), xp=xp), xp.float64)
            if not bool(xp.all(xp.isfinite(Fd))):
                raise ValueError("the kernel values of this batch are not finite (overflow): "
                                 "check the kernel parameters or scale the data.")
            # FeatureStats.of_block on the device: only the (L,) total and (L, L) scatter
            # come back
            A = Fd - from_host(shift, xp, dev.device)[None, :]
            block = FeatureStats(b, to_host(xp.sum(A, axis=0), np.float64),
                                 to_host(xp.matrix_transpose(A) @ A, np.float64))
        stats = FeatureStats(state["n_samples_seen_"], total, scatter) + block
        k = min(int(self.n_components), W.shape[1], stats.n)
        res = feature_solve(stats, shift, W, k)
        lam, U = res.covariance_eigenvalues[:k], res.components[:, :k]
        # as many components as the exact mode (and KernelPCA) would give: those
        # beyond the landmarks' rank have eigenvalue 0 and score 0
        k_all = min(int(self.n_components), stats.n)
        if k < k_all:
            lam = np.concatenate([lam, np.zeros(k_all - k)])
            U = np.hstack([U, np.zeros((U.shape[0], k_all - k))])
            k = k_all
        noise = od_noise(np.asarray(kernel.diag(Z), np.float64), np.dtype(np.float64))
        space = landmark_subspace(kernel, Z, Kzz, W, res.mean, U, lam, noise, np.float64)
        N = stats.n
        out_dtype = Xb.dtype
        fitted = dict(state)
        fitted.update({
            "mode_": "bounded", "X_fit_": Z, "landmark_kernel_": Kzz, "normalization_": W,
            "landmark_redundancy_": red,
            "feature_shift_": shift,
            "feature_total_": stats.total, "feature_scatter_": stats.scatter,
            "n_samples_seen_": N, "n_swaps_": int(state.get("n_swaps_", 0)) + swaps,
            "eigenvalues_": (N * lam).astype(out_dtype), "n_components_": k, "n_passes_": 0,
            "explained_variance_": lam.astype(out_dtype),
            "explained_variance_ratio_": (lam / res.trace if res.trace > 0 else 0 * lam
                                          ).astype(out_dtype),
            "subspace_": space,
        })
        # the outlier cut-offs come from a uniform sample of the whole stream
        sample = _reservoir(state.get("outlier_sample_"), state["n_samples_seen_"], Xb,
                            state["stream_seed_"])
        fitted["outlier_sample_"] = sample
        sd, od = space.distances(*space.raw_projection(sample))
        fitted.update(outlier_statistics(space, sd, od, self.contamination))
        return fitted

    def _swap_landmarks(self, kernel, Xb, Z, Kzz, W, red, shift, total, scatter, L, rng,
                        dev=None):
        """Grow the landmark set to ``L`` rows, then swap in rows far from its span.

        A row's squared residual is ``r(x) = k(x,x) - ||k(x,Z) W||^2``, its squared
        distance to ``span phi(Z)``. Rows with ``r(x)`` above
        ``incremental_swap_threshold`` (a kpca setting) times ``k(x,x)`` are
        candidates, picked by a randomly pivoted Cholesky factorisation of their
        residual kernel (pivots drawn in proportion to their residual; no
        near-duplicates): picks fill the free places, then replace the landmarks whose
        own residual against the others, ``1 / [K^-1]_jj``, is smallest, where a
        pick's residual exceeds ``incremental_swap_margin`` times it (the swap
        enlarges ``det K_ZZ``: the landmarks spread over where the stream now is). At
        most ``incremental_max_swap_fraction`` of the landmarks move per batch. The
        statistics of earlier rows get each new
        coordinate from their Nyström projection, ``k(x, x_i) ~ k(x, Z) K^+ k(Z, x_i)``.

        With ``dev`` (the batch on its device) the batch's kernel values ``F`` against the
        landmarks and the residuals are computed there (the candidates' few rows come
        to the host); the last value returned is then ``F`` on the device (valid while
        the landmarks are unchanged), else None.
        """
        config = get_config()
        Fd = None
        if dev is None:
            diag = np.asarray(kernel.diag(Xb), dtype=np.float64)
            F = np.asarray(kernel.block(Xb, Z), dtype=np.float64)
            FW = F @ W
            resid = diag - np.einsum("ij,ij->i", FW, FW)
        else:
            xp = device_namespace(dev)
            diag = to_host(kernel.diag(dev, xp=xp), np.float64)
            Fd = xp.astype(kernel.block(dev, _on_device(Z, dev), xp=xp), xp.float64)
            FWd = Fd @ from_host(W, xp, dev.device)
            resid = diag - to_host(xp.sum(FWd * FWd, axis=1), np.float64)
        floor = config["incremental_swap_threshold"] * np.maximum(diag, 1e-300)
        cand = np.flatnonzero(resid > floor)
        free = max(0, L - Z.shape[0])
        budget = free + max(1, int(np.ceil(config["incremental_max_swap_fraction"] * L)))
        if cand.size == 0:
            return Z, Kzz, W, red, shift, total, scatter, 0, Fd
        cand = cand[np.argsort(-resid[cand])][: 4 * budget]
        # greedy pivoted Cholesky of the candidates' residual kernel: each pick is
        # the row farthest from the span of the landmarks and of the rows picked
        # before it, so near-duplicates (of one another or of a landmark) never enter
        FWc = FW[cand] if dev is None else _take_rows(FWd, cand)
        R = (np.asarray(kernel.block(Xb[cand]), dtype=np.float64)
             - FWc @ FWc.T)
        r = resid[cand].copy()
        picked, gains = [], []
        while len(picked) < budget:
            # randomly pivoted Cholesky (Chen, Epperly, Tropp & Webber 2022): a pivot
            # drawn in proportion to its residual, not the largest one -- the farthest
            # rows first would crowd the landmarks onto the edge of the data
            live = np.flatnonzero(r > floor[cand])
            if live.size == 0:
                break
            p = int(rng.choice(live, p=r[live] / r[live].sum()))
            picked.append(p)
            gains.append(float(r[p]))
            col = R[:, p] / np.sqrt(r[p])
            R -= np.outer(col, col)
            r = np.diagonal(R).copy()
            r[picked] = -np.inf
        picked, gains = np.array(picked, dtype=int), np.array(gains)
        n_swap = 0
        drop = np.zeros(0, dtype=int)
        if picked.size > free:
            # red: each landmark's squared residual against the others (_whiten)
            worst = np.argsort(red)[: picked.size - free]
            # a margin against churn: on a stationary stream most rows are about as
            # far from the span as the most redundant landmark is from the others
            margin = config["incremental_swap_margin"]
            n_swap = int(np.sum(gains[free:][: worst.size] > margin * red[worst]))
            drop = worst[:n_swap]
        take = cand[picked[: free + n_swap]]
        if take.size == 0:
            return Z, Kzz, W, red, shift, total, scatter, 0, Fd
        Xc = Xb[take]
        Fc = F[take] if dev is None else _take_rows(Fd, take)
        A = W @ (W.T @ Fc.T)  # Nyström coefficients of the new coordinates, (m, t)
        Kcc = _sym(np.asarray(kernel.block(Xc), dtype=np.float64))
        SA = scatter @ A
        scatter = np.block([[scatter, SA], [SA.T, A.T @ SA]])
        total = np.concatenate([total, A.T @ total])
        shift = np.concatenate([shift, A.T @ shift])
        Kzz = np.block([[Kzz, Fc.T], [Fc, Kcc]])
        Z = np.vstack([Z, Xc.astype(Z.dtype)])
        keep = np.ones(Z.shape[0], dtype=bool)
        keep[drop] = False
        Z, Kzz = Z[keep], Kzz[np.ix_(keep, keep)]
        total, shift, scatter = total[keep], shift[keep], scatter[np.ix_(keep, keep)]
        return (Z, Kzz, *_whiten(Kzz), shift, total, scatter, int(n_swap), None)

    # ------------------------------------------------------------------ sklearn glue
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _device_rows(dev: Any, kernel: Kernel) -> Any:
    """``dev`` (a batch on its device) where ``kernel`` evaluates Array API arrays, else
    None: a kernel of NumPy arrays only (a Python callable) is evaluated on the host
    copy, where the update then runs (logged)."""
    if dev is None or kernel.supports_array_api():
        return dev
    logger.info("IncrementalKernelPCA: kernel %r evaluates NumPy arrays only; the update "
                "runs on the host copy of the rows", kernel)
    return None


def _device_rule(rule: str) -> str:
    """KernelPCA's solver rule on a device: ARPACK is a host algorithm, so its sizes take
    block Lanczos there (as :func:`kpca.solvers.eigsh_top` on a device operator), and
    the update path with it; below the Lanczos sizes the stored matrix is decomposed
    (``eigh``)."""
    return "krylov" if rule == "arpack" else rule


def _on_device(A: np.ndarray, like: Any) -> Any:
    """The host rows ``A`` on the device of ``like``, in its dtype."""
    xp = device_namespace(like)
    return xp.astype(from_host(A, xp, like.device), like.dtype)


def _take_rows(A: Any, idx: np.ndarray) -> np.ndarray:
    """Rows ``idx`` of a device array, on the host in float64."""
    xp = device_namespace(A)
    return to_host(xp.take(A, from_host(np.asarray(idx, dtype=np.int64), xp, A.device),
                           axis=0), np.float64)


def _centred_product(op: CenteredOperator, V: np.ndarray, TV: np.ndarray) -> np.ndarray:
    """``op @ V`` (``H T H V``, as :class:`kpca.operators.CenteredOperator` makes it)
    from the product ``T V`` with the uncentred stored matrix."""
    c = op.centering
    r, g = c.row_means, c.grand_mean
    colsum = V.sum(axis=0)
    return TV - (r @ V)[None, :] - np.outer(r, colsum) + (g * colsum)[None, :]


def _exact_refusal(N: int, reason: str) -> str:
    return (f"mode='exact' cannot keep {N} rows: {reason}. Raise memory_limit or max_rows "
            "(set_params, then partial_fit again), or use mode='auto' or 'bounded' "
            "(streaming Nyström).")


def _reservoir(sample, seen: int, Xb, seed: int) -> np.ndarray:
    """A uniform sample of at most ``incremental_outlier_sample`` (kpca settings) rows
    of the stream (reservoir sampling, Vitter's algorithm R), updated with the batch
    ``Xb`` whose first row is row ``seen`` of the stream; reproducible from the
    stream's seed."""
    R = int(get_config()["incremental_outlier_sample"])
    sample = Xb[:0].copy() if sample is None else sample.copy()
    free = max(0, min(Xb.shape[0], R - sample.shape[0]))
    sample = np.concatenate([sample, Xb[:free]])
    rest = np.arange(free, Xb.shape[0])
    if rest.size:
        rng = np.random.default_rng([int(seed), int(seen)])
        slots = rng.integers(0, seen + rest + 1)
        for row, slot in zip(rest[slots < R], slots[slots < R], strict=True):
            sample[slot] = Xb[row]
    return sample


def _same(a: Any, b: Any) -> bool:
    """Parameter equality that survives a save/load round trip (kernels, arrays and
    containers compare by value)."""
    if a is b:
        return True
    if isinstance(a, Kernel) and type(a) is type(b):
        return _same(a.get_params(deep=False), b.get_params(deep=False))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(_same(x, y) for x, y in zip(a, b, strict=True)))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
                and a.shape == b.shape and bool(np.array_equal(a, b)))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - exotic objects compare by identity
        return False


def _sym(K: np.ndarray) -> np.ndarray:
    return 0.5 * (K + K.T)


def _whiten(K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``K^{-1/2}`` (:func:`kpca.approx._base.inverse_sqrt`, rcond 1e-10), and each
    landmark's squared residual against the others, ``1 / [(K + eps I)^-1]_jj``, from
    the same eigendecomposition (a ridge of round-off size: a duplicated landmark
    counts as fully redundant, ~0, rather than as not redundant at all)."""
    W, s, V = inverse_sqrt(K, 1e-10)
    top = max(float(s.max(initial=0.0)), np.finfo(float).tiny)
    red = 1.0 / np.maximum((V**2) @ (1.0 / (np.maximum(s, 0.0) + 1e-10 * top)),
                           np.finfo(float).tiny)
    return W, red
