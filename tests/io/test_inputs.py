"""kpca.io's input files: data and label files, model checks."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

import kpca
from kpca import io as kio


# ------------------------------------------------------------------------- data, labels
def test_read_data_tables_documents_and_sources(tmp_path):
    X = np.arange(12.0).reshape(4, 3)
    kio.write_table(tmp_path / "x.csv", X, ["a", "b", "c"])
    A, columns = kio.read_data(tmp_path / "x.csv")
    np.testing.assert_array_equal(A, X)
    source, names = kio.read_data(tmp_path / "x.csv", stream=True)
    assert names == ["a", "b", "c"] and source.shape == (4, 3)
    np.testing.assert_array_equal(np.concatenate(list(source.blocks(3))), X)
    (tmp_path / "d.txt").write_text("one doc\n\n two docs \n")
    docs, none = kio.read_data(tmp_path / "d.txt", strings=True)
    assert list(docs) == ["one doc", " two docs "] and none is None
    with pytest.raises(ValueError, match="documents for a string kernel"):
        kio.read_data(tmp_path / "d.txt")
    with pytest.raises(ValueError, match="one document per line"):
        kio.read_data(tmp_path / "x.csv", strings=True)


def _non_finite_files(tmp_path):
    """The same bad cell (third data row, second column) in each format, with the
    message the streamed reader gives for it (a CSV's row is its file line)."""
    X = np.arange(10.0).reshape(5, 2)
    X[2, 1] = np.nan
    (tmp_path / "nan.csv").write_text("a,b\n0,1\n\n2,3\n4,nan\n6,7\n8,9\n")
    np.save(tmp_path / "inf.npy", np.where(np.isnan(X), np.inf, X).astype(np.float32))
    files = {
        "nan.csv": r"nan\.csv: non-finite value nan in row 5, column 'b' \(column 2\); "
                   r"kernel PCA needs finite numbers\.$",
        "inf.npy": r"inf\.npy: non-finite value inf in data row 3, column 2; kernel PCA "
                   r"needs finite numbers\.$",
    }
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return files
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1]}), tmp_path / "nan.parquet")
    files["nan.parquet"] = (r"nan\.parquet: non-finite value nan in data row 3, column 'b' "
                            r"\(column 2\); kernel PCA needs finite numbers\.$")
    return files


def test_read_data_names_the_file_row_and_column_of_a_non_finite_value(tmp_path):
    """A table read whole used to reach the estimator with its NaN, whose message
    (scikit-learn's, two lines) named no file, row or column; now it is the streamed
    reader's."""
    for name, message in _non_finite_files(tmp_path).items():
        path = tmp_path / name
        with pytest.raises(ValueError, match=message) as whole:
            kio.read_data(path)
        with pytest.raises(ValueError) as streamed:
            for _ in kio.read_data(path, stream=True)[0].blocks(2):
                pass
        assert str(whole.value) == str(streamed.value)
        assert not np.isfinite(kio.read_table(path)[0]).all()  # the library's reader: as is


def test_labels_from_a_file_or_a_column(tmp_path):
    X = np.c_[np.arange(5.0), [0, 1, 0, 1, 1], np.ones(5)]
    kio.write_table(tmp_path / "x.csv", X, ["f", "y", "g"])
    (tmp_path / "l.txt").write_text("label\na\nb\na\nb\nb\n")
    Z, y, columns = kio.read_data_and_labels(tmp_path / "x.csv", labels=tmp_path / "l.txt")
    assert list(y) == ["a", "b", "a", "b", "b"] and Z.shape == (5, 3)
    for column in ("y", "2"):
        Z, y, columns = kio.read_data_and_labels(tmp_path / "x.csv", label_column=column)
        assert y.dtype.kind == "i" and list(y) == [0, 1, 0, 1, 1]
        np.testing.assert_array_equal(Z, X[:, [0, 2]])
        assert columns == ["f", "g"]
    for column, message in [("z", "no column named 'z'"), ("4", r"out of range \(1..3\)")]:
        with pytest.raises(ValueError, match=message):
            kio.read_data_and_labels(tmp_path / "x.csv", label_column=column)
    (tmp_path / "short.txt").write_text("a\nb\n")
    with pytest.raises(ValueError, match="has 2 labels but the data have 5 rows"):
        kio.read_data_and_labels(tmp_path / "x.csv", labels=tmp_path / "short.txt")
    kio.write_table(tmp_path / "one.csv", X[:, :1], ["y"])
    with pytest.raises(ValueError, match="no feature column left"):
        kio.read_data_and_labels(tmp_path / "one.csv", label_column="y")


