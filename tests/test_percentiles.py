"""90th percentiles where the seeds state them, computed by hand: speedups per family (seed 000
§6, Fig. 12), the Karp–Flatt serial fraction at the largest batch (§4.3), utilization beside its
maximum. Linear interpolation between order statistics (numpy's and pandas' default): the 90th
percentile of n sorted values sits at position 0.9 (n − 1)."""

from __future__ import annotations

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn import tables
from paradnn.analysis import scaling as S
from paradnn.report.build import _p90, _summary, _Writer

import synth


def _fc(batch: int, nodes: int = 64) -> dict:
    return {"layers": 2, "nodes": nodes, "input": 20, "output": 10, "batch": batch}


def test_the_speedup_summary_has_the_90th_percentile_per_family_and_overall():
    rows = []
    # fc speedups 0.5, 1, 2, 8: position 0.9 × 3 = 2.7 -> 2 + 0.7 × (8 − 2) = 6.2 (not the
    # max 8, not the median 1.5); cnn alone 3.0; over all five sorted 0.5, 1, 2, 3, 8:
    # position 3.6 -> 3 + 0.6 × 5 = 6.0
    for i, s in enumerate([0.5, 1.0, 2.0, 8.0]):
        rows.append(synth.row("fc", _fc(8 * (i + 1)), 0.25, platform="A"))
        rows.append(synth.row("fc", _fc(8 * (i + 1)), 0.25 * s, platform="B", device="cuda"))
    cnn = {"blocks": 1, "filters": 4, "image": 16, "batch": 4}
    rows.append(synth.row("cnn", cnn, 0.1, platform="A"))
    rows.append(synth.row("cnn", cnn, 0.3, platform="B", device="cuda"))
    c = A.compare(A.from_frames(rows), "platform", "A", "B")
    got = c.summary.set_index("family")["p90"]
    assert got["fc"] == pytest.approx(6.2)
    assert got["cnn"] == pytest.approx(3.0)
    assert got["all"] == pytest.approx(6.0)
    cols = list(c.summary.columns)
    assert cols.index("p90") == cols.index("median") + 1
    t = tables.speedup_summary(c)  # the terminal table shows it beside the median
    heads = [col.header for col in t.columns]
    assert heads[heads.index("median") + 1] == "p90"
    assert list(t.columns[heads.index("p90")].cells) == ["3×", "6.2×", "6×"]  # cnn, fc, all


def test_serial_fraction_percentiles_overall_and_at_the_largest_batch():
    e = [0.1, 0.2, 0.3, 0.4, 0.5, 0.9]
    table = pd.DataFrame(
        {
            "family": ["fc"] * 6 + ["cnn"] * 2,
            "batch": [8, 8, 64, 64, 64, 8, 4, 16],
            "karp_flatt": [*e, 0.05, None],  # a run without e is not counted
        }
    )
    out = S.serial_percentiles(table).set_index("family")
    assert list(out.index) == ["cnn", "fc", "all"]
    fc = out.loc["fc"]
    # all six: position 4.5 -> 0.5 + 0.5 × 0.4 = 0.7; at batch 64 (0.3, 0.4, 0.5): 0.48
    assert fc["runs"] == 6 and fc["p90"] == pytest.approx(0.7)
    assert fc["median"] == pytest.approx(0.35) and fc["max"] == pytest.approx(0.9)
    assert fc["largest_batch"] == 64 and fc["runs_at_largest_batch"] == 3
    assert fc["p90_at_largest_batch"] == pytest.approx(0.48)
    assert fc["seed_p90"] == 0.16
    cnn = out.loc["cnn"]  # its largest batch (16) has no e: no percentile there
    assert cnn["runs"] == 1 and cnn["largest_batch"] == 4 and cnn["seed_p90"] == 0.088
    assert cnn["p90_at_largest_batch"] == pytest.approx(0.05)
    every = out.loc["all"]
    assert every["runs"] == 7 and pd.isna(every["largest_batch"]) and pd.isna(every["seed_p90"])
    # 0.05, 0.1, ..., 0.5, 0.9: position 5.4 -> 0.5 + 0.4 × 0.4 = 0.66
    assert every["p90"] == pytest.approx(0.66)
    assert list(S.serial_percentiles(table.iloc[0:0]).columns) == S.SERIAL_COLUMNS
    one = S.serial_percentiles(table[table["family"] == "fc"])
    assert list(one["family"]) == ["fc"]  # one family: no 'all' row repeating it


def test_the_summary_shows_the_90th_percentile_of_utilization_beside_its_maximum(tmp_path):
    rows = [synth.row("fc", _fc(8 * (i + 1)), u) for i, u in enumerate([0.1, 0.2, 0.3, 0.4, 0.5])]
    ceilings = pd.DataFrame(
        [{"device_name": "SynthCPU", "kind": "matmul", "precision": "fp32", "value": synth.PEAK}]
    )
    data = A.from_frames(rows, ceilings=ceilings)
    _summary(data, _Writer(tmp_path))
    t = pd.read_csv(tmp_path / "tables" / "summary.csv").iloc[0]
    # five utilizations 0.1 … 0.5: position 3.6 -> 0.4 + 0.6 × 0.1 = 0.46
    assert t["max_util_measured"] == pytest.approx(0.5)
    assert t["p90_util_measured"] == pytest.approx(0.46)
    assert pd.isna(t["p90_util_datasheet"])  # no datasheet entry: null, not 0
    assert pd.isna(_p90(pd.Series([None, "x"])))  # nothing numeric: NaN, not 0
    assert _p90(pd.Series([1, "2", None, 3])) == pytest.approx(2.8)
