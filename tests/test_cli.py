"""End-to-end tests of the ``kpca`` command line tool."""

from __future__ import annotations

import importlib
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from _cli import clean_error, error_lines, terminal_stderr
from _cli import run as run_cli
from sklearn.decomposition import KernelPCA as SkKernelPCA

import kpca
from kpca import cli
from kpca.io import load_model, read_table, write_table


@pytest.fixture(scope="module")
def circles():
    from kpca.datasets import concentric_circles

    X, y = concentric_circles(n_samples=200)
    return X, y


@pytest.fixture
def data_csv(tmp_path, circles):
    path = tmp_path / "data.csv"
    write_table(path, circles[0], ["x", "y"])
    return path


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _same_up_to_sign(a, b, **tol):
    signs = np.sign((a * b).sum(axis=0))
    np.testing.assert_allclose(a * signs, b, **tol)


# ------------------------------------------------------------------------- happy paths
def test_fit_transform_matches_library_and_sklearn(capsys, tmp_path, data_csv, circles):
    X, _ = circles
    out = tmp_path / "out.csv"
    code, stdout, err = run(capsys, "fit-transform", data_csv, "--kernel", "rbf",
                            "--gamma", "10", "-k", "2", "-o", out)
    assert (code, err) == (0, "")
    Z, columns = read_table(out)
    est = kpca.KernelPCA(n_components=2, kernel="rbf", gamma=10.0)
    expected = est.fit_transform(X)
    assert columns == list(est.get_feature_names_out())
    np.testing.assert_array_equal(Z, expected)  # text output is exact
    sk = SkKernelPCA(n_components=2, kernel="rbf", gamma=10.0).fit_transform(X)
    _same_up_to_sign(Z, sk, atol=1e-8)


@pytest.mark.parametrize(
    ("flags", "params"),
    [
        (["--kernel", "poly", "--degree", "2", "--coef0", "0.5", "--gamma", "0.7"],
         dict(kernel="poly", degree=2, coef0=0.5, gamma=0.7)),
        (["--kernel", "laplacian", "--gamma", "median", "--seed", "1"],
         dict(kernel="laplacian", gamma="median", random_state=1)),
        (["--kernel", "rbf", "--gamma", "scale", "--no-center"],
         dict(kernel="rbf", gamma="scale", center=False)),
        (["--kernel", "cosine", "-k", "3", "--solver", "randomized", "--seed", "0"],
         dict(kernel="cosine", n_components=3, eigen_solver="randomized", random_state=0)),
        ([], dict()),
    ],
)
def test_flags_map_to_estimator(capsys, tmp_path, data_csv, circles, flags, params):
    out = tmp_path / "out.npy"
    code, _, err = run(capsys, "fit-transform", data_csv, "-o", out, *flags)
    assert code == 0, err
    params.setdefault("n_components", 2)
    expected = kpca.KernelPCA(**params).fit_transform(circles[0])
    np.testing.assert_allclose(np.load(out), expected, rtol=1e-10, atol=1e-12)


def test_fraction_of_variance(capsys, tmp_path, circles):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 6)) * np.array([5, 3, 1, 0.1, 0.1, 0.1])
    write_table(tmp_path / "d.npy", X)
    code, out, _ = run(capsys, "fit-transform", tmp_path / "d.npy", "-k", "0.9",
                       "--kernel", "linear")
    assert code == 0
    header = out.splitlines()[0].split(",")
    est = kpca.KernelPCA(n_components=0.9, kernel="linear").fit(X)
    assert len(header) == len(est.eigenvalues_) < 6


def test_stdout_output(capsys, data_csv, circles):
    code, out, err = run(capsys, "fit-transform", data_csv, "--kernel", "rbf", "--gamma", "3")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "kernelpca0,kernelpca1"
    Z = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    expected = kpca.KernelPCA(n_components=2, kernel="rbf", gamma=3.0).fit_transform(circles[0])
    np.testing.assert_array_equal(Z, expected)


