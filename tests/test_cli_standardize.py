"""``--standardize``: inputs scaled to mean 0 and standard deviation 1 before the kernel.

The command line fits a :class:`~sklearn.preprocessing.StandardScaler` on DATA, saves it
in the model file with the estimator, and every later command applies it to its input
and undoes it on outputs in input space. Each result is compared with scikit-learn's
``make_pipeline(StandardScaler(), ...)`` fed the same arrays, and the scaler's
statistics with NumPy's column means and standard deviations.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from _cli import clean_error, run
from sklearn.decomposition import KernelPCA as SkKernelPCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

import kpca
from kpca.io import load_model, read_table, save_model, write_table
from kpca.selection import select_kernel

pytestmark = pytest.mark.filterwarnings("ignore:X does not have valid feature names")
COLUMNS = ["metres", "grams", "kelvin"]


@pytest.fixture(scope="module")
def data():
    """Three clusters in columns of very different units (1, 1e3, 1e-2)."""
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 1.0], [0.0, 2.0, -1.0]])
    y = rng.integers(0, 3, 180)
    X = (centres[y] + 0.4 * rng.normal(size=(180, 3))) * np.array([1.0, 1e3, 1e-2]) + 50
    return X, y


@pytest.fixture
def files(tmp_path, data):
    X, _ = data
    write_table(tmp_path / "train.csv", X[:150], COLUMNS)
    write_table(tmp_path / "new.csv", X[150:], COLUMNS)
    return tmp_path


def _same_up_to_sign(a, b, **tol):
    signs = np.sign((a * b).sum(axis=0))
    np.testing.assert_allclose(a * signs, b, **tol)


def test_fit_transform_is_the_scikit_learn_pipeline(capsys, files, data):
    X = data[0][:150]
    code, _, err = run(capsys, "fit-transform", files / "train.csv", "--standardize",
                       "--kernel", "rbf", "--gamma", "0.5", "-k", "3", "-o", files / "z.csv")
    assert (code, err) == (0, "")
    Z, _ = read_table(files / "z.csv")
    sk = make_pipeline(StandardScaler(), SkKernelPCA(3, kernel="rbf", gamma=0.5))
    _same_up_to_sign(Z, sk.fit_transform(X), atol=1e-8)
    # without the scaling the large column decides alone: a different embedding
    code, _, _ = run(capsys, "fit-transform", files / "train.csv", "--kernel", "rbf",
                     "--gamma", "0.5", "-k", "3", "-o", files / "raw.csv")
    assert not np.allclose(np.abs(read_table(files / "raw.csv")[0]), np.abs(Z), atol=1e-3)


def test_model_file_keeps_the_scaling(capsys, files, data):
    X = data[0]
    code, _, err = run(capsys, "fit", files / "train.csv", "--standardize", "--kernel", "rbf",
                       "--gamma", "0.5", "-k", "3", "--fit-inverse", "--save", files / "m.kpca")
    assert (code, err) == (0, "")
    model = load_model(files / "m.kpca")
    assert isinstance(model, Pipeline)
    scaler, est = model.steps[0][1], model.steps[1][1]
    # the scaler's statistics, against NumPy (population standard deviation)
    np.testing.assert_allclose(scaler.mean_, X[:150].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(scaler.scale_, X[:150].std(axis=0), rtol=1e-12)
    # transform of new rows: the training scaling, not one fitted on the new rows
    code, _, _ = run(capsys, "transform", "-m", files / "m.kpca", files / "new.csv",
                     "-o", files / "t.csv")
    expected = est.transform((X[150:] - X[:150].mean(0)) / X[:150].std(0))
    np.testing.assert_allclose(read_table(files / "t.csv")[0], expected, atol=1e-10)
    # info says so
    code, out, _ = run(capsys, "info", files / "m.kpca")
    assert "inputs:       standardized" in out
    code, out, _ = run(capsys, "info", files / "m.kpca", "--json")
    np.testing.assert_allclose(json.loads(out)["input_scaling"]["mean"], scaler.mean_)


@pytest.mark.parametrize("command", ["denoise", "inverse"])
def test_outputs_in_input_space_are_in_the_data_units(capsys, files, data, command):
    """denoise / inverse undo the scaling: their output is in DATA's units."""
    X = data[0]
    run(capsys, "fit", files / "train.csv", "--standardize", "--kernel", "rbf",
                       "--gamma", "0.5", "-k", "3",
        "--fit-inverse", "--save", files / "m.kpca")
    scaler, est = kpca.io.split_scaling(load_model(files / "m.kpca"))
    if command == "denoise":
        code, _, err = run(capsys, "denoise", "-m", files / "m.kpca", files / "new.csv",
                           "-o", files / "out.csv")
        expected = scaler.inverse_transform(est.denoise(scaler.transform(X[150:])))
    else:
        Y = est.transform(scaler.transform(X[150:]))
        write_table(files / "scores.csv", Y, ["c1", "c2", "c3"])
        code, _, err = run(capsys, "inverse", "-m", files / "m.kpca", files / "scores.csv",
                           "-o", files / "out.csv")
        expected = scaler.inverse_transform(est.inverse_transform(Y))
    assert (code, err) == (0, "")
    out, columns = read_table(files / "out.csv")
    assert columns == COLUMNS
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    # the grams column is in the thousands, as in DATA: scaled back, not left at unit scale
    assert np.abs(out[:, 1] - X[150:, 1]).mean() < 0.5 * X[150:, 1].std()
    assert out[:, 1].std() > 100


