"""What a model file of each estimator holds: the one schema of the file format.

For each estimator class exported by kpca, :data:`SCHEMAS` lists its fitted
attributes -- the only ones :func:`kpca.io.save_model` writes and
:func:`kpca.io.load_model` accepts -- with their kind, dtype, the relations between
their shapes, and whether their values must be finite. The format therefore does not
follow ``vars(estimator)``: an attribute renamed or added in an estimator makes
``save_model`` fail (the schema must change with it, deliberately), instead of
silently changing what files hold.

Shapes are written with symbols, bound by the first field that fixes them and checked
against every later one:

* ``d``: ``n_features_in_`` (the input columns);
* ``k``: ``n_components_``;
* ``n``: the training rows kept (``X_fit_``);
* ``m``: the expansion points of the fitted subspace (training rows, landmarks, or
  random features; docs/math.md, "The fitted subspace");
* other names (``r``, ``s``, ``q``, ...): sizes that only need to agree among the fields
  that name them.

:func:`check_state` runs on the JSON metadata and the arrays' ``.npy`` headers before
any array is read (shapes, dtypes, which attributes are present);
:func:`check_finite` runs once the arrays are read (NaN and infinity). Both raise
``ValueError`` naming the file and the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from sklearn.utils._set_output import ADAPTERS_MANAGER

_TYPE = "__type__"

#: the keys of scikit-learn's ``_sklearn_output_config``: ``set_output`` writes only
#: ``"transform"`` (it configures ``transform`` and ``fit_transform``)
OUTPUT_KEYS = ("transform",)

#: what an array's .npy header declares: its shape and dtype
Header = tuple[tuple[int, ...], np.dtype]


# ------------------------------------------------------------------------- field kinds
@dataclasses.dataclass(frozen=True)
class Field:
    """One fitted attribute (or field of a stored dataclass).

    Attributes
    ----------
    kind : str
        ``"int"``, ``"float"``, ``"bool"``, ``"str"`` (Python or NumPy scalars),
        ``"array"`` (a dense array), ``"rows"`` (expansion points: a dense numeric
        array, a sparse matrix, or a 1-D array of strings), ``"names"`` (a 1-D array
        of strings), ``"kernel"``, ``"dataclass"``, ``"output"`` (scikit-learn's
        ``set_output`` configuration) or ``"any"`` (a value of the generic encoding,
        checked only by the decoder).
    shape : tuple of str or int
        Array shapes, with symbols (see the module docstring).
    dtype : str
        Array dtypes allowed: ``"float"`` (float32 or float64), ``"float64"``,
        ``"int"`` (any signed or unsigned integer).
    finite : bool
        Values must be finite (arrays and floats).
    not_nan : bool
        For a float that need not be finite: it may be infinite, not NaN.
    symbol : str or None
        For ``"int"``: the shape symbol this value defines.
    low : int or None
        For ``"int"`` and integer arrays: the smallest value allowed.
    below : str or None
        For integer arrays: the values must be less than this symbol (indices).
    choices : tuple of str or None
        For ``"str"``: the values allowed.
    fields : mapping or None
        For ``"dataclass"``: the fields of the stored dataclass.
    cls : str or None
        For ``"dataclass"``: its registered class name.
    optional : bool
        The attribute may be absent (a fit option, e.g. ``fit_inverse_transform``).
    nullable : bool
        The value may be ``None``.
    """

    kind: str
    shape: tuple[str | int, ...] = ()
    dtype: str = "float"
    finite: bool = True
    not_nan: bool = False
    symbol: str | None = None
    low: int | None = None
    below: str | None = None
    choices: tuple[str, ...] | None = None
    fields: Mapping[str, Field] | None = None
    cls: str | None = None
    optional: bool = False
    nullable: bool = False


def _int(symbol: str | None = None, low: int | None = 0, **kw: Any) -> Field:
    return Field("int", symbol=symbol, low=low, **kw)


def _float(**kw: Any) -> Field:
    kw.setdefault("finite", False)
    kw.setdefault("not_nan", True)
    return Field("float", **kw)


def _arr(*shape: str | int, **kw: Any) -> Field:
    return Field("array", shape=shape, **kw)


def _rows(rows: str, cols: str, **kw: Any) -> Field:
    return Field("rows", shape=(rows, cols), **kw)


_STR = Field("str")
_BOOL = Field("bool")
_KERNEL = Field("kernel")

_FOURIER = Field("dataclass", cls="FourierFeatures", nullable=True, fields={
    "weights": _arr("d", "m"),
    "offset": _arr("m"),
    "dtype": Field("str", choices=("float32", "float64")),
})


def _subspace(basis: Field | None) -> Field:
    """The fitted subspace (:class:`kpca.FittedSubspace`) over ``m`` points; ``basis``
    None for an explicit feature map (random features)."""
    return Field("dataclass", cls="FittedSubspace", fields={
        "kernel": _KERNEL,
        "basis": basis if basis is not None else Field("any", nullable=True),
        "coef": _arr("m", "k", dtype="float64"),
        "center": _arr("m", dtype="float64", nullable=True),
        "center_products": _arr("m", dtype="float64"),
        "center_sqnorm": _float(finite=True),
        "score_variance": _arr("k", dtype="float64"),
        "basis_scores": _arr("m", "k", dtype="float64", nullable=True),
        "features": _FOURIER,
        "normalize": _BOOL,
        "norm_floor": _float(finite=True),
        "od_noise": _float(finite=True),
        "rows_dtype": Field("str", choices=("float32", "float64")),
    })


#: fitted attributes every estimator has (sizes: k components, s rows whose
#: distances the fit kept -- the training rows, or a sample of them)
_COMMON: dict[str, Field] = {
    "n_features_in_": _int("d", low=1, optional=True),  # absent for strings
    "feature_names_in_": Field("names", shape=("d",), optional=True),
    "n_components_": _int("k"),
    "kernel_": _KERNEL,
    "gamma_": _float(finite=False, not_nan=False, nullable=True),  # NaN: no gamma
    "eigenvalues_": _arr("k"),
    "explained_variance_": _arr("k"),
    "explained_variance_ratio_": _arr("k"),
    "score_distances_": _arr("s"),
    "orthogonal_distances_": _arr("s"),
    "sd_cutoff_": _float(),
    "od_cutoff_": _float(),
    "offset_": _float(),
    # scikit-learn's set_output configuration (a dict of strings), not fitted state
    "_sklearn_output_config": Field("output", optional=True),
}

#: exact kernel PCA and the estimators that share its fit: n training rows
_EXACT: dict[str, Field] = {
    **_COMMON,
    "X_fit_": _rows("n", "d"),
    "eigenvectors_": _arr("n", "k"),
    "eigen_solver_": _STR,
    "subspace_": _subspace(_rows("m", "d")),
    # fit_inverse_transform=True: the ridge pre-image map (its dual coefficients
    # map the n training rows to the d input columns) and the training scores
    "dual_coef_": _arr("n", "d", optional=True),
    "X_transformed_fit_": _arr("n", "k", optional=True),
}

_ITERATIVE: dict[str, Field] = {
    "n_iter_": _int(),
    "converged_": _BOOL,
}

#: the schema of each estimator class, by class name
SCHEMAS: dict[str, dict[str, Field]] = {
    "KernelPCA": {
        **_EXACT,
        # n_components='auto': the parallel analysis that chose k (c candidates
        # compared, p column-permuted copies; docs/math.md, "Parallel analysis")
        "parallel_analysis_": Field("dataclass", cls="ParallelAnalysis", optional=True, fields={
            "eigenvalues": _arr("c", dtype="float64"),
            "null_eigenvalues": _arr("p", "c", dtype="float64"),
            "threshold": _arr("c", dtype="float64"),
            "quantile": _float(finite=True),
            "n_permutations": _int("p", low=1),
            "n_components": _int(low=0),
            "trace": _float(finite=True),
            "gamma": _float(finite=False, not_nan=False, nullable=True),
        }),
    },
    "WeightedKernelPCA": {
        **_EXACT, **_ITERATIVE,
        "weights_": _arr("n"),
        "distances_": _arr("n"),
        "center_weights_": _arr("n"),
    },
    "SphericalKernelPCA": {
        **_EXACT, **_ITERATIVE,
        "center_weights_": _arr("n", nullable=True),
        "distances_": _arr("n"),
    },
    "AnovaKernelPCA": {
        **_EXACT, **_ITERATIVE,
        "beta_": _arr("d"),
        "objective_": _arr("t"),
        "beta_path_": _arr("t", "d"),
    },
    "KernelROBPCA": {  # its components are not eigenvectors of the training kernel
        **{k: v for k, v in _EXACT.items() if k != "eigenvectors_"},
        "score_variance_": _arr("k", dtype="float64"),
        "outlyingness_": _arr("n"),
        "h_": _int("h", low=1),
        "h_subset_": _arr("h", dtype="int", below="n", low=0),
        "center_weights_": _arr("n"),
        "n_iter_": _int(),
    },
    "NystromKernelPCA": {
        **_COMMON,
        "landmarks_": _rows("m", "d"),
        "n_landmarks_": _int("m", low=1),
        # K_mm^{-1/2} on its r retained eigenvectors (r <= m); the mean of the
        # kernel rows k(x, Z) (m values) and the principal axes in the r whitened
        # coordinates
        "normalization_": _arr("m", "r"),
        "mean_": _arr("m"),
        "components_": _arr("k", "r"),
        "n_samples_": _int(low=1),
        "subspace_": _subspace(_rows("m", "d")),
    },
    "RandomFeatureKernelPCA": {
        **_COMMON,
        "random_weights_": _arr("d", "m"),
        "random_offset_": _arr("m"),
        "mean_": _arr("m"),
        "components_": _arr("k", "m"),
        "n_samples_": _int(low=1),
        "subspace_": _subspace(None),
    },
    "IncrementalKernelPCA": {
        **_COMMON,
        "mode_": Field("str", choices=("exact", "bounded")),
        "n_samples_seen_": _int(low=1),
        "memory_budget_": _int(),
        "stream_seed_": _int(low=None),
        "stream_params_": Field("any"),
        "X_fit_": _rows("n", "d"),
        "subspace_": _subspace(_rows("m", "d")),
        # exact mode: the Ritz pairs of the kept rows' kernel matrix
        "ritz_values_": _arr("q", dtype="float64", optional=True),
        "ritz_vectors_": _arr("n", "q", dtype="float64", optional=True),
        "ritz_products_": _arr("n", "q", dtype="float64", optional=True),
        "eigenvectors_": _arr("n", "k", optional=True),
        "n_passes_": _int(),
        # bounded mode: the n landmarks' kernel, its whitening (r retained
        # directions) and the streamed feature statistics
        "landmark_kernel_": _arr("n", "n", dtype="float64", optional=True),
        "normalization_": _arr("n", "r", dtype="float64", optional=True),
        "landmark_redundancy_": _arr("n", dtype="float64", optional=True),
        "feature_shift_": _arr("n", dtype="float64", optional=True),
        "feature_total_": _arr("n", dtype="float64", optional=True),
        "feature_scatter_": _arr("n", "n", dtype="float64", optional=True),
        "n_swaps_": _int(optional=True),
        "outlier_sample_": _rows("u", "d", optional=True),
    },
}

#: the fitted state of the StandardScaler of a model saved with standardized inputs
#: (format version 3): d columns, as the estimator's
SCALER: dict[str, Field] = {
    "n_features_in_": _int("d", low=1),
    "mean_": _arr("d", dtype="float64", nullable=True),
    "scale_": _arr("d", dtype="float64", nullable=True),
    "var_": _arr("d", dtype="float64", nullable=True),
}

#: fields that a file must hold together (one mode of an estimator)
_MODES: dict[str, dict[str, tuple[str, ...]]] = {
    "IncrementalKernelPCA": {
        "exact": ("ritz_values_", "ritz_vectors_", "ritz_products_", "eigenvectors_"),
        "bounded": ("landmark_kernel_", "normalization_", "landmark_redundancy_",
                    "feature_shift_", "feature_total_", "feature_scatter_", "n_swaps_",
                    "outlier_sample_"),
    },
}


# ------------------------------------------------------------------------- checking
class SchemaError(ValueError):
    """A model file that does not fit its class's schema."""


