"""Plots render headless (Agg) and contain what they claim."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.contour import ContourSet  # noqa: E402

from kpca import KernelPCA  # noqa: E402
from kpca import plotting as kp  # noqa: E402
from kpca.datasets import three_clusters  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def toy():
    X, y = three_clusters(n_per_cluster=20)
    model = KernelPCA(8, kernel="rbf", gamma=10.0).fit(X)
    return X, y, model


def test_embedding_one_scatter_per_label(tmp_path, toy):
    X, y, model = toy
    Z = model.transform(X)
    fig, ax = kp.plot_embedding(Z, y, components=(0, 2), path=tmp_path / "e.png")
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(scatters) == 3
    for lab, sc in zip(range(3), scatters, strict=True):
        np.testing.assert_allclose(sc.get_offsets(), Z[y == lab][:, [0, 2]])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["0", "1", "2"]
    assert ax.get_xlabel() == "component 1" and ax.get_ylabel() == "component 3"
    assert (tmp_path / "e.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="labels"):
        kp.plot_embedding(Z, y[:-1])


def test_embedding_legend_covers_no_point(toy):
    # issue 34: the legend, inside the axes, covered points
    X, y, model = toy
    fig, ax = kp.plot_embedding(model.transform(X), y)
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 > ax.get_window_extent().x1  # right of the axes
    points = ax.transData.transform(model.transform(X)[:, :2])
    assert not legend.count_contains(points)
    # on the caller's axes it stays inside, see-through
    fig, ax = plt.subplots()
    kp.plot_embedding(model.transform(X), y, ax=ax)
    assert ax.get_legend().get_frame().get_alpha() == 0.6


def test_scree_bars_are_the_ratios(tmp_path, toy):
    model = toy[2]
    fig, ax = kp.plot_scree(model, path=tmp_path / "s.svg")
    heights = [p.get_height() for p in ax.patches]
    np.testing.assert_allclose(heights, model.explained_variance_ratio_)
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), np.cumsum(model.explained_variance_ratio_))
    assert (tmp_path / "s.svg").read_text().lstrip().startswith("<?xml")


def test_contours_evaluate_the_projection_functions(toy):
    X, y, model = toy
    extent = (-1, 1, -0.6, 1.0)
    xx, yy, V = kp.projection_grid(model, extent, resolution=7, components=[0, 3])
    # independent: y_l(t) = sum_i alpha_li K~_t[t, i] with the training-mean centring
    G = np.column_stack([xx.ravel(), yy.ravel()])
    K = np.exp(-10 * ((X[:, None] - X[None]) ** 2).sum(-1))
    Kt = np.exp(-10 * ((G[:, None] - X[None]) ** 2).sum(-1))
    Kt_c = Kt - K.mean(0)[None] - Kt.mean(1)[:, None] + K.mean()
    A = model.eigenvectors_ / np.sqrt(model.eigenvalues_)
    expected = Kt_c @ A
    np.testing.assert_allclose(V[0].ravel(), expected[:, 0], atol=1e-10)
    np.testing.assert_allclose(V[1].ravel(), expected[:, 3], atol=1e-10)

    fig, axes = kp.plot_contours(model, X, y, n_components=6, ncols=4, resolution=30)
    assert axes.shape == (2, 4)
    visible = [ax for ax in axes.flat if ax.get_visible()]
    assert len(visible) == 6
    for c, ax in enumerate(visible):
        assert ax.get_title().startswith(f"component {c + 1} (")
        sets = [col for col in ax.collections if isinstance(col, ContourSet)]
        assert len(sets) == 2 and sets[0].filled and not sets[1].filled
        # the contour levels span the range of this component's projection function
        # over the default extent (bounding box of the data plus 15 %)
        lo, hi = X.min(0), X.max(0)
        pad = 0.15 * (hi - lo)
        ext = (lo[0] - pad[0], hi[0] + pad[0], lo[1] - pad[1], hi[1] + pad[1])
        _, _, Vc = kp.projection_grid(model, ext, 30, [c])
        assert sets[1].levels.min() <= Vc.min() and sets[1].levels.max() >= Vc.max()
        points = [col for col in ax.collections if isinstance(col, PathCollection)]
        assert len(points) == 3  # one scatter per label
        for lab, sc in zip(range(3), points, strict=True):
            np.testing.assert_allclose(sc.get_offsets(), X[y == lab])
    # one figure legend names the labels' colours
    assert len(fig.legends) == 1
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["0", "1", "2"]
    fig, _ = kp.plot_contours(model, X, n_components=2, resolution=10)
    assert fig.legends == []  # no labels, no legend
    with pytest.raises(ValueError, match="2-D inputs"):
        kp.plot_contours(KernelPCA(2).fit(np.random.default_rng(0).random((10, 3))))
    # no component, or a one-point grid: numpy's "need at least one array to stack"
    for bad, match in (({"n_components": 0}, "n_components == 0, must be >= 1"),
                       ({"resolution": 1}, "resolution == 1, must be >= 2"),
                       ({"levels": -3}, "levels == -3, must be >= 1")):
        with pytest.raises(ValueError, match=match):
            kp.plot_contours(model, X, **bad)


def test_gallery_and_denoising_fallback(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((30, 16))
    model = KernelPCA(4, kernel="rbf", gamma=0.5, fit_inverse_transform=True).fit(X)
    R = kp.reconstruct(model, X[:5])
    expected = (model.denoise(X[:5]) if hasattr(model, "denoise")
                else model.inverse_transform(model.transform(X[:5])))
    np.testing.assert_allclose(R, expected)
    fig, axes = kp.denoising_gallery(model, X[:5] + 0.1, (4, 4), X_clean=X[:5],
                                     others={"mean": np.tile(X.mean(0), (5, 1))},
                                     n_images=5, path=tmp_path / "g.png")
    assert axes.shape == (4, 5)
    assert [axes[r, 0].get_ylabel() for r in range(4)] == [
        "original", "noisy", "kernel PCA", "mean"]
    np.testing.assert_allclose(axes[1, 2].images[0].get_array(), (X[2] + 0.1).reshape(4, 4))
    assert (tmp_path / "g.png").stat().st_size > 1000


def test_outlier_map(tmp_path):
    sd, od = np.array([1.0, 2.0, 5.0]), np.array([0.5, 3.0, 0.2])
    fig, ax = kp.plot_outlier_map(sd, od, score_cutoff=3.0, orthogonal_cutoff=1.0,
                                  annotate=2)
    np.testing.assert_allclose(ax.collections[0].get_offsets(), np.c_[sd, od])
    assert ax.get_lines()[0].get_xdata()[0] == 3.0  # vertical score cut-off
    assert ax.get_lines()[1].get_ydata()[0] == 1.0
    assert sorted(t.get_text() for t in ax.texts) == ["1", "2"]
    with pytest.raises(ValueError, match="differ in length"):
        kp.plot_outlier_map(sd, od[:2])


def test_bad_save_format_writes_nothing(tmp_path, toy):
    fig, ax = kp.plot_scree(toy[2])
    with pytest.raises(ValueError, match="unknown figure format"):
        kp.save_figure(fig, tmp_path / "x.jpgg")
    assert list(tmp_path.iterdir()) == []


def test_outlier_map_of_a_model(tmp_path):
    from kpca.robust import cutoffs, distances

    rng = np.random.default_rng(1)
    X = np.vstack([rng.standard_normal((40, 2)), [[6.0, 6.0], [0.0, 7.0]]])
    model = KernelPCA(2, kernel="rbf", gamma=0.2).fit(X)
    fig, ax = kp.plot_outlier_map(model, annotate=2, path=tmp_path / "o.svg")
    sd, od = distances(model)
    sd_cut, od_cut = cutoffs(model)
    pts = np.vstack([c.get_offsets() for c in ax.collections])
    np.testing.assert_allclose(np.sort(pts[:, 0]), np.sort(sd))
    np.testing.assert_allclose(np.sort(pts[:, 1]), np.sort(od))
    assert ax.get_lines()[0].get_xdata()[0] == pytest.approx(sd_cut)
    assert ax.get_lines()[1].get_ydata()[0] == pytest.approx(od_cut)
    legend = {t.get_text() for t in ax.get_legend().get_texts()}
    assert "regular" in legend and legend & {"orthogonal", "bad leverage", "good leverage"}
    # the two planted outliers are the annotated points
    assert sorted(t.get_text() for t in ax.texts) == ["40", "41"]
    # numbered from first_row: as lines of a file whose header is line 1
    fig, ax = kp.plot_outlier_map(model, annotate=2, first_row=2)
    assert sorted(t.get_text() for t in ax.texts) == ["42", "43"]
    # new rows: distances of X_new
    fig, ax = kp.plot_outlier_map(model, X=X[:5])
    assert sum(len(c.get_offsets()) for c in ax.collections) == 5
    with pytest.raises(ValueError, match="X="):
        kp.plot_outlier_map(model, od)
    # a negative count was drawn as no annotation (the command line accepted -5)
    with pytest.raises(ValueError, match="annotate == -5, must be >= 0"):
        kp.plot_outlier_map(model, annotate=-5)
    with pytest.raises(TypeError, match="annotate must be an instance of int"):
        kp.plot_outlier_map(model, annotate=1.5)


def test_contours_on_given_axes_and_zero_eigenvalues(toy):
    X, y, _ = toy
    lin = KernelPCA(4, kernel="linear").fit(X)  # 2-D data: components 3 and 4 are empty
    assert lin.eigenvalues_[2] == 0
    fig, axes = plt.subplots(2, 4)
    _, drawn = kp.plot_contours(lin, X, y, n_components=4, axes=axes[1], resolution=20)
    assert list(drawn) == list(axes[1])
    for c, ax in enumerate(axes[1]):
        sets = [col for col in ax.collections if isinstance(col, ContourSet)]
        if c < 2:
            assert len(sets) == 2
            # linear projection functions: straight, parallel contour lines
            levels = [seg for seg in sets[1].allsegs if len(seg)]
            for seg in levels[1:-1]:
                pts = seg[0]
                resid = np.linalg.lstsq(np.c_[pts[:, 0], np.ones(len(pts))], pts[:, 1],
                                        rcond=None)[1]
                assert resid.size == 0 or resid[0] < 1e-8
        else:
            assert sets == [] and "eigenvalue 0" in ax.texts[0].get_text()
    assert all(not ax.collections for ax in axes[0])  # the other row is untouched


def test_scree_null_draws_the_band_and_the_chosen_k(tmp_path):
    """The band spans the null's minimum to its threshold, in ratio units of the data
    (null eigenvalues / the data's trace), and the marker sits after the chosen k."""
    from matplotlib.collections import PolyCollection

    rng = np.random.default_rng(0)
    f = rng.normal(size=(200, 3))
    X = np.repeat(f, 3, axis=1) + 0.5 * rng.normal(size=(200, 9))
    model = KernelPCA(n_components="auto", random_state=0).fit(X)
    pa = model.parallel_analysis_
    assert pa.n_components == 3
    fig, ax = kp.plot_scree(model, null=True, path=tmp_path / "null.png")
    heights = [p.get_height() for p in ax.patches]
    np.testing.assert_allclose(heights, pa.eigenvalues / pa.trace)
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)
             and c.get_label().startswith("null")]
    assert len(bands) == 1
    verts = bands[0].get_paths()[0].vertices
    lo, hi = pa.null_eigenvalues.min(axis=0) / pa.trace, pa.threshold / pa.trace
    # the band's y values at each component are its bounds
    assert np.isclose(verts[:, 1].min(), lo.min()) and np.isclose(verts[:, 1].max(), hi.max())
    for i in range(pa.eigenvalues.size):
        at = verts[np.isclose(verts[:, 0], i + 1)][:, 1]
        assert np.isclose(at.min(), lo[i]) and np.isclose(at.max(), hi[i])
    marks = [ln for ln in ax.get_lines() if ln.get_label() == "chosen k = 3"]
    assert len(marks) == 1 and np.allclose(marks[0].get_xdata(), 3.5)
    threshold = [ln for ln in ax.get_lines() if ln.get_label().startswith("null 95")]
    np.testing.assert_allclose(threshold[0].get_ydata(), hi)
    # the kept bars are coloured, the others grey
    assert ax.patches[2].get_facecolor() != ax.patches[3].get_facecolor()
    assert (tmp_path / "null.png").read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(ValueError, match="n_components='auto'"):
        kp.plot_scree(KernelPCA(2).fit(X), null=True)