def test_streamed_estimator_scales_each_block(capsys, files, data):
    """A streamed fit reads DATA once for the scaler (partial_fit), then scales blocks."""
    X = data[0][:150]
    code, _, err = run(capsys, "fit", files / "train.csv", "--standardize", "--estimator",
                       "nystrom", "--n-landmarks", "40", "--kernel", "rbf",
                       "--gamma", "0.5", "-k", "3",
                       "--seed", "0", "--save", files / "n.kpca")
    assert (code, err) == (0, "")
    scaler, est = kpca.io.split_scaling(load_model(files / "n.kpca"))
    np.testing.assert_allclose(scaler.mean_, X.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(scaler.scale_, X.std(axis=0), rtol=1e-10)
    Xs = (X - X.mean(0)) / X.std(0)
    # the landmarks are standardized training rows
    assert np.all(np.abs(est.subspace_.basis.mean(axis=0)) < 1.0)
    ref = kpca.NystromKernelPCA(3, n_landmarks=40, gamma=0.5, random_state=0).fit(Xs)
    _same_up_to_sign(est.transform(Xs), ref.transform(Xs), atol=1e-6)


def test_update_applies_the_saved_scaling(capsys, files, data):
    X = data[0]
    flags = ["--estimator", "incremental", "--kernel", "rbf", "--gamma", "0.5", "-k", "3",
             "--batch-size", "50"]
    run(capsys, "fit", files / "train.csv", "--standardize", *flags, "--save", files / "i.kpca")
    code, out, err = run(capsys, "update", "-m", files / "i.kpca", files / "new.csv")
    assert code == 0, err
    scaler, est = kpca.io.split_scaling(load_model(files / "i.kpca"))
    mean, std = X[:150].mean(0), X[:150].std(0)  # frozen at the first fit
    np.testing.assert_allclose(scaler.mean_, mean, rtol=1e-10)
    ref = kpca.IncrementalKernelPCA(3, gamma=0.5, batch_size=50)
    for s in range(0, 180, 50):
        stop = 150 if s < 150 else 180
        ref.partial_fit((X[s : min(s + 50, stop)] - mean) / std)
    np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=1e-8)
    assert est.n_samples_seen_ == 180


