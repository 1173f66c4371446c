"""IncrementalKernelPCA: kernel PCA fitted batch by batch.

Exact mode: after any sequence of batches the model is batch kernel PCA of every row
seen, checked against ``kpca.KernelPCA(eigen_solver='dense')`` and against an
independent dense NumPy computation (sklearn's pairwise kernels, ``H K H``,
``numpy.linalg.eigh``). Bounded mode: streaming Nyström KPCA with a fixed number of
landmarks, memory flat, close to batch KPCA on smooth low-dimensional data.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import pairwise_kernels

import kpca
from kpca import IncrementalKernelPCA, KernelPCA

#: relative agreement of the exact mode with batch KPCA (eigenvalues relative to mu_1;
#: subspaces as 1 - smallest singular value of V_inc^T V_ref; projections relative to
#: their largest entry)
EXACT = 1e-8
#: eigenvalue gap (relative to mu_1) that makes a component / subspace well defined
GAP = 1e-3

#: kernels and parameters. sigmoid is not PSD: gamma=0.02, coef0=-1 keeps the
#: negative eigenvalues of H K H below 1e-4 of mu_1 on these data (the top six are
#: clearly positive), so batch KPCA accepts it at every stream length.
KERNELS = {
    "rbf": dict(kernel="rbf", gamma=0.2),
    "poly": dict(kernel="poly", gamma=0.2, degree=3, coef0=1.0),
    "laplacian": dict(kernel="laplacian", gamma=0.2),
    "sigmoid": dict(kernel="sigmoid", gamma=0.02, coef0=-1.0),
    "linear": dict(kernel="linear"),
}


# ----------------------------------------------------------------------------- helpers
@pytest.fixture(autouse=True)
def _update_path(monkeypatch, request):
    """These tests check the update itself: where KernelPCA's rule would pick the dense
    solver (small n, many components), the estimator decomposes the stored matrix
    instead, so the rule is switched off here except for the tests of that shortcut."""
    if "dense_rule" not in request.keywords:
        import kpca._incremental as inc

        monkeypatch.setattr(inc, "choose_solver", lambda n, k, **kw: "krylov")


def _data(n, d=4, seed=0):
    """Anisotropic Gaussian rows: distinct eigenvalues for every kernel above."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * np.array([2.0, 1.0, 0.7, 0.4, 0.3, 0.2])[:d]


def _sk_params(params):
    """sklearn's pairwise_kernels arguments of a kpca configuration."""
    p = {k: v for k, v in params.items() if k != "kernel"}
    return params["kernel"], p


def numpy_reference(X, params):
    """Eigenvalues (descending, all of them) and eigenvectors of H K H, by NumPy."""
    metric, p = _sk_params(params)
    K = pairwise_kernels(X, metric=metric, **p)
    n = X.shape[0]
    H = np.eye(n) - np.ones((n, n)) / n
    w, V = np.linalg.eigh(H @ (0.5 * (K + K.T)) @ H)
    return w[::-1], V[:, ::-1]


def kpca_reference(X, params, k):
    return KernelPCA(n_components=k, eigen_solver="dense", **params).fit(X)


def clear_prefix(w, k):
    """Leading components (at most k) that form a well-defined subspace: the number p
    of the largest ones with mu_p clearly positive and clearly above mu_{p+1}."""
    w = np.asarray(w, dtype=np.float64)
    p = 0
    for j in range(min(k, w.shape[0])):
        nxt = w[j + 1] if j + 1 < w.shape[0] else 0.0
        if w[j] > GAP * w[0] and w[j] - nxt > GAP * w[0]:
            p = j + 1
    return p


def separated(w, k):
    """Components j < k whose eigenvalue is clearly positive and apart from both
    neighbours (their eigenvector, and a projection on it, is defined up to sign)."""
    w = np.asarray(w, dtype=np.float64)
    out = []
    for j in range(min(k, w.shape[0])):
        lo = w[j + 1] if j + 1 < w.shape[0] else 0.0
        hi = w[j - 1] if j else np.inf
        if w[j] > GAP * w[0] and min(hi - w[j], w[j] - lo) > GAP * w[0]:
            out.append(j)
    return out


def subspace_error(A, B):
    """1 - smallest singular value of A^T B (orthonormal columns)."""
    if A.shape[1] == 0:
        return 0.0
    s = np.linalg.svd(A.T @ B, compute_uv=False)
    return float(1.0 - s.min())


def align(got, ref):
    """``ref`` with each column's sign flipped to agree with ``got``."""
    s = np.sign(np.sum(got * ref, axis=0))
    s[s == 0] = 1.0
    return ref * s


def assert_projections_equal(got, ref, cols, tol=EXACT):
    """Columns ``cols`` of two projections agree up to each column's sign."""
    if not cols:
        return
    got, ref = got[:, cols], ref[:, cols]
    scale = max(float(np.max(np.abs(ref))), 1e-300)
    err = float(np.max(np.abs(got - align(got, ref)))) / scale
    assert err <= tol, f"projections differ by {err:.2e} (relative)"


def assert_exact(model, X, params, k, T=None, *, against_kpca=True):
    """The model equals batch KPCA of X: eigenvalues, eigenvectors, projections."""
    N = X.shape[0]
    w, U = numpy_reference(X, params)
    kk = min(k, N)
    assert model.n_samples_seen_ == N
    assert model.n_components_ == kk
    assert model.mode_ == "exact"
    mu = np.asarray(model.eigenvalues_, dtype=np.float64)
    assert mu.shape == (kk,)
    scale = w[0]
    err = np.max(np.abs(mu - np.maximum(w[:kk], 0))) / scale
    assert err <= EXACT, f"eigenvalues differ by {err:.2e} of mu_1"
    V = np.asarray(model.eigenvectors_, dtype=np.float64)
    assert V.shape == (N, kk)
    p = clear_prefix(w, kk)
    assert subspace_error(V[:, :p], U[:, :p]) <= EXACT
    np.testing.assert_allclose(V[:, :p].T @ V[:, :p], np.eye(p), atol=1e-10)
    assert_projections_equal(V, U[:, :kk], separated(w, kk), tol=1e-6)
    np.testing.assert_allclose(model.explained_variance_, mu / N, rtol=1e-12)
    if against_kpca:
        ref = kpca_reference(X, params, kk)
        np.testing.assert_allclose(mu, ref.eigenvalues_, rtol=0, atol=EXACT * scale)
        if T is not None:
            assert_projections_equal(model.transform(T), ref.transform(T),
                                     separated(w, kk))
            assert_projections_equal(model.transform(X), ref.transform(X),
                                     separated(w, kk))
    return w


