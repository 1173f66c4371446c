"""Choosing the kernel and its parameters, scored honestly on held-out data.

Two criteria, both cross-validated (the score of a candidate is measured on
data its model did not see):

* **supervised** (labels ``y`` given): the score (default: accuracy) of a classifier
  (default: a logistic regression on the standardized components) on the kernel PCA
  features: the score ``cross_val_score(Pipeline(KernelPCA, classifier))`` gives,
  computed from one kernel matrix per candidate that every fold slices (the kernel
  does not depend on the fold unless a ``gamma`` heuristic or ``standardize`` makes
  it: then one per fold), candidate by candidate (a candidate that fails is a row
  whose reason is in :attr:`SelectionResult.notes`);
* **unsupervised** (no labels): the input-space reconstruction error of the
  held-out rows, ``mean ||x - z(x)||^2`` over the test folds, where ``z`` is the
  learned ridge pre-image (kernel ridge from the training fold's scores back to its
  inputs, with an intercept, its penalty chosen by generalized cross-validation on
  the training fold) of the projection of ``x`` on the first components:
  :func:`reconstruction_error` (docs/math.md, "Choosing gamma and the kernel without
  labels"); the other pre-image methods when asked for
  (``inverse_transform(Y, method=...)``).

:func:`select_kernel` returns a :class:`SelectionResult` with one row per
candidate and a Markdown table of the results.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import LogisticRegression, RidgeClassifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import KFold, ParameterGrid, check_cv, cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils import check_random_state

from ._config import config_context, get_config
from ._kernel_pca import KernelPCA
from ._memory import default_memory_limit
from ._parallel import blas_threads
from ._parallel_analysis import ParallelAnalysis, check_parallel_analysis
from .operators import gram_matrix
from .preimage import gcv_ridge_preimage, score_space_kernel

logger = logging.getLogger("kpca")

__all__ = [
    "CLASSIFIERS",
    "DEFAULT_CANDIDATES",
    "LandmarkRecommendation",
    "SelectionResult",
    "ReconstructionCV",
    "expand_candidates",
    "landmarks_for_tolerance",
    "parallel_analysis",
    "reconstruction_error",
    "select_kernel",
]

#: candidates tried when none are given (gamma heuristics: see kpca.kernels)
DEFAULT_CANDIDATES: list[dict[str, Any]] = [
    {"kernel": ["linear"]},
    {"kernel": ["rbf"], "gamma": ["median", "scale", 0.1, 1.0, 10.0]},
    {"kernel": ["poly"], "degree": [2, 3], "gamma": ["scale"]},
    {"kernel": ["cosine"]},
]


#: the classifiers of the supervised criterion, by name (``kpca select --classifier``):
#: each standardizes the components first (their variances are the eigenvalues, orders
#: of magnitude apart, which stalls gradient solvers and makes distances meaningless)
CLASSIFIERS: dict[str, Callable[[], Any]] = {
    # lbfgs on standardized scores converges in tens of iterations; max_iter is a cap
    "logistic": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
    "linear-svm": lambda: make_pipeline(StandardScaler(), LinearSVC()),
    "knn": lambda: make_pipeline(StandardScaler(), KNeighborsClassifier()),
    "lda": lambda: LinearDiscriminantAnalysis(),
    "ridge": lambda: make_pipeline(StandardScaler(), RidgeClassifier()),
}


@dataclass
class SelectionResult:
    """Scores of every candidate.

    Attributes
    ----------
    rows : list of dict
        One per candidate: ``params`` (the KernelPCA parameters), ``score``
        (mean over folds), ``std``, ``rank`` (1 = best), for the unsupervised
        criterion ``method`` (pre-image method) and for its learned pre-image
        ``alpha`` (the median over the folds of the penalty), and with
        ``n_components='auto'``
        ``n_components`` (the candidate's k, by parallel analysis).
    criterion : str
        The supervised score's name (``'accuracy'`` by default; higher is better) or
        ``'reconstruction_mse'`` (unsupervised, lower is better).
    best_params : dict
        Parameters of the best candidate.
    best_estimator : KernelPCA or Pipeline
        The best candidate refitted on all data.
    notes : list of str
        Why candidates failed (their score is NaN); :meth:`table` lists them under
        the table.
    """

    rows: list[dict[str, Any]]
    criterion: str
    best_params: dict[str, Any]
    best_estimator: Any = None
    notes: list[str] = field(default_factory=list)

    def table(self) -> str:
        """The results as a Markdown table, best first."""
        higher = self.criterion != "reconstruction_mse"
        extra = any("method" in r for r in self.rows)
        auto = any("n_components" in r for r in self.rows)
        alpha = any("alpha" in r for r in self.rows)
        head = (["rank", "parameters"] + (["k"] if auto else []) + (["pre-image"] if extra
                else []) + (["alpha"] if alpha else []) + [f"{self.criterion} (mean)", "std"])
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in sorted(self.rows, key=lambda r: r["rank"]):
            cells = [str(r["rank"]), _params_text(r["params"])]
            if auto:
                cells.append(str(r.get("n_components", "")))
            if extra:
                cells.append(str(r.get("method", "")))
            if alpha:  # the ridge pre-image's penalty (median over the folds)
                a = r.get("alpha", math.nan)
                cells.append(format(a, ".3g") if math.isfinite(a) else "")
            fmt = ".4f" if higher else ".4g"
            score = "failed" if not math.isfinite(r["score"]) else format(r["score"], fmt)
            std = "" if not math.isfinite(r["std"]) else format(r["std"], fmt)
            cells += [score, std]
            lines.append("| " + " | ".join(cells) + " |")
        if self.notes:  # why the failed rows failed
            lines += ["", "Failed:", *(f"- {n}" for n in dict.fromkeys(self.notes))]
        return "\n".join(lines) + "\n"

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas)."""
        import pandas as pd

        flat = [{**r["params"], **{k: v for k, v in r.items() if k != "params"}}
                for r in self.rows]
        return pd.DataFrame(flat).sort_values("rank").reset_index(drop=True)


def expand_candidates(candidates: Any) -> list[dict[str, Any]]:
    """Turn a parameter grid (dict of lists, or a list of them) or a list of
    parameter dicts into a list of parameter dicts.

    Examples
    --------
    >>> expand_candidates({"kernel": ["rbf"], "gamma": [0.1, 1.0]})
    [{'gamma': 0.1, 'kernel': 'rbf'}, {'gamma': 1.0, 'kernel': 'rbf'}]
    """
    if candidates is None:
        candidates = DEFAULT_CANDIDATES
    if isinstance(candidates, Mapping):
        candidates = [candidates]
    out: list[dict[str, Any]] = []
    for c in candidates:
        if not isinstance(c, Mapping):
            raise ValueError(f"a candidate must be a dict of parameters; got {c!r}.")
        if all(isinstance(v, (list, tuple, np.ndarray)) for v in c.values()):
            out.extend(dict(p) for p in ParameterGrid(dict(c)))
        else:
            out.append(dict(c))
    if not out:
        raise ValueError("no candidates to evaluate.")
    return out


def parallel_analysis(
    X: Any,
    *,
    kernel: Any = "linear",
    gamma: Any = None,
    degree: float = 3,
    coef0: float = 1,
    kernel_params: dict | None = None,
    n_permutations: int | None = None,
    quantile: float | None = None,
    random_state: Any = None,
    center: bool = True,
    eigen_solver: str = "auto",
    n_jobs: int | None = None,
    memory_limit: Any = None,
) -> ParallelAnalysis:
    """How many kernel principal components stand above a null of independent columns.

    Parallel analysis (Horn 1965) with a permutation null (Buja & Eyuboglu 1992):
    the top eigenvalues ``mu_l`` of the centred kernel matrix of X are compared with
    the same eigenvalues of ``n_permutations`` copies of X whose columns were
    permuted independently; the leading components with ``mu_l`` above the
    ``quantile`` of the null are kept. The kernel is resolved once on X (a
    ``gamma`` heuristic is not re-resolved on the copies). docs/math.md
    ("Parallel analysis") gives the method and its limits. This is what
    ``KernelPCA(n_components='auto')`` runs.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    kernel, gamma, degree, coef0, kernel_params, center, eigen_solver, n_jobs, memory_limit
        As :class:`kpca.KernelPCA`.
    n_permutations : int >= 1, default=None
        Null copies; ``None``: the ``parallel_analysis_permutations`` setting (19).
    quantile : float in (0, 1), default=None
        ``None``: the ``parallel_analysis_quantile`` setting (0.95).
    random_state : int, RandomState instance or None, default=None
        Copy ``b`` permutes column ``j`` (``j = 0, 1, ...``) with
        ``numpy.random.default_rng([random_state, b]).permutation(n_samples)``
        for an int ``random_state`` (see :func:`kpca._parallel_analysis.permute_columns`);
        also the solvers' seed.

    Returns
    -------
    ParallelAnalysis
        ``eigenvalues`` (k,), ``null_eigenvalues`` (n_permutations, k), ``threshold``
        (k,) and ``n_components`` (0 when no eigenvalue is above its threshold).

    Examples
    --------
    >>> import numpy as np
    >>> from kpca import parallel_analysis
    >>> rng = np.random.default_rng(0)
    >>> F = rng.normal(size=(300, 2))                   # two factors
    >>> X = np.repeat(F, 4, axis=1) + 0.5 * rng.normal(size=(300, 8))
    >>> parallel_analysis(X, random_state=0).n_components
    2
    """
    cfg = get_config()
    B, q = check_parallel_analysis(
        cfg["parallel_analysis_permutations"] if n_permutations is None else n_permutations,
        cfg["parallel_analysis_quantile"] if quantile is None else quantile)
    est = KernelPCA(n_components="auto", kernel=kernel, gamma=gamma, degree=degree,
                    coef0=coef0, kernel_params=kernel_params, random_state=random_state,
                    center=center, eigen_solver=eigen_solver, n_jobs=n_jobs,
                    memory_limit=memory_limit, copy_X=False)
    with config_context(parallel_analysis_permutations=B, parallel_analysis_quantile=q):
        est.fit(X)
    return est.parallel_analysis_


def _ranks(scores: Sequence[float], higher_better: bool) -> list[int]:
    s = np.array([v if math.isfinite(v) else (-np.inf if higher_better else np.inf)
                  for v in scores])
    order = np.argsort(-s if higher_better else s, kind="stable")
    ranks = np.empty(len(s), dtype=int)
    ranks[order] = np.arange(1, len(s) + 1)
    return ranks.tolist()


def select_kernel(
    X: Any,
    y: Any = None,
    *,
    candidates: Any = None,
    n_components: int | str = 2,
    cv: int | Any = 5,
    classifier: Any = None,
    scoring: Any = None,
    preimage_methods: Iterable[str] = ("ridge",),
    alpha: float | str = "gcv",
    n_jobs: int | None = None,
    random_state: int | None = 0,
    standardize: bool = False,
) -> SelectionResult:
    """Score candidate kernels / parameters by cross-validation.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), default=None
        Labels: supervised selection (classifier accuracy on the kernel PCA
        features, cross-validated over a Pipeline). ``None``: unsupervised
        selection (held-out reconstruction error through the learned pre-image,
        :func:`reconstruction_error`; lower is better).
    candidates : dict of lists, list of dicts, default=None
        KernelPCA parameters to try, e.g. ``{"kernel": ["rbf"], "gamma": [0.1, 1,
        "median"]}``; default :data:`DEFAULT_CANDIDATES`.
    n_components : int or 'auto', default=2
        Components kept by every candidate. ``'auto'``: each candidate's own number,
        by parallel analysis (:func:`parallel_analysis`, with ``random_state``) on all
        rows of X (no labels are used; standardized with ``standardize``), then
        cross-validated with that number (the row's ``n_components``).
    cv : int or cross-validation splitter, default=5
    classifier : estimator or str, default=None
        Supervised criterion: an estimator, or a name of :data:`CLASSIFIERS`;
        default ``'logistic'``: ``make_pipeline(StandardScaler(),
        LogisticRegression(max_iter=1000))`` (on standardized components lbfgs
        converges in tens of iterations; 1000 is only a cap).
    scoring : str or callable, default=None
        Supervised criterion: a scikit-learn scorer (name or callable, e.g.
        ``'balanced_accuracy'``, ``'f1_macro'``); default: the classifier's ``score``
        (accuracy).
    preimage_methods : iterable of str, default=('ridge',)
        Unsupervised criterion: pre-image methods to score. ``'ridge'`` is the
        learned pre-image of :func:`reconstruction_error`; others (``'fixed_point'``,
        ``'mds'``) are scored too when asked for.
    alpha : 'gcv' or float, default='gcv'
        Unsupervised criterion: the learned pre-image's ridge penalty, chosen by
        generalized cross-validation on each training fold (the row's ``alpha`` is
        the median over the folds), or this fixed value. The refitted
        ``best_estimator`` (``fit_inverse_transform=True``) gets GCV's penalty on all
        rows.
    n_jobs : int, default=None
        Threads of each kernel matrix and fit (and the parallel jobs of the
        supervised cross-validation when the kernel matrix does not fit in memory).
    random_state : int, default=0
        Shuffling of the unsupervised folds and solver seeds.
    standardize : bool, default=False
        Scale each column to mean 0 and standard deviation 1 before the kernel, with a
        :class:`~sklearn.preprocessing.StandardScaler` fitted on each training fold
        (no information from the held-out fold). The unsupervised reconstruction
        error is then in standardized units.

    Returns
    -------
    SelectionResult

    Notes
    -----
    Progress is logged to the ``kpca`` logger (INFO, ``"candidate 4/9, fold 2/5"``;
    the command line draws it as a bar). Warnings raised in the fits (e.g. a
    classifier that does not converge) are issued once each, with the number of fits
    that raised them.
    """
    params_list = expand_candidates(candidates)
    _check_candidates(params_list)
    if y is None:
        _check_alpha(alpha)
    # an integer cv with labels too: this message, not scikit-learn's "n_splits=1"
    if y is None or isinstance(cv, (int, np.integer)):
        _check_cv_rows(cv, np.shape(X)[0])
    if not (n_components == "auto" or (isinstance(n_components, (int, np.integer))
                                       and not isinstance(n_components, bool)
                                       and n_components >= 1)):
        raise ValueError(f"n_components must be an integer >= 1 or 'auto'; got "
                         f"{n_components!r}.")
    X = np.asarray(X, dtype=float) if not hasattr(X, "tocsr") else X
    with _counted_warnings():
        ks = _components(X, params_list, n_components, random_state, standardize, n_jobs)
        if y is not None:
            return _supervised(X, y, params_list, ks, cv, classifier, scoring, n_jobs,
                               random_state, standardize, auto=n_components == "auto")
        return _unsupervised(X, params_list, ks, cv, tuple(preimage_methods), alpha,
                             random_state, standardize, n_jobs, auto=n_components == "auto")


class _counted_warnings:
    """Collect the warnings of a block and issue each distinct one once, with a count:
    a classifier that does not converge in 16 of 40 fits is one line, not 16 blocks."""

    def __enter__(self) -> None:
        self._ctx = warnings.catch_warnings(record=True)
        self._caught = self._ctx.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc: Any) -> None:
        caught = list(self._caught)
        self._ctx.__exit__(*exc)
        counts: Counter = Counter()
        first: dict = {}
        for w in caught:
            # the first paragraph: scikit-learn's advice and URLs follow a blank line
            text = " ".join(str(w.message).strip().split("\n\n")[0].split())
            key = (w.category, text)
            counts[key] += 1
            first.setdefault(key, w)
        for (category, text), count in counts.items():
            suffix = f" ({count} times)" if count > 1 else ""
            warnings.warn_explicit(f"{text}{suffix}", category, first[(category, text)].filename,
                                   first[(category, text)].lineno)


