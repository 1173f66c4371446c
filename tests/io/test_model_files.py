"""Model files refuse what they cannot serve (issue 33, item 1).

* The committed fixtures (``tests/io/models``, written by ``make_models.py`` with kpca
  before the schema existed) still load and give their stored scores, for every
  estimator and format version: a change of format has to be deliberate.
* A file that parses but does not fit its class's schema (kpca.io._schema) is a
  ``ValueError`` naming the file and the field, before any array is read beyond
  its header: another class's state, arrays of the wrong shape or dtype, NaN,
  out-of-range indices, and array headers that declare more than the file holds.
"""

from __future__ import annotations

import io
import json
import re
import struct
import sys
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

import kpca
from kpca.io import FORMAT_VERSION, load_model, save_model
from kpca.io._model import _KERNEL_CHECKS, ESTIMATOR_CLASSES
from kpca.io._schema import SCHEMAS

MODELS = Path(__file__).parent / "models"
VERSIONS = (2, FORMAT_VERSION)
FIXTURES = sorted(MODELS.glob("v*/*.kpca"))


# ------------------------------------------------------------------------- fixtures
def test_a_fixture_for_every_estimator_and_format_version():
    names = {p.stem.split("-")[0] for p in FIXTURES}
    assert names == set(ESTIMATOR_CLASSES)
    assert {p.parent.name for p in FIXTURES} == {f"v{v}" for v in VERSIONS}
    for version in VERSIONS:
        assert {p.stem for p in MODELS.glob(f"v{version}/*.kpca")} == {
            p.stem for p in MODELS.glob("v2/*.kpca")}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixture_loads_and_gives_its_stored_scores(path):
    expected = np.load(MODELS / "expected.npz")
    model = load_model(path)
    version = int(path.parent.name[1:])
    with zipfile.ZipFile(path) as zf:
        meta = json.loads(str(np.load(io.BytesIO(zf.read("__meta__.npy")))[()]))
    assert meta["format_version"] == version
    scaler_first = isinstance(model, Pipeline)
    assert scaler_first == (version == 3)
    est = model[-1] if scaler_first else model
    assert type(est).__name__ == path.stem.split("-")[0]
    T = expected["T"]
    for method in ("transform", "score_samples"):
        want = expected[f"{path.parent.name}/{path.stem}:{method}"]
        got = getattr(model, method)(T)
        assert got.shape == want.shape
        # the same arithmetic on the stored state: equal up to the BLAS's rounding
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())


@pytest.mark.parametrize("path", FIXTURES[:3] + FIXTURES[-3:], ids=lambda p: p.stem)
def test_fixture_saved_again_holds_the_same_arrays(tmp_path, path):
    model = load_model(path)
    save_model(model, tmp_path / "again.kpca")
    before, after = _state_arrays(path), _state_arrays(tmp_path / "again.kpca")
    assert before.keys() == after.keys()
    for where, arr in before.items():
        assert arr.dtype == after[where].dtype, where
        np.testing.assert_array_equal(arr, after[where], err_msg=where)


def _state_arrays(path):
    """Every array of a model file, by where it sits in the state (not by its key)."""
    with zipfile.ZipFile(path) as zf:
        arrays = {n[:-4]: np.load(io.BytesIO(zf.read(n))) for n in zf.namelist()}
    meta = json.loads(str(arrays.pop("__meta__")[()]))
    out = {}

    def walk(node, where):
        if isinstance(node, dict):
            if node.get("__type__") in ("array", "scalar"):
                out[where] = arrays[node["key"]]
                return
            for k, v in node.items():
                walk(v, f"{where}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")

    walk({k: meta[k] for k in ("params", "state", "input_scaling") if k in meta}, "")
    return out


# ------------------------------------------------------------------------- tampering
@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(1).normal(size=(40, 4))


def _meta_and_members(path):
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    meta = json.loads(str(np.load(io.BytesIO(members["__meta__.npy"]))[()]))
    return meta, members


def _write(path, meta, members):
    buf = io.BytesIO()
    np.save(buf, np.array(json.dumps(meta)))
    members = {**members, "__meta__.npy": buf.getvalue()}
    with zipfile.ZipFile(path, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)


def _npy(arr):
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def _saved(tmp_path, est):
    path = tmp_path / "m.kpca"
    save_model(est, path)
    return path


