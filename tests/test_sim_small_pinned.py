"""The simulator's small modules pinned on hand-computed values: the GEMM library's tile choice,
quantization and alignment (sim/gemmlib.py), XLA's TPU layout (sim/xlalayout.py), the error
bands file (sim/errorbands.py) and the weak-scaling curve under either model (sim/curve.py)."""

from __future__ import annotations

import json
import math

import pytest

from paradnn.errors import ConfigError
from paradnn.sim import chip as chips
from paradnn.sim import curve
from paradnn.sim import errorbands as EB
from paradnn.sim import gemmlib as G
from paradnn.sim import xlalayout as X
from paradnn.sim.interconnect import bisection_bandwidth, default_topology
from paradnn.sim.model import KIND
from paradnn.sim.model import scaling as roofline_scaling
from paradnn.sim.steptime import predict_step

# -- gemmlib ---------------------------------------------------------------------------------


def test_a_tile_s_intensity():
    assert G.intensity((128, 64)) == pytest.approx(128 * 64 / 192)
    assert G.intensity((64, 64)) == 32.0


def test_quantization_by_hand():
    # 100 × 200 on 64 × 128 tiles: 2 × 2 tiles, 20000 of 32768 elements real
    q = 20000 / 32768
    assert G.quantization(100, 200, 1024, (64, 128), None) == (pytest.approx(q), 1.0, 1)
    assert G.quantization(100, 200, 1024, (64, 128), 0) == (pytest.approx(q), 1.0, 1)
    # 4 tiles on 8 units: the reduction split in 2 (k allows 4): one full wave
    assert G.quantization(100, 200, 1024, (64, 128), 8) == (pytest.approx(q), 1.0, 2)
    # on 10 units: split 2, 8 tiles of a 10-wide wave
    assert G.quantization(100, 200, 1024, (64, 128), 10) == (pytest.approx(q), 0.8, 2)
    # a short reduction cannot be split: chunks of at least 256
    assert G.quantization(100, 200, 511, (64, 128), 8) == (pytest.approx(q), 0.5, 1)
    assert G.quantization(100, 200, 512, (64, 128), 8) == (pytest.approx(q), 1.0, 2)
    assert G.quantization(100, 200, 100, (64, 128), 8) == (pytest.approx(q), 0.5, 1)
    # as many tiles as units: no split; more: waves
    assert G.quantization(128, 256, 4096, (64, 128), 4) == (1.0, 1.0, 1)
    assert G.quantization(192, 256, 4096, (64, 128), 4) == (1.0, 0.75, 1)
    assert G.quantization(64, 64, 4096, (64, 64), 3) == (1.0, 1.0, 3)


def test_choose_tile_by_hand():
    got = G.choose_tile(4096, 4096, 4096, G.TC_TILES, 132)
    assert got.tile == (256, 128) and isinstance(got.tile, tuple)
    assert got.split_k == 1 and got.tile_efficiency == 1.0
    tiles_ = 16 * 32
    assert got.q_tile == 1.0 and got.q_wave == pytest.approx(tiles_ / (4 * 132))
    assert got.quant == pytest.approx(got.q_wave)
    small = G.choose_tile(64, 64, 64, ((128, 128), (64, 64)), None)
    assert small.tile == (64, 64) and small.tile_efficiency == pytest.approx(32 / 64)
    assert small.q_tile == 1.0 and small.quant == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"^no candidate tiles$"):
        G.choose_tile(1, 1, 1, (), None)


def test_a_tie_goes_to_the_earlier_tile_and_a_small_gain_to_the_later():
    tie = G.choose_tile(128, 128, 128, ((128, 64), (64, 128)), None)
    assert tie.tile == (128, 64)
    tie = G.choose_tile(128, 128, 128, ((64, 128), (128, 64)), None)
    assert tie.tile == (64, 128)
    # 64 rows: (128, 64) tiles are half empty, (64, 128) full: the later wins
    later = G.choose_tile(64, 128, 128, ((128, 64), (64, 128)), None)
    assert later.tile == (64, 128) and later.q_tile == 1.0
    mid = G.choose_tile(64, 128, 128, ((128, 128), (64, 128)), None)
    # (128,128): q 0.5 × 1; (64,128): q 1 × (42.67 / 64) = 0.667: the later wins by a third
    assert mid.tile == (64, 128) and mid.quant == pytest.approx(128 * 64 / 192 / 64)


