"""Estimator parameters written as text (command-line flags): text -> Python value.

The ``parse_*`` functions only convert: they check the form of a value (a
number, a ``name=value`` list, an integer in a fixed range such as a seed's), never
its meaning, which the estimators validate (their ``ValueError`` names the
parameter). Each raises ``ValueError`` with a
message that says what would be valid. :data:`PARAMETER_FLAGS` says how each
estimator parameter is written on the command line.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from ..kernels import GAMMA_HEURISTICS, KERNELS


def parse_n_components(text: str) -> int | float | str | None:
    """``n_components``: an integer >= 1, a fraction in (0, 1), 'all' (None) or 'auto'
    (parallel analysis)."""
    if text.strip().lower() in ("all", "none"):
        return None
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        try:
            frac = float(text)
        except ValueError:
            raise ValueError(
                f"expected an integer >= 1, a fraction in (0, 1), 'all' or 'auto'; got "
                f"{text!r}"
            ) from None
        if not 0 < frac < 1:
            raise ValueError(
                f"a fractional -k is the variance to explain and must be in (0, 1); got {text}"
            ) from None
        return frac
    if value < 1:
        raise ValueError(f"the number of components must be >= 1; got {value}")
    return value


def parse_gamma(text: str) -> float | str:
    """``gamma``: a number or a heuristic name ('scale', 'median')."""
    if text in GAMMA_HEURISTICS:
        return text
    try:
        return float(text)
    except ValueError:
        names = ", ".join(repr(h) for h in GAMMA_HEURISTICS)
        raise ValueError(f"expected a positive number or one of {names}; got {text!r}") from None


def parse_number(text: str) -> int | float:
    """A float, kept as int when written as one (so saved parameters stay tidy)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"expected a number; got {text!r}") from None
    integral = value.is_integer() and not any(c in text.lower() for c in ".en")
    return int(value) if integral else value


def parse_nonnegative(text: str) -> float:
    """A finite number >= 0 (tolerances)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= 0 and value != float("inf")):
        raise ValueError(f"expected a number >= 0; got {text!r}")
    return value


def parse_int_in(low: int, high: int | None = None) -> Callable[[str], int]:
    """A parser of an integer in ``[low, high]`` (``high=None``: no upper bound),
    whose error says that range.

    Examples
    --------
    >>> parse_int_in(2)("5")
    5
    >>> parse_int_in(2)("1")
    Traceback (most recent call last):
    ...
    ValueError: expected an integer >= 2; got '1'
    """
    valid = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise ValueError(f"expected {valid}; got {text!r}")
        return value
    return parse


def parse_positive_int(text: str) -> int:
    """An integer >= 1 (iteration counts, numbers of components)."""
    return parse_int_in(1)(text)


def parse_nonnegative_int(text: str) -> int:
    """An integer >= 0 (counts that may be none, e.g. ``--annotate``)."""
    return parse_int_in(0)(text)


#: the largest random seed: NumPy's legacy seeds and scikit-learn's ``random_state``
#: take [0, 2**32 - 1]
MAX_SEED = 2**32 - 1


def parse_seed(text: str) -> int:
    """A random seed (``--seed``): an integer in [0, 2**32 - 1], the range of
    scikit-learn's ``random_state``."""
    return parse_int_in(0, MAX_SEED)(text)


