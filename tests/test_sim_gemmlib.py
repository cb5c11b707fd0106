"""What today's GEMM libraries do with a shape (sim.gemmlib, issue 42): tensor cores graded by
alignment (monotone and continuous, no 6× cliff between neighbouring sizes), the tile a library
picks for small and skinny GEMMs, and the strict pre-CUDA-11 rule kept for the seeds' era."""

from __future__ import annotations

from dataclasses import replace
from importlib import resources

import numpy as np
import pytest

from paradnn.families.lowering import Op
from paradnn.sim import chip as chips
from paradnn.sim import gemmlib
from paradnn.sim import steptime as st
from paradnn.sim.stepparams import NARROW_KERNEL_TMA, defaults


def test_alignment_efficiency_is_monotone_and_continuous_in_the_alignment():
    grid = np.linspace(0.5, 20.0, 20001)
    for exponent, narrow in ((1.0, 1.0), (1.0, NARROW_KERNEL_TMA), (1.5, 0.5), (0.0, 0.8)):
        got = np.array(
            [gemmlib.alignment_efficiency(a, exponent=exponent, narrow_kernel=narrow) for a in grid]
        )
        assert np.all(np.diff(got) >= -1e-12)  # more aligned is never slower
        assert np.max(np.abs(np.diff(got))) < 2e-3  # no jump anywhere on a 1e-3-byte grid
        assert np.all(got[grid >= 16] == 1.0) and np.all((got > 0) & (got <= 1))
    # at the byte alignments a shape can have: the load width halves, and on Hopper the
    # narrower kernel class (no TMA + wgmma) costs a further 2/3
    assert gemmlib.alignment_efficiency(8, narrow_kernel=NARROW_KERNEL_TMA) == pytest.approx(
        0.5 * 2 / 3
    )
    assert gemmlib.alignment_efficiency(2) == pytest.approx(1 / 8)


def test_padding_efficiency_grows_smoothly_towards_one():
    assert gemmlib.pad_efficiency(896, 8) == 1.0
    assert gemmlib.pad_efficiency(900, 8) == pytest.approx(900 / 904)
    assert gemmlib.pad_efficiency(3, 8) == pytest.approx(3 / 8)
    for k in range(1, 2000):  # a padded reduction wastes at most granule − 1 steps of it
        assert k / (k + 7) <= gemmlib.pad_efficiency(k, 8) <= 1.0
    assert gemmlib.pad_efficiency(17, 1) == 1.0


def test_row_alignment_in_bytes_of_the_two_non_batch_dimensions():
    assert gemmlib.alignment_bytes((900, 2700), 2) == 8  # bf16 rows of 1800 and 5400 bytes
    assert gemmlib.alignment_bytes((904, 1024), 2) == 16
    assert gemmlib.alignment_bytes((100, 400), 4) == 16  # tf32 rows of 400 bytes
    assert gemmlib.alignment_bytes((147, 64), 2) == 2  # a 3-channel 7×7 stem in bf16
    # the batch dimension is never a row stride: forward and dgrad read rows of n and k, the
    # weight-gradient (k, n, batch) rows of its m and n
    assert gemmlib.row_dims("fwd", 1000, 64, 576) == (64, 576)
    assert gemmlib.row_dims("dgrad", 1000, 576, 64) == (576, 64)
    assert gemmlib.row_dims("wgrad", 576, 64, 1000) == (576, 64)


def test_which_precisions_run_on_matrix_units():
    v100, p100 = chips.load("v100-sxm2").platform, chips.load("p100-sxm2").platform
    assert gemmlib.on_matrix_units(v100.peak("fp16"), v100.peak("fp32"))
    assert not gemmlib.on_matrix_units(v100.peak("fp32"), v100.peak("fp32"))
    assert not gemmlib.on_matrix_units(p100.peak("fp16"), p100.peak("fp32"))  # packed, 2×
    h100 = chips.load("h100-sxm").platform
    assert gemmlib.on_matrix_units(h100.peak("tf32"), h100.peak("fp32"))


def _gemm_rate(chip, precision, k, sp=None):
    """Achieved fraction of the peak of one forward GEMM 4096 × 4096 × k on ``chip``."""
    sp = sp or defaults(chip.platform)
    op = Op("x", "fwd", 4096, 4096, k)
    return st._op_peak(op, chip, precision, sp)[1]


