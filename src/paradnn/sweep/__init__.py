"""Declarative sweeps: a TOML file names the families, axes, precisions and timing of a set of
runs; `load` validates all of it up front and expands it into `RunSpec`s. Torch-free.

The file format is documented in `paradnn.sweep.file` and docs/sweeps.md.
"""

from paradnn.config import RunSpec
from paradnn.sweep.file import Filters, Sweep, SweepError, load, parse
from paradnn.sweep.sampling import Sampling

__all__ = ["Filters", "RunSpec", "Sampling", "Sweep", "SweepError", "load", "parse"]
