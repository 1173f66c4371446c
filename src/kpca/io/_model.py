"""Saving and loading fitted estimators without executing code on load.

A model file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays), written with
:func:`numpy.savez` and read with ``allow_pickle=False``: loading a
file never unpickles anything, so a model file from an untrusted source cannot
run code. The archive holds

* ``__meta__``: a 0-d unicode array with a JSON document: the file format and
  its version, the estimator class name, ``get_params(deep=False)`` and the
  fitted state: the attributes the class's schema declares
  (:data:`kpca.io._schema.SCHEMAS`; not ``vars(estimator)``: an undeclared fitted
  attribute is refused when saving, and the caches the class lists in
  ``_unsaved_attributes``, such as the stored kernel values of
  :class:`kpca.IncrementalKernelPCA`, are not written);
* ``a0``, ``a1``, ...: the arrays the JSON refers to.

Loading refuses compressed members (:func:`numpy.savez` stores them uncompressed),
reads every array's ``.npy`` header first and checks the bytes it declares
against the bytes the file holds, then checks the metadata against the schema (kinds,
dtypes, shape relations, scikit-learn's ``set_output`` configuration) before reading the
arrays, then the estimator's parameters (its own scikit-learn ``_validate_params``), their
values (finite, indices in range), the parameters of the kernels it rebuilds (the checks
they get on the way to a fit) and that ``kernel_`` and ``subspace_.kernel`` are one
kernel; any failure is a ``ValueError`` naming the file and the field.

Values are encoded as a small typed tree. Allowed are ``None``, ``bool``,
``int``, ``float``, ``str``, numpy scalars, numeric numpy arrays (and arrays of
strings, e.g. ``feature_names_in_``), scipy sparse matrices, lists, tuples and
dicts with string keys of these, :mod:`kpca.kernels` kernel objects (stored as
class name + parameters) and the registered dataclasses (e.g.
:class:`kpca.operators.Centering`). Anything else -- a callable kernel, a
``RandomState`` -- is refused with a ``ValueError`` when saving.

A fitted ``make_pipeline(StandardScaler(), estimator)`` -- inputs standardized before
the kpca estimator, what ``kpca fit --standardize`` fits -- is saved as the estimator plus
an ``input_scaling`` entry (the scaler's ``mean_``, ``scale_``, ``var_``; format
version 3) and loaded back as such a pipeline, so that ``transform`` of the loaded
object scales its input as the fit did.

On load, the estimator class must be exported by the :mod:`kpca` package, a
kernel class must be a :class:`kpca.kernels.Kernel` subclass exported by
:mod:`kpca.kernels`, and a dataclass must be in :data:`DATACLASSES`: names are
looked up, never imported from arbitrary modules.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import os
import zipfile
from collections.abc import Callable
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted

from .. import kernels
from .._files import atomic_write
from .._incremental import IncrementalKernelPCA
from .._kernel_pca import KernelPCA
from .._version import __version__
from ..approx import NystromKernelPCA, RandomFeatureKernelPCA
from ..robust import AnovaKernelPCA, KernelROBPCA, SphericalKernelPCA, WeightedKernelPCA
from ._schema import SCALER, SCHEMAS, Checker
from ._tables import NPY_VERSIONS, npy_array_header

logger = logging.getLogger("kpca")

#: identifies kpca model files
FORMAT_NAME = "kpca-model"
#: version of the on-disk layout; bumped when it changes incompatibly. A file of
#: version 3 holds standardized inputs (``input_scaling``), which a reader of version 2
#: would ignore; files without it are still written as version 2.
FORMAT_VERSION = 3
_PLAIN_VERSION = 2

_META_KEY = "__meta__"
_TYPE = "__type__"

#: dataclasses that may appear in a model file: name -> "module:attribute"
DATACLASSES: dict[str, str] = {
    "Centering": "kpca.operators:Centering",
    "EigenResult": "kpca.solvers:EigenResult",
    "FittedSubspace": "kpca.subspace:FittedSubspace",
    "FourierFeatures": "kpca.kernels:FourierFeatures",
    "ParallelAnalysis": "kpca._parallel_analysis:ParallelAnalysis",
}


def register_dataclass(cls: type) -> type:
    """Allow instances of a kpca dataclass in model files (usable as a decorator).

    Parameters
    ----------
    cls : type
        A dataclass defined in a ``kpca`` module; its fields must hold
        serialisable values.
    """
    if not dataclasses.is_dataclass(cls) or not cls.__module__.startswith("kpca."):
        raise ValueError(f"register_dataclass: {cls!r} is not a dataclass defined in kpca.")
    DATACLASSES[cls.__name__] = f"{cls.__module__}:{cls.__qualname__}"
    return cls


def _dataclass_type(name: str) -> type:
    try:
        module, attr = DATACLASSES[name].split(":")
    except KeyError:
        raise ValueError(f"unknown dataclass {name!r} (allowed: {sorted(DATACLASSES)})") from None
    return getattr(importlib.import_module(module), attr)


# ------------------------------------------------------------------------- encoding
class _Encoder:
    """Turn a Python value into a JSON tree, collecting arrays on the side."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def _add(self, arr: np.ndarray) -> str:
        key = f"a{len(self.arrays)}"
        self.arrays[key] = arr
        return key

    def encode(self, value: Any, where: str) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, np.generic):
            return self._array(np.asarray(value), where, scalar=True)
        if isinstance(value, Integral):
            return int(value)
        if type(value) is float:
            return value
        if isinstance(value, np.ndarray):
            return self._array(value, where)
        if sp.issparse(value):
            return self._sparse(value, where)
        if isinstance(value, (list, tuple)):
            return {
                _TYPE: type(value).__name__,
                "items": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)],
            }
        if isinstance(value, dict):
            bad = [k for k in value if not isinstance(k, str)]
            if bad:
                raise ValueError(
                    f"cannot save {where}: dictionary keys must be strings; got {bad[0]!r}."
                )
            return {
                _TYPE: "dict",
                "items": {k: self.encode(v, f"{where}[{k!r}]") for k, v in value.items()},
            }
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._dataclass(value, where)
        if isinstance(value, kernels.Callable) or (
            callable(value) and not isinstance(value, (kernels.Kernel, type))
        ):
            kind = "a callable kernel" if "kernel" in where.lower() else "a Python callable"
            raise ValueError(
                f"cannot save a model with {kind} ({where}={value!r:.80}): a model file holds "
                "no code. Use a named kernel or a kpca.kernels object, or persist the "
                "estimator by other means (e.g. pickle, at your own risk)."
            )
        if isinstance(value, kernels.Kernel):
            return self._kernel(value, where)
        raise ValueError(
            f"cannot save {where}: values of type {type(value).__module__}."
            f"{type(value).__qualname__} are not supported in model files ({value!r:.80})."
        )

    def _array(self, arr: np.ndarray, where: str, scalar: bool = False) -> dict:
        node: dict[str, Any] = {_TYPE: "scalar" if scalar else "array"}
        if arr.dtype.hasobject:
            items = arr.ravel().tolist()
            if not all(isinstance(x, str) for x in items):
                raise ValueError(
                    f"cannot save {where}: an object array that holds non-string values "
                    "(only numeric arrays and arrays of strings can be saved)."
                )
            arr = arr.astype(str)
            node["object"] = True  # restored as dtype=object (as scikit-learn stores names)
        node["key"] = self._add(arr)  # np.save keeps C or Fortran order
        return node

    def _sparse(self, mat: Any, where: str) -> dict:
        fmt = mat.format
        if fmt not in ("csr", "csc"):
            mat, fmt = mat.tocsr(), "csr"
        return {
            _TYPE: "sparse",
            "format": fmt,
            "array": not isinstance(mat, sp.spmatrix),
            "shape": [int(s) for s in mat.shape],
            "data": self._array(mat.data, where)["key"],
            "indices": self._array(mat.indices, where)["key"],
            "indptr": self._array(mat.indptr, where)["key"],
        }

    def _kernel(self, kernel: Any, where: str) -> dict:
        name = type(kernel).__name__
        if getattr(kernels, name, None) is not type(kernel):
            raise ValueError(
                f"cannot save {where}: kernel class {type(kernel).__qualname__} is not part "
                "of kpca.kernels, so it could not be rebuilt without importing user code."
            )
        return {
            _TYPE: "kernel",
            "class": name,
            "params": self.encode(kernel.get_params(deep=False), f"{where}.params"),
        }

    def _dataclass(self, obj: Any, where: str) -> dict:
        name = type(obj).__name__
        if name not in DATACLASSES or _dataclass_type(name) is not type(obj):
            raise ValueError(
                f"cannot save {where}: dataclass {type(obj).__qualname__} is not registered "
                "(kpca.io.register_dataclass)."
            )
        return {
            _TYPE: "dataclass",
            "class": name,
            "fields": {
                f.name: self.encode(getattr(obj, f.name), f"{where}.{f.name}")
                for f in dataclasses.fields(obj)
            },
        }