def test_save_then_transform_round_trip(capsys, tmp_path, data_csv, circles):
    X, _ = circles
    model, fitted, again = tmp_path / "m.kpca", tmp_path / "fit.csv", tmp_path / "t.parquet"
    code, _, err = run(capsys, "fit-transform", data_csv, "--kernel", "rbf", "--gamma", "10",
                       "-o", fitted, "--save", model)
    assert code == 0, err
    code, _, err = run(capsys, "transform", "--model", model, data_csv, "-o", again)
    assert code == 0, err
    Z_fit, _ = read_table(fitted)
    Z_t, columns = read_table(again)
    assert columns == ["kernelpca0", "kernelpca1"]
    # transform of the training data reproduces the training scores
    np.testing.assert_allclose(Z_t, Z_fit, atol=1e-10)
    # and is exactly what the in-process model gives
    est = kpca.KernelPCA(n_components=2, kernel="rbf", gamma=10).fit(X)
    np.testing.assert_array_equal(Z_t, est.transform(X))
    # new points: the loaded model agrees with sklearn (up to sign)
    T = np.random.default_rng(5).uniform(-1, 1, size=(7, 2))
    write_table(tmp_path / "new.csv", T, ["x", "y"])
    code, out, _ = run(capsys, "transform", "-m", model, tmp_path / "new.csv")
    assert code == 0
    Zn = np.loadtxt(out.splitlines()[1:], delimiter=",")
    sk = SkKernelPCA(n_components=2, kernel="rbf", gamma=10).fit(X)
    _same_up_to_sign(Zn, sk.transform(T), atol=1e-8)


def test_fit_and_info(capsys, tmp_path, data_csv, circles):
    model = tmp_path / "m.kpca"
    code, out, err = run(capsys, "fit", data_csv, "--kernel", "rbf", "--gamma", "10",
                         "-k", "3", "--save", model)
    assert (code, err) == (0, "")
    assert out == f"wrote {model}: KernelPCA (--estimator exact), 3 components\n"
    est = load_model(model)
    ref = kpca.KernelPCA(n_components=3, kernel="rbf", gamma=10).fit(circles[0])
    np.testing.assert_array_equal(est.eigenvalues_, ref.eigenvalues_)

    code, out, _ = run(capsys, "info", model)
    assert code == 0
    assert "kernel:       rbf(gamma=10.0)" in out
    assert "n_components: 3" in out
    assert f"{ref.eigenvalues_[0]:.6f}" in out
    assert f"{ref.explained_variance_ratio_[0]:.6f}" in out
    assert "n_components = 3" in out  # the parameters

    code, out, _ = run(capsys, "info", model, "--json")
    info = json.loads(out)
    assert info["kernel"]["params"] == {"gamma": 10.0}
    np.testing.assert_allclose(info["eigenvalues"], ref.eigenvalues_)
    np.testing.assert_allclose(info["explained_variance_ratio"], ref.explained_variance_ratio_)


def test_verbose_logs_to_stderr(capsys, tmp_path, data_csv):
    code, _, err = run(capsys, "-v", "fit-transform", data_csv, "-o", tmp_path / "o.csv")
    assert code == 0
    assert "kpca: info: read 200 x 2 table" in err
    assert "kpca: info: wrote 200 x 2 table" in err
    code, _, err = run(capsys, "fit-transform", data_csv, "-o", tmp_path / "o.csv", "-v")
    assert "kpca: info:" in err


def test_ignored_parameter_warns(capsys, data_csv):
    code, _, err = run(capsys, "fit-transform", data_csv, "--kernel", "linear", "--degree", "4")
    assert code == 0
    assert "kpca: warning: --degree is ignored by the linear kernel" in err


