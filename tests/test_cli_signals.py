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


# --------------------------------------------------------- Ctrl-C while kpca starts
# The child sends itself SIGINT at a chosen moment: while kpca.cli._main imports
# scikit-learn (the first ~1-2 s of every command, before cli.main's own handling),
# while NumPy's C code imports datetime (which turns the KeyboardInterrupt into an
# ImportError), or once the command runs. All must end alike: one line, status 130.
STARTUP_CHILD = textwrap.dedent("""
    import os, runpy, signal, sys

    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    when, entry, *args = sys.argv[1:]

    def interrupt(*_, **__):
        os.kill(os.getpid(), signal.SIGINT)  # raised at the next bytecode

    if when != "command":  # the first import of that module: inside kpca.cli._main's
        class Interrupting:
            def find_spec(self, name, path=None, target=None):
                if name == when:
                    print("interrupted at", name, flush=True)
                    interrupt()
                return None

        sys.meta_path.insert(0, Interrupting())
    else:  # the import is done: the command's own handling
        import kpca.io
        kpca.io.read_data = interrupt
    sys.argv = ["kpca", *args]
    if entry == "script":  # the console script
        from kpca._entry import main
        sys.exit(main())
    runpy.run_module("kpca.cli", run_name="__main__", alter_sys=True)  # python -m kpca.cli
""")


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("entry", ["script", "module"])
@pytest.mark.parametrize("when", ["sklearn", "datetime", "command"])
def test_ctrl_c_during_the_imports_ends_as_during_a_command(tmp_path, entry, when):
    """It printed a ~50-line KeyboardInterrupt traceback (issue: the imports of
    kpca.cli._main ran before its handler)."""
    np.savetxt(tmp_path / "x.csv", np.ones((5, 2)), delimiter=",")
    res = _child([STARTUP_CHILD, when, entry, "fit-transform", "x.csv", "-o", "z.csv"],
                 tmp_path)
    # the child's first import of `when` comes after the entry point took over (kpca
    # imports scikit-learn and NumPy's C parts lazily): the interrupt did fire there
    assert when == "command" or res.stdout == f"interrupted at {when}\n", res.stdout
    assert (res.returncode, res.stderr) == (130, "kpca: error: interrupted\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_ctrl_c_at_startup_of_python_m_kpca_cli(tmp_path):
    """A real SIGINT from outside, once the child has imported NumPy (in
    kpca._entry's handling): during the import of SciPy and scikit-learn, or (a fast
    machine) during the fit, the same line. The status is 130; or the child ends by
    SIGINT itself, which a shell also reports as 130: CPython does so at exit when the
    KeyboardInterrupt went through a string it ran with exec or eval (e.g. a
    dataclass's generated methods), even though kpca caught it."""
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(3000, 3)))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "kpca.cli", "fit-transform", "x.npy",
         "-o", "z.csv", "--solver", "dense"], cwd=tmp_path, env=env,
        stderr=subprocess.PIPE, text=True,
        # a background job's SIGINT is ignored, and Python then installs no handler
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        lines = []
        for line in proc.stderr:  # -X importtime: a line as each import ends
            lines.append(line)
            if line.split("|")[-1].strip() == "numpy":  # imported by kpca.cli._main
                break
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = [ln for ln in [*lines, *rest.splitlines(True)] if not ln.startswith("import time:")]
    assert "".join(err) == "kpca: error: interrupted\n"
    assert proc.returncode in (130, -signal.SIGINT)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy"]
