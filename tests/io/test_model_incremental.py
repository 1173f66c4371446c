"""Model files of kpca.IncrementalKernelPCA: saved after any batch, loaded, updated further.

The stored kernel values (``gram_``, listed in ``_unsaved_attributes``) are not written;
the first ``partial_fit`` after loading rebuilds them from ``X_fit_``, and the stream
then goes on as if it had never been interrupted.
"""

from __future__ import annotations

import json
import zipfile
from numbers import Integral

import numpy as np
import pytest
from sklearn.base import BaseEstimator

import kpca
from kpca import kernels
from kpca.io import load_model, save_model

BATCH = 40
MODES = {
    "exact": dict(mode="exact"),
    "bounded": dict(mode="bounded", max_rows=30),
    "auto-switches": dict(mode="auto", max_rows=100),  # exact when saved, bounded after
}


@pytest.fixture(scope="module")
def stream():
    rng = np.random.default_rng(0)
    return rng.normal(size=(200, 4)) * np.array([1.0, 0.5, 2.0, 1.0])


def _model(**params):
    return kpca.IncrementalKernelPCA(3, gamma=0.3, batch_size=BATCH, random_state=0,
                                     **params)


def _feed(est, X):
    for s in range(0, X.shape[0], BATCH):
        est.partial_fit(X[s : s + BATCH])
    return est


def _saved_state(path):
    with zipfile.ZipFile(path) as z, z.open("__meta__.npy") as fh:
        meta = json.loads(str(np.lib.format.read_array(fh)[()]))
    return meta["state"]