# ------------------------------------------------------------------------- errors
def _assert_clean_error(code, err, *fragments, status=2):
    assert code == status
    assert error_lines(err)[-1].startswith("kpca: error:")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (None, ["missing.csv", "no such file"]),
        ("", ["missing.csv", "empty"]),
        ("a,b\n1,2\n3\n", ["missing.csv", "row 3 has 1 fields"]),
        ("a,b\n1,2\n3,abc\n", ["missing.csv", "'abc'", "row 3", "column 'b'"]),
        ("a,b\n1,2\n3,nan\n", ["missing.csv: non-finite value nan in row 3, column 'b'"]),
        ("a,b\n1,2\n-inf,4\n", ["missing.csv: non-finite value -inf in row 3, column 'a'"]),
    ],
    ids=["missing", "empty", "ragged", "non-numeric", "nan", "inf"],
)
@pytest.mark.parametrize("command", ["fit-transform", "fit", "transform"])
def test_bad_input_files(capsys, tmp_path, data_csv, content, fragments, command):
    bad = tmp_path / "missing.csv"
    if content is not None:
        bad.write_text(content)
    out = tmp_path / "out.csv"
    model = tmp_path / "m.kpca"
    if command == "transform":
        assert cli.main(["fit", str(data_csv), "--save", str(model)]) == 0
        capsys.readouterr()  # the fit's 'wrote MODEL' line
        before = model.read_bytes()
        argv = ["transform", "--model", model, bad, "-o", out]
    elif command == "fit":
        argv = ["fit", bad, "--save", model]
    else:
        argv = ["fit-transform", bad, "-o", out, "--save", model]
    code, stdout, err = run(capsys, *argv)
    _assert_clean_error(code, err, *fragments)
    assert stdout == ""
    assert not out.exists()
    if command == "transform":
        assert model.read_bytes() == before
    else:
        assert not model.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


@pytest.mark.parametrize("argv", [
    ["fit-transform", "{bad}", "-k", "1", "-o", "{tmp}/z.csv"],
    ["fit-transform", "{bad}", "--estimator", "weighted", "-k", "1", "-o", "{tmp}/z.csv"],
    ["fit-transform", "{bad}", "--estimator", "spherical", "-k", "1", "-o", "{tmp}/z.csv"],
    ["fit-transform", "{bad}", "--estimator", "nystrom", "-k", "1", "-o", "{tmp}/z.csv"],
    ["fit-transform", "{bad}", "--estimator", "incremental", "-k", "1", "-o", "{tmp}/z.csv"],
    ["fit", "{bad}", "--standardize", "--save", "{tmp}/n.kpca"],
    ["transform", "-m", "{model}", "{bad}", "-o", "{tmp}/z.csv"],
    ["denoise", "-m", "{model}", "{bad}", "-o", "{tmp}/z.csv"],
    ["plot", "scatter", "-m", "{model}", "-d", "{bad}", "-o", "{tmp}/p.png"],
], ids=["exact", "weighted", "spherical", "nystrom", "incremental", "standardize",
        "transform", "denoise", "plot"])
def test_a_non_finite_cell_is_one_line_naming_file_row_and_column_on_every_path(
        capsys, tmp_path, argv):
    """The in-memory paths printed scikit-learn's two lines ("Input X contains NaN. ...
    HistGradientBoostingClassifier ...") naming no file; the streamed ones this line."""
    pytest.importorskip("matplotlib")
    good, bad = tmp_path / "good.csv", tmp_path / "nan.csv"
    good.write_text("a,b\n1,2\n3,5\n5,6\n7,1\n")
    bad.write_text("a,b\n1,2\n3,nan\n5,6\n7,1\n")
    model = tmp_path / "m.kpca"
    assert cli.main(["fit", str(good), "--save", str(model)]) == 0
    capsys.readouterr()
    code, _, err = run(capsys, *[a.format(bad=bad, tmp=tmp_path, model=model) for a in argv])
    clean_error(code, err)
    assert error_lines(err) == [f"kpca: error: {bad}: non-finite value nan in row 3, column "
                                "'b' (column 2); kernel PCA needs finite numbers."]


