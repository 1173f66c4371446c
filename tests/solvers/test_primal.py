"""The primal route (kernels with an explicit feature map): the same fit as the dual.

Checked against a dense NumPy reference (eigh of the centred Gram matrix), against
scikit-learn's KernelPCA, and against kpca's own dual fit (``eigen_solver='dense'``):
eigenvalues, dual eigenvectors, scores, transform, inverse_transform and a model file.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.decomposition import KernelPCA as SKKernelPCA
from sklearn.metrics.pairwise import polynomial_kernel
from sklearn.preprocessing import StandardScaler

import kpca
from kpca import KernelPCA
from kpca.kernels import explicit_features, feature_dimension, make_kernel
from kpca.solvers import primal_eigsh


def std_digits(n=500):
    return StandardScaler().fit_transform(load_digits().data[:n])


def _centred(K):
    r = K.mean(axis=0)
    return K - r[:, None] - r[None, :] + r.mean()


def _signs(A, B):
    """Flip the columns of A onto B's signs."""
    return A * np.sign(np.sum(A * B, axis=0))


@pytest.mark.parametrize("coef0,degree", [(1.0, 1), (1.0, 2), (0.0, 3), (2.5, 3)])
def test_polynomial_features_reproduce_the_kernel(coef0, degree):
    X = np.random.default_rng(0).normal(size=(40, 4))
    kern = make_kernel("poly", gamma=0.3, degree=degree, coef0=coef0, kernel_params=None,
                       n_jobs=None).resolve(X)
    F = explicit_features(kern, X)
    assert F.shape == (40, feature_dimension(kern, 4))
    np.testing.assert_allclose(F @ F.T, polynomial_kernel(X, gamma=0.3, degree=degree,
                                                          coef0=coef0), atol=1e-12)


def test_no_feature_map_for_other_kernels():
    X = np.zeros((3, 2))
    assert feature_dimension(make_kernel("rbf", gamma=1.0, degree=3, coef0=1,
                                         kernel_params=None, n_jobs=None), 2) is None
    frac = make_kernel("poly", gamma=1.0, degree=2.5, coef0=1, kernel_params=None,
                       n_jobs=None).resolve(X)
    assert feature_dimension(frac, 2) is None


def test_primal_eigsh_matches_eigh_of_the_centred_gram():
    rng = np.random.default_rng(1)
    F = rng.normal(size=(300, 12)) @ rng.normal(size=(12, 12)) + 5.0  # far from 0
    Kc = _centred(F @ F.T)
    w, V = np.linalg.eigh(Kc)
    w, V = w[::-1][:8], V[:, ::-1][:, :8]
    sol = primal_eigsh(F.copy(), 8)
    order = np.argsort(-sol.result.values)
    vals, vecs = sol.result.values[order], sol.result.vectors[:, order]
    np.testing.assert_allclose(vals, w, rtol=1e-10)
    np.testing.assert_allclose(_signs(vecs, V), V, atol=1e-9)
    np.testing.assert_allclose(sol.trace, np.trace(Kc), rtol=1e-12)
    np.testing.assert_allclose(sol.row_means, (F @ F.T).mean(axis=1), rtol=1e-12)
    # beyond the rank: zero eigenvalues and orthonormal vectors
    more = primal_eigsh(F.copy(), 20).result
    assert np.count_nonzero(more.values) == 12
    np.testing.assert_allclose(more.vectors.T @ more.vectors, np.eye(20), atol=1e-10)


def test_issue_case_linear_digits_goes_primal_and_matches_sklearn():
    """Standardised digits, n = 500, k = 64, linear kernel (the issue's case)."""
    X = std_digits()
    model = KernelPCA(64, random_state=0).fit(X)
    assert model.eigen_solver_ == "primal"
    ref = KernelPCA(64, eigen_solver="dense").fit(X)
    sk = SKKernelPCA(64, eigen_solver="dense").fit(X)
    top = ref.eigenvalues_[0]
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=0, atol=1e-10 * top)
    np.testing.assert_allclose(model.eigenvalues_, sk.eigenvalues_, rtol=0, atol=1e-10 * top)
    # scores, up to sign, against scikit-learn and the dual fit; the rank is 61 (three
    # constant pixels), so only the non-zero components have a defined direction
    nz = ref.eigenvalues_ > 1e-9 * top
    Z, Zs = model.transform(X)[:, nz], sk.transform(X)[:, nz]
    np.testing.assert_allclose(_signs(Z, Zs), Zs, atol=1e-8 * np.sqrt(top))
    # the same fitted attributes as the dual fit (shared sign rule: no flips)
    np.testing.assert_allclose(model.eigenvectors_[:, nz], ref.eigenvectors_[:, nz],
                               atol=1e-8)
    np.testing.assert_allclose(model.explained_variance_ratio_, ref.explained_variance_ratio_,
                               atol=1e-12)
    new = StandardScaler().fit(load_digits().data[:500]).transform(load_digits().data[500:700])
    np.testing.assert_allclose(model.transform(new)[:, nz], ref.transform(new)[:, nz],
                               atol=1e-8 * np.sqrt(top))


