"""kpca.io's command-line inputs: parameter parsers, data and label files, model checks."""

from __future__ import annotations

import numpy as np
import pytest

import kpca
from kpca import io as kio


# ------------------------------------------------------------------------- parsers
@pytest.mark.parametrize(("text", "value"), [("3", 3), ("0.9", 0.9), ("all", None),
                                             ("None", None), ("auto", "auto"),
                                             ("AUTO", "auto")])
def test_parse_n_components(text, value):
    assert kio.parse_n_components(text) == value


@pytest.mark.parametrize(("parse", "text", "message"), [
    (kio.parse_n_components, "0", "must be >= 1"),
    (kio.parse_n_components, "1.5", "must be in (0, 1)"),
    (kio.parse_n_components, "x", "an integer >= 1, a fraction in (0, 1), 'all' or 'auto'"),
    (kio.parse_gamma, "wide", "'scale', 'median'"),
    (kio.parse_number, "1,5", "expected a number"),
    (kio.parse_nonnegative, "-1", "a number >= 0"),
    (kio.parse_nonnegative, "inf", "a number >= 0"),
    (kio.parse_positive_int, "2.5", "an integer >= 1"),
    (kio.parse_int, "two", "an integer"),
    (kio.parse_kernel_params, "p", "name=value"),
    (kio.parse_kernel_params, "{bad json", "not a valid JSON object"),
    (kio.parse_kernel_params, "[1, 2]", "name=value"),
    (kio.parse_kernel_params, " , ", "empty kernel parameters"),
    (kio.parse_choice("a", "b"), "c", "choose from a, b"),
])
def test_parsers_say_what_is_valid(parse, text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(text)


def test_parse_values():
    assert kio.parse_number("3") == 3 and isinstance(kio.parse_number("3"), int)
    assert isinstance(kio.parse_number("3.0"), float) and kio.parse_number("1e-3") == 1e-3
    assert kio.parse_gamma("median") == "median" and kio.parse_gamma("0.5") == 0.5
    assert [kio.parse_value(t) for t in ("2", "0.5", "auto", "True", "none", "[1, 2]")] == \
        [2, 0.5, "auto", True, None, [1, 2]]
    assert kio.parse_kernel_params("beta=[1, 0.5],p=3,normalize=FALSE,name=word") == \
        {"beta": [1, 0.5], "p": 3, "normalize": False, "name": "word"}
    assert kio.split_list(" 1, 2,,3 ", kio.parse_int, "--x") == [1, 2, 3]
    with pytest.raises(ValueError, match="--x: empty list"):
        kio.split_list(" , ", int, "--x")
    with pytest.raises(ValueError, match="--x: expected an integer; got 'a'"):
        kio.split_list("1,a", kio.parse_int, "--x")
    assert kio.parse_components("2,1", 3) == (1, 0)
    with pytest.raises(ValueError, match="the model has 3 components"):
        kio.parse_components("1,4", 3)


def test_parse_candidates_gives_each_kernel_its_parameters():
    grid = kio.parse_candidates("linear,rbf,poly", "median,0.5", "2,3")
    assert grid == [{"kernel": ["linear"]},
                    {"kernel": ["rbf"], "gamma": ["median", 0.5]},
                    {"kernel": ["poly"], "gamma": [0.5], "degree": [2, 3]}]
    assert kio.parse_candidates("sigmoid", "median", "2")[0]["gamma"] == ["scale"]
    with pytest.raises(ValueError, match=r"--kernels: unknown or unusable kernel\(s\) "
                                         r"\['spectrum', 'bogus'\].*choose from"):
        kio.parse_candidates("rbf,spectrum,bogus", "1", "2")


def test_every_estimator_parameter_has_a_flag_and_help():
    defaults = {name: cls().get_params() for name, cls in [
        ("exact", kpca.KernelPCA), ("nystrom", kpca.NystromKernelPCA)]}
    assert kio.flag_help("n_landmarks", defaults) == "number of landmarks (default: 100) " \
        "[nystrom]"
    assert kio.flag_help("kernel", defaults).endswith("(default: 'linear' (exact); 'rbf' "
                                                      "(nystrom))")
    assert kio.flag_help("n_components", defaults, 2).endswith("(default: 2)")
    assert kio.parameter_flag("random_state").flags == ("--seed",)
    assert kio.parameter_flag("some_new_param").flags == ("--some-new-param",)
    for cls in (kpca.KernelPCA, kpca.NystromKernelPCA, kpca.RandomFeatureKernelPCA,
                kpca.WeightedKernelPCA, kpca.SphericalKernelPCA, kpca.AnovaKernelPCA):
        for name in cls().get_params():
            assert name in kio.PARAMETER_FLAGS or name == "copy_X", (cls.__name__, name)
    assert kio.ignored_kernel_params("linear", {"gamma": 1, "degree": 2}) == ["gamma",
                                                                              "degree"]
    assert kio.ignored_kernel_params("poly", {"gamma": 1, "degree": 2}) == []
    assert kio.ignored_kernel_params(None, {"gamma": 1}) == []


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
