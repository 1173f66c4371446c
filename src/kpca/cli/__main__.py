"""``python -m kpca.cli``: the ``kpca`` command (the console script's entry point, so
that a Ctrl-C while the library imports ends as it does in a command)."""

import sys

from .._entry import main

sys.exit(main())
