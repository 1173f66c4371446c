"""The ``kpca`` command line tool: flags -> estimators, files -> :mod:`kpca.io`.

``fit``/``fit-transform --estimator NAME`` build one of :data:`ESTIMATORS`; each
estimator parameter is a flag (:data:`kpca.cli.PARAMETER_FLAGS`), validated by the
estimator. ``nystrom``, ``random-features`` and ``incremental`` stream DATA in row
blocks (:func:`kpca.io.open_rows`; ``incremental`` adds each block of
``--batch-size`` rows with ``partial_fit``); ``update`` adds the rows of another
file to a saved incremental model. The other commands take the estimator from
the model file. Exit status: 0 success, 2 usage and input errors (one
``kpca: error:`` line), 1 other failures (``-v``: traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
from sklearn.pipeline import make_pipeline

from .. import ESTIMATORS, IncrementalKernelPCA, KernelPCA, __version__
from .. import io as kio
from .._entry import interrupted
from .._rows import RowSource
from ._params import (
    PARAMETER_FLAGS,
    flag_help,
    ignored_kernel_params,
    parameter_flag,
    parse_candidates,
    parse_choice,
    parse_components,
    parse_int,
    parse_int_in,
    parse_nonnegative,
    parse_nonnegative_int,
    parse_positive_int,
    parse_seed,
    parse_word_or,
    split_list,
)
from ._progress import console_logging
from ._summary import format_selection, format_summary, format_values

logger = logging.getLogger("kpca")
PROG = "kpca"
EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
#: estimators that read DATA in row blocks
STREAMED = ("nystrom", "random-features", "incremental")
_CLI_DEFAULTS = {"n_components": 2}  # -k: two components unless told
_SKIP = {"copy_X"}  # parameters without meaning on the command line
_UNSET = argparse.SUPPRESS  # a parameter flag not given (None is a value: -k all)
_PREIMAGES = ("ridge", "fixed_point", "mds")


class _Exit(Exception):
    """argparse is done: ``--help``/``--version`` (status 0) or a usage error (2)."""


class _Parser(argparse.ArgumentParser):
    """Raises instead of calling ``sys.exit``, so :func:`main` returns the status."""

    def error(self, message: str) -> NoReturn:
        # the error first, then one short usage line: argparse's full usage block
        # (20+ lines for fit) buried the useful line at the end
        _error(message)
        sys.stderr.write(f"usage: {self.short_usage()}\nsee `{self.prog} --help`\n")
        raise _Exit(EXIT_USAGE)

    def short_usage(self) -> str:
        """``PROG POSITIONALS REQUIRED-OPTIONS [options]``: what must be given, on one line."""
        words = [self.prog]
        for action in self._actions:
            if action.option_strings:
                continue
            name = action.metavar or (f"{{{','.join(action.choices)}}}" if action.choices
                                      else action.dest)
            words.append(f"[{name}]" if action.nargs in ("?", "*") else name)
        for action in self._actions:
            if action.option_strings and action.required:
                flag = max(action.option_strings, key=len)
                metavar = action.metavar or action.dest.upper()
                words.append(f"{flag} {metavar}" if action.nargs != 0 else flag)
        words.append("[options]")
        return " ".join(words)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check of a choice, naming the close choices (``fit_transform``:
        did you mean fit-transform?; '_' counts as '-')."""
        if action.choices is None or value in action.choices:
            return
        choices = [str(c) for c in action.choices]
        close = difflib.get_close_matches(str(value).replace("_", "-"), choices, n=3,
                                          cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (choose "
                                     f"from {', '.join(choices)})")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        sys.stderr.write(message or "")
        raise _Exit(status)


def _t(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse ``type`` from a ``parse_*`` parser (its message, not 'invalid value')."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def _defaults() -> dict[str, dict[str, Any]]:
    return {name: cls().get_params(deep=False) for name, cls in ESTIMATORS.items()}


def _flag(name: str) -> str:
    return "/".join(parameter_flag(name).flags)


def _in_flags(message: str, given: Sequence[str]) -> str:
    """An estimator's message about a parameter the user gave, in the flag's terms:
    scikit-learn's "The 'gamma' parameter of KernelPCA must be ..." becomes "--gamma
    must be ...", and a message that starts with the parameter's name gets the flag
    after it."""
    for name in given:
        flag = _flag(name)
        sk = re.match(rf"The '{name}' parameter of \w+ (must .*)", message, re.S)
        if sk:
            return f"{flag} {sk.group(1)}"
        if re.match(rf"{name}\b", message):
            return f"{message} ({flag})"
    return message


def _add_estimator_options(p: argparse.ArgumentParser) -> None:
    """--estimator and one flag per parameter; its help gives defaults and estimators."""
    g = p.add_argument_group("estimator")
    g.add_argument("--estimator", default="exact", choices=list(ESTIMATORS), help="exact "
                   "(default), nystrom, random-features, incremental (these three stream DATA "
                   "in row blocks; an incremental model takes more rows with 'kpca update'), "
                   "weighted, spherical, robpca (robust), anova")
    defaults = _defaults()
    names = [*PARAMETER_FLAGS, *sorted(set().union(*defaults.values()) - _SKIP
                                           - set(PARAMETER_FLAGS))]
    for name in names:
        spec, default = parameter_flag(name), _CLI_DEFAULTS.get(name)
        kw = (dict(action="store_const", const=spec.const) if spec.parse is None else
              dict(type=_t(spec.parse), choices=spec.choices, metavar=spec.metavar))
        g.add_argument(*spec.flags, dest=name, default=_UNSET if default is None else default,
                       **kw, help=flag_help(name, defaults, default).replace("%", "%%"))


def _add_io(p: argparse.ArgumentParser, *, data: str = "DATA", output: str | None = "OUT",
            model: bool = False, labels: bool = False, strings: bool = True) -> None:
    if model:
        p.add_argument("--model", "-m", required=True, metavar="MODEL", help="saved model file")
    p.add_argument(*(("-d", "--data") if data == "-d" else ("data",)), metavar="DATA",
                   help=f"table ({', '.join(kio.TABLE_FORMATS)}), one row per sample"
                   + ("; for a string kernel a .txt file, one document per line" if strings
                      else ""))
    p.add_argument("--header", action=argparse.BooleanOptionalAction, default=None,
                   help="CSV/TSV: the first row is (or is not) a header; default: detect")
    if output:
        p.add_argument("-o", "--output", metavar=output, required=output == "FIGURE",
                       help="output file (.png, .svg, .pdf)" if output == "FIGURE" else
                       "output file (.csv, .tsv, .npy, .parquet; .md for select); default: "
                       "standard output")
    g = p.add_mutually_exclusive_group() if labels else None
    if g:
        g.add_argument("--labels", metavar="FILE", help="one label per sample and line (a "
                       "first line more than the samples is a header)")
        g.add_argument("--label-column", metavar="NAME", help="a numeric column of DATA "
                       "holding the labels (a name or a 1-based index); not a feature")


def build_parser() -> argparse.ArgumentParser:
    """The ``kpca`` argument parser (exposed for documentation and tests)."""
    verbose = dict(action="count", help="report progress (-vv: more)")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", default=argparse.SUPPRESS, **verbose)
    parser = _Parser(prog=PROG, description="Kernel principal component analysis.",
                     epilog="Run 'kpca COMMAND --help' for the options of a command.")
    parser.add_argument("-v", "--verbose", default=0, **verbose)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    parser.commands = {}  # name -> its parser, for errors in the command's own terms

    def command(name: str, func: Callable[..., int], text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=text, description=text + ".")
        p.set_defaults(func=func)
        parser.commands[name] = p
        return p

    for name, text in [("fit-transform", "fit a model on DATA and write its scores"),
                       ("fit", "fit a model and save it")]:
        p = command(name, functools.partial(_fit, transform=name == "fit-transform"), text)
        _add_io(p, output="OUT" if name == "fit-transform" else None)
        p.add_argument("--save", metavar="MODEL", required=name == "fit",
                       help="save the fitted model to this file (e.g. model.kpca)")
        p.add_argument("--standardize", action="store_true",
                       help="scale each column of DATA to mean 0 and standard deviation 1 "
                            "before the fit (columns in different units); the model file "
                            "keeps the scaling, and the other commands apply it to their "
                            "input and undo it on their output")
        _add_estimator_options(p)
    _add_plan_command(command)
    p = command("update", _cmd_update, "add the rows of DATA to a model fitted with "
                "--estimator incremental, block by block, and save it")
    _add_io(p, output=None, model=True, strings=False)  # incremental: vector kernels only
    p.add_argument("-o", "--output", metavar="MODEL", help="write the updated model to this "
                   "file (default: replace --model, atomically)")
    _add_io(command("transform", _cmd_transform, "project DATA with a saved model"), model=True)
    p = command("inverse", _cmd_inverse, "map scores back to input space (pre-images)")
    _add_io(p, model=True)
    p.add_argument("--method", choices=[*_PREIMAGES, "auto"], help="pre-image method (default:"
                   " ridge for exact models, which needs --fit-inverse; auto for the others)")
    p = command("denoise", _cmd_denoise, "project DATA on the first components of a model and "
                "map the projections back to input space")
    _add_io(p, model=True)
    p.add_argument("-k", "--n-components", type=_t(parse_positive_int), metavar="K",
                   help="components, at most the model's (default: all)")
    p.add_argument("--method", default="auto", choices=["auto", *_PREIMAGES],
                   help="pre-image method (default: auto)")
    p = command("plot", _cmd_plot, "draw a figure of a saved model: scatter (scores of DATA), "
                "scree (explained variance; --null: with the parallel-analysis null band), "
                "contours (projection functions of a 2-D model) "
                "or outliers (outlier map of DATA, default the training data)")
    p.add_argument("kind", choices=["scatter", "scree", "contours", "outliers"])
    _add_io(p, data="-d", output="FIGURE", model=True, labels=True)
    p.add_argument("--components", default="1,2", metavar="I,J", help="scatter: the axes")
    p.add_argument("-k", "--n-components", type=_t(parse_positive_int), default=8, metavar="K",
                   help="contours: components, >= 1 (default: 8, at most the model's)")
    p.add_argument("--annotate", type=_t(parse_nonnegative_int), default=0, metavar="N",
                   help="outliers: label the N farthest with their line in DATA (as kpca's "
                        "errors count lines: the header is line 1), or their 1-based row "
                        "number (.npy, .parquet, training data)")
    p.add_argument("--null", action="store_true", help="scree: the parallel-analysis null "
                   "band (column-permuted training rows) and the chosen k; the model's own "
                   "analysis when it was fitted with -k auto, else computed on the training "
                   "rows it keeps (exact models)")
    p.add_argument("--seed", type=_t(parse_seed), default=0, metavar="N", help="scree --null: "
                   "seed of the permutations when the model has no analysis, in [0, 2**32 - 1] "
                   "(default: 0)")
    p.add_argument("--title", help="figure title")
    p = command("select", _cmd_select, "compare kernels by cross-validation: with labels, the "
                "score (accuracy) of a classifier (logistic regression on the standardized "
                "components) on the components; without, the held-out reconstruction error "
                "in input space through the learned pre-image (its ridge penalty chosen by "
                "generalized cross-validation): a choice of gamma and kernel without labels; "
                "prints a Markdown table; -k auto: each kernel's number of components by "
                "parallel analysis")
    _add_io(p, labels=True)
    for flag, default, what in [("--kernels", "linear,rbf,poly,cosine", "kernels"),
                                ("--gammas", "median,scale", "gammas (numbers, median, scale)"),
                                ("--degrees", "2,3", "degrees of the poly kernel"),
                                ("--preimages", "ridge", "pre-image methods (without labels)")]:
        p.add_argument(flag, default=default, metavar="LIST", help=f"comma-separated {what} "
                       f"(default: {default})")
    select_k = parse_word_or("auto", parse_positive_int, "an integer >= 1 or 'auto'")
    p.add_argument("-k", "--n-components", type=_t(select_k), default=2, metavar="K",
                   help="components (default: 2), or 'auto': each candidate's number by "
                        "parallel analysis (the components above a null of column-permuted "
                        "data; docs/math.md)")
    p.add_argument("--cv", type=_t(parse_int_in(2)), default=5, metavar="FOLDS",
                   help="cross-validation folds, from 2 to the number of rows (default: 5)")
    select_alpha = parse_word_or("gcv", parse_nonnegative, "'gcv' or a number >= 0")
    p.add_argument("--alpha", type=_t(select_alpha), default="gcv", metavar="ALPHA",
                   help="without labels: the learned pre-image's ridge penalty, 'gcv' "
                        "(default: chosen by generalized cross-validation on each training "
                        "fold; docs/math.md) or a number >= 0")
    p.add_argument("--classifier", default="logistic", choices=list(_classifiers()),
                   help="with labels: the classifier on the components (default: logistic, "
                        "a logistic regression on the standardized components, max_iter "
                        "1000; linear-svm, knn and ridge standardize too; lda)")
    p.add_argument("--scoring", metavar="NAME", help="with labels: a scikit-learn scorer "
                   "(e.g. balanced_accuracy, f1_macro; default: accuracy)")
    p.add_argument("--seed", type=_t(parse_seed), default=0, metavar="N",
                   help="random seed, in [0, 2**32 - 1] (default: 0)")
    p.add_argument("--standardize", action="store_true", help="scale each column to mean 0 "
                   "and standard deviation 1 before the kernel (fitted on each training "
                   "fold); the reconstruction errors are then in standardized units")
    p.add_argument("--landmarks-for-tol", type=float, metavar="TOL", help="instead of "
                   "comparing kernels: recommend for each candidate kernel the fewest Nystrom "
                   "landmarks (of --landmarks) whose estimated error against exact kernel PCA "
                   "(the larger of the top-k eigenvalues' relative error and the subspace's "
                   "largest sine, on an exact sub-problem; docs/math.md) is at most TOL, "
                   "printing the estimate per count")
    p.add_argument("--landmarks", default="50,100,200,400,800,1600", metavar="LIST",
                   help="--landmarks-for-tol: the counts to try, ascending (default: "
                        "50,100,200,400,800,1600)")
    p = command("info", _cmd_info, "describe a saved model: estimator, kernel, parameters, "
                "eigenvalues, explained variance; without MODEL, what kpca runs with here: "
                "versions, the compiled kernels' variant (KPCA_NATIVE), CPU features, BLAS, "
                "cores and memory")
    p.add_argument("model", metavar="MODEL", nargs="?", help="saved model file")
    p.add_argument("--json", action="store_true", help="print the description as JSON")
    p = command("demo", _cmd_demo, "run the classic kernel PCA examples (the scripts of the "
                "documentation's gallery); write their figures and a report (report.md) "
                "into a folder")
    p.add_argument("-o", "--out", default="kpca-demo", metavar="DIR", help="output folder")
    p.add_argument("--quick", action="store_true", help="a smaller digits table")
    p.add_argument("--only", metavar="LIST",
                   help="comma-separated examples, NAME of examples/plot_NAME.py (default: "
                   "all): circles_moons, toy_contours, reconstruction, denoising, digits, "
                   "stylometry, dual_pca, ...")
    return parser


def _make_estimator(args: argparse.Namespace) -> Any:
    """The ``--estimator`` with the parameters given as flags (the others: its defaults)."""
    defaults = _defaults()
    accepted, every = defaults[args.estimator], set().union(*defaults.values()) - _SKIP
    params = {k: getattr(args, k) for k in every if hasattr(args, k)}
    for name in sorted(params.keys() - accepted.keys()):
        users = [e for e, d in defaults.items() if name in d]
        raise ValueError(f"{_flag(name)} does not apply to --estimator {args.estimator}; it "
                         f"is a parameter of {', '.join(users)}.")
    kernel = params.get("kernel", accepted.get("kernel"))
    for name in ignored_kernel_params(kernel, params):
        logger.warning("%s is ignored by the %s kernel", _flag(name), kernel)
    args.given = params  # main names the flag of a parameter the estimator refuses
    return ESTIMATORS[args.estimator](**params)


def _fit(args: argparse.Namespace, *, transform: bool) -> int:
    if getattr(args, "output", None):  # every output checked before the (long) fit
        kio.check_output_path(args.output)
    if args.save:
        kio.check_output_path(args.save, table=False)
    est = _make_estimator(args)
    strings = kio.is_string_kernel(getattr(est, "kernel", None))
    X, columns = kio.read_data(args.data, header=args.header, strings=strings,
                               stream=args.estimator in STREAMED and not strings)
    scaler = kio.fit_scaler(X, args.data, columns) if args.standardize else None
    X = kio.standardized(X, scaler)
    streamed = isinstance(X, RowSource)
    if transform and not streamed:
        Z = est.fit_transform(X)
        scores: Callable[[Any], Any] = lambda _: Z  # noqa: E731
    else:
        if streamed and transform:  # two passes over DATA: the progress bars name them
            _phase(f"pass 1/2: {_FIT_PASS[args.estimator]}")
        scores = est.fit(X).transform  # streamed: a second pass writes the scores
        if streamed and transform:
            _phase("pass 2/2: scores")
    if columns is not None and getattr(est, "n_features_in_", None) == len(columns):
        est.feature_names_in_ = np.asarray(columns, dtype=object)  # as a DataFrame's
    # one line however many components (numpy's repr wraps at 75 characters)
    logger.info("kept %d components, eigenvalues %s", len(est.eigenvalues_),
                format_values(est.eigenvalues_))
    if transform:
        kio.write_blocks(args.output, [str(c) for c in est.get_feature_names_out()], X, scores)
    if args.save:
        kio.save_model(est if scaler is None else make_pipeline(scaler, est), args.save)
        # said as 'kpca plot' and 'kpca update' say what they wrote; on standard error
        # when the scores go to standard output, so that a pipe gets only the table
        print(f"wrote {args.save}: {type(est).__name__} (--estimator {args.estimator}), "
              f"{len(est.eigenvalues_)} components"
              + (", standardized inputs" if scaler is not None else ""),
              file=sys.stderr if transform and not args.output else sys.stdout)
    return EXIT_OK


#: what the fit's pass over a streamed DATA computes, as the progress bar names it
_FIT_PASS = {"nystrom": "landmarks", "random-features": "random features",
             "incremental": "batches"}


def _phase(text: str) -> None:
    """Name the passes over a file that follow (the progress bars' label)."""
    logger.debug(text, extra={"kpca_event": "phase", "kpca_text": text})


def _add_plan_command(command: Callable[..., argparse.ArgumentParser]) -> None:
    """``kpca plan``: the fit flags, DATA, and --json."""
    p = command("plan", _cmd_plan, "print what 'kpca fit' would do with DATA and these "
                "flags, without fitting: which solver runs and why, whether the kernel "
                "matrix is stored or matrix-free, its precision, the expected passes, the "
                "modelled cost (flops) and the peak memory. Reads only the shape and dtype "
                "of DATA (a .npy or Parquet file's header; a CSV file is scanned for its "
                "rows)")
    _add_io(p, output=None)
    p.add_argument("--standardize", action="store_true",
                   help="accepted as by 'kpca fit' (scaling does not change the plan)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    _add_estimator_options(p)


def _cmd_plan(args: argparse.Namespace) -> int:
    est = _make_estimator(args)
    if not hasattr(est, "plan"):
        raise ValueError(f"--estimator {args.estimator} has no fit plan: 'kpca plan' "
                         "describes the exact fits (--estimator exact, weighted, spherical).")
    strings = kio.is_string_kernel(getattr(est, "kernel", None))
    X = (kio.read_data(args.data, strings=True)[0] if strings
         else kio.read_data(args.data, header=args.header, stream=True)[0])
    plan = est.plan(X)
    print(json.dumps(plan.decisions(), indent=2) if args.json else plan.describe())
    return EXIT_OK


def _unscaled(scaler: Any, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` followed by undoing the model's input scaling (back to DATA's units)."""
    return fn if scaler is None else (lambda B: scaler.inverse_transform(fn(B)))


def _load(args: argparse.Namespace, command: str,
          check: bool = True) -> tuple[Any, Any, Any, Any]:
    """The estimator and its input scaler (or None) after checking the output path,
    and DATA read for it: ``(estimator, scaler, X, columns)``."""
    if args.output:
        kio.check_output_path(args.output)
    scaler, est = kio.split_scaling(kio.load_model(args.model))
    if command != "transform":
        kio.check_vectors(est, args.model, command)
    streamed = type(est) in [ESTIMATORS[name] for name in STREAMED]
    return est, scaler, *kio.read_model_input(args.data, est, args.model, header=args.header,
                                              stream=streamed, check=check)


def _cmd_update(args: argparse.Namespace) -> int:
    out = kio.check_output_path(args.output or args.model, table=False)
    model = kio.load_model(args.model)
    scaler, est = kio.split_scaling(model)
    if not isinstance(est, IncrementalKernelPCA):
        name = next((k for k, cls in ESTIMATORS.items() if type(est) is cls), None)
        what = f"a {type(est).__name__} model" + (f" (--estimator {name})" if name else "")
        raise ValueError(f"{args.model}: {what} cannot be updated; 'kpca update' adds rows to "
                         "models fitted with --estimator incremental.")
    X, _ = kio.read_model_input(args.data, est, args.model, header=args.header, stream=True)
    mode = est.mode_
    # blocks of the model's batch_size, scaled as the fit's; on failure the model is unchanged
    est.partial_fit(kio.standardized(X, scaler))
    kio.save_model(model, out)
    switched = f" (was {mode})" if est.mode_ != mode else ""
    print(f"{out}: added {X.shape[0]} rows, {est.n_samples_seen_} rows seen, "
          f"{est.mode_} mode{switched}")
    return EXIT_OK


def _cmd_transform(args: argparse.Namespace) -> int:
    est, scaler, X, _ = _load(args, "transform")
    kio.write_blocks(args.output, [str(c) for c in est.get_feature_names_out()],
                     kio.standardized(X, scaler), est.transform)
    return EXIT_OK


def _cmd_inverse(args: argparse.Namespace) -> int:
    est, scaler, Y, _ = _load(args, "inverse", check=False)
    kio.check_scores(est, Y, args.data, args.model)
    method = args.method or ("ridge" if type(est) is KernelPCA else "auto")
    if method == "ridge" and est.get_params().get("fit_inverse_transform") is False:
        raise ValueError(f"{args.model}: the model has no learned pre-image map; refit it with"
                         " --fit-inverse, or use --method fixed_point / mds.")
    kio.write_blocks(args.output, kio.input_names(est), Y,
                     _unscaled(scaler, lambda B: est.inverse_transform(B, method=method)))
    return EXIT_OK


def _cmd_denoise(args: argparse.Namespace) -> int:
    args.given = ("n_components",)  # -k above the model's: the library's message, with -k
    est, scaler, X, columns = _load(args, "denoise")
    if not callable(getattr(est, "denoise", None)):
        raise ValueError(f"{args.model}: a {type(est).__name__} model has no pre-images, so it "
                         "cannot denoise; fit --estimator exact or nystrom.")
    kio.write_blocks(args.output, kio.input_names(est, columns), kio.standardized(X, scaler),
                     _unscaled(scaler, lambda B: est.denoise(B, n_components=args.n_components,
                                                            method=args.method)))
    return EXIT_OK


def _first_row(args: argparse.Namespace, X, columns) -> int:
    """The number ``--annotate`` writes for the first row: its line in a CSV/TSV DATA
    file (the header is line 1, as kpca's error messages count lines), else 1 (the
    1-based row number in a .npy or .parquet file, or in the training data)."""
    if X is not None and Path(args.data).suffix.lower() in (".csv", ".tsv") and columns:
        return 2
    return 1


def _cmd_plot(args: argparse.Namespace) -> int:
    from .. import plotting

    path = Path(args.output)
    if path.suffix.lower() not in plotting.SAVE_FORMATS:
        raise ValueError(f"{path}: unknown figure format; use one of "
                         f"{', '.join(plotting.SAVE_FORMATS)}.")
    kio.check_output_path(path, table=False)
    try:
        import matplotlib
    except ImportError:
        raise ImportError("figures need matplotlib: pip install 'kpca[plot]'") from None
    matplotlib.use("Agg")  # the command line only writes files
    scaler, est = kio.split_scaling(kio.load_model(args.model))
    X = labels = columns = None
    if args.data is not None:
        X, labels, columns = kio.read_data_and_labels(
            args.data, header=args.header, strings=kio.fitted_on_strings(est),
            labels=args.labels, label_column=args.label_column)
        kio.check_columns(est, X, columns, args.data, args.model)
        X = kio.standardized(X, scaler)  # the points in the space the model was fitted in
    elif args.labels or args.label_column:
        raise ValueError("--labels / --label-column need --data.")
    if args.null and args.kind != "scree":
        raise ValueError(f"--null applies to 'kpca plot scree', not {args.kind}.")
    if args.kind == "scatter" and X is None:
        raise ValueError("'kpca plot scatter' needs --data (the points to project).")
    kw = dict(title=args.title, path=path)
    if args.kind == "scatter":
        ij = parse_components(args.components, len(est.eigenvalues_))
        if args.title is None:  # what was projected, and by which model
            kw["title"] = f"{Path(args.data).name}: scores of {Path(args.model).name}"
        fig, _ = plotting.plot_embedding(est.transform(X), labels, components=ij, **kw)
    elif args.kind == "scree":
        fig, _ = plotting.plot_scree(est, null=_scree_null(est, args) if args.null else None,
                                     **kw)
    elif args.kind == "outliers":
        fig, _ = plotting.plot_outlier_map(est, X=X, labels=labels, annotate=args.annotate,
                                           first_row=_first_row(args, X, columns), **kw)
    else:
        fig, _ = plotting.plot_contours(est, X, labels, n_components=args.n_components, **kw)
    import matplotlib.pyplot as plt

    plt.close(fig)
    print(f"wrote {path}")
    return EXIT_OK


def _classifiers() -> list[str]:
    """The names of kpca.selection.CLASSIFIERS (a test keeps them equal), without
    importing the classifiers' modules for every command."""
    return ["logistic", "linear-svm", "knn", "lda", "ridge"]


def _scree_null(est: Any, args: argparse.Namespace) -> Any:
    """The parallel analysis ``plot scree --null`` draws: the model's own (``-k auto``),
    or one computed on the training rows an exact model keeps, with its fitted kernel
    (gamma as resolved by the fit)."""
    found = getattr(est, "parallel_analysis_", None)
    if found is not None:
        return found
    if type(est) is not KernelPCA or getattr(est, "n_features_in_", None) is None:
        raise ValueError(f"{args.model}: 'kpca plot scree --null' recomputes the analysis on "
                         "the training rows of an exact model on vectors (kpca fit, "
                         f"--estimator exact); this is a {type(est).__name__} model. Fit it "
                         "with -k auto to keep the analysis in the model.")
    from ..selection import parallel_analysis

    return parallel_analysis(est.X_fit_, kernel=est.kernel_, center=est.center,
                             random_state=args.seed, n_jobs=est.n_jobs)


def _cmd_select(args: argparse.Namespace) -> int:
    from sklearn.metrics import get_scorer_names

    from ..selection import select_kernel

    if args.scoring is not None and args.scoring not in get_scorer_names():
        close = difflib.get_close_matches(args.scoring, get_scorer_names(), n=3)
        raise ValueError(f"--scoring: unknown scorer {args.scoring!r}"
                         + (f"; did you mean {', '.join(close)}?" if close else
                            "; see sklearn.metrics.get_scorer_names()"))
    if args.output:
        kio.check_output_path(args.output, table=False)
    X, labels, columns = kio.read_data_and_labels(
        args.data, header=args.header, labels=args.labels, label_column=args.label_column)
    candidates = parse_candidates(args.kernels, args.gammas, args.degrees)
    if args.landmarks_for_tol is not None:
        return _landmarks_for_tol(args, X, candidates, columns)
    preimages = split_list(args.preimages, parse_choice(*_PREIMAGES), "--preimages")
    # the library's messages about these (e.g. --cv above the number of rows) name the flag
    args.given = ("cv", "random_state", "n_components", "alpha")
    result = select_kernel(X, labels, candidates=candidates, n_components=args.n_components,
                           cv=args.cv, random_state=args.seed, preimage_methods=preimages,
                           standardize=args.standardize, classifier=args.classifier,
                           scoring=args.scoring, alpha=args.alpha)
    text = format_selection(args.data, result, supervised=labels is not None, cv=args.cv,
                                n_components=args.n_components, classifier=args.classifier)
    with kio.atomic_write(args.output, "w", encoding="utf-8") if args.output else \
            contextlib.nullcontext(sys.stdout) as fh:
        fh.write(text)
    return EXIT_OK


def _landmarks_for_tol(args: argparse.Namespace, X: Any, candidates: Any,
                       columns: list[str] | None = None) -> int:
    """``kpca select --landmarks-for-tol``: a table of the error estimate per landmark
    count for each candidate kernel, and the recommended count."""
    from ..selection import expand_candidates, landmarks_for_tolerance

    tol = args.landmarks_for_tol
    if not 0 < tol < 1:
        raise ValueError(f"--landmarks-for-tol: a relative error in (0, 1); got {tol:g}")
    if args.n_components == "auto":
        raise ValueError("--landmarks-for-tol compares a fixed number of components: give "
                         "-k an integer")
    counts = split_list(args.landmarks, parse_int, "--landmarks")
    if any(c < 1 for c in counts):
        raise ValueError(f"--landmarks: counts must be >= 1; got {args.landmarks!r}")
    if args.standardize:
        X = kio.standardized(X, kio.fit_scaler(X, args.data, columns))
    parts = [f"# Landmarks for tolerance {tol:g}: {args.data}\n\n"
             f"Nystrom, uniform landmarks, k = {args.n_components}; errors against exact "
             "kernel PCA estimated on an exact sub-problem (docs/math.md).\n"]
    for params in expand_candidates(candidates):
        rec = landmarks_for_tolerance(X, tol, counts=counts, n_components=args.n_components,
                                      random_state=args.seed, **params)
        parts.append(f"\n## {rec.params['kernel']}\n\n{rec.table()}")
    text = "".join(parts)
    with kio.atomic_write(args.output, "w", encoding="utf-8") if args.output else \
            contextlib.nullcontext(sys.stdout) as fh:
        fh.write(text)
    return EXIT_OK


def _cmd_info(args: argparse.Namespace) -> int:
    if args.model is None:  # this machine, not a model
        from .._info import format_info, system_info

        info = system_info()
        print(json.dumps(info, indent=2) if args.json else format_info(info))
        return EXIT_OK
    model = kio.load_model(args.model)
    est = kio.split_scaling(model)[1]
    name = next((k for k, cls in ESTIMATORS.items() if type(est) is cls), None)
    info = {"model": args.model, "estimator": name, **kio.model_summary(model)}
    print(json.dumps(info, indent=2) if args.json else format_summary(info))
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..demo import main as demo  # the examples: heavy, and optional

    only = split_list(args.only, str, "--only") if args.only else None
    return demo(args.out, quick=args.quick, only=only)


def _error(message: Any) -> None:
    sys.stderr.write(f"{PROG}: error: {message}\n")


def _unrecognized(command: argparse.ArgumentParser, extra: list[str]) -> NoReturn:
    """The command's usage and 'unrecognized arguments', naming the closest flags."""
    flags = [f for f in command._option_string_actions if f.startswith("--")]
    hints = []
    for word in extra:
        if word.startswith("-"):
            close = difflib.get_close_matches(word.split("=", 1)[0], flags, n=1, cutoff=0.6)
            if close:
                hints.append(f"{word.split('=', 1)[0]}: did you mean {close[0]}?")
    command.error(f"unrecognized arguments: {' '.join(extra)}"
                  + (f" ({'; '.join(hints)})" if hints else ""))


class _Terminated(BaseException):
    """Raised in the main thread by SIGTERM, so that it unwinds like Ctrl-C: every
    ``atomic_write`` on the way removes its temporary file, the old output stays."""


@contextlib.contextmanager
def _terminate_as_interrupt():
    """While a command runs, SIGTERM raises :class:`_Terminated` (Python's default
    for SIGTERM ends the process at once, leaving temporary files behind)."""
    def raise_terminated(signum, frame):
        raise _Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:  # not the main thread (e.g. main() called from a worker)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``kpca`` command line tool.

    Parameters
    ----------
    argv : sequence of str, default=None
        Arguments without the program name; ``None`` means ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status: 0 success, 2 usage or input error, 1 other failure, 130 Ctrl-C
        (SIGINT), 143 SIGTERM (both remove the files being written; the old ones stay).
    """
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # in the command's usage, with the flag that was probably meant
            _unrecognized(parser.commands[args.command], extra)
    except _Exit as exc:
        return exc.args[0]
    with console_logging(args.verbose, prog=PROG), _terminate_as_interrupt():
        try:
            return args.func(args)
        except _Terminated:  # SIGTERM: the files being written were removed on the way
            _error("terminated")
            return 128 + signal.SIGTERM
        except ValueError as exc:  # bad file, bad parameter, corrupt model, ...
            logger.debug("details", exc_info=True)
            _error(_in_flags(str(exc), getattr(args, "given", ())))
            return EXIT_USAGE
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
            _error(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else exc)
            return EXIT_USAGE
        except ImportError as exc:
            _error(exc)
            return EXIT_FAILURE
        except KeyboardInterrupt:  # the line and status of kpca._entry's, during imports
            return interrupted()
        except BrokenPipeError:  # the reader of stdout went away (e.g. `| head`): stop quietly
            with contextlib.suppress(OSError, ValueError, AttributeError):  # not a real file
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_FAILURE
        except OSError as exc:  # e.g. a full disk or the file-size limit, while writing
            logger.debug("details", exc_info=True)
            _error(f"{exc.strerror or exc}: {exc.filename}" if exc.filename
                   else f"{type(exc).__name__}: {exc}")
            return EXIT_FAILURE
        except Exception as exc:  # an unexpected failure: one line, traceback with -v
            if args.verbose:
                logger.error("unexpected failure", exc_info=True)
            hint = "" if args.verbose else " (run with -v for the traceback)"
            _error(f"{type(exc).__name__}: {exc}{hint}")
            return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
