"""Property-based tests (hypothesis) of the formulas of docs/math.md, against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.spatial.distance import cdist
from scipy.stats import ortho_group

import kpca
from kpca import KernelPCA

GAP = 1e-3

# ---------------------------------------------------------------- independent kernels


def k_linear(X, Y, **_):
    return X @ Y.T


def k_poly(X, Y, gamma, degree=2, coef0=1.0):
    return (gamma * X @ Y.T + coef0) ** degree


def k_rbf(X, Y, gamma):
    return np.exp(-gamma * cdist(X, Y, "sqeuclidean"))


def k_laplacian(X, Y, gamma):
    return np.exp(-gamma * cdist(X, Y, "cityblock"))


def k_cosine(X, Y, **_):
    nx = np.linalg.norm(X, axis=1)
    ny = np.linalg.norm(Y, axis=1)
    return (X @ Y.T) / np.outer(nx, ny)


def k_anova(X, Y, gamma):
    beta = np.full(X.shape[1], 1.0 / np.sqrt(X.shape[1]))  # documented default
    diff2 = (X[:, None, :] - Y[None, :, :]) ** 2
    return np.einsum("ijk,k->ij", np.exp(-gamma * diff2), beta)


NUMPY_KERNELS = {
    "linear": k_linear,
    "poly": k_poly,
    "rbf": k_rbf,
    "laplacian": k_laplacian,
    "cosine": k_cosine,
    "anova": k_anova,
}
PSD_KERNELS = sorted(NUMPY_KERNELS)


def est_params(kernel, gamma):
    p = {"kernel": kernel}
    if kernel in ("poly", "rbf", "laplacian", "anova"):
        p["gamma"] = gamma
    if kernel == "poly":
        p.update(degree=2, coef0=1.0)
    return p


def numpy_gram(kernel, X, Y, gamma):
    f = NUMPY_KERNELS[kernel]
    if kernel == "poly":
        return f(X, Y, gamma=gamma, degree=2, coef0=1.0)
    return f(X, Y, gamma=gamma)


# ---------------------------------------------------------------- strategies / helpers


@st.composite
def datasets(draw, min_n=6, max_n=30, max_d=5):
    """A continuous random data set (no ties), of a random shape, scale and offset."""
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, max_d))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([0.1, 1.0, 5.0]))
    offset = draw(st.sampled_from([0.0, 1.0, -3.0]))
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 2.0, size=d) * scale + offset
    Xt = rng.standard_normal((draw(st.integers(1, 8)), d)) * scale + offset
    return X, Xt


kernels = st.sampled_from(PSD_KERNELS)
gammas = st.sampled_from([0.05, 0.3, 1.0])


def centring(n):
    return np.eye(n) - np.ones((n, n)) / n


def spectrum(K):
    w, V = np.linalg.eigh(K)
    return w[::-1], V[:, ::-1]


def n_clear(w, scale, max_k=4, gap=GAP, floor=1e-5):
    """Number of leading components that are clearly positive (> floor * scale,
    scale being the size of the uncentred Gram matrix) and separated from their
    neighbours by a relative gap > ``gap``."""
    k = 0
    for ll in range(min(max_k, len(w) - 1)):
        if w[ll] <= floor * scale or (w[ll] - w[ll + 1]) <= gap * w[ll]:
            break
        k = ll + 1
    return k


def n_significant(w, scale, max_k=4, floor=1e-5):
    return int(min(max_k, np.sum(w > floor * scale)))


def gram_scale(K):
    return K.shape[0] * np.abs(K).max()


def signs_between(A, B):
    s = np.sign(np.sum(A * B, axis=0))
    s[s == 0] = 1
    return s


def assert_equal_up_to_sign(A, B, rtol=1e-7, signs=None, scale=None):
    """Columns of A equal those of B up to a sign, within ``rtol`` times ``scale``
    (a number or one per column; default and floor: the largest entry of B)."""
    A, B = np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    assert A.shape == B.shape
    if signs is None:
        signs = signs_between(A, B)
    tol = rtol * np.maximum(np.abs(B).max(), 0.0 if scale is None else scale)
    err = np.abs(A * signs - B).max(axis=0) if A.size else np.zeros(A.shape[1])
    assert np.all(err <= np.maximum(tol, 1e-300)), (
        f"max abs errors per column {err}, tolerances {tol}\nA*signs={A * signs}\nB={B}"
    )
    return signs


def projection_scale(Kt, est):
    """Cauchy-Schwarz bound ``max_t ||K_t[t]|| ||alpha_l||`` of each component's
    projections: round-off in ``transform`` is relative to it (a new point far
    from the data has tiny scores, made of exponentially small kernel values
    times eigenvector entries that are only accurate to eps * ||v_l||)."""
    return np.linalg.norm(Kt, axis=1).max() / np.sqrt(est.eigenvalues_)


def hand_centred(kernel, X, gamma):
    K = numpy_gram(kernel, X, X, gamma)
    H = centring(X.shape[0])
    return K, H @ K @ H


def usable(kernel, X):
    if kernel == "cosine":
        assume(np.all(np.linalg.norm(X, axis=1) > 1e-3))
    return True


# ---------------------------------------------------------------- properties


@given(data=datasets(), kernel=kernels, gamma=gammas)
def test_fit_transform_equals_fit_then_transform(data, kernel, gamma):
    X, _ = data
    usable(kernel, X)
    K, Kc = hand_centred(kernel, X, gamma)
    k = n_significant(spectrum(Kc)[0], gram_scale(K))
    assume(k >= 1)
    est = KernelPCA(n_components=k, **est_params(kernel, gamma))
    Z1 = est.fit_transform(X)
    Z2 = KernelPCA(n_components=k, **est_params(kernel, gamma)).fit(X).transform(X)
    Z3 = est.transform(X)
    scale = np.abs(Z1).max()
    assert_allclose(Z2, Z1, rtol=0, atol=1e-6 * scale)
    assert_allclose(Z3, Z1, rtol=0, atol=1e-6 * scale)


@given(data=datasets(), kernel=kernels, gamma=gammas)
def test_transform_one_row_equals_batch_row(data, kernel, gamma):
    """(docs/math.md, "Centring in feature space"): new rows are centred by the
    TRAINING mean, so a row's projection does not depend on the other rows of the batch."""
    X, Xt = data
    usable(kernel, X)
    usable(kernel, Xt)
    K, Kc = hand_centred(kernel, X, gamma)
    k = n_significant(spectrum(Kc)[0], gram_scale(K))
    assume(k >= 1)
    est = KernelPCA(n_components=k, **est_params(kernel, gamma)).fit(X)
    batch = est.transform(Xt)
    scale = max(np.abs(batch).max(), np.abs(est.transform(X)).max())
    for i in range(Xt.shape[0]):
        one = est.transform(Xt[i : i + 1])
        assert one.shape == (1, batch.shape[1])
        assert_allclose(one[0], batch[i], rtol=0, atol=1e-9 * scale)
    # and a batch of the same row repeated gives that row each time
    rep = est.transform(np.repeat(Xt[:1], 3, axis=0))
    assert_allclose(rep, np.repeat(batch[:1], 3, axis=0), rtol=0, atol=1e-9 * scale)


