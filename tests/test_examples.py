"""The gallery's example scripts (``examples/plot_*.py``) and ``kpca demo``
(:mod:`kpca.demo`), which finds them and runs them cell by cell as the gallery does.

The runner is tested on small scripts written here; the examples' numbers against
independent computations (scikit-learn, a NumPy SVD)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import kpca.demo
from kpca.demo import example_names, markdown, parse, run_example

pytest.importorskip("matplotlib")
pytest.importorskip("pandas")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = ROOT / "examples"
SCRIPTS = sorted(EXAMPLES_DIR.glob("plot_*.py"))

TOY = '''"""
A toy example
=============

Its introduction, with ``code``.
"""

# %%
# First cell
# ----------
#
# Text of the first cell.
import os

import matplotlib.pyplot as plt
import pandas as pd

x = 41
print("printed", x + 1)

# %%
# Two figures, the second in its own cell.
plt.plot([0, 1], [1, 0])
plt.show()

# %%
plt.figure()
plt.plot([0, 1], [0, 1])
# sphinx_gallery_thumbnail_number = 2
quick = os.environ.get("KPCA_DEMO_QUICK")

# %%
# A table as the last expression, shown.
pd.DataFrame({"a": [1, 2]})

# %%
# A last expression without an HTML view: not shown.
len("abc")
'''


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(kpca.demo.ENV, raising=False)


def _narrow(ex) -> None:
    """What the example printed fits the gallery's page (no text box that runs off it)."""
    lines = [ln for c in ex.cells for ln in c.output.splitlines()]
    assert lines and max(map(len, lines)) <= 88, max(lines, key=len)


def _pixels(path: Path) -> np.ndarray:
    import matplotlib.image

    return matplotlib.image.imread(path)


# ----------------------------------------------------------------------------- the runner
def test_parse_splits_a_script_as_sphinx_gallery_does(tmp_path):
    """Title, introduction and cells, compared with sphinx-gallery's own parser where it
    is installed."""
    script = tmp_path / "plot_toy.py"
    script.write_text(TOY, encoding="utf-8")
    title, intro, cells = parse(script)
    assert title == "A toy example" and intro == "Its introduction, with ``code``."
    assert [c.text.splitlines()[0] if c.text else "" for c in cells] == [
        "First cell", "Two figures, the second in its own cell.", "",
        "A table as the last expression, shown.",
        "A last expression without an HTML view: not shown."]
    assert cells[0].code.startswith("import os") and cells[0].line == 13
    assert TOY.splitlines()[cells[1].line - 1] == "plt.plot([0, 1], [1, 0])"
    assert "sphinx_gallery_thumbnail_number" not in cells[2].code  # as on the pages

    gallery = pytest.importorskip("sphinx_gallery.py_source_parser")
    _, blocks = gallery.split_code_and_text_blocks(str(script), return_node=False)
    code = [b.content.strip() for b in blocks if b.type == "code" and b.content.strip()]
    assert [c.code.strip() for c in cells] == [
        "\n".join(ln for ln in b.splitlines() if "sphinx_gallery_" not in ln) for b in code]
    texts = [b.content.strip() for b in blocks[1:] if b.type == "text"]
    assert [c.text.strip() for c in cells if c.text] == texts


def test_run_example_runs_the_cells_in_order(tmp_path, monkeypatch):
    script = tmp_path / "plot_toy.py"
    script.write_text(TOY, encoding="utf-8")
    monkeypatch.setenv(kpca.demo.QUICK_ENV, "before")
    import matplotlib.pyplot as plt

    show = plt.show
    ex = run_example(str(script), tmp_path / "out", quick=True)
    assert ex.name == "toy" and ex.title == "A toy example" and ex.seconds > 0
    assert ex.namespace["x"] == 41 and ex.namespace["quick"] == "1"
    assert os.environ[kpca.demo.QUICK_ENV] == "before" and plt.show is show  # restored
    assert not plt.get_fignums()  # saved and closed
    out = [c.output for c in ex.cells]
    assert out[0] == "printed 42\n" and out[1] == out[2] == "" and out[4] == ""
    assert out[3].split() == ["a", "0", "1", "1", "2"]  # the DataFrame, as text
    figures = [[p.name for p in c.figures] for c in ex.cells]
    assert figures == [[], ["toy.png"], ["toy_2.png"], [], []]
    # the first figure falls, the second rises: each cell's own figure in its file
    first, second = (_pixels(tmp_path / "out" / n)[..., :3].mean(axis=2)
                     for n in ("toy.png", "toy_2.png"))
    assert not np.allclose(first, second)
    report = kpca.demo.format_report([ex])
    assert report.index("### First cell") < report.index("printed 42") < report.index(
        "![toy](toy.png)") < report.index("![toy_2](toy_2.png)")
    assert "- [A toy example](#a-toy-example)" in report
    assert "Its introduction, with `code`." in report


