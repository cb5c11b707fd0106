"""90th percentiles where the seeds state them, computed by hand: speedups per family (seed 000
§6, Fig. 12), the Karp–Flatt serial fraction at the largest batch (§4.3), utilization beside its
maximum. Linear interpolation between order statistics (numpy's and pandas' default): the 90th
percentile of n sorted values sits at position 0.9 (n − 1)."""

from __future__ import annotations

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import scaling as S
from paradnn.cli import tables
from paradnn.report.sections import summary
from paradnn.report.sections.summary import _p90
from paradnn.report.writer import Writer

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
    summary.SECTION.build(data, Writer(tmp_path))
    t = pd.read_csv(tmp_path / "tables" / "summary.csv").iloc[0]
    # five utilizations 0.1 … 0.5: position 3.6 -> 0.4 + 0.6 × 0.1 = 0.46
    assert t["max_util_measured"] == pytest.approx(0.5)
    assert t["p90_util_measured"] == pytest.approx(0.46)
    assert pd.isna(t["p90_util_datasheet"])  # no datasheet entry: null, not 0
    assert pd.isna(_p90(pd.Series([None, "x"])))  # nothing numeric: NaN, not 0
    assert _p90(pd.Series([1, "2", None, 3])) == pytest.approx(2.8)


# -- seed 000 Fig. 7: FC at 64 layers ----------------------------------------------------------


def _fc_grid(layers: list[int]) -> A.Data:
    from paradnn.analysis import frames

    space = {"layers": layers, "nodes": [16, 32], "input": [20], "output": [10], "batch": [4, 8]}
    # the most common layer count is the first (three extra runs of it at another input size)
    extra = [synth.row("fc", {**_fc(b), "layers": layers[0], "nodes": n, "input": 30}, 0.2)
             for b, n in ((4, 16), (8, 16), (4, 32))]  # fmt: skip
    data = A.from_frames(synth.rows("fc", space, lambda c: 0.1 * c["layers"] / 64) + extra)
    assert frames.choose(data.ok)["layers"].value_counts().index[0] == layers[0]
    return data


def test_closest_value_prefers_the_nearest_and_the_larger_on_a_tie():
    from paradnn.analysis.heatmap import closest

    assert closest([4, 32, 128], 64) == 32  # |32 − 64| = 32 < |128 − 64| = 64
    assert closest([4, 96, 128], 64) == 96
    assert closest([32, 96], 64) == 96  # a tie: the larger
    assert closest([64.0, 32], 64) == 64 and closest([None, 8], 64) == 8
    assert closest([], 64) is None and closest([None], 64) is None


def test_figure7_fixes_fc_at_64_layers_where_the_data_has_them():
    from paradnn.analysis.heatmap import figure7_fixed

    data = _fc_grid([8, 64, 128])
    fixed, paper = figure7_fixed(data.ok, "fc")
    assert fixed == {"layers": 64} and paper == {"layers": 64}
    hm = A.heatmap(data, "fc", metric="examples_per_s", fixed=fixed, paper=paper)
    assert hm.fixed["layers"] == 64 and hm.paper_fixed["layers"] is True
    # without Fig. 7's value: Fig. 2's rule takes the most common count (8), marked not-paper
    assert A.heatmap(data, "fc", metric="examples_per_s").fixed["layers"] == 8
    assert figure7_fixed(data.ok, "cnn") == ({}, {})  # Fig. 7 shows FC only


def test_figure7_falls_back_to_the_closest_layer_count_and_says_so(tmp_path):
    from paradnn.analysis.heatmap import figure7_fixed
    from paradnn.report.section import Content
    from paradnn.report.sections.heatmaps import _throughput_maps

    data = _fc_grid([8, 32, 128])
    fixed, paper = figure7_fixed(data.ok, "fc")
    assert fixed == {"layers": 32}  # 32 is 32 away from 64, 128 is 64 away
    hm = A.heatmap(data, "fc", metric="examples_per_s", fixed=fixed, paper=paper)
    assert hm.fixed["layers"] == 32 and hm.paper_fixed["layers"] is False
    s = Content("heatmaps", "")
    _throughput_maps(data, Writer(tmp_path), s)
    (cap,) = [f.caption for f in s.figures]
    assert "layers=32*" in cap and "no run at seed 000 Fig. 7's layers=64" in cap
    s = Content("heatmaps", "")
    _throughput_maps(_fc_grid([8, 64, 128]), Writer(tmp_path), s)
    (cap,) = [f.caption for f in s.figures]
    assert "layers=64 as in seed 000 Fig. 7" in cap and "layers=64*" not in cap


def test_the_all_row_has_no_largest_batch_percentile():
    # families' batch sizes are not one axis: "all" has no largest batch, so no percentile there
    table = pd.DataFrame(
        {"family": ["fc"] * 3 + ["cnn"] * 2, "batch": [8, 64, 64, 4, 64],
         "karp_flatt": [0.1, 0.2, 0.3, 0.05, 0.07]}
    )  # fmt: skip
    every = S.serial_percentiles(table).set_index("family").loc["all"]
    assert pd.isna(every["largest_batch"]) and pd.isna(every["p90_at_largest_batch"])
    assert pd.isna(every["runs_at_largest_batch"])
