"""The ``kpca`` command line tool.

::

    kpca fit-transform DATA --kernel rbf --gamma 0.5 -k 2 -o out.csv [--save model.kpca]
    kpca fit DATA --kernel rbf --gamma median -k 0.9 --save model.kpca
    kpca transform --model model.kpca DATA -o out.csv
    kpca inverse --model model.kpca SCORES -o reconstructed.csv [--method ridge]
    kpca denoise --model model.kpca DATA -o denoised.csv [-k 8] [--method auto]
    kpca plot {scatter,scree,contours,outliers} --model model.kpca [--data DATA] -o figure.png
    kpca select DATA [--labels FILE] --kernels rbf,poly --gammas median,0.1,1 [-o table.md]
    kpca info model.kpca
    kpca demo [--out DIR] [--quick]

DATA is a ``.csv``/``.tsv`` (header row detected), ``.npy`` or ``.parquet`` table
with one row per sample; with a string kernel (``--kernel spectrum``) it is a
``.txt`` file with one document per line. Outputs are written atomically; without ``-o`` the
scores go to standard output as CSV.

Exit status: 0 on success, 2 for usage and input errors (bad option, unreadable
or malformed file, invalid parameter), 1 for any other failure. Errors are one
line on standard error starting with ``kpca: error:``; ``-v`` adds progress
messages (and the traceback of an unexpected failure).

This module only maps flags to :class:`kpca.KernelPCA`; reading and writing live
in :mod:`kpca.io` (tables and model files), the demo in
:mod:`kpca._demo`, figures in :mod:`kpca.plotting`, kernel selection in
:mod:`kpca.selection`.
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from . import __version__
from ._kernel_pca import KernelPCA
from .io import (
    TABLE_FORMATS,
    check_output_path,
    load_model,
    model_summary,
    read_table,
    save_model,
    write_delimited,
    write_table,
)
from .kernels import GAMMA_HEURISTICS, KERNELS

logger = logging.getLogger("kpca")

PROG = "kpca"
EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


# ----------------------------------------------------------------------------- parser
class _UsageError(Exception):
    """A command-line usage error (exit status 2)."""


class _Exit(Exception):
    """argparse asked to exit (``--help``, ``--version``)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """ArgumentParser that raises instead of calling ``sys.exit``.

    So :func:`main` can return an exit status, and every error message has the
    same ``kpca: error:`` prefix (subcommands included).
    """

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise _UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise _Exit(status)


def _n_components(text: str) -> int | float | None:
    """``-k``: an integer >= 1, a fraction in (0, 1), or 'all'."""
    if text.strip().lower() in ("all", "none"):
        return None
    try:
        value = int(text)
    except ValueError:
        try:
            frac = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= 1, a fraction in (0, 1) or 'all'; got {text!r}"
            ) from None
        if not 0 < frac < 1:
            raise argparse.ArgumentTypeError(
                f"a fractional -k is the variance to explain and must be in (0, 1); got {text}"
            ) from None
        return frac
    if value < 1:
        raise argparse.ArgumentTypeError(f"the number of components must be >= 1; got {value}")
    return value


def _gamma(text: str) -> float | str:
    """``--gamma``: a number or a heuristic name."""
    if text in GAMMA_HEURISTICS:
        return text
    try:
        return float(text)
    except ValueError:
        names = ", ".join(repr(h) for h in GAMMA_HEURISTICS)
        raise argparse.ArgumentTypeError(
            f"expected a positive number or one of {names}; got {text!r}"
        ) from None


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


def _kernel_params(text: str) -> dict[str, Any]:
    """``--kernel-params``: a JSON object, or ``name=value,name=value``."""
    text = text.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"not a valid JSON object: {exc.msg}") from None
        if not isinstance(value, dict):
            raise argparse.ArgumentTypeError("expected a JSON object like '{\"p\": 4}'")
        return value
    out: dict[str, Any] = {}
    for item in (t.strip() for t in _split_top_level(text)):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise argparse.ArgumentTypeError(
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
        raise argparse.ArgumentTypeError("empty kernel parameters")
    return out


def _number(text: str) -> int | float:
    """A float, kept as int when it is integral (so saved parameters stay tidy)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number; got {text!r}") from None
    integral = value.is_integer() and not any(c in text.lower() for c in ".en")
    return int(value) if integral else value


def _nonnegative(text: str) -> float:
    """``--tol``: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"expected a number >= 0; got {text!r}")
    return value


