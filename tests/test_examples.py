"""The seed examples behind ``kpca demo`` and ``examples/`` (the fast parts)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from kpca import KernelPCA
from kpca._demo import (
    _linear_reconstruction,
    digits_error_table,
    format_digits_table,
    section_dual_pca,
)

ROOT = Path(__file__).resolve().parents[1]


def test_digits_table_equals_sklearn_features():
    res = digits_error_table((8, 16), (1, 2), n_train=300)
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
    table = format_digits_table(res)
    assert table.splitlines()[0] == "| # of components | degree 1 | degree 2 |"
    assert table.splitlines()[2].startswith("| 8 |")


def test_linear_reconstruction_is_exact_with_all_components():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 5)) @ rng.standard_normal((5, 5))
    model = KernelPCA(5, kernel="linear", eigen_solver="dense").fit(X)
    np.testing.assert_allclose(_linear_reconstruction(model, X), X, atol=1e-10)
    # with 2 components: the orthogonal projection on the top-2 PCA subspace
    Xc = X - X.mean(0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    P = X.mean(0) + Xc @ Vt[:2].T @ Vt[:2]
    np.testing.assert_allclose(_linear_reconstruction(model, X, 2), P, atol=1e-10)


def test_dual_pca_section_agrees(tmp_path):
    sec = section_dual_pca(tmp_path, n=20, dims=(30, 300))
    assert sec.data["max_diff"] < 1e-8
    assert sec.data["dims"] == [30, 300] and len(sec.data["primal_s"]) == 2
    assert (tmp_path / "dual_pca.png").read_bytes()[:4] == b"\x89PNG"
    assert "scores agree\nup to sign" in sec.text


EXAMPLES = ["circles_moons", "toy_contours", "reconstruction", "digits_table",
            "denoising_gallery", "stylometry", "dual_pca"]


def _run_example(monkeypatch, name, *argv):
    spec = importlib.util.spec_from_file_location(f"example_{name}",
                                                  ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *map(str, argv)])
    module.main()


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_scripts_have_a_cli(monkeypatch, capsys, name):
    with pytest.raises(SystemExit) as exc:
        _run_example(monkeypatch, name, "--help")
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {name}.py")
    # the description is the docstring's whole first paragraph, not a cut-off line
    doc = (ROOT / "examples" / f"{name}.py").read_text(encoding="utf-8").split('"""')[1]
    summary = " ".join(doc.split("\n\n")[0].split())
    assert summary.endswith(".") and summary in " ".join(out.split())
    if name == "digits_table":
        assert "--quick" in out


def test_examples_run(monkeypatch, capsys, tmp_path):
    # the fast ones, end to end (the others are the demo's sections, tested above)
    _run_example(monkeypatch, "stylometry", "--out", tmp_path)
    out = capsys.readouterr().out
    assert (tmp_path / "stylometry.png").stat().st_size > 1000
    spans = {}
    for line in out.splitlines():
        if "_book" in line:  # "  authorA_book1: component 1 from -0.380 to -0.253"
            book, rest = line.split(":")
            lo, hi = (float(v) for v in rest.split("from")[1].split("to"))
            spans[book.strip()] = (lo, hi)
    assert len(spans) == 4
    a = [v for k, v in spans.items() if k.startswith("authorA")]
    b = [v for k, v in spans.items() if k.startswith("authorB")]
    # the two authors' chapters do not overlap on component 1
    assert (max(h for _, h in a) < min(lo for lo, _ in b)
            or max(h for _, h in b) < min(lo for lo, _ in a))
    _run_example(monkeypatch, "dual_pca", "--n", 20, "--d", 300)
    out = capsys.readouterr().out
    diff = float(out.rsplit("sign):", 1)[1])
    assert diff < 1e-8


def _load_build_api():
    spec = importlib.util.spec_from_file_location("build_api", ROOT / "docs" / "build_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_lists_every_public_object_and_command():
    """docs/api is generated from the code: each page documents exactly the public
    classes, methods, functions (and CLI commands) that exist now. Headings are
    compared rather than whole pages, which also depend on the Python version's
    formatting of signatures and help texts; ``python docs/build_api.py --check``
    compares the full text."""
    build_api = _load_build_api()
    pages = build_api.generate()
    for name, text in pages.items():
        committed = ROOT / "docs" / "api" / name
        assert committed.exists(), f"docs/api/{name} missing: run python docs/build_api.py"
        heads = [ln for ln in text.splitlines() if ln.startswith("#")]
        old = [ln for ln in committed.read_text(encoding="utf-8").splitlines()
               if ln.startswith("#")]
        assert heads == old, f"docs/api/{name} is stale: run python docs/build_api.py"
        # reproducible pages: no memory addresses (reprs of functions in constants)
        assert " at 0x" not in text, name
    assert "## `kpca demo`" in pages["cli.md"]