def _replace_array(path, node_path, new):
    """Replace the array at ``node_path`` (keys into the metadata) by ``new``."""
    meta, members = _meta_and_members(path)
    node = meta
    for k in node_path:
        node = node[k]
    members[f"{node['key']}.npy"] = _npy(new)
    _write(path, meta, members)


def _coef_path():
    return ("state", "subspace_", "fields", "coef")


def test_class_mismatch_names_the_missing_fields(tmp_path, X):
    """An exact KernelPCA file whose JSON says WeightedKernelPCA used to load without
    weights_, center_weights_, distances_, n_iter_, converged_."""
    path = _saved(tmp_path, kpca.KernelPCA(n_components=3, kernel="rbf").fit(X))
    meta, members = _meta_and_members(path)
    meta["class"] = "WeightedKernelPCA"
    meta["params"] = {}
    _write(path, meta, members)
    with pytest.raises(ValueError, match=r"m\.kpca: invalid kpca model file: field "
                       r"'n_iter_' of WeightedKernelPCA: missing .*another class"):
        load_model(path)


def test_another_class_s_fields_are_refused(tmp_path, X):
    path = _saved(tmp_path, kpca.WeightedKernelPCA(n_components=2, kernel="rbf").fit(X))
    meta, members = _meta_and_members(path)
    meta["class"], meta["params"] = "KernelPCA", {}
    _write(path, meta, members)
    with pytest.raises(ValueError, match=r"m\.kpca: .*field 'n_iter_' of KernelPCA: not a "
                       "fitted attribute of KernelPCA"):
        load_model(path)


@pytest.mark.parametrize("name", ["transform", "score_samples", "decision_function", "predict"])
def test_coefficients_pointing_at_a_vector_are_refused(tmp_path, X, name):
    """Coefficients pointing at a (40,) array used to load, then raise IndexError."""
    est = kpca.KernelPCA(n_components=3, kernel="rbf").fit(X)
    path = _saved(tmp_path, est)
    meta, _ = _meta_and_members(path)
    # the key of another (40,) array of the file: the centre
    center_key = meta["state"]["subspace_"]["fields"]["center"]["key"]
    meta, members = _meta_and_members(path)
    meta["state"]["subspace_"]["fields"]["coef"]["key"] = center_key
    _write(path, meta, members)
    with pytest.raises(ValueError, match=r"m\.kpca: invalid kpca model file: field "
                       r"'subspace_\.coef' of KernelPCA: shape \(40,\), expected 2 dimension"):
        getattr(load_model(path), name)(X[:5])


def test_coefficients_cut_to_fewer_components_are_refused(tmp_path, X):
    """40 x 2 coefficients in a 3-component model used to give (5, 2) scores."""
    est = kpca.KernelPCA(n_components=3, kernel="rbf").fit(X)
    path = _saved(tmp_path, est)
    _replace_array(path, _coef_path(), est.subspace_.coef[:, :2].copy())
    with pytest.raises(ValueError, match=r"m\.kpca: .*field 'subspace_\.coef' of KernelPCA: "
                       r"shape \(40, 2\) against \(m, k\): k = 2, but 'n_components_' "
                       "gives k = 3"):
        load_model(path)


@pytest.mark.filterwarnings("ignore:n_components=.auto.:UserWarning")
def test_parallel_analysis_of_another_size_is_refused(tmp_path, X):
    """n_components='auto' stores its parallel analysis: its null eigenvalues must
    have one column per candidate eigenvalue."""
    est = kpca.KernelPCA("auto", kernel="rbf", random_state=0).fit(X)
    path = _saved(tmp_path, est)
    null = est.parallel_analysis_.null_eigenvalues
    _replace_array(path, ("state", "parallel_analysis_", "fields", "null_eigenvalues"),
                   null[:, :-1].copy())
    with pytest.raises(ValueError, match=r"m\.kpca: .*field 'parallel_analysis_\."
                       r"null_eigenvalues' of KernelPCA"):
        load_model(path)


@pytest.mark.parametrize("cls", sorted(ESTIMATOR_CLASSES))
def test_wrong_number_of_rows_in_coefficients_is_refused(tmp_path, X, cls):
    est = ESTIMATOR_CLASSES[cls](n_components=2).fit(X)
    path = _saved(tmp_path, est)
    coef = est.subspace_.coef
    _replace_array(path, _coef_path(), np.vstack([coef, coef[:1]]))
    with pytest.raises(ValueError, match=rf"m\.kpca: .*field '[a-z_.]+' of {cls}: shape "):
        load_model(path)


