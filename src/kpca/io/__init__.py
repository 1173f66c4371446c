"""Files: numeric tables, streamed row sources, model files, and input files.

* :func:`read_table` / :func:`write_table` -- .csv, .tsv, .npy, .parquet, whole
  (written atomically);
* :func:`open_rows` / :func:`open_table_writer` -- the same formats block by block,
  for data that do not fit in memory (:func:`open_rows` returns a
  :class:`kpca._rows.RowSource`, which the streamed estimators fit on);
* :func:`save` / :func:`load` -- model files that run no code when loaded
  (see docs/guide.md, "Saving models");
* :func:`read_data`, :func:`read_labels`, :func:`check_columns`, ... -- input files
  (data, labels, models) checked for what reads them.

The parsing of parameters written as text, the progress bars and the texts of
``kpca info`` and ``kpca select`` belong to the command line: :mod:`kpca.cli`.
"""

from .._files import atomic_write
from ._inputs import (
    check_columns,
    check_scores,
    check_vectors,
    fit_scaler,
    fitted_on_strings,
    input_names,
    is_string_kernel,
    read_data,
    read_data_and_labels,
    read_labels,
    read_model_input,
    read_strings,
    split_label_column,
    standardized,
)
from ._model import (
    FORMAT_VERSION,
    load_model,
    model_summary,
    register_dataclass,
    save_model,
    split_scaling,
)
from ._sources import open_rows
from ._tables import TABLE_FORMATS, read_table
from ._write import (
    TableWriter,
    check_output_path,
    open_table_writer,
    write_blocks,
    write_delimited,
    write_table,
)

save = save_model
load = load_model

__all__ = [
    "FORMAT_VERSION",
    "TABLE_FORMATS",
    "TableWriter",
    "atomic_write",
    "check_columns",
    "check_output_path",
    "check_scores",
    "check_vectors",
    "fit_scaler",
    "fitted_on_strings",
    "input_names",
    "is_string_kernel",
    "load",
    "load_model",
    "model_summary",
    "open_rows",
    "open_table_writer",
    "read_data",
    "read_data_and_labels",
    "read_labels",
    "read_model_input",
    "read_strings",
    "read_table",
    "register_dataclass",
    "save",
    "save_model",
    "split_label_column",
    "split_scaling",
    "standardized",
    "write_blocks",
    "write_delimited",
    "write_table",
]