def stream(model, X, sizes):
    """partial_fit the rows of X in consecutive batches of ``sizes``."""
    s = 0
    for b in sizes:
        model.partial_fit(X[s : s + b])
        s += b
    assert s == X.shape[0]
    return model


def fitted_arrays(model):
    return {k: v for k, v in vars(model).items() if k.endswith("_") and isinstance(v, np.ndarray)}


# ----------------------------------------------------------------------------- exactness
def _cases():
    for kernel in sorted(KERNELS):
        for batch_size in (1, 7, 100):
            yield pytest.param(kernel, batch_size, id=f"{kernel}-{batch_size}")


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(("kernel", "batch_size"), list(_cases()))
def test_exact_mode_equals_batch_kpca(kernel, batch_size):
    params = KERNELS[kernel]
    n = 50 if batch_size == 1 else 150
    X, T = _data(n), _data(12, seed=1)
    k = 6
    model = IncrementalKernelPCA(n_components=k, mode="exact", **params)
    stream(model, X, [len(b) for b in np.array_split(X, -(-n // batch_size))])
    assert_exact(model, X, params, k, T)
    if kernel == "linear":  # rank n_features: the components beyond it are exactly 0
        assert np.all(model.eigenvalues_[X.shape[1]:] == 0)
        assert np.all(model.eigenvalues_[: X.shape[1]] > 0)


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kernel", ["rbf", "poly", "laplacian"])
def test_exact_after_every_batch_starting_below_n_components(kernel):
    # k = 6 and a first batch of 3 rows: the model has 3 components (clipped, as
    # KernelPCA), then grows to 6; batch KPCA of the rows seen after every batch
    params = KERNELS[kernel]
    X, T = _data(90, seed=2), _data(8, seed=3)
    model = IncrementalKernelPCA(n_components=6, mode="exact", **params)
    s = 0
    for b in [3, 2, 1, 30, 1, 53]:
        model.partial_fit(X[s : s + b])
        s += b
        assert_exact(model, X[:s], params, 6, T)


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
def test_first_batch_of_one_row():
    X = _data(20, seed=4)
    model = IncrementalKernelPCA(n_components=4, gamma=0.2, mode="exact").partial_fit(X[:1])
    assert model.n_samples_seen_ == 1 and model.n_components_ == 1
    np.testing.assert_array_equal(model.eigenvalues_, [0.0])
    np.testing.assert_array_equal(model.transform(X[:3]), np.zeros((3, 1)))
    model.partial_fit(X[1:])
    assert_exact(model, X, KERNELS["rbf"], 4, _data(5, seed=5))


def test_transform_inverse_transform_and_denoise_after_partial_fit():
    X, T = _data(80, seed=6), _data(10, seed=7)
    model = stream(IncrementalKernelPCA(n_components=3, gamma=0.2, mode="exact"), X,
                   [20, 1, 59])
    Z = model.transform(T)
    assert Z.shape == (10, 3) and np.all(np.isfinite(Z))
    np.testing.assert_allclose(model.fit_transform(X), model.transform(X), rtol=1e-8,
                               atol=1e-10)
    for method in ("fixed_point", "mds"):
        R = model.inverse_transform(Z, method=method)
        assert R.shape == T.shape and np.all(np.isfinite(R))
        D = model.denoise(T, method=method)
        assert D.shape == T.shape and np.all(np.isfinite(D))
    D = model.denoise(T)
    assert D.shape == T.shape and np.all(np.isfinite(D))


def test_float32_input_stays_float32_and_close():
    X, T = _data(60, seed=8), _data(6, seed=9)
    m64 = stream(IncrementalKernelPCA(n_components=3, gamma=0.2, mode="exact"), X, [10, 50])
    m32 = stream(IncrementalKernelPCA(n_components=3, gamma=0.2, mode="exact"),
                 X.astype(np.float32), [10, 50])
    assert m32.eigenvalues_.dtype == np.float32
    Z32 = m32.transform(T.astype(np.float32))
    assert Z32.dtype == np.float32
    np.testing.assert_allclose(m32.eigenvalues_, m64.eigenvalues_, rtol=1e-4)
    Z64 = m64.transform(T)
    np.testing.assert_allclose(Z32, align(Z32, Z64), rtol=0, atol=1e-4 * np.abs(Z64).max())


def test_sparse_batches_equal_dense_ones():
    sp = pytest.importorskip("scipy.sparse")
    X, T = _data(40, seed=10), _data(5, seed=11)
    X[np.abs(X) < 0.5] = 0
    dense = stream(IncrementalKernelPCA(n_components=3, gamma=0.2), X, [15, 25])
    sparse = stream(IncrementalKernelPCA(n_components=3, gamma=0.2), sp.csr_matrix(X),
                    [15, 25])
    np.testing.assert_allclose(sparse.eigenvalues_, dense.eigenvalues_, rtol=1e-12)
    np.testing.assert_allclose(sparse.transform(T), dense.transform(T), rtol=1e-10,
                               atol=1e-12)


def test_fit_restarts_the_stream():
    X1, X2, T = _data(30, seed=12), _data(40, seed=13), _data(5, seed=14)
    model = IncrementalKernelPCA(n_components=3, gamma=0.2, batch_size=9).fit(X1)
    assert model.n_samples_seen_ == 30
    model.fit(X2)
    assert model.n_samples_seen_ == 40 and model.X_fit_.shape == (40, 4)
    fresh = IncrementalKernelPCA(n_components=3, gamma=0.2, batch_size=9).fit(X2)
    np.testing.assert_allclose(model.eigenvalues_, fresh.eigenvalues_, rtol=1e-12)
    np.testing.assert_allclose(model.transform(T), fresh.transform(T), rtol=1e-10, atol=1e-12)


def test_gamma_heuristic_is_resolved_on_the_first_batch_and_kept():
    X = _data(60, seed=15)
    model = IncrementalKernelPCA(n_components=3, gamma="scale", mode="exact").partial_fit(
        X[:20])
    g = model.gamma_
    model.partial_fit(X[20:])
    assert model.gamma_ == g
    assert_exact(model, X, dict(kernel="rbf", gamma=g), 3)


@pytest.mark.parametrize("kernel", ["linear", "cosine"])
@pytest.mark.parametrize("gamma", [None, 0.5, 0])
def test_gamma_of_a_kernel_without_gamma_is_reported_as_scikit_learn_does(kernel, gamma):
    """scikit-learn's gamma_: the parameter as given, else 1 / n_features; the
    incremental model reported 1 / n_features for any given gamma."""
    from sklearn.decomposition import KernelPCA as SKKernelPCA

    X = _data(40, seed=18)
    want = SKKernelPCA(3, kernel=kernel, gamma=gamma).fit(X).gamma_
    model = IncrementalKernelPCA(n_components=3, kernel=kernel, gamma=gamma).fit(X)
    assert model.gamma_ == want == KernelPCA(3, kernel=kernel, gamma=gamma).fit(X).gamma_


# ----------------------------------------------------------------------------- persistence
def test_save_load_in_the_middle_of_a_stream(tmp_path):
    X, T = _data(120, seed=16), _data(10, seed=17)
    params = KERNELS["rbf"]
    make = lambda: IncrementalKernelPCA(n_components=5, mode="exact", **params)  # noqa: E731
    whole = stream(make(), X, [30, 20, 1, 69])
    half = stream(make(), X[:50], [30, 20])
    path = tmp_path / "stream.kpca"
    kpca.save(half, path)
    loaded = kpca.load(path)
    assert type(loaded) is IncrementalKernelPCA
    assert loaded.n_samples_seen_ == 50
    np.testing.assert_array_equal(loaded.transform(T), half.transform(T))
    stream(loaded, X[50:], [1, 69])
    assert loaded.n_samples_seen_ == 120
    np.testing.assert_allclose(loaded.eigenvalues_, whole.eigenvalues_, rtol=0,
                               atol=EXACT * whole.eigenvalues_[0])
    w = assert_exact(loaded, X, params, 5, T)
    cols = separated(w, 5)
    assert_projections_equal(loaded.transform(T), whole.transform(T), cols)
    # the loaded model is saved and loaded again after its update
    kpca.save(loaded, path)
    again = kpca.load(path)
    np.testing.assert_array_equal(again.transform(T), loaded.transform(T))
    again.partial_fit(_data(5, seed=18))
    assert again.n_samples_seen_ == 125


@pytest.mark.parametrize("mode", ["bounded", "auto"])
def test_save_load_in_the_middle_of_a_bounded_stream(mode, tmp_path):
    # the bounded state (landmarks and feature statistics) is saved whole: continuing
    # the loaded model gives the uninterrupted stream's model exactly
    X, T = swiss_roll(200, seed=3), swiss_roll(5, seed=4)
    make = lambda: IncrementalKernelPCA(n_components=4, gamma=0.5, mode=mode,  # noqa: E731
                                        max_rows=40, random_state=0)
    whole = stream(make(), X, [50, 50, 50, 50])
    half = stream(make(), X[:100], [50, 50])
    assert half.mode_ == "bounded"
    path = tmp_path / "bounded.kpca"
    kpca.save(half, path)
    loaded = stream(kpca.load(path), X[100:], [50, 50])
    assert loaded.mode_ == "bounded" and loaded.n_samples_seen_ == 200
    np.testing.assert_allclose(loaded.eigenvalues_, whole.eigenvalues_, rtol=1e-12)
    np.testing.assert_allclose(loaded.transform(T), whole.transform(T), rtol=1e-10,
                               atol=1e-12)


def test_saved_model_does_not_write_the_kernel_values(tmp_path):
    import zipfile

    X = _data(150, seed=19)
    model = stream(IncrementalKernelPCA(n_components=3, gamma=0.2, mode="exact"), X, [100, 50])
    path = tmp_path / "m.kpca"
    kpca.save(model, path)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    assert not [name for name in names if "gram" in name]
    loaded = kpca.load(path)
    assert not hasattr(loaded, "gram_")
    assert hasattr(model, "gram_")  # saving does not touch the model itself


# ----------------------------------------------------------------------------- properties
#: one fixed data set for the property tests; its spectrum has clear gaps
P_X = _data(48, seed=20)
P_T = _data(6, seed=21)
P_PARAMS = KERNELS["rbf"]
P_K = 4
P_BATCHES = np.array_split(np.arange(48), 6)


@pytest.fixture(scope="module")
def p_reference():
    w, _ = numpy_reference(P_X, P_PARAMS)
    ref = kpca_reference(P_X, P_PARAMS, P_K)
    return w, ref


def _check_same_model(model, X, w, ref):
    """Same eigenvalues, subspace and (sign-aligned) projections as the reference."""
    assert model.n_samples_seen_ == X.shape[0]
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=0,
                               atol=EXACT * w[0])
    p = clear_prefix(w, P_K)
    Za, Zb = model.transform(P_T)[:, :p], ref.transform(P_T)[:, :p]
    # the projector onto the subspace, seen from new rows: sign and rotation free
    np.testing.assert_allclose(Za @ Za.T, Zb @ Zb.T, rtol=0,
                               atol=EXACT * np.abs(Zb @ Zb.T).max())
    assert_projections_equal(model.transform(P_T), ref.transform(P_T), separated(w, P_K))


@settings(max_examples=8, deadline=None)
@given(order=st.permutations(range(len(P_BATCHES))))
def test_any_order_of_the_batches_gives_the_same_model(order, p_reference):
    w, ref = p_reference
    model = IncrementalKernelPCA(n_components=P_K, mode="exact", **P_PARAMS)
    for i in order:
        model.partial_fit(P_X[P_BATCHES[i]])
    rows = np.concatenate([P_BATCHES[i] for i in order])
    _check_same_model(model, P_X[rows], w, ref)
    # the eigenvectors are the reference's with their rows permuted like the data
    _, U = numpy_reference(P_X, P_PARAMS)
    p = clear_prefix(w, P_K)
    assert subspace_error(np.asarray(model.eigenvectors_)[:, :p], U[rows, :p]) <= EXACT


@settings(max_examples=8, deadline=None)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=8))
def test_partial_fit_sequence_equals_fit_on_the_concatenation(sizes):
    X = _data(sum(sizes), seed=22)
    params = KERNELS["rbf"]
    inc = stream(IncrementalKernelPCA(n_components=P_K, mode="exact", **params), X, sizes)
    one = IncrementalKernelPCA(n_components=P_K, mode="exact", **params).fit(X)
    w, _ = numpy_reference(X, params)
    kk = min(P_K, X.shape[0])
    assert inc.n_components_ == one.n_components_ == kk
    np.testing.assert_allclose(inc.eigenvalues_, one.eigenvalues_, rtol=0,
                               atol=EXACT * max(w[0], 1e-300))
    assert_projections_equal(inc.transform(P_T), one.transform(P_T), separated(w, kk))


@settings(max_examples=8, deadline=None)
@given(cuts=st.sets(st.integers(1, P_X.shape[0] - 1), max_size=10))
def test_random_cut_points_give_the_same_model(cuts, p_reference):
    w, ref = p_reference
    sizes = np.diff([0, *sorted(cuts), P_X.shape[0]])
    model = stream(IncrementalKernelPCA(n_components=P_K, mode="exact", **P_PARAMS), P_X,
                   sizes)
    _check_same_model(model, P_X, w, ref)


# ----------------------------------------------------------------------------- bad input
def _stream_model():
    X = _data(40, seed=23)
    return stream(IncrementalKernelPCA(n_components=3, gamma=0.2, mode="exact"), X, [25, 15])


def _snapshot(model):
    T = _data(4, seed=24)
    return (np.array(model.eigenvalues_, copy=True), model.n_samples_seen_,
            np.array(model.X_fit_, copy=True), model.transform(T),
            model.n_features_in_, getattr(model, "feature_names_in_", None))


def _assert_unchanged(model, before):
    after = _snapshot(model)
    np.testing.assert_array_equal(after[0], before[0])
    assert after[1] == before[1]
    np.testing.assert_array_equal(after[2], before[2])
    np.testing.assert_array_equal(after[3], before[3])
    assert after[4] == before[4]
    if before[5] is None:
        assert after[5] is None
    else:
        np.testing.assert_array_equal(after[5], before[5])


def _nan_batch():
    X = _data(5, seed=25)
    X[2, 1] = np.nan
    return X


def _inf_batch():
    X = _data(5, seed=26)
    X[0, 3] = np.inf
    return X


@pytest.mark.parametrize(
    ("batch", "match"),
    [
        (lambda: _data(5, d=3), r"3 features.*expecting 4"),
        (lambda: _data(5, d=5), r"5 features.*expecting 4"),
        (_nan_batch, "NaN"),
        (_inf_batch, "infinity"),
        (lambda: np.zeros((0, 4)), "0 sample"),
        (lambda: np.zeros(4), "2D array"),
    ],
    ids=["narrower", "wider", "nan", "inf", "empty", "1-d"],
)
def test_bad_batch_raises_and_leaves_the_model_unchanged(batch, match):
    model = _stream_model()
    before = _snapshot(model)
    with pytest.raises(ValueError, match=match):
        model.partial_fit(batch())
    _assert_unchanged(model, before)
    model.partial_fit(_data(3, seed=27))  # and the stream goes on
    assert model.n_samples_seen_ == 43


@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
def test_batch_with_other_feature_names_raises_and_leaves_the_model_unchanged():
    pd = pytest.importorskip("pandas")
    X = _data(40, seed=28)
    cols = ["a", "b", "c", "d"]
    model = IncrementalKernelPCA(n_components=3, gamma=0.2).partial_fit(
        pd.DataFrame(X[:30], columns=cols))
    np.testing.assert_array_equal(model.feature_names_in_, cols)
    before = _snapshot(model)
    renamed = pd.DataFrame(X[30:], columns=["a", "b", "c", "z"])
    with pytest.raises(ValueError, match=r"(?s)feature names should match.*\bz\b"):
        model.partial_fit(renamed)
    _assert_unchanged(model, before)
    reordered = pd.DataFrame(X[30:], columns=["b", "a", "c", "d"])
    with pytest.raises(ValueError, match="feature names"):
        model.partial_fit(reordered)
    _assert_unchanged(model, before)
    model.partial_fit(pd.DataFrame(X[30:], columns=cols))
    assert model.n_samples_seen_ == 40


def test_empty_first_batch_raises_and_leaves_the_model_unfitted():
    from sklearn.exceptions import NotFittedError

    model = IncrementalKernelPCA(n_components=3)
    for call in (model.partial_fit, model.fit):
        with pytest.raises(ValueError, match="0 sample"):
            call(np.zeros((0, 4)))
        assert not hasattr(model, "n_samples_seen_")
        with pytest.raises(NotFittedError):
            model.transform(_data(2))


@pytest.mark.parametrize(("param", "value"), [("gamma", 0.5), ("n_components", 2),
                                              ("kernel", "laplacian"), ("mode", "bounded")])
def test_changed_stream_parameter_refuses_partial_fit(param, value):
    X = _data(40, seed=29)
    model = IncrementalKernelPCA(n_components=3, gamma=0.2, batch_size=15, mode="exact").fit(X)
    before = _snapshot(model)
    model.set_params(**{param: value})
    with pytest.raises(ValueError, match=rf"changed since the first batch.*{param}"):
        model.partial_fit(_data(5, seed=30))
    _assert_unchanged(model, before)
    # fit starts a new stream with the new parameter
    model.fit(X)
    assert model.n_samples_seen_ == 40
    model.partial_fit(_data(5, seed=30))
    assert model.n_samples_seen_ == 45


def test_parameters_outside_the_stream_may_change():
    X = _data(40, seed=31)
    model = IncrementalKernelPCA(n_components=3, gamma=0.2, batch_size=15).fit(X)
    model.set_params(batch_size=4, n_jobs=1)
    model.partial_fit(_data(5, seed=32))
    assert model.n_samples_seen_ == 45


@pytest.mark.parametrize("kernel", ["precomputed", "spectrum"])
def test_non_vector_kernels_are_refused(kernel):
    model = IncrementalKernelPCA(n_components=2, kernel=kernel)
    with pytest.raises(ValueError, match="kernel"):
        model.partial_fit(_data(10))
    assert not hasattr(model, "n_samples_seen_")


def test_exact_mode_refuses_more_rows_than_max_rows():
    X = _data(60, seed=33)
    model = IncrementalKernelPCA(n_components=3, gamma=0.2, mode="exact", max_rows=20,
                                 batch_size=10)
    with pytest.raises(ValueError, match=r"max_rows=20"):
        model.fit(X)
    assert not hasattr(model, "n_samples_seen_")  # a failed fit leaves nothing behind
    model.fit(X[:20])
    before = _snapshot(model)
    with pytest.raises(ValueError, match=r"mode='exact' cannot keep 21 rows.*max_rows=20"):
        model.partial_fit(X[20:21])
    _assert_unchanged(model, before)


def test_exact_mode_refuses_more_rows_than_the_memory_limit():
    X = _data(60, seed=34)
    model = IncrementalKernelPCA(n_components=3, gamma=0.2, mode="exact",
                                 memory_limit=_gram_bytes(40, 20))
    stream(model, X[:40], [20, 20])
    before = _snapshot(model)
    with pytest.raises(ValueError, match="memory"):
        model.partial_fit(X[40:])
    _assert_unchanged(model, before)


def _gram_bytes(n, batch=0):
    from kpca.operators import GrowingGram

    return GrowingGram.bytes_for(n, 8, batch)


@pytest.mark.parametrize("max_rows", [None, 20], ids=["at-once", "streamed"])
def test_failed_fit_restores_the_previous_model(max_rows):
    # at once (the rows are validated first) and streamed ('auto' beyond max_rows
    # feeds batches: the NaN is in the third batch, two were already added)
    X = _data(40, seed=35)
    model = IncrementalKernelPCA(n_components=3, gamma=0.2, batch_size=10).fit(X)
    before = _snapshot(model)
    bad = _data(30, seed=36)
    bad[25, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.set_params(max_rows=max_rows).fit(bad)
    _assert_unchanged(model, before)


# ----------------------------------------------------------------------------- bounded mode
def swiss_roll(n, seed=0):
    """A smooth 2-D manifold in 3-D (scaled to unit-ish spread), in random order."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 3 * np.pi, n)
    X = np.c_[t * np.cos(t), t * np.sin(t), rng.uniform(0, 5, n)] / 4
    return X + 0.05 * rng.normal(size=X.shape)


def test_bounded_mode_keeps_memory_flat():
    L = 30
    model = IncrementalKernelPCA(n_components=5, gamma=0.5, mode="bounded", max_rows=L,
                                 random_state=0)
    rng_seeds = iter(range(100, 200))
    shapes = []
    for _ in range(25):  # 25 batches of 40 rows: 1000 rows through 30 landmarks
        model.partial_fit(swiss_roll(40, seed=next(rng_seeds)))
        assert model.mode_ == "bounded"
        assert model.X_fit_.shape[0] <= L
        shapes.append({k: v.shape for k, v in fitted_arrays(model).items()})
        # no array grows with the rows seen (the outlier cut-offs' uniform sample of
        # the stream is capped at incremental_outlier_sample rows)
        for name in ("outlier_sample_", "score_distances_", "orthogonal_distances_"):
            cap = kpca.get_config()["incremental_outlier_sample"]
            assert shapes[-1].pop(name)[0] <= min(cap, model.n_samples_seen_)
        assert all(max(s) <= max(L, 40) for s in shapes[-1].values() if s), shapes[-1]
    assert model.n_samples_seen_ == 1000
    full = [i for i, s in enumerate(shapes) if s["X_fit_"][0] == L]
    assert full and full[0] < 10  # the landmark set fills early ...
    for s in shapes[full[0]:]:  # ... and from then on nothing changes size
        assert s == shapes[full[0]]
    assert not hasattr(model, "gram_") and not hasattr(model, "eigenvectors_")


def test_bounded_mode_approximates_batch_kpca_on_smooth_data():
    # measured (n=300, L=60, batches of 30, rbf gamma=0.5, 5 components): eigenvalues
    # within 0.2 % of batch KPCA, subspace similarity (smallest cosine between the
    # projections of the training rows) > 0.9999; thresholds 3 % and 0.99
    X = swiss_roll(300, seed=1)
    k = 5
    ref = KernelPCA(n_components=k, kernel="rbf", gamma=0.5, eigen_solver="dense").fit(X)
    model = IncrementalKernelPCA(n_components=k, gamma=0.5, mode="bounded", max_rows=60,
                                 batch_size=30, random_state=0).fit(X)
    assert model.n_samples_seen_ == 300 and model.X_fit_.shape[0] <= 60
    rel = np.abs(model.eigenvalues_ - ref.eigenvalues_) / ref.eigenvalues_
    assert np.all(rel <= 0.03), rel
    np.testing.assert_allclose(model.explained_variance_, model.eigenvalues_ / 300,
                               rtol=1e-12)
    Qa, _ = np.linalg.qr(model.transform(X))
    Qb, _ = np.linalg.qr(ref.transform(X))
    assert np.linalg.svd(Qa.T @ Qb, compute_uv=False).min() >= 0.99


def test_bounded_mode_is_reproducible_with_a_seed():
    X = swiss_roll(200, seed=2)
    a = IncrementalKernelPCA(n_components=3, gamma=0.5, mode="bounded", max_rows=25,
                             batch_size=40, random_state=3).fit(X)
    b = IncrementalKernelPCA(n_components=3, gamma=0.5, mode="bounded", max_rows=25,
                             batch_size=40, random_state=3).fit(X)
    np.testing.assert_array_equal(a.eigenvalues_, b.eigenvalues_)
    np.testing.assert_array_equal(a.transform(X[:5]), b.transform(X[:5]))


def test_auto_mode_switches_to_bounded_beyond_max_rows(caplog):
    X, T = swiss_roll(150, seed=4), swiss_roll(10, seed=5)
    T[0] = [20.0, -20.0, 20.0]  # far away
    model = IncrementalKernelPCA(n_components=4, gamma=0.5, mode="auto", max_rows=50,
                                 random_state=0)
    model.partial_fit(X[:50])
    assert model.mode_ == "exact"
    assert_exact(model, X[:50], dict(kernel="rbf", gamma=0.5), 4)
    with caplog.at_level(logging.INFO, logger="kpca"):
        model.partial_fit(X[50:80])
    assert model.mode_ == "bounded"
    assert "bounded" in caplog.text and "max_rows=50" in caplog.text
    assert model.n_samples_seen_ == 80 and model.X_fit_.shape[0] <= 50
    model.partial_fit(X[80:])
    assert model.mode_ == "bounded" and model.n_samples_seen_ == 150
    Z = model.transform(T)
    assert Z.shape == (10, 4) and np.all(np.isfinite(Z))
    s = model.score_samples(T)
    assert s.shape == (10,) and np.all(np.isfinite(s))
    assert model.predict(T)[0] == -1
    D = model.denoise(T[1:])
    assert D.shape == (9, 3) and np.all(np.isfinite(D))
    # close to batch KPCA of all rows (smooth data, 50 landmarks)
    ref = KernelPCA(n_components=4, kernel="rbf", gamma=0.5, eigen_solver="dense").fit(X)
    assert np.all(np.abs(model.eigenvalues_ - ref.eigenvalues_) / ref.eigenvalues_ <= 0.05)
    # fit starts again in the exact mode
    model.fit(X[:40])
    assert model.mode_ == "exact" and model.n_samples_seen_ == 40


def test_auto_switch_releases_the_exact_state():
    X = swiss_roll(80, seed=6)
    model = IncrementalKernelPCA(n_components=3, gamma=0.5, max_rows=50, random_state=0)
    stream(model, X, [40, 40])
    assert model.mode_ == "bounded"
    stale = [k for k in ("gram_", "eigenvectors_", "ritz_values_", "ritz_vectors_",
                         "ritz_products_") if hasattr(model, k)]
    assert not stale, stale


def test_bounded_outlier_cutoff_does_not_depend_on_the_last_batch_size():
    X = _data(200, d=3, seed=37)
    cut, flagged = [], []
    for last in (100, 5):
        model = IncrementalKernelPCA(n_components=3, gamma=0.3, mode="bounded",
                                     max_rows=40, random_state=0)
        stream(model, X, [200 - last, last])
        cut.append(model.od_cutoff_)
        flagged.append(np.mean(model.predict(X) == -1))
    assert abs(cut[1] / cut[0] - 1) <= 0.1, cut
    assert abs(flagged[1] - flagged[0]) <= 0.05, flagged


# ----------------------------------------------------------------------------- outliers
def test_outlier_api_after_partial_fit_equals_batch_kpca():
    rng = np.random.default_rng(38)
    X = rng.normal(size=(100, 3)) * [2.0, 1.0, 0.5]
    T = rng.normal(size=(12, 3)) * [2.0, 1.0, 0.5]
    T[-1] = [15.0, -15.0, 15.0]
    model = stream(IncrementalKernelPCA(n_components=3, gamma=0.2, mode="exact"), X,
                   [1, 30, 7, 62])
    ref = KernelPCA(n_components=3, kernel="rbf", gamma=0.2, eigen_solver="dense").fit(X)
    for name in ("score_samples", "decision_function", "predict"):
        got = getattr(model, name)(T)
        assert got.shape == (12,) and np.all(np.isfinite(got))
    assert model.predict(T)[-1] == -1
    assert model.score_samples(T)[-1] < -1
    np.testing.assert_allclose(model.score_samples(T), ref.score_samples(T), rtol=1e-7)
    np.testing.assert_array_equal(model.predict(T), ref.predict(T))
    assert model.od_cutoff_ == pytest.approx(ref.od_cutoff_, rel=1e-7)
    assert model.sd_cutoff_ == pytest.approx(ref.sd_cutoff_, rel=1e-12)
    # training-row diagnostics cover every row seen
    assert model.score_distance().shape == (100,)
    np.testing.assert_allclose(model.score_distance(), model.score_distance(X), rtol=1e-7,
                               atol=1e-10)


def test_contamination_offset_after_partial_fit():
    X = _data(80, d=3, seed=39)
    model = stream(IncrementalKernelPCA(n_components=3, gamma=0.3, contamination=0.1), X,
                   [40, 40])
    s = model.score_samples(X)
    assert model.offset_ == pytest.approx(np.percentile(s, 10), rel=1e-7)
    assert abs(int(np.sum(model.predict(X) == -1)) - 8) <= 2


# ----------------------------------------------------------------------------- dask
def test_dask_array_equals_numpy(dask_client):
    da = pytest.importorskip("dask.array")
    X, T = _data(90, seed=40), _data(6, seed=41)
    dX = da.from_array(X, chunks=(25, 4))  # chunks of 25, 25, 25, 15 rows
    assert dX.numblocks[0] == 4
    make = lambda: IncrementalKernelPCA(n_components=4, gamma=0.2, batch_size=10,  # noqa: E731
                                        mode="exact")
    ref = make().fit(X)
    got = make().fit(dX)
    assert got.n_samples_seen_ == 90
    np.testing.assert_allclose(got.eigenvalues_, ref.eigenvalues_, rtol=0,
                               atol=EXACT * ref.eigenvalues_[0])
    w, _ = numpy_reference(X, KERNELS["rbf"])
    assert_projections_equal(got.transform(T), ref.transform(T), separated(w, 4))
    # partial_fit of a dask array adds its chunks in order
    inc = make().partial_fit(X[:20]).partial_fit(da.from_array(X[20:], chunks=(30, 2)))
    assert inc.n_samples_seen_ == 90
    np.testing.assert_allclose(inc.X_fit_, X)
    np.testing.assert_allclose(inc.eigenvalues_, ref.eigenvalues_, rtol=0,
                               atol=EXACT * ref.eigenvalues_[0])
    assert_projections_equal(inc.transform(T), ref.transform(T), separated(w, 4))


def test_dask_array_with_a_bad_chunk_leaves_the_model_unchanged(dask_client):
    da = pytest.importorskip("dask.array")
    X = _data(60, seed=42)
    model = IncrementalKernelPCA(n_components=3, gamma=0.2).partial_fit(X[:20])
    before = _snapshot(model)
    bad = X[20:].copy()
    bad[35, 2] = np.nan  # in the second chunk: the first one was added already
    with pytest.raises(ValueError, match="NaN"):
        model.partial_fit(da.from_array(bad, chunks=(20, 4)))
    _assert_unchanged(model, before)


def test_dask_dataframe_keeps_the_feature_names(dask_client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X = _data(60, d=3, seed=44)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    model = IncrementalKernelPCA(n_components=2, gamma=0.3, batch_size=10).fit(
        dd.from_pandas(df, npartitions=3))
    assert model.n_samples_seen_ == 60
    np.testing.assert_array_equal(getattr(model, "feature_names_in_", None), ["a", "b", "c"])


# ----------------------------------------------------------------------------- misc
def test_no_convergence_warning_on_a_long_stream_of_single_rows():
    X = _data(60, seed=43)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = stream(IncrementalKernelPCA(n_components=4, gamma=0.2, mode="exact"), X,
                       [1] * 60)
    assert model.n_passes_ >= 0
    assert_exact(model, X, KERNELS["rbf"], 4)


def test_docstring_example():
    X = np.random.default_rng(0).normal(size=(300, 4))
    model = IncrementalKernelPCA(n_components=3, gamma=0.25)
    for batch in np.array_split(X, 3):
        model = model.partial_fit(batch)
    assert model.n_samples_seen_ == 300
    assert model.transform(X[:2]).shape == (2, 3)


# ----------------------------------------------------------------------------- review
# regressions of the review of the first version (each failed then)
@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
def test_a_batch_with_structure_the_old_directions_do_not_see():
    """A batch of two tight clusters far from every old row: their eigenpairs are
    invisible to K~_bn V; the random sketch of the batch's own block finds them."""
    rng = np.random.default_rng(0)
    old = rng.standard_normal((40, 2))
    new = np.vstack([np.tile([20.0, 0.0], (15, 1)), np.tile([-20.0, 5.0], (15, 1))])
    model = IncrementalKernelPCA(2, gamma=0.5).partial_fit(old).partial_fit(new)
    ref = KernelPCA(2, kernel="rbf", gamma=0.5, eigen_solver="dense").fit(np.vstack([old, new]))
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-8)


def test_kernel_values_near_the_float64_range():
    """A polynomial of degree 150 (values ~1e175): batch KPCA works, so must updates."""
    X = np.random.default_rng(1).normal(size=(60, 3))
    params = dict(kernel="poly", degree=150, gamma=1.0, coef0=1.0)
    ref = KernelPCA(2, eigen_solver="dense", **params).fit(X)
    model = stream(IncrementalKernelPCA(2, **params), X, [30, 30])
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-8)
    model = IncrementalKernelPCA(2, **params).fit(X)  # at once
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-8)


