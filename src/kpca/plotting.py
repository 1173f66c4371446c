"""Plots for kernel PCA (matplotlib, an optional dependency: ``pip install kpca[plot]``).

Every function returns the matplotlib objects it drew on — ``(fig, ax)`` or
``(fig, axes)`` — and accepts ``path=`` to save the figure (the format follows
the extension: ``.png``, ``.svg``, ``.pdf``; the file is written atomically).
matplotlib is imported only when a function is called. Without a display
(a server, CI) matplotlib uses its non-interactive Agg backend.

* :func:`plot_embedding` — scatter of two components, coloured by label;
* :func:`plot_scree` — explained variance per component and cumulated, or with the
  parallel-analysis null band and the chosen k (``null=``);
* :func:`plot_contours` — contour lines of the projection functions
  ``y_l(x) = sum_i alpha_li k~(x, x_i)`` over a 2-D input plane (the figures
  of Schölkopf, Smola & Müller 1998);
* :func:`plot_gallery` / :func:`denoising_gallery` — rows of images (originals,
  noisy, reconstructions);
* :func:`plot_outlier_map` — score distance vs orthogonal distance with cut-offs
  (robust PCA diagnostics: a fitted model, or plain arrays).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.utils import check_scalar

from ._files import atomic_write

logger = logging.getLogger("kpca")

__all__ = [
    "denoising_gallery",
    "plot_contours",
    "plot_embedding",
    "plot_gallery",
    "plot_outlier_map",
    "plot_scree",
    "projection_grid",
    "reconstruct",
    "save_figure",
]

SAVE_FORMATS = (".png", ".svg", ".pdf")


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
        raise ImportError(
            "kpca plots need matplotlib, which is not installed: pip install 'kpca[plot]'"
        ) from exc
    return plt


def _axes(ax: Any, **subplot_kw: Any) -> tuple[Any, Any]:
    if ax is not None:
        return ax.figure, ax
    plt = _pyplot()
    fig, ax = plt.subplots(**subplot_kw)
    return fig, ax


def save_figure(fig: Any, path: str | os.PathLike, *, dpi: int = 120) -> Path:
    """Save ``fig`` to ``path`` atomically (PNG, SVG or PDF by extension).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or path-like
    dpi : int, default=120
        Resolution of raster formats.

    Returns
    -------
    Path
    """
    path = Path(path)
    ext = path.suffix.lower()
    if ext not in SAVE_FORMATS:
        raise ValueError(
            f"{path}: unknown figure format {ext!r}; use one of {', '.join(SAVE_FORMATS)}."
        )
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format=ext[1:], dpi=dpi, bbox_inches="tight")
    logger.info("wrote figure %s", path)
    return path


def _finish(fig: Any, path: str | os.PathLike | None) -> None:
    if path is not None:
        save_figure(fig, path)


def _label_groups(labels: Any, n: int) -> list[tuple[Any, np.ndarray]]:
    if labels is None:
        return [(None, np.ones(n, dtype=bool))]
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"labels: expected {n} labels; got shape {labels.shape}.")
    return [(lab, labels == lab) for lab in np.unique(labels)]


def plot_embedding(
    Z: Any,
    labels: Any = None,
    *,
    components: tuple[int, int] = (0, 1),
    ax: Any = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
    **scatter_kw: Any,
) -> tuple[Any, Any]:
    """Scatter plot of two components of an embedding, coloured by label.

    Parameters
    ----------
    Z : array-like of shape (n_samples, n_components)
        Scores, e.g. ``KernelPCA.fit_transform(X)``.
    labels : array-like of shape (n_samples,), default=None
        One colour (and legend entry) per distinct label.
    components : (int, int), default=(0, 1)
        0-based indices of the components on the x and y axes.
    ax : matplotlib Axes, default=None
        Draw here instead of a new figure.
    title : str, default=None
    path : str or path-like, default=None
        Save the figure there.
    **scatter_kw
        Passed to ``ax.scatter``.

    Returns
    -------
    fig, ax
    """
    Z = np.asarray(Z, dtype=float)
    if Z.ndim != 2:
        raise ValueError(f"Z must be 2-D (samples x components); got shape {Z.shape}.")
    i, j = components
    if Z.shape[1] <= max(i, j):
        # one component: plot it against zero
        if Z.shape[1] == 1 and components == (0, 1):
            Z = np.hstack([Z, np.zeros_like(Z)])
        else:
            raise ValueError(f"Z has {Z.shape[1]} components; cannot plot {components}.")
    own = ax is None
    fig, ax = _axes(ax, figsize=(5, 4.5))
    kw = dict(s=14, alpha=0.8, edgecolors="none")
    kw.update(scatter_kw)
    for lab, mask in _label_groups(labels, Z.shape[0]):
        ax.scatter(Z[mask, i], Z[mask, j], label=None if lab is None else str(lab), **kw)
    ax.set_xlabel(f"component {i + 1}")
    ax.set_ylabel(f"component {j + 1}")
    if labels is not None and own:
        # right of the axes, where it covers no point (inside, 'best' still covered
        # some); the figure is saved with bbox_inches='tight', which keeps it
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                  fontsize="small", markerscale=1.5, frameon=True)
    elif labels is not None:  # the caller's axes (e.g. a grid): inside, see-through
        ax.legend(loc="best", fontsize="small", markerscale=1.5, frameon=True,
                  framealpha=0.6)
    if title:
        ax.set_title(title)
    _finish(fig, path)
    return fig, ax


def plot_scree(
    model_or_ratios: Any,
    *,
    null: Any = None,
    cumulative: bool | None = None,
    ax: Any = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
) -> tuple[Any, Any]:
    """Explained-variance (scree) plot: bars per component, cumulative line; with
    ``null``, the parallel-analysis null band and the chosen k.

    Parameters
    ----------
    model_or_ratios : fitted KernelPCA or array-like
        A model with ``explained_variance_ratio_`` (fraction of the
        feature-space variance ``mu_l / trace(K~)``), or those ratios.
    null : kpca.ParallelAnalysis or True, default=None
        Draw parallel analysis (docs/math.md, "Parallel analysis"): bars for every
        candidate ``eigenvalues / trace`` (the kept ones in colour), the band from
        the null's smallest value to its threshold (``null_eigenvalues / trace``, the
        same scale), the threshold as a dashed line, and a vertical line after the
        chosen k. ``True``: the model's ``parallel_analysis_`` (fitted with
        ``n_components='auto'``); :func:`kpca.parallel_analysis` gives one for any
        data.
    cumulative : bool, default=None
        Also draw the cumulated ratio (a line with markers). ``None``: without
        ``null`` only (the band and the bars need the small scale).
    ax, title, path : see :func:`plot_embedding`

    Returns
    -------
    fig, ax
        With ``null``, the band is the ``PolyCollection`` labelled ``"null ..."`` and
        the chosen k the line labelled ``"chosen k = ..."``.
    """
    if null is True:
        null = getattr(model_or_ratios, "parallel_analysis_", None)
        if null is None:
            raise ValueError("plot_scree(null=True) needs a model fitted with "
                             "n_components='auto'; or pass kpca.parallel_analysis(X, ...).")
    if null is not None:
        return _scree_null(null, cumulative=bool(cumulative), ax=ax, title=title, path=path)
    ratios = getattr(model_or_ratios, "explained_variance_ratio_", model_or_ratios)
    ratios = np.asarray(ratios, dtype=float).ravel()
    if ratios.size == 0:
        raise ValueError("plot_scree: no explained variance ratios to plot.")
    cumulative = True if cumulative is None else cumulative
    fig, ax = _axes(ax, figsize=(5.5, 3.8))
    idx = np.arange(1, ratios.size + 1)
    ax.bar(idx, ratios, color="C0", label="per component")
    if cumulative:
        ax.plot(idx, np.cumsum(ratios), "o-", color="C1", markersize=3, label="cumulative")
        # 'best' keeps the legend off the bars and the rising cumulative line
        ax.legend(loc="best", fontsize="small")
    ax.set_xlabel("component")
    ax.set_ylabel("explained variance ratio")
    ax.set_ylim(0, max(1.0, float(np.cumsum(ratios)[-1])) * 1.02 if cumulative else None)
    ax.set_title(title or "explained variance (scree plot)")
    _finish(fig, path)
    return fig, ax


def _scree_null(pa: Any, *, cumulative: bool, ax: Any, title: str | None,
                path: str | os.PathLike | None) -> tuple[Any, Any]:
    """The scree plot of a :class:`kpca.ParallelAnalysis` (see :func:`plot_scree`)."""
    values = np.asarray(pa.eigenvalues, dtype=float)
    null = np.asarray(pa.null_eigenvalues, dtype=float)
    if values.size == 0 or null.ndim != 2 or null.shape[1] != values.size:
        raise ValueError("plot_scree: the parallel analysis has no eigenvalues to plot.")
    scale = float(pa.trace) if pa.trace > 0 else 1.0
    ratios, low = values / scale, null.min(axis=0) / scale
    high = np.asarray(pa.threshold, dtype=float) / scale
    k = int(pa.n_components)
    fig, ax = _axes(ax, figsize=(6.0, 3.8))
    idx = np.arange(1, values.size + 1)
    colors = ["C0" if i < k else "0.75" for i in range(values.size)]
    ax.bar(idx, ratios, color=colors, label=f"data ({k} above the null)")
    q = f"{100 * pa.quantile:g} %"
    ax.fill_between(idx, low, high, color="C3", alpha=0.25, zorder=3,
                    label=f"null: {pa.n_permutations} column permutations, min to {q}")
    ax.plot(idx, high, "--", color="C3", linewidth=1, zorder=4,
            label=f"null {q} quantile")
    ax.axvline(k + 0.5, color="k", linestyle=":", linewidth=1.2, zorder=5,
               label=f"chosen k = {k}")
    if cumulative:
        ax.plot(idx, np.cumsum(ratios), "o-", color="C1", markersize=3, label="cumulative")
    ax.set_xlabel("component")
    ax.set_ylabel("explained variance ratio")
    ax.set_xlim(0.4, values.size + 0.6)
    ax.legend(loc="upper right", fontsize="small")
    ax.set_title(title or f"scree plot with parallel analysis: k = {k}")
    _finish(fig, path)
    return fig, ax


def _check_plane(model: Any) -> None:
    n_features = getattr(model, "n_features_in_", None)
    if n_features is None:
        raise ValueError("contour plots need a model fitted on 2-D input vectors; this one "
                         "was fitted on non-vector objects (e.g. strings).")
    if n_features != 2:
        raise ValueError(
            f"contour plots need a model fitted on 2-D inputs; this one has {n_features} "
            "input features."
        )


def projection_grid(
    model: Any,
    extent: Sequence[float],
    resolution: int = 100,
    components: Sequence[int] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values of the projection functions on a regular grid of the input plane.

    Parameters
    ----------
    model : fitted KernelPCA on 2-D inputs
    extent : (xmin, xmax, ymin, ymax)
    resolution : int, default=100
        Grid points per axis.
    components : sequence of int, default=None
        0-based components; default all.

    Returns
    -------
    xx, yy : ndarray of shape (resolution, resolution)
    values : ndarray of shape (n_selected, resolution, resolution)
        ``values[c, i, j] = y_c((xx[i, j], yy[i, j]))``, from ``model.transform``.
    """
    _check_plane(model)
    x0, x1, y0, y1 = (float(v) for v in extent)
    xx, yy = np.meshgrid(np.linspace(x0, x1, resolution), np.linspace(y0, y1, resolution))
    G = np.column_stack([xx.ravel(), yy.ravel()])
    Y = np.asarray(model.transform(G))
    comps = list(range(Y.shape[1])) if components is None else list(components)
    values = np.stack([Y[:, c].reshape(xx.shape) for c in comps])
    return xx, yy, values


