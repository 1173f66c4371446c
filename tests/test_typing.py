"""A type check of the public API (issue 19): mypy on code that uses it.

``tests/typing/public_api.py`` uses every estimator and the main functions as a user
would; mypy checks it against kpca's annotations (``py.typed``), following kpca's own
modules silently (their internals are not what this checks). A mistake in that code
-- a wrong argument count or type -- must be reported, which the
second test checks, so that the first cannot pass by checking nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ["--python-version", "3.11", "--ignore-missing-imports", "--follow-imports=silent",
          "--no-incremental", "--no-error-summary"]


def _mypy(path: Path) -> subprocess.CompletedProcess:
    # kpca from the source tree (an editable install's import hook is invisible to mypy)
    return subprocess.run([sys.executable, "-m", "mypy", *CONFIG, str(path)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env={"MYPYPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})


def test_the_public_api_type_checks():
    proc = _mypy(ROOT / "tests" / "typing" / "public_api.py")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_misuse_of_the_public_api_is_reported(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text((ROOT / "tests" / "typing" / "public_api.py").read_text()
                   + "model.transform(X, 3, 4)\nkpca.save(model)\nrun_example(1)\n")
    proc = _mypy(bad)
    assert proc.returncode == 1
    # (an unknown method is not reported: the estimators derive from scikit-learn's
    # classes, which have no annotations, so their attributes are Any to mypy)
    for fragment in ('Too many arguments for "transform"', "Too few arguments",
                     'incompatible type "int"; expected "str"'):
        assert fragment in proc.stdout, proc.stdout
