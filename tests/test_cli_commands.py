"""End-to-end tests of the CLI commands inverse, denoise, plot, select and demo
sections, including bad input files (clear errors, no partial output)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from _cli import error_lines  # noqa: E402

import kpca  # noqa: E402
from kpca import cli  # noqa: E402
from kpca.datasets import three_clusters  # noqa: E402
from kpca.io import (  # noqa: E402
    load_model,  # noqa: E402
    read_table,
    write_table,
)
from kpca.selection import select_kernel  # noqa: E402


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def clean_error(code, err, *fragments, status=2):
    assert code == status, err
    assert error_lines(err)[-1].startswith("kpca: error:")
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, err


@pytest.fixture(scope="module")
def toy():
    return three_clusters(n_per_cluster=20)


@pytest.fixture
def files(tmp_path, toy):
    X, y = toy
    write_table(tmp_path / "X.csv", X, ["a", "b"])
    write_table(tmp_path / "Xy.csv", np.c_[X, y], ["a", "b", "label"])
    (tmp_path / "labels.txt").write_text("cluster\n" + "\n".join(f"c{v}" for v in y) + "\n")
    return tmp_path


@pytest.fixture
def model(capsys, files):
    code, _, err = run(capsys, "fit", files / "X.csv", "--kernel", "rbf", "--gamma", "10",
                       "-k", "6", "--fit-inverse", "--alpha", "0.01", "--save",
                       files / "m.kpca")
    assert code == 0, err
    return files / "m.kpca"


def test_inverse_and_denoise_match_the_library(capsys, files, model, toy):
    X, _ = toy
    est = kpca.KernelPCA(6, kernel="rbf", gamma=10.0, fit_inverse_transform=True,
                         alpha=0.01).fit(X)
    Y = est.transform(X)
    write_table(files / "scores.csv", Y)
    code, _, err = run(capsys, "inverse", "-m", model, files / "scores.csv",
                       "-o", files / "inv.csv")
    assert code == 0, err
    R, cols = read_table(files / "inv.csv")
    assert cols == ["a", "b"]  # the header of the training file
    np.testing.assert_allclose(R, est.inverse_transform(Y), atol=1e-10)

    code, _, err = run(capsys, "denoise", "-m", model, files / "X.csv", "-k", "2",
                       "-o", files / "den.npy")
    assert code == 0, err
    D, _ = read_table(files / "den.npy")
    if hasattr(est, "denoise"):
        expected = est.denoise(X, n_components=2, method="auto")
    else:
        expected = est.inverse_transform(est.transform(X))
    np.testing.assert_allclose(D, expected, atol=1e-8)


def test_inverse_needs_learned_map(capsys, files):
    run(capsys, "fit", files / "X.csv", "--kernel", "rbf", "--save", files / "plain.kpca")
    code, _, err = run(capsys, "inverse", "-m", files / "plain.kpca", files / "X.csv",
                       "-o", files / "out.csv")
    clean_error(code, err, "--fit-inverse")
    assert not (files / "out.csv").exists()


def test_plot_commands_write_figures(capsys, files, model):
    code, out, err = run(capsys, "plot", "scatter", "-m", model, "-d", files / "X.csv",
                         "--labels", files / "labels.txt", "-o", files / "s.png")
    assert code == 0, err
    assert (files / "s.png").read_bytes()[:4] == b"\x89PNG"
    code, _, err = run(capsys, "plot", "scree", "-m", model, "-o", files / "scree.svg")
    assert code == 0 and "<svg" in (files / "scree.svg").read_text()
    code, _, err = run(capsys, "plot", "contours", "-m", model, "-d", files / "Xy.csv",
                       "--label-column", "label", "-k", "4", "-o", files / "c.pdf")
    assert code == 0, err
    assert (files / "c.pdf").read_bytes()[:4] == b"%PDF"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["scatter"], "needs --data"),
        (["scatter", "-d", "X.csv", "--components", "1,9"], "has 6 components"),
        (["scatter", "-d", "X.csv", "--labels", "short.txt"], "has 2 labels"),
        (["contours", "-d", "Xy.csv", "--label-column", "nope"], "no column named 'nope'"),
    ],
)
def test_plot_errors_leave_no_file(capsys, files, model, argv, fragment):
    (files / "short.txt").write_text("x\ny\n")
    argv = [files / a if str(a).endswith((".csv", ".txt")) else a for a in argv]
    code, _, err = run(capsys, "plot", *argv, "-m", model, "-o", files / "f.png")
    clean_error(code, err, fragment)
    assert not (files / "f.png").exists()


def test_plot_bad_format(capsys, files, model):
    code, _, err = run(capsys, "plot", "scree", "-m", model, "-o", files / "f.gif")
    clean_error(code, err, "unknown figure format")


def test_select_supervised_matches_library(capsys, files, toy):
    X, y = toy
    code, out, err = run(capsys, "select", files / "Xy.csv", "--label-column", "label",
                         "--kernels", "linear,rbf", "--gammas", "0.5,20", "--cv", "3")
    assert code == 0, err
    lib = select_kernel(X, y, candidates=[{"kernel": ["linear"]},
                                          {"kernel": ["rbf"], "gamma": [0.5, 20.0]}], cv=3)
    assert lib.table() in out
    assert "accuracy" in out and out.count("| ") >= 4


def test_select_unsupervised_writes_table(capsys, files):
    code, out, err = run(capsys, "select", files / "X.csv", "--kernels", "linear,rbf",
                         "--gammas", "10", "--cv", "3", "-o", files / "sel.md")
    assert code == 0, err and out == ""
    text = (files / "sel.md").read_text()
    assert "reconstruction" in text and "| ridge |" in text
    code, _, err = run(capsys, "select", files / "X.csv", "--kernels", "bogus")
    clean_error(code, err, "bogus")


# ----------------------------------------------------------------------- bad input files
BAD = {
    "missing.csv": None,
    "empty.csv": "",
    "ragged.csv": "a,b\n1,2\n3\n",
    "text.csv": "a,b\n1,2\n3,hello\n",
}


@pytest.mark.parametrize("name", list(BAD))
@pytest.mark.parametrize("command", ["fit-transform", "transform", "inverse", "denoise",
                                     "select", "plot"])
def test_bad_files_clear_errors_no_output(capsys, files, model, name, command):
    if BAD[name] is not None:
        (files / name).write_text(BAD[name])
    bad = files / name
    out = files / ("result.png" if command == "plot" else "result.csv")
    argv = {
        "fit-transform": ["fit-transform", bad, "-o", out, "--save", files / "new.kpca"],
        "transform": ["transform", "-m", model, bad, "-o", out],
        "inverse": ["inverse", "-m", model, bad, "-o", out],
        "denoise": ["denoise", "-m", model, bad, "-o", out],
        "select": ["select", bad, "-o", files / "result.md"],
        "plot": ["plot", "scatter", "-m", model, "-d", bad, "-o", out],
    }[command]
    before = {p.name for p in files.iterdir()}
    code, stdout, err = run(capsys, *argv)
    expected = {"missing.csv": "no such file", "empty.csv": "empty",
                "ragged.csv": "row 3 has 1 fields", "text.csv": "non-numeric value 'hello'"}
    clean_error(code, err, str(bad), expected[name])
    assert {p.name for p in files.iterdir()} == before  # nothing written, no temp files
    assert stdout == ""


def test_bad_model_file(capsys, files):
    (files / "fake.kpca").write_text("not a model")
    code, _, err = run(capsys, "denoise", "-m", files / "fake.kpca", files / "X.csv")
    clean_error(code, err, "not a kpca model file")


def _tampered(src, dst, edit):
    """A copy of model file ``src`` whose metadata ``edit`` changed."""
    import io
    import json
    import zipfile

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            data = zin.read(name)
            if name == "__meta__.npy":
                meta = json.loads(str(np.load(io.BytesIO(data))[()]))
                edit(meta)
                buf = io.BytesIO()
                np.save(buf, np.array(json.dumps(meta)))
                data = buf.getvalue()
            zout.writestr(name, data)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda m: m["state"].__setitem__("_sklearn_output_config", 5),
     "field '_sklearn_output_config' of KernelPCA: expected scikit-learn's set_output "
     "configuration"),
    (lambda m: m["params"].update(n_jobs=0),
     "The 'n_jobs' parameter of KernelPCA must be an int in the range"),
    (lambda m: m["state"]["kernel_"].__setitem__("class", "Polynomial"),
     "field 'subspace_.kernel' of KernelPCA: RBF("),
], ids=["output-config", "n_jobs", "kernel-class"])
@pytest.mark.parametrize("command", ["info", "transform", "plot"])
def test_a_tampered_model_is_refused_by_every_command(capsys, files, edit, message, command):
    """They loaded: 'transform' then failed with "TypeError: argument of type 'int' is not
    iterable" (exit 1), 'info' showed n_jobs = 0 and a poly kernel that transform did not
    use."""
    assert cli.main(["fit", str(files / "X.csv"), "--kernel", "rbf", "--save",
                     str(files / "m.kpca")]) == 0
    capsys.readouterr()
    bad = files / "bad.kpca"
    _tampered(files / "m.kpca", bad, edit)
    argv = {"info": ["info", bad],
            "transform": ["transform", "-m", bad, files / "X.csv", "-o", files / "t.csv"],
            "plot": ["plot", "scree", "-m", bad, "-o", files / "p.png"]}[command]
    code, out, err = run(capsys, *argv)
    clean_error(code, err, f"{bad}: invalid kpca model file: {message}")
    assert len(error_lines(err)) == 1 and out == ""
    assert not (files / "t.csv").exists() and not (files / "p.png").exists()


def test_help_for_every_command(capsys):
    for command in ["fit-transform", "fit", "update", "transform", "inverse", "denoise",
                    "plot", "select", "info", "demo"]:
        code, out, _ = run(capsys, command, "--help")
        assert code == 0 and out.startswith(f"usage: kpca {command}")


def test_demo_sections_write_pngs_and_report(capsys, tmp_path):
    out_dir = tmp_path / "d"
    code, out, err = run(capsys, "demo", "--out", out_dir, "--only",
                         "toy_contours,stylometry")
    assert code == 0, err
    names = {p.name for p in out_dir.iterdir()}
    assert names == {"toy_contours.png", "toy_contours_2.png", "stylometry.png", "report.md"}
    report = (out_dir / "report.md").read_text()
    assert report.index("## Schölkopf's toy example") < report.index("## Stylometry")
    # each figure right after the code that makes it, as on the gallery's pages
    assert report.index("model, X, y, n_components=8") < report.index(
        "![toy_contours](toy_contours.png)") < report.index("kernels = {") < report.index(
        "![toy_contours_2](toy_contours_2.png)")
    assert "accuracy of a linear classifier on the two components: 1.000" in report
    code, _, err = run(capsys, "demo", "--out", out_dir, "--only", "nope")
    clean_error(code, err, "unknown section")


def test_spectrum_model_info(capsys, tmp_path):
    est = kpca.KernelPCA(2, kernel="spectrum").fit(["abcab", "bcabc", "xyzxy", "zyxzy"])
    from kpca.io import save_model

    save_model(est, tmp_path / "s.kpca")
    code, out, err = run(capsys, "info", tmp_path / "s.kpca")
    assert code == 0, err
    assert "spectrum(normalize=True, p=3)" in out
    assert "4 samples (non-vector objects" in out
    assert load_model(tmp_path / "s.kpca").kernel_.p == 3


# ------------------------------------------------------------------ strings, kernel params
DOCS = ["the cat sat on the mat", "the cat ate the rat", "a cat on a mat",
        "xyz zyx yxz", "zyx xyz zzy", "yyx zxz xyz"]


def test_spectrum_kernel_on_a_text_file(capsys, tmp_path):
    (tmp_path / "docs.txt").write_text("\n".join(DOCS[:3]) + "\n\n" + "\n".join(DOCS[3:]))
    (tmp_path / "labels.txt").write_text("a\na\na\nb\nb\nb\n")
    code, _, err = run(capsys, "fit-transform", tmp_path / "docs.txt", "--kernel", "spectrum",
                       "--kernel-params", "p=2,normalize=false", "-k", "2",
                       "-o", tmp_path / "z.csv", "--save", tmp_path / "s.kpca")
    assert code == 0, err
    Z, _ = read_table(tmp_path / "z.csv")
    lib = kpca.KernelPCA(2, kernel="spectrum", kernel_params={"p": 2, "normalize": False})
    np.testing.assert_allclose(Z, lib.fit_transform(DOCS), atol=1e-10)  # blank line skipped
    code, out, err = run(capsys, "transform", "-m", tmp_path / "s.kpca", tmp_path / "docs.txt")
    assert code == 0, err
    np.testing.assert_allclose(np.loadtxt(out.splitlines()[1:], delimiter=","), Z, atol=1e-10)
    code, _, err = run(capsys, "plot", "scatter", "-m", tmp_path / "s.kpca", "-d",
                       tmp_path / "docs.txt", "--labels", tmp_path / "labels.txt",
                       "-o", tmp_path / "s.png")
    assert code == 0, err
    # what strings cannot do: clear errors, nothing written
    for argv, fragment in [
        (["denoise", "-m", tmp_path / "s.kpca", tmp_path / "docs.txt", "-o",
          tmp_path / "x.csv"], "fitted on strings"),
        (["inverse", "-m", tmp_path / "s.kpca", tmp_path / "z.csv", "-o", tmp_path / "x.csv"],
         "fitted on strings"),
        (["plot", "contours", "-m", tmp_path / "s.kpca", "-o", tmp_path / "x.png"],
         "non-vector objects"),
    ]:
        code, _, err = run(capsys, *argv)
        clean_error(code, err, fragment)
    assert not list(tmp_path.glob("x.*"))
    # a table for a string kernel, a .txt for a numeric one: clear errors
    write_table(tmp_path / "n.csv", np.ones((3, 2)))
    code, _, err = run(capsys, "fit", tmp_path / "n.csv", "--kernel", "spectrum",
                       "--save", tmp_path / "x.kpca")
    clean_error(code, err, "one document per line")
    code, _, err = run(capsys, "fit", tmp_path / "docs.txt", "--kernel", "rbf",
                       "--save", tmp_path / "x.kpca")
    clean_error(code, err, "documents for a string kernel")
    (tmp_path / "empty.txt").write_text("\n \n")
    code, _, err = run(capsys, "fit", tmp_path / "empty.txt", "--kernel", "spectrum",
                       "--save", tmp_path / "x.kpca")
    clean_error(code, err, "empty")
    assert not (tmp_path / "x.kpca").exists()


@pytest.mark.parametrize(("text", "expected"), [
    ("p=4,normalize=false", {"p": 4, "normalize": False}),
    ('{"p": 4, "normalize": true}', {"p": 4, "normalize": True}),
    ("beta=[1, 0.5]", {"beta": [1, 0.5]}),
])
def test_kernel_params_flag(text, expected):
    from kpca.cli import parse_kernel_params  # the parsing lives in the cli package

    assert parse_kernel_params(text) == expected


def test_kernel_params_reach_the_estimator(capsys, files, toy):
    X, _ = toy
    code, out, err = run(capsys, "fit-transform", files / "X.csv", "--kernel", "anova",
                         "--gamma", "2", "--kernel-params", "beta=[1, 0.25]")
    assert code == 0, err
    Z = np.loadtxt(out.splitlines()[1:], delimiter=",")
    lib = kpca.KernelPCA(2, kernel="anova", gamma=2, kernel_params={"beta": [1, 0.25]})
    np.testing.assert_allclose(Z, lib.fit_transform(X), atol=1e-10)
    code, _, err = run(capsys, "fit-transform", files / "X.csv", "--kernel-params", "p")
    clean_error(code, err, "name=value")


@pytest.mark.parametrize("data, first", [(None, 1), ("X.csv", 2), ("X.npy", 1)])
def test_annotated_rows_are_numbered_as_lines_of_the_data_file(capsys, files, model,
                                                              monkeypatch, data, first):
    # a CSV's rows by their line (header: line 1, as kpca's errors count lines); .npy
    # rows and the training data by their 1-based row number
    from kpca import plotting

    seen = {}
    real = plotting.plot_outlier_map
    monkeypatch.setattr(plotting, "plot_outlier_map",
                        lambda *a, **kw: seen.update(kw) or real(*a, **kw))
    if data == "X.npy":
        np.save(files / "X.npy", read_table(files / "X.csv")[0])
    extra = () if data is None else ("-d", files / data)
    code, _, err = run(capsys, "plot", "outliers", "-m", model, "--annotate", "2", *extra,
                       "-o", files / "o.png")
    assert code == 0, err
    assert seen["first_row"] == first and seen["annotate"] == 2


def test_plot_outlier_map(capsys, files, model):
    code, _, err = run(capsys, "plot", "outliers", "-m", model, "--annotate", "2",
                       "-o", files / "o.png")
    assert code == 0, err
    assert (files / "o.png").read_bytes()[:4] == b"\x89PNG"
    code, _, err = run(capsys, "plot", "outliers", "-m", model, "-d", files / "X.csv",
                       "-o", files / "o.svg")
    assert code == 0 and "<svg" in (files / "o.svg").read_text()


def test_select_with_more_preimage_methods(capsys, files, toy):
    X, _ = toy
    code, out, err = run(capsys, "select", files / "X.csv", "--kernels", "rbf", "--gammas",
                         "10", "--preimages", "ridge,mds", "--cv", "3")
    assert code == 0, err
    lib = select_kernel(X, candidates=[{"kernel": ["rbf"], "gamma": [10.0]}], cv=3,
                        preimage_methods=("ridge", "mds"))
    assert lib.table() in out and "| mds |" in out and "| ridge |" in out
    code, _, err = run(capsys, "select", files / "X.csv", "--preimages", "magic")
    clean_error(code, err, "magic")


def test_info_without_a_model_describes_this_machine(capsys):
    """``kpca info`` without MODEL: the versions of kpca and its core libraries, the
    variant each compiled kernel runs (and why), the CPU features, the BLAS library
    (threadpoolctl's view) and the default threads and memory budget, as text and as
    JSON; each against an independent reading of the same fact."""
    import json
    import os
    import platform

    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    from kpca import _config, _native
    from kpca.kernels import _standard
    from kpca.operators import _tiled
    from kpca.operators._gram import n_threads

    code, out, err = run(capsys, "info", "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["versions"]["kpca"] == kpca.__version__
    assert info["versions"]["numpy"] == np.__version__
    assert info["versions"]["scipy"] == scipy.__version__
    assert info["versions"]["scikit-learn"] == sklearn.__version__
    native = info["native"]
    assert native["KPCA_NATIVE"] == os.environ.get("KPCA_NATIVE")
    for key, choice in (("tile_product", _tiled.NATIVE_VARIANT),
                        ("rbf_block", _standard.NATIVE_RBF_VARIANT)):
        assert native[key]["variant"] == (choice.variant or "numpy")
        assert native[key]["available"] == list(choice.available)
    if _tiled._tileprod_ext is not None:
        assert native["tile_product"]["available"] == list(_tiled._tileprod_ext.variants())
    assert info["cpu"]["machine"] == platform.machine()
    if platform.machine() == "x86_64":
        with open("/proc/cpuinfo") as f:
            flags = set(next(line for line in f if line.startswith("flags")).split())
        assert info["cpu"]["features"]["AVX2"] == ("avx2" in flags)
        assert info["cpu"]["features"]["AVX512F"] == ("avx512f" in flags)
    blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert {lib["filepath"] for lib in blas} <= {lib["filepath"] for lib in info["blas"]}
    assert info["resources"]["threads"] == n_threads(None)
    assert 0 < info["resources"]["memory_limit"] <= info["resources"]["memory_available"]
    caches = info["caches"]
    assert caches["solver_cache_bytes"] == kpca.get_config()["solver_cache_bytes"]
    assert caches["l2"] == _config.cache_bytes(2)
    if caches["last_level"] is not None:
        assert caches["last_level"]["bytes"] == _config.cache_bytes(caches["last_level"]["level"])
        assert caches["solver_cache_bytes"] <= caches["last_level"]["bytes"]

    code, text, err = run(capsys, "info")
    assert code == 0, err
    lines = text.splitlines()
    assert lines[0].startswith(f"versions: kpca {kpca.__version__}, python "
                               f"{platform.python_version()}, numpy {np.__version__}")
    want = _tiled.NATIVE_VARIANT.variant or "numpy"
    assert any(line.strip().startswith(f"stored-tile product: {want} (") for line in lines)
    want = _standard.NATIVE_RBF_VARIANT.variant or "numpy"
    assert any(line.strip().startswith(f"RBF block: {want} (") for line in lines)
    assert any(line.startswith("blas: ") and blas[0]["filepath"] in line for line in lines)
    assert f"{n_threads(None)} worker threads by default" in text
    assert any(line.startswith("caches: ") and "solver_cache_bytes" in line for line in lines)
    assert _native.ENV in text
    # with a model, the model (as before)
    code, _, err = run(capsys, "info", "missing.kpca")
    assert code == 2 and "missing.kpca" in err


def test_plot_scree_null_of_an_auto_model_and_of_a_plain_one(capsys, files, monkeypatch):
    """--null draws the model's own analysis (-k auto) or one computed on its training
    rows with the fitted kernel; the figure has the band and the chosen k, and is
    written atomically (no temporary file left; a failure leaves an existing file as it
    was)."""
    from kpca import parallel_analysis, plotting

    drawn = []
    real = plotting.plot_scree

    def spy(model, **kw):
        fig, ax = real(model, **kw)
        drawn.append((kw.get("null"), [c.get_label() for c in ax.collections],
                      [ln.get_label() for ln in ax.get_lines()]))
        return fig, ax

    monkeypatch.setattr(plotting, "plot_scree", spy)
    rng = np.random.default_rng(1)
    f = rng.normal(size=(150, 2))
    write_table(files / "F.csv", np.repeat(f, 3, axis=1) + 0.4 * rng.normal(size=(150, 6)))
    code, _, err = run(capsys, "fit", files / "F.csv", "-k", "auto", "--seed", "0",
                       "--save", files / "auto.kpca")
    assert code == 0, err
    code, out, err = run(capsys, "plot", "scree", "--null", "-m", files / "auto.kpca",
                         "-o", files / "null.svg")
    assert code == 0, err
    assert "<svg" in (files / "null.svg").read_text()
    pa, collections, lines = drawn[-1]
    assert pa.n_components == 2
    assert any(c.startswith("null: 19 column permutations") for c in collections)
    assert "chosen k = 2" in lines
    assert sorted(p.name for p in files.iterdir() if "null" in p.name) == ["null.svg"]
    # a model fitted with a number: the analysis is computed on its training rows
    code, _, err = run(capsys, "fit", files / "F.csv", "--kernel", "rbf", "--gamma", "median",
                       "-k", "3", "--save", files / "k3.kpca")
    assert code == 0, err
    code, _, err = run(capsys, "plot", "scree", "--null", "--seed", "4", "-m",
                       files / "k3.kpca", "-o", files / "null3.png")
    assert code == 0, err
    pa3 = drawn[-1][0]
    model = kpca.load(files / "k3.kpca")
    ref = parallel_analysis(model.X_fit_, kernel="rbf", gamma=model.gamma_, random_state=4)
    np.testing.assert_allclose(pa3.null_eigenvalues, ref.null_eigenvalues, rtol=1e-8)
    assert pa3.n_components == ref.n_components
    # failures: nothing written, an existing figure kept
    before = (files / "null.svg").read_bytes()
    code, _, err = run(capsys, "fit", files / "F.csv", "--estimator", "nystrom",
                       "--n-landmarks", "40", "-k", "2", "--save", files / "ny.kpca")
    assert code == 0, err
    code, _, err = run(capsys, "plot", "scree", "--null", "-m", files / "ny.kpca",
                       "-o", files / "null.svg")
    clean_error(code, err, "NystromKernelPCA model", "-k auto")
    assert (files / "null.svg").read_bytes() == before
    code, _, err = run(capsys, "plot", "outliers", "--null", "-m", files / "k3.kpca",
                       "-o", files / "o.png")
    clean_error(code, err, "--null applies to 'kpca plot scree'")
    assert not (files / "o.png").exists()


# ----------------------------------------------------------- integer flags of commands
SEED_RANGE = "expected an integer in [0, 4294967295]"


@pytest.mark.parametrize(("argv", "fragment"), [
    # numpy's "need at least one array to stack"
    (["plot", "contours", "-d", "X.csv", "-k", "0", "-o", "f.png"],
     "argument -k/--n-components: expected an integer >= 1; got '0'"),
    (["plot", "contours", "-d", "X.csv", "-k", "-3", "-o", "f.png"],
     "argument -k/--n-components: expected an integer >= 1; got '-3'"),
    # accepted, exit 0
    (["plot", "outliers", "--annotate", "-5", "-o", "f.png"],
     "argument --annotate: expected an integer >= 0; got '-5'"),
    # "The 'random_state' parameter of KernelPCA must be ..."
    (["plot", "scree", "--null", "--seed", "-1", "-o", "f.png"], f"argument --seed: {SEED_RANGE}"),
    # "n_components must be ..."
    (["denoise", "X.csv", "-k", "0", "-o", "f.csv"],
     "argument -k/--n-components: expected an integer >= 1; got '0'"),
    # above the model's 6 components: the library's message, naming the flag
    (["denoise", "X.csv", "-k", "7", "-o", "f.csv"],
     "n_components must be None or an integer in [1, 6] (the fitted number of components); "
     "got 7. (-k/--n-components)"),
])
def test_integer_flags_of_model_commands_name_the_flag_and_range(capsys, files, model, argv,
                                                                  fragment):
    argv = [files / a if a.endswith((".csv", ".png")) else a for a in argv]
    code, out, err = run(capsys, *argv, "-m", model)
    clean_error(code, err, fragment)
    assert not (files / "f.png").exists() and not (files / "f.csv").exists()


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--cv", "1"], "argument --cv: expected an integer >= 2; got '1'"),  # n_splits=1
    (["--seed", "-1"], f"argument --seed: {SEED_RANGE}; got '-1'"),  # "Seed must be ..."
    (["--seed", str(2**32)], f"argument --seed: {SEED_RANGE}; got '4294967296'"),
    # above the 60 rows, with and without labels: not scikit-learn's n_splits=61
    (["--cv", "61"], "cv must be an integer between 2 and the number of rows (60), or a "
                     "cross-validation splitter; got 61. (--cv)"),
    (["--cv", "61", "--labels", "labels.txt"], "got 61. (--cv)"),
])
def test_select_integer_flags_name_the_flag_and_range(capsys, files, argv, fragment):
    argv = [files / a if a.endswith(".txt") else a for a in argv]
    code, out, err = run(capsys, "select", files / "X.csv", "--kernels", "rbf", "--gammas",
                         "10", *argv)
    clean_error(code, err, fragment)
    assert out == ""


def _actions(parser):
    """(command, action) of every flag of every command."""
    for name, command in parser.commands.items():
        for action in command._actions:
            if action.option_strings:
                yield name, action


def test_every_seed_flag_takes_the_seeds_scikit_learn_takes():
    """--seed of fit, select, plot ...: one type, one message."""
    import argparse

    seeds = [(name, a) for name, a in _actions(cli.build_parser()) if "--seed" in a.option_strings]
    assert {name for name, _ in seeds} >= {"fit", "fit-transform", "plan", "select", "plot"}
    for name, action in seeds:
        assert action.type("0") == 0 and action.type(str(2**32 - 1)) == 2**32 - 1, name
        for bad in ("-1", str(2**32)):
            with pytest.raises(argparse.ArgumentTypeError, match=SEED_RANGE.replace("[", r"\[")):
                action.type(bad)


def test_no_flag_takes_an_unchecked_integer():
    """Every integer flag is parsed by a function that says the valid range (a bare
    int let -k 0 and --annotate -5 through to numpy)."""
    assert [(name, a.dest) for name, a in _actions(cli.build_parser()) if a.type is int] == []