def plot_contours(
    model: Any,
    X: Any = None,
    labels: Any = None,
    *,
    n_components: int = 8,
    extent: Sequence[float] | None = None,
    resolution: int = 100,
    levels: int = 12,
    ncols: int = 4,
    filled: bool = True,
    axes: Any = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
) -> tuple[Any, np.ndarray]:
    """Contour lines of the first projection functions over the 2-D input plane.

    For each component ``l`` the function ``y_l(x) = sum_i alpha_li k~(x, x_i)``
    (the feature-space projection of a point ``x`` of the plane on the l-th
    principal direction; docs/math.md, "The eigenproblem") is evaluated on a grid with
    ``model.transform`` and drawn as contour lines, with the training points on
    top — the figures of Schölkopf, Smola & Müller (1998). A component with a
    zero eigenvalue (e.g. components 3, 4, ... of linear PCA on 2-D data) has no
    direction; its panel says so instead of drawing a constant.

    Parameters
    ----------
    model : fitted KernelPCA on 2-D inputs
    X : array-like of shape (n, 2), default=None
        Points to draw on top (e.g. the training data); also sets the extent.
    labels : array-like of shape (n,), default=None
        Colours of the points.
    n_components : int, default=8
        Number of leading components (clipped to the model's).
    extent : (xmin, xmax, ymin, ymax), default=None
        The plane region; default: the data's bounding box plus 15 %, or the
        training data's if ``X`` is None.
    resolution : int, default=100
    levels : int, default=12
        Number of contour levels.
    ncols : int, default=4
    filled : bool, default=True
        Shade between the lines (light colours) under the black lines.
    axes : sequence of matplotlib Axes, default=None
        Draw component ``c`` on ``axes[c]`` (e.g. one row of a larger figure, to
        compare kernels); at most ``len(axes)`` components are drawn and ``ncols``
        is ignored. Default: a new figure.
    title : str, default=None
        Figure title.
    path : str or path-like, default=None

    Returns
    -------
    fig, axes : axes is an ndarray of Axes (one per component; unused ones hidden)
    """
    for name, value, least in (("n_components", n_components, 1), ("resolution", resolution, 2),
                               ("levels", levels, 1), ("ncols", ncols, 1)):
        check_scalar(value, name, Integral, min_val=least)  # names it and the range
    plt = _pyplot()
    _check_plane(model)
    ref = np.asarray(X if X is not None else model.X_fit_, dtype=float)
    if extent is None:
        lo, hi = ref.min(axis=0), ref.max(axis=0)
        pad = 0.15 * np.maximum(hi - lo, 1e-12)
        extent = (lo[0] - pad[0], hi[0] + pad[0], lo[1] - pad[1], hi[1] + pad[1])
    k = int(min(n_components, len(model.eigenvalues_)))
    if axes is not None:
        axes = np.asarray(axes, dtype=object).ravel()
        k = min(k, axes.size)
        fig = axes[0].figure
    xx, yy, values = projection_grid(model, extent, resolution, range(k))
    if axes is None:
        ncols = max(1, min(ncols, k))
        nrows = -(-k // ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(2.9 * ncols, 2.8 * nrows),
                                 squeeze=False)
        own = True
    else:
        own = False
    ratios = getattr(model, "explained_variance_ratio_", None)
    for c, ax in enumerate(axes.flat):
        if c >= k:
            ax.set_visible(False)
            continue
        V = values[c]
        if not float(model.eigenvalues_[c]) > 0:  # no direction: y_c is identically 0
            ax.text(0.5, 0.5, "eigenvalue 0:\nno component", ha="center", va="center",
                    transform=ax.transAxes, fontsize="small", color="0.4")
        else:
            if filled:
                ax.contourf(xx, yy, V, levels=levels, cmap="RdBu_r", alpha=0.35)
            ax.contour(xx, yy, V, levels=levels, colors="k", linewidths=0.6)
        if X is not None:
            for lab, mask in _label_groups(labels, ref.shape[0]):
                ax.scatter(ref[mask, 0], ref[mask, 1], s=6, zorder=3,
                           c=None if lab is not None else "k",
                           label=None if lab is None else str(lab))
        name = f"component {c + 1}"
        if ratios is not None:
            name += f" ({100 * float(ratios[c]):.1f} %)"
        ax.set_title(name, fontsize="small")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_aspect("equal", adjustable="box")
    if title:
        fig.suptitle(title)
    if own:
        fig.tight_layout()
        if X is not None and labels is not None:
            # one legend for the figure, just below the panels (saving with
            # bbox_inches='tight' keeps it in the picture)
            handles, names = axes.flat[0].get_legend_handles_labels()
            fig.legend(handles, names, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                       ncol=min(len(names), 8), fontsize="small", frameon=False,
                       markerscale=2)
    _finish(fig, path)
    return fig, axes


