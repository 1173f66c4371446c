"""The ``kpca`` console script (and ``python -m kpca.cli``): ``kpca --version``
answers without importing the library (scikit-learn and SciPy take about a second
to import); anything else is :func:`kpca.cli.main`. A Ctrl-C during that import
ends as one during a command (:func:`interrupted`), not with a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

#: exit status of a command stopped by Ctrl-C (SIGINT): 128 + the signal's number
EXIT_INTERRUPTED = 130


def interrupted() -> int:
    """Say on standard error that the command was interrupted (Ctrl-C); returns
    :data:`EXIT_INTERRUPTED`. The one line of :func:`kpca.cli.main` too."""
    sys.stderr.write("kpca: error: interrupted\n")
    return EXIT_INTERRUPTED


def _import_cli() -> Callable[[], int]:
    """:func:`kpca.cli.main`, imported with Ctrl-C noted: a C extension that imports
    a module in its own initialisation (NumPy's imports ``datetime``) turns the
    ``KeyboardInterrupt`` into an ``ImportError``, which is then one again."""
    import signal

    noted = []

    def note(signum: int, frame: Any) -> None:
        noted.append(signum)
        raise KeyboardInterrupt

    previous = signal.getsignal(signal.SIGINT)
    ours = previous is signal.default_int_handler  # not where SIGINT is ignored
    if ours:
        signal.signal(signal.SIGINT, note)
    try:
        from .cli import main  # kpca.cli imports its names on first use

        return main
    except Exception:
        if noted:
            raise KeyboardInterrupt from None
        raise
    finally:
        if ours:
            signal.signal(signal.SIGINT, previous)


def main() -> int:
    """Run ``kpca`` with ``sys.argv``; returns the exit status (:func:`kpca.cli.main`'s)."""
    if sys.argv[1:] == ["--version"]:
        from ._version import __version__

        print(f"kpca {__version__}")
        return 0
    try:
        # the import (scikit-learn, SciPy: a second or two) and the parsing run before
        # cli.main's own handling of Ctrl-C: the same line and status here
        return _import_cli()()
    except KeyboardInterrupt:
        return interrupted()
