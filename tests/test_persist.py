"""Tests of kpca._persist: model files that execute no code on load."""

from __future__ import annotations

import builtins
import dataclasses
import io
import json
import zipfile
from numbers import Real

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

import kpca
from kpca import kernels
from kpca.io import FORMAT_VERSION, load_model, model_summary, save_model


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    T = rng.normal(size=(9, 4))
    return X, T


def _assert_same(a, b, where="value"):
    """Deep equality of two decoded values (arrays bit for bit, dtype and layout)."""
    assert type(a) is type(b), where
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif sp.issparse(a):
        assert a.format == b.format and a.dtype == b.dtype
        np.testing.assert_array_equal(a.toarray(), b.toarray(), err_msg=where)
    elif isinstance(a, BaseEstimator):
        _assert_same(a.get_params(deep=False), b.get_params(deep=False), where)
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, where


def _round_trip(est, tmp_path):
    path = tmp_path / "model.kpca"
    save_model(est, path)
    loaded = load_model(path)
    assert type(loaded) is type(est)
    # what a fit keeps about this machine (KernelPCA.fit_plan_) is not in the file
    unsaved = set(getattr(type(est), "_unsaved_attributes", ()))
    kept = {k: v for k, v in vars(est).items() if k not in unsaved}
    assert vars(loaded).keys() == kept.keys()
    for name, value in kept.items():
        _assert_same(value, vars(loaded)[name], name)
    return loaded


KERNEL_CASES = [
    dict(kernel="linear"),
    dict(kernel="poly", degree=2, gamma=0.3, coef0=0.5),
    dict(kernel="rbf", gamma=0.4),
    dict(kernel="rbf", gamma="median", random_state=3),
    dict(kernel="laplacian", gamma="scale"),
    dict(kernel="sigmoid", gamma=0.05, coef0=0.1),
    dict(kernel="cosine"),
    dict(kernel="anova", gamma=0.5, kernel_params={"beta": np.array([0.1, 0.5, 0.2, 0.9])}),
    dict(kernel=kernels.RBF(gamma=0.2)),
    dict(kernel="rbf", gamma=0.3, center=False),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("params", KERNEL_CASES, ids=lambda p: str(p["kernel"]))
def test_round_trip_transform_identical(tmp_path, data, params, dtype):
    X, T = (a.astype(dtype) for a in data)
    est = kpca.KernelPCA(n_components=3, **params).fit(X)
    loaded = _round_trip(est, tmp_path)
    expected = est.transform(T)
    got = loaded.transform(T)
    assert got.dtype == expected.dtype == dtype
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(loaded.get_feature_names_out(), est.get_feature_names_out())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_round_trip_inverse_transform(tmp_path, data, dtype):
    X, T = (a.astype(dtype) for a in data)
    est = kpca.KernelPCA(n_components=2, kernel="rbf", gamma=0.3, fit_inverse_transform=True,
                         alpha=0.1).fit(X)
    loaded = _round_trip(est, tmp_path)
    assert isinstance(loaded.subspace_, kpca.FittedSubspace)
    assert isinstance(loaded.subspace_.kernel, kernels.RBF)
    Z = est.transform(T)
    np.testing.assert_array_equal(loaded.transform(T), Z)
    np.testing.assert_array_equal(loaded.inverse_transform(Z), est.inverse_transform(Z))


def test_round_trip_fraction_solvers_and_feature_names(tmp_path, data):
    pd = pytest.importorskip("pandas")
    X, T = data
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    est = kpca.KernelPCA(n_components=0.8, kernel="rbf", gamma=0.1, eigen_solver="randomized",
                         random_state=0).fit(frame)
    loaded = _round_trip(est, tmp_path)
    assert loaded.feature_names_in_.dtype == object
    assert list(loaded.feature_names_in_) == ["a", "b", "c", "d"]
    Tf = pd.DataFrame(T, columns=frame.columns)
    np.testing.assert_array_equal(loaded.transform(Tf), est.transform(Tf))


def test_round_trip_sparse_training_data(tmp_path, data):
    X, T = data
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0))
    est = kpca.KernelPCA(n_components=2, kernel="rbf", gamma=0.2).fit(Xs)
    loaded = _round_trip(est, tmp_path)
    assert sp.issparse(loaded.X_fit_)
    np.testing.assert_array_equal(loaded.transform(T), est.transform(T))


def test_matches_independent_projection_after_load(tmp_path, data):
    """The loaded model still implements (docs/math.md, "Centring in feature space")
    and (docs/math.md, "The eigenproblem"), checked from scratch."""
    X, T = data
    est = kpca.KernelPCA(n_components=2, kernel="rbf", gamma=0.25).fit(X)
    save_model(est, tmp_path / "m.kpca")
    loaded = load_model(tmp_path / "m.kpca")

    def k(A, B):
        return np.exp(-0.25 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))

    n = len(X)
    K = k(X, X)
    one = np.full((n, n), 1 / n)
    Kc = K - one @ K - K @ one + one @ K @ one
    mu, V = np.linalg.eigh(Kc)
    mu, V = mu[::-1][:2], V[:, ::-1][:, :2]
    Kt = k(T, X)
    one_t = np.full((len(T), n), 1 / n)
    Ktc = Kt - one_t @ K - Kt @ one + one_t @ K @ one
    expected = Ktc @ (V / np.sqrt(mu))
    got = loaded.transform(T)
    signs = np.sign((got * expected).sum(0))
    np.testing.assert_allclose(got * signs, expected, atol=1e-10)


