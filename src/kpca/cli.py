"""The ``kpca`` command line tool.

::

    kpca fit-transform DATA --kernel rbf --gamma 0.5 -k 2 -o out.csv [--save model.kpca]
    kpca fit DATA --kernel rbf --gamma median -k 0.9 --save model.kpca
    kpca transform --model model.kpca DATA -o out.csv
    kpca info model.kpca
    kpca demo [--out DIR]

DATA is a ``.csv``/``.tsv`` (header row detected), ``.npy`` or ``.parquet`` table
with one row per sample. Outputs are written atomically; without ``-o`` the
scores go to standard output as CSV.

Exit status: 0 on success, 2 for usage and input errors (bad option, unreadable
or malformed file, invalid parameter), 1 for any other failure. Errors are one
line on standard error starting with ``kpca: error:``; ``-v`` adds progress
messages (and the traceback of an unexpected failure).

This module only maps flags to :class:`kpca.KernelPCA`; reading and writing live
in :mod:`kpca._io`, model files in :mod:`kpca._persist`, the demo in
:mod:`kpca._demo`.
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
from ._io import TABLE_FORMATS, check_output_path, read_table, write_delimited, write_table
from ._kernel_pca import KernelPCA
from ._persist import load_model, model_summary, save_model
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


def _number(text: str) -> int | float:
    """A float, kept as int when it is integral (so saved parameters stay tidy)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number; got {text!r}") from None
    integral = value.is_integer() and not any(c in text.lower() for c in ".en")
    return int(value) if integral else value


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
        help=f"input table, one row per sample ({', '.join(TABLE_FORMATS)})",
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


def _add_model_options(p: argparse.ArgumentParser, *, save_required: bool) -> None:
    kernels = sorted(KERNELS)
    g = p.add_argument_group("model")
    g.add_argument(
        "--kernel", default=None, choices=kernels, metavar="NAME",
        help=f"kernel: {', '.join(kernels)} (default: linear, as KernelPCA)",
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
        "-k", "--n-components", dest="n_components", type=_n_components, default=2,
        metavar="K",
        help="number of components, a fraction in (0, 1) of variance to explain, or 'all' "
        "(default: 2)",
    )
    g.add_argument(
        "--solver", default="auto", choices=["auto", "dense", "arpack", "randomized", "krylov"],
        help="eigensolver (default: auto)",
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
        "info", parents=[common], help="describe a saved model",
        description="Print the kernel, parameters, eigenvalues and explained variance of a "
        "saved model.",
    )
    p.add_argument("model", metavar="MODEL", help="saved model file")
    p.add_argument("--json", action="store_true", help="print the description as JSON")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser(
        "demo", parents=[common], help="concentric circles: linear PCA vs RBF kernel PCA",
        description="Fit linear PCA and RBF kernel PCA (gamma=10) to two concentric circles, "
        "measure how linearly separable the classes are, and write the embeddings and a "
        "report.",
    )
    p.add_argument("--out", default="kpca-demo", metavar="DIR",
                   help="output directory (created if needed; default: ./kpca-demo)")
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
    )
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
    X, _ = read_table(args.data, header=args.header)
    logger.info("fitting %r on %d samples x %d features", est, *X.shape)
    if transform:
        Z = est.fit_transform(X)
    else:
        est.fit(X)
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
    X, _ = read_table(args.data, header=args.header)
    _write_scores(est, est.transform(X), args.output)
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
        lines.append(
            f"fitted on:    {info['n_samples_fit']} samples x {info.get('n_features_in')} "
            "features"
        )
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
    from ._demo import run_demo

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: exists and is not a directory.")
    result = run_demo(out)
    lin, rbf = result.scores["linear"], result.scores["rbf"]
    print(
        "Concentric circles, logistic-regression accuracy on the first 2 components:\n"
        f"  {rbf.label}: {rbf.accuracy:.3f}  (component 1 alone: {rbf.accuracy_c1:.3f})\n"
        f"  {lin.label}: {lin.accuracy:.3f}  (component 1 alone: {lin.accuracy_c1:.3f})\n"
        f"RBF kernel PCA {'separates' if rbf.accuracy >= 0.99 else 'does not separate'} "
        f"the circles; linear PCA {'does' if lin.accuracy >= 0.9 else 'does not'}.\n"
        "Wrote:"
    )
    for path in result.files.values():
        print(f"  {path}")
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