def test_alignment_bytes_is_the_gcd_with_the_vector():
    assert G.alignment_bytes([3, 8], 2) == 2
    assert G.alignment_bytes([8, 16], 2) == 16
    assert G.alignment_bytes([4, 16], 2) == 8
    assert G.alignment_bytes([], 2) == 16
    assert G.alignment_bytes([0], 4) == 16
    assert G.alignment_bytes([12], 2, vector=8) == 8
    assert G.alignment_bytes([3], 1) == 1
    assert G.alignment_bytes([], 2, vector=0) == 1
    assert G.alignment_bytes([2.0], 4) == 8


def test_alignment_efficiency_by_hand():
    assert (
        G.alignment_efficiency(16) == 1.0 and G.alignment_efficiency(32, narrow_kernel=0.5) == 1.0
    )
    assert G.alignment_efficiency(8) == 0.5
    assert G.alignment_efficiency(8, narrow_kernel=2 / 3) == pytest.approx(1 / 3)
    assert G.alignment_efficiency(4, narrow_kernel=2 / 3) == pytest.approx(0.25 * 2 / 3)
    assert G.alignment_efficiency(4, exponent=2.0) == pytest.approx(1 / 16)
    short = math.log2(16 / 12)
    assert G.alignment_efficiency(12, narrow_kernel=0.5) == pytest.approx(0.75 * 0.5**short)
    assert G.alignment_efficiency(4, vector=8) == 0.5
    assert G.alignment_efficiency(0) == pytest.approx(1e-9 / 16)
    assert type(G.alignment_efficiency(8)) is float


def test_pad_efficiency_by_hand():
    assert G.pad_efficiency(10, 8) == 10 / 16
    assert G.pad_efficiency(16, 8) == 1.0 and G.pad_efficiency(17, 8) == 17 / 24
    assert G.pad_efficiency(10, 1) == 1.0 and G.pad_efficiency(10, 0) == 1.0
    assert G.pad_efficiency(0, 8) == 1.0 and G.pad_efficiency(-5, 8) == 1.0
    assert G.pad_efficiency(3, 2) == 0.75 and G.pad_efficiency(1, 2) == 0.5


def test_row_dims_and_matrix_units():
    assert G.row_dims("wgrad", 1, 2, 3) == (1, 2)
    assert G.row_dims("fwd", 1, 2, 3) == (2, 3) and G.row_dims("dgrad", 1, 2, 3) == (2, 3)
    assert G.on_matrix_units(4.0, 1.0) is True and G.on_matrix_units(3.99, 1.0) is False
    assert G.on_matrix_units(None, 1.0) is False and G.on_matrix_units(8.0, None) is False
    assert G.on_matrix_units(8.0, 0.0) is False and G.on_matrix_units(0.0, 1.0) is False


# -- xlalayout -------------------------------------------------------------------------------


def test_padded_by_hand():
    assert X.padded(10, 200) == 16 * 256  # features on the lanes
    assert X.padded(200, 10) == 256 * 16  # rows on the lanes
    assert X.padded(1, 5) == 8 * 128 and X.padded(8, 128) == 1024 and X.padded(128, 8) == 1024
    assert X.padded(9, 129) == min(16 * 256, 128 * 136)
    assert X.padded(0, 5) == 0 and X.padded(5, 0) == 0 and X.padded(-3, 5) == 0
    assert X.padded(5, -3) == 0 and X.padded(-2, -2) == 0
    assert X._up(0, 8) == 0 and X._up(9, 8) == 16 and X._up(8, 8) == 8


def test_layout_factor_by_hand():
    assert X.factor(8, 128) == 1.0 and X.factor(1, 1) == 1024.0
    assert X.factor(16, 64) == 2.0 and X.factor(128, 1) == 8.0
    assert X.factor(0, 5) == 1.0 and X.factor(5, 0) == 1.0 and X.factor(-1, -1) == 1.0


# -- errorbands ------------------------------------------------------------------------------


def _bands(tmp_path, doc) -> EB.Bands:
    p = tmp_path / "error_bands.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return EB.read(p)


def test_each_band_field_read_or_dropped(tmp_path):
    doc = {
        "schema": 1,
        "bands": {
            "gpu": {"p90": 0, "mdape": -1, "n": True, "dataset": None, "method": 3},
            "cpu": {"p90": 1, "mdape": 0.5, "n": 0},
            "tpu": {"p90": 0.2, "n": -4, "dataset": "d"},
            "npu": {"p90": 0.1},
            "xpu": 5,
        },
    }
    b = _bands(tmp_path, doc)
    assert set(b.bands) == {"gpu", "cpu", "tpu"} and b.source == "error_bands.json"
    assert b.bands["gpu"] == EB.Band("gpu", 0.0, None, None, "", "3")
    assert b.bands["cpu"] == EB.Band("cpu", 1.0, 0.5, None, "", "")
    assert type(b.bands["cpu"].p90) is float
    assert b.bands["tpu"] == EB.Band("tpu", 0.2, None, None, "d", "")
    assert b.generated_at == ""
    assert b.of("npu").reason == "not validated: error_bands.json has no 'npu' band"


