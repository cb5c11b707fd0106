"""What the step model knows about a TPU beyond its systolic cycles: XLA's 8 × 128 tiling of
the tensors in HBM (`sim.xlalayout`, the Cloud TPU performance guide's rule) and float32 models
that keep fp32 tensors while the MXU runs its default one-pass bf16 (policy ``fp32-storage``)."""

from __future__ import annotations

import pytest

from paradnn import families
from paradnn.errors import ConfigError
from paradnn.sim import chip as chips
from paradnn.sim import steptime as st
from paradnn.sim import xlalayout
from paradnn.sim.stepparams import defaults
from paradnn.sim.traffic import ELEMENTWISE_PASSES


@pytest.mark.parametrize(
    ("rows", "features", "elements"),
    [
        (8, 128, 8 * 128),  # a whole tile: no padding
        (8, 64, 8 * 128),  # 64 features on 128 lanes: twice the bytes
        (16, 80, 16 * 128),  # Inception's 80 channels at 16 images per core
        (128, 64, 128 * 64),  # 128 rows take the lanes, 64 features fill 8 sublanes
        (1024, 3, 1024 * 8),  # three features padded to a sublane group
        (1, 1, 1024),  # neither fits: 8 × 128 either way
        (5, 130, 8 * 256),
    ],
)
def test_a_tensor_takes_the_layout_that_pads_least(rows, features, elements):
    assert xlalayout.padded(rows, features) == elements
    assert xlalayout.factor(rows, features) == pytest.approx(elements / (rows * features))


def test_tiles_that_fit_are_not_padded_and_padding_never_shrinks_a_tensor():
    for rows in (1, 3, 8, 16, 100, 128, 1000):
        for features in (1, 7, 64, 100, 128, 500, 4096):
            assert xlalayout.padded(rows, features) >= rows * features
    assert xlalayout.factor(8, 128) == xlalayout.factor(256, 512) == 1.0


def _conv_ew(chip, precision, batch):
    """(each convolution of a ResNet-50 at ``batch`` per core, its elementwise bytes)."""
    c = chips.load(chip)
    core = st.core_chip(c)[0]
    cfg = families.get("resnet50").config({"batch": batch})
    plan = st.build_plan("resnet50", cfg, core, precision, "rmsprop", defaults(c.platform))
    shapes = families.get("resnet50").shapes(cfg)
    return [
        (s, ew) for s, ew in zip(shapes, plan.layer_ew_bytes, strict=True) if s.kind == "conv2d"
    ]


def _own(s, size=2):
    return ELEMENTWISE_PASSES["conv2d"] * s.batch * s.out_ch * s.out_h * s.out_w * size


def test_a_tpu_pays_for_padded_channels_at_a_small_batch_per_core():
    # 8 images per core: 64-channel maps take 128 lanes, 256 and more fit
    got = _conv_ew("tpu-v2", "bf16", 8)
    assert any(s.out_ch == 64 for s, _ in got)
    for s, ew in got:
        assert ew == pytest.approx(_own(s) * (2.0 if s.out_ch == 64 else 1.0)), s.name
    # 128 per core: the batch takes the lanes and 64 channels fill whole sublane groups
    for s, ew in _conv_ew("tpu-v2", "bf16", 128):
        assert ew == pytest.approx(_own(s)), s.name


def test_a_gpu_has_no_such_tiling():
    for s, ew in _conv_ew("v100-sxm2", "fp32", 8):  # fp32: no NCHW ↔ NHWC transposes either
        assert ew == pytest.approx(_own(s, 4)), s.name


def test_fp32_storage_keeps_the_mxu_rate_and_moves_fp32_bytes():
    tpu = chips.load("tpu-v2")
    cfg = {"batch": 32}
    mixed = st.predict_step("inception_v3", cfg, tpu, "bf16")
    f32 = st.predict_step("inception_v3", cfg, tpu, "bf16", policy="fp32-storage")
    # the same MXU work at the same rate
    assert f32.plan.peak_s == pytest.approx(mixed.plan.peak_s)
    assert f32.plan.flops == mixed.plan.flops
    # every tensor at 4 bytes: twice the activations' traffic, no master copy or casts
    assert f32.terms.elementwise_s == pytest.approx(2 * mixed.terms.elementwise_s)
    assert f32.plan.bytes == pytest.approx(2 * mixed.plan.bytes)
    assert f32.terms.master_weights_s == 0 and mixed.terms.master_weights_s > 0
    assert f32.predicted_step_s > mixed.predicted_step_s
    assert f32.row()["policy"] == "fp32-storage"


@pytest.mark.parametrize(("chip", "precision"), [("v100-sxm2", "fp16"), ("tpu-v2", "fp32")])
def test_fp32_storage_is_refused_off_a_tpu_or_off_bf16(chip, precision):
    c = chips.load(chip)
    if c.platform.peak(precision) is None:
        with pytest.raises(ConfigError, match="precision"):
            st.predict_step("fc", {"batch": 64}, c, precision, policy="fp32-storage")
        return
    with pytest.raises(ConfigError, match=r"policy = 'fp32-storage': only under bf16"):
        st.predict_step("fc", {"batch": 64}, c, precision, policy="fp32-storage")