def test_bounded_landmarks_are_distinct_rows():
    rng = np.random.default_rng(2)
    model = IncrementalKernelPCA(3, gamma=0.5, mode="bounded", max_rows=20)
    model.partial_fit(rng.normal(size=(10, 2)))
    model.partial_fit(np.vstack([np.tile([9.0, 9.0], (8, 1)), rng.normal(size=(5, 2))]))
    Z = model.X_fit_
    assert len(np.unique(Z.round(12), axis=0)) == Z.shape[0]
    assert model.normalization_.shape[1] == Z.shape[0]  # K_ZZ has full rank


def test_raising_the_limits_lets_the_exact_stream_go_on():
    X = _data(60, seed=3)
    model = IncrementalKernelPCA(3, gamma=0.2, mode="exact", max_rows=40).fit(X[:40])
    with pytest.raises(ValueError, match="max_rows"):
        model.partial_fit(X[40:])
    model.set_params(max_rows=100).partial_fit(X[40:])  # max_rows may change in exact mode
    model = IncrementalKernelPCA(3, gamma=0.2, mode="exact", batch_size=20,
                                 memory_limit=_gram_bytes(40, 20)).fit(X[:40])
    with pytest.raises(ValueError, match="memory_limit"):
        model.partial_fit(X[40:])
    model.set_params(memory_limit="1GB").partial_fit(X[40:])
    ref = KernelPCA(3, kernel="rbf", gamma=0.2, eigen_solver="dense").fit(X)
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-8)


