"""``kpca fit --estimator incremental`` and ``kpca update``.

The command line reads DATA in row blocks (never whole) and adds each block of
``--batch-size`` rows with ``partial_fit``; ``update`` adds the rows of another file
to a saved model. Every model is compared with the Python API fed the same batches.
"""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from _cli import clean_error, run, terminal_stderr

import kpca
from kpca import cli
from kpca.io import load_model, read_table, write_table

# the models read from the files have feature names; they are compared on arrays
pytestmark = pytest.mark.filterwarnings("ignore:X does not have valid feature names")
BATCH = 32
FLAGS = {
    "exact": ["--kernel", "rbf", "--gamma", "0.5", "-k", "3", "--batch-size", str(BATCH)],
    "bounded": ["--gamma", "0.5", "-k", "3", "--batch-size", str(BATCH), "--mode", "bounded",
                "--max-rows", "40", "--seed", "0"],
}
PARAMS = {
    "exact": dict(kernel="rbf", gamma=0.5, batch_size=BATCH),
    "bounded": dict(gamma=0.5, batch_size=BATCH, mode="bounded", max_rows=40, random_state=0),
}


def _feed(est, X):
    for s in range(0, X.shape[0], BATCH):
        est.partial_fit(X[s : s + BATCH])
    return est


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0, 0], [2, 0, 1], [0, 2, -1]])
    return centres[rng.integers(0, 3, 150)] + 0.3 * rng.normal(size=(150, 3))


@pytest.fixture
def files(tmp_path, data):
    write_table(tmp_path / "first.csv", data[:100], ["u", "v", "w"])
    write_table(tmp_path / "more.csv", data[100:], ["u", "v", "w"])
    return tmp_path


def _same_model(est, ref, X):
    assert type(est) is kpca.IncrementalKernelPCA and est.get_params() == ref.get_params()
    assert est.n_samples_seen_ == ref.n_samples_seen_ and est.mode_ == ref.mode_
    np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.abs(est.transform(X)), np.abs(ref.transform(X)), atol=1e-8)


@pytest.mark.parametrize("mode", list(FLAGS))
def test_fit_streams_batches_and_update_continues(capsys, monkeypatch, files, data, mode):
    import kpca.io._inputs

    def whole(*args, **kwargs):
        raise AssertionError("the table was read whole")

    monkeypatch.setattr(kpca.io._inputs, "_read_table", whole)
    model = files / "m.kpca"
    code, out, err = run(capsys, "fit", files / "first.csv", "--estimator", "incremental",
                         *FLAGS[mode], "--save", model)
    assert code == 0, err
    ref = _feed(kpca.IncrementalKernelPCA(3, **PARAMS[mode]), data[:100])
    est = load_model(model)
    _same_model(est, ref, data)
    assert list(est.feature_names_in_) == ["u", "v", "w"]

    # update to another file: --model is untouched
    code, out, err = run(capsys, "update", "-m", model, files / "more.csv", "-o",
                         files / "m2.kpca")
    assert code == 0, err
    assert out == f"{files / 'm2.kpca'}: added 50 rows, 150 rows seen, {mode} mode\n"
    assert load_model(model).n_samples_seen_ == 100
    _feed(ref, data[100:])
    _same_model(load_model(files / "m2.kpca"), ref, data)

    # update in place: --model replaced (no temporary file left)
    before = {p.name for p in files.iterdir()}
    code, out, err = run(capsys, "update", "--model", model, files / "more.csv")
    assert code == 0, err
    assert out.startswith(f"{model}: added 50 rows, 150 rows seen")
    assert {p.name for p in files.iterdir()} == before
    _same_model(load_model(model), ref, data)

    code, out, err = run(capsys, "info", model)
    assert code == 0, err
    assert "estimator:    IncrementalKernelPCA (--estimator incremental)" in out
    assert "fitted on:    150 samples x 3 features" in out
    assert f"mode:         {mode} (" in out


def test_fit_transform_and_transform(capsys, files, data):
    code, _, err = run(capsys, "fit-transform", files / "first.csv", "--estimator",
                       "incremental", *FLAGS["exact"], "-o", files / "z.npy", "--save",
                       files / "m.kpca")
    assert code == 0, err
    ref = _feed(kpca.IncrementalKernelPCA(3, **PARAMS["exact"]), data[:100])
    np.testing.assert_allclose(np.abs(np.load(files / "z.npy")), np.abs(ref.transform(data[:100])),
                               atol=1e-8)
    code, _, err = run(capsys, "transform", "-m", files / "m.kpca", files / "more.csv", "-o",
                       files / "t.csv")
    assert code == 0, err
    np.testing.assert_allclose(np.abs(read_table(files / "t.csv")[0]),
                               np.abs(ref.transform(data[100:])), atol=1e-8)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions and symlinks")
