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
  held-out rows, ``mean ||x - z*(x)||^2`` over the test folds, where ``z*`` is a
  pre-image of the projection of ``x`` on the first components (docs/math.md,
  "Pre-images and denoising"):
  the learned ridge pre-image (``fit_inverse_transform=True``), and the other
  pre-image methods when the estimator offers them
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

logger = logging.getLogger("kpca")

__all__ = [
    "CLASSIFIERS",
    "DEFAULT_CANDIDATES",
    "SelectionResult",
    "expand_candidates",
    "parallel_analysis",
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
        criterion ``method`` (pre-image method), and with ``n_components='auto'``
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
        head = (["rank", "parameters"] + (["k"] if auto else []) + (["pre-image"] if extra
                else []) + [f"{self.criterion} (mean)", "std"])
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in sorted(self.rows, key=lambda r: r["rank"]):
            cells = [str(r["rank"]), _params_text(r["params"])]
            if auto:
                cells.append(str(r.get("n_components", "")))
            if extra:
                cells.append(str(r.get("method", "")))
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
    alpha: float = 1e-3,
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
        selection (held-out pre-image reconstruction error).
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
        learned pre-image; others (``'fixed_point'``, ``'mds'``) are used when
        the estimator's ``inverse_transform`` accepts ``method=``.
    alpha : float, default=1e-3
        Ridge penalty of the learned pre-image (unsupervised criterion).
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
                             random_state, standardize, auto=n_components == "auto")


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
    matrix of all rows that each fold slices.

    A fold's model is ``KernelPCA(kernel='precomputed')`` fitted on ``K[train, train]``
    and applied to ``K[test, train]``: the kernel PCA the pipeline fits on the training
    rows (centred with the training rows' means) and its projection of the held-out
    rows. The kernel is resolved on each training fold as the pipeline's would be (a
    ``gamma`` heuristic can differ between folds); K is computed again only when the
    resolved kernel or the fold's scaling differs from the previous fold's.
    """
    # set_params: an unknown name is a ValueError (a failed row), as in the pipeline
    base = KernelPCA(n_components=k, random_state=random_state, n_jobs=n_jobs).set_params(
        **params)
    base._validate_params()
    kernel = base._make_kernel()
    key, K = None, None
    scores = []
    for f, (tr, te) in enumerate(folds, 1):
        _progress(f"candidate {number}/{n_candidates}, fold {f}/{len(folds)}",
                  (number - 1) * len(folds) + f - 1, n_candidates * len(folds))
        Xf = scaled[f - 1]
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
        Z_test = model.transform(K[np.ix_(te, tr)])
        # the classifier sees n x k scores: BLAS threads woken for its small products
        # cost more than they save (lbfgs on the digits: 4x the CPU time on 2 threads)
        with blas_threads(1):
            fitted = clone(clf).fit(Z_train, y[tr])
            scores.append(float(scorer(fitted, Z_test, y[te])))
    return np.asarray(scores)


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _reconstruct(est: KernelPCA, X: np.ndarray, method: str) -> np.ndarray:
    Y = est.transform(X)
    if method == "ridge":
        return np.asarray(est.inverse_transform(Y))
    return np.asarray(est.inverse_transform(Y, method=method))


def _unsupervised(X, params_list, ks, cv, methods, alpha, random_state, standardize, *,
                  auto=False):
    if sp_issparse(X):
        raise ValueError("unsupervised selection needs dense X (pre-images are dense).")
    splitter = KFold(cv, shuffle=True, random_state=random_state) if isinstance(cv, int) else cv
    folds = []  # (training rows, held-out rows), scaled by the training fold's scaler
    for train, test in splitter.split(X):
        if standardize:
            scaler = StandardScaler().fit(X[train])
            folds.append((scaler.transform(X[train]), scaler.transform(X[test])))
        else:
            folds.append((X[train], X[test]))
    base = KernelPCA(fit_inverse_transform=True, alpha=alpha, random_state=random_state)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for number, (params, k) in enumerate(zip(params_list, ks, strict=True), 1):
        per_method: dict[str, list[float]] = {m: [] for m in methods}
        for f, (X_train, X_test) in enumerate(folds, 1):
            _progress(f"candidate {number}/{len(params_list)}, fold {f}/{len(folds)}",
                      (number - 1) * len(folds) + f - 1, len(params_list) * len(folds))
            est = clone(base).set_params(n_components=k, **params)
            try:
                est.fit(X_train)
            except (ValueError, np.linalg.LinAlgError) as exc:
                notes.append(f"{_params_text(params)}: fit failed ({_first_line(exc)})")
                for m in methods:
                    per_method[m].append(np.nan)
                continue
            for m in methods:
                try:
                    R = _reconstruct(est, X_test, m)
                    per_method[m].append(float(np.mean((X_test - R) ** 2)))
                except TypeError:  # this kpca has no such pre-image method
                    per_method[m].append(np.nan)
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
    rows = [r for r in rows if not (r["method"] != "ridge" and not math.isfinite(r["score"])
                                    and all(not math.isfinite(q["score"]) for q in rows
                                            if q["method"] == r["method"]))]
    for r, rank in zip(rows, _ranks([r["score"] for r in rows], False), strict=True):
        r["rank"] = rank
    best = min(rows, key=lambda r: r["rank"])
    best_est = clone(base).set_params(n_components=ks[params_list.index(best["params"])],
                                      **best["params"])
    best_est = (make_pipeline(StandardScaler(), best_est) if standardize else best_est).fit(X)
    logger.info("select_kernel: best %s / %s (reconstruction MSE %.4g)", best["params"],
                best["method"], best["score"])
    return SelectionResult(rows, "reconstruction_mse", dict(best["params"]), best_est, notes)


def sp_issparse(X: Any) -> bool:
    """True for a SciPy sparse matrix or array."""
    import scipy.sparse as sp

    return sp.issparse(X)