def test_an_error_points_at_the_script_line(tmp_path):
    script = tmp_path / "plot_bad.py"
    script.write_text('"""\nBad\n===\n"""\n\n# %%\n# text\nx = 1\n\n# %%\ny = 1 / 0\n')
    with pytest.raises(ZeroDivisionError) as info:
        run_example(str(script), tmp_path)
    frame = info.traceback[-1]
    assert Path(frame.path) == script and frame.lineno + 1 == 11
    (tmp_path / "plot_none.py").write_text("x = 1\n")
    with pytest.raises(ValueError, match="starts with a docstring"):
        run_example(str(tmp_path / "plot_none.py"), tmp_path)
    (tmp_path / "plot_untitled.py").write_text('"""Just text."""\n')
    with pytest.raises(ValueError, match="no title"):
        run_example(str(tmp_path / "plot_untitled.py"), tmp_path)


def test_markdown_of_the_examples_rest():
    text = ("Heading\n-------\n\nUse :func:`kpca.text.stylometry` and ``KernelPCA``,\n"
            ":math:`k(x, y)`, `a link <https://example.org>`_; run::\n\n"
            "    kpca demo\n\n.. math::\n\n   y = 1\n")
    assert markdown(text).splitlines() == [
        "### Heading", "", "Use `kpca.text.stylometry` and `KernelPCA`,",
        "$k(x, y)$, [a link](https://example.org); run:", "", "    kpca demo", "",
        "$$", "y = 1", "$$"]


# ----------------------------------------------------------------------------- the scripts
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_each_example_is_a_gallery_script(script):
    """A title and an introduction, text between the cells, no command line of its own,
    and nothing written next to it (sphinx-gallery runs it in examples/)."""
    title, intro, cells = parse(script)
    assert title and len(intro) > 100
    assert len(cells) >= 3 and sum(bool(c.text) for c in cells) >= 3
    assert all(c.code or c.text for c in cells)
    source = script.read_text(encoding="utf-8")
    assert "argparse" not in source and "savefig" not in source
    assert "plt.show()" in source  # where the code makes its figures
    assert max(map(len, source.splitlines())) <= 88  # the code fits the page


def test_the_examples_are_in_the_demo_and_in_order():
    names = example_names(EXAMPLES_DIR)
    assert {f"plot_{n}.py" for n in names} == {p.name for p in SCRIPTS}
    assert names[:2] == ["circles_moons", "toy_contours"]
    listed = [n for n in kpca.demo.ORDER if n in names]
    assert names[:len(listed)] == listed  # the others, not listed, follow


def test_circles_moons_embeddings_equal_sklearns(tmp_path):
    ex = run_example("circles_moons", tmp_path)
    ns = ex.namespace
    X, y = ns["data"]["circles"]
    scores = ns["scores"]
    assert scores.loc[("circles", "RBF (gamma=10)"), "accuracy"] == 1.0
    assert scores.loc[("circles", "linear PCA"), "accuracy"] < 0.6
    for label, params in [("RBF (gamma=10)", dict(kernel="rbf", gamma=10)),
                          ("linear PCA", dict(kernel="linear"))]:
        Z = ns["embeddings"]["circles", label]
        sk = SkKernelPCA(n_components=2, **params).fit_transform(X)
        signs = np.sign(np.sum(Z * sk, axis=0))
        np.testing.assert_allclose(Z * signs, sk, atol=1e-8)
        acc = LogisticRegression().fit(sk, y).score(sk, y)
        assert scores.loc[("circles", label), "accuracy"] == pytest.approx(acc, abs=0.01)
    assert "RBF kernel PCA separates the two circles (accuracy 1.000)" in "".join(
        c.output for c in ex.cells)
    assert [p.name for p in ex.figures] == ["circles_moons.png"]
    _narrow(ex)


