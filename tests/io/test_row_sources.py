"""kpca.io.open_rows: CSV/TSV, Parquet and .npy files read in row blocks.

Every source is checked against an independent reading of the same file
(np.loadtxt, np.load, pyarrow, kpca.io.read_table): its blocks concatenate to
the table, ``take`` returns the requested rows, and a bad cell anywhere in the
file is reported with the file, row and column.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from kpca._rows import RowSource
from kpca.io import open_rows, read_table, write_table

BLOCK_SIZES = [1, 7, 64, 1000]


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    return rng.normal(size=(203, 4)) * np.array([1e-6, 1.0, 3.0, 1e6])


def _all(source, rows):
    blocks = list(source.blocks(rows))
    assert all(b.shape[0] == rows for b in blocks[:-1]) and 0 < blocks[-1].shape[0] <= rows
    assert all(b.dtype == source.dtype and b.shape[1] == source.shape[1] for b in blocks)
    return np.concatenate(blocks)


# ------------------------------------------------------------------------- CSV / TSV
@pytest.mark.parametrize("rows", BLOCK_SIZES)
def test_csv_blocks_equal_loadtxt(tmp_path, table, rows):
    path = tmp_path / "t.csv"
    write_table(path, table, ["a", "b", "c", "d"])
    source = open_rows(path)
    assert isinstance(source, RowSource)
    assert source.shape == table.shape and source.dtype == np.float64
    assert list(source.feature_names) == ["a", "b", "c", "d"]
    expected = np.loadtxt(path, delimiter=",", skiprows=1)
    np.testing.assert_array_equal(_all(source, rows), expected)
    np.testing.assert_array_equal(expected, table)  # shortest repr: exact round trip


def test_csv_variants_match_read_table(tmp_path):
    """BOM, CRLF, blank lines, spaces, quotes, no header, TSV: as read_table reads them."""
    texts = {
        "bom.csv": ("\ufeffx,y\r\n1,2\r\n\r\n3 , 4\r\n", None),
        "quoted.csv": ('"a, b",c\n"1",2\n\n\n5,6\n', None),
        "plain.csv": ("1,2\n3,4\n5,6\n", None),
        "forced.csv": ("1,2\n3,4\n", True),
        "tabs.tsv": ("p\tq\n1\t2\n3\t4\n", None),
    }
    for name, (text, header) in texts.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8", newline="")
        X, columns = read_table(path, header=header)
        source = open_rows(path, header=header)
        assert source.shape == X.shape, name
        assert (None if source.feature_names is None else list(source.feature_names)) == columns
        for rows in (1, 2, 10):
            np.testing.assert_array_equal(_all(source, rows), X)


def test_every_pass_restarts_and_take(tmp_path, table):
    path = tmp_path / "t.csv"
    write_table(path, table, ["a", "b", "c", "d"])
    source = open_rows(path)
    first = next(iter(source.blocks(5)))
    np.testing.assert_array_equal(next(iter(source.blocks(5))), first)
    idx = np.array([0, 1, 57, 130, 202])
    np.testing.assert_array_equal(source.take(idx), table[idx])
    assert source.take(np.array([], dtype=int)).shape == (0, 4)
    for bad in ([3, 1], [1, 1], [-1], [203], [[1]], [0.5]):
        with pytest.raises(ValueError, match="take: indices"):
            source.take(np.asarray(bad))
    with pytest.raises(ValueError, match="rows must be an integer >= 1"):
        next(iter(source.blocks(0)))


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("", r"empty"),
        ("\n \n", r"empty"),
        ("a,b\n", r"header row but no data"),
        ("id,2019\n1,2\n", r"header.*'id'"),
        ("a,b\n1,2\n" + "3,4\n" * 50 + "5\n", r"row 53 has 1 fields but row 1 has 2"),
        ("x,y\n" + "1,2\n" * 40 + "3,oops\n", r"non-numeric value 'oops' in row 42, column 'y' "
         r"\(column 2\)"),
        ("1,2\n" * 9 + "3,\n", r"empty cell in row 10, column 2"),
        ("x,y\n1,2\n\n" + "3,nan\n", r"non-finite value nan in row 4, column 'y'"),
        ("x,y\n1,2\n-inf,3\n", r"non-finite value -inf in row 3, column 'x'"),
    ],
)
def test_csv_errors_name_file_row_and_column(tmp_path, text, pattern):
    """Bad cells far from the start are found when their block is read; the message is
    the one read_table gives (plus non-finite values, which a fit cannot use)."""
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=pattern) as info:
        source = open_rows(path)
        for _ in source.blocks(4):
            pass
    assert "bad.csv" in str(info.value)


def test_non_utf8_and_missing_files(tmp_path):
    (tmp_path / "a.csv").write_bytes(b"a,b\n1,2\n\xff\xfe,3\n")
    with pytest.raises(ValueError, match=r"a\.csv.*UTF-8"):
        open_rows(tmp_path / "a.csv")
    with pytest.raises(ValueError, match="no such file"):
        open_rows(tmp_path / "none.csv")
    with pytest.raises(ValueError, match=r"\.xlsx.*\.csv, \.tsv, \.npy, \.parquet"):
        open_rows(tmp_path / "a.xlsx")
    with pytest.raises(ValueError, match="dtype must be float32, float64"):
        open_rows(tmp_path / "a.csv", dtype=np.int64)


# ------------------------------------------------------------------------- .npy
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16])
@pytest.mark.parametrize("order", ["C", "F"])
def test_npy_blocks_and_take_equal_np_load(tmp_path, table, dtype, order):
    A = np.asarray(table * 100 if dtype == np.int16 else table, dtype=dtype, order=order)
    np.save(tmp_path / "a.npy", A)
    source = open_rows(tmp_path / "a.npy")
    expected = np.load(tmp_path / "a.npy")
    assert source.shape == A.shape and source.feature_names is None
    assert source.dtype == (np.float32 if dtype == np.float32 else np.float64)
    for rows in BLOCK_SIZES:
        np.testing.assert_array_equal(_all(source, rows), expected)
    idx = np.array([2, 3, 99, 202])
    np.testing.assert_array_equal(source.take(idx), expected[idx])
    as32 = open_rows(tmp_path / "a.npy", dtype="float32")
    assert as32.dtype == np.float32
    np.testing.assert_array_equal(_all(as32, 50), expected.astype(np.float32))


def test_npy_errors(tmp_path):
    A = np.ones((30, 3))
    A[17, 2] = np.inf
    np.save(tmp_path / "inf.npy", A)
    source = open_rows(tmp_path / "inf.npy")
    with pytest.raises(ValueError, match=r"inf\.npy: non-finite value inf in data row 18, "
                                         r"column 3"):
        list(source.blocks(8))
    with pytest.raises(ValueError, match="data row 18"):
        source.take(np.array([1, 17]))
    np.testing.assert_array_equal(source.take(np.array([1, 16])), A[[1, 16]])
    np.save(tmp_path / "big.npy", np.array([[1e300, 1.0]]))
    with pytest.raises(ValueError, match="1e.300 does not fit in float32 in data row 1"):
        list(open_rows(tmp_path / "big.npy", dtype=np.float32).blocks(1))
    np.save(tmp_path / "vec.npy", np.arange(3.0))
    with pytest.raises(ValueError, match=r"vec\.npy.*2-D"):
        open_rows(tmp_path / "vec.npy")
    np.save(tmp_path / "obj.npy", np.array([[{}]], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"obj\.npy.*pickled"):
        open_rows(tmp_path / "obj.npy")
    (tmp_path / "zero.npy").write_bytes(b"")
    with pytest.raises(ValueError, match=r"zero\.npy.*empty"):
        open_rows(tmp_path / "zero.npy")


# ------------------------------------------------------------------------- Parquet
def test_parquet_row_groups_are_regrouped(tmp_path, table):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    t = pa.table({name: table[:, j].astype(np.float32) for j, name in enumerate("abcd")})
    pq.write_table(t, tmp_path / "t.parquet", row_group_size=30)
    assert pq.ParquetFile(tmp_path / "t.parquet").metadata.num_row_groups == 7
    source = open_rows(tmp_path / "t.parquet")
    expected = np.column_stack([t.column(j).to_numpy() for j in range(4)])
    assert source.dtype == np.float32 and list(source.feature_names) == list("abcd")
    for rows in BLOCK_SIZES:  # full blocks across row-group boundaries
        np.testing.assert_array_equal(_all(source, rows), expected)
    idx = np.array([0, 29, 30, 31, 202])
    np.testing.assert_array_equal(source.take(idx), expected[idx])
    X, _ = read_table(tmp_path / "t.parquet")
    np.testing.assert_array_equal(_all(source, 64), X)


def test_parquet_errors(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"a": [1, 2], "name": ["u", "v"]}), tmp_path / "s.parquet")
    with pytest.raises(ValueError, match=r"s\.parquet.*column 'name'.*numeric"):
        open_rows(tmp_path / "s.parquet")
    values = [1.0] * 25 + [None] + [2.0] * 5
    pq.write_table(pa.table({"a": [0.0] * 31, "b": values}), tmp_path / "n.parquet",
                   row_group_size=10)
    with pytest.raises(ValueError, match=r"n\.parquet: column 'b' \(column 2\) has 1 missing "
                                         r"value\(s\) \(first in data row 26\)"):
        list(open_rows(tmp_path / "n.parquet").blocks(4))
    pq.write_table(pa.table({"a": [1.0, float("nan")]}), tmp_path / "nan.parquet")
    with pytest.raises(ValueError, match="non-finite value nan in data row 2, column 'a'"):
        list(open_rows(tmp_path / "nan.parquet").blocks(1))
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(ValueError, match=r"junk\.parquet: not a readable Parquet file"):
        open_rows(tmp_path / "junk.parquet")


# ------------------------------------------------------------------------- progress
def test_blocks_report_progress_records(tmp_path, table, caplog):
    """Each block read is a DEBUG record with kpca_event='rows' (the CLI draws a bar);
    take's pass is not reported."""
    write_table(tmp_path / "t.npy", table)
    source = open_rows(tmp_path / "t.npy")
    with caplog.at_level(logging.DEBUG, logger="kpca"):
        list(source.blocks(100))
        source.take(np.array([5]))
    events = [r for r in caplog.records if getattr(r, "kpca_event", None) == "rows"]
    assert [r.kpca_rows for r in events] == [100, 200, 203]
    assert {r.kpca_total for r in events} == {203}