def plot_gallery(
    rows: Sequence[Any],
    image_shape: tuple[int, int],
    *,
    row_titles: Sequence[str] | None = None,
    n_images: int | None = None,
    cmap: str = "gray_r",
    title: str | None = None,
    path: str | os.PathLike | None = None,
) -> tuple[Any, np.ndarray]:
    """A grid of images: one row per set (originals, noisy, reconstructions, ...).

    Parameters
    ----------
    rows : sequence of array-like, each of shape (n, h * w)
        Images as flattened rows.
    image_shape : (h, w)
    row_titles : sequence of str, default=None
        Label of each row (drawn at its left).
    n_images : int, default=None
        Columns; default: as many as the shortest row has.
    cmap : str, default='gray_r'
    title, path : see :func:`plot_embedding`

    Returns
    -------
    fig, axes : ndarray of Axes of shape (len(rows), n_images)
    """
    plt = _pyplot()
    rows = [np.asarray(r, dtype=float) for r in rows]
    if not rows:
        raise ValueError("plot_gallery: no images.")
    h, w = image_shape
    for r in rows:
        if r.ndim != 2 or r.shape[1] != h * w:
            raise ValueError(f"plot_gallery: rows must have shape (n, {h * w}); got {r.shape}.")
    n = min(r.shape[0] for r in rows) if n_images is None else int(n_images)
    # one colour scale for all rows, set by the first (the originals)
    vmin, vmax = float(rows[0][:n].min()), float(rows[0][:n].max())
    fig, axes = plt.subplots(len(rows), n, figsize=(0.9 * n + 1.2, 0.95 * len(rows) + 0.3),
                             squeeze=False)
    for r, imgs in enumerate(rows):
        for c in range(n):
            ax = axes[r, c]
            ax.imshow(imgs[c].reshape(h, w), cmap=cmap, vmin=vmin, vmax=vmax,
                      interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
        if row_titles is not None:
            axes[r, 0].set_ylabel(row_titles[r], rotation=0, ha="right", va="center",
                                  fontsize="small")
    if title:
        fig.suptitle(title)
    fig.subplots_adjust(wspace=0.05, hspace=0.05)
    _finish(fig, path)
    return fig, axes


def reconstruct(model: Any, X: Any, n_components: int | None = None) -> np.ndarray:
    """Denoise / reconstruct ``X`` with a fitted model: ``model.denoise`` if it has one,
    otherwise ``inverse_transform(transform(X))`` (learned pre-image).

    Parameters
    ----------
    model : fitted KernelPCA (``fit_inverse_transform=True`` for the fallback)
    X : array-like of shape (n, d)
    n_components : int, default=None
        Passed to ``denoise`` when it is available.

    Returns
    -------
    ndarray of shape (n, d)
    """
    denoise = getattr(model, "denoise", None)
    if callable(denoise):
        kw = {} if n_components is None else {"n_components": n_components}
        return np.asarray(denoise(X, **kw))
    return np.asarray(model.inverse_transform(model.transform(X)))


def denoising_gallery(
    model: Any,
    X_noisy: Any,
    image_shape: tuple[int, int],
    *,
    X_clean: Any = None,
    others: dict[str, Any] | None = None,
    n_images: int = 10,
    label: str = "kernel PCA",
    title: str | None = None,
    path: str | os.PathLike | None = None,
) -> tuple[Any, np.ndarray]:
    """Gallery of originals, noisy inputs and their kernel PCA reconstructions.

    Parameters
    ----------
    model : fitted KernelPCA (see :func:`reconstruct`)
    X_noisy : array-like of shape (n, h * w)
    image_shape : (h, w)
    X_clean : array-like of shape (n, h * w), default=None
        The noise-free images, shown as the first row.
    others : dict of str to array-like, default=None
        More rows (e.g. ``{"linear PCA": ...}``), drawn after the kernel PCA row.
    n_images : int, default=10
    label : str, default='kernel PCA'
        Title of the row of the model's reconstructions.
    title, path : see :func:`plot_embedding`

    Returns
    -------
    fig, axes
    """
    Xn = np.asarray(X_noisy, dtype=float)[:n_images]
    rows, names = [], []
    if X_clean is not None:
        rows.append(np.asarray(X_clean, dtype=float)[:n_images])
        names.append("original")
    rows.append(Xn)
    names.append("noisy")
    rows.append(reconstruct(model, Xn))
    names.append(label)
    for name, R in (others or {}).items():
        rows.append(np.asarray(R, dtype=float)[:n_images])
        names.append(name)
    return plot_gallery(rows, image_shape, row_titles=names, title=title, path=path)


#: colours of the outlier-map categories of :func:`kpca.robust.outlier_map`
_CATEGORY_COLOURS = {"regular": "tab:blue", "good leverage": "tab:green",
                     "orthogonal": "tab:orange", "bad leverage": "tab:red"}


def plot_outlier_map(
    score_distance: Any,
    orthogonal_distance: Any = None,
    *,
    X: Any = None,
    score_cutoff: float | None = None,
    orthogonal_cutoff: float | None = None,
    labels: Any = None,
    annotate: int = 0,
    ax: Any = None,
    title: str | None = None,
    path: str | os.PathLike | None = None,
    first_row: int = 0,
) -> tuple[Any, Any]:
    """Outlier map of (robust) kernel PCA: score distance vs orthogonal distance.

    The score distance of a point is its (kernelised) Mahalanobis distance
    within the retained subspace, the orthogonal distance its distance to the
    subspace (feature-space reconstruction error; docs/math.md, "Robust KPCA and
    diagnostics"). Points to the
    right of ``score_cutoff`` are leverage points; above ``orthogonal_cutoff``
    orthogonal outliers; both: bad leverage points.

    Two ways to call it:

    * ``plot_outlier_map(model, X=None)`` with a fitted kernel PCA model (any
      :class:`kpca.KernelPCA`, robust or not): distances and cut-offs come from
      :func:`kpca.robust.outlier_map` (rows of ``X``, or the training data), and
      the points are coloured by category (regular, good leverage, orthogonal,
      bad leverage) unless ``labels`` are given;
    * ``plot_outlier_map(sd, od, score_cutoff=..., orthogonal_cutoff=...)`` with
      plain arrays.

    Parameters
    ----------
    score_distance : fitted KernelPCA, or array-like of shape (n,)
    orthogonal_distance : array-like of shape (n,), default=None
        Required with arrays; must be None with a model.
    X : array-like, default=None
        With a model: the rows to place on the map (default: the training data).
    score_cutoff, orthogonal_cutoff : float, default=None
        Drawn as dashed lines when given (with a model: the model's cut-offs
        unless given).
    labels : array-like of shape (n,), default=None
        Colours.
    annotate : int, default=0
        Write the name of this many most outlying points (largest
        ``sd / sd_cutoff + od / od_cutoff``, or ``sd + od`` without cut-offs).
    ax, title, path : see :func:`plot_embedding`
    first_row : int, default=0
        The number ``annotate`` writes for the first row, the others following on
        (default: 0-based row indices; the command line passes the first data row's
        line number in the file).

    Returns
    -------
    fig, ax
    """
    check_scalar(annotate, "annotate", Integral, min_val=0)
    check_scalar(first_row, "first_row", Integral)
    if hasattr(score_distance, "eigenvalues_") or hasattr(score_distance, "fit"):
        if orthogonal_distance is not None:
            raise ValueError("plot_outlier_map(model, ...): pass the rows as X=, not a second "
                             "array of distances.")
        om = score_distance.outlier_map(X)
        score_distance, orthogonal_distance = om.score_distance, om.orthogonal_distance
        score_cutoff = om.sd_cutoff if score_cutoff is None else score_cutoff
        orthogonal_cutoff = om.od_cutoff if orthogonal_cutoff is None else orthogonal_cutoff
        by_category = labels is None
        if by_category:
            labels = om.category
    elif orthogonal_distance is None:
        raise ValueError("plot_outlier_map: pass a fitted model, or both the score and the "
                         "orthogonal distances.")
    elif X is not None:
        raise ValueError("plot_outlier_map: X= is only used with a fitted model.")
    else:
        by_category = False
    sd = np.asarray(score_distance, dtype=float).ravel()
    od = np.asarray(orthogonal_distance, dtype=float).ravel()
    if sd.shape != od.shape:
        raise ValueError(
            f"score and orthogonal distances differ in length ({sd.size} vs {od.size})."
        )
    fig, ax = _axes(ax, figsize=(5.5, 4.5))
    groups = _label_groups(labels, sd.size)
    if by_category:  # fixed order and colours: regular first, bad leverage last
        groups.sort(key=lambda g: list(_CATEGORY_COLOURS).index(g[0]))
    for lab, mask in groups:
        colour = _CATEGORY_COLOURS.get(lab) if by_category else None
        ax.scatter(sd[mask], od[mask], s=14, alpha=0.8, color=colour,
                   label=None if lab is None else str(lab))
    if score_cutoff is not None:
        ax.axvline(score_cutoff, color="r", ls="--", lw=1, label="score cut-off")
    if orthogonal_cutoff is not None:
        ax.axhline(orthogonal_cutoff, color="r", ls=":", lw=1, label="orthogonal cut-off")
    if annotate:
        s = sd / (score_cutoff or 1.0) + od / (orthogonal_cutoff or 1.0)
        for i in np.argsort(-s)[:annotate]:
            ax.annotate(str(first_row + i), (sd[i], od[i]), fontsize="x-small",
                        xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("score distance")
    ax.set_ylabel("orthogonal distance")
    if labels is not None or score_cutoff is not None or orthogonal_cutoff is not None:
        ax.legend(loc="best", fontsize="small")
    ax.set_title(title or "outlier map")
    _finish(fig, path)
    return fig, ax