@pytest.mark.parametrize("estimator", ["exact", "nystrom"])
def test_an_npy_file_that_declares_more_than_it_holds_is_refused(capsys, tmp_path, estimator):
    """A 192-byte file whose header declares shape (10**9, 4): 'exact' asked for 29.8 GiB
    (MemoryError, exit 1); a CSV named .npy was "pickled data"."""
    huge, text = tmp_path / "huge.npy", tmp_path / "text.npy"
    with open(huge, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f8", "fortran_order": False, "shape": (10**9, 4)})
        fh.write(np.zeros(8).tobytes())
    text.write_text("a,b\n1,2\n3,4\n")
    for path, message in [
            (huge, "huge.npy: not a valid .npy file: its header declares shape (1000000000, "
                   "4) of float64 (32,000,000,000 bytes), but the file holds 64 bytes"),
            (text, "text.npy: not a .npy file (it does not start with the .npy signature")]:
        code, _, err = run(capsys, "fit-transform", path, "--estimator", estimator, "-k", "1",
                           "-o", tmp_path / "z.csv")
        clean_error(code, err, message)
        assert len(error_lines(err)) == 1


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["fit-transform", "{data}", "--gamma", "abc"], "argument --gamma"),
        (["fit-transform", "{data}", "--gamma", "-1"], "--gamma must be a float"),
        (["fit-transform", "{data}", "-k", "1.5"], "argument -k"),
        (["fit-transform", "{data}", "-k", "0"], "must be >= 1"),
        (["fit-transform", "{data}", "--kernel", "bogus"], "argument --kernel"),
        (["fit-transform", "{data}", "--solver", "magic"], "argument --eigen-solver/--solver"),
        (["fit-transform", "{data}", "-o", "{tmp}/out.xlsx"], "unsupported file type"),
        (["fit-transform", "{data}", "-o", "{tmp}/nodir/out.csv"], "does not exist"),
        (["fit-transform", "{data}", "--save", "{tmp}/nodir/m.kpca"], "does not exist"),
        (["fit", "{data}"], "--save"),
        (["transform", "{data}"], "--model"),
        (["transform", "--model", "{tmp}/none.kpca", "{data}"], "none.kpca: no such file"),
        (["transform", "--model", "{data}", "{data}"], "not a kpca model file"),
        (["info", "{data}"], "not a kpca model file"),
        (["frobnicate"], "invalid choice"),
        ([], "required: COMMAND"),
    ],
)
def test_usage_and_parameter_errors(capsys, tmp_path, data_csv, argv, fragment):
    argv = [a.format(data=data_csv, tmp=tmp_path) for a in argv]
    code, _, err = run(capsys, *argv)
    _assert_clean_error(code, err, fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


@pytest.mark.parametrize("command", ["transform", "denoise", "inverse", "plot"])
def test_wrong_number_of_columns_names_the_file_and_model(capsys, tmp_path, data_csv,
                                                          command):
    model = tmp_path / "m.kpca"
    assert cli.main(["fit", str(data_csv), "--fit-inverse", "--save", str(model)]) == 0
    capsys.readouterr()  # the fit's 'wrote MODEL' line
    three = tmp_path / "three.csv"
    write_table(three, np.ones((4, 3)), ["a", "b", "c"])
    out = tmp_path / ("out.png" if command == "plot" else "out.csv")
    argv = {"transform": ["transform", "-m", model, three, "-o", out],
            "denoise": ["denoise", "-m", model, three, "-o", out],
            "inverse": ["inverse", "-m", model, three, "-o", out],
            "plot": ["plot", "scatter", "-m", model, "-d", three, "-o", out]}[command]
    code, stdout, err = run(capsys, *argv)
    if command == "inverse":  # scores: one column per component
        _assert_clean_error(code, err, f"{three}: has 3 columns", "has 2 components")
    else:
        _assert_clean_error(code, err, f"{three}: has 3 columns", f"model {model}",
                            "fitted on 2 columns (x, y)")
    assert stdout == "" and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "m.kpca", "three.csv"]