def test_graded_rule_no_cliff_between_neighbouring_sizes_and_monotone_in_alignment():
    h100 = chips.load("h100-sxm")
    rates = {k: _gemm_rate(h100, "bf16", k) for k in range(896, 905)}
    # 896 and 904 are 16-byte rows; 900 only 8-byte, 898 and 902 4-byte, odd sizes 2-byte
    assert rates[904] > rates[900] > rates[898] > rates[897]
    assert rates[896] == pytest.approx(rates[904] * 896 / 904, rel=0.01)
    # today's libraries keep the tensor cores: the worst neighbour is the 2-byte kernel class,
    # never the vector units' rate
    fp32_on_tc = h100.peak("fp32") / h100.peak("bf16")
    assert min(rates.values()) > fp32_on_tc * 2 / 8
    # the seeds' strict rule for comparison: off the tensor cores below a multiple of 8
    strict = replace(defaults(h100.platform), tc_rule="strict")
    assert _gemm_rate(h100, "bf16", 900, strict) == pytest.approx(
        _gemm_rate(h100, "fp32", 900), rel=1e-9
    )


def test_hopper_pays_the_narrow_kernel_class_and_ampere_does_not():
    h100, a100 = chips.load("h100-sxm"), chips.load("a100-80gb-sxm")
    for chip, narrow in ((h100, NARROW_KERNEL_TMA), (a100, 1.0)):
        assert defaults(chip.platform).narrow_kernel == narrow
        ratio = _gemm_rate(chip, "bf16", 900) / _gemm_rate(chip, "bf16", 904)
        assert ratio == pytest.approx(0.5 * narrow * (900 / 904) * 904 / 904, rel=1e-9)


def test_the_tile_for_a_large_square_gemm_is_the_largest():
    got = gemmlib.choose_tile(8192, 8192, 8192, gemmlib.TC_TILES, 132)
    assert got.tile == (256, 128) and got.q_tile == 1.0 and got.tile_efficiency == 1.0
    assert got.q_wave == pytest.approx(1024 / (8 * 132))  # 1024 tiles in 8 waves of 132


def test_a_small_gemm_picks_a_small_tile_as_libraries_do():
    # the per-time-step 256 × 500 × 500 GEMM: 8 tiles of 128 × 128 keep 6 % of the
    # H100's SMs busy; 32 tiles of 64 × 64, half the reuse each, twice as much
    fixed = st._quantization(256, 500, 500, (128, 128), 132)
    assert fixed == pytest.approx(256 * 500 / (256 * 512) * 8 / 132)
    got = gemmlib.choose_tile(256, 500, 500, gemmlib.SIMT_TILES, 132)
    assert got.tile == (64, 64) and got.split_k == 1
    assert got.quant == pytest.approx(256 * 500 / (256 * 512) * 32 / 132 * 0.5)
    assert got.quant > 1.9 * fixed


def test_a_skinny_gemm_takes_a_short_wide_tile_and_splits_its_reduction():
    # batch 64 against a 4096 × 4096 weight: a 64-row tile wastes no rows; 16 tiles split the
    # 4096-long reduction 8 ways to fill 128 of the 132 SMs
    got = gemmlib.choose_tile(64, 4096, 4096, gemmlib.TC_TILES, 132)
    assert got.tile == (64, 256) and got.q_tile == 1.0 and got.split_k == 8
    assert got.q_wave == pytest.approx(128 / 132)
    assert got.tile_efficiency == pytest.approx(gemmlib.intensity((64, 256)) / (256 * 128 / 384))


def test_ties_go_to_the_larger_tile_and_a_cpu_keeps_its_register_tile():
    # a GEMM that fills both 128 × 256 and 256 × 128 exactly: the first listed wins
    assert gemmlib.choose_tile(1024, 1024, 64, gemmlib.TC_TILES, None).tile == (256, 128)
    cpu = defaults(chips.load("skylake-n1-32").platform)
    assert cpu.tiles_of("fp32") == ((6, 16),)
    with pytest.raises(ValueError):
        gemmlib.choose_tile(1, 1, 1, (), None)


def test_the_seeds_era_chip_files_keep_the_strict_rule_and_offer_winograd():
    for name in ("v100-pcie", "p100-pcie", "titan-x-pascal-2019"):
        path = resources.files("paradnn") / "data" / "chips" / f"{name}.toml"
        sp = chips.load_file(str(path)).step
        assert sp.tc_rule == "strict" and sp.fast_conv == 2.25
    today = defaults(chips.load("v100-sxm2").platform)
    assert today.tc_rule == "graded" and today.fast_conv == 1.0