def _progress(text: str, done: int, total: int) -> None:
    """A progress record: INFO text, and ``kpca_event='select'`` for the bars."""
    logger.info("select_kernel: %s", text,
                extra={"kpca_event": "select", "kpca_done": done, "kpca_total": total,
                       "kpca_text": text})


def _components(X, params_list, n_components, random_state, standardize, n_jobs
                ) -> list[int]:
    """Each candidate's number of components: ``n_components``, or with ``'auto'`` the
    parallel analysis of X (standardized on all rows with ``standardize``)."""
    if n_components != "auto":
        return [int(n_components)] * len(params_list)
    Xs = (StandardScaler(with_mean=not sp_issparse(X)).fit_transform(X) if standardize
          else X)
    ks = []
    for number, params in enumerate(params_list, 1):
        _progress(f"candidate {number}/{len(params_list)}: parallel analysis", number - 1,
                  len(params_list))
        try:
            with warnings.catch_warnings():  # k = 1 then: the table shows it
                warnings.filterwarnings("ignore", message="n_components='auto': no eigen")
                pa = parallel_analysis(Xs, random_state=random_state, n_jobs=n_jobs,
                                       **params)
            ks.append(max(1, pa.n_components))
        except (ValueError, TypeError, np.linalg.LinAlgError) as exc:  # TypeError: a name
            logger.info("select_kernel: parallel analysis of %s failed: %s", params, exc)
            ks.append(1)  # the candidate's own fits report the failure
    return ks


