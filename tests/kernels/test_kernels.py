"""Kernels against independent references (per-pair formulas and scikit-learn)."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import pairwise

from kpca import kernels as K


def _pairwise_reference(f, X, Y):
    return np.array([[f(x, y) for y in Y] for x in X])


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(7, 4)) * 3 + 5, rng.normal(size=(5, 4))


CASES = [
    (K.Linear(), lambda x, y: x @ y),
    (K.Polynomial(gamma=0.3, degree=3, coef0=1.5), lambda x, y: (0.3 * x @ y + 1.5) ** 3),
    (K.RBF(gamma=0.2), lambda x, y: np.exp(-0.2 * np.sum((x - y) ** 2))),
    (K.Laplacian(gamma=0.2), lambda x, y: np.exp(-0.2 * np.sum(np.abs(x - y)))),
    (K.Sigmoid(gamma=0.01, coef0=0.5), lambda x, y: np.tanh(0.01 * x @ y + 0.5)),
    (K.Cosine(), lambda x, y: x @ y / np.linalg.norm(x) / np.linalg.norm(y)),
    (
        K.Anova(gamma=0.5, beta=[0.1, 0.2, 0.3, 0.4]),
        lambda x, y: np.sum(np.array([0.1, 0.2, 0.3, 0.4]) * np.exp(-0.5 * (x - y) ** 2)),
    ),
]


@pytest.mark.parametrize("kernel,ref", CASES, ids=lambda c: getattr(c, "name", ""))
def test_block_and_diag_match_per_pair_formula(kernel, ref, data):
    X, Y = data
    np.testing.assert_allclose(kernel.block(X, Y), _pairwise_reference(ref, X, Y), rtol=1e-10)
    KX = kernel.block(X)
    np.testing.assert_allclose(KX, _pairwise_reference(ref, X, X), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(kernel.diag(X), np.diag(_pairwise_reference(ref, X, X)),
                               rtol=1e-10)
    np.testing.assert_allclose(KX, KX.T)


@pytest.mark.parametrize("kernel,ref", CASES, ids=lambda c: getattr(c, "name", ""))
def test_sparse_input_equals_dense(kernel, ref, data):
    X, Y = data
    np.testing.assert_allclose(
        kernel.block(sp.csr_matrix(X), sp.csr_matrix(Y)), kernel.block(X, Y), rtol=1e-10
    )


@pytest.mark.parametrize("kernel,ref", CASES, ids=lambda c: getattr(c, "name", ""))
def test_float32_preserved_and_accurate(kernel, ref, data):
    X, Y = data
    K32 = kernel.block(X.astype(np.float32), Y.astype(np.float32))
    assert K32.dtype == np.float32
    K64 = kernel.block(X, Y)
    np.testing.assert_allclose(K32, K64, rtol=2e-4, atol=2e-5 * np.abs(K64).max())


def test_rbf_float32_accurate_far_from_origin():
    # the ||x||^2 + ||y||^2 - 2 x.y expansion cancels badly when the data sit far
    # from the origin; the shift by a common centre must keep float32 accurate
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 20)) + 1000.0
    ref = pairwise.rbf_kernel(X, gamma=0.05)
    got = K.RBF(gamma=0.05).block(X.astype(np.float32))
    np.testing.assert_allclose(got, ref, atol=1e-4)


def test_matches_sklearn_pairwise(data):
    X, Y = data
    np.testing.assert_allclose(K.RBF(gamma=0.1).block(X, Y), pairwise.rbf_kernel(X, Y, gamma=0.1))
    np.testing.assert_allclose(
        K.Laplacian(gamma=0.1).block(X, Y), pairwise.laplacian_kernel(X, Y, gamma=0.1)
    )
    np.testing.assert_allclose(K.Cosine().block(X, Y), pairwise.cosine_similarity(X, Y))


def test_cosine_zero_vector_is_zero_everywhere():
    X = np.array([[0.0, 0.0], [1.0, 2.0]])
    Kx = K.Cosine().block(X)
    np.testing.assert_array_equal(Kx[0], [0.0, 0.0])
    np.testing.assert_array_equal(K.Cosine().diag(X), [0.0, 1.0])


def test_callable_vectorised_is_detected_and_per_pair_falls_back(data):
    X, Y = data
    calls = []

    def vec(A, B):
        calls.append(A.shape)
        return A @ B.T

    k = K.Callable(vec).resolve(X)
    assert k.vectorized is True
    calls.clear()
    np.testing.assert_allclose(k.block(X, Y), X @ Y.T)
    assert calls == [X.shape]  # one call for the whole block, not one per pair

    def per_pair(x, y):
        return np.minimum(x, y).sum()

    k2 = K.Callable(per_pair).resolve(X)
    assert k2.vectorized is False
    np.testing.assert_allclose(k2.block(X, Y), _pairwise_reference(per_pair, X, Y))


def test_callable_that_broadcasts_wrongly_is_not_taken_as_vectorised(data):
    X, _ = data
    # returns a (2, 3)-broadcastable but wrong answer for blocks
    k = K.Callable(lambda x, y: np.exp(-np.sum((x - y) ** 2))).resolve(X)
    assert k.vectorized is False


def test_callable_nan_is_an_error(data):
    X, _ = data
    k = K.Callable(lambda A, B: np.full((A.shape[0], B.shape[0]), np.nan), vectorized=True)
    with pytest.raises(ValueError, match="NaN"):
        k.block(X)


def test_gamma_heuristics():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) * 2.0
    g_scale = K.resolve_gamma("scale", X)
    assert g_scale == pytest.approx(1.0 / (3 * X.var()))
    g_med = K.resolve_gamma("median", X)
    d = pairwise.euclidean_distances(X)[np.triu_indices(300, 1)]
    assert g_med == pytest.approx(1.0 / (2 * np.median(d) ** 2))
    g_l1 = K.resolve_gamma("median", X, metric="cityblock")
    d1 = pairwise.manhattan_distances(X)[np.triu_indices(300, 1)]
    assert g_l1 == pytest.approx(1.0 / np.median(d1))
    assert K.resolve_gamma(None, X) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="gamma"):
        K.resolve_gamma(-1.0, X)
    with pytest.raises(ValueError, match="distance kernels"):
        K.Polynomial(gamma="median").resolve(X)


def test_resolve_returns_new_object_with_numbers():
    X = np.arange(12.0).reshape(6, 2)
    k = K.RBF(gamma="scale")
    r = k.resolve(X)
    assert k.gamma == "scale" and isinstance(r.gamma, float)
    with pytest.raises(ValueError, match="resolve"):
        k.block(X)


def test_make_kernel_and_errors():
    k = K.make_kernel("rbf", gamma=0.5, degree=7, coef0=3)
    assert isinstance(k, K.RBF) and k.gamma == 0.5
    k = K.make_kernel("anova", gamma=1.0, kernel_params={"beta": [1, 0]})
    assert list(k.beta) == [1, 0]
    with pytest.raises(ValueError, match="kernel must be one of"):
        K.make_kernel("nope")
    with pytest.raises(ValueError, match="no parameter 'beta'"):
        K.make_kernel("rbf", kernel_params={"beta": 1})
    with pytest.raises(ValueError, match="beta must be 2"):
        K.Anova(gamma=1.0, beta=[1, 2, 3]).block(np.ones((3, 2)))


def test_block_bytes_counts_result_and_temporaries():
    assert K.RBF(1.0).block_bytes(10, 20, np.float32) == 10 * 20 * 4
    assert K.Anova(1.0).block_bytes(10, 20) == 2 * 10 * 20 * 8


@pytest.mark.parametrize("kernel,ref", CASES, ids=lambda c: getattr(c, "name", ""))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_prepared_rows_give_the_block_in_slices(kernel, ref, dtype, data):
    """``block_prepared(prepare_rows(X, prep)[rows], prep[cols])`` is the block of
    rows x cols of ``k(X, Y)`` (as an operator's passes evaluate it)."""
    X, Y = data
    X = np.vstack([X, Y[:2]])  # rows equal to columns: exponents at round-off of 0
    prep = kernel.prepare(Y, dtype)
    rows = kernel.prepare_rows(X, prep)
    full = _pairwise_reference(ref, X, Y)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    pieces = [(slice(0, 9), slice(0, 5)), (slice(2, 6), slice(1, 4)), (slice(7, 9), slice(0, 2))]
    for r, c in pieces:
        out = np.empty((r.stop - r.start, c.stop - c.start), dtype=dtype)
        got = kernel.block_prepared(rows[r], prep[c], out=out)
        assert got is out
        np.testing.assert_allclose(out, full[r, c], **tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rbf_prepared_rows_clamp_only_where_round_off_could_exceed_1(dtype):
    """Prepared RBF rows skip the clamp of the exponent at 0 where round-off above 0
    is provably below 1e-3, and keep it where data far from their centre could lift a
    kernel value above 1 or overflow (duplicated rows at scale 1e150 / 1e18)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 20))
    X = np.vstack([X, X[:50]])  # exact duplicates: exponents at round-off of 0
    kernel = K.RBF(gamma=1 / 20)
    prep = kernel.prepare(X, dtype)
    rows = kernel.prepare_rows(X, prep)
    assert rows.clamp is False
    out = kernel.block_prepared(rows, prep)
    assert out.max() <= 1 + 1e-3
    np.testing.assert_allclose(out, pairwise.rbf_kernel(X, gamma=1 / 20),
                               atol=1e-12 if dtype == np.float64 else 1e-5)

    big = X * (1e150 if dtype == np.float64 else 1e18)
    kernel = K.RBF(gamma=1.0)
    prep = kernel.prepare(big, dtype)
    rows = kernel.prepare_rows(big, prep)
    assert rows.clamp is True
    with np.errstate(over="ignore", invalid="ignore"):
        out = kernel.block_prepared(rows, prep)
    assert np.all(np.isfinite(out)) and out.max() <= 1.0


# -------------------------------------------- degree, coef0, gamma wherever they are given

# (kernel, parameter, bad value, what the message says is valid)
_DEGREE = r"must be a float in the range \[0\.0, inf\)"
_COEF0 = r"must be a float in the range \(-inf, inf\)"
_GAMMA = r"must be a positive finite number, None, 'scale' or 'median'"
BAD_KERNEL_PARAMETERS = [
    ("poly", "degree", -3, _DEGREE),
    ("poly", "degree", np.nan, _DEGREE),
    ("poly", "degree", np.inf, _DEGREE),
    ("poly", "degree", "3", _DEGREE),
    ("poly", "degree", True, "must not be a bool"),
    ("poly", "coef0", np.nan, _COEF0),
    ("sigmoid", "coef0", -np.inf, _COEF0),
    ("poly", "gamma", -1.0, _GAMMA),
    ("rbf", "gamma", np.nan, _GAMMA),
    ("laplacian", "gamma", 0.0, _GAMMA + r"; got 0\.0 \(gamma=0 makes the laplacian kernel "
                                        "constant"),
]


@pytest.mark.parametrize("name,key,value,valid", BAD_KERNEL_PARAMETERS)
def test_kernel_params_are_checked_as_the_estimator_parameters(name, key, value, valid):
    """A value refused as an estimator parameter is refused in kernel_params and by a
    kernel object, each error naming the parameter, where it was given and what is
    valid (kernel_params used to skip the checks: degree=-3 fitted, coef0=nan failed
    at transform, degree=nan was a raw 'cannot convert float NaN to integer')."""
    from kpca import KernelPCA

    X = np.random.default_rng(0).normal(size=(30, 4))
    if key == "gamma" and value == 0:  # accepted by the constraints (scikit-learn's)
        with pytest.raises(ValueError, match=rf"'gamma' parameter of the {name} kernel {valid}"):
            KernelPCA(2, kernel=name, gamma=value).fit(X)
    else:
        with pytest.raises(ValueError, match=rf"'{key}' parameter of KernelPCA"):
            KernelPCA(2, kernel=name, **{key: value}).fit(X)
    with pytest.raises(ValueError, match=rf"The '{key}' parameter of kernel_params {valid}"):
        KernelPCA(2, kernel=name, kernel_params={key: value}).fit(X)
    with pytest.raises(ValueError, match=rf"The '{key}' parameter of kernel_params {valid}"):
        K.make_kernel(name, kernel_params={key: value})
    obj = K.KERNELS[name](**{key: value})
    owner = type(obj).__name__
    with pytest.raises(ValueError, match=rf"The '{key}' parameter of {owner} {valid}"):
        KernelPCA(2, kernel=obj).fit(X)
    with pytest.raises(ValueError, match=rf"The '{key}' parameter of {owner} {valid}"):
        obj.resolve(X)


def test_valid_kernel_params_give_the_estimator_parameters_result():
    """kernel_params set a named kernel's parameters (kpca's documented departure from
    scikit-learn): the same model as the estimator parameters, whose kernel is checked
    against scikit-learn's polynomial kernel; a fractional degree stays valid."""
    from sklearn.decomposition import KernelPCA as SkKernelPCA

    from kpca import KernelPCA

    X = np.random.default_rng(1).normal(size=(40, 3))
    params = {"gamma": 0.3, "degree": 2, "coef0": 0.5}
    a = KernelPCA(3, kernel="poly", kernel_params=params).fit(X)
    b = KernelPCA(3, kernel="poly", **params).fit(X)
    ref = SkKernelPCA(3, kernel="poly", eigen_solver="dense", **params).fit(X)
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=1e-12)
    np.testing.assert_allclose(a.eigenvalues_, ref.eigenvalues_, rtol=1e-8)
    # the same value given twice is no conflict
    KernelPCA(2, kernel="poly", degree=2, kernel_params={"degree": 2.0}).fit(X)
    k = K.make_kernel("poly", kernel_params={"degree": 2.5, "coef0": 0.0})
    assert (k.degree, k.coef0) == (2.5, 0.0)