def test_one_validated_prediction_is_a_count(tmp_path):
    g = _bands(tmp_path, {"schema": 1, "bands": {"gpu": {"p90": 0.1, "n": 1}}}).of("gpu")
    assert g.n == 1 and g.label() == "gpu model error band ±10.0% (p90 of 1 validated predictions)"


def test_a_file_whose_bands_are_no_table_has_none(tmp_path):
    b = _bands(tmp_path, {"schema": 1, "bands": [1], "generated_at": "then"})
    assert b.bands == {} and b.generated_at == "then" and b.source == "error_bands.json"
    assert b.of("gpu").reason == "not validated: error_bands.json has no 'gpu' band"
    assert b.of("gpu") == EB.Band("gpu", None, reason=b.of("gpu").reason)


def test_an_unusable_p90_names_the_kind(tmp_path):
    g = _bands(tmp_path, {"schema": 1, "bands": {"gpu": {"p90": "x", "n": 9}}}).of("gpu")
    assert g == EB.Band("gpu", None, reason="not validated: error_bands.json gpu.p90 unusable")


def test_missing_and_bad_files_say_why(tmp_path):
    none = EB.read(tmp_path / "e.json")
    assert none.source == "no e.json (run benchmarks/sim_validation.py)"
    assert none.of("cpu").reason == "not validated: no e.json (run benchmarks/sim_validation.py)"
    bad = tmp_path / "b.json"
    bad.write_bytes(b"\xff\xfe")
    assert EB.read(bad).source == "no usable b.json (UnicodeDecodeError)"
    bad.write_text("{")
    assert EB.read(bad).source == "no usable b.json (JSONDecodeError)"
    bad.write_text('{"bands": {}}')
    assert EB.read(bad).source == "no usable b.json (schema None, expected 1)"
    bad.write_text('"text"')
    assert EB.read(bad).source == "no usable b.json (schema 'str', expected 1)"
    assert EB.read(tmp_path).source == f"no {tmp_path.name} (run benchmarks/sim_validation.py)"
    assert EB.read().source in (
        "error_bands.json",
        "no error_bands.json (run benchmarks/sim_validation.py)",
    )


def test_a_band_s_words_and_interval():
    b = EB.Band("gpu", 0.25, mdape=0.1, n=12, dataset="ds")
    assert b.label() == "gpu model error band ±25.0% (p90 of 12 validated predictions, ds)"
    assert b.short() == "gpu: ±25.0% (p90; median 10.0%, n = 12)"
    bare = EB.Band("tpu", 0.5)
    assert bare.label() == "tpu model error band ±50.0% (p90)"
    assert bare.short() == "tpu: ±50.0% (p90)"
    assert bare.throughput(10.0) == (5.0, 15.0) and bare.throughput(-2.0) == (0.0, -3.0)
    assert all(math.isnan(v) for v in bare.throughput(math.inf))
    assert all(math.isnan(v) for v in bare.throughput(math.nan))
    none = EB.Band("cpu", None)
    assert none.label() == "cpu: no error band (not validated)" and not none.known
    assert EB.Band("cpu", None, reason="r").label() == "cpu: no error band (r)"
    assert none.short() == "cpu: not validated" and bare.known
    assert EB.Band("cpu", 0.0).known


def test_bands_short_gives_each_kind_once_in_order():
    bs = EB.Bands({"gpu": EB.Band("gpu", 0.1)}, "f.json")
    assert bs.short(["gpu", "cpu", "gpu"]) == "gpu: ±10.0% (p90); cpu: not validated"
    assert bs.short([]) == ""
    assert EB.Bands({}, "nothing here").of("gpu").reason == (
        "not validated: nothing here has no 'gpu' band"
    )


def test_fraction_is_a_non_negative_finite_number():
    assert EB._fraction(0) == 0.0 and type(EB._fraction(0)) is float
    assert EB._fraction(0.5) == 0.5
    for bad in (-0.1, math.inf, math.nan, True, "0.1", None):
        assert EB._fraction(bad) is None


# -- the scaling curve -----------------------------------------------------------------------