def test_wrong_dtype_is_refused(tmp_path, X):
    est = kpca.KernelPCA(n_components=3, kernel="rbf").fit(X)
    path = _saved(tmp_path, est)
    _replace_array(path, ("state", "eigenvalues_"), est.eigenvalues_.astype(np.complex128))
    with pytest.raises(ValueError, match=r"field 'eigenvalues_' of KernelPCA: dtype "
                       "complex128, expected float32 or float64"):
        load_model(path)


@pytest.mark.parametrize("cls", sorted(ESTIMATOR_CLASSES))
def test_nan_coefficients_are_refused(tmp_path, X, cls):
    """NaN coefficients used to load: score_samples NaN, predict all inliers."""
    est = ESTIMATOR_CLASSES[cls](n_components=2).fit(X)
    path = _saved(tmp_path, est)
    coef = est.subspace_.coef.copy()
    coef[3, 1] = np.nan
    _replace_array(path, _coef_path(), coef)
    with pytest.raises(ValueError, match=rf"m\.kpca: invalid kpca model file: field "
                       rf"'subspace_\.coef' of {cls}: holds NaN"):
        load_model(path)


def test_nan_in_nystrom_landmarks_is_refused(tmp_path, X):
    est = kpca.NystromKernelPCA(n_components=2, n_landmarks=10, random_state=0).fit(X)
    path = _saved(tmp_path, est)
    Z = est.landmarks_.copy()
    Z[2, 0] = np.nan
    _replace_array(path, ("state", "landmarks_"), Z)
    with pytest.raises(ValueError, match=r"field 'landmarks_' of NystromKernelPCA: holds NaN"):
        load_model(path)
    path = _saved(tmp_path, est)
    _replace_array(path, ("state", "subspace_", "fields", "basis"), Z)
    with pytest.raises(ValueError, match=r"'subspace_\.basis' of NystromKernelPCA: holds NaN"):
        load_model(path)


def test_nan_cutoff_is_refused(tmp_path, X):
    path = _saved(tmp_path, kpca.KernelPCA(n_components=2).fit(X))
    meta, members = _meta_and_members(path)
    meta["state"]["od_cutoff_"] = float("nan")
    _write(path, meta, members)
    with pytest.raises(ValueError, match=r"field 'od_cutoff_' of KernelPCA: NaN"):
        load_model(path)


def test_huge_declared_array_is_refused_before_allocating(tmp_path, X):
    """A header declaring 10^7 x 10^6 values gave MemoryError (72.8 TiB)."""
    est = kpca.KernelPCA(n_components=2).fit(X)
    path = _saved(tmp_path, est)
    meta, members = _meta_and_members(path)
    key = meta["state"]["subspace_"]["fields"]["coef"]["key"]
    header = {"descr": "<f8", "fortran_order": False, "shape": (10**7, 10**6)}
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    members[f"{key}.npy"] = buf.getvalue() + b"\0" * 64
    _write(path, meta, members)
    with pytest.raises(ValueError, match=r"m\.kpca: corrupt kpca model file: array "
                       rf"'{key}' declares shape \(10000000, 1000000\) of float64 "
                       r"\(80,000,000,000,000 bytes\), but the file holds 64 bytes"):
        load_model(path)


def test_truncated_array_is_refused(tmp_path, X):
    path = _saved(tmp_path, kpca.KernelPCA(n_components=2).fit(X))
    meta, members = _meta_and_members(path)
    key = meta["state"]["X_fit_"]["key"]
    members[f"{key}.npy"] = members[f"{key}.npy"][:-8]
    _write(path, meta, members)
    with pytest.raises(ValueError, match=rf"array '{key}' declares shape \(40, 4\)"):
        load_model(path)


def test_sparse_indices_out_of_range_are_refused(tmp_path, X):
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0))
    est = kpca.KernelPCA(n_components=2, kernel="rbf").fit(Xs)
    path = _saved(tmp_path, est)
    indices = Xs.indices.copy()
    indices[0] = 99
    meta, members = _meta_and_members(path)
    members[f"{meta['state']['X_fit_']['indices']}.npy"] = _npy(indices)
    _write(path, meta, members)
    with pytest.raises(ValueError, match=r"m\.kpca: corrupt kpca model file: invalid sparse"):
        load_model(path)