def test_chip_file_step_keys_for_the_library_model(tmp_path):
    path = tmp_path / "x.toml"
    head = (
        '[xpu]\nname = "x"\nvendor = "v"\nkind = "gpu"\npeak_dense = { fp32 = 1e13, '
        "bf16 = 1e14 }\nmem_bandwidth = 5e11\n[xpu.step]\n"
    )
    path.write_text(
        head + 'tc_rule = "strict"\nalign_exponent = 1.5\nnarrow_kernel = 0.5\n'
        "tiles = { default = [[128, 128], [64, 64]] }\nconv_efficiency = { bf16 = 0.4 }\n"
        'conv_layout = "nhwc"\n'
    )
    sp = chips.load(str(path)).step
    assert sp.tc_rule == "strict" and sp.align_exponent == 1.5 and sp.narrow_kernel == 0.5
    assert sp.tiles_of("bf16") == ((128, 128), (64, 64)) and sp.conv_layout == "nhwc"
    assert sp.conv_eff("bf16") == 0.4 and sp.conv_eff("fp32") == 1.0
    path.write_text(head + "conv_efficiency = 0.7\n")
    assert chips.load(str(path)).step.conv_eff("bf16") == 0.7  # a number: every precision
    from paradnn.errors import ConfigError

    for bad, field in (
        ('tc_rule = "loose"', "tc_rule"),
        ("tiles = { default = [[0, 8]] }", "tiles.default"),
        ("conv_efficiency = { bf16 = 1.5 }", "conv_efficiency.bf16"),
        ('conv_layout = "chw"', "conv_layout"),
        ("narrow_kernel = 0", "narrow_kernel"),
    ):
        path.write_text(head + bad + "\n")
        with pytest.raises(ConfigError, match=rf"xpu\.step\.{field}"):
            chips.load(str(path))


def test_tensor_core_convolutions_pay_nchw_transposes_and_nhwc_does_not():
    h100 = chips.load("h100-sxm")
    cfg = {"filters": 64, "batch": 32, "image": 64}
    sp = defaults(h100.platform)
    nchw = st.predict_step("cnn", cfg, h100, "bf16", params=sp)
    nhwc = st.predict_step("cnn", cfg, h100, "bf16", params=replace(sp, conv_layout="nhwc"))
    assert nchw.terms.elementwise_s > nhwc.terms.elementwise_s
    assert nchw.terms.kernels > nhwc.terms.kernels
    # fp32 runs on the vector units: no transposes whatever the layout
    a = st.predict_step("cnn", cfg, h100, "fp32", params=sp)
    b = st.predict_step("cnn", cfg, h100, "fp32", params=replace(sp, conv_layout="nhwc"))
    assert a.terms.elementwise_s == b.terms.elementwise_s


def test_cudnn_recurrent_layers_run_a_pointwise_kernel_per_time_step():
    h100 = chips.load("h100-sxm")
    short = st.predict_step("rnn", {"length": 10, "layers": 2}, h100, "fp32")
    long = st.predict_step("rnn", {"length": 50, "layers": 2}, h100, "fp32")
    # per layer and step: one hidden GEMM forward, one backward, one pointwise kernel each way
    extra = long.terms.kernels - short.terms.kernels
    assert extra == pytest.approx(2 * 40 * (2 + st.RECURRENT_STEP_KERNELS), abs=2 * 2)


def test_the_optimizer_moves_every_unfused_ops_words_and_a_fused_one_pass():
    from paradnn.optimizers import TABLE
    from paradnn.sim import traffic

    assert traffic.optimizer_bytes(10, "rmsprop", "foreach") == 18 * 4 * 10
    assert traffic.optimizer_bytes(10, "rmsprop", "fused") == 7 * 4 * 10
    assert traffic.optimizer_bytes(10, "sgd", "loop") == 3 * 4 * 10  # one op: one pass
    for spec in TABLE.values():
        unfused = spec.unfused_words_per_param or spec.words_per_param
        assert unfused >= spec.words_per_param
    h100 = chips.load("h100-sxm")
    cfg = {"layers": 2, "nodes": 1024, "batch": 64}
    each = st.predict_step("fc", cfg, h100, "fp32", optimizer="adam", optimizer_impl="foreach")
    fused = st.predict_step("fc", cfg, h100, "fp32", optimizer="adam", optimizer_impl="fused")
    assert fused.plan.optimizer_extra_bytes == 0
    assert each.plan.optimizer_bytes == fused.plan.optimizer_bytes
    assert each.plan.optimizer_extra_bytes == pytest.approx(fused.plan.optimizer_bytes * 11 / 7)
    # foreach runs each op over every tensor: its extra passes revisit the whole model's state
    assert each.plan.optimizer_extra_set == each.plan.optimizer_extra_bytes
    assert each.terms.optimizer_s == pytest.approx(fused.terms.optimizer_s * 18 / 7)
    # the loop runs the ops tensor by tensor: on a CPU whose cache holds the largest tensor's
    # state, the extra passes run at the cache's bandwidth
    cpu = chips.load("skylake-n1-32")
    cfg = {"layers": 16, "nodes": 512, "batch": 64}  # 151 MB of state; the largest 29 MB
    loop = st.predict_step("fc", cfg, cpu, "fp32", optimizer="adam", optimizer_impl="loop")
    one = st.predict_step("fc", cfg, cpu, "fp32", optimizer="adam", optimizer_impl="fused")
    assert loop.plan.optimizer_extra_set == pytest.approx(7 * 4 * 2000 * 512)  # W1, 2000 × 512
    gain = defaults(cpu.platform).cache_gain
    want = one.terms.optimizer_s * (1 + 11 / 7 / gain)
    assert loop.terms.optimizer_s == pytest.approx(want, rel=1e-9)


