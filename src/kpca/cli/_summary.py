"""Texts of the command line: a model file described for people (``kpca info``),
a kernel selection reported (``kpca select``)."""

from __future__ import annotations

from typing import Any

import numpy as np


def _fmt(values: Any) -> str:
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    return np.array2string(arr, precision=6, separator=", ", max_line_width=88, threshold=40)


def format_values(values: Any) -> str:
    """Numbers on one line, ``[12.5, 3.25, 0.00123]`` (6 significant digits), however
    many: a log line that numpy's repr would wrap at 75 characters."""
    arr = np.atleast_1d(np.asarray(values, dtype=float)).ravel()
    return "[" + ", ".join(f"{v:.6g}" for v in arr) + "]"


def format_summary(info: dict[str, Any]) -> str:
    """Lines describing a model, from :func:`kpca.io.model_summary` plus ``model`` (the
    file), and optionally ``estimator`` (its ``--estimator`` name) and
    ``n_samples_fit``.

    Parameters
    ----------
    info : dict

    Returns
    -------
    str
    """
    name = info.get("estimator")
    lines = [f"model:        {info['model']}",
             f"estimator:    {info['class']}" + (f" (--estimator {name})" if name else "")]
    if "kernel" in info:
        kp = ", ".join(f"{k}={v!r}" for k, v in info["kernel"]["params"].items())
        lines.append(f"kernel:       {info['kernel']['name']}({kp})")
    if info.get("n_samples_fit") is not None:
        d = info.get("n_features_in")
        what = f"x {d} features" if d is not None else "(non-vector objects, e.g. strings)"
        lines.append(f"fitted on:    {info['n_samples_fit']} samples {what}")
    if "input_scaling" in info:
        lines.append("inputs:       standardized (each column minus its training mean, "
                     "divided by its training standard deviation)")
    if "mode" in info:
        kept = ("every row kept" if info["mode"] == "exact" else
                f"{info['n_rows_kept']} landmark rows kept")
        lines.append(f"mode:         {info['mode']} ({kept}; 'kpca update' adds rows)")
    if "eigen_solver" in info:
        lines.append(f"solver:       {info['eigen_solver']}")
    if "n_components" in info:
        lines.append(f"n_components: {info['n_components']}")
        lines.append(f"eigenvalues:  {_fmt(info['eigenvalues'])}")
    if "explained_variance_ratio" in info:
        ratio = info["explained_variance_ratio"]
        lines.append(f"explained variance ratio: {_fmt(ratio)} (total {sum(ratio):.6g})")
    lines.append("parameters:")
    lines += [f"  {k} = {v!r}" for k, v in info["params"].items()]
    return "\n".join(lines)


#: how ``kpca select`` names its classifiers in the report
_CLASSIFIER_TEXT = {"logistic": "a logistic regression", "linear-svm": "a linear SVM",
                    "knn": "k nearest neighbours", "lda": "linear discriminant analysis",
                    "ridge": "a ridge classifier"}


def format_selection(data: Any, result: Any, *, supervised: bool, cv: int,
                     n_components: int | str, classifier: str = "logistic") -> str:
    """The Markdown report of ``kpca select``: the criterion, the table of
    :meth:`kpca.selection.SelectionResult.table` and the best parameters."""
    clf = _CLASSIFIER_TEXT.get(classifier, classifier)
    what = (f"cross-validated {result.criterion} of {clf} on the kernel PCA features"
            if supervised else "held-out reconstruction error (MSE, input space) through "
            "the learned pre-image (column alpha: its ridge penalty, by generalized "
            "cross-validation on each training fold unless --alpha fixes it; lower is "
            "better)")
    k = ("each candidate's number of components by parallel analysis (column k)"
         if n_components == "auto" else f"{n_components} components")
    best = ", ".join(f"{k}={v!r}" for k, v in result.best_params.items())
    return (f"# kpca select: {data}\n\nCriterion: {what}, {cv} folds, {k}."
            f"\n\n{result.table()}\nBest: {best}\n")
