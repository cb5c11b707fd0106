"""The step-time model (sim.steptime): terms visible and consistent, quantization, fast
convolution choice, master weights, batch split across TPU cores, chip-file parameters."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import pytest

from paradnn.errors import ConfigError
from paradnn.sim import chip as chips
from paradnn.sim import steptime as st
from paradnn.sim.interconnect import Topology
from paradnn.sim.stepparams import StepParams, defaults


def test_terms_add_up_and_are_labelled():
    c = chips.load("v100-sxm2")
    r = st.predict_step("fc", {"layers": 2, "nodes": 256, "batch": 64}, c, "fp32")
    t = r.terms
    parts = t.gemm_s + t.overhead_s + t.elementwise_s + t.optimizer_s + t.master_weights_s
    assert math.isclose(t.device_s, parts)  # the device timeline is the device terms' sum
    # two timelines: the step is when both have finished, at least the longer of the two and
    # at most their sum
    assert max(t.device_s, t.host_dispatch_s) <= t.timeline_s + 1e-15
    assert t.timeline_s <= t.device_s + t.host_dispatch_s + 1e-15
    assert math.isclose(r.predicted_step_s, t.timeline_s + t.host_s + r.comm_s)
    assert t.overhead_s == pytest.approx(t.kernels * defaults(c.platform).kernel_overhead_s)
    row = r.row()
    assert row["kind"] == "prediction" and "defaults" in row["params_source"]
    assert t.master_weights_s == 0.0  # fp32: no master copy


def test_small_gemm_costs_more_than_roofline():
    c = chips.load("v100-sxm2")
    small = st.predict_step("fc", {"layers": 1, "nodes": 32, "batch": 16}, c, "fp32")
    roof = small.plan.flops / c.peak("fp32")
    assert small.predicted_step_s > 10 * roof  # overheads and quantization dominate
    assert small.terms.overhead_s > 0


def test_quantization_tile_wave_and_split_k():
    assert st._quantization(128, 128, 64, (128, 128), None) == 1.0
    assert st._quantization(129, 128, 64, (128, 128), None) == pytest.approx(129 / 256)
    assert st._quantization(128, 128, 64, (128, 128), 80) == pytest.approx(1 / 80)
    # a long reduction is split across the units
    assert st._quantization(128, 128, 80 * 256, (128, 128), 80) == 1.0


def test_mixed_precision_adds_master_weights():
    c = chips.load("v100-sxm2")
    r = st.predict_step("fc", {"layers": 2, "nodes": 512, "batch": 64}, c, "fp16")
    assert r.terms.master_weights_s > 0


def _seed_era_v100():
    """Seed 002's V100 with its software era: the strict tensor-core rule, Winograd offered."""
    from importlib import resources

    return chips.load_file(str(resources.files("paradnn") / "data" / "chips" / "v100-pcie.toml"))


def test_fast_conv_chosen_on_gpu_not_on_tpu():
    cfg = {"filters": 64, "batch": 32, "image": 64}
    gpu = st.predict_step("cnn", cfg, _seed_era_v100(), "fp32")
    assert gpu.terms.fast_conv_ops > 0
    # today's defaults assume no Winograd: the measured convolution rate decides
    assert st.predict_step("cnn", cfg, chips.load("v100-sxm2"), "fp32").terms.fast_conv_ops == 0
    tpu = st.predict_step("cnn", cfg, chips.load("tpu-v2"), "bf16")
    assert tpu.terms.fast_conv_ops == 0


def test_tpu_batch_split_across_cores_and_comm():
    c = chips.load("tpu-v2")
    r = st.predict_step("cnn", {"filters": 32, "batch": 64}, c, "bf16")
    assert r.cores_per_chip == 2 and r.batch_per_core == 32
    assert r.comm_s > 0  # the two cores reduce their gradients
    board = st.predict_step("cnn", {"filters": 32, "batch": 64}, c, "bf16", chips=4)
    assert board.allreduce_link_s > 0 and board.comm_s > r.comm_s
    assert board.topology == "torus2d:2x2"
    odd = st.predict_step("cnn", {"filters": 32, "batch": 3}, c, "bf16")
    assert odd.cores_per_chip == 1  # not divisible: the chip as one


