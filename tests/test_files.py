"""kpca._files.atomic_write: the one way every output file is written (tables, model
files, figures, reports)."""

from __future__ import annotations

import os

import pytest

from kpca._files import atomic_write

posix = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and symlinks")


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _write(path, text):
    with atomic_write(path, "w") as fh:
        fh.write(text)


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


@posix
def test_a_new_file_gets_the_umask_mode(tmp_path):
    _write(tmp_path / "new.csv", "x\n")
    assert (tmp_path / "new.csv").stat().st_mode & 0o777 == 0o666 & ~_umask()


@posix
@pytest.mark.parametrize("mode", [0o600, 0o640, 0o604, 0o664], ids=oct)
def test_a_replaced_file_keeps_its_mode(tmp_path, mode):
    """It got the umask's mode (0644 for a 0600 file: readable by all)."""
    path = tmp_path / "private.csv"
    path.write_text("old\n")
    path.chmod(mode)
    _write(path, "new\n")
    assert path.read_text() == "new\n"
    assert path.stat().st_mode & 0o7777 == mode
    assert _names(tmp_path) == ["private.csv"]


@posix
def test_a_symlink_is_written_through_to_its_target(tmp_path):
    """The link stays a link and its target gets the content (the link used to be
    replaced by a regular file, the target left stale), keeping the target's mode."""
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "target.csv"
    target.write_text("old\n")
    target.chmod(0o600)
    (tmp_path / "hop").symlink_to("real/target.csv")  # relative, and a chain of two
    link = tmp_path / "link.csv"
    link.symlink_to("hop")
    _write(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == "hop"
    assert (tmp_path / "hop").is_symlink()
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o7777 == 0o600
    assert _names(tmp_path) == ["hop", "link.csv", "real"]
    assert _names(tmp_path / "real") == ["target.csv"]


@posix
def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "made.csv")
    _write(link, "new\n")
    assert link.is_symlink() and (tmp_path / "made.csv").read_text() == "new\n"
    assert (tmp_path / "made.csv").stat().st_mode & 0o777 == 0o666 & ~_umask()
    link.unlink()
    link.symlink_to(tmp_path / "nowhere" / "made.csv")
    with pytest.raises(ValueError, match="nowhere' does not exist"):
        _write(link, "new\n")


@posix
def test_a_failed_write_leaves_the_link_and_its_target(tmp_path):
    target = tmp_path / "target.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    with pytest.raises(RuntimeError, match="disk on fire"):
        with atomic_write(link, "w") as fh:
            fh.write("half")
            raise RuntimeError("disk on fire")
    assert link.is_symlink() and target.read_text() == "old\n"
    assert _names(tmp_path) == ["link.csv", "target.csv"]


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        _write(tmp_path, "x")
