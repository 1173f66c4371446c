"""SIGTERM and write errors in the middle of a command (issue 33, items 5 and 6).

* A streamed ``kpca fit-transform`` stopped by SIGTERM after its first output block
  used to leave the ``.out.csv.<hex>.tmp`` file behind (Python's default for SIGTERM
  ends the process at once); it now unwinds like Ctrl-C: the temporary file is
  removed, the old output is left byte for byte, exit status 143.
* A save that hits the file-size limit said ``OSError: [Errno 27] File too large``
  without naming the file; it now names it.

Each case runs in a child process (a signal or a resource limit of its own), where
the signal is sent by the writer itself after the first block: deterministic.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

CHILD = textwrap.dedent("""
    import os, signal, sys
    from kpca import cli
    from kpca.io import _write

    original = _write.TableWriter.write

    def write(self, block):
        original(self, block)
        if self.n_rows >= 1024:  # after the first streamed block: stop the command
            os.kill(os.getpid(), getattr(signal, sys.argv[1]))

    _write.TableWriter.write = write
    # a shell's background job starts with SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler: give the child the handler an interactive run has
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(cli.main(sys.argv[2:]))
""")


def _child(args, cwd, *, env=None):
    env = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
    return subprocess.run([sys.executable, "-c", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix",
                    reason="POSIX signals")
@pytest.mark.parametrize(("name", "code", "word"), [("SIGTERM", 143, "terminated"),
                                                     ("SIGINT", 130, "interrupted")])
def test_signal_during_a_streamed_write_keeps_the_old_output(tmp_path, name, code, word):
    X = np.random.default_rng(0).normal(size=(5000, 3))
    np.save(tmp_path / "data.npy", X)
    old = b"old output\n"
    (tmp_path / "out.csv").write_bytes(old)
    res = _child([CHILD, name, "fit-transform", "data.npy", "-o", "out.csv", "--estimator",
                  "nystrom", "--n-landmarks", "20", "-k", "2", "--seed", "0"], tmp_path)
    assert res.returncode == code, res.stderr
    assert res.stderr.strip().splitlines()[-1] == f"kpca: error: {word}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.npy", "out.csv"]
    assert (tmp_path / "out.csv").read_bytes() == old


@pytest.mark.skipif(os.name != "posix", reason="resource limits")
def test_file_size_limit_names_the_file(tmp_path):
    X = np.random.default_rng(0).normal(size=(300, 3))
    np.save(tmp_path / "data.npy", X)
    (tmp_path / "m.kpca").write_bytes(b"old")
    script = textwrap.dedent("""
        import resource, sys
        from kpca import cli
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
        sys.exit(cli.main(sys.argv[1:]))
    """)
    res = _child([script, "fit", "data.npy", "--save", "m.kpca", "-k", "2"], tmp_path)
    assert res.returncode == 1, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last == "kpca: error: File too large; nothing was written to: m.kpca", last
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.npy", "m.kpca"]
    assert (tmp_path / "m.kpca").read_bytes() == b"old"


def test_write_errors_name_the_file_in_python(tmp_path):
    """kpca.save's OSError names the destination (atomic_write)."""
    import errno

    from kpca._files import atomic_write

    with pytest.raises(OSError, match=r"No space left on device; nothing was written to") \
            as info:
        with atomic_write(tmp_path / "x.bin") as fh:
            fh.write(b"abc")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert info.value.filename == str(tmp_path / "x.bin")
    assert info.value.errno == errno.ENOSPC
    assert list(tmp_path.iterdir()) == []
