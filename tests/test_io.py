"""Tests of kpca.io's tables: reading, and writing atomically (whole)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from kpca.io import _write as _io
from kpca.io import check_output_path, read_table, write_table


def _write_text(path, text, encoding="utf-8"):
    path.write_text(text, encoding=encoding)
    return path


def _leftovers(directory):
    """Temporary files left in a directory by a failed atomic write."""
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# ------------------------------------------------------------------------- reading CSV
def test_csv_with_header(tmp_path):
    path = _write_text(tmp_path / "a.csv", "x,y,z\n1,2,3\n4.5,-6e-3,nan\n")
    X, columns = read_table(path)
    assert columns == ["x", "y", "z"]
    assert X.dtype == np.float64
    np.testing.assert_array_equal(X, [[1, 2, 3], [4.5, -6e-3, np.nan]])


def test_csv_without_header_and_blank_lines(tmp_path):
    path = _write_text(tmp_path / "a.csv", "1, 2\n\n3 ,4\n\n")
    X, columns = read_table(path)
    assert columns is None
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])


def test_csv_byte_order_mark_and_quoted_header(tmp_path):
    path = _write_text(tmp_path / "a.csv", '"a, b",c\n1,2\n', encoding="utf-8-sig")
    X, columns = read_table(path)
    assert columns == ["a, b", "c"]
    np.testing.assert_array_equal(X, [[1, 2]])


def test_tsv(tmp_path):
    path = _write_text(tmp_path / "a.tsv", "p\tq\n1\t2\n")
    X, columns = read_table(path)
    assert columns == ["p", "q"]
    np.testing.assert_array_equal(X, [[1, 2]])


def test_mixed_first_row_is_ambiguous_unless_told(tmp_path):
    path = _write_text(tmp_path / "a.csv", "id,2019\n1,2\n")
    with pytest.raises(ValueError, match=r"a\.csv.*header.*'id'"):
        read_table(path)
    X, columns = read_table(path, header=True)
    assert columns == ["id", "2019"]
    np.testing.assert_array_equal(X, [[1, 2]])


def test_numeric_header_forced(tmp_path):
    path = _write_text(tmp_path / "a.csv", "1,2\n3,4\n")
    X, columns = read_table(path, header=True)
    assert columns == ["1", "2"]
    np.testing.assert_array_equal(X, [[3, 4]])


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("", r"empty"),
        ("\n\n  \n", r"empty"),
        ("a,b\n", r"header row but no data"),
        ("1,2,3\n4,5\n", r"row 2 has 2 fields but row 1 has 3"),
        ("a,b\n1,2\n3,4,5\n", r"row 3 has 3 fields"),
        ("x,y\n1,2\n3,oops\n", r"non-numeric value 'oops' in row 3, column 'y' \(column 2\)"),
        ("1,2\n3,oops\n", r"non-numeric value 'oops' in row 2, column 2"),
        ("x,y\n1,\n", r"empty cell in row 2, column 'y'"),
    ],
)
def test_csv_errors_name_file_row_and_column(tmp_path, text, pattern):
    path = _write_text(tmp_path / "bad.csv", text)
    with pytest.raises(ValueError, match=pattern) as info:
        read_table(path)
    assert "bad.csv" in str(info.value)


def test_missing_file_directory_and_unknown_extension(tmp_path):
    with pytest.raises(ValueError, match=r"nope\.csv: no such file"):
        read_table(tmp_path / "nope.csv")
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(ValueError, match="is a directory"):
        read_table(tmp_path / "d.csv")
    path = _write_text(tmp_path / "a.xlsx", "1,2\n")
    with pytest.raises(ValueError, match=r"\.xlsx.*\.csv, \.tsv, \.npy, \.parquet"):
        read_table(path)
    with pytest.raises(ValueError, match="no extension"):
        read_table(_write_text(tmp_path / "data", "1\n"))


def test_non_utf8_csv(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b"\xff\xfe\x00garbage\x81\n")
    with pytest.raises(ValueError, match=r"a\.csv.*UTF-8"):
        read_table(path)


# ------------------------------------------------------------------------- reading .npy
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_npy_keeps_float_dtype(tmp_path, dtype):
    A = np.arange(6, dtype=dtype).reshape(3, 2) / 7
    np.save(tmp_path / "a.npy", A)
    X, columns = read_table(tmp_path / "a.npy")
    assert columns is None and X.dtype == dtype
    np.testing.assert_array_equal(X, A)


def test_npy_integers_become_float64(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(4).reshape(2, 2))
    X, _ = read_table(tmp_path / "a.npy")
    assert X.dtype == np.float64


def test_npy_errors(tmp_path):
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"obj\.npy.*pickled"):
        read_table(tmp_path / "obj.npy")
    np.save(tmp_path / "vec.npy", np.arange(3.0))
    with pytest.raises(ValueError, match=r"vec\.npy.*2-D.*\(3,\)"):
        read_table(tmp_path / "vec.npy")
    np.save(tmp_path / "str.npy", np.array([["a"]]))
    with pytest.raises(ValueError, match=r"str\.npy.*numeric"):
        read_table(tmp_path / "str.npy")
    np.save(tmp_path / "none.npy", np.zeros((0, 3)))
    with pytest.raises(ValueError, match=r"none\.npy.*empty"):
        read_table(tmp_path / "none.npy")
    (tmp_path / "zero.npy").write_bytes(b"")
    with pytest.raises(ValueError, match=r"zero\.npy.*empty"):
        read_table(tmp_path / "zero.npy")
    (tmp_path / "junk.npy").write_bytes(b"not an array at all")
    with pytest.raises(ValueError, match=r"junk\.npy"):
        read_table(tmp_path / "junk.npy")


# ------------------------------------------------------------------------- parquet
def test_parquet_round_trip_and_errors(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    Z = np.random.default_rng(0).normal(size=(5, 3))
    write_table(tmp_path / "z.parquet", Z, ["a", "b", "c"])
    X, columns = read_table(tmp_path / "z.parquet")
    assert columns == ["a", "b", "c"]
    np.testing.assert_array_equal(X, Z)

    pq.write_table(pa.table({"a": [1, 2], "name": ["u", "v"]}), tmp_path / "s.parquet")
    with pytest.raises(ValueError, match=r"s\.parquet.*column 'name'.*numeric"):
        read_table(tmp_path / "s.parquet")
    pq.write_table(pa.table({"a": [1.0, None, 3.0]}), tmp_path / "n.parquet")
    with pytest.raises(ValueError, match=r"column 'a'.*1 missing value.*row 2"):
        read_table(tmp_path / "n.parquet")
    pq.write_table(pa.table({"a": [1, 2], "b": [True, False]}), tmp_path / "i.parquet")
    X, _ = read_table(tmp_path / "i.parquet")
    assert X.dtype == np.float64
    np.testing.assert_array_equal(X, [[1, 1], [2, 0]])


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    (tmp_path / "z.parquet").write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # makes `import pyarrow` fail
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"pip install kpca\[io\]"):
        read_table(tmp_path / "z.parquet")
    with pytest.raises(ImportError, match=r"pip install kpca\[io\]"):
        write_table(tmp_path / "out.parquet", np.zeros((2, 2)), ["a", "b"])
    assert not (tmp_path / "out.parquet").exists()


# ------------------------------------------------------------------------- writing
@pytest.mark.parametrize("ext", [".csv", ".tsv", ".npy", ".parquet"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_write_read_round_trip_is_exact(tmp_path, ext, dtype):
    if ext == ".parquet":
        pytest.importorskip("pyarrow")
    rng = np.random.default_rng(1)
    Z = (rng.normal(size=(50, 3)) * np.array([1e-8, 1.0, 1e8])).astype(dtype)
    Z[0, 0] = 1 / 3
    path = tmp_path / f"z{ext}"
    write_table(path, Z, ["kpca0", "kpca1", "kpca2"])
    X, columns = read_table(path)
    # text is read as float64; the shortest float32 repr converts back to the same float32
    np.testing.assert_array_equal(X.astype(dtype), Z)
    if ext != ".npy":
        assert columns == ["kpca0", "kpca1", "kpca2"]
    assert _leftovers(tmp_path) == []


def test_write_csv_header_with_commas_and_default_names(tmp_path):
    write_table(tmp_path / "a.csv", np.ones((1, 2)), ["a,b", "c"])
    assert (tmp_path / "a.csv").read_text().splitlines()[0] == '"a,b",c'
    write_table(tmp_path / "b.csv", np.ones((1, 2)))
    assert (tmp_path / "b.csv").read_text().splitlines()[0] == "col0,col1"


def test_write_errors(tmp_path):
    with pytest.raises(ValueError, match=r"\.txt.*\.csv"):
        write_table(tmp_path / "a.txt", np.ones((2, 2)))
    with pytest.raises(ValueError, match="does not exist"):
        write_table(tmp_path / "nodir" / "a.csv", np.ones((2, 2)))
    with pytest.raises(ValueError, match="2 column names for 3 columns"):
        write_table(tmp_path / "a.csv", np.ones((2, 3)), ["a", "b"])
    with pytest.raises(ValueError, match="2-D"):
        write_table(tmp_path / "a.csv", np.ones(3))
    assert list(tmp_path.iterdir()) == []


def test_failed_write_leaves_no_partial_file_and_keeps_old_one(tmp_path, monkeypatch):
    path = tmp_path / "out.csv"
    path.write_text("old content\n")

    def explode(writer, Z):
        writer.writerow(["half a row"])
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(_io, "_write_rows", explode)
    with pytest.raises(RuntimeError, match="disk on fire"):
        write_table(path, np.ones((3, 2)), ["a", "b"])
    assert path.read_text() == "old content\n"
    assert _leftovers(tmp_path) == []
    with pytest.raises(RuntimeError):
        write_table(tmp_path / "new.csv", np.ones((3, 2)), ["a", "b"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_atomic_write_uses_normal_permissions(tmp_path):
    import os

    write_table(tmp_path / "a.csv", np.ones((1, 1)), ["a"])
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "a.csv").stat().st_mode & 0o777 == 0o666 & ~umask


def test_check_output_path(tmp_path):
    assert check_output_path(tmp_path / "a.npy") == tmp_path / "a.npy"
    with pytest.raises(ValueError, match="is a directory"):
        check_output_path(tmp_path, table=False)
    with pytest.raises(ValueError, match="unsupported file type"):
        check_output_path(tmp_path / "a.json")