def test_chip_file_step_table(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(
        '[xpu]\nname = "x"\nvendor = "v"\nkind = "gpu"\npeak_dense = { fp32 = 1e13 }\n'
        "mem_bandwidth = 5e11\n[xpu.step]\nkernel_overhead_s = 2e-5\n"
        "efficiency = { fp32 = 0.5 }\nunits = 10\n"
    )
    c = chips.load(str(path))
    assert isinstance(c.step, StepParams)
    assert c.step.kernel_overhead_s == 2e-5 and c.step.eff("fp32") == 0.5
    assert c.step.units == 10 and c.step.source.startswith("file ")
    path.write_text(path.read_text() + "bogus = 1\n")
    with pytest.raises(ConfigError, match=r"xpu\.step\.bogus"):
        chips.load(str(path))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("efficiency", "{ fp32 = 1.5 }"),
        ("units", "0"),
        ("k_half", "-1"),
        ("tile", "{ fp32 = [0, 8] }"),
    ],
)
def test_chip_file_step_bad_values(tmp_path, key, value):
    path = tmp_path / "x.toml"
    path.write_text(
        '[xpu]\nname = "x"\nvendor = "v"\nkind = "gpu"\npeak_dense = { fp32 = 1e13 }\n'
        f"mem_bandwidth = 5e11\n[xpu.step]\n{key} = {value}\n"
    )
    with pytest.raises(ConfigError, match=rf"xpu\.step\.{key}"):
        chips.load(str(path))


def test_multichip_overhead_positive():
    c = chips.load("tpu-v3")
    share = st.multichip_overhead("cnn", {"filters": 32, "batch": 16}, c, "bf16", 4)
    assert 0 < share < 1


def test_cli_step_prints_the_breakdown(capsys):
    from conftest import run_cli

    code, out, err = run_cli(
        capsys, "simulate", "step", "fc", "batch=64", "--platform", "v100-sxm2", "-p", "fp32"
    )
    assert code == 0, err
    # terms named in words, their times under `time (ms)` (issue 37: no `…_s` printing ms)
    assert "step-time breakdown" in out and "│ overhead " in out and "│ master weights " in out
    assert "time (ms)" in out and "overhead_s" not in out
    code, out, err = run_cli(
        capsys, "simulate", "step", "fc", "--platform", "v100-sxm2", "--model", "nope"
    )
    assert code == 2 and "--model = 'nope'" in err


def test_misaligned_16bit_gemm_leaves_the_tensor_cores():
    c = _seed_era_v100()  # tc_rule = "strict": cuBLAS < 11
    aligned = st.predict_step("fc", {"layers": 2, "nodes": 1024, "batch": 256}, c, "fp16")
    odd = st.predict_step("fc", {"layers": 2, "nodes": 1020, "batch": 256}, c, "fp16")
    assert not aligned.plan.fallback.any()
    assert odd.plan.fallback.any()
    assert odd.terms.gemm_compute_s > 1.5 * aligned.terms.gemm_compute_s
    fp32 = st.predict_step("fc", {"layers": 2, "nodes": 1020, "batch": 256}, c, "fp32")
    assert not fp32.plan.fallback.any()


def test_measured_infeed_feeds_the_host_term():
    c = chips.load("v100-sxm2")
    cfg = {"layers": 2, "nodes": 256, "batch": 64}
    free = st.predict_step("fc", cfg, c, "fp32")
    slow = st.predict_step("fc", cfg, c, "fp32", loader_examples_per_s=1000.0)
    assert free.input_s is None and slow.input_s == pytest.approx(64 / 1000)
    assert slow.predicted_step_s == pytest.approx(max(free.predicted_step_s, 0.064))
    assert slow.bottleneck == "input" and slow.row()["input_s"] == pytest.approx(0.064)
    serial = st.predict_step(
        "fc", cfg, c, "fp32", loader_examples_per_s=1000.0, loader_overlapped=False
    )
    assert serial.predicted_step_s == pytest.approx(free.predicted_step_s + 0.064)