@pytest.mark.parametrize("name,explicit,given", [
    ("rbf", {"gamma": 0.1}, {"gamma": 2.0}),
    ("rbf", {"gamma": "scale"}, {"gamma": 0.5}),
    ("poly", {"degree": 2}, {"degree": 4}),
    ("sigmoid", {"coef0": 0.0}, {"coef0": 0.5}),
])
def test_kernel_params_contradicting_an_explicit_parameter_is_an_error(name, explicit, given):
    """gamma=0.1 with kernel_params={'gamma': 2.0} used to fit with 2.0 silently
    (scikit-learn fits with 0.1): now neither wins, the error names both."""
    from kpca import KernelPCA

    (key, value), = explicit.items()
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match=re.escape(
            f"{key}={value!r} and kernel_params={{{key!r}: {given[key]!r}}} give the "
            f"{name!r} kernel two values of {key!r}")):
        KernelPCA(2, kernel=name, kernel_params=given, **explicit).fit(X)


def test_explicit_feature_map_of_an_unchecked_kernel_is_none():
    """A polynomial kernel object not checked yet (a plan reads it before any fit) with
    a NaN degree or coef0 has no explicit feature map, instead of a raw int(NaN)."""
    for kernel in (K.Polynomial(gamma=1.0, degree=np.nan), K.Polynomial(gamma=1.0, coef0=np.nan)):
        assert K.feature_dimension(kernel, 3) is None
    assert K.feature_dimension(K.Polynomial(gamma=1.0, degree=2, coef0=1.0), 3) == 10
