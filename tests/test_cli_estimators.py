"""``kpca --estimator``: the six estimators from the command line.

Every estimator's scores, saved model, transform and info are compared with the
Python API on the same data; Nyström and random features are fitted from row
sources (the table is never read whole) and their output written block by block.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _cli import clean_error, run, terminal_stderr

import kpca
from kpca import cli
from kpca.io import load_model, read_table, write_table

CASES = {
    "exact": (["--kernel", "rbf", "--gamma", "2", "-k", "3"],
              kpca.KernelPCA(3, kernel="rbf", gamma=2.0)),
    "nystrom": (["--kernel", "rbf", "--gamma", "2", "-k", "3", "--n-landmarks", "40",
                 "--landmarks", "kmeans", "--seed", "0"],
                kpca.NystromKernelPCA(3, kernel="rbf", gamma=2.0, n_landmarks=40,
                                      landmarks="kmeans", random_state=0)),
    "random-features": (["--gamma", "2", "-k", "3", "--n-features", "64", "--seed", "1"],
                        kpca.RandomFeatureKernelPCA(3, gamma=2.0, n_features=64,
                                                    random_state=1)),
    "weighted": (["--kernel", "rbf", "--gamma", "2", "-k", "3", "--b1", "2.5", "--distance",
                  "score"], kpca.WeightedKernelPCA(3, kernel="rbf", gamma=2.0, b1=2.5,
                                                   distance="score")),
    "spherical": (["--kernel", "rbf", "--gamma", "2", "-k", "3", "--robust-max-iter", "200"],
                  kpca.SphericalKernelPCA(3, kernel="rbf", gamma=2.0, robust_max_iter=200)),
    "anova": (["--gamma", "2", "-k", "2", "--c", "1.5"], kpca.AnovaKernelPCA(2, gamma=2.0,
                                                                             c=1.5)),
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0, 0], [2, 0, 1], [0, 2, -1]])
    return (centres[rng.integers(0, 3, 180)] + 0.3 * rng.normal(size=(180, 3)))


@pytest.fixture
def files(tmp_path, data):
    write_table(tmp_path / "d.csv", data, ["u", "v", "w"])
    return tmp_path


@pytest.mark.parametrize("name", list(CASES))
def test_estimator_matches_the_python_api(capsys, files, data, name):
    flags, ref = CASES[name]
    ref = ref.fit(data)
    model = files / "m.kpca"
    code, _, err = run(capsys, "fit-transform", files / "d.csv", "--estimator", name, *flags,
                       "-o", files / "z.npy", "--save", model)
    assert code == 0, err
    est = load_model(model)
    assert type(est) is type(ref) and est.get_params() == ref.get_params()
    np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(np.load(files / "z.npy"), ref.transform(data), atol=1e-9)
    assert list(est.feature_names_in_) == ["u", "v", "w"]  # the header is kept

    new = np.random.default_rng(1).normal(size=(9, 3))
    write_table(files / "new.parquet", new, ["u", "v", "w"])
    code, out, err = run(capsys, "transform", "-m", model, files / "new.parquet")
    assert code == 0, err
    assert out.splitlines()[0] == ",".join(ref.get_feature_names_out())
    np.testing.assert_allclose(np.loadtxt(out.splitlines()[1:], delimiter=",", ndmin=2),
                               ref.transform(new), atol=1e-9)

    code, out, err = run(capsys, "info", model)
    assert code == 0, err
    assert f"estimator:    {type(ref).__name__} (--estimator {name})" in out
    assert "fitted on:    180 samples x 3 features" in out
    code, out, _ = run(capsys, "info", model, "--json")
    assert json.loads(out)["estimator"] == name


@pytest.mark.parametrize("name", ["nystrom", "random-features"])
@pytest.mark.parametrize("ext", [".csv", ".npy", ".parquet"])
def test_streamed_estimators_never_read_the_table_whole(capsys, monkeypatch, files, data,
                                                        name, ext):
    if ext == ".parquet":
        pytest.importorskip("pyarrow")
    import kpca.io._inputs

    def whole(*args, **kwargs):
        raise AssertionError("the table was read whole")

    monkeypatch.setattr(kpca.io._inputs, "_read_table", whole)
    write_table(files / f"x{ext}", data, ["u", "v", "w"])
    flags, ref = CASES[name]
    out_ext = {".csv": ".parquet", ".npy": ".csv", ".parquet": ".npy"}[ext]
    out = files / f"z{out_ext}"
    code, _, err = run(capsys, "fit-transform", files / f"x{ext}", "--estimator", name, *flags,
                       "--block-size", "16", "-o", out, "--save", files / "m.kpca")
    assert code == 0, err
    ref = ref.set_params(block_size=16).fit(data)
    np.testing.assert_allclose(read_table(out)[0], ref.transform(data), atol=1e-9)
    code, _, err = run(capsys, "transform", "-m", files / "m.kpca", files / f"x{ext}",
                       "-o", files / "t.csv")
    assert code == 0, err
    np.testing.assert_allclose(read_table(files / "t.csv")[0], ref.transform(data), atol=1e-9)


def test_streamed_bad_cell_deep_in_the_file(capsys, files, data):
    """A bad cell far down is found while streaming: a clean error naming the row, and no
    output, model or temporary file."""
    lines = (files / "d.csv").read_text().splitlines()
    lines[150] = lines[150].split(",")[0] + ",oops," + lines[150].split(",")[2]
    (files / "bad.csv").write_text("\n".join(lines) + "\n")
    before = {p.name for p in files.iterdir()}
    for argv in (["fit-transform", files / "bad.csv", "-o", files / "z.csv"],
                 ["fit", files / "bad.csv"]):
        code, _, err = run(capsys, *argv, "--estimator", "nystrom", "--n-landmarks", "20",
                           "--save", files / "m.kpca")
        clean_error(code, err, "bad.csv: non-numeric value 'oops' in row 151, column 'v'")
    assert {p.name for p in files.iterdir()} == before


def test_nystrom_preimages_from_the_command_line(capsys, files, data):
    flags, ref = CASES["nystrom"]
    ref = ref.fit(data)
    model = files / "m.kpca"
    assert run(capsys, "fit", files / "d.csv", "--estimator", "nystrom", *flags,
               "--save", model)[0] == 0
    code, _, err = run(capsys, "denoise", "-m", model, files / "d.csv", "-k", "2",
                       "-o", files / "den.csv")
    assert code == 0, err
    D, columns = read_table(files / "den.csv")
    assert columns == ["u", "v", "w"]
    np.testing.assert_allclose(D, ref.denoise(data, n_components=2), atol=1e-8)
    write_table(files / "scores.csv", ref.transform(data))
    code, _, err = run(capsys, "inverse", "-m", model, files / "scores.csv",
                       "-o", files / "inv.npy")
    assert code == 0, err
    np.testing.assert_allclose(np.load(files / "inv.npy"),
                               ref.inverse_transform(ref.transform(data)), atol=1e-8)
    # random features have no pre-images: the estimator says so, nothing is written
    assert run(capsys, "fit", files / "d.csv", "--estimator", "random-features",
               "--save", files / "r.kpca")[0] == 0
    for command in ("denoise", "inverse"):
        data_file = files / ("scores.csv" if command == "inverse" else "d.csv")
        code, _, err = run(capsys, command, "-m", files / "r.kpca", data_file, "-o",
                           files / "x.csv")
        if command == "inverse":  # 2 components (the default -k) vs 3 score columns
            clean_error(code, err, "SCORES needs one column per component")
        else:
            clean_error(code, err, "RandomFeatureKernelPCA has no pre-images")
    assert not (files / "x.csv").exists()


def test_every_parameter_has_a_flag(capsys):
    """The flags are generated from the estimators' parameters: each one is in the help of
    fit (with the estimators that have it), and reaches the estimator."""
    code, text, _ = run(capsys, "fit", "--help")
    assert code == 0
    text = " ".join(text.split())
    for name, cls in cli.ESTIMATORS.items():
        assert name in text
        for param in set(cls().get_params()) - {"copy_X"}:
            flag = cli._main._flag(param).split("/")[-1]
            assert f"{flag} " in text or f"{flag}," in text, (name, param)
    assert "--n-landmarks M number of landmarks (default: 100) [nystrom]" in text


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["--n-landmarks", "10"], ["--n-landmarks does not apply to --estimator exact",
                                   "it is a parameter of nystrom"]),
        (["--estimator", "random-features", "--degree", "2"],
         ["--degree does not apply to --estimator random-features",
          "exact, nystrom, weighted, spherical"]),
        (["--estimator", "nystrom", "--landmarks", "bogus"], ["--landmarks must be", "bogus"]),
        (["--estimator", "nystrom", "--n-landmarks", "0"], ["--n-landmarks must be an int"]),
        (["--estimator", "random-features", "--kernel", "poly"], ["--kernel must be", "'poly'"]),
        (["--estimator", "anova", "--c", "0.5"], ["--c must be a float"]),
        (["--estimator", "weighted", "--b1", "x"], ["argument --b1: expected a number"]),
        (["--estimator", "magic"], ["argument --estimator: invalid choice: 'magic'"]),
    ],
)
def test_parameter_errors_name_the_flag(capsys, files, argv, fragments):
    code, out, err = run(capsys, "fit", files / "d.csv", *argv, "--save", files / "m.kpca")
    clean_error(code, err, *fragments)
    assert out == "" and not (files / "m.kpca").exists()


@pytest.mark.parametrize("name, flag, value", [("nystrom", "--n-landmarks", 150),
                                               ("random-features", "--n-features", 5000)])
def test_a_fit_beyond_the_memory_budget_is_a_clean_error(capsys, files, name, flag, value):
    param = flag[2:].replace("-", "_")
    with kpca.config_context(memory_budget="256KB"):
        code, out, err = run(capsys, "fit", files / "d.csv", "--estimator", name, flag,
                             value, "--save", files / "m.kpca")
    clean_error(code, err, f"{param}={value:,} needs about", "memory_budget (256.00 KiB)",
                f"a smaller {param} (at most", f"({flag})")
    assert out == "" and not (files / "m.kpca").exists()


def test_progress_bar_of_the_rows_on_a_terminal(monkeypatch, files):
    pytest.importorskip("tqdm")

    err = terminal_stderr(monkeypatch)
    code = cli.main(["fit-transform", str(files / "d.csv"), "--estimator", "nystrom",
                     "--n-landmarks", "20", "-o", str(files / "z.csv")])
    assert code == 0, err.getvalue()
    # the two passes over d.csv, named (issue 34: both were 'reading d.csv')
    assert "pass 1/2: landmarks (d.csv)" in err.getvalue() and "0/180 [" in err.getvalue()
    assert "pass 2/2: scores (d.csv)" in err.getvalue()
