"""``kpca select`` fast and quiet (issue 34, item 5): one kernel matrix per candidate
sliced per fold (the same scores as the pipeline refitted per fold), the classifier
and scoring as options, progress records and bars, repeated warnings issued once with
a count, and ``n_components='auto'``."""

from __future__ import annotations

import io
import logging
import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402
from sklearn.decomposition import KernelPCA as SkKernelPCA  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import StratifiedKFold, cross_val_score  # noqa: E402
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from kpca import KernelPCA, cli, config_context, parallel_analysis  # noqa: E402
from kpca.cli import ProgressBars, console_logging  # noqa: E402
from kpca.datasets import concentric_circles, three_clusters  # noqa: E402
from kpca.io import write_table  # noqa: E402
from kpca.selection import CLASSIFIERS, select_kernel  # noqa: E402

logger = logging.getLogger("kpca")


@pytest.fixture(scope="module")
def circles():
    return concentric_circles(n_samples=120, random_state=3)


def test_heuristic_gamma_is_resolved_per_training_fold_as_the_pipeline(circles):
    """gamma='median' differs between training folds: the shared path recomputes K
    for each and gives the scores of the kpca pipeline refitted per fold (which the
    fallback path, taken when K does not fit in memory, runs)."""
    X, y = circles
    cand = [{"kernel": ["rbf"], "gamma": ["median", "scale"]}, {"kernel": ["poly"],
                                                                "degree": [2]}]
    shared = select_kernel(X, y, candidates=cand, cv=4)
    # 16 n^2 bytes = 230 KB > budget: the pipeline per fold (the fits still fit)
    with config_context(memory_budget=200_000):
        refit = select_kernel(X, y, candidates=cand, cv=4)
    for a, b in zip(shared.rows, refit.rows, strict=True):
        assert a["params"] == b["params"]
        assert a["score"] == pytest.approx(b["score"], abs=1e-12)
    # and cross_val_score of that pipeline, independently
    pipe = make_pipeline(KernelPCA(2, kernel="rbf", gamma="median", random_state=0),
                         StandardScaler(), LogisticRegression(max_iter=1000))
    ref = cross_val_score(pipe, X, y, cv=StratifiedKFold(4))
    assert shared.rows[0]["score"] == pytest.approx(ref.mean(), abs=1e-12)


def test_classifier_and_scoring_are_options(circles):
    X, y = circles
    cand = {"kernel": ["rbf"], "gamma": [10.0]}
    res = select_kernel(X, y, candidates=cand, cv=3, classifier="knn",
                        scoring="balanced_accuracy")
    assert res.criterion == "balanced_accuracy"
    ref = cross_val_score(make_pipeline(SkKernelPCA(2, kernel="rbf", gamma=10.0),
                                        StandardScaler(), KNeighborsClassifier()),
                          X, y, cv=StratifiedKFold(3), scoring="balanced_accuracy")
    assert res.rows[0]["score"] == pytest.approx(ref.mean(), abs=1e-12)
    assert res.table().splitlines()[0] == "| rank | parameters | balanced_accuracy (mean) | std |"
    # every named classifier fits
    for name in CLASSIFIERS:
        r = select_kernel(X, y, candidates=cand, cv=3, classifier=name)
        assert 0.5 < r.rows[0]["score"] <= 1.0, name
    assert cli._main._classifiers() == list(CLASSIFIERS)
    with pytest.raises(ValueError, match="classifier must be an estimator or one of logistic"):
        select_kernel(X, y, candidates=cand, classifier="forest")
    with pytest.raises(ValueError, match="n_components must be an integer >= 1 or 'auto'"):
        select_kernel(X, y, candidates=cand, n_components=0)


def test_progress_records_name_candidate_and_fold(circles, caplog):
    X, y = circles
    with caplog.at_level(logging.INFO, logger="kpca"):
        select_kernel(X, y, candidates={"kernel": ["rbf"], "gamma": [1.0, 10.0]}, cv=3)
    recs = [r for r in caplog.records if getattr(r, "kpca_event", None) == "select"]
    assert [r.kpca_text for r in recs] == [f"candidate {c}/2, fold {f}/3"
                                           for c in (1, 2) for f in (1, 2, 3)]
    assert [r.kpca_done for r in recs] == list(range(6))
    assert {r.kpca_total for r in recs} == {6}


