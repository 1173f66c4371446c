"""The approximations' error estimate (``estimate_error``) against exact kernel PCA.

The truth is computed here by dense NumPy/SciPy kernel PCA of the whole training set
(scikit-learn's kernel, H K H, ``scipy.linalg.eigh``): the relative errors of the
model's own ``eigenvalues_`` and the principal angles between its training scores
and the exact ones (``scipy.linalg.subspace_angles``).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import eigh, subspace_angles
from sklearn.datasets import load_digits, make_blobs, make_circles
from sklearn.exceptions import NotFittedError
from sklearn.metrics.pairwise import rbf_kernel

from kpca import NystromKernelPCA, RandomFeatureKernelPCA, config_context
from kpca.selection import landmarks_for_tolerance

K = 5  # components compared
ROWS = 500  # rows of the estimate's sub-problem: fewer than n, so it is an estimate


def _dataset(name: str):
    """(X, gamma): three shapes of spectrum (8 blobs; digits; noisy circles)."""
    if name == "blobs":
        X, _ = make_blobs(1200, n_features=10, centers=8, cluster_std=2.0, random_state=0)
        return X, 1.0 / (X.shape[1] * X.var())
    if name == "digits":
        X = load_digits().data[:1200] / 16.0
        return X, 1.0 / (X.shape[1] * X.var())
    X, _ = make_circles(1200, factor=0.3, noise=0.1, random_state=0)
    return X, 2.0


_EXACT: dict = {}


def _exact(name: str, X: np.ndarray, gamma: float, k: int = K):
    """Dense exact KPCA of X: the k leading eigenvalues and eigenvectors of H K H."""
    if name not in _EXACT:
        n = X.shape[0]
        H = np.eye(n) - 1.0 / n
        mu, V = eigh(H @ rbf_kernel(X, gamma=gamma) @ H, subset_by_index=[n - k, n - 1])
        _EXACT[name] = mu[::-1], V[:, ::-1]
    return _EXACT[name]


def _true_error(est, name, X, gamma):
    """The model's relative eigenvalue errors and subspace sines against exact KPCA."""
    mu, V = _exact(name, X, gamma)
    eig = np.abs(est.eigenvalues_[:K] - mu) / mu
    sines = np.sin(subspace_angles(est.transform(X)[:, :K], V))
    return float(eig.max()), float(sines.max())


# landmark counts per dataset: errors from ~1e-1 down to ~1e-5 (circles' spectrum
# decays fastest), away from rounding
COUNTS = {"blobs": (25, 50, 100), "digits": (50, 100, 200), "circles": (20, 50, 100)}


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_nystrom_estimate_tracks_the_exact_error(name):
    # The estimate solves the same approximation (the model's landmarks) on ROWS of
    # the n rows; its relative errors carry the sampling error of a ratio measured on
    # 500 rows. A factor of 3 either way is what the test allows: the errors span
    # four orders of magnitude across these counts, so an estimate off by the
    # approximation's own size (e.g. the model's eigenvalues compared with a 500-row
    # exact KPCA scaled by n / 500, whose sampling error is ~1 / sqrt(500) absolute)
    # fails by far. Uniform landmarks under one seed are nested, so the eigenvalue
    # errors of the fit and of the estimate both decrease with m (interlacing).
    X, gamma = _dataset(name)
    est_eig, est_sin, true_eig, true_sin = [], [], [], []
    for m in COUNTS[name]:
        est = NystromKernelPCA(K, n_landmarks=m, gamma=gamma, random_state=0).fit(X)
        e = est.estimate_error(X, n_rows=ROWS, random_state=0)
        assert e.n_rows == ROWS
        assert e.eigenvalue_error.shape == (K,) and e.subspace_sin.shape == (K,)
        te, ts = _true_error(est, name, X, gamma)
        est_eig.append(e.max_eigenvalue_error)
        est_sin.append(e.max_subspace_sin)
        true_eig.append(te)
        true_sin.append(ts)
        assert te / 3 <= e.max_eigenvalue_error <= 3 * te, (m, e.max_eigenvalue_error, te)
        assert ts / 3 <= e.max_subspace_sin <= 3 * ts, (m, e.max_subspace_sin, ts)
        # Weyl: each eigenvalue error is at most ||E||_2 = kernel_error * mu_1
        mu_s = e.eigenvalue_error  # relative to mu_l <= mu_1: kernel_error bounds the top
        assert mu_s[0] <= e.kernel_error * (1 + 1e-9)
    assert np.all(np.diff(est_eig) < 0) and np.all(np.diff(true_eig) < 0)
    assert np.all(np.diff(est_sin) < 0) and np.all(np.diff(true_sin) < 0)


