"""Figures of the analysis results (matplotlib, headless). Never imports torch."""

from paradnn.plots.figures import (
    batch_effect,
    heatmap,
    integer_colorbar,
    op_breakdown,
    op_speedups,
    ops_bars,
    param_ranges,
    png,
    predicted_vs_measured,
    roofline,
    sensitivity,
    speedup_scatter,
    thread_scaling,
)

__all__ = [
    "batch_effect",
    "heatmap",
    "integer_colorbar",
    "op_breakdown",
    "op_speedups",
    "ops_bars",
    "param_ranges",
    "png",
    "predicted_vs_measured",
    "roofline",
    "sensitivity",
    "speedup_scatter",
    "thread_scaling",
]