# ------------------------------------------------------------------------- refusals
def test_callable_kernel_is_refused(tmp_path, data):
    X, _ = data
    est = kpca.KernelPCA(n_components=2, kernel=lambda a, b: a @ b.T).fit(X)
    with pytest.raises(ValueError, match="cannot save a model with a callable kernel"):
        save_model(est, tmp_path / "m.kpca")
    assert not (tmp_path / "m.kpca").exists()


def test_failed_save_keeps_existing_file(tmp_path, data):
    X, _ = data
    good = kpca.KernelPCA(n_components=2).fit(X)
    save_model(good, tmp_path / "m.kpca")
    before = (tmp_path / "m.kpca").read_bytes()
    bad = kpca.KernelPCA(n_components=2, kernel=lambda a, b: a @ b.T).fit(X)
    with pytest.raises(ValueError):
        save_model(bad, tmp_path / "m.kpca")
    assert (tmp_path / "m.kpca").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.kpca"]


def test_unsupported_values_are_refused(tmp_path, data):
    X, _ = data
    est = kpca.KernelPCA(n_components=2, random_state=np.random.RandomState(0)).fit(X)
    with pytest.raises(ValueError, match="random_state.*RandomState"):
        save_model(est, tmp_path / "m.kpca")

    class MyRBF(kernels.RBF):
        pass

    est = kpca.KernelPCA(n_components=2, kernel=MyRBF(gamma=0.1)).fit(X)
    with pytest.raises(ValueError, match="MyRBF is not part of kpca.kernels"):
        save_model(est, tmp_path / "m.kpca")


def test_unfitted_or_foreign_estimators_are_refused(tmp_path):
    with pytest.raises(NotFittedError):
        save_model(kpca.KernelPCA(), tmp_path / "m.kpca")
    from sklearn.decomposition import PCA, KernelPCA

    # issue 33: the message names kpca.save and says what to do instead
    for model in (PCA().fit(np.eye(3)), KernelPCA(n_components=2).fit(np.eye(3))):
        name = type(model).__name__
        with pytest.raises(ValueError, match=rf"^kpca\.save: sklearn\.{name} is a "
                           "scikit-learn model, not a kpca model.*kpca.KernelPCA is a "
                           "drop-in replacement.*skops"):
            save_model(model, tmp_path / "m.kpca")
    with pytest.raises(ValueError, match=r"^kpca\.save: Dummy is not an estimator exported "
                       r"by kpca \(the estimators it saves: AnovaKernelPCA, "):
        save_model(Dummy().fit(), tmp_path / "m.kpca")
    assert not (tmp_path / "m.kpca").exists()


# ------------------------------------------------------------------------- tampering
def _rewrite(path, *, meta=None, replace=None):
    """Rewrite a model archive with changed metadata and/or replaced raw members."""
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    if meta is not None:
        current = json.loads(str(np.load(io.BytesIO(members["__meta__.npy"]))[()]))
        meta(current)
        buf = io.BytesIO()
        np.save(buf, np.array(json.dumps(current)))
        members["__meta__.npy"] = buf.getvalue()
    for name, payload in (replace or {}).items():
        assert name in members
        members[name] = payload
    with zipfile.ZipFile(path, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)


class _Payload:
    """Would run code if it were ever unpickled."""

    def __reduce__(self):
        return (exec, ("import builtins; builtins._kpca_pwned = True",))


@pytest.fixture
def model_file(tmp_path, data):
    path = tmp_path / "m.kpca"
    save_model(kpca.KernelPCA(n_components=2, kernel="rbf", gamma=0.1).fit(data[0]), path)
    return path


