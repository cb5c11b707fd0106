"""Edges of the analysis helpers that every conclusion passes through, pinned by hand-made frames:
which runs a filter keeps, which are called noisy and why, and which hyperparameter a heat map
puts on its second axis. Each test fails for a mutant a sampled `make mutation` left alive."""

from __future__ import annotations

import math

import pandas as pd

from paradnn.analysis.frames import noisy_ok, reason_counts, select
from paradnn.analysis.heatmap import _second_axis


def test_a_filter_on_none_or_nan_keeps_the_rows_without_a_value():
    runs = pd.DataFrame({"threads": [1.0, None, 4.0, math.nan], "mode": ["a", "b", "a", "b"]})
    assert select(runs, {"threads": None}).index.tolist() == [1, 3]
    assert select(runs, {"threads": math.nan}).index.tolist() == [1, 3]
    assert select(runs, {"threads": 4.0}).index.tolist() == [2]
    assert select(runs, {"threads": 1.0, "mode": "a"}).index.tolist() == [0]
    assert select(runs, {}).index.tolist() == [0, 1, 2, 3]


def test_without_a_noisy_column_no_run_is_noisy_and_the_mask_is_boolean():
    runs = pd.DataFrame({"status": ["ok", "ok"]}, index=[5, 7])
    mask = noisy_ok(runs)
    assert mask.dtype == bool and mask.tolist() == [False, False]
    assert mask.index.tolist() == [5, 7]
    assert runs[mask].empty  # usable as a mask, as comparisons use it


def test_noisy_reasons_are_counted_per_reason_most_common_first():
    runs = pd.DataFrame(
        {
            "status": ["ok", "ok", "ok", "failed", "ok"],
            "noisy": [True, True, True, True, False],
            "quality_reasons": [["load"], ["load", "spread"], None, ["load"], ["spread"]],
        }
    )
    # the failed run and the good run do not count; a noisy run without reasons is "rated noisy"
    assert reason_counts(runs) == {"load": 2, "spread": 1, "rated noisy": 1}
    assert list(reason_counts(runs)) == ["load", "spread", "rated noisy"]


def test_the_heat_maps_second_axis_is_never_the_first_nor_a_paper_fixed_one():
    # FC's paper-fixed values are layers, input and output (seed 000 §4.1)
    assert _second_axis("fc", ["batch", "layers", "nodes"], "batch") == "nodes"
    assert _second_axis("fc", ["batch", "layers", "input", "width"], "batch") == "width"
    assert _second_axis("fc", ["layers", "batch", "width"], "batch") == "width"
    # nothing else left: the last one that is not the x axis
    assert _second_axis("fc", ["batch", "layers"], "batch") == "layers"