def test_cpu_defaults_quantize_to_a_6_by_16_register_tile():
    cpu = chips.load("skylake-n1-32")
    r = st.predict_step("fc", {"layers": 1, "nodes": 16, "batch": 6}, cpu, "fp32")
    ops = dict(zip(r.plan.shape, r.plan.quant, strict=True))
    assert ops[(6, 16, 2000)] == 1.0  # one 6×16 tile, full
    assert ops[(6, 1000, 16)] == pytest.approx(1000 / 1008)  # n = 1000 in ceil(1000/16) = 63 tiles


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("k_half", "-1", r"xpu\.step\.k_half = -1: must be a number in \[0, 1e\+06\]"),
        ("tile", "5", r"xpu\.step\.tile = 5: must be a table precision = \[m, n\]"),
        ("fast_conv", "0.5", r"^xpu\.step\.fast_conv = 0\.5: must be a number in \[1, 16\]$"),
    ],
)
def test_chip_file_step_errors_name_the_field_and_value(tmp_path, key, value, message):
    path = tmp_path / "x.toml"
    path.write_text(
        '[xpu]\nname = "x"\nvendor = "v"\nkind = "gpu"\npeak_dense = { fp32 = 1e13 }\n'
        f"mem_bandwidth = 5e11\n[xpu.step]\n{key} = {value}\n"
    )
    with pytest.raises(ConfigError, match=message):
        chips.load(str(path))


def test_a_config_without_an_integer_batch_is_not_split():
    cfg = SimpleNamespace(batch=None)
    assert st._split_batch(None, cfg, 2) == (cfg, None)  # two cores, nothing to divide


def test_topology_chip_count_mismatch_names_the_topology():
    c = chips.load("tpu-v3")
    with pytest.raises(ConfigError) as e:
        st.predict_step("fc", {"batch": 64}, c, chips=8, topology=Topology("ring", (4,)))
    assert str(e.value) == "--topology = 'ring:4': has 4 chips but --chips is 8"


def test_row_reports_examples_per_second():
    c = chips.load("v100-sxm2")
    r = st.predict_step("fc", {"layers": 2, "nodes": 256, "batch": 64}, c, "fp32")
    assert r.row()["examples_per_s"] == pytest.approx(64 / r.predicted_step_s)  # batch ÷ step


def test_step_table_integers_reach_1048576_and_no_further():
    from paradnn.sim.stepparams import parse_params

    base = defaults(chips.load("v100-sxm2").platform)
    got = parse_params("xpu", {"units": 1 << 20, "tc_align": 1 << 20}, base)
    assert got.units == 1048576 and got.tc_align == 1048576
    with pytest.raises(ConfigError) as e:
        parse_params("xpu", {"units": 1048577}, base)
    assert str(e.value) == "xpu.step.units = 1048577: must be an integer in [1, 1048576]"


def test_step_table_source_is_at_most_2000_characters():
    from paradnn.sim.stepparams import parse_params

    base = defaults(chips.load("v100-sxm2").platform)
    assert parse_params("xpu", {"source": "s" * 2000}, base).source == "s" * 2000
    with pytest.raises(ConfigError) as e:
        parse_params("xpu", {"source": "s" * 2001}, base)
    assert e.value.field == "xpu.step.source"
    assert e.value.allowed == "must be a string of at most 2000 characters"


def test_gpu_optimizer_launches_its_kernels_per_parameter_tensor():
    c = chips.load("v100-sxm2")
    cfg = {"layers": 1, "nodes": 16, "batch": 6}
    r = st.predict_step("fc", cfg, c, "fp32", optimizer="rmsprop", optimizer_impl="loop")
    # the per-parameter loop: 4 tensors (fc1 and head: weight + bias) × 4 rmsprop kernels = 16
    assert r.plan.optimizer_kernels == 16.0
    # 5 GEMMs (fc1 fwd, wgrad; head fwd, dgrad, wgrad) + 2 outputs × 4 elementwise + 16
    assert r.row()["kernels"] == 29.0
    # torch's default on CUDA, foreach: one multi-tensor launch per op for all 4 tensors
    d = st.predict_step("fc", cfg, c, "fp32", optimizer="rmsprop")
    assert d.optimizer_impl == "foreach" and d.plan.optimizer_kernels == 4.0
    f = st.predict_step("fc", cfg, c, "fp32", optimizer="rmsprop", optimizer_impl="fused")
    assert f.plan.optimizer_kernels == 1.0
    assert f.terms.host_dispatch_s < d.terms.host_dispatch_s < r.terms.host_dispatch_s


