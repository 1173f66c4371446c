"""The unsupervised choice of gamma and of the kernel: held-out reconstruction error in
input space through the learned pre-image, its ridge penalty chosen by GCV
(kpca.selection.reconstruction_error, the default of select_kernel without labels;
docs/math.md, "Choosing gamma and the kernel without labels").

The references are dense NumPy computations written here from the definitions
(centred kernel matrix, numpy.linalg.eigh, ridge solves), not kpca's code paths.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from sklearn.model_selection import KFold

import kpca
from kpca.preimage import gcv_ridge_preimage
from kpca.selection import reconstruction_error, select_kernel


# ----------------------------------------------------------------- dense references
def _rbf(A, B, gamma):
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(d, 0.0))


def _linear(A, B, gamma):
    return A @ B.T


def _alpha_grid(s_max, mean_eig, m):
    """The documented GCV grid: sqrt(eps) s_max to 10 mean eigenvalue, N a decade."""
    per = kpca.get_config()["preimage_gcv_points_per_decade"]
    low = np.sqrt(np.finfo(float).eps) * s_max
    high = max(10.0 * mean_eig, 10.0 * low)
    return np.geomspace(low, high, int(np.ceil(per * np.log10(high / low))) + 1)


def _dense_gcv(K, X, alphas):
    """GCV(alpha) = m ||(I - H) Xc||^2 / (tr(I - H) - 1)^2 by one solve per alpha."""
    m = K.shape[0]
    Xc = X - X.mean(0)
    out = []
    for a in alphas:
        H = K @ np.linalg.inv(K + a * np.eye(m))
        rss = np.sum((Xc - H @ Xc) ** 2)
        dof = m - np.trace(H) - 1.0
        out.append(m * rss / dof ** 2 if dof > 0 else np.inf)
    return np.array(out)


def _spectral_gcv(s, V, X, alphas):
    """The same GCV from K_Y = V diag(s) V^T (checked against _dense_gcv above)."""
    m = len(s)
    q2 = ((V.T @ (X - X.mean(0))) ** 2).sum(1)
    F = np.asarray(alphas)[:, None] / (s[None, :] + np.asarray(alphas)[:, None])
    dof = F.sum(1) - 1.0
    with np.errstate(divide="ignore"):
        return np.where(dof > 0, m * ((F * F) @ q2) / dof ** 2, np.inf)


def _dense_criterion(X, kernel, gamma, k, folds):
    """The held-out reconstruction error of one candidate, from the definitions."""
    errs = []
    for tr, te in folds:
        Xt, Xe = X[tr], X[te]
        K = kernel(Xt, Xt, gamma)
        r, g = K.mean(0), K.mean()
        w, U = np.linalg.eigh(K - r[None, :] - r[:, None] + g)
        w, U = w[::-1][:k], U[:, ::-1][:, :k]
        Y = U * np.sqrt(w)                                  # training scores
        Ke = kernel(Xe, Xt, gamma)
        Ye = (Ke - Ke.mean(1)[:, None] - r[None, :] + g) @ U / np.sqrt(w)
        KY = kernel(Y, Y, gamma)                            # the fitted kernel on scores
        s, V = np.linalg.eigh(KY)
        s = np.maximum(s, 0.0)
        alphas = _alpha_grid(s.max(), s.sum() / len(tr), len(tr))
        a = alphas[int(np.argmin(_spectral_gcv(s, V, Xt, alphas)))]
        mu = Xt.mean(0)
        C = V @ ((V.T @ (Xt - mu)) / (s + a)[:, None])
        errs.append(np.mean((Xe - mu - kernel(Ye, Y, gamma) @ C) ** 2))
    return float(np.mean(errs))


def _helix(n=300, seed=1):
    """A noisy helix: a curve whose first RBF component follows the arc length for a
    range of gamma only (too small: the score kernel is too smooth to map one
    coordinate back to the turns; too large: the component breaks into pieces)."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 3 * np.pi, n)
    return np.c_[np.cos(t), np.sin(t), 0.3 * t] + 0.05 * rng.normal(size=(n, 3))