def parse_int(text: str) -> int:
    """An integer."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"expected an integer; got {text!r}") from None


def parse_value(text: str) -> Any:
    """Any other parameter: a JSON value (number, true/false, null, list, object),
    else the text itself; 'none' is None."""
    raw = text.strip()
    if raw.lower() in ("true", "false", "null", "none"):
        return {"true": True, "false": False}.get(raw.lower())
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw  # a plain word: a string


def _split_top_level(text: str) -> list[str]:
    """Split at the commas that are not inside brackets or quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "[{(":
            depth += 1
        elif c in "]})":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_kernel_params(text: str) -> dict[str, Any]:
    """``kernel_params``: a JSON object, or ``name=value,name=value``.

    Values are JSON (``4``, ``[1, 0.5]``, ``true``/``false``, case-insensitive),
    anything else a string.

    Examples
    --------
    >>> parse_kernel_params("p=4,normalize=false")
    {'p': 4, 'normalize': False}
    >>> parse_kernel_params('{"beta": [1, 0.5]}')
    {'beta': [1, 0.5]}
    """
    text = text.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a valid JSON object: {exc.msg}") from None
        if not isinstance(value, dict):
            raise ValueError("expected a JSON object like '{\"p\": 4}'")
        return value
    out: dict[str, Any] = {}
    for item in (t.strip() for t in _split_top_level(text)):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(
                f"expected name=value pairs separated by commas (e.g. p=4,normalize=false) "
                f"or a JSON object; got {item!r}"
            )
        raw = raw.strip()
        try:
            value = json.loads(raw.lower() if raw.lower() in ("true", "false", "null") else raw)
        except json.JSONDecodeError:
            value = raw  # a plain word: a string
        out[name.strip()] = value
    if not out:
        raise ValueError("empty kernel parameters")
    return out


