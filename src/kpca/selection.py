"""Choosing the kernel and its parameters, scored honestly on held-out data.

Two criteria, both cross-validated (the score of a candidate is measured on
data its model did not see):

* **supervised** (labels ``y`` given): the accuracy of a classifier on the
  kernel PCA features, ``Pipeline(KernelPCA, LogisticRegression)`` scored by
  :func:`sklearn.model_selection.cross_val_score`, candidate by candidate (a
  candidate that fails is a row whose reason is in :attr:`SelectionResult.notes`);
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, ParameterGrid, check_cv, cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from ._config import config_context, get_config
from ._kernel_pca import KernelPCA
from ._parallel_analysis import ParallelAnalysis, check_parallel_analysis

logger = logging.getLogger("kpca")

__all__ = [
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


@dataclass
class SelectionResult:
    """Scores of every candidate.

    Attributes
    ----------
    rows : list of dict
        One per candidate: ``params`` (the KernelPCA parameters), ``score``
        (mean over folds), ``std``, ``rank`` (1 = best) and, for the
        unsupervised criterion, ``method`` (pre-image method).
    criterion : str
        ``'accuracy'`` (supervised, higher is better) or ``'reconstruction_mse'``
        (unsupervised, lower is better).
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
        higher = self.criterion == "accuracy"
        head = f"| rank | parameters | {self.criterion} (mean) | std |"
        extra = any("method" in r for r in self.rows)
        if extra:
            head = f"| rank | parameters | pre-image | {self.criterion} (mean) | std |"
        lines = [head, "|" + "---|" * (5 if extra else 4)]
        for r in sorted(self.rows, key=lambda r: r["rank"]):
            cells = [str(r["rank"]), _params_text(r["params"])]
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
    n_components: int = 2,
    cv: int | Any = 5,
    classifier: Any = None,
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
    n_components : int, default=2
        Components kept by every candidate.
    cv : int or cross-validation splitter, default=5
    classifier : estimator, default=None
        Supervised criterion; default ``LogisticRegression(max_iter=1000)``.
    preimage_methods : iterable of str, default=('ridge',)
        Unsupervised criterion: pre-image methods to score. ``'ridge'`` is the
        learned pre-image; others (``'fixed_point'``, ``'mds'``) are used when
        the estimator's ``inverse_transform`` accepts ``method=``.
    alpha : float, default=1e-3
        Ridge penalty of the learned pre-image (unsupervised criterion).
    n_jobs : int, default=None
        Parallel jobs of the supervised cross-validation.
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
    """
    params_list = expand_candidates(candidates)
    X = np.asarray(X, dtype=float) if not hasattr(X, "tocsr") else X
    if y is not None:
        return _supervised(X, y, params_list, n_components, cv, classifier, n_jobs,
                           random_state, standardize)
    return _unsupervised(X, params_list, n_components, cv, tuple(preimage_methods), alpha,
                         random_state, standardize)


def _supervised(X, y, params_list, n_components, cv, classifier, n_jobs, random_state,
                standardize):
    clf = classifier if classifier is not None else LogisticRegression(max_iter=1000)
    pipe = Pipeline([
        *([("scale", StandardScaler(with_mean=not sp_issparse(X)))] if standardize else []),
        ("kpca", KernelPCA(n_components=n_components, random_state=random_state)),
        ("clf", clf),
    ])
    # candidate by candidate, not GridSearchCV: a candidate that fails is a row with its
    # reason in the notes, not scikit-learn's FitFailedWarning with a traceback per fold
    splitter = check_cv(cv, y, classifier=True)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for number, params in enumerate(params_list, 1):
        logger.info("select_kernel: candidate %d of %d: %s", number, len(params_list), params)
        est = clone(pipe).set_params(**{f"kpca__{k}": v for k, v in params.items()})
        try:
            scores = cross_val_score(est, X, y, cv=splitter, n_jobs=n_jobs,
                                     error_score="raise")
        except (ValueError, np.linalg.LinAlgError) as exc:
            notes.append(f"{_params_text(params)}: failed ({_first_line(exc)})")
            scores = np.array([np.nan])
        ok = bool(np.all(np.isfinite(scores)))
        rows.append({"params": dict(params),
                     "score": float(np.mean(scores)) if ok else math.nan,
                     "std": float(np.std(scores)) if ok else math.nan})
    for r, rank in zip(rows, _ranks([r["score"] for r in rows], True), strict=True):
        r["rank"] = rank
    best = min(rows, key=lambda r: r["rank"])
    if not math.isfinite(best["score"]):
        raise ValueError("select_kernel: every candidate failed: " + "; ".join(notes))
    best_est = clone(pipe).set_params(
        **{f"kpca__{k}": v for k, v in best["params"].items()}).fit(X, y)
    logger.info("select_kernel: best %s (accuracy %.4f)", best["params"], best["score"])
    return SelectionResult(rows, "accuracy", dict(best["params"]), best_est, notes)


def _params_text(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _reconstruct(est: KernelPCA, X: np.ndarray, method: str) -> np.ndarray:
    Y = est.transform(X)
    if method == "ridge":
        return np.asarray(est.inverse_transform(Y))
    return np.asarray(est.inverse_transform(Y, method=method))


def _unsupervised(X, params_list, n_components, cv, methods, alpha, random_state,
                  standardize):
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
    base = KernelPCA(n_components=n_components, fit_inverse_transform=True, alpha=alpha,
                     random_state=random_state)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for number, params in enumerate(params_list, 1):
        logger.info("select_kernel: candidate %d of %d: %s", number, len(params_list), params)
        per_method: dict[str, list[float]] = {m: [] for m in methods}
        for X_train, X_test in folds:
            est = clone(base).set_params(**params)
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
                         "std": float(e.std()) if ok else math.nan})
    rows = [r for r in rows if not (r["method"] != "ridge" and not math.isfinite(r["score"])
                                    and all(not math.isfinite(q["score"]) for q in rows
                                            if q["method"] == r["method"]))]
    for r, rank in zip(rows, _ranks([r["score"] for r in rows], False), strict=True):
        r["rank"] = rank
    best = min(rows, key=lambda r: r["rank"])
    best_est = clone(base).set_params(**best["params"])
    best_est = (make_pipeline(StandardScaler(), best_est) if standardize else best_est).fit(X)
    logger.info("select_kernel: best %s / %s (reconstruction MSE %.4g)", best["params"],
                best["method"], best["score"])
    return SelectionResult(rows, "reconstruction_mse", dict(best["params"]), best_est, notes)


def sp_issparse(X: Any) -> bool:
    """True for a SciPy sparse matrix or array."""
    import scipy.sparse as sp

    return sp.issparse(X)
