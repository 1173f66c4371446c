"""The ``kpca`` command line tool (:func:`main`, :func:`build_parser`), and what only
the command line needs.

* :data:`PARAMETER_FLAGS`, :func:`parameter_flag` and the ``parse_*`` functions --
  estimator parameters written as text (command-line flags) -> Python values;
* :class:`ProgressBars` and :func:`console_logging` -- the library's progress
  records drawn with tqdm, and what a command line shows on standard error;
* :func:`format_summary` and :func:`format_selection` -- the texts of ``kpca info``
  and ``kpca select``.

The commands themselves live in ``kpca.cli._main``. Files and row sources are
:mod:`kpca.io`'s. The names are imported on first use, so ``python -m kpca.cli``
starts in :mod:`kpca._entry` before scikit-learn is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs
    from ._main import (
        ESTIMATORS,
        EXIT_FAILURE,
        EXIT_OK,
        EXIT_USAGE,
        PROG,
        STREAMED,
        build_parser,
        main,
    )
    from ._params import (
        PARAMETER_FLAGS,
        ParameterFlag,
        flag_help,
        ignored_kernel_params,
        parameter_flag,
        parse_candidates,
        parse_choice,
        parse_components,
        parse_gamma,
        parse_int,
        parse_int_in,
        parse_kernel_params,
        parse_n_components,
        parse_nonnegative,
        parse_nonnegative_int,
        parse_number,
        parse_positive_int,
        parse_seed,
        parse_value,
        parse_word_or,
        split_list,
    )
    from ._progress import ProgressBars, console_logging
    from ._summary import format_selection, format_summary

#: the module of each name: imported on first use (PEP 562), so that ``python -m
#: kpca.cli`` runs kpca._entry, which turns a Ctrl-C during the import of
#: scikit-learn (``._main``, about a second) into "kpca: error: interrupted", before
#: anything heavy is imported
_WHERE = {
    **dict.fromkeys(["ESTIMATORS", "EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "PROG",
                     "STREAMED", "build_parser", "main"], "._main"),
    **dict.fromkeys(["PARAMETER_FLAGS", "ParameterFlag", "flag_help", "ignored_kernel_params",
                     "parameter_flag", "parse_candidates", "parse_choice", "parse_components",
                     "parse_gamma", "parse_int", "parse_int_in", "parse_kernel_params",
                     "parse_n_components", "parse_nonnegative", "parse_nonnegative_int",
                     "parse_number", "parse_positive_int", "parse_seed", "parse_value",
                     "parse_word_or", "split_list"], "._params"),
    **dict.fromkeys(["ProgressBars", "console_logging"], "._progress"),
    **dict.fromkeys(["format_selection", "format_summary"], "._summary"),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'kpca.cli' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value  # imported once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ESTIMATORS",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "PARAMETER_FLAGS",
    "PROG",
    "ParameterFlag",
    "ProgressBars",
    "STREAMED",
    "build_parser",
    "console_logging",
    "flag_help",
    "format_selection",
    "format_summary",
    "ignored_kernel_params",
    "main",
    "parameter_flag",
    "parse_candidates",
    "parse_choice",
    "parse_components",
    "parse_gamma",
    "parse_int",
    "parse_int_in",
    "parse_kernel_params",
    "parse_n_components",
    "parse_nonnegative",
    "parse_nonnegative_int",
    "parse_number",
    "parse_positive_int",
    "parse_seed",
    "parse_value",
    "parse_word_or",
    "split_list",
]