def _classifier(classifier: Any) -> Any:
    if classifier is None:
        classifier = "logistic"
    if isinstance(classifier, str):
        if classifier not in CLASSIFIERS:
            raise ValueError(f"classifier must be an estimator or one of "
                             f"{', '.join(CLASSIFIERS)}; got {classifier!r}.")
        return CLASSIFIERS[classifier]()
    return classifier


def _scorer_name(scoring: Any) -> str:
    if scoring is None:
        return "accuracy"
    return scoring if isinstance(scoring, str) else getattr(scoring, "__name__", "score")


def _supervised(X, y, params_list, ks, cv, classifier, scoring, n_jobs, random_state,
                standardize, *, auto=False):
    clf = _classifier(classifier)
    y = np.asarray(y)
    try:
        scorer = check_scoring(clf, scoring=scoring)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"scoring: {_first_line(exc)}") from None

    def pipeline(params: Mapping[str, Any], k: int) -> Pipeline:
        return Pipeline([
            *([("scale", StandardScaler(with_mean=not sp_issparse(X)))] if standardize
              else []),
            ("kpca", KernelPCA(n_components=k, random_state=random_state,
                               n_jobs=n_jobs).set_params(**params)),
            ("clf", clone(clf)),
        ])

    # candidate by candidate, not GridSearchCV: a candidate that fails is a row with its
    # reason in the notes, not scikit-learn's FitFailedWarning with a traceback per fold
    folds = list(check_cv(cv, y, classifier=True).split(X, y))
    n = X.shape[0]
    # the shared path keeps K (n x n) and one training block (at most n x n) in float64
    shared = 2 * 8 * n * n <= default_memory_limit()
    scaled = _fold_scalings(X, folds, standardize) if shared else None
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for number, (params, k) in enumerate(zip(params_list, ks, strict=True), 1):
        try:
            if shared:
                scores = _shared_kernel_scores(X, y, folds, scaled, params, k, clf, scorer,
                                               random_state, n_jobs, number,
                                               len(params_list))
            else:
                _progress(f"candidate {number}/{len(params_list)}",
                          (number - 1) * len(folds), len(params_list) * len(folds))
                scores = cross_val_score(pipeline(params, k), X, y, cv=folds,
                                         scoring=scorer, n_jobs=n_jobs, error_score="raise")
        except (ValueError, np.linalg.LinAlgError) as exc:
            notes.append(f"{_params_text(params)}: failed ({_first_line(exc)})")
            scores = np.array([np.nan])
        ok = bool(np.all(np.isfinite(scores)))
        row = {"params": dict(params),
               "score": float(np.mean(scores)) if ok else math.nan,
               "std": float(np.std(scores)) if ok else math.nan}
        if auto:
            row["n_components"] = k
        rows.append(row)
    for r, rank in zip(rows, _ranks([r["score"] for r in rows], True), strict=True):
        r["rank"] = rank
    best = min(rows, key=lambda r: r["rank"])
    if not math.isfinite(best["score"]):
        raise ValueError("select_kernel: every candidate failed: " + "; ".join(notes))
    best_k = ks[rows.index(best)]
    best_est = pipeline(best["params"], best_k).fit(X, y)
    name = _scorer_name(scoring)
    logger.info("select_kernel: best %s (%s %.4f)", best["params"], name, best["score"])
    return SelectionResult(rows, name, dict(best["params"]), best_est, notes)