def test_the_number_of_components_does_not_change_at_the_switch():
    X = np.random.default_rng(4).normal(size=(100, 2))
    model = IncrementalKernelPCA(5, kernel="linear", max_rows=50, batch_size=20)
    widths = []
    for s in range(0, 100, 20):
        model.partial_fit(X[s : s + 20])
        widths.append((model.mode_, model.transform(X[:3]).shape[1]))
    assert {w for _, w in widths} == {5}
    assert widths[0][0] == "exact" and widths[-1][0] == "bounded"


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("kernel", ["linear", "poly"])
def test_constant_rows_converge_without_a_warning(kernel):
    model = stream(IncrementalKernelPCA(3, kernel=kernel), np.ones((40, 3)), [10] * 4)
    np.testing.assert_array_equal(model.eigenvalues_, 0.0)
    model = IncrementalKernelPCA(3, kernel=kernel).fit(np.ones((40, 3)))
    np.testing.assert_array_equal(model.eigenvalues_, 0.0)


def test_a_first_batch_larger_than_max_rows_starts_bounded():
    X = _data(300, seed=5)
    model = IncrementalKernelPCA(3, gamma=0.2, max_rows=100).partial_fit(X)
    assert model.mode_ == "bounded" and model.X_fit_.shape[0] <= 100
    assert model.transform(X[:4]).shape == (4, 3)


