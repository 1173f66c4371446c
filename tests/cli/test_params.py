"""kpca.cli's parsers: estimator parameters written as text -> Python values, each
failure saying what would be valid; the flag and help of every estimator parameter."""

from __future__ import annotations

import pytest

import kpca
from kpca import cli


@pytest.mark.parametrize(("text", "value"), [("3", 3), ("0.9", 0.9), ("all", None),
                                             ("None", None), ("auto", "auto"),
                                             ("AUTO", "auto")])
def test_parse_n_components(text, value):
    assert cli.parse_n_components(text) == value


@pytest.mark.parametrize(("parse", "text", "message"), [
    (cli.parse_n_components, "0", "must be >= 1"),
    (cli.parse_n_components, "1.5", "must be in (0, 1)"),
    (cli.parse_n_components, "x", "an integer >= 1, a fraction in (0, 1), 'all' or 'auto'"),
    (cli.parse_gamma, "wide", "'scale', 'median'"),
    (cli.parse_number, "1,5", "expected a number"),
    (cli.parse_nonnegative, "-1", "a number >= 0"),
    (cli.parse_nonnegative, "inf", "a number >= 0"),
    (cli.parse_positive_int, "2.5", "an integer >= 1"),
    (cli.parse_positive_int, "0", "expected an integer >= 1; got '0'"),
    (cli.parse_nonnegative_int, "-5", "expected an integer >= 0; got '-5'"),
    (cli.parse_nonnegative_int, "1.0", "expected an integer >= 0; got '1.0'"),
    (cli.parse_int_in(2), "1", "expected an integer >= 2; got '1'"),
    (cli.parse_seed, "-1", "expected an integer in [0, 4294967295]; got '-1'"),
    (cli.parse_seed, str(2**32), "expected an integer in [0, 4294967295]; got '4294967296'"),
    (cli.parse_seed, "seven", "expected an integer in [0, 4294967295]; got 'seven'"),
    (cli.parse_int, "two", "an integer"),
    (cli.parse_kernel_params, "p", "name=value"),
    (cli.parse_kernel_params, "{bad json", "not a valid JSON object"),
    (cli.parse_kernel_params, "[1, 2]", "name=value"),
    (cli.parse_kernel_params, " , ", "empty kernel parameters"),
    (cli.parse_choice("a", "b"), "c", "choose from a, b"),
    (cli.parse_word_or("auto", cli.parse_positive_int, "an integer >= 1 or 'auto'"), "0",
     "expected an integer >= 1 or 'auto'; got '0'"),
    (cli.parse_word_or("gcv", cli.parse_nonnegative, "'gcv' or a number >= 0"), "nan",
     "expected 'gcv' or a number >= 0; got 'nan'"),
])
def test_parsers_say_what_is_valid(parse, text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        parse(text)


def test_integer_parsers_accept_their_range():
    assert [cli.parse_nonnegative_int(t) for t in ("0", " 7 ")] == [0, 7]
    assert cli.parse_int_in(2)("2") == 2 and cli.parse_int_in(0, 3)("3") == 3
    assert [cli.parse_seed(t) for t in ("0", str(2**32 - 1))] == [0, 2**32 - 1]
    # the seed range is scikit-learn's: every seed it accepts, no other
    from sklearn.utils import check_random_state

    check_random_state(cli.parse_seed(str(2**32 - 1)))
    with pytest.raises(ValueError):
        check_random_state(2**32)


def test_parse_values():
    assert cli.parse_number("3") == 3 and isinstance(cli.parse_number("3"), int)
    assert isinstance(cli.parse_number("3.0"), float) and cli.parse_number("1e-3") == 1e-3
    assert cli.parse_gamma("median") == "median" and cli.parse_gamma("0.5") == 0.5
    assert [cli.parse_value(t) for t in ("2", "0.5", "auto", "True", "none", "[1, 2]")] == \
        [2, 0.5, "auto", True, None, [1, 2]]
    assert cli.parse_kernel_params("beta=[1, 0.5],p=3,normalize=FALSE,name=word") == \
        {"beta": [1, 0.5], "p": 3, "normalize": False, "name": "word"}
    assert cli.split_list(" 1, 2,,3 ", cli.parse_int, "--x") == [1, 2, 3]
    with pytest.raises(ValueError, match="--x: empty list"):
        cli.split_list(" , ", int, "--x")
    with pytest.raises(ValueError, match="--x: expected an integer; got 'a'"):
        cli.split_list("1,a", cli.parse_int, "--x")
    select_k = cli.parse_word_or("auto", cli.parse_positive_int, "an integer >= 1 or 'auto'")
    assert [select_k(t) for t in ("AUTO", " auto ", "3")] == ["auto", "auto", 3]
    select_alpha = cli.parse_word_or("gcv", cli.parse_nonnegative, "'gcv' or a number >= 0")
    assert [select_alpha(t) for t in ("Gcv", "0", "1e-3")] == ["gcv", 0.0, 1e-3]
    assert cli.parse_components("2,1", 3) == (1, 0)
    with pytest.raises(ValueError, match="the model has 3 components"):
        cli.parse_components("1,4", 3)


def test_parse_candidates_gives_each_kernel_its_parameters():
    grid = cli.parse_candidates("linear,rbf,poly", "median,0.5", "2,3")
    assert grid == [{"kernel": ["linear"]},
                    {"kernel": ["rbf"], "gamma": ["median", 0.5]},
                    {"kernel": ["poly"], "gamma": [0.5], "degree": [2, 3]}]
    assert cli.parse_candidates("sigmoid", "median", "2")[0]["gamma"] == ["scale"]
    with pytest.raises(ValueError, match=r"--kernels: unknown or unusable kernel\(s\) "
                                         r"\['spectrum', 'bogus'\].*choose from"):
        cli.parse_candidates("rbf,spectrum,bogus", "1", "2")


def test_every_estimator_parameter_has_a_flag_and_help():
    defaults = {name: cls().get_params() for name, cls in [
        ("exact", kpca.KernelPCA), ("nystrom", kpca.NystromKernelPCA)]}
    assert cli.flag_help("n_landmarks", defaults) == "number of landmarks (default: 100) " \
        "[nystrom]"
    assert cli.flag_help("kernel", defaults).endswith("(default: 'linear' (exact); 'rbf' "
                                                      "(nystrom))")
    assert cli.flag_help("n_components", defaults, 2).endswith("(default: 2)")
    assert cli.parameter_flag("random_state").flags == ("--seed",)
    assert cli.parameter_flag("some_new_param").flags == ("--some-new-param",)
    for cls in (kpca.KernelPCA, kpca.NystromKernelPCA, kpca.RandomFeatureKernelPCA,
                kpca.WeightedKernelPCA, kpca.SphericalKernelPCA, kpca.AnovaKernelPCA):
        for name in cls().get_params():
            assert name in cli.PARAMETER_FLAGS or name == "copy_X", (cls.__name__, name)
    assert cli.ignored_kernel_params("linear", {"gamma": 1, "degree": 2}) == ["gamma",
                                                                              "degree"]
    assert cli.ignored_kernel_params("poly", {"gamma": 1, "degree": 2}) == []
    assert cli.ignored_kernel_params(None, {"gamma": 1}) == []
