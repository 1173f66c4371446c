"""The ``kpca`` command line tool (:func:`main`, :func:`build_parser`).

The commands live in :mod:`kpca.cli._main`; the parsing of parameters written
as text, the progress bars and the summaries that only the command line needs
live beside them in this package, so that :mod:`kpca.io` holds the library's
files and row sources alone.
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

__all__ = [
    "ESTIMATORS",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "PROG",
    "STREAMED",
    "build_parser",
    "main",
]
