"""The example scripts in ``examples/`` and ``kpca demo`` (:mod:`kpca.demo`), which
finds and runs them (the fast parts)."""

from __future__ import annotations

import importlib
import re
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import kpca.demo
from kpca.demo import _importable

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = ROOT / "examples"
EXAMPLES = ["circles_moons", "toy_contours", "reconstruction", "digits_table",
            "denoising_gallery", "stylometry", "dual_pca", "report"]


@pytest.fixture
def example():
    """Import an example module as its script does (``examples/`` first on sys.path);
    sys.path and sys.modules are restored afterwards."""
    with _importable(EXAMPLES_DIR):
        yield importlib.import_module


def _run_script(example, monkeypatch, name, *argv):
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *map(str, argv)])
    return example(name).main()


# ----------------------------------------------------------------------------- numbers
def test_digits_table_equals_sklearn_features(example):
    digits_table = example("digits_table")
    res = digits_table.error_table((8, 16), (1, 2), n_train=300)
    assert res["errors"].shape == (2, 2) and np.all(np.isfinite(res["errors"]))
    # independent: scikit-learn's KernelPCA features, same classifier
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X / 16, y, test_size=0.3, random_state=0,
                                          stratify=y)
    Xtr, ytr = Xtr[:300], ytr[:300]
    sk = SkKernelPCA(16, kernel="poly", degree=2, gamma=1.0, coef0=0).fit(Xtr)
    Ztr, Zte = sk.transform(Xtr), sk.transform(Xte)
    sc = StandardScaler().fit(Ztr)
    clf = LinearSVC(C=1.0, max_iter=5000, random_state=0).fit(sc.transform(Ztr), ytr)
    err = 100 * (1 - clf.score(sc.transform(Zte), yte))
    # LinearSVC is invariant to the sign of a feature up to its own tolerance
    assert abs(res["errors"][1, 1] - err) <= 100 / len(yte) * 2
    table = digits_table.format_table(res)
    assert table.splitlines()[0] == "| # of components | degree 1 | degree 2 |"
    assert table.splitlines()[2].startswith("| 8 |")


def test_reconstruction_pca_is_the_svd_projection(example, tmp_path):
    sec = example("reconstruction").section(tmp_path)
    # independent: the orthogonal projection on the top-k PCA subspace (numpy SVD)
    X, y = load_digits(return_X_y=True)
    Xtr, Xte = train_test_split(X / 16, test_size=0.3, random_state=0, stratify=y)
    Xtr = Xtr[:600]
    mean = Xtr.mean(0)
    _, s, Vt = np.linalg.svd(Xtr - mean, full_matrices=False)
    Vt = Vt[s > 1e-10 * s[0]]  # pixels constant in training span no component
    for k, got in zip(sec.data["k"], sec.data["pca"], strict=True):
        P = mean + (Xte - mean) @ Vt[:k].T @ Vt[:k]
        assert got == pytest.approx(np.mean((Xte - P) ** 2), rel=1e-6, abs=1e-12)
    # exact on the training images with all components; kernel PCA only approximate
    assert sec.data["pca_train_full"] < 1e-20
    for name in ("ridge", "fixed_point"):
        assert sec.data[name][-1] > 100 * sec.data["pca"][-1]
        assert sec.data[name][0] > sec.data[name][-1]  # more components help
    assert (tmp_path / "reconstruction.png").read_bytes()[:4] == b"\x89PNG"
    assert "| components | linear PCA MSE | RBF KPCA, ridge pre-image |" in sec.text


def test_dual_pca_section_agrees(example, tmp_path):
    sec = example("dual_pca").section(tmp_path, n=20, dims=(30, 300))
    assert sec.data["max_diff"] < 1e-8
    assert sec.data["dims"] == [30, 300] and len(sec.data["primal_s"]) == 2
    assert (tmp_path / "dual_pca.png").read_bytes()[:4] == b"\x89PNG"
    assert "scores agree\nup to sign" in sec.text


# ----------------------------------------------------------------------------- scripts
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_scripts_have_a_cli(example, monkeypatch, capsys, name):
    with pytest.raises(SystemExit) as exc:
        _run_script(example, monkeypatch, name, "--help")
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {name}.py")
    # the description is the docstring's whole first paragraph, not a cut-off line
    doc = (EXAMPLES_DIR / f"{name}.py").read_text(encoding="utf-8").split('"""')[1]
    summary = " ".join(doc.split("\n\n")[0].split())
    assert summary.endswith(".") and summary in " ".join(out.split())
    assert "--out" in out
    if name in ("digits_table", "report"):
        assert "--quick" in out


