"""The ``kpca`` console script: ``kpca --version`` answers without importing the
library (scikit-learn and SciPy take about a second to import); anything else is
:func:`kpca.cli.main`."""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        from ._version import __version__

        print(f"kpca {__version__}")
        return 0
    from .cli import main as cli_main

    return cli_main()
