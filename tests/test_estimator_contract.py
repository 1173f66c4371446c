"""The one estimator contract (issue 13), checked on all six estimators.

Every estimator -- ``KernelPCA``, ``NystromKernelPCA``, ``RandomFeatureKernelPCA``,
``WeightedKernelPCA``, ``SphericalKernelPCA``, ``AnovaKernelPCA`` -- has the same
fitted attributes, the same transformer, outlier-detector, pre-image, persistence
and command-line behaviour, and passes scikit-learn's estimator checks.

Values are checked against independent NumPy computations
(tests/_contract_reference.py): the model of each estimator written out in
feature space from its definition, never kpca's own outputs.
"""

from __future__ import annotations

import io
import itertools
import json
import zipfile
from functools import partial

import _contract_reference as ref
import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import make_circles
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import kpca
import kpca.io
from kpca import (
    AnovaKernelPCA,
    IncrementalKernelPCA,
    KernelPCA,
    KernelROBPCA,
    NystromKernelPCA,
    RandomFeatureKernelPCA,
    SphericalKernelPCA,
    WeightedKernelPCA,
)

#: rbf coefficient of every kernel configuration, and ANOVA's per-variable one
GAMMA = 0.2
ANOVA_GAMMA = 0.5
#: components of every configuration
K = 3
#: the per-variable scale of the inliers
SCALE = np.array([2.0, 1.0, 0.5])


def make(name: str, **params):
    """A small, fast configuration of each estimator (``params`` override)."""
    est = {
        "exact": lambda: KernelPCA(n_components=K, kernel="rbf", gamma=GAMMA, random_state=0),
        "nystrom": lambda: NystromKernelPCA(n_components=K, n_landmarks=40, kernel="rbf",
                                            gamma=GAMMA, random_state=0),
        "random-features": lambda: RandomFeatureKernelPCA(
            n_components=K, n_features=100, kernel="rbf", gamma=GAMMA, random_state=0),
        # b1=1.25: Campbell weights below 1 on these data (b1=2 leaves them all at 1)
        "weighted": lambda: WeightedKernelPCA(n_components=K, kernel="rbf", gamma=GAMMA,
                                              b1=1.25, random_state=0),
        # a tight Weiszfeld tolerance, so that the reference spatial median agrees to ~1e-10
        "spherical": lambda: SphericalKernelPCA(n_components=K, kernel="rbf", gamma=GAMMA,
                                                robust_tol=1e-10, robust_max_iter=5000,
                                                random_state=0),
        "anova": lambda: AnovaKernelPCA(n_components=K, gamma=ANOVA_GAMMA, random_state=0),
        "robpca": lambda: KernelROBPCA(n_components=K, kernel="rbf", gamma=GAMMA,
                                       random_state=0),
        # exact mode, batches of 25 rows: every fit below adds several batches; a tight
        # residual target (default 1e-8), so that the training rows' stored projections
        # and their recomputed ones agree to ~1e-12 as with the dense batch solver
        "incremental": lambda: IncrementalKernelPCA(n_components=K, kernel="rbf", gamma=GAMMA,
                                                    batch_size=25, mode="exact", tol=1e-12,
                                                    random_state=0),
    }[name]()
    return est.set_params(**params)


NAMES = ["exact", "nystrom", "random-features", "weighted", "spherical", "anova", "robpca",
         "incremental"]
#: estimators whose model is a kernel expansion over the training rows
EXACT_FAMILY = ["exact", "weighted", "spherical", "anova", "robpca", "incremental"]
#: estimators with the 'fixed_point' and 'mds' pre-images (rbf, poly and linear
#: kernels; ANOVA's kernel is none of them: its pre-image is the learned 'ridge' one)
PREIMAGE = ["exact", "weighted", "spherical", "nystrom", "robpca", "incremental"]


def reference(name: str, est, X: np.ndarray) -> ref.Reference:
    """The independent model of a fitted estimator (for Nyström: exact KPCA, valid
    when every training row is a landmark)."""
    rbf = partial(ref.rbf, gamma=GAMMA)
    if name in ("exact", "nystrom", "incremental"):
        return ref.exact(rbf, X, K)
    if name == "weighted":  # the reweighting's fixed point, given its weights
        return ref.weighted(rbf, X, K, est.weights_)
    if name == "spherical":
        return ref.spherical(rbf, X, K)
    if name == "anova":  # KPCA with the ANOVA kernel of the learned weights
        return ref.exact(partial(ref.anova, gamma=ANOVA_GAMMA, beta=est.beta_), X, K)
    if name == "random-features":
        return ref.random_features(X, K, est.random_weights_, est.random_offset_)
    if name == "robpca":
        space = est.subspace_
        return ref.expansion(rbf, X, space.center, space.coef, space.score_variance)
    raise AssertionError(name)