def _fold_scalings(X, folds, standardize) -> list[Any]:
    """All rows of X as each fold's kernel sees them: X itself (one array shared by
    every fold), or scaled by the fold's training StandardScaler."""
    if not standardize:
        return [X] * len(folds)
    return [StandardScaler(with_mean=not sp_issparse(X)).fit(X[tr]).transform(X)
            for tr, _ in folds]


def _shared_kernel_scores(X, y, folds, scaled, params, k, clf, scorer, random_state, n_jobs,
                          number, n_candidates) -> np.ndarray:
    """The fold scores of ``Pipeline(KernelPCA(k, **params), clf)``, from one kernel
    matrix of all rows that each fold slices (:func:`_fold_projections`)."""
    scores = []
    for fold in _fold_projections(scaled, folds, params, k, random_state, n_jobs,
                                  number, n_candidates, shared=True):
        # the classifier sees n x k scores: BLAS threads woken for its small products
        # cost more than they save (lbfgs on the digits: 4x the CPU time on 2 threads)
        with blas_threads(1):
            fitted = clone(clf).fit(fold.Z_train, y[fold.train])
            scores.append(float(scorer(fitted, fold.Z_test, y[fold.test])))
    return np.asarray(scores)


@dataclass
class _Fold:
    """One fold's kernel PCA: its rows, the resolved kernel, the (scaled) rows of X
    its kernel saw, and the scores of its training and held-out rows."""

    train: np.ndarray
    test: np.ndarray
    kernel: Any
    X: Any
    Z_train: np.ndarray
    Z_test: np.ndarray


def _fold_projections(scaled, folds, params, k, random_state, n_jobs, number, n_candidates,
                      *, shared):
    """Yield each fold's :class:`_Fold`: ``KernelPCA(k, **params)`` fitted on the
    training rows and the scores of the held-out ones, with a progress record each.

    ``shared``: from one kernel matrix of all rows that each fold slices: the fold's
    model is ``KernelPCA(kernel='precomputed')`` fitted on ``K[train, train]`` and
    applied to ``K[test, train]``, the kernel PCA fitted on the training rows (centred
    with their means) and its projection of the held-out rows. The kernel is resolved
    on each training fold as a pipeline's would be (a ``gamma`` heuristic can differ
    between folds); K is computed again only when the resolved kernel or the fold's
    scaling differs from the previous fold's. Otherwise (K does not fit in memory) the
    estimator is fitted on the training rows themselves.
    """
    # set_params: an unknown name is a ValueError (a failed row), as in the pipeline
    base = KernelPCA(n_components=k, random_state=random_state, n_jobs=n_jobs).set_params(
        **params)
    base._validate_params()
    kernel = base._make_kernel()
    key, K = None, None
    for f, (tr, te) in enumerate(folds, 1):
        _progress(f"candidate {number}/{n_candidates}, fold {f}/{len(folds)}",
                  (number - 1) * len(folds) + f - 1, n_candidates * len(folds))
        Xf = scaled[f - 1]
        if not shared:
            est = clone(base).fit(Xf[tr])
            yield _Fold(tr, te, est.kernel_, Xf, est.transform(Xf[tr]), est.transform(Xf[te]))
            continue
        # as KernelPCA.fit: the heuristic's subsample is drawn from a fresh random_state
        rng = None if random_state is None else check_random_state(random_state)
        kern = kernel.resolve(Xf[tr], random_state=rng)
        new_key = (id(Xf), repr(sorted(kern.get_params(deep=False).items())))
        if new_key != key:
            K = None  # free the previous matrix first
            K, _ = gram_matrix(kern, Xf, dtype=np.float64, n_jobs=n_jobs)
            if not np.all(np.isfinite(K)):
                raise ValueError(
                    "the kernel matrix has non-finite values (overflow): check the kernel "
                    "parameters (e.g. degree, gamma, coef0) or scale the data.")
            key = new_key
        # copy_X=False: the training block is a fresh copy already
        model = KernelPCA(n_components=k, kernel="precomputed", random_state=random_state,
                          n_jobs=n_jobs, eigen_solver=base.eigen_solver, copy_X=False)
        Z_train = model.fit_transform(K[np.ix_(tr, tr)])
        yield _Fold(tr, te, kern, Xf, Z_train, model.transform(K[np.ix_(te, tr)]))


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _reconstruct(est: KernelPCA, X: np.ndarray, method: str) -> np.ndarray:
    return np.asarray(est.inverse_transform(est.transform(X), method=method))