def test_digits_table_equals_sklearn_features(tmp_path):
    ex = run_example("digits", tmp_path, quick=True)
    _narrow(ex)
    ns = ex.namespace
    errors = ns["errors"]
    assert errors.shape == (3, 4) and np.all(np.isfinite(errors.to_numpy()))
    # independent: scikit-learn's KernelPCA features, same classifier
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X / 16, y, test_size=0.3, random_state=0,
                                          stratify=y)
    Xtr, ytr = Xtr[:800], ytr[:800]
    sk = SkKernelPCA(64, kernel="poly", degree=2, gamma=1.0, coef0=0).fit(Xtr)
    Ztr, Zte = sk.transform(Xtr)[:, :32], sk.transform(Xte)[:, :32]
    sc = StandardScaler().fit(Ztr)
    clf = LinearSVC(C=1.0, max_iter=5000, random_state=0).fit(sc.transform(Ztr), ytr)
    err = 100 * (1 - clf.score(sc.transform(Zte), yte))
    # LinearSVC is invariant to the sign of a feature up to its own tolerance
    assert abs(errors.loc[32, 2] - err) <= 100 / len(yte) * 2


def test_reconstruction_pca_is_the_svd_projection(tmp_path):
    ex = run_example("reconstruction", tmp_path)
    ns = ex.namespace
    errors = ns["errors"]
    # independent: the orthogonal projection on the top-k PCA subspace (NumPy SVD)
    X, y = load_digits(return_X_y=True)
    Xtr, Xte = train_test_split(X / 16, test_size=0.3, random_state=0, stratify=y)
    Xtr = Xtr[:600]
    mean = Xtr.mean(0)
    _, s, Vt = np.linalg.svd(Xtr - mean, full_matrices=False)
    Vt = Vt[s > 1e-10 * s[0]]  # pixels constant in training span no component
    pca = errors["linear PCA"]
    for k, got in pca.items():
        P = mean + (Xte - mean) @ Vt[:k].T @ Vt[:k]
        assert got == pytest.approx(np.mean((Xte - P) ** 2), rel=1e-6, abs=1e-12)
    # exact on the training images with all components; kernel PCA only approximate
    assert ns["train_error"] < 1e-20
    for name in ("kernel PCA, ridge", "kernel PCA, fixed point"):
        assert errors[name].iloc[-1] > 100 * pca.iloc[-1]
        assert errors[name].iloc[0] > errors[name].iloc[-1]  # more components help
    assert [p.name for p in ex.figures] == ["reconstruction.png", "reconstruction_2.png"]
    _narrow(ex)


def test_dual_pca_scores_agree(tmp_path):
    ex = run_example("dual_pca", tmp_path)
    _narrow(ex)
    timings = ex.namespace["timings"]
    assert list(timings.index) == [100, 200, 400, 800, 1200]
    assert timings["max score difference"].max() < 1e-8
    assert (timings[["primal (s)", "dual (s)"]].to_numpy() > 0).all()


def test_stylometry_separates_the_authors(tmp_path):
    ex = run_example("stylometry", tmp_path)
    _narrow(ex)
    ns = ex.namespace
    z = ns["result"].scores[:, 0]
    authors = ns["authors"]
    a, b = z[authors == "authorA"], z[authors == "authorB"]
    assert len(a) and len(b) and (a.max() < b.min() or b.max() < a.min())
    assert ns["accuracy"] == 1.0
    assert list(ns["result"].labels) == list(ns["books"])


# ----------------------------------------------------------------------------- kpca demo
def test_demo_finds_the_examples_of_a_source_checkout():
    assert kpca.demo.examples_dir() == EXAMPLES_DIR