# ------------------------------------------------------------------------ the penalty
def test_gcv_ridge_preimage_is_the_dense_gcv_minimiser():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(60, 2))
    X = np.c_[np.sin(Y[:, 0]), Y[:, 1] ** 2, Y.sum(1)] + 0.1 * rng.normal(size=(60, 3)) + 5
    from kpca.kernels import RBF

    ker = RBF(gamma=0.5)
    fit = gcv_ridge_preimage(ker, Y, X)
    K = _rbf(Y, Y, 0.5)
    s = np.linalg.eigvalsh(K)
    np.testing.assert_allclose(fit.alphas, _alpha_grid(s.max(), s.sum() / 60, 60),
                               rtol=1e-10)
    # the dense inverse is accurate where K + alpha I is well conditioned
    ok = fit.alphas > 1e-7 * s.max()
    dense = _dense_gcv(K, X, fit.alphas[ok])
    np.testing.assert_allclose(fit.gcv[ok], dense, rtol=1e-6)
    assert fit.alpha == fit.alphas[ok][np.argmin(dense)]
    assert np.all(fit.gcv[~ok] > fit.gcv.min())
    w, V = np.linalg.eigh(K)
    np.testing.assert_allclose(_spectral_gcv(np.maximum(w, 0), V, X, fit.alphas[ok]), dense,
                               rtol=1e-6)  # the reference used by the tests below
    assert 0 < np.argmin(fit.gcv) < len(fit.gcv) - 1  # an interior choice here
    np.testing.assert_allclose(fit.intercept, X.mean(0))
    C = np.linalg.solve(K + fit.alpha * np.eye(60), X - X.mean(0))
    np.testing.assert_allclose(fit.dual_coef, C, rtol=1e-6, atol=1e-9)
    # a fixed penalty: that one, GCV evaluated there
    fixed = gcv_ridge_preimage(ker, Y, X, alpha=0.3)
    assert fixed.alpha == 0.3
    np.testing.assert_allclose(fixed.gcv, _dense_gcv(K, X, [0.3]), rtol=1e-8)


def test_gcv_penalty_grows_with_the_noise():
    """GCV's penalty follows the data: the noisier the targets, the smoother the map."""
    from kpca.kernels import RBF

    rng = np.random.default_rng(1)
    Y = rng.uniform(-2, 2, size=(150, 1))
    E = rng.normal(size=(150, 2))
    chosen = [gcv_ridge_preimage(RBF(gamma=1.0), Y,
                                 np.c_[np.sin(2 * Y[:, 0]), np.cos(Y[:, 0])] + sd * E).alpha
              for sd in (0.01, 0.1, 1.0)]
    assert chosen[0] < chosen[1] < chosen[2]


# ----------------------------------------------------------------- known answers
def test_the_dense_grid_best_gamma_is_found():
    """Known answer: the best gamma of a dense grid (25 values, 8 a decade, the
    criterion computed from its definition in NumPy) is interior; select_kernel on
    every 3rd value lands on the grid value nearest to it or a neighbour, with the same
    errors (to 2e-3: where GCV's penalty is at the rounding level of K_Y, the map is
    sensitive to the eigensolver's rounding at ~1e-4)."""
    X = _helix()
    folds = list(KFold(5, shuffle=True, random_state=0).split(X))
    dense = np.geomspace(0.01, 10, 25)
    ref = np.array([_dense_criterion(X, _rbf, g, 1, folds) for g in dense])
    best = int(np.argmin(ref))
    assert 3 <= best <= len(dense) - 4, ref  # interior, by a margin: a known answer
    # a clear optimum: the ends are much worse
    assert ref[best] < 0.6 * min(ref[0], ref[-1])
    coarse = dense[::3]
    res = select_kernel(X, candidates={"kernel": ["rbf"], "gamma": list(coarse)},
                        n_components=1, cv=5, random_state=0)
    got = {r["params"]["gamma"]: r["score"] for r in res.rows}
    np.testing.assert_allclose([got[g] for g in coarse], ref[::3], rtol=2e-3)
    nearest = int(np.argmin(np.abs(np.log(coarse) - np.log(dense[best]))))
    chosen = list(coarse).index(res.best_params["gamma"])
    assert abs(chosen - nearest) <= 1, (res.best_params, dense[best])