def split_list(text: str, convert: Callable[[str], Any], flag: str) -> list[Any]:
    """A comma-separated list, each item converted; errors name ``flag``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError(f"{flag}: empty list.")
    try:
        return [convert(t) for t in items]
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None


# ------------------------------------------------------------------ command-line flags
@dataclasses.dataclass(frozen=True)
class ParameterFlag:
    """How an estimator parameter is written on the command line.

    Attributes
    ----------
    flags : tuple of str
        Option strings, e.g. ``("-k", "--n-components")``.
    help : str
        What the parameter does (the command line adds its default and the
        estimators that have it).
    parse : callable or None
        Text -> value (raises ``ValueError``); ``None`` for a switch that sets
        ``const``.
    const : object
        The value a switch sets.
    choices : tuple of str or None
        The accepted words, when the parser checks them.
    metavar : str or None
        Placeholder of the value in the help.
    """

    flags: tuple[str, ...]
    help: str
    parse: Callable[[str], Any] | None = dataclasses.field(repr=False)
    const: Any = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None


def _words(*words: str) -> dict[str, Any]:
    return dict(parse=str, choices=words)


_F = ParameterFlag
#: every parameter of the estimators that has a flag of its own (the others get
#: ``--name-with-dashes`` and :func:`parse_value`, see :func:`parameter_flag`)
PARAMETER_FLAGS: Mapping[str, ParameterFlag] = MappingProxyType({
    "n_components": _F(("-k", "--n-components"), "number of components, a fraction in (0, 1) "
                       "of variance to explain, 'all', or 'auto' (parallel analysis: the "
                       "components above a null of column-permuted data)", parse_n_components,
                       metavar="K"),
    "kernel": _F(("--kernel",), "kernel; with spectrum (strings) DATA is a .txt file, one "
                 "document per line", **_words(*sorted(KERNELS)), metavar="NAME"),
    "gamma": _F(("--gamma",), "kernel coefficient: a number, 'scale' or 'median'", parse_gamma),
    "degree": _F(("--degree",), "degree of the poly kernel", parse_number),
    "coef0": _F(("--coef0",), "independent term of the poly and sigmoid kernels", parse_number),
    "kernel_params": _F(("--kernel-params",), "other kernel parameters: name=value pairs or a "
                        "JSON object, e.g. 'p=4,normalize=false' or '{\"beta\": [1, 0.5]}'",
                        parse_kernel_params, metavar="PARAMS"),
    "eigen_solver": _F(("--eigen-solver", "--solver"), "eigensolver (auto: by problem size)",
                       **_words("auto", "dense", "arpack", "randomized", "krylov")),
    "tol": _F(("--tol",), "eigensolver tolerance, relative to the largest eigenvalue (0: 1e-8 "
              "in float64, 1e-5 in float32)", parse_nonnegative),
    "max_iter": _F(("--max-iter",), "most kernel passes (krylov, randomized) or ARPACK "
                   "iterations", parse_positive_int, metavar="N"),
    "memory_limit": _F(("--memory-limit",), "memory the kernel matrix may use, e.g. 2GB; "
                       "beyond it the fit is matrix-free (incremental: auto mode turns "
                       "bounded)", parse_value, metavar="BYTES"),
    "precision": _F(("--precision",), "precision of the kernel matrix or feature blocks",
                    **_words("auto", "float32", "float64")),
    "n_jobs": _F(("--n-jobs",), "threads", parse_int, metavar="N"),
    "random_state": _F(("--seed",), "random seed, in [0, 2**32 - 1]", parse_seed,
                       metavar="N"),
    "center": _F(("--no-center",), "do not centre in feature space", None, const=False),
    "fit_inverse_transform": _F(("--fit-inverse",), "also learn the ridge pre-image map "
                                "('kpca inverse --method ridge')", None, const=True),
    "remove_zero_eig": _F(("--remove-zero-eig",), "drop the components with a zero "
                          "eigenvalue", None, const=True),
    "alpha": _F(("--alpha",), "ridge penalty of the learned pre-image", parse_number),
    "n_landmarks": _F(("--n-landmarks",), "number of landmarks", parse_int, metavar="M"),
    "landmarks": _F(("--landmarks",), "how landmarks are chosen: uniform, kmeans, leverage",
                    str, metavar="HOW"),
    "rcond": _F(("--rcond",), "relative cut-off of the landmark kernel's eigenvalues",
                parse_number),
    "n_features": _F(("--n-features",), "number of random Fourier features", parse_int,
                     metavar="D"),
    "block_size": _F(("--block-size",), "rows per streamed block", parse_int, metavar="ROWS"),
    "batch_size": _F(("--batch-size",), "rows per batch added to the model (fit and 'kpca "
                     "update' read DATA in blocks of this size; None: 500)", parse_positive_int,
                     metavar="ROWS"),
    "mode": _F(("--mode",), "exact keeps every row (equals batch kernel PCA); bounded keeps "
               "--max-rows landmark rows (streaming Nyström, flat memory); auto is exact until "
               "the rows exceed --max-rows or --memory-limit, then bounded",
               **_words("auto", "exact", "bounded")),
    "max_rows": _F(("--max-rows",), "rows the model keeps: beyond, auto mode turns bounded "
                   "with this many landmarks (None: no limit; 1000 landmarks when bounded)",
                   parse_positive_int, metavar="ROWS"),
    "b1": _F(("--b1",), "Campbell's first constant", parse_number),
    "b2": _F(("--b2",), "Campbell's second constant", parse_number),
    "distance": _F(("--distance",), "weights from the 'full' or the 'score' distance", str),
    "init": _F(("--init",), "start of the reweighting: spherical, uniform", str),
    "robust_tol": _F(("--robust-tol",), "tolerance of the robust iteration", parse_number),
    "robust_max_iter": _F(("--robust-max-iter",), "most robust iterations", parse_int,
                          metavar="N"),
    "c": _F(("--c",), "L1 bound of the variable weights beta", parse_value),
    "beta_tol": _F(("--beta-tol",), "tolerance of the beta iteration", parse_number),
    "beta_max_iter": _F(("--beta-max-iter",), "most beta iterations", parse_int, metavar="N"),
    "iterated_power": _F(("--iterated-power",), "power iterations of the randomized solver: "
                         "'auto' or an integer", parse_value, metavar="N"),
    "contamination": _F(("--contamination",), "outlier detector threshold: 'auto' (the outlier "
                        "map's cut-offs) or the fraction of training rows flagged", parse_value),
})


def ignored_kernel_params(kernel: Any, names: Any) -> list[str]:
    """Which of ``names`` (among gamma, degree, coef0) the kernel named ``kernel``
    does not take; [] for a kernel that is not a known name."""
    if not isinstance(kernel, str) or kernel not in KERNELS:
        return []
    known = inspect.signature(KERNELS[kernel].__init__).parameters
    return [n for n in ("gamma", "degree", "coef0") if n in names and n not in known]


def parse_choice(*words: str) -> Callable[[str], str]:
    """A parser that accepts one of ``words``."""
    def parse(text: str) -> str:
        if text not in words:
            raise ValueError(f"unknown {text!r}; choose from {', '.join(words)}")
        return text
    return parse


def parse_word_or(word: str, parse: Callable[[str], Any], valid: str) -> Callable[[str], Any]:
    """A parser that accepts ``word`` (in any case) or what ``parse`` accepts.

    Parameters
    ----------
    word : str
        The word, in lower case (returned as such).
    parse : callable
        The parser of the other values (a ``parse_*`` function).
    valid : str
        What is valid, for the error, e.g. ``"an integer >= 1 or 'auto'"``.

    Examples
    --------
    >>> parse_word_or("gcv", parse_nonnegative, "'gcv' or a number >= 0")("GCV")
    'gcv'
    """
    def parse_either(text: str) -> Any:
        if text.strip().lower() == word:
            return word
        try:
            return parse(text)
        except ValueError:
            # one message for both forms, not just the number's
            raise ValueError(f"expected {valid}; got {text!r}") from None
    return parse_either


def parameter_flag(name: str) -> ParameterFlag:
    """The flag of estimator parameter ``name`` (``--name-with-dashes`` if not listed)."""
    return PARAMETER_FLAGS.get(name) or ParameterFlag((f"--{name.replace('_', '-')}",), name,
                                                      parse_value)


def flag_help(name: str, defaults: Mapping[str, Mapping[str, Any]],
              cli_default: Any = None) -> str:
    """Help of the flag of parameter ``name``: what it does, its default per
    estimator and, unless every estimator has it, which ones do.

    Parameters
    ----------
    name : str
    defaults : mapping
        Estimator name -> its ``get_params()``.
    cli_default : object, default=None
        The command line's own default, if it has one (shown instead).

    Examples
    --------
    >>> flag_help("n_features", {"exact": {"gamma": None}, "rff": {"n_features": 100}})
    'number of random Fourier features (default: 100) [rff]'
    """
    by_value: dict[str, list[str]] = {}
    for est, params in defaults.items():
        if name in params:
            value = params[name] if cli_default is None else cli_default
            by_value.setdefault(repr(value), []).append(est)
    shown = [v if len(by_value) == 1 else f"{v} ({', '.join(e)})" for v, e in by_value.items()]
    users = [e for es in by_value.values() for e in es]
    text = f"{parameter_flag(name).help} (default: {'; '.join(shown)})"
    return text + (f" [{', '.join(users)}]" if len(users) < len(defaults) else "")


def parse_components(text: str, k: int) -> tuple[int, int]:
    """``--components I,J`` of a scatter plot: two 1-based component numbers in 1..k,
    returned 0-based."""
    ij = split_list(text, parse_int, "--components")
    if len(ij) != 2 or not all(1 <= c <= k for c in ij):
        raise ValueError(f"--components: two numbers like 1,2 (the model has {k} "
                         f"components); got {text}.")
    return ij[0] - 1, ij[1] - 1


def parse_candidates(kernels: str, gammas: str, degrees: str) -> list[dict[str, list[Any]]]:
    """Candidate grids of ``kpca select``: one per kernel, with the gammas and degrees
    that kernel takes (comma-separated lists, as ``--kernels``, ``--gammas``,
    ``--degrees``); kernels on strings or precomputed ones are refused."""
    names = split_list(kernels, str, "--kernels")
    usable = set(KERNELS) - {"precomputed", "spectrum"}
    unknown = [k for k in names if k not in usable]
    if unknown:
        raise ValueError(f"--kernels: unknown or unusable kernel(s) {unknown} for a table of "
                         f"numbers; choose from {', '.join(sorted(usable))}.")
    gamma_values = split_list(gammas, parse_gamma, "--gammas")
    degree_values = split_list(degrees, parse_int, "--degrees")
    out: list[dict[str, list[Any]]] = []
    for name in names:
        accepted = inspect.signature(KERNELS[name].__init__).parameters
        grid: dict[str, list[Any]] = {"kernel": [name]}
        if "gamma" in accepted:  # the median heuristic is for distance-based kernels
            grid["gamma"] = [g for g in gamma_values if not (g == "median" and name in (
                "poly", "polynomial", "sigmoid"))] or ["scale"]
        if "degree" in accepted:
            grid["degree"] = degree_values
        out.append(grid)
    return out