def test_demo_finds_installed_examples(monkeypatch, tmp_path):
    """A wheel's layout: the package in site-packages, the examples under the
    scheme's data path (``<prefix>/share/kpca/examples``)."""
    site = tmp_path / "lib" / "python3" / "site-packages" / "kpca"
    monkeypatch.setattr(kpca.demo, "__file__", str(site / "demo.py"))
    monkeypatch.setattr(kpca.demo.sysconfig, "get_paths",
                        lambda scheme=None: {"data": str(tmp_path / scheme)})
    with pytest.raises(FileNotFoundError, match="example scripts were not found"):
        kpca.demo.examples_dir()
    user = tmp_path / kpca.demo.sysconfig.get_preferred_scheme("user")
    shutil.copytree(EXAMPLES_DIR, user / "share" / "kpca" / "examples")
    assert kpca.demo.examples_dir() == user / "share" / "kpca" / "examples"
    prefix = tmp_path / kpca.demo.sysconfig.get_default_scheme()
    shutil.copytree(EXAMPLES_DIR, prefix / "share" / "kpca" / "examples")
    assert kpca.demo.examples_dir() == prefix / "share" / "kpca" / "examples"
    monkeypatch.setenv(kpca.demo.ENV, str(EXAMPLES_DIR))  # the variable comes first
    assert kpca.demo.examples_dir() == EXAMPLES_DIR


def test_demo_main_writes_the_report(capsys, tmp_path):
    path, modules = list(sys.path), set(sys.modules)
    assert kpca.demo.main(tmp_path / "d", only=["stylometry"]) == 0
    assert sys.path == path and not {m for m in set(sys.modules) - modules
                                     if m.startswith("plot_")}
    out, err = capsys.readouterr()
    assert "kpca demo: stylometry done" in err
    assert f"Report: {tmp_path / 'd' / 'report.md'}" in out
    assert f"  {tmp_path / 'd' / 'stylometry.png'}" in out.splitlines()
    report = (tmp_path / "d" / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# kpca demo")
    assert "- [Stylometry: two authors](#stylometry-two-authors)" in report
    assert "accuracy of a linear classifier on the two components: 1.000" in report
    assert "![stylometry](stylometry.png)" in report
    assert "```python\nimport tempfile" in report  # the code, as on the gallery page
    with pytest.raises(ValueError, match=r"unknown section\(s\) \['nope'\]"):
        kpca.demo.main(tmp_path / "d", only=["nope"])
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        kpca.demo.main(tmp_path / "f", only=["dual_pca"])


def test_run_example_by_name(tmp_path):
    with pytest.raises(ValueError, match="no example 'nope'; one of circles_moons, "):
        run_example("nope")
    ex = run_example("toy_contours", tmp_path)
    assert [p.name for p in ex.figures] == ["toy_contours.png", "toy_contours_2.png"]
    ratios = ex.namespace["model"].explained_variance_ratio_
    assert len(ratios) == 8 and np.all(np.diff(ratios) <= 1e-12)


def test_demo_says_what_it_needs(monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pandas" else find_spec(name, *a))
    with pytest.raises(ImportError, match=r"needs pandas: pip install 'kpca\[io\]'"):
        run_example("dual_pca")


def test_choose_k_and_gamma_gallery_script(monkeypatch, capsys):
    """examples/plot_choose_k_and_gamma.py runs top to bottom (as sphinx-gallery runs
    it) and finds the known answers: k = 3 for four clusters, the dense grid's best
    gamma (0.133) on the helix with RBF well below linear PCA's error."""
    import runpy

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(len(plt.get_fignums())))
    try:
        ns = runpy.run_path(str(EXAMPLES_DIR / "plot_choose_k_and_gamma.py"),
                            run_name="__main__")
    finally:
        plt.close("all")
    out = capsys.readouterr().out
    assert "chosen k = 3" in out
    assert ns["model"].n_components_ == 3
    assert ns["best"]["kernel"] == "rbf" and ns["best"]["gamma"] == pytest.approx(0.1334,
                                                                                   rel=1e-3)
    err = ns["err"]
    assert err[1:, 0].min() < 0.5 * err[0, 0]  # RBF at its best gamma against linear PCA
    assert shown and all(n >= 1 for n in shown)  # each cell's figure is open when shown