def test_robpca_subset_indices_out_of_range_are_refused(tmp_path, X):
    est = kpca.KernelROBPCA(n_components=2, random_state=0).fit(X)
    path = _saved(tmp_path, est)
    h = est.h_subset_.copy()
    h[0] = 40
    _replace_array(path, ("state", "h_subset_"), h)
    with pytest.raises(ValueError, match=r"field 'h_subset_' of KernelROBPCA: indices "
                       r"outside \[0, 40\)"):
        load_model(path)


def test_input_scaling_must_fit_the_estimator(tmp_path, X):
    model = make_pipeline(StandardScaler(), kpca.KernelPCA(n_components=2)).fit(X)
    path = _saved(tmp_path, model)
    _replace_array(path, ("input_scaling", "state", "mean_"), np.zeros(3))
    with pytest.raises(ValueError, match=r"field 'input_scaling\.mean_' of KernelPCA: shape "
                       r"\(3,\) against \(d\): d = 3, but 'n_features_in_' gives d = 4"):
        load_model(path)


def test_incremental_mode_fields_must_match(tmp_path, X):
    est = kpca.IncrementalKernelPCA(n_components=2).fit(X)
    path = _saved(tmp_path, est)
    meta, members = _meta_and_members(path)
    meta["state"]["mode_"] = "bounded"
    _write(path, meta, members)
    with pytest.raises(ValueError, match=r"field 'mode_' of IncrementalKernelPCA: 'bounded', "
                       "but the fields of that mode are missing"):
        load_model(path)


def test_compressed_members_are_refused_before_allocating(tmp_path, X):
    """A 0.2 MB file of deflated members made load() allocate 293 MB: the size check
    compared the declared bytes with the member's uncompressed size."""
    path = _saved(tmp_path, kpca.KernelPCA(n_components=2).fit(X))
    meta, members = _meta_and_members(path)
    with zipfile.ZipFile(path) as zf:  # what the check relies on: kpca stores them
        assert {info.compress_type for info in zf.infolist()} == {zipfile.ZIP_STORED}
    # valid JSON followed by 5 million spaces: a 20 MB unicode array
    padded = _npy(np.array(json.dumps(meta) + " " * 5_000_000))
    members["__meta__.npy"] = padded
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    assert path.stat().st_size < len(padded) / 100
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"m\.kpca: corrupt kpca model file: member "
                           r"'[a-z0-9_]+\.npy' is compressed \(zip method 8\); kpca writes "
                           "uncompressed members"):
            load_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(padded) / 10


def test_member_larger_than_the_file_is_refused(tmp_path, X):
    """Stored members whose directory entry claims more bytes than the file has (with
    a header that agrees) would be read into an array of the claimed size."""
    path = _saved(tmp_path, kpca.KernelPCA(n_components=2).fit(X))
    meta, members = _meta_and_members(path)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<U100000000", "fortran_order": False, "shape": ()})
    members["__meta__.npy"] = header.getvalue() + b"\0" * 64
    _write(path, meta, members)
    claimed = len(header.getvalue()) + 4 * 10**8
    raw = bytearray(path.read_bytes())
    entry = raw.find(b"PK\x01\x02")  # the central directory entries, in order
    while raw[entry + 46:entry + 46 + len(b"__meta__.npy")] != b"__meta__.npy":
        entry = raw.find(b"PK\x01\x02", entry + 4)
    raw[entry + 20:entry + 28] = struct.pack("<II", claimed, claimed)  # both sizes
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=rf"m\.kpca: corrupt kpca model file: member "
                       rf"'__meta__\.npy' declares {claimed:,} bytes \({claimed:,} stored\), "
                       rf"but the file has {len(raw):,} bytes"):
        load_model(path)


def _kernel_node(meta, where):
    node = meta
    for k in where:
        node = node["fields"][k] if node.get("__type__") == "dataclass" else node[k]
    return node["params"]["items"]


