"""``kpca select --landmarks-for-tol``: the landmark recommendation from the command line,
against the library's :func:`kpca.selection.landmarks_for_tolerance`."""

from __future__ import annotations

import numpy as np
import pytest
from _cli import clean_error, run
from sklearn.datasets import make_circles

from kpca.selection import landmarks_for_tolerance


@pytest.fixture(scope="module")
def circles():
    X, _ = make_circles(600, factor=0.3, noise=0.1, random_state=0)
    return X


@pytest.fixture
def data_file(tmp_path, circles):
    path = tmp_path / "X.csv"
    np.savetxt(path, circles, delimiter=",")
    return path


def test_landmarks_for_tol_prints_the_estimates_and_the_library_recommendation(
        capsys, data_file, circles):
    code, out, err = run(capsys, "select", data_file, "--landmarks-for-tol", "1e-3",
                         "--kernels", "rbf", "--gammas", "2", "--landmarks", "10,20,50,100",
                         "-k", "4")
    assert code == 0, err
    X = np.loadtxt(data_file, delimiter=",")
    lib = landmarks_for_tolerance(X, 1e-3, counts=[10, 20, 50, 100], kernel="rbf",
                                  gamma=2.0, n_components=4)
    assert lib.recommended is not None and lib.recommended > 10
    assert lib.table() in out  # the same estimates per count and recommendation
    assert f"Recommended: {lib.recommended} landmarks" in out
    assert out.count("| no |") == len(lib.counts) - 1


def test_landmarks_for_tol_writes_the_output_file(capsys, data_file, tmp_path):
    target = tmp_path / "landmarks.md"
    code, out, err = run(capsys, "select", data_file, "--landmarks-for-tol", "0.5",
                         "--kernels", "rbf", "--gammas", "2", "--landmarks", "5,10",
                         "-o", target)
    assert code == 0, err
    assert out == ""
    assert "| landmarks |" in target.read_text()


@pytest.mark.parametrize("argv, fragments", [
    (["--landmarks-for-tol", "2"], ["--landmarks-for-tol", "(0, 1)"]),
    (["--landmarks-for-tol", "0"], ["--landmarks-for-tol", "(0, 1)"]),
    (["--landmarks-for-tol", "0.1", "-k", "auto"], ["--landmarks-for-tol", "-k"]),
    (["--landmarks-for-tol", "0.1", "--landmarks", "10,0"], ["--landmarks"]),
    (["--landmarks-for-tol", "0.1", "--landmarks", "ten"], ["--landmarks"]),
    (["--landmarks-for-tol", "abc"], ["--landmarks-for-tol"]),
])
def test_landmarks_for_tol_bad_arguments(capsys, data_file, argv, fragments):
    code, _, err = run(capsys, "select", data_file, "--kernels", "rbf", "--gammas", "2", *argv)
    clean_error(code, err, *fragments)
