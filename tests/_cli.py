"""Helpers of the command-line tests."""

import io
import sys

from kpca import cli


def run(capsys, *argv):
    """``kpca ARGV``: exit code, stdout, stderr."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def error_lines(err):
    """The lines of ``err`` without the short usage a usage error ends with (a
    ``usage:`` line, then a ``see `kpca ... --help``` line), checking that form."""
    lines = err.strip().splitlines()
    if lines and lines[-1].startswith("see `kpca") and lines[-1].endswith("--help`"):
        assert lines[-2].startswith("usage: kpca") and lines[-2].endswith("[options]"), err
        assert lines[-3].startswith("kpca: error:"), err  # the error first
        lines = lines[:-2]
    return lines


def clean_error(code, err, *fragments):
    """A one-line ``kpca: error:`` (exit 2, no traceback) that mentions ``fragments``."""
    assert code == 2, err
    assert error_lines(err)[-1].startswith("kpca: error:")
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