_GAMMA = r"The 'gamma' parameter of \w+ must be a positive finite number"
#: (estimator, where its kernel sits, its class, the parameter, a bad value, what the
#: message says after naming them)
_BAD_KERNEL_PARAMS = {
    "rbf-gamma-nan": (lambda: kpca.KernelPCA(3, kernel="rbf", fit_inverse_transform=True),
                      ("state", "kernel_"), "RBF", "gamma", float("nan"),
                      _GAMMA),
    "rbf-subspace-gamma-negative": (lambda: kpca.KernelPCA(3, kernel="rbf"),
                                    ("state", "subspace_", "kernel"), "RBF", "gamma", -5.0,
                                    _GAMMA),
    "laplacian-gamma-zero": (lambda: kpca.KernelPCA(2, kernel="laplacian"),
                             ("state", "kernel_"), "Laplacian", "gamma", 0,
                             _GAMMA),
    "param-kernel-gamma": (lambda: kpca.KernelPCA(2, kernel=kpca.kernels.RBF(gamma=0.5)),
                           ("params", "kernel"), "RBF", "gamma", -1.0,
                           _GAMMA),
    "poly-degree-negative": (lambda: kpca.KernelPCA(2, kernel="poly"), ("state", "kernel_"),
                             "Polynomial", "degree", -1, r"The 'degree' parameter of "
                             r"Polynomial must be a float in the range \[0\.0, inf\)"),
    "poly-degree-bool": (lambda: kpca.KernelPCA(2, kernel="poly"), ("state", "kernel_"),
                         "Polynomial", "degree", True,
                         "The 'degree' parameter of Polynomial must not be a bool"),
    "sigmoid-coef0-inf": (lambda: kpca.KernelPCA(2, kernel="sigmoid"),
                          ("state", "subspace_", "kernel"), "Sigmoid", "coef0", float("inf"),
                          r"The 'coef0' parameter of Sigmoid must be a float in the range "
                          r"\(-inf, inf\)"),
    "spectrum-p-zero": (lambda: kpca.KernelPCA(2, kernel="spectrum"), ("state", "kernel_"),
                        "Spectrum", "p", 0, "spectrum kernel: p must be an integer >= 1"),
    "spectrum-normalize-str": (lambda: kpca.KernelPCA(2, kernel="spectrum"),
                               ("state", "kernel_"), "Spectrum", "normalize", "no",
                               "The 'normalize' parameter of Spectrum must be an instance "
                               "of 'bool'"),
}


@pytest.mark.parametrize("case", sorted(_BAD_KERNEL_PARAMS))
def test_invalid_kernel_parameters_are_refused(tmp_path, X, case):
    """A gamma edited to NaN or -5 used to load: inverse_transform NaN, transform
    silently other scores."""
    make, where, kernel, param, bad, message = _BAD_KERNEL_PARAMS[case]
    data = X if kernel != "Spectrum" else np.array(
        ["abc", "abd", "bcd", "cda", "aab", "bba", "ccd", "dda"] * 4, dtype=object)
    path = _saved(tmp_path, make().fit(data))
    meta, members = _meta_and_members(path)
    _kernel_node(meta, where)[param] = bad
    _write(path, meta, members)
    at = re.escape(".".join(where[1:]))
    with pytest.raises(ValueError, match=rf"m\.kpca: invalid kpca model file: the {kernel} "
                       rf"kernel at '{at}': {message}"):
        load_model(path)


def test_invalid_kernel_parameters_get_the_fit_s_message(tmp_path, X):
    """The loader's check of gamma is the kernel's own, as fit runs it."""
    with pytest.raises(ValueError) as at_fit:
        kpca.KernelPCA(2, kernel=kpca.kernels.RBF(gamma=-5.0)).fit(X)
    path = _saved(tmp_path, kpca.KernelPCA(2, kernel="rbf").fit(X))
    meta, members = _meta_and_members(path)
    _kernel_node(meta, ("state", "kernel_"))["gamma"] = -5.0
    _write(path, meta, members)
    with pytest.raises(ValueError) as at_load:
        load_model(path)
    assert str(at_fit.value) in str(at_load.value)


def test_negative_anova_weights_are_refused(tmp_path, X):
    est = kpca.AnovaKernelPCA(2).fit(X)
    path = _saved(tmp_path, est)
    beta = est.kernel_.beta.copy()
    beta[1] = -0.5
    _replace_array(path, ("state", "kernel_", "params", "items", "beta"), beta)
    with pytest.raises(ValueError, match=r"invalid kpca model file: the "
                       r"Anova kernel at 'kernel_': anova kernel: beta must be 4 non-negative"):
        load_model(path)


