"""KernelPCA.inverse_transform(method=...) and KernelPCA.denoise."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from kpca import KernelPCA
from kpca.preimage import HostSpace, PreimageInfo


@pytest.fixture(scope="module")
def Xy():
    rng = np.random.RandomState(0)
    return rng.standard_normal((60, 4)), rng.standard_normal((8, 4))


# ------------------------------------------------------------------ scikit-learn parity


def test_default_inverse_transform_is_ridge_and_needs_fit_inverse_transform(Xy):
    X, T = Xy
    est = KernelPCA(3, kernel="rbf", gamma=0.3).fit(X)
    with pytest.raises(NotFittedError, match="fit_inverse_transform"):
        est.inverse_transform(est.transform(T))
    with pytest.raises(NotFittedError, match="fit_inverse_transform"):
        est.inverse_transform(est.transform(T), method="ridge")
    with pytest.raises(NotFittedError, match="fit_inverse_transform"):
        est.denoise(T, method="ridge")
    # the other methods need no extra fitting
    assert est.inverse_transform(est.transform(T), method="mds").shape == T.shape
    assert est.denoise(T, method="fixed_point").shape == T.shape


def test_denoise_ridge_matches_sklearn(Xy):
    X, T = Xy
    kw = dict(n_components=4, kernel="rbf", gamma=0.3, fit_inverse_transform=True, alpha=0.1)
    ours = KernelPCA(**kw).fit(X)
    ref = SkKernelPCA(**kw).fit(X)
    expected = ref.inverse_transform(ref.transform(T))
    assert_allclose(ours.denoise(T, method="ridge"), expected, atol=1e-8)
    Y = ours.transform(T)
    assert_array_equal(ours.inverse_transform(Y), ours.inverse_transform(Y, method="ridge"))
    # fewer components: the dropped scores are zero
    Y2 = Y.copy()
    Y2[:, 2:] = 0
    assert_allclose(ours.denoise(T, n_components=2, method="ridge"), ours.inverse_transform(Y2))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("method", [None, "fixed_point", "mds"])
def test_sparse_scores_invert_as_dense_ones(Xy, method, fmt):
    """Scores as a sparse matrix (scikit-learn's inverse_transform takes a CSR one)
    give the pre-images of the same scores dense (it was NumPy's 'setting an array
    element with a sequence'); the default (ridge) also scikit-learn's result."""
    X, T = Xy
    kw = dict(n_components=3, kernel="rbf", gamma=0.3, fit_inverse_transform=True, alpha=0.1)
    ours = KernelPCA(**kw).fit(X)
    Y = ours.transform(T)
    Y[:, 1] = 0.0  # some structural zeros
    S = sp.csr_matrix(Y).asformat(fmt)
    S0 = S.copy()
    kwargs = {} if method is None else {"method": method}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        Z = ours.inverse_transform(S, **kwargs)
        assert_allclose(Z, ours.inverse_transform(Y, **kwargs), rtol=1e-12, atol=1e-12)
    if method is None:
        ref = SkKernelPCA(**kw).fit(X)
        signs = np.sign(np.sum(ref.transform(T) * ours.transform(T), axis=0))
        # sklearn's learned pre-image of its own (sign-aligned) scores, given as CSR
        expected = ref.inverse_transform(sp.csr_matrix(Y * signs))
        assert_allclose(Z, expected, rtol=1e-6, atol=1e-8)
    assert_array_equal(S.toarray(), S0.toarray())  # the input is not modified


# ------------------------------------------------------------------ methods


@pytest.mark.parametrize("method", ["fixed_point", "mds"])
def test_denoise_linear_is_pca_reconstruction(Xy, method):
    X, T = Xy
    est = KernelPCA(4, kernel="linear").fit(X)
    assert_allclose(est.denoise(T, method=method), T, atol=1e-9)  # all components: exact
    assert_allclose(est.inverse_transform(est.transform(T), method=method), T, atol=1e-9)
    pca = PCA(2).fit(X)
    assert_allclose(est.denoise(T, n_components=2, method=method),
                    pca.inverse_transform(pca.transform(T)), atol=1e-9)


def test_denoise_is_inverse_transform_of_first_scores(Xy):
    X, T = Xy
    est = KernelPCA(6, kernel="rbf", gamma=0.3).fit(X)
    Y = est.transform(T)[:, :3]
    assert_allclose(est.denoise(T, n_components=3, method="mds"),
                    est.inverse_transform(Y, method="mds"))


def test_auto_method_per_kernel(Xy):
    X, T = Xy
    for kernel, method in [("rbf", "fixed_point"), ("linear", "fixed_point"), ("poly", "mds")]:
        est = KernelPCA(3, kernel=kernel).fit(X)
        _, info = est.denoise(T, return_info=True)
        assert info.method == method, kernel
    est = KernelPCA(3, kernel="laplacian", fit_inverse_transform=True).fit(X)
    _, info = est.denoise(T, return_info=True)
    assert info.method == "ridge"
    est = KernelPCA(3, kernel="laplacian").fit(X)
    with pytest.raises(ValueError, match="fit_inverse_transform=True"):
        est.denoise(T)


def test_return_info(Xy):
    X, T = Xy
    est = KernelPCA(5, kernel="rbf", gamma=0.3, fit_inverse_transform=True).fit(X)
    for method in ("fixed_point", "mds", "ridge"):
        Z, info = est.denoise(T, method=method, return_info=True)
        assert isinstance(info, PreimageInfo) and info.method == method
        for a in (info.converged, info.n_iter, info.restarted, info.residual):
            assert a.shape == (T.shape[0],)
        assert np.all(info.residual >= 0) and np.all(info.residual <= 2 + 1e-9)
    _, fp = est.denoise(T, method="fixed_point", return_info=True)
    _, md = est.denoise(T, method="mds", return_info=True)
    _, rr = est.denoise(T, method="ridge", return_info=True)
    # fixed point minimises the feature-space error; here it beats both closed forms
    assert fp.residual.mean() <= min(md.residual.mean(), rr.residual.mean())


def test_non_convergence_warns(Xy):
    X, T = Xy
    est = KernelPCA(5, kernel="rbf", gamma=0.3).fit(X)
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        _, info = est.denoise(T, method="fixed_point", max_iter=1, tol=1e-12, return_info=True)
    assert not info.converged.any()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est.denoise(T, method="fixed_point")


@pytest.mark.parametrize("method", ["fixed_point", "mds", "ridge"])
@pytest.mark.parametrize("shift", [1e3, 1e8, -1e5])
def test_adversarial_inputs_give_finite_output(Xy, method, shift):
    X, T = Xy
    est = KernelPCA(4, kernel="rbf", gamma=0.5, fit_inverse_transform=True).fit(X)
    bad = np.vstack([T + shift, np.zeros((1, 4)), X[:1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        Z, info = est.denoise(bad, method=method, return_info=True)
    assert np.all(np.isfinite(Z)) and np.all(np.isfinite(info.residual))
    if method == "fixed_point":
        assert info.restarted[: T.shape[0]].all()


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_constant_training_data(kernel):
    """All training rows equal: K~ = 0, every score is 0 and P phi(t) = phi(x_0), whose
    pre-image is x_0 (fixed point: one step; mds: the neighbours' mean). The
    polynomial fixed point oscillates here (|derivative| > 1): flagged, finite."""
    const = np.full((20, 3), 0.7)
    T = np.random.RandomState(4).standard_normal((5, 3))
    est = KernelPCA(2, kernel=kernel, gamma=0.5, fit_inverse_transform=True).fit(const)
    for method in ("fixed_point", "mds", "ridge"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            Z, info = est.denoise(T, method=method, return_info=True)
        assert np.all(np.isfinite(Z)) and np.all(np.isfinite(info.residual)), method
        if method == "mds" or (method == "fixed_point" and kernel != "poly"):
            assert_allclose(Z, 0.7, atol=1e-12)
            assert info.converged.all()


@pytest.mark.parametrize("method", ["fixed_point", "mds"])
def test_duplicated_training_rows(method):
    """Training rows repeated 6 times: with all components the distinct points are
    their own pre-images (the duplicates neither break the neighbour step nor the
    iteration), and noisy copies stay finite."""
    rng = np.random.RandomState(5)
    P = rng.uniform(0, 1, (5, 3))
    X = np.repeat(P, 6, axis=0)
    est = KernelPCA(kernel="rbf", gamma=0.5, eigen_solver="dense").fit(X)
    assert est.eigenvalues_.size == 4  # 5 distinct points, centred
    Z, info = est.denoise(P, method=method, return_info=True, tol=1e-8, max_iter=500)
    assert_allclose(Z, P, atol=1e-6)
    assert info.converged.all() and not info.restarted.any()
    Z = est.denoise(P + 0.1 * rng.standard_normal(P.shape), method=method)
    assert np.all(np.isfinite(Z))


def test_dtype_kept(Xy):
    X, T = Xy
    est = KernelPCA(3, kernel="rbf", gamma=0.3).fit(X.astype(np.float32))
    for method in ("fixed_point", "mds"):
        assert est.denoise(T.astype(np.float32), method=method).dtype == np.float32


def test_matrix_free_fit_denoises_like_dense():
    rng = np.random.RandomState(1)
    X = rng.standard_normal((700, 5))
    T = rng.standard_normal((20, 5))
    kw = dict(n_components=5, kernel="rbf", gamma=0.2)
    dense = KernelPCA(eigen_solver="dense", **kw).fit(X)
    free = KernelPCA(eigen_solver="krylov", memory_limit="4MB", tol=1e-10, **kw).fit(X)
    for method in ("fixed_point", "mds"):
        assert_allclose(free.denoise(T, method=method), dense.denoise(T, method=method),
                        atol=1e-5)


def test_denoising_digits_beats_pca():
    """The seeds' claim in small: RBF KPCA denoising beats linear PCA on digits."""
    X = load_digits().data / 16.0
    rng = np.random.RandomState(0)
    p = rng.permutation(len(X))
    train, test = X[p[:400]], X[p[400:500]]
    noisy = test + 0.25 * rng.standard_normal(test.shape)
    mse_pca = min(
        np.mean((PCA(k).fit(train).inverse_transform(PCA(k).fit(train).transform(noisy))
                 - test) ** 2) for k in (8, 16, 24)
    )
    est = KernelPCA(100, kernel="rbf", gamma=0.16, eigen_solver="dense").fit(train)
    mse_fp = np.mean((est.denoise(noisy, method="fixed_point") - test) ** 2)
    mse_mds = np.mean((est.denoise(noisy, n_components=64, method="mds") - test) ** 2)
    noisy_mse = np.mean((noisy - test) ** 2)
    assert mse_fp < 0.8 * mse_pca < noisy_mse
    assert mse_mds < mse_pca


# ------------------------------------------------------------------ bad input


def test_bad_parameters_are_named(Xy):
    X, T = Xy
    est = KernelPCA(3, kernel="rbf", gamma=0.3).fit(X)
    Y = est.transform(T)
    methods = r"method must be one of \['auto', 'ridge', 'fixed_point', 'mds'\]"
    with pytest.raises(ValueError, match=methods):
        est.inverse_transform(Y, method="newton")
    with pytest.raises(ValueError, match=r"method must be one of \['auto', 'ridge'"):
        est.denoise(T, method="exact")
    for nc in (0, 4, 1.5, True, "2"):
        with pytest.raises(ValueError, match=r"n_components must be None or an integer in \[1, 3"):
            est.denoise(T, n_components=nc)
    with pytest.raises(ValueError, match=r"shape \(n_samples, q\) with 1 <= q <= 3"):
        est.inverse_transform(np.ones((2, 4)), method="mds")
    for method in ("fixed_point", "mds"):
        with pytest.raises(ValueError, match="NaN"):
            est.inverse_transform(np.full((2, 3), np.nan), method=method)
    ridge = KernelPCA(3, kernel="rbf", gamma=0.3, fit_inverse_transform=True).fit(X)
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="NaN or infinity"):  # not a silent NaN
            ridge.inverse_transform(np.full((2, 3), bad))
    with pytest.raises(ValueError, match="features"):
        est.denoise(np.ones((2, 5)))
    with pytest.raises(ValueError, match="n_neighbors must be an integer >= 1"):
        est.denoise(T, method="mds", n_neighbors=0)
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1"):
        est.denoise(T, max_iter=0)
    with pytest.raises(ValueError, match="tol must be a finite number >= 0"):
        est.denoise(T, tol=-1.0)
    with pytest.raises(NotFittedError):
        KernelPCA().denoise(T)


def test_unsupported_kernels_and_precomputed(Xy):
    X, T = Xy
    est = KernelPCA(3, kernel="sigmoid", gamma=0.01).fit(X)
    with pytest.raises(ValueError, match=r"method='mds' supports the kernels \['rbf', 'poly'"):
        est.denoise(T, method="mds")
    with pytest.raises(ValueError, match=r"method='fixed_point' supports the kernels"):
        est.inverse_transform(est.transform(T), method="fixed_point")
    K = X @ X.T
    est = KernelPCA(3, kernel="precomputed").fit(K)
    with pytest.raises(ValueError, match="precomputed"):
        est.denoise(K[:2], method="mds")
    with pytest.raises(ValueError, match="precomputed"):
        est.inverse_transform(np.ones((2, 3)), method="fixed_point")


# ------------------------------------------------------------------ issue requirements


@pytest.mark.parametrize("fit_method", ["fit", "fit_transform"])
def test_ridge_preimage_is_fitted_once(Xy, monkeypatch, fit_method):
    """scikit-learn fits the learned pre-image twice in fit_transform; kpca once."""
    import kpca._fit as mixin

    calls = []
    real = mixin.fit_ridge_preimage

    def counting(*args, **kwargs):
        calls.append(args[1].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(mixin, "fit_ridge_preimage", counting)
    X, T = Xy
    est = KernelPCA(4, kernel="rbf", gamma=0.3, fit_inverse_transform=True, alpha=0.1)
    out = getattr(est, fit_method)(X)
    assert calls == [(X.shape[0], 4)]
    # and the single fit is the kernel ridge solution on the training scores
    from sklearn.metrics.pairwise import rbf_kernel

    scores = out if fit_method == "fit_transform" else est.transform(X)
    K = rbf_kernel(scores, gamma=0.3)
    assert_allclose(est.dual_coef_, np.linalg.solve(K + 0.1 * np.eye(len(X)), X), atol=1e-8)


@pytest.mark.parametrize("center", [True, False])
def test_linear_kernel_all_components_every_method_is_exact(center):
    """Every pre-image method reconstructs exactly with the linear kernel and all
    components. The learned map has no intercept (as scikit-learn's), so for the
    centred model the training mean is made 0; alpha -> 0 removes the shrinkage."""
    rng = np.random.RandomState(3)
    X = rng.standard_normal((50, 4)) @ rng.standard_normal((4, 4)) + (0.0 if center else 2.0)
    if center:
        X -= X.mean(axis=0)
    T = rng.standard_normal((7, 4)) * 3 + 1
    est = KernelPCA(kernel="linear", center=center, fit_inverse_transform=True, alpha=1e-12,
                    eigen_solver="dense").fit(X)
    assert est.eigenvalues_.size == 4
    Y = est.transform(T)
    for method in ("ridge", "fixed_point", "mds"):
        assert_allclose(est.inverse_transform(Y, method=method), T, atol=1e-7, err_msg=method)
        assert_allclose(est.denoise(T, method=method, n_neighbors=10), T, atol=1e-7,
                        err_msg=method)
    assert_allclose(est.denoise(T), T, atol=1e-9)  # 'auto'


def test_preimages_are_blocked_over_training_rows():
    """No (m, n, d) and not even one (m, n) temporary: peak traced memory of the
    pre-image methods under a small block budget, and of denoise under memory_limit."""
    import tracemalloc

    from kpca.preimage import fixed_point_preimage, mds_preimage

    rng = np.random.RandomState(0)
    n, m, d = 800, 300, 64
    X, T = rng.uniform(0, 1, (n, d)), rng.uniform(0, 1, (m, d))
    est = KernelPCA(10, kernel="rbf", gamma=0.05, eigen_solver="dense", memory_limit="12MB",
                    fit_inverse_transform=True).fit(X)
    space, Y = est.subspace_, est.transform(T)
    one_mn = m * n * 8  # 1.9 MB; m * n * d * 8 would be 123 MB

    def peak(fn):
        tracemalloc.start()
        try:
            fn()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    bb = 2**18
    assert peak(lambda: fixed_point_preimage(space, Y, T, block_bytes=bb)) < one_mn
    assert peak(lambda: mds_preimage(space, Y, block_bytes=bb)) < one_mn
    assert peak(lambda: HostSpace(space).residual(T, Y, bb)) < one_mn
    # many points: processed in row chunks too (a (m, 64) block would be 4 bb here)
    T_many = rng.uniform(0, 1, (2000, d))
    Y_many = est.transform(T_many)
    assert peak(lambda: HostSpace(space).residual(T_many, Y_many, bb)) < X.nbytes + 6 * bb
    assert peak(lambda: mds_preimage(space, Y_many, block_bytes=bb)) < \
        T_many.nbytes + X.nbytes + 6 * bb
    for method in ("fixed_point", "mds", "ridge"):
        assert peak(lambda method=method: est.denoise(T, method=method)) < 12 * 2**20


@pytest.mark.parametrize("kernel, kw", [("rbf", {"gamma": 0.5}),
                                        ("poly", {"degree": 3, "gamma": 0.5})])
def test_far_scores_give_finite_preimages(Xy, kernel, kw):
    """Scores far outside the training scores (no training point is near P phi(t))."""
    X, T = Xy
    est = KernelPCA(4, kernel=kernel, fit_inverse_transform=True, **kw).fit(X)
    Y = est.transform(T)
    for scale in (1e3, -1e8, 0.0):
        for method in ("fixed_point", "mds", "ridge"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                Z, info = est.inverse_transform(Y * scale, method=method, return_info=True)
            assert np.all(np.isfinite(Z)), (scale, method)
            assert not np.any(np.isnan(info.residual)), (scale, method)


def test_inputs_are_not_modified(Xy):
    X, T = Xy
    est = KernelPCA(4, kernel="rbf", gamma=0.3, fit_inverse_transform=True).fit(X)
    T0, Y = T.copy(), est.transform(T)
    Y0 = Y.copy()
    for method in ("fixed_point", "mds", "ridge"):
        est.denoise(T, method=method)
        est.inverse_transform(Y, method=method)
    assert_array_equal(T, T0)
    assert_array_equal(Y, Y0)