@dataclass
class ReconstructionCV:
    """The held-out reconstruction errors of :func:`reconstruction_error`.

    Attributes
    ----------
    params : list of dict
        The candidates' KernelPCA parameters.
    n_components : list of tuple of int
        Each candidate's numbers of components (the columns of ``errors``).
    errors : ndarray of shape (n_candidates, n_k, n_folds)
        Mean squared error ``mean ||x - z(x)||^2 / d`` over each held-out fold (in
        standardized units with ``standardize=True``); NaN where the candidate failed.
    alphas : ndarray of shape (n_candidates, n_k, n_folds)
        The pre-image penalty of each fold (GCV's choice, or the fixed ``alpha``).
    notes : list of str
        Why candidates failed.
    """

    params: list[dict[str, Any]]
    n_components: list[tuple[int, ...]]
    errors: np.ndarray
    alphas: np.ndarray
    notes: list[str] = field(default_factory=list)

    def mean(self) -> np.ndarray:
        """Mean error over the folds, shape (n_candidates, n_k) (NaN if a fold failed)."""
        return self.errors.mean(axis=2)

    def best(self, column: int = 0) -> dict[str, Any]:
        """Parameters of the candidate with the smallest mean error in ``column`` of
        ``n_components`` (the first by default)."""
        m = self.mean()[:, column]
        if not np.any(np.isfinite(m)):
            raise ValueError("reconstruction_error: every candidate failed: "
                             + "; ".join(self.notes))
        return dict(self.params[int(np.nanargmin(m))])


def _check_cv_rows(cv: Any, n: int) -> Any:
    """``cv`` as a splitter of the unsupervised folds (an int: shuffled KFold)."""
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
        if not 2 <= cv <= n:
            raise ValueError(f"cv must be an integer between 2 and the number of rows "
                             f"({n}), or a cross-validation splitter; got {cv}.")
        return None
    if isinstance(cv, str) or not hasattr(cv, "split"):  # a str has a split method
        raise ValueError(f"cv must be an integer >= 2 or a cross-validation splitter "
                         f"(with a split method); got {cv!r}.")
    return cv


def _check_alpha(alpha: Any) -> float | None:
    """``alpha``: 'gcv' (None) or a penalty >= 0."""
    if isinstance(alpha, str) and alpha == "gcv":
        return None
    if (isinstance(alpha, (int, float, np.integer, np.floating)) and not isinstance(alpha, bool)
            and math.isfinite(alpha) and alpha >= 0):
        return float(alpha)
    raise ValueError(f"alpha must be 'gcv' or a number >= 0 (the pre-image's ridge "
                     f"penalty); got {alpha!r}.")


def _check_candidates(params_list: list[dict[str, Any]]) -> None:
    """Every candidate's parameters are valid KernelPCA parameters (a bad name or value
    is the user's error, named here, not a failed row)."""
    for params in params_list:
        try:
            KernelPCA().set_params(**params)._validate_params()
        except (ValueError, TypeError) as exc:
            raise ValueError(f"candidate {{{_params_text(params)}}}: {_first_line(exc)}"
                             ) from None


def _check_ks(n_components: Any) -> tuple[int, ...] | str:
    if n_components == "auto":
        return "auto"
    values = ([n_components] if isinstance(n_components, (int, np.integer))
              else list(n_components) if isinstance(n_components, (list, tuple, np.ndarray))
              else None)
    if (not values or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                          or v < 1 for v in values)):
        raise ValueError(f"n_components must be an integer >= 1, a list of them or 'auto'; "
                         f"got {n_components!r}.")
    return tuple(sorted({int(v) for v in values}))