#: the estimators a model file may hold, by class name
ESTIMATOR_CLASSES: dict[str, type] = {
    cls.__name__: cls for cls in (KernelPCA, NystromKernelPCA, RandomFeatureKernelPCA,
                                  WeightedKernelPCA, SphericalKernelPCA, AnovaKernelPCA,
                                  KernelROBPCA, IncrementalKernelPCA)
}


def _estimator_class(name: str) -> type:
    cls = ESTIMATOR_CLASSES.get(name)
    if cls is None:
        raise ValueError(
            f"class {name!r} is not an estimator exported by kpca; only kpca estimators "
            "can be loaded."
        )
    return cls


def split_scaling(model: Any) -> tuple[StandardScaler | None, BaseEstimator]:
    """The input scaler and the kpca estimator of a model: ``(None, model)`` for an
    estimator, ``(scaler, estimator)`` for ``make_pipeline(StandardScaler(), estimator)``.

    Raises
    ------
    ValueError
        ``model`` is a pipeline of other steps (model files hold a kpca estimator,
        optionally after one :class:`~sklearn.preprocessing.StandardScaler`).
    """
    if not isinstance(model, Pipeline):
        return None, model
    steps = [step for _, step in model.steps]
    if len(steps) != 2 or type(steps[0]) is not StandardScaler:
        raise ValueError(
            "kpca.save: a pipeline is saved only as make_pipeline(StandardScaler(), "
            f"estimator); got steps {[type(s).__name__ for s in steps]}."
        )
    return steps[0], steps[1]


