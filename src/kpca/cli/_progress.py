"""Progress bars (tqdm) for the library's progress records, and console logging.

The library only logs: records of the ``kpca`` logger carry ``kpca_event`` and
its numbers -- ``'pass'`` and ``'residual'`` (``kpca_residual``) from the
iterative eigensolvers, ``'rows'`` (``kpca_rows`` read so far in this pass of
``kpca_total``, from ``kpca_source``) from the row sources of :func:`kpca.io.open_rows`,
``'select'`` (``kpca_done`` fits of ``kpca_total``, and ``kpca_text``: "candidate 4/9,
fold 2/5") from :func:`kpca.selection.select_kernel`, ``'phase'`` (``kpca_text``: "pass
1/2: landmarks") from a command, naming the passes over a file that follow.
:class:`ProgressBars`, a logging handler, draws them; :func:`console_logging`
sets up what a command line shows on standard error (messages, warnings, and the
bars on a terminal).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

logger = logging.getLogger("kpca")


class ProgressBars(logging.Handler):
    """A logging handler that turns progress records into tqdm bars.

    Kernel passes get a counter (iterative solvers stop when they converge, so the
    number of passes is not known in advance) with the time elapsed, which moves
    during a long pass, and the last residual; a row source gets a bar of its rows,
    restarted at each pass over the file. :meth:`close` writes a one-line summary of
    the passes (``kpca: 6 kernel passes in 12.3 s, residual 3.1e-06``).

    Parameters
    ----------
    file : text stream, default=None
        Where the bars are drawn (``None``: standard error).
    prog : str, default='kpca'
        The summary line's prefix.
    refresh : float, default=1.0
        Seconds between redraws of the bars between records (the elapsed time).

    Raises
    ------
    ImportError
        tqdm is not installed (``pip install kpca[progress]``).
    """

    #: the passes counter: no total to show, the time elapsed instead
    PASS_FORMAT = "{desc}: {n_fmt} done, {elapsed} elapsed{postfix}"

    def __init__(self, file: IO[str] | None = None, *, prog: str = "kpca",
                 refresh: float = 1.0) -> None:
        super().__init__(level=logging.DEBUG)
        from tqdm import tqdm

        self._tqdm, self._file, self.bars = tqdm, file, {}
        self._prog, self._residual, self._phase = prog, None, None
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(refresh,), daemon=True,
                                        name="kpca-progress")
        self._ticker.start()

    def _tick(self, every: float) -> None:
        # a bar is redrawn only when it is updated: during a long pass nothing would
        # move, so the elapsed time is redrawn from here
        while not self._stop.wait(every):
            for bar in list(self.bars.values()):
                with contextlib.suppress(Exception):  # a bar closed meanwhile
                    bar.refresh()

    def _bar(self, key: str, **kw: Any) -> Any:
        if key not in self.bars:
            self.bars[key] = self._tqdm(file=self._file or sys.stderr, leave=False, **kw)
        return self.bars[key]

    def emit(self, record: logging.LogRecord) -> None:
        """Advance the bar a ``kpca_event`` record belongs to (passes, rows or the
        fits of ``kpca select``)."""
        event = getattr(record, "kpca_event", None)
        if event in ("pass", "residual"):
            bar = self._bar("passes", desc="kernel passes", unit="pass",
                            bar_format=self.PASS_FORMAT)
            if event == "pass":
                bar.update(1)
            else:
                self._residual = float(record.kpca_residual)
                bar.set_postfix(residual=f"{self._residual:.1e}")
        elif event == "select":  # kpca select: candidates x folds
            bar = self._bar("select", unit="fit", total=record.kpca_total)
            bar.set_description_str(record.kpca_text)  # redrawn: one record per fit
            bar.update(record.kpca_done - bar.n)
        elif event == "phase":  # the command names its passes: a new bar for each
            self._phase = record.kpca_text
            old = self.bars.pop("rows", None)
            if old is not None:
                old.close()
        elif event == "rows":
            total, name = record.kpca_total, Path(record.kpca_source).name
            bar = self._bar("rows", desc=f"{self._phase} ({name})" if self._phase else
                            f"reading {name}", unit="row", unit_scale=total >= 10**5,
                            total=total)
            if record.kpca_rows <= bar.n:  # a new pass over the file
                bar.reset(total=total)
            bar.update(record.kpca_rows - bar.n)

    def close(self) -> None:
        self._stop.set()
        self._ticker.join()
        passes = self.bars.get("passes")
        summary = None
        if passes is not None and passes.n:
            summary = (f"{self._prog}: {passes.n} kernel pass{'es' if passes.n > 1 else ''} "
                       f"in {passes.format_dict['elapsed']:.1f} s"
                       + (f", residual {self._residual:.1e}" if self._residual is not None
                          else ""))
        for bar in self.bars.values():
            bar.close()
        if summary:
            (self._file or sys.stderr).write(summary + "\n")
        super().close()


class _Formatter(logging.Formatter):
    def __init__(self, prog: str) -> None:
        super().__init__()
        self.prog = prog

    def format(self, record: logging.LogRecord) -> str:
        text = f"{self.prog}: {record.levelname.lower()}: {record.getMessage()}"
        return text + ("\n" + self.formatException(record.exc_info) if record.exc_info else "")


@contextlib.contextmanager
def console_logging(verbose: int = 0, *, prog: str = "kpca",
                    stream: IO[str] | None = None) -> Iterator[None]:
    """Report the ``kpca`` logger and Python warnings on a console, for a command line.

    Inside the ``with`` block, records are written to ``stream`` as
    ``prog: level: message``: warnings only, INFO too with ``verbose=1``, DEBUG
    with 2 or more. Without ``verbose`` and on a terminal, the progress records
    are drawn as :class:`ProgressBars` (when tqdm is installed). Python warnings
    become ``prog: warning: message`` lines, except scikit-learn's "X does not
    have valid feature names" (the command line hands estimators arrays and
    checks the columns itself, :func:`kpca.io.check_columns`). Everything is restored on
    exit.

    Parameters
    ----------
    verbose : int, default=0
    prog : str, default='kpca'
    stream : text stream, default=None
        ``None``: ``sys.stderr`` (looked up on entry).
    """
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_Formatter(prog))
    handler.setLevel(logging.DEBUG if verbose else logging.WARNING)
    progress = None
    if not verbose and stream.isatty():
        with contextlib.suppress(ImportError):  # tqdm is optional (kpca[progress])
            progress = ProgressBars(stream, prog=prog)
    handlers = [h for h in (handler, progress) if h is not None]
    old_level = logger.level
    for h in handlers:
        logger.addHandler(h)
    levels = {0: logging.DEBUG if progress else logging.WARNING, 1: logging.INFO}
    logger.setLevel(levels.get(verbose, logging.DEBUG))
    try:
        with warnings.catch_warnings():
            warnings.showwarning = lambda m, *a, **k: stream.write(f"{prog}: warning: {m}\n")
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            yield
    finally:
        for h in handlers:
            logger.removeHandler(h)
            h.close()
        logger.setLevel(old_level)