@given(data=datasets(), kernel=kernels, gamma=gammas, seed=st.integers(0, 2**16))
def test_transform_matches_spec_formula(data, kernel, gamma, seed):
    """y_l(t) = sum_i alpha_li K~_t[t, i] with K~_t centred as in
    (docs/math.md, "Centring in feature space")."""
    X, Xt = data
    usable(kernel, X)
    usable(kernel, Xt)
    K, Kc = hand_centred(kernel, X, gamma)
    w, V = spectrum(Kc)
    k = n_clear(w, gram_scale(K))
    assume(k >= 1)
    n, m = X.shape[0], Xt.shape[0]
    Kt = numpy_gram(kernel, Xt, X, gamma)
    one_n = np.full((n, n), 1.0 / n)
    one_mn = np.full((m, n), 1.0 / n)
    Kt_c = Kt - one_mn @ K - Kt @ one_n + one_mn @ K @ one_n
    expected = Kt_c @ (V[:, :k] / np.sqrt(w[:k]))
    est = KernelPCA(n_components=k, **est_params(kernel, gamma)).fit(X)
    assert_allclose(est.eigenvalues_, w[:k], rtol=1e-7, atol=1e-10 * w[0])
    signs = assert_equal_up_to_sign(est.eigenvectors_, V[:, :k], rtol=1e-6)
    assert_equal_up_to_sign(est.transform(Xt), expected, rtol=1e-6, signs=signs,
                            scale=projection_scale(Kt_c, est))


