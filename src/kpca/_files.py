"""Atomic file output, shared by every module that writes files.

A bottom-level module (it imports nothing from kpca) so that :mod:`kpca.io`
(tables and model files) and :mod:`kpca.plotting` (figures), which are
siblings, both write files the same way without importing each other.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

PathLike = str | os.PathLike


def check_writable(path: PathLike) -> Path:
    """``path`` as a :class:`~pathlib.Path`, if it can be created as a file; a
    ``ValueError`` (before any computation) if it is a directory or its directory
    does not exist. :func:`kpca.io.check_output_path` adds the table formats."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: is a directory.")
    if not path.parent.is_dir():
        raise ValueError(f"{path}: the directory {str(path.parent)!r} does not exist.")
    return path


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "wb", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; on success it replaces ``path``.

    The temporary file lives in the destination directory (so :func:`os.replace`
    is an atomic rename on the same file system). A ``path`` that is a symbolic
    link is written through: its final target is replaced and the link kept, as
    :func:`open` would write it. An existing file keeps its permission bits; a new
    one gets the usual permissions (``0o666`` minus the umask). If the body
    raises, the temporary file is removed and ``path`` is untouched; an
    ``OSError`` that names no file (a full disk, the file-size limit) is raised
    again naming ``path``.

    Parameters
    ----------
    path : str or path-like
        Destination.
    mode : {'wb', 'w'}
        Binary or text.
    **open_kwargs
        Passed to :func:`open` (e.g. ``newline=''``, ``encoding=``).

    Yields
    ------
    file object
    """
    path = check_writable(path)
    # replacing a symlink by a regular file would leave its target stale: replace the
    # target (a dangling link: create it, as open() does)
    target = Path(os.path.realpath(path))
    if path.is_symlink():
        check_writable(target)
    try:
        existing: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        existing = None
    directory = target.parent
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = directory / f".{target.name}.{secrets.token_hex(6)}.tmp"
        try:
            # a replaced file's mode is set by chmod below (open's mode is narrowed
            # by the umask); private until then
            fd = os.open(tmp, flags, 0o666 if existing is None else 0o600)
            break
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
    else:  # pragma: no cover
        raise OSError(f"could not create a temporary file in {directory}")
    try:
        with os.fdopen(fd, mode, **open_kwargs) as fh:
            if existing is not None:
                os.chmod(tmp, existing)
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:
            # a write error of the open file (e.g. errno 27, "File too large": the
            # file-size limit of the process or the file system) names no file: name it
            raise OSError(exc.errno, f"{exc.strerror or exc}; nothing was written to",
                          str(path)) from exc
        raise
