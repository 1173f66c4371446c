"""kpca.io's whole-table reader (kpca.io._tables): the .npy header is checked first.

A ``.npy`` file's header is read and checked before any array is allocated, by the
in-memory reader (:func:`kpca.io.read_table`, :func:`kpca.io.read_data`) and the
streamed one (:func:`kpca.io.open_rows`) alike: a header that declares more bytes than
the file holds, or a file that is not a ``.npy`` file at all, is a ``ValueError``
naming the file.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from kpca import io as kio

#: every reader of a .npy file: whole (the library's and the command line's) and streamed
READERS = {
    "read_table": lambda path: kio.read_table(path),
    "read_data": lambda path: kio.read_data(path),
    "open_rows": lambda path: kio.open_rows(path),
}


def _header_only(path, shape, payload=64, descr="<f8"):
    """A .npy file whose header declares ``shape`` but that holds ``payload`` bytes."""
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": descr, "fortran_order": False, "shape": shape})
        fh.write(b"\0" * payload)


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("shape", [(10**6, 4), (10**9, 4)], ids=["32MB", "32GB"])
def test_npy_header_declaring_more_than_the_file_is_refused_before_allocating(
        tmp_path, reader, shape):
    """A 192-byte file declaring shape (10**9, 4): the in-memory reader asked for
    29.8 GiB (MemoryError), the streamed one said "mmap length is greater"."""
    path = tmp_path / "h.npy"
    _header_only(path, shape)
    declared = 8 * shape[0] * shape[1]
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=rf"h\.npy: not a valid \.npy file: its header "
                           rf"declares shape \({shape[0]}, 4\) of float64 \({declared:,} "
                           r"bytes\), but the file holds 64 bytes of data"):
            READERS[reader](path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # nothing of the declared size was allocated


@pytest.mark.parametrize("reader", sorted(READERS))
def test_truncated_npy_is_refused(tmp_path, reader):
    np.save(tmp_path / "t.npy", np.ones((10, 3)))
    raw = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(raw[:-8])
    with pytest.raises(ValueError, match=r"t\.npy: not a valid \.npy file: its header "
                       r"declares shape \(10, 3\) of float64 \(240 bytes\), but the file "
                       r"holds 232 bytes"):
        READERS[reader](tmp_path / "t.npy")


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("content", [b"a,b\n1,2\n3,4\n", b"\x00\x01\x02\x03" * 8, b"ab"],
                         ids=["csv", "binary", "short"])
def test_a_file_that_is_not_npy_is_said_so(tmp_path, reader, content):
    """A CSV named .npy was reported as holding "Python objects (pickled data)"."""
    path = tmp_path / "x.npy"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"x\.npy: not a \.npy file \(it does not start "
                       r"with the \.npy signature that numpy\.save writes\)"):
        READERS[reader](path)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_npy_header_problems_are_refused(tmp_path, reader):
    _header_only(tmp_path / "neg.npy", (-3, 4))
    with pytest.raises(ValueError, match=r"neg\.npy: not a valid \.npy file \(its header "
                       r"declares shape \(-3, 4\)\)"):
        READERS[reader](tmp_path / "neg.npy")
    _header_only(tmp_path / "obj.npy", (2, 2), descr="|O")
    with pytest.raises(ValueError, match=r"obj\.npy: holds Python objects \(pickled data\)"):
        READERS[reader](tmp_path / "obj.npy")
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': nope}\n")
    with pytest.raises(ValueError, match=r"bad\.npy: not a valid \.npy file \("):
        READERS[reader](tmp_path / "bad.npy")
    (tmp_path / "v3.npy").write_bytes(b"\x93NUMPY\x03\x00" + b"\0" * 8)
    with pytest.raises(ValueError, match=r"v3\.npy: unsupported \.npy format version 3\.0"):
        READERS[reader](tmp_path / "v3.npy")
    (tmp_path / "empty.npy").write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty\.npy: the file is empty"):
        READERS[reader](tmp_path / "empty.npy")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.bool_])
@pytest.mark.parametrize("order", ["C", "F"])
def test_valid_npy_files_read_as_np_load(tmp_path, dtype, order):
    A = np.asarray(np.random.default_rng(0).normal(size=(7, 3)) * 50, order=order).astype(dtype)
    np.save(tmp_path / "a.npy", A)
    X, columns = kio.read_table(tmp_path / "a.npy")
    assert columns is None
    assert X.dtype == (np.float32 if dtype == np.float32 else np.float64)
    np.testing.assert_array_equal(X, np.load(tmp_path / "a.npy"))
    with open(tmp_path / "a.npy", "ab") as fh:  # bytes after the array: numpy ignores them
        fh.write(b"\0" * 16)
    np.testing.assert_array_equal(kio.read_table(tmp_path / "a.npy")[0], X)