def test_progress_bar_of_the_fits():
    pytest.importorskip("tqdm")
    out = io.StringIO()
    bars = ProgressBars(out)
    old = logger.level
    logger.addHandler(bars)
    logger.setLevel(logging.DEBUG)
    try:
        for done, text in [(0, "candidate 1/2, fold 1/2"), (3, "candidate 2/2, fold 2/2")]:
            logger.info(text, extra={"kpca_event": "select", "kpca_done": done,
                                     "kpca_total": 4, "kpca_text": text})
        bar = bars.bars["select"]
        assert (bar.n, bar.total) == (3, 4)
        assert bar.desc == "candidate 2/2, fold 2/2"
    finally:
        logger.removeHandler(bars)
        logger.setLevel(old)
        bars.close()
    assert "candidate 2/2, fold 2/2" in out.getvalue()


class _Grumpy(ClassifierMixin, BaseEstimator):
    """A classifier that warns at every fit (as lbfgs that does not converge)."""

    def fit(self, X, y):
        warnings.warn("grumpy failed to converge.\n\nIncrease max_iter:\n  https://x",
                      ConvergenceWarning, stacklevel=2)
        self.classes_ = np.unique(y)
        self.c_ = self.classes_[0]
        return self

    def predict(self, X):
        return np.full(len(X), self.c_)


def test_a_repeated_warning_is_issued_once_with_a_count(circles):
    X, y = circles
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        select_kernel(X, y, candidates={"kernel": ["rbf"], "gamma": [1.0, 10.0]}, cv=3,
                      classifier=_Grumpy())
    grumpy = [str(w.message) for w in caught if "grumpy" in str(w.message)]
    # 2 candidates x 3 folds, and the refit of the best
    assert grumpy == ["grumpy failed to converge. (7 times)"]


def test_cli_select_is_quiet_and_takes_the_options(tmp_path, capsys):
    X, y = three_clusters(n_per_cluster=20)
    write_table(tmp_path / "Xy.csv", np.c_[X, y], ["a", "b", "label"])
    code = cli.main([str(tmp_path / "Xy.csv"), "--label-column", "label"][:0] + [
        "select", str(tmp_path / "Xy.csv"), "--label-column", "label", "--kernels",
        "linear,rbf", "--gammas", "0.5,median", "--cv", "3", "--classifier", "lda",
        "--scoring", "f1_macro", "-k", "auto"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert err == ""  # no warnings, no progress off a terminal
    assert "f1_macro of linear discriminant analysis" in out
    assert "| rank | parameters | k | f1_macro (mean) | std |" in out
    lib = select_kernel(X, y, candidates=[{"kernel": ["linear"]},
                                          {"kernel": ["rbf"], "gamma": [0.5, "median"]}],
                        cv=3, classifier="lda", scoring="f1_macro", n_components="auto")
    assert lib.table() in out
    code = cli.main(["select", str(tmp_path / "Xy.csv"), "--label-column", "label",
                     "--scoring", "f1_macr"])
    out, err = capsys.readouterr()
    assert code == 2 and "did you mean f1_macro" in err
    code = cli.main(["select", str(tmp_path / "Xy.csv"), "-k", "some"])
    out, err = capsys.readouterr()
    assert code == 2 and "expected an integer >= 1 or 'auto'" in err


def test_console_prints_the_counted_warning_once(tmp_path):
    X, y = concentric_circles(n_samples=60, random_state=0)
    err = io.StringIO()
    with console_logging(0, stream=err):
        select_kernel(X, y, candidates={"kernel": ["rbf"], "gamma": [1.0]}, cv=3,
                      classifier=_Grumpy())
    lines = err.getvalue().splitlines()
    assert lines == ["kpca: warning: grumpy failed to converge. (4 times)"]


def test_auto_components_per_candidate_are_parallel_analysis():
    rng = np.random.default_rng(0)
    f = rng.normal(size=(150, 2))
    X = np.column_stack([f[:, 0], f[:, 0], f[:, 1], f[:, 1], rng.normal(size=150)])
    X += 0.4 * rng.normal(size=X.shape)
    y = (f[:, 0] > 0).astype(int)
    cand = [{"kernel": ["linear"]}, {"kernel": ["rbf"], "gamma": ["scale"]}]
    res = select_kernel(X, y, candidates=cand, cv=3, n_components="auto")
    for row in res.rows:
        pa = parallel_analysis(X, random_state=0, **row["params"])
        assert row["n_components"] == max(1, pa.n_components)
    assert [r["n_components"] for r in res.rows][0] == 2
    assert res.best_estimator.named_steps["kpca"].n_components == \
        [r for r in res.rows if r["rank"] == 1][0]["n_components"]