def test_header_names_are_kept_and_checked(capsys, tmp_path, data_csv, circles):
    """A model fitted on a CSV with a header keeps its column names: pre-images are
    written under them, and a file whose header differs is refused (a file without
    header is matched by position)."""
    X = circles[0]
    model = tmp_path / "m.kpca"
    assert cli.main(["fit", str(data_csv), "--kernel", "rbf", "--gamma", "2", "-k", "4",
                     "--fit-inverse", "--save", str(model)]) == 0
    est = load_model(model)
    assert list(est.feature_names_in_) == ["x", "y"]
    ref = kpca.KernelPCA(4, kernel="rbf", gamma=2.0, fit_inverse_transform=True).fit(X)

    code, _, err = run(capsys, "denoise", "-m", model, data_csv, "--method", "ridge",
                       "-o", tmp_path / "den.csv")
    assert code == 0 and err == "", err  # no feature-name warning either
    D, columns = read_table(tmp_path / "den.csv")
    assert columns == ["x", "y"]
    np.testing.assert_allclose(D, ref.inverse_transform(ref.transform(X)), atol=1e-8)

    # positional: the same numbers without a header give the same scores, no warning
    np.savetxt(tmp_path / "plain.csv", X, delimiter=",", fmt="%.17g")
    code, out_plain, err = run(capsys, "transform", "-m", model, tmp_path / "plain.csv")
    assert code == 0 and err == "", err
    code, out_named, _ = run(capsys, "transform", "-m", model, data_csv)
    assert code == 0 and out_plain == out_named

    write_table(tmp_path / "swapped.csv", X[:, ::-1], ["y", "x"])
    code, stdout, err = run(capsys, "transform", "-m", model, tmp_path / "swapped.csv")
    _assert_clean_error(code, err, "swapped.csv: its columns (y, x)", "(x, y)",
                        "--no-header")
    assert stdout == ""


def test_progress_bar_on_a_terminal(monkeypatch, tmp_path, circles):
    """On a terminal (and with tqdm) a long fit shows a bar of the kernel passes."""
    import tqdm  # noqa: F401  (a test dependency: the progress bar is a shipped feature)

    X = np.random.default_rng(0).normal(size=(600, 3))
    write_table(tmp_path / "big.csv", X, ["a", "b", "c"])
    err = terminal_stderr(monkeypatch)
    code = cli.main(["fit-transform", str(tmp_path / "big.csv"), "--kernel", "rbf",
                     "--solver", "krylov", "-k", "3", "-o", str(tmp_path / "z.npy")])
    assert code == 0, err.getvalue()
    assert "kernel passes" in err.getvalue() and "residual=" in err.getvalue()


def test_precomputed_kernel_needs_a_square_matrix(capsys, data_csv, tmp_path):
    code, _, err = run(capsys, "fit", data_csv, "--kernel", "precomputed",
                       "--save", tmp_path / "m.kpca")
    _assert_clean_error(code, err, "precomputed")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions and symlinks")
def test_outputs_write_through_symlinks_and_keep_their_mode(capsys, tmp_path, data_csv):
    """-o link.csv replaced the link by a regular file (its target left stale) and
    --save reset a 0600 model to 0644 (the umask's mode); a new file still gets the
    umask's mode."""
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "target.csv"
    target.write_text("old\n")
    (tmp_path / "link.csv").symlink_to("real/target.csv")
    model = tmp_path / "private.kpca"
    model.write_bytes(b"old")
    model.chmod(0o600)
    code, _, err = run(capsys, "fit-transform", data_csv, "-o", tmp_path / "link.csv",
                       "--save", model)
    assert code == 0, err
    assert (tmp_path / "link.csv").is_symlink()
    assert read_table(target)[0].shape == (200, 2)
    assert model.stat().st_mode & 0o7777 == 0o600 and load_model(model).n_components == 2
    umask = os.umask(0)
    os.umask(umask)
    assert run(capsys, "fit", data_csv, "--save", tmp_path / "new.kpca")[0] == 0
    assert (tmp_path / "new.kpca").stat().st_mode & 0o777 == 0o666 & ~umask