def test_an_empty_stream_is_an_error():
    with pytest.raises(ValueError, match="0 sample"):
        IncrementalKernelPCA(2).fit(np.zeros((0, 3)))


def test_random_features_on_constant_rows():
    """The Lanczos branch of the feature-space solve falls back to LAPACK when ARPACK
    cannot start (a zero covariance)."""
    model = kpca.RandomFeatureKernelPCA(n_components=5, n_features=1000).fit(np.ones((50, 3)))
    np.testing.assert_array_equal(model.eigenvalues_, 0.0)


def test_bounded_landmarks_follow_a_drifting_stream():
    """The stream moves to a region no landmark covers: swaps bring landmarks there
    (with none, the new region's variance would be lost: every landmark slot was
    filled by the first batch)."""
    rng = np.random.default_rng(0)
    Y = np.vstack([rng.standard_normal((600, 3)), rng.standard_normal((600, 3)) + 6])
    model = IncrementalKernelPCA(3, gamma=0.3, batch_size=100, mode="bounded", max_rows=60,
                                 random_state=0).fit(Y)
    ref = KernelPCA(3, kernel="rbf", gamma=0.3).fit(Y)
    assert np.mean(model.X_fit_[:, 0] > 3) >= 0.2  # measured 0.32
    assert np.all(model.eigenvalues_ / ref.eigenvalues_ >= 0.8)  # measured 0.86-0.98