def reconstruction_error(
    X: Any,
    candidates: Any = None,
    *,
    n_components: int | Sequence[int] | str = 2,
    cv: int | Any = 5,
    alpha: float | str = "gcv",
    standardize: bool = False,
    random_state: int | None = 0,
    n_jobs: int | None = None,
) -> ReconstructionCV:
    """Cross-validated input-space reconstruction error of candidate kernels: a
    criterion for choosing gamma and the kernel without labels.

    For each fold, the kernel PCA of the training rows is fitted, a learned pre-image
    (kernel ridge from the training rows' scores back to their inputs, with the fitted
    kernel on the scores as :class:`kpca.KernelPCA`'s ``fit_inverse_transform=True``,
    plus an intercept, the training mean) is fitted with its penalty chosen by
    generalized cross-validation on the training rows, and the held-out rows are
    projected and mapped back: the score is ``mean((x - z(x))^2)`` over the held-out
    rows and columns. Unlike the feature-space variance, it is measured in the same
    units for every gamma and kernel. Lower is better. docs/math.md ("Choosing gamma
    and the kernel without labels") gives the method, its assumptions and limits.

    Work is shared: one kernel matrix per candidate that every fold slices (as the
    supervised criterion of :func:`select_kernel`), one eigendecomposition per fold for
    all of ``n_components`` (the scores of k components are the first k columns of
    those of the largest), and one eigendecomposition of the score kernel per fold and
    k for every penalty GCV tries.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Dense.
    candidates : dict of lists, list of dicts, default=None
        KernelPCA parameters to try (as :func:`select_kernel`).
    n_components : int, sequence of int or 'auto', default=2
        Components of the projection; several: one column of errors each, from the
        same fits; ``'auto'``: each candidate's number by :func:`parallel_analysis` on
        all rows.
    cv : int or cross-validation splitter, default=5
        An int: ``KFold(cv, shuffle=True, random_state=random_state)``.
    alpha : 'gcv' or float, default='gcv'
        The pre-image's ridge penalty: chosen per fold (and k) by GCV on the training
        rows (:func:`kpca.preimage.gcv_ridge_preimage`), or this fixed value.
    standardize : bool, default=False
        Scale each column with a StandardScaler fitted on each training fold; the
        errors are then in standardized units.
    random_state : int or None, default=0
        Folds, solvers and the subsample of training rows the pre-image is learned from
        when a training fold has more than the setting ``selection_preimage_rows``
        (512) rows (the same rows for every candidate).
    n_jobs : int, default=None
        Threads of the kernel matrices and fits.

    Returns
    -------
    ReconstructionCV

    Examples
    --------
    >>> import numpy as np
    >>> from kpca.selection import reconstruction_error
    >>> rng = np.random.default_rng(0)
    >>> t = rng.uniform(0, 3 * np.pi, 200)                    # a noisy helix
    >>> X = np.c_[np.cos(t), np.sin(t), 0.3 * t] + 0.05 * rng.normal(size=(200, 3))
    >>> res = reconstruction_error(X, {"kernel": ["rbf"], "gamma": [0.01, 0.1, 10]},
    ...                            n_components=1)
    >>> res.best()
    {'gamma': 0.1, 'kernel': 'rbf'}
    """
    params_list = expand_candidates(candidates)
    _check_candidates(params_list)
    ks_spec = _check_ks(n_components)
    fixed = _check_alpha(alpha)
    if sp_issparse(X):
        raise ValueError("reconstruction_error needs dense X (pre-images are dense).")
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array of shape (n_samples, n_features); got "
                         f"shape {X.shape}.")
    splitter = _check_cv_rows(cv, X.shape[0])
    with _counted_warnings():
        ks = ([(k,) for k in _components(X, params_list, "auto", random_state, standardize,
                                          n_jobs)]
              if ks_spec == "auto" else [ks_spec] * len(params_list))
        return _reconstruction_errors(X, params_list, ks, cv if splitter is None else splitter,
                                      fixed, random_state, standardize, n_jobs)


def _reconstruction_errors(X, params_list, ks, cv, fixed, random_state, standardize,
                           n_jobs) -> ReconstructionCV:
    splitter = (KFold(cv, shuffle=True, random_state=random_state)
                if isinstance(cv, (int, np.integer)) else cv)
    folds = list(splitter.split(X))
    smallest = min(len(tr) for tr, _ in folds)
    kmax = max(max(k) for k in ks)
    if kmax >= smallest:
        raise ValueError(f"n_components ({kmax}) must be smaller than the rows of the "
                         f"smallest training fold ({smallest}).")
    # the pre-image's rows of each fold: a subsample above the setting, the same for
    # every candidate so that the candidates are compared on the same rows
    m = get_config()["selection_preimage_rows"]
    subsets = []
    for f, (tr, _) in enumerate(folds):
        if len(tr) <= m:
            subsets.append(np.arange(len(tr)))
        else:
            seed = None if random_state is None else [int(random_state), f]
            subsets.append(np.sort(np.random.default_rng(seed).choice(len(tr), m,
                                                                      replace=False)))
    n = X.shape[0]
    shared = 2 * 8 * n * n <= default_memory_limit()
    scaled = _fold_scalings(X, folds, standardize)
    width = max(len(k) for k in ks)
    errors = np.full((len(params_list), width, len(folds)), np.nan)
    alphas = np.full_like(errors, np.nan)
    notes: list[str] = []
    for c, (params, kc) in enumerate(zip(params_list, ks, strict=True)):
        try:
            for f, fold in enumerate(_fold_projections(
                    scaled, folds, params, max(kc), random_state, n_jobs, c + 1,
                    len(params_list), shared=shared)):
                if fold.Z_train.shape[1] < max(kc):
                    raise ValueError(f"the kernel has {fold.Z_train.shape[1]} components "
                                     f"on this fold, fewer than {max(kc)}")
                sub = subsets[f]
                X_train = fold.X[fold.train[sub]]
                X_test = fold.X[fold.test]
                ker = score_space_kernel(fold.kernel)
                for j, k in enumerate(kc):
                    Y = np.ascontiguousarray(fold.Z_train[sub, :k], dtype=np.float64)
                    fit = gcv_ridge_preimage(ker, Y, X_train, alpha=fixed)
                    Yt = np.asarray(fold.Z_test[:, :k], dtype=np.float64)
                    R = fit.intercept + ker.block(Yt, Y) @ fit.dual_coef
                    errors[c, j, f] = float(np.mean((X_test - R) ** 2))
                    alphas[c, j, f] = fit.alpha
        except (ValueError, np.linalg.LinAlgError) as exc:
            notes.append(f"{_params_text(params)}: failed ({_first_line(exc)})")
            errors[c] = np.nan
    return ReconstructionCV([dict(p) for p in params_list], [tuple(k) for k in ks], errors,
                            alphas, notes)


def _refit_alpha(Xs, params, k, random_state, n_jobs) -> float:
    """The penalty of the refitted best estimator: GCV's on all rows (on the same size
    of subsample as the folds, scaled by n / m: alpha = n lambda for a fixed per-row
    penalty lambda of kernel ridge)."""
    est = KernelPCA(n_components=k, random_state=random_state, n_jobs=n_jobs).set_params(
        **params)
    Z = est.fit_transform(Xs)
    n, m = Z.shape[0], get_config()["selection_preimage_rows"]
    sub = (np.arange(n) if n <= m else np.sort(np.random.default_rng(
        None if random_state is None else [int(random_state)]).choice(
            n, m, replace=False)))
    fit = gcv_ridge_preimage(score_space_kernel(est.kernel_), np.asarray(Z[sub], np.float64),
                             Xs[sub])
    return fit.alpha * n / len(sub)


