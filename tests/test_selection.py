"""Kernel / parameter selection: supervised (CV accuracy) and unsupervised (held-out
pre-image reconstruction error)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kpca import KernelPCA
from kpca.datasets import concentric_circles
from kpca.selection import expand_candidates, select_kernel


@pytest.fixture(scope="module")
def circles():
    return concentric_circles(n_samples=120, random_state=3)


CANDIDATES = [{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": [0.1, 10.0]}]


def test_expand_candidates():
    assert expand_candidates(CANDIDATES) == [
        {"kernel": "linear"}, {"gamma": 0.1, "kernel": "rbf"}, {"gamma": 10.0, "kernel": "rbf"}]
    assert expand_candidates([{"kernel": "poly", "degree": 2}]) == [
        {"kernel": "poly", "degree": 2}]
    with pytest.raises(ValueError, match="candidate"):
        expand_candidates(["rbf"])


def test_supervised_scores_equal_cross_val_score(circles):
    """The shared kernel matrix sliced per fold gives cross_val_score's scores of the
    pipeline with scikit-learn's own KernelPCA (the default classifier standardizes
    the components before a logistic regression)."""
    X, y = circles
    res = select_kernel(X, y, candidates=CANDIDATES, cv=4)
    assert res.criterion == "accuracy"
    cv = StratifiedKFold(4)
    for row in res.rows:
        pipe = make_pipeline(SkKernelPCA(2, **row["params"]), StandardScaler(),
                             LogisticRegression(max_iter=1000))
        s = cross_val_score(pipe, X, y, cv=cv)
        assert row["score"] == pytest.approx(s.mean(), abs=1e-12)
        assert row["std"] == pytest.approx(s.std(), abs=1e-12)
    # RBF with gamma=10 separates the circles, the others cannot
    assert res.best_params == {"gamma": 10.0, "kernel": "rbf"}
    best = [r for r in res.rows if r["rank"] == 1][0]
    assert best["score"] > 0.85 > max(r["score"] for r in res.rows if r["rank"] > 1)
    table = res.table()
    assert table.splitlines()[2].startswith("| 1 | gamma=10.0, kernel='rbf' |")
    assert len(table.splitlines()) == 2 + 3
    frame = res.to_frame()
    assert list(frame["rank"]) == [1, 2, 3]


@pytest.mark.parametrize("cv", [1, 121, True])
def test_an_integer_cv_out_of_range_is_refused_with_labels_too(circles, cv):
    """With labels, cv=1 or cv above the rows gave scikit-learn's message (n_splits=...);
    now the one without labels, naming cv and its range."""
    X, y = circles
    with pytest.raises(ValueError, match=r"cv must be an integer (between 2 and the number "
                       r"of rows \(120\)|>= 2)"):
        select_kernel(X, y, candidates=CANDIDATES, cv=cv)


def test_supervised_folds_given_as_a_list_are_still_taken(circles):
    X, y = circles
    folds = list(StratifiedKFold(3).split(X, y))
    by_list = select_kernel(X, y, candidates=CANDIDATES, cv=folds)
    by_splitter = select_kernel(X, y, candidates=CANDIDATES, cv=StratifiedKFold(3))
    assert [r["score"] for r in by_list.rows] == [r["score"] for r in by_splitter.rows]


def test_unsupervised_scores_equal_manual_held_out_error(circles):
    X, _ = circles
    res = select_kernel(X, candidates=CANDIDATES, cv=3, alpha=1e-3, random_state=0)
    assert res.criterion == "reconstruction_mse"
    folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    for row in res.rows:
        errs = []
        for tr, te in folds:
            # a fixed alpha: the learned pre-image of the training rows minus their mean
            # (the criterion's intercept; the linear and RBF fits ignore the shift)
            est = make_pipeline(StandardScaler(with_std=False), KernelPCA(
                2, fit_inverse_transform=True, alpha=1e-3, random_state=0,
                **row["params"])).fit(X[tr])
            R = est.inverse_transform(est.transform(X[te]))
            errs.append(np.mean((X[te] - R) ** 2))
        assert row["method"] == "ridge"
        assert row["score"] == pytest.approx(np.mean(errs), rel=1e-10)
    # linear PCA with all (2) components of 2-D data reconstructs almost exactly: it
    # beats an RBF kernel whose 2 components keep only part of the feature space
    lin = [r for r in res.rows if r["params"] == {"kernel": "linear"}][0]
    rbf10 = [r for r in res.rows if r["params"].get("gamma") == 10.0][0]
    assert lin["score"] < rbf10["score"]
    assert res.best_estimator.get_params()["fit_inverse_transform"] is True
    assert res.best_estimator.alpha == 1e-3


def test_a_failing_candidate_is_a_row_with_its_reason_and_no_warning():
    import warnings

    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)  # unscaled: a degree-400 polynomial overflows
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = select_kernel(X, y, candidates=[{"kernel": ["rbf"], "gamma": ["median"]},
                                              {"kernel": ["poly"], "degree": [400],
                                               "gamma": [10.0]}], cv=3)
    assert not [w for w in caught if "fit failed" in str(w.message).lower()
                or "Traceback" in str(w.message)]
    failed = [r for r in res.rows if not np.isfinite(r["score"])]
    assert [r["params"]["degree"] for r in failed] == [400]
    assert res.best_params == {"kernel": "rbf", "gamma": "median"}
    assert len(res.notes) == 1 and "degree=400" in res.notes[0]
    assert "overflow" in res.notes[0] or "finite" in res.notes[0], res.notes
    text = res.table()
    failed_line = text.split("Failed:\n- ", 1)[1].splitlines()[0]
    assert "| failed |" in text and "degree=400" in failed_line and "overflow" in failed_line


def test_unsupervised_criterion_with_a_fixed_alpha_is_scikit_learns_pre_image():
    """Noisy points on an arc, one component, alpha fixed: the errors are those of
    scikit-learn's KernelPCA and its learned pre-image fitted on the training rows
    minus their mean (the criterion's intercept), on the same folds, and the best gamma
    is theirs. (The default penalty, chosen by GCV, and the known-answer tests:
    tests/test_select_unsupervised.py.)"""
    from sklearn.decomposition import KernelPCA as SkKernelPCA

    rng = np.random.default_rng(0)
    t = rng.uniform(0, 1.5 * np.pi, 150)
    X = np.c_[np.cos(t), np.sin(t)] + 0.05 * rng.normal(size=(150, 2))
    grid = np.geomspace(0.03, 100, 15)
    folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    ref = []
    for g in grid:
        errs = []
        for tr, te in folds:
            m = make_pipeline(StandardScaler(with_std=False),
                              SkKernelPCA(1, kernel="rbf", gamma=g, fit_inverse_transform=True,
                                          alpha=1e-3)).fit(X[tr])
            errs.append(np.mean((X[te] - m.inverse_transform(m.transform(X[te]))) ** 2))
        ref.append(np.mean(errs))
    best = int(np.argmin(ref))
    res = select_kernel(X, candidates={"kernel": ["rbf"], "gamma": list(grid)},
                        n_components=1, cv=3, alpha=1e-3, random_state=0)
    np.testing.assert_allclose([r["score"] for r in res.rows], ref, rtol=1e-6)
    assert res.best_params["gamma"] == grid[best]
