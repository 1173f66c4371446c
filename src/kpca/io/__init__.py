"""Files: numeric tables for the CLI and model files for every estimator.

* :func:`read_table` / :func:`write_table` -- .csv, .tsv, .npy, .parquet
  (written atomically);
* :func:`save` / :func:`load` -- model files that run no code when loaded
  (see docs/guide.md, "Saving models").
"""

from ._model import FORMAT_VERSION, load_model, model_summary, register_dataclass, save_model
from ._tables import (
    TABLE_FORMATS,
    atomic_write,
    check_output_path,
    read_table,
    write_delimited,
    write_table,
)

save = save_model
load = load_model

__all__ = [
    "FORMAT_VERSION",
    "TABLE_FORMATS",
    "atomic_write",
    "check_output_path",
    "load",
    "load_model",
    "model_summary",
    "read_table",
    "register_dataclass",
    "save",
    "save_model",
    "write_delimited",
    "write_table",
]
