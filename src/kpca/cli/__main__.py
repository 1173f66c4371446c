"""``python -m kpca.cli``: the ``kpca`` command."""

import sys

from ._main import main

sys.exit(main())
