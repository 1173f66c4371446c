"""Bad input: every error is raised with a message naming the parameter or problem,
documented fallbacks behave as documented, and inputs are never modified in place."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import sigmoid_kernel

import kpca
from kpca import KernelPCA


@pytest.fixture
def X():
    return np.random.RandomState(0).standard_normal((20, 3))


def centred(K):
    n = K.shape[0]
    H = np.eye(n) - 1.0 / n
    return H @ K @ H


# ---------------------------------------------------------------- non-finite / shapes / dtypes


@pytest.mark.parametrize("value, match", [(np.nan, "NaN"), (np.inf, "infinity"),
                                          (-np.inf, "infinity")])
@pytest.mark.parametrize("kernel", ["linear", "rbf", "precomputed"])
def test_non_finite_input(X, value, match, kernel):
    data = X @ X.T if kernel == "precomputed" else X.copy()
    bad = data.copy()
    bad[1, 2] = value
    with pytest.raises(ValueError, match=match):
        KernelPCA(n_components=2, kernel=kernel).fit(bad)
    est = KernelPCA(n_components=2, kernel=kernel).fit(data)
    with pytest.raises(ValueError, match=match):
        est.transform(bad[:3])


def test_empty_input(X):
    with pytest.raises(ValueError, match="0 sample"):
        KernelPCA().fit(np.empty((0, 3)))
    with pytest.raises(ValueError, match="0 feature"):
        KernelPCA().fit(np.empty((5, 0)))
    est = KernelPCA(n_components=2).fit(X)
    with pytest.raises(ValueError, match="0 sample"):
        est.transform(np.empty((0, 3)))


def test_one_dimensional_input(X):
    with pytest.raises(ValueError, match="Expected 2D array"):
        KernelPCA().fit(X[:, 0])
    est = KernelPCA(n_components=2).fit(X)
    with pytest.raises(ValueError, match="Expected 2D array"):
        est.transform(X[0])


def test_scalar_input():
    with pytest.raises(ValueError, match="2D array"):
        KernelPCA().fit(np.float64(3.0))


@pytest.mark.parametrize("kernel", ["linear", "rbf", "cosine", "anova", "laplacian"])
def test_wrong_width_at_transform(X, kernel):
    est = KernelPCA(n_components=2, kernel=kernel).fit(X)
    for width in (2, 4):
        with pytest.raises(ValueError, match=rf"has {width} features.*expecting 3"):
            est.transform(np.ones((4, width)))


def test_wrong_width_precomputed(X):
    K = X @ X.T
    est = KernelPCA(n_components=2, kernel="precomputed").fit(K)
    with pytest.raises(ValueError, match=r"features.*expecting 20"):
        est.transform(K[:5, :10])


def test_complex_input(X):
    with pytest.raises(ValueError, match="[Cc]omplex"):
        KernelPCA().fit(X + 1j)
    est = KernelPCA(n_components=2).fit(X)
    with pytest.raises(ValueError, match="[Cc]omplex"):
        est.transform(X[:2] + 0j)


@pytest.mark.parametrize("dtype", [object, str])
def test_string_input(dtype):
    bad = np.array([["a", "b"], ["c", "d"], ["e", "f"]], dtype=dtype)
    with pytest.raises(ValueError, match="could not convert string"):
        KernelPCA().fit(bad)


def test_numeric_object_array_is_converted(X):
    a = KernelPCA(n_components=2, kernel="rbf").fit_transform(X.astype(object))
    b = KernelPCA(n_components=2, kernel="rbf").fit_transform(X)
    assert a.dtype == np.float64
    assert_allclose(a, b, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------- parameters


@pytest.mark.parametrize("gamma", [0, 0.0, -1, -1e-3, np.inf, np.nan, "auto", True])
@pytest.mark.parametrize("kernel", ["rbf", "poly", "sigmoid", "laplacian", "anova"])
def test_bad_gamma(X, kernel, gamma):
    with pytest.raises(ValueError, match="gamma"):
        KernelPCA(kernel=kernel, gamma=gamma).fit(X)


# every estimator whose parameters include gamma and a kernel without one
_GAMMA_ESTIMATORS = ["exact", "nystrom", "weighted", "spherical", "robpca", "incremental"]


@pytest.mark.parametrize("name", _GAMMA_ESTIMATORS)
@pytest.mark.parametrize("kernel", ["linear", "cosine"])
def test_gamma_zero_is_ignored_by_a_kernel_without_gamma(X, name, kernel):
    """gamma in [0, inf) as scikit-learn's constraint: 0 is accepted where the kernel
    does not use gamma (it was an InvalidParameterError for every kernel) and changes
    nothing: the model of gamma=None."""
    cls = kpca.ESTIMATORS[name]
    kw = dict(n_components=2, kernel=kernel)
    if name == "robpca":
        kw["random_state"] = 0
    Z = cls(gamma=0.0, **kw).fit(X).transform(X)
    assert_allclose(Z, cls(**kw).fit(X).transform(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", [*_GAMMA_ESTIMATORS, "anova"])
def test_gamma_zero_is_refused_by_a_kernel_with_gamma(X, name):
    """*differs* (docs/behaviour.md): the constant kernel gamma=0 makes (all-zero
    eigenvalues and scores in scikit-learn) is a ValueError saying so."""
    kw = {} if name == "anova" else {"kernel": "rbf"}
    kernel = "anova" if name == "anova" else "rbf"
    with pytest.raises(ValueError, match=rf"The 'gamma' parameter of the {kernel} kernel must "
                       rf"be a positive finite number.*gamma=0 makes the {kernel} kernel "
                       "constant"):
        kpca.ESTIMATORS[name](n_components=2, gamma=0, **kw).fit(X)


@pytest.mark.parametrize("gamma", [0, -2.0])
def test_bad_gamma_kernel_object(X, gamma):
    with pytest.raises(ValueError, match="gamma"):
        KernelPCA(kernel=kpca.kernels.RBF(gamma=gamma)).fit(X)


@pytest.mark.parametrize("degree", [-1, -0.5, np.nan, np.inf, "3", None])
def test_bad_degree(X, degree):
    with pytest.raises(ValueError, match="degree"):
        KernelPCA(kernel="poly", degree=degree).fit(X)


@pytest.mark.parametrize("n_components", [0, -1, 1.5, "a", 1.0, 0.0, -0.5, True, [2]])
def test_bad_n_components(X, n_components):
    with pytest.raises(ValueError, match="n_components"):
        KernelPCA(n_components=n_components).fit(X)


@pytest.mark.parametrize("solver", ["foo", "Dense", None, "lobpcg"])
def test_bad_eigen_solver(X, solver):
    with pytest.raises(ValueError, match="eigen_solver"):
        KernelPCA(eigen_solver=solver).fit(X)


@pytest.mark.parametrize("kernel", ["foo", "RBF", 3])
def test_bad_kernel(X, kernel):
    with pytest.raises(ValueError, match="kernel"):
        KernelPCA(kernel=kernel).fit(X)


def test_bad_kernel_params(X):
    with pytest.raises(ValueError, match="kernel_params.*nonsense"):
        KernelPCA(kernel="rbf", kernel_params={"nonsense": 1}).fit(X)


def test_parameters_are_not_validated_in_init():
    est = KernelPCA(n_components=-1, gamma=-1, eigen_solver="foo")  # sklearn convention
    assert est.get_params()["n_components"] == -1


@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized"])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_n_components_larger_than_n_is_clipped(X, solver, kernel):
    n = 8
    est = KernelPCA(n_components=50, kernel=kernel, eigen_solver=solver, random_state=0)
    Z = est.fit_transform(X[:n])
    ref = SkKernelPCA(n_components=50, kernel=kernel, eigen_solver="dense").fit(X[:n])
    assert est.eigenvalues_.shape == (n,) == ref.eigenvalues_.shape
    assert Z.shape == (n, n)
    assert est.transform(X[n:]).shape == (X.shape[0] - n, n)
    assert_allclose(est.eigenvalues_, ref.eigenvalues_, atol=1e-10 * ref.eigenvalues_[0])


# ---------------------------------------------------------------- precomputed kernels


@pytest.mark.parametrize("shape", [(20, 3), (3, 20), (20, 19)])
def test_non_square_precomputed(X, shape):
    with pytest.raises(ValueError, match="square"):
        KernelPCA(kernel="precomputed").fit(np.ones(shape))


def test_non_symmetric_precomputed_uses_symmetric_part(X):
    K = X @ X.T
    rng = np.random.RandomState(1)
    E = rng.standard_normal(K.shape)
    K_ns = K + 0.1 * (E - E.T)  # same symmetric part as K
    est = KernelPCA(n_components=3, kernel="precomputed")
    with pytest.warns(UserWarning, match="not symmetric"):
        Z = est.fit_transform(K_ns)
    ref = KernelPCA(n_components=3, kernel="precomputed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Zr = ref.fit_transform(K)
    assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=1e-10)
    assert_allclose(np.abs(Z), np.abs(Zr), rtol=1e-8, atol=1e-10)
    # the input itself is left as given
    assert not np.allclose(K_ns, K_ns.T)


@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized"])
def test_non_psd_precomputed_many_components(solver):
    rng = np.random.RandomState(0)
    A = rng.standard_normal((12, 12))
    K = A + A.T  # eigenvalues of both signs
    with pytest.raises(ValueError, match="significant negative eigenvalues"):
        KernelPCA(n_components=11, kernel="precomputed", eigen_solver=solver,
                  random_state=0).fit(K)


def test_non_psd_precomputed_all_components_drops_negative_with_warning():
    rng = np.random.RandomState(0)
    A = rng.standard_normal((12, 12))
    K = A + A.T
    est = KernelPCA(kernel="precomputed")
    with pytest.warns(UserWarning, match="negative eigenvalues"):
        est.fit(K)
    w = np.linalg.eigvalsh(centred(K))[::-1]
    positive = w[w > 1e-12 * w[0]]
    assert_allclose(est.eigenvalues_, positive, rtol=1e-10)


def test_sigmoid_all_components_drops_negative_with_warning():
    X = np.random.RandomState(0).standard_normal((30, 4)) * 3
    est = KernelPCA(kernel="sigmoid", gamma=1.0, coef0=1.0)
    with pytest.warns(UserWarning, match="negative eigenvalues"):
        Z = est.fit_transform(X)
    w = np.linalg.eigvalsh(centred(sigmoid_kernel(X, gamma=1.0, coef0=1.0)))[::-1]
    assert w.min() < -1e-3 * w[0]  # the setup really is non-PSD
    positive = w[w > 1e-12 * w[0]]
    assert np.all(est.eigenvalues_ > 0)
    assert_allclose(est.eigenvalues_, positive, rtol=1e-9)
    assert Z.shape == (30, positive.size)
    assert np.all(np.isfinite(est.transform(X[:5])))


def test_sigmoid_fixed_components_with_negative_eigenvalue_raises():
    X = np.random.RandomState(0).standard_normal((30, 4)) * 3
    with pytest.raises(ValueError, match="significant negative eigenvalues"):
        KernelPCA(kernel="sigmoid", gamma=1.0, n_components=30).fit(X)


# ---------------------------------------------------------------- overflow


def test_poly_huge_degree_overflow_in_fit():
    X = np.random.RandomState(0).standard_normal((30, 4)) * 10
    with pytest.raises(ValueError, match="overflow"):
        KernelPCA(kernel="poly", degree=1000, n_components=2).fit(X)


def test_poly_huge_degree_overflow_in_fit_float32():
    X = np.random.RandomState(0).standard_normal((30, 4)).astype(np.float32)
    with pytest.raises(ValueError, match="overflow"):
        KernelPCA(kernel="poly", degree=100, gamma=1.0, n_components=2).fit(X)


def test_poly_huge_degree_overflow_in_transform_is_an_error_not_nan():
    """Training data fine, new rows overflow the kernel: a ValueError, never NaN."""
    X = np.random.RandomState(0).standard_normal((30, 4))
    est = KernelPCA(kernel="poly", degree=100, gamma=1.0, n_components=2).fit(X)
    assert np.all(np.isfinite(est.transform(X)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            Z = est.transform(X[:3] * 1e3)
        except ValueError as exc:
            assert re.search("overflow|non-finite|infinite", str(exc)), str(exc)
        else:
            assert np.all(np.isfinite(Z)), f"transform returned {Z}"


def test_poly_near_overflow_never_silently_loses_components():
    """The diagonal is finite (< 1.8e308) but sums in the centring overflow: the fit
    must either raise a clear error or return the requested finite components."""
    X = np.random.RandomState(0).standard_normal((30, 4))
    degree = 153
    radius2 = (1.5e308) ** (1 / degree) - 1  # k(x, x) = 1.5e308 for these rows
    X[:3] = X[0] / np.linalg.norm(X[0]) * np.sqrt(radius2)
    est = KernelPCA(kernel="poly", degree=degree, gamma=1.0, n_components=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            Z = est.fit_transform(X)
        except ValueError as exc:
            assert re.search("overflow|non-finite|infinite", str(exc)), str(exc)
        else:
            assert Z.shape == (30, 2), f"requested 2 components, got {Z.shape}"
            assert np.all(np.isfinite(Z)) and np.all(np.isfinite(est.eigenvalues_))


def _one_huge_value():
    """50 x 3 rows with one value of 1e200, whose square (a linear kernel's K_ii) leaves
    float64: every exact route used to refuse it except the primal one, which wrote
    all-zero scores."""
    X = np.random.default_rng(1).normal(size=(50, 3))
    X[7, 1] = 1e200
    return X


@pytest.mark.parametrize("eigen_solver", ["auto", "dense", "arpack", "krylov", "randomized"])
@pytest.mark.parametrize("kernel", ["linear", "poly"])
def test_kernel_that_overflows_is_an_error_with_every_solver(eigen_solver, kernel):
    X = _one_huge_value()
    before = X.copy()
    est = KernelPCA(2, kernel=kernel, eigen_solver=eigen_solver, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match=r"overflow.*scale the data"):
            est.fit_transform(X)
    assert not hasattr(est, "eigenvalues_")
    assert_array_equal(X, before)


@pytest.mark.parametrize("make", [
    lambda: kpca.WeightedKernelPCA(2, kernel="linear"),
    lambda: kpca.SphericalKernelPCA(2, kernel="linear"),
    lambda: kpca.KernelROBPCA(2, kernel="linear", random_state=0),
    lambda: kpca.IncrementalKernelPCA(2, kernel="linear"),
    lambda: kpca.NystromKernelPCA(2, kernel="linear", random_state=0),
    lambda: kpca.NystromKernelPCA(2, kernel="rbf", gamma=0.5, random_state=0),
], ids=["weighted", "spherical", "robpca", "incremental", "nystrom-linear", "nystrom-rbf"])
def test_kernel_that_overflows_is_an_error_for_every_estimator(make):
    X = _one_huge_value()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match=r"overflow|non-finite") as exc:
            make().fit_transform(X)
    assert re.search("scale the data", str(exc.value)), str(exc.value)


def test_kernel_pca_on_large_but_finite_values_matches_sklearn():
    """Rows at 1e150 (K_ii ~ 1e300) are no overflow: every solver fits them as
    scikit-learn fits the same rows scaled down."""
    X = np.random.default_rng(2).normal(size=(50, 3))
    ref = SkKernelPCA(2, kernel="linear", eigen_solver="dense").fit(X)
    for solver in ["auto", "dense", "arpack"]:
        est = KernelPCA(2, kernel="linear", eigen_solver=solver, random_state=0)
        Z = est.fit_transform(X * 1e150) / 1e150
        assert_allclose(est.eigenvalues_ / 1e300, ref.eigenvalues_, rtol=1e-9)
        Zs = ref.transform(X)
        assert_allclose(Z * np.sign(np.sum(Z * Zs, axis=0)), Zs, atol=1e-9)


# ---------------------------------------------------------------- not fitted


def test_inverse_transform_without_fit_inverse_transform(X):
    est = KernelPCA(n_components=2).fit(X)
    with pytest.raises(NotFittedError, match="fit_inverse_transform"):
        est.inverse_transform(est.transform(X))


@pytest.mark.parametrize("method", ["transform", "inverse_transform", "get_feature_names_out"])
def test_methods_before_fit(X, method):
    est = KernelPCA(n_components=2, fit_inverse_transform=True)
    args = () if method == "get_feature_names_out" else (X,)
    with pytest.raises(NotFittedError, match="not fitted"):
        getattr(est, method)(*args)


def test_inverse_transform_wrong_width(X):
    est = KernelPCA(n_components=2, kernel="rbf", fit_inverse_transform=True).fit(X)
    with pytest.raises(ValueError, match=r"shape \(n_samples, 2\)"):
        est.inverse_transform(np.ones((3, 3)))


def test_fit_inverse_transform_with_precomputed(X):
    with pytest.raises(ValueError, match="precomputed"):
        KernelPCA(kernel="precomputed", fit_inverse_transform=True).fit(X @ X.T)


# ---------------------------------------------------------------- no in-place modification


CASES = [
    ("linear", {}),
    ("rbf", {"gamma": 0.5}),
    ("rbf", {"gamma": "median"}),
    ("poly", {"degree": 2}),
    ("cosine", {}),
    ("laplacian", {"gamma": 0.3}),
    ("anova", {"gamma": 0.3}),
    ("sigmoid", {"gamma": 0.01}),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("copy_X", [True, False])
@pytest.mark.parametrize("kernel, params", CASES)
def test_inputs_not_modified(kernel, params, copy_X, dtype):
    rng = np.random.RandomState(0)
    Xtr = (rng.standard_normal((25, 3)) + 2.0).astype(dtype)
    Xte = (rng.standard_normal((6, 3)) + 2.0).astype(dtype)
    Xtr0, Xte0 = Xtr.copy(), Xte.copy()
    inv = kernel not in ("sigmoid",)
    est = KernelPCA(n_components=2, kernel=kernel, copy_X=copy_X, fit_inverse_transform=inv,
                    **params)
    est.fit(Xtr)
    assert_array_equal(Xtr, Xtr0)
    Z = est.transform(Xte)
    assert_array_equal(Xte, Xte0)
    est.fit_transform(Xtr)
    assert_array_equal(Xtr, Xtr0)
    if inv:
        Z0 = Z.copy()
        est.inverse_transform(Z)
        assert_array_equal(Z, Z0)
    est.transform(Xtr)
    assert_array_equal(Xtr, Xtr0)


@pytest.mark.parametrize("copy_X", [True, False])
@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized"])
def test_precomputed_inputs_not_modified(copy_X, solver):
    rng = np.random.RandomState(0)
    X = rng.standard_normal((25, 3))
    K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    Kt = K[:6].copy()
    K0, Kt0 = K.copy(), Kt.copy()
    est = KernelPCA(n_components=3, kernel="precomputed", copy_X=copy_X, eigen_solver=solver,
                    random_state=0)
    est.fit(K)
    assert_array_equal(K, K0)
    est.transform(Kt)
    assert_array_equal(Kt, Kt0)
    est.fit_transform(K)
    assert_array_equal(K, K0)


def test_sparse_input_not_modified():
    rng = np.random.RandomState(0)
    X = sp.random(20, 6, density=0.4, format="csr", random_state=rng)
    X0 = X.copy()
    est = KernelPCA(n_components=2, kernel="rbf", copy_X=False).fit(X)
    est.transform(X[:5])
    assert_array_equal(X.toarray(), X0.toarray())


def test_copy_X_true_decouples_from_later_mutation(X):
    Xtr = X.copy()
    est = KernelPCA(n_components=2, kernel="rbf", copy_X=True).fit(Xtr)
    before = est.transform(X[:4])
    Xtr[:] = 0.0
    assert_array_equal(est.transform(X[:4]), before)


@pytest.mark.parametrize("kernel, valid", [("linear", "none"), ("cosine", "none"),
                                           ("rbf", "['gamma']")])
def test_unknown_kernel_param_lists_the_valid_ones(kernel, valid):
    X = np.random.default_rng(0).random((20, 3))
    with pytest.raises(ValueError, match=rf"no parameter 'p'; valid: {re.escape(valid)}\."):
        KernelPCA(2, kernel=kernel, kernel_params={"p": 3}).fit(X)