def test_every_kernel_parameter_read_from_a_file_is_checked():
    """Each parameter of every kernel class the loader rebuilds has a check."""
    classes = [getattr(kpca.kernels, n) for n in kpca.kernels.__all__]
    classes = [c for c in classes if isinstance(c, type) and issubclass(c, kpca.kernels.Kernel)
               and c not in (kpca.kernels.Kernel, kpca.kernels.Callable)]
    assert {c.__name__ for c in classes} >= {"RBF", "Laplacian", "Polynomial", "Sigmoid",
                                            "Anova", "Spectrum", "Linear", "Cosine"}
    for cls in classes:
        kernel = cls()
        assert set(kernel.get_params(deep=False)) <= set(_KERNEL_CHECKS), cls.__name__
        for param in kernel.get_params(deep=False):
            _KERNEL_CHECKS[param](kernel)  # the defaults pass


def _with_kernel_params(path, text):
    """Write ``text`` as the JSON of the ``kernel_params`` parameter (null in ``path``)."""
    meta, members = _meta_and_members(path)
    meta_text = json.dumps(meta)
    assert '"kernel_params": null' in meta_text
    members["__meta__.npy"] = _npy(np.array(
        meta_text.replace('"kernel_params": null', '"kernel_params": ' + text)))
    with zipfile.ZipFile(path, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)


def test_deeply_nested_metadata_is_refused(tmp_path, X):
    """100,000 nested lists raised RecursionError from json.loads."""
    path = _saved(tmp_path, kpca.KernelPCA(n_components=2).fit(X))
    _with_kernel_params(path, "[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"m\.kpca: corrupt kpca model file: bad metadata "
                       r"\(maximum recursion depth exceeded"):
        load_model(path)


def test_metadata_the_decoder_cannot_follow_is_refused(tmp_path, X):
    """JSON that json.loads reads but the decoder cannot follow: kernels nested in the
    parameters of kernels take 3 JSON levels but 4 of the decoder's frames each."""
    path = _saved(tmp_path, kpca.KernelPCA(n_components=2).fit(X))
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    n = (sys.getrecursionlimit() - depth - 40) // 3  # json.loads reads 3 n levels
    node = "null"
    for _ in range(n):
        node = ('{"__type__": "kernel", "class": "Anova", "params": {"__type__": "dict", '
                f'"items": {{"beta": {node}}}}}}}')
    _with_kernel_params(path, node)
    with pytest.raises(ValueError, match=r"m\.kpca: corrupt kpca model file: bad metadata "
                       r"\(nested too deeply\)"):
        load_model(path)


# ------------------------------------------------------ parameters, output config, kernels
_BAD_PARAMS = {  # estimator, the parameter, a bad value, how its message starts
    "exact-n_jobs": (lambda: kpca.KernelPCA(2), "n_jobs", 0),
    "exact-n_components": (lambda: kpca.KernelPCA(2), "n_components", -5),
    "exact-kernel": (lambda: kpca.KernelPCA(2), "kernel", "nonexistent"),
    "nystrom-n_landmarks": (lambda: kpca.NystromKernelPCA(2, n_landmarks=10, random_state=0),
                            "n_landmarks", 0),
    "incremental-mode": (lambda: kpca.IncrementalKernelPCA(2), "mode", "sometimes"),
}


@pytest.mark.parametrize("case", sorted(_BAD_PARAMS))
def test_invalid_estimator_parameters_are_refused(tmp_path, X, case):
    """n_jobs=0, n_components=-5, kernel='nonexistent' used to load (kpca info showed
    them; plot and transform failed later, naming no file)."""
    make, param, bad = _BAD_PARAMS[case]
    est = make()
    path = _saved(tmp_path, est.fit(X))
    meta, members = _meta_and_members(path)
    meta["params"][param] = bad
    _write(path, meta, members)
    with pytest.raises(ValueError) as direct:  # the estimator's own check, as fit runs it
        est.set_params(**{param: bad})._validate_params()
    assert f"The '{param}' parameter of {type(est).__name__}" in str(direct.value)
    with pytest.raises(ValueError, match=r"m\.kpca: invalid kpca model file: ") as info:
        load_model(path)
    assert str(info.value).endswith(str(direct.value))


def test_every_estimator_parameter_has_a_constraint():
    """The loader's check (_validate_params) covers every parameter a file holds."""
    for name, cls in ESTIMATOR_CLASSES.items():
        assert set(cls._parameter_constraints) == set(cls().get_params(deep=False)), name