def test_plan_names_each_gemms_layer_and_phase():
    c = chips.load("v100-sxm2")
    plan = st.predict_step("fc", {"layers": 1, "nodes": 16, "batch": 6}, c, "fp32").plan
    assert plan.layer == ("fc1", "fc1", "head", "head", "head")
    assert plan.phase == ("fwd", "wgrad", "fwd", "dgrad", "wgrad")  # no dgrad into the input


def test_a_core_of_a_two_core_tpu_has_half_the_memory():
    c = chips.load("tpu-v2")
    core, cores = st.core_chip(c)
    assert cores == 2 and core.memory_bytes == 8 * 2**30  # 16 GiB ÷ 2 cores


def test_flops_per_chip_counts_every_core():
    c = chips.load("tpu-v2")
    r = st.predict_step("fc", {"layers": 1, "nodes": 16, "batch": 6}, c, "bf16")
    # per core, batch 3: fc1 2·3·2000·16 fwd + wgrad = 384000; head 2·3·16·1000 × 3 = 288000
    assert r.plan.flops == 672000 and r.cores_per_chip == 2
    assert r.row()["flops_per_chip"] == 1344000  # 672000 × 2 cores


def test_a_split_k_reduction_is_cut_into_whole_chunks():
    # one 128×128 tile on 80 units: a reduction of 300 holds one 256-long chunk, not 1.17
    assert st._quantization(128, 128, 300, (128, 128), 80) == pytest.approx(1 / 80)
    # 3·256 + 100: three whole chunks fill 3 of the 80 units
    assert st._quantization(128, 128, 3 * 256 + 100, (128, 128), 80) == pytest.approx(3 / 80)


def test_gpu_fp32_gemms_use_a_square_sgemm_tile():
    sp = defaults(chips.load("v100-sxm2").platform)
    assert sp.tile_of("fp32") == (128, 128) and sp.tile_of("fp16") == (128, 256)
    assert sp.tiles_of("fp32")[0] == (128, 128) and sp.tiles_of("fp16")[0] == (256, 128)
    # an fp32 GEMM 128 wide fills a 128 × 128 tile, but one tile on 80 SMs: four 64 × 64 tiles
    # (half the reuse each) keep four SMs busy, twice the rate
    c = chips.load("v100-sxm2")
    gemm = SimpleNamespace(m=128, n=128, k=64, flops=2 * 128**2 * 64, phase="fwd")
    q = st._op_peak(gemm, c, "fp32", sp)[1]
    assert q == pytest.approx(4 / sp.units * 0.5)
    assert st._quantization(128, 128, 64, (128, 128), sp.units) == pytest.approx(1 / sp.units)


def test_mixed_precision_master_weights_move_twelve_bytes_per_parameter():
    from paradnn import families

    c = chips.load("v100-sxm2")
    cfg = {"layers": 2, "nodes": 512, "batch": 64}
    r = st.predict_step("fc", cfg, c, "fp16")
    params = families.get("fc").params(families.get("fc").config(cfg))
    assert r.plan.master_bytes == 12 * params
    sp = defaults(c.platform)
    assert r.terms.master_weights_s == pytest.approx(
        12 * params / (c.mem_bandwidth * sp.bw_efficiency)
    )


def test_winograd_traffic_is_four_times_the_maps_read_and_written():
    from paradnn import families

    c = chips.load("v100-sxm2")
    fam = families.get("cnn")
    cfg = fam.config({"filters": 64, "batch": 32, "image": 64})
    sp = replace(defaults(c.platform), fast_conv=2.25)  # a chip file offering Winograd
    plan = st.build_plan("cnn", cfg, c, "fp32", "sgd", sp)
    i = 0
    checked = 0
    for s in fam.shapes(cfg):
        from paradnn.families.lowering import lower

        n = len(lower(s))
        if st._fast_eligible(s):
            maps = s.batch * (s.in_ch + s.out_ch) * s.out_h * s.out_w
            extra = plan.fast_bytes[i : i + n] - plan.bytes[i : i + n]
            assert extra.tolist() == [2 * 4 * maps * 4] * n, s.name  # fp32: 4 bytes
            checked += n
        i += n
    assert checked > 0 and i == len(plan.bytes)