def _scaler_meta(scaler: StandardScaler, enc: _Encoder) -> dict[str, Any]:
    check_is_fitted(scaler)
    if scaler.get_params()["copy"] is False:  # it would scale the caller's arrays in place
        raise ValueError("kpca.save: the StandardScaler has copy=False; kpca never "
                         "modifies its input in place, so use copy=True.")
    return {
        "params": {k: enc.encode(v, k) for k, v in scaler.get_params().items()},
        "state": {k: enc.encode(getattr(scaler, k), k) for k in SCALER},
    }


def _load_scaler(node: Any, dec: _Decoder, checker: Checker) -> StandardScaler:
    if not isinstance(node, dict) or not isinstance(node.get("params"), dict) \
            or not isinstance(node.get("state"), dict):
        raise dec._fail("bad input_scaling entry")
    params = {k: dec.decode(v, f"input_scaling.{k}") for k, v in node["params"].items()}
    if set(params) != {"copy", "with_mean", "with_std"} or not all(
            isinstance(v, bool) for v in params.values()):
        raise dec._fail(f"bad input_scaling parameters {sorted(params)}")
    if set(node["state"]) != set(SCALER):
        raise dec._fail(f"bad input_scaling state {sorted(node['state'])}")
    checker.check_fields(SCALER, node["state"], "input_scaling.")
    state = {k: dec.decode(v, f"input_scaling.{k}") for k, v in node["state"].items()}
    checker.check_values(state, SCALER, "input_scaling.")
    scaler = StandardScaler(**params)
    for k, v in state.items():
        setattr(scaler, k, v)
    return scaler


