"""Helpers of the command-line tests."""

import io
import sys

from kpca import cli


def run(capsys, *argv):
    """``kpca ARGV``: exit code, stdout, stderr."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def clean_error(code, err, *fragments):
    """A one-line ``kpca: error:`` (exit 2, no traceback) that mentions ``fragments``."""
    assert code == 2, err
    assert err.strip().splitlines()[-1].startswith("kpca: error:")
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, err


class Terminal(io.StringIO):
    """A standard error that says it is a terminal (so the progress bar shows)."""

    def isatty(self):
        return True


def terminal_stderr(monkeypatch) -> Terminal:
    """Replace ``sys.stderr`` by a :class:`Terminal` for the test; returns it."""
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    return err