class Checker:
    """Check a model file's state against a schema, field by field.

    Parameters
    ----------
    cls_name : str
        The estimator class the file declares.
    source : str
        The file, for the messages.
    header : callable
        Array key -> ``(shape, dtype)`` read from the ``.npy`` header (raises
        ``ValueError`` for a missing key).
    scalar : callable
        Array key -> the value of a 0-d array (small: headers checked first).
    """

    def __init__(self, cls_name: str, source: str, header: Callable[[Any], Header],
                 scalar: Callable[[Any], Any]) -> None:
        self.cls_name = cls_name
        self.source = source
        self.header = header
        self.scalar = scalar
        self.sizes: dict[str, tuple[int, str]] = {}

    def fail(self, where: str, msg: str) -> SchemaError:
        return SchemaError(f"{self.source}: invalid kpca model file: field {where!r} of "
                           f"{self.cls_name}: {msg}.")

    # -------------------------------------------------------------- the whole state
    def check_state(self, state: Mapping[str, Any]) -> None:
        """Presence of the schema's fields, then each field (in the schema's order)."""
        schema = SCHEMAS[self.cls_name]
        unknown = [k for k in state if k not in schema]
        if unknown:
            raise self.fail(unknown[0], f"not a fitted attribute of {self.cls_name} (bad "
                            f"attribute name {unknown[0]!r}; expected only "
                            f"{sorted(schema)})")
        modes = _MODES.get(self.cls_name, {})
        moded = {f for fields in modes.values() for f in fields}
        for name, field in schema.items():
            if name not in state and not field.optional:
                raise self.fail(name, "missing (the file does not hold this fitted "
                                "attribute; was it written for another class?)")
        for mode, fields in modes.items():
            present = [f for f in fields if f in state]
            if present and len(present) != len(fields):
                missing = [f for f in fields if f not in state]
                raise self.fail(missing[0], f"missing (the {mode} mode's fields "
                                "come together)")
        if modes and "mode_" in state:
            mode = self._value(state["mode_"], "mode_", str)
            if any(f not in state for f in modes.get(mode, ())):
                raise self.fail("mode_", f"{mode!r}, but the fields of that mode are missing")
            other = [f for f in moded - set(modes.get(mode, ())) if f in state]
            if other:
                raise self.fail(other[0], f"present in a model of mode {mode!r}")
        self.check_fields(schema, state)

    def check_fields(self, schema: Mapping[str, Field], nodes: Mapping[str, Any],
                     prefix: str = "") -> None:
        """Each field of ``schema`` present in ``nodes``, in the schema's order."""
        for name, field in schema.items():
            if name in nodes:
                self.check(nodes[name], field, prefix + name)

    # -------------------------------------------------------------- one field
    def check(self, node: Any, field: Field, where: str) -> None:
        if node is None:
            if not field.nullable:
                raise self.fail(where, "None, but a value is required")
            return
        kind = field.kind
        if kind == "any":
            return
        if kind == "int":
            value = self._value(node, where, int)
            if field.low is not None and value < field.low:
                raise self.fail(where, f"{value} is below {field.low}")
            if field.symbol is not None:
                self._bind(field.symbol, value, where)
        elif kind == "float":
            value = self._value(node, where, float)
            if np.isnan(value) and (field.finite or field.not_nan):
                raise self.fail(where, "NaN")
            if field.finite and not np.isfinite(value):
                raise self.fail(where, f"{value} is not finite")
        elif kind == "bool":
            self._value(node, where, bool)
        elif kind == "str":
            value = self._value(node, where, str)
            if field.choices is not None and value not in field.choices:
                raise self.fail(where, f"{value!r} is not one of {list(field.choices)}")
        elif kind == "kernel":
            if not (isinstance(node, dict) and node.get(_TYPE) == "kernel"):
                raise self.fail(where, "not a kernel")
        elif kind == "dataclass":
            self._dataclass(node, field, where)
        elif kind == "output":
            self._output_config(node, where)
        elif kind == "names":
            shape, dtype = self._array(node, where, sparse=False)
            if dtype.kind not in "UO" or not node.get("object"):
                raise self.fail(where, f"an array of {dtype}, not of strings")
            self._shape(shape, field.shape, where)
        elif kind in ("array", "rows"):
            self._numeric(node, field, where)
        else:  # pragma: no cover - a schema error
            raise AssertionError(f"unknown field kind {kind!r}")

    def _value(self, node: Any, where: str, typ: type) -> Any:
        """A Python or NumPy scalar of type ``typ`` (bool is not an int)."""
        if isinstance(node, dict) and node.get(_TYPE) == "scalar":
            shape, dtype = self.header(node.get("key"))
            want = {int: "iu", float: "f", bool: "b", str: "U"}[typ]
            if shape != () or dtype.kind not in want:
                raise self.fail(where, f"expected a {typ.__name__}, got a {dtype} array "
                                f"of shape {shape}")
            return self.scalar(node.get("key")).item()
        if typ is float and isinstance(node, int) and not isinstance(node, bool):
            return float(node)
        if type(node) is not typ:
            raise self.fail(where, f"expected a {typ.__name__}, got {node!r:.40}")
        return node

    def _output_config(self, node: Any, where: str) -> None:
        """scikit-learn's ``set_output`` configuration: a dict of method keys to
        containers that ``sklearn.utils._set_output._get_output_config`` accepts
        (``set_output(transform=None)`` stores nothing, so None is not a value)."""
        if not (isinstance(node, dict) and node.get(_TYPE) == "dict"
                and isinstance(node.get("items"), dict)):
            raise self.fail(where, "expected scikit-learn's set_output configuration, a "
                            f"dict such as {{'transform': 'pandas'}}; got {node!r:.40}")
        containers = sorted(ADAPTERS_MANAGER.supported_outputs)  # 'default', 'pandas', ...
        for key, value in node["items"].items():
            at = f"{where}[{key!r:.40}]"
            if key not in OUTPUT_KEYS:
                raise self.fail(at, f"not a key of set_output (expected {list(OUTPUT_KEYS)})")
            container = self._value(value, at, str)
            if container not in containers:
                raise self.fail(at, f"{container!r:.40} is not one of {containers}")

    def _array(self, node: Any, where: str, sparse: bool) -> tuple[tuple[int, ...], Any]:
        if not isinstance(node, dict):
            raise self.fail(where, f"expected an array, got {node!r:.40}")
        if node.get(_TYPE) == "sparse" and sparse:
            return self._sparse(node, where)
        if node.get(_TYPE) != "array":
            raise self.fail(where, f"expected an array, got a {node.get(_TYPE)!r} value")
        return self.header(node.get("key"))

    def _sparse(self, node: dict, where: str) -> tuple[tuple[int, ...], Any]:
        shape = node.get("shape")
        if not (isinstance(shape, list) and len(shape) == 2
                and all(type(s) is int and s >= 0 for s in shape)):
            raise self.fail(where, "malformed sparse matrix shape")
        data, dtype = self.header(node.get("data"))
        indices, itype = self.header(node.get("indices"))
        indptr, ptype = self.header(node.get("indptr"))
        major = shape[0] if node.get("format") == "csr" else shape[1]
        if (len(data) != 1 or indices != data or indptr != (major + 1,)
                or itype.kind not in "iu" or ptype.kind not in "iu"):
            raise self.fail(where, f"inconsistent sparse matrix: data {data}, indices "
                            f"{indices}, indptr {indptr} for shape {tuple(shape)}")
        return tuple(shape), dtype

    def _numeric(self, node: Any, field: Field, where: str) -> None:
        rows = field.kind == "rows"
        shape, dtype = self._array(node, where, sparse=rows)
        if rows and (dtype.kind in "UO" or node.get("object")):
            # strings (a string kernel): 1-D, one row each
            self._shape(shape, field.shape[:1], where)
            return
        allowed = {"float": ("float32", "float64"), "float64": ("float64",),
                   "int": None}[field.dtype]
        if allowed is None:
            if dtype.kind not in "iu":
                raise self.fail(where, f"dtype {dtype}, expected integers")
        elif dtype.name not in allowed:
            raise self.fail(where, f"dtype {dtype}, expected {' or '.join(allowed)}")
        self._shape(shape, field.shape, where)

    def _shape(self, shape: tuple[int, ...], want: tuple[str | int, ...], where: str) -> None:
        if len(shape) != len(want):
            raise self.fail(where, f"shape {shape}, expected {len(want)} dimension(s) "
                            f"({', '.join(map(str, want))})")
        for got, sym in zip(shape, want, strict=True):
            if isinstance(sym, int):
                if got != sym:
                    raise self.fail(where, f"shape {shape}, expected {want}")
            else:
                self._bind(sym, got, where, shape=shape, want=want)

    def _bind(self, sym: str, value: int, where: str, shape: Any = None,
              want: Any = None) -> None:
        if sym not in self.sizes:
            self.sizes[sym] = (value, where)
            return
        known, by = self.sizes[sym]
        if known != value:
            what = f"shape {shape} against ({', '.join(map(str, want))})" if shape is not None \
                else f"value {value}"
            raise self.fail(where, f"{what}: {sym} = {value}, but {by!r} gives {sym} = {known}")

    def _dataclass(self, node: Any, field: Field, where: str) -> None:
        if not (isinstance(node, dict) and node.get(_TYPE) == "dataclass"
                and node.get("class") == field.cls and isinstance(node.get("fields"), dict)):
            got = node.get("class") if isinstance(node, dict) else node
            raise self.fail(where, f"expected a {field.cls} dataclass, got {got!r:.40}")
        fields = node["fields"]
        assert field.fields is not None
        unknown = [k for k in fields if k not in field.fields]
        if unknown:
            raise self.fail(f"{where}.{unknown[0]}", f"not a field of {field.cls}")
        for name, sub in field.fields.items():
            if name not in fields:
                raise self.fail(f"{where}.{name}", "missing")
            self.check(fields[name], sub, f"{where}.{name}")


    # --------------------------------------------------------------------- values
    def check_values(self, state: Mapping[str, Any],
                     schema: Mapping[str, Field] | None = None, prefix: str = "") -> None:
        """NaN and infinity, and index ranges, in the decoded fitted state (after the
        arrays are read; :meth:`check_state` has checked kinds and shapes)."""
        self._values(SCHEMAS[self.cls_name] if schema is None else schema, state, prefix)

    def _values(self, schema: Mapping[str, Field], values: Mapping[str, Any],
                prefix: str) -> None:
        for name, field in schema.items():
            value = values.get(name)
            if value is None:
                continue
            where = prefix + name
            if field.kind == "dataclass":
                assert field.fields is not None
                self._values(field.fields, {f: getattr(value, f, None) for f in field.fields},
                             where + ".")
            elif field.kind in ("array", "rows"):
                data = np.asarray(value.data if hasattr(value, "format") else value)
                if data.dtype.kind == "f" and field.finite and not np.isfinite(data).all():
                    bad = "NaN" if np.isnan(data).any() else "infinite values"
                    raise self.fail(where, f"holds {bad}")
                if data.dtype.kind in "iu" and data.size and field.below is not None:
                    top = self.sizes[field.below][0]
                    if data.min() < (field.low or 0) or data.max() >= top:
                        raise self.fail(where, f"indices outside [0, {top})")