def _unsupervised(X, params_list, ks, cv, methods, alpha, random_state, standardize, n_jobs,
                  *, auto=False):
    if sp_issparse(X):
        raise ValueError("unsupervised selection needs dense X (pre-images are dense).")
    fixed = _check_alpha(alpha)
    splitter = _check_cv_rows(cv, X.shape[0])
    cv = cv if splitter is None else splitter
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    if "ridge" in methods:
        res = _reconstruction_errors(X, params_list, [(k,) for k in ks], cv, fixed,
                                     random_state, standardize, n_jobs)
        notes += res.notes
        for c, params in enumerate(params_list):
            e = res.errors[c, 0]
            ok = bool(np.all(np.isfinite(e)))
            rows.append({"params": dict(params), "method": "ridge",
                         "alpha": float(np.median(res.alphas[c, 0])) if ok else math.nan,
                         "score": float(e.mean()) if ok else math.nan,
                         "std": float(e.std()) if ok else math.nan,
                         **({"n_components": ks[c]} if auto else {})})
    others = [m for m in methods if m != "ridge"]
    if others:
        rows += _other_preimages(X, params_list, ks, cv, others, random_state, standardize,
                                 notes, auto)
    rows = [r for r in rows if not (r["method"] != "ridge" and not math.isfinite(r["score"])
                                    and all(not math.isfinite(q["score"]) for q in rows
                                            if q["method"] == r["method"]))]
    for r, rank in zip(rows, _ranks([r["score"] for r in rows], False), strict=True):
        r["rank"] = rank
    best = min(rows, key=lambda r: r["rank"])
    if not math.isfinite(best["score"]):
        raise ValueError("select_kernel: every candidate failed: " + "; ".join(notes))
    k = ks[params_list.index(best["params"])]
    Xs = StandardScaler().fit_transform(X) if standardize else X
    best_alpha = (fixed if fixed is not None else
                  _refit_alpha(Xs, best["params"], k, random_state, n_jobs))
    best_est = KernelPCA(n_components=k, fit_inverse_transform=True, alpha=best_alpha,
                         random_state=random_state, n_jobs=n_jobs).set_params(**best["params"])
    best_est = (make_pipeline(StandardScaler(), best_est) if standardize else best_est).fit(X)
    logger.info("select_kernel: best %s / %s (reconstruction MSE %.4g)", best["params"],
                best["method"], best["score"])
    return SelectionResult(rows, "reconstruction_mse", dict(best["params"]), best_est, notes)


def _other_preimages(X, params_list, ks, cv, methods, random_state, standardize, notes,
                     auto) -> list[dict[str, Any]]:
    """Rows of the pre-image methods other than the learned one ('fixed_point',
    'mds'): each fold's estimator fitted on the training rows."""
    splitter = KFold(cv, shuffle=True, random_state=random_state) if isinstance(cv, int) else cv
    folds = list(splitter.split(X))
    scaled = _fold_scalings(X, folds, standardize)
    rows = []
    for number, (params, k) in enumerate(zip(params_list, ks, strict=True), 1):
        per_method: dict[str, list[float]] = {m: [] for m in methods}
        for f, (tr, te) in enumerate(folds, 1):
            _progress(f"candidate {number}/{len(params_list)}, fold {f}/{len(folds)}: "
                      f"{', '.join(methods)}", (number - 1) * len(folds) + f - 1,
                      len(params_list) * len(folds))
            X_train, X_test = scaled[f - 1][tr], scaled[f - 1][te]
            try:
                est = KernelPCA(n_components=k, random_state=random_state).set_params(
                    **params).fit(X_train)
            except (ValueError, np.linalg.LinAlgError) as exc:
                notes.append(f"{_params_text(params)}: fit failed ({_first_line(exc)})")
                for m in methods:
                    per_method[m].append(np.nan)
                continue
            for m in methods:
                try:
                    R = _reconstruct(est, X_test, m)
                    per_method[m].append(float(np.mean((X_test - R) ** 2)))
                except ValueError as exc:
                    notes.append(f"{_params_text(params)}, {m}: {_first_line(exc)}")
                    per_method[m].append(np.nan)
        for m, errs in per_method.items():
            e = np.asarray(errs, dtype=float)
            ok = np.all(np.isfinite(e))
            rows.append({"params": dict(params), "method": m,
                         "score": float(e.mean()) if ok else math.nan,
                         "std": float(e.std()) if ok else math.nan,
                         **({"n_components": k} if auto else {})})
    return rows


def sp_issparse(X: Any) -> bool:
    """True for a SciPy sparse matrix or array."""
    import scipy.sparse as sp

    return sp.issparse(X)


# ------------------------------------------------------- landmarks for a tolerance
#: the approximations :func:`landmarks_for_tolerance` sizes, by name
APPROXIMATIONS = ("nystrom", "random-features")
#: what the tolerance bounds: the estimate's largest relative eigenvalue error, the
#: sine of its largest principal angle, or the larger of the two
TOLERANCE_CRITERIA = ("eigenvalues", "subspace", "both")


