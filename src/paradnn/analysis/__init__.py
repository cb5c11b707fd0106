"""Analysis of result databases: pandas frames in, frames out. Never imports torch, so a laptop
can analyse a GPU sweep (tests/test_layering.py holds this)."""

from paradnn.analysis import (
    breakdown,
    infeed,  # registers its finding in findings.CHECKS
    modes,  # registers its finding in findings.CHECKS
)
from paradnn.analysis.findings import Finding, evaluate
from paradnn.analysis.frames import Data, from_frames, load
from paradnn.analysis.heatmap import HeatMap, heatmap
from paradnn.analysis.regression import Sensitivity, sensitivity
from paradnn.analysis.roofline import Roof, model_points, op_points, roofs
from paradnn.analysis.speedup import Comparison, compare
from paradnn.analysis.summaries import (
    batch_effect,
    ops_table,
    param_ranges,
    table8,
    thread_scaling,
)

__all__ = [
    "Comparison",
    "Data",
    "Finding",
    "HeatMap",
    "Roof",
    "Sensitivity",
    "batch_effect",
    "breakdown",
    "compare",
    "evaluate",
    "from_frames",
    "heatmap",
    "infeed",
    "load",
    "model_points",
    "modes",
    "op_points",
    "ops_table",
    "param_ranges",
    "roofs",
    "sensitivity",
    "table8",
    "thread_scaling",
]