@given(data=datasets(), kernel=kernels, gamma=gammas)
def test_centred_eigenvalues_equal_numpy(data, kernel, gamma):
    X, _ = data
    usable(kernel, X)
    K, Kc = hand_centred(kernel, X, gamma)
    scale = gram_scale(K)
    w = np.linalg.eigvalsh(Kc)[::-1]
    assume(w[0] > 1e-8 * scale)
    est = KernelPCA(**est_params(kernel, gamma)).fit(X)  # n_components=None
    mu = est.eigenvalues_
    assert np.all(mu > 0)
    assert np.all(np.diff(mu) <= 0)
    # every eigenvalue clearly above round-off is kept, with the right value
    tol = 1e-11 * scale
    kept = w[w > 1e-8 * scale]
    assert mu.size >= kept.size
    assert_allclose(mu[: kept.size], kept, rtol=1e-7, atol=tol)
    assert_allclose(mu, w[: mu.size], rtol=0, atol=tol)
    # centred training scores have zero mean (the feature-space centre)
    Z = est.fit_transform(X)[:, : kept.size]
    assert_allclose(Z.mean(axis=0), 0, atol=1e-8 * np.sqrt(w[0]))


@given(data=datasets(), kernel=kernels, gamma=gammas)
def test_explained_variance_ratio(data, kernel, gamma):
    X, _ = data
    usable(kernel, X)
    K, Kc = hand_centred(kernel, X, gamma)
    assume(np.trace(Kc) > 1e-8 * gram_scale(K))  # not numerically constant in feature space
    est = KernelPCA(n_components=3, **est_params(kernel, gamma)).fit(X)
    assert_allclose(est.explained_variance_ratio_, est.eigenvalues_ / np.trace(Kc), rtol=1e-9,
                    atol=1e-12)
    assert_allclose(est.explained_variance_, est.eigenvalues_ / X.shape[0], rtol=1e-12)
    full = KernelPCA(**est_params(kernel, gamma)).fit(X)
    # all components together explain everything (PSD kernel, up to round-off)
    assert full.explained_variance_ratio_.sum() == pytest.approx(1.0, abs=1e-6)


def test_explained_variance_ratio_of_feature_space_constant_data():
    """Rows that are positive multiples of one vector are all the same point for
    the cosine kernel: the centred Gram matrix is zero up to round-off. Whatever
    round-off eigenvalues are reported, they are fractions of the total variance:
    each ratio lies in [0, 1] and they sum to at most 1."""
    rng = np.random.RandomState(0)
    for _ in range(30):
        X = rng.standard_normal((1, 3)) * rng.uniform(0.5, 2.0, size=(6, 1))
        for nc in (None, 3):
            est = KernelPCA(n_components=nc, kernel="cosine").fit(X)
            r = est.explained_variance_ratio_
            assert np.all(est.eigenvalues_ <= 1e-12 * X.shape[0]), est.eigenvalues_
            assert np.all((r >= 0) & (r <= 1)), (X.tolist(), nc, est.eigenvalues_, r)
            assert r.sum() <= 1 + 1e-9, (X.tolist(), nc, est.eigenvalues_, r)


@given(data=datasets(min_n=8), kernel=kernels, gamma=gammas,
       fraction=st.floats(0.05, 0.995))
def test_float_n_components_fewest_reaching_fraction(data, kernel, gamma, fraction):
    X, _ = data
    usable(kernel, X)
    K, Kc = hand_centred(kernel, X, gamma)
    w = np.linalg.eigvalsh(Kc)[::-1]
    assume(w[0] > 1e-8 * gram_scale(K))
    cum = np.cumsum(w) / np.trace(Kc)
    assume(np.min(np.abs(cum - fraction)) > 1e-6)  # no tie at the boundary
    expected = int(np.argmax(cum >= fraction)) + 1
    for solver in ("dense", "arpack"):
        est = KernelPCA(n_components=fraction, eigen_solver=solver, random_state=0,
                        **est_params(kernel, gamma)).fit(X)
        assert est.eigenvalues_.size == expected, solver
        assert est.explained_variance_ratio_.sum() >= fraction
        assert est.explained_variance_ratio_[:-1].sum() < fraction
        assert est.transform(X[:2]).shape == (2, expected)