def test_kernel_choice_rbf_on_a_curve_linear_on_a_plane():
    """One kernel is clearly right. A helix with one component: the RBF kernel's first
    component follows the curve, linear PCA's is the axis and loses the turns. Noisy
    points on a plane in 8 dimensions with two components: linear PCA's
    reconstruction is the right one, a large gamma or a cubic kernel is not (a small
    gamma is nearly linear and may tie)."""
    X = _helix()
    cands = [{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": [0.1, 0.3, 1.0]}]
    res = select_kernel(X, candidates=cands, n_components=1, cv=5)
    by = {r["params"].get("gamma", "linear"): r["score"] for r in res.rows}
    assert res.best_params["kernel"] == "rbf"
    assert min(by[g] for g in (0.1, 0.3, 1.0)) < 0.5 * by["linear"]

    rng = np.random.default_rng(2)
    B = np.linalg.qr(rng.normal(size=(8, 2)))[0]
    P = rng.normal(size=(300, 2)) * [3.0, 2.0] @ B.T + 0.1 * rng.normal(size=(300, 8))
    cands = [{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": [0.001, 0.1, 1.0]},
             {"kernel": ["poly"], "degree": [3], "gamma": [0.1]}]
    res = select_kernel(P, candidates=cands, n_components=2, cv=5)
    by = {(r["params"]["kernel"], r["params"].get("gamma")): r["score"] for r in res.rows}
    assert res.best_params in ({"kernel": "linear"}, {"kernel": "rbf", "gamma": 0.001})
    assert by[("linear", None)] < 0.5 * min(by[("rbf", 1.0)], by[("poly", 0.1)])
    # the linear row is PCA's held-out reconstruction error (the projection on the
    # training fold's first two principal axes), up to GCV's small penalty
    folds = list(KFold(5, shuffle=True, random_state=0).split(P))
    pca = []
    for tr, te in folds:
        mu = P[tr].mean(0)
        V = np.linalg.svd(P[tr] - mu, full_matrices=False)[2][:2].T
        pca.append(np.mean((P[te] - mu - (P[te] - mu) @ V @ V.T) ** 2))
    assert by[("linear", None)] == pytest.approx(np.mean(pca), rel=1e-3)


def test_several_k_share_the_fits_and_equal_separate_runs():
    X = _helix(n=150)
    cands = {"kernel": ["rbf"], "gamma": [0.1, 1.0]}
    both = reconstruction_error(X, cands, n_components=[2, 1], cv=3)
    assert both.n_components == [(1, 2), (1, 2)]
    assert both.errors.shape == (2, 2, 3) and both.alphas.shape == (2, 2, 3)
    for j, k in enumerate((1, 2)):
        one = reconstruction_error(X, cands, n_components=k, cv=3)
        # the same to the eigensolvers' rounding (a k-column fit and a 2-column one)
        np.testing.assert_allclose(both.errors[:, j], one.errors[:, 0], rtol=1e-7)
    # two components describe more of a 3-D curve than one
    assert np.all(both.mean()[:, 1] < both.mean()[:, 0])
    assert both.best(0) == {"gamma": 0.1, "kernel": "rbf"} or both.best(0)["gamma"] == 1.0


def test_the_pre_image_subsample_bounds_the_rows_and_is_shared():
    """Above the setting, each fold learns its map from that many training rows, the
    same rows for every candidate; at or above the fold's size the result is the
    exact one."""
    X = _helix(n=120)
    cands = {"kernel": ["rbf"], "gamma": [0.3]}
    exact = reconstruction_error(X, cands, n_components=1, cv=3)
    with kpca.config_context(selection_preimage_rows=80):
        assert np.array_equal(reconstruction_error(X, cands, n_components=1, cv=3).errors,
                              exact.errors)  # 80 training rows a fold: all of them
    with kpca.config_context(selection_preimage_rows=40):
        sub = reconstruction_error(X, cands, n_components=1, cv=3)
        again = reconstruction_error(X, cands, n_components=1, cv=3)
    assert np.array_equal(sub.errors, again.errors)
    assert not np.allclose(sub.errors, exact.errors)


def test_fixed_alpha_is_the_library_pre_image_with_an_intercept():
    """alpha=0.01: the ridge pre-image of KernelPCA(fit_inverse_transform=True) fitted
    on the training rows minus their mean (the intercept), for an RBF kernel (which
    the shift does not change)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = _helix(n=120) + 10.0
    res = reconstruction_error(X, {"kernel": ["rbf"], "gamma": [0.5]}, n_components=2,
                               cv=3, alpha=0.01)
    errs = []
    for tr, te in KFold(3, shuffle=True, random_state=0).split(X):
        pipe = make_pipeline(StandardScaler(with_std=False),
                             kpca.KernelPCA(2, kernel="rbf", gamma=0.5, alpha=0.01,
                                            fit_inverse_transform=True)).fit(X[tr])
        errs.append(np.mean((X[te] - pipe.inverse_transform(pipe.transform(X[te]))) ** 2))
    np.testing.assert_allclose(res.errors[0, 0], errs, rtol=1e-8)
    assert np.all(res.alphas == 0.01)


def test_best_estimator_and_progress(caplog):
    X = _helix(n=120)
    with caplog.at_level(logging.INFO, logger="kpca"):
        res = select_kernel(X, candidates={"kernel": ["rbf"], "gamma": [0.1, 1.0]},
                            n_components=1, cv=3)
    texts = [r.kpca_text for r in caplog.records if getattr(r, "kpca_event", "") == "select"]
    assert texts == [f"candidate {c}/2, fold {f}/3" for c in (1, 2) for f in (1, 2, 3)]
    est = res.best_estimator
    assert est.fit_inverse_transform and est.gamma == res.best_params["gamma"]
    assert est.alpha > 0 and np.isfinite(est.alpha)
    row = [r for r in res.rows if r["rank"] == 1][0]
    assert "alpha" in row and "| alpha |" in res.table()


# ------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("kw, message", [
    ({"candidates": {"kernel": ["rbf"], "gamma": [-1.0]}}, "gamma"),
    ({"candidates": {"kernel": ["rbf"], "gamma": ["sometimes"]}}, "gamma"),
    ({"candidates": {"kernel": ["rbf"], "gama": [1.0]}}, "gama"),
    ({"candidates": [], }, "no candidates"),
    ({"cv": 1}, "cv must be an integer between 2"),
    ({"cv": 1000}, "cv must be an integer between 2"),
    ({"cv": "five"}, "cv must be an integer >= 2 or a cross-validation splitter"),
    ({"alpha": -1.0}, "alpha must be 'gcv' or a number >= 0"),
    ({"alpha": "loo"}, "alpha must be 'gcv' or a number >= 0"),
    ({"n_components": 0}, "n_components must be an integer >= 1"),
    ({"n_components": [1, 0]}, "n_components must be an integer >= 1"),
    ({"n_components": 200}, "smaller than the rows of the smallest training fold"),
])
def test_bad_arguments_are_named(kw, message):
    X = _helix(n=100)
    kw = {"candidates": {"kernel": ["rbf"], "gamma": [1.0]}, **kw}
    with pytest.raises(ValueError, match=message):
        reconstruction_error(X, **kw)
    if "n_components" not in kw or kw["n_components"] != [1, 0]:
        with pytest.raises(ValueError, match=message):
            select_kernel(X, **kw)


def test_bad_inputs_are_refused_and_x_is_not_modified():
    import scipy.sparse as sp

    X = _helix(n=60)
    with pytest.raises(ValueError, match="dense"):
        reconstruction_error(sp.csr_matrix(X), {"kernel": ["linear"]})
    with pytest.raises(ValueError, match="2-D"):
        reconstruction_error(X[:, 0], {"kernel": ["linear"]})
    before = X.copy()
    reconstruction_error(X, {"kernel": ["rbf"], "gamma": [1.0]}, standardize=True, cv=3)
    assert np.array_equal(X, before)


# ----------------------------------------------------------------------------- CLI
def test_cli_select_without_labels_is_the_reconstruction_criterion(tmp_path, capsys):
    from kpca.cli import main

    X = _helix(n=150)
    np.savetxt(tmp_path / "helix.csv", X, delimiter=",")
    code = main(["select", str(tmp_path / "helix.csv"), "--kernels", "linear,rbf",
                 "--gammas", "0.1,10", "-k", "1", "--cv", "3"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lib = select_kernel(X, candidates=[{"kernel": ["linear"]},
                                       {"kernel": ["rbf"], "gamma": [0.1, 10.0]}],
                        n_components=1, cv=3)
    assert lib.table() in out
    assert "generalized cross-validation" in out and "| alpha |" in out
    assert "Best: gamma=0.1, kernel='rbf'" in out
    code = main(["select", str(tmp_path / "helix.csv"), "--kernels", "rbf", "--gammas",
                 "0.1", "-k", "1", "--cv", "3", "--alpha", "0.01"])
    out, err = capsys.readouterr()
    assert code == 0, err and "| 0.01 |" in out
    fixed = select_kernel(X, candidates={"kernel": ["rbf"], "gamma": [0.1]},
                          n_components=1, cv=3, alpha=0.01)
    assert fixed.table() in out
    for bad in ("-1", "often"):
        assert main(["select", str(tmp_path / "helix.csv"), "--alpha", bad]) != 0
        assert "--alpha" in capsys.readouterr().err


def test_cli_bad_gamma_and_folds_are_named(tmp_path, capsys):
    from kpca.cli import main

    np.savetxt(tmp_path / "helix.csv", _helix(n=60), delimiter=",")
    assert main(["select", str(tmp_path / "helix.csv"), "--gammas=-1"]) != 0
    err = capsys.readouterr().err
    assert "gamma=-1.0" in err and "'gamma' parameter" in err and "Traceback" not in err
    assert main(["select", str(tmp_path / "helix.csv"), "--cv", "1"]) != 0
    assert "argument --cv: expected an integer >= 2; got '1'" in capsys.readouterr().err
    assert main(["select", str(tmp_path / "helix.csv"), "--cv", "61"]) != 0
    assert "cv must be an integer between 2 and the number of rows (60), or a " \
        "cross-validation splitter; got 61. (--cv)" in capsys.readouterr().err


def test_auto_components_give_each_candidate_parallel_analysis_k():
    """n_components='auto': each candidate's k is its parallel analysis on all rows
    (four clusters: 3 for RBF with gamma='scale'), and its errors are those of that k."""
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(300, n_features=6, centers=4, cluster_std=1.0, center_box=(-10, 10),
                      random_state=1)
    cands = {"kernel": ["rbf"], "gamma": ["scale"]}
    auto = reconstruction_error(X, cands, n_components="auto", cv=3)
    k = kpca.parallel_analysis(X, kernel="rbf", gamma="scale", random_state=0).n_components
    assert k == 3 and auto.n_components == [(3,)]
    fixed = reconstruction_error(X, cands, n_components=3, cv=3)
    np.testing.assert_array_equal(auto.errors, fixed.errors)


def test_without_room_for_the_kernel_matrix_each_fold_fits_its_rows():
    """When n x n kernel values do not fit in the memory budget, each fold fits the
    estimator on its training rows: the same errors as the shared kernel matrix (to the
    solvers' rounding; GCV's grid keeps the map well conditioned)."""
    X = _helix(n=150)
    cands = {"kernel": ["rbf"], "gamma": [0.1, 1.0, "median"]}
    shared = reconstruction_error(X, cands, n_components=[1, 2], cv=3)
    with kpca.config_context(memory_budget=2 * 8 * 150 * 150 - 1):
        alone = reconstruction_error(X, cands, n_components=[1, 2], cv=3)
    np.testing.assert_allclose(alone.errors, shared.errors, rtol=1e-6)