@pytest.mark.parametrize("name", list(MODES))
def test_saved_part_of_a_stream_transforms_and_continues(tmp_path, stream, name):
    first, rest = stream[:80], stream[80:]
    est = _feed(_model(**MODES[name]), first)
    path = tmp_path / "m.kpca"
    save_model(est, path)
    state = _saved_state(path)
    assert "gram_" not in state and "n_samples_seen_" in state
    loaded = load_model(path)
    assert "gram_" not in vars(loaded)
    assert vars(loaded).keys() == vars(est).keys() - {"gram_"}
    assert loaded.n_samples_seen_ == 80 and loaded.mode_ == est.mode_
    assert isinstance(loaded.memory_budget_, int)
    assert loaded.stream_params_ == est.stream_params_
    np.testing.assert_array_equal(loaded.transform(stream), est.transform(stream))
    np.testing.assert_array_equal(loaded.score_samples(stream), est.score_samples(stream))

    _feed(loaded, rest)
    whole = _feed(_model(**MODES[name]), stream)  # the same batches, never interrupted
    assert loaded.n_samples_seen_ == whole.n_samples_seen_ == 200
    assert loaded.mode_ == whole.mode_ == ("exact" if name == "exact" else "bounded")
    np.testing.assert_allclose(loaded.eigenvalues_, whole.eigenvalues_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(np.abs(loaded.transform(stream)), np.abs(whole.transform(stream)),
                               atol=1e-7)
    if name == "exact":  # ... and batch kernel PCA of every row
        ref = kpca.KernelPCA(3, kernel="rbf", gamma=0.3).fit(stream)
        np.testing.assert_allclose(loaded.eigenvalues_, ref.eigenvalues_, rtol=1e-8)

    # saved again after the update, and loaded: still the same model
    save_model(loaded, tmp_path / "again.kpca")
    again = load_model(tmp_path / "again.kpca")
    np.testing.assert_array_equal(again.transform(stream), loaded.transform(stream))


def test_float32_storage_is_rebuilt_as_float32(tmp_path, stream):
    est = _feed(_model(mode="exact", precision="float32", memory_limit="64MB"), stream[:80])
    assert est.gram_.dtype == np.float32
    save_model(est, tmp_path / "m.kpca")
    loaded = load_model(tmp_path / "m.kpca")
    assert loaded.memory_limit == "64MB"
    _feed(loaded, stream[80:])
    whole = _feed(_model(mode="exact", precision="float32", memory_limit="64MB"), stream)
    assert loaded.gram_.dtype == np.float32
    np.testing.assert_allclose(loaded.eigenvalues_, whole.eigenvalues_, rtol=1e-5)


def test_named_kernels_and_their_parameters(tmp_path, stream):
    est = _feed(kpca.IncrementalKernelPCA(2, kernel="poly", degree=2, coef0=0.5,
                                          gamma="scale", batch_size=BATCH), stream[:80])
    save_model(est, tmp_path / "m.kpca")
    loaded = load_model(tmp_path / "m.kpca")
    assert isinstance(loaded.kernel_, kernels.Kernel)
    assert loaded.kernel_.get_params() == est.kernel_.get_params()
    _feed(loaded, stream[80:])
    _feed(est, stream[80:])
    np.testing.assert_allclose(loaded.eigenvalues_, est.eigenvalues_, rtol=1e-8)


@pytest.mark.parametrize("params", [
    dict(kernel=kernels.RBF(gamma=0.3)),
    dict(kernel="anova", gamma=0.5, kernel_params={"beta": np.array([0.1, 0.5, 0.2, 0.9])}),
], ids=["kernel-object", "array-kernel-params"])
def test_stream_with_object_parameters_continues_after_loading(tmp_path, stream, params):
    est = _feed(kpca.IncrementalKernelPCA(2, batch_size=BATCH, **params), stream[:80])
    save_model(est, tmp_path / "m.kpca")
    loaded = load_model(tmp_path / "m.kpca")
    np.testing.assert_array_equal(loaded.transform(stream), est.transform(stream))
    _feed(loaded, stream[80:])
    _feed(est, stream[80:])
    np.testing.assert_allclose(loaded.eigenvalues_, est.eigenvalues_, rtol=1e-8)


def test_callable_kernel_is_refused(tmp_path, stream):
    est = kpca.IncrementalKernelPCA(2, kernel=lambda A, B: A @ B.T).partial_fit(stream[:50])
    with pytest.raises(ValueError, match="callable kernel"):
        save_model(est, tmp_path / "m.kpca")
    assert not (tmp_path / "m.kpca").exists()


def test_a_failed_update_after_loading_keeps_the_model(tmp_path, stream):
    est = _feed(_model(mode="exact"), stream[:80])
    save_model(est, tmp_path / "m.kpca")
    loaded = load_model(tmp_path / "m.kpca")
    with pytest.raises(ValueError, match="features"):
        loaded.partial_fit(stream[80:, :3])
    assert "gram_" not in vars(loaded) and loaded.n_samples_seen_ == 80
    np.testing.assert_array_equal(loaded.transform(stream), est.transform(stream))
    _feed(loaded, stream[80:])
    np.testing.assert_allclose(loaded.eigenvalues_, _feed(_model(mode="exact"),
                                                          stream).eigenvalues_, rtol=1e-8)


class _Cache:
    """A value that model files cannot hold."""


class _Cached(BaseEstimator):
    _unsaved_attributes = ("cache_",)
    _parameter_constraints: dict = {"a": [Integral]}  # the loader validates parameters

    def __init__(self, a=1):
        self.a = a

    def fit(self):
        self.value_ = np.arange(3.0)
        self.cache_ = _Cache()
        return self


def test_unsaved_attributes_are_not_written(tmp_path, monkeypatch):
    from kpca.io import _model, _schema

    # fit_plan_ is a record of how the fit ran, not part of the model
    assert kpca.KernelPCA._unsaved_attributes == ("fit_plan_",)
    assert kpca.IncrementalKernelPCA._unsaved_attributes == ("gram_",)
    monkeypatch.setitem(_model.ESTIMATOR_CLASSES, "_Cached", _Cached)
    monkeypatch.setitem(_schema.SCHEMAS, "_Cached", {"value_": _schema.Field("any")})
    save_model(_Cached(a=2).fit(), tmp_path / "c.kpca")
    loaded = load_model(tmp_path / "c.kpca")
    assert loaded.a == 2 and set(vars(loaded)) == {"a", "value_"}
    monkeypatch.setattr(_Cached, "_unsaved_attributes", ())
    with pytest.raises(ValueError, match="cache_"):
        save_model(_Cached().fit(), tmp_path / "d.kpca")