def test_model_checks_name_the_file_and_the_model(tmp_path):
    X = np.random.default_rng(0).normal(size=(30, 2))
    est = kpca.KernelPCA(2, kernel="rbf").fit(X)
    est.feature_names_in_ = np.array(["x", "y"], dtype=object)
    kio.check_columns(est, X, ["x", "y"], "d.csv", "m.kpca")
    kio.check_columns(est, X, None, "d.csv", "m.kpca")  # no header: by position
    with pytest.raises(ValueError, match=r"d\.csv: has 3 columns but the model m\.kpca was "
                                         r"fitted on 2 columns \(x, y\)"):
        kio.check_columns(est, np.ones((2, 3)), None, "d.csv", "m.kpca")
    with pytest.raises(ValueError, match=r"its columns \(y, x\) are not those"):
        kio.check_columns(est, X, ["y", "x"], "d.csv", "m.kpca")
    with pytest.raises(ValueError, match="SCORES needs one column per component"):
        kio.check_scores(est, np.ones((2, 3)), "s.csv", "m.kpca")
    assert kio.input_names(est) == ["x", "y"]
    del est.feature_names_in_
    assert kio.input_names(est, ["p", "q"]) == ["p", "q"] and kio.input_names(est) == ["x0",
                                                                                      "x1"]
    docs = kpca.KernelPCA(2, kernel="spectrum").fit(["abab", "baba", "abba", "xyxy"])
    assert kio.fitted_on_strings(docs) and not kio.fitted_on_strings(est)
    with pytest.raises(ValueError, match="'kpca denoise' maps back to input vectors"):
        kio.check_vectors(docs, "s.kpca", "denoise")


# ------------------------------------------------------------------------- --standardize
def test_fit_scaler_refuses_a_column_too_large_to_standardize(tmp_path):
    """scikit-learn's StandardScaler gives a column whose variance overflows scale 1
    (it is left unscaled), or NaN where its mean overflows: fit_scaler names the column."""
    X = np.array([[5.0, 1e200], [6.0, -1e200], [5.0, 3.0], [5.0, 4.0]])
    kio.write_table(tmp_path / "x.csv", X, ["a", "b"])
    message = (r"x\.csv: --standardize: the values of column 'b' \(column 2\) are too "
               r"large to standardize in float64")
    with pytest.raises(ValueError, match=message):
        kio.fit_scaler(X, tmp_path / "x.csv", ["a", "b"])
    source, _ = kio.read_data(tmp_path / "x.csv", stream=True)  # its own names
    with pytest.raises(ValueError, match=message):
        kio.fit_scaler(source, tmp_path / "x.csv")
    mean_overflows = np.array([[1e308, 1.0], [1e308, 2.0], [1e308, 4.0]])
    with pytest.raises(ValueError, match=r"the values of column 1 are too large"):
        kio.fit_scaler(mean_overflows, "m.csv")
    # large but finite statistics: the scaler scikit-learn fits
    ok = X / np.array([1.0, 1e50])
    sk = StandardScaler().fit(ok)
    scaler = kio.fit_scaler(ok, "ok.csv")
    np.testing.assert_allclose(scaler.scale_, sk.scale_, rtol=1e-15)
    np.testing.assert_allclose(kio.standardized(ok, scaler), sk.transform(ok), rtol=1e-15)
