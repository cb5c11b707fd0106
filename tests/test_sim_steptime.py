"""The step-time model (sim.steptime): terms visible and consistent, quantization, fast
convolution choice, master weights, batch split across TPU cores, chip-file parameters."""

from __future__ import annotations

import math
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
    assert math.isclose(r.predicted_step_s, parts + t.host_s + r.comm_s)
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


def test_fast_conv_chosen_on_gpu_not_on_tpu():
    cfg = {"filters": 64, "batch": 32, "image": 64}
    gpu = st.predict_step("cnn", cfg, chips.load("v100-sxm2"), "fp32")
    assert gpu.terms.fast_conv_ops > 0
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
    assert "step-time breakdown" in out and "overhead_s" in out and "master_weights_s" in out
    code, out, err = run_cli(
        capsys, "simulate", "step", "fc", "--platform", "v100-sxm2", "--model", "nope"
    )
    assert code == 2 and "--model = 'nope'" in err


def test_misaligned_16bit_gemm_leaves_the_tensor_cores():
    c = chips.load("v100-sxm2")
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
    r = st.predict_step(
        "fc", {"layers": 1, "nodes": 16, "batch": 6}, c, "fp32", optimizer="rmsprop"
    )
    # 4 tensors (fc1 and head: weight + bias) × 4 rmsprop kernels = 16
    assert r.plan.optimizer_kernels == 16.0
    # 5 GEMMs (fc1 fwd, wgrad; head fwd, dgrad, wgrad) + 2 outputs × 4 elementwise + 16
    assert r.row()["kernels"] == 29.0


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
