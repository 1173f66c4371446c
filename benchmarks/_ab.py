"""What the before/after scripts (``ab_*.py``) share: run a timing child in one tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any


def run_child(code: str, src: str, **env: str) -> Any:
    """Run ``code`` in a fresh Python with ``PYTHONPATH=src`` (plus ``env``), and return
    the JSON value of its last line of output; a failing child ends the script with its
    error."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=src, **env))
    if out.returncode:
        sys.exit(f"{src}: child failed\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])