def save_model(estimator: BaseEstimator, path: str | os.PathLike) -> None:
    """Save a fitted kpca estimator to ``path`` (atomically; no pickle).

    Parameters
    ----------
    estimator : estimator exported by :mod:`kpca`, or a pipeline
        Fitted, e.g. :class:`kpca.KernelPCA`, or a fitted
        ``make_pipeline(StandardScaler(), estimator)`` (inputs standardized first).
    path : str or path-like
        Destination file; ``.kpca`` is the conventional extension.

    Raises
    ------
    ValueError
        The estimator is not a kpca estimator, is not fitted, or holds a value
        that cannot be stored without code (e.g. a callable kernel).
    """
    scaler, estimator = split_scaling(estimator)
    name = type(estimator).__name__
    try:
        ok = _estimator_class(name) is type(estimator)
    except ValueError:
        ok = False
    if not ok:
        module = type(estimator).__module__
        if module.split(".")[0] == "sklearn":
            raise ValueError(
                f"kpca.save: {module.split('.')[0]}.{type(estimator).__qualname__} is a "
                "scikit-learn model, not a kpca model, and kpca model files hold only kpca "
                "estimators. Fit the kpca estimator instead (kpca.KernelPCA is a drop-in "
                "replacement for sklearn.decomposition.KernelPCA) and save that, or persist "
                "the scikit-learn model with scikit-learn's own means (skops, or joblib/"
                "pickle for files you trust)."
            )
        raise ValueError(
            f"kpca.save: {type(estimator).__qualname__} is not an estimator exported by kpca "
            f"(the estimators it saves: {', '.join(sorted(ESTIMATOR_CLASSES))})."
        )
    check_is_fitted(estimator)
    enc = _Encoder()
    params = estimator.get_params(deep=False)
    state = _fitted_state(estimator, params)
    meta = {
        "format": FORMAT_NAME,
        "format_version": _PLAIN_VERSION if scaler is None else FORMAT_VERSION,
        "class": name,
        "kpca_version": _version(),
        "params": {k: enc.encode(v, k) for k, v in params.items()},
        "state": {k: enc.encode(v, k) for k, v in state.items()},
    }
    # never write a file that load_model would refuse: the same schema check
    checker = Checker(name, f"kpca.save: the {name} to save",
                      lambda key: (enc.arrays[key].shape, enc.arrays[key].dtype),
                      lambda key: enc.arrays[key][()])
    checker.check_state(meta["state"])
    checker.check_values(state)
    if scaler is not None:
        meta["input_scaling"] = _scaler_meta(scaler, enc)
        checker.check_fields(SCALER, meta["input_scaling"]["state"], "input_scaling.")
    text = json.dumps(meta, allow_nan=True)
    arrays = {_META_KEY: np.array(text), **enc.arrays}
    with atomic_write(path, "wb") as fh:
        np.savez(fh, **arrays)  # object arrays were refused by the encoder
    logger.info("saved %s (%d arrays) to %s", name, len(enc.arrays), path)


def _fitted_state(estimator: BaseEstimator, params: dict[str, Any]) -> dict[str, Any]:
    """The fitted attributes a model file holds: those of the class's schema
    (:data:`kpca.io._schema.SCHEMAS`), in its order. An attribute the schema does not
    declare is refused: the file format changes only with the schema."""
    name = type(estimator).__name__
    schema = SCHEMAS[name]
    unsaved = set(getattr(type(estimator), "_unsaved_attributes", ()))
    present = {k: v for k, v in vars(estimator).items() if k not in params and k not in unsaved}
    undeclared = [k for k in present if k not in schema]
    if undeclared:
        raise ValueError(
            f"kpca.save: {name} has fitted attribute(s) {undeclared} that its model-file "
            "schema (kpca.io._schema.SCHEMAS) does not declare; a model file holds only "
            f"the declared ones ({sorted(schema)})."
        )
    return {k: present[k] for k in schema if k in present}


def _version() -> str:
    return __version__


# ------------------------------------------------------------------------- decoding
#: the check of each parameter of a kernel of :mod:`kpca.kernels` rebuilt from a model
#: file: the one it gets on the way to a fit (``gamma``, ``degree``, ``coef0``: the
#: kernel's own :meth:`~kpca.kernels.Kernel.check_parameters`, the estimators' checks of
#: these names; ``normalize``, ``p`` and ``beta``: the string and ANOVA kernels' own).
#: Every parameter has one (tests/io/test_model_files.py checks that).
def _own_check(kernel: Any) -> None:
    kernel.check_parameters()


_KERNEL_CHECKS: dict[str, Callable[[Any], Any]] = {
    "gamma": _own_check,
    "degree": _own_check,
    "coef0": _own_check,
    "normalize": lambda kernel: validate_parameter_constraints(
        {"normalize": ["boolean"]}, {"normalize": kernel.normalize},
        caller_name=type(kernel).__name__),
    "p": lambda kernel: kernel._p(),
    "beta": lambda kernel: kernel.beta is None or kernel.weights(np.size(kernel.beta)),
}