def test_with_every_row_the_estimate_is_the_fits_error():
    # s >= n: the sub-problem is the fit itself (the same rows, landmarks and
    # centring), so the estimate equals the true error up to rounding
    X, gamma = _dataset("circles")
    X = X[:600]
    est = NystromKernelPCA(K, n_landmarks=30, gamma=gamma, random_state=1).fit(X)
    e = est.estimate_error(X, n_rows=10_000)
    assert e.n_rows == 600
    n = X.shape[0]
    H = np.eye(n) - 1.0 / n
    mu, V = eigh(H @ rbf_kernel(X, gamma=gamma) @ H, subset_by_index=[n - K, n - 1])
    mu, V = mu[::-1], V[:, ::-1]
    np.testing.assert_allclose(e.eigenvalue_error, np.abs(est.eigenvalues_ - mu) / mu,
                               rtol=1e-6)
    true_sin = np.sort(np.sin(subspace_angles(est.transform(X), V)))[::-1]
    np.testing.assert_allclose(e.subspace_sin, true_sin, rtol=1e-5)


def test_random_features_estimate_tracks_the_exact_error():
    # random features: the Monte-Carlo kernel error does not shrink with nested
    # draws, so only the factor is checked, on the eigenvalues (the subspace of 5
    # components with close eigenvalues is the noisier quantity)
    X, gamma = _dataset("circles")
    for D in (50, 400):
        est = RandomFeatureKernelPCA(K, n_features=D, gamma=gamma, random_state=0).fit(X)
        e = est.estimate_error(X, n_rows=ROWS, random_state=0)
        te, _ = _true_error(est, "circles", X, gamma)
        assert te / 3 <= e.max_eigenvalue_error <= 3 * te, (D, e.max_eigenvalue_error, te)
    # with every row the estimate is the fit's error
    est = RandomFeatureKernelPCA(K, n_features=100, gamma=gamma, random_state=0).fit(X[:500])
    e = est.estimate_error(X[:500], n_rows=500)
    n = 500
    H = np.eye(n) - 1.0 / n
    mu = eigh(H @ rbf_kernel(X[:500], gamma=gamma) @ H, eigvals_only=True,
              subset_by_index=[n - K, n - 1])[::-1]
    np.testing.assert_allclose(e.eigenvalue_error, np.abs(est.eigenvalues_ - mu) / mu,
                               rtol=1e-6)


def test_deterministic_given_random_state_and_input_unchanged():
    X, gamma = _dataset("blobs")
    X0 = X.copy()
    est = NystromKernelPCA(K, n_landmarks=40, gamma=gamma, random_state=0).fit(X)
    a = est.estimate_error(X, n_rows=300, random_state=3)
    b = est.estimate_error(X, n_rows=300, random_state=3)
    c = est.estimate_error(X, n_rows=300, random_state=4)
    assert a.as_dict() == b.as_dict()
    assert a.as_dict() != c.as_dict()
    np.testing.assert_array_equal(X, X0)
    # the setting approx_error_rows is the default size of the sub-problem
    with config_context(approx_error_rows=250):
        assert est.estimate_error(X).n_rows == 250


@pytest.mark.parametrize("bad", [1, 0, -5, 2.5, True, "100"])
def test_bad_n_rows_is_refused_naming_it(bad):
    X, gamma = _dataset("circles")
    est = NystromKernelPCA(2, n_landmarks=20, gamma=gamma, random_state=0).fit(X[:200])
    with pytest.raises(ValueError, match="n_rows must be an integer >= 2"):
        est.estimate_error(X[:200], n_rows=bad)


def test_estimate_error_input_checks():
    X, gamma = _dataset("circles")
    with pytest.raises(NotFittedError):
        NystromKernelPCA(2).estimate_error(X)
    est = RandomFeatureKernelPCA(2, n_features=20, gamma=gamma, random_state=0).fit(X[:200])
    with pytest.raises(ValueError, match="features"):
        est.estimate_error(np.ones((50, 3)))
    with pytest.raises(ValueError, match="at least 2 rows"):
        est.estimate_error(X[:1])
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match="estimate_error does not take torch arrays"):
        est.estimate_error(torch.asarray(X[:50]))


