"""Conclusions computed by hand: the numbers a wrong formula would change (issue 23).

Each case is built so that the plausible wrong answers differ from the right one: a set of
speedups whose geometric mean, median and arithmetic mean are three different numbers, a tie
at exactly 1.0, an effect whose interval straddles zero, roofline points on both sides of the
ridge. Mutation testing (`make mutation`) found that no test failed for these faults.
"""

from __future__ import annotations

import math
import zlib

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import findings as F
from paradnn.analysis import speedup as S
from paradnn.analysis.roofline import Roof

import synth

# One fc config per speedup; B runs `ratio` times the examples/s of A.
SPEEDUPS = [0.5, 1.0, 2.0, 8.0]  # geomean 8**(1/4) = 1.682; median 1.5; mean 2.875
GEOMEAN = 8 ** (1 / 4)


def _fc(batch: int, nodes: int = 64) -> dict:
    return {"layers": 2, "nodes": nodes, "input": 20, "output": 10, "batch": batch}


def _pairs(speedups, family_rows=None, **kw) -> A.Data:
    rows = []
    for i, s in enumerate(speedups):
        cfg = _fc(8 * (i + 1))
        rows.append(synth.row("fc", cfg, 0.25, platform="A", **kw))
        rows.append(synth.row("fc", cfg, 0.25 * s, platform="B", device="cuda", **kw))
    return A.from_frames(rows + (family_rows or []))


def test_the_geometric_mean_is_neither_the_median_nor_the_mean():
    s = pd.Series(SPEEDUPS)
    assert S.geomean(s) == pytest.approx(GEOMEAN, rel=1e-12)
    assert S.geomean(s) != pytest.approx(s.median()) and S.geomean(s) != pytest.approx(s.mean())
    assert S.geomean(pd.Series([4.0, 0.25])) == pytest.approx(1.0)
    assert S.geomean(pd.Series([2.0, None, -1.0, 0.0, "x"])) == pytest.approx(2.0)  # valid only
    assert S.geomean(pd.Series([], dtype=float)) is None


def test_the_summary_row_is_computed_by_hand():
    c = A.compare(_pairs(SPEEDUPS), "platform", "A", "B")
    assert sorted(c.pairs["speedup"].round(12)) == SPEEDUPS
    g = c.overall()
    assert g["n"] == 4
    assert g["geomean"] == pytest.approx(GEOMEAN, rel=1e-9)
    assert g["median"] == pytest.approx(1.5)
    assert g["min"] == pytest.approx(0.5) and g["max"] == pytest.approx(8.0)
    # No raw samples and no stored CIs: no interval, so no call either.
    assert g["no_interval"] == 4 and g["faster"] == g["slower"] == g["no_change"] == 0


def test_a_tie_is_not_faster():
    """faster_share counts speedups strictly above 1: a config that ran exactly as fast is not
    faster (ties called faster would turn 'half the configs' into 'three quarters')."""
    c = A.compare(_pairs(SPEEDUPS), "platform", "A", "B")
    assert (c.pairs["speedup"] == 1.0).sum() == 1  # the tie is exact
    assert c.overall()["faster_share"] == pytest.approx(0.5)
    c = A.compare(_pairs([1.0, 1.0, 1.0, 3.0]), "platform", "A", "B")
    assert c.overall()["faster_share"] == pytest.approx(0.25)


def test_the_per_family_rows_are_each_familys_own_numbers():
    cnn = {"blocks": 1, "filters": 4, "image": 16, "output": 3, "batch": 2}
    extra = [
        synth.row("cnn", cnn, 0.1, platform="A"),
        synth.row("cnn", cnn, 0.1 * 3.0, platform="B", device="cuda"),
    ]
    c = A.compare(_pairs(SPEEDUPS, extra), "platform", "A", "B")
    rows = c.summary.set_index("family")
    assert list(c.summary["family"]) == ["cnn", "fc", "all"]
    assert rows.at["cnn", "n"] == 1 and rows.at["cnn", "geomean"] == pytest.approx(3.0)
    assert rows.at["fc", "geomean"] == pytest.approx(GEOMEAN)
    assert rows.at["all", "geomean"] == pytest.approx((8 * 3.0) ** (1 / 5))
    assert rows.at["all", "faster_share"] == pytest.approx(3 / 5)


def test_the_call_is_decided_by_the_interval_ends():
    assert S.call(1.01, 1.2) == S.FASTER
    assert S.call(1.0, 1.2) == S.NO_CHANGE  # touching 1 is not beyond it
    assert S.call(0.8, 0.99) == S.SLOWER
    assert S.call(0.8, 1.0) == S.NO_CHANGE
    assert S.call(0.9, 1.1) == S.NO_CHANGE
    assert S.call(float("nan"), 1.1) == S.NO_INTERVAL
    assert S.call(0.9, float("inf")) == S.NO_INTERVAL