@pytest.mark.parametrize(("config", "message"), [
    (5, r"field '_sklearn_output_config' of KernelPCA: expected scikit-learn's "
        r"set_output configuration, a dict such as \{'transform': 'pandas'\}; got 5"),
    (None, r"field '_sklearn_output_config' of KernelPCA: None, but a value is required"),
    ({"__type__": "dict", "items": {"transform": "foo"}},
     r"""field "_sklearn_output_config\['transform'\]" of KernelPCA: 'foo' is not one of """
     r"\['default', 'pandas', 'polars'\]"),
    ({"__type__": "dict", "items": {"transform": None}},
     r"""field "_sklearn_output_config\['transform'\]" of KernelPCA: expected a str, got None"""),
    ({"__type__": "dict", "items": {"predict": "pandas"}},
     r"""field "_sklearn_output_config\['predict'\]" of KernelPCA: not a key of set_output """
     r"\(expected \['transform'\]\)"),
    ({"__type__": "list", "items": ["pandas"]},
     r"field '_sklearn_output_config' of KernelPCA: expected scikit-learn's set_output"),
], ids=["int", "none", "unknown-container", "none-container", "unknown-key", "list"])
def test_invalid_output_config_is_refused(tmp_path, X, config, message):
    """_sklearn_output_config = 5 loaded and transform failed with "argument of type
    'int' is not iterable"; {'transform': 'foo'} named no file."""
    path = _saved(tmp_path, kpca.KernelPCA(2).fit(X))
    meta, members = _meta_and_members(path)
    meta["state"]["_sklearn_output_config"] = config
    _write(path, meta, members)
    with pytest.raises(ValueError, match=r"m\.kpca: invalid kpca model file: " + message):
        load_model(path)


@pytest.mark.parametrize("container", ["default", "pandas"])
def test_output_config_set_by_set_output_round_trips(tmp_path, X, container):
    if container == "pandas":
        pytest.importorskip("pandas")
    est = kpca.KernelPCA(2).fit(X).set_output(transform=container)
    loaded = load_model(_saved(tmp_path, est))
    assert loaded._sklearn_output_config == {"transform": container}
    got, want = loaded.transform(X[:5]), est.transform(X[:5])
    assert type(got) is type(want)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize(("make", "edit", "message"), [
    (lambda: kpca.KernelPCA(2, kernel="rbf"),
     lambda k, s: k.__setitem__("class", "Polynomial"),
     r"RBF\(\{'gamma': 0\.25\}\) is not the kernel of 'kernel_', Polynomial\("),
    (lambda: kpca.NystromKernelPCA(2, kernel="rbf", n_landmarks=10, random_state=0),
     lambda k, s: s["params"]["items"].__setitem__("gamma", 2.0),
     r"RBF\(\{'gamma': 2\.0\}\) is not the kernel of 'kernel_', RBF\(\{'gamma': 0\.25\}\)"),
    (lambda: kpca.AnovaKernelPCA(2),
     lambda k, s: k["params"]["items"].__setitem__("gamma", 0.5),
     r"Anova\(\{'beta': .*, 'gamma': 1\.0\}\) is not the kernel of 'kernel_', Anova\("),
], ids=["class", "subspace-gamma", "anova-gamma"])
def test_kernel_and_subspace_kernel_must_agree(tmp_path, X, make, edit, message):
    """kernel_ edited to Polynomial loaded: kpca info described a poly kernel while
    transform used the RBF kernel of subspace_."""
    est = make().fit(X)
    assert est.kernel_ is est.subspace_.kernel  # fit sets one kernel
    path = _saved(tmp_path, est)
    meta, members = _meta_and_members(path)
    edit(meta["state"]["kernel_"], meta["state"]["subspace_"]["fields"]["kernel"])
    _write(path, meta, members)
    with pytest.raises(ValueError, match=rf"m\.kpca: invalid kpca model file: field "
                       rf"'subspace_\.kernel' of {type(est).__name__}: {message}"):
        load_model(path)


# ------------------------------------------------------------------------- saving
def test_save_writes_only_the_schema_and_refuses_undeclared_attributes(tmp_path, X):
    est = kpca.KernelPCA(n_components=2).fit(X)
    est.note_ = "hello"
    with pytest.raises(ValueError, match=r"kpca\.save: KernelPCA has fitted attribute\(s\) "
                       r"\['note_'\] that its model-file schema"):
        save_model(est, tmp_path / "m.kpca")
    assert not (tmp_path / "m.kpca").exists()