@pytest.mark.dense_rule
def test_small_problems_decompose_the_stored_matrix():
    """Where KernelPCA's rule picks LAPACK (here 1,100 rows, k = 32), an update
    decomposes the stored matrix (no pass, no kernel re-evaluation) and equals the
    batch fit."""
    from sklearn.datasets import load_digits

    X = load_digits().data[:1100] / 16.0
    model = IncrementalKernelPCA(32, gamma=0.05).partial_fit(X[:1000]).partial_fit(X[1000:])
    assert model.n_passes_ == 0
    ref = KernelPCA(32, kernel="rbf", gamma=0.05, eigen_solver="dense").fit(X)
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-8)


# ----------------------------------------------------------------------------- at once
# ``fit`` on rows in memory is a batch fit (KernelPCA's solver on the kernel matrix
# evaluated once, plus the guard pairs the next update starts from); the benchmark's
# data (d = 20, RBF, k = 10) on 600-800 rows take the same code paths as at 6,500-10,500
# rows: block Lanczos from a Nyström start for the fit (its basis of 192 columns covers
# less than half the space), updates by extend_eigenpairs with batches of more than
# 2m = 80 rows (the new rows' basis from K~_bn V, its K~_bb image and a random sketch,
# as for 500-row batches), float32 storage when asked