@dataclass
class LandmarkRecommendation:
    """The number of landmarks (or random features) :func:`landmarks_for_tolerance`
    recommends, and the error estimate of every count it tried.

    Attributes
    ----------
    tol : float
    criterion : str
        One of :data:`TOLERANCE_CRITERIA`.
    approximation : str
        ``'nystrom'`` or ``'random-features'``.
    params : dict
        The kernel parameters (``gamma`` as resolved by the first fit).
    counts : list of int
        The counts tried, ascending (up to the first that meets ``tol``).
    errors : list of ApproximationError
        Their estimates (:meth:`kpca.NystromKernelPCA.estimate_error`).
    recommended : int or None
        The smallest count whose estimate is at most ``tol``; None if none is.
    """

    tol: float
    criterion: str
    approximation: str
    params: dict[str, Any]
    counts: list[int]
    errors: list[Any]
    recommended: int | None

    def value(self, error: Any) -> float:
        """The number compared with ``tol``."""
        return _tolerance_value(error, self.criterion)

    def table(self) -> str:
        """A Markdown table of the estimate per count, and the recommendation."""
        unit = "landmarks" if self.approximation == "nystrom" else "features"
        lines = [f"| {unit} | max rel. eigenvalue error | max subspace sin | kernel error "
                 f"| <= {self.tol:g} |", "|---:|---:|---:|---:|---|"]
        for m, e in zip(self.counts, self.errors, strict=True):
            ok = "yes" if self.value(e) <= self.tol else "no"
            lines.append(f"| {m} | {e.max_eigenvalue_error:.3g} | {e.max_subspace_sin:.3g} | "
                         f"{e.kernel_error:.3g} | {ok} |")
        lines.append("")
        if self.recommended is None:
            lines.append(f"No count tried meets {self.tol:g} ({self.criterion}): try more "
                         f"{unit}.")
        else:
            lines.append(f"Recommended: {self.recommended} {unit} (estimate "
                         f"{self.value(self.errors[-1]):.3g} <= {self.tol:g}, "
                         f"{self.criterion}).")
        return "\n".join(lines) + "\n"


def _tolerance_value(error: Any, criterion: str) -> float:
    if criterion == "eigenvalues":
        return error.max_eigenvalue_error
    if criterion == "subspace":
        return error.max_subspace_sin
    return max(error.max_eigenvalue_error, error.max_subspace_sin)


def landmarks_for_tolerance(
    X: Any,
    tol: float,
    *,
    counts: Sequence[int] = (50, 100, 200, 400, 800, 1600),
    approximation: str = "nystrom",
    n_components: int = 2,
    criterion: str = "both",
    n_rows: int | None = None,
    random_state: int = 0,
    **params: Any,
) -> LandmarkRecommendation:
    """The fewest landmarks (or random features) whose estimated distance from exact
    kernel PCA is at most ``tol``.

    Fits :class:`kpca.NystromKernelPCA` (or :class:`kpca.RandomFeatureKernelPCA`) on
    ``X`` with each count in ascending order and estimates its error on one exact
    sub-problem of ``n_rows`` rows shared by all counts (:meth:`estimate_error`,
    docs/math.md, "How far from exact KPCA: the error estimate"); stops at the first
    count that meets ``tol``. With uniform landmarks and one ``random_state`` the
    landmark sets are nested, so the eigenvalue errors decrease with the count.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    tol : float
        In (0, 1): the largest acceptable relative eigenvalue error and/or sine of the
        largest principal angle (``criterion``).
    counts : sequence of int, default=(50, 100, 200, 400, 800, 1600)
        Counts to try (each >= 1; counts above ``n_samples`` are clipped to it, where
        Nyström is exact).
    approximation : {'nystrom', 'random-features'}, default='nystrom'
    n_components : int, default=2
        Components ``k`` whose eigenvalues and subspace are compared.
    criterion : {'both', 'eigenvalues', 'subspace'}, default='both'
        What ``tol`` bounds: ``'both'`` the larger of the two estimates.
    n_rows : int or None, default=None
        Rows of the exact sub-problem (``None``: the setting ``approx_error_rows``).
    random_state : int, default=0
        Landmarks or features, and the sub-problem's rows.
    **params
        Parameters of the estimator (``kernel``, ``gamma``, ``degree``, ``coef0``,
        ``landmarks``, ...).

    Returns
    -------
    LandmarkRecommendation
    """
    from .approx import NystromKernelPCA, RandomFeatureKernelPCA

    if not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and 0 < tol < 1):
        raise ValueError(f"tol must be a number in (0, 1) (a relative error or a sine); "
                         f"got {tol!r}.")
    if approximation not in APPROXIMATIONS:
        raise ValueError(f"approximation must be one of {', '.join(APPROXIMATIONS)}; got "
                         f"{approximation!r}.")
    if criterion not in TOLERANCE_CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(TOLERANCE_CRITERIA)}; got "
                         f"{criterion!r}.")
    if not isinstance(n_components, int) or isinstance(n_components, bool) or n_components < 1:
        raise ValueError(f"n_components must be an integer >= 1; got {n_components!r}.")
    wanted = list(counts)
    if not wanted or any(not isinstance(c, (int, np.integer)) or isinstance(c, bool) or c < 1
                         for c in wanted):
        raise ValueError(f"counts must be a non-empty list of integers >= 1; got {counts!r}.")
    n = X.shape[0]
    if approximation == "nystrom":
        make = lambda m, **p: NystromKernelPCA(  # noqa: E731
            n_components, n_landmarks=m, random_state=random_state, **p)
        wanted = [min(int(c), n) for c in wanted]
    else:
        make = lambda m, **p: RandomFeatureKernelPCA(  # noqa: E731
            n_components, n_features=m, random_state=random_state, **p)
    wanted = sorted(set(int(c) for c in wanted))
    rng = check_random_state(random_state)
    tried: list[int] = []
    errors: list[Any] = []
    ref = None
    recommended = None
    for i, m in enumerate(wanted):
        _progress(f"{approximation} {m}", i + 1, len(wanted))
        est = make(m, **params).fit(X)
        if ref is None:
            # one exact sub-problem for every count, with the first fit's kernel (its
            # gamma heuristic resolved once): the counts differ only by the approximation
            params = {**params, "kernel": est.kernel_}
            params.pop("gamma", None)
            ref = est.error_reference(X, n_rows=n_rows, random_state=rng)
        err = est.estimate_error(X, reference=ref, random_state=random_state)
        tried.append(m)
        errors.append(err)
        logger.info("landmarks_for_tolerance: %s %d: eigenvalues %.3g, subspace %.3g",
                    approximation, m, err.max_eigenvalue_error, err.max_subspace_sin)
        if _tolerance_value(err, criterion) <= tol:
            recommended = m
            break
    return LandmarkRecommendation(float(tol), criterion, approximation,
                                  {"kernel": repr(params["kernel"])}, tried, errors,
                                  recommended)