def test_plot_scatter_of_a_standardized_model(capsys, files, data, monkeypatch):
    pytest.importorskip("matplotlib")
    from kpca import plotting

    run(capsys, "fit", files / "train.csv", "--standardize", "--kernel", "rbf",
                       "--gamma", "0.5", "-k", "3",
        "--save", files / "m.kpca")
    drawn = []
    draw = plotting.plot_embedding

    def spy(Z, *args, **kwargs):  # the scores the scatter plot is drawn from
        drawn.append(np.array(Z))
        return draw(Z, *args, **kwargs)

    monkeypatch.setattr(plotting, "plot_embedding", spy)
    code, out, err = run(capsys, "plot", "scatter", "-m", files / "m.kpca", "-d",
                         files / "new.csv", "-o", files / "s.png")
    assert code == 0, err
    assert (files / "s.png").stat().st_size > 0
    # the new rows scaled with the training statistics, as transform does (issue 34)
    X = data[0]
    est = kpca.io.split_scaling(load_model(files / "m.kpca"))[1]
    expected = est.transform((X[150:] - X[:150].mean(0)) / X[:150].std(0))
    np.testing.assert_allclose(drawn[0], expected, atol=1e-10)


def test_plot_scatter_has_a_title(capsys, files, monkeypatch):
    # issue 34: the scatter plot had no title unless --title gave one
    pytest.importorskip("matplotlib")
    from kpca import plotting

    run(capsys, "fit", files / "train.csv", "--kernel", "rbf", "-k", "2",
        "--save", files / "m.kpca")
    axes = []
    draw = plotting.plot_embedding

    def spy(*args, **kwargs):
        fig, ax = draw(*args, **kwargs)
        axes.append(ax)
        return fig, ax

    monkeypatch.setattr(plotting, "plot_embedding", spy)
    for title, expected in [(None, "new.csv: scores of m.kpca"), ("mine", "mine")]:
        argv = ["plot", "scatter", "-m", files / "m.kpca", "-d", files / "new.csv",
                "-o", files / "s.png"] + (["--title", title] if title else [])
        code, _, err = run(capsys, *argv)
        assert code == 0, err
        assert axes[-1].get_title() == expected


def test_standardize_refuses_documents(capsys, tmp_path):
    (tmp_path / "docs.txt").write_text("abc\nabd\nbcd\n")
    code, _, err = run(capsys, "fit-transform", tmp_path / "docs.txt", "--kernel", "spectrum",
                       "--standardize", "-k", "1")
    clean_error(code, err, "--standardize", "numeric table")


# ------------------------------------------------------------------- model files (API)
def test_save_and_load_a_standardized_pipeline(tmp_path, data):
    X = data[0]
    pipe = make_pipeline(StandardScaler(), kpca.KernelPCA(3, gamma=0.5)).fit(X)
    save_model(pipe, tmp_path / "p.kpca")
    back = load_model(tmp_path / "p.kpca")
    assert [type(s) for _, s in back.steps] == [StandardScaler, kpca.KernelPCA]
    np.testing.assert_array_equal(back.transform(X), pipe.transform(X))
    # a plain estimator stays a version-2 file (readable by the previous release)
    save_model(pipe[-1], tmp_path / "e.kpca")
    meta = json.loads(str(np.load(tmp_path / "e.kpca")["__meta__"][()]))
    assert meta["format_version"] == 2 and "input_scaling" not in meta


@pytest.mark.parametrize("steps", [
    lambda: [MinMaxScaler(), kpca.KernelPCA(2)],
    lambda: [StandardScaler(), StandardScaler(), kpca.KernelPCA(2)],
    lambda: [StandardScaler(copy=False), kpca.KernelPCA(2)],
])
def test_other_pipelines_are_refused(tmp_path, data, steps):
    pipe = make_pipeline(*steps()).fit(data[0].copy())  # copy=False scales in place
    with pytest.raises(ValueError, match=r"^kpca\.save: "):
        save_model(pipe, tmp_path / "p.kpca")
    assert not (tmp_path / "p.kpca").exists()