def test_unexpected_failure_exit_1(capsys, monkeypatch, data_csv):
    class Broken(kpca.KernelPCA):
        def fit_transform(self, X, y=None, **params):
            raise RuntimeError("solver exploded")

    monkeypatch.setitem(cli.ESTIMATORS, "exact", Broken)
    code, _, err = run(capsys, "fit-transform", data_csv)
    _assert_clean_error(code, err, "RuntimeError: solver exploded", "-v", status=1)
    code, _, err = run(capsys, "-v", "fit-transform", data_csv)
    assert code == 1 and "Traceback" in err  # the traceback only on request


def test_help_and_version(capsys):
    for command in ["fit-transform", "fit", "transform", "info", "demo"]:
        code, out, _ = run(capsys, command, "--help")
        assert code == 0
        assert out.startswith(f"usage: kpca {command}")
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "fit-transform" in out
    code, out, _ = run(capsys, "--version")
    assert (code, out.strip()) == (0, f"kpca {kpca.__version__}")


# ------------------------------------------------------------------------- demo
def test_demo(capsys, tmp_path):
    import matplotlib.pyplot as plt

    out_dir = tmp_path / "demo"
    mine = plt.figure()  # a figure open before the demo is not one of its figures
    try:
        code, out, err = run(capsys, "demo", "--out", out_dir, "--only", "dual_pca,stylometry")
    finally:
        assert plt.fignum_exists(mine.number)
        plt.close(mine)
    assert code == 0, err
    # progress on stderr, one line per example; stdout: the report and the files
    assert [ln.split(" (")[0] for ln in err.splitlines() if ln.startswith("kpca demo:")] == [
        "kpca demo: dual_pca done", "kpca demo: stylometry done"]
    names = {"dual_pca.png", "stylometry.png", "report.md"}
    assert {p.name for p in out_dir.iterdir()} == names
    lines = out.splitlines()
    assert lines[0].startswith(f"Report: {out_dir / 'report.md'}  (2 examples, ")
    assert lines[1:] == ["Wrote:", *(f"  {out_dir / n}" for n in
                                     ("dual_pca.png", "stylometry.png", "report.md"))]
    report = (out_dir / "report.md").read_text()
    assert report.index("## Dual PCA") < report.index("## Stylometry")
    assert "![dual_pca](dual_pca.png)" in report and "max score difference" in report
    for name in ("dual_pca.png", "stylometry.png"):
        assert (out_dir / name).read_bytes()[:4] == b"\x89PNG"


def test_demo_output_flag_as_other_commands():
    args = cli.build_parser().parse_args(["demo", "-o", "somewhere"])
    assert args.out == "somewhere"


def test_demo_out_is_a_file(capsys, tmp_path):
    (tmp_path / "f").write_text("x")
    code, _, err = run(capsys, "demo", "--out", tmp_path / "f")
    _assert_clean_error(code, err, "not a directory")


# ------------------------------------------------------------------------- subprocess
def _env():
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = os.pathsep.join([src, env.get("PYTHONPATH", "")])
    return env