def _noise(cfg: dict) -> float:
    """A deterministic wobble in [-0.5, 0.5) from the config (no RNG state)."""
    return zlib.crc32(repr(sorted(cfg.items())).encode()) % 1000 / 1000 - 0.5


FC_GRID = {"layers": [2, 4], "nodes": [64, 128, 256, 512], "input": [20], "output": [10]}


def _fc_runs(batch_effect: float) -> A.Data:
    """Utilization rises with log2(nodes); batch adds `batch_effect` per doubling, plus noise."""
    space = {**FC_GRID, "batch": [8, 16, 32, 64]}

    def util(c):
        return (
            0.2
            + 0.04 * math.log2(c["nodes"] / 64)
            + batch_effect * math.log2(c["batch"] / 8)
            + 0.01 * _noise(c)
        )

    return A.from_frames(synth.rows("fc", space, util))


def _fc_batch(data: A.Data) -> F.Finding:
    return next(f for f in (check(data) for check in F.CHECKS) if f.id == "fc-batch")


def test_an_effect_whose_interval_straddles_zero_is_inconclusive():
    data = _fc_runs(batch_effect=0.0)
    s = A.sensitivity(data, "fc", F.UTIL)
    row = s.table.set_index("hyperparameter").loc["batch"]
    assert row.ci_low < 0 < row.ci_high  # no detectable effect of batch
    f = _fc_batch(data)
    assert f.verdict == F.INCONCLUSIVE and (f.ci_low, f.ci_high) == (row.ci_low, row.ci_high)
    # layers: no effect either, so "does not rise" is not shown either way
    assert F.depth_unexploited(data).verdict == F.INCONCLUSIVE


def test_an_effect_whose_interval_is_above_zero_holds_and_below_zero_does_not():
    up, down = _fc_runs(batch_effect=0.02), _fc_runs(batch_effect=-0.02)
    assert (
        A.sensitivity(up, "fc", F.UTIL).table.set_index("hyperparameter").at["batch", "ci_low"] > 0
    )
    assert _fc_batch(up).verdict == F.HOLDS
    assert (
        A.sensitivity(down, "fc", F.UTIL).table.set_index("hyperparameter").at["batch", "ci_high"]
        < 0
    )
    assert _fc_batch(down).verdict == F.FAILS


def test_the_roof_is_the_lower_of_the_two_roofs():
    r = Roof("measured", peak_flops=1e12, bandwidth=1e11, source="test")
    assert r.ridge == pytest.approx(10.0)
    assert r.bound(1.0) == pytest.approx(1e11)  # left of the ridge: memory-bound
    assert r.bound(2.5) == pytest.approx(2.5e11)
    assert r.bound(10.0) == pytest.approx(1e12)  # at the ridge both roofs meet
    assert r.bound(100.0) == pytest.approx(1e12)  # right of it: compute-bound, flat
    assert Roof("datasheet", None, 1e11, "x").bound(1.0) is None
    assert Roof("datasheet", 1e12, None, "x").bound(1.0) is None
    assert Roof("datasheet", 1e12, None, "x").ridge is None
    assert Roof("datasheet", None, 1e11, "x").ridge is None


def test_op_points_label_each_profiled_op_with_its_run():
    runs = [
        synth.row("fc", _fc(8), 0.2, platform="A"),
        synth.row("fc", _fc(16), 0.2, platform="B", precision="bf16"),
    ]
    prof = pd.DataFrame(
        [
            {"run_uid": "0:1", "op": "mm", "intensity": 4.0, "achieved_flops": 1e9},
            {"run_uid": "0:2", "op": "add", "intensity": 0.25, "achieved_flops": 2e8},
            {"run_uid": "0:2", "op": "relu", "intensity": None, "achieved_flops": 1e8},
            {"run_uid": "0:9", "op": "mm", "intensity": 2.0, "achieved_flops": 1e9},  # no run
        ]
    ).assign(device_time_s=[0.5, 0.25, 0.1, 1.0])
    pts = A.op_points(A.from_frames(runs, op_profile=prof))
    assert list(pts.columns) == [
        "op",
        "family",
        "platform",
        "precision",
        "intensity",
        "achieved_flops",
        "device_time_s",
    ]
    assert pts.to_dict("list") == {
        "op": ["mm", "add"],
        "family": ["fc", "fc"],
        "platform": ["A", "B"],
        "precision": ["fp32", "bf16"],
        "intensity": [4.0, 0.25],
        "achieved_flops": [1e9, 2e8],
        "device_time_s": [0.5, 0.25],
    }
    empty = A.op_points(A.from_frames(runs))
    assert len(empty) == 0 and list(empty.columns) == list(pts.columns)
