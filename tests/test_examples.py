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
    sec = section_dual_pca(tmp_path, n=20, d=300)
    assert sec.data["max_diff"] < 1e-8
    assert "scores agree\nup to sign" in sec.text


def test_example_scripts_have_a_cli(monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("digits_example",
                                                  ROOT / "examples" / "digits_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", ["digits_table.py", "--help"])
    with pytest.raises(SystemExit) as exc:
        module.main()
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--out" in out and "--quick" in out
    names = {p.stem for p in (ROOT / "examples").glob("*.py")}
    assert names >= {"circles_moons", "toy_contours", "reconstruction", "digits_table",
                     "denoising_gallery", "stylometry", "dual_pca"}