def _at(where: str, part: str) -> str:
    """The path ``where`` into the metadata followed by ``part``, for the messages; cut
    at 200 characters, so that a deeply nested file does not build long paths."""
    if len(where) < 200:
        return where + part
    return where if where.endswith("...") else where + "..."


class _Decoder:
    def __init__(self, archive: _Archive) -> None:
        self.archive = archive
        self.source = archive.source

    def _fail(self, msg: str) -> ValueError:
        return ValueError(f"{self.source}: corrupt kpca model file: {msg}.")

    def _get(self, key: Any) -> np.ndarray:
        return self.archive.read(key)

    def decode(self, node: Any, where: str) -> Any:
        """The value of JSON tree ``node``, found at ``where`` in the metadata (for the
        messages)."""
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or not isinstance(node.get(_TYPE), str):
            raise self._fail(f"unexpected value {node!r:.80}")
        kind = node[_TYPE]
        if kind in ("array", "scalar"):
            arr = self._get(node.get("key"))
            if node.get("object"):
                arr = arr.astype(object)
            if kind == "scalar":
                if arr.ndim != 0:
                    raise self._fail("a scalar stored as a non-scalar array")
                return arr[()]
            return arr
        if kind in ("list", "tuple"):
            items = node.get("items")
            if not isinstance(items, list):
                raise self._fail(f"malformed {kind}")
            out = [self.decode(v, _at(where, f"[{i}]")) for i, v in enumerate(items)]
            return out if kind == "list" else tuple(out)
        if kind == "dict":
            items = node.get("items")
            if not isinstance(items, dict):
                raise self._fail("malformed dict")
            return {k: self.decode(v, _at(where, f"[{k!r:.40}]")) for k, v in items.items()}
        if kind == "sparse":
            return self._sparse(node)
        if kind == "kernel":
            return self._kernel(node, where)
        if kind == "dataclass":
            return self._dataclass(node, where)
        raise self._fail(f"unknown value type {kind!r}")

    def _sparse(self, node: dict) -> Any:
        fmt = node.get("format")
        if fmt not in ("csr", "csc"):
            raise self._fail(f"unknown sparse format {fmt!r}")
        shape = node.get("shape")
        if not (isinstance(shape, list) and len(shape) == 2
                and all(isinstance(s, int) and s >= 0 for s in shape)):
            raise self._fail("malformed sparse matrix shape")
        parts = (self._get(node.get("data")), self._get(node.get("indices")),
                 self._get(node.get("indptr")))
        cls = {
            ("csr", True): sp.csr_array, ("csr", False): sp.csr_matrix,
            ("csc", True): sp.csc_array, ("csc", False): sp.csc_matrix,
        }[fmt, bool(node.get("array"))]
        try:
            mat = cls(parts, shape=tuple(shape))
            mat.check_format(full_check=True)  # indices in range: scipy would not check
            return mat
        except (ValueError, TypeError) as exc:
            raise self._fail(f"invalid sparse matrix ({exc})") from None

    def _kernel(self, node: dict, where: str) -> Any:
        name = node.get("class")
        cls = getattr(kernels, name, None) if isinstance(name, str) else None
        if (
            name not in kernels.__all__
            or not (isinstance(cls, type) and issubclass(cls, kernels.Kernel))
            or cls is kernels.Callable
            or cls is kernels.Kernel
        ):
            raise self._fail(f"{name!r} is not a kernel class of kpca.kernels")
        params = self.decode(node.get("params"), _at(where, ".params"))
        if not isinstance(params, dict):
            raise self._fail(f"malformed parameters of kernel {name}")
        kernel = self._construct(cls, params, f"kernel {name}")
        # the checks its parameters get on the way to a fit: a file could hold any value
        # (each check's message names the parameter; one check may cover several)
        for check in dict.fromkeys(_KERNEL_CHECKS[p] for p in kernel.get_params(deep=False)):
            try:
                check(kernel)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{self.source}: invalid kpca model file: the {name} "
                                 f"kernel at {where!r}: {exc}") from None
        return kernel

    def _dataclass(self, node: dict, where: str) -> Any:
        name = node.get("class")
        if not isinstance(name, str) or name not in DATACLASSES:
            raise self._fail(f"{name!r} is not an allowed dataclass")
        cls = _dataclass_type(name)
        fields = node.get("fields")
        if not isinstance(fields, dict):
            raise self._fail(f"malformed fields of {name}")
        known = {f.name for f in dataclasses.fields(cls) if f.init}
        if set(fields) - known:
            raise self._fail(f"{name} has no field(s) {sorted(set(fields) - known)}")
        return self._construct(
            cls, {k: self.decode(v, _at(where, f".{k}")) for k, v in fields.items()}, name)

    def _construct(self, cls: type, kwargs: dict, what: str) -> Any:
        try:
            return cls(**kwargs)
        except TypeError as exc:
            raise self._fail(f"cannot rebuild {what}: {exc}") from None


