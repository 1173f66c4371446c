"""Files: numeric tables, model files, and the inputs of the command line.

* :func:`read_table` / :func:`write_table` -- .csv, .tsv, .npy, .parquet, whole
  (written atomically);
* :func:`open_rows` / :func:`open_table_writer` -- the same formats block by block,
  for data that do not fit in memory (:func:`open_rows` returns a
  :class:`kpca._rows.RowSource`, which the streamed estimators fit on);
* :func:`save` / :func:`load` -- model files that run no code when loaded
  (see docs/guide.md, "Saving models");
* :func:`read_data`, :func:`read_labels`, :func:`check_columns`, ... -- input files
  of the command line; :func:`parse_kernel_params` and the other parsers of
  parameters written as text (:data:`PARAMETER_FLAGS`: the flag of each estimator
  parameter); :class:`ProgressBars` (progress records drawn with tqdm) and
  :func:`format_summary` (the text of ``kpca info``).
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
from ._params import (
    PARAMETER_FLAGS,
    ParameterFlag,
    flag_help,
    ignored_kernel_params,
    parameter_flag,
    parse_candidates,
    parse_choice,
    parse_components,
    parse_gamma,
    parse_int,
    parse_kernel_params,
    parse_n_components,
    parse_nonnegative,
    parse_number,
    parse_positive_int,
    parse_value,
    split_list,
)
from ._progress import ProgressBars, console_logging
from ._sources import open_rows
from ._summary import format_selection, format_summary
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
    "PARAMETER_FLAGS",
    "ParameterFlag",
    "ProgressBars",
    "TABLE_FORMATS",
    "TableWriter",
    "atomic_write",
    "check_columns",
    "check_output_path",
    "check_scores",
    "check_vectors",
    "console_logging",
    "fit_scaler",
    "fitted_on_strings",
    "flag_help",
    "format_selection",
    "ignored_kernel_params",
    "input_names",
    "format_summary",
    "is_string_kernel",
    "load",
    "load_model",
    "model_summary",
    "open_rows",
    "open_table_writer",
    "parameter_flag",
    "parse_candidates",
    "parse_choice",
    "parse_components",
    "parse_gamma",
    "parse_int",
    "parse_kernel_params",
    "parse_n_components",
    "parse_nonnegative",
    "parse_number",
    "parse_positive_int",
    "parse_value",
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
    "split_list",
    "split_scaling",
    "standardized",
    "write_blocks",
    "write_delimited",
    "write_table",
]