def test_landmarks_for_tolerance_recommends_the_smallest_count_that_meets_it():
    # checked against the truth: the recommended count's exact error is within the
    # tolerance and the count before it is not
    # (1e-4 lies between the errors at 50 landmarks, ~1e-3, and at 100, ~1e-5)
    X, gamma = _dataset("circles")
    tol = 1e-4
    rec = landmarks_for_tolerance(X, tol, counts=[100, 10, 20, 50, 400], gamma=gamma,
                                  n_components=K, n_rows=ROWS)
    assert rec.counts == [10, 20, 50, 100]  # ascending, stopped at the first that meets
    assert rec.recommended == 100
    assert max(rec.errors[-1].max_eigenvalue_error, rec.errors[-1].max_subspace_sin) <= tol
    errs = {}
    for m in (50, 100):
        est = NystromKernelPCA(K, n_landmarks=m, gamma=gamma, random_state=0).fit(X)
        errs[m] = max(_true_error(est, "circles", X, gamma))
    assert errs[100] <= tol < errs[50]
    assert "Recommended: 100 landmarks" in rec.table()
    # none meets: no recommendation, every count tried
    rec = landmarks_for_tolerance(X, 1e-6, counts=[10, 20], gamma=gamma, n_components=K,
                                  n_rows=200, criterion="eigenvalues")
    assert rec.recommended is None and rec.counts == [10, 20]
    assert "No count tried meets" in rec.table()


def test_landmarks_for_tolerance_random_features_and_clipping():
    X, gamma = _dataset("circles")
    X = X[:300]
    # Nyström with all n rows as landmarks is exact: the counts are clipped to n
    rec = landmarks_for_tolerance(X, 1e-6, counts=[1000, 5000], gamma=gamma, n_components=3,
                                  n_rows=300, criterion="eigenvalues")
    assert rec.counts == [300] and rec.recommended == 300
    rec = landmarks_for_tolerance(X, 0.5, counts=[20, 200], approximation="random-features",
                                  gamma=gamma, n_components=3, n_rows=300)
    assert rec.approximation == "random-features" and rec.counts[0] == 20
    assert "| features |" in rec.table()


@pytest.mark.parametrize("kwargs, match", [
    ({"tol": 0.0}, "tol must be a number in"),
    ({"tol": 1.5}, "tol must be a number in"),
    ({"tol": 0.1, "approximation": "rff"}, "approximation must be one of"),
    ({"tol": 0.1, "criterion": "max"}, "criterion must be one of"),
    ({"tol": 0.1, "counts": []}, "counts must be a non-empty list"),
    ({"tol": 0.1, "counts": [10, 0]}, "counts must be a non-empty list"),
    ({"tol": 0.1, "n_components": 0}, "n_components must be an integer"),
])
def test_landmarks_for_tolerance_bad_parameters(kwargs, match):
    X, _ = _dataset("circles")
    with pytest.raises(ValueError, match=match):
        landmarks_for_tolerance(X[:100], **kwargs)


@pytest.mark.parametrize("make", [
    lambda: NystromKernelPCA(3, n_landmarks=30, gamma=2.0, random_state=0),
    lambda: RandomFeatureKernelPCA(3, n_features=50, gamma=2.0, random_state=0),
], ids=["nystrom", "random-features"])
def test_sparse_rows_and_a_loaded_model_give_the_same_estimate(make, tmp_path):
    import scipy.sparse as sp

    import kpca

    X, _ = make_circles(400, factor=0.3, noise=0.1, random_state=0)
    est = make().fit(X)
    a = est.estimate_error(X, n_rows=200)
    b = est.estimate_error(sp.csr_matrix(X), n_rows=200)
    np.testing.assert_allclose(b.eigenvalue_error, a.eigenvalue_error, rtol=1e-9)
    np.testing.assert_allclose(b.subspace_sin, a.subspace_sin, rtol=1e-7, atol=1e-12)
    kpca.save(est, tmp_path / "m.kpca")
    assert kpca.load(tmp_path / "m.kpca").estimate_error(X, n_rows=200).as_dict() == a.as_dict()


def test_finite_rank_kernel_is_exact_from_its_rank_on():
    # closed form: the degree-2 polynomial kernel on 2-D rows has a 6-dimensional
    # feature space, so Nyström with >= 6 landmarks in general position reproduces
    # K exactly (errors at rounding level) and with 3 it cannot (rank 3 < 6)
    X, _ = make_circles(300, factor=0.3, noise=0.1, random_state=0)
    errors = {}
    for m in (3, 8):
        est = NystromKernelPCA(3, n_landmarks=m, kernel="poly", degree=2, gamma=1.0,
                               coef0=1.0, random_state=0).fit(X)
        errors[m] = est.estimate_error(X, n_rows=200)
    assert errors[3].max_eigenvalue_error > 1e-3 and errors[3].kernel_error > 1e-3
    assert errors[8].max_eigenvalue_error < 1e-9 and errors[8].max_subspace_sin < 1e-6
    assert errors[8].kernel_error < 1e-9