def test_every_example_is_a_section_of_the_report(example):
    report = example("report")
    # plot_*.py: sphinx-gallery scripts that run top to bottom (issue 34), not sections
    scripts = ({p.stem for p in EXAMPLES_DIR.glob("*.py")} - {"report", "_shared"}
               - {p.stem for p in EXAMPLES_DIR.glob("plot_*.py")})
    assert set(report.SECTIONS.values()) == scripts
    for module in report.SECTIONS.values():
        assert callable(example(module).section)


def test_examples_run(example, monkeypatch, capsys, tmp_path):
    # the fast ones, end to end as scripts (the others are checked above and by the demo)
    _run_script(example, monkeypatch, "stylometry", "--out", tmp_path)
    out = capsys.readouterr().out
    assert (tmp_path / "stylometry.png").stat().st_size > 1000
    assert f"wrote {tmp_path / 'stylometry.png'}" in out
    # "| authorA_book1 | 10 | -0.382 to -0.254 |": component 1 of each book's chapters
    spans = {m[0]: (float(m[1]), float(m[2])) for m in
             re.findall(r"\| (author\w+) \| \d+ \| ([-+.\d]+) to ([-+.\d]+) \|", out)}
    assert len(spans) == 4
    a = [v for k, v in spans.items() if k.startswith("authorA")]
    b = [v for k, v in spans.items() if k.startswith("authorB")]
    # the two authors' chapters do not overlap on component 1
    assert (max(h for _, h in a) < min(lo for lo, _ in b)
            or max(h for _, h in b) < min(lo for lo, _ in a))
    assert "tells the authors apart with accuracy 1.000" in out

    _run_script(example, monkeypatch, "dual_pca", "--n", 20, "--d", "30,300", "--out", tmp_path)
    out = capsys.readouterr().out
    diff = float(re.search(r"largest difference ([-+.e\d]+)\)", out)[1])
    assert diff < 1e-8
    assert re.search(r"^\| 300 \| ", out, re.M)


# ----------------------------------------------------------------------------- kpca demo
def test_demo_finds_the_examples_of_a_source_checkout(monkeypatch):
    monkeypatch.delenv(kpca.demo.ENV, raising=False)
    assert kpca.demo.examples_dir() == EXAMPLES_DIR


def test_demo_finds_installed_examples(monkeypatch, tmp_path):
    """A wheel's layout: the package in site-packages, the examples under the
    scheme's data path (``<prefix>/share/kpca/examples``)."""
    monkeypatch.delenv(kpca.demo.ENV, raising=False)
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


def test_demo_main_writes_the_report(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv(kpca.demo.ENV, raising=False)
    # a module of the user's called "report" is set aside while the demo runs
    mine = types.ModuleType("report")
    monkeypatch.setitem(sys.modules, "report", mine)
    path = list(sys.path)
    assert kpca.demo.main(tmp_path / "d", only=["stylometry"]) == 0
    assert sys.modules["report"] is mine and sys.path == path and "_shared" not in sys.modules
    out, err = capsys.readouterr()
    assert "kpca demo: stylometry done" in err
    assert f"Report: {tmp_path / 'd' / 'report.md'}" in out
    report = (tmp_path / "d" / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# kpca demo")
    assert "- [Stylometry: two authors](#stylometry-two-authors)" in report
    assert "tells the authors apart with accuracy 1.000" in report
    assert "![stylometry](stylometry.png)" in report
    with pytest.raises(ValueError, match=r"unknown section\(s\) \['nope'\]"):
        kpca.demo.main(tmp_path / "d", only=["nope"])
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        kpca.demo.main(tmp_path / "f", only=["dual_pca"])


def test_run_section_runs_one_example_script(tmp_path):
    from kpca.demo import run_section

    section = run_section("dual_pca", tmp_path / "out", quick=True)
    assert section.title and section.text
    assert any((tmp_path / "out").iterdir())  # its tables and figures
    with pytest.raises(ValueError, match="no example script 'report'"):
        run_section("report")
    with pytest.raises(ValueError, match="no example script 'nope'.*dual_pca"):
        run_section("nope")


def test_every_gallery_page_runs_an_example_script():
    import re

    from kpca.demo import examples_dir

    pages = sorted((ROOT / "docs" / "gallery").glob("plot_*.py"))
    scripts = {re.search(r'run_section\("(\w+)"', p.read_text()).group(1) for p in pages}
    assert len(pages) == len(scripts) == 7
    assert all((examples_dir() / f"{s}.py").is_file() for s in scripts)


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
