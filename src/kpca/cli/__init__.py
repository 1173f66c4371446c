"""The ``kpca`` command line tool (:func:`main`, :func:`build_parser`), and what only
the command line needs.

* :data:`PARAMETER_FLAGS`, :func:`parameter_flag` and the ``parse_*`` functions --
  estimator parameters written as text (command-line flags) -> Python values;
* :class:`ProgressBars` and :func:`console_logging` -- the library's progress
  records drawn with tqdm, and what a command line shows on standard error;
* :func:`format_summary` and :func:`format_selection` -- the texts of ``kpca info``
  and ``kpca select``.

The commands themselves live in ``kpca.cli._main``. Files and row sources are
:mod:`kpca.io`'s.
"""

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
    parse_kernel_params,
    parse_n_components,
    parse_nonnegative,
    parse_number,
    parse_positive_int,
    parse_value,
    parse_word_or,
    split_list,
)
from ._progress import ProgressBars, console_logging
from ._summary import format_selection, format_summary

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
    "parse_kernel_params",
    "parse_n_components",
    "parse_nonnegative",
    "parse_number",
    "parse_positive_int",
    "parse_value",
    "parse_word_or",
    "split_list",
]
