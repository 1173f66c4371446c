"""The package version (its own module: the model files read it without a cycle)."""

__version__ = "0.1.0"