def test_object_array_is_refused_and_never_unpickled(model_file):
    buf = io.BytesIO()
    np.save(buf, np.array([_Payload()], dtype=object), allow_pickle=True)
    _rewrite(model_file, replace={"a1.npy": buf.getvalue()})  # a state array
    with pytest.raises(ValueError, match=r"m\.kpca: array 'a1' holds Python objects.*tampered"):
        load_model(model_file)
    assert not hasattr(builtins, "_kpca_pwned")


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (lambda m: m.update({"class": "PCA"}), "not an estimator exported by kpca"),
        (lambda m: m.update({"class": "__version__"}), "not an estimator exported by kpca"),
        (lambda m: m.update({"format_version": FORMAT_VERSION + 1}), "upgrade kpca to load it"),
        (lambda m: m.update({"format": "something"}), "not a kpca model file"),
        (lambda m: m["state"]["kernel_"].update({"class": "Callable"}),
         "'Callable' is not a kernel class"),
        (lambda m: m["state"]["kernel_"].update({"class": "make_kernel"}),
         "'make_kernel' is not a kernel class"),
        (lambda m: m["state"]["subspace_"].update({"class": "Popen"}),
         "field 'subspace_' of KernelPCA: expected a FittedSubspace dataclass, got 'Popen'"),
        (lambda m: m["state"]["subspace_"]["fields"].update({"evil": None}),
         "field 'subspace_.evil' of KernelPCA: not a field of FittedSubspace"),
        (lambda m: m["state"].update({"__class__": None}), "bad attribute name"),
        (lambda m: m["state"].update({"transform": None}), "bad attribute name 'transform'"),
        (lambda m: m["state"].update({"_raw_training_scores": None}), "bad attribute name"),
        (lambda m: m["params"].update({"evil": 1}), r"parameter\(s\) \['evil'\] unknown"),
        (lambda m: m["state"]["eigenvalues_"].update({"key": "zz"}), "missing array 'zz'"),
        (lambda m: m["state"].update({"x_": {"__type__": "code"}}), "bad attribute name 'x_'"),
        (lambda m: m["params"].update({"kernel_params": {"__type__": "code"}}),
         "unknown value type"),
        (lambda m: m["state"].update({"eigen_solver_": {"__type__": "code"}}),
         "field 'eigen_solver_' of KernelPCA: expected a str"),
    ],
)
def test_tampered_metadata_is_refused(model_file, change, pattern):
    _rewrite(model_file, meta=change)
    with pytest.raises(ValueError, match=pattern):
        load_model(model_file)


def test_non_model_files(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        load_model(tmp_path / "missing.kpca")
    (tmp_path / "text.kpca").write_text("hello")
    with pytest.raises(ValueError, match="not a kpca model file"):
        load_model(tmp_path / "text.kpca")
    np.savez(tmp_path / "other.npz", x=np.ones(3))
    with pytest.raises(ValueError, match="not a kpca model file"):
        load_model(tmp_path / "other.npz")
    (tmp_path / "empty.kpca").write_bytes(b"")
    with pytest.raises(ValueError, match="not a kpca model file"):
        load_model(tmp_path / "empty.kpca")


# ------------------------------------------------------------------------- genericity
@dataclasses.dataclass(frozen=True)
class _Stats:
    weights: np.ndarray
    label: str


class Dummy(BaseEstimator):
    """A future estimator with other kinds of fitted state."""

    _parameter_constraints: dict = {"a": [Real], "names": [list, None]}  # load checks them

    def __init__(self, a=1, names=None):
        self.a = a
        self.names = names

    def fit(self, X=None, y=None):
        self.n_iter_ = np.int64(7)
        self.tol_ = np.float32(1e-3)
        self.names_ = ["x", "y"]
        self.shape_ = (3, 4)
        self.history_ = {"loss": [0.5, 0.25], "best": None, "ok": True}
        self.matrix_ = sp.csc_matrix(np.eye(3))
        self.kernels_ = [kernels.Laplacian(gamma=0.5), kernels.Anova(gamma=1.0, beta=[1.0])]
        self.stats_ = _Stats(np.arange(3.0), "s")
        self.nan_ = float("nan")
        return self


def test_generic_state_round_trip(tmp_path, monkeypatch):
    from kpca.io import _model as _persist
    from kpca.io import _schema

    monkeypatch.setitem(_persist.ESTIMATOR_CLASSES, "Dummy", Dummy)
    # a new estimator declares its fitted attributes (here: any encodable value)
    monkeypatch.setitem(_schema.SCHEMAS, "Dummy", {
        k: _schema.Field("any") for k in ("n_iter_", "tol_", "names_", "shape_", "history_",
                                          "matrix_", "kernels_", "stats_", "nan_")})
    monkeypatch.setitem(_persist.DATACLASSES, "_Stats", f"{__name__}:_Stats")
    est = Dummy(a=2.5, names=["p", "q"]).fit()
    loaded = _round_trip(est, tmp_path)
    assert isinstance(loaded.n_iter_, np.int64) and isinstance(loaded.tol_, np.float32)
    assert loaded.shape_ == (3, 4)
    # a dataclass that is not registered is refused
    monkeypatch.delitem(_persist.DATACLASSES, "_Stats")
    with pytest.raises(ValueError, match="dataclass _Stats is not registered"):
        save_model(est, tmp_path / "d.kpca")


def test_model_summary(data):
    est = kpca.KernelPCA(n_components=2, kernel="rbf", gamma=0.5).fit(data[0])
    info = model_summary(est)
    json.dumps(info)  # JSON-friendly
    assert info["kernel"] == {"class": "RBF", "name": "rbf", "params": {"gamma": 0.5}}
    assert info["n_components"] == 2 and info["n_samples_fit"] == 60
    np.testing.assert_allclose(info["eigenvalues"], est.eigenvalues_)
    np.testing.assert_allclose(info["explained_variance_ratio"], est.explained_variance_ratio_)