def test_module_subprocess(tmp_path, data_csv):
    out = tmp_path / "o.csv"
    proc = subprocess.run(
        [sys.executable, "-m", "kpca.cli", "fit-transform", str(data_csv), "--kernel", "rbf",
         "--gamma", "10", "-o", str(out)],
        capture_output=True, text=True, env=_env(), timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert read_table(out)[0].shape == (200, 2)
    proc = subprocess.run(
        [sys.executable, "-m", "kpca.cli", "fit-transform", str(tmp_path / "nope.csv")],
        capture_output=True, text=True, env=_env(), timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("kpca: error:") and "Traceback" not in proc.stderr


def test_the_cli_package_imports_its_names_on_first_use():
    """python -m kpca.cli imports the package first: without scikit-learn, so that
    kpca._entry handles a Ctrl-C during that import (tests/test_cli_signals.py)."""
    code = ("import sys, kpca.cli; print(sorted(m for m in ('sklearn', 'scipy', "
            "'kpca.cli._main') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(), timeout=60)
    assert (proc.returncode, proc.stdout.strip()) == (0, "[]"), proc.stderr
    assert set(cli._WHERE) == set(cli.__all__)
    for name in cli.__all__:
        module = importlib.import_module(cli._WHERE[name], "kpca.cli")
        assert getattr(cli, name) is getattr(module, name), name


def test_entry_point():
    # the script pip installed beside this interpreter (the venv need not be active)
    exe = shutil.which("kpca", path=os.path.dirname(sys.executable)) or shutil.which("kpca")
    assert exe is not None, "the kpca entry point is not installed (pip install -e .)"
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"kpca {kpca.__version__}"


def test_solver_tolerance_and_passes_reach_the_estimator(capsys, data_csv, tmp_path):
    """A ConvergenceWarning's advice ("raise max_iter or tol") can be followed from
    the command line: --eigen-solver, --tol and --max-iter set the estimator's
    parameters, and the fit agrees with scikit-learn's dense solve."""
    model = tmp_path / "m.kpca"
    code, _, err = run(capsys, "fit", data_csv, "--kernel", "rbf", "--gamma", "2", "-k", "3",
                       "--eigen-solver", "krylov", "--tol", "1e-6", "--max-iter", "50",
                       "--save", model)
    assert code == 0, err
    est = load_model(model)
    assert (est.eigen_solver, est.tol, est.max_iter) == ("krylov", 1e-6, 50)
    X = read_table(data_csv)[0]
    ref = SkKernelPCA(3, kernel="rbf", gamma=2, eigen_solver="dense").fit(X)
    np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=1e-9)
    # --solver is kept as an alias; bad values are clear errors naming the flag
    code, _, err = run(capsys, "fit", data_csv, "--solver", "dense", "--save", model)
    assert code == 0 and load_model(model).eigen_solver == "dense"
    for flag, bad in (("--tol", "-1"), ("--tol", "inf"), ("--max-iter", "0"),
                      ("--max-iter", "2.5"), ("--eigen-solver", "lobpcg")):
        code, _, err = run(capsys, "fit", data_csv, flag, bad, "--save", model)
        _assert_clean_error(code, err, flag)


@pytest.mark.parametrize("typo, meant", [("--kernal", "--kernel"), ("--gama=2", "--gamma"),
                                         ("--estimater", "--estimator")])
def test_a_mistyped_flag_shows_the_commands_usage_and_the_flag_meant(tmp_path, capsys, typo,
                                                                     meant):
    data = tmp_path / "x.csv"
    np.savetxt(data, np.random.default_rng(0).normal(size=(20, 3)), delimiter=",")
    code, out, err = run_cli(capsys, "fit-transform", data, typo, "rbf")
    clean_error(code, err, f"unrecognized arguments: {typo}", f"did you mean {meant}?")
    assert err.startswith("kpca: error:")  # the error first,
    assert err.splitlines()[1].startswith("usage: kpca fit-transform ")  # the command's usage
    assert out == ""


def test_an_unknown_argument_without_a_close_flag_has_no_hint(tmp_path, capsys):
    data = tmp_path / "x.csv"
    np.savetxt(data, np.random.default_rng(0).normal(size=(20, 3)), delimiter=",")
    code, _, err = run_cli(capsys, "transform", "--model", tmp_path / "m.kpca", data,
                           "extra.csv")
    clean_error(code, err, "unrecognized arguments: extra.csv")
    assert "did you mean" not in err and err.splitlines()[1].startswith("usage: kpca transform ")


@pytest.mark.parametrize("argv, usage", [
    (["fit", "{data}"], "usage: kpca fit DATA --save MODEL [options]"),
    (["transform", "{data}"], "usage: kpca transform DATA --model MODEL [options]"),
    (["fit-transform", "{data}", "--gamma", "x"], "usage: kpca fit-transform DATA [options]"),
    ([], "usage: kpca COMMAND [options]"),
])
def test_a_usage_error_prints_the_error_first_then_one_usage_line(capsys, data_csv, argv,
                                                                  usage):
    # issue 34: argparse's 22-line usage block came first and the error last
    code, out, err = run_cli(capsys, *[a.format(data=data_csv) for a in argv])
    lines = err.strip().splitlines()
    command = argv[0] if argv else None
    assert code == 2 and out == ""
    assert lines[0].startswith("kpca: error:")
    assert lines[1:] == [usage, f"see `kpca {command + ' ' if command else ''}--help`"]


@pytest.mark.parametrize("typed, meant", [("fit_transform", "fit-transform"),
                                          ("trasform", "transform"), ("selct", "select")])
def test_a_mistyped_command_names_the_command_meant(capsys, typed, meant):
    code, _, err = run_cli(capsys, typed, "x.csv")
    clean_error(code, err, f"invalid choice: '{typed}'; did you mean {meant}")


def test_an_unknown_command_far_from_any_has_no_hint(capsys):
    code, _, err = run_cli(capsys, "frobnicate")
    clean_error(code, err, "invalid choice: 'frobnicate' (choose from fit-transform,")
    assert "did you mean" not in err


def test_fit_says_what_it_saved(capsys, tmp_path, data_csv):
    # issue 34: 'kpca fit ... --save m.kpca' printed nothing on success
    model = tmp_path / "m.kpca"
    code, out, err = run_cli(capsys, "fit", data_csv, "--save", model, "-k", "3",
                             "--kernel", "rbf")
    assert code == 0 and err == ""
    assert out == f"wrote {model}: KernelPCA (--estimator exact), 3 components\n"
    assert len(load_model(model).eigenvalues_) == 3


def test_fit_transform_to_standard_output_says_what_it_saved_on_standard_error(
        capsys, tmp_path, data_csv):
    model = tmp_path / "m.kpca"
    code, out, err = run_cli(capsys, "fit-transform", data_csv, "--save", model,
                             "--estimator", "nystrom", "--standardize")
    assert code == 0
    assert err == (f"wrote {model}: NystromKernelPCA (--estimator nystrom), 2 components, "
                   "standardized inputs\n")
    scores = np.loadtxt(io.StringIO(out), delimiter=",", skiprows=1)  # only the table
    assert scores.shape == (len(read_table(data_csv)[0]), 2)


def test_verbose_prints_the_eigenvalues_on_one_line(capsys, tmp_path, data_csv):
    # issue 34: -v printed numpy's repr of the eigenvalues, wrapped across lines
    model = tmp_path / "m.kpca"
    code, _, err = run_cli(capsys, "fit", data_csv, "--save", model, "-k", "12",
                           "--kernel", "rbf", "-v")
    assert code == 0
    line, = [x for x in err.splitlines() if "eigenvalues" in x]
    assert line.startswith("kpca: info: kept 12 components, eigenvalues [")
    printed = [float(v) for v in line.split("[", 1)[1].rstrip("]").split(", ")]
    np.testing.assert_allclose(printed, load_model(model).eigenvalues_, rtol=1e-5)


def test_an_unknown_label_column_shows_a_few_names_the_close_ones_and_the_count(
        capsys, tmp_path):
    # issue 34: the message listed all 64 column names
    names = [f"feature_{i}" for i in range(64)]
    data = tmp_path / "wide.csv"
    write_table(data, np.random.default_rng(0).normal(size=(20, 64)), names)
    code, out, err = run_cli(capsys, "select", data, "--header", "--label-column", "nope")
    clean_error(code, err, "no column named 'nope'", "(columns: 'feature_0', 'feature_1', "
                "'feature_2', 'feature_3', 'feature_4', ... (64 columns); or a 1-based "
                "index 1..64)")
    assert sum(name in err for name in names) == 5 and "did you mean" not in err
    code, out, err = run_cli(capsys, "select", data, "--label-column", "feature_7O")
    clean_error(code, err, "no column named 'feature_7O'; did you mean 'feature_7'")
    assert len(err) < 300 and out == ""