def test_update_in_place_writes_through_a_symlink_and_keeps_the_mode(capsys, files, data):
    """update replaced a symlinked --model by a regular file (the model it points to
    left stale), and a 0600 model became 0644."""
    (files / "models").mkdir()
    real = files / "models" / "m.kpca"
    assert run(capsys, "fit", files / "first.csv", "--estimator", "incremental",
               *FLAGS["exact"], "--save", real)[0] == 0
    real.chmod(0o600)
    link = files / "current.kpca"
    link.symlink_to("models/m.kpca")
    code, _, err = run(capsys, "update", "-m", link, files / "more.csv")
    assert code == 0, err
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert real.stat().st_mode & 0o7777 == 0o600
    assert load_model(real).n_samples_seen_ == 150
    assert sorted(p.name for p in (files / "models").iterdir()) == ["m.kpca"]


def test_update_of_another_estimator_is_refused(capsys, files):
    model = files / "exact.kpca"
    assert run(capsys, "fit", files / "first.csv", "-k", "2", "--save", model)[0] == 0
    saved = model.read_bytes()
    code, out, err = run(capsys, "update", "-m", model, files / "more.csv")
    clean_error(code, err, "exact.kpca: a KernelPCA model (--estimator exact) cannot be "
                "updated", "--estimator incremental")
    assert out == "" and model.read_bytes() == saved


@pytest.mark.parametrize(
    ("columns", "fragment"),
    [(["u", "v"], "has 2 columns but the model"),
     (["u", "v", "z"], "its columns (u, v, z) are not those of the model")],
)
def test_update_with_other_columns_leaves_the_model(capsys, files, data, columns, fragment):
    model = files / "m.kpca"
    assert run(capsys, "fit", files / "first.csv", "--estimator", "incremental",
               "--save", model)[0] == 0
    saved = model.read_bytes()
    write_table(files / "bad.csv", data[100:, : len(columns)], columns)
    before = {p.name for p in files.iterdir()}
    for extra in ([], ["-o", files / "out.kpca"]):
        code, out, err = run(capsys, "update", "-m", model, files / "bad.csv", *extra)
        clean_error(code, err, "bad.csv", fragment, "m.kpca")
        assert out == ""
    assert model.read_bytes() == saved
    assert {p.name for p in files.iterdir()} == before  # no output, no temporary file


def test_update_bad_cell_deep_in_the_file_leaves_the_model(capsys, files):
    model = files / "m.kpca"
    assert run(capsys, "fit", files / "first.csv", "--estimator", "incremental",
               "--batch-size", "8", "--save", model)[0] == 0
    saved = model.read_bytes()
    lines = (files / "more.csv").read_text().splitlines()
    lines[40] = lines[40].split(",")[0] + ",oops," + lines[40].split(",")[2]
    (files / "bad.csv").write_text("\n".join(lines) + "\n")
    code, _, err = run(capsys, "update", "-m", model, files / "bad.csv")
    clean_error(code, err, "bad.csv: non-numeric value 'oops' in row 41, column 'v'")
    assert model.read_bytes() == saved


def test_incremental_parameters_have_flags(capsys, files):
    code, text, _ = run(capsys, "fit", "--help")
    assert code == 0
    text = " ".join(text.split())
    assert "--batch-size ROWS" in text and "--mode {auto,exact,bounded}" in text
    assert "--max-rows ROWS" in text and "incremental" in text
    code, text, _ = run(capsys, "update", "--help")
    assert code == 0 and text.startswith("usage: kpca update")
    code, _, err = run(capsys, "fit", files / "first.csv", "--estimator", "incremental",
                       "--mode", "exact", "--max-rows", "50", "--save", files / "m.kpca")
    clean_error(code, err, "mode='exact' cannot keep", "(--mode)")
    code, _, err = run(capsys, "fit", files / "first.csv", "--n-landmarks", "5",
                       "--estimator", "incremental", "--save", files / "m.kpca")
    clean_error(code, err, "--n-landmarks does not apply to --estimator incremental")
    assert not (files / "m.kpca").exists()


def test_progress_bar_of_the_rows_on_a_terminal(monkeypatch, files):
    pytest.importorskip("tqdm")

    err = terminal_stderr(monkeypatch)
    assert cli.main(["fit", str(files / "first.csv"), "--estimator", "incremental",
                     "--batch-size", "16", "--save", str(files / "m.kpca")]) == 0, err.getvalue()
    assert "reading first.csv" in err.getvalue() and "/100 [" in err.getvalue()
    err.seek(0)
    err.truncate()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert cli.main(["update", "-m", str(files / "m.kpca"), str(files / "more.csv")]) == 0
    assert "reading more.csv" in err.getvalue() and "/50 [" in err.getvalue()
