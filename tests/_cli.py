"""Helpers of the command-line tests."""

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
