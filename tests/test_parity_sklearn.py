"""Parity with scikit-learn's KernelPCA (dense solver) on real data sets.

Components are compared up to one sign per component, and only where the
eigengap makes each compared component well defined (relative gap > 1e-3,
computed from an independent dense eigendecomposition).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.preprocessing import StandardScaler

import kpca
from kpca import KernelPCA

RTOL = 1e-6
GAP = 1e-3
KERNELS = ["linear", "poly", "rbf", "sigmoid", "cosine"]
SOLVERS = ["dense", "arpack", "randomized", "krylov", "auto"]
DATASETS = ["iris", "wine", "breast_cancer", "digits"]
_CACHE: dict = {}


def load(name):
    """(X_train, X_test) of a real data set, small enough to stay fast."""
    if name in _CACHE:
        return _CACHE[name]
    if name == "iris":
        X = load_iris().data
    elif name == "wine":
        X = StandardScaler().fit_transform(load_wine().data)
    elif name == "breast_cancer":
        X = StandardScaler().fit_transform(load_breast_cancer().data)
    elif name == "digits":
        X = load_digits().data[:240] / 16.0
    else:  # pragma: no cover
        raise KeyError(name)
    rng = np.random.RandomState(0)
    idx = rng.permutation(X.shape[0])[:240]
    n_train = int(0.7 * len(idx))
    out = (np.ascontiguousarray(X[idx[:n_train]]), np.ascontiguousarray(X[idx[n_train:]]))
    _CACHE[name] = out
    return out


def kernel_params(kernel, X):
    if kernel == "rbf":
        return {"gamma": 1.0 / (X.shape[1] * X.var())}
    if kernel == "poly":
        return {"gamma": 1.0 / (X.shape[1] * X.var()), "degree": 2, "coef0": 1.0}
    if kernel == "sigmoid":
        return {"gamma": 0.1 / (X.shape[1] * X.var()), "coef0": 0.5}
    return {}


def centred_spectrum(K):
    n = K.shape[0]
    H = np.eye(n) - 1.0 / n
    return np.linalg.eigvalsh(H @ K @ H)[::-1]


def clear_components(w, max_k=6):
    """Largest k <= max_k such that components 1..k have positive eigenvalues and
    every gap next to them exceeds GAP (relative to the larger eigenvalue).

    Non-PSD kernels (sigmoid): the compared eigenvalues must also exceed the
    magnitude of the most negative one, so that "top k by value" and "top k by
    magnitude" (the randomized solver's selection, as scikit-learn's) agree.
    """
    k = 0
    most_negative = max(0.0, -w.min())
    for ll in range(min(max_k, len(w) - 1)):
        if w[ll] <= 1e-8 * w[0] or w[ll] - most_negative <= GAP * w[ll]:
            break
        gap_next = (w[ll] - w[ll + 1]) / w[ll]
        if gap_next <= GAP:
            break
        k = ll + 1
    return k


def n_clear(kernel, name):
    Xtr, _ = load(name)
    K = pairwise_kernels(Xtr, metric=kernel, **kernel_params(kernel, Xtr))
    k = clear_components(centred_spectrum(K))
    assert k >= 2, f"test setup: fewer than 2 well separated components for {kernel}/{name}"
    return k


def align_signs(A, B):
    """Signs s (one per column) so that A * s best matches B."""
    s = np.sign(np.sum(A * B, axis=0))
    s[s == 0] = 1
    return s


def assert_close_up_to_sign(A, B, signs=None, rtol=RTOL):
    A, B = np.asarray(A), np.asarray(B)
    assert A.shape == B.shape
    if signs is None:
        signs = align_signs(A, B)
    scale = np.abs(B).max(axis=0)
    err = np.abs(A * signs - B).max(axis=0)
    assert np.all(err <= rtol * scale), f"relative errors {err / scale}"
    return signs


def pair(kernel, name, solver="dense", **extra):
    Xtr, Xte = load(name)
    k = n_clear(kernel, name)
    params = dict(n_components=k, kernel=kernel, random_state=0, **kernel_params(kernel, Xtr))
    params.update(extra)
    ours = KernelPCA(eigen_solver=solver, **params)
    ref = SkKernelPCA(eigen_solver="dense", **params)
    return ours, ref, Xtr, Xte


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_transform_matches_sklearn(kernel, name, solver):
    ours, ref, Xtr, Xte = pair(kernel, name, solver)
    Z_ours = ours.fit_transform(Xtr)
    Z_ref = ref.fit_transform(Xtr)
    assert_allclose(ours.eigenvalues_, ref.eigenvalues_, rtol=RTOL)
    signs = assert_close_up_to_sign(Z_ours, Z_ref)
    # the same deterministic sign rule as scikit-learn (largest |entry| of each
    # eigenvector positive): equal, not only up to sign, whatever the solver
    assert np.all(signs == 1), signs
    # held-out rows, with the same sign per component as the training scores
    assert_close_up_to_sign(ours.transform(Xte), ref.transform(Xte), signs=signs)
    assert_close_up_to_sign(ours.eigenvectors_, ref.eigenvectors_, signs=signs)
    assert ours.eigenvalues_.shape == ref.eigenvalues_.shape
    assert ours.transform(Xte).shape == (Xte.shape[0], ref.n_components)


def load_large(name):
    """Larger training sets (n > 400), where 'krylov' runs instead of falling back to
    the dense solver (it does so when its basis would cover half the space)."""
    key = ("large", name)
    if key not in _CACHE:
        if name == "breast_cancer":
            X = StandardScaler().fit_transform(load_breast_cancer().data)
        else:
            X = load_digits().data / 16.0
        idx = np.random.RandomState(1).permutation(X.shape[0])[:560]
        _CACHE[key] = (np.ascontiguousarray(X[idx[:480]]), np.ascontiguousarray(X[idx[480:]]))
    return _CACHE[key]


@pytest.mark.parametrize("name", ["breast_cancer", "digits"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_krylov_matches_sklearn_dense(kernel, name):
    Xtr, Xte = load_large(name)
    p = kernel_params(kernel, Xtr)
    K = pairwise_kernels(Xtr, metric=kernel, **p)
    k = clear_components(centred_spectrum(K))
    assert k >= 2, f"test setup: fewer than 2 well separated components for {kernel}/{name}"
    ours = KernelPCA(n_components=k, kernel=kernel, eigen_solver="krylov", random_state=0, **p)
    ref = SkKernelPCA(n_components=k, kernel=kernel, eigen_solver="dense", **p)
    Z_ours, Z_ref = ours.fit_transform(Xtr), ref.fit_transform(Xtr)
    assert ours.eigen_solver_ == "krylov"
    assert_allclose(ours.eigenvalues_, ref.eigenvalues_, rtol=RTOL)
    signs = assert_close_up_to_sign(Z_ours, Z_ref)
    assert np.all(signs == 1), signs
    assert_close_up_to_sign(ours.transform(Xte), ref.transform(Xte), signs=signs)


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_fit_transform_and_fit_then_transform_match_sklearn(kernel, name):
    ours, ref, Xtr, _ = pair(kernel, name)
    ours.fit(Xtr)
    ref.fit(Xtr)
    assert_close_up_to_sign(ours.transform(Xtr), ref.transform(Xtr))


@pytest.mark.parametrize("kernel", ["linear", "poly", "rbf", "cosine"])
@pytest.mark.parametrize("name", ["iris", "wine"])
def test_inverse_transform_matches_sklearn(kernel, name):
    ours, ref, Xtr, Xte = pair(kernel, name, fit_inverse_transform=True, alpha=0.1)
    ours.fit(Xtr)
    ref.fit(Xtr)
    signs = assert_close_up_to_sign(ours.X_transformed_fit_, ref.X_transformed_fit_)
    # the learned pre-image is a kernel ridge on the scores; these score-space kernels
    # are invariant under per-component sign flips, so dual_coef_ agrees as such
    assert_allclose(ours.dual_coef_, ref.dual_coef_, rtol=1e-5,
                    atol=1e-6 * np.abs(ref.dual_coef_).max())
    Y = ref.transform(Xte)
    rec_ref = ref.inverse_transform(Y)
    rec_ours = ours.inverse_transform(Y * signs)
    assert rec_ours.shape == Xte.shape
    assert_allclose(rec_ours, rec_ref, rtol=1e-5, atol=1e-6 * np.abs(rec_ref).max())


@pytest.mark.parametrize("kernel", KERNELS + ["precomputed"])
@pytest.mark.parametrize("gamma", [None, 0.3])
def test_gamma_(kernel, gamma):
    Xtr, _ = load("wine")
    X = pairwise_kernels(Xtr, metric="rbf", gamma=0.05) if kernel == "precomputed" else Xtr
    ours = KernelPCA(n_components=2, kernel=kernel, gamma=gamma).fit(X)
    ref = SkKernelPCA(n_components=2, kernel=kernel, gamma=gamma).fit(X)
    assert ours.gamma_ == pytest.approx(ref.gamma_, rel=1e-15)


@pytest.mark.parametrize("kernel", ["linear", "cosine", "precomputed"])
@pytest.mark.parametrize("name", ["iris", "wine"])
def test_gamma_zero_for_a_kernel_without_gamma_matches_sklearn(kernel, name):
    """scikit-learn takes gamma in [0, inf) and ignores it where the kernel has none:
    gamma=0 with these kernels fits (it was an InvalidParameterError) to sklearn's
    result, and gamma_ is 0 as there."""
    Xtr, Xte = load(name)
    if kernel == "precomputed":
        Xtr, Xte = Xtr @ Xtr.T, Xte @ Xtr.T
    ours = KernelPCA(n_components=2, kernel=kernel, gamma=0.0).fit(Xtr)
    ref = SkKernelPCA(n_components=2, kernel=kernel, gamma=0.0, eigen_solver="dense").fit(Xtr)
    assert ours.gamma_ == ref.gamma_ == 0.0
    assert_allclose(ours.eigenvalues_, ref.eigenvalues_, rtol=RTOL)
    signs = assert_close_up_to_sign(ours.transform(Xtr), ref.transform(Xtr))
    assert_close_up_to_sign(ours.transform(Xte), ref.transform(Xte), signs=signs)


@pytest.mark.parametrize("kernel", ["rbf", "poly", "sigmoid"])
def test_gamma_zero_for_a_kernel_with_gamma_is_an_error(kernel):
    """*differs*: scikit-learn fits the constant kernel gamma=0 makes and returns
    all-zero eigenvalues and scores (checked here); kpca refuses it, saying why."""
    Xtr, _ = load("iris")
    ref = SkKernelPCA(n_components=2, kernel=kernel, gamma=0.0).fit(Xtr)
    assert np.all(np.abs(ref.eigenvalues_) < 1e-10)
    with pytest.raises(ValueError, match=rf"'gamma' parameter of the {kernel} kernel must be "
                       rf"a positive .*got 0\.0 \(gamma=0 makes the {kernel} kernel constant"):
        KernelPCA(n_components=2, kernel=kernel, gamma=0.0).fit(Xtr)


def test_feature_names_out_matches_sklearn():
    Xtr, _ = load("iris")
    ours = KernelPCA(n_components=3, kernel="rbf").fit(Xtr)
    ref = SkKernelPCA(n_components=3, kernel="rbf").fit(Xtr)
    assert_array_equal(ours.get_feature_names_out(), ref.get_feature_names_out())
    assert list(ours.get_feature_names_out()) == ["kernelpca0", "kernelpca1", "kernelpca2"]


def test_feature_names_in_with_pandas():
    pd = pytest.importorskip("pandas")
    data = load_wine(as_frame=True).data
    X = pd.DataFrame(StandardScaler().fit_transform(data), columns=data.columns)
    ours = KernelPCA(n_components=2, kernel="rbf").fit(X)
    ref = SkKernelPCA(n_components=2, kernel="rbf").fit(X)
    assert_array_equal(ours.feature_names_in_, ref.feature_names_in_)
    assert_array_equal(ours.feature_names_in_, np.asarray(data.columns, dtype=object))
    assert ours.n_features_in_ == X.shape[1]
    # wrong column names at transform: sklearn's behaviour (a ValueError)
    with pytest.raises(ValueError, match="feature names"):
        ours.transform(X.rename(columns={X.columns[0]: "not_a_column"}))
    # numpy arrays do not define feature_names_in_
    assert not hasattr(KernelPCA(n_components=2).fit(X.to_numpy()), "feature_names_in_")


def test_set_output_pandas_matches_sklearn():
    pd = pytest.importorskip("pandas")
    Xtr, Xte = load("iris")
    idx = pd.Index([f"row{i}" for i in range(len(Xte))])
    Xte_df = pd.DataFrame(Xte, columns=["a", "b", "c", "d"], index=idx)
    Xtr_df = pd.DataFrame(Xtr, columns=["a", "b", "c", "d"])
    ours = KernelPCA(n_components=2, kernel="rbf").set_output(transform="pandas").fit(Xtr_df)
    ref = SkKernelPCA(n_components=2, kernel="rbf").set_output(transform="pandas").fit(Xtr_df)
    out, exp = ours.transform(Xte_df), ref.transform(Xte_df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(exp.columns)
    assert out.index.equals(idx)
    assert_close_up_to_sign(out.to_numpy(), exp.to_numpy())
    ft = ours.fit_transform(Xtr_df)
    assert isinstance(ft, pd.DataFrame)
    assert list(ft.columns) == list(ref.fit_transform(Xtr_df).columns)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("name", DATASETS)
def test_linear_kernel_is_pca(name, solver):
    Xtr, Xte = load(name)
    k = n_clear("linear", name)
    ours = KernelPCA(n_components=k, kernel="linear", eigen_solver=solver, random_state=0)
    pca = PCA(n_components=k, svd_solver="full")
    Z = ours.fit_transform(Xtr)
    Zp = pca.fit_transform(Xtr)
    signs = assert_close_up_to_sign(Z, Zp)
    assert_close_up_to_sign(ours.transform(Xte), pca.transform(Xte), signs=signs)
    assert_allclose(ours.explained_variance_ratio_, pca.explained_variance_ratio_, rtol=1e-8)
    # (docs/math.md, "The eigenproblem"): lambda_l = mu_l / n (PCA divides by n - 1)
    n = Xtr.shape[0]
    assert_allclose(ours.explained_variance_, pca.explained_variance_ * (n - 1) / n, rtol=1e-8)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("name", ["iris", "breast_cancer"])
def test_precomputed_equals_named_kernel(kernel, name):
    Xtr, Xte = load(name)
    k = n_clear(kernel, name)
    p = kernel_params(kernel, Xtr)
    named = KernelPCA(n_components=k, kernel=kernel, **p)
    pre = KernelPCA(n_components=k, kernel="precomputed")
    Ktr = pairwise_kernels(Xtr, metric=kernel, **p)
    Kte = pairwise_kernels(Xte, Xtr, metric=kernel, **p)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a symmetric K must not warn
        Z_pre = pre.fit_transform(Ktr)
    Z_named = named.fit_transform(Xtr)
    assert_allclose(pre.eigenvalues_, named.eigenvalues_, rtol=1e-9)
    signs = assert_close_up_to_sign(Z_pre, Z_named, rtol=1e-8)
    assert_close_up_to_sign(pre.transform(Kte), named.transform(Xte), signs=signs, rtol=1e-8)


def test_kernel_object_equals_kernel_name():
    Xtr, Xte = load("wine")
    a = KernelPCA(n_components=3, kernel=kpca.kernels.RBF(gamma=0.05)).fit(Xtr)
    b = SkKernelPCA(n_components=3, kernel="rbf", gamma=0.05).fit(Xtr)
    assert a.gamma_ == 0.05
    assert_close_up_to_sign(a.transform(Xte), b.transform(Xte))


def test_polars_input_and_output():
    pl = pytest.importorskip("polars")
    Xtr, Xte = load("iris")
    cols = ["a", "b", "c", "d"]
    dtr, dte = pl.DataFrame(Xtr, schema=cols), pl.DataFrame(Xte, schema=cols)
    ours = KernelPCA(n_components=2, kernel="rbf").fit(dtr)
    ref = SkKernelPCA(n_components=2, kernel="rbf").fit(dtr)
    assert_array_equal(ours.feature_names_in_, cols)
    signs = assert_close_up_to_sign(ours.transform(dte), ref.transform(dte))
    out = ours.set_output(transform="polars").transform(dte)
    assert isinstance(out, pl.DataFrame)
    assert out.columns == ["kernelpca0", "kernelpca1"]
    assert_close_up_to_sign(out.to_numpy(), ref.transform(dte), signs=signs)


@pytest.mark.parametrize("kernel", KERNELS)
def test_sparse_input_matches_sklearn(kernel):
    import scipy.sparse as sp

    Xtr, Xte = load("breast_cancer")
    Xtr, Xte = np.where(Xtr > 0.5, Xtr, 0.0), np.where(Xte > 0.5, Xte, 0.0)
    k = clear_components(centred_spectrum(
        pairwise_kernels(Xtr, metric=kernel, **kernel_params(kernel, Xtr))))
    assert k >= 2
    p = dict(n_components=k, kernel=kernel, **kernel_params(kernel, Xtr))
    ours = KernelPCA(**p).fit(sp.csr_matrix(Xtr))
    ref = SkKernelPCA(eigen_solver="dense", **p).fit(Xtr)
    assert_allclose(ours.eigenvalues_, ref.eigenvalues_, rtol=RTOL)
    assert_close_up_to_sign(ours.transform(sp.csr_matrix(Xte)), ref.transform(Xte))


def test_float32_is_preserved_end_to_end():
    Xtr, Xte = load("wine")
    X32, T32 = Xtr.astype(np.float32), Xte.astype(np.float32)
    est = KernelPCA(n_components=3, kernel="rbf", gamma=0.05, fit_inverse_transform=True)
    Z = est.fit_transform(X32)
    assert Z.dtype == np.float32
    for name in ("eigenvalues_", "eigenvectors_", "explained_variance_",
                 "explained_variance_ratio_", "X_fit_", "dual_coef_"):
        assert getattr(est, name).dtype == np.float32, name
    T = est.transform(T32)
    assert T.dtype == np.float32 and est.inverse_transform(T).dtype == np.float32
    ref = SkKernelPCA(n_components=3, kernel="rbf", gamma=0.05).fit(Xtr)
    assert_close_up_to_sign(T, ref.transform(Xte), rtol=1e-4)


def test_grid_search_and_pipeline():
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline

    data = load_wine()
    X, y = StandardScaler().fit_transform(data.data), data.target
    pipe = Pipeline([("kpca", KernelPCA(n_components=2, kernel=kpca.kernels.RBF(gamma=1.0))),
                     ("clf", LogisticRegression(max_iter=1000))])
    grid = {"kpca__kernel__gamma": [0.01, 10.0, "median"], "kpca__n_components": [2, 0.8]}
    gs = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    assert gs.best_params_["kpca__kernel__gamma"] != 10.0  # gamma=10 is far too narrow
    assert gs.best_score_ > 0.9
    # the same search over named kernels and gamma gives sklearn's scores
    pipe_sk = Pipeline([("kpca", SkKernelPCA(n_components=2)),
                        ("clf", LogisticRegression(max_iter=1000))])
    grid = {"kpca__kernel": ["rbf", "poly", "cosine"], "kpca__gamma": [0.01, 0.1]}
    ours = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    ref = GridSearchCV(pipe_sk, grid, cv=3).fit(X, y)
    assert ours.best_params_ == ref.best_params_
    assert_allclose(ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"],
                    atol=1e-12)
    # a grid written for scikit-learn with gamma=0 (ignored by the linear kernel)
    grid = {"kpca__kernel": ["linear"], "kpca__gamma": [0, 0.1]}
    ours = GridSearchCV(pipe, grid, cv=3).fit(X, y)
    ref = GridSearchCV(pipe_sk, grid, cv=3).fit(X, y)
    assert_allclose(ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"],
                    atol=1e-12)


def test_auto_precision_stays_exact_where_float32_would_not():
    """Beyond 4096 rows ``precision='auto'`` stores K in float32 only where that
    keeps the eigenvalues accurate. Linear kernel, data far from the origin:
    centring cancels all but ~1e-4 of K, float32 would be ~1e-4 off (and the
    solver would stall at its floor); the fit must stay PCA to 1e-9."""
    rng = np.random.RandomState(0)
    n = 4200
    X = rng.standard_normal((n, 5)) * [5.0, 4.0, 3.0, 2.0, 1.0] + 1000.0
    est = KernelPCA(n_components=3, kernel="linear", random_state=0).fit(X)
    pca = PCA(n_components=3, svd_solver="full").fit(X)
    assert est.subspace_.rows_dtype == "float64"
    assert_allclose(est.eigenvalues_, pca.explained_variance_ * (n - 1), rtol=1e-9)
    T = X[:50] + 0.5
    assert_close_up_to_sign(est.transform(T), pca.transform(T), rtol=1e-7)
    # a well-scaled RBF problem of the same size keeps the fast float32 storage
    rbf = KernelPCA(n_components=3, kernel="rbf", gamma=0.05, random_state=0).fit(X - 1000.0)
    assert rbf.subspace_.rows_dtype == "float32"