def test_corrupt_scaling_entry_is_refused(tmp_path, data):
    pipe = make_pipeline(StandardScaler(), kpca.KernelPCA(2, gamma=0.5)).fit(data[0])
    save_model(pipe, tmp_path / "p.kpca")
    arrays = dict(np.load(tmp_path / "p.kpca"))
    meta = json.loads(str(arrays["__meta__"][()]))
    meta["input_scaling"]["params"]["with_mean"] = "yes"
    arrays["__meta__"] = np.array(json.dumps(meta))
    with open(tmp_path / "bad.kpca", "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ValueError, match="corrupt kpca model file: bad input_scaling"):
        load_model(tmp_path / "bad.kpca")


# ---------------------------------------------------------------------------- select
def test_select_standardize_supervised_is_the_fold_pipeline(data):
    X, y = data
    res = select_kernel(X, y, candidates={"kernel": ["rbf"], "gamma": [0.5]}, cv=3,
                        standardize=True)
    pipe = Pipeline([("scale", StandardScaler()),
                     ("kpca", kpca.KernelPCA(2, kernel="rbf", gamma=0.5, random_state=0)),
                     ("clf", make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)))])
    ref = cross_val_score(pipe, X, y, cv=StratifiedKFold(3))
    assert res.rows[0]["score"] == pytest.approx(ref.mean(), abs=1e-12)


def test_select_standardize_unsupervised_scales_per_training_fold(data):
    X = data[0]
    res = select_kernel(X, candidates={"kernel": ["rbf"], "gamma": [0.5]}, cv=3,
                        standardize=True, alpha=1e-3)
    errs = []
    for train, test in KFold(3, shuffle=True, random_state=0).split(X):
        mean, std = X[train].mean(0), X[train].std(0)
        est = kpca.KernelPCA(2, kernel="rbf", gamma=0.5, fit_inverse_transform=True, alpha=1e-3,
                             random_state=0).fit((X[train] - mean) / std)
        Xt = (X[test] - mean) / std
        errs.append(np.mean((Xt - est.inverse_transform(est.transform(Xt))) ** 2))
    assert res.rows[0]["score"] == pytest.approx(np.mean(errs), rel=1e-8)
    assert isinstance(res.best_estimator, Pipeline)


def test_select_cli_flag(capsys, files):
    code, out, err = run(capsys, "select", files / "train.csv", "--kernels", "rbf",
                         "--gammas", "0.5", "--standardize", "--cv", "3")
    assert code == 0, err
    assert "rbf" in out


# ------------------------------------------------------------ columns too large to scale
@pytest.mark.parametrize("extra", [[], ["--estimator", "nystrom"]], ids=["exact", "streamed"])
def test_a_column_whose_variance_overflows_is_refused(capsys, tmp_path, extra):
    """Values of +-1e200: StandardScaler's variance is inf and its scale 1, and the fit
    wrote all-zero scores with exit status 0."""
    (tmp_path / "huge.csv").write_text("a,b\n5,1e200\n6,-1e200\n5,3\n5,4\n")
    code, _, err = run(capsys, "fit-transform", tmp_path / "huge.csv", "--standardize",
                       "-k", "1", "-o", tmp_path / "z.csv", *extra)
    clean_error(code, err, "huge.csv: --standardize:", "column 'b' (column 2)",
                "too large to standardize in float64")
    assert len(err.strip().splitlines()) == 1, err  # no RuntimeWarning before it
    assert not (tmp_path / "z.csv").exists()
    code, _, err = run(capsys, "fit", tmp_path / "huge.csv", "--standardize", "-k", "1",
                       "--save", tmp_path / "m.kpca", *extra)
    clean_error(code, err, "--standardize", "column 'b'")
    assert not (tmp_path / "m.kpca").exists()


def test_landmarks_for_tol_standardizes_with_the_same_check(capsys, tmp_path):
    (tmp_path / "huge.csv").write_text("5,1e200\n6,-1e200\n5,3\n5,4\n")
    code, _, err = run(capsys, "select", tmp_path / "huge.csv", "--no-header",
                       "--standardize", "-k", "1", "--landmarks-for-tol", "0.1")
    clean_error(code, err, "--standardize", "column 2 ", "too large to standardize")