@given(data=datasets(), kernel=kernels, gamma=gammas)
def test_scores_norms_equal_eigenvalues(data, kernel, gamma):
    """||y_l||^2 over the training data = mu_l, and different components are orthogonal."""
    X, _ = data
    usable(kernel, X)
    K, Kc = hand_centred(kernel, X, gamma)
    assume(np.linalg.eigvalsh(Kc)[-1] > 1e-8 * gram_scale(K))
    est = KernelPCA(**est_params(kernel, gamma))
    Z = est.fit_transform(X)
    mu = est.eigenvalues_
    G = Z.T @ Z
    assert_allclose(np.diag(G), mu, rtol=1e-8, atol=1e-10 * mu[0])
    assert_allclose(G - np.diag(np.diag(G)), 0, atol=1e-8 * mu[0])
    Zt = est.transform(X)
    big = mu > 1e-4 * mu[0]
    assert_allclose((Zt**2).sum(axis=0)[big], mu[big], rtol=1e-6)


@given(data=datasets(min_n=8), kernel=kernels, gamma=gammas, seed=st.integers(0, 2**16))
def test_permuting_training_rows_permutes_scores(data, kernel, gamma, seed):
    X, Xt = data
    usable(kernel, X)
    K, Kc = hand_centred(kernel, X, gamma)
    k = n_clear(spectrum(Kc)[0], gram_scale(K))
    assume(k >= 1)
    perm = np.random.RandomState(seed).permutation(X.shape[0])
    a = KernelPCA(n_components=k, **est_params(kernel, gamma))
    b = KernelPCA(n_components=k, **est_params(kernel, gamma))
    Za, Zb = a.fit_transform(X), b.fit_transform(X[perm])
    assert_allclose(b.eigenvalues_, a.eigenvalues_, rtol=1e-8)
    signs = assert_equal_up_to_sign(Zb, Za[perm], rtol=1e-6)
    scale = projection_scale(numpy_gram(kernel, Xt, X, gamma), a)
    assert_equal_up_to_sign(b.transform(Xt), a.transform(Xt), rtol=1e-6, signs=signs,
                            scale=scale)


@given(data=datasets(min_n=8), gamma=gammas, seed=st.integers(0, 2**16),
       shift=st.floats(-50, 50))
def test_rbf_invariant_under_rotation_and_translation(data, gamma, seed, shift):
    X, Xt = data
    d = X.shape[1]
    Q = ortho_group.rvs(d, random_state=seed) if d > 1 else np.array([[-1.0]])
    t = np.random.RandomState(seed).standard_normal(d) * shift
    K, Kc = hand_centred("rbf", X, gamma)
    k = n_clear(spectrum(Kc)[0], gram_scale(K))
    assume(k >= 1)
    a = KernelPCA(n_components=k, kernel="rbf", gamma=gamma)
    b = KernelPCA(n_components=k, kernel="rbf", gamma=gamma)
    Za = a.fit_transform(X)
    Zb = b.fit_transform(X @ Q + t)
    assert_allclose(b.eigenvalues_, a.eigenvalues_, rtol=1e-6)
    signs = assert_equal_up_to_sign(Zb, Za, rtol=1e-5)
    assert_equal_up_to_sign(b.transform(Xt @ Q + t), a.transform(Xt), rtol=1e-5, signs=signs,
                            scale=projection_scale(k_rbf(Xt, X, gamma), a))
    # the median heuristic only sees distances: the same gamma_
    ga = KernelPCA(n_components=1, kernel="rbf", gamma="median").fit(X).gamma_
    gb = KernelPCA(n_components=1, kernel="rbf", gamma="median").fit(X @ Q + t).gamma_
    assert gb == pytest.approx(ga, rel=1e-6)
    # and matches the median of the pairwise distances: gamma = 1 / (2 sigma^2)
    d_ij = cdist(X, X)[np.triu_indices(X.shape[0], 1)]
    assert ga == pytest.approx(1.0 / (2.0 * np.median(d_ij) ** 2), rel=1e-9)


@given(data=datasets(min_n=8), kernel=st.sampled_from(["linear", "rbf", "poly", "laplacian"]),
       gamma=gammas)