def _bench_rows(data, n, seed=0):
    """The benchmark's data: an isotropic Gaussian (gamma 0.05, the issue's) or 20
    Gaussian blobs (gamma = 1 / (d Var X))."""
    if data == "gauss":
        return np.random.default_rng(seed).standard_normal((n, 20)), 0.05
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n, n_features=20, centers=20, cluster_std=3.0, random_state=seed)
    return X, 1.0 / (20 * X.var())


#: the residual target of the solvers by storage precision (kpca.solvers.default_rtol)
RTOL = {"float64": 1e-8, "float32": 1e-5}


def assert_solves_dense(model, X, gamma, precision):
    """Against the dense float64 eigendecomposition of ``H K H`` (NumPy): residuals of
    the model's pairs within the solvers' target, eigenvalues and the subspace of the
    well-separated leading components within what that target implies."""
    K = pairwise_kernels(X, metric="rbf", gamma=gamma)
    Kc = K - K.mean(axis=0)[None, :] - K.mean(axis=1)[:, None] + K.mean()
    w, U = np.linalg.eigh(Kc)
    w, U = w[::-1], U[:, ::-1]
    mu = np.asarray(model.eigenvalues_, dtype=np.float64)
    V = np.asarray(model.eigenvectors_, dtype=np.float64)
    k = mu.shape[0]
    # the residual the solvers stop at, measured on the exact matrix (float32 storage
    # adds its rounding of K, ~1e-7 of mu_1 here)
    res = np.linalg.norm(Kc @ V - V * mu, axis=0) / w[0]
    assert res.max() <= 1.5 * RTOL[precision], res
    # eigenvalue errors are second order in the residual (and first order in the
    # storage rounding)
    assert np.max(np.abs(mu - w[:k])) / w[0] <= {"float64": 1e-10, "float32": 1e-6}[precision]
    np.testing.assert_allclose(V.T @ V, np.eye(k), atol=1e-8)
    np.testing.assert_allclose(V.sum(axis=0), 0, atol=1e-6)
    p = clear_prefix(w, k)
    assert p >= 1
    assert subspace_error(V[:, :p], U[:, :p]) <= {"float64": 1e-10, "float32": 1e-6}[precision]
    return w


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("data", ["gauss", "blobs"])
def test_fit_at_once_is_kernel_pca_and_updates_continue_it(data, precision):
    X, gamma = _bench_rows(data, 800)
    T, _ = _bench_rows(data, 12, seed=1)
    model = IncrementalKernelPCA(10, gamma=gamma, precision=precision).fit(X[:600])
    assert model.n_samples_seen_ == 600 and model.mode_ == "exact"
    assert model.gram_.dtype == precision
    assert model.n_passes_ >= 1  # the Lanczos path (LAPACK would make none)
    w = assert_solves_dense(model, X[:600], gamma, precision)
    # scikit-learn's KernelPCA on the same rows: eigenvalues, and the projections of
    # new rows on the well-separated components (up to sign)
    from sklearn.decomposition import KernelPCA as SkKernelPCA

    sk = SkKernelPCA(10, kernel="rbf", gamma=gamma, eigen_solver="dense").fit(X[:600])
    np.testing.assert_allclose(model.eigenvalues_, sk.eigenvalues_, rtol=0,
                               atol={"float64": 1e-10, "float32": 1e-6}[precision] * w[0])
    assert_projections_equal(model.transform(T), sk.transform(T), separated(w, 10),
                             tol={"float64": 1e-8, "float32": 1e-4}[precision])
    # updates continue the fit: batch KPCA of every row seen after each
    for s, e in [(600, 700), (700, 800)]:
        model.partial_fit(X[s:e])
        assert model.n_samples_seen_ == e
        assert_solves_dense(model, X[:e], gamma, precision)


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
def test_fit_at_once_equals_the_stream_of_its_batches():
    X, gamma = _bench_rows("blobs", 650)
    T, _ = _bench_rows("blobs", 8, seed=2)
    at_once = IncrementalKernelPCA(10, gamma=gamma).fit(X)
    streamed = stream(IncrementalKernelPCA(10, gamma=gamma), X, [500, 100, 50])
    K = pairwise_kernels(X, metric="rbf", gamma=gamma)
    H = np.eye(650) - 1 / 650
    w = np.linalg.eigvalsh(H @ K @ H)[::-1]
    np.testing.assert_allclose(at_once.eigenvalues_, streamed.eigenvalues_, rtol=0,
                               atol=1e-10 * w[0])
    assert_projections_equal(at_once.transform(T), streamed.transform(T), separated(w, 10))
    # the guard pairs the next update starts from span the same space to the accuracy
    # an update needs: the next update converges as fast from either
    nxt, _ = _bench_rows("blobs", 50, seed=3)
    at_once.partial_fit(nxt)
    streamed.partial_fit(nxt)
    assert at_once.n_passes_ <= streamed.n_passes_ + 1


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("data", ["gauss", "blobs"])
def test_a_float32_stream_of_large_batches_is_kernel_pca_after_every_batch(data):
    """The benchmark's streamed model on fewer rows: 150-row batches (more than 2m =
    80: the sketch path of 500-row batches), float32 storage, each model against the
    dense float64 eigendecomposition of the rows seen."""
    X, gamma = _bench_rows(data, 750)
    model = IncrementalKernelPCA(10, gamma=gamma, precision="float32")
    for s in range(0, 750, 150):
        model.partial_fit(X[s : s + 150])
        assert model.gram_.dtype == np.float32
        assert_solves_dense(model, X[: s + 150], gamma, "float32")
    assert model.n_passes_ >= 1  # the last batches were updates with refinement passes


