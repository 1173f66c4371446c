"""kpca.io.open_table_writer / write_blocks: tables written block by block, atomically."""

from __future__ import annotations

import io

import numpy as np
import pytest

from kpca.io import open_rows, open_table_writer, read_table, write_blocks, write_table

FORMATS = [".csv", ".tsv", ".npy", ".parquet"]


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocks_read_back_exactly(tmp_path, ext, dtype):
    if ext == ".parquet":
        pytest.importorskip("pyarrow")
    rng = np.random.default_rng(2)
    Z = (rng.normal(size=(101, 3)) * np.array([1e-8, 1.0, 1e8])).astype(dtype)
    path = tmp_path / f"z{ext}"
    with open_table_writer(path, ["p0", "p1", "p2"], n_rows=101) as out:
        for start in range(0, 101, 17):
            out.write(Z[start:start + 17])
            assert not path.exists()  # only replaced at the end
    assert out.n_rows == 101
    X, columns = read_table(path)
    np.testing.assert_array_equal(X.astype(dtype), Z)
    if ext in (".npy", ".parquet"):
        assert X.dtype == dtype  # binary formats keep the dtype
        assert columns == (None if ext == ".npy" else ["p0", "p1", "p2"])
    else:
        assert columns == ["p0", "p1", "p2"]
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("ext", FORMATS)
def test_failure_mid_stream_keeps_the_old_file(tmp_path, ext):
    if ext == ".parquet":
        pytest.importorskip("pyarrow")
    path = tmp_path / f"out{ext}"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="block 3 failed"):
        with open_table_writer(path, ["a"], n_rows=30) as out:
            for i in range(3):
                out.write(np.ones((10, 1)))
                if i == 2:
                    raise RuntimeError("block 3 failed")
    assert path.read_bytes() == b"old"
    assert _leftovers(tmp_path) == []


def test_row_count_and_shape_are_checked(tmp_path):
    with pytest.raises(ValueError, match="needs n_rows"):
        with open_table_writer(tmp_path / "a.npy", ["a"]):
            pass
    with pytest.raises(ValueError, match="2 rows written, 3 announced"):
        with open_table_writer(tmp_path / "b.npy", ["a"], n_rows=3) as out:
            out.write(np.ones((2, 1)))
    with pytest.raises(ValueError, match="more than the 1 rows"):
        with open_table_writer(tmp_path / "c.npy", ["a"], n_rows=1) as out:
            out.write(np.ones((2, 1)))
    with pytest.raises(ValueError, match=r"blocks of shape \(b, 2\)"):
        with open_table_writer(tmp_path / "d.csv", ["a", "b"]) as out:
            out.write(np.ones((2, 3)))
    with pytest.raises(ValueError, match="unsupported file type"):
        with open_table_writer(tmp_path / "e.xlsx", ["a"]):
            pass
    assert list(tmp_path.iterdir()) == []


def test_text_stream_and_empty_table(tmp_path):
    buf = io.StringIO()
    with open_table_writer(buf, ["a", "b"]) as out:
        out.write(np.array([[1.5, 2.0]]))
        out.write(np.array([[3.0, -4.25]]))
    assert buf.getvalue() == "a,b\n1.5,2.0\n3.0,-4.25\n"
    with open_table_writer(tmp_path / "e.npy", ["a", "b"], n_rows=0):
        pass
    assert np.load(tmp_path / "e.npy").shape == (0, 2)


def test_write_blocks_streams_a_row_source(tmp_path):
    """fn is applied to each block of a RowSource, and the result is that of the whole
    array; the blocks are bounded by block_bytes."""
    X = np.random.default_rng(3).normal(size=(5000, 4))
    write_table(tmp_path / "x.npy", X)
    source = open_rows(tmp_path / "x.npy")
    seen = []

    def fn(block):
        seen.append(block.shape[0])
        return np.c_[block.sum(axis=1), block[:, 0] ** 2]

    write_blocks(tmp_path / "y.parquet", ["s", "q"], source, fn, block_bytes=8 * 4 * 1024)
    assert max(seen) == 1024 and sum(seen) == 5000
    Y, columns = read_table(tmp_path / "y.parquet")
    assert columns == ["s", "q"]
    np.testing.assert_allclose(Y, np.c_[X.sum(axis=1), X[:, 0] ** 2], rtol=1e-15)
    write_blocks(tmp_path / "same.csv", ["a", "b", "c", "d"], X)  # an array: at once
    np.testing.assert_array_equal(read_table(tmp_path / "same.csv")[0], X)