# ----------------------------------------------------------------------------- data
@pytest.fixture(scope="module")
def data():
    """Training rows (anisotropic Gaussian) and new rows, three of them far away."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3)) * SCALE
    T = rng.normal(size=(15, 3)) * SCALE
    T[-3:] = 6.0 * np.array([[1.0, 1.0, -1.0], [-1.0, 1.0, 1.0], [1.0, -1.0, 1.0]])
    return X, T


@pytest.fixture(scope="module")
def contaminated():
    """100 Gaussian inliers and 6 planted outliers far away in every variable."""
    rng = np.random.default_rng(1)
    inliers = rng.normal(size=(100, 3)) * SCALE
    outliers = 6.0 * np.array(list(itertools.product([-1.0, 1.0], repeat=3)))[:6]
    X = np.vstack([inliers, outliers])
    is_inlier = np.r_[np.ones(100, dtype=bool), np.zeros(6, dtype=bool)]
    T = rng.normal(size=(12, 3)) * SCALE
    return X, is_inlier, T


@pytest.fixture(scope="module")
def fitted(contaminated):
    """Each configuration fitted once on the contaminated data (read-only in tests)."""
    X = contaminated[0]
    return {name: make(name).fit(X) for name in NAMES}


def _close(got, expected, rtol=1e-6):
    """Agreement relative to the scale of ``expected``."""
    expected = np.asarray(expected, dtype=np.float64)
    np.testing.assert_allclose(got, expected, rtol=rtol,
                               atol=rtol * max(float(np.max(np.abs(expected))), 1e-300))


# ----------------------------------------------------------------------------- attributes
@pytest.mark.parametrize("name", NAMES)
def test_fitted_attributes(name, fitted):
    est = fitted[name]
    assert est.get_params()["contamination"] == "auto"
    assert isinstance(est.n_components_, int) and est.n_components_ == K
    assert est.n_features_in_ == 3
    assert est.kernel_ is not None
    assert isinstance(est.subspace_, kpca.FittedSubspace)
    for attr in ("eigenvalues_", "explained_variance_", "explained_variance_ratio_"):
        assert np.shape(getattr(est, attr)) == (K,), attr
    ev = np.asarray(est.eigenvalues_)
    assert np.all(ev > 0) and np.all(np.diff(ev) <= 1e-12 * ev[0])
    ratio = np.asarray(est.explained_variance_ratio_)
    assert np.all(ratio >= 0) and ratio.sum() <= 1 + 1e-12
    assert est.sd_cutoff_ == pytest.approx(np.sqrt(stats.chi2.ppf(0.975, K)), rel=1e-12)
    assert np.isfinite(est.od_cutoff_) and est.od_cutoff_ > 0
    assert est.offset_ == -1.0


@pytest.mark.parametrize("name", NAMES)
def test_transform_of_training_rows_equals_fit_transform(name, contaminated):
    X = contaminated[0]
    est = make(name)
    Z = est.fit_transform(X)
    assert Z.shape == (X.shape[0], K)
    _close(est.transform(X), Z)


@pytest.mark.parametrize("name", NAMES)
def test_refit_gives_the_same_components_and_signs(name, contaminated, fitted):
    X, _, T = contaminated
    again = make(name).fit(X)
    _close(again.transform(T), fitted[name].transform(T), rtol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_feature_names_and_pandas_output(name, contaminated):
    X = contaminated[0]
    est = make(name).set_output(transform="pandas")
    Z = est.fit_transform(X)
    names = [f"{type(est).__name__.lower()}{i}" for i in range(K)]
    assert list(est.get_feature_names_out()) == names
    assert list(Z.columns) == names
    T = est.transform(X[:5])
    assert list(T.columns) == names
    _close(T.to_numpy(), Z.to_numpy()[:5])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    ("param", "value"),
    [("n_components", -1), ("n_components", 0), ("contamination", 0.7),
     ("contamination", 0.0), ("contamination", -0.1), ("contamination", "most")],
)
def test_invalid_parameters_raise_value_error_naming_them(name, param, value, data):
    est = make(name)
    assert param in est.get_params()
    est.set_params(**{param: value})  # (scikit-learn validates values in fit)
    with pytest.raises(ValueError, match=param):
        est.fit(data[0])


# ----------------------------------------------------------------------------- outliers
@pytest.mark.parametrize("name", [n for n in NAMES if n != "nystrom"])
def test_transform_matches_reference(name, contaminated, fitted):
    X, _, T = contaminated
    est, r = fitted[name], reference(name, fitted[name], X)
    Y = r.project(T)
    if name == "spherical":  # transform normalises by the distance to the centre
        Y = Y / np.sqrt(r.sqdist(T))[:, None]
    got = est.transform(T)
    _close(got, ref.align_signs(got, Y))
    if r.explained_variance is not None:
        _close(est.explained_variance_, r.explained_variance)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "nystrom"])
def test_outlier_scores_match_reference(name, contaminated, fitted):
    X, _, T = contaminated
    est, r = fitted[name], reference(name, fitted[name], X)
    assert est.sd_cutoff_ == pytest.approx(r.sd_cut, rel=1e-10)
    assert est.od_cutoff_ == pytest.approx(r.od_cut, rel=1e-6)
    _close(est.score_distance(T), r.score_distance(T))
    _close(est.orthogonal_distance(T), r.orthogonal_distance(T))
    _close(est.outlier_scores(T), r.outlier_scores(T))
    _close(est.score_samples(T), r.score_samples(T))
    _close(est.score_samples(X), r.score_samples(X))


@pytest.mark.parametrize("name", EXACT_FAMILY)
def test_diagnostics_default_to_the_training_rows(name, contaminated, fitted):
    X = contaminated[0]
    est = fitted[name]
    _close(est.score_distance(), est.score_distance(X))
    _close(est.orthogonal_distance(), est.orthogonal_distance(X))
    _close(est.outlier_scores(), est.outlier_scores(X))


@pytest.mark.parametrize("name", NAMES)
def test_outlier_api_is_consistent(name, contaminated, fitted):
    X, _, T = contaminated
    est = fitted[name]
    rows = np.vstack([X, T])
    s = est.score_samples(rows)
    assert s.shape == (rows.shape[0],) and np.all(np.isfinite(s))
    np.testing.assert_allclose(est.outlier_scores(rows), -s, rtol=1e-10)
    sd, od = est.score_distance(rows), est.orthogonal_distance(rows)
    np.testing.assert_allclose(-s, np.maximum(sd / est.sd_cutoff_, od / est.od_cutoff_),
                               rtol=1e-10)
    d = est.decision_function(rows)
    np.testing.assert_allclose(d, s - est.offset_, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(est.predict(rows), np.where(d >= 0, 1, -1))


def test_nystrom_with_every_row_a_landmark_is_exact_kpca_on_training_rows(data):
    X, _ = data
    est = make("nystrom", n_landmarks=X.shape[0]).fit(X)
    r = reference("nystrom", est, X)
    _close(est.explained_variance_, r.explained_variance)
    got = est.transform(X)
    _close(got, ref.align_signs(got, r.project(X)))
    _close(est.score_samples(X), r.score_samples(X))
    assert est.od_cutoff_ == pytest.approx(r.od_cut, rel=1e-6)


def test_nystrom_with_every_row_a_landmark_is_exact_kpca_on_new_rows(data):
    # new rows (three far away) have a part of phi(t) outside the landmarks' span:
    # exact KPCA counts it in the orthogonal distance
    X, T = data
    est = make("nystrom", n_landmarks=X.shape[0]).fit(X)
    r = reference("nystrom", est, X)
    got = est.transform(T)
    _close(got, ref.align_signs(got, r.project(T)))
    _close(est.score_distance(T), r.score_distance(T))
    _close(est.orthogonal_distance(T), r.orthogonal_distance(T))
    _close(est.score_samples(T), r.score_samples(T))


@pytest.mark.parametrize("contamination", [0.1, 0.5])
@pytest.mark.parametrize("name", NAMES)
def test_contamination_sets_the_offset_to_a_training_quantile(name, contamination,
                                                              contaminated, fitted):
    X, _, T = contaminated
    est = make(name, contamination=contamination).fit(X)
    s = est.score_samples(X)
    # the same model as with contamination='auto': only the offset moves
    _close(s, fitted[name].score_samples(X), rtol=1e-10)
    assert est.offset_ == pytest.approx(np.percentile(s, 100 * contamination), rel=1e-10)
    n_out = int(np.sum(est.predict(X) == -1))
    assert abs(n_out - contamination * X.shape[0]) <= 2
    np.testing.assert_allclose(est.decision_function(T), est.score_samples(T) - est.offset_,
                               rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", NAMES)
def test_planted_outliers_are_found(name, contaminated, fitted):
    X, is_inlier, _ = contaminated
    est = fitted[name]
    assert roc_auc_score(is_inlier, est.score_samples(X)) >= 0.95
    pred = est.predict(X)
    assert np.all(pred[~is_inlier] == -1)  # all six, with contamination='auto'
    assert np.mean(pred[is_inlier] == 1) >= 0.8


@pytest.mark.parametrize("name", NAMES)
def test_outlier_api_in_a_pipeline(name, contaminated):
    X, _, T = contaminated
    pipe = make_pipeline(StandardScaler(), make(name)).fit(X)
    scaler, est = pipe[0], pipe[-1]
    Ts = scaler.transform(T)
    np.testing.assert_array_equal(pipe.predict(T), est.predict(Ts))
    np.testing.assert_allclose(pipe.score_samples(T), est.score_samples(Ts), rtol=1e-12)
    np.testing.assert_allclose(pipe.decision_function(T), est.decision_function(Ts),
                               rtol=1e-12)
    # the same model as the estimator fitted on standardised data by hand
    alone = make(name).fit(StandardScaler().fit_transform(X))
    _close(pipe.score_samples(T), alone.score_samples(Ts), rtol=1e-10)


# ----------------------------------------------------------------------------- pre-images
@pytest.mark.parametrize("method", ["fixed_point", "mds"])
@pytest.mark.parametrize("name", PREIMAGE)
def test_preimages_are_finite_points_of_input_space(name, method, contaminated, fitted):
    _, _, T = contaminated
    est = fitted[name]
    Z = est.denoise(T, method=method)
    assert Z.shape == T.shape and np.all(np.isfinite(Z))
    Z = est.denoise(T, n_components=2, method=method)
    assert Z.shape == T.shape and np.all(np.isfinite(Z))
    Z = est.inverse_transform(est.transform(T), method=method)
    assert Z.shape == T.shape and np.all(np.isfinite(Z))
    # the pre-image lies closer to the fitted subspace than the noisy point
    assert np.median(est.orthogonal_distance(est.denoise(T, method=method))) < np.median(
        est.orthogonal_distance(T))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("method", ["fixed_point", "mds"])
@pytest.mark.parametrize("name", ["exact", "nystrom", "weighted", "spherical"])
def test_linear_kernel_with_every_component_denoises_to_the_point_itself(name, method, data):
    # with the linear kernel and k = n_features the affine subspace theta + span(f_l)
    # is the whole input space: every point is its own projection and pre-image
    X, T = data
    params = dict(kernel="linear", n_components=X.shape[1])
    if name == "nystrom":
        params["n_landmarks"] = X.shape[0]
    est = make(name, **params).fit(X)
    np.testing.assert_allclose(est.denoise(T, method=method), T, rtol=0, atol=1e-8)
    if name != "spherical":  # spherical transform normalises, losing the distance
        np.testing.assert_allclose(est.inverse_transform(est.transform(T), method=method), T,
                                   rtol=0, atol=1e-8)


@pytest.mark.parametrize("method", ["fixed_point", "mds"])
def test_anova_kernel_preimages_point_to_the_learned_one(method, contaminated, fitted):
    # 'fixed_point' and 'mds' invert rbf, poly and linear kernels; the ANOVA kernel's
    # feature-space distances do not determine input-space ones
    _, _, T = contaminated
    est = fitted["anova"]
    with pytest.raises(ValueError, match="ridge"):
        est.denoise(T, method=method)
    with pytest.raises(ValueError, match="ridge"):
        est.inverse_transform(est.transform(T), method=method)


#: estimators without a learned ('ridge') pre-image map: no fit_inverse_transform
NO_RIDGE = ["robpca", "incremental"]


@pytest.mark.parametrize("name", [n for n in EXACT_FAMILY if n not in NO_RIDGE])
def test_ridge_preimage_needs_fit_inverse_transform(name, contaminated, fitted):
    X, _, T = contaminated
    with pytest.raises(ValueError, match="fit_inverse_transform"):
        fitted[name].inverse_transform(fitted[name].transform(T), method="ridge")
    est = make(name, fit_inverse_transform=True).fit(X)
    Z = est.inverse_transform(est.transform(T), method="ridge")
    assert Z.shape == T.shape and np.all(np.isfinite(Z))
    Z = est.denoise(T, method="ridge")
    assert Z.shape == T.shape and np.all(np.isfinite(Z))


@pytest.mark.parametrize("name", NO_RIDGE)
def test_no_learned_preimage_and_says_so(name, contaminated, fitted):
    _, _, T = contaminated
    est = fitted[name]
    assert "fit_inverse_transform" not in est.get_params()
    with pytest.raises(ValueError, match="no learned"):
        est.inverse_transform(est.transform(T), method="ridge")


def test_random_features_have_no_preimage_and_say_which_estimator_has(contaminated, fitted):
    _, _, T = contaminated
    est = fitted["random-features"]
    Y = est.transform(T)
    for call in (lambda: est.inverse_transform(Y), lambda: est.denoise(T),
                 lambda: est.inverse_transform(Y, method="fixed_point"),
                 lambda: est.denoise(T, method="mds")):
        with pytest.raises(ValueError, match="NystromKernelPCA"):
            call()


# ----------------------------------------------------------------------------- persistence
def _assert_same_model(a, b, T):
    assert type(b) is type(a)
    assert b.get_params() == a.get_params()
    np.testing.assert_array_equal(b.transform(T), a.transform(T))
    np.testing.assert_array_equal(b.score_samples(T), a.score_samples(T))
    np.testing.assert_array_equal(b.decision_function(T), a.decision_function(T))
    np.testing.assert_array_equal(b.predict(T), a.predict(T))


@pytest.mark.parametrize("api", ["kpca", "kpca.io"])
@pytest.mark.parametrize("name", NAMES)
def test_save_load_round_trip_is_bit_identical(name, api, tmp_path, contaminated):
    X, _, T = contaminated
    save, load = (kpca.save, kpca.load) if api == "kpca" else (kpca.io.save, kpca.io.load)
    est = make(name, contamination=0.1).fit(X)
    path = tmp_path / "model.kpca"
    save(est, path)
    loaded = load(path)
    _assert_same_model(est, loaded, np.vstack([T, X[-6:]]))
    assert loaded.offset_ == est.offset_


def _rewrite_meta(path, change) -> None:
    """Rewrite the JSON metadata (``__meta__``) of a model archive."""
    with zipfile.ZipFile(path) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    meta = json.loads(str(np.load(io.BytesIO(members["__meta__.npy"]))[()]))
    change(meta)
    buf = io.BytesIO()
    np.save(buf, np.array(json.dumps(meta)))
    members["__meta__.npy"] = buf.getvalue()
    with zipfile.ZipFile(path, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)


@pytest.mark.parametrize("name", NAMES)
def test_load_refuses_another_format_version(name, tmp_path, fitted):
    path = tmp_path / "model.kpca"
    for version in (kpca.io.FORMAT_VERSION + 1, 0):
        kpca.save(fitted[name], path)
        _rewrite_meta(path, lambda m, v=version: m.update(format_version=v))
        with pytest.raises(ValueError, match=rf"(?i)version.*\b{version}\b"):
            kpca.load(path)


# ----------------------------------------------------------------------------- CLI
#: command-line flags of each configuration, and the estimator they stand for
CLI = {
    "exact": (["--kernel", "rbf", "--gamma", str(GAMMA)],
              lambda: KernelPCA(n_components=2, kernel="rbf", gamma=GAMMA, random_state=0)),
    "nystrom": (["--kernel", "rbf", "--gamma", str(GAMMA), "--n-landmarks", "40"],
                lambda: NystromKernelPCA(n_components=2, n_landmarks=40, kernel="rbf",
                                         gamma=GAMMA, random_state=0)),
    "random-features": (["--kernel", "rbf", "--gamma", str(GAMMA), "--n-features", "100"],
                        lambda: RandomFeatureKernelPCA(n_components=2, n_features=100,
                                                       kernel="rbf", gamma=GAMMA,
                                                       random_state=0)),
    "weighted": (["--kernel", "rbf", "--gamma", str(GAMMA)],
                 lambda: WeightedKernelPCA(n_components=2, kernel="rbf", gamma=GAMMA,
                                           random_state=0)),
    "spherical": (["--kernel", "rbf", "--gamma", str(GAMMA)],
                  lambda: SphericalKernelPCA(n_components=2, kernel="rbf", gamma=GAMMA,
                                             random_state=0)),
    "anova": (["--gamma", str(ANOVA_GAMMA)],
              lambda: AnovaKernelPCA(n_components=2, gamma=ANOVA_GAMMA, random_state=0)),
    "robpca": (["--kernel", "rbf", "--gamma", str(GAMMA), "--support-fraction", "0.8"],
               lambda: KernelROBPCA(n_components=2, kernel="rbf", gamma=GAMMA,
                                    support_fraction=0.8, random_state=0)),
    "incremental": (["--kernel", "rbf", "--gamma", str(GAMMA), "--batch-size", "25",
                     "--mode", "exact"],
                    lambda: IncrementalKernelPCA(n_components=2, kernel="rbf", gamma=GAMMA,
                                                 batch_size=25, mode="exact", random_state=0)),
}


def _cli(capsys, *argv) -> int:
    from kpca import cli

    code = cli.main([str(a) for a in argv])
    _, err = capsys.readouterr()
    assert code == 0, err
    return code


@pytest.fixture
def data_csv(tmp_path, contaminated):
    path = tmp_path / "data.csv"
    kpca.io.write_table(path, contaminated[0], ["a", "b", "c"])
    return path


@pytest.mark.parametrize("name", NAMES)
def test_cli_transform_of_a_saved_model_reproduces_fit_transform(name, capsys, tmp_path,
                                                                 data_csv, contaminated):
    flags, _ = CLI[name]
    model, first, second = tmp_path / "m.kpca", tmp_path / "s1.csv", tmp_path / "s2.csv"
    _cli(capsys, "fit-transform", data_csv, "--estimator", name, "-k", "2", "--seed", "0",
         *flags, "--save", model, "-o", first)
    _cli(capsys, "transform", data_csv, "--model", model, "-o", second)
    Z1, cols1 = kpca.io.read_table(first)
    Z2, cols2 = kpca.io.read_table(second)
    assert Z1.shape == (contaminated[0].shape[0], 2)
    assert cols1 == cols2
    _close(Z2, Z1)
    assert type(kpca.load(model)) is type(CLI[name][1]())


@pytest.mark.parametrize("name", NAMES)
def test_cli_estimator_is_the_library_estimator(name, capsys, tmp_path, data_csv,
                                                contaminated):
    flags, factory = CLI[name]
    out = tmp_path / "scores.csv"
    _cli(capsys, "fit-transform", data_csv, "--estimator", name, "-k", "2", "--seed", "0",
         *flags, "-o", out)
    Z, columns = kpca.io.read_table(out)
    est = factory()
    expected = est.fit_transform(contaminated[0])
    assert columns == list(est.get_feature_names_out())
    _close(Z, expected)


# ----------------------------------------------------------------------------- scikit-learn
@pytest.mark.parametrize("name", NAMES)
def test_clone_keeps_the_parameters(name):
    est = make(name, contamination=0.2)
    copy = clone(est)
    assert type(copy) is type(est) and copy is not est
    assert copy.get_params() == est.get_params()


@pytest.mark.parametrize("name", NAMES)
def test_grid_search_over_a_pipeline(name):
    X, y = make_circles(120, factor=0.3, noise=0.05, random_state=0)
    gamma = {"gamma": 2.0}
    pipe = Pipeline([("kpca", make(name, **gamma)), ("clf", LogisticRegression())])
    search = GridSearchCV(pipe, {"kpca__n_components": [2, 3]}, cv=3).fit(X, y)
    assert search.best_params_["kpca__n_components"] in (2, 3)
    pred = search.predict(X)
    assert pred.shape == y.shape
    # the kernel features make the circles (inseparable by a line) separable
    assert np.mean(pred == y) >= 0.8


#: check_array_api_input ends by calling inverse_transform() with its default method,
#: which raises without a learned pre-image (exact family without
#: fit_inverse_transform=True, as scikit-learn) or any pre-image (random features)
_NO_INVERSE = {
    "check_array_api_input": "inverse_transform() raises without a pre-image map"
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", NAMES)
def test_check_estimator(name):
    expected = {} if name == "nystrom" else _NO_INVERSE
    results = check_estimator(make(name), expected_failed_checks=expected)
    assert all(r["status"] in ("passed", "xfail", "skipped") for r in results)
    assert not [r["check_name"] for r in results if r["status"] == "xfail"
                and r["check_name"] not in expected]