class _Archive:
    """The ``.npy`` members of a model file, read header first.

    Each member's header (shape, dtype) is read when the archive is opened, and the
    bytes it declares are checked against the bytes the member holds, so that no
    array is ever allocated beyond what the file contains (a header declaring 10^13
    values is refused, not a ``MemoryError``): members must be stored uncompressed, as
    kpca writes them, and their sizes within the file. Arrays are read when asked for,
    once.
    """

    def __init__(self, path: Path) -> None:
        self.source = source = str(path)
        if not path.exists():
            raise ValueError(f"{source}: no such file.")
        if path.is_dir():
            raise ValueError(f"{source}: is a directory, not a model file.")
        if not zipfile.is_zipfile(path):
            raise ValueError(f"{source}: not a kpca model file (not an .npz/zip archive).")
        self.headers: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
        self._members: dict[str, zipfile.ZipInfo] = {}
        self._cache: dict[str, np.ndarray] = {}
        try:
            self._size = path.stat().st_size
            self._zip = zipfile.ZipFile(path)
            for info in self._zip.infolist():
                self._header(info)
        except ValueError as exc:
            self.close()
            if str(exc).startswith(source):
                raise
            raise ValueError(f"{source}: not a readable kpca model file ({exc}).") from None
        except (OSError, EOFError, zipfile.BadZipFile) as exc:
            self.close()
            raise ValueError(f"{source}: not a readable kpca model file ({exc}).") from None

    def _header(self, info: zipfile.ZipInfo) -> None:
        source = self.source
        if not info.filename.endswith(".npy"):
            raise ValueError(f"{source}: not a kpca model file (member {info.filename!r} "
                             "is not an .npy array).")
        key = info.filename[:-4]
        if info.compress_type != zipfile.ZIP_STORED:
            # the size check below is on the uncompressed bytes: a compressed member
            # could make a small file allocate ~1000x its size
            raise ValueError(
                f"{source}: corrupt kpca model file: member {info.filename!r} is "
                f"compressed (zip method {info.compress_type}); kpca writes uncompressed "
                "members, so this file was not written by kpca or has been altered; "
                "refusing to load it."
            )
        if info.file_size != info.compress_size or (
                info.header_offset + info.compress_size > self._size):
            raise ValueError(
                f"{source}: corrupt kpca model file: member {info.filename!r} declares "
                f"{info.file_size:,} bytes ({info.compress_size:,} stored), but the file "
                f"has {self._size:,} bytes."
            )
        with self._zip.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            if version not in NPY_VERSIONS:
                raise ValueError(f"{source}: array {key!r}: unsupported .npy version "
                                 f"{version}.")
            shape, dtype, declared = npy_array_header(fh, version)
            offset = fh.tell()
        if dtype.hasobject:
            raise ValueError(
                f"{source}: array {key!r} holds Python objects (pickled data). "
                "kpca model files never contain pickled data, so this file was "
                "not written by kpca or has been tampered with; refusing to load it."
            )
        held = info.file_size - offset
        if declared != held:
            raise ValueError(
                f"{source}: corrupt kpca model file: array {key!r} declares shape "
                f"{tuple(shape)} of {dtype} ({declared:,} bytes), but the file holds "
                f"{held:,} bytes for it."
            )
        self.headers[key] = (shape, dtype)
        self._members[key] = info

    def header(self, key: Any) -> tuple[tuple[int, ...], np.dtype]:
        """Shape and dtype of array ``key``, from its header."""
        if not isinstance(key, str) or key == _META_KEY or key not in self.headers:
            raise ValueError(f"{self.source}: corrupt kpca model file: reference to a "
                             f"missing array {key!r}.")
        return self.headers[key]

    def read(self, key: Any, meta: bool = False) -> np.ndarray:
        """Array ``key`` (its size checked against the file when opened)."""
        if not meta:
            self.header(key)
        if key not in self._cache:
            try:
                with self._zip.open(self._members[key]) as fh:
                    self._cache[key] = np.lib.format.read_array(fh, allow_pickle=False)
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
                raise ValueError(f"{self.source}: not a readable kpca model file: array "
                                 f"{key!r} ({exc}).") from None
        return self._cache[key]

    def close(self) -> None:
        zf = getattr(self, "_zip", None)
        if zf is not None:
            zf.close()

    def __enter__(self) -> _Archive:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def load_model(path: str | os.PathLike) -> Any:
    """Load an estimator saved by :func:`save_model`. Executes no code from the file.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    estimator : the fitted kpca estimator
        Or, for a model saved with standardized inputs, the fitted
        ``make_pipeline(StandardScaler(), estimator)`` (:func:`split_scaling`
        separates them).

    Raises
    ------
    ValueError
        The file is missing, not a kpca model file, from a newer format version,
        corrupt (including compressed members, metadata nested too deeply, invalid
        estimator or kernel parameters and a ``kernel_`` other than the subspace's), or
        holds pickled objects.
    """
    path = Path(path)
    with _Archive(path) as archive:
        return _load(archive)