@pytest.mark.parametrize("mode", ["bounded", "auto"])
def test_more_components_than_landmarks_is_an_error_naming_max_rows(mode):
    """Issue 33: IncrementalKernelPCA(5, mode='bounded', max_rows=2) returned 5
    components, 3 of them zero padding, without a warning. Two landmarks span a feature
    map of at most two directions (the rank of k(Z, Z), checked below on the landmarks
    of a 2-component model): more components is now a ValueError naming max_rows, for
    fit and partial_fit, before any row is read."""
    X = np.random.default_rng(5).normal(size=(60, 3))
    for call in ("fit", "partial_fit"):
        est = IncrementalKernelPCA(n_components=5, mode=mode, max_rows=2, gamma=0.5)
        with pytest.raises(ValueError, match=r"n_components=5 exceeds max_rows=2: "
                           rf"mode='{mode}' can keep 2 landmark rows.*zero padding"):
            getattr(est, call)(X)
        assert not hasattr(est, "n_components_")
    est = IncrementalKernelPCA(n_components=2, mode=mode, max_rows=2, gamma=0.5,
                               batch_size=20, random_state=0).fit(X)
    assert est.mode_ == "bounded"
    Z = est.X_fit_
    rank = np.linalg.matrix_rank(np.exp(-0.5 * ((Z[:, None] - Z[None]) ** 2).sum(-1)))
    assert rank == 2 == est.n_components_
    assert np.all(est.eigenvalues_ > 0)
    # the exact mode keeps every row: no landmark limit
    assert IncrementalKernelPCA(n_components=5, mode="exact", gamma=0.5).fit(
        X).n_components_ == 5


def test_diagnostics_default_to_the_training_rows_only_where_the_model_keeps_them():
    """``raw_projection()`` (X=None) reads ``X_fit_`` where it holds every row seen: the
    exact mode, and the bounded mode while every row is a landmark (its scores then
    equal those of the rows passed again); with fewer landmarks than rows it refuses."""
    X = np.random.default_rng(0).normal(size=(300, 4))
    for mode in ("exact", "bounded"):
        m = IncrementalKernelPCA(3, kernel="rbf", mode=mode).fit(X)
        Y, sq = m.raw_projection()
        Y2, sq2 = m.raw_projection(X)
        np.testing.assert_allclose(Y, Y2, rtol=0, atol=1e-12)
        np.testing.assert_allclose(sq, sq2, rtol=0, atol=1e-12)
    fewer = IncrementalKernelPCA(3, kernel="rbf", mode="bounded", max_rows=100).fit(X)
    with pytest.raises(ValueError, match="does not keep its training rows"):
        fewer.raw_projection()