def test_save_refuses_a_model_it_could_not_load(tmp_path, X):
    est = kpca.KernelPCA(n_components=2).fit(X)
    est.eigenvalues_ = est.eigenvalues_.copy()
    est.eigenvalues_[0] = np.nan
    with pytest.raises(ValueError, match=r"field 'eigenvalues_' of KernelPCA: holds NaN"):
        save_model(est, tmp_path / "m.kpca")


def test_schema_names_are_not_class_attributes():
    """Setting a loaded attribute can never shadow a method or property."""
    for name, schema in SCHEMAS.items():
        cls = ESTIMATOR_CLASSES[name]
        assert not [f for f in schema if hasattr(cls, f) or f.startswith("__")], name


# ------------------------------------------------------------------------- coverage
def _configurations():
    """Fits that exercise every optional attribute and shape of the schema."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(120, 3))
    smooth = rng.uniform(size=(400, 2))  # many close landmarks: a rank-deficient K_mm
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0))
    docs = np.array(["abc", "abd", "bcd", "cda", "aab", "bba", "ccd", "dda"] * 4, dtype=object)
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    K = X @ X.T
    I = kpca.IncrementalKernelPCA  # noqa: E741
    return {
        "exact-f32": (kpca.KernelPCA(3, kernel="rbf"), X.astype(np.float32)),
        "exact-names": (kpca.KernelPCA(2), frame),
        "exact-sparse": (kpca.KernelPCA(2, kernel="rbf"), Xs),
        "exact-precomputed": (kpca.KernelPCA(2, kernel="precomputed"), K),
        "exact-strings": (kpca.KernelPCA(2, kernel="spectrum"), docs),
        "exact-all": (kpca.KernelPCA(None, kernel="linear"), X),
        "exact-uncentred": (kpca.KernelPCA(2, kernel="rbf", center=False), X),
        "exact-inverse": (kpca.KernelPCA(2, kernel="rbf", fit_inverse_transform=True), X),
        "exact-auto": (kpca.KernelPCA("auto", kernel="rbf", random_state=0), X),
        "nystrom-rank-deficient": (kpca.NystromKernelPCA(5, n_landmarks=300, gamma=0.5,
                                                         random_state=0), smooth),
        "nystrom-kmeans": (kpca.NystromKernelPCA(3, n_landmarks=20, landmarks="kmeans",
                                                 random_state=0), X),
        "nystrom-sparse": (kpca.NystromKernelPCA(2, n_landmarks=20, random_state=0), Xs),
        "rff-f32": (kpca.RandomFeatureKernelPCA(3, n_features=50, random_state=0),
                    X.astype(np.float32)),
        "weighted-precomputed": (kpca.WeightedKernelPCA(2, kernel="precomputed"), K),
        "spherical-uncentred": (kpca.SphericalKernelPCA(2, kernel="rbf", center=False), X),
        "anova-sparse": (kpca.AnovaKernelPCA(2), Xs),
        "robpca-f32": (kpca.KernelROBPCA(2, kernel="rbf", random_state=0),
                       X.astype(np.float32)),
        "incremental-bounded": (I(3, mode="bounded", max_rows=15, batch_size=30,
                                  random_state=0), X),
        "incremental-auto": (I(3, mode="auto", max_rows=50, batch_size=30, random_state=0), X),
        "incremental-names": (I(2), frame),
    }


@pytest.mark.parametrize("case", sorted(_configurations()))
def test_every_configuration_round_trips_bit_for_bit(tmp_path, case):
    """The schema admits every fitted state kpca produces, and nothing is lost."""
    est, data = _configurations()[case]
    est.fit(data)
    path = _saved(tmp_path, est)
    loaded = load_model(path)
    assert set(vars(loaded)) == set(vars(est)) - set(type(est)._unsaved_attributes)
    again = tmp_path / "again.kpca"
    save_model(loaded, again)
    a, b = _state_arrays(path), _state_arrays(again)
    assert a.keys() == b.keys()
    for where, arr in a.items():
        assert arr.dtype == b[where].dtype, where
        np.testing.assert_array_equal(arr, b[where], err_msg=where)
    rows = data[:5] if not hasattr(data, "iloc") else data.iloc[:5]
    np.testing.assert_array_equal(loaded.transform(rows), est.transform(rows))