def _load(archive: _Archive) -> Any:
    source = archive.source
    meta_head = archive.headers.get(_META_KEY)
    if meta_head is None or meta_head[0] != () or meta_head[1].kind != "U":
        raise ValueError(f"{source}: not a kpca model file (no metadata).")
    try:
        meta = json.loads(str(archive.read(_META_KEY, meta=True)[()]))
    except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested too deep
        raise ValueError(f"{source}: corrupt kpca model file: bad metadata ({exc}).") from None
    try:
        return _load_meta(archive, meta)
    except RecursionError:
        # the decoder, the schema check and the messages' reprs recurse over the
        # metadata: JSON that json.loads could still read may be nested deeper
        raise ValueError(f"{source}: corrupt kpca model file: bad metadata (nested too "
                         "deeply).") from None


def _load_meta(archive: _Archive, meta: Any) -> Any:
    """The model of the decoded metadata ``meta`` of ``archive``."""
    source = archive.source
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise ValueError(f"{source}: not a kpca model file.")
    version = meta.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"{source}: corrupt kpca model file: format version {version!r}.")
    if version not in (_PLAIN_VERSION, FORMAT_VERSION):
        advice = ("upgrade kpca to load it" if version > FORMAT_VERSION else
                  f"refit the model and save it again with kpca {_version()}")
        raise ValueError(
            f"{source}: model file format version {version} (kpca "
            f"{meta.get('kpca_version')}), but this kpca ({_version()}) reads version "
            f"{FORMAT_VERSION}; {advice}."
        )
    name = meta.get("class")
    if not isinstance(name, str):
        raise ValueError(f"{source}: corrupt kpca model file: no estimator class.")
    try:
        cls = _estimator_class(name)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
    dec = _Decoder(archive)
    raw_params, raw_state = meta.get("params"), meta.get("state")
    if not isinstance(raw_params, dict) or not isinstance(raw_state, dict):
        raise ValueError(f"{source}: corrupt kpca model file: no parameters or state.")
    if version == _PLAIN_VERSION and "input_scaling" in meta:
        raise ValueError(f"{source}: corrupt kpca model file: input_scaling in a file of "
                         f"format version {version}.")
    # the schema of the class, on the JSON and the arrays' headers: before any
    # array of the state is read
    checker = Checker(name, source, archive.header, archive.read)
    checker.check_state(raw_state)
    params = {k: dec.decode(v, k) for k, v in raw_params.items()}
    valid = set(cls().get_params(deep=False))
    unknown = set(params) - valid
    if unknown:
        raise ValueError(
            f"{source}: parameter(s) {sorted(unknown)} unknown to {name} in kpca {_version()}; "
            f"the model was saved by kpca {meta.get('kpca_version')}."
        )
    estimator = cls(**params)
    try:  # the estimator's own scikit-learn check (_parameter_constraints), as fit runs it
        estimator._validate_params()
    except (ValueError, TypeError) as exc:  # InvalidParameterError is both
        raise ValueError(f"{source}: invalid kpca model file: {exc}") from None
    state = {attr: dec.decode(node, attr) for attr, node in raw_state.items()}
    checker.check_values(state)
    _check_same_kernel(state, checker)
    for attr, value in state.items():
        # only the schema's names reach here (check_state): none is defined on the
        # class, so a method or property is never shadowed
        setattr(estimator, attr, value)
    logger.info("loaded %s from %s", name, source)
    if "input_scaling" in meta:
        return make_pipeline(_load_scaler(meta["input_scaling"], dec, checker), estimator)
    return estimator


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    return bool(a == b)