def _seed_era(name="v100-pcie"):
    return chips.load_file(str(resources.files("paradnn") / "data" / "chips" / f"{name}.toml"))


def test_off_the_tensor_cores_a_16_bit_gemm_runs_at_the_fp32_rate():
    # the frameworks compute 16-bit GEMMs with fp32 accumulation (PyTorch's "Simulated Hgemm":
    # cublasGemmEx(..., CUDA_R_32F compute); cuDNN RNNs with the math precision promoted to
    # float): off the tensor cores that is the fp32 FMA rate, not the paired fp16 one
    v100 = _seed_era()
    sp = v100.step
    assert sp.tc_fallback == 1.0 == defaults(v100.platform).tc_fallback
    op = Op("x", "fwd", 1280, 6000, 1500)  # the PTB LSTM's input GEMM: 1500 is not a multiple of 8
    t16, q16, off = st._op_peak(op, v100, "fp16", sp)
    t32, q32, _ = st._op_peak(op, v100, "fp32", sp)
    assert off and (t16, q16) == pytest.approx((t32, q32))
    aligned = st._op_peak(Op("x", "fwd", 1280, 6000, 1504), v100, "fp16", sp)
    assert not aligned[2] and aligned[0] < t16 / 4  # on the tensor cores: several times faster
    # a 2-layer LSTM of 1500 units: all its GEMMs are misaligned, so fp16 gains no compute
    cfg = {"batch": 64}
    lstm16 = st.predict_step("lstm_ptb", cfg, v100, "fp16")
    lstm32 = st.predict_step("lstm_ptb", cfg, v100, "fp32")
    assert lstm16.plan.fallback.all()
    assert lstm16.terms.gemm_compute_s == pytest.approx(lstm32.terms.gemm_compute_s, rel=1e-9)


def test_a_convolution_pads_its_channels_instead_of_leaving_the_tensor_cores():
    # cuDNN 7 (Developer Guide §2.8.4.3): packed NCHW tensors whose channels are not a multiple
    # of 8 are padded for the tensor cores; ResNet-50's 3-channel stem stays on them at 3/8
    v100 = _seed_era()
    r = st.predict_step("resnet50", {"batch": 32}, v100, "fp16")
    stem = [i for i, name in enumerate(r.plan.layer) if name == "conv1"]
    assert stem and not r.plan.fallback[stem].any()
    fwd = next(i for i in stem if r.plan.phase[i] == "fwd")
    m, n, k = r.plan.shape[fwd]
    q = gemmlib.choose_tile(m, n, k, v100.step.tiles_of("fp16"), v100.step.units).quant
    assert r.plan.quant[fwd] == pytest.approx(q * 3 / 8)
    # one input channel padded to eight is slower than the vector units: the autotuner's
    # choice is the fp32-rate algorithm (DeepSpeech 2's spectrogram convolution)
    ds2 = st.predict_step("deepspeech2", {"batch": 8}, v100, "fp16")
    spec = [i for i, name in enumerate(ds2.plan.layer) if name == "conv1"]
    assert spec and ds2.plan.fallback[spec].all()
    conv2 = [i for i, name in enumerate(ds2.plan.layer) if name == "conv2"]  # 32 channels
    assert conv2 and not ds2.plan.fallback[conv2].any()
    # a linear layer has no such padding: still off the tensor cores when misaligned
    odd = st.predict_step("fc", {"layers": 2, "nodes": 1020, "batch": 256}, v100, "fp16")
    assert odd.plan.fallback.any()