def test_float32_close_to_float64(data, kernel, gamma):
    X, Xt = data
    K, Kc = hand_centred(kernel, X, gamma)
    k = n_clear(spectrum(Kc)[0], gram_scale(K), gap=5e-2, floor=1e-2)
    assume(k >= 1)
    e64 = KernelPCA(n_components=k, **est_params(kernel, gamma))
    e32 = KernelPCA(n_components=k, **est_params(kernel, gamma))
    Z64 = e64.fit_transform(X)
    Z32 = e32.fit_transform(X.astype(np.float32))
    T64 = e64.transform(Xt)
    T32 = e32.transform(Xt.astype(np.float32))
    assert Z32.dtype == np.float32 and T32.dtype == np.float32
    assert e32.eigenvalues_.dtype == np.float32
    signs = assert_equal_up_to_sign(Z32, Z64, rtol=1e-3)
    # relative to the largest score (training scores included)
    assert_equal_up_to_sign(T32, T64, rtol=1e-3, signs=signs, scale=np.abs(Z64).max())
    assert_allclose(e32.eigenvalues_, e64.eigenvalues_, rtol=1e-3, atol=1e-4 * e64.eigenvalues_[0])


@given(data=datasets(), kernel=kernels, gamma=gammas)
def test_uncentred_equals_numpy(data, kernel, gamma):
    X, Xt = data
    usable(kernel, X)
    usable(kernel, Xt)
    K = numpy_gram(kernel, X, X, gamma)
    w, V = spectrum(K)
    k = n_clear(w, gram_scale(K))
    assume(k >= 1)
    est = KernelPCA(n_components=k, center=False, **est_params(kernel, gamma))
    Z = est.fit_transform(X)
    assert_allclose(est.eigenvalues_, w[:k], rtol=1e-8, atol=1e-10 * w[0])
    signs = assert_equal_up_to_sign(est.eigenvectors_, V[:, :k], rtol=1e-6)
    assert_equal_up_to_sign(Z, V[:, :k] * np.sqrt(w[:k]), rtol=1e-6, signs=signs)
    Kt = numpy_gram(kernel, Xt, X, gamma)
    assert_equal_up_to_sign(est.transform(Xt), Kt @ V[:, :k] / np.sqrt(w[:k]), rtol=1e-6,
                            signs=signs, scale=projection_scale(Kt, est))
    # ratio is relative to the uncentred total, trace(K)
    assert_allclose(est.explained_variance_ratio_, w[:k] / np.trace(K), rtol=1e-8)


@given(data=datasets(min_n=30, max_n=60), kernel=kernels, gamma=gammas,
       solver=st.sampled_from(["arpack", "randomized"]))
def test_iterative_solvers_match_numpy(data, kernel, gamma, solver):
    X, Xt = data
    usable(kernel, X)
    K, Kc = hand_centred(kernel, X, gamma)
    w, V = spectrum(Kc)
    k = n_clear(w, gram_scale(K), max_k=3, gap=1e-2)
    assume(k >= 1)
    if solver == "randomized":
        # subspace iteration converges like (mu_{k+p+1} / mu_k)^(2q+1): a documented
        # approximation, so only compare where the spectrum decays past the subspace
        assume(w[min(len(w) - 1, k + 10)] < 0.3 * w[k - 1])
    est = KernelPCA(n_components=k, eigen_solver=solver, random_state=0,
                    **est_params(kernel, gamma)).fit(X)
    assert est.eigen_solver_ == solver
    assert_allclose(est.eigenvalues_, w[:k], rtol=1e-6)
    assert_equal_up_to_sign(est.eigenvectors_, V[:, :k], rtol=1e-4)


@given(data=datasets(), gamma=gammas)
def test_kernel_object_equals_named_kernel(data, gamma):
    X, Xt = data
    K, Kc = hand_centred("rbf", X, gamma)
    k = n_clear(spectrum(Kc)[0], gram_scale(K))
    assume(k >= 1)
    ref = KernelPCA(n_components=k, kernel="rbf", gamma=gamma)
    Zr = ref.fit_transform(X)
    est = KernelPCA(n_components=k, kernel=kpca.kernels.RBF(gamma=gamma))
    signs = assert_equal_up_to_sign(est.fit_transform(X), Zr, rtol=1e-6)
    assert_equal_up_to_sign(est.transform(Xt), ref.transform(Xt), rtol=1e-6, signs=signs,
                            scale=projection_scale(k_rbf(Xt, X, gamma), ref))
    assert est.gamma_ == gamma


def _rbf_pair(x, y):
    """Per-pair callable: two 1-D rows -> float."""
    return float(np.exp(-0.3 * np.sum((x - y) ** 2)))


def _rbf_block_only(A, B):
    """Block callable that only accepts 2-D blocks (cdist rejects 1-D rows)."""
    return np.exp(-0.3 * cdist(A, B, "sqeuclidean"))