@pytest.mark.parametrize("center", [True, False])
def test_polynomial_primal_matches_dual(center):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1500, 3))
    kw = dict(kernel="poly", degree=3, gamma=0.5, coef0=1.0, center=center)
    model = KernelPCA(10, random_state=0, **kw).fit(X)
    assert model.eigen_solver_ == "primal"  # p = C(6, 3) = 20 features
    ref = KernelPCA(10, eigen_solver="dense", **kw).fit(X)
    top = ref.eigenvalues_[0]
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=0, atol=1e-10 * top)
    np.testing.assert_allclose(model.eigenvectors_, ref.eigenvectors_, atol=1e-7)
    Xt = rng.normal(size=(50, 3))
    np.testing.assert_allclose(model.transform(Xt), ref.transform(Xt),
                               atol=1e-7 * np.sqrt(top))
    np.testing.assert_allclose(model.score_samples(Xt), ref.score_samples(Xt), rtol=1e-7)


def test_primal_inverse_transform_and_model_file(tmp_path):
    from kpca.io import load_model, save_model

    X = std_digits()
    model = KernelPCA(20, fit_inverse_transform=True, random_state=0).fit(X)
    ref = KernelPCA(20, fit_inverse_transform=True, eigen_solver="dense").fit(X)
    assert model.eigen_solver_ == "primal"
    Z = model.transform(X[:30])
    np.testing.assert_allclose(model.inverse_transform(Z),
                               ref.inverse_transform(ref.transform(X[:30])), atol=1e-7)
    save_model(model, tmp_path / "m.kpca")
    back = load_model(tmp_path / "m.kpca")
    np.testing.assert_array_equal(back.transform(X[:30]), Z)
    assert back.eigen_solver_ == "primal"


def test_all_components_and_when_the_dual_is_cheaper():
    X = std_digits(300)
    model = KernelPCA(random_state=0).fit(X)  # n_components=None: the non-zero ones
    ref = KernelPCA(eigen_solver="dense").fit(X)
    assert model.eigen_solver_ == "primal"
    assert model.n_components_ == ref.n_components_
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-9)
    # many features and few rows: the dual route
    wide = np.random.default_rng(3).normal(size=(100, 3000))
    assert KernelPCA(5, random_state=0).fit(wide).eigen_solver_ != "primal"
    # switched off by its setting
    with kpca.config_context(primal_max_features=10):
        assert KernelPCA(5, random_state=0).fit(X).eigen_solver_ != "primal"


def _overflowing(n=50):
    """A 50 x 3 table with one value of 1e200: |x|^2 = 1e400 leaves float64."""
    X = np.random.default_rng(1).normal(size=(n, 3))
    X[7, 1] = 1e200
    return X


def test_primal_eigsh_refuses_a_scatter_that_overflows():
    """Finite features whose scatter (and so K~ = F~ F~^T) overflows: a ValueError, not
    NaN eigenvalues clipped to zero (the eigenpairs it used to return were all zero)."""
    F = np.random.default_rng(0).normal(size=(50, 3))
    F[:, 0] = np.where(np.arange(50) % 2, 1.0, -1.0) * 1.2e154  # each |f|^2 < 1.8e308
    with pytest.raises(ValueError, match=r"kernel between the training rows overflows"
                       r".*scale the data"):
        primal_eigsh(F.copy(), 2)
    with pytest.raises(ValueError, match="overflows"):
        primal_eigsh(F.copy(), 2, center=False)
    F[0, 1] = 1e300  # a column mean that overflows
    F[1, 1] = 1e308
    with pytest.raises(ValueError, match="overflows"):
        primal_eigsh(F.copy(), 2)


@pytest.mark.parametrize("kernel", ["linear", "poly"])
def test_primal_route_refuses_overflow_as_the_dual_does(kernel):
    """One value of 1e200: the primal route (eigen_solver='auto') wrote all-zero scores
    with only RuntimeWarnings; now the dual route's error, with its message."""
    X = _overflowing()
    with pytest.raises(ValueError) as dual:
        KernelPCA(2, kernel=kernel, eigen_solver="dense").fit(X)
    est = KernelPCA(2, kernel=kernel, random_state=0)
    assert est.plan(X).solver == "primal"
    with warnings.catch_warnings():
        # linear: no RuntimeWarning before the error (the CLI printed them as warnings);
        # the polynomial feature map's own products still warn as they overflow
        warnings.simplefilter("error" if kernel == "linear" else "ignore", RuntimeWarning)
        with pytest.raises(ValueError, match=r"non-finite values on its diagonal "
                           r"\(overflow\).*scale the data") as primal:
            est.fit(X)
    assert str(primal.value) == str(dual.value)
    assert not hasattr(est, "eigenvalues_")


def test_primal_route_still_fits_large_finite_data():
    """Values near 1e150 (|x|^2 ~ 1e300, representable): the primal fit still runs and
    agrees with the dense dual fit and with scikit-learn on the unscaled data."""
    X = np.random.default_rng(4).normal(size=(60, 3))
    big = X * 1e150
    model = KernelPCA(2, random_state=0).fit(big)
    assert model.eigen_solver_ == "primal"
    ref = KernelPCA(2, eigen_solver="dense").fit(big)
    sk = SKKernelPCA(2, eigen_solver="dense").fit(X)
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(model.eigenvalues_ / 1e300, sk.eigenvalues_, rtol=1e-10)
    Z, Zs = model.transform(big) / 1e150, sk.transform(X)
    np.testing.assert_allclose(_signs(Z, Zs), Zs, atol=1e-9)
