"""kpca.cli.ProgressBars and console_logging: what the command line shows on stderr."""

from __future__ import annotations

import io
import logging
import warnings

import numpy as np
import pytest

from kpca.cli import ProgressBars, console_logging
from kpca.io import open_rows, write_table

logger = logging.getLogger("kpca")


def test_rows_bar_follows_every_pass(tmp_path):
    pytest.importorskip("tqdm")
    write_table(tmp_path / "x.npy", np.ones((250, 2)))
    source = open_rows(tmp_path / "x.npy")
    bars = ProgressBars(io.StringIO())
    logger.addHandler(bars)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        blocks = source.blocks(100)
        next(blocks)
        bar = bars.bars["rows"]
        assert (bar.n, bar.total) == (100, 250)
        list(blocks)
        assert bar.n == 250
        next(source.blocks(60))  # a second pass starts the bar again
        assert (bar.n, bar.total) == (60, 250)
        logger.info("pass", extra={"kpca_event": "pass"})
        logger.info("residual", extra={"kpca_event": "residual", "kpca_residual": 1e-3})
        assert bars.bars["passes"].n == 1
    finally:
        logger.removeHandler(bars)
        logger.setLevel(old)
        bars.close()


def test_console_logging_levels_warnings_and_restore():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    old_level, old_handlers = logger.level, list(logger.handlers)
    for verbose, shown in [(0, ["warning"]), (1, ["info", "warning"]),
                           (2, ["debug", "info", "warning"])]:
        out = io.StringIO()
        with console_logging(verbose, prog="kpca", stream=out):
            logger.debug("d")
            logger.info("i")
            logger.warning("w")
            warnings.warn("careful", UserWarning, stacklevel=1)
            warnings.warn("X does not have valid feature names, but", UserWarning,
                          stacklevel=1)
        lines = out.getvalue().splitlines()
        expected = [f"kpca: {lvl}: {m}" for lvl, m in [("debug", "d"), ("info", "i"),
                                                        ("warning", "w")] if lvl in shown]
        assert lines == [*expected, "kpca: warning: careful"]
    assert (logger.level, logger.handlers) == (old_level, old_handlers)
    pytest.importorskip("tqdm")
    with console_logging(0, stream=Terminal()):  # a terminal gets the bars
        assert any(isinstance(h, ProgressBars) for h in logger.handlers)
    assert logger.handlers == old_handlers


def test_passes_counter_shows_time_during_a_pass_and_a_summary_at_the_end():
    pytest.importorskip("tqdm")
    import time

    out = io.StringIO()
    bars = ProgressBars(out, prog="kpca", refresh=0.05)
    logger.addHandler(bars)
    old = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        logger.info("pass", extra={"kpca_event": "pass"})
        drawn = out.getvalue()
        time.sleep(0.3)  # a long pass: no record, the elapsed time is redrawn anyway
        assert len(out.getvalue()) > len(drawn)
        assert "kernel passes: 1 done" in out.getvalue() and "elapsed" in out.getvalue()
        logger.info("residual", extra={"kpca_event": "residual", "kpca_residual": 3.1e-6})
        logger.info("pass", extra={"kpca_event": "pass"})
    finally:
        logger.removeHandler(bars)
        logger.setLevel(old)
        bars.close()
    last = out.getvalue().rstrip("\n").splitlines()[-1].split("\r")[-1]
    assert last.startswith("kpca: 2 kernel passes in ") and last.endswith("residual 3.1e-06")
    assert not bars._ticker.is_alive()


@pytest.mark.parametrize("estimator, fit_pass", [("nystrom", "landmarks"),
                                                 ("random-features", "random features"),
                                                 ("incremental", "batches")])
def test_a_streamed_fit_transform_labels_its_two_passes(tmp_path, monkeypatch, capsys,
                                                        estimator, fit_pass):
    # issue 34: both bars read 'reading big.npy:', as if the file were read twice for nothing
    pytest.importorskip("tqdm")
    from _cli import run, terminal_stderr

    from kpca.cli import _progress

    write_table(tmp_path / "big.npy", np.random.default_rng(0).normal(size=(600, 3)))
    labels = []
    emit = _progress.ProgressBars.emit

    def spy(self, record):  # the label of the rows bar at each record of rows read
        emit(self, record)
        if getattr(record, "kpca_event", None) == "rows":
            labels.append((self.bars["rows"].desc, record.kpca_rows))

    monkeypatch.setattr(_progress.ProgressBars, "emit", spy)
    err = terminal_stderr(monkeypatch)
    code, _, _ = run(capsys, "fit-transform", tmp_path / "big.npy", "--estimator",
                     estimator, "-o", tmp_path / "z.npy")
    assert code == 0
    assert [d for d, rows in labels if rows == 600] == [f"pass 1/2: {fit_pass} (big.npy)",
                                                         "pass 2/2: scores (big.npy)"]
    assert "reading big.npy" not in err.getvalue()
    assert f"pass 1/2: {fit_pass} (big.npy)" in err.getvalue()