def _check_same_kernel(state: dict[str, Any], checker: Checker) -> None:
    """``kernel_`` and ``subspace_.kernel`` are one kernel: fit sets both to the same
    object, but a file stores each, and ``kpca info`` describes the first while
    ``transform`` evaluates the second (where they differ, the file was altered)."""
    kernel, subspace = state.get("kernel_"), state.get("subspace_")
    other = getattr(subspace, "kernel", None)
    if kernel is None or other is None:
        return

    def describe(k: Any) -> str:
        return f"{type(k).__name__}({k.get_params(deep=False)})"[:120]

    a, b = kernel.get_params(deep=False), other.get_params(deep=False)
    if type(kernel) is not type(other) or a.keys() != b.keys() or not all(
            _same_value(a[p], b[p]) for p in a):
        raise checker.fail("subspace_.kernel", f"{describe(other)} is not the kernel of "
                           f"'kernel_', {describe(kernel)}; a fitted model has one kernel")


def model_summary(estimator: BaseEstimator) -> dict[str, Any]:
    """JSON-friendly description of a fitted estimator (used by ``kpca info``).

    Parameters
    ----------
    estimator : fitted kpca estimator, or a pipeline :func:`load_model` returns

    Returns
    -------
    dict
        ``class``, ``params``, and when present ``input_scaling`` (the ``mean``
        and ``scale`` that standardize the inputs), ``kernel`` (the resolved kernel
        with its parameters), ``n_components``, ``n_samples_fit`` (of an
        incremental model: the rows seen, with ``mode`` and ``n_rows_kept``),
        ``n_features_in``, ``eigen_solver``, ``eigenvalues`` and
        ``explained_variance_ratio``.
    """

    def plain(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        return repr(v)

    scaler, estimator = split_scaling(estimator)
    out: dict[str, Any] = {
        "class": type(estimator).__name__,
        "params": plain(estimator.get_params(deep=False)),
    }
    if scaler is not None:
        out["input_scaling"] = {"mean": plain(scaler.mean_), "scale": plain(scaler.scale_)}
    kernel = getattr(estimator, "kernel_", None)
    if kernel is not None:
        out["kernel"] = {
            "class": type(kernel).__name__,
            "name": getattr(kernel, "name", "") or type(kernel).__name__,
            "params": plain(kernel.get_params(deep=False)),
        }
    ev = getattr(estimator, "eigenvalues_", None)
    if ev is not None:
        out["n_components"] = int(np.shape(ev)[0])
        out["eigenvalues"] = plain(ev)
    X_fit = getattr(estimator, "X_fit_", None)
    if hasattr(estimator, "n_samples_seen_"):  # incremental: every row seen, not those kept
        out["n_samples_fit"] = int(estimator.n_samples_seen_)
        out["mode"] = str(estimator.mode_)
        out["n_rows_kept"] = int(X_fit.shape[0])
    elif X_fit is not None:
        out["n_samples_fit"] = int(X_fit.shape[0])
    elif hasattr(estimator, "n_samples_"):
        out["n_samples_fit"] = int(estimator.n_samples_)
    for attr, key in (
        ("n_features_in_", "n_features_in"),
        ("eigen_solver_", "eigen_solver"),
        ("explained_variance_ratio_", "explained_variance_ratio"),
    ):
        if hasattr(estimator, attr):
            out[key] = plain(getattr(estimator, attr))
    return out