def _positive_int(text: str) -> int:
    """``--max-iter``: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1; got {text!r}")
    return value


def _common(verbose_default: Any) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(
        "-v", "--verbose", action="count", default=verbose_default,
        help="report progress (logging level INFO for the 'kpca' logger)",
    )
    return p


def _add_data(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "data", metavar="DATA",
        help=f"input table, one row per sample ({', '.join(TABLE_FORMATS)}); for a string "
        "kernel a .txt file, one document per line",
    )
    p.add_argument(
        "--header", action=argparse.BooleanOptionalAction, default=None,
        help="CSV/TSV: the first row is (or is not) a header; default: detect",
    )


def _add_output(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o", "--output", metavar="OUT",
        help="write the scores here (.csv, .tsv, .npy, .parquet); default: CSV on stdout",
    )


def _add_labels(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--labels", metavar="FILE",
                   help="a text file with one label per sample (one per line; a first line "
                   "more than the samples is a header)")
    g.add_argument("--label-column", metavar="NAME",
                   help="a (numeric) column of DATA that holds the labels; it is not used as "
                   "a feature (a column name, or a 1-based index)")


def _add_model_options(p: argparse.ArgumentParser, *, save_required: bool) -> None:
    kernels = sorted(KERNELS)
    g = p.add_argument_group("model")
    g.add_argument(
        "--kernel", default=None, choices=kernels, metavar="NAME",
        help=f"kernel: {', '.join(kernels)} (default: linear, as KernelPCA); with "
        "spectrum (a string kernel) DATA is a .txt file, one document per line",
    )
    g.add_argument(
        "--gamma", type=_gamma, default=None,
        help="kernel coefficient: a number, 'scale' or 'median' (default: 1/n_features)",
    )
    g.add_argument("--degree", type=_number, default=None, help="degree of the poly kernel (3)")
    g.add_argument(
        "--coef0", type=_number, default=None,
        help="independent term of the poly and sigmoid kernels (1)",
    )
    g.add_argument(
        "--kernel-params", type=_kernel_params, default=None, metavar="PARAMS",
        help="other kernel parameters, as name=value pairs or a JSON object, e.g. "
        "'p=4,normalize=false' (spectrum) or '{\"beta\": [1, 0.5]}' (anova)",
    )
    g.add_argument(
        "-k", "--n-components", dest="n_components", type=_n_components, default=2,
        metavar="K",
        help="number of components, a fraction in (0, 1) of variance to explain, or 'all' "
        "(default: 2)",
    )
    g.add_argument(
        "--eigen-solver", "--solver", dest="solver", default="auto",
        choices=["auto", "dense", "arpack", "randomized", "krylov"],
        help="eigensolver (default: auto: dense, ARPACK or block Lanczos by problem size, "
        "falling back to dense when an iterative solve does not converge)",
    )
    g.add_argument(
        "--tol", type=_nonnegative, default=None, metavar="TOL",
        help="convergence tolerance: the residual target of krylov and randomized, relative "
        "to the largest eigenvalue, ARPACK's relative accuracy (default: 0, meaning 1e-8 "
        "in float64, 1e-5 in float32, machine precision for ARPACK)",
    )
    g.add_argument(
        "--max-iter", type=_positive_int, default=None, metavar="N",
        help="most kernel passes (krylov, randomized) or ARPACK iterations (default: the "
        "solver's own, 300 passes for krylov)",
    )
    g.add_argument(
        "--memory-limit", default=None, metavar="BYTES",
        help="memory the kernel matrix may use, e.g. 2GB; beyond it the fit is matrix-free "
        "(default: half the available memory)",
    )
    g.add_argument(
        "--precision", default="auto", choices=["auto", "float32", "float64"],
        help="storage precision of the kernel matrix (default: auto)",
    )
    g.add_argument(
        "--n-jobs", type=int, default=None, metavar="N",
        help="threads (default: all cores)",
    )
    g.add_argument("--seed", type=int, default=None, help="random seed (arpack, randomized)")
    g.add_argument(
        "--no-center", dest="center", action="store_false",
        help="do not centre in feature space (uncentred kernel PCA)",
    )
    g.add_argument(
        "--fit-inverse", dest="fit_inverse_transform", action="store_true",
        help="also learn the ridge pre-image map (for 'kpca inverse --method ridge')",
    )
    g.add_argument(
        "--alpha", type=float, default=None,
        help="ridge penalty of the learned pre-image (default: 1.0, as KernelPCA)",
    )
    p.add_argument(
        "--save", metavar="MODEL", required=save_required,
        help="save the fitted model to this file (e.g. model.kpca)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``kpca`` argument parser (exposed for documentation and tests)."""
    common = _common(argparse.SUPPRESS)
    parser = _Parser(
        prog=PROG,
        description="Kernel principal component analysis from the command line.",
        parents=[_common(0)],
        epilog="Run 'kpca COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "fit-transform", parents=[common], help="fit a model and write the scores of DATA",
        description="Fit kernel PCA on DATA and write its scores (one row per sample).",
    )
    _add_data(p)
    _add_output(p)
    _add_model_options(p, save_required=False)
    p.set_defaults(func=_cmd_fit_transform)

    p = sub.add_parser(
        "fit", parents=[common], help="fit a model and save it",
        description="Fit kernel PCA on DATA and save the model (see 'kpca transform').",
    )
    _add_data(p)
    _add_model_options(p, save_required=True)
    p.set_defaults(func=_cmd_fit)

    p = sub.add_parser(
        "transform", parents=[common], help="project DATA with a saved model",
        description="Project DATA on the components of a saved model.",
    )
    p.add_argument("--model", "-m", required=True, metavar="MODEL", help="saved model file")
    _add_data(p)
    _add_output(p)
    p.set_defaults(func=_cmd_transform)

    p = sub.add_parser(
        "inverse", parents=[common], help="map scores back to input space (pre-images)",
        description="Pre-images of the scores in SCORES (one row per sample, one column "
        "per component) with a saved model.",
    )
    p.add_argument("--model", "-m", required=True, metavar="MODEL", help="saved model file")
    _add_data(p)
    _add_output(p)
    p.add_argument(
        "--method", default="ridge", choices=["ridge", "fixed_point", "mds"],
        help="pre-image method (default: ridge, the learned map; needs a model fitted with "
        "--fit-inverse)",
    )
    p.set_defaults(func=_cmd_inverse)

    p = sub.add_parser(
        "denoise", parents=[common], help="denoise DATA: project, then take the pre-image",
        description="Project DATA on the first components of a saved model and map the "
        "projections back to input space.",
    )
    p.add_argument("--model", "-m", required=True, metavar="MODEL", help="saved model file")
    _add_data(p)
    _add_output(p)
    p.add_argument("-k", "--n-components", dest="n_components", type=int, default=None,
                   metavar="K", help="components to project on (default: all fitted)")
    p.add_argument(
        "--method", default="auto", choices=["auto", "fixed_point", "mds", "ridge"],
        help="pre-image method (default: auto)",
    )
    p.set_defaults(func=_cmd_denoise)

    p = sub.add_parser(
        "plot", parents=[common], help="draw a figure from a saved model (PNG, SVG, PDF)",
        description="scatter: the scores of DATA on two components, coloured by --labels; "
        "scree: the explained variance per component; contours: contour lines of the "
        "projection functions over the input plane (models fitted on 2-D data); outliers: "
        "the outlier map (score distance vs orthogonal distance, with cut-offs) of DATA, or "
        "of the training data without --data.",
    )
    p.add_argument("kind", choices=["scatter", "scree", "contours", "outliers"],
                   help="which figure")
    p.add_argument("--model", "-m", required=True, metavar="MODEL", help="saved model file")
    p.add_argument("-d", "--data", metavar="DATA", default=None,
                   help="table of points to project and draw (scatter: required; contours: "
                   "optional, drawn over the contour lines; outliers: default the training "
                   "data)")
    p.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                   help="CSV/TSV: the first row is (or is not) a header; default: detect")
    p.add_argument("-o", "--output", required=True, metavar="FIGURE",
                   help="figure file (.png, .svg or .pdf)")
    _add_labels(p)
    p.add_argument("--components", default="1,2", metavar="I,J",
                   help="scatter: the two components on the axes, 1-based (default: 1,2)")
    p.add_argument("-k", "--n-components", dest="n_components", type=int, default=8,
                   metavar="K", help="contours: number of components drawn (default: 8)")
    p.add_argument("--annotate", type=int, default=0, metavar="N",
                   help="outliers: write the row number of the N most outlying points")
    p.add_argument("--title", default=None, help="figure title")
    p.set_defaults(func=_cmd_plot)

    p = sub.add_parser(
        "select", parents=[common], help="compare kernels and parameters by cross-validation",
        description="Score every combination of --kernels, --gammas and --degrees: with "
        "--labels, the cross-validated accuracy of a logistic regression on the kernel PCA "
        "features; without, the held-out reconstruction error of pre-images. Prints (or "
        "writes) a Markdown table, best first.",
    )
    _add_data(p)
    _add_labels(p)
    p.add_argument("--kernels", default="linear,rbf,poly,cosine", metavar="LIST",
                   help="comma-separated kernel names (default: linear,rbf,poly,cosine)")
    p.add_argument("--gammas", default="median,scale", metavar="LIST",
                   help="comma-separated gamma values for kernels that have one: numbers, "
                   "'median', 'scale' (default: median,scale)")
    p.add_argument("--degrees", default="2,3", metavar="LIST",
                   help="comma-separated degrees of the poly kernel (default: 2,3)")
    p.add_argument("-k", "--n-components", dest="n_components", type=int, default=2,
                   metavar="K", help="components kept by every candidate (default: 2)")
    p.add_argument("--preimages", default="ridge", metavar="LIST",
                   help="without labels: comma-separated pre-image methods scored (ridge, "
                   "fixed_point, mds; default: ridge)")
    p.add_argument("--cv", type=int, default=5, help="cross-validation folds (default: 5)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="write the table here (.md) instead of standard output")
    p.set_defaults(func=_cmd_select)

    p = sub.add_parser(
        "info", parents=[common], help="describe a saved model",
        description="Print the kernel, parameters, eigenvalues and explained variance of a "
        "saved model.",
    )
    p.add_argument("model", metavar="MODEL", help="saved model file")
    p.add_argument("--json", action="store_true", help="print the description as JSON")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser(
        "demo", parents=[common], help="the classic kernel PCA examples, with figures",
        description="Run the classic kernel PCA examples — circles and moons with four "
        "kernels, Schölkopf's toy contours, reconstruction, the digits error table, "
        "denoising, stylometry, dual PCA — and write their figures (PNG), tables and a "
        "report (report.md) into a folder. About 10 s on an idle 2-core machine (several "
        "times more on a busy one); --quick computes a smaller digits table.",
    )
    p.add_argument("-o", "--out", default="kpca-demo", metavar="DIR",
                   help="output directory (created if needed; default: ./kpca-demo)")
    p.add_argument("--quick", action="store_true",
                   help="a smaller digits table (16-64 components x degrees 1-4 on 800 "
                   "training images) instead of the full one (16-120 x 1-7)")
    p.add_argument("--only", default=None, metavar="LIST",
                   help="comma-separated sections to run (default: all): "
                   "circles_moons, toy_contours, reconstruction, digits, denoising, "
                   "stylometry, dual_pca")
    p.set_defaults(func=_cmd_demo)
    return parser


# ----------------------------------------------------------------------------- commands
def _make_estimator(args: argparse.Namespace) -> KernelPCA:
    params: dict[str, Any] = dict(
        n_components=args.n_components,
        eigen_solver=args.solver,
        random_state=args.seed,
        center=args.center,
        memory_limit=args.memory_limit,
        precision=args.precision,
        n_jobs=args.n_jobs,
        fit_inverse_transform=args.fit_inverse_transform,
    )
    for name in ("alpha", "tol", "max_iter"):
        if getattr(args, name) is not None:  # not given: the estimator's default
            params[name] = getattr(args, name)
    if args.kernel_params is not None:
        params["kernel_params"] = args.kernel_params
    if args.kernel is not None:
        params["kernel"] = args.kernel
    kernel = params.get("kernel", KernelPCA().kernel)
    accepted = set(inspect.signature(KERNELS[kernel].__init__).parameters) - {"self"}
    for name in ("gamma", "degree", "coef0"):
        value = getattr(args, name)
        if value is None:  # not given: the estimator's default
            continue
        if name not in accepted:
            logger.warning("--%s is ignored by the %s kernel", name, kernel)
        params[name] = value
    return KernelPCA(**params)


def _is_string_kernel(kernel: Any) -> bool:
    """True for a kernel on strings (spectrum), given by name, class or instance."""
    if isinstance(kernel, str):
        kernel = KERNELS.get(kernel)
    cls = kernel if isinstance(kernel, type) else type(kernel)
    return (cls is not None and not getattr(cls, "requires_vectors", True)
            and getattr(cls, "name", "") != "precomputed")


def _read_strings(path: str | os.PathLike) -> np.ndarray:
    """Documents for a string kernel: a UTF-8 ``.txt`` file, one per non-blank line."""
    path = Path(path)
    if path.suffix.lower() != ".txt":
        raise ValueError(f"{path}: a string kernel reads a .txt file with one document per "
                         f"line; got {path.suffix or 'no extension'!r}.")
    if not path.exists():
        raise ValueError(f"{path}: no such file.")
    if path.is_dir():
        raise ValueError(f"{path}: is a directory, not a data file.")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text file ({exc.reason}).") from None
    docs = [ln for ln in text.splitlines() if ln.strip()]
    if not docs:
        raise ValueError(f"{path}: the file is empty (no document).")
    logger.info("read %d documents from %s", len(docs), path)
    return np.array(docs, dtype=object)


def _read_data(path: str, header: bool | None, strings: bool) -> tuple[np.ndarray, Any]:
    """DATA: a numeric table, or documents for a string kernel."""
    if strings:
        return _read_strings(path), None
    if Path(path).suffix.lower() == ".txt":
        raise ValueError(
            f"{path}: .txt files hold documents for a string kernel (--kernel spectrum); "
            f"numeric data must be one of {', '.join(TABLE_FORMATS)}."
        )
    return read_table(path, header=header)


def _describe(X: Any) -> str:
    return (f"{X.shape[0]} samples x {X.shape[1]} features" if X.ndim == 2
            else f"{X.shape[0]} documents")


def _write_scores(est: Any, Z: np.ndarray, output: str | None) -> None:
    columns = [str(c) for c in est.get_feature_names_out()]
    if output is None:
        write_delimited(sys.stdout, Z, columns)
        sys.stdout.flush()
    else:
        write_table(output, Z, columns)


def _fit(args: argparse.Namespace, *, transform: bool) -> int:
    # check every output location before the (possibly long) fit
    if getattr(args, "output", None):
        check_output_path(args.output)
    if args.save:
        check_output_path(args.save, table=False)
    est = _make_estimator(args)
    X, columns = _read_data(args.data, args.header, _is_string_kernel(est.kernel))
    logger.info("fitting %r on %s", est, _describe(X))
    if transform:
        Z = est.fit_transform(X)
    else:
        est.fit(X)
    if columns is not None and getattr(est, "n_features_in_", None) == len(columns):
        # the file's header names the features, as a DataFrame's columns would: the
        # model keeps them (inverse/denoise write them back, transform checks them)
        est.feature_names_in_ = np.asarray(columns, dtype=object)
    logger.info("kept %d components, eigenvalues %s", len(est.eigenvalues_), est.eigenvalues_)
    if transform:
        _write_scores(est, Z, args.output)
    if args.save:
        save_model(est, args.save)
    return EXIT_OK


def _cmd_fit_transform(args: argparse.Namespace) -> int:
    return _fit(args, transform=True)


def _cmd_fit(args: argparse.Namespace) -> int:
    return _fit(args, transform=False)


def _cmd_transform(args: argparse.Namespace) -> int:
    if args.output:
        check_output_path(args.output)
    est = load_model(args.model)
    X, columns = _read_data(args.data, args.header, _model_on_strings(est))
    _check_columns(est, X, columns, args.data, args.model)
    _write_scores(est, est.transform(X), args.output)
    return EXIT_OK


def _names(values: Sequence[Any], limit: int = 6) -> str:
    shown = ", ".join(str(v) for v in list(values)[:limit])
    return shown + (", ..." if len(values) > limit else "")


def _check_columns(est: Any, X: Any, columns: Sequence[str] | None, data: str,
                   model: str) -> None:
    """DATA must have the model's number of columns, and its names if both have names.

    Checked here, before the estimator sees the data, so that the message names the
    file and the model. Without a header (or for a model fitted without one) the
    columns are matched by position.
    """
    n = getattr(est, "n_features_in_", None)
    if n is None or getattr(X, "ndim", 1) != 2:
        return  # strings: no columns
    names = getattr(est, "feature_names_in_", None)
    if X.shape[1] != n:
        if getattr(getattr(est, "kernel_", None), "name", est.kernel) == "precomputed":
            what = f"{n} training samples (a precomputed kernel has one column per training sample)"
        else:
            what = f"{n} columns" + (f" ({_names(names)})" if names is not None else "")
        raise ValueError(
            f"{data}: has {X.shape[1]} columns but the model {model} was fitted on {what}."
        )
    if names is not None and columns is not None and [str(c) for c in names] != list(columns):
        raise ValueError(
            f"{data}: its columns ({_names(columns)}) are not those of the model {model} "
            f"({_names(names)}), in that order; rename or reorder them, or pass --no-header "
            "if the first row is data."
        )


def _model_on_strings(est: Any) -> bool:
    return _is_string_kernel(getattr(est, "kernel_", getattr(est, "kernel", None)))


def _read_labels(path: str, n: int) -> np.ndarray:
    """Labels from a text file: one per line; an extra first line is a header."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            lines = [ln.strip() for ln in fh if ln.strip()]
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file.") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a UTF-8 text file ({exc.reason}).") from None
    if len(lines) == n + 1:
        lines = lines[1:]
    if len(lines) != n:
        raise ValueError(f"{path}: has {len(lines)} labels but the data have {n} rows.")
    return np.array(lines, dtype=object)


def _data_and_labels(args: argparse.Namespace, path: str,
                     strings: bool = False) -> tuple[np.ndarray, Any, list[str] | None]:
    """Read DATA; split off the label column or read the label file if asked.

    Returns the features, the labels (or None) and the names of the feature
    columns (None without a header).
    """
    X, columns = _read_data(path, args.header, strings)
    labels = None
    col = getattr(args, "label_column", None)
    if col is not None and strings:
        raise ValueError("--label-column needs a table; with documents use --labels FILE.")
    if col is not None:
        if columns is not None and col in columns:
            j = columns.index(col)
        else:
            try:
                j = int(col) - 1
            except ValueError:
                raise ValueError(
                    f"{path}: no column named {col!r} (columns: {columns})."
                ) from None
            if not 0 <= j < X.shape[1]:
                raise ValueError(f"{path}: column index {col} is out of range (1..{X.shape[1]}).")
        labels = X[:, j]
        labels = labels.astype(int) if np.all(labels == np.round(labels)) else labels
        X = np.delete(X, j, axis=1)
        if columns is not None:
            columns = columns[:j] + columns[j + 1:]
        if X.shape[1] == 0:
            raise ValueError(f"{path}: no feature column left besides the labels.")
    elif getattr(args, "labels", None):
        labels = _read_labels(args.labels, X.shape[0])
    return X, labels, columns


def _check_vectors(est: Any, model: str, command: str) -> None:
    if _model_on_strings(est):
        raise ValueError(
            f"{model}: the model was fitted on strings ({type(est.kernel_).__name__} kernel); "
            f"'kpca {command}' maps back to input vectors, which strings do not have."
        )


def _cmd_inverse(args: argparse.Namespace) -> int:
    if args.output:
        check_output_path(args.output)
    est = load_model(args.model)
    _check_vectors(est, args.model, "inverse")
    Y, _ = read_table(args.data, header=args.header)
    k = len(est.eigenvalues_)
    if Y.shape[1] != k:
        raise ValueError(f"{args.data}: has {Y.shape[1]} columns but the model {args.model} "
                         f"has {k} components; SCORES needs one column per component.")
    if args.method == "ridge" and not getattr(est, "fit_inverse_transform", False):
        raise ValueError(
            f"{args.model}: the model has no learned pre-image map; refit it with "
            "--fit-inverse, or use --method fixed_point / mds."
        )
    kw = {} if args.method == "ridge" else {"method": args.method}
    Z = np.asarray(est.inverse_transform(Y, **kw))
    _write_inputs(est, Z, args.output)
    return EXIT_OK


def _write_inputs(est: Any, Z: np.ndarray, output: str | None,
                  columns: Sequence[str] | None = None) -> None:
    """Write points of input space, under the model's feature names if it has them,
    else ``columns`` (the input file's header), else x0, x1, ..."""
    names = getattr(est, "feature_names_in_", None)
    if names is not None:
        columns = [str(c) for c in names]
    elif columns is None:
        columns = [f"x{j}" for j in range(Z.shape[1])]
    if output is None:
        write_delimited(sys.stdout, Z, columns)
        sys.stdout.flush()
    else:
        write_table(output, Z, columns)


def _cmd_denoise(args: argparse.Namespace) -> int:
    if args.output:
        check_output_path(args.output)
    est = load_model(args.model)
    _check_vectors(est, args.model, "denoise")
    X, columns = read_table(args.data, header=args.header)
    _check_columns(est, X, columns, args.data, args.model)
    if callable(getattr(est, "denoise", None)):
        Z = est.denoise(X, n_components=args.n_components, method=args.method)
    else:  # a kpca without KernelPCA.denoise: projection + learned pre-image
        if not getattr(est, "fit_inverse_transform", False):
            raise ValueError(f"{args.model}: refit the model with --fit-inverse to denoise.")
        Z = est.inverse_transform(est.transform(X))
    _write_inputs(est, np.asarray(Z), args.output, columns)
    return EXIT_OK


def _use_agg() -> None:
    try:
        import matplotlib
    except ImportError:
        raise ImportError(
            "figures need matplotlib, which is not installed: pip install 'kpca[plot]'"
        ) from None
    matplotlib.use("Agg")  # the CLI only writes files


def _cmd_plot(args: argparse.Namespace) -> int:
    _use_agg()
    from . import plotting

    path = Path(args.output)
    if path.suffix.lower() not in plotting.SAVE_FORMATS:
        raise ValueError(
            f"{path}: unknown figure format; use one of {', '.join(plotting.SAVE_FORMATS)}."
        )
    check_output_path(path, table=False)
    est = load_model(args.model)
    X = labels = None
    if args.data is not None:
        X, labels, columns = _data_and_labels(args, args.data, _model_on_strings(est))
        _check_columns(est, X, columns, args.data, args.model)
    elif args.labels or args.label_column:
        raise ValueError("--labels / --label-column need --data.")
    import matplotlib.pyplot as plt

    if args.kind == "scatter":
        if X is None:
            raise ValueError("'kpca plot scatter' needs --data (the points to project).")
        try:
            i, j = (int(c) - 1 for c in args.components.split(","))
        except ValueError:
            raise ValueError(f"--components: expected two numbers like 1,2; got "
                             f"{args.components!r}.") from None
        k = len(est.eigenvalues_)
        if not (0 <= i < k and 0 <= j < k):
            raise ValueError(f"--components: the model has {k} components; got "
                             f"{args.components}.")
        fig, _ = plotting.plot_embedding(est.transform(X), labels, components=(i, j),
                                         title=args.title, path=path)
    elif args.kind == "scree":
        fig, _ = plotting.plot_scree(est, title=args.title, path=path)
    elif args.kind == "outliers":
        fig, _ = plotting.plot_outlier_map(est, X=X, labels=labels, annotate=args.annotate,
                                           title=args.title, path=path)
    else:
        fig, _ = plotting.plot_contours(est, X, labels, n_components=args.n_components,
                                        title=args.title, path=path)
    plt.close(fig)
    print(f"wrote {path}")
    return EXIT_OK


def _split_list(text: str, convert: Callable[[str], Any], flag: str) -> list[Any]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError(f"{flag}: empty list.")
    try:
        return [convert(t) for t in items]
    except (ValueError, argparse.ArgumentTypeError) as exc:
        raise ValueError(f"{flag}: {exc}") from None


def _cmd_select(args: argparse.Namespace) -> int:
    from .selection import select_kernel

    if args.output:
        check_output_path(args.output, table=False)
    X, labels, _ = _data_and_labels(args, args.data)
    kernels = _split_list(args.kernels, str, "--kernels")
    unknown = [k for k in kernels if k not in KERNELS or k in ("precomputed", "spectrum")]
    if unknown:
        raise ValueError(f"--kernels: unknown or unusable kernel(s) {unknown} for a table of "
                         "numbers.")
    gammas = _split_list(args.gammas, _gamma, "--gammas")
    degrees = _split_list(args.degrees, int, "--degrees")
    preimages = _split_list(args.preimages, str, "--preimages")
    bad = [m for m in preimages if m not in ("ridge", "fixed_point", "mds")]
    if bad:
        raise ValueError(f"--preimages: unknown method(s) {bad}; choose from ridge, "
                         "fixed_point, mds.")
    candidates: list[dict[str, Any]] = []
    for name in kernels:
        accepted = set(inspect.signature(KERNELS[name].__init__).parameters) - {"self"}
        grid: dict[str, list[Any]] = {"kernel": [name]}
        if "gamma" in accepted:
            grid["gamma"] = [g for g in gammas if not (g == "median" and name in (
                "poly", "polynomial", "sigmoid"))] or ["scale"]
        if "degree" in accepted:
            grid["degree"] = degrees
        candidates.append(grid)
    logger.info("select: %d samples, %s", X.shape[0],
                "supervised" if labels is not None else "unsupervised")
    result = select_kernel(X, labels, candidates=candidates, n_components=args.n_components,
                           cv=args.cv, random_state=args.seed, preimage_methods=preimages)
    what = ("cross-validated accuracy of a logistic regression on the kernel PCA features"
            if labels is not None else "held-out reconstruction error (MSE) of pre-images")
    text = (f"# kpca select: {args.data}\n\nCriterion: {what}, {args.cv} folds, "
            f"{args.n_components} components.\n\n{result.table()}\nBest: "
            + ", ".join(f"{k}={v!r}" for k, v in result.best_params.items()) + "\n")
    if args.output:
        from .io import atomic_write

        with atomic_write(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _fmt(values: Any) -> str:
    arr = np.atleast_1d(np.asarray(values, dtype=float))
    return np.array2string(arr, precision=6, separator=", ", max_line_width=88,
                           threshold=40)


def _cmd_info(args: argparse.Namespace) -> int:
    info = model_summary(load_model(args.model))
    if args.json:
        print(json.dumps({"model": args.model, **info}, indent=2))
        return EXIT_OK
    lines = [f"model:        {args.model}", f"estimator:    {info['class']}"]
    if "kernel" in info:
        kp = ", ".join(f"{k}={v!r}" for k, v in info["kernel"]["params"].items())
        lines.append(f"kernel:       {info['kernel']['name']}({kp})")
    if "n_samples_fit" in info:
        d = info.get("n_features_in")
        what = f"x {d} features" if d is not None else "(non-vector objects, e.g. strings)"
        lines.append(f"fitted on:    {info['n_samples_fit']} samples {what}")
    if "eigen_solver" in info:
        lines.append(f"solver:       {info['eigen_solver']}")
    if "n_components" in info:
        lines.append(f"n_components: {info['n_components']}")
        lines.append(f"eigenvalues:  {_fmt(info['eigenvalues'])}")
    if "explained_variance_ratio" in info:
        ratio = info["explained_variance_ratio"]
        lines.append(f"explained variance ratio: {_fmt(ratio)} (total {sum(ratio):.6g})")
    lines.append("parameters:")
    lines += [f"  {k} = {v!r}" for k, v in info["params"].items()]
    print("\n".join(lines))
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from ._demo import SECTIONS, run_demo

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: exists and is not a directory.")
    sections = None
    if args.only:
        sections = _split_list(args.only, str, "--only")
        unknown = [k for k in sections if k not in SECTIONS]
        if unknown:
            raise ValueError(f"--only: unknown section(s) {unknown}; choose from "
                             f"{', '.join(SECTIONS)}.")
    try:
        import matplotlib

        matplotlib.use("Agg")
    except ImportError:
        logger.warning("matplotlib is not installed: the demo writes no figures "
                       "(pip install 'kpca[plot]')")

    def progress(key: str, seconds: float) -> None:
        sys.stderr.write(f"{PROG}: demo: {key} done ({seconds:.1f} s)\n")
        sys.stderr.flush()

    result = run_demo(out, full=not args.quick, sections=sections, progress=progress)
    lines = []
    if "linear" in result.scores and "rbf" in result.scores:
        lin, rbf = result.scores["linear"], result.scores["rbf"]
        lines.append(
            "Concentric circles, logistic-regression accuracy on the first 2 components:\n"
            f"  {rbf.label}: {rbf.accuracy:.3f}  (component 1 alone: {rbf.accuracy_c1:.3f})\n"
            f"  {lin.label}: {lin.accuracy:.3f}  (component 1 alone: {lin.accuracy_c1:.3f})\n"
            f"RBF kernel PCA {'separates' if rbf.accuracy >= 0.99 else 'does not separate'} "
            f"the circles; linear PCA {'does' if lin.accuracy >= 0.9 else 'does not'}."
        )
    lines.append(f"Report: {result.files['report']}\nWrote:")
    lines += [f"  {p}" for p in dict.fromkeys(result.files.values())]
    print("\n".join(lines))
    return EXIT_OK


# ----------------------------------------------------------------------------- main
class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = f"{PROG}: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _ProgressBar(logging.Handler):
    """Shows the library's per-pass log records as a progress line on a terminal.

    The library only logs (records carry ``kpca_event`` and its numbers); this
    handler, active when stderr is a terminal and tqdm is installed, turns them into
    a bar whose total is unknown (iterative solvers stop when they converge).
    """

    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        from tqdm import tqdm

        self.bar = tqdm(desc="kernel passes", unit="pass", file=sys.stderr, leave=False)

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "kpca_event", None)
        if event == "pass":
            self.bar.update(1)
        elif event == "residual":
            self.bar.set_postfix(residual=f"{record.kpca_residual:.1e}")

    def close(self) -> None:
        self.bar.close()
        super().close()


def _progress_handler(verbose: int) -> logging.Handler | None:
    if verbose or not sys.stderr.isatty():
        return None  # -v prints the log lines themselves; pipes get no bar
    try:
        return _ProgressBar()
    except ImportError:  # tqdm is optional (pip install kpca[progress])
        return None


def _show_warning(message: Warning | str, *args: Any, **kwargs: Any) -> None:
    sys.stderr.write(f"{PROG}: warning: {message}\n")


def _error(message: Any) -> None:
    sys.stderr.write(f"{PROG}: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``kpca`` command line tool.

    Parameters
    ----------
    argv : sequence of str, default=None
        Arguments without the program name; ``None`` means ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status: 0 success, 2 usage or input error, 1 other failure.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except _Exit as exc:
        return exc.status
    except _UsageError as exc:
        _error(exc)
        return EXIT_USAGE

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    handler.setLevel(logging.WARNING if not args.verbose else logging.DEBUG)
    old_level = logger.level
    logger.addHandler(handler)
    progress = _progress_handler(args.verbose)
    if progress is not None:
        logger.addHandler(progress)
    levels = {0: logging.INFO if progress else logging.WARNING, 1: logging.INFO}
    logger.setLevel(levels.get(args.verbose, logging.DEBUG))
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            # a model fitted on a file with a header has feature names; the CLI hands the
            # estimator arrays and checks the columns itself (_check_columns)
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            return func(args)
    except ValueError as exc:  # bad file, bad parameter, corrupt model, ...
        logger.debug("details", exc_info=True)
        _error(exc)
        return EXIT_USAGE
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
        _error(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else exc)
        return EXIT_USAGE
    except ImportError as exc:
        _error(exc)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:  # the reader of stdout went away (e.g. `| head`): stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # stdout is not a real file
            pass
        return EXIT_FAILURE
    except Exception as exc:  # an unexpected failure: one line, traceback with -v
        if args.verbose:
            logger.error("unexpected failure", exc_info=True)
        hint = "" if args.verbose else " (run with -v for the traceback)"
        _error(f"{type(exc).__name__}: {exc}{hint}")
        return EXIT_FAILURE
    finally:
        logger.removeHandler(handler)
        if progress is not None:
            logger.removeHandler(progress)
            progress.close()
        logger.setLevel(old_level)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