def test_an_optimizer_the_simulator_does_not_know_is_one_line():
    from paradnn.optimizers import OPTIMIZERS

    assert all(st.optimizer_kernels(o) >= 1 for o in OPTIMIZERS)  # every known one is priced
    c = chips.load("v100-sxm2")
    with pytest.raises(ConfigError) as e:
        st.predict_step("fc", {"layers": 1, "nodes": 16, "batch": 6}, c, "fp32", optimizer="lamb")
    assert str(e.value) == "--optimizer = 'lamb': must be one of " + ", ".join(OPTIMIZERS)


def test_two_chips_already_reduce_over_the_links():
    c = chips.load("tpu-v2")
    one = st.predict_step("cnn", {"filters": 32, "batch": 64}, c, "bf16")
    two = st.predict_step("cnn", {"filters": 32, "batch": 64}, c, "bf16", chips=2)
    assert two.topology is not None and two.allreduce_link_s > 0
    assert two.comm_s > one.comm_s and one.allreduce_link_s == 0.0


def test_a_large_fp32_gemm_is_compute_bound_and_the_row_shows_its_terms():
    c = chips.load("v100-sxm2")
    r = st.predict_step("fc", {"layers": 4, "nodes": 8192, "batch": 8192}, c, "fp32")
    assert r.bottleneck == "compute"
    row = r.row()
    assert row["bottleneck"] == "compute"
    assert row["gemm_s"] == r.terms.gemm_s > 0
    assert row["gemm_compute_s"] == r.terms.gemm_compute_s > row["gemm_memory_s"]


def test_a_step_table_tile_may_be_one_wide_but_not_zero():
    from paradnn.sim.stepparams import parse_params

    base = defaults(chips.load("v100-sxm2").platform)
    assert parse_params("xpu", {"tile": {"fp32": [1, 64]}}, base).tile_of("fp32") == (1, 64)
    with pytest.raises(ConfigError, match=r"^xpu\.step\.tile\.fp32 = \[0, 64\]: must be \[m, n\]"):
        parse_params("xpu", {"tile": {"fp32": [0, 64]}}, base)


def test_the_batch_per_core_is_the_whole_batch_on_one_core_and_an_integer_share_on_two():
    from paradnn.cli.sim_tables import breakdown_table

    cfg = {"layers": 1, "nodes": 16, "batch": 64}
    gpu = st.predict_step("fc", cfg, chips.load("v100-sxm2"), "fp32")
    assert gpu.cores_per_chip == 1 and gpu.row()["batch_per_core"] == 64
    tpu = st.predict_step("fc", cfg, chips.load("tpu-v2"), "bf16")
    assert "2 core(s) per chip, batch per core 32;" in breakdown_table(tpu.row()).caption


def test_a_wave_counts_the_tiles_of_both_dimensions():
    # 1 × 2 tiles of 128 on 80 units: two busy units in one wave
    assert st._quantization(128, 256, 64, (128, 128), 80) == pytest.approx(2 / 80)
    # 8 × 10 tiles: one full wave; 8 × 11: 88 tiles in two waves of 80
    assert st._quantization(8 * 128, 10 * 128, 64, (128, 128), 80) == pytest.approx(1.0)
    assert st._quantization(8 * 128, 11 * 128, 64, (128, 128), 80) == pytest.approx(88 / 160)


def test_the_cores_of_a_tpu_reduce_their_gradients_through_its_memory():
    from paradnn import families
    from paradnn.sim import rounding

    c = chips.load("tpu-v2")
    cfg = {"filters": 32, "batch": 64}
    r = st.predict_step("cnn", cfg, c, "bf16")
    grad = families.get("cnn").params(families.get("cnn").config(cfg)) * rounding.GRADIENT_BYTES
    core_bw = c.mem_bandwidth / 2 * defaults(c.platform).bw_efficiency
    # two cores: a ring all-reduce sends 2 · (2 − 1) / 2 = 1 gradient, 3 HBM bytes per byte
    assert r.allreduce_hbm_s == pytest.approx(3 * grad / (core_bw * 2))