def test_check_options_by_model():
    curve.check_options("step")
    curve.check_options("roofline", overlap=0.5, concurrent=True)
    with pytest.raises(ConfigError) as e:
        curve.check_options("step", overlap=0.5)
    assert str(e.value) == (
        "--overlap = 0.5: applies to --model roofline only: the step-time model adds the whole "
        "all-reduce to the step"
    )
    with pytest.raises(ConfigError) as e:
        curve.check_options("step", concurrent=True)
    assert str(e.value).startswith("--concurrent = True: applies to --model roofline only")
    with pytest.raises(ConfigError) as e:
        curve.scaling("fc", {"batch": 8}, chips.load("h100-sxm"), concurrent=True)
    assert str(e.value).startswith("--concurrent = True: applies to --model roofline only")
    with pytest.raises(ConfigError) as e:
        curve.scaling("fc", {"batch": 8}, chips.load("h100-sxm"), overlap=0.25)
    assert str(e.value).startswith("--overlap = 0.25: applies to --model roofline only")
    with pytest.raises(ConfigError) as e:
        curve.check_options("sketch")
    assert str(e.value).startswith("--model = 'sketch'")
    with pytest.raises(ConfigError):
        curve.scaling("fc", {"batch": 8}, chips.load("h100-sxm"), model="sketch")


CFG = {"layers": 2, "nodes": 64, "batch": 16}


def test_the_step_model_s_curve_row_by_row():
    chip = chips.load("h100-sxm")
    rows = curve.scaling("fc", CFG, chip, "fp32", max_chips=4, optimizer="sgd")
    assert [r["chips"] for r in rows] == [1, 2, 4]
    base = predict_step("fc", CFG, chip, "fp32", optimizer="sgd", chips=1).predicted_step_s
    for r in rows:
        s = predict_step("fc", CFG, chip, "fp32", optimizer="sgd", chips=r["chips"])
        assert r["kind"] == KIND and r["model"] == "step" and r["topology"] == s.topology
        assert r["predicted_step_s"] == s.predicted_step_s
        assert r["allreduce_s"] == s.comm_s and r["exposed_comm_s"] == s.comm_s
        assert r["speedup"] == pytest.approx(r["chips"] * base / s.predicted_step_s)
        assert r["efficiency"] == pytest.approx(base / s.predicted_step_s)
        n = r["chips"]
        want = (
            None
            if n == 1
            else bisection_bandwidth(default_topology(chip.topology_kind, n), chip.require_link())
        )
        assert r["bisection_bytes_per_s"] == want
    assert set(rows[0]) == {
        "kind",
        "model",
        "chips",
        "topology",
        "predicted_step_s",
        "allreduce_s",
        "exposed_comm_s",
        "speedup",
        "efficiency",
        "bisection_bytes_per_s",
    }
    assert rows[0]["speedup"] == 1.0 and rows[0]["efficiency"] == 1.0
    assert rows[1]["bisection_bytes_per_s"] > 0
    default = curve.scaling("fc", CFG, chip, max_chips=1)
    one = predict_step("fc", CFG, chip, "bf16", optimizer="rmsprop", chips=1)
    assert len(default) == 1 and default[0]["predicted_step_s"] == one.predicted_step_s


def test_the_step_model_s_curve_refuses_a_bad_chip_count():
    chip = chips.load("h100-sxm")
    with pytest.raises(ConfigError) as e:
        curve.scaling("fc", CFG, chip, max_chips=0)
    assert str(e.value).startswith("--max-chips = 0")
    assert len(curve.scaling("fc", CFG, chip, max_chips=2)) == 2
    with pytest.raises(ConfigError):
        curve.scaling("fc", CFG, chip, max_chips=(1 << 20) + 1)


def test_the_roofline_curve_is_the_model_s_with_its_name():
    chip = chips.load("h100-sxm")
    kw = {"max_chips": 4, "optimizer": "sgd", "overlap": 0.5, "concurrent": True}
    got = curve.scaling("fc", CFG, chip, "fp32", model="roofline", **kw)
    want = roofline_scaling("fc", CFG, chip, "fp32", **kw)
    assert got == [{"kind": r["kind"], "model": "roofline", **r} for r in want]
    assert [r["chips"] for r in got] == [1, 2, 4]
    plain = curve.scaling("fc", CFG, chip, model="roofline", max_chips=2)
    assert plain == [
        {"model": "roofline", **r} for r in roofline_scaling("fc", CFG, chip, "bf16", max_chips=2)
    ]