def _rbf_block_or_pair(A, B):
    """Callable that works on blocks and on 1-D rows."""
    A, B = np.asarray(A), np.asarray(B)
    if A.ndim == 1:
        return _rbf_pair(A, B)
    return np.exp(-0.3 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))


@pytest.mark.parametrize("func", [_rbf_pair, _rbf_block_or_pair, _rbf_block_only])
def test_callable_kernels_equal_named_kernel(func):
    """Per-pair and block callables (the docstring: a callable that accepts two 2-D
    blocks is evaluated block-wise) give the named kernel's result."""
    rng = np.random.RandomState(0)
    X, Xt = rng.standard_normal((25, 3)), rng.standard_normal((5, 3))
    ref = KernelPCA(n_components=3, kernel="rbf", gamma=0.3)
    est = KernelPCA(n_components=3, kernel=func)
    signs = assert_equal_up_to_sign(est.fit_transform(X), ref.fit_transform(X), rtol=1e-6)
    assert_equal_up_to_sign(est.transform(Xt), ref.transform(Xt), rtol=1e-6, signs=signs,
                            scale=projection_scale(k_rbf(Xt, X, 0.3), ref))


@given(data=datasets(min_n=8), seed=st.integers(0, 2**16))
def test_linear_kernel_equals_pca(data, seed):
    """(docs/math.md, "Kernels"): KPCA with the linear kernel is ordinary PCA (scores equal up
    to sign; explained variance ratios equal; lambda_l = mu_l / n)."""
    from sklearn.decomposition import PCA

    X, Xt = data
    K, Kc = hand_centred("linear", X, None)
    w = spectrum(Kc)[0]
    k = n_clear(w, gram_scale(K), max_k=min(4, X.shape[1]))
    assume(k >= 1)
    solver = ["dense", "arpack", "randomized", "krylov"][seed % 4]
    est = KernelPCA(n_components=k, kernel="linear", eigen_solver=solver, random_state=seed)
    pca = PCA(n_components=k, svd_solver="full")
    Z, Zp = est.fit_transform(X), pca.fit_transform(X)
    signs = assert_equal_up_to_sign(Z, Zp, rtol=1e-6)
    assert_equal_up_to_sign(est.transform(Xt), pca.transform(Xt), rtol=1e-6, signs=signs,
                            scale=np.abs(Zp).max())
    assert_allclose(est.explained_variance_ratio_, pca.explained_variance_ratio_, rtol=1e-6)
    n = X.shape[0]
    assert_allclose(est.explained_variance_, pca.explained_variance_ * (n - 1) / n, rtol=1e-6)


def _counting_rbf():
    """Block callable RBF kernel that counts the kernel entries it evaluates."""
    import threading

    count = [0]
    lock = threading.Lock()  # blocks may be evaluated by several threads

    def k(A, B):
        A, B = np.atleast_2d(A), np.atleast_2d(B)
        with lock:
            count[0] += A.shape[0] * B.shape[0]
        return np.exp(-0.3 * cdist(A, B, "sqeuclidean"))

    return k, count


@pytest.mark.parametrize("solver, memory_limit", [("dense", None), ("arpack", None),
                                                  ("krylov", None), ("krylov", "3.3MB")])
def test_fit_transform_does_not_evaluate_the_kernel_twice(solver, memory_limit):
    """fit_transform returns sqrt(mu_l) v_l: exactly the kernel work of fit, not
    fit followed by transform (which evaluates another n x n kernel matrix)."""
    X = np.random.RandomState(0).standard_normal((600, 3))
    n = X.shape[0]
    params = dict(n_components=3, eigen_solver=solver, random_state=0,
                  memory_limit=memory_limit)
    kf, count_fit = _counting_rbf()
    KernelPCA(kernel=kf, **params).fit(X)
    kft, count_ft = _counting_rbf()
    est = KernelPCA(kernel=kft, **params)
    Z = est.fit_transform(X)
    assert count_ft[0] == count_fit[0]
    if solver != "krylov":
        # the Gram matrix once, plus O(n) for the diagonal and the callable's probe
        assert count_fit[0] <= n * n + 3 * n
    elif memory_limit is not None:
        # a budget below the Gram matrix: the tiles that do not fit are recomputed on
        # every pass (the same passes in fit and fit_transform)
        assert count_fit[0] > 1.25 * n * n
    # the counter does see transform's work, and the scores are the same
    before = count_ft[0]
    assert_allclose(est.transform(X), Z, atol=1e-6 * np.abs(Z).max())
    assert count_ft[0] - before == n * n
